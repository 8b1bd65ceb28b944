//! The host emulation of the Ascend C API (templates/include/pypto_emu/),
//! each part through the kernels of its `tests/kernels/api_*.yaml` or
//! `sanitize_*.yaml` against plain Rust. One module per part, in one test
//! binary so CI links it once; `cargo test -p pypto-tests --test emulation
//! sort::` runs one part.

mod basics;
mod compound;
mod coverage;
mod data;
mod deq;
mod mask;
mod math;
mod reduce;
mod sanitize_init;
mod sanitize_race;
mod sanitize_sync;
mod sort;
mod sync;
mod system;
mod tensor;
mod trans;
