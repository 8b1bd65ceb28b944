//! Code generation: checked kernels → Rust wrappers ([`rust`]) and Ascend C
//! sources ([`ascendc`]). [`Plan`] holds the names both sides must agree on.

pub mod ascendc;
pub mod rust;

use heck::{ToShoutySnakeCase, ToUpperCamelCase};

use crate::builtin::{self, Blocks};
use crate::model::{DimSize, Kernel, ParamKind, TemplateRef};
use crate::toolchain::cann::{self, Arch};

/// Names and choices derived from one kernel, shared by both generators.
#[derive(Debug, Clone)]
pub struct Plan<'k> {
    pub kernel: &'k Kernel,
    /// Prefix of every C symbol of this kernel.
    pub symbol_base: String,
    /// Per dim: the const generic carrying its size, for STATIC dims.
    pub generics: Vec<Option<String>>,
    /// Per dim: the trait marking the sizes built, for STATIC dims.
    pub built_traits: Vec<Option<String>>,
    /// Per param: the name templates use for it (the builtin's role name, or
    /// the spec's param name for user templates).
    pub roles: Vec<String>,
    pub blocks: Blocks,
    /// The spec file, as it appears in messages and comments.
    pub spec_path: String,
    /// The NPU architectures compiled for (empty without a CANN toolkit).
    pub npu_arches: Vec<Arch>,
}

impl<'k> Plan<'k> {
    /// `prefix` keeps symbols of different crates apart (e.g. the package name).
    pub fn new(kernel: &'k Kernel, prefix: &str) -> Self {
        let contract = match &kernel.template {
            TemplateRef::Builtin(name) => builtin::find(name),
            TemplateRef::File(_) => None,
        };
        let roles = match contract {
            Some(c) => c.params.iter().map(|r| r.name.to_owned()).collect(),
            None => kernel.params.iter().map(|p| p.name.clone()).collect(),
        };
        let blocks = contract.map_or_else(|| default_blocks(kernel), |c| c.blocks);
        let named: Vec<String> = kernel
            .dims
            .iter()
            .filter_map(|d| d.name.as_ref().map(|n| n.to_shouty_snake_case()))
            .collect();
        let mut generics = Vec::new();
        let mut built_traits = Vec::new();
        for dim in &kernel.dims {
            if !matches!(dim.size, DimSize::Static(_)) {
                generics.push(None);
                built_traits.push(None);
                continue;
            }
            let (generic, trait_name) = match &dim.name {
                Some(name) => (
                    name.to_shouty_snake_case(),
                    format!("{}Dim", name.to_upper_camel_case()),
                ),
                None => {
                    let (p, a) = dim.axes[0];
                    let param = &kernel.params[p].name;
                    let mut generic = format!("{}_{a}", param.to_shouty_snake_case());
                    // A named dim may already be spelled like this.
                    while named.contains(&generic) {
                        generic.push('_');
                    }
                    (generic, format!("{}Axis{a}", param.to_upper_camel_case()))
                }
            };
            generics.push(Some(generic));
            built_traits.push(Some(trait_name));
        }
        Plan {
            kernel,
            symbol_base: format!("pypto_{}_{}", sanitize(prefix), kernel.name),
            generics,
            built_traits,
            roles,
            blocks,
            spec_path: kernel.origin.path.display().to_string(),
            npu_arches: Vec::new(),
        }
    }

    /// The same plan, also compiled for the NPU architectures its targets need.
    pub fn with_npu(mut self) -> Self {
        self.npu_arches = cann::arches(&self.kernel.targets);
        self
    }

    /// Whether the kernel runs on the cube core (matters for toolkits
    /// before CANN 8.5, which name the core in the architecture flag).
    pub fn uses_cube(&self) -> bool {
        matches!(&self.kernel.template, TemplateRef::Builtin(name)
            if name == "matmul" || name == "batch_matmul")
    }

    /// The NPU launch stub of specialisation `index`, before the
    /// per-architecture suffix.
    pub fn npu_symbol(&self, index: usize) -> String {
        format!("{}_npu_s{index}", self.symbol_base)
    }

    /// A symbol as compiled for `arch`: the NPU sources rename the entry and
    /// stub per architecture so that one binary holds them all.
    pub fn for_arch(symbol: &str, arch: Arch) -> String {
        format!("{symbol}_{}", arch.suffix())
    }

    /// The position of DYNAMIC dim `dim` among the kernel's DYNAMIC dims:
    /// its slot in the tiling data (the only dims sent at launch).
    pub fn dynamic_index(&self, dim: usize) -> usize {
        self.kernel.dims[..dim]
            .iter()
            .filter(|d| matches!(d.size, DimSize::Dynamic))
            .count()
    }

    /// The kernel entry of specialisation `index`.
    pub fn entry_symbol(&self, index: usize) -> String {
        format!("{}_s{index}", self.symbol_base)
    }

    /// The host-backend shim of specialisation `index`.
    pub fn host_symbol(&self, index: usize) -> String {
        format!("{}_host_s{index}", self.symbol_base)
    }

    /// `x.1 = 128, H = 64` for specialisation `index`, or `no STATIC dims`.
    pub fn describe_specialisation(&self, index: usize) -> String {
        let spec = &self.kernel.specialisations[index];
        if spec.0.is_empty() {
            return "no STATIC dims".to_owned();
        }
        let parts: Vec<String> = spec
            .0
            .iter()
            .map(|&(dim, value)| format!("{} = {value}", self.kernel.dim_label(dim)))
            .collect();
        parts.join(", ")
    }
}

/// User templates: a block per 8 Ki elements of the first output.
fn default_blocks(kernel: &Kernel) -> Blocks {
    let param = kernel
        .params
        .iter()
        .position(|p| matches!(p.kind, ParamKind::Tensor { output: true, .. }))
        .unwrap_or(0);
    Blocks::Elements {
        param,
        per_block: 8192,
    }
}

/// An identifier fragment from a package name: ASCII alphanumerics and `_`.
pub fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.is_empty() { "crate".to_owned() } else { s }
}
