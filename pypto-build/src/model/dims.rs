//! Dims: module-level declarations, the union of axes into dims, STATIC
//! sizes and the specialisations they enumerate.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::{
    Axis, AxisKind, Dim, DimSize, Draft, MAX_SIZE, MAX_SPECIALISATIONS, ParamKind, Specialisation,
};
use crate::diag::{Pos, Sink, clip};
use crate::names::{did_you_mean, identifier_problem};
use crate::spec::{KernelSpec, QUOTED, Sp, SpecFile};
use crate::yaml::{Node, Value};

/// A module-level dim declaration, as the model understands it.
pub(super) struct NamedDim {
    pub kind: AxisKind,
}

/// The dims of one file: valid ones, and the names of invalid ones, which
/// are known so that their uses do not cascade into "undefined" errors.
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
        let kind = match &decl.value.value {
            Value::Str(s) if s == "DYNAMIC" || s == "DYN" => Some(AxisKind::Dynamic),
            Value::Str(s) if s == "STATIC" => Some(AxisKind::Static),
            Value::Str(s) => {
                sink.error(
                    decl.value.pos,
                    format!(
                        "{ctx}: unknown dim value `{s}`; expected DYNAMIC, DYN, STATIC or a \
                         positive integer{}",
                        did_you_mean(s, ["DYNAMIC", "DYN", "STATIC"])
                    ),
                );
                None
            }
            _ => match size(&decl.value) {
                Ok(n) => Some(AxisKind::Fixed(n)),
                Err(why) => {
                    sink.error(decl.value.pos, format!("{ctx}: {why}"));
                    None
                }
            },
        };
        match kind {
            Some(kind) if ok => {
                dims.valid.insert(name.value.clone(), NamedDim { kind });
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

/// Every tensor axis of a kernel as a slot, and the sets of slots that
/// must have one size: axes sharing a name, then axes a contract ties.
pub(super) struct AxisSets<'d> {
    /// (param, axis) of each slot.
    pub slots: Vec<(usize, usize)>,
    pub slot_of: BTreeMap<(usize, usize), usize>,
    /// The first slot naming each module-level dim.
    pub first_use: BTreeMap<&'d str, usize>,
    pub uf: UnionFind,
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
        for (pi, d) in drafts.iter().enumerate() {
            if let ParamKind::Tensor { axes, .. } = &d.kind {
                for (ai, axis) in axes.iter().enumerate() {
                    if let Some(n) = &axis.name {
                        let slot = slot_of[&(pi, ai)];
                        match first_use.get(n.as_str()) {
                            Some(&first) => uf.union(first, slot),
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
        }
    }

    /// Merges the sets of two axes.
    pub fn tie(&mut self, a: (usize, usize), b: (usize, usize)) {
        self.uf.union(self.slot_of[&a], self.slot_of[&b]);
    }
}

/// Resolves each set of axes into one dim, in order of first appearance:
/// fixed sizes must agree, STATIC ones need sizes listed. `tied_by` names
/// the template whose contract tied axes, for messages.
pub(super) fn resolve(
    ctx: &str,
    drafts: &[Draft<'_>],
    sets: &mut AxisSets<'_>,
    statics: &BTreeMap<usize, StaticValues>,
    tied_by: Option<&str>,
    sink: &mut Sink<'_>,
) -> Vec<Dim> {
    let slots = &sets.slots;
    let uf = &mut sets.uf;
    let mut dim_of_root: BTreeMap<usize, usize> = BTreeMap::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for slot in 0..slots.len() {
        let root = uf.find(slot);
        let next = members.len();
        let dim = *dim_of_root.entry(root).or_insert(next);
        if dim == members.len() {
            members.push(Vec::new());
        }
        members[dim].push(slot);
    }
    let axis_of = |slot: usize| -> Option<(&Axis, Pos)> {
        let (pi, ai) = slots[slot];
        match &drafts[pi].kind {
            ParamKind::Tensor { axes, .. } => Some((&axes[ai], drafts[pi].axis_pos[ai])),
            ParamKind::Scalar(_) => None,
        }
    };
    let label = |slot: usize| {
        let (pi, ai) = slots[slot];
        format!("{}.{ai}", drafts[pi].spec.name.value)
    };
    let mut kernel_dims = Vec::with_capacity(members.len());
    for class in &members {
        let root = uf.find(class[0]);
        let mut fixed: Option<(u64, usize)> = None;
        let mut any_static = false;
        let mut name = None;
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
                            why_tied(&axis.name, tied_by)
                        ),
                    ),
                    Some(_) => {}
                },
                AxisKind::Static => any_static = true,
                AxisKind::Dynamic => {}
            }
        }
        let values = statics.get(&root);
        let size = match (fixed, values) {
            (Some((n, first)), Some(v)) => {
                if let Some(bad) = v.values.iter().find(|x| x.value != n) {
                    sink.error(
                        bad.pos,
                        format!(
                            "{ctx}, `static` entry `{}`: {} cannot be built: this dim must \
                             equal `{}`, which is fixed at {n}",
                            v.key,
                            bad.value,
                            label(first)
                        ),
                    );
                }
                DimSize::Fixed(n)
            }
            (Some((n, _)), None) => DimSize::Fixed(n),
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
        });
    }
    kernel_dims
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
