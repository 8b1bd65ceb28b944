//! PyPTO's first practice for dynamic dims, document which are dynamic and
//! what they mean: a named dim's `doc:` and a param's `axis_docs:` reach
//! the model, `dump`, and each wrapper's rustdoc (a table of axes, their
//! markers, dims and meanings); `Builder::require_dim_docs` (and `check
//! --require-dim-docs`) makes an undocumented DYNAMIC dim an error at the
//! spec; malformed docs are located errors.

use std::path::Path;

use pypto_build::model::ParamKind;

const SPEC: &str = "\
dims:
  B: { marker: DYNAMIC, doc: \"requests in the batch\" }
  H: { marker: 64, doc: \"hidden | features\" }
  T: DYNAMIC
kernels:
  add_rows:
    template: builtin/add
    params:
      a: { dtype: DT_FP32, shape: [B, H] }
      b: { dtype: DT_FP32, shape: [B, H], axis_docs: [\"the same requests\", \"features\"] }
      out: { dtype: DT_FP32, shape: [B, H], output: true }
  relu_tokens:
    template: builtin/relu
    params:
      x: { dtype: DT_FP32, shape: [T, DYNAMIC] }
      out: { dtype: DT_FP32, shape: [T, DYNAMIC], output: true }
";

fn model() -> pypto_build::Model {
    pypto_build::check_source(Path::new("tests/specs/valid/dim_docs.yaml"), SPEC)
        .unwrap_or_else(|e| panic!("{}", e.render()))
}

#[test]
fn docs_reach_the_model_and_dump() {
    let model = model();
    let k = &model.kernels[0];
    assert_eq!(k.dims[0].doc.as_deref(), Some("requests in the batch"));
    assert_eq!(k.dims[1].doc.as_deref(), Some("hidden | features"));
    let ParamKind::Tensor { axes, .. } = &k.params[1].kind else {
        panic!("b is a tensor");
    };
    assert_eq!(axes[0].doc.as_deref(), Some("the same requests"));
    let dump = pypto_build::unstable::dump::kernel(k);
    assert!(
        dump.contains(
            "    d0  DYNAMIC             a.0 b.0 out.0  (B)\n        doc: requests in the batch\n        \
             doc b.0: the same requests\n"
        ),
        "{dump}"
    );
    assert!(dump.contains("        doc b.1: features\n"), "{dump}");
    // An unnamed DYNAMIC dim has no doc.
    assert_eq!(model.kernels[1].dims[1].doc, None);
}

#[test]
fn each_wrapper_documents_its_axes_in_a_table() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dim-docs");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("k.yaml"), SPEC).unwrap();
    let generated = pypto_build::Builder::new()
        .spec(dir.join("k.yaml"))
        .symbol_prefix("t")
        .cargo_metadata(false)
        .generate()
        .unwrap();
    let rust = &generated.rust;
    for row in [
        "/// | axis | marker | dim | meaning |",
        "/// | `a.0` | `B` (DYNAMIC) | `B` | requests in the batch |",
        "/// | `a.1` | `H` (64) | `H` | hidden \\| features |",
        "/// | `b.0` | `B` (DYNAMIC) | `B` | the same requests |",
        "/// | `x.1` | DYNAMIC | d1 |  |",
        "/// - `a.0` = `b.0` = `out.0` (`B`): DYNAMIC: any size, checked to agree at run time — \
         requests in the batch",
    ] {
        assert!(rust.contains(row), "missing {row}:\n{rust}");
    }
}

#[test]
fn an_undocumented_dynamic_dim_is_an_error_when_docs_are_required() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dim-docs-required");
    std::fs::create_dir_all(&dir).unwrap();
    let spec = dir.join("k.yaml");
    std::fs::write(&spec, SPEC).unwrap();
    let builder = pypto_build::Builder::new()
        .spec(&spec)
        .symbol_prefix("t")
        .cargo_metadata(false);
    assert!(builder.clone().generate().is_ok());
    let err = builder.require_dim_docs(true).generate().unwrap_err();
    let pypto_build::Error::Spec(problems) = err else {
        panic!("expected spec errors, got {err}");
    };
    let shown = spec.display().to_string();
    let messages: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            format!(
                "{shown}:15:36: error: kernel `relu_tokens`: DYNAMIC dim `x.0 = out.0` does not say \
                 what it counts; give `T` a doc (`T: {{ marker: DYNAMIC, doc: \"…\" }}` under \
                 `dims:`) (this build requires every DYNAMIC dim documented)"
            ),
            format!(
                "{shown}:15:39: error: kernel `relu_tokens`: DYNAMIC dim `x.1 = out.1` does not say \
                 what it counts; give the param `axis_docs:`, one string per axis (this build \
                 requires every DYNAMIC dim documented)"
            ),
        ]
    );
    // The command line says the same.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pypto-build"))
        .args(["check", "--require-dim-docs"])
        .arg(&spec)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.ends_with("error: 2 DYNAMIC dims without a doc\n"),
        "{stderr}"
    );
}
