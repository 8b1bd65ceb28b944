//! Generation without compiling: deterministic output, template errors
//! reported with the kernel and template, the variables templates see.

use std::path::{Path, PathBuf};

use pypto_build::{Builder, Error};

fn tempdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("generate-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// This package's copy of the workspace's `examples/kernels/`.
fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/specs/examples")
}

#[test]
fn generation_is_deterministic() {
    let a = Builder::new()
        .spec(examples())
        .symbol_prefix("p")
        .generate()
        .unwrap();
    let b = Builder::new()
        .spec(examples())
        .symbol_prefix("p")
        .generate()
        .unwrap();
    assert_eq!(a.rust, b.rust);
    assert_eq!(a.sources, b.sources);
    let names: Vec<&str> = a.sources.iter().map(|s| s.file_name.as_str()).collect();
    assert_eq!(
        names,
        [
            "add_bias_s0.cpp",
            "attention_kernel_s0.cpp",
            "mm_dispatch__decode_s0.cpp",
            "mm_dispatch__static_k_s0.cpp",
            "mm_dispatch__static_k_s1.cpp",
            "mm_dispatch__tiled_s0.cpp",
            "gcn_gather_s0.cpp",
            "gcn_scatter_s0.cpp",
            "gcn_mean_s0.cpp",
            "gcn_normalise_s0.cpp",
            "gcn_matmul_s0.cpp",
            "gcn_relu_s0.cpp",
            "ld_gather_f32_s0.cpp",
            "ld_rms_norm_f32_s0.cpp",
            "ld_add_rms_norm_f32_s0.cpp",
            "ld_matmul_f32_s0.cpp",
            "ld_matmul_f32_to_f16_s0.cpp",
            "ld_matmul_f16_to_f32_s0.cpp",
            "ld_swiglu_f32_s0.cpp",
            "ld_argmax_f32_s0.cpp",
            "ld_gather_f16_s0.cpp",
            "ld_rms_norm_f16_s0.cpp",
            "ld_add_rms_norm_f16_s0.cpp",
            "ld_matmul_f16_s0.cpp",
            "ld_swiglu_f16_s0.cpp",
            "ld_argmax_f16_s0.cpp",
            "ld_rope_s0.cpp",
            "ld_cache_s0.cpp",
            "ld_prefill_attention_s0.cpp",
            "ld_decode_attention_s0.cpp",
            "ld_quant_s0.cpp",
            "ld_quant_matmul_s0.cpp",
            "profile_softmax_s0.cpp",
            "profile_matmul_s0.cpp",
            "profile_flash_attention_s0.cpp"
        ]
    );
}

#[test]
fn generated_rust_names_pypto_rt_only_through_its_interface_module() {
    let g = Builder::new()
        .spec(examples())
        .symbol_prefix("p")
        .generate()
        .unwrap();
    // The version check comes before anything that names the interface.
    let check = "const _: () = ::pypto_rt::__private::require_interface::<3>();\n";
    let at = g.rust.find(check).expect("the interface check");
    assert!(!g.rust[..at].contains("::pypto_rt::"), "{}", g.rust);
    let mut rest = &g.rust[at + check.len()..];
    assert!(rest.contains("::pypto_rt::__private::v3::launch("));
    // A kernel with a workspace (the examples' flash attention) needs v4,
    // checked next, for its one item of v4.
    let check_v4 = "const _: () = ::pypto_rt::__private::require_interface::<4>();\n";
    let at_v4 = rest.find(check_v4).expect("the v4 check");
    assert!(!rest[..at_v4].contains("::pypto_rt::"));
    rest = &rest[at_v4 + check_v4.len()..];
    assert!(rest.contains("::pypto_rt::__private::v4::launch_with_workspace("));
    // A kernel with variants (the examples' mm_dispatch) needs v5, checked
    // next, for the wrapper that chooses.
    let check_v5 = "const _: () = ::pypto_rt::__private::require_interface::<5>();\n";
    let at_v5 = rest.find(check_v5).expect("the v5 check");
    assert!(!rest[..at_v5].contains("::pypto_rt::"));
    rest = &rest[at_v5 + check_v5.len()..];
    assert!(rest.contains("::pypto_rt::__private::v5::note_variant("));
    // Every kernel's `SIZES` carries its `equals:` relations: v7, checked
    // next.
    let check_v7 = "const _: () = ::pypto_rt::__private::require_interface::<7>();\n";
    let at_v7 = rest.find(check_v7).expect("the v7 check");
    assert!(!rest[..at_v7].contains("::pypto_rt::"));
    rest = &rest[at_v7 + check_v7.len()..];
    assert!(rest.contains("pub const SIZES: ::pypto_rt::__private::v7::KernelSizes"));
    // Outside doc comments, every path into pypto-rt goes through v3, but
    // the workspace launch, the choosing wrappers and `SIZES`.
    for line in rest.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for (i, _) in line.match_indices("pypto_rt::") {
            assert!(
                line[i..].starts_with("pypto_rt::__private::v3::")
                    || line[i..].starts_with("pypto_rt::__private::v4::launch_with_workspace(")
                    || line[i..].starts_with("pypto_rt::__private::v5::")
                    || line[i..].starts_with("pypto_rt::__private::v7::KernelSizes"),
                "a path outside the interface module: {line}"
            );
        }
    }
}

fn user_kernel(dir: &Path, template: &str) -> Builder {
    std::fs::write(dir.join("t.hbs"), template).unwrap();
    std::fs::write(
        dir.join("k.yaml"),
        "kernels:\n  k:\n    template: t.hbs\n    options: { unroll: 4, fast: true }\n    params:\n      x: { dtype: DT_FP16, shape: [DYNAMIC, 8] }\n      alpha: { scalar: DT_FP32 }\n      y: { dtype: DT_FP16, shape: [DYNAMIC, 8], output: true }\n",
    )
    .unwrap();
    Builder::new().spec(dir.join("k.yaml")).symbol_prefix("p")
}

#[test]
fn user_templates_see_the_documented_variables() {
    let dir = tempdir("variables");
    let template = "// {{kernel}} {{symbol}} {{dtype}} | {{entry_params}} | x: {{args.x.name}} {{args.x.type}} rank {{args.x.rank}} axes {{args.x.axes.[0]}},{{args.x.axes.[1]}} numel {{args.x.numel}} outer {{args.x.outer}} inner {{args.x.inner}} | alpha: {{args.alpha.value}} | y output {{args.y.output}} index {{args.y.index}} | options {{options.unroll}} {{options.fast}} | dims {{#each dims}}{{index}}={{expr}} {{/each}}\n";
    let generated = user_kernel(&dir, template).generate().unwrap();
    let text = &generated.sources[0].text;
    assert!(
        text.contains(
            "// k pypto_x1_pk1_k_s0 half | GM_ADDR x, GM_ADDR y, GM_ADDR pypto_tiling_gm | x: x half rank 2 axes pypto_tiling.dim[0],8u numel (static_cast<uint64_t>(pypto_tiling.dim[0]) * static_cast<uint64_t>(8u)) outer (static_cast<uint64_t>(pypto_tiling.dim[0])) inner 8u | alpha: pypto_scalar<float>(pypto_tiling.scalar[0]) | y output true index 1 | options 4 true | dims 0=pypto_tiling.dim[0] 1=8u 2=pypto_tiling.dim[1] 3=8u\n"
        ),
        "{text}"
    );
    assert!(
        generated.inputs.contains(&dir.join("t.hbs")),
        "{:?}",
        generated.inputs
    );
}

#[test]
fn template_errors_name_the_kernel_and_template() {
    let dir = tempdir("errors");
    let err = user_kernel(&dir, "{{#if kernel}}unclosed\n")
        .generate()
        .unwrap_err();
    let Error::Template {
        kernel, template, ..
    } = &err
    else {
        panic!("expected a template error, got {err}");
    };
    assert_eq!(kernel, "k");
    assert_eq!(template, &dir.join("t.hbs").display().to_string());

    let t = dir.join("t.hbs").display().to_string();
    let spec = dir.join("k.yaml").display().to_string();
    assert_eq!(
        err.to_string(),
        format!(
            "{t}:2:1: error: template syntax: the template ends inside a block or tag \
             (a `{{{{#…}}}}` without its `{{{{/…}}}}`?)\n  |\n2 | \n  | ^\n\
             note: while rendering template `{t}` for kernel `k` ({spec}:2:3), \
             specialisation: no STATIC dims"
        )
    );

    // Strict mode: a misspelt variable is an error, not empty text; it is
    // located in the template, with the names that exist there.
    let err = user_kernel(&dir, "// line 1\n  x = {{args.x.nmae}};\n")
        .generate()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{t}:2:7: error: unknown variable `args.x.nmae`; available: `args.x.axes`, \
             `args.x.index`, `args.x.inner`, `args.x.name`, `args.x.numel`, `args.x.outer`, \
             `args.x.output`, `args.x.rank`, `args.x.type`\n  |\n2 |   x = {{{{args.x.nmae}}}};\n  |       ^\n\
             note: while rendering template `{t}` for kernel `k` ({spec}:2:3), \
             specialisation: no STATIC dims"
        )
    );
}

#[test]
fn a_missing_out_dir_is_a_clear_error() {
    if std::env::var_os("OUT_DIR").is_some() {
        return; // only meaningful outside a build script
    }
    let err = Builder::new()
        .spec(examples())
        .cargo_metadata(false)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "OUT_DIR is not set: call Builder::build from a build script, or set Builder::out_dir"
    );
}

#[test]
fn too_many_params_is_a_spec_error() {
    let mut src = String::from("kernels:\n  k:\n    template: builtin/relu\n    params:\n");
    for i in 0..65 {
        src.push_str(&format!(
            "      p{i}: {{ dtype: DT_FP32, shape: [4], output: true }}\n"
        ));
    }
    let err = pypto_build::check_source(Path::new("k.yaml"), &src).unwrap_err();
    assert_eq!(
        err.0[0].to_string(),
        "k.yaml:2:3: error: kernel `k`: has 65 params; at most 64 are supported"
    );
}

#[test]
fn only_dynamic_dims_travel_at_run_time() {
    let dir = tempdir("fixed");
    std::fs::write(
        dir.join("k.yaml"),
        "kernels:\n  fixed:\n    template: builtin/add\n    params:\n      \
         a: { dtype: DT_FP32, shape: [4, 256] }\n      b: { dtype: DT_FP32, shape: [4, 256] }\n      \
         out: { dtype: DT_FP32, shape: [4, 256], output: true }\n  \
         mixed:\n    template: builtin/add\n    params:\n      \
         a: { dtype: DT_FP32, shape: [STATIC, DYNAMIC] }\n      b: { dtype: DT_FP32, shape: [STATIC, DYNAMIC] }\n      \
         out: { dtype: DT_FP32, shape: [STATIC, DYNAMIC], output: true }\n    static: { a.0: [2] }\n",
    )
    .unwrap();
    let g = Builder::new()
        .spec(&dir)
        .symbol_prefix("p")
        .generate()
        .unwrap();
    let source = |name: &str| &g.sources.iter().find(|s| s.kernel == name).unwrap().text;
    // All fixed: no dim to compare or send; the kernel sees constants.
    assert!(g.rust.contains(
        "name: \"fixed\",\n        params: &[\"a\", \"b\", \"out\"],\n        dims: &[\n        ],"
    ));
    assert!(source("fixed").contains("struct PyptoTiling {\n};"));
    assert!(!source("fixed").contains("pypto_tiling.dim"));
    // One DYNAMIC dim among a STATIC one: it alone is checked, in slot 0.
    assert!(g.rust.contains(
        "dims: &[\n            ::pypto_rt::__private::v3::DimDesc { axes: &[(0, 1), (1, 1), (2, 1)], why: \"builtin/add ties these axes together\" },\n        ],"
    ));
    assert!(source("mixed").contains("struct PyptoTiling {\n    uint32_t dim[1];\n};"));
    assert!(source("mixed").contains("pypto_tiling.dim[0]"));
    assert!(!source("mixed").contains("pypto_tiling.dim[1]"));
}

#[test]
fn kernels_differing_only_in_case_write_distinct_files() {
    let dir = tempdir("case");
    let kernel = |name: &str| {
        format!(
            "  {name}:\n    template: builtin/relu\n    params:\n      x: {{ dtype: DT_FP32, shape: [STATIC] }}\n      y: {{ dtype: DT_FP32, shape: [STATIC], output: true }}\n    static: {{ x.0: [4, 8] }}\n"
        )
    };
    let src = format!(
        "kernels:\n{}{}{}{}",
        kernel("same"),
        kernel("Same"),
        kernel("other"),
        kernel("SAME")
    );
    std::fs::write(dir.join("k.yaml"), src).unwrap();
    let generated = Builder::new()
        .spec(dir.join("k.yaml"))
        .symbol_prefix("p")
        .generate()
        .unwrap();
    let names: Vec<&str> = generated
        .sources
        .iter()
        .map(|s| s.file_name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "same_s0.cpp",
            "same_s1.cpp",
            "Same__2_s0.cpp",
            "Same__2_s1.cpp",
            "other_s0.cpp",
            "other_s1.cpp",
            "SAME__3_s0.cpp",
            "SAME__3_s1.cpp"
        ]
    );
    let mut folded: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
    folded.sort();
    folded.dedup();
    assert_eq!(folded.len(), names.len());
}
