//! Typed tensors: an element type, a shape type, a device.

use std::ffi::c_void;
use std::fmt;
use std::sync::Arc;

use crate::acl::CopyKind;
use crate::device::{Device, Npu};
use crate::dtype::DType;
use crate::error::Error;
use crate::host_mem::HostBuffer;
use crate::shape::{Shape, Sizes};
use crate::stream::Uses;

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
    /// `len` elements of `T` between guard pages (see `host_mem`).
    Host(HostBuffer, std::marker::PhantomData<T>),
    Npu(DeviceBuffer),
}

/// The bytes `n` elements of `T` take, or an error if that overflows.
fn byte_len<T>(n: usize) -> Result<usize, Error> {
    n.checked_mul(std::mem::size_of::<T>())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| Error::SizeOverflow {
            kernel: None,
            detail: format!(
                "{n} elements of {} bytes are more than memory can address",
                std::mem::size_of::<T>()
            ),
        })
}

/// A vector of `n` default elements, or an error instead of an abort when
/// memory runs out.
pub(crate) fn try_zeroed_vec<T: DType>(n: usize) -> Result<Vec<T>, Error> {
    let bytes = byte_len::<T>(n)?;
    let mut out = Vec::new();
    out.try_reserve_exact(n).map_err(|e| Error::OutOfMemory {
        bytes,
        reason: e.to_string(),
    })?;
    out.resize(n, T::default());
    Ok(out)
}

/// Device memory owned by one tensor; freed on drop, or, when queued work
/// still uses it, once its stream has passed that work.
struct DeviceBuffer {
    npu: Arc<Npu>,
    /// Null when `bytes` is 0 (ACL does not allocate nothing).
    ptr: *mut c_void,
    bytes: usize,
    /// The queued launches that use this memory.
    uses: Uses,
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
            uses: Uses::default(),
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
        if self.ptr.is_null() || self.uses.free_when_idle(self.ptr) {
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
    /// A tensor of `n` zero elements (the default of every dtype) on the host.
    pub(crate) fn host_zeroed(device: &Device, shape: S, n: usize) -> Result<Self, Error> {
        let buffer = HostBuffer::zeroed(byte_len::<T>(n)?, std::mem::align_of::<T>())?;
        Ok(Tensor {
            device: device.clone(),
            shape,
            storage: Storage::Host(buffer, std::marker::PhantomData),
        })
    }

    /// A copy of `data` (of `shape`'s length) on `device`.
    pub(crate) fn upload(device: &Device, shape: S, data: &[T]) -> Result<Self, Error> {
        let Some(npu) = device.as_npu() else {
            let mut tensor = Tensor::host_zeroed(device, shape, data.len())?;
            if let Storage::Host(buffer, _) = &mut tensor.storage {
                // SAFETY: `data` is `len` bytes of initialised `T`s; any
                // dtype's bytes may be viewed as `u8`.
                let bytes =
                    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), buffer.len()) };
                buffer.bytes_mut().copy_from_slice(bytes);
            }
            return Ok(tensor);
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

    /// The typed shape: a `usize` per DYNAMIC axis, a `Const<N>` per fixed one.
    pub fn shape(&self) -> S {
        self.shape
    }

    /// Every axis's size.
    pub fn sizes(&self) -> Sizes {
        self.shape.sizes()
    }

    /// The device the tensor lives on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        match &self.storage {
            Storage::Host(buffer, _) => buffer.len() / std::mem::size_of::<T>().max(1),
            Storage::Npu(buffer) => buffer.bytes / std::mem::size_of::<T>().max(1),
        }
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements, copied back to the host, in row-major order.
    ///
    /// For `bool` tensors every byte is checked first: a kernel that wrote
    /// something other than 0 or 1 gives [`Error::InvalidBool`].
    pub fn to_vec(&self) -> Result<Vec<T>, Error> {
        let n = self.len();
        let bytes = byte_len::<T>(n)?;
        let mut out: Vec<T> = Vec::new();
        out.try_reserve_exact(n).map_err(|e| Error::OutOfMemory {
            bytes,
            reason: e.to_string(),
        })?;
        let dst = out.as_mut_ptr().cast::<u8>();
        match &self.storage {
            Storage::Host(buffer, _) => {
                // SAFETY: the reserved capacity holds `bytes`; the buffer
                // holds `bytes` readable bytes; they do not overlap.
                unsafe { std::ptr::copy_nonoverlapping(buffer.as_ptr(), dst, bytes) };
            }
            Storage::Npu(buffer) => {
                if bytes > 0 {
                    // Kernels queued on a stream may still write it.
                    buffer.uses.wait_idle()?;
                    buffer.npu.enter()?;
                    // SAFETY: the reserved capacity holds `bytes` on the
                    // host; the buffer holds `bytes` of device memory.
                    unsafe {
                        buffer.npu.acl.memcpy(
                            dst.cast(),
                            buffer.ptr,
                            bytes,
                            CopyKind::DeviceToHost,
                        )?;
                    }
                }
            }
        }
        // SAFETY: the copy above initialised `bytes` bytes of the capacity.
        let copied = unsafe { std::slice::from_raw_parts(dst, bytes) };
        if let Some((index, value)) = T::first_invalid(copied) {
            return Err(Error::InvalidBool {
                kernel: None,
                param: "the tensor",
                index,
                value,
            });
        }
        // SAFETY: `n` elements were copied in and every byte pattern is a
        // valid `T` (checked just above for the one type where it is not).
        unsafe { out.set_len(n) };
        Ok(out)
    }

    /// A copy of this tensor on `device`.
    pub fn to_device(&self, device: &Device) -> Result<Self, Error> {
        let data = self.to_vec()?;
        device.tensor_from_vec(data, self.shape)
    }

    /// A copy of this tensor on the same device.
    pub fn try_clone(&self) -> Result<Self, Error> {
        match &self.storage {
            Storage::Host(..) => {
                let data = self.to_vec()?;
                Tensor::upload(&self.device, self.shape, &data)
            }
            Storage::Npu(buffer) => {
                buffer.uses.wait_idle()?;
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

    /// For generated wrappers: the sizes and base address of this input.
    pub(crate) fn input_arg(&self) -> crate::launch::Arg<'_> {
        let memory = match &self.storage {
            Storage::Host(buffer, _) => crate::launch::Memory::host_input(buffer),
            Storage::Npu(buffer) => {
                crate::launch::Memory::device(buffer.ptr.cast(), buffer.bytes as u64, &buffer.uses)
            }
        };
        crate::launch::Arg::Tensor {
            sizes: self.shape.sizes(),
            memory,
            device: &self.device,
        }
    }

    /// For generated wrappers: the sizes and base address of this output.
    pub(crate) fn output_arg(&mut self) -> crate::launch::Arg<'_> {
        let memory = match &mut self.storage {
            Storage::Host(buffer, _) => {
                crate::launch::Memory::host_output(buffer, T::first_invalid)
            }
            Storage::Npu(buffer) => {
                crate::launch::Memory::device(buffer.ptr.cast(), buffer.bytes as u64, &buffer.uses)
            }
        };
        crate::launch::Arg::Tensor {
            sizes: self.shape.sizes(),
            memory,
            device: &self.device,
        }
    }
}
