//! Kernels with variants (`variants:`, `dispatch: runtime`; issue 27's
//! shape-conditioned computation): each variant is checked as a kernel of
//! its own, the kernel has one wrapper that chooses among them, `dump`
//! prints the decision table, and sizes no variant accepts are a warning
//! naming them. The located errors are in specs/invalid/variants.yaml; the
//! calls themselves in the workspace's tests/dispatch.rs.

use std::path::Path;

const SPEC: &str = "\
dims:
  M: { marker: DYNAMIC, doc: \"rows\" }
  K: { marker: DYNAMIC, doc: \"the reduction\" }
kernels:
  mm:
    template: builtin/matmul
    params:
      a: { dtype: DT_FP32, shape: [M, K] }
      b: { dtype: DT_FP32, shape: [K, 32] }
      out: { dtype: DT_FP32, shape: [M, 32], output: true }
    variants:
      - { name: small_m, when: \"M <= 16 && !(K > 4096)\", options: { cores: 2 } }
      - { name: fast_k, dims: { K: STATIC }, static: { K: [64, 128] } }
      - { name: tiled, when: \"M % 16 == 0 || a.0 > 100\" }
";

fn model() -> pypto_build::Model {
    pypto_build::check_source(Path::new("tests/specs/valid/variants.yaml"), SPEC)
        .unwrap_or_else(|e| panic!("{}", e.render()))
}

#[test]
fn each_variant_is_a_kernel_of_its_own_in_the_model() {
    let model = model();
    let names: Vec<&str> = model.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["mm__small_m", "mm__fast_k", "mm__tiled"]);
    let fast = &model.kernels[1];
    assert_eq!(
        fast.specialisations.len(),
        2,
        "K is STATIC in this variant only"
    );
    let v = fast.variant.as_ref().unwrap();
    assert_eq!(
        (v.kernel.as_str(), v.name.as_str(), v.index, v.count),
        ("mm", "fast_k", 1, 3)
    );
    assert_eq!(
        model.kernels[0]
            .variant
            .as_ref()
            .unwrap()
            .when
            .as_ref()
            .unwrap()
            .text,
        "M <= 16 && !(K > 4096)"
    );
    // M = 1 with K = 4097: small but K too large, K not built, M not a
    // multiple of 16 nor above 100.
    assert_eq!(
        model.warnings(),
        [
            "tests/specs/valid/variants.yaml:12:17: kernel `mm`: no variant accepts M = 1, K = 4097; \
          a call with these sizes returns `Error::NoVariant` (end the list with a variant \
          without `when` to catch every call)"
        ]
    );
}

#[test]
fn conditions_evaluate_as_written() {
    let model = model();
    let when = |i: usize| {
        model.kernels[i]
            .variant
            .as_ref()
            .unwrap()
            .when
            .clone()
            .unwrap()
    };
    let small = when(0);
    let tiled = when(2);
    // Sizes by (param, axis): a.0 and out.0 are M, a.1 and b.0 are K.
    let at = |m: u64, k: u64| {
        move |p: usize, a: usize| {
            if (p, a) == (0, 1) || (p, a) == (1, 0) {
                k
            } else {
                m
            }
        }
    };
    assert!(small.expr.holds(&at(16, 4096)));
    assert!(!small.expr.holds(&at(16, 4097)));
    assert!(!small.expr.holds(&at(17, 1)));
    assert!(tiled.expr.holds(&at(32, 1)));
    assert!(tiled.expr.holds(&at(101, 1)));
    assert!(!tiled.expr.holds(&at(100, 1)));
}

#[test]
fn dump_prints_the_decision_table_before_the_variants() {
    let dump = pypto_build::unstable::dump::model(&model());
    assert!(
        dump.starts_with(
            "kernel mm (chooses per call)\n  \
             1. small_m  when M <= 16 && !(K > 4096)  -> kernel mm__small_m\n  \
             2. fast_k   built for K = 64 | 128  -> kernel mm__fast_k\n  \
             3. tiled    when M % 16 == 0 || a.0 > 100  -> kernel mm__tiled\n  \
             otherwise Error::NoVariant (e.g. M = 1, K = 4097)\n\nkernel mm__small_m\n"
        ),
        "{dump}"
    );
    assert!(
        dump.contains("  variant   fast_k of mm (2 of 3)\n"),
        "{dump}"
    );
}

#[test]
fn the_kernel_has_one_wrapper_that_tries_its_variants_in_order() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("variants");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("k.yaml"), SPEC).unwrap();
    let generated = pypto_build::Builder::new()
        .spec(dir.join("k.yaml"))
        .symbol_prefix("t")
        .cargo_metadata(false)
        .generate()
        .unwrap();
    let rust = &generated.rust;
    assert_eq!(rust.matches("\npub fn ").count(), 1, "{rust}");
    assert!(rust.contains("pub fn mm(\n"), "{rust}");
    // K is STATIC in one variant, so the wrapper takes it at run time.
    assert!(
        rust.contains("    a: impl ::pypto_rt::__private::v5::AsInput<f32, (usize, usize)>,\n"),
        "{rust}"
    );
    let tried: Vec<usize> = ["'__pypto_v0: {", "'__pypto_v1: {", "'__pypto_v2: {"]
        .iter()
        .map(|label| {
            rust.find(label)
                .unwrap_or_else(|| panic!("{label}:\n{rust}"))
        })
        .collect();
    assert!(tried.windows(2).all(|w| w[0] < w[1]), "{rust}");
    for row in [
        "/// | `small_m` | `M <= 16 && !(K > 4096)` | `builtin/matmul` (bias: false, transpose_b: false, cores: 2) |  |",
        "/// | `fast_k` | (its STATIC sizes) | `builtin/matmul` (bias: false, transpose_b: false, cores: 24) | K = 64, 128 |",
        "/// | `tiled` | `M % 16 == 0 \\|\\| a.0 > 100` | `builtin/matmul` (bias: false, transpose_b: false, cores: 24) |  |",
        "const _: () = ::pypto_rt::__private::require_interface::<5>();",
        "\"variant `small_m` needs `M <= 16 && !(K > 4096)`\", \"variant `fast_k` was built for K = 64 or 128\"",
    ] {
        assert!(rust.contains(row), "missing {row}:\n{rust}");
    }
}

#[test]
fn check_prints_the_warning_and_a_wrapper_name_is_declared_once_across_files() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("variants-cli");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.yaml"), SPEC).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pypto-build"))
        .arg("check")
        .arg(dir.join("a.yaml"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("a.yaml:12:17: kernel `mm`: no variant accepts M = 1, K = 4097;"),
        "{stderr}"
    );
    // A kernel `mm` in another file clashes with the wrapper, not with a
    // variant's compiled name.
    std::fs::write(
        dir.join("b.yaml"),
        "kernels:\n  mm:\n    template: builtin/relu\n    params:\n      x: { dtype: DT_FP32, shape: [DYNAMIC] }\n      y: { dtype: DT_FP32, shape: [DYNAMIC], output: true }\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pypto-build"))
        .arg("check")
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("b.yaml:2:3: error: kernel `mm` is declared twice: here and at "),
        "{stderr}"
    );
}

/// The wrapper's and `SIZES`' `equals:` relations of a kernel with
/// variants, generated once beside `SIZES`: the variants' one list when
/// they agree, else each variant's in turn, a range each.
fn variants_equations(variants: &str) -> String {
    let spec = format!(
        "\
kernels:
  fa:
    template: builtin/flash_attention
    options: {{ heads: 2, kv_heads: 2 }}
    params:
      q:   {{ dtype: DT_FP16, shape: [1, DYNAMIC, DYNAMIC] }}
      k:   {{ dtype: DT_FP16, shape: [1, DYNAMIC, DYNAMIC] }}
      v:   {{ dtype: DT_FP16, shape: [1, DYNAMIC, DYNAMIC] }}
      out: {{ dtype: DT_FP16, shape: [1, DYNAMIC, DYNAMIC], output: true }}
    variants:
{variants}"
    );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("variants-equals");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("k.yaml"), spec).unwrap();
    pypto_build::Builder::new()
        .spec(dir.join("k.yaml"))
        .symbol_prefix("t")
        .cargo_metadata(false)
        .generate()
        .unwrap()
        .rust
}

#[test]
fn variants_relations_are_one_static_that_sizes_carries() {
    // Variants of the same heads share one relation; variants of different
    // heads each check their own range of the static, and `SIZES` carries
    // both.
    let cases: [(&str, [&str; 4]); 2] = [
        (
            "      - { name: short, when: \"q.1 <= 64\", options: { heads: 2, kv_heads: 2, cores: 2 } }\n      - { name: long }\n",
            [
                "pub mod fa {\n    /// The relations the wrapper checks before it launches.\n    pub(super) static __PYPTO_EQUATIONS: [::pypto_rt::__private::v6::Equation; 1] = [",
                "::pypto_rt::__private::v6::check_equations(&__PYPTO_DESC_V0, &__pypto_args, &fa::__PYPTO_EQUATIONS)?;",
                "::pypto_rt::__private::v6::check_equations(&__PYPTO_DESC_V1, &__pypto_args, &fa::__PYPTO_EQUATIONS)?;",
                "        equations: &__PYPTO_EQUATIONS,\n",
            ],
        ),
        (
            "      - { name: short, when: \"q.1 <= 64\", options: { heads: 4, kv_heads: 2 } }\n      - { name: long }\n",
            [
                "pub(super) static __PYPTO_EQUATIONS: [::pypto_rt::__private::v6::Equation; 2] = [",
                "&fa::__PYPTO_EQUATIONS[0..1])?;",
                "&fa::__PYPTO_EQUATIONS[1..2])?;",
                "        equations: &__PYPTO_EQUATIONS,\n",
            ],
        ),
    ];
    for (variants, rows) in cases {
        let rust = variants_equations(variants);
        assert_eq!(
            rust.matches("static __PYPTO_EQUATIONS").count(),
            1,
            "{rust}"
        );
        for row in rows {
            assert!(rust.contains(row), "missing {row}:\n{rust}");
        }
    }
}
