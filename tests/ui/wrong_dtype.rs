// add_bias is DT_FP32: an fp16 tensor does not compile.
use pypto_tests::kernels;
use pypto_rt::{Const, Device, f16};

fn main() {
    let dev = Device::host();
    let x = dev.zeros::<f16, _>((2, Const::<128>)).unwrap();
    let bias = dev.zeros::<f32, _>((Const::<128>,)).unwrap();
    let mut out = dev.zeros::<f32, _>((2, Const::<128>)).unwrap();
    let _ = kernels::add_bias(&x, &bias, &mut out);
}
