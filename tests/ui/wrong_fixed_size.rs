// PyPTO's add_bias fixes HIDDEN_SIZE at 128: a 64-wide x does not compile.
use pypto_tests::kernels;
use pypto_rt::{Const, Device};

fn main() {
    let dev = Device::host();
    let x = dev.zeros::<f32, _>((2, Const::<64>)).unwrap();
    let bias = dev.zeros::<f32, _>((Const::<128>,)).unwrap();
    let mut out = dev.zeros::<f32, _>((2, Const::<128>)).unwrap();
    let _ = kernels::add_bias(&x, &bias, &mut out);
}
