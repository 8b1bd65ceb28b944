//! The vocabulary of a launch: the types that generated wrappers, tensors
//! and the NPU libraries name to describe a kernel and lend it arguments
//! ([`KernelDesc`], [`Arg`], [`Memory`], [`Entries`]), and the records the
//! host entries read ([`HostLaunch`], [`HostArg`]), whose layout
//! `pypto_emu/core.h` shares. Generated code reaches these through
//! `crate::__private::vN`; [`crate::launch`] is the engine that runs them.
//!
//! It names the types its fields carry (a tensor's [`Device`], its host
//! buffer, its stream uses, an architecture's [`NpuStub`]) and nothing of
//! the launch path.

use std::ffi::{c_char, c_void};
use std::sync::atomic::AtomicU64;

use crate::device::Device;
use crate::dtype::InvalidCheck;
use crate::host_mem::HostBuffer;
pub use crate::npu_lib::NpuEntry;
use crate::npu_lib::NpuStub;
use crate::shape::Sizes;
use crate::stream::Uses;

/// Most blocks a launch uses: the vector cores of an Atlas A2 (24 AI cores,
/// two vector units each). Kernels split their work over `GetBlockNum()`.
pub const MAX_BLOCKS: u32 = 48;

/// One argument of a call, in the kernel's param order.
pub enum Arg<'a> {
    /// A tensor.
    Tensor {
        /// Its sizes, checked against the kernel's dims.
        sizes: Sizes,
        /// Its memory, lent for the launch.
        memory: Memory<'a>,
        /// The device it lives on; every tensor of a call must share one.
        device: &'a Device,
    },
    /// A scalar's bits (see [`crate::DType::scalar_bits`]).
    Scalar(u64),
    /// A scalar the spec binds to a size of the call's tensors (`value:
    /// x.numel`): computed at launch, after the sizes are checked, and
    /// refused when it exceeds `max`, the largest value of its type
    /// `dtype` (a spec dtype name, for the message).
    Sized {
        /// Which size.
        of: SizeOf,
        /// Its type's largest value.
        max: u64,
        /// Its type's spec dtype name.
        dtype: &'static str,
    },
}

/// A size of a call's tensors, as a spec's size expressions name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeOf {
    /// `param.numel`: the element count of tensor param `param`.
    Numel {
        /// The param's index in call order.
        param: u8,
    },
    /// `param.N` (or `param.last`): the size of one axis.
    Axis {
        /// The param's index in call order.
        param: u8,
        /// The axis, counted from 0.
        axis: u8,
    },
}

/// Most blocks one launch may have when the spec sets the count (`blocks:`
/// of a `source:` kernel): the largest block dimension the NPU runtime
/// accepts.
pub const MAX_LAUNCH_BLOCKS: u32 = 65535;

/// A tensor argument's memory, as [`crate::Tensor`] lends it to a launch.
pub struct Memory<'a>(pub(crate) MemoryKind<'a>);

pub(crate) enum MemoryKind<'a> {
    /// A host input (bytes `offset..offset + bytes` of `buffer`, which
    /// views may share): read-only to the kernel; with its dtype's check
    /// for invalid bytes (`bool`), run after the launch in case the kernel
    /// wrote it all the same (read-only pages are off in release builds,
    /// and cover only a view's whole pages).
    HostInput {
        buffer: &'a HostBuffer,
        offset: usize,
        bytes: usize,
        first_invalid: InvalidCheck,
    },
    /// A host output, with its dtype's check for invalid bytes (`bool`).
    /// Lent from `&mut`, so nothing else sees those bytes during the
    /// launch; the kernel and the checks after it write through its raw
    /// pointer.
    HostOutput {
        buffer: &'a HostBuffer,
        offset: usize,
        bytes: usize,
        first_invalid: InvalidCheck,
    },
    /// Device memory on an NPU, or adopted host memory (no guard pages);
    /// carries its dtype's check for invalid bytes, run after a host
    /// launch (on inputs too: nothing keeps a kernel from writing adopted
    /// memory).
    Raw {
        ptr: *mut u8,
        bytes: u64,
        writable: bool,
        first_invalid: InvalidCheck,
        /// Device memory: the queued work that uses it.
        uses: Option<&'a Uses>,
    },
}

impl<'a> Memory<'a> {
    pub(crate) fn host_input(
        buffer: &'a HostBuffer,
        offset: usize,
        bytes: usize,
        first_invalid: InvalidCheck,
    ) -> Self {
        Memory(MemoryKind::HostInput {
            buffer,
            offset,
            bytes,
            first_invalid,
        })
    }

    /// The caller holds these bytes exclusively for the memory's life.
    pub(crate) fn host_output(
        buffer: &'a HostBuffer,
        offset: usize,
        bytes: usize,
        first_invalid: InvalidCheck,
    ) -> Self {
        Memory(MemoryKind::HostOutput {
            buffer,
            offset,
            bytes,
            first_invalid,
        })
    }

    /// Device memory (with the queued work that uses it), or adopted host
    /// memory (an output is held exclusively by the caller for the
    /// memory's life).
    pub(crate) fn raw(
        ptr: *mut u8,
        bytes: u64,
        writable: bool,
        first_invalid: InvalidCheck,
        uses: Option<&'a Uses>,
    ) -> Self {
        Memory(MemoryKind::Raw {
            ptr,
            bytes,
            writable,
            first_invalid,
            uses,
        })
    }

    pub(crate) fn address(&self) -> (*mut u8, u64) {
        match &self.0 {
            MemoryKind::HostInput {
                buffer,
                offset,
                bytes,
                ..
            }
            | MemoryKind::HostOutput {
                buffer,
                offset,
                bytes,
                ..
            } => (buffer.as_ptr().wrapping_add(*offset), *bytes as u64),
            MemoryKind::Raw { ptr, bytes, .. } => (*ptr, *bytes),
        }
    }
}

/// A kernel as the generated wrapper describes it.
#[derive(Debug)]
pub struct KernelDesc {
    /// The kernel's name in the spec.
    pub name: &'static str,
    /// Param names, in call order (tensors and scalars).
    pub params: &'static [&'static str],
    /// The dims: sets of axes that must agree.
    pub dims: &'static [DimDesc],
    /// How the call's sizes set the block count.
    pub blocks: BlockRule,
    /// Axes whose size must be a multiple of a number (e.g. attention's
    /// hidden size of its heads), when the type does not fix the size.
    pub multiples: &'static [Multiple],
    /// Pairs of axes where one must be twice the other.
    pub halves: &'static [Halves],
}

/// `big` must be exactly twice `small` (a split into two halves).
#[derive(Debug)]
pub struct Halves {
    /// (param index, axis) of the larger axis.
    pub big: (u8, u8),
    /// (param index, axis) of the axis `big` is twice.
    pub small: (u8, u8),
    /// Why, for the error message.
    pub why: &'static str,
}

/// `axis` must be a multiple of `of`.
#[derive(Debug)]
pub struct Multiple {
    /// (param index, axis) of the axis.
    pub axis: (u8, u8),
    /// The number its size must be a multiple of.
    pub of: u32,
    /// Why, for the error message.
    pub why: &'static str,
}

/// A set of axes that must have one size.
#[derive(Debug)]
pub struct DimDesc {
    /// (param index, axis) of every axis in the dim.
    pub axes: &'static [(u8, u8)],
    /// Why the axes agree, for error messages.
    pub why: &'static str,
}

/// How many blocks a launch uses, from the call's sizes; capped at
/// [`MAX_BLOCKS`]. Zero blocks means there is no work: nothing is launched.
/// On the host backend, [`crate::with_host_blocks`] and [`crate::BLOCKS_VAR`] can force
/// another count (1 to [`MAX_BLOCKS`]) for launches with work.
#[derive(Debug, Clone, Copy)]
pub enum BlockRule {
    /// One block per row: the product of all but the last axis of a param.
    Rows {
        /// The param's index in call order.
        param: u8,
    },
    /// One block per `per_block` elements of a param, rounded up.
    Elements {
        /// The param's index in call order.
        param: u8,
        /// Elements each block handles.
        per_block: u32,
    },
    /// `factor` blocks per index of the leading `axes` axes of a param.
    Leading {
        /// The param's index in call order.
        param: u8,
        /// How many leading axes.
        axes: u8,
        /// Blocks per index.
        factor: u32,
    },
    /// Exactly this many blocks (`blocks: 8` in a spec), not capped.
    Count(u32),
    /// As many blocks as a size of the call (`blocks: x.0`), up to
    /// [`MAX_LAUNCH_BLOCKS`]; not capped at [`MAX_BLOCKS`].
    Size(SizeOf),
}

/// One block's call record for a host entry; the C++ side declares the same
/// struct (`pypto_emu::HostLaunch` in `templates/include/pypto_emu/core.h`,
/// which asserts the same size and offsets).
#[repr(C)]
#[derive(Debug)]
pub struct HostLaunch {
    /// This block's index, from 0.
    pub block_idx: u32,
    /// The launch's block count.
    pub block_num: u32,
    /// Per tensor argument, in param order: its address.
    pub args: *const *mut c_void,
    /// Per tensor argument: its size in bytes.
    pub arg_bytes: *const u64,
    /// The number of tensor arguments (the length of `args` and `arg_bytes`).
    pub num_args: u32,
    /// The tiling data the kernel reads: the call's dim sizes, then its
    /// scalars.
    pub tiling: *const u8,
    /// The tiling's size in bytes.
    pub tiling_bytes: u64,
    /// Out: a buffer for the block's error message (NUL-terminated).
    pub err: *mut c_char,
    /// The size of `err` in bytes.
    pub err_len: u64,
    /// Written by the entry: the block's Unified Buffer high-water mark.
    pub ub_peak: u64,
    /// Per tensor argument: its mapping, name and writability.
    pub arg_info: *const HostArg,
    /// The kernel's name (not NUL-terminated), for fault reports.
    pub kernel: *const u8,
    /// The length of `kernel` in bytes.
    pub kernel_len: u64,
    /// Distinct for every launch of the process, so that the emulation
    /// can reject a `GlobalTensor` kept from an earlier one.
    pub launch_id: u64,
    /// Holds [`HostLaunch::launch_id`] once the launch has run past its
    /// timeout (interface v7; before, any value but 0 stopped a launch).
    pub cancel: *const AtomicU64,
    /// The launch's timeout in milliseconds; 0 for none.
    pub timeout_ms: u64,
    /// The sanitizer checks to run ([`crate::Sanitize::bits`]).
    pub sanitize: u32,
    /// Out: non-zero when the failure is block `fail_block - 1`'s (a
    /// memcheck overlap found by the launch's last block names the higher
    /// of the two blocks).
    pub fail_block: u32,
    /// The modelled NPU's cost table and receiver (null: not modelled).
    pub model: *const crate::model::ModelSink,
}

/// What the emulation knows of one tensor argument's memory
/// (`pypto_emu::HostArg`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HostArg {
    /// The tensor's whole mapping, guard pages included (0, 0 if none).
    pub map_begin: u64,
    pub map_end: u64,
    /// The param's name (not NUL-terminated).
    pub name: *const u8,
    pub name_len: u64,
    /// Non-zero for outputs.
    pub writable: u32,
    pub reserved: u32,
}

/// Asserts a record's size and the offset of every field at compile time,
/// each failure naming the field; a field left out of the list fails to
/// compile too. Also records the numbers in
/// [`LAYOUT`], which a unit test compares with `pypto_emu/core.h`'s
/// `static_assert`s.
macro_rules! layout {
    ($($ty:ident ($size:literal) { $($field:ident: $offset:literal),* $(,)? })*) => {
        $(
            const _: () = {
                assert!(
                    std::mem::size_of::<$ty>() == $size,
                    concat!(stringify!($ty), " is not ", stringify!($size),
                        " bytes; abi.rs and pypto_emu/core.h must agree on it")
                );
                $(assert!(
                    std::mem::offset_of!($ty, $field) == $offset,
                    concat!(stringify!($ty), "::", stringify!($field), " is not at byte ",
                        stringify!($offset), "; abi.rs and pypto_emu/core.h must agree on it")
                );)*
                // Every field is listed: rustc names one left out ("missing
                // field `…` in initializer").
                #[allow(unreachable_code)]
                let _ = || $ty { $($field: unreachable!()),* };
            };
        )*
        /// (struct, field or `sizeof`, bytes), as asserted above.
        #[cfg(test)]
        const LAYOUT: &[(&str, &str, usize)] = &[
            $(
                (stringify!($ty), "sizeof", $size),
                $((stringify!($ty), stringify!($field), $offset),)*
            )*
        ];
    };
}

// The layout `pypto_emu/core.h` asserts too, with the same numbers.
layout! {
    HostArg (40) {
        map_begin: 0,
        map_end: 8,
        name: 16,
        name_len: 24,
        writable: 32,
        reserved: 36,
    }
    HostLaunch (136) {
        block_idx: 0,
        block_num: 4,
        args: 8,
        arg_bytes: 16,
        num_args: 24,
        tiling: 32,
        tiling_bytes: 40,
        err: 48,
        err_len: 56,
        ub_peak: 64,
        arg_info: 72,
        kernel: 80,
        kernel_len: 88,
        launch_id: 96,
        cancel: 104,
        timeout_ms: 112,
        sanitize: 120,
        fail_block: 124,
        model: 128,
    }
}

/// The host entry of one compiled specialisation: runs one block; returns
/// 0, or non-zero with a message in `err`.
pub type HostEntry = unsafe extern "C" fn(launch: *mut HostLaunch) -> i32;

/// Everything compiled for one specialisation: the host entry, and one NPU
/// stub per architecture when the crate was built with CANN.
#[derive(Debug, Clone, Copy)]
pub struct Entries {
    /// The host entry, compiled with the Ascend C emulation.
    pub host: HostEntry,
    /// One launch stub per NPU architecture built for, each in the shared
    /// library of its architecture that the binary embeds (loaded on first
    /// use); empty without CANN.
    pub npu: &'static [NpuStub],
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The C++ twin asserts the same layout: `PYPTO_EMU_SIZE(T, n)` and
    /// `PYPTO_EMU_FIELD(T, field, n)` lines in `pypto_emu/core.h`.
    #[test]
    fn cpp_asserts_the_same_layout() {
        let header = include_str!("../../templates/include/pypto_emu/core.h");
        let mut cpp = Vec::new();
        for line in header.lines() {
            let (kind, rest) = if let Some(rest) = line.strip_prefix("PYPTO_EMU_SIZE(") {
                ("size", rest)
            } else if let Some(rest) = line.strip_prefix("PYPTO_EMU_FIELD(") {
                ("field", rest)
            } else {
                continue;
            };
            let parts: Vec<&str> = rest
                .trim_end_matches(");")
                .split(',')
                .map(str::trim)
                .collect();
            let bytes: usize = parts[parts.len() - 1].parse().unwrap();
            let field = if kind == "size" { "sizeof" } else { parts[1] };
            cpp.push((parts[0], field, bytes));
        }
        assert_eq!(cpp, LAYOUT);
    }
}
