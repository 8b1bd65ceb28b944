//! What pypto-build adds to `cargo build`, measured on generated user crates
//! in one run:
//! - a 50-kernel crate (50 spec files; 10 of the kernels share one user
//!   template): clean build, no-op rebuild, a spec touched without change,
//!   one kernel edited, the shared template edited. Wall time (median of
//!   `REPS`), whether the build script ran, and how many times the C++
//!   compiler was invoked (a counting wrapper set as `CXX`), against the
//!   clean build as baseline;
//! - what one kernel compile costs at `-O0`, `-O1` and `-O2` (with the
//!   precompiled header of that level) against a source that includes the
//!   headers and defines nothing, and the least time 50 compiles can take on
//!   this machine's cores at each level;
//! - the size a STATIC specialisation adds to a stripped release binary,
//!   against the binary with one specialisation.
//!
//! Run with `cargo bench -p pypto-tests --bench builds` (several minutes: it builds the
//! crates' dependencies once first, offline, in `target/bench-builds`);
//! `-- floor` measures only the compile floor, on the crate of the last run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

const KERNELS: usize = 50;
const REPS: usize = 3;

fn workspace() -> &'static Path {
    pypto_tests::workspace_root()
}

fn target_dir() -> PathBuf {
    workspace().join("target/bench-builds")
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(path.parent().context("parent")?)?;
    std::fs::write(path, text)?;
    Ok(())
}

const SHARED_TEMPLATE: &str = r#"// y = 2x, one element per step through scalar GM access.
extern "C" __global__ __aicore__ void {{symbol}}({{entry_params}})
{
    {{load_tiling}}
    uint64_t n = {{args.x.numel}};
    AscendC::GlobalTensor<{{args.x.type}}> xGm;
    AscendC::GlobalTensor<{{args.y.type}}> yGm;
    xGm.SetGlobalBuffer(reinterpret_cast<__gm__ {{args.x.type}}*>({{args.x.name}}), n);
    yGm.SetGlobalBuffer(reinterpret_cast<__gm__ {{args.y.type}}*>({{args.y.name}}), n);
    for (uint64_t i = AscendC::GetBlockIdx(); i < n; i += AscendC::GetBlockNum()) {
        yGm.SetValue(i, xGm.GetValue(i) * 2);
    }
}
"#;

/// Kernel `i` of the 50: five kinds in turn, the fourth on the shared template.
fn kernel_spec(i: usize, width: usize) -> String {
    let name = format!("k{i:02}");
    match i % 5 {
        0 => format!(
            "kernels:\n  {name}:\n    template: builtin/add_bias\n    params:\n      \
             x: {{ dtype: DT_FP32, shape: [DYNAMIC, {width}] }}\n      bias: {{ dtype: DT_FP32, shape: [{width}] }}\n      \
             out: {{ dtype: DT_FP32, shape: [DYNAMIC, {width}], output: true }}\n"
        ),
        1 => format!(
            "kernels:\n  {name}:\n    template: builtin/relu\n    params:\n      \
             x: {{ dtype: DT_FP16, shape: [DYNAMIC, {width}] }}\n      y: {{ dtype: DT_FP16, shape: [DYNAMIC, {width}], output: true }}\n"
        ),
        2 => format!(
            "kernels:\n  {name}:\n    template: builtin/softmax\n    params:\n      \
             x: {{ dtype: DT_FP32, shape: [DYNAMIC, {width}] }}\n      out: {{ dtype: DT_FP32, shape: [DYNAMIC, {width}], output: true }}\n"
        ),
        3 => format!(
            "kernels:\n  {name}:\n    template: shared.hbs\n    params:\n      \
             x: {{ dtype: DT_FP32, shape: [DYNAMIC, {width}] }}\n      y: {{ dtype: DT_FP32, shape: [DYNAMIC, {width}], output: true }}\n"
        ),
        _ => format!(
            "kernels:\n  {name}:\n    template: builtin/add\n    params:\n      \
             a: {{ dtype: DT_BF16, shape: [DYNAMIC, {width}] }}\n      b: {{ dtype: DT_BF16, shape: [DYNAMIC, {width}] }}\n      \
             out: {{ dtype: DT_BF16, shape: [DYNAMIC, {width}], output: true }}\n"
        ),
    }
}

/// One cargo build: wall time, whether the build script ran, and the C++
/// compiler's invocations (all, and kernel compiles with `-c`).
struct Step {
    wall: Duration,
    script_ran: bool,
    invocations: usize,
    compiles: usize,
}

struct Crate {
    dir: PathBuf,
    cxx_log: PathBuf,
    cxx: PathBuf,
    /// Its own kernel object cache, so that a clean build compiles.
    cache: PathBuf,
}

impl Crate {
    fn create(name: &str) -> anyhow::Result<Crate> {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
        pypto_tests::user_crate(&dir, name, "[profile.release]\nstrip = true\n\n")?;
        let cxx_log = dir.join("cxx.log");
        let cxx = dir.join("cxx-count");
        write(
            &cxx,
            &format!(
                "#!/bin/sh\n# Counts compiler invocations for the benchmark.\necho \"$*\" >> '{}'\nexec c++ \"$@\"\n",
                cxx_log.display()
            ),
        )?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cxx, std::fs::Permissions::from_mode(0o755))?;
        let cache = dir.with_file_name(format!("{name}-cache"));
        let _ = std::fs::remove_dir_all(&cache);
        Ok(Crate {
            dir,
            cxx_log,
            cxx,
            cache,
        })
    }

    fn cargo(&self, args: &[&str]) -> anyhow::Result<Step> {
        let _ = std::fs::remove_file(&self.cxx_log);
        let started = Instant::now();
        let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(args)
            .args(["-v", "--offline"])
            .current_dir(&self.dir)
            .env("CARGO_TARGET_DIR", target_dir())
            .env("CXX", &self.cxx)
            .env("PYPTO_CACHE_DIR", &self.cache)
            .env_remove("RUSTFLAGS")
            .env_remove("PYPTO_BUILD_VERBOSE")
            .env("PYPTO_BACKEND", "host")
            .output()?;
        let wall = started.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            bail!("cargo {args:?} failed in {}:\n{stderr}", self.dir.display());
        }
        let log = std::fs::read_to_string(&self.cxx_log).unwrap_or_default();
        Ok(Step {
            wall,
            script_ran: stderr.lines().any(|l| l.contains("build-script-build`")),
            invocations: log.lines().count(),
            compiles: log
                .lines()
                .filter(|l| l.contains(" -c ") && l.contains("/pypto/src/"))
                .count(),
        })
    }
}

fn median_step(steps: Vec<Step>) -> Step {
    let mut steps = steps;
    steps.sort_by_key(|s| s.wall);
    let n = steps.len();
    steps.swap_remove(n / 2)
}

fn incremental() -> anyhow::Result<()> {
    let c = Crate::create("bench-builds-50")?;
    for i in 0..KERNELS {
        write(
            &c.dir.join(format!("kernels/k{i:02}.yaml")),
            &kernel_spec(i, 64),
        )?;
    }
    write(&c.dir.join("kernels/shared.hbs"), SHARED_TEMPLATE)?;
    write(
        &c.dir.join("src/main.rs"),
        "pypto_rt::include_kernels!();\n\nuse pypto_rt::{Const, Tensor};\n\nfn main() {\n    \
         // Names a kernel, so that the binary links the kernel library.\n    \
         let _k00 = |x: &Tensor<f32, (usize, Const<64>)>, b: &Tensor<f32, (Const<64>,)>, \
         o: &mut Tensor<f32, (usize, Const<64>)>| kernels::k00(x, b, o);\n    \
         println!(\"built\");\n}\n",
    )?;
    // Dependencies once, so that "clean" means this crate only.
    c.cargo(&["build"])?;

    let mut runs: Vec<[Step; 5]> = Vec::new();
    for rep in 0..REPS {
        // A clean build starts without cached objects too.
        let _ = std::fs::remove_dir_all(&c.cache);
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["clean", "-p", "bench-builds-50", "--offline"])
            .current_dir(&c.dir)
            .env("CARGO_TARGET_DIR", target_dir())
            .output()?;
        let clean = c.cargo(&["build"])?;
        let noop = c.cargo(&["build"])?;
        // Touched: rewritten with the same content (a new mtime).
        let spec = c.dir.join("kernels/k07.yaml");
        let text = std::fs::read_to_string(&spec)?;
        write(&spec, &text)?;
        let touched = c.cargo(&["build"])?;
        // One kernel edited: a different fixed width (alternating, so each
        // rep edits).
        write(&spec, &kernel_spec(7, if rep % 2 == 0 { 96 } else { 64 }))?;
        let edited = c.cargo(&["build"])?;
        // The shared template edited: every kernel using it recompiles.
        let template = c.dir.join("kernels/shared.hbs");
        write(&template, &format!("{SHARED_TEMPLATE}// edit {rep}\n"))?;
        let shared = c.cargo(&["build"])?;
        runs.push([clean, noop, touched, edited, shared]);
    }
    let labels = [
        "clean build (baseline)",
        "no-op rebuild",
        "one spec touched, unchanged",
        "one kernel's spec edited",
        "shared template edited (10 users)",
    ];
    let mut columns: Vec<Vec<Step>> = (0..5).map(|_| Vec::new()).collect();
    for run in runs {
        for (i, step) in run.into_iter().enumerate() {
            columns[i].push(step);
        }
    }
    let medians: Vec<Step> = columns.into_iter().map(median_step).collect();
    let base = medians[0].wall.as_secs_f64();
    println!(
        "incremental builds of a {KERNELS}-kernel crate ({KERNELS} spec files, host backend, debug \
         profile), median of {REPS}; ratio = wall / clean build"
    );
    for (label, s) in labels.iter().zip(&medians) {
        println!(
            "  {label:<36} {:8.2} s  ratio {:.3}  build script ran: {:<5}  compiler invocations: {:3} \
             (kernel compiles: {})",
            s.wall.as_secs_f64(),
            s.wall.as_secs_f64() / base,
            s.script_ran,
            s.invocations,
            s.compiles
        );
    }
    Ok(())
}

fn binary_size() -> anyhow::Result<()> {
    const SIZES: [usize; 9] = [16, 32, 48, 64, 80, 96, 112, 128, 144];
    let c = Crate::create("bench-size")?;
    let spec: String = {
        let list: Vec<String> = SIZES.iter().map(ToString::to_string).collect();
        format!(
            "kernels:\n  rows:\n    template: builtin/softmax\n    params:\n      \
             x: {{ dtype: DT_FP32, shape: [DYNAMIC, STATIC] }}\n      \
             out: {{ dtype: DT_FP32, shape: [DYNAMIC, ...], rank: 2, output: true }}\n    \
             static: {{ x.1: [{}] }}\n",
            list.join(", ")
        )
    };
    write(&c.dir.join("kernels/rows.yaml"), &spec)?;
    // A program that calls the kernel at the first `used` sizes.
    let program = |used: usize| {
        let calls: String = SIZES[..used]
            .iter()
            .map(|n| {
                format!(
                    "    let x = dev.zeros::<f32, _>((2, Const::<{n}>))?;\n    \
                     let mut y = dev.zeros((2, Const::<{n}>))?;\n    kernels::rows(&x, &mut y)?;\n"
                )
            })
            .collect();
        format!(
            "pypto_rt::include_kernels!();\nuse pypto_rt::{{Const, Device}};\n\n\
             fn main() -> Result<(), pypto_rt::Error> {{\n    let dev = Device::host();\n{calls}    Ok(())\n}}\n"
        )
    };
    let binary = target_dir().join("release/bench-size");
    let measure = |used: usize| -> anyhow::Result<u64> {
        write(&c.dir.join("src/main.rs"), &program(used))?;
        c.cargo(&["build", "--release"])?;
        Ok(std::fs::metadata(&binary)?.len())
    };
    let one = measure(1)?;
    let all = measure(SIZES.len())?;
    let per = (all as f64 - one as f64) / (SIZES.len() - 1) as f64;
    println!(
        "binary size per STATIC specialisation (softmax fp32, {} sizes built, host backend, stripped \
         release binary):",
        SIZES.len()
    );
    println!(
        "  calling 1 size (baseline): {one} bytes;  calling all {}: {all} bytes",
        SIZES.len()
    );
    println!(
        "  added per specialisation called: {per:.0} bytes = {:.2}% of the baseline binary \
         (specialisations built but never called are not linked)",
        per / one as f64 * 100.0
    );
    Ok(())
}

/// Copies the headers under `from` to `to`, leaving out precompiled ones.
fn copy_headers(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        let target = to.join(&name);
        if entry.file_type()?.is_dir() {
            copy_headers(&entry.path(), &target)?;
        } else if !name.to_string_lossy().contains(".gch") {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Seconds of one run of `c++ args`, or the compiler's error.
fn compile_seconds(args: &[String]) -> anyhow::Result<f64> {
    let started = Instant::now();
    let out = Command::new("c++").args(args).output()?;
    if !out.status.success() {
        bail!(
            "c++ {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(started.elapsed().as_secs_f64())
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// One kernel compile at each optimisation level, with the flags the build
/// used (taken from the counting wrapper's log of the last build), against
/// an empty source with the same headers and precompiled header.
fn compile_floor() -> anyhow::Result<()> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-builds-50");
    let log = std::fs::read_to_string(dir.join("cxx.log"))?;
    let line = log
        .lines()
        .find(|l| l.contains(" -c ") && l.contains("/pypto/src/"))
        .context("no kernel compile in the last build's log")?;
    // The bench's paths have no spaces, so the logged `$*` splits back.
    let words: Vec<&str> = line.split_whitespace().collect();
    let source = PathBuf::from(words[words.iter().position(|w| *w == "-c").context("-c")? + 1]);
    let src_dir = source.parent().context("src dir")?;
    let include = src_dir.with_file_name("include");
    let mut flags: Vec<String> = Vec::new();
    let mut skip = false;
    for w in &words {
        if skip {
            skip = false;
            continue;
        }
        match *w {
            "-c" | "-o" => skip = true,
            w if w.starts_with("-O") => {}
            // The build's include directory, as `-I DIR` or `-IDIR`.
            w if w.ends_with("/pypto/include") => {
                if flags.last().is_some_and(|f| f == "-I") {
                    flags.pop();
                }
            }
            w => flags.push(w.to_string()),
        }
    }
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-compile-floor");
    let _ = std::fs::remove_dir_all(&scratch);
    let empty = scratch.join("empty.cpp");
    write(&empty, "#include \"kernel_operator.h\"\n")?;
    let kinds = ["k00", "k01", "k02", "k03", "k04"];
    println!(
        "one kernel compile (g++, the build's flags, a precompiled header per level), median of {REPS}; \
         ratio = kernel / empty source"
    );
    for level in ["-O0", "-O1", "-O2"] {
        let inc = scratch.join(format!("include{level}"));
        copy_headers(&include, &inc)?;
        let mut base: Vec<String> = flags.clone();
        base.push(level.to_string());
        base.push(format!("-I{}", inc.display()));
        let header = inc.join("kernel_operator.h");
        let mut pch = base.clone();
        pch.extend([
            "-x".into(),
            "c++-header".into(),
            header.display().to_string(),
            "-o".into(),
            format!("{}.gch", header.display()),
        ]);
        let pch_s = compile_seconds(&pch)?;
        let object = scratch.join("out.o");
        let time = |src: &Path| -> anyhow::Result<f64> {
            let mut args = base.clone();
            args.extend([
                "-Winvalid-pch".into(),
                "-c".into(),
                src.display().to_string(),
                "-o".into(),
                object.display().to_string(),
            ]);
            let runs: anyhow::Result<Vec<f64>> =
                (0..REPS).map(|_| compile_seconds(&args)).collect();
            Ok(median(runs?))
        };
        let empty_s = time(&empty)?;
        let mut row = String::new();
        let mut total = 0.0;
        for kind in kinds {
            let src = std::fs::read_dir(src_dir)?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .find(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(&format!("{kind}_")) && n.ends_with(".cpp"))
                })
                .with_context(|| format!("no source for {kind}"))?;
            let s = time(&src)?;
            total += s;
            row.push_str(&format!("  {kind} {s:.2} s ({:.1}x)", s / empty_s));
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        println!(
            "  {level}: precompiled header {pch_s:.2} s; empty source (baseline) {empty_s:.2} s;{row}"
        );
        // The crate's kernels are these five kinds in equal numbers.
        println!(
            "       compiling the {KERNELS} kernels alone, perfectly spread over {cores} cores: at least {:.1} s",
            total / kinds.len() as f64 * KERNELS as f64 / cores as f64
        );
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    // `-- floor` measures only the compile floor, on the crate the last
    // full run left behind.
    if std::env::args().any(|a| a == "floor") {
        return compile_floor();
    }
    incremental()?;
    compile_floor()?;
    binary_size()?;
    Ok(())
}
