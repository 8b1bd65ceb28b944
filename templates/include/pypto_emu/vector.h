// Vector unit instructions in their "count" form (the first `count`
// elements): arithmetic, scalar forms, unary maths, Duplicate and Cast.
// Enforced: Unified Buffer operands, 32-byte placement, counts within the
// operands, and the element types the hardware supports (a kernel using an
// unsupported type does not compile, as with the CANN compiler).
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "copy.h"
#include "types.h"

namespace pypto_emu {

// The element types each instruction takes are the picked row's
// (arch.h): `Target::arith<T>` and its neighbours.

// The type arithmetic is done in: float for the narrow floats.
template <typename T>
using compute_t = std::conditional_t<one_of<T, half, bfloat16_t>, float, T>;

// The element loops of the vector instructions, each out of line. An
// instruction runs inside the kernel's exception regions (the fault handler
// throws through them, -fnon-call-exceptions), and GCC vectorises no loop
// whose loads and stores may throw to a handler in the same function; in a
// function of their own, with nothing to clean up, they vectorise (behind
// a run-time overlap check that lets dst be a source). The results are the
// same: each element is its own operation, in the same type.
template <typename T, typename Op>
[[gnu::noinline]] void map_unary(T* d, const T* s, uint64_t n, Op op)
{
    for (uint64_t i = 0; i < n; ++i) {
        d[i] = static_cast<T>(op(static_cast<compute_t<T>>(s[i])));
    }
}

template <typename T, typename Op>
[[gnu::noinline]] void map_binary(T* d, const T* a, const T* b, uint64_t n, Op op)
{
    for (uint64_t i = 0; i < n; ++i) {
        d[i] = static_cast<T>(op(static_cast<compute_t<T>>(a[i]), static_cast<compute_t<T>>(b[i])));
    }
}

// map_binary with b one 32-byte block that every block of a re-reads; n a
// whole number of blocks.
template <typename T, typename Op>
[[gnu::noinline]] void map_binary_block(T* d, const T* a, const T* b, uint64_t n, Op op)
{
    constexpr uint64_t block = 32 / sizeof(T);
    for (uint64_t i = 0; i < n; i += block) {
        for (uint64_t j = 0; j < block; ++j) {
            d[i + j] = static_cast<T>(
                op(static_cast<compute_t<T>>(a[i + j]), static_cast<compute_t<T>>(b[j])));
        }
    }
}

template <typename T>
[[gnu::noinline]] void fill_elements(T* d, uint64_t n, T value)
{
    for (uint64_t i = 0; i < n; ++i) {
        d[i] = value;
    }
}

template <typename T>
void check_vector_operand(const AscendC::LocalTensor<T>& t, int32_t count, const char* what)
{
    poll(what);
    if (count < 0) {
        fail(what, ": count ", count, " is negative");
    }
    if (t.data() == nullptr) {
        fail(what, ": an operand LocalTensor was never allocated");
    }
    if (memory_of(t.position()) != Memory::UB) {
        fail(what, ": operands must be in the Unified Buffer (VECIN, VECOUT or VECCALC), not ",
             position_name(t.position()));
    }
    if (t.offset_bytes() % 32 != 0) {
        fail(what, ": an operand starts at Unified Buffer byte ", t.offset_bytes(),
             ", not on a 32-byte boundary");
    }
    if (static_cast<uint32_t>(count) > t.GetSize()) {
        fail(what, ": count ", count, " exceeds an operand's ", t.GetSize(), " elements");
    }
}

template <typename T, typename Op>
void binary(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& a,
            const AscendC::LocalTensor<T>& b, int32_t count, const char* what, Op op)
{
    check_vector_operand(dst, count, what);
    check_vector_operand(a, count, what);
    check_vector_operand(b, count, what);
    T* d = dst.data();
    const T* x = a.data();
    const T* y = b.data();
    uint64_t bytes = count > 0 ? static_cast<uint64_t>(count) * sizeof(T) : 0;
    access_read(what, "src0", a, 0, bytes);
    access_read(what, "src1", b, 0, bytes);
    access_write(dst, 0, bytes);
    model_vector_bytes(what, bytes, sizeof(T));
    if (timing_only()) {
        return;
    }
    map_binary(d, x, y, static_cast<uint64_t>(count), op);
}

template <typename T, typename Op>
void unary(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, int32_t count,
           const char* what, Op op)
{
    check_vector_operand(dst, count, what);
    check_vector_operand(src, count, what);
    T* d = dst.data();
    const T* s = src.data();
    uint64_t bytes = count > 0 ? static_cast<uint64_t>(count) * sizeof(T) : 0;
    access_read(what, "src", src, 0, bytes);
    access_write(dst, 0, bytes);
    model_vector_bytes(what, bytes, sizeof(T));
    if (timing_only()) {
        return;
    }
    map_unary(d, s, static_cast<uint64_t>(count), op);
}

} // namespace pypto_emu

#define PYPTO_REQUIRE_TYPE(trait, op, supported)                                                  \
    static_assert(pypto_emu::trait<T>, op ": element type not supported by the vector unit on "  \
                                          PYPTO_ARCH(TARGET_NAME) " (supported: " supported ")")

namespace AscendC {

template <typename T>
void Add(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
         const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Add");
    PYPTO_REQUIRE_TYPE(Target::arith, "Add", "int16_t, half, int32_t, float; Cast bfloat16_t to float first");
    pypto_emu::binary(dst, src0, src1, count, "Add", [](auto a, auto b) { return a + b; });
}

template <typename T>
void Sub(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
         const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Sub");
    PYPTO_REQUIRE_TYPE(Target::arith, "Sub", "int16_t, half, int32_t, float; Cast bfloat16_t to float first");
    pypto_emu::binary(dst, src0, src1, count, "Sub", [](auto a, auto b) { return a - b; });
}

template <typename T>
void Mul(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
         const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Mul");
    PYPTO_REQUIRE_TYPE(Target::arith, "Mul", "int16_t, half, int32_t, float; Cast bfloat16_t to float first");
    pypto_emu::binary(dst, src0, src1, count, "Mul", [](auto a, auto b) { return a * b; });
}

template <typename T>
void Div(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
         const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Div");
    PYPTO_REQUIRE_TYPE(Target::div, "Div", "half, float");
    pypto_emu::binary(dst, src0, src1, count, "Div", [](auto a, auto b) { return a / b; });
}

template <typename T>
void Max(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
         const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Max");
    PYPTO_REQUIRE_TYPE(Target::arith, "Max", "int16_t, half, int32_t, float");
    pypto_emu::binary(dst, src0, src1, count, "Max", [](auto a, auto b) { return a > b ? a : b; });
}

template <typename T>
void Min(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
         const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Min");
    PYPTO_REQUIRE_TYPE(Target::arith, "Min", "int16_t, half, int32_t, float");
    pypto_emu::binary(dst, src0, src1, count, "Min", [](auto a, auto b) { return a < b ? a : b; });
}

template <typename T>
void Adds(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
          const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Adds");
    PYPTO_REQUIRE_TYPE(Target::arith, "Adds", "int16_t, half, int32_t, float");
    auto s = static_cast<pypto_emu::compute_t<T>>(scalarValue);
    pypto_emu::unary(dst, src, count, "Adds", [s](auto a) { return a + s; });
}

template <typename T>
void Muls(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
          const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Muls");
    PYPTO_REQUIRE_TYPE(Target::arith, "Muls", "int16_t, half, int32_t, float");
    auto s = static_cast<pypto_emu::compute_t<T>>(scalarValue);
    pypto_emu::unary(dst, src, count, "Muls", [s](auto a) { return a * s; });
}

template <typename T>
void Maxs(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
          const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Maxs");
    PYPTO_REQUIRE_TYPE(Target::arith, "Maxs", "int16_t, half, int32_t, float");
    auto s = static_cast<pypto_emu::compute_t<T>>(scalarValue);
    pypto_emu::unary(dst, src, count, "Maxs", [s](auto a) { return a > s ? a : s; });
}

template <typename T>
void Mins(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
          const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Mins");
    PYPTO_REQUIRE_TYPE(Target::arith, "Mins", "int16_t, half, int32_t, float");
    auto s = static_cast<pypto_emu::compute_t<T>>(scalarValue);
    pypto_emu::unary(dst, src, count, "Mins", [s](auto a) { return a < s ? a : s; });
}

template <typename T>
void Relu(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Relu");
    PYPTO_REQUIRE_TYPE(Target::relu, "Relu", "half, int32_t, float");
    pypto_emu::unary(dst, src, count, "Relu", [](auto a) { return a > 0 ? a : decltype(a)(0); });
}

template <typename T>
void Exp(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Exp");
    PYPTO_REQUIRE_TYPE(Target::math, "Exp", "half, float");
    pypto_emu::unary(dst, src, count, "Exp", [](float a) { return std::exp(a); });
}

template <typename T>
void Ln(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Ln");
    PYPTO_REQUIRE_TYPE(Target::math, "Ln", "half, float");
    pypto_emu::unary(dst, src, count, "Ln", [](float a) { return std::log(a); });
}

template <typename T>
void Abs(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Abs");
    PYPTO_REQUIRE_TYPE(Target::math, "Abs", "half, float");
    pypto_emu::unary(dst, src, count, "Abs", [](float a) { return std::fabs(a); });
}

template <typename T>
void Sqrt(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Sqrt");
    PYPTO_REQUIRE_TYPE(Target::math, "Sqrt", "half, float");
    pypto_emu::unary(dst, src, count, "Sqrt", [](float a) { return std::sqrt(a); });
}

template <typename T>
void Rsqrt(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Rsqrt");
    PYPTO_REQUIRE_TYPE(Target::math, "Rsqrt", "half, float");
    pypto_emu::unary(dst, src, count, "Rsqrt", [](float a) { return 1.0f / std::sqrt(a); });
}

template <typename T>
void Reciprocal(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Reciprocal");
    PYPTO_REQUIRE_TYPE(Target::math, "Reciprocal", "half, float");
    pypto_emu::unary(dst, src, count, "Reciprocal", [](float a) { return 1.0f / a; });
}

template <typename T>
void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Duplicate");
    PYPTO_REQUIRE_TYPE(Target::duplicate, "Duplicate",
                       "int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float");
    pypto_emu::check_vector_operand(dst, count, "Duplicate");
    pypto_emu::access_write(dst, 0, count > 0 ? static_cast<uint64_t>(count) * sizeof(T) : 0);
    pypto_emu::model_vector_bytes("Duplicate", count > 0 ? static_cast<uint64_t>(count) * sizeof(T) : 0, sizeof(T));
    if (count > 0) {
        pypto_emu::fill_elements(dst.data(), static_cast<uint64_t>(count), static_cast<T>(scalarValue));
    }
}

enum class RoundMode { CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD, CAST_HYBRID };

} // namespace AscendC

namespace pypto_emu {

using AscendC::RoundMode;

// Rounds `x` to a 16-bit float type (half or bfloat16_t) with `mode`, by
// taking the nearest-even result and stepping one unit where the mode wants
// the other neighbour.
template <typename N>
N round_narrow(float x, RoundMode mode)
{
    N nearest(x);
    float back = static_cast<float>(nearest);
    if (std::isnan(x) || std::isinf(back) || back == x || mode == RoundMode::CAST_RINT ||
        mode == RoundMode::CAST_NONE) {
        return nearest;
    }
    auto step = [](N v, bool up) {
        // Moving away from zero is +1 on the magnitude bits; toward zero -1.
        float f = static_cast<float>(v);
        bool away = (f >= 0) == up;
        if (f == 0) {
            v.bits = static_cast<uint16_t>(up ? 0x0001 : 0x8001);
            return v;
        }
        v.bits = static_cast<uint16_t>(away ? v.bits + 1 : v.bits - 1);
        return v;
    };
    switch (mode) {
    case RoundMode::CAST_FLOOR:
        return back > x ? step(nearest, false) : nearest;
    case RoundMode::CAST_CEIL:
        return back < x ? step(nearest, true) : nearest;
    case RoundMode::CAST_TRUNC:
        return std::fabs(back) > std::fabs(x) ? step(nearest, x < 0) : nearest;
    case RoundMode::CAST_ODD:
        // Von Neumann rounding: an inexact result takes the neighbour whose
        // last mantissa bit is 1.
        return (nearest.bits & 1u) != 0 ? nearest : step(nearest, back < x);
    case RoundMode::CAST_ROUND: {
        // Ties go away from zero: only a tie can differ from nearest-even.
        N other = step(nearest, (back < x));
        float o = static_cast<float>(other);
        if (std::fabs(o - x) == std::fabs(back - x) && std::fabs(o) > std::fabs(back)) {
            return other;
        }
        return nearest;
    }
    default:
        fail("Cast: round mode ", static_cast<int>(mode), " is not emulated for this conversion");
    }
}

// A value (integral, or integral-valued) clamped to I's range.
template <typename I, typename V>
I saturate(V v)
{
    constexpr int bits = static_cast<int>(bits_of<I>);
    constexpr bool is_signed = is_int4<I> || std::is_signed_v<I>;
    const long double lo = is_signed ? -std::ldexp(1.0L, bits - 1) : 0.0L;
    const long double hi_excl = is_signed ? std::ldexp(1.0L, bits - 1) : std::ldexp(1.0L, bits);
    long double x = static_cast<long double>(v);
    if (x != x) {
        return I(0);
    }
    if (x < lo) {
        return I(static_cast<int64_t>(lo));
    }
    if (x >= hi_excl) {
        if constexpr (is_signed) {
            return I(static_cast<int64_t>(hi_excl - 1));
        } else {
            return static_cast<I>(static_cast<uint64_t>(hi_excl - 1));
        }
    }
    if constexpr (is_signed) {
        return I(static_cast<int64_t>(x));
    } else {
        return static_cast<I>(static_cast<uint64_t>(x));
    }
}

// Rounds `x` to an integer with `mode` (CAST_NONE and CAST_RINT: to nearest,
// ties to even; CAST_ROUND: ties away from zero) and saturates to I's range
// (int4b_t: -8..7). NaN becomes 0.
template <typename I>
I round_integer(double x, RoundMode mode)
{
    double r;
    switch (mode) {
    case RoundMode::CAST_FLOOR: r = std::floor(x); break;
    case RoundMode::CAST_CEIL: r = std::ceil(x); break;
    case RoundMode::CAST_TRUNC: r = std::trunc(x); break;
    case RoundMode::CAST_ROUND: r = std::round(x); break;
    default: r = std::nearbyint(x); break;
    }
    return saturate<I>(r);
}

// An integer rounded to float with `mode` (int32_t/int64_t -> float).
inline float int_to_float(int64_t v, RoundMode mode)
{
    float f = static_cast<float>(v); // to nearest, ties to even
    long double lv = static_cast<long double>(v);
    long double lf = static_cast<long double>(f);
    if (lf == lv || mode == RoundMode::CAST_NONE || mode == RoundMode::CAST_RINT) {
        return f;
    }
    float down = lf > lv ? std::nextafter(f, -INFINITY) : f;
    float up = lf < lv ? std::nextafter(f, INFINITY) : f;
    switch (mode) {
    case RoundMode::CAST_FLOOR: return down;
    case RoundMode::CAST_CEIL: return up;
    case RoundMode::CAST_TRUNC: return v > 0 ? down : up;
    default: { // CAST_ROUND: nearest, ties away from zero
        long double dd = lv - static_cast<long double>(down);
        long double du = static_cast<long double>(up) - lv;
        if (dd != du) {
            return dd < du ? down : up;
        }
        return v > 0 ? up : down;
    }
    }
}

// A float rounded to an integral float value (float -> float).
inline float round_float(float x, RoundMode mode)
{
    switch (mode) {
    case RoundMode::CAST_FLOOR: return std::floor(x);
    case RoundMode::CAST_CEIL: return std::ceil(x);
    case RoundMode::CAST_TRUNC: return std::trunc(x);
    case RoundMode::CAST_ROUND: return std::round(x);
    default: return std::nearbyint(x);
    }
}

// The DEQSCALE register's half scale (SetDeqScale(half)), per block.
struct DeqScale {
    uint64_t launch = ~0ull;
    uint32_t block_idx = ~0u;
    bool set = false;
    float scale = 1.0f;
};

inline DeqScale& deq_scale()
{
    static thread_local DeqScale d;
    if (d.launch != block.launch_id || d.block_idx != block.idx) {
        d = DeqScale{};
        d.launch = block.launch_id;
        d.block_idx = block.idx;
    }
    return d;
}

// The Cast conversion table of Atlas A2/A3: for dst type T and src type U,
// a bit per accepted RoundMode (0: no such conversion).
constexpr uint32_t mode_bit(RoundMode m) { return 1u << static_cast<uint32_t>(m); }
constexpr uint32_t cast_none = mode_bit(RoundMode::CAST_NONE);
constexpr uint32_t cast_five = mode_bit(RoundMode::CAST_RINT) | mode_bit(RoundMode::CAST_FLOOR) |
                               mode_bit(RoundMode::CAST_CEIL) | mode_bit(RoundMode::CAST_ROUND) |
                               mode_bit(RoundMode::CAST_TRUNC);
constexpr uint32_t cast_six = cast_five | cast_none;
constexpr uint32_t cast_any = 0xffu; // int32_t -> half: the mode has no effect

template <typename T, typename U>
constexpr uint32_t cast_modes()
{
    using std::is_same_v;
    if constexpr (is_same_v<U, int4b_t> || is_same_v<U, int8_t> || is_same_v<U, uint8_t>) {
        return is_same_v<T, half> ? cast_none : 0;
    } else if constexpr (is_same_v<U, int16_t>) {
        return is_same_v<T, half> ? cast_six : is_same_v<T, float> ? cast_none : 0;
    } else if constexpr (is_same_v<U, half>) {
        return one_of<T, int4b_t, int8_t, uint8_t> ? cast_six
               : one_of<T, int16_t, int32_t>      ? cast_five
               : is_same_v<T, float>              ? cast_none
                                                  : 0;
    } else if constexpr (is_same_v<U, bfloat16_t>) {
        return is_same_v<T, int32_t> ? cast_five : is_same_v<T, float> ? cast_none : 0;
    } else if constexpr (is_same_v<U, int32_t>) {
        return one_of<T, int16_t, int64_t> ? cast_none
               : is_same_v<T, half>        ? cast_any
               : is_same_v<T, float>       ? cast_six
                                           : 0;
    } else if constexpr (is_same_v<U, float>) {
        return one_of<T, int16_t, bfloat16_t, int32_t, float, int64_t> ? cast_five
               : is_same_v<T, half> ? cast_six | mode_bit(RoundMode::CAST_ODD)
                                    : 0;
    } else if constexpr (is_same_v<U, int64_t>) {
        return is_same_v<T, int32_t> ? cast_none : is_same_v<T, float> ? cast_five : 0;
    } else {
        return 0;
    }
}

template <typename T>
constexpr const char* type_name()
{
    if constexpr (std::is_same_v<T, int4b_t>) return "int4b_t";
    else if constexpr (std::is_same_v<T, int8_t>) return "int8_t";
    else if constexpr (std::is_same_v<T, uint8_t>) return "uint8_t";
    else if constexpr (std::is_same_v<T, int16_t>) return "int16_t";
    else if constexpr (std::is_same_v<T, uint16_t>) return "uint16_t";
    else if constexpr (std::is_same_v<T, int32_t>) return "int32_t";
    else if constexpr (std::is_same_v<T, uint32_t>) return "uint32_t";
    else if constexpr (std::is_same_v<T, int64_t>) return "int64_t";
    else if constexpr (std::is_same_v<T, half>) return "half";
    else if constexpr (std::is_same_v<T, bfloat16_t>) return "bfloat16_t";
    else if constexpr (std::is_same_v<T, float>) return "float";
    else return "this type";
}

inline const char* round_mode_name(RoundMode m)
{
    static const char* names[] = {"CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL",
                                  "CAST_ROUND", "CAST_TRUNC", "CAST_ODD", "CAST_HYBRID"};
    int i = static_cast<int>(m);
    return i >= 0 && i < 8 ? names[i] : "an unknown round mode";
}

// The round mode is one the conversion takes, and int32_t -> half has a
// scale from SetDeqScale.
template <typename T, typename U>
void check_cast_mode(RoundMode mode, const char* what)
{
    constexpr uint32_t allowed = cast_modes<T, U>();
    uint32_t m = static_cast<uint32_t>(mode);
    if (m > 7 || (allowed & (1u << m)) == 0) {
        std::string list;
        for (uint32_t i = 0; i < 8; ++i) {
            if ((allowed & (1u << i)) != 0) {
                list += list.empty() ? "" : ", ";
                list += round_mode_name(static_cast<RoundMode>(i));
            }
        }
        fail(what, ": ", type_name<U>(), " -> ", type_name<T>(), " takes ", list, ", not ", round_mode_name(mode),
             " (" PYPTO_ARCH(TARGET_NAME) ")");
    }
    if constexpr (std::is_same_v<T, half> && std::is_same_v<U, int32_t>) {
        if (!deq_scale().set) {
            fail(what, ": int32_t -> half scales by the DEQSCALE register; call SetDeqScale(half) first");
        }
    }
}

// One element converted by Cast.
template <typename T, typename U>
T convert(U v, RoundMode mode)
{
    constexpr bool int_src = is_int4<U> || std::is_integral_v<U>;
    constexpr bool int_dst = is_int4<T> || std::is_integral_v<T>;
    if constexpr (std::is_same_v<T, half> && std::is_same_v<U, int32_t>) {
        double scaled = static_cast<double>(v) * static_cast<double>(deq_scale().scale);
        return half(static_cast<float>(scaled));
    } else if constexpr (int_src && int_dst) {
        return saturate<T>(static_cast<int64_t>(v));
    } else if constexpr (int_dst) {
        return round_integer<T>(static_cast<double>(static_cast<float>(v)), mode);
    } else if constexpr (int_src && std::is_same_v<T, float>) {
        return int_to_float(static_cast<int64_t>(v), mode);
    } else if constexpr (int_src) { // to half: every source value is exact in float
        return round_narrow<T>(static_cast<float>(static_cast<int64_t>(v)), mode);
    } else if constexpr (std::is_same_v<T, float> && std::is_same_v<U, float>) {
        return round_float(v, mode);
    } else if constexpr (std::is_same_v<T, float>) {
        return static_cast<float>(v);
    } else {
        return round_narrow<T>(static_cast<float>(v), mode);
    }
}

template <typename T>
T load_elem(const T* base, uint64_t i)
{
    if constexpr (is_int4<T>) {
        return load_int4(base, i);
    } else {
        return base[i];
    }
}

template <typename T>
void store_elem(T* base, uint64_t i, T v)
{
    if constexpr (is_int4<T>) {
        store_int4(base, i, v);
    } else {
        base[i] = v;
    }
}

} // namespace pypto_emu

namespace AscendC {

// The DEQSCALE register for int32_t -> half Cast: dst = src * scale.
inline void SetDeqScale(half scale, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "SetDeqScale");
    pypto_emu::DeqScale& d = pypto_emu::deq_scale();
    d.scale = static_cast<float>(scale);
    d.set = true;
}

#define PYPTO_CAST_TYPES_OK                                                                                        \
    static_assert(pypto_emu::cast_modes<T, U>() != 0,                                                              \
                  "Cast: no such conversion on " PYPTO_ARCH(TARGET_NAME) " (supported: int4b_t/int8_t/uint8_t/int16_t " \
                  "-> half, int16_t -> float, half -> int4b_t/int8_t/uint8_t/int16_t/int32_t/float, bfloat16_t -> " \
                  "int32_t/float, int32_t -> int16_t/half/float/int64_t, float -> int16_t/half/bfloat16_t/"         \
                  "int32_t/float/int64_t, int64_t -> int32_t/float); other pairs go through a supported type")

// dst = src converted, the first `count` elements, following the Atlas
// A2/A3 conversion table and its round modes. With an int4b_t operand the
// count must be even. All elements are read before any is written.
template <typename T, typename U>
void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode, const uint32_t count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Cast");
    PYPTO_CAST_TYPES_OK;
    const char* what = "Cast";
    if (count > static_cast<uint32_t>(std::numeric_limits<int32_t>::max())) {
        pypto_emu::fail(what, ": count ", count, " is too large");
    }
    pypto_emu::check_vector_operand(dst, static_cast<int32_t>(count), what);
    pypto_emu::check_vector_operand(src, static_cast<int32_t>(count), what);
    pypto_emu::check_cast_mode<T, U>(roundMode, what);
    if constexpr (pypto_emu::is_int4<T> || pypto_emu::is_int4<U>) {
        if (count % 2 != 0) {
            pypto_emu::fail(what, ": count ", count, " is odd; with an int4b_t operand it must be even");
        }
    }
    pypto_emu::model_vector_bytes(what, std::max(pypto_emu::bytes_for<U>(count), pypto_emu::bytes_for<T>(count)),
                                  static_cast<uint32_t>(std::max(sizeof(T), sizeof(U))));
    std::vector<U> values(count);
    pypto_emu::access_read(what, "src", src, 0, pypto_emu::bytes_for<U>(count));
    pypto_emu::access_write(dst, 0, pypto_emu::bytes_for<T>(count));
    for (uint32_t i = 0; i < count; ++i) {
        values[i] = pypto_emu::load_elem(src.data(), i);
    }
    for (uint32_t i = 0; i < count; ++i) {
        pypto_emu::store_elem(dst.data(), i, pypto_emu::convert<T, U>(values[i], roundMode));
    }
}

} // namespace AscendC
