//! Choosing what runs at call time: the wrapper of a kernel with
//! `variants:` (or `dispatch: runtime`) reads the call's sizes, tests each
//! variant's condition in the spec's order, finds the specialisation built
//! for the sizes of its STATIC dims, and launches the first that accepts
//! the call. These are the pieces it calls; the choice itself is generated.

use crate::abi::{Arg, DimDesc, KernelDesc};
use crate::error::Error;
use crate::launch::{agreed_axis, note_last_variant};

/// The size of axis `axis` of tensor param `param` in a call; 0 for a
/// scalar (conditions name tensor axes only).
pub fn call_size(args: &[Arg<'_>], param: u8, axis: u8) -> u64 {
    match args.get(usize::from(param)) {
        Some(Arg::Tensor { sizes, .. }) => sizes.get(usize::from(axis)).map_or(0, |&n| n as u64),
        _ => 0,
    }
}

/// Where the size of one STATIC dim of a variant sits among the sizes the
/// variant was built for (`None` when it is not one of them), after
/// checking that the dim's axes agree: the specialisation is picked by the
/// first axis, so a disagreeing axis would otherwise reach a kernel built
/// for another size.
pub fn built_position(
    desc: &KernelDesc,
    args: &[Arg<'_>],
    dim: &DimDesc,
    built: &[u64],
) -> Result<Option<usize>, Error> {
    let Some(first) = agreed_axis(desc, args, dim)? else {
        return Ok(None);
    };
    Ok(built.iter().position(|&b| b == first as u64))
}

/// Passes a launch's result on, recording on success which variant ran
/// (see [`crate::LaunchStats::variant`]).
pub fn note_variant(variant: &'static str, result: Result<(), Error>) -> Result<(), Error> {
    if result.is_ok() {
        note_last_variant(variant);
    }
    result
}

/// The error for a call no variant accepts: `sizes` are the sizes the
/// choice read (a label such as `M` or `x.1`, and the axis that carries
/// it), `refusals` why each variant refused, in order.
pub fn no_variant(
    kernel: &'static str,
    args: &[Arg<'_>],
    sizes: &[(&'static str, u8, u8)],
    refusals: &[&'static str],
) -> Error {
    let sizes: Vec<String> = sizes
        .iter()
        .map(|&(label, param, axis)| format!("{label} = {}", call_size(args, param, axis)))
        .collect();
    Error::NoVariant {
        kernel,
        sizes: sizes.join(", "),
        why: refusals.join("; "),
    }
}
