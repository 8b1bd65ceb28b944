//! Params and shapes: targets, dtypes, and each param's markers.

use super::dims::{FileDims, size};
use super::{Axis, AxisKind, DType, Draft, MAX_RANK, ParamKind, Target};
use crate::diag::{Pos, Sink, clip};
use crate::names::{did_you_mean, identifier_problem};
use crate::spec::{KernelSpec, ParamSpec, QUOTED, Sp};
use crate::yaml::{Node, Value};

pub(super) fn check_targets(k: &KernelSpec, ctx: &str, sink: &mut Sink<'_>) -> Vec<Target> {
    let Some(list) = &k.targets else {
        return Target::ALL.to_vec();
    };
    if list.value.is_empty() {
        sink.error(
            list.pos,
            format!("{ctx}, `targets`: is empty; give at least one of A2, A3, 950PR, or leave it out for all three"),
        );
        return Target::ALL.to_vec();
    }
    let names: Vec<&str> = Target::ALL.iter().map(|t| t.spec_name()).collect();
    let mut targets = Vec::new();
    for word in &list.value {
        match Target::from_spec_name(&word.value) {
            Some(t) if targets.contains(&t) => {
                sink.error(word.pos, format!("{ctx}, `targets`: `{t}` is listed twice"));
            }
            Some(t) => targets.push(t),
            None => sink.error(
                word.pos,
                format!(
                    "{ctx}, `targets`: unknown target `{}`; expected A2, A3 or 950PR{}",
                    word.value,
                    did_you_mean(&word.value, names.iter().copied())
                ),
            ),
        }
    }
    targets.sort();
    targets
}

fn check_dtype(
    word: &Sp<String>,
    ctx: &str,
    targets: &[Target],
    sink: &mut Sink<'_>,
) -> Option<DType> {
    let Some(dtype) = DType::from_spec_name(&word.value) else {
        let names: Vec<&str> = DType::ALL.iter().map(|d| d.spec_name()).collect();
        sink.error(
            word.pos,
            format!(
                "{ctx}: unknown dtype `{}`; expected one of {}{}",
                word.value,
                names.join(", "),
                did_you_mean(&word.value, names.iter().copied())
            ),
        );
        return None;
    };
    let missing: Vec<&str> = targets
        .iter()
        .filter(|t| !dtype.targets().contains(t))
        .map(|t| t.spec_name())
        .collect();
    if !missing.is_empty() {
        let has: Vec<&str> = dtype.targets().iter().map(|t| t.spec_name()).collect();
        sink.error(
            word.pos,
            format!(
                "{ctx}: {dtype} exists only on {}, but the kernel also targets {}; \
                 set `targets: [{}]`",
                has.join(", "),
                missing.join(", "),
                has.join(", ")
            ),
        );
        return None;
    }
    Some(dtype)
}

pub(super) fn check_param<'s>(
    p: &'s ParamSpec,
    kernel_ctx: &str,
    dims: &FileDims,
    targets: &[Target],
    sink: &mut Sink<'_>,
) -> Option<Draft<'s>> {
    let ctx = format!("{kernel_ctx}, param `{}`", clip(&p.name.value, QUOTED));
    let before = sink.count();
    if let Some(problem) = identifier_problem(&p.name.value) {
        sink.error(
            p.name.pos,
            format!("{ctx}: not a valid param name: {problem}"),
        );
    }
    if let Some(scalar) = &p.scalar {
        for (present, what) in [
            (p.shape.as_ref().map(|s| s.pos), "shape"),
            (p.rank.as_ref().map(|r| r.pos), "rank"),
            (p.dtype.as_ref().map(|d| d.pos), "dtype"),
        ] {
            if let Some(pos) = present {
                sink.error(
                    pos,
                    format!(
                        "{ctx}: a scalar has no `{what}`; its type is given by `scalar:` alone"
                    ),
                );
            }
        }
        if let Some(out) = p.output.as_ref().filter(|o| o.value) {
            sink.error(
                out.pos,
                format!("{ctx}: a scalar cannot be an output; outputs are tensors"),
            );
        }
        let dtype = check_dtype(scalar, &format!("{ctx}, `scalar`"), targets, sink)?;
        return (sink.count() == before).then(|| Draft {
            spec: p,
            kind: ParamKind::Scalar(dtype),
            axis_pos: Vec::new(),
        });
    }
    let dtype = match &p.dtype {
        Some(word) => check_dtype(word, &format!("{ctx}, `dtype`"), targets, sink),
        None if p.given.iter().any(|g| g == "dtype") => None,
        None => {
            sink.error(
                p.name.pos,
                format!(
                    "{ctx}: a tensor needs a `dtype` (or write `scalar: DTYPE` for a scalar argument)"
                ),
            );
            None
        }
    };
    let Some(shape) = &p.shape else {
        if p.given.iter().any(|g| g == "shape") {
            return None; // given, but not a list: already reported
        }
        sink.error(
            p.name.pos,
            format!("{ctx}: a tensor needs a `shape`, e.g. `shape: [DYNAMIC, 128]`"),
        );
        return None;
    };
    let (mut axes, axis_pos) = check_shape(shape, p.rank.as_ref(), &ctx, dims, sink)?;
    if let Some(docs) = &p.axis_docs {
        if docs.value.len() != axes.len() {
            sink.error(
                docs.pos,
                format!(
                    "{ctx}, `axis_docs`: has {} entr{} for {} ax{}; give one per axis",
                    docs.value.len(),
                    if docs.value.len() == 1 { "y" } else { "ies" },
                    axes.len(),
                    if axes.len() == 1 { "is" } else { "es" }
                ),
            );
            return None;
        }
        for (axis, node) in axes.iter_mut().zip(&docs.value) {
            match &node.value {
                Value::Str(text) => axis.doc = Some(text.clone()),
                other => {
                    sink.error(
                        node.pos,
                        format!(
                            "{ctx}, `axis_docs`: expected a string, found {}",
                            other.kind()
                        ),
                    );
                    return None;
                }
            }
        }
    }
    let dtype = dtype?;
    (sink.count() == before).then(|| Draft {
        spec: p,
        kind: ParamKind::Tensor {
            dtype,
            output: p.output.as_ref().is_some_and(|o| o.value),
            axes,
        },
        axis_pos,
    })
}

fn check_shape(
    shape: &Sp<Vec<Node>>,
    rank: Option<&Node>,
    ctx: &str,
    dims: &FileDims,
    sink: &mut Sink<'_>,
) -> Option<(Vec<Axis>, Vec<Pos>)> {
    let before = sink.count();
    let rank = match rank {
        None => None,
        Some(node) => match &node.value {
            Value::Int(r) if (1..=MAX_RANK as i128).contains(r) => Some((*r as usize, node.pos)),
            other => {
                let found = match other {
                    Value::Int(r) => r.to_string(),
                    v => v.kind().to_owned(),
                };
                sink.error(
                    node.pos,
                    format!("{ctx}, `rank`: expected a rank from 1 to {MAX_RANK}, found {found}"),
                );
                return None;
            }
        },
    };
    if shape.value.is_empty() {
        sink.error(
            shape.pos,
            format!("{ctx}, `shape`: is empty; a tensor has at least one axis (use `scalar:` for a single value)"),
        );
        return None;
    }
    let mut axes = Vec::new();
    let mut positions = Vec::new();
    let mut ellipsis: Option<Pos> = None;
    let mut uses_invalid_dim = false;
    let last = shape.value.len() - 1;
    for (i, entry) in shape.value.iter().enumerate() {
        let at = format!("{ctx}, shape[{i}]");
        let axis = |written: &str, kind, name: Option<&str>| Axis {
            written: written.to_owned(),
            kind,
            name: name.map(str::to_owned),
            dim: 0,
            doc: name
                .and_then(|n| dims.valid.get(n))
                .and_then(|d| d.doc.clone()),
        };
        match &entry.value {
            Value::Str(s) if s == "DYNAMIC" || s == "DYN" => {
                axes.push(axis(s, AxisKind::Dynamic, None));
            }
            Value::Str(s) if s == "STATIC" => axes.push(axis(s, AxisKind::Static, None)),
            Value::Str(s) if s == "..." => {
                if i != last {
                    sink.error(
                        entry.pos,
                        format!("{at}: `...` must be the last entry of a shape; it stands for all remaining axes"),
                    );
                    continue;
                }
                ellipsis = Some(entry.pos);
                continue;
            }
            Value::Str(s) => {
                if let Some(d) = dims.valid.get(s) {
                    axes.push(axis(s, d.kind, Some(s)));
                } else if dims.invalid.contains(s) {
                    // Already reported where the dim is declared.
                    uses_invalid_dim = true;
                    continue;
                } else {
                    // The search over every dim name runs only for kept messages.
                    sink.error_with(entry.pos, || {
                        let markers = ["DYNAMIC", "DYN", "STATIC"];
                        let names = dims.valid.keys().map(String::as_str);
                        format!(
                            "{at}: unknown dim marker `{s}`; expected DYNAMIC, DYN, STATIC, a \
                             positive integer, `...` or a name from `dims`{}",
                            did_you_mean(s, markers.into_iter().chain(names))
                        )
                    });
                    continue;
                }
            }
            _ => match size(entry) {
                Ok(n) => axes.push(axis(&n.to_string(), AxisKind::Fixed(n), None)),
                Err(why) => {
                    sink.error(entry.pos, format!("{at}: {why}"));
                    continue;
                }
            },
        }
        positions.push(entry.pos);
    }
    if sink.count() != before || uses_invalid_dim {
        return None;
    }
    match (ellipsis, rank) {
        (Some(pos), None) => {
            sink.error(
                pos,
                format!(
                    "{ctx}, `shape`: `...` leaves the rank unknown; add `rank: N` to say how many axes the tensor has"
                ),
            );
            return None;
        }
        (Some(pos), Some((r, rank_pos))) => {
            if r < axes.len() {
                sink.error(
                    rank_pos,
                    format!(
                        "{ctx}, `rank`: rank {r} contradicts the shape, which already has {} axes before `...`",
                        axes.len()
                    ),
                );
                return None;
            }
            while axes.len() < r {
                axes.push(Axis {
                    written: "...".to_owned(),
                    kind: AxisKind::Static,
                    name: None,
                    dim: 0,
                    doc: None,
                });
                positions.push(pos);
            }
        }
        (None, Some((r, rank_pos))) if r != axes.len() => {
            sink.error(
                rank_pos,
                format!(
                    "{ctx}, `rank`: rank {r} contradicts the shape, which has {} axes",
                    axes.len()
                ),
            );
            return None;
        }
        (None, _) if axes.len() > MAX_RANK => {
            sink.error(
                shape.pos,
                format!(
                    "{ctx}, `shape`: has {} axes; at most {MAX_RANK} are supported",
                    axes.len()
                ),
            );
            return None;
        }
        _ => {}
    }
    Some((axes, positions))
}
