//! Property test: valid specs mutated at random never panic the checker;
//! each result is a clean pass or errors located inside the file, and each
//! spec that passes also goes through code generation without panicking.
//!
//! `PYPTO_MUTATE_CASES=100000 cargo test -p pypto-build --release --test mutate`
//! runs a longer search than the default; each run prints its seed, and
//! `PYPTO_MUTATE_SEED=N` runs the cases of seed N again.

use std::path::Path;

use proptest::prelude::*;
use pypto_build::unstable::codegen::{Plan, SymbolScope, ascendc, rust};

/// The valid specs the mutations start from.
fn seeds() -> Vec<String> {
    [
        "tests/specs/examples/add_bias.yaml",
        "tests/specs/examples/attention.yaml",
        "tests/specs/valid/named_dims.yaml",
        "tests/specs/valid/user_template.yaml",
        "tests/specs/valid/anchors.yml",
    ]
    .iter()
    .map(|p| std::fs::read_to_string(p).unwrap())
    .collect()
}

/// Fragments a typo or a confused user might introduce.
const TOKENS: &[&str] = &[
    "DYNAMIC",
    "DYN",
    "STATIC",
    "...",
    "DYNAMC",
    "DT_FP32",
    "DT_FP8E4M3",
    "DT_FP64",
    "0",
    "-1",
    "4294967296",
    "1.5",
    "1e999",
    "[",
    "]",
    "{",
    "}",
    ":",
    ",",
    "- ",
    "&a ",
    "*a",
    "*zz",
    "<<: *a",
    "\n",
    "  ",
    "\t",
    "#",
    "'",
    "\"",
    "~",
    "null",
    "true",
    "x.9",
    "shape",
    "shpe",
    "rank: 2",
    "output: true",
    "static:",
    "fn",
    "é",
    "\u{0}",
    "---\n",
    "!!str ",
    "?",
    "|",
    ">",
];

#[derive(Debug, Clone)]
enum Mutation {
    Insert { at: usize, token: usize },
    Delete { at: usize, len: usize },
    DuplicateLine { line: usize },
    SwapLines { a: usize, b: usize },
    ReplaceWord { at: usize, token: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(at, token)| Mutation::Insert { at, token }),
        (any::<usize>(), 1usize..12).prop_map(|(at, len)| Mutation::Delete { at, len }),
        any::<usize>().prop_map(|line| Mutation::DuplicateLine { line }),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines { a, b }),
        (any::<usize>(), 0..TOKENS.len())
            .prop_map(|(at, token)| Mutation::ReplaceWord { at, token }),
    ]
}

fn apply(src: &str, m: &Mutation) -> String {
    let chars: Vec<char> = src.chars().collect();
    let n = chars.len().max(1);
    let joined = |v: &[char]| v.iter().collect::<String>();
    match *m {
        Mutation::Insert { at, token } => {
            let at = at % n;
            format!(
                "{}{}{}",
                joined(&chars[..at]),
                TOKENS[token],
                joined(&chars[at..])
            )
        }
        Mutation::Delete { at, len } => {
            let at = at % n;
            let end = (at + len).min(chars.len());
            format!("{}{}", joined(&chars[..at]), joined(&chars[end..]))
        }
        Mutation::DuplicateLine { line } => {
            let mut lines: Vec<&str> = src.lines().collect();
            let i = line % lines.len().max(1);
            if let Some(l) = lines.get(i).copied() {
                lines.insert(i, l);
            }
            lines.join("\n")
        }
        Mutation::SwapLines { a, b } => {
            let mut lines: Vec<&str> = src.lines().collect();
            let len = lines.len().max(1);
            if !lines.is_empty() {
                lines.swap(a % len, b % len);
            }
            lines.join("\n")
        }
        Mutation::ReplaceWord { at, token } => {
            let at = at % n;
            let start = (0..=at)
                .rev()
                .find(|&i| i == 0 || !chars[i - 1].is_alphanumeric() && chars[i - 1] != '_')
                .unwrap_or(0);
            let end = (at..chars.len())
                .find(|&i| !chars[i].is_alphanumeric() && chars[i] != '_')
                .unwrap_or(chars.len());
            format!(
                "{}{}{}",
                joined(&chars[..start]),
                TOKENS[token],
                joined(&chars[end..])
            )
        }
    }
}

/// Cases per run: `PYPTO_MUTATE_CASES`, else a count quick enough for CI.
fn cases() -> u32 {
    std::env::var("PYPTO_MUTATE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2048)
}

#[path = "support/seed.rs"]
mod seed;
use seed::seed;

/// A ChaCha generator whose whole stream follows from `seed`.
fn rng(seed: u64) -> proptest::test_runner::TestRng {
    let key = seed::key(seed);
    proptest::test_runner::TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &key)
}

/// Lines as the checker counts them: a line ends at `\n`, `\r\n` or `\r`.
fn line_count(src: &str) -> u32 {
    let breaks = src.replace("\r\n", "\n").matches(['\n', '\r']).count();
    breaks as u32 + 1
}

/// What a build script does with a checked model, short of compiling:
/// Rust wrappers, and each source for the host and the NPU.
fn generate(model: &pypto_build::Model) -> Result<(), TestCaseError> {
    let plans: Vec<Plan<'_>> = model
        .kernels
        .iter()
        .map(|k| Plan::new(k, &SymbolScope::Prefix("m".to_owned())).with_npu())
        .collect();
    let _ = rust::generate(&plans);
    let mut read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|source| pypto_build::Error::Io {
            path: p.to_path_buf(),
            source,
        })
    };
    match ascendc::render(&plans, &mut read) {
        Ok(sources) => {
            for source in &sources {
                let plan = &plans
                    .iter()
                    .find(|p| p.kernel.name == source.kernel)
                    .unwrap();
                for &arch in &plan.npu_arches {
                    let _ = ascendc::for_arch(plan, source.specialisation, arch, &source.text);
                }
            }
            Ok(())
        }
        // A mutated user template may not parse: an error, not a panic.
        Err(pypto_build::Error::Template { .. }) => Ok(()),
        Err(e) => Err(TestCaseError::fail(format!("generation failed: {e}"))),
    }
}

/// Checks one mutated spec; true when it passed (and was generated).
fn check_one(src: &str) -> Result<bool, TestCaseError> {
    // A path in the valid fixtures, so that relative templates resolve.
    let path = Path::new("tests/specs/valid/mutated.yaml");
    let lines = line_count(src);
    match pypto_build::check_source(path, src) {
        Ok(model) => {
            prop_assert!(!model.kernels.is_empty());
            generate(&model)?;
            Ok(true)
        }
        Err(problems) => {
            prop_assert!(!problems.is_empty());
            for d in &problems {
                prop_assert_eq!(&d.location.path, path);
                let pos = d.location.pos;
                prop_assert!(pos.line >= 1 && pos.line <= lines + 1, "{} in\n{}", d, src);
                prop_assert!(pos.column >= 1, "{} in\n{}", d, src);
                prop_assert!(!d.message.is_empty());
                // Rendering (with the caret snippet) must not panic either.
                let _ = d.render();
            }
            Ok(false)
        }
    }
}

#[test]
fn mutated_specs_pass_or_fail_with_located_errors() {
    let config = ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let seeds = seeds();
    let seed = seed();
    let accepted = std::cell::Cell::new(0u32);
    let strategy = (0..seeds.len(), proptest::collection::vec(mutation(), 1..6));
    let started = std::time::Instant::now();
    let result = proptest::test_runner::TestRunner::new_with_rng(config, rng(seed)).run(
        &strategy,
        |(seed, mutations)| {
            let mut src = seeds[seed].clone();
            for m in &mutations {
                src = apply(&src, m);
            }
            if check_one(&src)? {
                accepted.set(accepted.get() + 1);
            }
            Ok(())
        },
    );
    // Seen with `--nocapture`: what a long run covered.
    eprintln!(
        "mutate: seed {seed} (PYPTO_MUTATE_SEED={seed} repeats it), {} cases, {} accepted, {:?}",
        cases(),
        accepted.get(),
        started.elapsed()
    );
    if let Err(e) = result {
        panic!("seed {seed} (rerun with PYPTO_MUTATE_SEED={seed}): {e}");
    }
    // Mutations that leave a spec valid (a comment, whitespace, a
    // synonym) must reach code generation, and most must not: a checker
    // that accepted everything, or nothing, would pass the loop above.
    let (cases, accepted) = (cases(), accepted.get());
    assert!(
        accepted * 20 >= cases && accepted * 5 <= cases * 4,
        "seed {seed}: {accepted} of {cases} mutated specs accepted"
    );
}
