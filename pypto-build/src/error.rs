//! The errors of generating and building kernels.

use std::path::PathBuf;

use crate::diag::{Diagnostic, Diagnostics};

/// Why generating or compiling kernels failed.
///
/// `Debug` prints the same text as `Display`, so that a build script's
/// `fn main() -> Result<(), pypto_build::Error>` shows located diagnostics
/// rather than a struct dump.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The specs have errors; each is located.
    #[error("invalid kernel specs:\n{}", .0.render())]
    Spec(Diagnostics),

    /// A template could not be parsed or rendered; the diagnostic locates
    /// the problem in the template (or the builtin partial) it is in.
    #[error(
        "{}\nnote: while rendering template `{template}` for kernel `{kernel}` ({origin}), specialisation: {specialisation}",
        diagnostic.render()
    )]
    Template {
        /// The kernel being rendered.
        kernel: String,
        /// Where the kernel is declared.
        origin: String,
        /// The template's path or `builtin/NAME`.
        template: String,
        /// The STATIC sizes being rendered.
        specialisation: String,
        /// The problem, located in the template.
        diagnostic: Box<Diagnostic>,
    },

    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },

    /// A build-script setting is missing or wrong (e.g. `OUT_DIR` unset).
    #[error("{0}")]
    Config(String),

    /// The C++ compiler failed on the rendered kernel sources; the message
    /// names each rejected source, where it came from, and what the
    /// compiler said.
    #[error("compiling kernels failed:\n{message}\nrendered sources are in {}", dir.display())]
    Compile {
        /// Each rejected source, its origin and the compiler's output.
        message: String,
        /// Where the rendered sources are kept for inspection.
        dir: PathBuf,
    },
}

impl From<Diagnostics> for Error {
    fn from(d: Diagnostics) -> Self {
        Error::Spec(d)
    }
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}
