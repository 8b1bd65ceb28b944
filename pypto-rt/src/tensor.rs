//! Typed tensors: an element type, a shape type, a device.

use std::ffi::c_void;
use std::fmt;
use std::sync::Arc;

use crate::acl::CopyKind;
use crate::device::{Device, Npu};
use crate::dtype::DType;
use crate::error::Error;
use crate::shape::{Shape, Sizes};

/// A tensor of `T` with shape `S` on a [`Device`]. Its shape type carries the
/// kernel's markers: `Const<N>` axes are checked by the compiler, `usize`
/// axes when a kernel is called.
///
/// Tensors are `Send` and `Sync`; a kernel call borrows its inputs shared
/// and its outputs exclusively, so Rust's borrow rules keep calls from
/// racing on one tensor.
pub struct Tensor<T: DType, S: Shape> {
    device: Device,
    shape: S,
    storage: Storage<T>,
}

enum Storage<T> {
    Host(Vec<T>),
    Npu(DeviceBuffer),
}

/// Device memory owned by one tensor; freed on drop.
struct DeviceBuffer {
    npu: Arc<Npu>,
    /// Null when `bytes` is 0 (ACL does not allocate nothing).
    ptr: *mut c_void,
    bytes: usize,
}

// SAFETY: the buffer is device memory owned by this value alone; ACL calls
// on it may come from any thread once that thread has set the device, which
// every use here does first.
unsafe impl Send for DeviceBuffer {}
// SAFETY: shared references only read through the pointer (copies to host).
unsafe impl Sync for DeviceBuffer {}

impl DeviceBuffer {
    /// `bytes` of device memory on `npu`, filled from `src` (`kind` says
    /// where `src` lives); no allocation for 0 bytes.
    ///
    /// # Safety
    /// `src` is valid for `bytes` reads on the side `kind` names.
    unsafe fn copy_of(
        npu: &Arc<Npu>,
        src: *const c_void,
        bytes: usize,
        kind: CopyKind,
    ) -> Result<DeviceBuffer, Error> {
        let mut buffer = DeviceBuffer {
            npu: npu.clone(),
            ptr: std::ptr::null_mut(),
            bytes,
        };
        if bytes > 0 {
            npu.enter()?;
            buffer.ptr = npu.acl.malloc(bytes)?;
            // SAFETY: `buffer.ptr` holds `bytes` of device memory just
            // allocated; `src` is valid for `bytes` (this function's contract).
            unsafe { npu.acl.memcpy(buffer.ptr, src, bytes, kind)? };
        }
        Ok(buffer)
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.ptr.is_null() {
            return;
        }
        // A failed free cannot be reported from drop; the memory is lost
        // to this process either way.
        if self.npu.enter().is_ok() {
            // SAFETY: `ptr` came from aclrtMalloc on this device and is
            // dropped with its only owner.
            let _ = unsafe { self.npu.acl.free(self.ptr) };
        }
    }
}

impl<T: DType, S: Shape> fmt::Debug for Tensor<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor")
            .field("dtype", &T::SPEC_NAME)
            .field("sizes", &self.sizes())
            .field("device", &self.device)
            .finish()
    }
}

impl<T: DType, S: Shape> Tensor<T, S> {
    pub(crate) fn host(device: Device, shape: S, data: Vec<T>) -> Self {
        Tensor {
            device,
            shape,
            storage: Storage::Host(data),
        }
    }

    /// A copy of `data` (of `shape`'s length) on `device`.
    pub(crate) fn upload(device: &Device, shape: S, data: &[T]) -> Result<Self, Error> {
        let Some(npu) = device.as_npu() else {
            return Ok(Tensor::host(device.clone(), shape, data.to_vec()));
        };
        // SAFETY: `data` is a host slice of exactly that many bytes.
        let buffer = unsafe {
            DeviceBuffer::copy_of(
                npu,
                data.as_ptr().cast(),
                std::mem::size_of_val(data),
                CopyKind::HostToDevice,
            )?
        };
        Ok(Tensor {
            device: device.clone(),
            shape,
            storage: Storage::Npu(buffer),
        })
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
        match &self.storage {
            Storage::Host(data) => data.len(),
            Storage::Npu(buffer) => buffer.bytes / std::mem::size_of::<T>(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements, copied back to the host, in row-major order.
    pub fn to_vec(&self) -> Result<Vec<T>, Error> {
        match &self.storage {
            Storage::Host(data) => Ok(data.clone()),
            Storage::Npu(buffer) => {
                let mut out = vec![T::default(); self.len()];
                if buffer.bytes > 0 {
                    buffer.npu.enter()?;
                    // SAFETY: `out` holds `bytes` on the host; the buffer
                    // holds `bytes` of device memory.
                    unsafe {
                        buffer.npu.acl.memcpy(
                            out.as_mut_ptr().cast(),
                            buffer.ptr,
                            buffer.bytes,
                            CopyKind::DeviceToHost,
                        )?;
                    }
                }
                Ok(out)
            }
        }
    }

    /// A copy of this tensor on `device`.
    pub fn to_device(&self, device: &Device) -> Result<Self, Error> {
        let data = self.to_vec()?;
        device.tensor_from_vec(data, self.shape)
    }

    /// A copy of this tensor on the same device.
    pub fn try_clone(&self) -> Result<Self, Error> {
        match &self.storage {
            Storage::Host(data) => Ok(Tensor::host(self.device.clone(), self.shape, data.clone())),
            Storage::Npu(buffer) => {
                // SAFETY: the buffer holds `bytes` of device memory on this device.
                let copy = unsafe {
                    DeviceBuffer::copy_of(
                        &buffer.npu,
                        buffer.ptr,
                        buffer.bytes,
                        CopyKind::DeviceToDevice,
                    )?
                };
                Ok(Tensor {
                    device: self.device.clone(),
                    shape: self.shape,
                    storage: Storage::Npu(copy),
                })
            }
        }
    }

    fn raw(&self) -> (*mut u8, u64) {
        match &self.storage {
            Storage::Host(data) => (
                data.as_ptr() as *mut u8,
                std::mem::size_of_val(data.as_slice()) as u64,
            ),
            Storage::Npu(buffer) => (buffer.ptr.cast(), buffer.bytes as u64),
        }
    }

    /// For generated wrappers: the sizes and base address of this input.
    #[doc(hidden)]
    pub fn __input(&self) -> crate::launch::Arg<'_> {
        let (ptr, bytes) = self.raw();
        crate::launch::Arg::Tensor {
            sizes: self.shape.sizes(),
            ptr,
            bytes,
            device: &self.device,
        }
    }

    /// For generated wrappers: the sizes and base address of this output.
    #[doc(hidden)]
    pub fn __output(&mut self) -> crate::launch::Arg<'_> {
        let (ptr, bytes) = match &mut self.storage {
            Storage::Host(data) => (
                data.as_mut_ptr().cast(),
                std::mem::size_of_val(data.as_slice()) as u64,
            ),
            Storage::Npu(buffer) => (buffer.ptr.cast(), buffer.bytes as u64),
        };
        crate::launch::Arg::Tensor {
            sizes: self.shape.sizes(),
            ptr,
            bytes,
            device: &self.device,
        }
    }
}
