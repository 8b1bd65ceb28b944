//! The model stage: spec structures turned into checked kernels. Markers are
//! resolved, named dims and template relations are merged into one dim each,
//! and the STATIC specialisations to build are enumerated. A template's
//! contract is applied here, once: code generation reads only the model.
//!
//! - `params`: targets, dtypes, each param's markers;
//! - `dims`: module-level dims, axes merged into dims, STATIC sizes,
//!   specialisations;
//! - `template`: the kernel's template and its contract;
//! - `contract`: the contract applied to the kernel.

mod contract;
mod cpp;
mod defines;
mod dims;
mod equals;
mod params;
mod source;
mod template;
mod variant;

use std::cell::OnceCell;
use std::fmt;
use std::path::PathBuf;

use crate::diag::{Location, Pos, Sink, clip, display_path};
use crate::names::identifier_problem;
use crate::spec::{KernelSpec, ParamSpec, QUOTED, SpecFile};
pub use crate::tables::CoreKind;
use dims::FileDims;
pub use equals::{Equation, Step};
pub use source::Bound;
pub(crate) use source::{launches, quoted_headers};
pub(crate) use template::{Templates, read_template};
pub use variant::{
    Atom, Compare, Condition, Expr, Term, Variant, built_sizes, fixed_in_every_variant, size_label,
};

pub use crate::tables::{MAX_PARAMS, MAX_RANK, MAX_SIZE, MAX_SPEC_BLOCKS, MAX_SPECIALISATIONS};

pub use crate::tables::{Arch, DType, Target};

/// Where a kernel's template comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TemplateRef {
    /// `builtin/NAME`: one of the library's templates.
    Builtin(String),
    /// A user template; the path is the spec's directory joined with the
    /// path written, and resolves inside the spec's package.
    File(PathBuf),
    /// An existing Ascend C file (`source:`), compiled unchanged; resolved
    /// as a user template's path is.
    Source(PathBuf),
}

impl fmt::Display for TemplateRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TemplateRef::Builtin(name) => write!(f, "builtin/{name}"),
            TemplateRef::File(path) | TemplateRef::Source(path) => f.write_str(&display_path(path)),
        }
    }
}

/// The kind one axis was declared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AxisKind {
    /// `DYNAMIC`/`DYN`: any size, passed at launch.
    Dynamic,
    /// `STATIC`: one of the sizes listed under `static:`, baked in.
    Static,
    /// A fixed size written as a number or a dim defined as one.
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
#[non_exhaustive]
pub struct Axis {
    /// The marker as written (`DYNAMIC`, `128`, `HIDDEN`, `...`).
    pub written: String,
    /// What the marker declared for this axis.
    pub kind: AxisKind,
    /// The module-level dim this axis names, if any.
    pub name: Option<String>,
    /// Index into [`Kernel::dims`]: the dim this axis belongs to.
    pub dim: usize,
    /// What the axis counts: its `axis_docs:` entry, else its named dim's
    /// `doc:`.
    pub doc: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// What a kernel param is.
#[non_exhaustive]
pub enum ParamKind {
    /// A scalar of this dtype, passed by value.
    Scalar(DType),
    /// A tensor.
    Tensor {
        /// Its element type.
        dtype: DType,
        /// Whether the kernel writes it (`output: true`).
        output: bool,
        /// Its axes, in order.
        axes: Vec<Axis>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// One param of a kernel, in call order.
#[non_exhaustive]
pub struct Param {
    /// The name the spec gives it (and the wrapper's argument name).
    pub name: String,
    /// Scalar or tensor, with its dtype and axes.
    pub kind: ParamKind,
    /// Where its dtype is written in the spec (the `scalar:` or `dtype:`
    /// word; the name when neither is there), in the kernel's spec file.
    pub pos: Pos,
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
#[non_exhaustive]
pub struct Dim {
    /// The module-level name, when the dim has one.
    pub name: Option<String>,
    /// The size its axes resolved to.
    pub size: DimSize,
    /// Every (param index, axis index) in this dim, in declaration order.
    pub axes: Vec<(usize, usize)>,
    /// What the dim counts: the first of its axes' docs.
    pub doc: Option<String>,
    /// Where its first axis is written in the spec.
    pub pos: Pos,
}

/// One combination of STATIC sizes to build: (dim index, size) pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Specialisation(pub Vec<(usize, u64)>);

/// Every checked kernel of a set of spec files, in file then declaration order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Model {
    /// The kernels, in file then declaration order.
    pub kernels: Vec<Kernel>,
    /// The spec files read, in the order they were read.
    pub files: Vec<PathBuf>,
}

impl Model {
    /// What the build should say without failing: for each kernel with
    /// variants, sizes that no variant accepts (a call with them returns
    /// `Error::NoVariant`), as `PATH:LINE:COL: kernel `NAME`: …`.
    pub fn warnings(&self) -> Vec<String> {
        self.kernels
            .iter()
            .filter_map(|k| {
                let v = k.variant.as_ref()?;
                let sizes = v.uncovered.as_ref()?;
                Some(format!(
                    "{}: kernel `{}`: no variant accepts {sizes}; a call with these sizes returns \
                     `Error::NoVariant` (end the list with a variant without `when` to catch \
                     every call)",
                    k.origin, v.kernel
                ))
            })
            .collect()
    }
}

/// A checked kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Kernel {
    /// The kernel's name (the wrapper function's name).
    pub name: String,
    /// The spec's `doc:` text, copied onto the wrapper.
    pub doc: Option<String>,
    /// The template that renders the kernel's Ascend C.
    pub template: TemplateRef,
    /// The NPU architectures it is built for.
    pub targets: Vec<Target>,
    /// Its params, in call order.
    pub params: Vec<Param>,
    /// The dims: each set of axes that must have one size.
    pub dims: Vec<Dim>,
    /// Every combination of STATIC sizes, in a stable order; a kernel without
    /// STATIC dims has exactly one, the empty one.
    pub specialisations: Vec<Specialisation>,
    /// Template options with defaults filled in: a builtin's in its declared
    /// order, a user template's as written.
    pub options: Vec<(String, OptionValue)>,
    /// Where the kernel's name was written.
    pub origin: Location,
    /// Per param: the name its template knows it by (`args.NAME`): the
    /// contract's role name, or the spec's name when the contract declares
    /// no params.
    pub roles: Vec<String>,
    /// How a launch is split into blocks.
    pub blocks: BlockRule,
    /// The AI-core units the kernel runs on.
    pub cores: CoreKind,
    /// Divisibility the contract requires of DYNAMIC axes: checked at run
    /// time (fixed and STATIC sizes were checked here).
    pub multiples: Vec<Multiple>,
    /// Halvings the contract requires where a side is DYNAMIC.
    pub halves: Vec<Halves>,
    /// The contract's `equals:` relations that read a DYNAMIC size:
    /// checked at run time (the others were checked here).
    pub equations: Vec<Equation>,
    /// A `source:` kernel's entry function, as its source names it.
    pub entry: Option<String>,
    /// A templated entry's arguments, in order (empty: not a template).
    pub template_args: Vec<TemplateArg>,
    /// The `<headers>` a `source:` kernel includes itself: the host backend
    /// includes them before the namespace it wraps the source in, so that
    /// their declarations stay in the global namespace (the source's own
    /// includes of them are then no-ops). Names of safe characters only.
    pub system_headers: Vec<String>,
    /// The copy of a `source:` kernel's file the host backend compiles in
    /// its place when the file holds `<<<…>>>` launches (see
    /// `source::host_copy`); `None`: the file itself.
    pub host_text: Option<String>,
    /// Its copy for the NPU: the file with its quoted includes made
    /// absolute, launches kept.
    pub npu_text: Option<String>,
    /// Macros for every compile of the kernel (`defines:`), `(NAME,
    /// VALUE)` in spec order.
    pub defines: Vec<(String, String)>,
    /// The other functions and variables of C linkage a `source:` kernel's
    /// source defines (a C-linkage name is one symbol program-wide): each
    /// compiled copy renames them, as it renames the entry.
    pub c_names: Vec<String>,
    /// Scalar params whose value is a size of the call (`value:`): passed
    /// to the kernel, not asked of the caller.
    pub bound: Vec<Bound>,
    /// Bytes of GM scratch every launch lends the kernel (zeroed, after
    /// the params), when its contract asks for it.
    pub workspace: Option<u64>,
    /// A struct the launch builds and passes to a `source:` kernel's entry
    /// (`tiling:`).
    pub tiling: Option<Tiling>,
    /// Set when the kernel is one variant of a kernel with `variants:` (or
    /// `dispatch: runtime`): its wrapper is that kernel's, which chooses.
    pub variant: Option<Variant>,
}

impl Kernel {
    /// What a `source:` kernel's entry is passed, in order: its params,
    /// less the scalars a `tiling:` field carries, and the tiling struct.
    pub fn entry_args(&self) -> Vec<EntryArg> {
        let mut args: Vec<EntryArg> = (0..self.params.len())
            .filter(|&i| !self.tiling.as_ref().is_some_and(|t| t.carries(i)))
            .map(EntryArg::Param)
            .collect();
        if let Some(t) = &self.tiling {
            args.insert(t.at.min(args.len()), EntryArg::Tiling);
        }
        args
    }
}

/// One argument of a `source:` kernel's entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntryArg {
    /// A param, by index.
    Param(usize),
    /// The `tiling:` struct.
    Tiling,
}

/// A struct a `source:` kernel's launch builds field by field and passes
/// to the entry by value (`tiling:`): a vendor kernel's tiling data.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Tiling {
    /// The struct's name, as the source spells it.
    pub struct_name: String,
    /// Where `struct:` is written in the spec.
    pub pos: Pos,
    /// Every field, in spec order.
    pub fields: Vec<TilingField>,
    /// The entry parameter that takes it, counted from 0.
    pub at: usize,
}

impl Tiling {
    /// Whether a field carries scalar param `param` (which is then not an
    /// entry argument of its own).
    pub fn carries(&self, param: usize) -> bool {
        self.fields
            .iter()
            .any(|f| f.value == TilingValue::Scalar(param))
    }
}

/// One field of a [`Tiling`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TilingField {
    /// The field's name in the struct.
    pub name: String,
    /// Where its value is written in the spec.
    pub pos: Pos,
    /// What the launch sets it to.
    pub value: TilingValue,
}

/// A tiling field's value.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum TilingValue {
    /// An integer literal, within the range of `i64` or `u64`.
    Int(i128),
    /// A number literal.
    Float(f64),
    /// A size of the call.
    Size(SizeOf),
    /// A scalar param's value, by index.
    Scalar(usize),
}

// A `Float` is finite (the model refuses others), so equality is total.
impl Eq for TilingValue {}

/// Every DYNAMIC dim of `model` none of whose axes says what it counts (a
/// named dim's `doc:`, or the param's `axis_docs:`), as an error at its
/// first axis ([`crate::Builder::require_dim_docs`], `check
/// --require-dim-docs`).
pub fn require_dim_docs(model: &Model) -> Result<(), crate::Diagnostics> {
    let mut problems = Vec::new();
    for path in &model.files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let mut sink = Sink::new(path, &text);
        for k in model.kernels.iter().filter(|k| &k.origin.path == path) {
            for d in &k.dims {
                if !matches!(d.size, DimSize::Dynamic) || d.doc.is_some() {
                    continue;
                }
                let axes: Vec<String> = d.axes.iter().map(|&(p, a)| k.axis_label(p, a)).collect();
                let how = match &d.name {
                    Some(name) => format!(
                        "give `{name}` a doc (`{name}: {{ marker: DYNAMIC, doc: \"…\" }}` under \
                         `dims:`)"
                    ),
                    None => "give the param `axis_docs:`, one string per axis".to_owned(),
                };
                sink.error(
                    d.pos,
                    format!(
                        "kernel `{}`: DYNAMIC dim `{}` does not say what it counts; {how} \
                         (this build requires every DYNAMIC dim documented)",
                        k.name,
                        axes.join(" = ")
                    ),
                );
            }
        }
        problems.extend(sink.finish());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(crate::Diagnostics(problems))
    }
}

/// A size of a call's tensors (the runtime's `SizeOf`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SizeOf {
    /// The element count of a tensor param.
    Numel(usize),
    /// The size of (param, axis).
    Axis(usize, usize),
}

/// One argument of a templated entry (`template_args:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TemplateArg {
    /// A dtype, passed as its C++ type.
    Type(DType),
    /// An integer literal.
    Int(i64),
    /// A size fixed when the kernel is built: fixed, or STATIC (one
    /// instantiation per built size).
    Size(SizeOf),
}

/// How a launch is split into blocks, with option values filled in (the
/// runtime's `BlockRule`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BlockRule {
    /// One block per row of a param: the product of all but its last axis.
    Rows {
        /// The param's index.
        param: usize,
    },
    /// One block per `per_block` elements of a param, rounded up.
    Elements {
        /// The param's index.
        param: usize,
        /// Elements each block handles.
        per_block: u32,
    },
    /// `factor` blocks per index of a param's leading `axes` axes.
    Leading {
        /// The param's index.
        param: usize,
        /// How many leading axes.
        axes: usize,
        /// Blocks per index.
        factor: u32,
    },
    /// Exactly this many blocks (a `source:` kernel's `blocks: 8`).
    Count(u32),
    /// As many blocks as a size of the call (`blocks: x.0`).
    Size(SizeOf),
}

/// A run-time check: axis `axis` of param `param` is a multiple of `of`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Multiple {
    /// The param's index.
    pub param: usize,
    /// The axis, from 0.
    pub axis: usize,
    /// The number the size must be a multiple of.
    pub of: u32,
    /// Why, for the error message.
    pub why: String,
}

/// A run-time check: the `big` (param, axis) is twice the `small` one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Halves {
    /// (param index, axis) of the larger axis.
    pub big: (usize, usize),
    /// (param index, axis) of the axis `big` is twice.
    pub small: (usize, usize),
    /// Why, for the error message.
    pub why: String,
}

/// The value of a template option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionValue {
    /// An integer option.
    Int(i64),
    /// A boolean option.
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

/// Checks every kernel of one spec file. Kernels with errors are left out;
/// the errors are in `sink`.
/// Template contracts are read through `templates`, once per template.
pub(crate) fn check_file(
    spec: &SpecFile,
    templates: &mut Templates,
    sink: &mut Sink<'_>,
) -> Vec<Kernel> {
    let dims = dims::check_dims(spec, sink);
    let package = OnceCell::new();
    let mut kernels: Vec<Kernel> = spec
        .kernels
        .iter()
        .filter_map(|k| {
            let before = sink.count();
            let kernel = match &k.variant {
                None => check_kernel(k, &dims, &package, templates, sink),
                Some(v) => {
                    let ctx = kernel_context(k);
                    let dims = variant::variant_dims(&dims, v, &ctx, sink);
                    check_kernel(k, &dims, &package, templates, sink).and_then(|mut kernel| {
                        let overridden: Vec<String> =
                            v.dims.iter().map(|(n, _)| n.value.clone()).collect();
                        let when = match &v.when {
                            Some(w) => Some(variant::check_condition(
                                w,
                                &kernel,
                                &overridden,
                                &ctx,
                                sink,
                            )?),
                            None => None,
                        };
                        kernel.variant = Some(Variant {
                            kernel: v.kernel.value.clone(),
                            name: v.name.value.clone(),
                            when,
                            index: v.index,
                            count: v.count,
                            implicit: v.implicit,
                            uncovered: None,
                        });
                        Some(kernel)
                    })
                }
            };
            kernel.filter(|_| sink.count() == before)
        })
        .collect();
    variant::check_groups(&spec.kernels, &mut kernels, sink);
    kernels
}

/// How messages name a kernel: `kernel `mm``, or for a variant
/// `kernel `mm`, variant `small_m``.
fn kernel_context(k: &KernelSpec) -> String {
    match &k.variant {
        Some(v) if !v.implicit => format!(
            "kernel `{}`, variant `{}`",
            clip(&v.kernel.value, QUOTED),
            clip(&v.name.value, QUOTED)
        ),
        Some(v) => format!("kernel `{}`", clip(&v.kernel.value, QUOTED)),
        None => format!("kernel `{}`", clip(&k.name.value, QUOTED)),
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
    templates: &mut Templates,
    sink: &mut Sink<'_>,
) -> Option<Kernel> {
    let name = &k.name.value;
    let ctx = kernel_context(k);
    // A variant's name is checked with its kernel's other variants.
    if k.variant.is_none()
        && let Some(problem) = identifier_problem(name)
    {
        sink.error(
            k.name.pos,
            format!("{ctx}: not a valid kernel name: {problem}"),
        );
    }
    let template = template::check_template(k, &ctx, package, sink);
    // Read once per template; a contract with errors (reported at the
    // template's lines) fails every kernel that uses it.
    let contract = match &template {
        Some(t) => templates.contract(t, k, &ctx, sink).ok()?,
        None => None,
    };
    let targets = params::check_targets(k, &ctx, sink);

    let mut drafts = Vec::new();
    for p in &k.params {
        if let Some(d) = params::check_param(p, &ctx, dims, &targets, sink) {
            drafts.push(d);
        }
    }
    let all_params_ok = drafts.len() == k.params.len();
    let source_parts = source::check_source_parts(k, &ctx, template.as_ref(), &drafts, sink);
    let bound = source::check_bound(&ctx, &drafts, sink);
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

    let template_name = template.as_ref().map(ToString::to_string);
    let options = contract::check_options(k, &ctx, contract, template_name.as_deref(), sink);
    // The relations that hold for this kernel's options (`when:`/`unless:`;
    // with options in error, their defaults).
    let conditioned = contract.map(|c| {
        c.under(|name| {
            let given = options.as_ref().and_then(|o| {
                o.iter().find_map(|(n, v)| match v {
                    OptionValue::Bool(b) if n == name => Some(*b),
                    _ => None,
                })
            });
            given.unwrap_or_else(|| {
                matches!(
                    c.option(name).map(|o| o.kind),
                    Some(crate::contract::OptionKind::Bool { default: true })
                )
            })
        })
    });
    let contract = conditioned.as_ref();
    // A contract's relations apply only to params that match it.
    let applied = match (contract, &template_name) {
        (Some(c), Some(t)) if all_params_ok => {
            contract::check_params(k, c, t, &drafts, &ctx, sink).then_some((c, t.as_str()))
        }
        _ => None,
    };

    let mut sets = dims::AxisSets::new(&drafts);
    if let Some((c, _)) = applied {
        contract::tie_axes(c, &drafts, &mut sets);
    }
    let statics = dims::check_statics(k, &ctx, &drafts, dims, &mut sets, sink);
    let tied_by = applied.map(|(c, t)| (t, c.relations.as_slice()));
    let kernel_dims = dims::resolve(&ctx, &drafts, &mut sets, &statics, tied_by, sink);
    let specialisations = dims::enumerate_specialisations(k, &ctx, &kernel_dims, &drafts, sink);
    if let Some((c, t)) = applied {
        contract::check_halved(k, &ctx, c, t, &drafts, &kernel_dims, &specialisations, sink);
    }
    if let (Some((c, t)), Some(options)) = (applied, &options) {
        let before = sink.count();
        contract::check_divisible(k, &ctx, c, options, &drafts, &kernel_dims, sink);
        // A size a `divisible_by` refuses would break an equation's
        // division too: one error is enough.
        if sink.count() == before {
            equals::check_equations(
                k,
                &ctx,
                c,
                t,
                options,
                &drafts,
                &kernel_dims,
                &specialisations,
                sink,
            );
        }
    }

    // Attach dim indices to axes.
    let mut params: Vec<Param> = drafts
        .iter()
        .map(|d| Param {
            name: d.spec.name.value.clone(),
            kind: d.kind.clone(),
            pos: d
                .spec
                .scalar
                .as_ref()
                .or(d.spec.dtype.as_ref())
                .map_or(d.spec.name.pos, |w| w.pos),
        })
        .collect();
    for (di, dim) in kernel_dims.iter().enumerate() {
        for &(pi, ai) in &dim.axes {
            if let ParamKind::Tensor { axes, .. } = &mut params[pi].kind {
                axes[ai].dim = di;
            }
        }
    }
    let template_args = source::check_template_args(k, &ctx, &drafts, &params, &kernel_dims, sink);
    let tiling = source::check_tiling(k, &ctx, &drafts, sink);
    let template = template?;
    let options = options?;
    let template_args = template_args?;
    let tiling = tiling?;
    let resolved = contract::resolve(
        k,
        &ctx,
        applied.map(|(c, _)| c),
        &template,
        &params,
        &kernel_dims,
        &options,
        sink,
    )?;
    let equations = applied.map_or_else(Vec::new, |(c, t)| {
        equals::runtime_equations(c, t, &options, &params, &kernel_dims)
    });

    let mut c_names = Vec::new();
    let mut system_headers = Vec::new();
    let mut host_text = None;
    let mut npu_text = None;
    let (entry, blocks, cores) = match (&template, source_parts) {
        (TemplateRef::Source(path), Some(parts)) => {
            if let Some(scan) = templates.scan(path) {
                source::check_entry_template(k, &ctx, path, scan, &parts.entry, sink);
                if let Some(t) = &tiling {
                    source::check_tiling_struct(&ctx, path, scan, t, sink);
                }
                c_names = source::c_linkage_names(scan, &parts.entry);
                system_headers = source::system_headers(scan);
                host_text = scan.host_text.clone();
                npu_text = scan.npu_text.clone();
            }
            (Some(parts.entry), parts.blocks, parts.cores)
        }
        (TemplateRef::Source(_), None) => return None,
        _ => (
            None,
            resolved.blocks,
            contract.map_or(CoreKind::Vector, |c| c.cores),
        ),
    };
    // What the generated code defines around a source itself: its renamed
    // functions, a whole program's `main` and the CPU debug macro.
    let mut renamed: Vec<&str> = entry.iter().chain(&c_names).map(String::as_str).collect();
    if entry.is_some() {
        renamed.extend(["main", "ASCENDC_CPU_DEBUG"]);
    }
    let defines = defines::check_defines(k, &ctx, &renamed, sink)?;
    Some(Kernel {
        name: name.clone(),
        doc: k.doc.as_ref().map(|d| d.value.clone()),
        template,
        targets,
        params,
        dims: kernel_dims,
        specialisations,
        options,
        origin: sink.location(k.name.pos),
        roles: resolved.roles,
        blocks,
        cores,
        multiples: resolved.multiples,
        halves: resolved.halves,
        equations,
        entry,
        template_args,
        system_headers,
        host_text,
        npu_text,
        defines,
        c_names,
        bound,
        workspace: resolved.workspace,
        tiling,
        variant: None,
    })
}
