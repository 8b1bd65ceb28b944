//! The NPU kernels a crate embeds: one shared library per architecture,
//! linked by bisheng at build time and carried inside the binary as bytes,
//! so that the binary links no CANN library and starts on any machine.
//!
//! On the first launch on an NPU of a library's architecture (when the ACL
//! runtime, which the library needs, is already loaded), the bytes are
//! written to a file the dynamic loader can open, and opened with
//! `RTLD_NOW | RTLD_LOCAL`. The places, in order:
//!
//! 1. an anonymous file (`memfd_create`, opened through `/proc/self/fd/N`;
//!    Linux);
//! 2. a new file only this user can read, removed once opened, in the
//!    directory [`LIB_DIR_VAR`] (`PYPTO_LIB_DIR`) names, when it is set;
//! 3. the same in `$XDG_RUNTIME_DIR`, when it is set;
//! 4. the same in the temporary directory (`$TMPDIR`, else `/tmp`).
//!
//! A place that cannot be had (seccomp refusing `memfd_create`, an old
//! kernel, a directory that is missing or not writable) or that is mounted
//! `noexec` (the loader could not map the code; `statvfs` says so before
//! anything is written) is passed over, and the error after the last names
//! each place and why. The handle is kept for the life of the process, and
//! each launch stub is looked up once.

use std::ffi::{CStr, OsString, c_void};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::device::NpuArch;
use crate::error::Error;

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
        self.open_with(&Places {
            var: &|name| std::env::var_os(name),
            anonymous: &NpuLibrary::anonymous_file,
            noexec: &mounted_noexec,
        })
    }

    /// Writes the bytes to the first of `places` that can have them, and
    /// opens them there.
    fn open_with(&self, places: &Places<'_>) -> Result<Loaded, String> {
        let mut passed: Vec<String> = Vec::new();
        match (places.anonymous)(self) {
            Ok((path, file)) => {
                return dlopen(&path, self.name).map(|library| Loaded {
                    library,
                    _file: Some(file),
                });
            }
            Err(why) => passed.push(format!("an anonymous file: {why}")),
        }
        let (dirs, unset) = directories(places.var);
        for (dir, from) in dirs {
            let place = format!("{} ({from})", dir.display());
            match (places.noexec)(&dir) {
                Ok(false) => {}
                Ok(true) => {
                    passed.push(format!(
                        "{place}: mounted noexec, so the loader cannot map code from it"
                    ));
                    continue;
                }
                Err(e) => {
                    passed.push(format!("{place}: {e}"));
                    continue;
                }
            }
            let path = match self.temporary_file(&dir) {
                Ok(path) => path,
                Err(e) => {
                    passed.push(format!("{place}: {e}"));
                    continue;
                }
            };
            let result = dlopen(&path, self.name);
            // Once opened, the mapping no longer needs the file; nor does
            // a failed open.
            let _ = std::fs::remove_file(&path);
            return result.map(|library| Loaded {
                library,
                _file: None,
            });
        }
        let unset = if unset.is_empty() {
            String::new()
        } else {
            format!("; {} not set", unset.join(" and "))
        };
        Err(format!(
            "there is no place to write it from which it can be loaded: {}{unset}; set \
             {LIB_DIR_VAR} to a directory of this user's on a file system mounted without \
             noexec",
            passed.join("; ")
        ))
    }

    /// The bytes in an anonymous file, and the path that opens it; why not
    /// when the kernel or `/proc` does not allow it.
    #[cfg(target_os = "linux")]
    fn anonymous_file(&self) -> Result<Anonymous, String> {
        use std::io::Write;
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        let name = std::ffi::CString::new(self.name).map_err(|e| e.to_string())?;
        // SAFETY: `name` is NUL-terminated; the result is checked below.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(format!(
                "memfd_create failed: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut file = std::fs::File::from(owned);
        file.write_all(self.bytes)
            .map_err(|e| format!("cannot write it: {e}"))?;
        let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        if !path.exists() {
            return Err(format!("{} does not exist (no /proc)", path.display()));
        }
        Ok((path, OwnedFd::from(file)))
    }

    #[cfg(not(target_os = "linux"))]
    fn anonymous_file(&self) -> Result<Anonymous, String> {
        Err("memfd_create is Linux only".to_owned())
    }

    /// The bytes in a new file only this user can read, in `dir`.
    fn temporary_file(&self, dir: &Path) -> Result<PathBuf, String> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = dir.join(format!(
            "pypto-{}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
            self.name
        ));
        let mut created = false;
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o700)
            .open(&path)
            .and_then(|mut file| {
                created = true;
                file.write_all(self.bytes)
            });
        if let Err(e) = written {
            if created {
                let _ = std::fs::remove_file(&path);
            }
            return Err(format!("cannot write {}: {e}", path.display()));
        }
        Ok(path)
    }
}

/// The environment variable naming a directory for the embedded NPU
/// libraries where no anonymous file can be had (`memfd_create` refused by
/// seccomp, or an old kernel): tried before `$XDG_RUNTIME_DIR` and the
/// temporary directory. It must be on a file system mounted without
/// `noexec`; pypto-rt writes a file only this user can read there and
/// removes it once opened.
pub const LIB_DIR_VAR: &str = "PYPTO_LIB_DIR";

/// An anonymous file holding a library, and the path that opens it.
type Anonymous = (PathBuf, std::os::fd::OwnedFd);

/// How [`NpuLibrary::open_with`] finds its places: the environment, the
/// anonymous file, the `noexec` check (tests pass their own).
struct Places<'a> {
    var: &'a dyn Fn(&str) -> Option<OsString>,
    anonymous: &'a dyn Fn(&NpuLibrary) -> Result<Anonymous, String>,
    noexec: &'a dyn Fn(&Path) -> std::io::Result<bool>,
}

/// The directories to try after the anonymous file, each with where it
/// came from, in order: `PYPTO_LIB_DIR`, `XDG_RUNTIME_DIR`, the temporary
/// directory; and the variables of the first two that are not set.
fn directories(var: &dyn Fn(&str) -> Option<OsString>) -> (Vec<(PathBuf, String)>, Vec<String>) {
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let mut dirs = Vec::new();
    let mut unset = Vec::new();
    for name in [LIB_DIR_VAR, "XDG_RUNTIME_DIR"] {
        match set(name) {
            Some(dir) => dirs.push((dir, name.to_owned())),
            None => unset.push(name.to_owned()),
        }
    }
    // As `std::env::temp_dir` finds it on Unix.
    dirs.push(match set("TMPDIR") {
        Some(dir) => (dir, "TMPDIR".to_owned()),
        None => (
            PathBuf::from("/tmp"),
            "the temporary directory; TMPDIR is not set".to_owned(),
        ),
    });
    (dirs, unset)
}

/// Whether the file system holding `dir` is mounted `noexec` (`statvfs`),
/// or why that cannot be told (a directory that does not exist).
fn mounted_noexec(dir: &Path) -> std::io::Result<bool> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `path` is NUL-terminated; `stat` is written on success.
    if unsafe { libc::statvfs(path.as_ptr(), stat.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: statvfs succeeded, so it filled `stat`.
    let stat = unsafe { stat.assume_init() };
    #[cfg(any(target_os = "linux", target_os = "android"))]
    return Ok(stat.f_flag & libc::ST_NOEXEC != 0);
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = stat;
        Ok(false)
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

/// The NPU launch stub of one compiled specialisation for one architecture
/// (compiled by bisheng): enqueues `kernel<<<block_num, nullptr, stream>>>`
/// with `args` (each tensor's device address, then the tiling's, then the
/// tiling's host copy, from which stubs of `source:` kernels take the
/// scalars they pass by value); returns 0.
pub type NpuEntry =
    unsafe extern "C" fn(block_num: u32, stream: *mut c_void, args: *mut *mut c_void) -> i32;

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

    /// A fresh, empty directory for one test.
    fn scratch_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("pypto-rt-npu-lib-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn files_in(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    /// A real shared library whose `pypto_probe()` returns 42, compiled by
    /// the system C compiler (the host backend needs one anyway).
    fn probe_library(dir: &Path) -> &'static [u8] {
        let source = dir.join("probe.c");
        let library = dir.join("probe.so");
        std::fs::write(&source, "int pypto_probe(void) { return 42; }\n").unwrap();
        let out = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(&library)
            .arg(&source)
            .output()
            .expect("cc runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bytes = std::fs::read(&library).unwrap();
        std::fs::remove_file(&source).unwrap();
        std::fs::remove_file(&library).unwrap();
        Box::leak(bytes.into_boxed_slice())
    }

    fn library(name: &'static str, bytes: &'static [u8]) -> &'static NpuLibrary {
        Box::leak(Box::new(NpuLibrary::new(name, NpuArch::Dav2201, bytes)))
    }

    /// `memfd_create` refused, as seccomp or an old kernel refuses it.
    fn refused(_: &NpuLibrary) -> Result<Anonymous, String> {
        Err("memfd_create failed: Operation not permitted (os error 1)".to_owned())
    }

    /// An environment of just these variables.
    fn env(vars: &[(&'static str, PathBuf)]) -> impl Fn(&str) -> Option<OsString> + use<> {
        let vars = vars.to_vec();
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone().into_os_string())
        }
    }

    fn call_probe(loaded: &Loaded) -> i32 {
        // SAFETY: `pypto_probe` is `int (void)` in the probe library.
        let probe = unsafe {
            loaded
                .library
                .get::<unsafe extern "C" fn() -> i32>(b"pypto_probe\0")
        }
        .unwrap();
        // SAFETY: as above.
        unsafe { probe() }
    }

    #[test]
    fn the_temporary_file_is_private_and_removed() {
        let dir = scratch_dir("private");
        // What `temporary_file` creates is this user's alone.
        static LIB: NpuLibrary = NpuLibrary::new("libtmp_dav2201.so", NpuArch::Dav2201, b"x");
        let path = LIB.temporary_file(&dir).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::remove_file(&path).unwrap();
        // The real loading path, with no anonymous file to be had, removes
        // the file it wrote, whether the bytes load or not.
        let places = |var| Places {
            var,
            anonymous: &refused,
            noexec: &mounted_noexec,
        };
        let var = env(&[(LIB_DIR_VAR, dir.clone())]);
        let err = LIB.open_with(&places(&var)).err().unwrap();
        assert_eq!(err, "libtmp_dav2201.so: file too short");
        assert_eq!(files_in(&dir), Vec::<String>::new());
        let probe = library("libprobe_dav2201.so", probe_library(&dir));
        let loaded = probe.open_with(&places(&var)).unwrap();
        assert_eq!(files_in(&dir), Vec::<String>::new());
        assert_eq!(call_probe(&loaded), 42);
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn places_are_tried_in_order_and_each_one_passed_over_is_named() {
        let lib_dir = scratch_dir("places-lib");
        let runtime_dir = scratch_dir("places-runtime");
        let missing = std::env::temp_dir().join("pypto-rt-npu-lib-no-such-dir");
        let probe = library("libprobe2_dav2201.so", probe_library(&runtime_dir));
        // PYPTO_LIB_DIR on a noexec mount, TMPDIR missing, no
        // XDG_RUNTIME_DIR: nothing is left.
        let noexec_lib_dir = |dir: &Path| {
            if dir == lib_dir {
                Ok(true)
            } else {
                mounted_noexec(dir)
            }
        };
        let var = env(&[(LIB_DIR_VAR, lib_dir.clone()), ("TMPDIR", missing.clone())]);
        let places = Places {
            var: &var,
            anonymous: &refused,
            noexec: &noexec_lib_dir,
        };
        assert_eq!(
            probe.open_with(&places).err().unwrap(),
            format!(
                "there is no place to write it from which it can be loaded: an anonymous file: \
                 memfd_create failed: Operation not permitted (os error 1); {} (PYPTO_LIB_DIR): \
                 mounted noexec, so the loader cannot map code from it; {} (TMPDIR): No such \
                 file or directory (os error 2); XDG_RUNTIME_DIR not set; set PYPTO_LIB_DIR to \
                 a directory of this user's on a file system mounted without noexec",
                lib_dir.display(),
                missing.display()
            )
        );
        // The whole message as a launch reports it.
        static STUB_LIB: NpuLibrary =
            NpuLibrary::new("libnowhere_dav2201.so", NpuArch::Dav2201, b"x");
        let err = Error::NpuLibrary {
            kernel: "add_bias",
            library: STUB_LIB.name,
            reason: STUB_LIB.open_with(&places).err().unwrap(),
        };
        assert!(
            err.to_string().starts_with(
                "kernel `add_bias`: its NPU library libnowhere_dav2201.so, embedded in this \
                 binary, could not be loaded: there is no place to write it from which it can \
                 be loaded: an anonymous file: memfd_create failed"
            ),
            "{err}"
        );
        // With XDG_RUNTIME_DIR set, the library loads from there, after
        // PYPTO_LIB_DIR was passed over; neither keeps a file.
        let var = env(&[
            (LIB_DIR_VAR, lib_dir.clone()),
            ("XDG_RUNTIME_DIR", runtime_dir.clone()),
            ("TMPDIR", missing.clone()),
        ]);
        let places = Places {
            var: &var,
            anonymous: &refused,
            noexec: &noexec_lib_dir,
        };
        let loaded = probe.open_with(&places).unwrap();
        assert_eq!(call_probe(&loaded), 42);
        assert_eq!(files_in(&lib_dir), Vec::<String>::new());
        assert_eq!(files_in(&runtime_dir), Vec::<String>::new());
        // Nothing set: the default temporary directory, named as such.
        let var = env(&[]);
        let all_noexec = |_: &Path| Ok(true);
        let places = Places {
            var: &var,
            anonymous: &refused,
            noexec: &all_noexec,
        };
        assert_eq!(
            probe.open_with(&places).err().unwrap(),
            "there is no place to write it from which it can be loaded: an anonymous file: \
             memfd_create failed: Operation not permitted (os error 1); /tmp (the temporary \
             directory; TMPDIR is not set): mounted noexec, so the loader cannot map code from \
             it; PYPTO_LIB_DIR and XDG_RUNTIME_DIR not set; set PYPTO_LIB_DIR to a directory of \
             this user's on a file system mounted without noexec"
        );
        // The anonymous file comes first when it can be had.
        let var = env(&[(LIB_DIR_VAR, lib_dir.clone())]);
        let places = Places {
            var: &var,
            anonymous: &NpuLibrary::anonymous_file,
            noexec: &all_noexec,
        };
        let loaded = probe.open_with(&places).unwrap();
        assert!(loaded._file.is_some());
        assert_eq!(call_probe(&loaded), 42);
        std::fs::remove_dir(&lib_dir).unwrap();
        std::fs::remove_dir(&runtime_dir).unwrap();
    }

    /// `statvfs`'s answer agrees with the mount table for every mount this
    /// process can see.
    #[test]
    fn noexec_is_the_mount_s_flag() {
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        let mut checked = 0;
        for line in mounts.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            let (point, options) = (fields[1], fields[3]);
            // Mount points with escaped characters, and those mounted over
            // by a later entry, are left out.
            if point.contains('\\')
                || mounts
                    .lines()
                    .filter(|l| l.split(' ').nth(1) == Some(point))
                    .count()
                    > 1
            {
                continue;
            }
            let Ok(noexec) = mounted_noexec(Path::new(point)) else {
                continue;
            };
            let want = options.split(',').any(|o| o == "noexec");
            assert_eq!(noexec, want, "{line}");
            checked += 1;
        }
        assert!(checked > 0, "{mounts}");
        assert!(mounted_noexec(Path::new("/no/such/dir")).is_err());
    }

    /// A real `noexec` mount, where this machine lets a test make one (a
    /// tmpfs in a user and mount namespace of its own): it is passed over,
    /// as the loader could not map the library from it.
    #[test]
    fn a_noexec_mount_is_passed_over() {
        const CHILD: &str = "PYPTO_RT_NOEXEC_CHILD";
        if let Some(dir) = std::env::var_os(CHILD) {
            let dir = PathBuf::from(dir);
            assert!(mounted_noexec(&dir).unwrap());
            let good = scratch_dir("noexec-good");
            let probe = library("libprobe3_dav2201.so", probe_library(&good));
            // Written there, the loader cannot map it.
            static DIRECT: OnceLock<&'static NpuLibrary> = OnceLock::new();
            let direct = DIRECT.get_or_init(|| library("libdirect_dav2201.so", probe.bytes));
            let path = direct.temporary_file(&dir).unwrap();
            let err = dlopen(&path, direct.name).err().unwrap();
            std::fs::remove_file(&path).unwrap();
            assert!(
                err.contains("failed to map segment from shared object"),
                "{err}"
            );
            // Through the real check it is passed over for TMPDIR.
            let var = env(&[(LIB_DIR_VAR, dir.clone()), ("TMPDIR", good.clone())]);
            let places = Places {
                var: &var,
                anonymous: &refused,
                noexec: &mounted_noexec,
            };
            let loaded = probe.open_with(&places).unwrap();
            assert_eq!(call_probe(&loaded), 42);
            std::fs::remove_dir(&good).unwrap();
            println!("noexec child: checked {}", dir.display());
            return;
        }
        let can = std::process::Command::new("unshare")
            .args(["-rm", "true"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !can {
            eprintln!("skipped: this machine lets no test make a mount namespace (unshare -rm)");
            return;
        }
        let dir = scratch_dir("noexec-mount");
        let out = std::process::Command::new("unshare")
            .args(["-rm", "sh", "-c"])
            .arg(
                "mount -t tmpfs -o noexec tmpfs \"$1\" && exec \"$0\" --exact \
                 npu_lib::tests::a_noexec_mount_is_passed_over --nocapture --test-threads=1",
            )
            .arg(std::env::current_exe().unwrap())
            .arg(&dir)
            .env(CHILD, &dir)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stdout}\n{stderr}");
        assert!(
            stdout.contains(&format!("noexec child: checked {}", dir.display())),
            "the child did not run:\n{stdout}\n{stderr}"
        );
        std::fs::remove_dir(&dir).unwrap();
    }
}
