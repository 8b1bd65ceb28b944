// The NPU's narrow floating-point types, stored as their bits. Arithmetic
// converts to float (exactly) and back (round to nearest even), which is
// what one correctly rounded hardware operation computes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace pypto_emu {

inline uint32_t float_bits(float f)
{
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    return x;
}

inline float bits_float(uint32_t x)
{
    float f;
    std::memcpy(&f, &x, sizeof f);
    return f;
}

inline uint16_t float_to_half_bits(float f)
{
    uint32_t x = float_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exponent = (x >> 23) & 0xffu;
    uint32_t mantissa = x & 0x7fffffu;
    if (exponent == 0xffu) { // infinity or NaN
        return static_cast<uint16_t>(sign | 0x7c00u | (mantissa != 0 ? 0x200u : 0u));
    }
    int32_t e = static_cast<int32_t>(exponent) - 127 + 15;
    if (e >= 0x1f) {
        return static_cast<uint16_t>(sign | 0x7c00u); // overflow to infinity
    }
    if (e <= 0) { // a half subnormal, or zero
        if (e < -10) {
            return static_cast<uint16_t>(sign);
        }
        mantissa |= 0x800000u;
        uint32_t shift = static_cast<uint32_t>(14 - e);
        uint32_t m = mantissa >> shift;
        uint32_t rest = mantissa & ((1u << shift) - 1u);
        uint32_t halfway = 1u << (shift - 1u);
        if (rest > halfway || (rest == halfway && (m & 1u) != 0)) {
            ++m;
        }
        return static_cast<uint16_t>(sign | m);
    }
    uint32_t out = sign | (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
    uint32_t rest = mantissa & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (out & 1u) != 0)) {
        ++out; // a carry into the exponent is the correct rounding, up to infinity
    }
    return static_cast<uint16_t>(out);
}

inline float half_bits_to_float(uint16_t h)
{
    uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    if (exponent == 0x1fu) {
        return bits_float(sign | 0x7f800000u | (mantissa << 13));
    }
    if (exponent == 0) {
        float magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f); // m * 2^-24
        return sign != 0 ? -magnitude : magnitude;
    }
    return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

inline uint16_t float_to_bf16_bits(float f)
{
    uint32_t x = float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return static_cast<uint16_t>((x >> 16) | 0x40u); // quiet NaN
    }
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
}

inline float bf16_bits_to_float(uint16_t b)
{
    return bits_float(static_cast<uint32_t>(b) << 16);
}

} // namespace pypto_emu

// IEEE binary16, as Ascend C's `half`.
struct half {
    uint16_t bits = 0;

    half() = default;
    half(float f) : bits(pypto_emu::float_to_half_bits(f)) {}
    half(double d) : half(static_cast<float>(d)) {}
    template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
    half(I i) : half(static_cast<float>(i)) {}
    operator float() const { return pypto_emu::half_bits_to_float(bits); }
};

// bfloat16, as Ascend C's `bfloat16_t`.
struct bfloat16_t {
    uint16_t bits = 0;

    bfloat16_t() = default;
    bfloat16_t(float f) : bits(pypto_emu::float_to_bf16_bits(f)) {}
    bfloat16_t(double d) : bfloat16_t(static_cast<float>(d)) {}
    template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
    bfloat16_t(I i) : bfloat16_t(static_cast<float>(i)) {}
    operator float() const { return pypto_emu::bf16_bits_to_float(bits); }
};

// The Ascend 950's FP8 types, as bits only: the emulation moves them but
// does no arithmetic on them.
struct fp8_e4m3fn_t {
    uint8_t bits = 0;
};
struct fp8_e5m2_t {
    uint8_t bits = 0;
};

// A signed 4-bit integer, as Ascend C's `int4b_t`. As a scalar: a value in
// [-8, 7] kept in a byte; converting from a wider integer keeps the low 4
// bits (two's complement), as packing does. In tensors two share a byte:
// element 2k in the low nibble, 2k + 1 in the high nibble (a host
// convention; the documentation does not say which nibble comes first).
struct int4b_t {
    int8_t value = 0;

    int4b_t() = default;
    template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
    int4b_t(I i) : value(static_cast<int8_t>(static_cast<int8_t>((static_cast<uint32_t>(i) & 0xfu) << 4) >> 4)) {}
    operator int32_t() const { return value; }
};
// Vendor code names it `AscendC::int4b_t` too (even in an `if constexpr`
// branch not taken, where the name must still resolve).
namespace AscendC {
using ::int4b_t;
}

namespace pypto_emu {

// Two int4b_t in one byte: the first in the low nibble.
inline uint8_t pack_int4(int4b_t lo, int4b_t hi)
{
    return static_cast<uint8_t>((static_cast<uint8_t>(lo.value) & 0xfu) |
                                ((static_cast<uint8_t>(hi.value) & 0xfu) << 4));
}
inline int4b_t unpack_int4(uint8_t byte, int which) { return int4b_t(which == 0 ? byte & 0xf : byte >> 4); }

// Element sizes in bits, so that int4b_t tensors (4 bits an element) and
// byte-sized types share one set of size rules.
template <typename T>
constexpr bool is_int4 = std::is_same_v<T, int4b_t>;
template <typename T>
constexpr uint64_t bits_of = is_int4<T> ? 4 : sizeof(T) * 8;
// Bytes that n elements occupy (a trailing half byte counts as a byte).
template <typename T>
constexpr uint64_t bytes_for(uint64_t n)
{
    return (n * bits_of<T> + 7) / 8;
}
// Whole elements in `bytes` bytes.
template <typename T>
constexpr uint64_t elems_in(uint64_t bytes)
{
    return bytes * 8 / bits_of<T>;
}

inline int4b_t load_int4(const void* base, uint64_t i)
{
    return unpack_int4(static_cast<const uint8_t*>(base)[i / 2], static_cast<int>(i % 2));
}

inline void store_int4(void* base, uint64_t i, int4b_t v)
{
    uint8_t& byte = static_cast<uint8_t*>(base)[i / 2];
    uint8_t nibble = static_cast<uint8_t>(v.value) & 0xfu;
    byte = static_cast<uint8_t>(i % 2 == 0 ? (byte & 0xf0u) | nibble : (byte & 0x0fu) | (nibble << 4));
}

// An int4b_t element of a tensor, by reference (operator() of an int4b_t
// LocalTensor): reads and writes its nibble.
class Int4Ref {
public:
    Int4Ref(void* base, uint64_t index) : base_(base), index_(index) {}
    operator int4b_t() const { return load_int4(base_, index_); }
    operator int32_t() const { return load_int4(base_, index_).value; }
    const Int4Ref& operator=(int4b_t v) const
    {
        store_int4(base_, index_, v);
        return *this;
    }
    const Int4Ref& operator=(const Int4Ref& other) const { return *this = static_cast<int4b_t>(other); }

private:
    void* base_;
    uint64_t index_;
};

} // namespace pypto_emu

static_assert(sizeof(half) == 2 && sizeof(bfloat16_t) == 2, "narrow floats are 2 bytes");

// What a brought kernel's generated host shim checks of its entry
// (pypto-build, codegen/ascendc.rs) before calling it: the entry's
// parameter count and types against the spec's params, so that a spec
// scalar never reaches the kernel through an implicit conversion (a
// DT_INT64 size into a uint16_t, a DT_FP32 into a uint32_t).
namespace pypto_emu {

template <typename F>
struct EntryParams;
template <typename R, typename... A>
struct EntryParams<R(A...)> {
    static constexpr std::size_t count = sizeof...(A);
};
template <typename R, typename... A>
struct EntryParams<R(A...) noexcept> : EntryParams<R(A...)> {};

template <std::size_t I, typename... A>
struct NthParam {
    using type = void; // past the last parameter
};
template <typename H, typename... T>
struct NthParam<0, H, T...> {
    using type = H;
};
template <std::size_t I, typename H, typename... T>
struct NthParam<I, H, T...> : NthParam<I - 1, T...> {};

template <typename F, std::size_t I>
struct EntryParam;
template <typename R, typename... A, std::size_t I>
struct EntryParam<R(A...), I> : NthParam<I, A...> {};
template <typename R, typename... A, std::size_t I>
struct EntryParam<R(A...) noexcept, I> : NthParam<I, A...> {};

// The entry's parameter count, and its I-th parameter's type (void past the last).
template <typename F>
constexpr std::size_t entry_arity() { return EntryParams<F>::count; }
template <typename F, std::size_t I>
using entry_param_t = typename EntryParam<F, I>::type;

// A spec scalar of C++ type S may be passed to a parameter of type P: the
// same type, or integers of one size and signedness (long and long long,
// int8_t and a signed char): the bits arrive unchanged.
template <typename S, typename P>
constexpr bool entry_scalar_ok()
{
    if constexpr (std::is_same<S, P>::value) {
        return true;
    } else if constexpr (std::is_integral<S>::value && std::is_integral<P>::value &&
                         !std::is_same<S, bool>::value && !std::is_same<P, bool>::value) {
        return sizeof(S) == sizeof(P) && std::is_signed<S>::value == std::is_signed<P>::value;
    } else {
        return false;
    }
}

// A tensor, passed as GM_ADDR, may go to a pointer parameter GM_ADDR converts to.
template <typename P>
constexpr bool entry_gm_ok()
{
    return std::is_pointer<P>::value && std::is_convertible<uint8_t*, P>::value;
}

// The index of T among the types a rejection names (pypto-build keeps the
// same list: ENTRY_TYPE_NAMES in codegen/ascendc.rs), the first that is T;
// -1 for any other type.
template <typename T>
constexpr int entry_type_index()
{
    using U = uint8_t*;
    return std::is_same<T, bool>::value                 ? 0
           : std::is_same<T, int8_t>::value             ? 1
           : std::is_same<T, uint8_t>::value            ? 2
           : std::is_same<T, int16_t>::value            ? 3
           : std::is_same<T, uint16_t>::value           ? 4
           : std::is_same<T, int32_t>::value            ? 5
           : std::is_same<T, uint32_t>::value           ? 6
           : std::is_same<T, int64_t>::value            ? 7
           : std::is_same<T, uint64_t>::value           ? 8
           : std::is_same<T, float>::value              ? 9
           : std::is_same<T, half>::value               ? 10
           : std::is_same<T, bfloat16_t>::value         ? 11
           : std::is_same<T, fp8_e4m3fn_t>::value       ? 12
           : std::is_same<T, fp8_e5m2_t>::value         ? 13
           : std::is_same<T, U>::value                  ? 14
           : std::is_same<T, char>::value               ? 15
           : std::is_same<T, long>::value               ? 16
           : std::is_same<T, unsigned long>::value      ? 17
           : std::is_same<T, long long>::value          ? 18
           : std::is_same<T, unsigned long long>::value ? 19
           : std::is_same<T, double>::value             ? 20
           : std::is_pointer<T>::value                  ? 21
           : std::is_reference<T>::value                ? 22
                                                        : -1;
}

// Calls the entry when its parameters passed the checks; otherwise only
// the failed check is reported (no second error from the call itself).
template <bool Ok>
struct EntryCall {
    template <typename F, typename... A>
    static void call(F* entry, A... args)
    {
        entry(args...);
    }
};
template <>
struct EntryCall<false> {
    template <typename F, typename... A>
    static void call(F*, A...)
    {
    }
};

} // namespace pypto_emu
