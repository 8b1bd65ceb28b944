// Dim and Shape are sealed: the tensor code's unsafe copies and views trust
// the sizes they report, so a type of the user's cannot be one (a `size()`
// that changed between calls once made a copy overrun its view).
use pypto_rt::{Dim, Shape, Sizes};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Shifty;

impl Dim for Shifty {
    const STATIC: Option<usize> = None;
    fn size(&self) -> usize {
        4
    }
    fn from_size(_: usize) -> Option<Self> {
        Some(Shifty)
    }
}

#[derive(Copy, Clone, Debug)]
struct Flat;

impl Shape for Flat {
    const RANK: usize = 1;
    fn sizes(&self) -> Sizes {
        Sizes::new(&[4]).unwrap()
    }
    fn from_sizes(_: &[usize]) -> Result<Self, pypto_rt::Error> {
        Ok(Flat)
    }
}

fn main() {}
