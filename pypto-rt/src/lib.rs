//! `pypto-rt`: the runtime side of pypto-rs kernels.
//!
//! This crate will hold the dim and shape types, typed tensors, devices and
//! launch errors that generated wrappers use. The spec checker
//! (`pypto-build`) is usable on its own today; the runtime arrives with the
//! typed wrappers.
