//! Shapes: tuples of dims, rank 1 to 8.

use std::fmt::Debug;

use crate::dim::Dim;
use crate::error::Error;

/// The highest rank a shape may have.
pub const MAX_RANK: usize = 8;

/// The sizes of a shape, without allocation.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct Sizes {
    len: u8,
    sizes: [usize; MAX_RANK],
}

impl Sizes {
    /// Sizes from a slice of at most 8 entries (the largest rank a shape
    /// has); `None` for a longer slice.
    #[inline]
    pub fn new(sizes: &[usize]) -> Option<Sizes> {
        let mut out = Sizes {
            len: u8::try_from(sizes.len()).ok()?,
            sizes: [0; MAX_RANK],
        };
        out.sizes.get_mut(..sizes.len())?.copy_from_slice(sizes);
        Some(out)
    }

    /// The sizes, one per axis.
    #[inline]
    pub fn as_slice(&self) -> &[usize] {
        &self.sizes[..usize::from(self.len)]
    }

    /// The number of elements, or `None` if it overflows `usize`.
    pub fn num_elements(&self) -> Option<usize> {
        self.as_slice()
            .iter()
            .try_fold(1usize, |acc, &s| acc.checked_mul(s))
    }
}

impl std::ops::Deref for Sizes {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        self.as_slice()
    }
}

impl Debug for Sizes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}

mod sealed {
    /// Implemented by tuples of dims only: the sizes a shape reports are its
    /// dims' own, which the tensor code's unsafe copies and views trust.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a shape: `pypto_rt::Shape` is sealed",
        note = "a shape is a tuple of 1 to 8 dims, each `pypto_rt::Const<N>` or `usize`"
    )]
    pub trait Sealed {}
}

/// A tensor shape: a tuple of [`Dim`]s, e.g. `(usize, Const<128>)`.
///
/// Sealed: the shapes are the tuples of 1 to 8 dims.
pub trait Shape: sealed::Sealed + Copy + Debug + Send + Sync + 'static {
    /// The number of axes.
    const RANK: usize;

    /// Every axis's size.
    fn sizes(&self) -> Sizes;

    /// This shape with the given sizes, checking rank and every `Const` axis.
    fn from_sizes(sizes: &[usize]) -> Result<Self, Error>;

    /// The number of elements, or an error if it overflows `usize`.
    fn num_elements(&self) -> Result<usize, Error> {
        let sizes = self.sizes();
        sizes.num_elements().ok_or_else(|| Error::SizeOverflow {
            kernel: None,
            detail: format!("a tensor of shape {sizes:?} has more elements than usize can count"),
        })
    }
}

macro_rules! tuple_shape {
    ($rank:expr; $($d:ident $i:tt),+) => {
        impl<$($d: Dim),+> sealed::Sealed for ($($d,)+) {}

        impl<$($d: Dim),+> Shape for ($($d,)+) {
            const RANK: usize = $rank;

            fn sizes(&self) -> Sizes {
                Sizes::new(&[$(self.$i.size()),+]).expect("rank <= MAX_RANK")
            }

            fn from_sizes(sizes: &[usize]) -> Result<Self, Error> {
                if sizes.len() != $rank {
                    return Err(Error::RankMismatch { expected: $rank, actual: sizes.len() });
                }
                Ok(($(
                    $d::from_size(sizes[$i]).ok_or(Error::ShapeMismatch {
                        kernel: None,
                        param: None,
                        axis: $i,
                        expected: $d::STATIC.unwrap_or(0),
                        actual: sizes[$i],
                    })?,
                )+))
            }
        }
    };
}

tuple_shape!(1; A 0);
tuple_shape!(2; A 0, B 1);
tuple_shape!(3; A 0, B 1, C 2);
tuple_shape!(4; A 0, B 1, C 2, D 3);
tuple_shape!(5; A 0, B 1, C 2, D 3, E 4);
tuple_shape!(6; A 0, B 1, C 2, D 3, E 4, F 5);
tuple_shape!(7; A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_shape!(8; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dim::Const;

    #[test]
    fn tuples_report_their_sizes() {
        let s = (2usize, Const::<128>);
        assert_eq!(<(usize, Const<128>)>::RANK, 2);
        assert_eq!(s.sizes().as_slice(), &[2, 128]);
        assert_eq!(s.num_elements().unwrap(), 256);
    }

    #[test]
    fn from_sizes_checks_rank_and_const_axes() {
        type S = (usize, Const<4>);
        assert_eq!(S::from_sizes(&[3, 4]).unwrap(), (3, Const));
        assert_eq!(
            S::from_sizes(&[3, 5]).unwrap_err().to_string(),
            "axis 1 has size 5, but the shape's type fixes it at 4"
        );
        assert_eq!(
            S::from_sizes(&[3]).unwrap_err().to_string(),
            "the shape's type has rank 2, but 1 sizes were given"
        );
    }

    #[test]
    fn element_count_overflow_is_an_error() {
        let s = (usize::MAX, 2usize);
        assert!(matches!(s.num_elements(), Err(Error::SizeOverflow { .. })));
    }
}
