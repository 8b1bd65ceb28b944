//! Applying a template's contract to a kernel: roles, relations between
//! axes, options, and what is left to check at run time.

use super::dims::AxisSets;
use super::{
    BlockRule, Dim, DimSize, Draft, Halves, Multiple, OptionValue, Param, ParamKind,
    Specialisation, TemplateRef,
};
use crate::contract::{AxisRef, Blocks, Contract, OptionKind, Role, RoleSpec};
use crate::diag::Sink;
use crate::names::{did_you_mean, identifier_problem};
use crate::spec::{self, KernelSpec};
use crate::tables::DType;
use crate::yaml::{Node, Value};

/// Resolves `options:` against the template: the options its contract
/// declares (typed, with defaults), or any identifier-named int/bool for a
/// template that declares none.
pub(super) fn check_options(
    k: &KernelSpec,
    ctx: &str,
    contract: Option<&Contract>,
    template: Option<&str>,
    sink: &mut Sink<'_>,
) -> Option<Vec<(String, OptionValue)>> {
    let template = template?;
    let before = sink.count();
    let declared = contract.map(|c| c.options.as_slice());
    let value_of = |node: &Node| match &node.value {
        Value::Int(i) => i64::try_from(*i).ok().map(OptionValue::Int),
        Value::Bool(b) => Some(OptionValue::Bool(*b)),
        _ => None,
    };
    let mut out = Vec::new();
    match declared {
        Some(declared) => {
            let names: Vec<&str> = declared.iter().map(|o| o.name.as_str()).collect();
            for (key, _) in &k.options {
                if !names.contains(&key.value.as_str()) {
                    let expected = if names.is_empty() {
                        format!("{template} takes no options")
                    } else {
                        format!("{template} takes {}", spec::one_of(&names))
                    };
                    sink.error(
                        key.pos,
                        format!(
                            "{ctx}, `options`: unknown option `{}`; {expected}{}",
                            key.value,
                            did_you_mean(&key.value, names.iter().copied())
                        ),
                    );
                }
            }
            for o in declared {
                let given = k.options.iter().find(|(key, _)| key.value == o.name);
                let value = match (o.kind, given) {
                    (OptionKind::Int { default, .. }, None) => OptionValue::Int(default),
                    (OptionKind::Bool { default }, None) => OptionValue::Bool(default),
                    (OptionKind::Int { min, max, .. }, Some((_, node))) => match value_of(node) {
                        Some(OptionValue::Int(i)) if (min..=max).contains(&i) => {
                            OptionValue::Int(i)
                        }
                        _ => {
                            sink.error(
                                    node.pos,
                                    format!(
                                        "{ctx}, option `{}`: expected an integer from {min} to {max} ({})",
                                        o.name, o.doc
                                    ),
                                );
                            continue;
                        }
                    },
                    (OptionKind::Bool { .. }, Some((_, node))) => match value_of(node) {
                        Some(OptionValue::Bool(b)) => OptionValue::Bool(b),
                        _ => {
                            sink.error(
                                node.pos,
                                format!(
                                    "{ctx}, option `{}`: expected `true` or `false` ({})",
                                    o.name, o.doc
                                ),
                            );
                            continue;
                        }
                    },
                };
                out.push((o.name.clone(), value));
            }
        }
        None => {
            for (key, node) in &k.options {
                if let Some(problem) = identifier_problem(&key.value) {
                    sink.error(
                        key.pos,
                        format!("{ctx}, `options`: not a valid option name: {problem}"),
                    );
                    continue;
                }
                match value_of(node) {
                    Some(v) => out.push((key.value.clone(), v)),
                    None => sink.error(
                        node.pos,
                        format!(
                            "{ctx}, option `{}`: expected an integer or `true`/`false`, found {}",
                            key.value,
                            node.value.kind()
                        ),
                    ),
                }
            }
        }
    }
    (sink.count() == before).then_some(out)
}

/// One "axis is a multiple of" requirement of a contract, with the
/// option's value filled in.
struct Requirement {
    param: usize,
    axis: AxisRef,
    of: u64,
    /// The option that divides the axis, if it is one.
    option: Option<(String, String)>,
    /// The option a constant is multiplied by (`multiple_of` with
    /// `times`), and the constant: `of` is their product.
    times: Option<(String, u64)>,
    /// Why the template needs it (a constant's reason).
    why: String,
}

fn requirements(contract: &Contract, options: &[(String, OptionValue)]) -> Vec<Requirement> {
    let by_option = contract
        .divisible_by_option
        .iter()
        .filter_map(|((param, axis), option, _)| {
            match options.iter().find(|(n, _)| n == option).map(|(_, v)| *v) {
                Some(OptionValue::Int(by)) if by > 0 => Some(Requirement {
                    param: *param,
                    axis: *axis,
                    of: by as u64,
                    option: Some((
                        option.clone(),
                        contract
                            .option(option)
                            .map_or(String::new(), |o| o.doc.clone()),
                    )),
                    times: None,
                    why: String::new(),
                }),
                _ => None,
            }
        });
    let by_constant = contract.multiple_of.iter().filter_map(|m| {
        let (param, axis) = m.axis;
        let (of, times) = match &m.times {
            None => (m.of, None),
            Some(option) => match options.iter().find(|(n, _)| n == option).map(|(_, v)| *v) {
                // Both at most u32::MAX (the contract's bounds), so the
                // product fits.
                Some(OptionValue::Int(by)) if by > 0 => {
                    (m.of * by as u64, Some((option.clone(), m.of)))
                }
                _ => return None,
            },
        };
        Some(Requirement {
            param,
            axis,
            of,
            option: None,
            times,
            why: m.why.clone(),
        })
    });
    by_option.chain(by_constant).collect()
}

/// The index of `axis` in a tensor of rank `rank`, if it has it.
fn axis_index(axis: AxisRef, rank: usize) -> Option<usize> {
    match axis {
        AxisRef::Index(i) => (i < rank).then_some(i),
        AxisRef::Last => rank.checked_sub(1),
    }
}

/// Axes the template splits by an option (attention's hidden size by its
/// heads), or needs in multiples of a constant, must be so: checked here
/// for fixed and STATIC sizes; DYNAMIC ones are checked at run time.
pub(super) fn check_divisible(
    k: &KernelSpec,
    ctx: &str,
    contract: &Contract,
    options: &[(String, OptionValue)],
    drafts: &[Draft<'_>],
    dims: &[Dim],
    sink: &mut Sink<'_>,
) {
    for r in requirements(contract, options) {
        let Some(ai) = axis_index(r.axis, rank_of(&drafts[r.param])) else {
            continue;
        };
        let Some(dim) = dims.iter().find(|d| d.axes.contains(&(r.param, ai))) else {
            continue;
        };
        let sizes: &[u64] = match &dim.size {
            DimSize::Fixed(n) => std::slice::from_ref(n),
            DimSize::Static(v) => v,
            DimSize::Dynamic => continue,
        };
        let name = &drafts[r.param].spec.name.value;
        for &n in sizes {
            if n.is_multiple_of(r.of) {
                continue;
            }
            let (pos, message) = match &r.option {
                Some((option, _)) => (
                    k.options
                        .iter()
                        .find(|(key, _)| &key.value == option)
                        .map_or(k.name.pos, |(key, _)| key.pos),
                    format!(
                        "`{name}.{ai}` is {n}, which {option} = {} does not divide",
                        r.of
                    ),
                ),
                None => match &r.times {
                    Some((option, by)) => (
                        k.options
                            .iter()
                            .find(|(key, _)| &key.value == option)
                            .map_or(k.name.pos, |(key, _)| key.pos),
                        format!(
                            "`{name}.{ai}` is {n}, not a multiple of {} ({by} times {option} = {}): {}",
                            r.of,
                            r.of / by,
                            r.why
                        ),
                    ),
                    None => (
                        k.name.pos,
                        format!(
                            "`{name}.{ai}` is {n}, not a multiple of {}: {}",
                            r.of, r.why
                        ),
                    ),
                },
            };
            sink.error(pos, format!("{ctx}: {message}"));
        }
    }
}

/// Checks params against a contract; true when their count and roles
/// match, so that its relations can be applied. `t` names the template.
pub(super) fn check_params(
    k: &KernelSpec,
    contract: &Contract,
    t: &str,
    drafts: &[Draft<'_>],
    ctx: &str,
    sink: &mut Sink<'_>,
) -> bool {
    let Some(roles) = &contract.params else {
        check_dtypes(contract, t, drafts, ctx, sink);
        return true;
    };
    let expected: Vec<String> = roles
        .iter()
        .map(|r| format!("{} ({})", r.name, r.role.describe()))
        .collect();
    if drafts.len() != roles.len() {
        let pos = k.template.as_ref().map_or(k.name.pos, |t| t.pos);
        let absent: Vec<String> = contract
            .absent_params
            .iter()
            .filter_map(|r| {
                let (option, on) = r.condition.as_ref()?;
                Some(format!("`{}` only with `{option}: {on}`", r.name))
            })
            .collect();
        let hint = if absent.is_empty() {
            String::new()
        } else {
            format!(" ({})", absent.join(", "))
        };
        sink.error(
            pos,
            format!(
                "{ctx}: {t} takes {} params: {}; this kernel declares {}{hint}",
                roles.len(),
                expected.join(", "),
                drafts.len()
            ),
        );
        return false;
    }
    let mut roles_match = true;
    for (i, (d, role)) in drafts.iter().zip(roles).enumerate() {
        let pctx = format!("{ctx}, param `{}`", d.spec.name.value);
        let actual = match d.kind {
            ParamKind::Scalar(_) => Role::Scalar,
            ParamKind::Tensor { output: true, .. } => Role::Output,
            ParamKind::Tensor { output: false, .. } => Role::Input,
        };
        if actual != role.role {
            sink.error(
                d.spec.name.pos,
                format!(
                    "{pctx}: {t} expects param {} (`{}`) to be {}, but this is {}",
                    i + 1,
                    role.name,
                    role.role.describe(),
                    actual.describe()
                ),
            );
            roles_match = false;
            continue;
        }
        if let (ParamKind::Scalar(dtype), Some(want)) = (d.kind.clone(), role.dtype)
            && dtype != want
        {
            let pos = d.spec.scalar.as_ref().map_or(d.spec.name.pos, |s| s.pos);
            sink.error(
                pos,
                format!(
                    "{pctx}: {t} takes `{}` as a {want} scalar, not {dtype}",
                    role.name
                ),
            );
        }
        if let ParamKind::Tensor { axes, .. } = &d.kind
            && let Some(r) = role.rank.filter(|r| *r != axes.len())
        {
            let pos = d.spec.shape.as_ref().map_or(d.spec.name.pos, |s| s.pos);
            sink.error(
                pos,
                format!(
                    "{pctx}: {t} expects `{}` to have rank {r}, not {}",
                    role.name,
                    axes.len()
                ),
            );
        }
    }
    check_dtypes(contract, t, drafts, ctx, sink);
    if !roles_match {
        return false;
    }
    if !check_relation_axes(contract, roles, t, drafts, ctx, sink) {
        return false;
    }
    if let Some((big, small, _)) = contract.halved_last {
        let rank = |i: usize| rank_of(&drafts[i]);
        if rank(big) != rank(small) {
            let d = &drafts[small];
            let pos = d.spec.shape.as_ref().map_or(d.spec.name.pos, |s| s.pos);
            sink.error(
                pos,
                format!(
                    "{ctx}, param `{}`: {t} requires the rank of `{}`, {}, not {}",
                    d.spec.name.value,
                    drafts[big].spec.name.value,
                    rank(big),
                    rank(small)
                ),
            );
        }
    }
    for &(a, b, _) in &contract.same_shape {
        let rank = |i: usize| rank_of(&drafts[i]);
        if rank(a) != rank(b) {
            let d = &drafts[b];
            let pos = d.spec.shape.as_ref().map_or(d.spec.name.pos, |s| s.pos);
            sink.error(
                pos,
                format!(
                    "{ctx}, param `{}`: {t} requires it to have the shape of `{}`, but it has rank {} and `{}` rank {}",
                    d.spec.name.value,
                    drafts[a].spec.name.value,
                    rank(b),
                    drafts[a].spec.name.value,
                    rank(a)
                ),
            );
        }
    }
    true
}

/// Every axis a relation names by index must be an axis of the spec's
/// param: a relation past a param's rank would tie or check nothing. (A
/// param the contract gives a `rank` has the axes, or a rank error.)
fn check_relation_axes(
    contract: &Contract,
    roles: &[RoleSpec],
    t: &str,
    drafts: &[Draft<'_>],
    ctx: &str,
    sink: &mut Sink<'_>,
) -> bool {
    let mut ok = true;
    for relation in &contract.relations {
        let mut reported: Vec<usize> = Vec::new();
        for &(p, axis) in &relation.axes {
            let AxisRef::Index(i) = axis else { continue };
            let rank = rank_of(&drafts[p]);
            if i < rank || roles[p].rank.is_some() || reported.contains(&p) {
                continue;
            }
            reported.push(p);
            ok = false;
            let d = &drafts[p];
            let pos = d.spec.shape.as_ref().map_or(d.spec.name.pos, |s| s.pos);
            sink.error(
                pos,
                format!(
                    "{ctx}, param `{}`: {t}'s relation {} names axis {i} of `{}` (this \
                     param), which has rank {rank} here, so the relation would check nothing; \
                     give the param at least {} axes",
                    d.spec.name.value,
                    relation.describe(),
                    roles[p].name,
                    i + 1
                ),
            );
        }
    }
    ok
}

/// A contract's `dtypes`: every tensor in the list, all in one of them;
/// a param with its own `dtypes` in one of those instead.
fn check_dtypes(
    contract: &Contract,
    t: &str,
    drafts: &[Draft<'_>],
    ctx: &str,
    sink: &mut Sink<'_>,
) {
    let own = |i: usize| {
        contract
            .params
            .as_ref()
            .and_then(|ps| ps.get(i))
            .map_or(&[][..], |r| r.dtypes.as_slice())
    };
    let mut first_dtype: Option<(DType, &str)> = None;
    for (i, d) in drafts.iter().enumerate() {
        let ParamKind::Tensor { dtype, .. } = &d.kind else {
            continue;
        };
        let pctx = format!("{ctx}, param `{}`", d.spec.name.value);
        let dtype_pos = d.spec.dtype.as_ref().map_or(d.spec.name.pos, |s| s.pos);
        let listed = if own(i).is_empty() {
            &contract.dtypes[..]
        } else {
            own(i)
        };
        if listed.is_empty() {
            continue;
        }
        if !listed.contains(dtype) {
            let names: Vec<&str> = listed.iter().map(|d| d.spec_name()).collect();
            let message = match contract.params.as_ref().and_then(|ps| ps.get(i)) {
                Some(role) if !own(i).is_empty() => format!(
                    "{pctx}: {t} takes `{}` in {}, not {dtype}",
                    role.name,
                    names.join(", ")
                ),
                _ => format!(
                    "{pctx}: {t} is written for {}, not {dtype}",
                    names.join(", ")
                ),
            };
            sink.error(dtype_pos, message);
        } else if !own(i).is_empty() {
            continue;
        } else if let Some((first, first_name)) = first_dtype {
            if first != *dtype {
                sink.error(
                    dtype_pos,
                    format!(
                        "{pctx}: {t} needs all tensors in one dtype; `{first_name}` is {first}, this is {dtype}"
                    ),
                );
            }
        } else {
            first_dtype = Some((*dtype, &d.spec.name.value));
        }
    }
}

/// A param's rank; scalars have none.
fn rank_of(draft: &Draft<'_>) -> usize {
    match &draft.kind {
        ParamKind::Tensor { axes, .. } => axes.len(),
        ParamKind::Scalar(_) => 0,
    }
}

/// Merges the axes a contract says are equal. Runs only on a kernel whose
/// params matched the contract.
pub(super) fn tie_axes(contract: &Contract, drafts: &[Draft<'_>], sets: &mut AxisSets<'_>) {
    let rank = |i: usize| rank_of(&drafts[i]);
    for &(a, b, r) in &contract.same_shape {
        if rank(a) == rank(b) {
            for ax in 0..rank(a) {
                sets.tie((a, ax), (b, ax), r);
            }
        }
    }
    for &((pa, xa), (pb, xb), r) in &contract.same_axis {
        if let (Some(a), Some(b)) = (axis_index(xa, rank(pa)), axis_index(xb, rank(pb))) {
            sets.tie((pa, a), (pb, b), r);
        }
    }
    if let Some((big, small, r)) = contract.halved_last
        && rank(big) == rank(small)
    {
        for ax in 0..rank(big).saturating_sub(1) {
            sets.tie((big, ax), (small, ax), r);
        }
    }
}

/// For a halving contract (swiglu), the big last axis must be twice the
/// small one: checked here where both sizes are known at build time.
#[allow(clippy::too_many_arguments)]
pub(super) fn check_halved(
    k: &KernelSpec,
    ctx: &str,
    contract: &Contract,
    t: &str,
    drafts: &[Draft<'_>],
    dims: &[Dim],
    specialisations: &[Specialisation],
    sink: &mut Sink<'_>,
) {
    let Some((big, small, _)) = contract.halved_last else {
        return;
    };
    let last_dim = |p: usize| -> Option<usize> {
        let ParamKind::Tensor { axes, .. } = &drafts.get(p)?.kind else {
            return None;
        };
        let ai = axes.len() - 1;
        dims.iter().position(|d| d.axes.contains(&(p, ai)))
    };
    let (Some(db), Some(ds)) = (last_dim(big), last_dim(small)) else {
        return;
    };
    let size_in = |d: usize, s: &Specialisation| match &dims[d].size {
        DimSize::Fixed(n) => Some(*n),
        DimSize::Static(_) => s.0.iter().find(|(dim, _)| *dim == d).map(|(_, v)| *v),
        DimSize::Dynamic => None,
    };
    for s in specialisations {
        if let (Some(b), Some(sm)) = (size_in(db, s), size_in(ds, s))
            && b != 2 * sm
        {
            sink.error(
                k.name.pos,
                format!(
                    "{ctx}: {t} needs `{}`'s last axis to be twice `{}`'s, but it is {b} \
                     and {sm}",
                    drafts[big].spec.name.value, drafts[small].spec.name.value
                ),
            );
            return;
        }
    }
}

/// What code generation needs from a kernel's contract, resolved.
pub(super) struct Resolved {
    pub roles: Vec<String>,
    pub blocks: BlockRule,
    pub multiples: Vec<Multiple>,
    pub halves: Vec<Halves>,
    /// Bytes of workspace a launch lends the kernel, if it takes one.
    pub workspace: Option<u64>,
}

/// Resolves the contract (when it applied) against the checked params:
/// roles, the block rule with its option's value, and the requirements on
/// DYNAMIC axes that only a launch can check.
#[allow(clippy::too_many_arguments)]
pub(super) fn resolve(
    k: &KernelSpec,
    ctx: &str,
    contract: Option<&Contract>,
    template: &TemplateRef,
    params: &[Param],
    dims: &[Dim],
    options: &[(String, OptionValue)],
    sink: &mut Sink<'_>,
) -> Option<Resolved> {
    let rank = |p: usize| match &params[p].kind {
        ParamKind::Tensor { axes, .. } => axes.len(),
        ParamKind::Scalar(_) => 0,
    };
    let last_dim = |p: usize| match &params[p].kind {
        ParamKind::Tensor { axes, .. } => axes.last().map(|a| (axes.len() - 1, a.dim)),
        ParamKind::Scalar(_) => None,
    };
    let roles = match contract.and_then(|c| c.params.as_ref()) {
        Some(roles) => roles.iter().map(|r| r.name.clone()).collect(),
        None => params.iter().map(|p| p.name.clone()).collect(),
    };
    let int_option = |name: &str| {
        options.iter().find_map(|(n, v)| match v {
            OptionValue::Int(i) if n == name => u32::try_from(*i).ok(),
            _ => None,
        })
    };
    let blocks = match contract.and_then(|c| c.blocks.as_ref()) {
        Some(Blocks::Rows { param }) => BlockRule::Rows { param: *param },
        Some(Blocks::Elements { param, per_block }) => BlockRule::Elements {
            param: *param,
            per_block: *per_block,
        },
        Some(Blocks::Leading {
            param,
            axes,
            option,
        }) => {
            if *axes > rank(*param) {
                sink.error(
                    k.template.as_ref().map_or(k.name.pos, |t| t.pos),
                    format!(
                        "{ctx}: {template} splits blocks over the leading {axes} axes of `{}`, \
                         which has rank {}",
                        params[*param].name,
                        rank(*param)
                    ),
                );
                return None;
            }
            BlockRule::Leading {
                param: *param,
                axes: *axes,
                factor: option.as_deref().and_then(int_option).unwrap_or(1),
            }
        }
        Some(Blocks::Grid { options: names }) => {
            let values: Vec<u64> = names
                .iter()
                .map(|n| int_option(n).map_or(1, u64::from))
                .collect();
            let count = values
                .iter()
                .try_fold(1u64, |acc, v| acc.checked_mul(*v))
                .filter(|n| (1..=super::MAX_SPEC_BLOCKS).contains(n));
            let Some(count) = count else {
                let product: Vec<String> = names
                    .iter()
                    .zip(&values)
                    .map(|(n, v)| format!("{n} = {v}"))
                    .collect();
                sink.error(
                    k.options
                        .iter()
                        .find(|(key, _)| names.contains(&key.value))
                        .map_or(k.name.pos, |(key, _)| key.pos),
                    format!(
                        "{ctx}: {template} launches one block per cell of a grid of {}, more \
                         than the {} blocks a launch may have",
                        product.join(" by "),
                        super::MAX_SPEC_BLOCKS
                    ),
                );
                return None;
            };
            BlockRule::Count(count as u32)
        }
        // A block per 8 Ki elements of the first output, so small tensors
        // do not pay for many blocks.
        None => BlockRule::Elements {
            param: params
                .iter()
                .position(|p| matches!(p.kind, ParamKind::Tensor { output: true, .. }))
                .unwrap_or(0),
            per_block: 8192,
        },
    };
    let mut multiples = Vec::new();
    let mut halves = Vec::new();
    if let Some(c) = contract {
        for r in requirements(c, options) {
            let Some(axis) = axis_index(r.axis, rank(r.param)) else {
                continue;
            };
            let ParamKind::Tensor { axes, .. } = &params[r.param].kind else {
                continue;
            };
            if dims[axes[axis].dim].size != DimSize::Dynamic {
                continue;
            }
            let Ok(of) = u32::try_from(r.of) else {
                // Only `times` multiplies: sizes travel as u32, so no
                // size but 0 would pass.
                if let Some((option, by)) = &r.times {
                    sink.error(
                        k.name.pos,
                        format!(
                            "{ctx}: {template} needs `{}.{axis}` to be a multiple of {by} times \
                             {option}, {}, more than a size can be ({})",
                            params[r.param].name,
                            r.of,
                            u32::MAX
                        ),
                    );
                }
                continue;
            };
            let why = match (r.option, r.times) {
                (Some((option, doc)), _) => format!("{option} = {of}: {doc}"),
                (None, Some((option, by))) => {
                    format!("{by} times {option} = {}: {}", u64::from(of) / by, r.why)
                }
                (None, None) => r.why,
            };
            multiples.push(Multiple {
                param: r.param,
                axis,
                of,
                why,
            });
        }
        if let Some((big, small, _)) = c.halved_last
            && let (Some((ab, db)), Some((small_axis, ds))) = (last_dim(big), last_dim(small))
            && (dims[db].size == DimSize::Dynamic || dims[ds].size == DimSize::Dynamic)
        {
            halves.push(Halves {
                big: (big, ab),
                small: (small, small_axis),
                why: format!("{template} splits it into two halves"),
            });
        }
    }
    // The grid's count is known here; the contract admits a workspace only
    // with the grid rule.
    let workspace = contract.and_then(|c| c.workspace).map(|w| match blocks {
        BlockRule::Count(n) => w.shared + w.per_block * u64::from(n),
        _ => w.shared,
    });
    Some(Resolved {
        roles,
        blocks,
        multiples,
        halves,
        workspace,
    })
}
