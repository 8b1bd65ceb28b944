//! A user template that declares a contract (tests/kernels/user/row_scale.hbs)
//! runs end to end on the host backend: its roles, typed options, block
//! rule and cube core kind are taken from its front matter, and its
//! relations are checked at run time with the messages builtins give.

use pypto_rt::{Device, last_launch};
use pypto_tests::{data, kernels};

/// result = input * weights * 3, weights broadcast over rows.
fn reference(input: &[f32], weights: &[f32]) -> Vec<f32> {
    let cols = weights.len();
    input
        .iter()
        .enumerate()
        .map(|(i, x)| x * weights[i % cols] * 3.0)
        .collect()
}

#[test]
fn computes_with_its_options_and_block_rule() {
    let dev = Device::host();
    for (rows, cols) in [(1, 4), (3, 8), (17, 12), (40, 100)] {
        let input = data(rows * cols, 1);
        let weights = data(cols, 2);
        let x = dev.tensor_from(&input, (rows, cols)).unwrap();
        let w = dev.tensor_from(&weights, (cols,)).unwrap();
        let mut out = dev.zeros((rows, cols)).unwrap();
        kernels::row_scale(&x, &w, &mut out).unwrap();
        assert_eq!(
            out.to_vec().unwrap(),
            reference(&input, &weights),
            "{rows}x{cols}"
        );
        // `blocks: { rule: leading, axes: 1, times: split }` with split = 2:
        // two blocks per row, capped at the core count.
        let blocks = last_launch().unwrap().blocks;
        assert_eq!(blocks, (2 * rows as u32).min(48), "{rows}x{cols}");
    }
}

#[test]
fn its_relations_are_checked_at_run_time() {
    let dev = Device::host();
    let run = |rows: usize, cols: usize, wlen: usize, out_rows: usize| {
        let x = dev.zeros::<f32, _>((rows, cols)).unwrap();
        let w = dev.zeros::<f32, _>((wlen,)).unwrap();
        let mut out = dev.zeros::<f32, _>((out_rows, cols)).unwrap();
        kernels::row_scale(&x, &w, &mut out)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        run(2, 8, 4, 2),
        "kernel `row_scale`: `weights.0` is 4 but `input.1` is 8; they must be equal because \
         user/row_scale.hbs ties these axes together"
            .replace("user/row_scale.hbs", &template_path())
    );
    assert_eq!(
        run(2, 8, 8, 3),
        "kernel `row_scale`: `result.0` is 3 but `input.0` is 2; they must be equal because \
         user/row_scale.hbs ties these axes together"
            .replace("user/row_scale.hbs", &template_path())
    );
    assert_eq!(
        run(2, 6, 6, 2),
        "kernel `row_scale`: `input.1` is 6, not a multiple of 4 (columns are read four at a time)"
    );
}

/// The template as the spec's dim messages name it.
fn template_path() -> String {
    "kernels/user/row_scale.hbs".to_owned()
}

/// The fenced block of kind `lang` that follows `heading` in `text`.
fn block_after<'t>(text: &'t str, heading: &str, lang: &str) -> &'t str {
    let section = &text[text.find(heading).expect("heading in the README")..];
    let fence = format!("```{lang}\n");
    let start = section.find(&fence).expect("block in the section") + fence.len();
    let len = section[start..].find("```\n").expect("closed block");
    &section[start..start + len]
}

#[test]
fn the_readme_holds_this_template_and_spec_unchanged() {
    let root = pypto_tests::workspace_root().display();
    let read = |p: &str| std::fs::read_to_string(format!("{root}/{p}")).unwrap();
    let readme = read("templates/README.md");
    let heading = "## A complete user template";
    assert_eq!(
        block_after(&readme, heading, "handlebars"),
        read("tests/kernels/user/row_scale.hbs")
    );
    assert_eq!(
        block_after(&readme, heading, "yaml"),
        read("tests/kernels/user.yaml")
    );
}

/// The templates README's example of axis indexing and the `common`
/// helpers (tests/kernels/user/double_rows.hbs): exact against plain Rust
/// at the sweep's sizes, and the README holds the template unchanged.
#[test]
fn the_axes_and_helpers_example_runs_and_is_the_readmes() {
    let dev = pypto_rt::Device::host();
    let cases = pypto_rt::testing::Sweep::new(&kernels::double_rows::SIZES)
        .max_elements(1 << 16)
        .run(pypto_rt::testing::Tolerance::exact(), |case| {
            let (r, c) = (case.dim("x.0"), case.dim("x.1"));
            let x = pypto_tests::data(r * c, case.seed());
            let mut out = dev.zeros((r, c))?;
            kernels::double_rows(&dev.tensor_from(&x, (r, c))?, &mut out)?;
            let want = x.iter().map(|&v| f64::from(v * 2.0)).collect();
            Ok((out.to_vec()?.into_iter().map(f64::from).collect(), want))
        })
        .unwrap();
    assert!(cases > 40, "{cases} cases");
    let root = pypto_tests::workspace_root().display();
    let read = |p: &str| std::fs::read_to_string(format!("{root}/{p}")).unwrap();
    assert_eq!(
        block_after(
            &read("templates/README.md"),
            "## Indexing axes, and the helpers of `common`",
            "handlebars"
        ),
        read("tests/kernels/user/double_rows.hbs")
    );
}
