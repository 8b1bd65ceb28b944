//! `pypto-build schema`: the printed JSON Schema accepts every valid spec in
//! the repository and rejects structural errors (unknown keys, wrong kinds,
//! unknown words) where the checker does, naming the keyword and the path.

use std::path::{Path, PathBuf};
use std::process::Command;

use jsonschema::Validator;
use serde_json::Value;

fn schema_text() -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_pypto-build"))
        .arg("schema")
        .output()
        .expect("pypto-build runs");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8(out.stderr).unwrap(), "");
    String::from_utf8(out.stdout).unwrap()
}

fn validator() -> Validator {
    let schema: Value = serde_json::from_str(&schema_text()).expect("the schema is JSON");
    jsonschema::draft202012::new(&schema).expect("the schema compiles")
}

/// A spec file's YAML as a JSON value, read as the checker and YAML 1.2
/// editors read it: `n`, `N`, `no`, `off` are strings, not booleans.
fn yaml(text: &str) -> Value {
    let options = serde_saphyr::options! { strict_booleans: true };
    serde_saphyr::from_str_with_options(text, options).expect("the spec is YAML")
}

/// (keyword, instance path) of each error, sorted.
fn errors(v: &Validator, text: &str) -> Vec<(String, String)> {
    let spec = yaml(text);
    let mut found: Vec<(String, String)> = v
        .iter_errors(&spec)
        .map(|e| {
            (
                e.kind().keyword().to_owned(),
                e.instance_path().as_str().to_owned(),
            )
        })
        .collect();
    found.sort();
    found
}

fn specs_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            specs_under(&path, out);
        } else if path.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            out.push(path);
        }
    }
}

#[test]
fn schema_is_a_valid_draft_2020_12_schema() {
    let text = schema_text();
    let schema: Value = serde_json::from_str(&text).unwrap();
    assert!(jsonschema::draft202012::meta::is_valid(&schema));
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    // Printed pretty, for reading and diffing.
    assert!(text.starts_with("{\n  \""), "{text}");
    assert_eq!(schema["required"], serde_json::json!(["kernels"]));
    let kernel = &schema["properties"]["kernels"]["additionalProperties"];
    assert_eq!(kernel["required"], serde_json::json!(["params"]));
    assert_eq!(
        kernel["properties"]["targets"]["items"]["enum"],
        serde_json::json!(["A2", "A3", "950PR"])
    );
    let param = &kernel["properties"]["params"]["additionalProperties"];
    assert_eq!(param["additionalProperties"], false);
    assert_eq!(
        param["properties"]["dtype"]["enum"][13],
        serde_json::json!("DT_FP8E5M2")
    );
    assert!(
        param["properties"]["shape"]["description"]
            .as_str()
            .unwrap()
            .contains("`...`")
    );
}

#[test]
fn every_valid_spec_in_the_repository_passes() {
    let package = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = package.parent().unwrap();
    let mut specs = Vec::new();
    for dir in [
        package.join("tests/specs/valid"),
        package.join("tests/specs/examples"),
        workspace.join("examples/kernels"),
        workspace.join("tests/kernels"),
    ] {
        specs_under(&dir, &mut specs);
    }
    assert!(specs.len() >= 20, "{specs:?}");
    let v = validator();
    for spec in &specs {
        let text = std::fs::read_to_string(spec).unwrap();
        assert_eq!(errors(&v, &text), [], "{}", spec.display());
    }
}

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/specs/invalid")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

fn pair(keyword: &str, path: &str) -> (String, String) {
    (keyword.to_owned(), path.to_owned())
}

#[test]
fn unknown_keys_fail_at_every_level() {
    assert_eq!(
        errors(&validator(), &fixture("unknown_keys.yaml")),
        [
            pair("additionalProperties", ""),
            pair("additionalProperties", "/kernels/relu_k"),
            pair("additionalProperties", "/kernels/relu_k/params/x"),
        ]
    );
}

#[test]
fn unknown_words_fail_their_enum() {
    // `DYNAMC` may name a dim, which only the checker knows; the schema
    // passes it.
    assert_eq!(
        errors(&validator(), &fixture("unknown_words.yaml")),
        [
            pair("enum", "/kernels/relu_k/params/x/dtype"),
            pair("enum", "/kernels/relu_k/targets/0"),
        ]
    );
}

#[test]
fn sizes_out_of_range_fail() {
    assert_eq!(
        errors(&validator(), &fixture("sizes.yaml")),
        [
            pair("anyOf", "/dims/Z"),
            pair("anyOf", "/kernels/relu_k/params/x/shape/0"),
            pair("anyOf", "/kernels/relu_k/params/x/shape/1"),
            pair("anyOf", "/kernels/relu_k/params/x/shape/2"),
            pair("anyOf", "/kernels/relu_k/params/x/shape/3"),
            pair("maximum", "/kernels/relu_k/params/y/rank"),
        ]
    );
}

#[test]
fn an_empty_list_of_targets_fails() {
    // The FP8-on-A2 error of the same fixture is a rule between keys: the
    // schema cannot say it.
    assert_eq!(
        errors(&validator(), &fixture("targets.yaml")),
        [pair("minItems", "/kernels/relu_k2/targets")]
    );
}

#[test]
fn wrong_kinds_fail() {
    let v = validator();
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("dims: { B: DYNAMIC }\n", &[("required", "")]),
        ("kernels:\n", &[("type", "/kernels")]),
        ("kernels: {}\n", &[("minProperties", "/kernels")]),
        ("kernels: [a, b]\n", &[("type", "/kernels")]),
        (
            "kernels:\n  k:\n    template: builtin/relu\n",
            &[("required", "/kernels/k")],
        ),
        (
            "kernels:\n  k:\n    doc: [a]\n    params: { y: { dtype: DT_FP32, shape: [4], output: 1 } }\n",
            &[
                ("type", "/kernels/k/doc"),
                ("type", "/kernels/k/params/y/output"),
            ],
        ),
        (
            "kernels:\n  k:\n    template: { a: 1 }\n    params: [x]\n",
            &[
                ("type", "/kernels/k/params"),
                ("type", "/kernels/k/template"),
            ],
        ),
        (
            "kernels:\n  k:\n    cores: cuba\n    blocks: 0\n    params: { x: { dtype: DT_FP32, shape: 4 } }\n",
            &[
                ("anyOf", "/kernels/k/blocks"),
                ("enum", "/kernels/k/cores"),
                ("type", "/kernels/k/params/x/shape"),
            ],
        ),
        (
            "kernels:\n  k:\n    params: { x: { dtype: DT_FP32, shape: [4] } }\n    static: { x.0: { a: 1 } }\n    options: { n: [1] }\n",
            &[
                ("anyOf", "/kernels/k/options/n"),
                ("anyOf", "/kernels/k/static/x.0"),
            ],
        ),
    ];
    for (i, (text, expected)) in cases.iter().enumerate() {
        let expected: Vec<(String, String)> = expected.iter().map(|(k, p)| pair(k, p)).collect();
        assert_eq!(errors(&v, text), expected, "{text}");
        // What the schema rejects, the checker rejects too.
        assert_eq!(check(&format!("wrong_kind_{i}"), text), 1, "{text}");
    }
    let _ = std::fs::remove_dir(scratch());
}

fn scratch() -> PathBuf {
    std::env::temp_dir().join(format!("pypto-build-schema-{}", std::process::id()))
}

/// The exit status of `pypto-build check` on `text`, written to a scratch file.
fn check(name: &str, text: &str) -> i32 {
    let dir = scratch();
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_pypto-build"))
        .arg("check")
        .arg(&path)
        .output()
        .expect("pypto-build runs")
        .status;
    let _ = std::fs::remove_file(&path);
    status.code().expect("exited normally")
}

#[test]
fn what_the_checker_accepts_the_schema_accepts() {
    // Empty optional mappings, a single static size, unquoted numeric words,
    // and an options mapping of integers and booleans.
    let v = validator();
    let text = "dims:\nkernels:\n  k:\n    source: k.cpp\n    entry: 1\n    blocks: x.numel\n    \
                cores: mixed\n    params:\n      x: { dtype: DT_FP32, shape: [DYN, STATIC, B, ...], rank: 4 }\n      \
                n: { scalar: DT_UINT32, value: x.0 }\n    static: { x.1: 8 }\n    options:\n  \
                t:\n    template: builtin/relu\n    params: { x: { dtype: DT_FP32, shape: [4] } }\n    \
                static:\n    options: { heads: 12, fast: true }\n";
    assert_eq!(errors(&v, text), []);
}
