//! Compiling rendered kernel sources, through `cc`: for the host backend
//! with the system C++ compiler against the emulation headers, for the NPU
//! with CANN's bisheng ([`cann`] finds it and picks its flags).

use std::any::Any;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

pub mod cann;

/// A source the compiler rejected, with what it said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    pub source: PathBuf,
    pub message: String,
}

/// Why compiling failed: each source the compiler rejected, with what it
/// said; cc's own error only when no source is to blame (e.g. the compiler
/// could not be run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileFailure {
    pub summary: String,
    pub rejected: Vec<Rejected>,
}

/// What a compile did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CompileReport {
    /// Sources the compiler ran on.
    pub compiled: usize,
    /// Sources whose cached object was still valid.
    pub reused: usize,
}

impl std::ops::AddAssign for CompileReport {
    fn add_assign(&mut self, other: CompileReport) {
        self.compiled += other.compiled;
        self.reused += other.reused;
    }
}

fn failure(summary: String) -> CompileFailure {
    CompileFailure {
        summary,
        rejected: Vec::new(),
    }
}

/// The host backend's compiler: the system C++ compiler against the
/// emulation headers in `include_dir`.
pub fn host_build(
    include_dir: &Path,
    obj_dir: &Path,
    opt_level: u32,
    cargo_metadata: bool,
) -> cc::Build {
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .std("c++17")
        .include(include_dir)
        .define("PYPTO_HOST_BACKEND", "1")
        // Kernels declare the emulation's runtime functions; one object,
        // compiled from RUNTIME_SOURCE, defines them.
        .define("PYPTO_EMU_SPLIT", "1")
        .opt_level(opt_level)
        .out_dir(obj_dir)
        // Quiet while probing: with metadata on, cc prints every variable it
        // reads, and its value, which Cargo shows if the build then fails.
        .cargo_metadata(false)
        .warnings(true);
    // Kernel entries take every tensor; templates need not use them all.
    // GCC and Clang know the flag; asking cc to probe would cost two
    // compiler runs on every build-script run.
    match build.try_get_compiler() {
        Ok(tool) if tool.is_like_gnu() || tool.is_like_clang() => {
            build.flag("-Wno-unused-parameter");
            // A kernel's trap on a guard page, an input page or a zero
            // divisor becomes an emulation error: the fault handler throws,
            // which needs unwind tables at every trapping instruction.
            build
                .flag("-fnon-call-exceptions")
                .define("PYPTO_NON_CALL_EXCEPTIONS", "1");
        }
        _ => {
            build.flag_if_supported("-Wno-unused-parameter");
        }
    }
    build.cargo_metadata(cargo_metadata);
    build
}

/// CANN's `bisheng` for one architecture (and, before CANN 8.5, one core
/// kind). Only the flags chosen here are passed: cc's defaults for the host
/// target (e.g. `--target`) mean nothing to the NPU side of bisheng.
pub fn npu_build(
    toolkit: &cann::Toolkit,
    arch: cann::Arch,
    cube: bool,
    obj_dir: &Path,
    opt_level: u32,
) -> cc::Build {
    let mut build = cc::Build::new();
    build
        .compiler(&toolkit.bisheng)
        .cpp(true)
        .no_default_flags(true)
        .out_dir(obj_dir)
        .cargo_metadata(false)
        .flag("-std=c++17")
        .flag(format!("-O{opt_level}"))
        // The objects (host launch stubs with embedded device code) link
        // into a shared library.
        .flag("-fPIC")
        .flag("-Wno-unused-parameter");
    for flag in cann::arch_flags(toolkit, arch, cube) {
        build.flag(flag);
    }
    build
}

/// Compiles `sources` with `build` into objects cached under `cache`, each
/// named by a hash of its source, `salt` (what it includes), the compiler
/// and its flags: only sources whose hash is not in the cache are compiled,
/// in parallel within Cargo's jobserver. The cache may be shared by any
/// number of builds (profiles, target directories, crates, concurrent
/// builds): entries are written under a temporary name and renamed, an
/// entry that does not match its checksum is never used, `include_dir`
/// (which differs between builds) is left out of the key, and only entries
/// unused for [`CACHE_MAX_AGE`] are deleted. The compiler's warnings go to
/// Cargo when `forward_warnings`; its errors go in the failure. The last
/// `support` sources (the emulation runtime) are compiled and cached like
/// the others but not counted in the report, which counts kernels.
pub fn compile_cached(
    build: &cc::Build,
    sources: &[PathBuf],
    cache: &Path,
    include_dir: Option<&Path>,
    salt: &str,
    forward_warnings: bool,
    support: usize,
) -> Result<(Vec<PathBuf>, CompileReport), CompileFailure> {
    std::fs::create_dir_all(cache).map_err(|e| failure(format!("{}: {e}", cache.display())))?;
    // With metadata on, cc prints each variable it reads and its value: on
    // a failure Cargo would show them all around the compiler's message. A
    // failed build script runs again anyway, so Cargo need only hear of
    // them once compiling succeeded.
    let mut quiet = build.clone();
    quiet.cargo_metadata(false);
    let tool = quiet
        .try_get_compiler()
        .map_err(|e| failure(e.to_string()))?;
    let mut compiler = format!("{:?} {:?}", tool.path(), tool.args());
    if let Some(dir) = include_dir {
        // The same headers (hashed in `salt`) at another build's path.
        compiler = compiler.replace(&*dir.to_string_lossy(), "<include>");
    }

    let mut objects = Vec::with_capacity(sources.len());
    let mut stale = Vec::new();
    for source in sources {
        let text =
            std::fs::read(source).map_err(|e| failure(format!("{}: {e}", source.display())))?;
        let key = fingerprint(&[&text, salt.as_bytes(), compiler.as_bytes()]);
        let stem = source
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("kernel");
        let cached = cache.join(format!("{stem}-{key:016x}.o"));
        if cache_entry_is_whole(&cached) {
            // Kept from pruning while in use.
            touch(&cached);
        } else {
            stale.push((source.clone(), cached.clone()));
        }
        objects.push(cached);
    }
    if !stale.is_empty() {
        // The compiler's output is captured rather than printed by cc, so
        // that a failure is told once, in the error, per source.
        let messages = Arc::new(Messages::default());
        let mut changed = quiet.clone();
        changed
            .cargo_warnings(false)
            .message_logger(Some(messages.clone()));
        changed.files(stale.iter().map(|(source, _)| source));
        let sources: Vec<PathBuf> = stale.iter().map(|(s, _)| s.clone()).collect();
        let built = match changed.try_compile_intermediates() {
            Ok(built) => built,
            Err(e) => {
                let rejected = messages.rejected(&sources);
                return Err(CompileFailure {
                    // cc's error is the command line, with its environment;
                    // the compiler's own words say more.
                    summary: if rejected.is_empty() {
                        e.to_string()
                    } else {
                        String::new()
                    },
                    rejected,
                });
            }
        };
        if forward_warnings {
            for line in messages.lines() {
                println!("cargo:warning={line}");
            }
        }
        for (object, (_, cached)) in built.iter().zip(&stale) {
            store_cache_entry(object, cached)?;
        }
    }
    // Now cc tells Cargo which variables choose the compiler and its flags.
    let _ = build.try_get_compiler();
    prune_cache(cache);
    let counted = sources.len().saturating_sub(support);
    let compiled = stale
        .iter()
        .filter(|(source, _)| !sources[counted..].contains(source))
        .count();
    let report = CompileReport {
        compiled,
        reused: counted - compiled,
    };
    Ok((objects, report))
}

/// The name and text of the source that defines the emulation's runtime
/// functions, which kernels (compiled with `PYPTO_EMU_SPLIT`) only declare.
pub const RUNTIME_SOURCE: (&str, &str) = (
    "pypto_emu_runtime.cpp",
    "// The host emulation's runtime functions, defined once for every kernel.\n\
     #define PYPTO_EMU_RUNTIME 1\n\
     #include \"kernel_operator.h\"\n",
);

/// Precompiles `kernel_operator.h` in `include_dir` with `build`'s compiler
/// and flags, beside the header, where GCC looks for it first: parsing the
/// emulation headers is a third of each kernel's compile. Only for GCC
/// (Clang does not pick a `.gch` up by itself). Redone when `salt` (the
/// headers) or the compiler or flags change, and removed whenever it cannot
/// be made, since a stale one would be used silently; kernels then compile
/// from the headers. Returns whether a precompiled header is in place.
pub fn precompile_header(build: &cc::Build, include_dir: &Path, salt: &str) -> bool {
    let header = include_dir.join("kernel_operator.h");
    let gch = include_dir.join("kernel_operator.h.gch");
    let key_file = include_dir.join("kernel_operator.h.gch.key");
    // Quiet: cc would print every variable it reads (see compile_cached).
    let mut quiet = build.clone();
    quiet.cargo_metadata(false);
    let Ok(tool) = quiet.try_get_compiler() else {
        return false;
    };
    let compiler = format!("{:?} {:?}", tool.path(), tool.args());
    let key = format!(
        "{:016x}",
        fingerprint(&[salt.as_bytes(), compiler.as_bytes()])
    );
    if std::fs::read_to_string(&key_file).is_ok_and(|k| k == key) && gch.is_file() {
        return true;
    }
    let _ = std::fs::remove_file(&key_file);
    let _ = std::fs::remove_file(&gch);
    if !tool.is_like_gnu() || tool.is_like_clang() {
        return false;
    }
    let temporary = include_dir.join(format!("kernel_operator.h.gch.tmp{}", std::process::id()));
    let made = tool
        .to_command()
        .arg("-x")
        .arg("c++-header")
        .arg(&header)
        .arg("-o")
        .arg(&temporary)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    let placed = made
        && std::fs::rename(&temporary, &gch).is_ok()
        && std::fs::write(&key_file, &key).is_ok();
    if !placed {
        let _ = std::fs::remove_file(&temporary);
        let _ = std::fs::remove_file(&gch);
    }
    placed
}

/// The value of `PYPTO_EMU_ABI` for emulation headers `headers`: it names
/// the headers' C++ namespaces, so crates built with different headers never
/// share a symbol (see kernel_operator.h).
pub fn emulation_abi(headers: &str) -> String {
    format!("v{:016x}", fingerprint(&[headers.as_bytes()]))
}

/// How long a cache entry may go unused before a build deletes it.
pub const CACHE_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// Temporaries older than this were left by a build that died mid-store.
const TEMPORARY_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Marks a cache entry as used now.
fn touch(object: &Path) {
    let now = std::time::SystemTime::now();
    for path in [object.to_path_buf(), sum_path(object)] {
        if let Ok(file) = std::fs::File::options().append(true).open(&path) {
            let _ = file.set_modified(now);
        }
    }
}

/// Deletes the entries no build used for [`CACHE_MAX_AGE`], and temporaries
/// of stores that died. Entries in use were touched by their build, so a
/// concurrent build never loses an object it is about to archive.
fn prune_cache(cache: &Path) {
    let Ok(entries) = std::fs::read_dir(cache) else {
        return;
    };
    let now = std::time::SystemTime::now();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let max_age = if name.contains(".tmp") {
            TEMPORARY_MAX_AGE
        } else if name.ends_with(".o") || name.ends_with(".o.sum") {
            CACHE_MAX_AGE
        } else {
            continue;
        };
        let age = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|modified| now.duration_since(modified).ok());
        if age.is_some_and(|age| age > max_age) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// Where kernel objects are cached by default: `pypto-cache` in the root of
/// the target directory that `out_dir` (a build script's `OUT_DIR`) is in,
/// so that every profile, `--target` and trybuild's nested target directory
/// (`<target>/tests/trybuild`) share one cache and `cargo clean` removes it.
/// `None` when `out_dir` is not laid out as Cargo lays it out.
pub fn default_cache_dir(out_dir: &Path, target: Option<&str>) -> Option<PathBuf> {
    // <target>[/<triple>]/<profile>/build/<package>-<hash>/out
    let build = out_dir.parent()?.parent()?;
    if build.file_name()? != "build" {
        return None;
    }
    let mut root = build.parent()?.parent()?;
    if let Some(triple) = target
        && root.file_name().is_some_and(|name| name == triple)
    {
        root = root.parent()?;
    }
    if root.ends_with("tests/trybuild") {
        root = root.parent()?.parent()?;
    }
    Some(root.join("pypto-cache"))
}

/// The file beside a cached object that records its length and hash.
fn sum_path(object: &Path) -> PathBuf {
    let mut name = object.as_os_str().to_owned();
    name.push(".sum");
    PathBuf::from(name)
}

/// `LENGTH HASH` of an object's bytes.
fn object_sum(bytes: &[u8]) -> String {
    format!("{} {:016x}", bytes.len(), fingerprint(&[bytes]))
}

/// Whether a cached object is there and is exactly what was stored: a
/// store cut short (a full disk, a killed build) leaves an object whose
/// length or hash does not match its sum, or no sum at all.
fn cache_entry_is_whole(object: &Path) -> bool {
    let (Ok(bytes), Ok(sum)) = (
        std::fs::read(object),
        std::fs::read_to_string(sum_path(object)),
    ) else {
        return false;
    };
    sum == object_sum(&bytes)
}

/// Stores a freshly compiled object in the cache: the object, then its sum,
/// each written under a temporary name and renamed, so that neither is ever
/// seen half-written.
fn store_cache_entry(object: &Path, cached: &Path) -> Result<(), CompileFailure> {
    let io = |path: &Path, e: std::io::Error| failure(format!("{}: {e}", path.display()));
    let bytes = std::fs::read(object).map_err(|e| io(object, e))?;
    let write_then_rename = |path: &Path, data: &[u8]| {
        let mut temporary = path.as_os_str().to_owned();
        temporary.push(format!(".tmp{}-{}", std::process::id(), unique_suffix()));
        let temporary = PathBuf::from(temporary);
        let result = std::fs::write(&temporary, data)
            .and_then(|()| std::fs::rename(&temporary, path))
            .map_err(|e| io(path, e));
        if result.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        result
    };
    // The old sum goes first: an object without a matching sum is rebuilt.
    let _ = std::fs::remove_file(sum_path(cached));
    write_then_rename(cached, &bytes)?;
    write_then_rename(&sum_path(cached), object_sum(&bytes).as_bytes())
}

/// A number no other temporary of this process has used.
fn unique_suffix() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Archives `objects` into the static library `name` with the host build's
/// archiver and (with `cargo_metadata`) tells Cargo to link it and the C++
/// runtime.
pub fn archive(
    build: &cc::Build,
    name: &str,
    objects: &[PathBuf],
    cargo_metadata: bool,
) -> Result<(), CompileFailure> {
    let library = build
        .try_create_archive(name, objects)
        .map_err(|e| failure(e.to_string()))?;
    if cargo_metadata {
        cc::emit_link_directives(build, &library);
    }
    Ok(())
}

/// The arguments with which `bisheng` links the NPU `objects` of one
/// architecture into the shared library `output` (the toolkit's documented
/// `-shared … -fPIC --npu-arch=…` mode): the CANN runtime libraries from
/// `<home>/lib64` and that directory as the library's run path go on this
/// link line, and none on the binary's. Before CANN 8.5 the objects of
/// both core kinds go into one library, so no architecture flag is given.
pub fn npu_link_args(
    toolkit: &cann::Toolkit,
    arch: cann::Arch,
    objects: &[PathBuf],
    output: &Path,
) -> Vec<OsString> {
    let lib64 = toolkit.home.join("lib64");
    let mut args: Vec<OsString> = vec!["-shared".into(), "-fPIC".into()];
    if toolkit.version.has_asc_frontend() {
        args.push(format!("--npu-arch={}", arch.npu_arch_flag()).into());
    }
    args.extend(objects.iter().map(|o| o.as_os_str().to_owned()));
    args.push("-o".into());
    args.push(output.as_os_str().to_owned());
    let mut search = OsString::from("-L");
    search.push(&lib64);
    args.push(search);
    for lib in cann::RUNTIME_LIBS {
        args.push(format!("-l{lib}").into());
    }
    let mut rpath = OsString::from("-Wl,-rpath,");
    rpath.push(&lib64);
    args.push(rpath);
    args
}

/// Links `objects` into the shared library `output` with `toolkit`'s
/// bisheng ([`npu_link_args`]), unless `output` was linked from the same
/// objects (named by their content) with the same command already; a
/// library whose bytes did not change is not rewritten, so that Cargo does
/// not rebuild the crate that embeds it. Returns whether it was linked.
pub fn link_npu_library(
    toolkit: &cann::Toolkit,
    arch: cann::Arch,
    objects: &[PathBuf],
    output: &Path,
) -> Result<bool, CompileFailure> {
    let io = |path: &Path, e: std::io::Error| failure(format!("{}: {e}", path.display()));
    let args = npu_link_args(toolkit, arch, objects, output);
    let command = format!("{:?} {args:?}", toolkit.bisheng);
    let key = format!("{:016x}", fingerprint(&[command.as_bytes()]));
    let mut key_file = output.as_os_str().to_owned();
    key_file.push(".key");
    let key_file = PathBuf::from(key_file);
    if output.is_file() && std::fs::read_to_string(&key_file).is_ok_and(|k| k == key) {
        return Ok(false);
    }
    let _ = std::fs::remove_file(&key_file);
    if let Some(dir) = output.parent() {
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    }
    let mut temporary = output.as_os_str().to_owned();
    temporary.push(format!(".tmp{}", std::process::id()));
    let temporary = PathBuf::from(temporary);
    let out = Command::new(&toolkit.bisheng)
        .args(npu_link_args(toolkit, arch, objects, &temporary))
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| failure(format!("cannot run {}: {e}", toolkit.bisheng.display())))?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&temporary);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        return Err(failure(format!(
            "bisheng could not link the NPU kernels for {arch} into {}:\n{}",
            output.display(),
            first_lines(&lines)
        )));
    }
    let linked = std::fs::read(&temporary).map_err(|e| io(&temporary, e))?;
    if std::fs::read(output).is_ok_and(|old| old == linked) {
        let _ = std::fs::remove_file(&temporary);
    } else {
        std::fs::rename(&temporary, output).map_err(|e| io(output, e))?;
    }
    std::fs::write(&key_file, key).map_err(|e| io(&key_file, e))?;
    Ok(true)
}

/// FNV-1a over the parts, with a separator between them: stable across
/// Rust versions, unlike `DefaultHasher`, so caches survive toolchain
/// updates. Eight bytes are mixed at a time (objects are hashed on every
/// build that runs the build script).
fn fingerprint(parts: &[&[u8]]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |word: u64| {
        hash ^= word;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        hash ^= hash >> 29;
    };
    for part in parts {
        let mut words = part.chunks_exact(8);
        for word in &mut words {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(word);
            mix(u64::from_le_bytes(bytes));
        }
        for &byte in words.remainder() {
            mix(u64::from(byte));
        }
        mix(0xff_u64 << 56 | part.len() as u64);
    }
    hash
}

/// What the compiler wrote to stderr, line by line, with the source each
/// line is about, and the sources it failed on; collected from cc's logger.
#[derive(Default)]
struct Messages {
    /// (arguments of the command, line); the command names its source.
    lines: Mutex<Vec<(Vec<OsString>, String)>>,
    failed: Mutex<Vec<Vec<OsString>>>,
}

impl cc::BuildMessageLogger for Messages {
    fn log(&self, kind: cc::BuildMessageKind, msg: cc::BuildMessage<'_>, extra: &dyn Any) {
        let Some(command) = extra.downcast_ref::<Command>() else {
            return;
        };
        let args = || command.get_args().map(ToOwned::to_owned).collect();
        match kind {
            cc::BuildMessageKind::StderrForwarding => {
                if let Ok(mut lines) = self.lines.lock() {
                    lines.push((args(), msg.to_string()));
                }
            }
            cc::BuildMessageKind::CommandFailed {
                is_detection_cmd: false,
                ..
            } => {
                if let Ok(mut failed) = self.failed.lock() {
                    failed.push(args());
                }
            }
            _ => {}
        }
    }
}

impl Messages {
    fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .map(|l| l.iter().map(|(_, line)| line.clone()).collect())
            .unwrap_or_default()
    }

    /// Each of `sources` a failed command compiled, with what it said.
    fn rejected(&self, sources: &[PathBuf]) -> Vec<Rejected> {
        let (Ok(lines), Ok(failed)) = (self.lines.lock(), self.failed.lock()) else {
            return Vec::new();
        };
        let source_of = |args: &[OsString]| {
            sources
                .iter()
                .find(|s| args.iter().any(|a| Path::new(a) == s.as_path()))
        };
        sources
            .iter()
            .filter(|source| failed.iter().any(|args| source_of(args) == Some(source)))
            .map(|source| {
                let said: Vec<&str> = lines
                    .iter()
                    .filter(|(args, _)| source_of(args) == Some(source))
                    .map(|(_, line)| line.as_str())
                    .collect();
                Rejected {
                    source: source.clone(),
                    message: first_lines(&said),
                }
            })
            .collect()
    }
}

/// At most [`MESSAGE_LINES`] lines of compiler output: the first errors
/// are enough to act on.
fn first_lines(lines: &[&str]) -> String {
    let mut out: Vec<&str> = lines.iter().copied().take(MESSAGE_LINES).collect();
    let more = lines.len().saturating_sub(MESSAGE_LINES);
    let tail = format!("({more} more lines)");
    if more > 0 {
        out.push(&tail);
    }
    out.join("\n")
}

/// The most compiler output kept per rejected source.
pub const MESSAGE_LINES: usize = 30;

/// Checks `sources` with the host C++ compiler (`$CXX`, else `c++`),
/// syntax only, against the emulation headers in `include_dir`, the
/// sources spread over the available cores; returns those it rejected.
/// Fails only when the compiler cannot be run.
pub fn syntax_check(include_dir: &Path, sources: &[PathBuf]) -> Result<Vec<Rejected>, String> {
    let compiler = std::env::var_os("CXX")
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "c++".into());
    type Checked = Result<Option<Rejected>, String>;
    let check = |source: &PathBuf| -> Checked {
        let output = Command::new(&compiler)
            .args(["-std=c++17", "-fsyntax-only", "-DPYPTO_HOST_BACKEND=1"])
            .arg("-I")
            .arg(include_dir)
            .arg(source)
            // Plain quotes in messages, whatever the user's locale (cc does the same).
            .env("LC_ALL", "C")
            .output()
            .map_err(|e| {
                format!(
                    "cannot run the C++ compiler `{}`: {e}",
                    compiler.to_string_lossy()
                )
            })?;
        if output.status.success() {
            return Ok(None);
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        Ok(Some(Rejected {
            source: source.clone(),
            message: first_lines(&lines),
        }))
    };
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(sources.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Checked)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(source) = sources.get(i) else { break };
                    let result = check(source);
                    if let Ok(mut results) = results.lock() {
                        results.push((i, result));
                    }
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_default();
    results.sort_by_key(|(i, _)| *i);
    let mut rejected = Vec::new();
    for (_, result) in results {
        if let Some(r) = result? {
            rejected.push(r);
        }
    }
    Ok(rejected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_tell_parts_apart() {
        assert_ne!(fingerprint(&[b"ab", b"c"]), fingerprint(&[b"a", b"bc"]));
        assert_ne!(fingerprint(&[b"12345678"]), fingerprint(&[b"12345679"]));
        assert_eq!(fingerprint(&[b"same"]), fingerprint(&[b"same"]));
    }

    #[test]
    fn the_default_cache_is_at_the_target_root_of_every_layout() {
        let at = |out: &str, target: Option<&str>| {
            default_cache_dir(Path::new(out), target).map(|p| p.display().to_string())
        };
        let cache = Some("/w/target/pypto-cache".to_owned());
        assert_eq!(at("/w/target/debug/build/k-0123/out", None), cache);
        assert_eq!(at("/w/target/release/build/k-0123/out", None), cache);
        assert_eq!(
            at(
                "/w/target/aarch64-unknown-linux-gnu/debug/build/k-0123/out",
                Some("aarch64-unknown-linux-gnu")
            ),
            cache
        );
        assert_eq!(
            at(
                "/w/target/tests/trybuild/x86_64-unknown-linux-gnu/debug/build/k-0123/out",
                Some("x86_64-unknown-linux-gnu")
            ),
            cache
        );
        // Not a Cargo layout (an out_dir set by hand): no guess.
        assert_eq!(at("/tmp/generated/out", None), None);
    }

    #[test]
    fn npu_libraries_link_the_cann_runtime_and_the_binary_does_not() {
        let toolkit = |v: &str| cann::Toolkit {
            home: PathBuf::from("/opt/cann"),
            version: cann::CannVersion::parse(v).unwrap(),
            bisheng: PathBuf::from("/opt/cann/compiler/ccec_compiler/bin/bisheng"),
            found_by: "test".into(),
        };
        let objects = [PathBuf::from("/c/a.o"), PathBuf::from("/c/b.o")];
        let out = Path::new("/o/libk_dav2201.so");
        let args = |v: &str| -> Vec<String> {
            npu_link_args(&toolkit(v), cann::Arch::Dav2201, &objects, out)
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        let libs = "-L/opt/cann/lib64 -lascendcl -lruntime -lascendc_runtime -lprofapi \
                    -lunified_dlog -lmmpa -lascend_dump -lc_sec -lerror_manager \
                    -Wl,-rpath,/opt/cann/lib64";
        assert_eq!(
            args("8.5.0").join(" "),
            format!("-shared -fPIC --npu-arch=dav-2201 /c/a.o /c/b.o -o /o/libk_dav2201.so {libs}")
        );
        // Before 8.5, vector and cube objects share the library: no core flag.
        assert_eq!(
            args("8.0.RC3").join(" "),
            format!("-shared -fPIC /c/a.o /c/b.o -o /o/libk_dav2201.so {libs}")
        );
    }

    #[test]
    fn a_cut_short_cache_entry_is_not_whole() {
        let dir = std::env::temp_dir().join(format!("pypto-cache-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fresh = dir.join("fresh.o");
        std::fs::write(&fresh, vec![7u8; 165_872]).unwrap();
        let cached = dir.join("k_s0-0123.o");
        assert!(!cache_entry_is_whole(&cached));
        store_cache_entry(&fresh, &cached).unwrap();
        assert!(cache_entry_is_whole(&cached));
        // A store cut short by a full disk: the object is shorter than its sum says.
        let bytes = std::fs::read(&cached).unwrap();
        std::fs::write(&cached, &bytes[..155_648]).unwrap();
        assert!(!cache_entry_is_whole(&cached));
        // Same length, other bytes.
        let mut other = bytes.clone();
        other[1000] ^= 1;
        std::fs::write(&cached, &other).unwrap();
        assert!(!cache_entry_is_whole(&cached));
        // An object without its sum.
        store_cache_entry(&fresh, &cached).unwrap();
        std::fs::remove_file(sum_path(&cached)).unwrap();
        assert!(!cache_entry_is_whole(&cached));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
