// add_bias's x has rank 2: a rank-3 tensor does not compile.
use pypto_tests::kernels;
use pypto_rt::{Const, Device};

fn main() {
    let dev = Device::host();
    let x = dev.zeros::<f32, _>((2, 3, Const::<128>)).unwrap();
    let bias = dev.zeros::<f32, _>((Const::<128>,)).unwrap();
    let mut out = dev.zeros::<f32, _>((2, Const::<128>)).unwrap();
    let _ = kernels::add_bias(&x, &bias, &mut out);
}
