//! Numerics of every builtin template against plain Rust, at dynamic sizes
//! around every tile and 32-byte boundary, zero-size axes included, in each
//! dtype.
//!
//! Tolerance: none. Each output element is one operation whose rounding the
//! kernels define: fp32 operations are IEEE single; fp16 values are computed
//! in fp32 and rounded to nearest-even fp16 (what one correctly rounded
//! fp16 vector operation returns); bf16, which the Atlas A2/A3 vector unit
//! cannot compute in, is widened to fp32, computed, and rounded to
//! nearest-even bf16. The references below take the same steps, so results
//! must be bit-identical.

use pypto_rt::{Const, Device, Tensor};
use pypto_tests::{
    Float, add_bias_reference, data, data_as, kernels, same_bits_at_every_block_count,
};

/// Sizes that cross 32-byte boundaries (8 fp32 or 16 fp16 elements), tiles
/// (4096 elements) and blocks (8192 elements per block): the sweep of the
/// elementwise kernels' `SIZES` (one DYNAMIC `N`, the same for each), and
/// an empty tensor, which the sweep does not try.
fn sizes() -> Vec<usize> {
    let mut out = vec![0];
    out.extend(
        pypto_rt::testing::Sweep::new(&kernels::relu_f32::SIZES)
            .max_elements(1 << 18)
            .cases()
            .iter()
            .map(|c| c.dim("N")),
    );
    out
}

type Vector<T> = Tensor<T, (usize,)>;
type Binary<T> = fn(&Vector<T>, &Vector<T>, &mut Vector<T>) -> Result<(), pypto_rt::Error>;
type Unary<T> = fn(&Vector<T>, &mut Vector<T>) -> Result<(), pypto_rt::Error>;

fn vec1<T: Float>(dev: &Device, v: &[T]) -> Tensor<T, (usize,)> {
    dev.tensor_from(v, (v.len(),)).unwrap()
}

fn check_binary<T: Float>(name: &str, kernel: Binary<T>, op: fn(f32, f32) -> f32) {
    let dev = Device::host();
    for n in sizes() {
        let a = data_as::<T>(n, 1);
        let b = data_as::<T>(n, 2);
        let mut out = dev.zeros((n,)).unwrap();
        kernel(&vec1(&dev, &a), &vec1(&dev, &b), &mut out).unwrap();
        let want: Vec<T> = a
            .iter()
            .zip(&b)
            .map(|(x, y)| T::from_f32(op(x.to_f32(), y.to_f32())))
            .collect();
        assert_eq!(out.to_vec().unwrap(), want, "{name} {} n={n}", T::NAME);
    }
}

fn check_unary<T: Float>(name: &str, kernel: Unary<T>, op: fn(f32) -> f32) {
    let dev = Device::host();
    for n in sizes() {
        let x = data_as::<T>(n, 3);
        let mut out = dev.zeros((n,)).unwrap();
        kernel(&vec1(&dev, &x), &mut out).unwrap();
        let want: Vec<T> = x.iter().map(|v| T::from_f32(op(v.to_f32()))).collect();
        assert_eq!(out.to_vec().unwrap(), want, "{name} {} n={n}", T::NAME);
    }
}

#[test]
fn add_in_every_dtype() {
    check_binary::<f32>(
        "add",
        |a0, a1, a2| kernels::add_f32(a0, a1, a2),
        |a, b| a + b,
    );
    check_binary::<half::f16>(
        "add",
        |a0, a1, a2| kernels::add_f16(a0, a1, a2),
        |a, b| a + b,
    );
    check_binary::<half::bf16>(
        "add",
        |a0, a1, a2| kernels::add_bf16(a0, a1, a2),
        |a, b| a + b,
    );
}

#[test]
fn mul_in_every_dtype() {
    check_binary::<f32>(
        "mul",
        |a0, a1, a2| kernels::mul_f32(a0, a1, a2),
        |a, b| a * b,
    );
    check_binary::<half::f16>(
        "mul",
        |a0, a1, a2| kernels::mul_f16(a0, a1, a2),
        |a, b| a * b,
    );
    check_binary::<half::bf16>(
        "mul",
        |a0, a1, a2| kernels::mul_bf16(a0, a1, a2),
        |a, b| a * b,
    );
}

#[test]
fn relu_in_every_dtype() {
    check_unary::<f32>("relu", |a0, a1| kernels::relu_f32(a0, a1), |x| x.max(0.0));
    check_unary::<half::f16>("relu", |a0, a1| kernels::relu_f16(a0, a1), |x| x.max(0.0));
    check_unary::<half::bf16>("relu", |a0, a1| kernels::relu_bf16(a0, a1), |x| x.max(0.0));
}

type BiasKernel<T> = fn(
    &Tensor<T, (usize, usize)>,
    &Tensor<T, (usize,)>,
    &mut Tensor<T, (usize, usize)>,
) -> Result<(), pypto_rt::Error>;

fn check_add_bias<T: Float>(kernel: BiasKernel<T>) {
    let dev = Device::host();
    // A sampled grid of batch x hidden, not only the diagonal.
    let batches = [0usize, 1, 2, 7, 33];
    let hiddens = [0usize, 1, 2, 7, 8, 31, 32, 33, 127, 1000, 4097];
    for (i, &b) in batches.iter().enumerate() {
        for (j, &h) in hiddens.iter().enumerate() {
            if (i + j) % 2 == 1 && b > 2 {
                continue; // sampled: large batches on every other hidden size
            }
            let x = data_as::<T>(b * h, 10 + i as u64);
            let bias = data_as::<T>(h, 20 + j as u64);
            let mut out = dev.zeros((b, h)).unwrap();
            kernel(
                &dev.tensor_from(&x, (b, h)).unwrap(),
                &dev.tensor_from(&bias, (h,)).unwrap(),
                &mut out,
            )
            .unwrap();
            assert_eq!(
                out.to_vec().unwrap(),
                add_bias_reference(&x, &bias),
                "add_bias {} b={b} h={h}",
                T::NAME
            );
        }
    }
}

#[test]
fn add_bias_in_every_dtype() {
    check_add_bias::<f32>(|a0, a1, a2| kernels::add_bias_f32(a0, a1, a2));
    check_add_bias::<half::f16>(|a0, a1, a2| kernels::add_bias_f16(a0, a1, a2));
    check_add_bias::<half::bf16>(|a0, a1, a2| kernels::add_bias_bf16(a0, a1, a2));
}

#[test]
fn add_bias_over_three_axes() {
    let dev = Device::host();
    for (d0, d1) in [(2usize, 3usize), (0, 5), (4, 1), (1, 0), (9, 7)] {
        let x = data(d0 * d1 * 33, 5);
        let bias = data(33, 6);
        let mut out = dev.zeros((d0, d1, Const::<33>)).unwrap();
        kernels::add_bias_3d(
            &dev.tensor_from(&x, (d0, d1, Const::<33>)).unwrap(),
            &dev.tensor_from(&bias, (Const::<33>,)).unwrap(),
            &mut out,
        )
        .unwrap();
        assert_eq!(
            out.to_vec().unwrap(),
            add_bias_reference(&x, &bias),
            "{d0}x{d1}x33"
        );
    }
}

#[test]
fn pypto_add_bias_example_at_any_batch() {
    let dev = Device::host();
    let bias = data(128, 7);
    let bias_t = dev.tensor_from(&bias, (Const::<128>,)).unwrap();
    for batch in [0usize, 1, 2, 8, 48, 49, 1000] {
        let x = data(batch * 128, batch as u64);
        let mut out = dev.zeros((batch, Const::<128>)).unwrap();
        kernels::add_bias(
            &dev.tensor_from(&x, (batch, Const::<128>)).unwrap(),
            &bias_t,
            &mut out,
        )
        .unwrap();
        assert_eq!(
            out.to_vec().unwrap(),
            add_bias_reference(&x, &bias),
            "batch {batch}"
        );
        let stats = pypto_rt::last_launch().unwrap();
        // One block per row, up to the 48 vector cores of an Atlas A2.
        assert_eq!(stats.blocks, batch.min(48) as u32, "batch {batch}");
    }
}

fn check_relu_rows<const H: usize>()
where
    Const<H>: kernels::relu_rows::XAxis1,
{
    let dev = Device::host();
    for rows in [0usize, 1, 5] {
        let x = data(rows * H, H as u64);
        let mut y = dev.zeros((rows, Const::<H>)).unwrap();
        kernels::relu_rows(&dev.tensor_from(&x, (rows, Const::<H>)).unwrap(), &mut y).unwrap();
        let want: Vec<f32> = x.iter().map(|v| v.max(0.0)).collect();
        assert_eq!(y.to_vec().unwrap(), want, "relu_rows H={H} rows={rows}");
    }
}

#[test]
fn static_specialisations_each_run() {
    check_relu_rows::<7>();
    check_relu_rows::<64>();
    check_relu_rows::<100>();
}

#[test]
fn user_template_with_a_scalar() {
    let dev = Device::host();
    for n in [0usize, 1, 33, 5000] {
        let x = data(n, 9);
        let mut y = dev.zeros((n,)).unwrap();
        kernels::scale(&dev.tensor_from(&x, (n,)).unwrap(), -2.5, &mut y).unwrap();
        let want: Vec<f32> = x.iter().map(|v| v * -2.5).collect();
        assert_eq!(y.to_vec().unwrap(), want, "scale n={n}");
    }
}

/// A NaN-filled `(n,)` output, so that elements no block writes show.
fn nan_vec<T: Float>(dev: &Device, n: usize) -> Vector<T> {
    vec1(dev, &vec![T::from_f32(f32::NAN); n])
}

fn every_count_binary<T: Float>(name: &str, kernel: Binary<T>, op: fn(f32, f32) -> f32) {
    let dev = Device::host();
    // 3 blocks of 8192 elements naturally; 48 blocks get 416 or 417 each.
    let n = 20_000;
    let (a, b) = (data_as::<T>(n, 1), data_as::<T>(n, 2));
    let (a_t, b_t) = (vec1(&dev, &a), vec1(&dev, &b));
    let got = same_bits_at_every_block_count(&format!("{name} {}", T::NAME), || {
        let mut out = nan_vec::<T>(&dev, n);
        kernel(&a_t, &b_t, &mut out).unwrap();
        out.to_vec().unwrap()
    });
    let want: Vec<T> = a
        .iter()
        .zip(&b)
        .map(|(x, y)| T::from_f32(op(x.to_f32(), y.to_f32())))
        .collect();
    assert_eq!(got, want, "{name} {}", T::NAME);
}

fn every_count_relu<T: Float>(kernel: Unary<T>) {
    let dev = Device::host();
    let n = 20_000;
    let x = data_as::<T>(n, 3);
    let x_t = vec1(&dev, &x);
    let got = same_bits_at_every_block_count(&format!("relu {}", T::NAME), || {
        let mut out = nan_vec::<T>(&dev, n);
        kernel(&x_t, &mut out).unwrap();
        out.to_vec().unwrap()
    });
    let want: Vec<T> = x.iter().map(|v| T::from_f32(v.to_f32().max(0.0))).collect();
    assert_eq!(got, want, "relu {}", T::NAME);
}

/// add_bias at every block count: rows of one column tile (7 x 33: 7 blocks
/// naturally, up to 41 with no row; 50 x 40: more rows than blocks), whose
/// bias each block loads once, and of two (5 x 4100: 4096 + 4 columns),
/// whose bias is loaded per tile.
fn every_count_add_bias<T: Float>(kernel: BiasKernel<T>) {
    let dev = Device::host();
    for (b, h) in [(7, 33), (50, 40), (5, 4100)] {
        let x = data_as::<T>(b * h, 11);
        let bias = data_as::<T>(h, 12);
        let (x_t, bias_t) = (
            dev.tensor_from(&x, (b, h)).unwrap(),
            dev.tensor_from(&bias, (h,)).unwrap(),
        );
        let what = format!("add_bias {} {b}x{h}", T::NAME);
        let got = same_bits_at_every_block_count(&what, || {
            let nan = vec![T::from_f32(f32::NAN); b * h];
            let mut out = dev.tensor_from(&nan, (b, h)).unwrap();
            kernel(&x_t, &bias_t, &mut out).unwrap();
            out.to_vec().unwrap()
        });
        assert_eq!(got, add_bias_reference(&x, &bias), "{what}");
    }
}

#[test]
fn every_block_count_gives_the_same_numbers() {
    every_count_binary::<f32>(
        "add",
        |a0, a1, a2| kernels::add_f32(a0, a1, a2),
        |a, b| a + b,
    );
    every_count_binary::<half::f16>(
        "add",
        |a0, a1, a2| kernels::add_f16(a0, a1, a2),
        |a, b| a + b,
    );
    every_count_binary::<half::bf16>(
        "add",
        |a0, a1, a2| kernels::add_bf16(a0, a1, a2),
        |a, b| a + b,
    );
    every_count_binary::<f32>(
        "mul",
        |a0, a1, a2| kernels::mul_f32(a0, a1, a2),
        |a, b| a * b,
    );
    every_count_binary::<half::f16>(
        "mul",
        |a0, a1, a2| kernels::mul_f16(a0, a1, a2),
        |a, b| a * b,
    );
    every_count_binary::<half::bf16>(
        "mul",
        |a0, a1, a2| kernels::mul_bf16(a0, a1, a2),
        |a, b| a * b,
    );
    every_count_relu::<f32>(|a0, a1| kernels::relu_f32(a0, a1));
    every_count_relu::<half::f16>(|a0, a1| kernels::relu_f16(a0, a1));
    every_count_relu::<half::bf16>(|a0, a1| kernels::relu_bf16(a0, a1));
    every_count_add_bias::<f32>(|a0, a1, a2| kernels::add_bias_f32(a0, a1, a2));
    every_count_add_bias::<half::f16>(|a0, a1, a2| kernels::add_bias_f16(a0, a1, a2));
    every_count_add_bias::<half::bf16>(|a0, a1, a2| kernels::add_bias_bf16(a0, a1, a2));
}

#[test]
fn a_launch_with_no_work_stays_at_zero_blocks() {
    let dev = Device::host();
    let empty = vec1::<f32>(&dev, &[]);
    let mut out = vec1::<f32>(&dev, &[]);
    pypto_rt::with_host_blocks(5, || kernels::add_f32(&empty, &empty, &mut out))
        .unwrap()
        .unwrap();
    assert_eq!(pypto_rt::last_launch().unwrap().blocks, 0);
    // One block's worth of work, forced onto 5 blocks.
    let one = vec1(&dev, &[1.5f32]);
    let mut out = vec1(&dev, &[0.0f32]);
    pypto_rt::with_host_blocks(5, || kernels::add_f32(&one, &one, &mut out))
        .unwrap()
        .unwrap();
    assert_eq!(pypto_rt::last_launch().unwrap().blocks, 5);
    assert_eq!(out.to_vec().unwrap(), [3.0]);
}

#[test]
fn forced_block_counts_outside_1_to_48_are_errors() {
    for bad in [0, 49, 1000] {
        let err = pypto_rt::with_host_blocks(bad, || unreachable!()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "pypto_rt::with_host_blocks: `{bad}` is not a block count; use a whole number \
                 from 1 to 48"
            )
        );
    }
}

/// Runs [`pypto_blocks_child`] in a child process with
/// `PYPTO_BLOCKS=value`; returns what it printed.
fn with_pypto_blocks(value: &str) -> String {
    let child = pypto_tests::child::run("pypto_blocks_child", &[(pypto_rt::BLOCKS_VAR, value)]);
    assert!(child.passed(), "{child:#?}");
    child.printed("child: ").join("\n")
}

/// As a child of [`pypto_blocks_is_read_from_the_environment`]: three
/// launches of `add_f32` (20000 elements, naturally 3 blocks; none; and
/// inside `with_host_blocks(2, ..)`), each printed as its result and block
/// count.
#[test]
#[ignore = "a child process of pypto_blocks_is_read_from_the_environment"]
fn pypto_blocks_child() {
    pypto_tests::child::enter("pypto_blocks_child");
    let dev = Device::host();
    for (n, forced) in [(20_000, None), (0, None), (20_000, Some(2))] {
        let a = vec1(&dev, &data(n, 1));
        let mut out = dev.zeros((n,)).unwrap();
        let result = match forced {
            None => kernels::add_f32(&a, &a, &mut out),
            Some(f) => {
                pypto_rt::with_host_blocks(f, || kernels::add_f32(&a, &a, &mut out)).unwrap()
            }
        };
        let blocks = pypto_rt::last_launch().map(|s| s.blocks);
        println!("child: {result:?} {blocks:?}");
    }
}

#[test]
fn pypto_blocks_is_read_from_the_environment() {
    assert_eq!(
        with_pypto_blocks("7"),
        "Ok(()) Some(7)\nOk(()) Some(0)\nOk(()) Some(2)"
    );
    assert_eq!(
        with_pypto_blocks(""),
        "Ok(()) Some(3)\nOk(()) Some(0)\nOk(()) Some(2)"
    );
    // A bad value fails every host launch, even one with no work, but not
    // one under with_host_blocks (which takes precedence).
    let err = "Err(BlockCount { setting: \"PYPTO_BLOCKS\", value: \"49\" }) None";
    assert_eq!(
        with_pypto_blocks("49"),
        format!("{err}\n{err}\nOk(()) Some(2)")
    );
    let e = pypto_rt::Error::BlockCount {
        setting: pypto_rt::BLOCKS_VAR,
        value: "49".into(),
    };
    assert_eq!(
        e.to_string(),
        "PYPTO_BLOCKS: `49` is not a block count; use a whole number from 1 to 48"
    );
}
