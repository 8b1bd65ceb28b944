//! Each dim marker and each spec error: exact message, exact line:column.

use std::path::Path;

use pypto_build::model::{AxisKind, DType, DimSize, Model, ParamKind, Target, TemplateRef};

const PATH: &str = "kernels/test.yaml";

fn check(src: &str) -> Result<Model, Vec<String>> {
    pypto_build::check_source(Path::new(PATH), src).map_err(|d| {
        d.iter()
            .map(|d| {
                assert_eq!(d.location.path, Path::new(PATH));
                format!("{}: {}", d.location.pos, d.message)
            })
            .collect()
    })
}

fn model(src: &str) -> Model {
    check(src).unwrap_or_else(|e| panic!("expected a valid spec, got:\n{}", e.join("\n")))
}

fn errors(src: &str) -> Vec<String> {
    match check(src) {
        Ok(m) => panic!("expected errors, got a valid model: {m:?}"),
        Err(e) => e,
    }
}

/// A relu kernel (x -> y) whose x shape, y shape and `static:` are given.
fn relu(x_shape: &str, y_shape: &str, extra: &str) -> String {
    format!(
        "kernels:\n  k:\n    template: builtin/relu\n    params:\n      x: {{ dtype: DT_FP32, shape: {x_shape} }}\n      y: {{ dtype: DT_FP32, shape: {y_shape}, output: true }}\n{extra}"
    )
}

fn axis_kinds(m: &Model, param: usize) -> Vec<AxisKind> {
    match &m.kernels[0].params[param].kind {
        ParamKind::Tensor { axes, .. } => axes.iter().map(|a| a.kind).collect(),
        _ => panic!("not a tensor"),
    }
}

// ---- markers ---------------------------------------------------------------

#[test]
fn dynamic_and_dyn_are_the_same_marker() {
    let m = model(&relu("[DYNAMIC, DYN]", "[DYN, DYNAMIC]", ""));
    assert_eq!(axis_kinds(&m, 0), [AxisKind::Dynamic, AxisKind::Dynamic]);
    let k = &m.kernels[0];
    assert_eq!(k.dims.len(), 2);
    assert!(k.dims.iter().all(|d| d.size == DimSize::Dynamic));
    assert_eq!(k.specialisations.len(), 1);
    assert!(k.specialisations[0].0.is_empty());
}

#[test]
fn static_axes_take_their_sizes_from_static() {
    let m = model(&relu(
        "[DYNAMIC, STATIC]",
        "[DYNAMIC, STATIC]",
        "    static: { x.1: [128, 256] }\n",
    ));
    let k = &m.kernels[0];
    // relu ties y to x, so y.1 is the same dim and builds the same sizes.
    assert_eq!(k.dims[1].size, DimSize::Static(vec![128, 256]));
    assert_eq!(k.dims[1].axes, [(0, 1), (1, 1)]);
    let specs: Vec<_> = k.specialisations.iter().map(|s| s.0.clone()).collect();
    assert_eq!(specs, [vec![(1, 128)], vec![(1, 256)]]);
}

#[test]
fn a_single_static_size_needs_no_list() {
    let m = model(&relu("[STATIC]", "[STATIC]", "    static: { x.0: 64 }\n"));
    assert_eq!(m.kernels[0].dims[0].size, DimSize::Static(vec![64]));
}

#[test]
fn fixed_sizes_are_fixed_dims() {
    let m = model(&relu("[DYNAMIC, 64]", "[DYNAMIC, 64]", ""));
    assert_eq!(axis_kinds(&m, 0), [AxisKind::Dynamic, AxisKind::Fixed(64)]);
    assert_eq!(m.kernels[0].dims[1].size, DimSize::Fixed(64));
}

#[test]
fn ellipsis_expands_to_static_axes_up_to_rank() {
    let src = "kernels:\n  k:\n    template: builtin/relu\n    params:\n      x: { dtype: DT_FP32, shape: [DYNAMIC, ...], rank: 3 }\n      y: { dtype: DT_FP32, shape: [DYNAMIC, ...], rank: 3, output: true }\n    static: { x.1: [2], x.2: [4, 8] }\n";
    let m = model(src);
    assert_eq!(
        axis_kinds(&m, 1),
        [AxisKind::Dynamic, AxisKind::Static, AxisKind::Static]
    );
    let k = &m.kernels[0];
    assert_eq!(k.specialisations.len(), 2);
    match &k.params[1].kind {
        ParamKind::Tensor { axes, .. } => assert_eq!(axes[2].written, "..."),
        _ => unreachable!(),
    }
}

#[test]
fn ellipsis_may_stand_for_no_axes() {
    let m = model(
        &relu("[DYNAMIC]", "[DYNAMIC, ...]", "").replace("output: true", "rank: 1, output: true"),
    );
    assert_eq!(axis_kinds(&m, 1), [AxisKind::Dynamic]);
}

#[test]
fn named_dims_are_one_dim_across_params() {
    let src = "dims:\n  B: DYNAMIC\n  H: STATIC\n  N: 16\nkernels:\n  k:\n    template: t.hbs\n    params:\n      a: { dtype: DT_FP16, shape: [B, H, N] }\n      b: { dtype: DT_FP16, shape: [B, DYNAMIC] }\n      c: { dtype: DT_FP16, shape: [H], output: true }\n    static: { H: [8, 16] }\n";
    let dir = tempdir();
    std::fs::write(dir.join("t.hbs"), "").unwrap();
    let m = pypto_build::check_source(&dir.join("k.yaml"), src).unwrap();
    let k = &m.kernels[0];
    assert_eq!(k.template, TemplateRef::File(dir.join("t.hbs")));
    let names: Vec<_> = k.dims.iter().map(|d| d.name.clone()).collect();
    assert_eq!(
        names,
        [Some("B".into()), Some("H".into()), Some("N".into()), None]
    );
    assert_eq!(k.dims[0].axes, [(0, 0), (1, 0)]);
    assert_eq!(k.dims[1].axes, [(0, 1), (2, 0)]);
    assert_eq!(k.dims[1].size, DimSize::Static(vec![8, 16]));
    assert_eq!(k.dims[2].size, DimSize::Fixed(16));
    assert_eq!(k.specialisations.len(), 2);
}

#[test]
fn specialisations_are_the_product_of_static_dims() {
    let src = "dims:\n  H: STATIC\n  W: STATIC\nkernels:\n  k:\n    template: builtin/add\n    params:\n      a: { dtype: DT_FP32, shape: [H, STATIC] }\n      b: { dtype: DT_FP32, shape: [H, STATIC] }\n      c: { dtype: DT_FP32, shape: [H, STATIC], output: true }\n    static: { H: [1, 2, 4], a.1: [8, 16] }\n";
    let k = &model(src).kernels[0];
    let specs: Vec<_> = k.specialisations.iter().map(|s| s.0.clone()).collect();
    assert_eq!(
        specs,
        [
            vec![(0, 1), (1, 8)],
            vec![(0, 1), (1, 16)],
            vec![(0, 2), (1, 8)],
            vec![(0, 2), (1, 16)],
            vec![(0, 4), (1, 8)],
            vec![(0, 4), (1, 16)],
        ]
    );
}

// ---- relations never change a marker ---------------------------------------

#[test]
fn a_dynamic_dim_tied_to_a_fixed_axis_is_an_error_naming_the_relation() {
    // The issue's reproducer: attention ties q, k, v and out axis by axis,
    // so `S` would have become fixed at 1 and `k` a `Const<1>` in Rust.
    let src = "dims:\n  B: DYNAMIC\n  S: DYNAMIC\nkernels:\n  attn:\n    template: builtin/attention\n    params:\n      q: { dtype: DT_FP32, shape: [B, 1, 256] }\n      k: { dtype: DT_FP32, shape: [B, S, 256] }\n      v: { dtype: DT_FP32, shape: [B, S, 256] }\n      out: { dtype: DT_FP32, shape: [B, 1, 256], output: true }\n";
    assert_eq!(
        errors(src),
        [
            "9:39: kernel `attn`: `k.1` (the dim `S`) is declared DYNAMIC, but builtin/attention makes it one dim with `q.1`, which is fixed at 1: `same_shape: [q, k, v, out]` (builtin/attention.hbs:20:5) ties `k.1` to `q.1`; a template's relations cannot change how the spec declares an axis, so declare both alike"
        ]
    );
    // An unnamed DYNAMIC axis the same way.
    let src = relu("[DYNAMIC, 4]", "[8, 4]", "");
    assert_eq!(
        errors(&src),
        [
            "5:36: kernel `k`: `x.0` is declared DYNAMIC, but builtin/relu makes it one dim with `y.0`, which is fixed at 8: `same_shape: [x, out]` (builtin/relu.hbs:7:5) ties `x.0` to `y.0`; a template's relations cannot change how the spec declares an axis, so declare both alike"
        ]
    );
}

#[test]
fn a_static_axis_tied_to_a_fixed_one_is_an_error() {
    // PyPTO's add_bias as PyPTO writes it: x.1 is STATIC but is bias.0,
    // fixed at 128, and out's `...` too.
    let src = "dims:\n  HIDDEN_SIZE: 128\nkernels:\n  add_bias:\n    template: builtin/add_bias\n    params:\n      x:    { dtype: DT_FP32, shape: [DYNAMIC, STATIC] }\n      bias: { dtype: DT_FP32, shape: [HIDDEN_SIZE] }\n      out:  { dtype: DT_FP32, shape: [DYNAMIC, ...], rank: 2, output: true }\n    static: { x.1: [128] }\n";
    assert_eq!(
        errors(src),
        [
            "7:48: kernel `add_bias`: `x.1` is declared STATIC, but builtin/add_bias makes it one dim with `bias.0` (the dim `HIDDEN_SIZE`), which is fixed at 128: `same_dim: [bias.0, x.last]` (builtin/add_bias.hbs:9:5) ties `x.1` to `bias.0`; a template's relations cannot change how the spec declares an axis, so declare both alike"
        ]
    );
    // Written as what they are, the axes are one fixed dim.
    let src = src
        .replace("[DYNAMIC, STATIC]", "[DYNAMIC, HIDDEN_SIZE]")
        .replace("[DYNAMIC, ...], rank: 2", "[DYNAMIC, HIDDEN_SIZE]")
        .replace("    static: { x.1: [128] }\n", "");
    let k = &model(&src).kernels[0];
    assert_eq!(k.dims[1].size, DimSize::Fixed(128));
    assert_eq!(k.dims[1].axes, [(0, 1), (1, 0), (2, 1)]);
    // `...` is STATIC, and says so.
    let src =
        relu("[DYNAMIC, 4]", "[DYNAMIC, ...]", "").replace("output: true", "rank: 2, output: true");
    assert_eq!(
        errors(&src),
        [
            "6:45: kernel `k`: `y.1` is declared STATIC (by `...`), but builtin/relu makes it one dim with `x.1`, which is fixed at 4: `same_shape: [x, out]` (builtin/relu.hbs:7:5) ties `y.1` to `x.1`; a template's relations cannot change how the spec declares an axis, so declare both alike"
        ]
    );
}

#[test]
fn a_static_axis_tied_to_a_dynamic_one_is_an_error() {
    // Either way round: the first axis of the dim sets what the rest must be.
    let src = relu(
        "[DYNAMIC, STATIC]",
        "[DYNAMIC, DYN]",
        "    static: { x.1: [8] }\n",
    );
    assert_eq!(
        errors(&src),
        [
            "6:45: kernel `k`: `y.1` is declared DYNAMIC, but builtin/relu makes it one dim with `x.1`, which is declared STATIC: `same_shape: [x, out]` (builtin/relu.hbs:7:5) ties `y.1` to `x.1`; a template's relations cannot change how the spec declares an axis, so declare both alike"
        ]
    );
    let src = relu(
        "[DYNAMIC, DYNAMIC]",
        "[DYNAMIC, STATIC]",
        "    static: { y.1: [8] }\n",
    );
    assert_eq!(
        errors(&src),
        [
            "6:45: kernel `k`: `y.1` is declared STATIC, but builtin/relu makes it one dim with `x.1`, which is declared DYNAMIC: `same_shape: [x, out]` (builtin/relu.hbs:7:5) ties `y.1` to `x.1`; a template's relations cannot change how the spec declares an axis, so declare both alike"
        ]
    );
}

#[test]
fn scalars_dtypes_targets_and_doc() {
    let src = "kernels:\n  k:\n    doc: \"Scales x.\"\n    template: builtin/relu\n    targets: [950PR]\n    params:\n      x: { dtype: DT_FP8E4M3, shape: [4] }\n      y: { dtype: DT_FP8E5M2, shape: [4], output: true }\n";
    // relu is not written for FP8: the dtype passes the target check and
    // fails the template's.
    assert_eq!(
        errors(src),
        [
            "7:19: kernel `k`, param `x`: builtin/relu is written for DT_FP32, DT_FP16, DT_BF16, not DT_FP8E4M3",
            "8:19: kernel `k`, param `y`: builtin/relu is written for DT_FP32, DT_FP16, DT_BF16, not DT_FP8E5M2",
        ]
    );
    let dir = tempdir();
    std::fs::write(dir.join("scale.hbs"), "").unwrap();
    let src = "kernels:\n  k:\n    doc: \"Scales x.\"\n    template: scale.hbs\n    targets: [950PR, A2]\n    params:\n      x: { dtype: DT_INT64, shape: [4] }\n      alpha: { scalar: DT_BF16 }\n      y: { dtype: DT_BOOL, shape: [4], output: true }\n";
    let m = pypto_build::check_source(&dir.join("k.yaml"), src).unwrap();
    let k = &m.kernels[0];
    assert_eq!(k.doc.as_deref(), Some("Scales x."));
    assert_eq!(k.targets, [Target::A2, Target::Ascend950PR]);
    assert_eq!(k.params[1].kind, ParamKind::Scalar(DType::Bf16));
    assert_eq!(k.params[1].name, "alpha");
}

#[test]
fn default_targets_are_all_three() {
    let m = model(&relu("[4]", "[4]", ""));
    assert_eq!(m.kernels[0].targets, Target::ALL);
}

// ---- errors ----------------------------------------------------------------

#[test]
fn unknown_marker_suggests_the_nearest() {
    assert_eq!(
        errors(&relu("[DYNAMC, 4]", "[DYNAMIC, 4]", "")),
        [
            "5:36: kernel `k`, param `x`, shape[0]: unknown dim marker `DYNAMC`; expected DYNAMIC, DYN, STATIC, a positive integer, `...` or a name from `dims` — did you mean `DYNAMIC`?"
        ]
    );
}

#[test]
fn unknown_marker_suggests_a_dim_name() {
    let src = "dims:\n  HIDDEN: 768\nkernels:\n  k:\n    template: builtin/relu\n    params:\n      x: { dtype: DT_FP32, shape: [HIDEN] }\n      y: { dtype: DT_FP32, shape: [HIDDEN], output: true }\n";
    assert_eq!(
        errors(src),
        [
            "7:36: kernel `k`, param `x`, shape[0]: unknown dim marker `HIDEN`; expected DYNAMIC, DYN, STATIC, a positive integer, `...` or a name from `dims` — did you mean `HIDDEN`?"
        ]
    );
}

#[test]
fn unknown_keys_are_reported_with_a_suggestion() {
    let src = "kernels:\n  k:\n    templat: builtin/relu\n    params:\n      x: { dtype: DT_FP32, shpe: [4] }\n      y: { dtype: DT_FP32, shape: [4], output: true }\nkernal: {}\n";
    assert_eq!(
        errors(src),
        [
            "2:3: kernel `k`: has no `template`; give `builtin/NAME` or a path relative to the spec file",
            "3:5: kernel `k`: unknown key `templat`; expected `doc`, `template`, `source`, `entry`, `template_args`, `tiling`, `blocks`, `cores`, `targets`, `params`, `static`, `options`, `defines`, `dispatch` or `variants` — did you mean `template`?",
            "5:7: kernel `k`, param `x`: a tensor needs a `shape`, e.g. `shape: [DYNAMIC, 128]`",
            "5:28: kernel `k`, param `x`: unknown key `shpe`; expected `dtype`, `shape`, `axis_docs`, `rank`, `output`, `scalar` or `value` — did you mean `shape`?",
            "7:1: spec file: unknown key `kernal`; expected `dims` or `kernels` — did you mean `kernels`?",
        ]
    );
}

#[test]
fn unknown_dtype_and_target() {
    let src = "kernels:\n  k:\n    template: builtin/relu\n    targets: [A2, 910B]\n    params:\n      x: { dtype: DT_FLOAT32, shape: [4] }\n      y: { dtype: dt_fp32, shape: [4], output: true }\n";
    assert_eq!(
        errors(src),
        [
            "4:19: kernel `k`, `targets`: unknown target `910B`; expected A2, A3 or 950PR",
            "6:19: kernel `k`, param `x`, `dtype`: unknown dtype `DT_FLOAT32`; expected one of DT_FP32, DT_FP16, DT_BF16, DT_INT8, DT_INT16, DT_INT32, DT_INT64, DT_UINT8, DT_UINT16, DT_UINT32, DT_UINT64, DT_BOOL, DT_FP8E4M3, DT_FP8E5M2",
            "7:19: kernel `k`, param `y`, `dtype`: unknown dtype `dt_fp32`; expected one of DT_FP32, DT_FP16, DT_BF16, DT_INT8, DT_INT16, DT_INT32, DT_INT64, DT_UINT8, DT_UINT16, DT_UINT32, DT_UINT64, DT_BOOL, DT_FP8E4M3, DT_FP8E5M2 — did you mean `DT_FP32`?",
        ]
    );
}

#[test]
fn ellipsis_must_be_last_and_needs_a_rank() {
    assert_eq!(
        errors(&relu("[..., 4]", "[DYNAMIC, ...]", "")),
        [
            "5:36: kernel `k`, param `x`, shape[0]: `...` must be the last entry of a shape; it stands for all remaining axes",
            "6:45: kernel `k`, param `y`, `shape`: `...` leaves the rank unknown; add `rank: N` to say how many axes the tensor has",
        ]
    );
}

#[test]
fn rank_contradicting_the_shape() {
    let src = "kernels:\n  k:\n    template: builtin/relu\n    params:\n      x: { dtype: DT_FP32, shape: [4, 4], rank: 3 }\n      y: { dtype: DT_FP32, shape: [4, 4, 4, ...], rank: 2, output: true }\n";
    assert_eq!(
        errors(src),
        [
            "5:49: kernel `k`, param `x`, `rank`: rank 3 contradicts the shape, which has 2 axes",
            "6:57: kernel `k`, param `y`, `rank`: rank 2 contradicts the shape, which already has 3 axes before `...`",
        ]
    );
}

#[test]
fn bad_sizes() {
    assert_eq!(
        errors(&relu("[0, -3, 2.5, 4294967296, big]", "[4]", "")),
        [
            "5:36: kernel `k`, param `x`, shape[0]: sizes must be positive, found 0",
            "5:39: kernel `k`, param `x`, shape[1]: sizes must be positive, found -3",
            "5:43: kernel `k`, param `x`, shape[2]: sizes must be positive integers, found `2.5`",
            "5:48: kernel `k`, param `x`, shape[3]: size 4294967296 is larger than 4294967295, the most a kernel's `uint32_t` size argument can carry",
            "5:60: kernel `k`, param `x`, shape[4]: unknown dim marker `big`; expected DYNAMIC, DYN, STATIC, a positive integer, `...` or a name from `dims`",
        ]
    );
    // Integers beyond i128 arrive as floats from YAML; they are still "too large".
    let huge = "9".repeat(45);
    assert_eq!(
        errors(&relu(&format!("[{huge}]"), "[4]", "")),
        [format!(
            "5:36: kernel `k`, param `x`, shape[0]: size {huge} is larger than 4294967295, the most a kernel's `uint32_t` size argument can carry"
        )]
    );
}

#[test]
fn largest_size_is_accepted() {
    let m = model(&relu("[4294967295]", "[4294967295]", ""));
    assert_eq!(m.kernels[0].dims[0].size, DimSize::Fixed(u32::MAX.into()));
}

#[test]
fn undefined_and_doubly_defined_dims() {
    let src = "dims:\n  B: DYNAMIC\n  B: STATIC\n  S: dynamic\nkernels:\n  k:\n    template: builtin/relu\n    params:\n      x: { dtype: DT_FP32, shape: [B, S, C] }\n      y: { dtype: DT_FP32, shape: [B, S, 4], output: true }\n";
    assert_eq!(
        errors(src),
        [
            "3:3: `dims`: `B` is given twice; first at line 2, column 3",
            "4:6: dims, `S`: unknown dim value `dynamic`; expected DYNAMIC, DYN, STATIC or a positive integer — did you mean `DYNAMIC`?",
            "9:42: kernel `k`, param `x`, shape[2]: unknown dim marker `C`; expected DYNAMIC, DYN, STATIC, a positive integer, `...` or a name from `dims` — did you mean `B`?",
        ]
    );
}

#[test]
fn markers_cannot_name_dims() {
    let src = "dims:\n  STATIC: 4\nkernels:\n  k:\n    template: builtin/relu\n    params:\n      x: { dtype: DT_FP32, shape: [4] }\n      y: { dtype: DT_FP32, shape: [4], output: true }\n";
    assert_eq!(
        errors(src),
        ["2:3: dims, `STATIC`: `STATIC` is a dim marker and cannot name a dim"]
    );
}

#[test]
fn static_axis_without_sizes() {
    assert_eq!(
        errors(&relu("[DYNAMIC, STATIC]", "[DYNAMIC, STATIC]", "")),
        [
            "5:45: kernel `k`: STATIC axis `x.1` has no sizes to build; list them under `static:`, e.g. `x.1: [128]`"
        ]
    );
    let src = "dims:\n  H: STATIC\nkernels:\n  k:\n    template: builtin/relu\n    params:\n      x: { dtype: DT_FP32, shape: [H] }\n      y: { dtype: DT_FP32, shape: [H], output: true }\n    static: { H: [] }\n";
    assert_eq!(
        errors(src),
        [
            "9:18: kernel `k`, `static` entry `H`: lists no sizes; a STATIC axis needs at least one size to build"
        ]
    );
}

#[test]
fn sizes_for_non_static_axes_and_bad_sizes() {
    let src = relu(
        "[DYNAMIC, STATIC]",
        "[DYNAMIC, STATIC]",
        "    static: { x.0: [2], x.1: [0, 8, 8, 1.5], x.2: [1], z.1: [1], xx.1: [2], HIDDEN: [3] }\n",
    );
    assert_eq!(
        errors(&src),
        [
            "7:15: kernel `k`, `static` entry `x.0`: sizes can only be listed for STATIC axes, and `x.0` is DYNAMIC",
            "7:31: kernel `k`, `static` entry `x.1`: sizes must be positive, found 0",
            "7:37: kernel `k`, `static` entry `x.1`: size 8 is listed twice",
            "7:40: kernel `k`, `static` entry `x.1`: sizes must be positive integers, found `1.5`",
            "7:46: kernel `k`, `static` entry `x.2`: `x` has axes 0 to 1; write `x.AXIS` with AXIS a number in that range",
            "7:56: kernel `k`, `static` entry `z.1`: kernel has no param `z` — did you mean `x`?",
            "7:66: kernel `k`, `static` entry `xx.1`: kernel has no param `xx` — did you mean `x`?",
            "7:77: kernel `k`, `static` entry `HIDDEN`: expected `param.axis` or the name of a STATIC dim from `dims`",
        ]
    );
}

#[test]
fn sizes_for_a_fixed_named_dim() {
    let src = "dims:\n  N: 4\nkernels:\n  k:\n    template: builtin/relu\n    params:\n      x: { dtype: DT_FP32, shape: [N] }\n      y: { dtype: DT_FP32, shape: [N], output: true }\n    static: { N: [4] }\n";
    assert_eq!(
        errors(src),
        [
            "9:15: kernel `k`, `static` entry `N`: sizes can only be listed for STATIC axes, and `N` is 4"
        ]
    );
}

#[test]
fn too_many_specialisations() {
    let src = "dims:\n  H: STATIC\nkernels:\n  k:\n    template: builtin/add\n    params:\n      a: { dtype: DT_FP32, shape: [H, STATIC] }\n      b: { dtype: DT_FP32, shape: [H, STATIC] }\n      c: { dtype: DT_FP32, shape: [H, STATIC], output: true }\n    static:\n      H: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n      a.1: [1, 2, 3, 4, 5, 6, 7]\n";
    assert_eq!(
        errors(src),
        [
            "10:5: kernel `k`: would build 70 specialisations (H: 10 sizes × a.1: 7 sizes); at most 64 are allowed, because each is a separately compiled kernel object and wrapper instance; list fewer sizes or make an axis DYNAMIC"
        ]
    );
}

#[test]
fn exactly_64_specialisations_are_allowed() {
    let sizes: Vec<String> = (1..=64).map(|i| i.to_string()).collect();
    let m = model(&relu(
        "[STATIC]",
        "[STATIC]",
        &format!("    static: {{ x.0: [{}] }}\n", sizes.join(", ")),
    ));
    assert_eq!(m.kernels[0].specialisations.len(), 64);
}

#[test]
fn duplicate_kernels_and_params() {
    let src = "kernels:\n  k:\n    template: builtin/relu\n    params:\n      x: { dtype: DT_FP32, shape: [4] }\n      x: { dtype: DT_FP32, shape: [4], output: true }\n  k:\n    template: builtin/relu\n";
    assert_eq!(
        errors(src),
        [
            "2:3: kernel `k`: has no output; mark the tensor it writes with `output: true`",
            "3:15: kernel `k`: builtin/relu takes 2 params: x (an input tensor), out (an output tensor); this kernel declares 1",
            "6:7: kernel `k`, `params`: `x` is given twice; first at line 5, column 7",
            "7:3: `kernels`: `k` is given twice; first at line 2, column 3",
        ]
    );
}

#[test]
fn duplicate_kernel_across_files_names_both_places() {
    let dir = tempdir();
    let spec = relu("[4]", "[4]", "");
    std::fs::write(dir.join("a.yaml"), &spec).unwrap();
    std::fs::write(dir.join("b.yml"), format!("# second\n{spec}")).unwrap();
    std::fs::write(dir.join("notes.txt"), "not a spec").unwrap();
    let err = pypto_build::check_paths(&[&dir]).unwrap_err();
    let lines: Vec<String> = err.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [format!(
            "{}:3:3: error: kernel `k` is declared twice: here and at {}:2:3",
            dir.join("b.yml").display(),
            dir.join("a.yaml").display()
        )]
    );
}

#[test]
fn kernel_without_output() {
    let src = "kernels:\n  k:\n    template: t.hbs\n    params:\n      x: { dtype: DT_FP32, shape: [4] }\n";
    let dir = tempdir();
    std::fs::write(dir.join("t.hbs"), "").unwrap();
    let err = pypto_build::check_source(&dir.join("k.yaml"), src).unwrap_err();
    assert_eq!(
        err.0[0].message,
        "kernel `k`: has no output; mark the tensor it writes with `output: true`"
    );
    assert_eq!(err.0[0].location.pos.to_string(), "2:3");
}

#[test]
fn scalar_with_a_shape_and_tensor_without_dtype() {
    let src = "kernels:\n  k:\n    template: builtin/relu\n    params:\n      x: { shape: [4] }\n      y: { dtype: DT_FP32, shape: [4], output: true }\n      a: { scalar: DT_FP32, shape: [1], rank: 1, dtype: DT_FP32, output: true }\n";
    assert_eq!(
        errors(src),
        [
            "5:7: kernel `k`, param `x`: a tensor needs a `dtype` (or write `scalar: DTYPE` for a scalar argument)",
            "7:36: kernel `k`, param `a`: a scalar has no `shape`; its type is given by `scalar:` alone",
            "7:47: kernel `k`, param `a`: a scalar has no `rank`; its type is given by `scalar:` alone",
            "7:57: kernel `k`, param `a`: a scalar has no `dtype`; its type is given by `scalar:` alone",
            "7:74: kernel `k`, param `a`: a scalar cannot be an output; outputs are tensors",
        ]
    );
}

#[test]
fn dtype_not_on_every_target() {
    let src = "kernels:\n  k:\n    template: builtin/relu\n    targets: [A3, 950PR]\n    params:\n      x: { dtype: DT_FP8E4M3, shape: [4] }\n      y: { dtype: DT_FP32, shape: [4], output: true }\n";
    assert_eq!(
        errors(src),
        [
            "6:19: kernel `k`, param `x`, `dtype`: DT_FP8E4M3 exists only on 950PR, but the kernel also targets A3; set `targets: [950PR]`"
        ]
    );
}

#[test]
fn missing_templates() {
    let src = "kernels:\n  k:\n    template: builtin/softmx\n    params:\n      y: { dtype: DT_FP32, shape: [4], output: true }\n  j:\n    template: templates/nope.hbs\n    params:\n      y: { dtype: DT_FP32, shape: [4], output: true }\n";
    let errs = errors(src);
    assert_eq!(errs.len(), 2);
    assert_eq!(
        errs[0],
        "3:15: kernel `k`, `template`: there is no builtin template `softmx`; did you mean \
         `builtin/softmax`? (the README's builtin table lists them all)"
    );
    // With no near name, every builtin is listed.
    let far = errors(
        "kernels:\n  k:\n    template: builtin/zzzzzzzz\n    params:\n      y: { dtype: DT_FP32, shape: [4], output: true }\n",
    );
    assert!(
        far[0].starts_with(
            "3:15: kernel `k`, `template`: there is no builtin template `zzzzzzzz`; builtins are `add`, "
        ),
        "{}",
        far[0]
    );
    assert_eq!(
        errs[1],
        "7:15: kernel `j`, `template`: template file `kernels/templates/nope.hbs` does not exist (paths are relative to the spec file; builtins are written `builtin/NAME`)"
    );
}

#[test]
fn names_must_be_identifiers_in_rust_and_cpp() {
    let src = "dims:\n  new: 4\nkernels:\n  match:\n    template: builtin/relu\n    params:\n      x-1: { dtype: DT_FP32, shape: [4] }\n      template: { dtype: DT_FP32, shape: [4], output: true }\n";
    assert_eq!(
        errors(src),
        [
            "2:3: dims, `new`: not a valid dim name: it is a C++ keyword or a name Ascend C reserves",
            "4:3: kernel `match`: not a valid kernel name: it is a Rust keyword",
            "7:7: kernel `match`, param `x-1`: not a valid param name: `-` is not allowed; use ASCII letters, digits and `_`",
            "8:7: kernel `match`, param `template`: not a valid param name: it is a C++ keyword or a name Ascend C reserves",
        ]
    );
}

#[test]
fn template_contracts_are_enforced() {
    let src = "kernels:\n  k:\n    template: builtin/add_bias\n    params:\n      x:    { dtype: DT_FP16, shape: [DYNAMIC, 64] }\n      bias: { dtype: DT_FP32, shape: [32] }\n      out:  { dtype: DT_FP16, shape: [DYNAMIC, 64, 1], output: true }\n  j:\n    template: builtin/add\n    params:\n      a: { dtype: DT_FP32, shape: [4] }\n      out: { dtype: DT_FP32, shape: [4], output: true }\n";
    assert_eq!(
        errors(src),
        [
            "6:22: kernel `k`, param `bias`: builtin/add_bias needs all tensors in one dtype; `x` is DT_FP16, this is DT_FP32",
            "6:39: kernel `k`: `bias.0` is fixed at 32 but must equal `x.1`, fixed at 64 (builtin/add_bias requires them to be equal)",
            "7:38: kernel `k`, param `out`: builtin/add_bias requires it to have the shape of `x`, but it has rank 3 and `x` rank 2",
            "9:15: kernel `j`: builtin/add takes 3 params: a (an input tensor), b (an input tensor), out (an output tensor); this kernel declares 2",
        ]
    );
}

#[test]
fn static_sizes_of_a_dim_tied_to_a_fixed_axis_are_not_checked_twice() {
    // y.1 is STATIC and tied to x.1, fixed at 7: one error, at y.1, rather
    // than one per listed size as well.
    let src = "kernels:\n  k:\n    template: builtin/relu\n    params:\n      x: { dtype: DT_FP32, shape: [STATIC, 7] }\n      y: { dtype: DT_FP32, shape: [STATIC, STATIC], output: true }\n    static: { x.0: [1], y.1: [7, 8] }\n";
    assert_eq!(
        errors(src),
        [
            "6:44: kernel `k`: `y.1` is declared STATIC, but builtin/relu makes it one dim with `x.1`, which is fixed at 7: `same_shape: [x, out]` (builtin/relu.hbs:7:5) ties `y.1` to `x.1`; a template's relations cannot change how the spec declares an axis, so declare both alike"
        ]
    );
}

#[test]
fn wrong_value_kinds() {
    let src = "kernels:\n  k:\n    doc: 3\n    template: [builtin/relu]\n    targets: A2\n    params:\n      x: [4]\n      y: { dtype: DT_FP32, shape: 4, output: yes, rank: two }\n    static: [x.0]\n";
    assert_eq!(
        errors(src),
        [
            "3:10: kernel `k`, `doc`: expected a string, found an integer",
            "4:15: kernel `k`, `template`: expected a string, found a list",
            "5:14: kernel `k`, `targets`: expected a list, found a string",
            "7:10: kernel `k`, param `x`: expected a mapping, found a list",
            "8:35: kernel `k`, param `y`, `shape`: expected a list, found an integer",
            "8:46: kernel `k`, param `y`, `output`: expected `true` or `false`, found a string",
            "9:13: kernel `k`, `static`: expected a mapping, found a list",
        ]
    );
}

#[test]
fn empty_and_non_mapping_files() {
    assert_eq!(
        errors(""),
        ["1:1: spec file is empty; expected a mapping with `kernels:` (and optionally `dims:`)"]
    );
    assert_eq!(
        errors("- a\n- b\n"),
        ["1:1: spec file: expected a mapping, found a list"]
    );
    assert_eq!(
        errors("dims: {}\n"),
        ["1:1: spec file has no `kernels:`; declare at least one kernel"]
    );
    assert_eq!(
        errors("kernels:\n"),
        ["1:1: `kernels` is empty; declare at least one kernel"]
    );
}

#[test]
fn yaml_syntax_error_is_located() {
    assert_eq!(
        errors("kernels:\n  k: { template: builtin/relu\n"),
        ["2:6: invalid YAML: unclosed bracket '{'"]
    );
}

#[test]
fn anchors_and_aliases_work_and_point_at_the_use() {
    let src = "kernels:\n  k:\n    template: builtin/relu\n    params:\n      x: &t { dtype: DT_FP32, shape: [4] }\n      y: { dtype: DT_FP32, shape: [4], output: true }\n  j:\n    template: builtin/relu\n    params:\n      x: *t\n      y: *t\n";
    // Both uses of `*t` are inputs, so `j` has no output, and `y` is not
    // the output relu expects.
    assert_eq!(
        errors(src),
        [
            "7:3: kernel `j`: has no output; mark the tensor it writes with `output: true`",
            "11:7: kernel `j`, param `y`: builtin/relu expects param 2 (`out`) to be an output tensor, but this is an input tensor",
        ]
    );
}

#[test]
fn non_utf8_and_huge_files_are_refused() {
    let dir = tempdir();
    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, b"kernels:\n  k: \xff\n").unwrap();
    let err = pypto_build::check_paths(&[&bad]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{}:2:6: error: spec file is not valid UTF-8", bad.display())
    );
    let huge = dir.join("huge.yaml");
    std::fs::write(&huge, "#".repeat(2 << 20)).unwrap();
    let err = pypto_build::check_paths(&[&huge]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:1: error: spec file is larger than 1024 KiB; split it into several files",
            huge.display()
        )
    );
    let missing = dir.join("missing.yaml");
    let err = pypto_build::check_paths(&[&missing]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:1: error: no such spec file or directory",
            missing.display()
        )
    );
}

#[test]
fn diagnostics_render_with_a_caret() {
    let err =
        pypto_build::check_source(Path::new(PATH), &relu("[DYNAMC]", "[DYNAMIC]", "")).unwrap_err();
    assert_eq!(
        err.render(),
        "kernels/test.yaml:5:36: error: kernel `k`, param `x`, shape[0]: unknown dim marker `DYNAMC`; expected DYNAMIC, DYN, STATIC, a positive integer, `...` or a name from `dims` — did you mean `DYNAMIC`?\n  |\n5 |       x: { dtype: DT_FP32, shape: [DYNAMC] }\n  |                                    ^"
    );
}

/// A fresh directory under the target dir; tests do not share one.
fn tempdir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    // The process id too: a test runner may run each test in a process of
    // its own, all counting from 0.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "check-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn template_options_are_checked() {
    let attention = |options: &str, hidden: &str| {
        format!(
            "kernels:\n  k:\n    template: builtin/attention\n    options: {options}\n    params:\n      q: {{ dtype: DT_FP32, shape: [DYNAMIC, DYNAMIC, {hidden}] }}\n      k: {{ dtype: DT_FP32, shape: [DYNAMIC, DYNAMIC, {hidden}] }}\n      v: {{ dtype: DT_FP32, shape: [DYNAMIC, DYNAMIC, {hidden}] }}\n      o: {{ dtype: DT_FP32, shape: [DYNAMIC, DYNAMIC, {hidden}], output: true }}\n"
        )
    };
    let m = model(&attention("{ heads: 12, causal: true }", "768"));
    assert_eq!(
        m.kernels[0].options,
        [
            ("heads".to_owned(), pypto_build::model::OptionValue::Int(12)),
            (
                "causal".to_owned(),
                pypto_build::model::OptionValue::Bool(true)
            ),
        ]
    );
    let m = model(&attention("{}", "768"));
    assert_eq!(
        m.kernels[0].options,
        [
            ("heads".to_owned(), pypto_build::model::OptionValue::Int(1)),
            (
                "causal".to_owned(),
                pypto_build::model::OptionValue::Bool(false)
            ),
        ]
    );
    assert_eq!(
        errors(&attention("{ head: 2, causal: 1 }", "768")),
        [
            "4:16: kernel `k`, `options`: unknown option `head`; builtin/attention takes `heads` or `causal` — did you mean `heads`?",
            "4:33: kernel `k`, option `causal`: expected `true` or `false` (mask keys after the query's position)",
        ]
    );
    assert_eq!(
        errors(&attention("{ heads: 5 }", "768")),
        ["4:16: kernel `k`: `q.2` is 768, which heads = 5 does not divide"]
    );
    assert_eq!(
        errors(&attention("{ heads: 0 }", "768")),
        [
            "4:23: kernel `k`, option `heads`: expected an integer from 1 to 256 (attention heads; the hidden size is split into heads of hidden/heads)"
        ]
    );
    assert_eq!(
        errors(&relu("[4]", "[4]", "    options: { x: 1 }\n")),
        ["7:16: kernel `k`, `options`: unknown option `x`; builtin/relu takes no options"]
    );
}

#[test]
fn swiglu_halves_fixed_sizes_at_build_time() {
    let src = "kernels:\n  k:\n    template: builtin/swiglu\n    params:\n      x: { dtype: DT_FP32, shape: [DYNAMIC, 10] }\n      out: { dtype: DT_FP32, shape: [DYNAMIC, 6], output: true }\n";
    assert_eq!(
        errors(src),
        [
            "2:3: kernel `k`: builtin/swiglu needs `x`'s last axis to be twice `out`'s, but it is 10 and 6"
        ]
    );
    let ok = "kernels:\n  k:\n    template: builtin/swiglu\n    params:\n      x: { dtype: DT_FP32, shape: [DYNAMIC, STATIC] }\n      out: { dtype: DT_FP32, shape: [DYNAMIC, STATIC], output: true }\n    static: { x.1: [8, 16], out.1: [4, 8] }\n";
    // 8/4 and 16/8 are built, but so are the mixed pairs 8/8 and 16/4.
    assert_eq!(
        errors(ok),
        [
            "2:3: kernel `k`: builtin/swiglu needs `x`'s last axis to be twice `out`'s, but it is 8 and 8"
        ]
    );
}

#[test]
fn line_numbers_and_snippets_agree_for_every_line_ending() {
    let lf = relu("[DYNAMC]", "[DYNAMIC]", "");
    let expected = "kernels/test.yaml:5:36: error: kernel `k`, param `x`, shape[0]: unknown dim marker `DYNAMC`; expected DYNAMIC, DYN, STATIC, a positive integer, `...` or a name from `dims` — did you mean `DYNAMIC`?\n  |\n5 |       x: { dtype: DT_FP32, shape: [DYNAMC] }\n  |                                    ^";
    for ending in ["\n", "\r\n", "\r"] {
        let src = lf.replace('\n', ending);
        let err = pypto_build::check_source(Path::new(PATH), &src).unwrap_err();
        assert_eq!(err.render(), expected, "{ending:?}");
    }
    // Not UTF-8 after lone CRs: the position counts them as line breaks too.
    let dir = tempdir();
    let bad = dir.join("cr.yaml");
    std::fs::write(&bad, b"kernels:\r  k:\r    doc: \xff\r").unwrap();
    let err = pypto_build::check_paths(&[&bad]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}:3:10: error: spec file is not valid UTF-8",
            bad.display()
        )
    );
}
