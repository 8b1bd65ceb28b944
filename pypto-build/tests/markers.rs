//! Property test: random template contracts × random specs. A contract's
//! relations tie axes into one dim; they may never change what the spec
//! declares an axis to be. So every spec the checker accepts keeps, for
//! every axis, the marker it was written with (DYNAMIC, STATIC or its
//! fixed size) in the dim the model puts it in, and the model's dims are
//! exactly the sets of axes the relations and names tie; every spec whose
//! relations would tie axes declared differently is refused, with a message
//! at the spec; and so is every spec with a param that lacks an axis a
//! relation names (`x.3` of a rank-2 param, where the contract gives no
//! rank).
//!
//! The oracle is this file's own: it knows the markers it wrote and works out
//! the ties from the contract it wrote, independently of the checker.
//!
//! `PYPTO_MUTATE_CASES=100000 cargo test -p pypto-build --release --test markers -- --nocapture`
//! runs a longer search than the default; each run prints its seed, and
//! `PYPTO_MUTATE_SEED=N` runs the cases of seed N again.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use pypto_build::model::{AxisKind, DimSize, Kernel, ParamKind};

/// Cases per run: `PYPTO_MUTATE_CASES`, else a count quick enough for CI.
fn cases() -> u64 {
    std::env::var("PYPTO_MUTATE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

// Shared with the other property tests; this one draws from its own
// SplitMix64 stream, not a ChaCha key.
#[allow(dead_code)]
#[path = "support/seed.rs"]
mod seed;
use seed::seed;

/// SplitMix64: small, and the same sequence for a seed on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability `percent` / 100.
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

// ---- contracts ---------------------------------------------------------------

/// An axis a relation names: an index or the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AxisRef {
    Index(usize),
    Last,
}

#[derive(Debug, Clone)]
enum Relation {
    SameShape(Vec<usize>),
    SameDim(Vec<(usize, AxisRef)>),
    HalvedLast(usize, usize),
    MultipleOf((usize, AxisRef), u64),
}

/// A random contract over `tensors` tensor params (the last the output) and
/// perhaps one scalar, written first.
struct Contract {
    scalar: bool,
    tensors: usize,
    /// A declared rank per tensor, or none.
    ranks: Vec<Option<usize>>,
    relations: Vec<Relation>,
}

const ROLE_NAMES: [&str; 4] = ["p", "q", "r", "o"];

fn role(t: usize, tensors: usize) -> &'static str {
    if t + 1 == tensors { "o" } else { ROLE_NAMES[t] }
}

fn axis_text(t: usize, tensors: usize, axis: AxisRef) -> String {
    match axis {
        AxisRef::Index(i) => format!("{}.{i}", role(t, tensors)),
        AxisRef::Last => format!("{}.last", role(t, tensors)),
    }
}

fn random_contract(rng: &mut Rng) -> Contract {
    let tensors = 2 + rng.below(3);
    let ranks: Vec<Option<usize>> = (0..tensors)
        .map(|_| rng.chance(50).then(|| 1 + rng.below(3)))
        .collect();
    // An axis a relation may name: within a declared rank, else mostly the
    // first, sometimes anything up to 3 (which a spec param of lower rank
    // may not have).
    let axis = |rng: &mut Rng, t: usize| -> AxisRef {
        if rng.chance(25) {
            return AxisRef::Last;
        }
        match ranks[t] {
            Some(r) => AxisRef::Index(rng.below(r)),
            None if rng.chance(25) => AxisRef::Index(rng.below(4)),
            None => AxisRef::Index(0),
        }
    };
    let mut relations = Vec::new();
    for _ in 0..rng.below(4) {
        let relation = match rng.below(10) {
            0..=2 => {
                // Params of one declared rank (or none declared).
                let first = rng.below(tensors);
                let mut group = vec![first];
                for t in 0..tensors {
                    let fits = match (ranks[first], ranks[t]) {
                        (Some(a), Some(b)) => a == b,
                        _ => true,
                    };
                    if t != first && fits && rng.chance(50) {
                        group.push(t);
                    }
                }
                if group.len() < 2 {
                    continue;
                }
                Relation::SameShape(group)
            }
            3..=6 => {
                let n = 2 + rng.below(2);
                let axes = (0..n)
                    .map(|_| {
                        let t = rng.below(tensors);
                        (t, axis(rng, t))
                    })
                    .collect();
                Relation::SameDim(axes)
            }
            7 => {
                let (big, small) = (rng.below(tensors), rng.below(tensors));
                let fits = match (ranks[big], ranks[small]) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                };
                let taken = relations
                    .iter()
                    .any(|r| matches!(r, Relation::HalvedLast(..)));
                if big == small || !fits || taken {
                    continue;
                }
                Relation::HalvedLast(big, small)
            }
            _ => {
                let t = rng.below(tensors);
                Relation::MultipleOf((t, axis(rng, t)), *rng.pick(&[1, 2, 4]))
            }
        };
        relations.push(relation);
    }
    Contract {
        scalar: rng.chance(20),
        tensors,
        ranks,
        relations,
    }
}

impl Contract {
    fn text(&self) -> String {
        let mut s = String::from("---\nparams:\n");
        if self.scalar {
            s.push_str("  - { name: alpha, kind: scalar }\n");
        }
        for t in 0..self.tensors {
            let _ = write!(s, "  - {{ name: {}", role(t, self.tensors));
            if let Some(r) = self.ranks[t] {
                let _ = write!(s, ", rank: {r}");
            }
            if t + 1 == self.tensors {
                s.push_str(", output: true");
            }
            s.push_str(" }\n");
        }
        if !self.relations.is_empty() {
            s.push_str("relations:\n");
        }
        let n = self.tensors;
        for r in &self.relations {
            let line = match r {
                Relation::SameShape(ps) => {
                    let names: Vec<&str> = ps.iter().map(|&t| role(t, n)).collect();
                    format!("same_shape: [{}]", names.join(", "))
                }
                Relation::SameDim(axes) => {
                    let axes: Vec<String> = axes.iter().map(|&(t, a)| axis_text(t, n, a)).collect();
                    format!("same_dim: [{}]", axes.join(", "))
                }
                Relation::HalvedLast(big, small) => {
                    format!("halved_last: [{}, {}]", role(*big, n), role(*small, n))
                }
                Relation::MultipleOf((t, a), of) => {
                    format!(
                        "multiple_of: {{ axis: {}, of: {of} }}",
                        axis_text(*t, n, *a)
                    )
                }
            };
            let _ = writeln!(s, "  - {line}");
        }
        s.push_str("---\n// body\n");
        s
    }
}

// ---- specs -------------------------------------------------------------------

/// What an axis is declared as, the oracle's own copy of [`AxisKind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dynamic,
    Static,
    Fixed(u64),
}

impl Kind {
    fn of(kind: AxisKind) -> Kind {
        match kind {
            AxisKind::Dynamic => Kind::Dynamic,
            AxisKind::Static => Kind::Static,
            AxisKind::Fixed(n) => Kind::Fixed(n),
        }
    }

    /// Same marker variant (fixed sizes may still differ).
    fn alike(self, other: Kind) -> bool {
        std::mem::discriminant(&self) == std::mem::discriminant(&other)
    }
}

const FIXED_SIZES: [u64; 6] = [1, 2, 4, 8, 12, 64];
const STATIC_SIZES: [u64; 4] = [2, 4, 8, 16];

/// A random spec for `c`, and the kind of every axis it declares.
struct Spec {
    text: String,
    /// Per tensor (in contract order), the kind of each axis.
    kinds: Vec<Vec<Kind>>,
    /// Per tensor, the named dim of each axis.
    names: Vec<Vec<Option<String>>>,
}

/// Disjoint sets over (tensor, axis) slots.
struct Sets {
    parent: Vec<usize>,
}

impl Sets {
    fn new(n: usize) -> Self {
        Sets {
            parent: (0..n).collect(),
        }
    }

    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            x = self.parent[x];
        }
        x
    }

    fn union(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        self.parent[a.max(b)] = a.min(b);
    }
}

/// Slot numbering: the axes of tensor 0, then of tensor 1, and so on.
fn slot_base(ranks: &[usize]) -> Vec<usize> {
    ranks
        .iter()
        .scan(0, |acc, r| {
            let base = *acc;
            *acc += r;
            Some(base)
        })
        .collect()
}

fn resolve(axis: AxisRef, rank: usize) -> Option<usize> {
    match axis {
        AxisRef::Index(i) => (i < rank).then_some(i),
        AxisRef::Last => Some(rank - 1),
    }
}

/// The sets of axes `c`'s relations tie, for tensors of `ranks` (names not
/// counted). Axes past a param's rank tie nothing (such a spec is refused).
fn relation_sets(c: &Contract, ranks: &[usize]) -> Sets {
    let base = slot_base(ranks);
    let mut sets = Sets::new(ranks.iter().sum());
    for r in &c.relations {
        match r {
            Relation::SameShape(ps) => {
                let first = ps[0];
                for &t in &ps[1..] {
                    if ranks[t] == ranks[first] {
                        for a in 0..ranks[t] {
                            sets.union(base[first] + a, base[t] + a);
                        }
                    }
                }
            }
            Relation::SameDim(axes) => {
                let (t0, a0) = axes[0];
                for &(t, a) in &axes[1..] {
                    if let (Some(x), Some(y)) = (resolve(a0, ranks[t0]), resolve(a, ranks[t])) {
                        sets.union(base[t0] + x, base[t] + y);
                    }
                }
            }
            Relation::HalvedLast(big, small) => {
                if ranks[*big] == ranks[*small] {
                    for a in 0..ranks[*big] - 1 {
                        sets.union(base[*big] + a, base[*small] + a);
                    }
                }
            }
            Relation::MultipleOf(..) => {}
        }
    }
    sets
}

fn random_kind(rng: &mut Rng) -> Kind {
    match rng.below(3) {
        0 => Kind::Dynamic,
        1 => Kind::Static,
        _ => Kind::Fixed(*rng.pick(&FIXED_SIZES)),
    }
}

fn random_spec(c: &Contract, rng: &mut Rng) -> Spec {
    // Ranks: the declared one (mostly), else 1 to 3.
    let ranks: Vec<usize> = c
        .ranks
        .iter()
        .map(|r| match r {
            Some(r) if rng.chance(95) => *r,
            _ => 1 + rng.below(3),
        })
        .collect();
    let base = slot_base(&ranks);
    let total: usize = ranks.iter().sum();
    let mut sets = relation_sets(c, &ranks);
    // Most specs give each tied set one kind, as a careful user would; some
    // then change one axis; the rest are random axis by axis.
    let mode = rng.below(10);
    let mut kinds = vec![Kind::Dynamic; total];
    let mut by_root: BTreeMap<usize, Kind> = BTreeMap::new();
    for (slot, kind) in kinds.iter_mut().enumerate() {
        *kind = if mode < 7 {
            let root = sets.find(slot);
            *by_root.entry(root).or_insert_with(|| random_kind(rng))
        } else {
            random_kind(rng)
        };
    }
    if (5..7).contains(&mode) && total > 0 {
        let slot = rng.below(total);
        kinds[slot] = random_kind(rng);
    }
    // Named dims: some sets of alike axes share a name, declared as their
    // kind; a name may also join two sets of one kind.
    let mut names: Vec<Option<String>> = vec![None; total];
    let mut dims: Vec<(String, Kind)> = Vec::new();
    for slot in 0..total {
        if names[slot].is_some() || !rng.chance(30) {
            continue;
        }
        let name = format!("N{}", dims.len());
        let kind = kinds[slot];
        for other in slot..total {
            let same_set = sets.find(other) == sets.find(slot);
            let joins = !same_set && kinds[other] == kind && rng.chance(10);
            if names[other].is_none() && kinds[other] == kind && (same_set || joins) {
                names[other] = Some(name.clone());
            }
        }
        dims.push((name, kind));
    }
    // The sets as names and relations tie them together.
    for (name, _) in &dims {
        let slots: Vec<usize> = (0..total)
            .filter(|&s| names[s].as_deref() == Some(name.as_str()))
            .collect();
        for pair in slots.windows(2) {
            sets.union(pair[0], pair[1]);
        }
    }
    // Shapes: names, markers in either spelling, `...` for trailing STATIC
    // axes without names.
    let mut text = String::new();
    if !dims.is_empty() {
        text.push_str("dims:\n");
        for (name, kind) in &dims {
            let value = match kind {
                Kind::Dynamic => rng.pick(&["DYNAMIC", "DYN"]).to_string(),
                Kind::Static => "STATIC".to_owned(),
                Kind::Fixed(n) => n.to_string(),
            };
            let _ = writeln!(text, "  {name}: {value}");
        }
    }
    text.push_str("kernels:\n  k:\n    template: t.hbs\n    params:\n");
    if c.scalar {
        text.push_str("      alpha: { scalar: DT_FP32 }\n");
    }
    for (t, &rank) in ranks.iter().enumerate() {
        let slots = base[t]..base[t] + rank;
        let unnamed_static = |s: usize| kinds[s] == Kind::Static && names[s].is_none();
        // `...` from the first of a run of unnamed STATIC axes to the end.
        let ellipsis = (base[t]..base[t] + rank)
            .rev()
            .take_while(|&s| unnamed_static(s))
            .last()
            .filter(|_| rng.chance(40));
        let mut shape = Vec::new();
        for s in slots {
            if ellipsis == Some(s) {
                shape.push("...".to_owned());
                break;
            }
            shape.push(match (&names[s], kinds[s]) {
                (Some(n), _) => n.clone(),
                (None, Kind::Dynamic) => rng.pick(&["DYNAMIC", "DYN"]).to_string(),
                (None, Kind::Static) => "STATIC".to_owned(),
                (None, Kind::Fixed(n)) => n.to_string(),
            });
        }
        let _ = write!(
            text,
            "      t{t}: {{ dtype: DT_FP32, shape: [{}]",
            shape.join(", ")
        );
        if ellipsis.is_some() {
            let _ = write!(text, ", rank: {rank}");
        }
        if t + 1 == ranks.len() {
            text.push_str(", output: true");
        }
        text.push_str(" }\n");
    }
    // Sizes for every set holding a STATIC axis, listed once, under a name
    // when the set has one.
    let mut listed: BTreeMap<usize, ()> = BTreeMap::new();
    let mut statics = Vec::new();
    for slot in 0..total {
        if kinds[slot] != Kind::Static || listed.insert(sets.find(slot), ()).is_some() {
            continue;
        }
        let key = match &names[slot] {
            Some(n) => n.clone(),
            None => {
                let t = base.iter().rposition(|&b| b <= slot).unwrap();
                format!("t{t}.{}", slot - base[t])
            }
        };
        let mut sizes = vec![*rng.pick(&STATIC_SIZES)];
        if rng.chance(30) {
            let more = *rng.pick(&STATIC_SIZES);
            if !sizes.contains(&more) {
                sizes.push(more);
            }
        }
        let sizes: Vec<String> = sizes.iter().map(u64::to_string).collect();
        statics.push(format!("{key}: [{}]", sizes.join(", ")));
    }
    if !statics.is_empty() {
        let _ = writeln!(text, "    static: {{ {} }}", statics.join(", "));
    }
    let split = |v: &[Kind]| -> Vec<Vec<Kind>> {
        ranks
            .iter()
            .zip(&base)
            .map(|(&r, &b)| v[b..b + r].to_vec())
            .collect()
    };
    let names_by_tensor = ranks
        .iter()
        .zip(&base)
        .map(|(&r, &b)| names[b..b + r].to_vec())
        .collect();
    Spec {
        text,
        kinds: split(&kinds),
        names: names_by_tensor,
    }
}

// ---- the oracle --------------------------------------------------------------

/// What the oracle expects of one case.
struct Expected {
    /// Sets of (tensor, axis), by name and relation, as the model's dims
    /// must be when the spec is accepted.
    dims: Vec<Vec<(usize, usize)>>,
    /// Some set holds axes declared differently: must be refused.
    mixed: bool,
    /// A relation names an axis past a param's rank: must be refused.
    past_rank: bool,
}

fn expected(c: &Contract, s: &Spec) -> Expected {
    let ranks: Vec<usize> = s.kinds.iter().map(Vec::len).collect();
    let base = slot_base(&ranks);
    let total: usize = ranks.iter().sum();
    let mut sets = relation_sets(c, &ranks);
    let flat_names: Vec<&Option<String>> = s.names.iter().flatten().collect();
    for a in 0..total {
        for b in a + 1..total {
            if flat_names[a].is_some() && flat_names[a] == flat_names[b] {
                sets.union(a, b);
            }
        }
    }
    let flat_kinds: Vec<Kind> = s.kinds.iter().flatten().copied().collect();
    let mut groups: BTreeMap<usize, Vec<(usize, usize)>> = BTreeMap::new();
    let mut mixed = false;
    for slot in 0..total {
        let root = sets.find(slot);
        mixed |= !flat_kinds[root].alike(flat_kinds[slot]);
        let t = base.iter().rposition(|&b| b <= slot).unwrap();
        groups.entry(root).or_default().push((t, slot - base[t]));
    }
    let past_rank = c.relations.iter().any(|r| {
        let named: Vec<(usize, AxisRef)> = match r {
            Relation::SameDim(axes) => axes.clone(),
            Relation::MultipleOf(axis, _) => vec![*axis],
            Relation::SameShape(_) | Relation::HalvedLast(..) => Vec::new(),
        };
        named
            .iter()
            .any(|&(t, a)| c.ranks[t].is_none() && resolve(a, ranks[t]).is_none())
    });
    Expected {
        dims: groups.into_values().collect(),
        mixed,
        past_rank,
    }
}

const MIXED: &str = "a template's relations cannot change how the spec declares an axis";
const PAST_RANK: &str = "so the relation would check nothing";

/// Checks the accepted kernel against the oracle; an error says what differs.
fn check_accepted(k: &Kernel, c: &Contract, s: &Spec, want: &Expected) -> Result<(), String> {
    if want.mixed {
        return Err("accepted, but a set of tied axes is declared differently".to_owned());
    }
    if want.past_rank {
        return Err("accepted, but a relation names an axis past a param's rank".to_owned());
    }
    let offset = usize::from(c.scalar);
    for (t, kinds) in s.kinds.iter().enumerate() {
        let ParamKind::Tensor { axes, .. } = &k.params[t + offset].kind else {
            return Err(format!("param {} is not a tensor", t + offset));
        };
        if axes.len() != kinds.len() {
            return Err(format!("t{t} has {} axes, not {}", axes.len(), kinds.len()));
        }
        for (a, (axis, &kind)) in axes.iter().zip(kinds).enumerate() {
            if Kind::of(axis.kind) != kind {
                return Err(format!(
                    "t{t}.{a} was written {kind:?} but the model has {:?}",
                    axis.kind
                ));
            }
            let survives = match (kind, &k.dims[axis.dim].size) {
                (Kind::Dynamic, DimSize::Dynamic) => true,
                (Kind::Static, DimSize::Static(sizes)) => !sizes.is_empty(),
                (Kind::Fixed(n), DimSize::Fixed(m)) => n == *m,
                _ => false,
            };
            if !survives {
                return Err(format!(
                    "t{t}.{a} was written {kind:?} but its dim is {:?}",
                    k.dims[axis.dim].size
                ));
            }
        }
    }
    let mut dims: Vec<Vec<(usize, usize)>> = k
        .dims
        .iter()
        .map(|d| d.axes.iter().map(|&(p, a)| (p - offset, a)).collect())
        .collect();
    dims.sort();
    let mut want_dims = want.dims.clone();
    want_dims.sort();
    if dims != want_dims {
        return Err(format!(
            "the model's dims are {dims:?}, the relations and names make {want_dims:?}"
        ));
    }
    Ok(())
}

/// A fresh directory for this process's template.
fn scratch() -> PathBuf {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("markers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[derive(Default, Debug)]
struct Tally {
    accepted: u64,
    refused_mixed: u64,
    refused_past_rank: u64,
    refused_other: u64,
}

/// Runs case `index` of `seed`; `Err` describes a failed property.
fn run_case(seed: u64, index: u64, dir: &Path, tally: &mut Tally) -> Result<(), String> {
    let mut rng = Rng(seed ^ index.wrapping_mul(0xD1B5_4A32_D192_ED03));
    let contract = random_contract(&mut rng);
    let spec = random_spec(&contract, &mut rng);
    let want = expected(&contract, &spec);
    let template = contract.text();
    std::fs::write(dir.join("t.hbs"), &template).unwrap();
    let describe = |why: &str| {
        format!(
            "{why}\n--- t.hbs ---\n{template}--- k.yaml ---\n{}",
            spec.text
        )
    };
    match pypto_build::check_source(&dir.join("k.yaml"), &spec.text) {
        Ok(model) => {
            tally.accepted += 1;
            check_accepted(&model.kernels[0], &contract, &spec, &want).map_err(|e| describe(&e))
        }
        Err(problems) => {
            let messages: Vec<String> = problems.iter().map(ToString::to_string).collect();
            for d in problems.iter() {
                if d.location.path != dir.join("k.yaml") {
                    return Err(describe(&format!("an error outside the spec: {d}")));
                }
            }
            let said_mixed = messages.iter().any(|m| m.contains(MIXED));
            let said_past_rank = messages.iter().any(|m| m.contains(PAST_RANK));
            if want.past_rank != said_past_rank {
                return Err(describe(&format!(
                    "a relation past a rank expected: {}, reported: {said_past_rank}; errors:\n{}",
                    want.past_rank,
                    messages.join("\n")
                )));
            }
            if want.past_rank {
                // The relations are then not applied: no word on markers.
                tally.refused_past_rank += 1;
                return Ok(());
            }
            if want.mixed {
                tally.refused_mixed += 1;
            } else {
                tally.refused_other += 1;
            }
            if want.mixed != said_mixed {
                return Err(describe(&format!(
                    "mixed markers expected: {}, reported: {said_mixed}; errors:\n{}",
                    want.mixed,
                    messages.join("\n")
                )));
            }
            Ok(())
        }
    }
}

#[test]
fn relations_never_change_a_marker() {
    let seed = seed();
    let cases = cases();
    let dir = scratch();
    let mut tally = Tally::default();
    let started = std::time::Instant::now();
    for index in 0..cases {
        if let Err(e) = run_case(seed, index, &dir, &mut tally) {
            panic!("case {index} of seed {seed} (rerun with PYPTO_MUTATE_SEED={seed}): {e}");
        }
    }
    // Seen with `--nocapture`: what the run covered.
    eprintln!(
        "markers: seed {seed} (PYPTO_MUTATE_SEED={seed} repeats it), {cases} cases, {} accepted, \
         {} refused for mixed markers, {} for a relation past a rank, {} otherwise, {:?}",
        tally.accepted,
        tally.refused_mixed,
        tally.refused_past_rank,
        tally.refused_other,
        started.elapsed()
    );
    // The search is worth something only if it accepts and refuses often.
    assert!(
        tally.accepted * 5 >= cases,
        "seed {seed}: only {} of {cases} specs accepted",
        tally.accepted
    );
    assert!(
        tally.refused_mixed * 20 >= cases,
        "seed {seed}: only {} of {cases} specs refused for mixed markers",
        tally.refused_mixed
    );
    assert!(
        tally.refused_past_rank * 50 >= cases,
        "seed {seed}: only {} of {cases} specs refused for a relation past a rank",
        tally.refused_past_rank
    );
    let _ = std::fs::remove_dir_all(&dir);
}
