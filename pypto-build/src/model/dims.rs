//! Dims: module-level declarations, the union of axes into dims, STATIC
//! sizes and the specialisations they enumerate.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::{
    Axis, AxisKind, Dim, DimSize, Draft, MAX_SIZE, MAX_SPECIALISATIONS, ParamKind, Specialisation,
};
use crate::contract::Relation;
use crate::diag::{Pos, Sink, clip};
use crate::names::{did_you_mean, identifier_problem};
use crate::spec::{KernelSpec, QUOTED, Sp, SpecFile};
use crate::yaml::{Node, Value};

/// A module-level dim declaration, as the model understands it.
#[derive(Clone)]
pub(super) struct NamedDim {
    pub kind: AxisKind,
    /// What it counts (`{ marker: …, doc: … }`).
    pub doc: Option<String>,
}

/// The dims of one file: valid ones, and the names of invalid ones, which
/// are known so that their uses do not cascade into "undefined" errors.
#[derive(Clone)]
pub(super) struct FileDims {
    pub valid: BTreeMap<String, NamedDim>,
    pub invalid: BTreeSet<String>,
}

use crate::grammar::MARKERS as MARKER_WORDS;

pub(super) fn check_dims(spec: &SpecFile, sink: &mut Sink<'_>) -> FileDims {
    let mut dims = FileDims {
        valid: BTreeMap::new(),
        invalid: BTreeSet::new(),
    };
    for decl in &spec.dims {
        let name = &decl.name;
        let ctx = format!("dims, `{}`", clip(&name.value, QUOTED));
        let mut ok = true;
        if MARKER_WORDS.contains(&name.value.as_str()) {
            sink.error(
                name.pos,
                format!(
                    "{ctx}: `{}` is a dim marker and cannot name a dim",
                    name.value
                ),
            );
            ok = false;
        } else if let Some(problem) = identifier_problem(&name.value) {
            sink.error(name.pos, format!("{ctx}: not a valid dim name: {problem}"));
            ok = false;
        }
        // `{ marker: …, doc: … }`, or the marker alone.
        let mut doc = None;
        let mut marker = &decl.value;
        if let Value::Map(pairs) = &decl.value.value {
            let mut found = None;
            for (key, value) in pairs {
                match &key.value {
                    Value::Str(k) if k == "marker" => found = Some(value),
                    Value::Str(k) if k == "doc" => match &value.value {
                        Value::Str(text) => doc = Some(text.clone()),
                        other => {
                            sink.error(
                                value.pos,
                                format!("{ctx}, `doc`: expected a string, found {}", other.kind()),
                            );
                            ok = false;
                        }
                    },
                    other => {
                        let shown = match other {
                            Value::Str(k) => k.clone(),
                            v => v.kind().to_owned(),
                        };
                        sink.error(
                            key.pos,
                            format!(
                                "{ctx}: unknown key `{}`; expected `marker` or `doc`{}",
                                clip(&shown, QUOTED),
                                did_you_mean(&shown, ["marker", "doc"])
                            ),
                        );
                        ok = false;
                    }
                }
            }
            match found {
                Some(value) => marker = value,
                None => {
                    sink.error(
                        decl.value.pos,
                        format!(
                            "{ctx}: no `marker`; give DYNAMIC, DYN, STATIC or a positive integer, \
                             e.g. `{{ marker: DYNAMIC, doc: \"…\" }}`"
                        ),
                    );
                    dims.invalid.insert(name.value.clone());
                    continue;
                }
            }
        }
        let kind = match &marker.value {
            Value::Str(s) if s == "DYNAMIC" || s == "DYN" => Some(AxisKind::Dynamic),
            Value::Str(s) if s == "STATIC" => Some(AxisKind::Static),
            Value::Str(s) => {
                sink.error(
                    marker.pos,
                    format!(
                        "{ctx}: unknown dim value `{s}`; expected DYNAMIC, DYN, STATIC or a \
                         positive integer{}",
                        did_you_mean(s, ["DYNAMIC", "DYN", "STATIC"])
                    ),
                );
                None
            }
            _ => match size(marker) {
                Ok(n) => Some(AxisKind::Fixed(n)),
                Err(why) => {
                    sink.error(marker.pos, format!("{ctx}: {why}"));
                    None
                }
            },
        };
        match kind {
            Some(kind) if ok => {
                dims.valid
                    .insert(name.value.clone(), NamedDim { kind, doc });
            }
            _ => {
                dims.invalid.insert(name.value.clone());
            }
        }
    }
    dims
}

/// A positive size that a kernel argument can carry.
pub(super) fn size(node: &Node) -> Result<u64, String> {
    match &node.value {
        Value::Int(n) if *n <= 0 => Err(format!("sizes must be positive, found {n}")),
        Value::Int(n) if *n > i128::from(MAX_SIZE) => Err(format!(
            "size {n} is larger than {MAX_SIZE}, the most a kernel's `uint32_t` size argument can carry"
        )),
        Value::Int(n) => Ok(*n as u64),
        Value::Float { raw } => {
            let digits = raw.trim_start_matches(['+', '-']);
            if digits.chars().all(|c| c.is_ascii_digit()) {
                Err(format!(
                    "size {raw} is larger than {MAX_SIZE}, the most a kernel's `uint32_t` size argument can carry"
                ))
            } else {
                Err(format!("sizes must be positive integers, found `{raw}`"))
            }
        }
        other => Err(format!(
            "expected a positive integer, found {}",
            other.kind()
        )),
    }
}

/// The sizes listed for one dim, and the `static` key they were listed under.
/// An entry with errors has no values; it still counts as "listed".
pub(super) struct StaticValues {
    pub key: String,
    pub values: Vec<Sp<u64>>,
}

/// Checks `static:` and returns the sizes per class root.
pub(super) fn check_statics(
    k: &KernelSpec,
    ctx: &str,
    drafts: &[Draft<'_>],
    dims: &FileDims,
    sets: &mut AxisSets<'_>,
    sink: &mut Sink<'_>,
) -> BTreeMap<usize, StaticValues> {
    let AxisSets {
        slot_of,
        first_use,
        uf,
        ..
    } = sets;
    let mut by_root: BTreeMap<usize, StaticValues> = BTreeMap::new();
    // Lookups by name, so that many params and many entries stay linear.
    let mut draft_of: HashMap<&str, usize> = HashMap::with_capacity(drafts.len());
    for (i, d) in drafts.iter().enumerate() {
        draft_of.entry(d.spec.name.value.as_str()).or_insert(i);
    }
    let declared: HashSet<&str> = k.params.iter().map(|p| p.name.value.as_str()).collect();
    for entry in &k.statics {
        let key = &entry.key.value;
        let at = format!("{ctx}, `static` entry `{}`", clip(key, QUOTED));
        // Which axis or named dim the key refers to, and what it was declared as.
        let target: Option<(usize, AxisKind)> = if let Some((pname, axis)) = key.split_once('.') {
            let Some(&pi) = draft_of.get(pname) else {
                if !declared.contains(pname) {
                    sink.error_with(entry.key.pos, || {
                        let names = drafts.iter().map(|d| d.spec.name.value.as_str());
                        format!(
                            "{at}: kernel has no param `{pname}`{}",
                            did_you_mean(pname, names)
                        )
                    });
                }
                continue;
            };
            let ParamKind::Tensor { axes, .. } = &drafts[pi].kind else {
                sink.error(
                    entry.key.pos,
                    format!("{at}: `{pname}` is a scalar and has no axes"),
                );
                continue;
            };
            match axis.parse::<usize>() {
                Ok(ai) if ai < axes.len() => Some((slot_of[&(pi, ai)], axes[ai].kind)),
                _ => {
                    sink.error(
                        entry.key.pos,
                        format!(
                            "{at}: `{pname}` has axes 0 to {}; write `{pname}.AXIS` with AXIS a number in that range",
                            axes.len() - 1
                        ),
                    );
                    continue;
                }
            }
        } else if let Some(d) = dims.valid.get(key) {
            match first_use.get(key.as_str()) {
                Some(&slot) => Some((slot, d.kind)),
                None => {
                    sink.error(
                        entry.key.pos,
                        format!("{at}: no param of this kernel uses the dim `{key}`"),
                    );
                    continue;
                }
            }
        } else {
            if !dims.invalid.contains(key) {
                sink.error_with(entry.key.pos, || {
                    let mut candidates: Vec<String> = dims
                        .valid
                        .iter()
                        .filter(|(_, d)| d.kind == AxisKind::Static)
                        .map(|(n, _)| n.clone())
                        .collect();
                    for d in drafts {
                        if let ParamKind::Tensor { axes, .. } = &d.kind {
                            for (ai, a) in axes.iter().enumerate() {
                                if a.kind == AxisKind::Static && a.name.is_none() {
                                    candidates.push(format!("{}.{ai}", d.spec.name.value));
                                }
                            }
                        }
                    }
                    format!(
                        "{at}: expected `param.axis` or the name of a STATIC dim from `dims`{}",
                        did_you_mean(key, candidates.iter().map(String::as_str))
                    )
                });
            }
            continue;
        };
        let Some((slot, kind)) = target else { continue };
        if kind != AxisKind::Static {
            sink.error(
                entry.key.pos,
                format!("{at}: sizes can only be listed for STATIC axes, and `{key}` is {kind}"),
            );
            continue;
        }
        if entry.values.value.is_empty() {
            sink.error(
                entry.values.pos,
                format!("{at}: lists no sizes; a STATIC axis needs at least one size to build"),
            );
            by_root.entry(uf.find(slot)).or_insert(StaticValues {
                key: key.clone(),
                values: Vec::new(),
            });
            continue;
        }
        let root = uf.find(slot);
        let mut values: Vec<Sp<u64>> = Vec::new();
        let mut listed: HashSet<u64> = HashSet::new();
        let mut ok = true;
        for v in &entry.values.value {
            match size(v) {
                Ok(n) if !listed.insert(n) => {
                    sink.error(v.pos, format!("{at}: size {n} is listed twice"));
                    ok = false;
                }
                Ok(n) => values.push(Sp {
                    value: n,
                    pos: v.pos,
                }),
                Err(why) => {
                    sink.error(v.pos, format!("{at}: {why}"));
                    ok = false;
                }
            }
        }
        if !ok {
            // Keep the dim marked as listed, so it is not also "missing".
            by_root.entry(root).or_insert(StaticValues {
                key: key.clone(),
                values: Vec::new(),
            });
            continue;
        }
        if let Some(prev) = by_root.get(&root) {
            let same = prev.values.len() == values.len()
                && prev
                    .values
                    .iter()
                    .zip(&values)
                    .all(|(a, b)| a.value == b.value);
            if !same && !prev.values.is_empty() {
                sink.error(
                    entry.key.pos,
                    format!(
                        "{at}: `{key}` and `{}` are one dim, but list different sizes; list them once",
                        prev.key
                    ),
                );
            }
            continue;
        }
        by_root.insert(
            root,
            StaticValues {
                key: key.clone(),
                values,
            },
        );
    }
    by_root
}

pub(super) fn enumerate_specialisations(
    k: &KernelSpec,
    ctx: &str,
    dims: &[Dim],
    drafts: &[Draft<'_>],
    sink: &mut Sink<'_>,
) -> Vec<Specialisation> {
    let statics: Vec<(usize, &Vec<u64>)> = dims
        .iter()
        .enumerate()
        .filter_map(|(i, d)| match &d.size {
            DimSize::Static(v) if !v.is_empty() => Some((i, v)),
            _ => None,
        })
        .collect();
    let count = statics
        .iter()
        .try_fold(1usize, |acc, (_, v)| acc.checked_mul(v.len()));
    if count.is_none_or(|c| c > MAX_SPECIALISATIONS) {
        let label = |i: usize| {
            let d = &dims[i];
            d.name.clone().unwrap_or_else(|| {
                let (pi, ai) = d.axes[0];
                format!("{}.{ai}", drafts[pi].spec.name.value)
            })
        };
        let factors: Vec<String> = statics
            .iter()
            .map(|(i, v)| format!("{}: {} sizes", label(*i), v.len()))
            .collect();
        let total = count.map_or_else(|| "too many".to_owned(), |c| c.to_string());
        sink.error(
            k.statics_pos.unwrap_or(k.name.pos),
            format!(
                "{ctx}: would build {total} specialisations ({}); at most {MAX_SPECIALISATIONS} \
                 are allowed, because each is a separately compiled kernel object and wrapper \
                 instance; list fewer sizes or make an axis DYNAMIC",
                factors.join(" × ")
            ),
        );
        return Vec::new();
    }
    let mut out = vec![Specialisation(Vec::new())];
    for (dim, values) in statics {
        out = out
            .into_iter()
            .flat_map(|s| {
                values.iter().map(move |&v| {
                    let mut next = s.0.clone();
                    next.push((dim, v));
                    Specialisation(next)
                })
            })
            .collect();
    }
    out
}

/// Why two axes are one dim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tie<'d> {
    /// Both name this module-level dim.
    Name(&'d str),
    /// The contract's relation of this index ties them.
    Relation(usize),
}

/// One tie between two slots, and why.
pub(super) type Step<'d> = (usize, usize, Tie<'d>);

/// Every tensor axis of a kernel as a slot, and the sets of slots that
/// must have one size: axes sharing a name, then axes a contract ties.
pub(super) struct AxisSets<'d> {
    /// (param, axis) of each slot.
    pub slots: Vec<(usize, usize)>,
    pub slot_of: BTreeMap<(usize, usize), usize>,
    /// The first slot naming each module-level dim.
    pub first_use: BTreeMap<&'d str, usize>,
    pub uf: UnionFind,
    /// Every merge and its reason, to explain a dim in messages.
    pub ties: Vec<Step<'d>>,
}

impl<'d> AxisSets<'d> {
    /// One slot per tensor axis, axes sharing a dim name already merged.
    pub fn new(drafts: &'d [Draft<'_>]) -> Self {
        let mut slots = Vec::new();
        let mut slot_of = BTreeMap::new();
        for (pi, d) in drafts.iter().enumerate() {
            if let ParamKind::Tensor { axes, .. } = &d.kind {
                for ai in 0..axes.len() {
                    slot_of.insert((pi, ai), slots.len());
                    slots.push((pi, ai));
                }
            }
        }
        let mut uf = UnionFind::new(slots.len());
        let mut first_use: BTreeMap<&str, usize> = BTreeMap::new();
        let mut ties = Vec::new();
        for (pi, d) in drafts.iter().enumerate() {
            if let ParamKind::Tensor { axes, .. } = &d.kind {
                for (ai, axis) in axes.iter().enumerate() {
                    if let Some(n) = &axis.name {
                        let slot = slot_of[&(pi, ai)];
                        match first_use.get(n.as_str()) {
                            Some(&first) => {
                                uf.union(first, slot);
                                ties.push((first, slot, Tie::Name(n.as_str())));
                            }
                            None => {
                                first_use.insert(n, slot);
                            }
                        }
                    }
                }
            }
        }
        AxisSets {
            slots,
            slot_of,
            first_use,
            uf,
            ties,
        }
    }

    /// Merges the sets of two axes, which the contract's relation of index
    /// `relation` ties.
    pub fn tie(&mut self, a: (usize, usize), b: (usize, usize), relation: usize) {
        let (a, b) = (self.slot_of[&a], self.slot_of[&b]);
        self.uf.union(a, b);
        self.ties.push((a, b, Tie::Relation(relation)));
    }

    /// The shortest chain of ties from slot `from` to a slot for which
    /// `wanted` holds: that slot, and each step as (slot, slot, tie).
    fn path(&self, from: usize, wanted: impl Fn(usize) -> bool) -> Option<(usize, Vec<Step<'d>>)> {
        let mut next: Vec<Vec<(usize, Tie<'d>)>> = vec![Vec::new(); self.slots.len()];
        for &(a, b, why) in &self.ties {
            next[a].push((b, why));
            next[b].push((a, why));
        }
        let mut came_from: Vec<Option<(usize, Tie<'d>)>> = vec![None; self.slots.len()];
        let mut seen = vec![false; self.slots.len()];
        seen[from] = true;
        let mut queue = std::collections::VecDeque::from([from]);
        while let Some(slot) = queue.pop_front() {
            if slot != from && wanted(slot) {
                let mut steps = Vec::new();
                let mut at = slot;
                while let Some((prev, why)) = came_from[at] {
                    steps.push((prev, at, why));
                    at = prev;
                }
                steps.reverse();
                return Some((slot, steps));
            }
            for &(other, why) in &next[slot] {
                if !seen[other] {
                    seen[other] = true;
                    came_from[other] = Some((slot, why));
                    queue.push_back(other);
                }
            }
        }
        None
    }
}

/// Resolves each set of axes into one dim, in order of first appearance:
/// fixed sizes must agree, STATIC ones need sizes listed, and a contract's
/// relations may tie only axes declared alike (DYNAMIC with DYNAMIC,
/// STATIC with STATIC, a size with that size), so that every axis keeps
/// the marker the spec gives it. `tied_by` names the template whose
/// contract tied axes, and its relations, for messages.
pub(super) fn resolve(
    ctx: &str,
    drafts: &[Draft<'_>],
    sets: &mut AxisSets<'_>,
    statics: &BTreeMap<usize, StaticValues>,
    tied_by: Option<(&str, &[Relation])>,
    sink: &mut Sink<'_>,
) -> Vec<Dim> {
    let mut dim_of_root: BTreeMap<usize, usize> = BTreeMap::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for slot in 0..sets.slots.len() {
        let root = sets.uf.find(slot);
        let next = members.len();
        let dim = *dim_of_root.entry(root).or_insert(next);
        if dim == members.len() {
            members.push(Vec::new());
        }
        members[dim].push(slot);
    }
    let slots = &sets.slots;
    let axis_of = |slot: usize| -> Option<(&Axis, Pos)> {
        let (pi, ai) = slots[slot];
        match &drafts[pi].kind {
            ParamKind::Tensor { axes, .. } => Some((&axes[ai], drafts[pi].axis_pos[ai])),
            ParamKind::Scalar(_) => None,
        }
    };
    let kind_of = |slot: usize| axis_of(slot).map(|(a, _)| a.kind);
    let label = |slot: usize| {
        let (pi, ai) = slots[slot];
        format!("{}.{ai}", drafts[pi].spec.name.value)
    };
    let mut kernel_dims = Vec::with_capacity(members.len());
    for class in &members {
        let root = sets.uf.find(class[0]);
        let mut fixed: Option<(u64, usize)> = None;
        let mut any_static = false;
        let mut name = None;
        // The first axis's doc and position.
        let doc = class
            .iter()
            .find_map(|&slot| axis_of(slot).and_then(|(a, _)| a.doc.clone()));
        let pos = class
            .iter()
            .find_map(|&slot| axis_of(slot).map(|(_, p)| p))
            .unwrap_or_default();
        for &slot in class {
            let Some((axis, pos)) = axis_of(slot) else {
                continue;
            };
            if name.is_none() {
                name.clone_from(&axis.name);
            }
            match axis.kind {
                AxisKind::Fixed(n) => match fixed {
                    None => fixed = Some((n, slot)),
                    Some((m, first)) if m != n => sink.error(
                        pos,
                        format!(
                            "{ctx}: `{}` is fixed at {n} but must equal `{}`, fixed at {m}{}",
                            label(slot),
                            label(first),
                            why_tied(&axis.name, tied_by.map(|(t, _)| t))
                        ),
                    ),
                    Some(_) => {}
                },
                AxisKind::Static => any_static = true,
                AxisKind::Dynamic => {}
            }
        }
        if let Some(mixed) = mixed_kinds(class, &kind_of, fixed.is_some(), sets) {
            report_mixed(ctx, mixed, &axis_of, &label, tied_by, sink);
            kernel_dims.push(Dim {
                name,
                size: DimSize::Dynamic,
                axes: class.iter().map(|&s| slots[s]).collect(),
                doc,
                pos,
            });
            continue;
        }
        let values = statics.get(&root);
        // Sizes are listed only for STATIC axes, so a fixed dim with sizes
        // listed was reported as mixed above.
        let size = match (fixed, values) {
            (Some((n, _)), _) => DimSize::Fixed(n),
            (None, Some(v)) => DimSize::Static(v.values.iter().map(|x| x.value).collect()),
            (None, None) if any_static => {
                let slot = class
                    .iter()
                    .copied()
                    .find(|&s| axis_of(s).is_some_and(|(a, _)| a.kind == AxisKind::Static))
                    .unwrap_or(class[0]);
                if let Some((axis, pos)) = axis_of(slot) {
                    let key = axis.name.clone().unwrap_or_else(|| label(slot));
                    sink.error(
                        pos,
                        format!(
                            "{ctx}: STATIC axis `{}` has no sizes to build; list them under \
                             `static:`, e.g. `{key}: [128]`",
                            label(slot)
                        ),
                    );
                }
                DimSize::Static(Vec::new())
            }
            (None, None) => DimSize::Dynamic,
        };
        kernel_dims.push(Dim {
            name,
            size,
            axes: class.iter().map(|&s| slots[s]).collect(),
            doc,
            pos,
        });
    }
    kernel_dims
}

/// An axis of a dim declared unlike another of its axes: the first such
/// axis, the nearest axis it disagrees with, and the ties between them.
struct Mixed<'d> {
    axis: usize,
    other: usize,
    steps: Vec<Step<'d>>,
}

/// Whether the axes of `class` are declared alike. When one is fixed, every
/// DYNAMIC or STATIC axis disagrees (it would become fixed); else a STATIC
/// and a DYNAMIC axis disagree (one would become the other).
fn mixed_kinds<'d>(
    class: &[usize],
    kind_of: &impl Fn(usize) -> Option<AxisKind>,
    has_fixed: bool,
    sets: &AxisSets<'d>,
) -> Option<Mixed<'d>> {
    let is_fixed = |slot: usize| matches!(kind_of(slot), Some(AxisKind::Fixed(_)));
    let first = kind_of(class[0]);
    // Unlike the reported axis: fixed, or declared as the dim's first axis.
    let unlike = |s: usize| {
        if has_fixed {
            is_fixed(s)
        } else {
            kind_of(s) == first
        }
    };
    let axis = class.iter().copied().find(|&s| !unlike(s))?;
    let (other, steps) = sets.path(axis, unlike)?;
    Some(Mixed { axis, other, steps })
}

fn report_mixed<'a>(
    ctx: &str,
    mixed: Mixed<'_>,
    axis_of: &impl Fn(usize) -> Option<(&'a Axis, Pos)>,
    label: &impl Fn(usize) -> String,
    tied_by: Option<(&str, &[Relation])>,
    sink: &mut Sink<'_>,
) {
    let Some((axis, pos)) = axis_of(mixed.axis) else {
        return;
    };
    let Some((other, _)) = axis_of(mixed.other) else {
        return;
    };
    let shown = |slot: usize, a: &Axis| match &a.name {
        Some(n) => format!("`{}` (the dim `{n}`)", label(slot)),
        None => format!("`{}`", label(slot)),
    };
    let declared = |a: &Axis| match a.kind {
        AxisKind::Dynamic => "declared DYNAMIC".to_owned(),
        AxisKind::Static if a.written == "..." => "declared STATIC (by `...`)".to_owned(),
        AxisKind::Static => "declared STATIC".to_owned(),
        AxisKind::Fixed(n) => format!("fixed at {n}"),
    };
    let (template, relations) = tied_by.unwrap_or(("its template", &[]));
    let steps: Vec<String> = mixed
        .steps
        .iter()
        .map(|&(a, b, why)| match why {
            Tie::Name(n) => format!("`{}` and `{}` are the dim `{n}`", label(a), label(b)),
            Tie::Relation(i) => match relations.get(i) {
                Some(r) => format!("{} ties `{}` to `{}`", r.describe(), label(a), label(b)),
                None => format!("a relation ties `{}` to `{}`", label(a), label(b)),
            },
        })
        .collect();
    sink.error(
        pos,
        format!(
            "{ctx}: {} is {}, but {template} makes it one dim with {}, which is {}: {}; a \
             template's relations cannot change how the spec declares an axis, so declare \
             both alike",
            shown(mixed.axis, axis),
            declared(axis),
            shown(mixed.other, other),
            declared(other),
            steps.join(", ")
        ),
    );
}

fn why_tied(name: &Option<String>, tied_by: Option<&str>) -> String {
    match (name, tied_by) {
        (Some(n), _) => format!(" (both are the dim `{n}`)"),
        (None, Some(t)) => format!(" ({t} requires them to be equal)"),
        (None, None) => String::new(),
    }
}

/// Disjoint sets over axis slots; the smallest slot of a set is its root so
/// that results never depend on merge order.
pub(super) struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    fn new(n: usize) -> Self {
        UnionFind {
            parent: (0..n).collect(),
        }
    }

    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        let (lo, hi) = (ra.min(rb), ra.max(rb));
        self.parent[hi] = lo;
    }
}
