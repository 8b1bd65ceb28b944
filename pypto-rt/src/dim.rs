//! Dims: a size known to the type system (`Const<N>`) or at run time (`usize`).

use std::fmt::Debug;

pub(crate) mod sealed {
    /// Implemented by `Const<N>` and `usize` only: the tensor code's unsafe
    /// copies and views trust `size()`, so no other type may answer it.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a dim: `pypto_rt::Dim` is sealed",
        note = "the dims are `pypto_rt::Const<N>` (a size fixed at compile time) and `usize` (a run-time size)"
    )]
    pub trait Sealed {}
    impl<const N: usize> Sealed for super::Const<N> {}
    impl Sealed for usize {}
}

/// One axis size. `Const<N>` is checked by the compiler; `usize` at run time.
///
/// Sealed: only `Const<N>` and `usize` are dims, so a size cannot change
/// between two calls of [`Dim::size`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a dim: use `pypto_rt::Const<N>` (a size fixed at compile time) or `usize` (a run-time size)"
)]
pub trait Dim: sealed::Sealed + Copy + Debug + Eq + Send + Sync + 'static {
    /// `Some(N)` for `Const<N>`, `None` for a runtime size.
    const STATIC: Option<usize>;

    /// The size of this axis.
    fn size(&self) -> usize;

    /// This dim with the given size, or `None` if the type fixes another size.
    fn from_size(size: usize) -> Option<Self>;
}

/// A size fixed at compile time: a FIXED or STATIC axis.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Const<const N: usize>;

impl<const N: usize> Dim for Const<N> {
    const STATIC: Option<usize> = Some(N);

    fn size(&self) -> usize {
        N
    }

    fn from_size(size: usize) -> Option<Self> {
        (size == N).then_some(Const)
    }
}

/// A size known at run time: a DYNAMIC axis.
impl Dim for usize {
    const STATIC: Option<usize> = None;

    fn size(&self) -> usize {
        *self
    }

    fn from_size(size: usize) -> Option<Self> {
        Some(size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn const_dims_accept_only_their_size() {
        assert_eq!(Const::<4>::from_size(4), Some(Const));
        assert_eq!(Const::<4>::from_size(5), None);
        assert_eq!(Const::<4>::STATIC, Some(4));
        assert_eq!(Const::<4>.size(), 4);
    }

    #[test]
    fn runtime_dims_accept_any_size() {
        assert_eq!(usize::from_size(7), Some(7));
        assert_eq!(usize::STATIC, None);
    }
}
