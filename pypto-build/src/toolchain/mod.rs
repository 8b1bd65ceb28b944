//! Compiling rendered kernel sources, through `cc`: for the host backend
//! with the system C++ compiler against the emulation headers, for the NPU
//! with CANN's bisheng ([`cann`] finds it and picks its flags).

use std::any::Any;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

pub mod cache;
pub mod cann;

pub use cache::{CACHE_MAX_AGE, ObjectCache, OpenError, sha256_hex};

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
            // GCC's -O2 vectorises only loops whose trip count it knows
            // and whose operands cannot overlap; the emulation's vector
            // instructions are loops of neither kind. The dynamic model
            // (-O3's) vectorises them behind a run-time overlap check.
            // Results do not change: without -ffast-math GCC never
            // reorders a floating-point sum. Clang's -O2 already does it.
            if tool.is_like_gnu() {
                build.flag("-fvect-cost-model=dynamic");
            }
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

/// One call of [`compile_cached`]: sources compiled with one compiler
/// configuration.
#[derive(Clone, Copy)]
pub struct Batch<'a> {
    /// The compiler and its flags.
    pub build: &'a cc::Build,
    /// The sources, each compiled into one object.
    pub sources: &'a [PathBuf],
    /// The build's own generated files (`OUT_DIR/pypto`: rendered sources,
    /// emulation headers, objects): written `<generated>` in the compiler's
    /// command line in the key, which must not differ between builds, and
    /// left out of the recorded headers, since the source text and `salt`
    /// stand for them.
    pub generated: &'a Path,
    /// What the sources include that the recorded headers do not show: the
    /// emulation headers' text (a precompiled header hides them from the
    /// compiler's dependency output).
    pub salt: &'a str,
    /// Whether the compiler's warnings go to Cargo.
    pub forward_warnings: bool,
    /// How many of the last sources are support code (the emulation
    /// runtime): compiled and cached like the others but not counted in the
    /// report, which counts kernels.
    pub support: usize,
}

/// What [`compile_cached`] produced.
#[derive(Debug, Clone, Default)]
pub struct Compiled {
    /// One object per source, in order.
    pub objects: Vec<PathBuf>,
    pub report: CompileReport,
    /// Every file outside [`Batch::generated`] the compiler read (the
    /// compiler's dependency output, or the record of the reused entry):
    /// what the build must be rerun for when it changes.
    pub headers: Vec<PathBuf>,
}

/// Compiles the sources of `batch` into objects, reusing those `cache`
/// holds: only sources without a matching entry are compiled, in parallel
/// within Cargo's jobserver. An entry matches when its recorded key
/// material (see [`cache`]) equals this compile's: the compiler's command
/// line and `--version`, `salt`, the source, and every header the compiler
/// read for the entry, each as it is now. The cache may be shared by any
/// number of builds (profiles, target directories, crates, concurrent
/// builds): entries are written under a temporary name and renamed, an
/// entry whose object does not match its recorded digest is never used, and
/// only entries unused for [`CACHE_MAX_AGE`] are deleted. When the cache is
/// not writable the compiled objects stay where the compiler put them (in
/// `build`'s out dir) and nothing is stored. An object whose headers the
/// compiler did not list (a compiler without `-MD`), or changed while it
/// compiled, is used but not stored. The compiler's warnings go to Cargo
/// when `forward_warnings`; its errors go in the failure.
pub fn compile_cached(batch: &Batch<'_>, cache: &ObjectCache) -> Result<Compiled, CompileFailure> {
    // With metadata on, cc prints each variable it reads and its value: on
    // a failure Cargo would show them all around the compiler's message. A
    // failed build script runs again anyway, so Cargo need only hear of
    // them once compiling succeeded.
    let mut quiet = batch.build.clone();
    quiet.cargo_metadata(false);
    let tool = quiet
        .try_get_compiler()
        .map_err(|e| failure(e.to_string()))?;
    // The same generated files at another build's path.
    let compiler = format!("{:?} {:?}", tool.path(), tool.args())
        .replace(&*batch.generated.to_string_lossy(), "<generated>");
    // Dependency files name what was read as the compiler was given it.
    let generated =
        std::path::absolute(batch.generated).unwrap_or_else(|_| batch.generated.to_path_buf());
    let identity = format!(
        "compiler {compiler}\nversion {}\nsalt {}\n",
        cache.compiler_version(tool.path()),
        sha256_hex(&[batch.salt.as_bytes()])
    );

    let mut objects = Vec::with_capacity(batch.sources.len());
    let mut headers = Vec::new();
    // Sources to compile: (index, source, key material before compiling).
    let mut stale = Vec::new();
    for (index, source) in batch.sources.iter().enumerate() {
        let text =
            std::fs::read(source).map_err(|e| failure(format!("{}: {e}", source.display())))?;
        let before = format!("{identity}source {}\n", sha256_hex(&[&text]));
        match cache.find(stem_of(source), &before) {
            Some((object, read)) => {
                // Kept from pruning while in use.
                cache.touch(&object);
                headers.extend(read);
                objects.push(object);
            }
            None => {
                stale.push((index, source.clone(), before));
                objects.push(PathBuf::new());
            }
        }
    }
    if !stale.is_empty() {
        // The compiler's output is captured rather than printed by cc, so
        // that a failure is told once, in the error, per source.
        let messages = Arc::new(Messages::default());
        let mut changed = quiet.clone();
        changed
            .cargo_warnings(false)
            .message_logger(Some(messages.clone()));
        // The headers each compile reads, for the key and for Cargo.
        let lists_headers = tool.is_like_gnu() || tool.is_like_clang();
        if lists_headers {
            changed.flag("-MD");
        }
        changed.files(stale.iter().map(|(_, source, _)| source));
        let sources: Vec<PathBuf> = stale.iter().map(|(_, s, _)| s.clone()).collect();
        let started = std::time::SystemTime::now();
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
        if batch.forward_warnings {
            for line in messages.lines() {
                println!("cargo:warning={line}");
            }
        }
        for (object, (index, source, before)) in built.iter().zip(&stale) {
            let read = lists_headers
                .then(|| headers_read(object, &generated, started, cache))
                .flatten();
            let stored = match (&read, cache.unwritable()) {
                (Some(read), None) => Some(
                    cache
                        .store(object, stem_of(source), before, read)
                        .map_err(|e| failure(format!("{}: {e}", cache.dir().display())))?,
                ),
                _ => None,
            };
            if let Some(read) = read {
                headers.extend(read.into_iter().map(|(path, _)| path));
            }
            objects[*index] = stored.unwrap_or_else(|| object.clone());
        }
    }
    // Now cc tells Cargo which variables choose the compiler and its flags.
    let _ = batch.build.try_get_compiler();
    cache.prune();
    let counted = batch.sources.len().saturating_sub(batch.support);
    let compiled = stale
        .iter()
        .filter(|(index, _, _)| *index < counted)
        .count();
    headers.sort();
    headers.dedup();
    Ok(Compiled {
        objects,
        report: CompileReport {
            compiled,
            reused: counted - compiled,
        },
        headers,
    })
}

/// The name an entry of `source` starts with.
fn stem_of(source: &Path) -> &str {
    source
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("kernel")
}

/// The files outside `generated` that the compile of `object` read, each
/// with its digest, from the dependency file the compiler wrote beside it
/// (`-MD`); `None` when there is none, or when a file changed after
/// `started` (the object may hold either version) or cannot be named in a
/// record.
fn headers_read(
    object: &Path,
    generated: &Path,
    started: std::time::SystemTime,
    cache: &ObjectCache,
) -> Option<Vec<(PathBuf, String)>> {
    let text = std::fs::read_to_string(object.with_extension("d")).ok()?;
    let cwd = std::env::current_dir().ok()?;
    let mut read = Vec::new();
    for path in cache::depfile_prerequisites(&text) {
        let path = cwd.join(path);
        if path.starts_with(generated) {
            continue;
        }
        if path
            .to_str()
            .is_none_or(|p| p.chars().any(char::is_control))
        {
            return None;
        }
        let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok()?;
        if modified >= started {
            return None;
        }
        let hash = cache.file_hash(&path)?;
        read.push((path, hash));
    }
    read.sort();
    read.dedup();
    Some(read)
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
    let key = sha256_hex(&[salt.as_bytes(), compiler.as_bytes()]);
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
    format!("v{}", &sha256_hex(&[headers.as_bytes()])[..16])
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
/// bisheng ([`npu_link_args`]), unless `output` was linked from objects of
/// the same content with the same command already; a
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
    // The objects by content: those compiled without a writable cache are
    // not named by it.
    let mut key_text = command;
    for object in objects {
        let bytes = std::fs::read(object).map_err(|e| io(object, e))?;
        key_text.push_str(&format!("\n{}", sha256_hex(&[&bytes])));
    }
    let key = sha256_hex(&[key_text.as_bytes()]);
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
pub(crate) fn first_lines(lines: &[&str]) -> String {
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
}
