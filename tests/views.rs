//! Views as kernel arguments on the host backend: row slices and reshapes
//! passed as inputs and outputs without copies, checked against plain Rust;
//! the emulation's bounds and the read-only protection of inputs with views
//! of one tensor on both sides of a call; adopted memory.

use pypto_rt::{Const, Device, Error, Tensor};
use pypto_tests::{data, kernels};

fn host() -> Device {
    Device::host()
}

/// `x + bias` per row of 128.
fn add_bias_ref(x: &[f32], bias: &[f32]) -> Vec<f32> {
    x.iter()
        .enumerate()
        .map(|(i, v)| v + bias[i % bias.len()])
        .collect()
}

#[test]
fn row_slices_are_kernel_inputs_and_outputs() {
    let dev = host();
    let x_data = data(8 * 128, 1);
    let bias_data = data(128, 2);
    let x = dev.tensor_from(&x_data, (8, Const::<128>)).unwrap();
    let bias = dev.tensor_from(&bias_data, (Const::<128>,)).unwrap();
    let mut out = dev.zeros::<f32, _>((16, Const::<128>)).unwrap();
    let out_ptr = out.as_ptr();

    // Rows 2..5 of x, written to rows 10..13 of the bigger output.
    let rows = x.slice(2..5).unwrap();
    let mut dst = out.slice_mut(10..13).unwrap();
    assert_eq!(
        dst.as_mut_ptr().cast_const(),
        out_ptr.wrapping_add(10 * 128)
    );
    kernels::add_bias(&rows, &bias, &mut dst).unwrap();
    // By value too: a view moves into the call.
    kernels::add_bias(x.slice(7..).unwrap(), &bias, out.slice_mut(15..).unwrap()).unwrap();

    let got = out.to_vec().unwrap();
    let want_rows = add_bias_ref(&x_data[2 * 128..5 * 128], &bias_data);
    assert_eq!(&got[10 * 128..13 * 128], want_rows.as_slice());
    assert_eq!(
        &got[15 * 128..],
        add_bias_ref(&x_data[7 * 128..], &bias_data).as_slice()
    );
    // Every other row is untouched.
    for row in (0..10).chain(13..15) {
        assert!(
            got[row * 128..(row + 1) * 128].iter().all(|&v| v == 0.0),
            "row {row} was written"
        );
    }
    // Sizes of views are checked like those of tensors.
    let err = kernels::add_bias(&rows, &bias, out.slice_mut(0..2).unwrap()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `add_bias`: `out.0` is 2 but `x.0` is 3; they must be equal because \
         builtin/add_bias ties these axes together"
    );
}

#[test]
fn runtime_sizes_reshape_into_a_3d_kernel() {
    let dev = host();
    let (b, s) = (3usize, 5usize);
    let x_data = data(b * s * 33, 3);
    let bias_data = data(33, 4);
    // `[T, 33]` rows, as another kernel would have produced them.
    let rows = dev.tensor_from(&x_data, (b * s, Const::<33>)).unwrap();
    let bias = dev.tensor_from(&bias_data, (Const::<33>,)).unwrap();
    let mut out_rows = dev.zeros::<f32, _>((b * s, Const::<33>)).unwrap();
    let (x_ptr, out_ptr) = (rows.as_ptr(), out_rows.as_ptr());

    // Borrowed views: (usize, Const<33>) -> (usize, usize, Const<33>).
    let x3 = rows.view().reshape((b, s, Const::<33>)).unwrap();
    let mut out3 = out_rows.view_mut().reshape((b, s, Const::<33>)).unwrap();
    assert_eq!(x3.as_ptr(), x_ptr);
    assert_eq!(out3.as_ptr(), out_ptr);
    kernels::add_bias_3d(&x3, &bias, &mut out3).unwrap();
    assert_eq!(
        out_rows.to_vec().unwrap(),
        add_bias_ref(&x_data, &bias_data)
    );

    // Owned: the tensor itself changes type, keeping its memory.
    let x3 = rows.reshape((b, s, Const::<33>)).unwrap();
    assert_eq!(x3.as_ptr(), x_ptr);
    let mut again = dev.zeros::<f32, _>((b, s, Const::<33>)).unwrap();
    // A batch slice of the 3-D view: batches 1..3.
    kernels::add_bias_3d(x3.slice(1..).unwrap(), &bias, again.slice_mut(1..).unwrap()).unwrap();
    let got = again.to_vec().unwrap();
    assert!(got[..s * 33].iter().all(|&v| v == 0.0));
    assert_eq!(&got[s * 33..], &add_bias_ref(&x_data, &bias_data)[s * 33..]);
    assert_eq!(
        x3.reshape((b, Const::<33>)).unwrap_err().to_string(),
        "cannot reshape a tensor of sizes [3, 5, 33] (495 elements) to sizes [3, 33] (99 \
         elements); a reshape keeps the element count"
    );
}

#[test]
fn halves_of_one_tensor_are_input_and_output_of_one_call() {
    // 3 pages of f32: the halves share the middle page. The output's
    // writes there are legal and must not fault on a read-only page; the
    // input's own first page is still protected.
    let n = 3 * 1024;
    let dev = host();
    let values: Vec<f32> = data(n, 5);
    let mut t = dev.tensor_from(&values, (n,)).unwrap();
    {
        let (low, mut high) = t.split_at_mut(n / 2).unwrap();
        // Adjacent views: the input ends where the output starts.
        kernels::relu_f32(&low, &mut high).unwrap();
    }
    let got = t.to_vec().unwrap();
    assert_eq!(&got[..n / 2], &values[..n / 2]);
    let relu: Vec<f32> = values[..n / 2].iter().map(|v| v.max(0.0)).collect();
    assert_eq!(&got[n / 2..], relu.as_slice());

    // The other way round: the output before the input.
    let mut t = dev.tensor_from(&values, (n,)).unwrap();
    {
        let (mut low, high) = t.split_at_mut(n / 2).unwrap();
        kernels::relu_f32(&high, &mut low).unwrap();
    }
    let got = t.to_vec().unwrap();
    let relu: Vec<f32> = values[n / 2..].iter().map(|v| v.max(0.0)).collect();
    assert_eq!(&got[..n / 2], relu.as_slice());
}

#[test]
fn a_raw_write_to_an_input_half_faults_beside_its_output_half() {
    if pypto_tests::child::ran_with_read_only_inputs(
        "a_raw_write_to_an_input_half_faults_beside_its_output_half",
    ) {
        return;
    }
    // A raw write into the input view's own page still faults, with the
    // output view beside it in the same tensor (3 pages of f32, as above).
    let n = 3 * 1024;
    let dev = host();
    let values: Vec<f32> = data(n, 5);
    let mut t = dev.tensor_from(&values, (n,)).unwrap();
    let (low, mut high) = t.split_at_mut(n / 2).unwrap();
    let err = kernels::writes_input_raw(&low, &mut high).unwrap_err();
    match err {
        Error::Kernel { message, .. } => assert_eq!(
            message,
            "writes input `x` at byte offset 8 through a raw pointer; inputs are read-only to a \
             kernel (make the param an output with `output: true` to write it)"
        ),
        other => panic!("expected a kernel error, got {other:?}"),
    }
    assert_eq!(low.to_vec().unwrap(), values[..n / 2]);
    // Writable again from Rust once the launch is over.
    let (mut low, _) = t.split_at_mut(n / 2).unwrap();
    low.copy_from(&dev.zeros::<f32, _>((n / 2,)).unwrap())
        .unwrap();
}

#[test]
fn a_view_bounds_the_kernel_to_its_rows() {
    let dev = host();
    let x = dev.tensor_from(&data(8, 6), (8,)).unwrap();
    let mut parent = dev.zeros::<f32, _>((16,)).unwrap();
    // The parent has memory past the view, but the kernel sees 8 elements.
    let err = kernels::out_of_bounds(&x, parent.slice_mut(..8).unwrap()).unwrap_err();
    match err {
        Error::Kernel { message, .. } => assert_eq!(
            message,
            "GlobalTensor::SetValue: 4 bytes at byte offset 32 of `y` run past its end (32 bytes)"
        ),
        other => panic!("expected a kernel error, got {other:?}"),
    }
    assert!(parent.to_vec().unwrap().iter().all(|&v| v == 0.0));
}

#[test]
fn adopted_host_memory_runs_kernels_in_place() {
    let dev = host();
    let mut input: Vec<f32> = data(64, 7);
    let mut output = vec![0.0f32; 64];
    // SAFETY: both vectors outlive the tensors, which are their only users
    // meanwhile.
    let (x, mut y) = unsafe {
        (
            Tensor::from_raw_parts(input.as_mut_ptr(), 64, (64usize,), &dev).unwrap(),
            Tensor::from_raw_parts(output.as_mut_ptr(), 64, (64usize,), &dev).unwrap(),
        )
    };
    kernels::relu_f32(&x, &mut y).unwrap();
    kernels::relu_f32(x.slice(..8).unwrap(), y.slice_mut(56..).unwrap()).unwrap();
    drop((x, y));
    let mut want: Vec<f32> = input.iter().map(|v| v.max(0.0)).collect();
    want.copy_within(..8, 56);
    assert_eq!(output, want);
}

#[test]
fn adopted_bool_outputs_are_checked_too() {
    let dev = host();
    let x = dev.tensor_from(&data(4, 8), (4,)).unwrap();
    // Bytes owned as `u8`, so that no Rust `bool` ever holds a bad value.
    let mut bytes = [0u8; 4];
    // SAFETY: `bytes` outlives `flags`, its only user meanwhile; zeros
    // are `false`.
    let mut flags = unsafe {
        Tensor::<bool, _>::from_raw_parts(bytes.as_mut_ptr().cast(), 4, (Const::<4>,), &dev)
    }
    .unwrap();
    let err = kernels::bad_bool(&x, &mut flags).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `bad_bool`: `flags` element 1 holds byte 2, which is not a DT_BOOL (0 or 1); \
         the tensor was reset to false"
    );
    drop(flags);
    assert_eq!(bytes, [0; 4]);
}
