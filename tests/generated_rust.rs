//! Whatever `check` accepts generates Rust that compiles, with docs that
//! `cargo test --doc` passes: specs built from an adversarial alphabet (names
//! that case conversion merges, Rust and C++ keywords, the generated code's
//! own locals, docs with fences, indented code, CR, bidi controls) go through
//! check and codegen in-process; the Rust of every accepted spec is then
//! compiled together in one scratch crate.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use pypto_build::unstable::codegen::{self, Plan, SymbolScope};

/// Names valid in specs, chosen to collide once converted or to shadow what
/// generated code declares or uses.
const VALID: &[&str] = &[
    "x",
    "X",
    "h_dim",
    "hDim",
    "HDim",
    "H_DIM",
    "x_1",
    "X_1",
    "XAxis1",
    "x_axis1",
    "_1",
    "_x",
    "index",
    "DESC",
    "ENTRIES",
    "launch",
    "args",
    "kernels",
    "k",
    "K",
    "core",
    "std",
    "Result",
    "Tensor",
    "Const",
    "Error",
    "Dims",
    "unsafe_",
    "r",
    "PYPTO_DESC",
    "ffi",
    "super_",
];

/// Names `check` must reject.
const INVALID: &[&str] = &[
    "fn",
    "self",
    "Self",
    "class",
    "template",
    "f32",
    "usize",
    "None",
    "Some",
    "pypto_x",
    "a__b",
    "__pypto_ffi",
    "1x",
    "main",
];

/// Pieces of `doc:` text.
const DOC: &[&str] = &[
    "Plain text.",
    "```",
    "```rust\nfn main() { panic!(\"ran\") }\n```",
    "    assert!(false);",
    "\n\n    assert!(false);\n",
    "\tassert!(false);",
    "~~~\nassert!(false);\n~~~",
    "- ```\n  assert!(false);\n  ```",
    ">     assert!(false);",
    "1.      assert!(false);",
    "\r",
    "\r\n",
    "\n",
    "\n\n",
    "\u{202e}",
    "\u{2066}x\u{2069}",
    "\u{200f}",
    "é 漢字 🦀",
    "`code`",
    "<pre>",
    "<!--",
    "# Heading",
    "*/ /* //",
    "\\",
    "[link]",
    "{}",
    "\"quoted\"",
    "\u{0}\u{7}\u{7f}\u{85}",
    "\u{2028}",
];

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => proptest::sample::select(VALID),
        1 => proptest::sample::select(INVALID),
    ]
    .prop_map(str::to_owned)
}

fn doc() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(proptest::collection::vec(
        proptest::sample::select(DOC),
        0..6,
    ))
    .prop_map(|pieces| pieces.map(|p| p.concat()))
}

/// A YAML double-quoted string holding exactly `text`.
fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(c),
            c if u32::from(c) <= 0xffff => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push_str(&format!("\\U{:08x}", u32::from(c))),
        }
    }
    out.push('"');
    out
}

/// One kernel's names: kernel, three params; and its doc.
type KernelNames = (String, [String; 3], Option<String>);

fn kernel() -> impl Strategy<Value = KernelNames> {
    (name(), [name(), name(), name()], doc())
}

/// A spec: three module-level dims (two STATIC, one DYNAMIC) and one or two
/// kernels using them and unnamed STATIC axes, on a user template.
fn spec() -> impl Strategy<Value = String> {
    (
        [name(), name(), name()],
        proptest::collection::vec(kernel(), 1..=2),
    )
        .prop_map(|(dims, kernels)| {
            let [d1, d2, d3] = dims.map(|d| quoted(&d));
            let mut spec =
                format!("dims:\n  {d1}: STATIC\n  {d2}: STATIC\n  {d3}: DYNAMIC\nkernels:\n");
            for (name, params, doc) in kernels {
                let [p1, p2, p3] = params.map(|p| quoted(&p));
                let key =
                    |p: &String, axis: usize| quoted(&format!("{}.{axis}", &p[1..p.len() - 1]));
                spec.push_str(&format!("  {}:\n", quoted(&name)));
                if let Some(doc) = doc {
                    spec.push_str(&format!("    doc: {}\n", quoted(&doc)));
                }
                spec.push_str(&format!(
                    "    template: t.hbs\n    params:\n      \
                     {p1}: {{ dtype: DT_FP32, shape: [{d1}, STATIC, {d3}] }}\n      \
                     {p2}: {{ dtype: DT_FP16, shape: [STATIC, {d2}], output: true }}\n      \
                     {p3}: {{ scalar: DT_INT32 }}\n    \
                     static: {{ {d1}: [2, 3], {d2}: 4, {}: [5, 7], {}: 6 }}\n",
                    key(&p1, 1),
                    key(&p2, 0),
                ));
            }
            spec
        })
}

/// Spec file names: the path shows up in generated docs and attributes.
/// (Names with control or bidi characters are refused before codegen; see
/// pypto-build/tests/paths.rs.)
const SPEC_NAMES: &[&str] = &["k.yaml", "a`b.yaml", "{x}.yaml", "t\"q.yaml", "é x.yaml"];

fn cargo(dir: &Path, args: &[&str]) -> (bool, String, String) {
    pypto_tests::scratch_cargo(dir, None, args, std::iter::empty::<(&str, &str)>())
}

/// A ChaCha generator whose whole stream follows from `seed`.
fn rng(seed: u64) -> proptest::test_runner::TestRng {
    let key = pypto_tests::test_key(seed);
    proptest::test_runner::TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &key)
}

/// Specs that once generated Rust that did not compile (each found by a
/// fresh seed), compiled in every run.
const REGRESSIONS: &[&str] = &[
    // A kernel named like a STATIC dim's const generic: `Const<X>` named
    // the kernel's module `X` (seed 1796453615719073670).
    "dims:\n  \"x\": STATIC\n  \"X_1\": DYNAMIC\nkernels:\n  \"X\":\n    template: t.hbs\n    \
     params:\n      \"r\": { dtype: DT_FP32, shape: [\"x\", STATIC, \"X_1\"] }\n      \
     \"_1\": { dtype: DT_FP16, shape: [6], output: true }\n    \
     static: { \"x\": [2, 3], \"r.1\": [5, 7] }\n",
];

/// Specs run through check and codegen.
const CASES: usize = 600;
/// Accepted specs compiled together (each a module of one crate).
const COMPILED: usize = 60;

#[test]
fn every_accepted_spec_generates_rust_that_compiles_with_inert_docs() {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("generated-rust");
    let _ = std::fs::remove_dir_all(&root);
    let specs = root.join("specs");
    std::fs::create_dir_all(&specs).unwrap();
    std::fs::write(specs.join("t.hbs"), "").unwrap();

    // A fresh seed per run, so runs explore different specs; the count
    // compiled (and so the test's time) stays the same.
    let seed = pypto_tests::test_seed();
    eprintln!("generated_rust: seed {seed} (PYPTO_MUTATE_SEED={seed} repeats it)");
    let mut runner = TestRunner::new_with_rng(Config::default(), rng(seed));
    let mut accepted: Vec<(String, PathBuf, String)> = Vec::new();
    let mut rejected = 0;
    let mut rejected_names = 0;
    for i in 0..CASES {
        // The specs fresh seeds found to break codegen come first, every run.
        let text = match REGRESSIONS.get(i) {
            Some(text) => (*text).to_owned(),
            None => spec().new_tree(&mut runner).unwrap().current(),
        };
        let path = specs.join(SPEC_NAMES[i % SPEC_NAMES.len()]);
        match pypto_build::check_source(&path, &text) {
            Ok(model) => {
                let scope = SymbolScope::Prefix(format!("case{i}"));
                let plans: Vec<Plan<'_>> =
                    model.kernels.iter().map(|k| Plan::new(k, &scope)).collect();
                // Beyond the compiled sample: generics share the value
                // namespace with params, traits a module with each other.
                for plan in &plans {
                    let mut values: Vec<&str> =
                        plan.generics.iter().flatten().map(String::as_str).collect();
                    values.extend(plan.kernel.params.iter().map(|p| p.name.as_str()));
                    let mut traits: Vec<&str> = plan
                        .built_traits
                        .iter()
                        .flatten()
                        .map(String::as_str)
                        .collect();
                    let (n, t) = (values.len(), traits.len());
                    values.sort_unstable();
                    values.dedup();
                    traits.sort_unstable();
                    traits.dedup();
                    assert_eq!(
                        (values.len(), traits.len()),
                        (n, t),
                        "seed {seed}, case {i}:\n{text}"
                    );
                }
                let rust = codegen::rust::generate(&plans);
                // What rustc rejects in any comment, whatever the lints.
                assert!(
                    !rust.contains('\r'),
                    "seed {seed}, case {i}: a CR in\n{rust}"
                );
                assert!(
                    !rust.contains(
                        |c| matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
                    ),
                    "seed {seed}, case {i}: a bidi control in\n{rust}"
                );
                accepted.push((text, path, rust));
            }
            Err(problems) => {
                rejected += 1;
                let all = problems.render();
                if INVALID.iter().any(|n| text.contains(&format!("\"{n}\""))) {
                    rejected_names += 1;
                } else {
                    // Valid names are rejected only for duplicating each other.
                    assert!(
                        all.contains("twice")
                            || all.contains("duplicate")
                            || all.contains("more than once"),
                        "seed {seed}, case {i} was rejected for something else:\n{text}\n{all}"
                    );
                }
            }
        }
    }
    eprintln!(
        "generated_rust: {} of {CASES} accepted, {rejected} refused ({rejected_names} for invalid names)",
        accepted.len()
    );
    assert!(
        accepted.len() >= COMPILED,
        "seed {seed}: only {} of {CASES} accepted",
        accepted.len()
    );
    assert!(
        rejected_names > 0 && rejected > rejected_names,
        "seed {seed}: {rejected} refused, {rejected_names} of them for invalid names"
    );

    let dir = root.join("crate");
    pypto_tests::user_crate(&dir, "generated-rust", "").unwrap();
    // No kernels are built: only the generated Rust is under test. Each
    // case links its kernel library, so the build script provides empty ones.
    let libraries: Vec<String> = accepted
        .iter()
        .take(COMPILED)
        .filter_map(|(_, _, rust)| {
            let start = rust.find("#[link(name = \"")? + "#[link(name = \"".len();
            let len = rust[start..].find('"')?;
            Some(format!("{:?}", &rust[start..start + len]))
        })
        .collect();
    std::fs::write(
        dir.join("build.rs"),
        format!(
            "fn main() {{\n    let out = std::env::var(\"OUT_DIR\").unwrap();\n    \
             for name in [{}] {{\n        \
             std::fs::write(format!(\"{{out}}/lib{{name}}.a\"), b\"!<arch>\\n\").unwrap();\n    }}\n    \
             println!(\"cargo:rustc-link-search=native={{out}}\");\n}}\n",
            libraries.join(", ")
        ),
    )
    .unwrap();
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let build_deps = manifest.find("[build-dependencies]").unwrap();
    let end = build_deps + manifest[build_deps..].find("\n\n").unwrap() + 2;
    std::fs::write(
        dir.join("Cargo.toml"),
        format!("{}{}", &manifest[..build_deps], &manifest[end..]),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let mut lib = String::from("//! Generated wrappers of accepted specs.\n#![deny(warnings)]\n");
    for (i, (text, _, rust)) in accepted.iter().take(COMPILED).enumerate() {
        std::fs::write(dir.join(format!("src/case{i}.yaml")), text).unwrap();
        std::fs::write(dir.join(format!("src/case{i}.rs")), rust).unwrap();
        lib.push_str(&format!(
            "/// Case {i}.\npub mod case{i} {{\n    include!(\"case{i}.rs\");\n}}\n"
        ));
    }
    std::fs::write(dir.join("src/lib.rs"), lib).unwrap();

    let (ok, _, stderr) = cargo(&dir, &["check", "-q"]);
    assert!(
        ok,
        "generated Rust does not compile (specs in {}):\n{stderr}",
        dir.display()
    );
    let (ok, stdout, stderr) = cargo(&dir, &["test", "-q", "--doc"]);
    assert!(
        ok,
        "doc tests fail (specs in {}):\n{stdout}\n{stderr}",
        dir.display()
    );
    assert!(
        stdout.contains("running 0 tests"),
        "the generated docs hold runnable code:\n{stdout}"
    );
}
