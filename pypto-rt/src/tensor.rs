//! Typed tensors: an element type, a shape type, a device.

use crate::device::Device;
use crate::dtype::DType;
use crate::error::Error;
use crate::shape::{Shape, Sizes};

/// A tensor of `T` with shape `S` on a [`Device`]. Its shape type carries the
/// kernel's markers: `Const<N>` axes are checked by the compiler, `usize`
/// axes when a kernel is called.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor<T: DType, S: Shape> {
    device: Device,
    shape: S,
    data: Vec<T>,
}

impl<T: DType, S: Shape> Tensor<T, S> {
    pub(crate) fn new(device: Device, shape: S, data: Vec<T>) -> Self {
        Tensor {
            device,
            shape,
            data,
        }
    }

    pub fn shape(&self) -> S {
        self.shape
    }

    /// Every axis's size.
    pub fn sizes(&self) -> Sizes {
        self.shape.sizes()
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The elements, copied back to the host, in row-major order.
    pub fn to_vec(&self) -> Result<Vec<T>, Error> {
        Ok(self.data.clone())
    }

    /// For generated wrappers: the sizes and base address of this input.
    #[doc(hidden)]
    pub fn __input(&self) -> crate::launch::Arg<'_> {
        crate::launch::Arg::Tensor {
            sizes: self.shape.sizes(),
            ptr: self.data.as_ptr() as *mut u8,
            bytes: std::mem::size_of_val(self.data.as_slice()) as u64,
            device: &self.device,
        }
    }

    /// For generated wrappers: the sizes and base address of this output.
    #[doc(hidden)]
    pub fn __output(&mut self) -> crate::launch::Arg<'_> {
        crate::launch::Arg::Tensor {
            sizes: self.shape.sizes(),
            ptr: self.data.as_mut_ptr().cast(),
            bytes: std::mem::size_of_val(self.data.as_slice()) as u64,
            device: &self.device,
        }
    }
}
