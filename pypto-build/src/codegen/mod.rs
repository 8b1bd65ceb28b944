//! Code generation: checked kernels → Rust wrappers ([`rust`]) and Ascend C
//! sources ([`ascendc`]). [`Plan`] holds the names both sides must agree on.

pub mod ascendc;
mod lines;
pub(crate) use lines::c_string;
pub mod rust;

use std::fmt::Write;

use heck::{ToShoutySnakeCase, ToUpperCamelCase};

use crate::model::{BlockRule, CoreKind, DimSize, Kernel};
use crate::tables::{self, Arch};

/// Names and choices derived from one kernel, shared by both generators.
#[derive(Debug, Clone)]
pub struct Plan<'k> {
    pub kernel: &'k Kernel,
    /// Prefix of every C symbol of this kernel: [`SymbolScope::base`].
    pub symbol_base: String,
    /// Per dim: the const generic carrying its size, for STATIC dims.
    pub generics: Vec<Option<String>>,
    /// Per dim: the trait marking the sizes built, for STATIC dims.
    pub built_traits: Vec<Option<String>>,
    /// Per param: the name templates use for it ([`Kernel::roles`]).
    pub roles: Vec<String>,
    pub blocks: BlockRule,
    /// The spec file, as it appears in messages and comments.
    pub spec_path: String,
    /// The NPU architectures compiled for (empty without a CANN toolkit).
    pub npu_arches: Vec<Arch>,
    /// The static library the kernel's objects are archived into.
    pub library: String,
    /// The scope the kernel's symbols are named in.
    pub scope: SymbolScope,
}

impl<'k> Plan<'k> {
    /// `scope` keeps symbols of different crates, and of different versions
    /// of one crate, apart.
    pub fn new(kernel: &'k Kernel, scope: &SymbolScope) -> Self {
        // Case conversion is not injective (`h_dim` and `hDim` are both
        // `H_DIM`), so each name is made unique against those already given,
        // and const generics, which share the value namespace with the
        // params, against the params' names too.
        let mut taken_generics: Vec<String> =
            kernel.params.iter().map(|p| p.name.clone()).collect();
        let mut taken_traits: Vec<String> = Vec::new();
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
                    (
                        format!("{}_{a}", param.to_shouty_snake_case()),
                        format!("{}Axis{a}", param.to_upper_camel_case()),
                    )
                }
            };
            let generic = unique(letter_first(generic), &taken_generics, "_");
            let trait_name = unique(letter_first(trait_name), &taken_traits, "X");
            taken_generics.push(generic.clone());
            taken_traits.push(trait_name.clone());
            generics.push(Some(generic));
            built_traits.push(Some(trait_name));
        }
        Plan {
            kernel,
            symbol_base: scope.base(&kernel.name),
            library: scope.library(),
            scope: scope.clone(),
            generics,
            built_traits,
            roles: kernel.roles.clone(),
            blocks: kernel.blocks,
            spec_path: kernel.origin.path.display().to_string(),
            npu_arches: Vec::new(),
        }
    }

    /// The same plan, also compiled for the NPU architectures its targets need.
    pub fn with_npu(mut self) -> Self {
        self.npu_arches = tables::arches(&self.kernel.targets);
        self
    }

    /// Whether the kernel runs on the cube core (matters for toolkits
    /// before CANN 8.5, which name the core in the architecture flag).
    /// A mixed kernel is compiled with the cube flag (unverified on
    /// hardware).
    pub fn uses_cube(&self) -> bool {
        self.kernel.cores != CoreKind::Vector
    }

    /// The NPU launch stub of specialisation `index`, before the
    /// per-architecture suffix.
    pub fn npu_symbol(&self, index: usize) -> String {
        format!("{}_npu_s{index}", self.symbol_base)
    }

    /// A symbol as compiled for `arch`: the NPU sources rename the entry and
    /// stub per architecture so that one binary holds them all. The suffix
    /// follows a complete `_s<i>`/`_npu_s<i>`, so renamed symbols cannot
    /// meet another kernel's (whose base is length-delimited) or each other.
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

    /// What a `source:` kernel's C-linkage name `name` (a helper besides
    /// its entry, [`Kernel::c_names`]) is renamed to in specialisation
    /// `index`: `_c_s<i>_` follows the length-delimited base, so it meets no
    /// other symbol.
    pub fn c_symbol(&self, index: usize, name: &str) -> String {
        format!("{}_c_s{index}_{name}", self.symbol_base)
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

/// `name`, or `name` followed by `extra` as often as needed to differ from
/// every name in `taken`.
fn unique(mut name: String, taken: &[String], extra: &str) -> String {
    while taken.contains(&name) {
        name.push_str(extra);
    }
    name
}

/// An identifier that starts with a letter: case conversion drops the `_`
/// of names like `_1`, which would leave a digit first.
fn letter_first(name: String) -> String {
    if name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        name
    } else {
        format!("N{name}")
    }
}

/// What a crate's kernel symbols are named after, so that kernels of
/// different crates, and of different versions of one crate, linked into one
/// binary never share a symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SymbolScope {
    /// A Cargo package: its name and version (the default).
    Package { name: String, version: String },
    /// A prefix chosen by the user ([`crate::Builder::symbol_prefix`]).
    Prefix(String),
}

impl SymbolScope {
    /// The prefix of every symbol of kernel `kernel`:
    /// `pypto_p<len>_<package>v<len>_<version>k<len>_<kernel>` or, for a
    /// user prefix, `pypto_x<len>_<prefix>k<len>_<kernel>`, each component
    /// [`escape`]d and preceded by a tag letter and its escaped length; e.g.
    /// `pypto_p4_kx_2dav5_0_2e1_2e0k1_b` for kernel `b` of `kx-a` 0.1.0.
    ///
    /// Injective: the tag letter says which component follows, its length
    /// says where it ends, and the escape is reversible, so no two (scope,
    /// kernel) pairs share a base. The suffixes appended to it (`_s<i>`,
    /// `_host_s<i>`, `_npu_s<i>`, then an optional `_<arch>`) parse back
    /// uniquely too. Nothing here depends on paths, so objects stay reusable
    /// across target directories. (An empty kernel name, which checking
    /// rejects, would make a `__` that C++ reserves.)
    /// The name of the static library the scope's kernels are archived
    /// into: `pypto_<scope>_kernels`, the scope spelled as in [`Self::base`],
    /// so that two crates' libraries never stand in for each other at link
    /// time.
    pub fn library(&self) -> String {
        let mut out = self.base("");
        // Drop the empty kernel component `k0_`.
        out.truncate(out.len() - "k0_".len());
        out.push_str("_kernels");
        out
    }

    /// The file name of the shared library the scope's NPU kernels for
    /// `arch` are linked into: `lib<library>_<arch>.so`, named like
    /// [`Self::library`] so that two crates' libraries never collide.
    pub fn npu_library(&self, arch: Arch) -> String {
        format!("lib{}_{}.so", self.library(), arch.suffix())
    }

    pub fn base(&self, kernel: &str) -> String {
        let mut out = String::from("pypto_");
        match self {
            SymbolScope::Package { name, version } => {
                push_component(&mut out, 'p', name);
                push_component(&mut out, 'v', version);
            }
            SymbolScope::Prefix(prefix) => push_component(&mut out, 'x', prefix),
        }
        push_component(&mut out, 'k', kernel);
        out
    }
}

/// `<tag><len>_<escaped>`: the tag, the escaped text's length, `_`, the text.
fn push_component(out: &mut String, tag: char, text: &str) {
    let escaped = escape(text);
    let _ = write!(out, "{tag}{}_{escaped}", escaped.len());
}

/// A reversible spelling of `text` in C identifier characters: ASCII letters
/// and digits stay, every other byte (`_` included) becomes `_` and two
/// lowercase hex digits. So `kx-a`, `kx_a` and `kx.a` stay apart
/// (`kx_2da`, `kx_5fa`, `kx_2ea`), and the result never holds `__`.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "_{byte:02x}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use proptest::prelude::*;

    use super::*;

    fn package(name: &str, version: &str) -> SymbolScope {
        SymbolScope::Package {
            name: name.to_owned(),
            version: version.to_owned(),
        }
    }

    #[test]
    fn symbol_bases_spell_out_package_version_and_kernel() {
        assert_eq!(
            package("kx", "0.1.0").base("a_b"),
            "pypto_p2_kxv9_0_2e1_2e0k5_a_5fb"
        );
        assert_eq!(
            package("kx_a", "0.1.0").base("b"),
            "pypto_p6_kx_5fav9_0_2e1_2e0k1_b"
        );
        assert_eq!(
            package("kx-a", "0.2.0-rc.1+x").base("b"),
            "pypto_p6_kx_2dav22_0_2e2_2e0_2drc_2e1_2bxk1_b"
        );
        assert_eq!(
            SymbolScope::Prefix("kx".to_owned()).base("b"),
            "pypto_x2_kxk1_b"
        );
    }

    /// Every symbol a plan defines or renames for an architecture.
    fn symbols(plan: &Plan<'_>) -> Vec<String> {
        let mut out = Vec::new();
        for i in 0..plan.kernel.specialisations.len() {
            for symbol in [plan.entry_symbol(i), plan.npu_symbol(i)] {
                for &arch in &plan.npu_arches {
                    out.push(Plan::for_arch(&symbol, arch));
                }
                out.push(symbol);
            }
            out.push(plan.host_symbol(i));
        }
        out
    }

    #[test]
    fn kernels_named_like_symbol_suffixes_get_distinct_symbols() {
        let spec = "kernels:\n".to_owned()
            + &[
                "k",
                "k_host",
                "k_s0",
                "k_npu",
                "k_npu_s0",
                "k_s0_dav2201",
                "k_dav2201",
            ]
            .map(|name| {
                format!(
                    "  {name}:\n    template: builtin/relu\n    params:\n      \
                         x: {{ dtype: DT_FP32, shape: [STATIC] }}\n      \
                         y: {{ dtype: DT_FP32, shape: [STATIC], output: true }}\n    \
                         static: {{ x.0: [8, 16] }}\n"
                )
            })
            .concat();
        let model = crate::check_source(Path::new("k.yaml"), &spec).unwrap();
        let scope = package("p", "1.0.0");
        let mut all: Vec<String> = model
            .kernels
            .iter()
            .flat_map(|k| symbols(&Plan::new(k, &scope).with_npu()))
            .collect();
        // 7 kernels × 2 specialisations × (entry, NPU stub: each bare and for
        // 2 architectures; host shim).
        assert_eq!(all.len(), 7 * 2 * 7);
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 7 * 2 * 7);
        assert!(all.iter().all(|s| !s.contains("__")), "{all:?}");
    }

    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Kind {
        Entry,
        Npu,
        Host,
    }

    /// Names from a small alphabet, so that near-collisions are common.
    fn word() -> impl Strategy<Value = String> {
        proptest::string::string_regex("[abkpvx_.\\-0-9]{0,5}").unwrap()
    }

    type SymbolInput = (SymbolScope, String, Kind, usize, Option<Arch>);

    /// One string cut into scope and kernel at two points: inputs that
    /// differ only in where the cuts fall are what a scheme that merely
    /// concatenates would confuse.
    fn symbol_input(text: String) -> impl Strategy<Value = SymbolInput> {
        let n = text.len();
        (
            0..=n,
            0..=n,
            any::<bool>(),
            prop_oneof![Just(Kind::Entry), Just(Kind::Npu), Just(Kind::Host)],
            0usize..12,
            prop_oneof![
                Just(None),
                Just(Some(Arch::Dav2201)),
                Just(Some(Arch::Dav3510))
            ],
        )
            .prop_map(move |(i, j, prefix, kind, index, arch)| {
                let (i, j) = (i.min(j), i.max(j));
                let scope = if prefix {
                    SymbolScope::Prefix(text[..j].to_owned())
                } else {
                    package(&text[..i], &text[i..j])
                };
                (scope, text[j..].to_owned(), kind, index, arch)
            })
    }

    fn symbol_pair() -> impl Strategy<Value = (SymbolInput, SymbolInput)> {
        proptest::string::string_regex("[abkpvx_.\\-0-9]{0,8}")
            .unwrap()
            .prop_flat_map(|text| (symbol_input(text.clone()), symbol_input(text)))
    }

    /// The symbol a plan for `kernel` in `scope` gives, through `Plan`'s own
    /// methods (on a stand-in kernel: only the base depends on the name).
    fn symbol((scope, kernel, kind, index, arch): &SymbolInput) -> String {
        static MODEL: std::sync::OnceLock<crate::Model> = std::sync::OnceLock::new();
        let model = MODEL.get_or_init(|| {
            crate::check_source(
                Path::new("k.yaml"),
                "kernels:\n  k: { template: builtin/relu, params: { x: { dtype: DT_FP32, \
                 shape: [DYNAMIC] }, y: { dtype: DT_FP32, shape: [DYNAMIC], output: true } } }\n",
            )
            .unwrap()
        });
        let plan = Plan {
            symbol_base: scope.base(kernel),
            ..Plan::new(&model.kernels[0], scope)
        };
        let symbol = match kind {
            Kind::Entry => plan.entry_symbol(*index),
            Kind::Npu => plan.npu_symbol(*index),
            Kind::Host => plan.host_symbol(*index),
        };
        match arch {
            Some(arch) => Plan::for_arch(&symbol, *arch),
            None => symbol,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]
        #[test]
        fn distinct_inputs_give_distinct_symbols((a, b) in symbol_pair()) {
            prop_assert_eq!(symbol(&a) == symbol(&b), a == b, "{} {}", symbol(&a), symbol(&b));
        }

        #[test]
        fn escaping_is_injective(a in word(), b in word()) {
            prop_assert_eq!(escape(&a) == escape(&b), a == b);
            prop_assert!(escape(&a).bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_'));
        }
    }
}
