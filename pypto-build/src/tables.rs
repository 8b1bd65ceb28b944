//! The two tables every stage reads: element types and NPU targets. Each
//! fact about a dtype (its spec name, C++ and Rust types, size, targets)
//! or a target (its architecture, symbol suffix, runtime variant) is written
//! once, here.

use std::fmt;

/// Highest tensor rank a kernel may take.
pub const MAX_RANK: usize = 8;
/// Largest size of one axis: kernels receive each size as a `uint32_t`.
pub const MAX_SIZE: u64 = u32::MAX as u64;
/// Most params one kernel may take (tensors and scalars).
pub const MAX_PARAMS: usize = 64;
/// Most STATIC specialisations one kernel may build.
pub const MAX_SPECIALISATIONS: usize = 64;
/// Most blocks a spec may ask for: the NPU runtime's largest block
/// dimension (pypto-rt's `MAX_LAUNCH_BLOCKS`).
pub const MAX_SPEC_BLOCKS: u64 = 65535;

/// Which AI-core units a kernel runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CoreKind {
    #[default]
    /// Vector units only (the default).
    Vector,
    /// The cube unit only (matrix multiplication).
    Cube,
    /// Cube and vector parts in one kernel.
    Mixed,
}

impl CoreKind {
    /// The spec names of the core kinds, in declaration order.
    pub(crate) const SPEC_NAMES: [&'static str; 3] = ["vector", "cube", "mixed"];

    /// The word a template's contract uses for this kind (`vector`, `cube`, `mixed`).
    pub fn spec_name(self) -> &'static str {
        Self::SPEC_NAMES[self as usize]
    }
}

/// Element types, by PyPTO's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DType {
    /// `DT_FP32`: `f32`.
    Fp32,
    /// `DT_FP16`: IEEE half, `half::f16`.
    Fp16,
    /// `DT_BF16`: bfloat16, `half::bf16`.
    Bf16,
    /// `DT_INT8`.
    Int8,
    /// `DT_INT16`.
    Int16,
    /// `DT_INT32`.
    Int32,
    /// `DT_INT64`.
    Int64,
    /// `DT_UINT8`.
    Uint8,
    /// `DT_UINT16`.
    Uint16,
    /// `DT_UINT32`.
    Uint32,
    /// `DT_UINT64`.
    Uint64,
    /// `DT_BOOL`: one byte, 0 or 1.
    Bool,
    /// `DT_FP8E4M3`: 8-bit float, 4 exponent and 3 mantissa bits.
    Fp8E4M3,
    /// `DT_FP8E5M2`: 8-bit float, 5 exponent and 2 mantissa bits.
    Fp8E5M2,
}

/// One row of the dtype table.
struct DTypeRow {
    dtype: DType,
    spec: &'static str,
    cpp: &'static str,
    rust: &'static str,
    bytes: usize,
    only_950: bool,
}

const fn row(
    dtype: DType,
    spec: &'static str,
    cpp: &'static str,
    rust: &'static str,
    bytes: usize,
) -> DTypeRow {
    DTypeRow {
        dtype,
        spec,
        cpp,
        rust,
        bytes,
        only_950: false,
    }
}

/// Spec name, Ascend C type, Rust type (as generated code writes it), size.
/// The Rust types of half and fp8 floats are pypto-rt's, named through its
/// interface module for generated code.
const DTYPES: [DTypeRow; 14] = [
    row(DType::Fp32, "DT_FP32", "float", "f32", 4),
    row(
        DType::Fp16,
        "DT_FP16",
        "half",
        concat!(rt_module!(), "::f16"),
        2,
    ),
    row(
        DType::Bf16,
        "DT_BF16",
        "bfloat16_t",
        concat!(rt_module!(), "::bf16"),
        2,
    ),
    row(DType::Int8, "DT_INT8", "int8_t", "i8", 1),
    row(DType::Int16, "DT_INT16", "int16_t", "i16", 2),
    row(DType::Int32, "DT_INT32", "int32_t", "i32", 4),
    row(DType::Int64, "DT_INT64", "int64_t", "i64", 8),
    row(DType::Uint8, "DT_UINT8", "uint8_t", "u8", 1),
    row(DType::Uint16, "DT_UINT16", "uint16_t", "u16", 2),
    row(DType::Uint32, "DT_UINT32", "uint32_t", "u32", 4),
    row(DType::Uint64, "DT_UINT64", "uint64_t", "u64", 8),
    row(DType::Bool, "DT_BOOL", "bool", "bool", 1),
    DTypeRow {
        only_950: true,
        ..row(
            DType::Fp8E4M3,
            "DT_FP8E4M3",
            "fp8_e4m3fn_t",
            concat!(rt_module!(), "::Fp8E4M3"),
            1,
        )
    },
    DTypeRow {
        only_950: true,
        ..row(
            DType::Fp8E5M2,
            "DT_FP8E5M2",
            "fp8_e5m2_t",
            concat!(rt_module!(), "::Fp8E5M2"),
            1,
        )
    },
];

impl DType {
    /// Every dtype, in table order.
    pub const ALL: [DType; 14] = {
        let mut all = [DType::Fp32; 14];
        let mut i = 0;
        while i < 14 {
            all[i] = DTYPES[i].dtype;
            i += 1;
        }
        all
    };

    /// The spec names of every dtype, in table order.
    pub(crate) const SPEC_NAMES: [&'static str; 14] = {
        let mut names = [""; 14];
        let mut i = 0;
        while i < 14 {
            names[i] = DTYPES[i].spec;
            i += 1;
        }
        names
    };

    fn row(self) -> &'static DTypeRow {
        // The table is in declaration order (checked by a test).
        &DTYPES[self as usize]
    }

    /// The spec (PyPTO) name, e.g. `DT_FP32`.
    pub fn spec_name(self) -> &'static str {
        self.row().spec
    }

    /// The Ascend C element type.
    /// The largest value of an integer dtype, which a size bound to a
    /// scalar of this dtype may reach; `None` for non-integers.
    pub fn size_max(self) -> Option<u64> {
        Some(match self {
            DType::Int8 => i8::MAX as u64,
            DType::Int16 => i16::MAX as u64,
            DType::Int32 => i32::MAX as u64,
            DType::Int64 => i64::MAX as u64,
            DType::Uint8 => u8::MAX.into(),
            DType::Uint16 => u16::MAX.into(),
            DType::Uint32 => u32::MAX.into(),
            DType::Uint64 => u64::MAX,
            _ => return None,
        })
    }

    /// The Ascend C element type, as generated kernels spell it.
    pub fn cpp_type(self) -> &'static str {
        self.row().cpp
    }

    /// The Rust element type, as generated code spells it.
    pub fn rust_type(self) -> &'static str {
        self.row().rust
    }

    /// The size of one element in bytes.
    pub fn size_bytes(self) -> usize {
        self.row().bytes
    }

    /// The targets that have this dtype.
    pub fn targets(self) -> &'static [Target] {
        if self.row().only_950 {
            &[Target::Ascend950PR]
        } else {
            &Target::ALL
        }
    }

    pub(crate) fn from_spec_name(name: &str) -> Option<DType> {
        DTYPES.iter().find(|r| r.spec == name).map(|r| r.dtype)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.spec_name())
    }
}

/// The NPU generations a kernel can be built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// Atlas A2 (`A2` in specs).
    A2,
    /// Atlas A3 (`A3`).
    A3,
    /// Ascend 950PR (`950PR`).
    Ascend950PR,
}

/// The NPU architecture a kernel is compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Arch {
    /// Atlas A2 and A3.
    Dav2201,
    /// Ascend 950PR.
    Dav3510,
}

/// Target: spec name and architecture.
const TARGETS: [(Target, &str, Arch); 3] = [
    (Target::A2, "A2", Arch::Dav2201),
    (Target::A3, "A3", Arch::Dav2201),
    (Target::Ascend950PR, "950PR", Arch::Dav3510),
];

/// One architecture's facts; adding an architecture is adding a row here
/// (and its `pypto_rt::NpuArch` variant, and its row in the emulation's
/// architecture table, templates/include/pypto_emu/arch.h, which
/// `host_define` picks).
struct ArchRow {
    arch: Arch,
    /// The suffix of its symbols and directories.
    suffix: &'static str,
    /// The matching `pypto_rt::NpuArch` variant.
    rust_variant: &'static str,
    /// bisheng's `--npu-arch` value (CANN 8.5 and later).
    npu_arch_flag: &'static str,
    /// The pre-8.5 `--cce-aicore-arch=dav-<family>-vec|cube` family.
    core_family: &'static str,
    /// The macro that picks this architecture's row of the emulation's
    /// pypto_emu/arch.h when a kernel is built for it alone; `None` for
    /// the default row (A2/A3).
    host_define: Option<&'static str>,
    description: &'static str,
}

const ARCHES: [ArchRow; 2] = [
    ArchRow {
        arch: Arch::Dav2201,
        suffix: "dav2201",
        rust_variant: "Dav2201",
        npu_arch_flag: "dav-2201",
        core_family: "c220",
        host_define: None,
        description: "dav-2201 (Atlas A2/A3)",
    },
    ArchRow {
        arch: Arch::Dav3510,
        suffix: "dav3510",
        rust_variant: "Dav3510",
        npu_arch_flag: "dav-3510",
        core_family: "c310",
        host_define: Some("PYPTO_TARGET_950"),
        description: "dav-3510 (Ascend 950)",
    },
];

impl Target {
    /// Every target, in table order.
    pub const ALL: [Target; 3] = [Target::A2, Target::A3, Target::Ascend950PR];

    /// The spec names of every target, in table order.
    pub(crate) const SPEC_NAMES: [&'static str; 3] = [TARGETS[0].1, TARGETS[1].1, TARGETS[2].1];

    /// The spec name: `A2`, `A3` or `950PR`.
    pub fn spec_name(self) -> &'static str {
        TARGETS[self as usize].1
    }

    /// The architecture this target's kernels are compiled for.
    pub fn arch(self) -> Arch {
        TARGETS[self as usize].2
    }

    pub(crate) fn from_spec_name(name: &str) -> Option<Target> {
        TARGETS.iter().find(|t| t.1 == name).map(|t| t.0)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.spec_name())
    }
}

impl Arch {
    /// Every architecture, in table order.
    pub const ALL: [Arch; 2] = [ARCHES[0].arch, ARCHES[1].arch];

    fn row(self) -> &'static ArchRow {
        &ARCHES[self as usize]
    }

    /// The suffix of this architecture's symbols and directories.
    pub fn suffix(self) -> &'static str {
        self.row().suffix
    }

    /// The matching `pypto_rt::NpuArch` variant.
    pub fn rust_variant(self) -> &'static str {
        self.row().rust_variant
    }

    /// The `--npu-arch` value of CANN 8.5 and later.
    pub fn npu_arch_flag(self) -> &'static str {
        self.row().npu_arch_flag
    }

    /// The core family of `--cce-aicore-arch=dav-<family>-vec|cube` before 8.5.
    pub fn core_family(self) -> &'static str {
        self.row().core_family
    }

    /// The macro that picks this architecture's row of the emulation's
    /// arch.h, when it is not the default.
    pub fn host_define(self) -> Option<&'static str> {
        self.row().host_define
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.row().description)
    }
}

/// The architectures a kernel's targets need, each once.
pub fn arches(targets: &[Target]) -> Vec<Arch> {
    let mut out: Vec<Arch> = targets.iter().map(|t| t.arch()).collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_in_declaration_order() {
        for (i, r) in DTYPES.iter().enumerate() {
            assert_eq!(r.dtype as usize, i, "{}", r.spec);
            assert_eq!(DType::from_spec_name(r.spec), Some(r.dtype));
        }
        for (i, t) in TARGETS.iter().enumerate() {
            assert_eq!(t.0 as usize, i);
        }
        for (i, a) in ARCHES.iter().enumerate() {
            assert_eq!(a.arch as usize, i);
            assert_eq!(Arch::ALL[i], a.arch);
        }
    }
}
