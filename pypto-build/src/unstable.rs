//! pypto-build's internals, public only for its own binary, tests and
//! benches: code generation, the toolchain, the command line and the model
//! dump. **No stability promise**: anything here may change in any release.
//! A build script needs only the crate root ([`crate::Builder`], the
//! `check_*` functions, [`crate::Error`] and the diagnostics).

#[path = "cli.rs"]
pub mod cli;
#[path = "codegen/mod.rs"]
pub mod codegen;
#[path = "dump.rs"]
pub mod dump;
#[path = "toolchain/mod.rs"]
pub mod toolchain;
