// Reductions in their count form: ReduceSum and ReduceMax over the first
// `count` elements, with the documented work-buffer requirement and
// summation order (a binary tree within each 256-byte repeat, repeats
// accumulated in order).
#pragma once

#include "vector.h"

namespace pypto_emu {

#if defined(PYPTO_TARGET_950)
template <typename T>
constexpr bool reduce_type = one_of<T, int16_t, uint16_t, half, int32_t, uint32_t, float>;
#else
template <typename T>
constexpr bool reduce_type = one_of<T, half, float>;
#endif

// Pairwise (adjacent) tree sum of v[0..n), n <= 128 (one repeat),
// rounding to T after each addition as the vector unit does.
template <typename T>
T tree_sum(const T* v, int32_t n)
{
    T level[128];
    for (int32_t i = 0; i < n; ++i) {
        level[i] = v[i];
    }
    while (n > 1) {
        int32_t half_n = n / 2;
        for (int32_t i = 0; i < half_n; ++i) {
            level[i] = static_cast<T>(static_cast<compute_t<T>>(level[2 * i]) +
                                      static_cast<compute_t<T>>(level[2 * i + 1]));
        }
        if (n % 2 == 1) {
            level[half_n] = level[n - 1];
        }
        n = (n + 1) / 2;
    }
    return n == 1 ? level[0] : static_cast<T>(0);
}

} // namespace pypto_emu

namespace AscendC {

template <typename T, bool isSetMask = true>
void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
               const LocalTensor<T>& sharedTmpBuffer, const int32_t count)
{
    PYPTO_REQUIRE_TYPE(reduce_type, "ReduceSum", "half, float");
    const char* what = "ReduceSum";
    pypto_emu::check_vector_operand(src, count, what);
    pypto_emu::check_vector_operand(dst, 1, what);
    pypto_emu::check_vector_operand(sharedTmpBuffer, 0, what);
    constexpr int32_t per_repeat = 256 / sizeof(T);
    T total = static_cast<T>(0);
    for (int32_t start = 0; start < count; start += per_repeat) {
        int32_t n = count - start < per_repeat ? count - start : per_repeat;
        T part = pypto_emu::tree_sum(src.data() + start, n);
        total = static_cast<T>(static_cast<pypto_emu::compute_t<T>>(total) +
                               static_cast<pypto_emu::compute_t<T>>(part));
    }
    dst.data()[0] = total;
}

// dst[0] = max of src[0..count); with calIndex, dst[1] holds the index of
// the first maximum as integer bits.
template <typename T>
void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src,
               const LocalTensor<T>& sharedTmpBuffer, const int32_t count, bool calIndex = 0)
{
    PYPTO_REQUIRE_TYPE(reduce_type, "ReduceMax", "half, float");
    const char* what = "ReduceMax";
    pypto_emu::check_vector_operand(src, count, what);
    pypto_emu::check_vector_operand(dst, calIndex ? 2 : 1, what);
    if (count <= 0) {
        pypto_emu::fail(what, ": count ", count, " must be positive");
    }
    // Work space: two values per 256-byte repeat, rounded up to 32 bytes.
    constexpr int32_t per_repeat = 256 / sizeof(T);
    constexpr int32_t per_block = 32 / sizeof(T);
    int32_t repeats = (count + per_repeat - 1) / per_repeat;
    int32_t need = (repeats * 2 + per_block - 1) / per_block * per_block;
    pypto_emu::check_vector_operand(sharedTmpBuffer, 0, what);
    if (sharedTmpBuffer.GetSize() < static_cast<uint32_t>(need)) {
        pypto_emu::fail(what, ": the work buffer has ", sharedTmpBuffer.GetSize(),
                        " elements; ", count, " elements need ", need);
    }
    const T* s = src.data();
    int32_t best = 0;
    for (int32_t i = 1; i < count; ++i) {
        if (static_cast<pypto_emu::compute_t<T>>(s[i]) > static_cast<pypto_emu::compute_t<T>>(s[best])) {
            best = i;
        }
    }
    dst.data()[0] = s[best];
    if (calIndex) {
        if constexpr (sizeof(T) == 4) {
            uint32_t bits = static_cast<uint32_t>(best);
            std::memcpy(&dst.data()[1], &bits, 4);
        } else {
            uint16_t bits = static_cast<uint16_t>(best);
            std::memcpy(&dst.data()[1], &bits, 2);
        }
    }
}

} // namespace AscendC
