// The elementwise math of the Ascend C high-level API (高阶API: 数学计算 and
// 激活函数) that kernels call most: Sin, Cos, Tan, Tanh, Sinh, Cosh, Asin,
// Acos, Atan, Asinh, Acosh, Atanh, Erf, Erfc, Sigmoid, Power, Fmod,
// Log/Log2/Log10, the Taylor-expansion form of Exp, Floor, Ceil, Round,
// Trunc, Frac and Sign. Each is a
// sequence of vector instructions on the hardware; here each computes its
// function in float (half through float, rounded once to half) with the C
// library, and is costed as one pass of special-rate vector work over its
// operands. Enforced, as documented: Unified Buffer operands (VECIN, VECCALC,
// VECOUT) on 32-byte boundaries, calCount within every operand, source and
// destination apart, sharedTmpBuffer apart from both, element types (half,
// float; Power also int32_t), Sin/Cos inputs within [-65504, 65504] on
// Atlas A2/A3 and the other documented input ranges (NaN passes). The
// temporary buffer is checked but not written.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "layout.h"
#include "vector.h"

namespace AscendC {

enum class SinAlgo { POLYNOMIAL_APPROXIMATION = 0, RADIAN_REDUCTION };
struct SinConfig {
    SinAlgo algo = SinAlgo::POLYNOMIAL_APPROXIMATION;
};
inline constexpr SinConfig defaultSinConfig{};

enum class CosAlgo { POLYNOMIAL_APPROXIMATION = 0, RADIAN_REDUCTION };
struct CosConfig {
    CosAlgo algo = CosAlgo::POLYNOMIAL_APPROXIMATION;
};
inline constexpr CosConfig defaultCosConfig{};

enum class TanhAlgo { INTRINSIC = 0, SUBSECTION_COMPENSATION };
struct TanhConfig {
    TanhAlgo algo = TanhAlgo::INTRINSIC;
};
inline constexpr TanhConfig DEFAULT_TANH_CONFIG{};

enum class ErfAlgo { PADE_APPROXIMATION = 0, SUBSECTION_POLYNOMIAL_APPROXIMATION };
struct ErfConfig {
    ErfAlgo algo = ErfAlgo::PADE_APPROXIMATION;
};
inline constexpr ErfConfig defaultErfConfig{};

enum class AtanAlgo { TAYLOR_EXPANSION = 0, POLYNOMIAL_APPROXIMATION };
struct AtanConfig {
    AtanAlgo algo = AtanAlgo::TAYLOR_EXPANSION;
};
inline constexpr AtanConfig defaultAtanConfig{};

constexpr uint32_t FMOD_ITERATION_NUM_MAX = 11;
enum class FmodAlgo { NORMAL = 0, ITERATION_COMPENSATION = 1 };
struct FmodConfig {
    FmodAlgo algo = FmodAlgo::NORMAL;
    uint32_t iterationNum = FMOD_ITERATION_NUM_MAX;
};
inline constexpr FmodConfig DEFAULT_FMOD_CONFIG{};

enum class PowerAlgo { INTRINSIC = 0, DOUBLE_FLOAT_TECH };
struct PowerConfig {
    PowerAlgo algo = PowerAlgo::INTRINSIC;
};
inline constexpr PowerConfig defaultPowerConfig{};

} // namespace AscendC

namespace pypto_emu {

// The Power type list and whether `config` may be set (`Target::math_config`:
// documented for the Ascend 950 only) are the picked row's (arch.h).

inline int32_t math_count(uint32_t count, const char* what)
{
    if (count > 0x7fffffffu) {
        fail(what, ": calCount ", count, " exceeds the Unified Buffer");
    }
    return static_cast<int32_t>(count);
}

// The temporary buffer: a Unified Buffer tensor on a 32-byte boundary,
// apart from the elements the instruction reads and writes.
template <typename T>
void check_math_tmp(const AscendC::LocalTensor<uint8_t>& tmp, const AscendC::LocalTensor<T>& dst, uint64_t bytes,
                    const char* what)
{
    if (tmp.data() == nullptr) {
        fail(what, ": sharedTmpBuffer was never allocated");
    }
    if (memory_of(tmp.position()) != Memory::UB) {
        fail(what, ": sharedTmpBuffer must be in the Unified Buffer (VECIN, VECOUT or VECCALC), not ",
             position_name(tmp.position()));
    }
    if (tmp.offset_bytes() % 32 != 0) {
        fail(what, ": sharedTmpBuffer starts at Unified Buffer byte ", tmp.offset_bytes(),
             ", not on a 32-byte boundary");
    }
    if (overlaps(tmp.data(), tmp.GetSize(), dst.data(), bytes)) {
        fail(what, ": sharedTmpBuffer overlaps dst; the temporary buffer must be apart from the operands");
    }
}

template <typename T>
void check_math_src(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                    const AscendC::LocalTensor<uint8_t>* tmp, uint64_t bytes, const char* name, const char* what,
                    bool overlap_ok = false)
{
    if (!overlap_ok && overlaps(dst.data(), bytes, src.data(), bytes)) {
        fail(what, ": ", name, " and dst overlap; the source and destination must be apart");
    }
    if (tmp != nullptr && overlaps(tmp->data(), tmp->GetSize(), src.data(), bytes)) {
        fail(what, ": sharedTmpBuffer overlaps ", name, "; the temporary buffer must be apart from the operands");
    }
}

// dst[i] = f(a[i], b[i]) for the first `count` elements; `a` or `b` null is
// a scalar operand (`sa`, `sb`). Arithmetic in compute_t<T> (float for half).
template <typename T, typename F>
void math_apply(const char* what, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>* a,
                const AscendC::LocalTensor<T>* b, T sa, T sb, const AscendC::LocalTensor<uint8_t>* tmp,
                int32_t count, F f, bool overlap_ok = false)
{
    check_vector_operand(dst, count, what);
    uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
    const char* a_name = b != nullptr || a == nullptr ? "src0" : "src";
    if (a != nullptr) {
        check_vector_operand(*a, count, what);
    }
    if (b != nullptr) {
        check_vector_operand(*b, count, what);
    }
    if (tmp != nullptr) {
        check_math_tmp(*tmp, dst, bytes, what);
    }
    if (a != nullptr) {
        check_math_src(dst, *a, tmp, bytes, a_name, what, overlap_ok);
        access_read(what, a_name, *a, 0, bytes);
    }
    if (b != nullptr) {
        check_math_src(dst, *b, tmp, bytes, "src1", what);
        access_read(what, "src1", *b, 0, bytes);
    }
    access_write(dst, 0, bytes);
    model_vector_bytes(what, bytes, sizeof(T));
    if (timing_only()) {
        return;
    }
    using C = compute_t<T>;
    T* d = dst.data();
    std::vector<T> in;
    if (overlap_ok && a != nullptr) { // dst may overlap src: read all first
        in.assign(a->data(), a->data() + count);
    }
    for (int32_t i = 0; i < count; ++i) {
        C x = static_cast<C>(a == nullptr ? sa : overlap_ok ? in[static_cast<size_t>(i)] : a->data()[i]);
        C y = static_cast<C>(b != nullptr ? b->data()[i] : sb);
        d[i] = static_cast<T>(f(x, y, i));
    }
}

// Sin and Cos on A2/A3 (and with POLYNOMIAL_APPROXIMATION on the 950) take
// inputs within [-65504, 65504]; NaN passes through.
inline float in_trig_range(float x, bool limited, int32_t i, const char* what)
{
    if (limited && std::fabs(x) > 65504.0f) {
        fail(what, ": src[", i, "] = ", x, " is outside [-65504, 65504], the documented input range on ",
             PYPTO_ARCH(TARGET_NAME));
    }
    return x;
}

// The other functions' documented input ranges ("outside it the result is
// invalid"): an error; NaN passes through.
inline float in_domain(float x, bool ok, int32_t i, const char* what, const char* range)
{
    if (!ok && !std::isnan(x)) {
        fail(what, ": src[", i, "] = ", x, " is outside ", range, ", the documented input range");
    }
    return x;
}

// int32_t Power: the exact power wrapped to 32 bits for exponents >= 0;
// for negative exponents the real result truncated toward zero (0 for
// |base| > 1, and 0 for base 0). Decisions: the documentation is silent.
inline int32_t int_power(int32_t base, int32_t exp)
{
    if (exp < 0) {
        if (base == 1) {
            return 1;
        }
        if (base == -1) {
            return (exp % 2 == 0) ? 1 : -1;
        }
        return 0;
    }
    uint32_t result = 1;
    uint32_t b = static_cast<uint32_t>(base);
    uint32_t e = static_cast<uint32_t>(exp);
    while (e != 0) {
        if ((e & 1u) != 0) {
            result *= b;
        }
        b *= b;
        e >>= 1;
    }
    return static_cast<int32_t>(result);
}

template <typename C>
C power_of(C x, C y)
{
    if constexpr (std::is_same_v<C, float>) {
        return std::pow(x, y);
    } else {
        return static_cast<C>(int_power(static_cast<int32_t>(x), static_cast<int32_t>(y)));
    }
}

} // namespace pypto_emu

#define PYPTO_MATH_TYPE(op) PYPTO_REQUIRE_TYPE(Target::math, op, "half, float")

// One unary high-level function in its four documented forms: with or
// without sharedTmpBuffer, with calCount or over the whole source.
#define PYPTO_MATH_UNARY(NAME, CONFIG_T, CONFIG_DEFAULT, CONFIG_OK, EXPR)                                           \
    template <typename T, bool isReuseSource = false, const CONFIG_T& config = CONFIG_DEFAULT>                     \
    void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,                                    \
              const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount,                                \
              pypto_emu::Site site = pypto_emu::Site::here())                                                       \
    {                                                                                                               \
        pypto_emu::AtSite at_site(site, #NAME);                                                                     \
        PYPTO_MATH_TYPE(#NAME);                                                                                     \
        static_assert(CONFIG_OK, #NAME ": the config template parameter (" #CONFIG_T                                \
                                       ") is documented for the Ascend 950 only; keep the default on " \
                                       PYPTO_ARCH(TARGET_NAME));                                                       \
        const char* what = #NAME;                                                                                   \
        pypto_emu::math_apply<T>(what, dstTensor, &srcTensor, nullptr, T(), T(), &sharedTmpBuffer,                \
                                 pypto_emu::math_count(calCount, what),                                             \
                                 [&](auto x, auto, int32_t i) { (void)i; return EXPR; });                           \
    }                                                                                                               \
    template <typename T, bool isReuseSource = false, const CONFIG_T& config = CONFIG_DEFAULT>                     \
    void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,                                    \
              const LocalTensor<uint8_t>& sharedTmpBuffer, pypto_emu::Site site = pypto_emu::Site::here())          \
    {                                                                                                               \
        NAME<T, isReuseSource, config>(dstTensor, srcTensor, sharedTmpBuffer, srcTensor.GetSize(), site);           \
    }                                                                                                               \
    template <typename T, bool isReuseSource = false, const CONFIG_T& config = CONFIG_DEFAULT>                     \
    void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const uint32_t calCount,           \
              pypto_emu::Site site = pypto_emu::Site::here())                                                       \
    {                                                                                                               \
        pypto_emu::AtSite at_site(site, #NAME);                                                                     \
        PYPTO_MATH_TYPE(#NAME);                                                                                     \
        static_assert(CONFIG_OK, #NAME ": the config template parameter (" #CONFIG_T                                \
                                       ") is documented for the Ascend 950 only; keep the default on " \
                                       PYPTO_ARCH(TARGET_NAME));                                                       \
        const char* what = #NAME;                                                                                   \
        pypto_emu::math_apply<T>(what, dstTensor, &srcTensor, nullptr, T(), T(), nullptr,                          \
                                 pypto_emu::math_count(calCount, what),                                             \
                                 [&](auto x, auto, int32_t i) { (void)i; return EXPR; });                           \
    }                                                                                                               \
    template <typename T, bool isReuseSource = false, const CONFIG_T& config = CONFIG_DEFAULT>                     \
    void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,                                    \
              pypto_emu::Site site = pypto_emu::Site::here())                                                       \
    {                                                                                                               \
        NAME<T, isReuseSource, config>(dstTensor, srcTensor, srcTensor.GetSize(), site);                            \
    }

// The same four forms for the functions without a config parameter.
#define PYPTO_MATH_UNARY_PLAIN(NAME, OVERLAP, EXPR)                                                                 \
    template <typename T, bool isReuseSource = false>                                                               \
    void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,                                    \
              const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount,                                \
              pypto_emu::Site site = pypto_emu::Site::here())                                                       \
    {                                                                                                               \
        pypto_emu::AtSite at_site(site, #NAME);                                                                     \
        PYPTO_MATH_TYPE(#NAME);                                                                                     \
        const char* what = #NAME;                                                                                   \
        pypto_emu::math_apply<T>(what, dstTensor, &srcTensor, nullptr, T(), T(), &sharedTmpBuffer,                \
                                 pypto_emu::math_count(calCount, what),                                             \
                                 [&](float x, float, int32_t i) { (void)i; return EXPR; }, OVERLAP);                \
    }                                                                                                               \
    template <typename T, bool isReuseSource = false>                                                               \
    void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const uint32_t calCount,           \
              pypto_emu::Site site = pypto_emu::Site::here())                                                       \
    {                                                                                                               \
        pypto_emu::AtSite at_site(site, #NAME);                                                                     \
        PYPTO_MATH_TYPE(#NAME);                                                                                     \
        const char* what = #NAME;                                                                                   \
        pypto_emu::math_apply<T>(what, dstTensor, &srcTensor, nullptr, T(), T(), nullptr,                          \
                                 pypto_emu::math_count(calCount, what),                                             \
                                 [&](float x, float, int32_t i) { (void)i; return EXPR; }, OVERLAP);                \
    }
// ... plus the two whole-tensor forms.
#define PYPTO_MATH_UNARY_WHOLE(NAME)                                                                                \
    template <typename T, bool isReuseSource = false>                                                               \
    void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,                                    \
              const LocalTensor<uint8_t>& sharedTmpBuffer, pypto_emu::Site site = pypto_emu::Site::here())          \
    {                                                                                                               \
        NAME<T, isReuseSource>(dstTensor, srcTensor, sharedTmpBuffer, srcTensor.GetSize(), site);                   \
    }                                                                                                               \
    template <typename T, bool isReuseSource = false>                                                               \
    void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,                                    \
              pypto_emu::Site site = pypto_emu::Site::here())                                                       \
    {                                                                                                               \
        NAME<T, isReuseSource>(dstTensor, srcTensor, srcTensor.GetSize(), site);                                    \
    }
#define PYPTO_MATH_UNARY_FOUR(NAME, OVERLAP, EXPR) PYPTO_MATH_UNARY_PLAIN(NAME, OVERLAP, EXPR) PYPTO_MATH_UNARY_WHOLE(NAME)

namespace AscendC {

// Sin and Cos: RADIAN_REDUCTION (950) takes the whole float range.
PYPTO_MATH_UNARY(Sin, SinConfig, defaultSinConfig,
                 pypto_emu::Target::math_config || config.algo == SinAlgo::POLYNOMIAL_APPROXIMATION,
                 std::sin(pypto_emu::in_trig_range(
                     x, !pypto_emu::Target::math_config || config.algo == SinAlgo::POLYNOMIAL_APPROXIMATION, i, what)))
PYPTO_MATH_UNARY(Cos, CosConfig, defaultCosConfig,
                 pypto_emu::Target::math_config || config.algo == CosAlgo::POLYNOMIAL_APPROXIMATION,
                 std::cos(pypto_emu::in_trig_range(
                     x, !pypto_emu::Target::math_config || config.algo == CosAlgo::POLYNOMIAL_APPROXIMATION, i, what)))
PYPTO_MATH_UNARY(Tanh, TanhConfig, DEFAULT_TANH_CONFIG,
                 pypto_emu::Target::math_config || config.algo == TanhAlgo::INTRINSIC, std::tanh(x))
PYPTO_MATH_UNARY(Erf, ErfConfig, defaultErfConfig,
                 pypto_emu::Target::math_config || config.algo == ErfAlgo::PADE_APPROXIMATION, std::erf(x))
// Atan's POLYNOMIAL_APPROXIMATION (950) is documented for float only.
PYPTO_MATH_UNARY(Atan, AtanConfig, defaultAtanConfig,
                 (pypto_emu::Target::math_config || config.algo == AtanAlgo::TAYLOR_EXPANSION) &&
                     (config.algo == AtanAlgo::TAYLOR_EXPANSION || std::is_same_v<T, float>),
                 std::atan(x))

#undef PYPTO_MATH_UNARY

PYPTO_MATH_UNARY_FOUR(Tan, false,
                      std::tan(pypto_emu::in_domain(x, std::fabs(x) < 65504.0f, i, what, "(-65504, 65504)")))
PYPTO_MATH_UNARY_FOUR(Sinh, false, std::sinh(x))
PYPTO_MATH_UNARY_FOUR(Cosh, false, std::cosh(x))
PYPTO_MATH_UNARY_FOUR(Asin, false, std::asin(pypto_emu::in_domain(x, std::fabs(x) <= 1.0f, i, what, "[-1, 1]")))
PYPTO_MATH_UNARY_FOUR(Acos, false, std::acos(pypto_emu::in_domain(x, std::fabs(x) <= 1.0f, i, what, "[-1, 1]")))
PYPTO_MATH_UNARY_FOUR(Erfc, false, std::erfc(x))
PYPTO_MATH_UNARY_FOUR(Atanh, false,
                      std::atanh(pypto_emu::in_domain(x, std::fabs(x) > 0.001f && std::fabs(x) < 0.99f, i, what,
                                                      "(-0.99, -0.001) or (0.001, 0.99)")))
PYPTO_MATH_UNARY_FOUR(Asinh, false,
                      std::asinh(pypto_emu::in_domain(x, std::fabs(x) <= 65504.0f, i, what, "[-65504, 65504]")))
PYPTO_MATH_UNARY_FOUR(Acosh, false,
                      std::acosh(pypto_emu::in_domain(x, x >= 1.0f && x <= 65504.0f, i, what, "[1, 65504]")))

// Rounding to integral values: Floor, Ceil and Round (ties to even,
// documented) in the two calCount forms only, as documented; Trunc, Frac
// (x - Trunc(x), sign kept) and Sign (1, -1, or 0 for zeros; NaN gives 0, a
// decision) in all four. Trunc and Round may overlap src and dst (their
// pages do not forbid it).
PYPTO_MATH_UNARY_PLAIN(Floor, false, std::floor(x))
PYPTO_MATH_UNARY_PLAIN(Ceil, false, std::ceil(x))
PYPTO_MATH_UNARY_PLAIN(Round, true, std::nearbyint(x))
PYPTO_MATH_UNARY_FOUR(Trunc, true, std::trunc(x))
PYPTO_MATH_UNARY_FOUR(Frac, false, x - std::trunc(x))
PYPTO_MATH_UNARY_FOUR(Sign, false, x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f))

#undef PYPTO_MATH_UNARY_PLAIN
#undef PYPTO_MATH_UNARY_WHOLE
#undef PYPTO_MATH_UNARY_FOUR

// Sigmoid (激活函数): 1 / (1 + e^-x), in float.
template <typename T, bool isReuseSource = false>
void Sigmoid(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
             const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount,
             pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Sigmoid");
    PYPTO_MATH_TYPE("Sigmoid");
    pypto_emu::math_apply<T>("Sigmoid", dstTensor, &srcTensor, nullptr, T(), T(), &sharedTmpBuffer,
                             pypto_emu::math_count(calCount, "Sigmoid"),
                             [](float x, float, int32_t) { return 1.0f / (1.0f + std::exp(-x)); });
}
template <typename T, bool isReuseSource = false>
void Sigmoid(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
             const LocalTensor<uint8_t>& sharedTmpBuffer, pypto_emu::Site site = pypto_emu::Site::here())
{
    Sigmoid<T, isReuseSource>(dstTensor, srcTensor, sharedTmpBuffer, srcTensor.GetSize(), site);
}
template <typename T, bool isReuseSource = false>
void Sigmoid(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const uint32_t calCount,
             pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Sigmoid");
    PYPTO_MATH_TYPE("Sigmoid");
    pypto_emu::math_apply<T>("Sigmoid", dstTensor, &srcTensor, nullptr, T(), T(), nullptr,
                             pypto_emu::math_count(calCount, "Sigmoid"),
                             [](float x, float, int32_t) { return 1.0f / (1.0f + std::exp(-x)); });
}
template <typename T, bool isReuseSource = false>
void Sigmoid(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
             pypto_emu::Site site = pypto_emu::Site::here())
{
    Sigmoid<T, isReuseSource>(dstTensor, srcTensor, srcTensor.GetSize(), site);
}

// Log (base e; no temporary buffer), Log2 (with or without one), Log10.
template <typename T, bool isReuseSource = false>
void Log(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, uint32_t calCount,
         pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Log");
    PYPTO_MATH_TYPE("Log");
    pypto_emu::math_apply<T>("Log", dstTensor, &srcTensor, nullptr, T(), T(), nullptr,
                             pypto_emu::math_count(calCount, "Log"),
                             [](float x, float, int32_t) { return std::log(x); });
}
template <typename T, bool isReuseSource = false>
void Log(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
         pypto_emu::Site site = pypto_emu::Site::here())
{
    Log<T, isReuseSource>(dstTensor, srcTensor, srcTensor.GetSize(), site);
}
template <typename T, bool isReuseSource = false>
void Log2(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
          const LocalTensor<uint8_t>& sharedTmpBuffer, uint32_t calCount,
          pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Log2");
    PYPTO_MATH_TYPE("Log2");
    pypto_emu::math_apply<T>("Log2", dstTensor, &srcTensor, nullptr, T(), T(), &sharedTmpBuffer,
                             pypto_emu::math_count(calCount, "Log2"),
                             [](float x, float, int32_t) { return std::log2(x); });
}
template <typename T, bool isReuseSource = false>
void Log2(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
          const LocalTensor<uint8_t>& sharedTmpBuffer, pypto_emu::Site site = pypto_emu::Site::here())
{
    Log2<T, isReuseSource>(dstTensor, srcTensor, sharedTmpBuffer, srcTensor.GetSize(), site);
}
template <typename T, bool isReuseSource = false>
void Log2(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, uint32_t calCount,
          pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Log2");
    PYPTO_MATH_TYPE("Log2");
    pypto_emu::math_apply<T>("Log2", dstTensor, &srcTensor, nullptr, T(), T(), nullptr,
                             pypto_emu::math_count(calCount, "Log2"),
                             [](float x, float, int32_t) { return std::log2(x); });
}
template <typename T, bool isReuseSource = false>
void Log2(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
          pypto_emu::Site site = pypto_emu::Site::here())
{
    Log2<T, isReuseSource>(dstTensor, srcTensor, srcTensor.GetSize(), site);
}
template <typename T, bool isReuseSource = false>
void Log10(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, uint32_t calCount,
           pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Log10");
    PYPTO_MATH_TYPE("Log10");
    pypto_emu::math_apply<T>("Log10", dstTensor, &srcTensor, nullptr, T(), T(), nullptr,
                             pypto_emu::math_count(calCount, "Log10"),
                             [](float x, float, int32_t) { return std::log10(x); });
}
template <typename T, bool isReuseSource = false>
void Log10(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
           pypto_emu::Site site = pypto_emu::Site::here())
{
    Log10<T, isReuseSource>(dstTensor, srcTensor, srcTensor.GetSize(), site);
}

// Exp, high-level form: e^x; the Taylor expansion's precision (its
// `taylorExpandLevel` terms) is not modelled: the result is the float
// exponential at every level.
template <typename T, uint8_t taylorExpandLevel, bool isReuseSource = false>
void Exp(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<uint8_t>& sharedTmpBuffer,
         const uint32_t calCount, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Exp");
    PYPTO_MATH_TYPE("Exp");
    pypto_emu::math_apply<T>("Exp", dstLocal, &srcLocal, nullptr, T(), T(), &sharedTmpBuffer,
                             pypto_emu::math_count(calCount, "Exp"),
                             [](float x, float, int32_t) { return std::exp(x); });
}
template <typename T, uint8_t taylorExpandLevel, bool isReuseSource = false>
void Exp(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t calCount,
         pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Exp");
    PYPTO_MATH_TYPE("Exp");
    pypto_emu::math_apply<T>("Exp", dstLocal, &srcLocal, nullptr, T(), T(), nullptr,
                             pypto_emu::math_count(calCount, "Exp"),
                             [](float x, float, int32_t) { return std::exp(x); });
}

// Power: src0 ^ src1 elementwise, with either side a scalar; each of the
// three in four forms (sharedTmpBuffer or not, calCount or the whole
// tensor). half and float follow the C library's powf (a negative base
// with a non-integer exponent is NaN, x^0 is 1, 0^negative is inf).
#define PYPTO_POWER_CHECKS                                                                                          \
    PYPTO_REQUIRE_TYPE(Target::power, "Power", PYPTO_ARCH(POWER_TYPES));                                                     \
    static_assert(pypto_emu::Target::math_config || config.algo == PowerAlgo::INTRINSIC,                                 \
                  "Power: the config template parameter (PowerConfig) is documented for the Ascend 950 only; "     \
                  "keep the default on " PYPTO_ARCH(TARGET_NAME))
#define PYPTO_POWER_FN [](auto x, auto y, int32_t) { return pypto_emu::power_of(x, y); }

template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
void Power(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
           const LocalTensor<uint8_t>& sharedTmpBuffer, uint32_t calCount,
           pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Power");
    PYPTO_POWER_CHECKS;
    pypto_emu::math_apply<T>("Power", dstTensor, &src0Tensor, &src1Tensor, T(), T(), &sharedTmpBuffer,
                             pypto_emu::math_count(calCount, "Power"), PYPTO_POWER_FN);
}
template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
void Power(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
           const LocalTensor<uint8_t>& sharedTmpBuffer, pypto_emu::Site site = pypto_emu::Site::here())
{
    Power<T, isReuseSource, config>(dstTensor, src0Tensor, src1Tensor, sharedTmpBuffer, src0Tensor.GetSize(), site);
}
template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
void Power(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
           uint32_t calCount, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Power");
    PYPTO_POWER_CHECKS;
    pypto_emu::math_apply<T>("Power", dstTensor, &src0Tensor, &src1Tensor, T(), T(), nullptr,
                             pypto_emu::math_count(calCount, "Power"), PYPTO_POWER_FN);
}
template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
void Power(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
           pypto_emu::Site site = pypto_emu::Site::here())
{
    Power<T, isReuseSource, config>(dstTensor, src0Tensor, src1Tensor, src0Tensor.GetSize(), site);
}

template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
void Power(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const T& src1Scalar,
           const LocalTensor<uint8_t>& sharedTmpBuffer, uint32_t calCount,
           pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Power");
    PYPTO_POWER_CHECKS;
    pypto_emu::math_apply<T>("Power", dstTensor, &src0Tensor, nullptr, T(), src1Scalar, &sharedTmpBuffer,
                             pypto_emu::math_count(calCount, "Power"), PYPTO_POWER_FN);
}
template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
void Power(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const T& src1Scalar,
           const LocalTensor<uint8_t>& sharedTmpBuffer, pypto_emu::Site site = pypto_emu::Site::here())
{
    Power<T, isReuseSource, config>(dstTensor, src0Tensor, src1Scalar, sharedTmpBuffer, src0Tensor.GetSize(), site);
}
template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
void Power(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const T& src1Scalar,
           uint32_t calCount, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Power");
    PYPTO_POWER_CHECKS;
    pypto_emu::math_apply<T>("Power", dstTensor, &src0Tensor, nullptr, T(), src1Scalar, nullptr,
                             pypto_emu::math_count(calCount, "Power"), PYPTO_POWER_FN);
}
template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
void Power(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const T& src1Scalar,
           pypto_emu::Site site = pypto_emu::Site::here())
{
    Power<T, isReuseSource, config>(dstTensor, src0Tensor, src1Scalar, src0Tensor.GetSize(), site);
}

template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
void Power(const LocalTensor<T>& dstTensor, const T& src0Scalar, const LocalTensor<T>& src1Tensor,
           const LocalTensor<uint8_t>& sharedTmpBuffer, uint32_t calCount,
           pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Power");
    PYPTO_POWER_CHECKS;
    pypto_emu::math_apply<T>("Power", dstTensor, nullptr, &src1Tensor, src0Scalar, T(), &sharedTmpBuffer,
                             pypto_emu::math_count(calCount, "Power"), PYPTO_POWER_FN);
}
template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
void Power(const LocalTensor<T>& dstTensor, const T& src0Scalar, const LocalTensor<T>& src1Tensor,
           const LocalTensor<uint8_t>& sharedTmpBuffer, pypto_emu::Site site = pypto_emu::Site::here())
{
    Power<T, isReuseSource, config>(dstTensor, src0Scalar, src1Tensor, sharedTmpBuffer, src1Tensor.GetSize(), site);
}
template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
void Power(const LocalTensor<T>& dstTensor, const T& src0Scalar, const LocalTensor<T>& src1Tensor,
           uint32_t calCount, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Power");
    PYPTO_POWER_CHECKS;
    pypto_emu::math_apply<T>("Power", dstTensor, nullptr, &src1Tensor, src0Scalar, T(), nullptr,
                             pypto_emu::math_count(calCount, "Power"), PYPTO_POWER_FN);
}
template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
void Power(const LocalTensor<T>& dstTensor, const T& src0Scalar, const LocalTensor<T>& src1Tensor,
           pypto_emu::Site site = pypto_emu::Site::here())
{
    Power<T, isReuseSource, config>(dstTensor, src0Scalar, src1Tensor, src1Tensor.GetSize(), site);
}

#undef PYPTO_POWER_CHECKS
#undef PYPTO_POWER_FN

// Fmod: src0 - Trunc(src0 / src1) * src1, the documented formula, each step
// rounded to float (half via float); ITERATION_COMPENSATION (950, float
// only) as the exact remainder.
#define PYPTO_FMOD_CHECKS                                                                                           \
    PYPTO_MATH_TYPE("Fmod");                                                                                        \
    static_assert(pypto_emu::Target::math_config || (config.algo == FmodAlgo::NORMAL &&                                 \
                                                config.iterationNum == FMOD_ITERATION_NUM_MAX),                    \
                  "Fmod: the config template parameter (FmodConfig) is documented for the Ascend 950 only; keep "  \
                  "the default on " PYPTO_ARCH(TARGET_NAME));                                                          \
    static_assert(config.algo == FmodAlgo::NORMAL || std::is_same_v<T, float>,                                     \
                  "Fmod: ITERATION_COMPENSATION takes float only (documented)");                                    \
    static_assert(config.iterationNum >= 1 && config.iterationNum <= FMOD_ITERATION_NUM_MAX,                        \
                  "Fmod: iterationNum is outside 1..11 (documented)")
#define PYPTO_FMOD_FN                                                                                               \
    [](float a, float b, int32_t) {                                                                                 \
        if (config.algo == FmodAlgo::ITERATION_COMPENSATION) {                                                      \
            return std::fmod(a, b);                                                                                 \
        }                                                                                                           \
        float q = std::trunc(a / b);                                                                                \
        float p = q * b;                                                                                            \
        return a - p;                                                                                               \
    }

template <typename T, bool isReuseSource = false, const FmodConfig& config = DEFAULT_FMOD_CONFIG>
void Fmod(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
          const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount,
          pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Fmod");
    PYPTO_FMOD_CHECKS;
    pypto_emu::math_apply<T>("Fmod", dstTensor, &src0Tensor, &src1Tensor, T(), T(), &sharedTmpBuffer,
                             pypto_emu::math_count(calCount, "Fmod"), PYPTO_FMOD_FN);
}
template <typename T, bool isReuseSource = false, const FmodConfig& config = DEFAULT_FMOD_CONFIG>
void Fmod(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
          const LocalTensor<uint8_t>& sharedTmpBuffer, pypto_emu::Site site = pypto_emu::Site::here())
{
    Fmod<T, isReuseSource, config>(dstTensor, src0Tensor, src1Tensor, sharedTmpBuffer, src0Tensor.GetSize(), site);
}
template <typename T, bool isReuseSource = false, const FmodConfig& config = DEFAULT_FMOD_CONFIG>
void Fmod(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
          const uint32_t calCount, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Fmod");
    PYPTO_FMOD_CHECKS;
    pypto_emu::math_apply<T>("Fmod", dstTensor, &src0Tensor, &src1Tensor, T(), T(), nullptr,
                             pypto_emu::math_count(calCount, "Fmod"), PYPTO_FMOD_FN);
}
template <typename T, bool isReuseSource = false, const FmodConfig& config = DEFAULT_FMOD_CONFIG>
void Fmod(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
          pypto_emu::Site site = pypto_emu::Site::here())
{
    Fmod<T, isReuseSource, config>(dstTensor, src0Tensor, src1Tensor, src0Tensor.GetSize(), site);
}

#undef PYPTO_FMOD_CHECKS
#undef PYPTO_FMOD_FN

} // namespace AscendC

#undef PYPTO_MATH_TYPE
