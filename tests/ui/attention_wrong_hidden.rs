// PyPTO's attention fixes HIDDEN at 768: a 512-wide q does not compile.
use pypto_tests::kernels;
use pypto_rt::{Const, Device};

fn main() {
    let dev = Device::host();
    let q = dev.zeros::<f32, _>((4, 128, Const::<512>)).unwrap();
    let kv = dev.zeros::<f32, _>((4, 128, Const::<768>)).unwrap();
    let mut out = dev.zeros::<f32, _>((4, 128, Const::<768>)).unwrap();
    let _ = kernels::attention_kernel(&q, &kv, &kv, &mut out);
}
