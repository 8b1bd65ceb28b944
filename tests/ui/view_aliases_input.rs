// A mutable view borrows its tensor exclusively: it cannot be a kernel's
// output while a view of the same tensor is its input (use
// `split_at_mut` for disjoint rows).
use pypto_tests::kernels;
use pypto_rt::{Const, Device};

fn main() -> Result<(), pypto_rt::Error> {
    let dev = Device::host();
    let mut t = dev.zeros::<f32, _>((4, Const::<128>))?;
    let bias = dev.zeros::<f32, _>((Const::<128>,))?;
    let input = t.slice(0..2)?;
    kernels::add_bias(&input, &bias, t.slice_mut(2..4)?)
}
