//! Hostile specs are refused quickly and with bounded output: each shape
//! below is close to the 1 MiB limit and must be answered within 2 s in a
//! debug build, printing less than 64 KiB. Time is the checking thread's
//! CPU time, so a busy machine does not fail the bound.

use std::fmt::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

const LIMIT: usize = 1 << 20;
const TIME: Duration = Duration::from_secs(2);
const OUTPUT: usize = 64 << 10;

/// Checks `src`, asserting the bounds; returns the rendered diagnostics.
fn answer(name: &str, src: &str) -> String {
    assert!(src.len() <= LIMIT, "{name}: {} bytes", src.len());
    // One check at a time, so that the tests do not slow each other down.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let started = thread_cpu_time();
    let result = pypto_build::check_source(Path::new("kernels/hostile.yaml"), src);
    let rendered = match &result {
        Ok(m) => panic!("{name}: expected errors, got {} kernels", m.kernels.len()),
        Err(problems) => problems.render(),
    };
    let elapsed = thread_cpu_time() - started;
    eprintln!("{name}: {elapsed:?}, {} bytes of output", rendered.len());
    assert!(elapsed < TIME, "{name}: took {elapsed:?}");
    assert!(
        rendered.len() < OUTPUT,
        "{name}: {} bytes of output",
        rendered.len()
    );
    rendered
}

/// CPU time this thread has used.
fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec; the clock id is a constant.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// The last line: how many errors were left out.
fn summary(rendered: &str) -> &str {
    rendered.lines().last().unwrap_or_default()
}

fn relu_head(name: &str) -> String {
    format!(
        "kernels:\n  {name}:\n    template: builtin/relu\n    params:\n      x: {{ dtype: DT_FP32, shape: [STATIC] }}\n      y: {{ dtype: DT_FP32, shape: [STATIC], output: true }}\n"
    )
}

#[test]
fn a_huge_static_list_of_duplicates() {
    // Just under the parser's node budget: every value after the first is a
    // duplicate.
    let values = vec!["1"; 99_000].join(",");
    let src = format!("{}    static:\n      x.0: [{values}]\n", relu_head("k"));
    let out = answer("duplicates", &src);
    assert_eq!(
        summary(&out),
        "kernels/hostile.yaml:1:1: error: 98949 more errors in this file not shown; at most 50 are reported per file"
    );
    assert!(out.starts_with(
        "kernels/hostile.yaml:8:15: error: kernel `k`, `static` entry `x.0`: size 1 is listed twice\n  |\n8 |       x.0: [1,1,1,"
    ));
}

#[test]
fn a_huge_static_list_of_distinct_values() {
    let values: Vec<String> = (1..=90_000).map(|i| i.to_string()).collect();
    let src = format!(
        "{}    static:\n      x.0: [{}]\n",
        relu_head("k"),
        values.join(",")
    );
    let out = answer("distinct", &src);
    assert!(out.starts_with("kernels/hostile.yaml:7:5: error: kernel `k`: would build 90000 specialisations (x.0: 90000 sizes); at most 64 are allowed"), "{out}");
}

#[test]
fn very_long_lines_are_clipped() {
    // YAML refuses implicit keys over 1024 characters: the error is at the
    // end of a line of a million.
    let long = "k".repeat(LIMIT - 200);
    let src = format!("kernels:\n  k:\n    {long}: 1\n    template: builtin/relu\n");
    let out = answer("long line", &src);
    assert_eq!(
        out,
        format!(
            "kernels/hostile.yaml:3:{}: error: invalid YAML: mapping values are not allowed in this context\n  |\n3 | …{}: 1\n  | {}^",
            long.len() + 5,
            "k".repeat(97),
            " ".repeat(98)
        )
    );
}

#[test]
fn a_long_key_and_a_long_kernel_name_with_many_errors() {
    // An explicit key (`? KEY`) may be of any length. The kernel name is
    // quoted in every message about the kernel: it must be clipped once,
    // not copied per error.
    let name = "n".repeat(400_000);
    let key = "u".repeat(400_000);
    let values = vec!["0"; 90_000].join(",");
    let src = format!(
        "kernels:\n  ? {name}\n  :\n    ? {key}\n    : 1\n    template: builtin/relu\n    params:\n      x: {{ dtype: DT_FP32, shape: [STATIC] }}\n      y: {{ dtype: DT_FP32, shape: [STATIC], output: true }}\n    static:\n      x.0: [{values}]\n"
    );
    let out = answer("long names", &src);
    let kernel = format!("kernel `{}…{}`", "n".repeat(42), "n".repeat(21));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "kernels/hostile.yaml:2:5: error: {kernel}: not a valid kernel name: it is longer than 64 characters"
        )
    );
    assert_eq!(lines[2], format!("2 |   ? {}…", "n".repeat(96)));
    assert_eq!(
        lines[4],
        format!(
            "kernels/hostile.yaml:4:7: error: {kernel}: unknown key `{}…{}`; expected `doc`, `template`, `source`, `entry`, `template_args`, `tiling`, `blocks`, `cores`, `targets`, `params`, `static`, `options`, `defines`, `dispatch` or `variants`",
            "u".repeat(42),
            "u".repeat(21)
        )
    );
    assert_eq!(
        lines[8],
        format!(
            "kernels/hostile.yaml:11:13: error: {kernel}, `static` entry `x.0`: sizes must be positive, found 0"
        )
    );
    assert_eq!(
        summary(&out),
        "kernels/hostile.yaml:1:1: error: 89952 more errors in this file not shown; at most 50 are reported per file"
    );
}

#[test]
fn thousands_of_kernels_each_with_errors() {
    // Each kernel is 26 YAML nodes; a long `doc` fills the file up to
    // 1 MiB within the parser's budget of 100,000 nodes.
    let doc = "d".repeat(110);
    let mut src = String::from("kernels:\n");
    for i in 0..3_500 {
        let _ = write!(
            src,
            "  k{i}:\n    doc: {doc}\n    template: builtin/rleu\n    params:\n      x: {{ dtype: DT_FP23, shape: [DYNAMC] }}\n      y: {{ shape: [Q], output: true }}\n    static: {{ z.0: 1 }}\n"
        );
    }
    let out = answer("kernels", &src);
    assert!(src.len() > LIMIT - 100_000, "{}", src.len());
    assert!(out.starts_with("kernels/hostile.yaml:4:15: error: kernel `k0`, `template`: there is no builtin template `rleu`"), "{out}");
    assert_eq!(
        summary(&out),
        "kernels/hostile.yaml:1:1: error: 20950 more errors in this file not shown; at most 50 are reported per file"
    );
}

#[test]
fn thousands_of_params_and_dims_with_unknown_markers() {
    // Each unknown marker could be compared with every dim name, and each
    // `static` key with every param name.
    let mut src = String::from("dims:\n");
    for i in 0..5_000 {
        let _ = writeln!(src, "  DIM_NUMBER_{i}: STATIC");
    }
    src.push_str("kernels:\n  k:\n    template: t.hbs\n    params:\n");
    for i in 0..5_000 {
        let _ = writeln!(
            src,
            "      p{i}: {{ dtype: DT_FP32, shape: [DIM_NUMBER_{i}X, DIM_NUMBR_{i}] }}"
        );
    }
    src.push_str("    static:\n");
    for i in 0..10_000 {
        let _ = writeln!(src, "      q{i}.0: [1]");
    }
    let out = answer("params", &src);
    assert!(src.len() > LIMIT / 2, "{}", src.len());
    assert!(out.contains("— did you mean `DIM_NUMBER_0`?"), "{out}");
}

#[test]
fn thousands_of_duplicate_keys() {
    let mut src = String::from("kernels:\n  k:\n    template: builtin/relu\n    params:\n");
    for _ in 0..12_000 {
        src.push_str("      x: { dtype: DT_FP32, shape: [4] }\n");
    }
    let out = answer("duplicate keys", &src);
    assert!(out.starts_with("kernels/hostile.yaml:6:7: error: kernel `k`, `params`: `x` is given twice; first at line 5, column 7"), "{out}");
}

#[test]
fn cr_only_line_endings_with_a_long_line() {
    let values = vec!["1"; 60_000].join(",");
    let src = format!("{}    static:\r      x.0: [{values}]\r", relu_head("k")).replace('\n', "\r");
    let out = answer("cr", &src);
    assert!(out.starts_with(
        "kernels/hostile.yaml:8:15: error: kernel `k`, `static` entry `x.0`: size 1 is listed twice\n  |\n8 |       x.0: [1,1,1,"
    ), "{out}");
}
