// A view passes to a kernel like a tensor, and its shape type is checked
// the same way: add_bias's x is `(usize, Const<128>)`, not rank 3.
use pypto_tests::kernels;
use pypto_rt::{Const, Device};

fn main() -> Result<(), pypto_rt::Error> {
    let dev = Device::host();
    let x = dev.zeros::<f32, _>((4, Const::<128>))?;
    let bias = dev.zeros::<f32, _>((Const::<128>,))?;
    let mut out = dev.zeros::<f32, _>((4, Const::<128>))?;
    let x3 = x.view().reshape((2, 2, Const::<128>))?;
    kernels::add_bias(x3, &bias, &mut out)
}
