//! Element types: the Rust type of each spec dtype.

use std::fmt::Debug;

mod sealed {
    pub trait Sealed {}
}

/// A Rust element type that a spec dtype maps to. Sealed: the set is the
/// spec's dtypes, each with the C++ type the kernels use for it.
pub trait DType:
    sealed::Sealed + Copy + Debug + Default + PartialEq + Send + Sync + 'static
{
    /// The spec (PyPTO) name, e.g. `DT_FP32`.
    const SPEC_NAME: &'static str;
    /// The Ascend C type, e.g. `float`: the one pypto-build's dtype table
    /// gives (tests/tables.rs checks that they agree).
    const CPP_TYPE: &'static str;

    /// The value's bytes, little-endian, zero-extended to 8 bytes: how a
    /// scalar argument travels in a kernel's tiling data.
    fn scalar_bits(self) -> u64;

    /// What a launch runs over a tensor after it: finds the first element
    /// whose bytes are not a value of this type, with its first byte. Only
    /// `bool` has invalid bit patterns; every other dtype accepts any bits
    /// and carries `None`, so a launch makes no call for it. The all-zero
    /// pattern is `Default::default()` for every dtype, which lets zeroed
    /// memory stand for `zeros`.
    #[doc(hidden)]
    const INVALID_CHECK: InvalidCheck = None;
}

/// A dtype's check for bytes that are no value of it (`bool`'s), run on a
/// tensor after a host launch; `None` for the dtypes any bits are a value
/// of, so a launch makes no call for them.
#[doc(hidden)]
pub type InvalidCheck = Option<fn(&[u8]) -> Option<(usize, u8)>>;

macro_rules! dtype {
    ($t:ty, $spec:literal, $cpp:literal, |$v:ident| $bits:expr) => {
        impl sealed::Sealed for $t {}
        impl DType for $t {
            const SPEC_NAME: &'static str = $spec;
            const CPP_TYPE: &'static str = $cpp;
            fn scalar_bits(self) -> u64 {
                let $v = self;
                $bits
            }
        }
    };
}

/// An FP8 E4M3 value (Ascend 950PR only), as its raw bits.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Fp8E4M3(pub u8);

/// An FP8 E5M2 value (Ascend 950PR only), as its raw bits.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Fp8E5M2(pub u8);

dtype!(f32, "DT_FP32", "float", |v| u64::from(v.to_bits()));
dtype!(half::f16, "DT_FP16", "half", |v| u64::from(v.to_bits()));
dtype!(half::bf16, "DT_BF16", "bfloat16_t", |v| u64::from(
    v.to_bits()
));
dtype!(i8, "DT_INT8", "int8_t", |v| u64::from(v as u8));
dtype!(i16, "DT_INT16", "int16_t", |v| u64::from(v as u16));
dtype!(i32, "DT_INT32", "int32_t", |v| u64::from(v as u32));
dtype!(i64, "DT_INT64", "int64_t", |v| v as u64);
dtype!(u8, "DT_UINT8", "uint8_t", |v| u64::from(v));
dtype!(u16, "DT_UINT16", "uint16_t", |v| u64::from(v));
dtype!(u32, "DT_UINT32", "uint32_t", |v| u64::from(v));
dtype!(u64, "DT_UINT64", "uint64_t", |v| v);
impl sealed::Sealed for bool {}
impl DType for bool {
    const SPEC_NAME: &'static str = "DT_BOOL";
    const CPP_TYPE: &'static str = "bool";
    fn scalar_bits(self) -> u64 {
        u64::from(self)
    }
    const INVALID_CHECK: InvalidCheck = Some(first_invalid_bool);
}

/// The first element of `bytes` that is no value of `T`, with its first
/// byte ([`DType::INVALID_CHECK`] run, when `T` has one).
pub(crate) fn first_invalid<T: DType>(bytes: &[u8]) -> Option<(usize, u8)> {
    T::INVALID_CHECK.and_then(|check| check(bytes))
}

/// `bool`'s [`DType::INVALID_CHECK`]: a byte other than 0 or 1.
fn first_invalid_bool(bytes: &[u8]) -> Option<(usize, u8)> {
    bytes.iter().position(|&b| b > 1).map(|i| (i, bytes[i]))
}
dtype!(Fp8E4M3, "DT_FP8E4M3", "fp8_e4m3fn_t", |v| u64::from(v.0));
dtype!(Fp8E5M2, "DT_FP8E5M2", "fp8_e5m2_t", |v| u64::from(v.0));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_travel_as_their_low_bytes() {
        assert_eq!(1.0f32.scalar_bits(), 0x3f80_0000);
        assert_eq!((-1i8).scalar_bits(), 0xff);
        assert_eq!((-1i64).scalar_bits(), u64::MAX);
        assert_eq!(half::f16::ONE.scalar_bits(), 0x3c00);
        assert_eq!(true.scalar_bits(), 1);
    }

    fn zero_is_default<T: DType>() {
        let zero = vec![0u8; std::mem::size_of::<T>()];
        // SAFETY: every dtype accepts all-zero bits (checked for bool by
        // INVALID_CHECK just below).
        assert_eq!(first_invalid::<T>(&zero), None);
        let value: T = unsafe { std::ptr::read_unaligned(zero.as_ptr().cast()) };
        assert_eq!(value, T::default(), "{}", T::SPEC_NAME);
    }

    #[test]
    fn all_zero_bits_are_the_default() {
        zero_is_default::<f32>();
        zero_is_default::<half::f16>();
        zero_is_default::<half::bf16>();
        zero_is_default::<i8>();
        zero_is_default::<i16>();
        zero_is_default::<i32>();
        zero_is_default::<i64>();
        zero_is_default::<u8>();
        zero_is_default::<u16>();
        zero_is_default::<u32>();
        zero_is_default::<u64>();
        zero_is_default::<bool>();
        zero_is_default::<Fp8E4M3>();
        zero_is_default::<Fp8E5M2>();
        let check = bool::INVALID_CHECK.expect("bool has invalid bytes");
        assert_eq!(check(&[0, 1, 2, 255]), Some((2, 2)));
        assert!(f32::INVALID_CHECK.is_none());
    }
}
