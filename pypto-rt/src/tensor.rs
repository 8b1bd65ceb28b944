//! Typed tensors: an element type, a shape type, a device; views into them;
//! copies between devices; memory adopted from other frameworks.
//!
//! A tensor's memory is a buffer shared (`Arc`) with the views borrowed
//! from it: a [`Tensor`] is the buffer's owner, a [`TensorView`] borrows
//! part of it shared and a [`TensorViewMut`] exclusively, so Rust's borrow
//! rules keep a kernel's output from aliasing anything, views included.
//! Views never copy; see the README's "Views, copies and foreign memory".

use std::ffi::c_void;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use crate::abi::{Arg, Memory};
use crate::acl::CopyKind;
use crate::device::{Device, Npu};
use crate::dtype::DType;
use crate::error::Error;
use crate::host_mem::HostBuffer;
use crate::shape::{Shape, Sizes};
use crate::stream::Uses;

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

/// A vector with room for `bytes` bytes, or an error instead of an abort.
fn try_byte_vec(bytes: usize) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    out.try_reserve_exact(bytes)
        .map_err(|e| Error::OutOfMemory {
            bytes,
            reason: e.to_string(),
        })?;
    Ok(out)
}

/// The memory behind a tensor and its views.
pub(crate) enum Buffer {
    /// Host memory between guard pages (see `host_mem`).
    Host(HostBuffer),
    /// Device memory this process allocated; freed on drop.
    Npu(DeviceBuffer),
    /// Memory adopted with [`Tensor::from_raw_parts`] (host or device, as
    /// the tensor's device says); its owner frees it, never pypto-rt.
    Foreign(*mut u8, Uses),
}

impl Buffer {
    /// The queued work that uses this memory; `None` for host buffers
    /// (host launches finish before they return).
    fn uses(&self) -> Option<&Uses> {
        match self {
            Buffer::Host(_) => None,
            Buffer::Npu(device) => Some(&device.uses),
            Buffer::Foreign(_, uses) => Some(uses),
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // Adopted memory goes back to its owner, who may free it at once:
        // nothing queued may still use it. (Our own device memory is freed
        // by its stream instead; see `DeviceBuffer`.)
        if let Buffer::Foreign(_, uses) = self {
            let _ = uses.wait_idle();
        }
    }
}

// SAFETY: host and device buffers are owned by this value; adopted memory
// is, by `Tensor::from_raw_parts`'s contract, usable from any thread for as
// long as the tensor lives. Writes go only through `&mut` tensors and views
// or through launches that borrow their outputs exclusively.
unsafe impl Send for Buffer {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for Buffer {}

/// Device memory owned by one buffer; freed on drop, or, when queued work
/// still uses it, once its stream has passed that work.
pub(crate) struct DeviceBuffer {
    npu: Arc<Npu>,
    /// Null when `bytes` is 0 (ACL does not allocate nothing).
    ptr: *mut c_void,
    /// The queued launches that use this memory (any part of it).
    uses: Uses,
}

impl DeviceBuffer {
    /// `bytes` of uninitialised device memory on `npu`; no allocation for 0
    /// bytes.
    fn alloc(npu: &Arc<Npu>, bytes: usize) -> Result<DeviceBuffer, Error> {
        let mut buffer = DeviceBuffer {
            npu: npu.clone(),
            ptr: std::ptr::null_mut(),
            uses: Uses::default(),
        };
        if bytes > 0 {
            npu.enter()?;
            buffer.ptr = npu.acl.malloc(bytes)?;
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
            // dropped with its only owner (the `Arc<Buffer>`).
            let _ = unsafe { self.npu.acl.free(self.ptr) };
        }
    }
}

/// A byte range of a buffer.
#[doc(hidden)]
#[derive(Clone)]
pub struct Region {
    buffer: Arc<Buffer>,
    offset: usize,
    bytes: usize,
}

impl Region {
    /// The address of the range's first byte, on the host or the device
    /// (possibly dangling when the range is empty).
    fn ptr(&self) -> *mut u8 {
        let base = match &*self.buffer {
            Buffer::Host(host) => host.as_ptr(),
            Buffer::Npu(device) => device.ptr.cast(),
            Buffer::Foreign(ptr, _) => *ptr,
        };
        base.wrapping_add(self.offset)
    }

    /// Waits until no queued work uses the buffer (before the host reads or
    /// writes it).
    fn wait_idle(&self) -> Result<(), Error> {
        match self.buffer.uses() {
            Some(uses) => uses.wait_idle(),
            None => Ok(()),
        }
    }

    /// A range of this range: `offset` and `bytes` lie inside it.
    fn sub(&self, offset: usize, bytes: usize) -> Region {
        debug_assert!(offset + bytes <= self.bytes);
        Region {
            buffer: self.buffer.clone(),
            offset: self.offset + offset,
            bytes,
        }
    }

    /// The launch argument for this range as an input (`output` false) or
    /// an output. An output's caller holds it exclusively.
    fn memory<T: DType>(&self, output: bool) -> Memory<'_> {
        match &*self.buffer {
            Buffer::Host(host) if output => {
                Memory::host_output(host, self.offset, self.bytes, T::INVALID_CHECK)
            }
            Buffer::Host(host) => {
                Memory::host_input(host, self.offset, self.bytes, T::INVALID_CHECK)
            }
            Buffer::Npu(_) | Buffer::Foreign(..) => Memory::raw(
                self.ptr(),
                self.bytes as u64,
                output,
                T::INVALID_CHECK,
                self.buffer.uses(),
            ),
        }
    }
}

/// What tensors and views share: the device, the typed shape, the bytes.
struct Parts<T: DType, S: Shape> {
    device: Device,
    shape: S,
    region: Region,
    elem: PhantomData<T>,
}

impl<T: DType, S: Shape> Clone for Parts<T, S> {
    fn clone(&self) -> Self {
        Parts {
            device: self.device.clone(),
            shape: self.shape,
            region: self.region.clone(),
            elem: PhantomData,
        }
    }
}

impl<T: DType, S: Shape> Parts<T, S> {
    fn new(device: &Device, shape: S, buffer: Buffer, bytes: usize) -> Self {
        Parts {
            device: device.clone(),
            shape,
            region: Region {
                buffer: Arc::new(buffer),
                offset: 0,
                bytes,
            },
            elem: PhantomData,
        }
    }

    fn len(&self) -> usize {
        self.region.bytes / std::mem::size_of::<T>().max(1)
    }

    fn source(&self) -> Source<'_> {
        Source {
            device: &self.device,
            sizes: self.shape.sizes(),
            region: &self.region,
        }
    }

    /// The same bytes with another shape of as many elements.
    fn reshape<S2: Shape>(self, shape: S2) -> Result<Parts<T, S2>, Error> {
        let mismatch = || Error::ReshapeMismatch {
            from: self.shape.sizes().to_vec(),
            to: shape.sizes().to_vec(),
        };
        if shape.sizes().num_elements() != Some(self.len()) {
            return Err(mismatch());
        }
        Ok(Parts {
            device: self.device,
            shape,
            region: self.region,
            elem: PhantomData,
        })
    }

    /// Rows `range` of the first axis.
    fn slice(&self, range: impl RangeBounds<usize>) -> Result<Self, Error> {
        let sizes = self.shape.sizes();
        let rows = sizes[0];
        let start = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e.saturating_add(1),
            Bound::Excluded(&e) => e,
            Bound::Unbounded => rows,
        };
        if start > end || end > rows {
            return Err(Error::SliceOutOfRange {
                start,
                end,
                len: rows,
            });
        }
        let mut new_sizes = [0usize; crate::shape::MAX_RANK];
        new_sizes[..sizes.len()].copy_from_slice(&sizes);
        new_sizes[0] = end - start;
        let shape = S::from_sizes(&new_sizes[..sizes.len()])?;
        // Every size is that of a tensor that exists, so these fit.
        let row_elems: usize = sizes[1..].iter().product();
        let row_bytes = row_elems * std::mem::size_of::<T>();
        Ok(Parts {
            device: self.device.clone(),
            shape,
            region: self
                .region
                .sub(start * row_bytes, (end - start) * row_bytes),
            elem: PhantomData,
        })
    }

    fn to_vec(&self) -> Result<Vec<T>, Error> {
        let n = self.len();
        let bytes = self.region.bytes;
        let mut out: Vec<T> = Vec::new();
        out.try_reserve_exact(n).map_err(|e| Error::OutOfMemory {
            bytes,
            reason: e.to_string(),
        })?;
        let dst = out.as_mut_ptr().cast::<u8>();
        // SAFETY: the reserved capacity holds `bytes` on the host.
        unsafe { copy_source(&Device::host(), dst, &self.source())? };
        // SAFETY: the copy above initialised `bytes` bytes of the capacity.
        let copied = unsafe { std::slice::from_raw_parts(dst, bytes) };
        if let Some((index, value)) = crate::dtype::first_invalid::<T>(copied) {
            return Err(Error::InvalidBool {
                kernel: None,
                param: "to_vec returned nothing",
                index,
                value,
            });
        }
        // SAFETY: `n` elements were copied in and every byte pattern is a
        // valid `T` (checked just above for the one type where it is not).
        unsafe { out.set_len(n) };
        Ok(out)
    }

    /// A new tensor on the same device holding a copy of these elements.
    fn to_tensor(&self) -> Result<Tensor<T, S>, Error> {
        let mut copy = Tensor::alloc(&self.device, self.shape, self.len())?;
        copy.parts.copy_from(&self.source())?;
        Ok(copy)
    }

    /// Copies `src` into these bytes; the caller holds them exclusively.
    fn copy_from(&mut self, src: &Source<'_>) -> Result<(), Error> {
        let dst_sizes = self.shape.sizes();
        if src.sizes != dst_sizes || src.region.bytes != self.region.bytes {
            return Err(Error::CopyMismatch {
                dst: dst_sizes.to_vec(),
                src: src.sizes.to_vec(),
            });
        }
        // Kernels queued on a stream may still read or write the
        // destination.
        self.region.wait_idle()?;
        // SAFETY: the destination holds `src.region.bytes` bytes (equal
        // sizes, one dtype) on `self.device`, and is held exclusively.
        unsafe { copy_checked::<T>(&self.device, self.region.ptr(), src) }
    }

    fn input_arg(&self) -> Arg<'_> {
        Arg::Tensor {
            sizes: self.shape.sizes(),
            memory: self.region.memory::<T>(false),
            device: &self.device,
        }
    }
}

/// A tensor or view as the source of a copy or a kernel's input.
#[doc(hidden)]
pub struct Source<'a> {
    device: &'a Device,
    sizes: Sizes,
    region: &'a Region,
}

/// Copies the bytes of `src` to `dst` on `dst_device`, between any two
/// devices.
///
/// # Safety
/// `dst` is valid for writes of `src.region.bytes` bytes on `dst_device`
/// and overlaps nothing `src` holds.
unsafe fn copy_source(dst_device: &Device, dst: *mut u8, src: &Source<'_>) -> Result<(), Error> {
    // Kernels queued on a stream may still write the source.
    src.region.wait_idle()?;
    // SAFETY: forwarded; the source's region holds its bytes on its device.
    unsafe {
        copy_bytes(
            dst_device,
            dst,
            src.device,
            src.region.ptr(),
            src.region.bytes,
        )
    }
}

/// Copies the bytes of `src` to `dst` on `dst_device`, as [`copy_source`],
/// and checks that bytes arriving in host memory are valid `T`s: a `bool`
/// other than 0 or 1 (a kernel on an NPU wrote it) zeroes the destination
/// and is [`Error::InvalidBool`], so no host tensor ever holds one.
///
/// # Safety
/// As for [`copy_source`]; `dst` is held exclusively.
unsafe fn copy_checked<T: DType>(
    dst_device: &Device,
    dst: *mut u8,
    src: &Source<'_>,
) -> Result<(), Error> {
    // SAFETY: forwarded.
    unsafe { copy_source(dst_device, dst, src)? };
    let bytes = src.region.bytes;
    if !dst_device.is_host() || bytes == 0 {
        return Ok(());
    }
    // SAFETY: the copy above filled `bytes` bytes of host memory at `dst`,
    // held exclusively by the caller.
    let copied = unsafe { std::slice::from_raw_parts(dst, bytes) };
    if let Some((index, value)) = crate::dtype::first_invalid::<T>(copied) {
        // SAFETY: as above; zero bytes are `false`.
        unsafe { std::ptr::write_bytes(dst, 0, bytes) };
        return Err(Error::InvalidBool {
            kernel: None,
            param: "the copy's destination was reset to false",
            index,
            value,
        });
    }
    Ok(())
}

/// Copies `bytes` bytes from `from` on `src_device` to `dst` on
/// `dst_device`, between any two devices.
///
/// # Safety
/// `dst` is valid for writes and `from` for reads of `bytes` bytes on their
/// devices, and the two do not overlap.
unsafe fn copy_bytes(
    dst_device: &Device,
    dst: *mut u8,
    src_device: &Device,
    from: *const u8,
    bytes: usize,
) -> Result<(), Error> {
    if bytes == 0 {
        return Ok(());
    }
    match (src_device.as_npu(), dst_device.as_npu()) {
        (None, None) => {
            // SAFETY: both are host memory valid for `bytes` and do not
            // overlap (this function's contract).
            unsafe { std::ptr::copy_nonoverlapping(from, dst, bytes) };
            Ok(())
        }
        (None, Some(npu)) => {
            npu.enter()?;
            // SAFETY: as above, host to device memory.
            unsafe {
                npu.acl
                    .memcpy(dst.cast(), from.cast(), bytes, CopyKind::HostToDevice)
            }
        }
        (Some(npu), None) => {
            npu.enter()?;
            // SAFETY: as above, device to host memory.
            unsafe {
                npu.acl
                    .memcpy(dst.cast(), from.cast(), bytes, CopyKind::DeviceToHost)
            }
        }
        (Some(a), Some(b)) if a.index == b.index => {
            a.enter()?;
            // SAFETY: as above, within one device's memory.
            unsafe {
                a.acl
                    .memcpy(dst.cast(), from.cast(), bytes, CopyKind::DeviceToDevice)
            }
        }
        (Some(a), Some(b)) => {
            // Between two NPUs: through the host, which needs no peer
            // access between the devices.
            let mut staging = try_byte_vec(bytes)?;
            a.enter()?;
            // SAFETY: `staging` has room for `bytes`; the source holds
            // `bytes` of device memory on `a`.
            unsafe {
                a.acl.memcpy(
                    staging.as_mut_ptr().cast(),
                    from.cast(),
                    bytes,
                    CopyKind::DeviceToHost,
                )?;
                staging.set_len(bytes);
            }
            b.enter()?;
            // SAFETY: the destination holds `bytes` on `b` (this
            // function's contract).
            unsafe {
                b.acl.memcpy(
                    dst.cast(),
                    staging.as_ptr().cast(),
                    bytes,
                    CopyKind::HostToDevice,
                )
            }
        }
    }
}

mod sealed {
    /// Tensors and views that can be read: their device, sizes and bytes.
    pub trait Readable {
        fn source(&self) -> super::Source<'_>;
    }

    /// Tensors and views that can be written, held exclusively.
    pub trait Writable {
        fn target(&mut self) -> super::Source<'_>;
    }
}

/// A kernel input: `&Tensor<T, S>`, or a view of dtype `T` and shape type
/// `S` ([`TensorView`], `&TensorView`, `&TensorViewMut`). Generated kernel
/// wrappers take their inputs as `impl AsInput<T, S>`; sealed.
#[diagnostic::on_unimplemented(
    message = "this input takes a `{T}` tensor of shape type `{S}`, not `{Self}`",
    label = "not a `{T}` tensor or view of shape type `{S}`",
    note = "an input is `&Tensor<{T}, {S}>`, a `TensorView` of that dtype and shape type, or a `&TensorView`/`&TensorViewMut` of it; `reshape` or `slice` makes a view of another shape without copying"
)]
pub trait AsInput<T: DType, S: Shape>: sealed::Readable {}

/// A kernel output: `&mut Tensor<T, S>`, or a mutable view of dtype `T`
/// and shape type `S` ([`TensorViewMut`], `&mut TensorViewMut`). Generated
/// kernel wrappers take their outputs as `impl AsOutput<T, S>`: exclusive
/// borrows, so an output aliases no other argument. Sealed.
#[diagnostic::on_unimplemented(
    message = "this output takes a mutable `{T}` tensor of shape type `{S}`, not `{Self}`",
    label = "not `&mut Tensor<{T}, {S}>` or a mutable view of it",
    note = "an output is `&mut Tensor<{T}, {S}>`, a `TensorViewMut` of that dtype and shape type, or a `&mut TensorViewMut` of it: kernels write their outputs, so they are borrowed exclusively"
)]
pub trait AsOutput<T: DType, S: Shape>: sealed::Writable {}

/// For generated wrappers (through `__private::v3`): an input's launch
/// argument.
pub(crate) fn input_arg<T: DType, S: Shape>(input: &impl AsInput<T, S>) -> Arg<'_> {
    let source = sealed::Readable::source(input);
    Arg::Tensor {
        sizes: source.sizes,
        memory: source.region.memory::<T>(false),
        device: source.device,
    }
}

/// For generated wrappers (through `__private::v3`): an output's launch
/// argument, borrowed exclusively.
pub(crate) fn output_arg<T: DType, S: Shape>(output: &mut impl AsOutput<T, S>) -> Arg<'_> {
    let target = sealed::Writable::target(output);
    Arg::Tensor {
        sizes: target.sizes,
        memory: target.region.memory::<T>(true),
        device: target.device,
    }
}

/// A tensor of `T` with shape `S` on a [`Device`]. Its shape type carries the
/// kernel's markers: `Const<N>` axes are checked by the compiler, `usize`
/// axes when a kernel is called.
///
/// Tensors are `Send` and `Sync`; a kernel call borrows its inputs shared
/// and its outputs exclusively, so Rust's borrow rules keep calls from
/// racing on one tensor. [`Tensor::view`], [`Tensor::slice`] and their
/// `_mut` forms borrow parts of a tensor as views, without copying.
pub struct Tensor<T: DType, S: Shape> {
    parts: Parts<T, S>,
}

/// A shared view of a tensor's elements, borrowed from it for `'a`: all
/// of them or rows of its first axis, with a shape of its own (same element
/// count). Made by [`Tensor::view`], [`Tensor::slice`],
/// [`TensorView::reshape`]; passes to kernels as an input. Cloning is cheap
/// and copies no element.
pub struct TensorView<'a, T: DType, S: Shape> {
    parts: Parts<T, S>,
    borrow: PhantomData<&'a ()>,
}

/// An exclusive view of a tensor's elements, borrowed from it for `'a`;
/// passes to kernels as an output (or, as `&TensorViewMut`, an input). Made
/// by [`Tensor::view_mut`], [`Tensor::slice_mut`], [`Tensor::split_at_mut`].
pub struct TensorViewMut<'a, T: DType, S: Shape> {
    parts: Parts<T, S>,
    borrow: PhantomData<&'a mut ()>,
}

fn debug<T: DType, S: Shape>(
    f: &mut fmt::Formatter<'_>,
    name: &str,
    parts: &Parts<T, S>,
) -> fmt::Result {
    f.debug_struct(name)
        .field("dtype", &T::SPEC_NAME)
        .field("sizes", &parts.shape.sizes())
        .field("device", &parts.device)
        .finish()
}

impl<T: DType, S: Shape> fmt::Debug for Tensor<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug(f, "Tensor", &self.parts)
    }
}

impl<T: DType, S: Shape> fmt::Debug for TensorView<'_, T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug(f, "TensorView", &self.parts)
    }
}

impl<T: DType, S: Shape> fmt::Debug for TensorViewMut<'_, T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug(f, "TensorViewMut", &self.parts)
    }
}

impl<T: DType, S: Shape> Clone for TensorView<'_, T, S> {
    fn clone(&self) -> Self {
        TensorView {
            parts: self.parts.clone(),
            borrow: PhantomData,
        }
    }
}

/// Methods every tensor and view has.
macro_rules! common {
    ($ty:ty) => {
        impl<T: DType, S: Shape> $ty {
            /// The typed shape: a `usize` per DYNAMIC axis, a `Const<N>` per
            /// fixed one.
            pub fn shape(&self) -> S {
                self.parts.shape
            }

            /// Every axis's size.
            pub fn sizes(&self) -> Sizes {
                self.parts.shape.sizes()
            }

            /// The device the elements live on.
            pub fn device(&self) -> &Device {
                &self.parts.device
            }

            /// The number of elements.
            pub fn len(&self) -> usize {
                self.parts.len()
            }

            /// Whether there are no elements.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            /// The elements, copied to the host, in row-major order.
            ///
            /// For `bool` tensors every byte is checked first: a kernel that
            /// wrote something other than 0 or 1 gives [`Error::InvalidBool`].
            pub fn to_vec(&self) -> Result<Vec<T>, Error> {
                self.parts.to_vec()
            }

            /// The address of the first element: host memory for a host
            /// tensor, a device address (for ACL calls or another
            /// framework) for an NPU tensor. Valid while `self` is
            /// borrowed; for reading only (writing through it breaks the
            /// borrows Rust checks: use `as_mut_ptr` on a tensor or a
            /// mutable view). Null or dangling when there are no elements.
            /// Kernels queued on a stream may still be writing it: call
            /// [`synchronize`](Self::synchronize) (or order the other
            /// user's stream after ours) before another component reads it.
            pub fn as_ptr(&self) -> *const T {
                self.parts.region.ptr().cast_const().cast()
            }

            /// Waits until no kernel queued on a stream uses this memory
            /// (NPU tensors; host launches finish before they return). The
            /// copies (`to_vec`, `copy_to`, …) do this themselves.
            pub fn synchronize(&self) -> Result<(), Error> {
                self.parts.region.wait_idle()
            }

            /// A view of rows `rows` of the first axis (e.g. `2..5`, `..n`),
            /// without copying.
            ///
            /// # Errors
            /// [`Error::SliceOutOfRange`] when the rows are not inside the
            /// first axis; [`Error::ShapeMismatch`] when the first axis is a
            /// `Const<N>` and the slice has another number of rows.
            pub fn slice(
                &self,
                rows: impl RangeBounds<usize>,
            ) -> Result<TensorView<'_, T, S>, Error> {
                Ok(TensorView {
                    parts: self.parts.slice(rows)?,
                    borrow: PhantomData,
                })
            }

            /// A copy of the elements in a new tensor on the same device.
            pub fn to_tensor(&self) -> Result<Tensor<T, S>, Error> {
                self.parts.to_tensor()
            }

            /// Copies the elements into `dst`, which may be on any device.
            ///
            /// # Errors
            /// [`Error::CopyMismatch`] when the sizes differ; the runtime's
            /// errors for NPU memory; [`Error::InvalidBool`] when a `bool`
            /// byte arriving on the host is not 0 or 1 (`dst` is then reset
            /// to `false`).
            pub fn copy_to(&self, mut dst: impl AsOutput<T, S>) -> Result<(), Error> {
                let target = sealed::Writable::target(&mut dst);
                // Equal bytes too, so the copy below stays in bounds whatever
                // the sizes say.
                if target.sizes != self.sizes() || target.region.bytes != self.parts.region.bytes {
                    return Err(Error::CopyMismatch {
                        dst: target.sizes.to_vec(),
                        src: self.sizes().to_vec(),
                    });
                }
                // Kernels queued on a stream may still use the target.
                target.region.wait_idle()?;
                // SAFETY: the target holds as many bytes (equal sizes, one
                // dtype) on its device and is borrowed exclusively, so it
                // overlaps nothing `self` holds.
                unsafe {
                    copy_checked::<T>(target.device, target.region.ptr(), &self.parts.source())
                }
            }
        }
    };
}

common!(Tensor<T, S>);
common!(TensorView<'_, T, S>);
common!(TensorViewMut<'_, T, S>);

/// Methods of what holds its elements exclusively.
macro_rules! exclusive {
    ($ty:ty) => {
        impl<T: DType, S: Shape> $ty {
            /// The address of the first element, for writing (host memory,
            /// or a device address for an NPU tensor). Valid while `self` is
            /// borrowed mutably. Null or dangling when there are no elements.
            pub fn as_mut_ptr(&mut self) -> *mut T {
                self.parts.region.ptr().cast()
            }

            /// A mutable view of rows `rows` of the first axis, without
            /// copying; errors as for `slice`.
            pub fn slice_mut(
                &mut self,
                rows: impl RangeBounds<usize>,
            ) -> Result<TensorViewMut<'_, T, S>, Error> {
                Ok(TensorViewMut {
                    parts: self.parts.slice(rows)?,
                    borrow: PhantomData,
                })
            }

            /// Two mutable views: rows `..row` and rows `row..` of the first
            /// axis, e.g. an input and an output of one call.
            ///
            /// # Errors
            /// As for `slice`.
            pub fn split_at_mut(
                &mut self,
                row: usize,
            ) -> Result<(TensorViewMut<'_, T, S>, TensorViewMut<'_, T, S>), Error> {
                let low = self.parts.slice(..row)?;
                let high = self.parts.slice(row..)?;
                Ok((
                    TensorViewMut {
                        parts: low,
                        borrow: PhantomData,
                    },
                    TensorViewMut {
                        parts: high,
                        borrow: PhantomData,
                    },
                ))
            }

            /// A shared view of all the elements.
            pub fn view(&self) -> TensorView<'_, T, S> {
                TensorView {
                    parts: self.parts.clone(),
                    borrow: PhantomData,
                }
            }

            /// Copies `src`, which may be on any device, into these
            /// elements.
            ///
            /// # Errors
            /// [`Error::CopyMismatch`] when the sizes differ; the runtime's
            /// errors for NPU memory; [`Error::InvalidBool`] when a `bool`
            /// byte arriving on the host is not 0 or 1 (these elements are
            /// then reset to `false`).
            pub fn copy_from(&mut self, src: impl AsInput<T, S>) -> Result<(), Error> {
                self.parts.copy_from(&sealed::Readable::source(&src))
            }
        }
    };
}

exclusive!(Tensor<T, S>);
exclusive!(TensorViewMut<'_, T, S>);

impl<T: DType, S: Shape> Tensor<T, S> {
    /// A tensor of `n` zero elements (the default of every dtype) on the host.
    pub(crate) fn host_zeroed(device: &Device, shape: S, n: usize) -> Result<Self, Error> {
        let bytes = byte_len::<T>(n)?;
        let buffer = HostBuffer::zeroed(bytes, std::mem::align_of::<T>())?;
        Ok(Tensor {
            parts: Parts::new(device, shape, Buffer::Host(buffer), bytes),
        })
    }

    /// A tensor of `n` elements on `device`: zeros on the host,
    /// uninitialised device memory on an NPU (the caller fills it).
    fn alloc(device: &Device, shape: S, n: usize) -> Result<Self, Error> {
        let Some(npu) = device.as_npu() else {
            return Tensor::host_zeroed(device, shape, n);
        };
        let bytes = byte_len::<T>(n)?;
        let buffer = DeviceBuffer::alloc(npu, bytes)?;
        Ok(Tensor {
            parts: Parts::new(device, shape, Buffer::Npu(buffer), bytes),
        })
    }

    /// A copy of `data` (of `shape`'s length) on `device`.
    pub(crate) fn upload(device: &Device, shape: S, data: &[T]) -> Result<Self, Error> {
        let tensor = Tensor::alloc(device, shape, data.len())?;
        // SAFETY: the new tensor holds `size_of_val(data)` bytes on
        // `device`, and nothing else uses it; `data` is host memory of that
        // many bytes.
        unsafe {
            copy_bytes(
                device,
                tensor.parts.region.ptr(),
                &Device::host(),
                data.as_ptr().cast(),
                std::mem::size_of_val(data),
            )?
        };
        Ok(tensor)
    }

    /// Adopts `len` elements of `T` at `ptr` on `device` as a tensor of
    /// shape `shape`, without copying: memory allocated by another
    /// framework (torch_npu, aclnn, MindSpore: an `aclrtMalloc` address on
    /// that NPU), or host memory for [`Device::host()`]. pypto-rt never
    /// frees it.
    ///
    /// Adopted host memory has no guard pages: a kernel's raw accesses past
    /// its ends are not caught (the emulation's API checks still are).
    ///
    /// # Safety
    /// - `ptr` is valid for reads and writes of `len` elements of `T` on
    ///   `device` (device memory of that NPU, or host memory), and stays so
    ///   until the returned tensor and everything made from it (views,
    ///   reshapes) are dropped; the caller frees it after that, not before.
    /// - For as long, nothing else reads or writes that memory while the
    ///   tensor is used (a launch, a copy, a view), except through this
    ///   tensor; any work another framework queued on it has finished (this
    ///   runtime synchronises its launches before returning).
    /// - Host memory holds valid elements (for `bool`, bytes 0 or 1).
    /// - The memory may be used from any thread (tensors are `Send` and
    ///   `Sync`).
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] when `len` is not `shape`'s element count;
    /// [`Error::Adopt`] for a null pointer (with `len` > 0) or one not
    /// aligned for `T`.
    pub unsafe fn from_raw_parts(
        ptr: *mut T,
        len: usize,
        shape: S,
        device: &Device,
    ) -> Result<Self, Error> {
        let expected = shape.num_elements()?;
        if len != expected {
            return Err(Error::LengthMismatch {
                expected,
                actual: len,
            });
        }
        let bytes = byte_len::<T>(len)?;
        let adopt = |reason| Error::Adopt {
            ptr: ptr as usize,
            dtype: T::SPEC_NAME,
            reason,
        };
        if ptr.is_null() && len > 0 {
            return Err(adopt("the pointer is null"));
        }
        if !(ptr as usize).is_multiple_of(std::mem::align_of::<T>()) {
            return Err(adopt("the pointer is not aligned for the element type"));
        }
        Ok(Tensor {
            parts: Parts::new(
                device,
                shape,
                Buffer::Foreign(ptr.cast(), Uses::default()),
                bytes,
            ),
        })
    }

    /// The same elements with another shape of as many elements, without
    /// copying: e.g. `(usize, Const<4096>)` rows as `(b, s, Const::<4096>)`
    /// with sizes known only at run time.
    ///
    /// # Errors
    /// [`Error::ReshapeMismatch`] when the element counts differ; the
    /// tensor is dropped then (check first with `view().reshape(..)` to
    /// keep it).
    pub fn reshape<S2: Shape>(self, shape: S2) -> Result<Tensor<T, S2>, Error> {
        Ok(Tensor {
            parts: self.parts.reshape(shape)?,
        })
    }

    /// A mutable view of all the elements.
    pub fn view_mut(&mut self) -> TensorViewMut<'_, T, S> {
        TensorViewMut {
            parts: self.parts.clone(),
            borrow: PhantomData,
        }
    }

    /// A copy of this tensor on `device`. Copies to the host check `bool`
    /// bytes as [`copy_from`](Self::copy_from) does.
    pub fn to_device(&self, device: &Device) -> Result<Self, Error> {
        let mut copy = Tensor::alloc(device, self.shape(), self.len())?;
        copy.copy_from(self)?;
        Ok(copy)
    }

    /// A copy of this tensor on the same device.
    pub fn try_clone(&self) -> Result<Self, Error> {
        self.parts.to_tensor()
    }

    /// For wrappers generated for interface v1: this input's sizes and memory.
    pub(crate) fn input_arg(&self) -> Arg<'_> {
        self.parts.input_arg()
    }

    /// For wrappers generated for interface v1: this output's sizes and
    /// memory, borrowed exclusively.
    pub(crate) fn output_arg(&mut self) -> Arg<'_> {
        let parts = &self.parts;
        Arg::Tensor {
            sizes: parts.shape.sizes(),
            memory: parts.region.memory::<T>(true),
            device: &parts.device,
        }
    }
}

impl<'a, T: DType, S: Shape> TensorView<'a, T, S> {
    /// The same elements with another shape of as many elements, without
    /// copying.
    ///
    /// # Errors
    /// [`Error::ReshapeMismatch`] when the element counts differ.
    pub fn reshape<S2: Shape>(self, shape: S2) -> Result<TensorView<'a, T, S2>, Error> {
        Ok(TensorView {
            parts: self.parts.reshape(shape)?,
            borrow: PhantomData,
        })
    }

    /// Rows `rows` of the first axis, for the whole borrow `'a`; errors as
    /// for [`TensorView::slice`].
    pub fn into_slice(self, rows: impl RangeBounds<usize>) -> Result<TensorView<'a, T, S>, Error> {
        Ok(TensorView {
            parts: self.parts.slice(rows)?,
            borrow: PhantomData,
        })
    }
}

impl<'a, T: DType, S: Shape> TensorViewMut<'a, T, S> {
    /// The same elements with another shape of as many elements, without
    /// copying.
    ///
    /// # Errors
    /// [`Error::ReshapeMismatch`] when the element counts differ.
    pub fn reshape<S2: Shape>(self, shape: S2) -> Result<TensorViewMut<'a, T, S2>, Error> {
        Ok(TensorViewMut {
            parts: self.parts.reshape(shape)?,
            borrow: PhantomData,
        })
    }

    /// This view for a shorter borrow, leaving `self` usable afterwards.
    pub fn reborrow(&mut self) -> TensorViewMut<'_, T, S> {
        TensorViewMut {
            parts: self.parts.clone(),
            borrow: PhantomData,
        }
    }

    /// This view as a shared one for the whole borrow `'a`.
    pub fn into_view(self) -> TensorView<'a, T, S> {
        TensorView {
            parts: self.parts,
            borrow: PhantomData,
        }
    }

    /// Rows `rows` of the first axis, for the whole borrow `'a`; errors as
    /// for [`TensorViewMut::slice_mut`].
    pub fn into_slice_mut(
        self,
        rows: impl RangeBounds<usize>,
    ) -> Result<TensorViewMut<'a, T, S>, Error> {
        Ok(TensorViewMut {
            parts: self.parts.slice(rows)?,
            borrow: PhantomData,
        })
    }
}

// Written out rather than by a macro, so that a type error's list of
// implementations reads as plain impls.
impl<T: DType, S: Shape> sealed::Readable for &Tensor<T, S> {
    fn source(&self) -> Source<'_> {
        self.parts.source()
    }
}
impl<T: DType, S: Shape> AsInput<T, S> for &Tensor<T, S> {}

impl<T: DType, S: Shape> sealed::Readable for TensorView<'_, T, S> {
    fn source(&self) -> Source<'_> {
        self.parts.source()
    }
}
impl<T: DType, S: Shape> AsInput<T, S> for TensorView<'_, T, S> {}

impl<T: DType, S: Shape> sealed::Readable for &TensorView<'_, T, S> {
    fn source(&self) -> Source<'_> {
        self.parts.source()
    }
}
impl<T: DType, S: Shape> AsInput<T, S> for &TensorView<'_, T, S> {}

impl<T: DType, S: Shape> sealed::Readable for &TensorViewMut<'_, T, S> {
    fn source(&self) -> Source<'_> {
        self.parts.source()
    }
}
impl<T: DType, S: Shape> AsInput<T, S> for &TensorViewMut<'_, T, S> {}

impl<T: DType, S: Shape> sealed::Writable for &mut Tensor<T, S> {
    fn target(&mut self) -> Source<'_> {
        self.parts.source()
    }
}
impl<T: DType, S: Shape> AsOutput<T, S> for &mut Tensor<T, S> {}

impl<T: DType, S: Shape> sealed::Writable for TensorViewMut<'_, T, S> {
    fn target(&mut self) -> Source<'_> {
        self.parts.source()
    }
}
impl<T: DType, S: Shape> AsOutput<T, S> for TensorViewMut<'_, T, S> {}

impl<T: DType, S: Shape> sealed::Writable for &mut TensorViewMut<'_, T, S> {
    fn target(&mut self) -> Source<'_> {
        self.parts.source()
    }
}
impl<T: DType, S: Shape> AsOutput<T, S> for &mut TensorViewMut<'_, T, S> {}

#[cfg(feature = "ndarray")]
mod arrays {
    //! Host tensors as `ndarray` arrays (cargo feature `ndarray`).

    use ndarray::{ArrayBase, ArrayD, ArrayViewD, ArrayViewMutD, Data, Dimension, IxDyn};

    use super::*;

    /// The elements of a host tensor as a slice, or [`Error::NotOnHost`].
    fn host_slice<'s, T: DType, S: Shape>(
        parts: &'s Parts<T, S>,
        operation: &'static str,
    ) -> Result<&'s [T], Error> {
        if !parts.device.is_host() {
            return Err(Error::NotOnHost {
                operation,
                device: parts.device.to_string(),
            });
        }
        let len = parts.len();
        if len == 0 {
            return Ok(&[]);
        }
        // SAFETY: host memory holding `len` valid, aligned `T`s (host
        // tensors hold valid elements: bool tensors are checked after each
        // host launch and after each copy to the host), not written while
        // `parts`' owner is borrowed shared.
        Ok(unsafe { std::slice::from_raw_parts(parts.region.ptr().cast::<T>(), len) })
    }

    macro_rules! as_array {
        ($ty:ty) => {
            impl<T: DType, S: Shape> $ty {
                /// The elements as an `ndarray` view, without copying (host
                /// tensors only; standard row-major layout).
                ///
                /// # Errors
                /// [`Error::NotOnHost`] for a tensor on an NPU.
                pub fn as_array(&self) -> Result<ArrayViewD<'_, T>, Error> {
                    let data = host_slice(&self.parts, "as_array")?;
                    Ok(ArrayViewD::from_shape(IxDyn(&self.sizes()), data)
                        .expect("a tensor's sizes match its length"))
                }

                /// The elements copied into an `ndarray` array, from any
                /// device.
                pub fn to_array(&self) -> Result<ArrayD<T>, Error> {
                    let data = self.to_vec()?;
                    Ok(ArrayD::from_shape_vec(IxDyn(&self.sizes()), data)
                        .expect("a tensor's sizes match its length"))
                }
            }
        };
    }

    as_array!(Tensor<T, S>);
    as_array!(TensorView<'_, T, S>);
    as_array!(TensorViewMut<'_, T, S>);

    macro_rules! as_array_mut {
        ($ty:ty) => {
            impl<T: DType, S: Shape> $ty {
                /// The elements as a mutable `ndarray` view, without copying
                /// (host tensors only).
                ///
                /// # Errors
                /// [`Error::NotOnHost`] for a tensor on an NPU.
                pub fn as_array_mut(&mut self) -> Result<ArrayViewMutD<'_, T>, Error> {
                    host_slice(&self.parts, "as_array_mut")?;
                    let len = self.len();
                    let data: &mut [T] = if len == 0 {
                        &mut []
                    } else {
                        // SAFETY: as for `host_slice`, borrowed exclusively
                        // through `&mut self`.
                        unsafe {
                            std::slice::from_raw_parts_mut(self.parts.region.ptr().cast(), len)
                        }
                    };
                    Ok(ArrayViewMutD::from_shape(IxDyn(&self.sizes()), data)
                        .expect("a tensor's sizes match its length"))
                }
            }
        };
    }

    as_array_mut!(Tensor<T, S>);
    as_array_mut!(TensorViewMut<'_, T, S>);

    impl Device {
        /// A tensor on this device holding a copy of `array`, whose shape
        /// must fit `S` (rank and every `Const` axis). An array in standard
        /// (row-major, contiguous) layout is copied once, straight into the
        /// tensor's memory (which lives between guard pages, so it cannot
        /// be the array's own); any other layout is first gathered into
        /// row-major order (a second copy).
        ///
        /// # Errors
        /// [`Error::RankMismatch`] or [`Error::ShapeMismatch`] when the
        /// array's shape does not fit `S`.
        pub fn tensor_from_array<T: DType, S: Shape, A: Data<Elem = T>, D: Dimension>(
            &self,
            array: &ArrayBase<A, D>,
        ) -> Result<Tensor<T, S>, Error> {
            let shape = S::from_sizes(array.shape())?;
            match array.as_slice() {
                Some(data) => Tensor::upload(self, shape, data),
                None => {
                    let mut data = Vec::new();
                    data.try_reserve_exact(array.len())
                        .map_err(|e| Error::OutOfMemory {
                            bytes: array.len().saturating_mul(std::mem::size_of::<T>()),
                            reason: e.to_string(),
                        })?;
                    data.extend(array.iter().copied());
                    Tensor::upload(self, shape, &data)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Const;

    fn host() -> Device {
        Device::host()
    }

    fn iota(n: usize) -> Vec<f32> {
        (0..n).map(|i| i as f32).collect()
    }

    #[test]
    fn reshape_and_slices_share_memory() {
        let t = host().tensor_from(&iota(24), (6, Const::<4>)).unwrap();
        let base = t.as_ptr();
        let rows = t.slice(2..5).unwrap();
        assert_eq!(rows.sizes().as_slice(), &[3, 4]);
        assert_eq!(rows.as_ptr(), base.wrapping_add(8));
        assert_eq!(rows.to_vec().unwrap(), iota(20)[8..].to_vec());
        let cube = rows.reshape((3usize, 2usize, Const::<2>)).unwrap();
        assert_eq!(cube.as_ptr(), base.wrapping_add(8));
        assert_eq!(cube.to_vec().unwrap(), iota(20)[8..].to_vec());
        let inner = cube.slice(1..=2).unwrap();
        assert_eq!(inner.to_vec().unwrap(), iota(20)[12..].to_vec());
        // Owned reshape: the same buffer under another type.
        let t = t.reshape((2usize, 3usize, Const::<4>)).unwrap();
        assert_eq!(t.as_ptr(), base);
        assert_eq!(
            t.slice(1..).unwrap().to_vec().unwrap(),
            iota(24)[12..].to_vec()
        );
        assert_eq!(t.slice(..0).unwrap().len(), 0);
    }

    #[test]
    fn view_errors_read_clearly() {
        let t = host().tensor_from(&iota(24), (6, Const::<4>)).unwrap();
        assert_eq!(
            t.view().reshape((5, Const::<4>)).unwrap_err().to_string(),
            "cannot reshape a tensor of sizes [6, 4] (24 elements) to sizes [5, 4] (20 elements); \
             a reshape keeps the element count"
        );
        assert_eq!(
            t.slice(4..7).unwrap_err().to_string(),
            "cannot slice rows 4..7 of a tensor whose first axis has 6"
        );
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = t.slice(3..2).unwrap_err();
        assert_eq!(
            reversed,
            Error::SliceOutOfRange {
                start: 3,
                end: 2,
                len: 6
            }
        );
        // A fixed first axis keeps its size: only the whole of it is a slice.
        let fixed = host()
            .tensor_from(&iota(8), (Const::<2>, Const::<4>))
            .unwrap();
        assert_eq!(
            fixed.slice(1..).unwrap_err().to_string(),
            "axis 0 has size 1, but the shape's type fixes it at 2"
        );
        assert_eq!(fixed.slice(..).unwrap().len(), 8);
        let mut small = host().zeros::<f32, _>((5, Const::<4>)).unwrap();
        assert_eq!(
            small.copy_from(&t).unwrap_err().to_string(),
            "cannot copy a tensor of sizes [6, 4] into one of sizes [5, 4]; copies need equal \
             sizes (reshape one of them)"
        );
        assert_eq!(
            t.copy_to(&mut small).unwrap_err(),
            Error::CopyMismatch {
                dst: vec![5, 4],
                src: vec![6, 4]
            }
        );
        // A failed owned reshape reports the sizes (and drops the tensor).
        assert_eq!(
            t.reshape((7usize,)).unwrap_err().to_string(),
            "cannot reshape a tensor of sizes [6, 4] (24 elements) to sizes [7] (7 elements); a \
             reshape keeps the element count"
        );
    }

    #[test]
    fn copies_fill_views_and_leave_the_rest() {
        let src = host().tensor_from(&iota(8), (2, Const::<4>)).unwrap();
        let mut dst = host().zeros::<f32, _>((5, Const::<4>)).unwrap();
        dst.slice_mut(1..3).unwrap().copy_from(&src).unwrap();
        src.slice(1..)
            .unwrap()
            .copy_to(dst.slice_mut(4..).unwrap())
            .unwrap();
        let mut want = vec![0.0; 20];
        want[4..12].copy_from_slice(&iota(8));
        want[16..].copy_from_slice(&iota(8)[4..]);
        assert_eq!(dst.to_vec().unwrap(), want);
        // Two halves of one tensor, one copied into the other.
        let (low, mut high) = dst.split_at_mut(2).unwrap();
        high.slice_mut(..2).unwrap().copy_from(&low).unwrap();
        assert_eq!(&dst.to_vec().unwrap()[8..16], &want[..8]);
        let copy = dst.slice(1..2).unwrap().to_tensor().unwrap();
        assert_ne!(copy.as_ptr(), dst.as_ptr().wrapping_add(4));
        assert_eq!(copy.to_vec().unwrap(), iota(4));
    }

    #[test]
    fn adopted_memory_is_used_in_place_and_checked() {
        let mut data = iota(12);
        // SAFETY: `data` outlives `t`, which is its only user meanwhile.
        let mut t =
            unsafe { Tensor::from_raw_parts(data.as_mut_ptr(), 12, (3usize, Const::<4>), &host()) }
                .unwrap();
        assert_eq!(t.as_ptr(), data.as_ptr());
        t.slice_mut(1..2)
            .unwrap()
            .copy_from(&host().tensor_from(&[7.0f32; 4], (1, Const::<4>)).unwrap())
            .unwrap();
        drop(t);
        assert_eq!(&data[4..8], &[7.0; 4]);
        assert_eq!(data[3], 3.0);
        // SAFETY: the calls fail before anything is used.
        let err =
            unsafe { Tensor::from_raw_parts(std::ptr::null_mut::<f32>(), 4, (4usize,), &host()) }
                .unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot adopt memory at 0x0 as a tensor of DT_FP32: the pointer is null"
        );
        let odd = data.as_mut_ptr().cast::<u8>().wrapping_add(1).cast::<f32>();
        // SAFETY: as above.
        let err = unsafe { Tensor::from_raw_parts(odd, 1, (1usize,), &host()) }.unwrap_err();
        assert_eq!(
            err,
            Error::Adopt {
                ptr: odd as usize,
                dtype: "DT_FP32",
                reason: "the pointer is not aligned for the element type"
            }
        );
        // SAFETY: as above.
        let err = unsafe { Tensor::from_raw_parts(data.as_mut_ptr(), 12, (5usize,), &host()) }
            .unwrap_err();
        assert_eq!(
            err,
            Error::LengthMismatch {
                expected: 5,
                actual: 12
            }
        );
    }

    /// Bytes that are not `bool`s, as a kernel on an NPU leaves them in
    /// device memory (tests/npu_checks.rs does that on the fake NPU): here
    /// host bytes typed as `bool` inside the crate, read only as bytes.
    fn invalid_bools() -> Tensor<bool, (usize,)> {
        let bytes = host().tensor_from(&[0u8, 2, 1, 0], (4usize,)).unwrap();
        Tensor {
            parts: Parts {
                device: host(),
                shape: (4,),
                region: bytes.parts.region.clone(),
                elem: PhantomData,
            },
        }
    }

    fn host_bytes<S: Shape>(t: &Tensor<bool, S>) -> Vec<u8> {
        // SAFETY: host memory of `t.len()` one-byte elements, borrowed.
        unsafe { std::slice::from_raw_parts(t.as_ptr().cast::<u8>(), t.len()) }.to_vec()
    }

    #[test]
    fn copies_to_the_host_check_bool_bytes_and_reset_their_destination() {
        let src = invalid_bools();
        let want = Error::InvalidBool {
            kernel: None,
            param: "the copy's destination was reset to false",
            index: 1,
            value: 2,
        };
        assert_eq!(
            want.to_string(),
            "element 1 of a DT_BOOL tensor holds byte 2, which is not a DT_BOOL (0 or 1), so the \
             copy's destination was reset to false"
        );
        let fresh = || host().tensor_from(&[true; 4], (4usize,)).unwrap();
        let mut dst = fresh();
        assert_eq!(dst.copy_from(&src), Err(want.clone()));
        assert_eq!(host_bytes(&dst), [0; 4]);
        let mut dst = fresh();
        assert_eq!(src.copy_to(&mut dst), Err(want.clone()));
        assert_eq!(host_bytes(&dst), [0; 4]);
        let mut dst = fresh();
        assert_eq!(src.copy_to(dst.slice_mut(..).unwrap()), Err(want.clone()));
        assert_eq!(host_bytes(&dst), [0; 4]);
        assert_eq!(src.to_device(&host()).unwrap_err(), want);
        assert_eq!(src.try_clone().unwrap_err(), want);
        assert_eq!(
            src.to_vec().unwrap_err().to_string(),
            "element 1 of a DT_BOOL tensor holds byte 2, which is not a DT_BOOL (0 or 1), so \
             to_vec returned nothing"
        );
        // What `as_array` lends after a failed copy is all `false`.
        #[cfg(feature = "ndarray")]
        {
            let mut dst = fresh();
            assert!(dst.copy_from(&src).is_err());
            let view = dst.as_array().unwrap();
            assert_eq!(view.iter().copied().collect::<Vec<_>>(), [false; 4]);
        }
        // Valid bools copy as before.
        let ok = host()
            .tensor_from(&[true, false, true, true], (4usize,))
            .unwrap();
        let mut dst = fresh();
        dst.copy_from(&ok).unwrap();
        assert_eq!(dst.to_vec().unwrap(), [true, false, true, true]);
    }

    #[cfg(feature = "ndarray")]
    #[test]
    fn ndarray_views_and_round_trips() {
        use ndarray::{Array2, ShapeBuilder};

        let mut t = host().tensor_from(&iota(12), (3, Const::<4>)).unwrap();
        let view = t.as_array().unwrap();
        assert_eq!(view.shape(), &[3, 4]);
        assert_eq!(view.as_ptr(), t.as_ptr(), "no copy");
        assert_eq!(view[[2, 1]], 9.0);
        let rows = t.slice(1..).unwrap();
        assert_eq!(
            rows.as_array().unwrap().as_ptr(),
            t.as_ptr().wrapping_add(4)
        );
        t.as_array_mut().unwrap()[[0, 0]] = 42.0;
        t.slice_mut(2..).unwrap().as_array_mut().unwrap().fill(-1.0);
        let back = t.to_array().unwrap();
        assert_eq!(back[[0, 0]], 42.0);
        assert!((0..4).all(|j| back[[2, j]] == -1.0));

        // From arrays: standard layout (one copy) and transposed (gathered).
        let a = Array2::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as f32);
        let ta = host()
            .tensor_from_array::<f32, (usize, Const<3>), _, _>(&a)
            .unwrap();
        assert_eq!(ta.to_vec().unwrap(), iota(6));
        let f = Array2::from_shape_fn((2, 3).f(), |(i, j)| (i * 3 + j) as f32);
        let tf = host()
            .tensor_from_array::<f32, (usize, usize), _, _>(&f)
            .unwrap();
        assert_eq!(tf.to_vec().unwrap(), iota(6));
        let tt = host()
            .tensor_from_array::<f32, (usize, usize), _, _>(&a.t())
            .unwrap();
        assert_eq!(tt.to_vec().unwrap(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
        assert_eq!(
            host()
                .tensor_from_array::<f32, (usize, Const<4>), _, _>(&a)
                .unwrap_err()
                .to_string(),
            "axis 1 has size 3, but the shape's type fixes it at 4"
        );
        assert_eq!(ta.to_array().unwrap(), a.into_dyn());
    }
}
