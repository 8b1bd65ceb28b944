// The compound ("复合计算") vector instructions of Atlas A2/A3: an add,
// subtract or multiply fused with a Relu, a multiply-add, a cast or a
// dequantisation, in their count and mask/repeat forms.
//
// The mask forms follow mask.h: a repeat counts 256 bytes of the wider of
// the source and destination types (the narrower operand then covers fewer
// blocks per repeat), masks, counter mode, isSetMask and strides as there.
//
// Rounding (the documentation gives only the formulas):
// - AddRelu, SubRelu: the sum/difference rounded to T (half: computed in
//   float, which rounds exactly like one rounding to half), then Relu;
//   int16_t wraps as Add does.
// - FusedMulAdd, MulAddRelu, MulAddDst, Axpy: one rounding of a*b + c to the
//   destination type (fused); Relu after that.
// - AddReluCast, SubReluCast: the sum/difference rounded to the source type,
//   Relu, then Cast with the CAST_NONE rule (to nearest, ties to even;
//   integers saturate).
// - MulCast: the product rounded to half, then Cast as above (uint8_t takes
//   negatives to 0, as Cast does).
// - AddDeqRelu: the int32_t sum wraps, is scaled by the SetDeqScale(half)
//   register exactly as Cast int32_t -> half does, then Relu.
// - CastDequant (int32_t -> half only): the scaled value as Cast int32_t ->
//   half gives it.
#pragma once

#include <cmath>
#include <cstring>

#include "mask.h"
#include "vector.h"

namespace pypto_emu {


template <typename T>
constexpr bool relu_arith_type = one_of<T, int16_t, half, float>;
template <typename T>
constexpr bool fma_type = one_of<T, half, float>;
template <typename T, typename U>
constexpr bool axpy_pair = (std::is_same_v<T, U> && one_of<T, half, float>) ||
                           (std::is_same_v<T, float> && std::is_same_v<U, half>);
template <typename T, typename U>
constexpr bool relu_cast_pair = (std::is_same_v<T, int8_t> && one_of<U, half, int16_t>) ||
                                (std::is_same_v<T, half> && std::is_same_v<U, float>);
template <typename T, typename U>
constexpr bool mul_cast_pair = one_of<T, int8_t, uint8_t> && std::is_same_v<U, half>;

// A double rounded once to half: round to odd into float first (float keeps
// more than twice half's precision plus two bits, so the second rounding
// is then exact).
inline half double_to_half(double x)
{
    float f = static_cast<float>(x);
    if (std::isfinite(x) && std::isfinite(f) && static_cast<double>(f) != x) {
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        if ((bits & 1u) == 0) {
            f = std::nextafter(f, static_cast<double>(f) < x ? INFINITY : -INFINITY);
        }
    }
    return half(f);
}

// a * b + c with one rounding to D.
template <typename D>
D fused(double a, double b, double c)
{
    if constexpr (std::is_same_v<D, half>) {
        return double_to_half(std::fma(a, b, c));
    } else {
        return std::fmaf(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c));
    }
}

template <typename T>
T relu_of(T v)
{
    if constexpr (std::is_integral_v<T>) {
        return v > 0 ? v : T(0);
    } else {
        return static_cast<float>(v) > 0 ? v : T(0.0f);
    }
}

// src0 op src1 rounded to T (int16_t wraps).
template <typename T, typename Op>
T rounded(T a, T b, Op op)
{
    return static_cast<T>(op(static_cast<compute_t<T>>(a), static_cast<compute_t<T>>(b)));
}

inline int32_t count_of(int32_t count, const char*) { return count; }
inline int32_t count_of(uint32_t count, const char* what)
{
    if (count > 0x7fffffffu) {
        fail(what, ": count ", count, " exceeds the Unified Buffer");
    }
    return static_cast<int32_t>(count);
}

// With a half source and a float destination the operands must not overlap
// (documented for Axpy and MulAddDst).
template <typename D, typename S>
void check_apart(const AscendC::LocalTensor<D>& dst, const AscendC::LocalTensor<S>& src, const char* name,
                 const char* what)
{
    if constexpr (!std::is_same_v<D, S>) {
        auto d0 = reinterpret_cast<uintptr_t>(dst.data());
        auto s0 = reinterpret_cast<uintptr_t>(src.data());
        uintptr_t d1 = d0 + static_cast<uintptr_t>(dst.GetSize()) * sizeof(D);
        uintptr_t s1 = s0 + static_cast<uintptr_t>(src.GetSize()) * sizeof(S);
        if (d0 < s1 && s0 < d1) {
            fail(what, ": dst and ", name, " overlap; with ", type_name<S>(), " sources and a ", type_name<D>(),
                 " destination the operands must not overlap");
        }
    }
}

// Count form: dst[i] = f(src0[i], src1[i], dst[i]) for the first `count`.
template <typename D, typename S, typename F>
void compound_count(const AscendC::LocalTensor<D>& dst, const AscendC::LocalTensor<S>& src0,
                    const AscendC::LocalTensor<S>& src1, int32_t count, const char* what, F f)
{
    check_vector_operand(dst, count, what);
    check_vector_operand(src0, count, what);
    check_vector_operand(src1, count, what);
    uint64_t sbytes = count > 0 ? static_cast<uint64_t>(count) * sizeof(S) : 0;
    uint64_t dbytes = count > 0 ? static_cast<uint64_t>(count) * sizeof(D) : 0;
    if constexpr (F::one_source) {
        access_read(what, "src", src0, 0, sbytes);
    } else {
        access_read(what, "src0", src0, 0, sbytes);
        access_read(what, "src1", src1, 0, sbytes);
    }
    if constexpr (F::reads_dst) {
        access_read(what, "dst", dst, 0, dbytes);
    }
    access_write(dst, 0, dbytes);
    model_vector_bytes(what, sbytes > dbytes ? sbytes : dbytes, static_cast<uint32_t>(sizeof(D) > sizeof(S) ? sizeof(D) : sizeof(S)));
    if (timing_only()) {
        return;
    }
    D* d = dst.data();
    const S* a = src0.data();
    const S* b = src1.data();
    for (int32_t i = 0; i < count; ++i) {
        d[i] = f(a[i], b[i], d[i]);
    }
}

// Mask form: per repeat, every active element computed, then stored.
template <typename D, typename S, typename F>
void compound_masked(const AscendC::LocalTensor<D>& dst, const AscendC::LocalTensor<S>& src0,
                     const AscendC::LocalTensor<S>& src1, MaskArg arg, const uint64_t* bits, uint64_t len,
                     int32_t repeat_time, uint32_t dblk, uint32_t drep, uint32_t ablk, uint32_t arep, uint32_t bblk,
                     uint32_t brep, const char* what, F f)
{
    constexpr uint32_t wide = static_cast<uint32_t>(sizeof(D) > sizeof(S) ? sizeof(D) : sizeof(S));
    RepeatPlan p = make_plan(what, wide, arg, bits, len, repeat_time);
    auto d = strided(dst, dblk, drep, "dst", what, true);
    auto a = strided(src0, ablk, arep, F::one_source ? "src" : "src0", what);
    auto b = strided(src1, bblk, brep, F::one_source ? "src" : "src1", what);
    check_reach(d, p, what);
    check_reach(a, p, what);
    check_reach(b, p, what);
    // Sources through the checked accessor (racecheck and initcheck see
    // each element read); dst too where the function reads it.
    run_plan(p, d, [&](uint32_t r, uint32_t e) {
        S x = a.get(r, e);
        S y = F::one_source ? x : b.get(r, e);
        return f(x, y, F::reads_dst ? d.get(r, e) : d.at(r, e));
    });
}

template <typename D, typename S, typename F>
void compound_masked(const AscendC::LocalTensor<D>& dst, const AscendC::LocalTensor<S>& src0,
                     const AscendC::LocalTensor<S>& src1, MaskArg arg, const uint64_t* bits, uint64_t len,
                     int32_t repeat_time, const AscendC::BinaryRepeatParams& rp, const char* what, F f)
{
    compound_masked(dst, src0, src1, arg, bits, len, repeat_time, rp.dstBlkStride, rp.dstRepStride,
                    rp.src0BlkStride, rp.src0RepStride, rp.src1BlkStride, rp.src1RepStride, what, f);
}

// The element functions. `reads_dst`: the result depends on dst's old
// value (which the instruction then reads); `one_source`: src0 and src1
// are the same operand (Axpy's src).
struct AddReluF {
    static constexpr bool reads_dst = false, one_source = false;
    template <typename T>
    T operator()(T a, T b, T) const { return relu_of(rounded(a, b, [](auto x, auto y) { return x + y; })); }
};
struct SubReluF {
    static constexpr bool reads_dst = false, one_source = false;
    template <typename T>
    T operator()(T a, T b, T) const { return relu_of(rounded(a, b, [](auto x, auto y) { return x - y; })); }
};
// dst = src0 * dst + src1
struct FusedMulAddF {
    static constexpr bool reads_dst = true, one_source = false;
    template <typename T>
    T operator()(T a, T b, T d) const
    {
        return fused<T>(static_cast<float>(a), static_cast<float>(d), static_cast<float>(b));
    }
};
struct MulAddReluF {
    static constexpr bool reads_dst = true, one_source = false;
    template <typename T>
    T operator()(T a, T b, T d) const { return relu_of(FusedMulAddF()(a, b, d)); }
};
// dst = src0 * src1 + dst
struct MulAddDstF {
    static constexpr bool reads_dst = true, one_source = false;
    template <typename S, typename D>
    D operator()(S a, S b, D d) const
    {
        return fused<D>(static_cast<float>(a), static_cast<float>(b), static_cast<float>(d));
    }
};
template <typename D, bool sub>
struct ReluCastF {
    static constexpr bool reads_dst = false, one_source = false;
    template <typename S>
    D operator()(S a, S b, D) const
    {
        S v = relu_of(rounded(a, b, [](auto x, auto y) { return sub ? x - y : x + y; }));
        return convert<D, S>(v, AscendC::RoundMode::CAST_NONE);
    }
};
template <typename D>
struct MulCastF {
    static constexpr bool reads_dst = false, one_source = false;
    D operator()(half a, half b, D) const
    {
        half v = rounded(a, b, [](auto x, auto y) { return x * y; });
        return convert<D, half>(v, AscendC::RoundMode::CAST_RINT);
    }
};
struct AddDeqReluF {
    static constexpr bool reads_dst = false, one_source = false;
    half operator()(int32_t a, int32_t b, half) const
    {
        int32_t sum = static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
        return relu_of(convert<half, int32_t>(sum, AscendC::RoundMode::CAST_NONE));
    }
};

// Axpy: dst = s * src + dst.
template <typename U>
struct AxpyF {
    static constexpr bool reads_dst = true, one_source = true;
    U s;
    template <typename T>
    T operator()(U a, U, T d) const { return MulAddDstF()(s, a, d); }
};

inline void require_deq_scale(const char* what)
{
    if (!deq_scale().set) {
        fail(what, ": the int32_t sum is scaled by the DEQSCALE register; call SetDeqScale(half) first");
    }
}

} // namespace pypto_emu

#define PYPTO_COMPOUND_TYPE(trait, op, supported)                                                         \
    static_assert(pypto_emu::trait<T>, op ": element type not supported on " PYPTO_ARCH(TARGET_NAME)         \
                                          " (supported: " supported ")" PYPTO_ARCH(COMPOUND_NOTE))
#define PYPTO_COMPOUND_PAIR(trait, op, supported)                                                         \
    static_assert(pypto_emu::trait<T, U>, op ": type pair (dst, src) not supported on " PYPTO_ARCH(TARGET_NAME) \
                                             " (supported: " supported ")" PYPTO_ARCH(COMPOUND_NOTE))

// Same-type binary compounds: count form and the two mask forms.
#define PYPTO_COMPOUND_SAME(NAME, TRAIT, TYPES, FN)                                                        \
    template <typename T>                                                                                  \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,           \
              const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here()) \
    {                                                                                                      \
        pypto_emu::AtSite at_site(site, #NAME);                                        \
        PYPTO_COMPOUND_TYPE(TRAIT, #NAME, TYPES);                                                          \
        pypto_emu::compound_count(dst, src0, src1, count, #NAME, FN());                                    \
    }                                                                                                      \
    template <typename T, bool isSetMask = true>                                                           \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,           \
              const uint64_t mask[], const int32_t repeatTime, const BinaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here()) \
    {                                                                                                      \
        pypto_emu::AtSite at_site(site, #NAME);                                        \
        PYPTO_COMPOUND_TYPE(TRAIT, #NAME, TYPES);                                                          \
        pypto_emu::compound_masked(dst, src0, src1, PYPTO_COMPOUND_BITS(mask), repeatTime, repeatParams,   \
                                   #NAME, FN());                                                           \
    }                                                                                                      \
    template <typename T, bool isSetMask = true>                                                           \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,           \
              const uint64_t mask, const int32_t repeatTime, const BinaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here()) \
    {                                                                                                      \
        pypto_emu::AtSite at_site(site, #NAME);                                        \
        PYPTO_COMPOUND_TYPE(TRAIT, #NAME, TYPES);                                                          \
        pypto_emu::compound_masked(dst, src0, src1, PYPTO_COMPOUND_LEN(mask), repeatTime, repeatParams,    \
                                   #NAME, FN());                                                           \
    }

// Mixed-type binary compounds (template <T = dst, U = src>).
#define PYPTO_COMPOUND_MIXED(NAME, TRAIT, TYPES, FN, COUNT_T, CHECK)                                       \
    template <typename T, typename U>                                                                      \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1,           \
              COUNT_T count, pypto_emu::Site site = pypto_emu::Site::here()) \
    {                                                                                                      \
        pypto_emu::AtSite at_site(site, #NAME);                                        \
        PYPTO_COMPOUND_PAIR(TRAIT, #NAME, TYPES);                                                          \
        CHECK;                                                                                             \
        pypto_emu::compound_count(dst, src0, src1, pypto_emu::count_of(count, #NAME), #NAME, FN);          \
    }                                                                                                      \
    template <typename T, typename U, bool isSetMask = true>                                               \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1,           \
              const uint64_t mask[], const int32_t repeatTime, const BinaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here()) \
    {                                                                                                      \
        pypto_emu::AtSite at_site(site, #NAME);                                        \
        PYPTO_COMPOUND_PAIR(TRAIT, #NAME, TYPES);                                                          \
        CHECK;                                                                                             \
        pypto_emu::compound_masked(dst, src0, src1, PYPTO_COMPOUND_BITS(mask), repeatTime, repeatParams,   \
                                   #NAME, FN);                                                             \
    }                                                                                                      \
    template <typename T, typename U, bool isSetMask = true>                                               \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1,           \
              const uint64_t mask, const int32_t repeatTime, const BinaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here()) \
    {                                                                                                      \
        pypto_emu::AtSite at_site(site, #NAME);                                        \
        PYPTO_COMPOUND_PAIR(TRAIT, #NAME, TYPES);                                                          \
        CHECK;                                                                                             \
        pypto_emu::compound_masked(dst, src0, src1, PYPTO_COMPOUND_LEN(mask), repeatTime, repeatParams,    \
                                   #NAME, FN);                                                             \
    }

#define PYPTO_COMPOUND_BITS(m) (isSetMask ? pypto_emu::MaskArg::Bitwise : pypto_emu::MaskArg::Register), m, 0
#define PYPTO_COMPOUND_LEN(m) (isSetMask ? pypto_emu::MaskArg::Continuous : pypto_emu::MaskArg::Register), nullptr, m

namespace AscendC {

PYPTO_COMPOUND_SAME(AddRelu, relu_arith_type, "int16_t, half, float", pypto_emu::AddReluF)
PYPTO_COMPOUND_SAME(SubRelu, relu_arith_type, "int16_t, half, float", pypto_emu::SubReluF)
PYPTO_COMPOUND_SAME(FusedMulAdd, fma_type, "half, float", pypto_emu::FusedMulAddF)
PYPTO_COMPOUND_SAME(MulAddRelu, fma_type, "half, float", pypto_emu::MulAddReluF)

PYPTO_COMPOUND_MIXED(MulAddDst, axpy_pair, "half/half, float/float, float/half", pypto_emu::MulAddDstF(),
                     const int32_t&, (pypto_emu::check_apart(dst, src0, "src0", "MulAddDst"),
                                      pypto_emu::check_apart(dst, src1, "src1", "MulAddDst")))
PYPTO_COMPOUND_MIXED(AddReluCast, relu_cast_pair, "int8_t/half, int8_t/int16_t, half/float",
                     (pypto_emu::ReluCastF<T, false>()), const uint32_t, (void)0)
PYPTO_COMPOUND_MIXED(SubReluCast, relu_cast_pair, "int8_t/half, int8_t/int16_t, half/float",
                     (pypto_emu::ReluCastF<T, true>()), const uint32_t, (void)0)
PYPTO_COMPOUND_MIXED(MulCast, mul_cast_pair, "int8_t/half, uint8_t/half", pypto_emu::MulCastF<T>(), uint32_t,
                     (void)0)

// AddDeqRelu: half = Relu(Deq(int32_t + int32_t)), the scale from
// SetDeqScale(half). The typed forms <T, U> and the forms without a type.
template <typename T, typename U>
void AddDeqRelu(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1,
                const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "AddDeqRelu");
    static_assert(std::is_same_v<T, half> && std::is_same_v<U, int32_t>,
                  "AddDeqRelu: type pair (dst, src) not supported (supported: half/int32_t)");
    pypto_emu::require_deq_scale("AddDeqRelu");
    pypto_emu::compound_count(dst, src0, src1, count, "AddDeqRelu", pypto_emu::AddDeqReluF());
}
template <typename T, typename U, bool isSetMask = true>
void AddDeqRelu(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1,
                const uint64_t mask[], const int32_t repeatTime, const BinaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "AddDeqRelu");
    static_assert(std::is_same_v<T, half> && std::is_same_v<U, int32_t>,
                  "AddDeqRelu: type pair (dst, src) not supported (supported: half/int32_t)");
    pypto_emu::require_deq_scale("AddDeqRelu");
    pypto_emu::compound_masked(dst, src0, src1, PYPTO_COMPOUND_BITS(mask), repeatTime, repeatParams, "AddDeqRelu",
                               pypto_emu::AddDeqReluF());
}
template <typename T, typename U, bool isSetMask = true>
void AddDeqRelu(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1,
                const uint64_t mask, const int32_t repeatTime, const BinaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "AddDeqRelu");
    static_assert(std::is_same_v<T, half> && std::is_same_v<U, int32_t>,
                  "AddDeqRelu: type pair (dst, src) not supported (supported: half/int32_t)");
    pypto_emu::require_deq_scale("AddDeqRelu");
    pypto_emu::compound_masked(dst, src0, src1, PYPTO_COMPOUND_LEN(mask), repeatTime, repeatParams, "AddDeqRelu",
                               pypto_emu::AddDeqReluF());
}
inline void AddDeqRelu(const LocalTensor<half>& dst, const LocalTensor<int32_t>& src0,
                       const LocalTensor<int32_t>& src1, const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "AddDeqRelu");
    AddDeqRelu<half, int32_t>(dst, src0, src1, count);
}
template <bool isSetMask = true>
void AddDeqRelu(const LocalTensor<half>& dst, const LocalTensor<int32_t>& src0, const LocalTensor<int32_t>& src1,
                const uint64_t mask[], const int32_t repeatTime, const BinaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "AddDeqRelu");
    AddDeqRelu<half, int32_t, isSetMask>(dst, src0, src1, mask, repeatTime, repeatParams);
}
template <bool isSetMask = true>
void AddDeqRelu(const LocalTensor<half>& dst, const LocalTensor<int32_t>& src0, const LocalTensor<int32_t>& src1,
                const uint64_t mask, const int32_t repeatTime, const BinaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "AddDeqRelu");
    AddDeqRelu<half, int32_t, isSetMask>(dst, src0, src1, mask, repeatTime, repeatParams);
}

// Axpy: dst = scalarValue * src + dst (T = dst, U = src and scalar).
template <typename T, typename U>
void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const pypto_emu::same_t<U>& scalarValue,
          const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Axpy");
    PYPTO_COMPOUND_PAIR(axpy_pair, "Axpy", "half/half, float/float, float/half");
    pypto_emu::check_apart(dst, src, "src", "Axpy");
    U s = scalarValue;
    pypto_emu::compound_count(dst, src, src, count, "Axpy",
                              pypto_emu::AxpyF<U>{s});
}
template <typename T, typename U, bool isSetMask = true>
void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const pypto_emu::same_t<U>& scalarValue,
          const uint64_t mask[], const int32_t repeatTime, const UnaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Axpy");
    PYPTO_COMPOUND_PAIR(axpy_pair, "Axpy", "half/half, float/float, float/half");
    pypto_emu::check_apart(dst, src, "src", "Axpy");
    U s = scalarValue;
    pypto_emu::compound_masked(dst, src, src, PYPTO_COMPOUND_BITS(mask), repeatTime, repeatParams.dstBlkStride,
                               repeatParams.dstRepStride, repeatParams.srcBlkStride, repeatParams.srcRepStride,
                               repeatParams.srcBlkStride, repeatParams.srcRepStride, "Axpy",
                               pypto_emu::AxpyF<U>{s});
}
template <typename T, typename U, bool isSetMask = true>
void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const pypto_emu::same_t<U>& scalarValue,
          const uint64_t mask, const int32_t repeatTime, const UnaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Axpy");
    PYPTO_COMPOUND_PAIR(axpy_pair, "Axpy", "half/half, float/float, float/half");
    pypto_emu::check_apart(dst, src, "src", "Axpy");
    U s = scalarValue;
    pypto_emu::compound_masked(dst, src, src, PYPTO_COMPOUND_LEN(mask), repeatTime, repeatParams.dstBlkStride,
                               repeatParams.dstRepStride, repeatParams.srcBlkStride, repeatParams.srcRepStride,
                               repeatParams.srcBlkStride, repeatParams.srcRepStride, "Axpy",
                               pypto_emu::AxpyF<U>{s});
}

// CastDequant, its int32_t -> half form: dst = src times the
// SetDeqScale(half) scale, rounded to half (RINT), as Cast int32_t -> half
// does; count and mask forms (the mask counts int32_t elements). The
// int16_t -> int8_t/uint8_t forms (SetDeqScale(float, int16_t, bool) and
// the VdeqInfo tensor form) are not emulated: a compile error.
#define PYPTO_CAST_DEQUANT_TYPES                                                                                    \
    static_assert(!(std::is_same_v<U, int16_t> && pypto_emu::one_of<T, int8_t, uint8_t>),                          \
                  "CastDequant: the int16_t -> int8_t/uint8_t forms (SetDeqScale(float, int16_t, bool), VdeqInfo) " \
                  "are not emulated; only int32_t -> half is");                                                     \
    static_assert((std::is_same_v<U, int16_t> && pypto_emu::one_of<T, int8_t, uint8_t>) ||                         \
                      (std::is_same_v<T, half> && std::is_same_v<U, int32_t>),                                     \
                  "CastDequant: type pair (dst, src) not supported (supported: half/int32_t, int8_t/int16_t, "      \
                  "uint8_t/int16_t)")

template <typename T, typename U, bool isVecDeq = true, bool halfBlock = true>
void CastDequant(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint32_t count,
                 pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "CastDequant");
    PYPTO_CAST_DEQUANT_TYPES;
    const char* what = "CastDequant";
    if (count > 0x7fffffffu) {
        pypto_emu::fail(what, ": count ", count, " exceeds the Unified Buffer");
    }
    int32_t n = static_cast<int32_t>(count);
    pypto_emu::check_vector_operand(dst, n, what);
    pypto_emu::check_vector_operand(src, n, what);
    pypto_emu::check_cast_mode<T, U>(RoundMode::CAST_RINT, what);
    uint64_t sbytes = static_cast<uint64_t>(n) * sizeof(U);
    pypto_emu::access_read(what, "src", src, 0, sbytes);
    pypto_emu::access_write(dst, 0, static_cast<uint64_t>(n) * sizeof(T));
    pypto_emu::model_vector_bytes(what, sbytes, sizeof(U));
    if (pypto_emu::timing_only()) {
        return;
    }
    std::vector<U> values(src.data(), src.data() + n);
    for (int32_t i = 0; i < n; ++i) {
        dst.data()[i] = pypto_emu::convert<T, U>(values[i], RoundMode::CAST_RINT);
    }
}
template <typename T, typename U, bool isSetMask = true, bool isVecDeq = true, bool halfBlock = true>
void CastDequant(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint64_t mask[], uint8_t repeatTime,
                 const UnaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "CastDequant");
    PYPTO_CAST_DEQUANT_TYPES;
    pypto_emu::masked_cast(dst, src, RoundMode::CAST_RINT, PYPTO_COMPOUND_BITS(mask), repeatTime, repeatParams,
                           "CastDequant");
}
template <typename T, typename U, bool isSetMask = true, bool isVecDeq = true, bool halfBlock = true>
void CastDequant(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask, uint8_t repeatTime,
                 const UnaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "CastDequant");
    PYPTO_CAST_DEQUANT_TYPES;
    pypto_emu::masked_cast(dst, src, RoundMode::CAST_RINT, PYPTO_COMPOUND_LEN(static_cast<uint64_t>(mask)),
                           repeatTime, repeatParams, "CastDequant");
}

#undef PYPTO_CAST_DEQUANT_TYPES

} // namespace AscendC

#undef PYPTO_COMPOUND_SAME
#undef PYPTO_COMPOUND_MIXED
#undef PYPTO_COMPOUND_BITS
#undef PYPTO_COMPOUND_LEN
#undef PYPTO_COMPOUND_TYPE
#undef PYPTO_COMPOUND_PAIR
