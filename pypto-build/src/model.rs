//! The model stage: spec structures turned into checked kernels. Markers are
//! resolved, named dims and template relations are merged into one dim each,
//! and the STATIC specialisations to build are enumerated.

use std::cell::OnceCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use crate::builtin::{self, AxisRef, Contract, Role};
use crate::diag::{Location, Pos, Sink, clip, display_path, path_problem};
use crate::names::{did_you_mean, identifier_problem};
use crate::spec::{self, KernelSpec, ParamSpec, QUOTED, Sp, SpecFile};
use crate::yaml::{Node, Value};

/// Highest tensor rank a kernel may take.
pub const MAX_RANK: usize = 8;
/// Largest size of one axis: kernels receive each size as a `uint32_t`.
pub const MAX_SIZE: u64 = u32::MAX as u64;
/// Most params one kernel may take (tensors and scalars).
pub const MAX_PARAMS: usize = 64;
/// Most STATIC specialisations one kernel may build.
pub const MAX_SPECIALISATIONS: usize = 64;

pub use crate::tables::{DType, Target};

/// Where a kernel's template comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateRef {
    /// `builtin/NAME`: one of the library's templates.
    Builtin(String),
    /// A user template; the path is the spec's directory joined with the
    /// path written, and resolves inside the spec's package.
    File(PathBuf),
}

impl fmt::Display for TemplateRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TemplateRef::Builtin(name) => write!(f, "builtin/{name}"),
            TemplateRef::File(path) => f.write_str(&display_path(path)),
        }
    }
}

/// The kind one axis was declared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AxisKind {
    Dynamic,
    Static,
    Fixed(u64),
}

impl fmt::Display for AxisKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AxisKind::Dynamic => f.write_str("DYNAMIC"),
            AxisKind::Static => f.write_str("STATIC"),
            AxisKind::Fixed(n) => write!(f, "{n}"),
        }
    }
}

/// One axis of a tensor param.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Axis {
    /// The marker as written (`DYNAMIC`, `128`, `HIDDEN`, `...`).
    pub written: String,
    /// What the marker declared for this axis.
    pub kind: AxisKind,
    /// The module-level dim this axis names, if any.
    pub name: Option<String>,
    /// Index into [`Kernel::dims`]: the dim this axis belongs to.
    pub dim: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamKind {
    Scalar(DType),
    Tensor {
        dtype: DType,
        output: bool,
        axes: Vec<Axis>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub kind: ParamKind,
}

/// What one dim resolved to once all its axes are taken together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DimSize {
    /// Passed at launch; one compiled kernel serves every size.
    Dynamic,
    /// Baked in; one object per listed size.
    Static(Vec<u64>),
    /// Only this size is accepted.
    Fixed(u64),
}

/// A set of axes that must have the same size: axes sharing a name, or axes a
/// template ties together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dim {
    /// The module-level name, when the dim has one.
    pub name: Option<String>,
    pub size: DimSize,
    /// Every (param index, axis index) in this dim, in declaration order.
    pub axes: Vec<(usize, usize)>,
}

/// One combination of STATIC sizes to build: (dim index, size) pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Specialisation(pub Vec<(usize, u64)>);

/// Every checked kernel of a set of spec files, in file then declaration order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    pub kernels: Vec<Kernel>,
    /// The spec files read, in the order they were read.
    pub files: Vec<PathBuf>,
}

/// A checked kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    pub name: String,
    pub doc: Option<String>,
    pub template: TemplateRef,
    pub targets: Vec<Target>,
    pub params: Vec<Param>,
    pub dims: Vec<Dim>,
    /// Every combination of STATIC sizes, in a stable order; a kernel without
    /// STATIC dims has exactly one, the empty one.
    pub specialisations: Vec<Specialisation>,
    /// Template options with defaults filled in: a builtin's in its declared
    /// order, a user template's as written.
    pub options: Vec<(String, OptionValue)>,
    /// Where the kernel's name was written.
    pub origin: Location,
}

/// The value of a template option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionValue {
    Int(i64),
    Bool(bool),
}

impl fmt::Display for OptionValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionValue::Int(i) => write!(f, "{i}"),
            OptionValue::Bool(b) => write!(f, "{b}"),
        }
    }
}

impl Kernel {
    /// `param.axis`, for messages and listings.
    pub fn axis_label(&self, param: usize, axis: usize) -> String {
        format!("{}.{axis}", self.params[param].name)
    }

    /// A dim's name, or the first axis it appears on.
    pub fn dim_label(&self, dim: usize) -> String {
        let d = &self.dims[dim];
        match &d.name {
            Some(name) => name.clone(),
            None => self.axis_label(d.axes[0].0, d.axes[0].1),
        }
    }
}

/// A module-level dim declaration, as the model understands it.
struct NamedDim {
    kind: AxisKind,
}

/// The dims of one file: valid ones, and the names of invalid ones, which
/// are known so that their uses do not cascade into "undefined" errors.
struct FileDims {
    valid: BTreeMap<String, NamedDim>,
    invalid: BTreeSet<String>,
}

/// Checks every kernel of one spec file. Kernels with errors are left out;
/// the errors are in `sink`.
pub(crate) fn check_file(spec: &SpecFile, sink: &mut Sink<'_>) -> Vec<Kernel> {
    let dims = check_dims(spec, sink);
    let package = OnceCell::new();
    spec.kernels
        .iter()
        .filter_map(|k| {
            let before = sink.count();
            let kernel = check_kernel(k, &dims, &package, sink);
            kernel.filter(|_| sink.count() == before)
        })
        .collect()
}

const MARKER_WORDS: [&str; 4] = ["DYNAMIC", "DYN", "STATIC", "..."];

fn check_dims(spec: &SpecFile, sink: &mut Sink<'_>) -> FileDims {
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
fn size(node: &Node) -> Result<u64, String> {
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

/// A param while it is being checked: spec position kept for later errors.
struct Draft<'s> {
    spec: &'s ParamSpec,
    kind: ParamKind,
    /// Position of each axis's marker (for `...`, of the `...`).
    axis_pos: Vec<Pos>,
}

fn check_kernel(
    k: &KernelSpec,
    dims: &FileDims,
    package: &OnceCell<Option<PathBuf>>,
    sink: &mut Sink<'_>,
) -> Option<Kernel> {
    let name = &k.name.value;
    let ctx = format!("kernel `{}`", clip(name, QUOTED));
    if let Some(problem) = identifier_problem(name) {
        sink.error(
            k.name.pos,
            format!("{ctx}: not a valid kernel name: {problem}"),
        );
    }
    let template = check_template(k, &ctx, package, sink);
    let targets = check_targets(k, &ctx, sink);

    let mut drafts = Vec::new();
    for p in &k.params {
        if let Some(d) = check_param(p, &ctx, dims, &targets, sink) {
            drafts.push(d);
        }
    }
    let all_params_ok = drafts.len() == k.params.len();
    // Judged on what was written, so it is reported even when params have
    // other errors; an `output:` with a bad value was reported already.
    let marks_output = k.params.iter().any(|p| {
        p.output.as_ref().is_some_and(|o| o.value)
            || (p.output.is_none() && p.given.iter().any(|g| g == "output"))
    });
    if !k.params.is_empty() && !marks_output {
        sink.error(
            k.name.pos,
            format!("{ctx}: has no output; mark the tensor it writes with `output: true`"),
        );
    }
    if k.params.len() > MAX_PARAMS {
        sink.error(
            k.name.pos,
            format!(
                "{ctx}: has {} params; at most {MAX_PARAMS} are supported",
                k.params.len()
            ),
        );
    }
    if k.params.is_empty() {
        sink.error(
            k.name.pos,
            format!("{ctx}: has no `params`; a kernel needs at least one output tensor"),
        );
    }

    let contract = match &template {
        Some(TemplateRef::Builtin(b)) => builtin::find(b),
        _ => None,
    };
    // Relations of a builtin apply only to params that match its contract.
    let contract = contract.filter(|c| all_params_ok && check_contract(k, c, &drafts, &ctx, sink));

    // Axes that must agree: one slot per tensor axis, plus one per named dim.
    let mut slots = Vec::new(); // (param, axis)
    let mut slot_of: BTreeMap<(usize, usize), usize> = BTreeMap::new();
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
    if let Some(contract) = contract {
        tie_contract_axes(contract, &drafts, &slot_of, &mut uf);
    }

    let statics = check_statics(k, &ctx, &drafts, dims, &slot_of, &first_use, &mut uf, sink);

    // Resolve each class of axes into one dim, in order of first appearance.
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
    let axis_of = |slot: usize| -> (&Axis, Pos) {
        let (pi, ai) = slots[slot];
        match &drafts[pi].kind {
            ParamKind::Tensor { axes, .. } => (&axes[ai], drafts[pi].axis_pos[ai]),
            ParamKind::Scalar(_) => unreachable!("slots are tensor axes"),
        }
    };
    let label = |slot: usize| {
        let (pi, ai) = slots[slot];
        format!("{}.{ai}", drafts[pi].spec.name.value)
    };
    let mut kernel_dims = Vec::with_capacity(members.len());
    for (di, class) in members.iter().enumerate() {
        let root = uf.find(class[0]);
        let mut fixed: Option<(u64, usize)> = None;
        let mut any_static = false;
        let mut name = None;
        for &slot in class {
            let (axis, pos) = axis_of(slot);
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
                            why_tied(&axis.name, contract)
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
                    .find(|&s| axis_of(s).0.kind == AxisKind::Static)
                    .unwrap_or(class[0]);
                let (axis, pos) = axis_of(slot);
                let key = axis.name.clone().unwrap_or_else(|| label(slot));
                sink.error(
                    pos,
                    format!(
                        "{ctx}: STATIC axis `{}` has no sizes to build; list them under \
                         `static:`, e.g. `{key}: [128]`",
                        label(slot)
                    ),
                );
                DimSize::Static(Vec::new())
            }
            (None, None) => DimSize::Dynamic,
        };
        let _ = di;
        kernel_dims.push(Dim {
            name,
            size,
            axes: class.iter().map(|&s| slots[s]).collect(),
        });
    }

    let specialisations = enumerate_specialisations(k, &ctx, &kernel_dims, &drafts, sink);
    if let Some(contract) = contract {
        check_halved(
            k,
            &ctx,
            contract,
            &drafts,
            &kernel_dims,
            &specialisations,
            sink,
        );
    }
    let options = check_options(k, &ctx, template.as_ref(), sink);
    if let (Some(contract), Some(options)) = (contract, &options) {
        check_divisible(k, &ctx, contract, options, &drafts, &kernel_dims, sink);
    }

    // Attach dim indices to axes.
    let mut params: Vec<Param> = drafts
        .iter()
        .map(|d| Param {
            name: d.spec.name.value.clone(),
            kind: d.kind.clone(),
        })
        .collect();
    for (di, dim) in kernel_dims.iter().enumerate() {
        for &(pi, ai) in &dim.axes {
            if let ParamKind::Tensor { axes, .. } = &mut params[pi].kind {
                axes[ai].dim = di;
            }
        }
    }

    Some(Kernel {
        name: name.clone(),
        doc: k.doc.as_ref().map(|d| d.value.clone()),
        template: template?,
        targets,
        params,
        dims: kernel_dims,
        specialisations,
        options: options?,
        origin: sink.location(k.name.pos),
    })
}

/// Resolves `options:` against the template: a builtin's declared options
/// (typed, with defaults), or any identifier-named int/bool for user
/// templates.
fn check_options(
    k: &KernelSpec,
    ctx: &str,
    template: Option<&TemplateRef>,
    sink: &mut Sink<'_>,
) -> Option<Vec<(String, OptionValue)>> {
    let before = sink.count();
    let contract = match template? {
        TemplateRef::Builtin(name) => builtin::find(name),
        TemplateRef::File(_) => None,
    };
    let value_of = |node: &Node| match &node.value {
        Value::Int(i) => i64::try_from(*i).ok().map(OptionValue::Int),
        Value::Bool(b) => Some(OptionValue::Bool(*b)),
        _ => None,
    };
    let mut out = Vec::new();
    match contract {
        Some(c) => {
            let names: Vec<&str> = c.options.iter().map(|o| o.name).collect();
            for (key, _) in &k.options {
                if !names.contains(&key.value.as_str()) {
                    let expected = if names.is_empty() {
                        format!("builtin/{} takes no options", c.name)
                    } else {
                        format!("builtin/{} takes {}", c.name, spec::one_of(&names))
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
            for o in c.options {
                let given = k.options.iter().find(|(key, _)| key.value == o.name);
                let value = match (o.kind, given) {
                    (builtin::OptionKind::Int { default, .. }, None) => OptionValue::Int(default),
                    (builtin::OptionKind::Bool { default }, None) => OptionValue::Bool(default),
                    (builtin::OptionKind::Int { min, max, .. }, Some((_, node))) => {
                        match value_of(node) {
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
                        }
                    }
                    (builtin::OptionKind::Bool { .. }, Some((_, node))) => match value_of(node) {
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
                out.push((o.name.to_owned(), value));
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

/// Axes the template splits by an option (attention's hidden size by its
/// heads) must be multiples of it: checked here for fixed and STATIC sizes;
/// DYNAMIC ones are checked at run time.
fn check_divisible(
    k: &KernelSpec,
    ctx: &str,
    contract: &Contract,
    options: &[(String, OptionValue)],
    drafts: &[Draft<'_>],
    dims: &[Dim],
    sink: &mut Sink<'_>,
) {
    let by_option = contract
        .divisible_by_option
        .iter()
        .filter_map(|&(axis, option)| {
            match options.iter().find(|(n, _)| n == option).map(|(_, v)| *v) {
                Some(OptionValue::Int(by)) => Some((axis, by as u64, format!("{option} = {by}"))),
                _ => None,
            }
        });
    let by_constant = contract
        .multiple_of
        .iter()
        .map(|&(axis, by, why)| (axis, by, why.to_owned()));
    for ((param, axis), by, why) in by_option.chain(by_constant).collect::<Vec<_>>() {
        let Some(ParamKind::Tensor { axes, .. }) = drafts.get(param).map(|d| &d.kind) else {
            continue;
        };
        let ai = match axis {
            AxisRef::Index(i) => i,
            AxisRef::Last => axes.len() - 1,
        };
        let Some(dim) = dims.iter().find(|d| d.axes.contains(&(param, ai))) else {
            continue;
        };
        let sizes: Vec<u64> = match &dim.size {
            DimSize::Fixed(n) => vec![*n],
            DimSize::Static(v) => v.clone(),
            DimSize::Dynamic => continue,
        };
        for n in sizes {
            if !n.is_multiple_of(by) {
                let option = why.split(" = ").next().unwrap_or_default();
                let pos = k
                    .options
                    .iter()
                    .find(|(key, _)| key.value == option)
                    .map_or(k.name.pos, |(key, _)| key.pos);
                let message = if why.contains(" = ") {
                    format!(
                        "`{}.{ai}` is {n}, which {why} does not divide",
                        drafts[param].spec.name.value
                    )
                } else {
                    format!(
                        "`{}.{ai}` is {n}, not a multiple of {by}: {why}",
                        drafts[param].spec.name.value
                    )
                };
                sink.error(pos, format!("{ctx}: {message}"));
            }
        }
    }
}

fn why_tied(name: &Option<String>, contract: Option<&Contract>) -> String {
    match (name, contract) {
        (Some(n), _) => format!(" (both are the dim `{n}`)"),
        (None, Some(c)) => format!(" (builtin/{} requires them to be equal)", c.name),
        (None, None) => String::new(),
    }
}

/// The package a spec belongs to: the directory of the nearest Cargo.toml
/// above the spec file, else the spec file's own directory; canonical.
fn package_of(spec: &Path) -> Option<PathBuf> {
    let dir = match spec.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let dir = dir.canonicalize().ok()?;
    let root = dir.ancestors().find(|d| d.join("Cargo.toml").is_file());
    Some(root.unwrap_or(&dir).to_path_buf())
}

fn check_template(
    k: &KernelSpec,
    ctx: &str,
    package: &OnceCell<Option<PathBuf>>,
    sink: &mut Sink<'_>,
) -> Option<TemplateRef> {
    let Some(t) = &k.template else {
        if k.given.iter().any(|g| g == "template") {
            return None; // given, but not a string: already reported
        }
        sink.error(
            k.name.pos,
            format!(
                "{ctx}: has no `template`; give `builtin/NAME` or a path relative to the spec file"
            ),
        );
        return None;
    };
    if let Some(name) = t.value.strip_prefix("builtin/") {
        if builtin::find(name).is_some() {
            return Some(TemplateRef::Builtin(name.to_owned()));
        }
        let names: Vec<&str> = builtin::BUILTINS.iter().map(|c| c.name).collect();
        sink.error(
            t.pos,
            format!(
                "{ctx}, `template`: there is no builtin template `{name}`; builtins are {}{}",
                spec::one_of(&names),
                did_you_mean(name, names.iter().copied())
            ),
        );
        return None;
    }
    let written = Path::new(&t.value);
    if let Some(problem) = path_problem(written) {
        sink.error(t.pos, format!("{ctx}, `template`: {problem}"));
        return None;
    }
    // The template is pasted into generated C++: it must be the crate's own.
    if written.has_root() || written.is_absolute() {
        sink.error(
            t.pos,
            format!(
                "{ctx}, `template`: `{}` is an absolute path; give a path relative to the spec \
                 file, inside its package",
                t.value
            ),
        );
        return None;
    }
    let dir = sink.path().parent().unwrap_or(Path::new(""));
    let path = dir.join(written);
    if t.value.is_empty() || !path.is_file() {
        sink.error(
            t.pos,
            format!(
                "{ctx}, `template`: template file `{}` does not exist (paths are relative to \
                 the spec file; builtins are written `builtin/NAME`)",
                display_path(&path)
            ),
        );
        return None;
    }
    let package = package.get_or_init(|| package_of(sink.path()));
    let inside = match (package, path.canonicalize()) {
        (Some(package), Ok(real)) if real.starts_with(package) => true,
        (Some(package), Ok(real)) => {
            sink.error(
                t.pos,
                format!(
                    "{ctx}, `template`: `{}` resolves to `{}`, outside the spec's package `{}` \
                     (the directory of the nearest Cargo.toml above the spec file); templates \
                     must be inside it",
                    t.value,
                    display_path(&real),
                    display_path(package)
                ),
            );
            false
        }
        (_, Err(e)) => {
            sink.error(
                t.pos,
                format!(
                    "{ctx}, `template`: cannot resolve `{}`: {e}",
                    display_path(&path)
                ),
            );
            false
        }
        (None, Ok(_)) => {
            sink.error(
                t.pos,
                format!("{ctx}, `template`: cannot resolve the spec file's directory"),
            );
            false
        }
    };
    inside.then_some(TemplateRef::File(path))
}

fn check_targets(k: &KernelSpec, ctx: &str, sink: &mut Sink<'_>) -> Vec<Target> {
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

fn check_param<'s>(
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
    let (axes, axis_pos) = check_shape(shape, p.rank.as_ref(), &ctx, dims, sink)?;
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

/// Checks params against a builtin's contract; true when their count and
/// roles match, so that its shape relations can be applied.
fn check_contract(
    k: &KernelSpec,
    contract: &Contract,
    drafts: &[Draft<'_>],
    ctx: &str,
    sink: &mut Sink<'_>,
) -> bool {
    let t = format!("builtin/{}", contract.name);
    let expected: Vec<String> = contract
        .params
        .iter()
        .map(|r| format!("{} ({})", r.name, r.role.describe()))
        .collect();
    if drafts.len() != contract.params.len() {
        let pos = k.template.as_ref().map_or(k.name.pos, |t| t.pos);
        sink.error(
            pos,
            format!(
                "{ctx}: {t} takes {} params: {}; this kernel declares {}",
                contract.params.len(),
                expected.join(", "),
                drafts.len()
            ),
        );
        return false;
    }
    let mut first_dtype: Option<(DType, &str)> = None;
    let mut roles_match = true;
    for (i, (d, role)) in drafts.iter().zip(contract.params).enumerate() {
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
        if let ParamKind::Scalar(dtype) = d.kind
            && dtype != DType::Fp32
        {
            let pos = d.spec.scalar.as_ref().map_or(d.spec.name.pos, |s| s.pos);
            sink.error(
                pos,
                format!(
                    "{pctx}: {t} takes `{}` as a DT_FP32 scalar, not {dtype}",
                    role.name
                ),
            );
        }
        if let ParamKind::Tensor { dtype, axes, .. } = &d.kind {
            if let Some(r) = role.rank.filter(|r| *r != axes.len()) {
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
            let dtype_pos = d.spec.dtype.as_ref().map_or(d.spec.name.pos, |s| s.pos);
            if !contract.dtypes.contains(dtype) {
                let names: Vec<&str> = contract.dtypes.iter().map(|d| d.spec_name()).collect();
                sink.error(
                    dtype_pos,
                    format!(
                        "{pctx}: {t} is written for {}, not {dtype}",
                        names.join(", ")
                    ),
                );
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
    if !roles_match {
        return false;
    }
    if let Some((big, small)) = contract.halved_last {
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
    for &(a, b) in contract.same_shape {
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

/// A param's rank; scalars have none.
fn rank_of(draft: &Draft<'_>) -> usize {
    match &draft.kind {
        ParamKind::Tensor { axes, .. } => axes.len(),
        ParamKind::Scalar(_) => 0,
    }
}

/// Merges the axes a builtin's contract says are equal. Runs only on a
/// kernel whose params matched the contract.
fn tie_contract_axes(
    contract: &Contract,
    drafts: &[Draft<'_>],
    slot_of: &BTreeMap<(usize, usize), usize>,
    uf: &mut UnionFind,
) {
    let rank = |i: usize| rank_of(&drafts[i]);
    for &(a, b) in contract.same_shape {
        if rank(a) == rank(b) {
            for ax in 0..rank(a) {
                uf.union(slot_of[&(a, ax)], slot_of[&(b, ax)]);
            }
        }
    }
    let resolve = |p: usize, axis: AxisRef| match axis {
        AxisRef::Index(i) => (i < rank(p)).then_some(i),
        AxisRef::Last => rank(p).checked_sub(1),
    };
    for &((pa, xa), (pb, xb)) in contract.same_axis {
        if let (Some(a), Some(b)) = (resolve(pa, xa), resolve(pb, xb)) {
            uf.union(slot_of[&(pa, a)], slot_of[&(pb, b)]);
        }
    }
    if let Some((big, small)) = contract.halved_last
        && rank(big) == rank(small)
    {
        for ax in 0..rank(big).saturating_sub(1) {
            uf.union(slot_of[&(big, ax)], slot_of[&(small, ax)]);
        }
    }
}

/// For a halving contract (swiglu), the big last axis must be twice the
/// small one: checked here where both sizes are known at build time.
fn check_halved(
    k: &KernelSpec,
    ctx: &str,
    contract: &Contract,
    drafts: &[Draft<'_>],
    dims: &[Dim],
    specialisations: &[Specialisation],
    sink: &mut Sink<'_>,
) {
    let Some((big, small)) = contract.halved_last else {
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
                    "{ctx}: builtin/{} needs `{}`'s last axis to be twice `{}`'s, but it is {b} \
                     and {sm}",
                    contract.name, drafts[big].spec.name.value, drafts[small].spec.name.value
                ),
            );
            return;
        }
    }
}

/// The sizes listed for one dim, and the `static` key they were listed under.
/// An entry with errors has no values; it still counts as "listed".
struct StaticValues {
    key: String,
    values: Vec<Sp<u64>>,
}

/// Checks `static:` and returns the sizes per class root.
#[allow(clippy::too_many_arguments)]
fn check_statics(
    k: &KernelSpec,
    ctx: &str,
    drafts: &[Draft<'_>],
    dims: &FileDims,
    slot_of: &BTreeMap<(usize, usize), usize>,
    first_use: &BTreeMap<&str, usize>,
    uf: &mut UnionFind,
    sink: &mut Sink<'_>,
) -> BTreeMap<usize, StaticValues> {
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

fn enumerate_specialisations(
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

/// Disjoint sets over axis slots; the smallest slot of a set is its root so
/// that results never depend on merge order.
struct UnionFind {
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
