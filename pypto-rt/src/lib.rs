//! `pypto-rt`: the runtime side of pypto-rs kernels.
//!
//! Kernels declared in YAML specs are turned by `pypto-build` into typed
//! wrappers; include them with [`include_kernels!`]:
//!
//! ```ignore
//! pypto_rt::include_kernels!();
//! use pypto_rt::{Const, Device};
//!
//! let dev = Device::default();
//! let x = dev.tensor_from(&[0.0f32; 2 * 128], (2, Const::<128>))?;
//! let bias = dev.tensor_from(&[1.0f32; 128], (Const::<128>,))?;
//! let mut out = dev.zeros((2, Const::<128>))?;
//! kernels::add_bias(&x, &bias, &mut out)?;
//! ```
//!
//! Shapes are tuples of dims: `Const<N>` for sizes fixed at compile time
//! (FIXED and STATIC axes), `usize` for DYNAMIC axes.
//!
//! [`Device::default`] is the first Ascend NPU when the CANN runtime
//! (`libascendcl.so`, loaded at run time) reports one, else the host
//! backend; `PYPTO_DEVICE=host|npu|npu:N` overrides it. The NPU path has
//! been tested against a fake CANN toolkit only, not on Ascend hardware.

mod acl;
pub mod device;
pub mod dim;
pub mod dtype;
pub mod error;
mod host_mem;
#[doc(hidden)]
pub mod launch;
pub mod shape;
pub mod tensor;
mod watchdog;

pub use acl::LIBRARY_VAR;
pub use device::{DEVICE_VAR, Device, NpuArch};
pub use dim::{Const, Dim};
pub use dtype::{DType, Fp8E4M3, Fp8E5M2};
pub use error::{AxisSize, Error};
pub use half::{bf16, f16};
pub use host_mem::READONLY_INPUTS_VAR;
pub use launch::{BLOCKS_VAR, LaunchStats, MAX_BLOCKS, last_launch, with_host_blocks};
pub use shape::{Shape, Sizes};
pub use tensor::Tensor;
pub use watchdog::TIMEOUT_VAR;

/// Declares `pub mod kernels` holding the wrappers `pypto-build` generated
/// into `OUT_DIR` for this crate.
#[macro_export]
macro_rules! include_kernels {
    () => {
        pub mod kernels {
            include!(concat!(env!("OUT_DIR"), "/pypto_kernels.rs"));
        }
    };
}
