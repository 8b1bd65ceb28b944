//! The NPU kernels a crate embeds: one shared library per architecture,
//! linked by bisheng at build time and carried inside the binary as bytes,
//! so that the binary links no CANN library and starts on any machine.
//!
//! On the first launch on an NPU of a library's architecture (when the ACL
//! runtime, which the library needs, is already loaded), the bytes are
//! written to an anonymous file (`memfd_create`, opened through
//! `/proc/self/fd/N`; else a private temporary file, removed once opened)
//! and opened with `RTLD_NOW | RTLD_LOCAL`. The handle is kept for the
//! life of the process, and each launch stub is looked up once.

use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::device::NpuArch;
use crate::error::Error;
use crate::launch::NpuEntry;

/// A shared library of NPU kernels for one architecture, embedded in the
/// binary by generated code.
pub struct NpuLibrary {
    name: &'static str,
    arch: NpuArch,
    bytes: &'static [u8],
    loaded: OnceLock<Result<Loaded, String>>,
}

/// An opened library. The anonymous file stays open with it, so that its
/// `/proc/self/fd/N` name is never reused for another library while this
/// one is loaded (the dynamic loader recognises libraries by name).
struct Loaded {
    library: libloading::os::unix::Library,
    _file: Option<std::os::fd::OwnedFd>,
}

impl std::fmt::Debug for NpuLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpuLibrary")
            .field("name", &self.name)
            .field("arch", &self.arch)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

impl NpuLibrary {
    /// The library `name` for `arch`, whose contents are `bytes`.
    pub const fn new(name: &'static str, arch: NpuArch, bytes: &'static [u8]) -> Self {
        NpuLibrary {
            name,
            arch,
            bytes,
            loaded: OnceLock::new(),
        }
    }

    /// The architecture its kernels are compiled for.
    pub fn arch(&self) -> NpuArch {
        self.arch
    }

    /// The library, opened on first use; the first failure is kept and
    /// reported by every later use.
    fn get(&self) -> Result<&libloading::os::unix::Library, String> {
        self.loaded
            .get_or_init(|| self.open())
            .as_ref()
            .map(|loaded| &loaded.library)
            .map_err(Clone::clone)
    }

    fn open(&self) -> Result<Loaded, String> {
        #[cfg(target_os = "linux")]
        if let Some((path, file)) = self.anonymous_file() {
            return dlopen(&path, self.name).map(|library| Loaded {
                library,
                _file: Some(file),
            });
        }
        let path = self.temporary_file()?;
        let result = dlopen(&path, self.name);
        // Once opened, the mapping no longer needs the file.
        let _ = std::fs::remove_file(&path);
        result.map(|library| Loaded {
            library,
            _file: None,
        })
    }

    /// The bytes in an anonymous file, and the path that opens it; `None`
    /// when the kernel or `/proc` does not allow it.
    #[cfg(target_os = "linux")]
    fn anonymous_file(&self) -> Option<(PathBuf, std::os::fd::OwnedFd)> {
        use std::io::Write;
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        let name = std::ffi::CString::new(self.name).ok()?;
        // SAFETY: `name` is NUL-terminated; the result is checked below.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut file = std::fs::File::from(owned);
        file.write_all(self.bytes).ok()?;
        let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        path.exists().then(|| (path, OwnedFd::from(file)))
    }

    /// The bytes in a new file only this user can read, in the temporary
    /// directory.
    fn temporary_file(&self) -> Result<PathBuf, String> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "pypto-{}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
            self.name
        ));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o700)
            .open(&path)
            .and_then(|mut file| file.write_all(self.bytes));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&path);
            return Err(format!("cannot write it to {}: {e}", path.display()));
        }
        Ok(path)
    }
}

/// Opens the library at `path` (named `name` in messages, for the path
/// is a stand-in) with its symbols resolved now and kept to itself.
fn dlopen(path: &Path, name: &str) -> Result<libloading::os::unix::Library, String> {
    use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
    // SAFETY: the library is the crate's own NPU kernels, linked by
    // pypto-build; its initialisers are those of the C++ runtime and the
    // CANN libraries it was linked against.
    unsafe { Library::open(Some(path), RTLD_NOW | RTLD_LOCAL) }
        .map_err(|e| e.to_string().replace(&*path.to_string_lossy(), name))
}

/// One launch stub in an [`NpuLibrary`], looked up on first use.
pub struct NpuStub {
    library: &'static NpuLibrary,
    symbol: &'static CStr,
    entry: OnceLock<NpuEntry>,
}

impl std::fmt::Debug for NpuStub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpuStub")
            .field("library", &self.library.name)
            .field("symbol", &self.symbol)
            .finish()
    }
}

impl NpuStub {
    /// The stub `symbol` of `library`, which must have the [`NpuEntry`]
    /// signature.
    pub const fn new(library: &'static NpuLibrary, symbol: &'static CStr) -> Self {
        NpuStub {
            library,
            symbol,
            entry: OnceLock::new(),
        }
    }

    /// The architecture of its library.
    pub fn arch(&self) -> NpuArch {
        self.library.arch
    }

    /// The stub, loading its library if this is the first use of it.
    pub(crate) fn entry(&self, kernel: &'static str) -> Result<NpuEntry, Error> {
        if let Some(entry) = self.entry.get() {
            return Ok(*entry);
        }
        let fail = |reason: String| Error::NpuLibrary {
            kernel,
            library: self.library.name,
            reason,
        };
        let library = self.library.get().map_err(fail)?;
        // SAFETY: generated code names stubs compiled with the NpuEntry
        // signature; the pointer is used only while the library is loaded,
        // which it stays for the life of the process (it is held by a
        // static).
        let entry: NpuEntry = *unsafe { library.get::<NpuEntry>(self.symbol.to_bytes_with_nul()) }
            .map_err(|e| {
                fail(format!(
                    "it has no launch stub `{}`: {e}",
                    self.symbol.to_string_lossy()
                ))
            })?;
        Ok(*self.entry.get_or_init(|| entry))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_that_are_not_a_library_are_a_typed_error() {
        static CORRUPT: NpuLibrary = NpuLibrary::new(
            "libcorrupt_dav2201.so",
            NpuArch::Dav2201,
            b"not an ELF file",
        );
        static STUB: NpuStub = NpuStub::new(&CORRUPT, c"stub");
        let err = STUB.entry("add_bias").unwrap_err();
        assert_eq!(
            err.to_string(),
            "kernel `add_bias`: its NPU library libcorrupt_dav2201.so, embedded in this binary, \
             could not be loaded: libcorrupt_dav2201.so: file too short"
        );
        // The failure is kept, not retried.
        assert_eq!(STUB.entry("add_bias").unwrap_err(), err);
    }

    #[test]
    fn the_temporary_file_is_private_and_removed() {
        static LIB: NpuLibrary = NpuLibrary::new("libtmp_dav2201.so", NpuArch::Dav2201, b"x");
        let path = LIB.temporary_file().unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0);
        assert!(dlopen(&path, LIB.name).is_err());
        std::fs::remove_file(&path).unwrap();
    }
}
