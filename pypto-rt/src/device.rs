//! Devices: where tensors live and kernels run.

use std::fmt;

use crate::dtype::DType;
use crate::error::Error;
use crate::shape::Shape;
use crate::tensor::Tensor;

/// Where tensors live and kernels run. Today the host (CPU) backend, which
/// runs kernels' Ascend C sources against the host emulation of the API.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Device {
    kind: DeviceKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum DeviceKind {
    Host,
}

impl Default for Device {
    /// The first NPU when one is present; otherwise the host. (The NPU
    /// backend is not built yet, so this is the host.)
    fn default() -> Self {
        Device::host()
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            DeviceKind::Host => f.write_str("the host (CPU)"),
        }
    }
}

impl Device {
    /// The host backend: kernels run on CPU threads.
    pub fn host() -> Self {
        Device {
            kind: DeviceKind::Host,
        }
    }

    pub fn is_host(&self) -> bool {
        self.kind == DeviceKind::Host
    }

    /// A tensor holding a copy of `data`, whose length must match `shape`.
    pub fn tensor_from<T: DType, S: Shape>(
        &self,
        data: &[T],
        shape: S,
    ) -> Result<Tensor<T, S>, Error> {
        self.tensor_from_vec(data.to_vec(), shape)
    }

    /// A tensor that takes ownership of `data`, whose length must match `shape`.
    pub fn tensor_from_vec<T: DType, S: Shape>(
        &self,
        data: Vec<T>,
        shape: S,
    ) -> Result<Tensor<T, S>, Error> {
        let expected = shape.num_elements()?;
        if data.len() != expected {
            return Err(Error::LengthMismatch {
                expected,
                actual: data.len(),
            });
        }
        Ok(Tensor::new(self.clone(), shape, data))
    }

    /// A tensor from data and sizes that arrive at run time (e.g. read from
    /// a file): rank and every fixed axis are checked here, once.
    pub fn tensor_from_sizes<T: DType, S: Shape>(
        &self,
        data: &[T],
        sizes: &[usize],
    ) -> Result<Tensor<T, S>, Error> {
        let shape = S::from_sizes(sizes)?;
        self.tensor_from(data, shape)
    }

    /// A tensor of zeros.
    pub fn zeros<T: DType, S: Shape>(&self, shape: S) -> Result<Tensor<T, S>, Error> {
        let n = shape.num_elements()?;
        Ok(Tensor::new(self.clone(), shape, vec![T::default(); n]))
    }
}
