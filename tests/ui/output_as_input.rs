// `out` is the kernel's output: it must be passed as `&mut`.
use pypto_tests::kernels;
use pypto_rt::{Const, Device};

fn main() {
    let dev = Device::host();
    let x = dev.zeros::<f32, _>((2, Const::<128>)).unwrap();
    let bias = dev.zeros::<f32, _>((Const::<128>,)).unwrap();
    let out = dev.zeros::<f32, _>((2, Const::<128>)).unwrap();
    let _ = kernels::add_bias(&x, &bias, &out);
}
