//! Template contracts: front matter parsed with errors located in the
//! template, and a user template's relations, options, block rule and core
//! kind applied by the model exactly as a builtin's are.

use std::path::{Path, PathBuf};

use pypto_build::model::{BlockRule, CoreKind, Model};

const CONTRACT: &str = "---
summary: out = x * w * scale
params:
  - { name: x, rank: 2 }
  - { name: w, rank: 1 }
  - { name: out, rank: 2, output: true }
options:
  scale: { type: int, default: 1, min: 1, max: 1000, doc: an integer factor }
  split: { type: int, default: 1, min: 1, max: 8, doc: blocks per row }
relations:
  - same_shape: [x, out]
  - same_dim: [w.0, x.last]
  - multiple_of: { axis: x.last, of: 4, why: columns are read four at a time }
  - divisible_by: { axis: x.last, option: split }
dtypes: [DT_FP32]
blocks: { rule: leading, param: x, axes: 1, times: split }
cores: cube
---
// body
";

/// A fresh directory under the target dir holding `t.hbs`.
fn with_template(text: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    // The process id too: a test runner may run each test in a process of
    // its own, all counting from 0.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "contracts-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("t.hbs"), text).unwrap();
    dir
}

fn check(dir: &Path, spec: &str) -> Result<Model, Vec<String>> {
    pypto_build::check_source(&dir.join("k.yaml"), spec).map_err(|d| {
        d.iter()
            .map(|d| {
                let file = d.location.path.file_name().unwrap().to_string_lossy();
                format!("{file}:{}: {}", d.location.pos, d.message)
            })
            .collect()
    })
}

fn spec(x: &str, w: &str, out: &str, options: &str) -> String {
    format!(
        "kernels:\n  k:\n    template: t.hbs\n    options: {options}\n    params:\n      \
         a: {{ dtype: DT_FP32, shape: {x} }}\n      b: {{ dtype: DT_FP32, shape: {w} }}\n      \
         c: {{ dtype: DT_FP32, shape: {out}, output: true }}\n"
    )
}

#[test]
fn a_user_contract_is_resolved_into_the_model() {
    let dir = with_template(CONTRACT);
    let model = check(
        &dir,
        &spec(
            "[DYNAMIC, DYNAMIC]",
            "[DYNAMIC]",
            "[DYNAMIC, DYNAMIC]",
            "{ split: 2 }",
        ),
    )
    .unwrap();
    let k = &model.kernels[0];
    assert_eq!(k.roles, ["x", "w", "out"]);
    assert_eq!(k.cores, CoreKind::Cube);
    assert_eq!(
        k.blocks,
        BlockRule::Leading {
            param: 0,
            axes: 1,
            factor: 2
        }
    );
    // Defaults filled in, in declared order.
    let options: Vec<String> = k.options.iter().map(|(n, v)| format!("{n}={v}")).collect();
    assert_eq!(options, ["scale=1", "split=2"]);
    // a.1, b.0 and c.1 are one dim; a.0 and c.0 another.
    assert_eq!(k.dims.len(), 2);
    assert_eq!(k.dims[0].axes, [(0, 0), (2, 0)]);
    assert_eq!(k.dims[1].axes, [(0, 1), (1, 0), (2, 1)]);
    // Left for run time: the DYNAMIC column count's two divisors.
    let multiples: Vec<(usize, usize, u32, &str)> = k
        .multiples
        .iter()
        .map(|m| (m.param, m.axis, m.of, m.why.as_str()))
        .collect();
    assert_eq!(
        multiples,
        [
            (0, 1, 2, "split = 2: blocks per row"),
            (0, 1, 4, "columns are read four at a time")
        ]
    );
}

#[test]
fn a_user_contract_is_checked_at_build_time_like_a_builtin() {
    let dir = with_template(CONTRACT);
    let t = pypto_build::display_path(&dir.join("t.hbs"));
    let errors = |x: &str, w: &str, out: &str, options: &str| {
        check(&dir, &spec(x, w, out, options)).unwrap_err()
    };
    assert_eq!(
        errors("[8, 8]", "[5]", "[8, 8]", "{}"),
        [format!(
            "k.yaml:7:36: kernel `k`: `b.0` is fixed at 5 but must equal `a.1`, fixed at 8 ({t} requires them to be equal)"
        )]
    );
    assert_eq!(
        errors("[8, 6]", "[6]", "[8, 6]", "{}"),
        [
            "k.yaml:2:3: kernel `k`: `a.1` is 6, not a multiple of 4: columns are read four at a time"
        ]
    );
    assert_eq!(
        errors("[8, 12]", "[12]", "[8, 12]", "{ split: 8 }"),
        ["k.yaml:4:16: kernel `k`: `a.1` is 12, which split = 8 does not divide"]
    );
    assert_eq!(
        errors("[8, 8]", "[8, 8]", "[8, 8]", "{}"),
        [format!(
            "k.yaml:7:35: kernel `k`, param `b`: {t} expects `w` to have rank 1, not 2"
        )]
    );
    assert_eq!(
        errors("[8, 8]", "[8]", "[8, 8]", "{ scale: 0, heads: 2 }"),
        [
            "k.yaml:4:23: kernel `k`, option `scale`: expected an integer from 1 to 1000 (an integer factor)".to_owned(),
            format!(
                "k.yaml:4:26: kernel `k`, `options`: unknown option `heads`; {t} takes `scale` or `split`"
            ),
        ]
    );
    let wrong_dtype = spec("[8, 8]", "[8]", "[8, 8]", "{}").replacen("DT_FP32", "DT_FP16", 1);
    assert_eq!(
        check(&dir, &wrong_dtype).unwrap_err(),
        [format!(
            "k.yaml:6:19: kernel `k`, param `a`: {t} is written for DT_FP32, not DT_FP16"
        )]
    );
}

#[test]
fn a_malformed_contract_is_located_in_the_template() {
    let cases: &[(&str, &str)] = &[
        (
            "---\nparams:\n  - { name: x }\n  - { nme: out, output: true }\n---\n",
            "t.hbs:4:5: template contract: `params` entry: needs a `name`, e.g. `{ name: x }`\n\
             t.hbs:4:7: template contract: `params` entry: unknown key `nme`; expected `name`, `kind`, `output`, `rank`, `dtype`, `dtypes`, `when` or `unless` — did you mean `name`?",
        ),
        (
            "---\nparams:\n  - { name: x }\n  - { name: out, output: true }\nrelations:\n  - same_dim: [x.last, y.0]\n---\n",
            "t.hbs:6:24: template contract: `same_dim`: no param `y`; the params are `x` or `out` — did you mean `x`?",
        ),
        (
            "---\nparams:\n  - { name: x, rank: 2 }\n  - { name: out, output: true }\nrelations:\n  - same_dim: [x.2, out.0]\n---\n",
            "t.hbs:6:16: template contract: `same_dim`: `x` has 2 axes; there is no axis 2",
        ),
        (
            "---\nparams:\n  - { name: x }\n  - { name: out, output: true }\nblocks: { rule: leading, param: x, times: heads }\n---\n",
            "t.hbs:5:43: template contract: `blocks`, `times`: no option `heads`; declare it under `options:`",
        ),
        (
            "---\nparams:\n  - { name: x }\n  - { name: out, output: true, when: f }\noptions:\n  f: { type: bool, default: false }\n---\n",
            "t.hbs:4:5: template contract: param `out`: only an input tensor can be optional (`when`/`unless`)",
        ),
        (
            "---\nparams:\n  - { name: x, unless: n }\n  - { name: out, output: true }\noptions:\n  n: { type: int, default: 1 }\n---\n",
            "t.hbs:3:24: template contract: param `x`, `unless`: option `n` is an int; this needs a bool option",
        ),
        (
            "---\nparams:\n  - { name: x, when: f, unless: f }\n  - { name: out, output: true }\noptions:\n  f: { type: bool, default: false }\n---\n",
            "t.hbs:3:5: template contract: param `x`: give `when` or `unless`, not both",
        ),
        (
            "---\nparams:\n  - { name: s, kind: scalar, dtypes: [DT_FP32] }\n  - { name: out, output: true }\n---\n",
            "t.hbs:3:38: template contract: param `s`: a scalar takes one `dtype`, not `dtypes`",
        ),
        (
            "---\nparams:\n  - { name: x, when: f }\n  - { name: out, output: true }\noptions:\n  f: { type: bool, default: false }\nblocks: { rule: rows, param: x }\n---\n",
            "t.hbs:7:9: template contract: `blocks`: counts blocks over `x`, which is optional; count them over a param every kernel has",
        ),
        (
            "---\ncores: gpu\n---\n",
            "t.hbs:2:8: template contract: `cores`: unknown core kind `gpu`; expected vector, cube or mixed",
        ),
        (
            "---\noptions:\n  n: { type: int, default: 9, max: 4 }\n---\n",
            "t.hbs:3:28: template contract: option `n`: `default` 9 is above `max` 4",
        ),
        (
            "---\nparams: [\n---\n",
            "t.hbs:2:9: template contract: invalid YAML: unclosed bracket '['",
        ),
        (
            "---\nsummary: never closed\n",
            "t.hbs:1:1: the front matter opened by `---` on line 1 is never closed; end it with a line holding only `---`",
        ),
    ];
    for (template, want) in cases {
        let dir = with_template(template);
        let got = check(&dir, &spec("[4, 4]", "[4]", "[4, 4]", "{}")).unwrap_err();
        assert_eq!(got.join("\n"), *want, "{template}");
    }
}

#[test]
fn a_template_without_front_matter_keeps_the_default_contract() {
    let dir = with_template("// no contract\n");
    let model = check(
        &dir,
        &spec("[4, 4]", "[7]", "[4, 4]", "{ anything: 3, flag: true }"),
    )
    .unwrap();
    let k = &model.kernels[0];
    assert_eq!(k.roles, ["a", "b", "c"]);
    assert_eq!(k.cores, CoreKind::Vector);
    assert_eq!(
        k.blocks,
        BlockRule::Elements {
            param: 2,
            per_block: 8192
        }
    );
    assert!(k.multiples.is_empty() && k.halves.is_empty());
}

#[test]
fn a_marker_changed_through_several_ties_names_each() {
    // a.0 is the dim N, as is b.0; the contract ties b.0 to a.1, and a.1 to
    // c.1, fixed at 8: N would be fixed through three ties.
    let dir = with_template(CONTRACT);
    let t = pypto_build::display_path(&dir.join("t.hbs"));
    let src = format!(
        "dims:\n  N: DYNAMIC\n{}",
        spec("[N, DYNAMIC]", "[N]", "[DYNAMIC, 8]", "{}")
    );
    assert_eq!(
        check(&dir, &src).unwrap_err(),
        [format!(
            "k.yaml:8:36: kernel `k`: `a.0` (the dim `N`) is declared DYNAMIC, but {t} makes it one \
             dim with `c.1`, which is fixed at 8: `a.0` and `b.0` are the dim `N`, `same_dim: \
             [w.0, x.last]` ({t}:12:5) ties `b.0` to `a.1`, `same_shape: [x, out]` ({t}:11:5) ties \
             `a.1` to `c.1`; a template's relations cannot change how the spec declares an axis, \
             so declare both alike"
        )]
    );
}

#[test]
fn a_relation_past_a_params_rank_is_an_error_at_the_spec() {
    // No `rank` in the contract, so `x.2` and `x.3` are valid axes there;
    // the spec's rank-2 `a` has neither, and the relations would tie and
    // check nothing, at build time or at run time.
    let dir = with_template(
        "---\nparams:\n  - { name: x }\n  - { name: w }\n  - { name: out, output: true }\n\
         relations:\n  - same_dim: [x.2, w.0]\n  - multiple_of: { axis: x.3, of: 4 }\n---\n",
    );
    let t = pypto_build::display_path(&dir.join("t.hbs"));
    assert_eq!(
        check(
            &dir,
            &spec(
                "[DYNAMIC, DYNAMIC]",
                "[DYNAMIC]",
                "[DYNAMIC, DYNAMIC]",
                "{}"
            )
        )
        .unwrap_err(),
        [
            format!(
                "k.yaml:6:35: kernel `k`, param `a`: {t}'s relation `same_dim: [x.2, w.0]` \
                 ({t}:7:5) names axis 2 of `x` (this param), which has rank 2 here, so the \
                 relation would check nothing; give the param at least 3 axes"
            ),
            format!(
                "k.yaml:6:35: kernel `k`, param `a`: {t}'s relation `multiple_of: {{ axis: x.3, \
                 of: 4 }}` ({t}:8:5) names axis 3 of `x` (this param), which has rank 2 here, so \
                 the relation would check nothing; give the param at least 4 axes"
            ),
        ]
    );
    // With the axes, the relations hold: a.2 and b.0 are one dim, and a.3
    // is checked at run time.
    let k = &check(
        &dir,
        &spec(
            "[DYNAMIC, DYNAMIC, DYNAMIC, DYNAMIC]",
            "[DYNAMIC]",
            "[DYNAMIC, DYNAMIC]",
            "{}",
        ),
    )
    .unwrap()
    .kernels[0];
    assert!(k.dims.iter().any(|d| d.axes == [(0, 2), (1, 0)]));
    let multiples: Vec<(usize, usize, u32)> = k
        .multiples
        .iter()
        .map(|m| (m.param, m.axis, m.of))
        .collect();
    assert_eq!(multiples, [(0, 3, 4)]);
}

/// A grid of cores (`blocks: { rule: grid }`) and multiples of a constant
/// times an option (`multiple_of` with `times`), as tests/kernels/model/gemm.hbs
/// uses them.
const GRID: &str = "---
params:
  - { name: x, rank: 2 }
  - { name: w, rank: 1 }
  - { name: out, rank: 2, output: true }
options:
  rows: { type: int, default: 4, min: 1, max: 64, doc: parts of x's rows }
  cols: { type: int, default: 6, min: 1, max: 64, doc: parts of x's columns }
relations:
  - same_shape: [x, out]
  - multiple_of: { axis: x.0, of: 128, times: rows, why: each part is whole tiles }
  - multiple_of: { axis: x.1, of: 16, times: cols }
blocks: { rule: grid, options: [rows, cols] }
---
";

#[test]
fn a_grid_rule_launches_the_product_of_its_options() {
    let dir = with_template(GRID);
    let k = &check(
        &dir,
        &spec(
            "[DYNAMIC, DYNAMIC]",
            "[DYNAMIC]",
            "[DYNAMIC, DYNAMIC]",
            "{}",
        ),
    )
    .unwrap()
    .kernels[0];
    // Exactly 4 × 6 blocks, whatever the sizes.
    assert_eq!(k.blocks, BlockRule::Count(24));
    let multiples: Vec<(usize, usize, u32, &str)> = k
        .multiples
        .iter()
        .map(|m| (m.param, m.axis, m.of, m.why.as_str()))
        .collect();
    assert_eq!(
        multiples,
        [
            (0, 0, 512, "128 times rows = 4: each part is whole tiles"),
            (0, 1, 96, "16 times cols = 6: the template requires it")
        ]
    );
    let k = &check(
        &dir,
        &spec(
            "[DYNAMIC, DYNAMIC]",
            "[DYNAMIC]",
            "[DYNAMIC, DYNAMIC]",
            "{ rows: 1, cols: 3 }",
        ),
    )
    .unwrap()
    .kernels[0];
    assert_eq!(k.blocks, BlockRule::Count(3));
    assert_eq!(k.multiples[0].of, 128);
}

#[test]
fn a_multiple_of_times_an_option_is_checked_at_build_time() {
    let dir = with_template(GRID);
    let errors =
        |x: &str, options: &str| check(&dir, &spec(x, "[DYNAMIC]", x, options)).unwrap_err();
    // 256 rows are two tiles, but the 4 parts need one each.
    assert_eq!(
        errors("[256, 96]", "{}"),
        [
            "k.yaml:2:3: kernel `k`: `a.0` is 256, not a multiple of 512 (128 times rows = 4): \
             each part is whole tiles"
        ]
    );
    // Named at the spec's option when it gives it.
    assert_eq!(
        errors("[128, 96]", "{ cols: 6, rows: 2 }"),
        [
            "k.yaml:4:25: kernel `k`: `a.0` is 128, not a multiple of 256 (128 times rows = 2): \
             each part is whole tiles"
        ]
    );
    assert!(
        check(
            &dir,
            &spec("[256, 96]", "[DYNAMIC]", "[256, 96]", "{ rows: 2 }")
        )
        .is_ok()
    );
}

#[test]
fn a_grid_past_the_launch_limit_is_an_error_at_the_spec() {
    let dir = with_template(&GRID.replace("max: 64", "max: 4096").replace(
        "blocks: { rule: grid, options: [rows, cols] }",
        "blocks: { rule: grid, options: [rows, cols, rows] }",
    ));
    assert!(
        check(
            &dir,
            &spec(
                "[DYNAMIC, DYNAMIC]",
                "[DYNAMIC]",
                "[DYNAMIC, DYNAMIC]",
                "{}"
            )
        )
        .unwrap_err()[0]
            .contains("`blocks`, `options`: `rows` is named twice")
    );
    let dir = with_template(&GRID.replace("max: 64", "max: 4096"));
    let t = pypto_build::display_path(&dir.join("t.hbs"));
    assert_eq!(
        check(
            &dir,
            &spec(
                "[DYNAMIC, DYNAMIC]",
                "[DYNAMIC]",
                "[DYNAMIC, DYNAMIC]",
                "{ rows: 256, cols: 256 }",
            )
        )
        .unwrap_err(),
        [format!(
            "k.yaml:4:16: kernel `k`: {t} launches one block per cell of a grid of rows = 256 by \
             cols = 256, more than the 65535 blocks a launch may have"
        )]
    );
}

#[test]
fn a_malformed_grid_or_times_is_located_in_the_template() {
    let head = "---\nparams:\n  - { name: x }\n  - { name: out, output: true }\n\
                options:\n  n: { type: int, default: 2, min: 1, max: 8 }\n  \
                b: { type: bool, default: false }\n";
    let cases: &[(&str, &str)] = &[
        (
            "blocks: { rule: grid }\n",
            "t.hbs:8:9: template contract: `blocks`: the grid rule needs `options`, the int \
             options whose product is the block count, e.g. `{ rule: grid, options: [split_m, \
             split_n] }`",
        ),
        (
            "blocks: { rule: grid, options: [n, m] }\n",
            "t.hbs:8:36: template contract: `blocks`, `options`: no option `m`; declare it under \
             `options:` — did you mean `n`?",
        ),
        (
            "blocks: { rule: grid, options: [b] }\n",
            "t.hbs:8:33: template contract: `blocks`, `options`: option `b` is a bool; this needs \
             an int option",
        ),
        (
            "blocks: { rule: grid, param: x, options: [n] }\n",
            "t.hbs:8:23: template contract: `blocks`: this rule takes no `param`; it takes `rule` \
             or `options`",
        ),
        (
            "blocks: { rule: leading }\n",
            "t.hbs:8:9: template contract: `blocks`: the leading rule needs `param`",
        ),
        (
            "blocks: { rule: grids, options: [n] }\n",
            "t.hbs:8:17: template contract: `blocks`, `rule`: unknown rule `grids`; expected rows, \
             elements, leading or grid — did you mean `grid`?",
        ),
        (
            "relations:\n  - multiple_of: { axis: x.0, of: 16, times: b }\n",
            "t.hbs:9:46: template contract: `multiple_of`, `times`: option `b` is a bool; this \
             needs an int option",
        ),
    ];
    for (tail, want) in cases {
        let dir = with_template(&format!("{head}{tail}---\n"));
        let got = check(&dir, &spec("[4, 4]", "[4]", "[4, 4]", "{}")).unwrap_err();
        assert_eq!(got.join("\n"), *want, "{tail}");
    }
}

#[test]
fn a_workspace_is_sized_by_the_grid_and_needs_one() {
    let dir = with_template(&GRID.replace(
        "blocks: { rule: grid, options: [rows, cols] }",
        "blocks: { rule: grid, options: [rows, cols] }\nworkspace: { shared: 100, per_block: 7 }",
    ));
    let k = &check(
        &dir,
        &spec(
            "[DYNAMIC, DYNAMIC]",
            "[DYNAMIC]",
            "[DYNAMIC, DYNAMIC]",
            "{ rows: 2 }",
        ),
    )
    .unwrap()
    .kernels[0];
    // 100 shared bytes and 7 for each of the 2 × 6 blocks.
    assert_eq!(k.workspace, Some(184));
    let cases: &[(&str, &str)] = &[
        (
            "blocks: { rule: rows, param: x }\nworkspace: { per_block: 64 }\n",
            "t.hbs:9:12: template contract: `workspace`: needs `blocks: { rule: grid, … }`, so \
             that its size is known when the kernel is built",
        ),
        (
            "blocks: { rule: grid, options: [n] }\nworkspace: { shared: 0 }\n",
            "t.hbs:9:12: template contract: `workspace`: give `per_block` or `shared` a number of \
             bytes above 0",
        ),
        (
            "blocks: { rule: grid, options: [n] }\nworkspace: { per_block: 67108865 }\n",
            "t.hbs:9:25: template contract: `workspace`, `per_block`: 67108865 is not from 0 to \
             67108864",
        ),
        (
            "blocks: { rule: grid, options: [n] }\nworkspace: { per_blok: 64 }\n",
            "t.hbs:9:14: template contract: `workspace`: unknown key `per_blok`; expected \
             `per_block` or `shared` — did you mean `per_block`?",
        ),
    ];
    let head = "---\nparams:\n  - { name: x }\n  - { name: out, output: true }\n\
                options:\n  n: { type: int, default: 2, min: 1, max: 8 }\n  \
                b: { type: bool, default: false }\n";
    for (tail, want) in cases {
        let dir = with_template(&format!("{head}{tail}---\n"));
        let got = check(&dir, &spec("[4, 4]", "[4]", "[4, 4]", "{}")).unwrap_err();
        assert_eq!(got.join("\n"), *want, "{tail}");
    }
}

#[test]
fn a_relation_may_hold_only_when_a_bool_option_is_set() {
    // builtin/matmul ties b's axes by `transpose_b`: [K, N], or [N, K].
    let dir = with_template(GRID);
    let matmul = |options: &str, b: &str| {
        check(
            &dir,
            &format!(
                "kernels:\n  mm:\n    template: builtin/matmul\n    options: {options}\n    params:\n      \
                 a: {{ dtype: DT_FP16, shape: [DYNAMIC, 96] }}\n      \
                 b: {{ dtype: DT_FP16, shape: {b} }}\n      \
                 out: {{ dtype: DT_FP16, shape: [DYNAMIC, 32], output: true }}\n"
            ),
        )
    };
    assert!(matmul("{}", "[96, 32]").is_ok());
    assert!(matmul("{ transpose_b: true }", "[32, 96]").is_ok());
    assert_eq!(
        matmul("{ transpose_b: true }", "[96, 32]").unwrap_err(),
        [
            "k.yaml:7:40: kernel `mm`: `b.1` is fixed at 32 but must equal `a.1`, fixed at 96 \
             (builtin/matmul requires them to be equal)",
            "k.yaml:8:47: kernel `mm`: `out.1` is fixed at 32 but must equal `b.0`, fixed at 96 \
             (builtin/matmul requires them to be equal)"
        ]
    );
    assert_eq!(
        matmul("{ transpose_b: false }", "[32, 96]").unwrap_err(),
        [
            "k.yaml:7:36: kernel `mm`: `b.0` is fixed at 32 but must equal `a.1`, fixed at 96 \
             (builtin/matmul requires them to be equal)",
            "k.yaml:8:47: kernel `mm`: `out.1` is fixed at 32 but must equal `b.1`, fixed at 96 \
             (builtin/matmul requires them to be equal)"
        ]
    );
    // Malformed conditions are located in the template.
    let head = "---\nparams:\n  - { name: x }\n  - { name: out, output: true }\n\
                options:\n  n: { type: int, default: 2, min: 1, max: 8 }\n  \
                b: { type: bool, default: false }\n";
    let cases: &[(&str, &str)] = &[
        (
            "relations:\n  - { same_shape: [x, out], when: n }\n",
            "t.hbs:9:35: template contract: `relations` entry, `when`: option `n` is an int; this \
             needs a bool option",
        ),
        (
            "relations:\n  - { same_shape: [x, out], unless: bb }\n",
            "t.hbs:9:37: template contract: `relations` entry, `unless`: no option `bb`; declare it \
             under `options:` — did you mean `b`?",
        ),
        (
            "relations:\n  - { same_shape: [x, out], when: b, unless: b }\n",
            "t.hbs:9:5: template contract: `relations` entry: give `when` or `unless`, not both",
        ),
        (
            "relations:\n  - { when: b }\n",
            "t.hbs:9:5: template contract: `relations` entry: `when`/`unless` needs a relation \
             beside it, e.g. `{ same_dim: [a.1, b.0], unless: transpose_b }`",
        ),
    ];
    for (tail, want) in cases {
        let dir = with_template(&format!("{head}{tail}---\n"));
        let got = check(&dir, &spec("[4, 4]", "[4]", "[4, 4]", "{}")).unwrap_err();
        assert_eq!(got.join("\n"), *want, "{tail}");
    }
}

const OPTIONAL: &str = "---
params:
  - { name: x, rank: 2 }
  - { name: w, rank: 1, when: with_w, dtypes: [DT_FP16] }
  - { name: out, rank: 2, output: true, dtypes: [DT_FP32, DT_FP16] }
options:
  with_w: { type: bool, default: false, doc: adds w }
relations:
  - same_dim: [w.0, x.last]
  - same_shape: [x, out]
dtypes: [DT_FP32]
blocks: { rule: rows, param: out }
---
";

/// Two params, `x` and `out`: the optional `w` is left out.
fn spec_without_w(out_dtype: &str, options: &str) -> String {
    format!(
        "kernels:\n  k:\n    template: t.hbs\n    options: {options}\n    params:\n      \
         a: {{ dtype: DT_FP32, shape: [4, 8] }}\n      \
         c: {{ dtype: {out_dtype}, shape: [4, 8], output: true }}\n"
    )
}

/// A param with `when:` is there only when its option is on: the params
/// after it move up, its relations go with it, and a kernel that declares
/// it with the option off is told which option it needs.
#[test]
fn an_optional_param_is_there_only_under_its_option() {
    let dir = with_template(OPTIONAL);
    let t = pypto_build::display_path(&dir.join("t.hbs"));
    let model = check(&dir, &spec_without_w("DT_FP16", "{}")).unwrap();
    let k = &model.kernels[0];
    assert_eq!(k.roles, ["x", "out"]);
    assert_eq!(k.blocks, BlockRule::Rows { param: 1 });

    let with = |w: &str, options: &str| {
        format!(
            "kernels:\n  k:\n    template: t.hbs\n    options: {options}\n    params:\n      \
             a: {{ dtype: DT_FP32, shape: [4, 8] }}\n      b: {w}\n      \
             c: {{ dtype: DT_FP32, shape: [4, 8], output: true }}\n"
        )
    };
    let model = check(
        &dir,
        &with("{ dtype: DT_FP16, shape: [8] }", "{ with_w: true }"),
    )
    .unwrap();
    let k = &model.kernels[0];
    assert_eq!(k.roles, ["x", "w", "out"]);
    assert_eq!(k.blocks, BlockRule::Rows { param: 2 });

    assert_eq!(
        check(
            &dir,
            &with("{ dtype: DT_FP16, shape: [7] }", "{ with_w: true }")
        )
        .unwrap_err(),
        [format!(
            "k.yaml:7:36: kernel `k`: `b.0` is fixed at 7 but must equal `a.1`, fixed at 8 ({t} \
             requires them to be equal)"
        )]
    );
    assert_eq!(
        check(&dir, &with("{ dtype: DT_FP16, shape: [8] }", "{}")).unwrap_err(),
        [format!(
            "k.yaml:3:15: kernel `k`: {t} takes 2 params: x (an input tensor), out (an output \
             tensor); this kernel declares 3 (`w` only with `with_w: true`)"
        )]
    );
}

/// A param's own `dtypes` free it from the contract's one dtype.
#[test]
fn a_param_may_take_its_own_dtypes() {
    let dir = with_template(OPTIONAL);
    let t = pypto_build::display_path(&dir.join("t.hbs"));
    check(&dir, &spec_without_w("DT_FP32", "{}")).unwrap();
    assert_eq!(
        check(&dir, &spec_without_w("DT_BF16", "{}")).unwrap_err(),
        [format!(
            "k.yaml:7:19: kernel `k`, param `c`: {t} takes `out` in DT_FP32, DT_FP16, not DT_BF16"
        )]
    );
    let w_in_fp32 = "kernels:\n  k:\n    template: t.hbs\n    options: { with_w: true }\n    \
                     params:\n      a: { dtype: DT_FP32, shape: [4, 8] }\n      \
                     b: { dtype: DT_FP32, shape: [8] }\n      \
                     c: { dtype: DT_FP32, shape: [4, 8], output: true }\n";
    assert_eq!(
        check(&dir, w_in_fp32).unwrap_err(),
        [format!(
            "k.yaml:7:19: kernel `k`, param `b`: {t} takes `w` in DT_FP16, not DT_FP32"
        )]
    );
}

// ---- `equals:` relations ---------------------------------------------------

/// Attention's shape relations as a user template writes them: `q` holds
/// `heads` heads of `D`, `k` `kv_heads` heads of the same `D`.
const EQUALS: &str = "---
params:
  - { name: q, rank: 2 }
  - { name: k, rank: 2 }
  - { name: out, rank: 2, output: true }
options:
  heads: { type: int, default: 1, min: 1, max: 64 }
  kv_heads: { type: int, default: 1, min: 1, max: 64 }
  rotary: { type: bool, default: false }
relations:
  - same_shape: [q, out]
  - equals: \"q.last / heads == k.last / kv_heads\"
  - { equals: \"k.0 * 2 == q.0 + 4\", when: rotary }
---
// body
";

fn equals_spec(q: &str, k: &str, options: &str) -> String {
    format!(
        "kernels:\n  attn:\n    template: t.hbs\n    options: {options}\n    params:\n      \
         query: {{ dtype: DT_FP32, shape: {q} }}\n      key: {{ dtype: DT_FP32, shape: {k} }}\n      \
         out: {{ dtype: DT_FP32, shape: {q}, output: true }}\n"
    )
}

#[test]
fn equals_on_fixed_and_static_sizes_is_checked_at_build_time() {
    let dir = with_template(EQUALS);
    let t = pypto_build::display_path(&dir.join("t.hbs"));
    let err =
        |q: &str, k: &str, options: &str| check(&dir, &equals_spec(q, k, options)).unwrap_err();
    assert_eq!(
        err("[4, 256]", "[4, 96]", "{ heads: 4, kv_heads: 1 }"),
        [format!(
            "k.yaml:2:3: kernel `attn`: `query.1` is 256 and `key.1` is 96, but {t} needs \
             `q.last / heads == k.last / kv_heads` with heads = 4 and kv_heads = 1 ({t}:12:5): \
             the left side is 64, the right 96"
        )]
    );
    assert_eq!(
        err("[4, 250]", "[4, 64]", "{ heads: 4 }"),
        [format!(
            "k.yaml:2:3: kernel `attn`: `query.1` is 250 and `key.1` is 64, but {t} needs \
             `q.last / heads == k.last / kv_heads` with heads = 4 and kv_heads = 1 ({t}:12:5): \
             the division 250 / 4 leaves a remainder"
        )]
    );
    // STATIC sizes: each specialisation; the first that breaks it is named.
    let statics = equals_spec("[4, STATIC]", "[4, 64]", "{ heads: 2 }")
        + "    static: { query.1: [128, 96] }\n";
    assert_eq!(
        check(&dir, &statics).unwrap_err(),
        [format!(
            "k.yaml:2:3: kernel `attn`: `query.1` is 96 and `key.1` is 64, but {t} needs \
             `q.last / heads == k.last / kv_heads` with heads = 2 and kv_heads = 1 ({t}:12:5): \
             the left side is 48, the right 64"
        )]
    );
    // An entry with `when:` holds only with its option on.
    assert!(check(&dir, &equals_spec("[4, 64]", "[5, 64]", "{}")).is_ok());
    assert_eq!(
        err("[4, 64]", "[5, 64]", "{ rotary: true }"),
        [format!(
            "k.yaml:2:3: kernel `attn`: `key.0` is 5 and `query.0` is 4, but {t} needs \
             `k.0 * 2 == q.0 + 4` ({t}:13:7): the left side is 10, the right 8"
        )]
    );
    // Sizes that keep it build, with nothing left for run time.
    let m = check(
        &dir,
        &equals_spec("[4, 256]", "[4, 128]", "{ heads: 4, kv_heads: 2 }"),
    )
    .unwrap();
    assert!(m.kernels[0].equations.is_empty());
}

#[test]
fn equals_on_a_dynamic_size_is_left_to_the_wrapper() {
    use pypto_build::model::Step;
    let dir = with_template(EQUALS);
    let t = pypto_build::display_path(&dir.join("t.hbs"));
    let m = check(
        &dir,
        &equals_spec(
            "[DYNAMIC, DYNAMIC]",
            "[DYNAMIC, 64]",
            "{ heads: 8, kv_heads: 2 }",
        ),
    )
    .unwrap();
    let e = &m.kernels[0].equations;
    assert_eq!(e.len(), 1);
    assert_eq!(
        e[0].left,
        [Step::Size { param: 0, axis: 1 }, Step::Int(8), Step::Div]
    );
    assert_eq!(
        e[0].right,
        [Step::Size { param: 1, axis: 1 }, Step::Int(2), Step::Div]
    );
    assert_eq!(e[0].axes, [(0, 1), (1, 1)]);
    assert_eq!(
        e[0].why,
        format!(
            "{t} needs `q.last / heads == k.last / kv_heads` with heads = 8 and kv_heads = 2 \
             ({t}:12:5)"
        )
    );
}

#[test]
fn a_malformed_equals_is_located_in_the_template() {
    let head = "---\nparams:\n  - { name: x, rank: 2 }\n  - { name: s, kind: scalar }\n  \
                - { name: out, rank: 2, output: true }\n\
                options:\n  heads: { type: int, default: 2, min: 1, max: 8 }\n  \
                b: { type: bool, default: false }\nrelations:\n";
    let cases: &[(&str, &str)] = &[
        (
            "  - equals: \"x.last / head == out.last\"\n",
            "t.hbs:10:13: template contract: `equals` (`x.last / head == out.last`): no option \
             `head`; declare it under `options:` — did you mean `heads`?",
        ),
        (
            "  - equals: \"xx.last == 2 * out.0\"\n",
            "t.hbs:10:13: template contract: `equals` (`xx.last == 2 * out.0`): no param `xx`; \
             the params are `x`, `s` or `out` — did you mean `x`?",
        ),
        (
            "  - equals: \"x.2 == 2 * out.0\"\n",
            "t.hbs:10:13: template contract: `equals` (`x.2 == 2 * out.0`): `x` has 2 axes; \
             there is no axis 2",
        ),
        (
            "  - equals: \"s.0 == 2 * out.0\"\n",
            "t.hbs:10:13: template contract: `equals` (`s.0 == 2 * out.0`): `s` is a scalar; \
             this needs a tensor",
        ),
        (
            "  - equals: \"x.0 == b * out.0\"\n",
            "t.hbs:10:13: template contract: `equals` (`x.0 == b * out.0`): option `b` is a bool; \
             this needs an int option",
        ),
        (
            "  - equals: \"x == out.0\"\n",
            "t.hbs:10:13: template contract: `equals` (`x == out.0`): `x` is a param; name one \
             of its axes, `x.0` or `x.last`",
        ),
        (
            "  - equals: \"x.0 = out.0 * 2\"\n",
            "t.hbs:10:13: template contract: `equals` (`x.0 = out.0 * 2`): `=` alone is not a \
             comparison; write `==`",
        ),
        (
            "  - equals: \"x.0 / 0 == out.0\"\n",
            "t.hbs:10:13: template contract: `equals` (`x.0 / 0 == out.0`): `/ 0` divides by zero",
        ),
        (
            "  - equals: \"x.0 * 2\"\n",
            "t.hbs:10:13: template contract: `equals` (`x.0 * 2`): needs exactly one `==` between \
             two expressions, not 0; e.g. `q.last / heads == k.last / kv_heads`",
        ),
        (
            "  - equals: \"(x.0 + 1 == out.0\"\n",
            "t.hbs:10:13: template contract: `equals` (`(x.0 + 1 == out.0`): expected `)`, found \
             `==`",
        ),
        (
            "  - equals: \"heads * 2 == 4\"\n",
            "t.hbs:10:13: template contract: `equals` (`heads * 2 == 4`): names no axis, so it \
             checks nothing about the tensors",
        ),
        (
            "  - equals: \"x.last == out.0\"\n",
            "t.hbs:10:13: template contract: `equals` (`x.last == out.0`): two axes that are \
             equal are one dim; write `same_dim: [x.last, out.0]`",
        ),
        (
            "  - equals: [x.0, out.0]\n",
            "t.hbs:10:13: template contract: `equals`: expected a string, found a list",
        ),
        (
            "  - { equals: \"x.0 == 2 * out.0\", when: heads }\n",
            "t.hbs:10:41: template contract: `relations` entry, `when`: option `heads` is an int; \
             this needs a bool option",
        ),
    ];
    for (tail, want) in cases {
        let dir = with_template(&format!("{head}{tail}---\n"));
        let got = check(&dir, &spec("[4, 4]", "[4]", "[4, 4]", "{}")).unwrap_err();
        assert_eq!(got.join("\n"), *want, "{tail}");
    }
    // Hostile input: bounded length and nesting.
    let deep = format!(
        "  - equals: \"{}x.0{} == out.0\"\n",
        "(".repeat(20),
        ")".repeat(20)
    );
    let long = format!("  - equals: \"x.0 == {}1\"\n", "1 + ".repeat(70));
    for (tail, want) in [
        (deep, "parentheses nested more than 16 deep"),
        (long, "longer than 256 bytes"),
    ] {
        let dir = with_template(&format!("{head}{tail}---\n"));
        let got = check(&dir, &spec("[4, 4]", "[4]", "[4, 4]", "{}")).unwrap_err();
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].starts_with("t.hbs:10:13: template contract: `equals` (`"),
            "{got:?}"
        );
        assert!(got[0].ends_with(want), "{got:?}");
    }
}
