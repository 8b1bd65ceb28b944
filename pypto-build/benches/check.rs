//! Spec checking and code generation throughput: 1,000 kernels across 100
//! generated files.
//!
//! Run with `cargo bench -p pypto-build --bench check`. Prints the median
//! time per kernel for a full check (parse, structure, model), for the whole
//! of generation (check, then the Rust wrappers and every specialisation's
//! Ascend C source, in memory) and, as the baseline measured in the same
//! run, the time to only parse the same YAML (serde-saphyr into
//! `IgnoredAny`); the ratios are what each costs on top of reading the YAML
//! at all.

use std::path::PathBuf;
use std::time::{Duration, Instant};

const FILES: usize = 100;
const KERNELS_PER_FILE: usize = 10;
const RUNS: usize = 15;

fn spec_file(index: usize) -> String {
    let mut s =
        format!("dims:\n  B{index}: DYNAMIC\n  H{index}: STATIC\n  HIDDEN: 768\nkernels:\n");
    for k in 0..KERNELS_PER_FILE {
        let name = format!("k_{index}_{k}");
        s.push_str(&match k % 4 {
            0 => format!(
                "  {name}:\n    doc: \"bias\"\n    template: builtin/add_bias\n    params:\n      x:    {{ dtype: DT_FP32, shape: [B{index}, STATIC] }}\n      bias: {{ dtype: DT_FP32, shape: [STATIC] }}\n      out:  {{ dtype: DT_FP32, shape: [B{index}, ...], rank: 2, output: true }}\n    static: {{ x.1: [128, 256, 512] }}\n"
            ),
            1 => format!(
                "  {name}:\n    template: builtin/attention\n    params:\n      q:   {{ dtype: DT_FP16, shape: [B{index}, DYNAMIC, HIDDEN] }}\n      k:   {{ dtype: DT_FP16, shape: [B{index}, DYNAMIC, HIDDEN] }}\n      v:   {{ dtype: DT_FP16, shape: [B{index}, DYNAMIC, HIDDEN] }}\n      out: {{ dtype: DT_FP16, shape: [B{index}, DYNAMIC, HIDDEN], output: true }}\n"
            ),
            2 => format!(
                "  {name}:\n    template: builtin/add\n    targets: [A2, A3]\n    params:\n      a:   {{ dtype: DT_BF16, shape: [H{index}, DYNAMIC, 64] }}\n      b:   {{ dtype: DT_BF16, shape: [H{index}, DYNAMIC, 64] }}\n      out: {{ dtype: DT_BF16, shape: [H{index}, DYN, 64], output: true }}\n    static: {{ H{index}: [1, 2, 4, 8] }}\n"
            ),
            _ => format!(
                "  {name}:\n    template: builtin/relu\n    params:\n      x: {{ dtype: DT_FP32, shape: [DYNAMIC, STATIC, STATIC] }}\n      y: {{ dtype: DT_FP32, shape: [DYNAMIC, STATIC, STATIC], output: true }}\n    static:\n      x.1: [2, 4]\n      x.2: [32, 64, 128]\n"
            ),
        });
    }
    s
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

fn main() {
    let dir = std::env::temp_dir().join(format!("pypto-bench-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files: Vec<PathBuf> = (0..FILES)
        .map(|i| {
            let path = dir.join(format!("spec_{i:03}.yaml"));
            std::fs::write(&path, spec_file(i)).unwrap();
            path
        })
        .collect();
    let sources: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    let kernels = FILES * KERNELS_PER_FILE;

    let model = pypto_build::check_paths(&[&dir]).expect("generated specs are valid");
    assert_eq!(model.kernels.len(), kernels);

    let builder = pypto_build::Builder::new()
        .spec_dir(&dir)
        .symbol_prefix("bench")
        .cargo_metadata(false);
    let generated = builder.generate().expect("generated specs render");
    let rendered = generated.sources.len();

    let mut check = Vec::new();
    let mut generate = Vec::new();
    let mut parse = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        std::hint::black_box(builder.generate().unwrap());
        generate.push(t.elapsed());

        let t = Instant::now();
        let model = pypto_build::check_paths(&[&dir]).unwrap();
        check.push(t.elapsed());
        std::hint::black_box(model);

        let t = Instant::now();
        for src in &sources {
            let v: serde::de::IgnoredAny = serde_saphyr::from_str(src).unwrap();
            std::hint::black_box(v);
        }
        parse.push(t.elapsed());
    }
    let (check_spread, generate_spread, parse_spread) =
        (spread(&check), spread(&generate), spread(&parse));
    let (check, generate, parse) = (median(check), median(generate), median(parse));
    let per_kernel = |d: Duration| d.as_secs_f64() * 1e6 / kernels as f64;
    println!("spec check: {kernels} kernels in {FILES} files, median of {RUNS} runs");
    println!(
        "  full check (read, parse, structure, model): {:8.2} ms  {:6.2} µs/kernel  (spread {check_spread:.0}%)",
        check.as_secs_f64() * 1e3,
        per_kernel(check)
    );
    println!(
        "  generate (check + Rust + {rendered} Ascend C sources): {:8.2} ms  {:6.2} µs/kernel  (spread {generate_spread:.0}%)",
        generate.as_secs_f64() * 1e3,
        per_kernel(generate)
    );
    println!(
        "  baseline: YAML parse only (in memory)      : {:8.2} ms  {:6.2} µs/kernel  (spread {parse_spread:.0}%)",
        parse.as_secs_f64() * 1e3,
        per_kernel(parse)
    );
    println!(
        "  ratio full check / parse only: {:.2}x",
        check.as_secs_f64() / parse.as_secs_f64()
    );
    println!(
        "  ratio generate / parse only: {:.2}x",
        generate.as_secs_f64() / parse.as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// (max - min) / median, in percent: how noisy the runs were.
fn spread(times: &[Duration]) -> f64 {
    let min = times.iter().min().unwrap().as_secs_f64();
    let max = times.iter().max().unwrap().as_secs_f64();
    let med = median(times.to_vec()).as_secs_f64();
    (max - min) / med * 100.0
}
