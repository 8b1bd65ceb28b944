// relu_rows is built for x.1 in 7, 64 and 100: width 8 does not compile.
use pypto_tests::kernels;
use pypto_rt::{Const, Device};

fn main() {
    let dev = Device::host();
    let x = dev.zeros::<f32, _>((4, Const::<8>)).unwrap();
    let mut y = dev.zeros::<f32, _>((4, Const::<8>)).unwrap();
    let _ = kernels::relu_rows(&x, &mut y);
}
