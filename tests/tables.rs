//! Facts both crates state, checked to agree: each dtype's spec name, C++
//! type and size in pypto-build's table (what generated code and kernels
//! use) and in pypto-rt's `DType` impls (what tensors hold). A dtype added
//! to one crate and not the other, or spelt differently, fails here; so do
//! the limits and the architectures.

use pypto_build::model::DType as BuildDType;
use pypto_rt::{DType, Fp8E4M3, Fp8E5M2, bf16, f16};

/// The pypto-build row of `T`, checked against `T`'s own constants.
fn agrees<T: DType>() -> &'static str {
    let row = BuildDType::ALL
        .iter()
        .find(|d| d.spec_name() == T::SPEC_NAME)
        .unwrap_or_else(|| panic!("pypto-build has no dtype {}", T::SPEC_NAME));
    assert_eq!(row.cpp_type(), T::CPP_TYPE, "{}", T::SPEC_NAME);
    assert_eq!(
        row.size_bytes(),
        std::mem::size_of::<T>(),
        "{}",
        T::SPEC_NAME
    );
    T::SPEC_NAME
}

#[test]
fn every_dtype_is_one_fact_in_both_crates() {
    let mut names = vec![
        agrees::<f32>(),
        agrees::<f16>(),
        agrees::<bf16>(),
        agrees::<i8>(),
        agrees::<i16>(),
        agrees::<i32>(),
        agrees::<i64>(),
        agrees::<u8>(),
        agrees::<u16>(),
        agrees::<u32>(),
        agrees::<u64>(),
        agrees::<bool>(),
        agrees::<Fp8E4M3>(),
        agrees::<Fp8E5M2>(),
    ];
    names.sort_unstable();
    let mut all: Vec<&str> = BuildDType::ALL.iter().map(|d| d.spec_name()).collect();
    all.sort_unstable();
    assert_eq!(names, all, "every pypto-build dtype has a pypto-rt type");
}

/// The limits a spec is checked against at build time are the runtime's:
/// the highest rank a tensor may have, and the most blocks one launch may
/// ask an NPU for.
#[test]
fn the_limits_are_one_fact_in_both_crates() {
    assert_eq!(pypto_build::model::MAX_RANK, pypto_rt::MAX_RANK);
    assert_eq!(
        pypto_build::model::MAX_SPEC_BLOCKS,
        u64::from(pypto_rt::MAX_LAUNCH_BLOCKS)
    );
}

/// Every architecture pypto-build compiles for names a `pypto_rt::NpuArch`
/// variant, and every variant is compiled for: a new architecture is a row
/// in pypto-build's table and a variant here, or this fails.
#[test]
fn every_architecture_is_one_fact_in_both_crates() {
    use pypto_build::model::Arch;
    use pypto_rt::NpuArch;
    // Exhaustive: a new variant does not compile until it is listed.
    let name = |a: NpuArch| match a {
        NpuArch::Dav2201 => "Dav2201",
        NpuArch::Dav3510 => "Dav3510",
    };
    let runtime = [NpuArch::Dav2201, NpuArch::Dav3510];
    let mut built: Vec<&str> = Arch::ALL.iter().map(|a| a.rust_variant()).collect();
    let mut known: Vec<&str> = runtime.iter().map(|&a| name(a)).collect();
    built.sort_unstable();
    known.sort_unstable();
    assert_eq!(built, known);
    for a in runtime {
        assert_eq!(format!("{a:?}"), name(a));
    }
}
