//! The checks a launch makes of a call before anything runs (one device,
//! dims whose axes agree, halvings and multiples, the block count its rule
//! gives, sizes bound to scalars that fit their type, outputs that some
//! block writes), the tiling words the kernel reads, and the phrases its
//! errors describe a kernel's sizes and block rule with.

use crate::abi::{
    Arg, BlockRule, DimDesc, KernelDesc, MAX_BLOCKS, MAX_LAUNCH_BLOCKS, MemoryKind, SizeOf,
};
use crate::device::Device;
use crate::error::{AxisSize, Error};

use super::{Small, cold};

/// What a launch checks of a call before anything else, in this order:
/// one device, the dims' axes agree, then the template's halvings and
/// multiples. Returns the device, and pushes the dims' sizes to `tiling`
/// (filled in place: a tiling returned by value is copied on every launch).
#[inline]
pub(crate) fn check_call<'a>(
    desc: &KernelDesc,
    args: &[Arg<'a>],
    tiling: &mut Tiling,
) -> Result<&'a Device, Error> {
    let device = one_device(desc, args)?;
    agreed_dims(desc, args, tiling)?;
    // Plain sizes, as in `agreed_axis`; the `AxisSize`s only for errors.
    for h in desc.halves {
        let (big, small) = (size_at(args, h.big), size_at(args, h.small));
        if Some(big) != small.checked_mul(2) {
            return Err(cold(|| Error::NotTwice {
                kernel: desc.name,
                big: axis_size(desc, args, h.big),
                small: axis_size(desc, args, h.small),
                why: h.why.to_owned(),
            }));
        }
    }
    for m in desc.multiples {
        if !size_at(args, m.axis).is_multiple_of(m.of as usize) {
            return Err(cold(|| Error::NotMultiple {
                kernel: desc.name,
                axis: axis_size(desc, args, m.axis),
                of: m.of,
                why: m.why.to_owned(),
            }));
        }
    }
    Ok(device)
}

#[inline]
pub(super) fn one_device<'a>(desc: &KernelDesc, args: &[Arg<'a>]) -> Result<&'a Device, Error> {
    let mut first: Option<&Device> = None;
    for (i, arg) in args.iter().enumerate() {
        if let Arg::Tensor { device, .. } = arg {
            match first {
                None => first = Some(device),
                Some(d) if d != *device => {
                    return Err(cold(|| Error::WrongDevice {
                        kernel: desc.name,
                        param: desc.params[i],
                        expected: d.to_string(),
                        actual: device.to_string(),
                    }));
                }
                Some(_) => {}
            }
        }
    }
    first.ok_or_else(|| {
        cold(|| Error::Backend(format!("kernel `{}` has no tensor arguments", desc.name)))
    })
}

pub(crate) fn axis_size(desc: &KernelDesc, args: &[Arg<'_>], at: (u8, u8)) -> AxisSize {
    AxisSize {
        param: desc.params[usize::from(at.0)],
        axis: usize::from(at.1),
        size: size_at(args, at),
    }
}

/// The size of axis `axis` of param `param` (0 for a scalar).
#[inline]
fn size_at(args: &[Arg<'_>], (param, axis): (u8, u8)) -> usize {
    match &args[usize::from(param)] {
        Arg::Tensor { sizes, .. } => sizes[usize::from(axis)],
        Arg::Scalar(_) | Arg::Sized { .. } => 0,
    }
}

/// The size of `dim`'s first axis, after checking that its other axes
/// agree with it (`None` for a dim with no axis, which no generated
/// description has). Plain sizes until one disagrees: an [`AxisSize`]
/// built and returned on every launch is copied with wide loads of words
/// just stored, which stall (about 5 ns, seen in perf). Always inline: a
/// call costs as much as the comparisons.
#[inline(always)]
pub(crate) fn agreed_axis(
    desc: &KernelDesc,
    args: &[Arg<'_>],
    dim: &DimDesc,
) -> Result<Option<usize>, Error> {
    let Some((&first, others)) = dim.axes.split_first() else {
        return Ok(None);
    };
    let size = size_at(args, first);
    for &axis in others {
        if size_at(args, axis) != size {
            // Moved in, so the loop keeps `axis` in a register.
            return Err(cold(move || Error::DimDisagreement {
                kernel: desc.name,
                why: dim.why.to_owned(),
                first: axis_size(desc, args, first),
                second: axis_size(desc, args, axis),
            }));
        }
    }
    Ok(Some(size))
}

/// The size of every dim, after checking that its axes agree and that it
/// fits the `uint32_t` the kernel receives, pushed as a tiling's first
/// words.
#[inline]
fn agreed_dims(desc: &KernelDesc, args: &[Arg<'_>], dims: &mut Tiling) -> Result<(), Error> {
    // A loop, not an iterator of `Result`s collected: this runs on every
    // launch, and the adaptors cost more than the checks.
    for dim in desc.dims {
        let Some(size) = agreed_axis(desc, args, dim)? else {
            continue;
        };
        let Ok(size) = u32::try_from(size) else {
            return Err(cold(|| Error::SizeOverflow {
                kernel: Some(desc.name),
                detail: format!(
                    "{}, more than the {} a kernel's `uint32_t` size argument carries",
                    axis_size(desc, args, dim.axes[0]),
                    u32::MAX
                ),
            }));
        };
        dims.push_dim(size);
    }
    Ok(())
}

/// The sizes of tensor param `param` (none for a scalar). Borrowed: a
/// copy of the 72-byte `Sizes` the caller just stored stalls on its wide
/// loads.
fn sizes_of<'a>(args: &'a [Arg<'_>], param: u8) -> &'a [usize] {
    match args.get(usize::from(param)) {
        Some(Arg::Tensor { sizes, .. }) => sizes,
        _ => &[],
    }
}

/// The value of a size expression for this call. Element counts already
/// passed the check made when their tensors were created, so they fit
/// `usize`.
fn size_of(args: &[Arg<'_>], of: SizeOf) -> u64 {
    match of {
        SizeOf::Numel { param } => sizes_of(args, param).iter().product::<usize>() as u64,
        SizeOf::Axis { param, axis } => sizes_of(args, param)
            .get(usize::from(axis))
            .map_or(0, |&n| n as u64),
    }
}

/// `x.numel` or `x.1`, as the spec wrote it.
fn describe_size(desc: &KernelDesc, of: SizeOf) -> String {
    match of {
        SizeOf::Numel { param } => format!("{}.numel", desc.params[usize::from(param)]),
        SizeOf::Axis { param, axis } => format!("{}.{axis}", desc.params[usize::from(param)]),
    }
}

/// The product of `sizes`, or `None` when it overflows `u64`.
fn product(sizes: &[usize]) -> Option<u64> {
    sizes
        .iter()
        .try_fold(1u64, |acc, &s| acc.checked_mul(s as u64))
}

/// The kernel's block rule, as a phrase for messages.
fn describe_rule(desc: &KernelDesc) -> String {
    let name = |param: u8| desc.params.get(usize::from(param)).copied().unwrap_or("?");
    match desc.blocks {
        BlockRule::Rows { param } => format!("one block per row of `{}`", name(param)),
        BlockRule::Elements { param, per_block } => {
            format!("one block per {per_block} elements of `{}`", name(param))
        }
        BlockRule::Leading {
            param,
            axes,
            factor,
        } => {
            let axes = if axes == 1 {
                "axis".to_owned()
            } else {
                format!("{axes} axes")
            };
            let times = if factor == 1 {
                String::new()
            } else {
                format!(", times {factor}")
            };
            format!(
                "one block per index of the leading {axes} of `{}`{times}",
                name(param)
            )
        }
        BlockRule::Count(n) => format!("`blocks: {n}`"),
        BlockRule::Size(of) => format!("`blocks: {}`", describe_size(desc, of)),
    }
}

/// The launch's block count from its rule, capped at [`MAX_BLOCKS`] (or,
/// for `blocks:` of a spec, at [`MAX_LAUNCH_BLOCKS`]); 0 when the rule's
/// param has no elements. Every product is checked: a count that would
/// overflow is an error naming the kernel and its rule, in every build.
pub(super) fn block_count(desc: &KernelDesc, args: &[Arg<'_>]) -> Result<u32, Error> {
    let sizes = |param: u8| sizes_of(args, param);
    let too_many = |what: String| Error::SizeOverflow {
        kernel: Some(desc.name),
        detail: format!(
            "its block rule ({}) asks for {what} blocks, more than a launch can count",
            describe_rule(desc)
        ),
    };
    let work: u64 = match desc.blocks {
        BlockRule::Rows { param } => {
            let s = sizes(param);
            match s.split_last() {
                Some((_, rows)) if !s.contains(&0) => product(rows)
                    .ok_or_else(|| cold(|| too_many(format!("the product of {rows:?}"))))?,
                _ => 0,
            }
        }
        BlockRule::Elements { param, per_block } => {
            if per_block == 0 {
                return Err(cold(|| {
                    Error::Backend(format!(
                        "kernel `{}`: its block rule ({}) divides by 0",
                        desc.name,
                        describe_rule(desc)
                    ))
                }));
            }
            let s = sizes(param);
            let elements = product(s)
                .ok_or_else(|| cold(|| too_many(format!("the product of {s:?} / {per_block}"))))?;
            // A division costs more than the rest of a launch's checks,
            // and block sizes are mostly powers of two.
            let per_block = u64::from(per_block);
            if per_block.is_power_of_two() {
                (elements >> per_block.trailing_zeros())
                    + u64::from(elements & (per_block - 1) != 0)
            } else {
                elements.div_ceil(per_block)
            }
        }
        BlockRule::Leading {
            param,
            axes,
            factor,
        } => {
            let s = sizes(param);
            let Some(leading) = s.get(..usize::from(axes)) else {
                return Err(cold(|| {
                    Error::Backend(format!(
                        "kernel `{}`: its block rule ({}) names more axes than `{}` has ({})",
                        desc.name,
                        describe_rule(desc),
                        desc.params[usize::from(param)],
                        s.len()
                    ))
                }));
            };
            if s.contains(&0) {
                0
            } else {
                product(leading)
                    .and_then(|lead| lead.checked_mul(u64::from(factor)))
                    .ok_or_else(|| {
                        cold(|| too_many(format!("{} × {factor}", leading_text(leading))))
                    })?
            }
        }
        BlockRule::Count(n) => return Ok(n),
        BlockRule::Size(of) => {
            let n = size_of(args, of);
            return u32::try_from(n)
                .ok()
                .filter(|&n| n <= MAX_LAUNCH_BLOCKS)
                .ok_or_else(|| {
                    cold(|| Error::SizeOverflow {
                        kernel: Some(desc.name),
                        detail: format!(
                            "`blocks: {}` asks for {n} blocks; a launch has at most \
                         {MAX_LAUNCH_BLOCKS}",
                            describe_size(desc, of)
                        ),
                    })
                });
        }
    };
    Ok(u32::try_from(work).unwrap_or(u32::MAX).min(MAX_BLOCKS))
}

/// Leading sizes as a product for messages: `8589934592` or `4 × 3`.
fn leading_text(leading: &[usize]) -> String {
    match product(leading) {
        Some(n) if leading.len() == 1 => n.to_string(),
        _ => leading
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(" × "),
    }
}

/// A launch with no blocks writes no output: refused when an output has
/// elements, which would come back unwritten.
pub(super) fn check_outputs_written(desc: &KernelDesc, args: &[Arg<'_>]) -> Result<(), Error> {
    for (i, arg) in args.iter().enumerate() {
        let Arg::Tensor { sizes, memory, .. } = arg else {
            continue;
        };
        let output = matches!(
            memory.0,
            MemoryKind::HostOutput { .. } | MemoryKind::Raw { writable: true, .. }
        );
        let elements = sizes.num_elements().unwrap_or(usize::MAX);
        if output && elements > 0 {
            return Err(cold(|| Error::NoBlocks {
                kernel: desc.name,
                rule: describe_rule(desc),
                output: desc.params[i],
                elements,
            }));
        }
    }
    Ok(())
}

/// Appends every scalar argument's bits to `tiling`, in param order; sizes
/// bound to scalars are computed here and must fit their type.
#[inline]
pub(super) fn scalar_words(
    desc: &KernelDesc,
    args: &[Arg<'_>],
    tiling: &mut Tiling,
) -> Result<(), Error> {
    for (i, arg) in args.iter().enumerate() {
        match *arg {
            Arg::Tensor { .. } => {}
            Arg::Scalar(bits) => tiling.push_scalar(bits),
            Arg::Sized { of, max, dtype } => {
                let value = size_of(args, of);
                if value > max {
                    return Err(cold(|| Error::SizeOverflow {
                        kernel: Some(desc.name),
                        detail: format!(
                            "`{}` = `{}` = {value}, more than its {dtype} holds ({max})",
                            desc.params[i],
                            describe_size(desc, of)
                        ),
                    }));
                }
                tiling.push_scalar(value);
            }
        }
    }
    Ok(())
}

/// The tiling data a kernel reads: `uint32_t dim[N]` then, 8-aligned,
/// `uint64_t scalar[M]`, native-endian, as the generated C++ struct lays it
/// out. Held in `u64` words so that the kernel's reads are aligned; built
/// in place, dims first.
#[derive(Default)]
pub(crate) struct Tiling {
    words: Small<u64>,
    dims: usize,
    scalars: usize,
}

impl Tiling {
    /// Appends a dim's size (before any scalar).
    #[inline]
    fn push_dim(&mut self, size: u32) {
        debug_assert_eq!(self.scalars, 0);
        match self.words.last_mut() {
            // The second `uint32_t` of a word, in memory order whatever
            // the host's byte order.
            Some(word) if self.dims % 2 == 1 => {
                let mut bytes = word.to_ne_bytes();
                bytes[4..].copy_from_slice(&size.to_ne_bytes());
                *word = u64::from_ne_bytes(bytes);
            }
            _ => {
                let mut bytes = [0u8; 8];
                bytes[..4].copy_from_slice(&size.to_ne_bytes());
                self.words.push(u64::from_ne_bytes(bytes));
            }
        }
        self.dims += 1;
    }

    /// Appends a scalar's word.
    #[inline]
    fn push_scalar(&mut self, word: u64) {
        self.words.push(word);
        self.scalars += 1;
    }

    /// The words the kernel reads.
    pub(super) fn words(&self) -> &[u64] {
        &self.words
    }

    /// The size of the C++ tiling struct: no padding after the dims when
    /// there are no scalars.
    pub(super) fn bytes(&self) -> u64 {
        if self.scalars == 0 {
            4 * self.dims as u64
        } else {
            8 * self.words.len() as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::Memory;
    use crate::launch::launch;
    use crate::launch::tests::{RAN, entries, spread, unread};
    use crate::shape::Sizes;
    use std::sync::atomic::Ordering;

    /// One block per `per_block` elements, rounded up (and capped at
    /// [`MAX_BLOCKS`]), whether `per_block` is a power of two (a shift) or
    /// not (a division).
    #[test]
    fn element_rules_round_up() {
        let host = crate::Device::host();
        for per_block in [1u32, 2, 3, 7, 8, 1000, 1024, 8192, u32::MAX] {
            let desc = spread(BlockRule::Elements {
                param: 0,
                per_block,
            });
            // Each multiple of `per_block` up to past the cap, and one
            // element either side.
            let sizes = (0..=u64::from(MAX_BLOCKS) + 2)
                .flat_map(|k| [-1, 0, 1].map(|d| (k * u64::from(per_block)).checked_add_signed(d)))
                .flatten();
            for n in sizes {
                let n = n as usize;
                let args = [unread(&host, &[n], false), unread(&host, &[n], true)];
                let want = (n as u64)
                    .div_ceil(u64::from(per_block))
                    .min(u64::from(MAX_BLOCKS));
                assert_eq!(
                    block_count(&desc, &args).map(u64::from),
                    Ok(want),
                    "{n} / {per_block}"
                );
            }
        }
    }

    #[test]
    fn sizes_bound_to_scalars_must_fit_their_type() {
        let host = Device::host();
        let tensor = |sizes: &[usize]| Arg::Tensor {
            sizes: Sizes::new(sizes).unwrap(),
            memory: Memory::raw(std::ptr::null_mut(), 0, false, None, None),
            device: &host,
        };
        let desc = KernelDesc {
            name: "k",
            params: &["x", "n", "s"],
            dims: &[],
            blocks: BlockRule::Size(SizeOf::Axis { param: 0, axis: 1 }),
            multiples: &[],
            halves: &[],
        };
        let sized = |max| Arg::Sized {
            of: SizeOf::Numel { param: 0 },
            max,
            dtype: "DT_UINT8",
        };
        let args = [tensor(&[3, 85]), sized(255), Arg::Scalar(7)];
        let mut tiling = Tiling::default();
        scalar_words(&desc, &args, &mut tiling).unwrap();
        assert_eq!(tiling.words(), &[255, 7]);
        assert_eq!(tiling.bytes(), 16);
        assert_eq!(block_count(&desc, &args), Ok(85));
        let args = [tensor(&[4, 64]), sized(255), Arg::Scalar(7)];
        assert_eq!(
            scalar_words(&desc, &args, &mut Tiling::default())
                .unwrap_err()
                .to_string(),
            "kernel `k`: size overflow: `n` = `x.numel` = 256, more than its DT_UINT8 holds (255)"
        );
    }
    /// Dims pack two to a word in memory order; scalars start on the next
    /// word; the struct has no tail padding without scalars.
    #[test]
    fn tilings_lay_out_as_the_cpp_struct() {
        let bytes_of = |t: &Tiling| -> Vec<u8> {
            let all: Vec<u8> = t.words().iter().flat_map(|w| w.to_ne_bytes()).collect();
            all[..t.bytes() as usize].to_vec()
        };
        let mut t = Tiling::default();
        assert_eq!(t.bytes(), 0);
        for d in [1u32, 2, 3] {
            t.push_dim(d);
        }
        let dims: Vec<u8> = [1u32, 2, 3].iter().flat_map(|d| d.to_ne_bytes()).collect();
        assert_eq!(bytes_of(&t), dims);
        t.push_scalar(9);
        let mut with_scalar = dims.clone();
        with_scalar.extend([0; 4]);
        with_scalar.extend(9u64.to_ne_bytes());
        assert_eq!(bytes_of(&t), with_scalar);
        assert_eq!(t.bytes(), 24);
    }

    // Plain assertions on the counts: nothing here relies on a debug
    // build's overflow panic, so release builds check the same.
    #[test]
    fn block_rules_that_overflow_are_errors_in_every_build() {
        let host = Device::host();
        let times_max = spread(BlockRule::Leading {
            param: 0,
            axes: 1,
            factor: u32::MAX,
        });
        // 2^33 × (2^32 - 1) wraps to 2^64 - 2^33 unchecked (48 blocks).
        let args = [
            unread(&host, &[1 << 33, 1], false),
            unread(&host, &[4], true),
        ];
        assert_eq!(
            block_count(&times_max, &args).unwrap_err().to_string(),
            "kernel `spread`: size overflow: its block rule (one block per index of the leading \
             axis of `x`, times 4294967295) asks for 8589934592 × 4294967295 blocks, more than a \
             launch can count"
        );
        // 2^17 · 2^17 × 2^30 wraps to exactly 0 unchecked: a launch of no
        // blocks that returned Ok with `out` never written.
        let wraps = spread(BlockRule::Leading {
            param: 0,
            axes: 2,
            factor: 1 << 30,
        });
        let args = [
            unread(&host, &[1 << 17, 1 << 17, 3], false),
            unread(&host, &[4], true),
        ];
        assert_eq!(
            block_count(&wraps, &args).unwrap_err(),
            Error::SizeOverflow {
                kernel: Some("spread"),
                detail: "its block rule (one block per index of the leading 2 axes of `x`, \
                         times 1073741824) asks for 131072 × 131072 × 1073741824 blocks, more \
                         than a launch can count"
                    .to_owned()
            }
        );
        // The launch reports it before anything runs.
        // SAFETY: the call fails before any memory is used.
        let err = unsafe { launch(&wraps, entries(), &args) }.unwrap_err();
        assert!(matches!(err, Error::SizeOverflow { .. }), "{err:?}");
        assert!(!RAN.load(Ordering::SeqCst));
        // Counts that fit: capped at the cores, 0 for an empty param.
        let small =
            |sizes: &[usize], rule| block_count(&spread(rule), &[unread(&host, sizes, false)]);
        let leading = |axes, factor| BlockRule::Leading {
            param: 0,
            axes,
            factor,
        };
        assert_eq!(small(&[5, 1], leading(1, u32::MAX)), Ok(MAX_BLOCKS));
        assert_eq!(small(&[2, 7], leading(1, 3)), Ok(6));
        assert_eq!(small(&[2, 7, 1], leading(2, 3)), Ok(42));
        assert_eq!(small(&[1 << 33, 0], leading(1, u32::MAX)), Ok(0));
        let rows = BlockRule::Rows { param: 0 };
        assert_eq!(small(&[3, 5, 7], rows), Ok(15));
        assert_eq!(small(&[3, 0], rows), Ok(0));
        let per_4 = BlockRule::Elements {
            param: 0,
            per_block: 4,
        };
        assert_eq!(small(&[3, 3], per_4), Ok(3));
        assert_eq!(small(&[usize::MAX, 0], per_4), Ok(0));
    }
}
