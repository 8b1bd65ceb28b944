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

template <typename T, typename... List>
constexpr bool one_of = (std::is_same_v<T, List> || ...);

#if defined(PYPTO_TARGET_950)
#define PYPTO_VECTOR_TARGET "Ascend 950"
template <typename T>
constexpr bool arith_type = one_of<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>;
template <typename T>
constexpr bool div_type = one_of<T, int16_t, uint16_t, half, int32_t, uint32_t, float>;
template <typename T>
constexpr bool relu_type = one_of<T, half, int32_t, float>;
template <typename T>
constexpr bool math_type = one_of<T, half, float>;
template <typename T>
constexpr bool duplicate_type =
    one_of<T, bool, int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>;
#else
#define PYPTO_VECTOR_TARGET "Atlas A2/A3"
template <typename T>
constexpr bool arith_type = one_of<T, int16_t, half, int32_t, float>;
template <typename T>
constexpr bool div_type = one_of<T, half, float>;
template <typename T>
constexpr bool relu_type = one_of<T, half, int32_t, float>;
template <typename T>
constexpr bool math_type = one_of<T, half, float>;
template <typename T>
constexpr bool duplicate_type = one_of<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>;
#endif

// The type arithmetic is done in: float for the narrow floats.
template <typename T>
using compute_t = std::conditional_t<one_of<T, half, bfloat16_t>, float, T>;

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
    for (int32_t i = 0; i < count; ++i) {
        d[i] = static_cast<T>(op(static_cast<compute_t<T>>(x[i]), static_cast<compute_t<T>>(y[i])));
    }
}

template <typename T, typename Op>
void unary(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, int32_t count,
           const char* what, Op op)
{
    check_vector_operand(dst, count, what);
    check_vector_operand(src, count, what);
    T* d = dst.data();
    const T* s = src.data();
    for (int32_t i = 0; i < count; ++i) {
        d[i] = static_cast<T>(op(static_cast<compute_t<T>>(s[i])));
    }
}

} // namespace pypto_emu

#define PYPTO_REQUIRE_TYPE(trait, op, supported)                                                  \
    static_assert(pypto_emu::trait<T>, op ": element type not supported by the vector unit on "  \
                                          PYPTO_VECTOR_TARGET " (supported: " supported ")")

namespace AscendC {

template <typename T>
void Add(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
         const int32_t& count)
{
    PYPTO_REQUIRE_TYPE(arith_type, "Add", "int16_t, half, int32_t, float; Cast bfloat16_t to float first");
    pypto_emu::binary(dst, src0, src1, count, "Add", [](auto a, auto b) { return a + b; });
}

template <typename T>
void Sub(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
         const int32_t& count)
{
    PYPTO_REQUIRE_TYPE(arith_type, "Sub", "int16_t, half, int32_t, float; Cast bfloat16_t to float first");
    pypto_emu::binary(dst, src0, src1, count, "Sub", [](auto a, auto b) { return a - b; });
}

template <typename T>
void Mul(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
         const int32_t& count)
{
    PYPTO_REQUIRE_TYPE(arith_type, "Mul", "int16_t, half, int32_t, float; Cast bfloat16_t to float first");
    pypto_emu::binary(dst, src0, src1, count, "Mul", [](auto a, auto b) { return a * b; });
}

template <typename T>
void Div(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
         const int32_t& count)
{
    PYPTO_REQUIRE_TYPE(div_type, "Div", "half, float");
    pypto_emu::binary(dst, src0, src1, count, "Div", [](auto a, auto b) { return a / b; });
}

template <typename T>
void Max(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
         const int32_t& count)
{
    PYPTO_REQUIRE_TYPE(arith_type, "Max", "int16_t, half, int32_t, float");
    pypto_emu::binary(dst, src0, src1, count, "Max", [](auto a, auto b) { return a > b ? a : b; });
}

template <typename T>
void Min(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
         const int32_t& count)
{
    PYPTO_REQUIRE_TYPE(arith_type, "Min", "int16_t, half, int32_t, float");
    pypto_emu::binary(dst, src0, src1, count, "Min", [](auto a, auto b) { return a < b ? a : b; });
}

template <typename T>
void Adds(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
          const int32_t& count)
{
    PYPTO_REQUIRE_TYPE(arith_type, "Adds", "int16_t, half, int32_t, float");
    auto s = static_cast<pypto_emu::compute_t<T>>(scalarValue);
    pypto_emu::unary(dst, src, count, "Adds", [s](auto a) { return a + s; });
}

template <typename T>
void Muls(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
          const int32_t& count)
{
    PYPTO_REQUIRE_TYPE(arith_type, "Muls", "int16_t, half, int32_t, float");
    auto s = static_cast<pypto_emu::compute_t<T>>(scalarValue);
    pypto_emu::unary(dst, src, count, "Muls", [s](auto a) { return a * s; });
}

template <typename T>
void Maxs(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
          const int32_t& count)
{
    PYPTO_REQUIRE_TYPE(arith_type, "Maxs", "int16_t, half, int32_t, float");
    auto s = static_cast<pypto_emu::compute_t<T>>(scalarValue);
    pypto_emu::unary(dst, src, count, "Maxs", [s](auto a) { return a > s ? a : s; });
}

template <typename T>
void Mins(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
          const int32_t& count)
{
    PYPTO_REQUIRE_TYPE(arith_type, "Mins", "int16_t, half, int32_t, float");
    auto s = static_cast<pypto_emu::compute_t<T>>(scalarValue);
    pypto_emu::unary(dst, src, count, "Mins", [s](auto a) { return a < s ? a : s; });
}

template <typename T>
void Relu(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count)
{
    PYPTO_REQUIRE_TYPE(relu_type, "Relu", "half, int32_t, float");
    pypto_emu::unary(dst, src, count, "Relu", [](auto a) { return a > 0 ? a : decltype(a)(0); });
}

template <typename T>
void Exp(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count)
{
    PYPTO_REQUIRE_TYPE(math_type, "Exp", "half, float");
    pypto_emu::unary(dst, src, count, "Exp", [](float a) { return std::exp(a); });
}

template <typename T>
void Ln(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count)
{
    PYPTO_REQUIRE_TYPE(math_type, "Ln", "half, float");
    pypto_emu::unary(dst, src, count, "Ln", [](float a) { return std::log(a); });
}

template <typename T>
void Abs(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count)
{
    PYPTO_REQUIRE_TYPE(math_type, "Abs", "half, float");
    pypto_emu::unary(dst, src, count, "Abs", [](float a) { return std::fabs(a); });
}

template <typename T>
void Sqrt(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count)
{
    PYPTO_REQUIRE_TYPE(math_type, "Sqrt", "half, float");
    pypto_emu::unary(dst, src, count, "Sqrt", [](float a) { return std::sqrt(a); });
}

template <typename T>
void Rsqrt(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count)
{
    PYPTO_REQUIRE_TYPE(math_type, "Rsqrt", "half, float");
    pypto_emu::unary(dst, src, count, "Rsqrt", [](float a) { return 1.0f / std::sqrt(a); });
}

template <typename T>
void Reciprocal(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count)
{
    PYPTO_REQUIRE_TYPE(math_type, "Reciprocal", "half, float");
    pypto_emu::unary(dst, src, count, "Reciprocal", [](float a) { return 1.0f / a; });
}

template <typename T>
void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const int32_t& count)
{
    PYPTO_REQUIRE_TYPE(duplicate_type, "Duplicate",
                       "int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float");
    pypto_emu::check_vector_operand(dst, count, "Duplicate");
    for (int32_t i = 0; i < count; ++i) {
        dst.data()[i] = scalarValue;
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

template <typename I>
I round_integer(float x, RoundMode mode)
{
    double r;
    switch (mode) {
    case RoundMode::CAST_FLOOR: r = std::floor(x); break;
    case RoundMode::CAST_CEIL: r = std::ceil(x); break;
    case RoundMode::CAST_TRUNC: r = std::trunc(x); break;
    case RoundMode::CAST_ROUND: r = std::round(x); break;
    default: r = std::nearbyint(x); break;
    }
    if (std::isnan(r)) {
        return 0;
    }
    // Overflow saturates, as on the hardware.
    if (r < static_cast<double>(std::numeric_limits<I>::min())) {
        return std::numeric_limits<I>::min();
    }
    if (r > static_cast<double>(std::numeric_limits<I>::max())) {
        return std::numeric_limits<I>::max();
    }
    return static_cast<I>(r);
}

} // namespace pypto_emu

namespace AscendC {

// dst = src converted, element by element. The supported conversions and
// round modes are those of Atlas A2/A3 among float, half, bfloat16_t and
// int32_t; others do not compile.
template <typename T, typename U>
void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode,
          const uint32_t count)
{
    using pypto_emu::one_of;
    constexpr bool widen = (std::is_same_v<T, float> && one_of<U, half, bfloat16_t>);
    constexpr bool narrow = (std::is_same_v<U, float> && one_of<T, half, bfloat16_t>);
    constexpr bool to_int = (one_of<U, float, half, bfloat16_t> && std::is_same_v<T, int32_t>);
    constexpr bool from_int = (std::is_same_v<U, int32_t> && std::is_same_v<T, float>);
    static_assert(widen || narrow || to_int || from_int,
                  "Cast: conversion not emulated (emulated: half/bfloat16_t -> float, float -> "
                  "half/bfloat16_t, float/half/bfloat16_t -> int32_t, int32_t -> float); half <-> "
                  "bfloat16_t goes through float on Atlas A2/A3");
    const char* what = "Cast";
    if (count > static_cast<uint32_t>(std::numeric_limits<int32_t>::max())) {
        pypto_emu::fail(what, ": count ", count, " is too large");
    }
    pypto_emu::check_vector_operand(dst, static_cast<int32_t>(count), what);
    pypto_emu::check_vector_operand(src, static_cast<int32_t>(count), what);
    if constexpr (widen) {
        if (roundMode != RoundMode::CAST_NONE) {
            pypto_emu::fail(what, ": widening to float is exact and takes CAST_NONE");
        }
    }
    if constexpr (narrow && std::is_same_v<T, bfloat16_t>) {
        if (roundMode == RoundMode::CAST_NONE) {
            pypto_emu::fail(what, ": float -> bfloat16_t needs an explicit round mode "
                                  "(CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND or CAST_TRUNC)");
        }
    }
    if constexpr (to_int) {
        if (roundMode == RoundMode::CAST_NONE) {
            pypto_emu::fail(what, ": conversion to int32_t needs an explicit round mode");
        }
    }
    // Widening and narrowing may share storage only element for element;
    // read everything before writing, as one vector instruction would.
    std::vector<float> values(count);
    for (uint32_t i = 0; i < count; ++i) {
        values[i] = static_cast<float>(src.data()[i]);
    }
    for (uint32_t i = 0; i < count; ++i) {
        if constexpr (narrow) {
            dst.data()[i] = pypto_emu::round_narrow<T>(values[i], roundMode);
        } else if constexpr (to_int) {
            dst.data()[i] = pypto_emu::round_integer<int32_t>(values[i], roundMode);
        } else {
            dst.data()[i] = static_cast<T>(values[i]);
        }
    }
}

} // namespace AscendC
