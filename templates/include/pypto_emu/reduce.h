// Reductions (Memory vector compute, 归约计算) for Atlas A2/A3:
//
//   ReduceRepeat<SUM|MAX|MIN>   one result (and index) per 256-byte repeat
//   ReduceDataBlock<SUM|MAX|MIN> one result per 32-byte data block
//   ReducePairElem<SUM>         one sum per pair of adjacent elements
//   ReduceSum / ReduceMax / ReduceMin  one result over everything, in the
//                               count form and the mask/repeat forms
//   GetReduceRepeatSumSpr, GetReduceRepeatMaxMinSpr  the result registers
//
// and the names they replaced in CANN 9.1 (WholeReduceSum/Max/Min,
// RepeatReduceSum, BlockReduceSum/Max/Min, PairReduceSum) and in CANN 8.5
// (GetAccVal, GetReduceMaxMinCount), which kernels written earlier use.
//
// Order of floating-point sums (the vendor documents a binary tree):
// within a data block or a repeat, adjacent elements are added pairwise,
// level by level (element 2i with 2i+1, then those results pairwise, ...),
// each addition rounded to the element type. An element the mask leaves
// out does not take part: its partner passes up unchanged. Beyond one
// repeat: the count form of ReduceSum adds the repeat results in order
// (the vendor's "方式一" for A2/A3); the mask forms reduce the repeat
// results again, a repeat (256 bytes of them) at a time, by the same tree,
// until one value is left ("方式二": how the later rounds are grouped is our
// reading of the work-space formula). Half sums use IEEE overflow to inf
// (the documented default, non-saturating mode).
//
// Maximum and minimum: the first occurrence wins ties (the documented
// smallest index); a NaN wins over every number (the documented NaN
// results) and the first NaN is kept. Indices are stored in the bits of the
// destination's element type (uint16_t in a half, uint32_t in a float);
// ORDER_ONLY_INDEX stores a uint32_t for both.
//
// Enforced, as errors naming the rule: repeatTime 0..255 (ReduceSum/Max/Min
// mask forms: any non-negative int32_t), strides 0..65535, the mask width,
// source and work buffers on 32-byte boundaries, the destination's
// documented alignment, every element read or written inside its operand,
// the documented work-buffer sizes, half indices up to 65535. Element
// types (half, float) are compile errors.
#pragma once

#include <cmath>
#include <cstring>
#include <vector>

#include "mask.h"

namespace AscendC {

enum class ReduceType { SUM = 0, MAX, MIN };

enum class ReduceOrder { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };

} // namespace AscendC

namespace pypto_emu {

using AscendC::ReduceOrder;
using AscendC::ReduceType;

// The ReduceMax/Min/Sum type list is the picked row's (arch.h).
template <typename T>
constexpr bool reduce_float_type = one_of<T, half, float>;

// Unsigned integer of T's width: how an index is stored in a T.
template <typename T>
using index_bits_t = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;

template <typename T>
T index_as(uint32_t index)
{
    index_bits_t<T> bits = static_cast<index_bits_t<T>>(index);
    T v{};
    std::memcpy(static_cast<void*>(&v), &bits, sizeof(T));
    return v;
}

template <typename T>
bool is_nan(T v)
{
    if constexpr (one_of<T, half, float>) {
        return std::isnan(static_cast<float>(v));
    } else {
        return false;
    }
}

template <typename T>
T add_round(T a, T b)
{
    return static_cast<T>(static_cast<compute_t<T>>(a) + static_cast<compute_t<T>>(b));
}

// Does `cand` replace `best` (seen earlier) as the maximum/minimum?
template <typename T>
bool beats(ReduceType kind, T cand, T best)
{
    if (is_nan(best)) {
        return false;
    }
    if (is_nan(cand)) {
        return true;
    }
    auto c = static_cast<compute_t<T>>(cand);
    auto b = static_cast<compute_t<T>>(best);
    return kind == ReduceType::MAX ? c > b : c < b;
}

// A value or nothing (an element the mask leaves out).
template <typename T>
struct Lane {
    bool has = false;
    T v{};
};

// Pairwise tree sum of v[0..n): level by level, slot 2i with 2i+1; a
// missing partner passes the other up. Nothing if every slot is empty.
template <typename T>
Lane<T> tree_sum(std::vector<Lane<T>> v)
{
    size_t n = v.size();
    while (n > 1) {
        size_t half_n = (n + 1) / 2;
        for (size_t i = 0; i < half_n; ++i) {
            Lane<T> a = v[2 * i];
            Lane<T> b = 2 * i + 1 < n ? v[2 * i + 1] : Lane<T>{};
            if (a.has && b.has) {
                v[i] = Lane<T>{true, add_round(a.v, b.v)};
            } else {
                v[i] = a.has ? a : b;
            }
        }
        n = half_n;
    }
    return n == 1 ? v[0] : Lane<T>{};
}

// tree_sum of n >= 1 values that are all present, in place in v[0..n):
// the same additions in the same order, without the lanes' flags. Out of
// line so that its loop vectorises (see map_unary in vector.h).
template <typename T>
[[gnu::noinline]] T dense_tree_sum(T* v, size_t n)
{
    while (n > 1) {
        size_t pairs = n / 2;
        for (size_t i = 0; i < pairs; ++i) {
            v[i] = add_round(v[2 * i], v[2 * i + 1]);
        }
        if (n % 2 != 0) {
            v[pairs] = v[n - 1];
        }
        n = (n + 1) / 2;
    }
    return v[0];
}

// The best (first on ties) of the slots, and its position.
template <typename T>
bool best_of(ReduceType kind, const std::vector<Lane<T>>& v, T& value, uint32_t& index)
{
    bool found = false;
    for (size_t i = 0; i < v.size(); ++i) {
        if (v[i].has && (!found || beats(kind, v[i].v, value))) {
            value = v[i].v;
            index = static_cast<uint32_t>(i);
            found = true;
        }
    }
    return found;
}

inline const char* reduce_name(ReduceType t)
{
    return t == ReduceType::SUM ? "SUM" : t == ReduceType::MAX ? "MAX" : "MIN";
}

inline const char* order_name(ReduceOrder o)
{
    switch (o) {
    case ReduceOrder::ORDER_VALUE_INDEX:
        return "ORDER_VALUE_INDEX";
    case ReduceOrder::ORDER_INDEX_VALUE:
        return "ORDER_INDEX_VALUE";
    case ReduceOrder::ORDER_ONLY_VALUE:
        return "ORDER_ONLY_VALUE";
    case ReduceOrder::ORDER_ONLY_INDEX:
        return "ORDER_ONLY_INDEX";
    }
    return "an unknown ReduceOrder";
}

// A Unified Buffer operand starting on an `align`-byte boundary.
template <typename T>
void check_reduce_operand(const AscendC::LocalTensor<T>& t, uint32_t align, const char* name, const char* what,
                          const char* why = "")
{
    poll(what);
    if (t.data() == nullptr) {
        fail(what, ": ", name, " was never allocated");
    }
    if (memory_of(t.position()) != Memory::UB) {
        fail(what, ": ", name, " must be in the Unified Buffer (VECIN, VECOUT or VECCALC), not ",
             position_name(t.position()));
    }
    if (t.offset_bytes() % align != 0) {
        fail(what, ": ", name, " starts at Unified Buffer byte ", t.offset_bytes(), ", which is not a multiple of ",
             align, why);
    }
}

inline uint32_t check_stride(int32_t v, const char* name, const char* what)
{
    if (v < 0 || v > 65535) {
        fail(what, ": ", name, " ", v, " is outside 0..65535");
    }
    return static_cast<uint32_t>(v);
}

inline uint64_t mask_length(int32_t mask, const char* what)
{
    if (mask < 0) {
        fail(what, ": mask ", mask, " is negative");
    }
    return static_cast<uint64_t>(mask);
}

// The largest destination byte a reduction writes must be inside it.
template <typename T>
void check_dst_end(const AscendC::LocalTensor<T>& dst, uint64_t end, uint32_t at_repeat, uint32_t stride,
                   uint32_t unit, const char* what)
{
    uint64_t bytes = static_cast<uint64_t>(dst.GetSize()) * sizeof(T);
    if (end > bytes) {
        fail(what, ": repeat ", at_repeat, " writes up to byte ", end, " of dst, which has ", bytes,
             " bytes (dstRepStride ", stride, ", in units of ", unit,
             " bytes); accesses must stay inside the operands");
    }
}

// The result registers the reductions leave behind, per block.
struct ReduceRegisters {
    uint64_t launch = ~0ull;
    uint32_t block_idx = ~0u;
    // ReduceSum count form: its result.
    enum class Sum { None, Count, Mask } sum = Sum::None;
    uint32_t sum_bytes = 0;
    uint32_t sum_bits = 0;
    // ReduceRepeat<MAX/MIN>, ReduceMax, ReduceMin: the best value, its index.
    const char* maxmin_from = nullptr; // the instruction that set it
    const char* maxmin_bad = nullptr;  // why its result is not available
    uint32_t maxmin_bytes = 0;
    uint32_t value_bits = 0;
    uint32_t index_bits = 0;
};

inline ReduceRegisters& reduce_registers()
{
    static thread_local ReduceRegisters regs;
    if (regs.launch != block.launch_id || regs.block_idx != block.idx) {
        regs = ReduceRegisters{};
        regs.launch = block.launch_id;
        regs.block_idx = block.idx;
    }
    return regs;
}

template <typename T>
uint32_t raw_bits(T v)
{
    index_bits_t<T> b;
    std::memcpy(&b, &v, sizeof(T));
    return b;
}

template <typename T>
void set_maxmin_register(const char* from, const char* bad, T value, uint32_t index_bits)
{
    ReduceRegisters& r = reduce_registers();
    r.maxmin_from = from;
    r.maxmin_bad = bad;
    r.maxmin_bytes = sizeof(T);
    r.value_bits = raw_bits(value);
    r.index_bits = index_bits;
}

// A plan for a mask form whose repeatTime is not limited to 255
// (ReduceSum/Max/Min); otherwise as make_plan.
inline RepeatPlan make_long_plan(const char* what, uint32_t elem_bytes, MaskArg arg, const uint64_t* bits,
                                 uint64_t len, int32_t repeat_time)
{
    if (repeat_time < 0) {
        fail(what, ": repeatTime ", repeat_time, " is negative");
    }
    RepeatPlan p = make_plan(what, elem_bytes, arg, bits, len, repeat_time > 255 ? 255 : repeat_time);
    if (!p.counter) {
        p.repeats = static_cast<uint32_t>(repeat_time);
    }
    return p;
}

// The active slots of repeat r of a source seen through `s`.
template <typename T>
std::vector<Lane<T>> repeat_slots(const Strided<T>& s, const RepeatPlan& p, uint32_t r)
{
    std::vector<Lane<T>> v(p.per_repeat);
    for (uint32_t e = 0; e < p.per_repeat; ++e) {
        if (p.active(r, e)) {
            v[e] = Lane<T>{true, s.get(r, e)};
        }
    }
    return v;
}

// ReduceRepeat: per repeat, the sum, or the maximum/minimum and its index.
template <ReduceType kind, typename T>
void reduce_repeat(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, MaskArg arg,
                   const uint64_t* bits, uint64_t len, int32_t repeat_time, int32_t dst_rep, int32_t src_blk,
                   int32_t src_rep, ReduceOrder order, const char* what)
{
    // initcheck: the destination counts as written in full (not checked per element).
    access_write(dst, 0, dst.GetLength());
    uint32_t drep = check_stride(dst_rep, "dstRepStride", what);
    uint32_t sblk = check_stride(src_blk, "srcBlkStride", what);
    uint32_t srep = check_stride(src_rep, "srcRepStride", what);
    if (kind != ReduceType::SUM && static_cast<int>(order) > 3) {
        fail(what, ": ReduceOrder ", static_cast<int>(order), " is not one of the four documented orders");
    }
    RepeatPlan p = make_plan(what, sizeof(T), arg, bits, len, repeat_time);
    // The result's size: the unit of dstRepStride and the alignment of dst.
    uint32_t unit = sizeof(T);
    if (kind != ReduceType::SUM) {
        if (order == ReduceOrder::ORDER_VALUE_INDEX || order == ReduceOrder::ORDER_INDEX_VALUE) {
            unit = 2 * sizeof(T);
        } else if (order == ReduceOrder::ORDER_ONLY_INDEX) {
            unit = 4;
        }
    }
    check_reduce_operand(src, 32, "src", what);
    check_reduce_operand(dst, unit, "dst", what,
                         kind == ReduceType::SUM
                             ? concat(" (the size of one sum)").c_str()
                             : concat(" (the size of one ", reduce_name(kind), " result with ", order_name(order), ")")
                                   .c_str());
    auto s = strided(src, sblk, srep, "src", what);
    check_reach(s, p, what);
    // Which repeats write (a repeat with no active element writes nothing).
    uint64_t end = 0;
    uint32_t at = 0;
    for (uint32_t r = 0; r < p.repeats; ++r) {
        uint64_t o = static_cast<uint64_t>(r) * drep * unit + unit;
        if (o > end) {
            end = o;
            at = r;
        }
    }
    if (p.repeats > 0 && (p.counter || (p.bits[0] | p.bits[1]) != 0)) {
        check_dst_end(dst, end, at, drep, unit, what);
    }
    uint8_t* out = reinterpret_cast<uint8_t*>(dst.data());
    bool have_best = false;
    T best{};
    uint32_t best_index = 0;
    for (uint32_t r = 0; r < p.repeats; ++r) {
        std::vector<Lane<T>> v = repeat_slots(s, p, r);
        uint8_t* d = out + static_cast<uint64_t>(r) * drep * unit;
        if constexpr (kind == ReduceType::SUM) {
            Lane<T> sum = tree_sum(v);
            if (sum.has) {
                std::memcpy(d, &sum.v, sizeof(T));
            }
        } else {
            T value{};
            uint32_t index = 0;
            if (!best_of(kind, v, value, index)) {
                continue;
            }
            T idx = index_as<T>(index);
            switch (order) {
            case ReduceOrder::ORDER_VALUE_INDEX:
                std::memcpy(d, &value, sizeof(T));
                std::memcpy(d + sizeof(T), &idx, sizeof(T));
                break;
            case ReduceOrder::ORDER_INDEX_VALUE:
                std::memcpy(d, &idx, sizeof(T));
                std::memcpy(d + sizeof(T), &value, sizeof(T));
                break;
            case ReduceOrder::ORDER_ONLY_VALUE:
                std::memcpy(d, &value, sizeof(T));
                break;
            case ReduceOrder::ORDER_ONLY_INDEX: {
                uint32_t i32 = index;
                std::memcpy(d, &i32, 4);
                break;
            }
            }
            if (!have_best || beats(kind, value, best)) {
                best = value;
                best_index = r * p.per_repeat + index;
                have_best = true;
            }
        }
    }
    if constexpr (kind != ReduceType::SUM) {
        if (have_best) {
            const char* bad = nullptr;
            if (p.counter) {
                bad = "it ran in counter mode";
            } else if (sblk != 1 || srep != 8) {
                bad = "its source was not contiguous (srcBlkStride 1, srcRepStride 8)";
            }
            set_maxmin_register(what, bad, best, best_index);
        }
    }
}

// ReduceDataBlock: per data block of each repeat, the sum/maximum/minimum.
template <ReduceType kind, typename T>
void reduce_data_block(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, MaskArg arg,
                       const uint64_t* bits, uint64_t len, int32_t repeat_time, int32_t dst_rep, int32_t src_blk,
                       int32_t src_rep, const char* what)
{
    // initcheck: the destination counts as written in full (not checked per element).
    access_write(dst, 0, dst.GetLength());
    uint32_t drep = check_stride(dst_rep, "dstRepStride", what);
    uint32_t sblk = check_stride(src_blk, "srcBlkStride", what);
    uint32_t srep = check_stride(src_rep, "srcRepStride", what);
    RepeatPlan p = make_plan(what, sizeof(T), arg, bits, len, repeat_time);
    check_reduce_operand(src, 32, "src", what);
    check_reduce_operand(dst, 8 * sizeof(T), "dst", what);
    auto s = strided(src, sblk, srep, "src", what);
    check_reach(s, p, what);
    constexpr uint32_t per_block = 32 / sizeof(T);
    const uint32_t unit = 8 * sizeof(T);
    uint64_t end = 0;
    uint32_t at = 0;
    for (uint32_t r = 0; r < p.repeats; ++r) {
        for (uint32_t j = 0; j < 8; ++j) {
            bool any = false;
            for (uint32_t k = 0; k < per_block; ++k) {
                any = any || p.active(r, j * per_block + k);
            }
            uint64_t o = static_cast<uint64_t>(r) * drep * unit + (j + 1) * sizeof(T);
            if (any && o > end) {
                end = o;
                at = r;
            }
        }
    }
    check_dst_end(dst, end, at, drep, unit, what);
    for (uint32_t r = 0; r < p.repeats; ++r) {
        std::vector<Lane<T>> v = repeat_slots(s, p, r);
        for (uint32_t j = 0; j < 8; ++j) {
            std::vector<Lane<T>> b(v.begin() + j * per_block, v.begin() + (j + 1) * per_block);
            Lane<T> res;
            if constexpr (kind == ReduceType::SUM) {
                res = tree_sum(b);
            } else {
                uint32_t index = 0;
                res.has = best_of(kind, b, res.v, index);
            }
            if (res.has) {
                dst.data()[static_cast<uint64_t>(r) * drep * 8 + j] = res.v;
            }
        }
    }
}

// ReducePairElem: per repeat, the sums of elements 2k and 2k + 1.
template <typename T>
void reduce_pair(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, MaskArg arg,
                 const uint64_t* bits, uint64_t len, int32_t repeat_time, int32_t dst_rep, int32_t src_blk,
                 int32_t src_rep, const char* what)
{
    // initcheck: the destination counts as written in full (not checked per element).
    access_write(dst, 0, dst.GetLength());
    uint32_t drep = check_stride(dst_rep, "dstRepStride", what);
    uint32_t sblk = check_stride(src_blk, "srcBlkStride", what);
    uint32_t srep = check_stride(src_rep, "srcRepStride", what);
    RepeatPlan p = make_plan(what, sizeof(T), arg, bits, len, repeat_time);
    check_reduce_operand(src, 32, "src", what);
    check_reduce_operand(dst, 32, "dst", what);
    auto s = strided(src, sblk, srep, "src", what);
    check_reach(s, p, what);
    const uint32_t pairs = p.per_repeat / 2;
    uint64_t end = 0;
    uint32_t at = 0;
    for (uint32_t r = 0; r < p.repeats; ++r) {
        for (uint32_t k = 0; k < pairs; ++k) {
            uint64_t o = (static_cast<uint64_t>(r) * drep * pairs + k + 1) * sizeof(T);
            if ((p.active(r, 2 * k) || p.active(r, 2 * k + 1)) && o > end) {
                end = o;
                at = r;
            }
        }
    }
    check_dst_end(dst, end, at, drep, 128, what);
    for (uint32_t r = 0; r < p.repeats; ++r) {
        std::vector<Lane<T>> v = repeat_slots(s, p, r);
        for (uint32_t k = 0; k < pairs; ++k) {
            Lane<T> res = tree_sum(std::vector<Lane<T>>{v[2 * k], v[2 * k + 1]});
            if (res.has) {
                dst.data()[static_cast<uint64_t>(r) * drep * pairs + k] = res.v;
            }
        }
    }
}

// Elements of the work buffer ReduceMax/ReduceMin need for `repeats` first-
// round repeats (the documented formula).
inline uint64_t maxmin_work(uint64_t repeats, uint32_t elem_bytes, bool cal_index)
{
    const uint64_t per_block = 32 / elem_bytes;
    const uint64_t per_repeat = 256 / elem_bytes;
    auto up = [](uint64_t a, uint64_t b) { return (a + b - 1) / b; };
    uint64_t out1 = repeats * 2;
    uint64_t end1 = up(out1, per_block) * per_block;
    if (!cal_index) {
        return end1;
    }
    uint64_t out2 = up(out1, per_repeat) * 2;
    uint64_t end2 = up(out2, per_block) * per_block;
    if (out2 <= 2) {
        return end1 + end2;
    }
    uint64_t out3 = up(out2, per_repeat) * 2;
    return end1 + end2 + up(out3, per_block) * per_block;
}

template <typename T>
void check_work(const AscendC::LocalTensor<T>& work, uint64_t need, const char* why, const char* what)
{
    if (work.GetSize() < need) {
        fail(what, ": sharedTmpBuffer has ", work.GetSize(), " elements; ", why, " need ", need);
    }
}

// ReduceMax/ReduceMin over the active elements of p (src seen through s):
// the first best value and its index (repeat * elements per repeat + the
// element's place in its repeat).
template <ReduceType kind, typename T>
void reduce_maxmin_all(const AscendC::LocalTensor<T>& dst, const Strided<T>& s, const RepeatPlan& p,
                       bool cal_index, const char* bad, const char* what)
{
    // initcheck: the destination counts as written in full (not checked per element).
    access_write(dst, 0, dst.GetLength());
    bool found = false;
    T best{};
    uint64_t best_index = 0;
    for (uint32_t r = 0; r < p.repeats; ++r) {
        for (uint32_t e = 0; e < p.per_repeat; ++e) {
            if (!p.active(r, e)) {
                continue;
            }
            T v = s.get(r, e);
            if (!found || beats(kind, v, best)) {
                best = v;
                best_index = static_cast<uint64_t>(r) * p.per_repeat + e;
                found = true;
            }
        }
    }
    if (!found) {
        return;
    }
    if (cal_index && sizeof(T) == 2 && best_index > 65535) {
        fail(what, ": the index of the result is ", best_index,
             "; a half result holds indices up to 65535 (uint16_t)");
    }
    dst.data()[0] = best;
    if (cal_index) {
        dst.data()[1] = index_as<T>(static_cast<uint32_t>(best_index));
    }
    // The register's index is documented as not accurate after ReduceMax/
    // ReduceMin: the emulation leaves all ones there.
    set_maxmin_register(what, bad, best, sizeof(T) == 2 ? 0xFFFFu : 0xFFFFFFFFu);
}

template <ReduceType kind, typename T>
void reduce_maxmin_count(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                         const AscendC::LocalTensor<T>& work, int32_t count, bool cal_index, const char* what)
{
    // initcheck: the destination counts as written in full (not checked per element).
    access_write(dst, 0, dst.GetLength());
    poll(what);
    if (count < 0) {
        fail(what, ": count ", count, " is negative");
    }
    check_reduce_operand(src, 32, "src", what);
    check_reduce_operand(work, 32, "sharedTmpBuffer", what);
    check_reduce_operand(dst, cal_index ? 2 * sizeof(T) : sizeof(T), "dst", what);
    if (static_cast<uint32_t>(count) > src.GetSize()) {
        fail(what, ": count ", count, " exceeds src's ", src.GetSize(), " elements");
    }
    model_vector_bytes(what, static_cast<uint64_t>(count) * sizeof(T), sizeof(T));
    if (count == 0) {
        return;
    }
    if (dst.GetSize() < (cal_index ? 2u : 1u)) {
        fail(what, ": dst has ", dst.GetSize(), " elements; the result", cal_index ? " and its index need 2" : " needs 1");
    }
    constexpr uint32_t per_repeat = 256 / sizeof(T);
    uint64_t repeats = (static_cast<uint64_t>(count) + per_repeat - 1) / per_repeat;
    check_work(work, maxmin_work(repeats, sizeof(T), cal_index),
               concat(count, " elements (", repeats, " repeats", cal_index ? ", with the index)" : ")").c_str(),
               what);
    RepeatPlan p;
    p.per_repeat = per_repeat;
    p.counter = true;
    p.total = static_cast<uint64_t>(count);
    p.repeats = static_cast<uint32_t>(repeats);
    access_write(work, 0, work.GetLength());
    // The count form reads the first `count` elements, contiguous: one
    // range for the sanitizers, not one per element (which made them cost
    // six times a softmax's run), so the elements are read unchecked.
    access_read(what, "src", src, 0, static_cast<uint64_t>(count) * sizeof(T));
    Strided<T> s{src.data(), static_cast<uint64_t>(src.GetSize()) * sizeof(T), 1, 8, "src", AccessView{}};
    reduce_maxmin_all<kind>(dst, s, p, cal_index, nullptr, what);
}

template <ReduceType kind, typename T>
void reduce_maxmin_mask(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                        const AscendC::LocalTensor<T>& work, MaskArg arg, const uint64_t* bits, uint64_t len,
                        int32_t repeat_time, int32_t src_rep, bool cal_index, const char* what)
{
    // initcheck: the destination counts as written in full (not checked per element).
    access_write(dst, 0, dst.GetLength());
    uint32_t srep = check_stride(src_rep, "srcRepStride", what);
    RepeatPlan p = make_long_plan(what, sizeof(T), arg, bits, len, repeat_time);
    check_reduce_operand(src, 32, "src", what);
    check_reduce_operand(work, 32, "sharedTmpBuffer", what);
    check_reduce_operand(dst, cal_index ? 2 * sizeof(T) : sizeof(T), "dst", what);
    auto s = strided(src, 1, srep, "src", what);
    check_reach(s, p, what);
    if (p.repeats == 0 || (!p.counter && (p.bits[0] | p.bits[1]) == 0)) {
        return;
    }
    if (dst.GetSize() < (cal_index ? 2u : 1u)) {
        fail(what, ": dst has ", dst.GetSize(), " elements; the result", cal_index ? " and its index need 2" : " needs 1");
    }
    check_work(work, maxmin_work(p.repeats, sizeof(T), cal_index),
               concat(p.repeats, " repeats", cal_index ? " with the index" : "").c_str(), what);
    access_write(work, 0, work.GetLength());
    const char* bad = p.counter ? "it ran in counter mode"
                      : srep != 8 ? "its source was not contiguous (srcRepStride 8)"
                                  : nullptr;
    reduce_maxmin_all<kind>(dst, s, p, cal_index, bad, what);
}

// The mask forms of ReduceSum: each repeat by the tree, then the repeat
// results a repeat at a time by the tree again, until one is left.
template <typename T>
void reduce_sum_mask(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                     const AscendC::LocalTensor<T>& work, MaskArg arg, const uint64_t* bits, uint64_t len,
                     int32_t repeat_time, int32_t src_rep, const char* what)
{
    // initcheck: the destination counts as written in full (not checked per element).
    access_write(dst, 0, dst.GetLength());
    uint32_t srep = check_stride(src_rep, "srcRepStride", what);
    RepeatPlan p = make_long_plan(what, sizeof(T), arg, bits, len, repeat_time);
    check_reduce_operand(src, 32, "src", what);
    check_reduce_operand(work, 32, "sharedTmpBuffer", what);
    check_reduce_operand(dst, sizeof(T), "dst", what);
    auto s = strided(src, 1, srep, "src", what);
    check_reach(s, p, what);
    if (p.repeats == 0 || (!p.counter && (p.bits[0] | p.bits[1]) == 0)) {
        return;
    }
    if (dst.GetSize() < 1) {
        fail(what, ": dst has no elements");
    }
    constexpr uint64_t per_block = 32 / sizeof(T);
    check_work(work, (p.repeats + per_block - 1) / per_block * per_block,
               concat(p.repeats, " repeats").c_str(), what);
    std::vector<Lane<T>> level;
    for (uint32_t r = 0; r < p.repeats; ++r) {
        level.push_back(tree_sum(repeat_slots(s, p, r)));
    }
    while (level.size() > 1) {
        std::vector<Lane<T>> next;
        for (size_t i = 0; i < level.size(); i += p.per_repeat) {
            size_t n = level.size() - i < p.per_repeat ? level.size() - i : p.per_repeat;
            next.push_back(tree_sum(std::vector<Lane<T>>(level.begin() + i, level.begin() + i + n)));
        }
        level = std::move(next);
    }
    if (level[0].has) {
        dst.data()[0] = level[0].v;
    }
    reduce_registers().sum = ReduceRegisters::Sum::Mask;
}

} // namespace pypto_emu

namespace AscendC {

#define PYPTO_REDUCE_REQUIRE(NAME)                                                                      \
    PYPTO_REQUIRE_TYPE(Target::reduce, NAME, PYPTO_ARCH(REDUCE_TYPES));                                        \
    static_assert(std::is_same_v<T, U>, NAME ": the destination and source element types must be the " \
                                             "same on " PYPTO_ARCH(TARGET_NAME))

#define PYPTO_REDUCE_FLOAT_REQUIRE(NAME)                                                                \
    static_assert(pypto_emu::reduce_float_type<T>, NAME ": element type not supported by the vector unit " \
                                                        "(supported: half, float)");                     \
    static_assert(std::is_same_v<T, U>, NAME ": the destination and source element types must be the same")

// The two mask forms; with isSetMask = false the register's mask is used.
#define PYPTO_REDUCE_BITS(bits)                                                                          \
    (isSetMask ? pypto_emu::MaskArg::Bitwise : pypto_emu::MaskArg::Register), bits, 0
#define PYPTO_REDUCE_LEN(len)                                                                            \
    (isSetMask ? pypto_emu::MaskArg::Continuous : pypto_emu::MaskArg::Register), nullptr, len

// ---- ReduceRepeat (and WholeReduceSum/Max/Min, RepeatReduceSum) ----------

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
void ReduceRepeat(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint64_t mask[],
                  const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                  const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "ReduceRepeat");
    PYPTO_REDUCE_REQUIRE("ReduceRepeat");
    pypto_emu::reduce_repeat<reduceType>(dst, src, PYPTO_REDUCE_BITS(mask), repeatTime, dstRepStride, srcBlkStride,
                                         srcRepStride, order, "ReduceRepeat");
}

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
void ReduceRepeat(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask, const int32_t repeatTime,
                  const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,
                  ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "ReduceRepeat");
    PYPTO_REDUCE_REQUIRE("ReduceRepeat");
    uint64_t len = isSetMask ? pypto_emu::mask_length(mask, "ReduceRepeat") : 0;
    pypto_emu::reduce_repeat<reduceType>(dst, src, PYPTO_REDUCE_LEN(len), repeatTime, dstRepStride, srcBlkStride,
                                         srcRepStride, order, "ReduceRepeat");
}

#define PYPTO_WHOLE_REDUCE(NAME, KIND, ORDER_PARAM, ORDER_ARG)                                             \
    template <typename T, bool isSetMask = true>                                                          \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],                \
              const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,           \
              const int32_t srcRepStride ORDER_PARAM, pypto_emu::Site site = pypto_emu::Site::here())                                                     \
    {                                                                                                     \
        pypto_emu::AtSite at_site(site, #NAME);                                                           \
        using U = T;                                                                                      \
        PYPTO_REDUCE_REQUIRE(#NAME);                                                                      \
        pypto_emu::reduce_repeat<KIND>(dst, src, PYPTO_REDUCE_BITS(mask), repeatTime, dstRepStride,        \
                                       srcBlkStride, srcRepStride, ORDER_ARG, #NAME);                     \
    }                                                                                                     \
    template <typename T, bool isSetMask = true>                                                          \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,                   \
              const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,           \
              const int32_t srcRepStride ORDER_PARAM, pypto_emu::Site site = pypto_emu::Site::here())                                                     \
    {                                                                                                     \
        pypto_emu::AtSite at_site(site, #NAME);                                                           \
        using U = T;                                                                                      \
        PYPTO_REDUCE_REQUIRE(#NAME);                                                                      \
        uint64_t len = isSetMask ? pypto_emu::mask_length(mask, #NAME) : 0;                               \
        pypto_emu::reduce_repeat<KIND>(dst, src, PYPTO_REDUCE_LEN(len), repeatTime, dstRepStride,            \
                                       srcBlkStride, srcRepStride, ORDER_ARG, #NAME);                     \
    }

#define PYPTO_COMMA ,
PYPTO_WHOLE_REDUCE(WholeReduceSum, ReduceType::SUM, , ReduceOrder::ORDER_VALUE_INDEX)
PYPTO_WHOLE_REDUCE(WholeReduceMax, ReduceType::MAX,
                   PYPTO_COMMA ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, order)
PYPTO_WHOLE_REDUCE(WholeReduceMin, ReduceType::MIN,
                   PYPTO_COMMA ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, order)
#undef PYPTO_COMMA
#undef PYPTO_WHOLE_REDUCE

// The older per-repeat sum: a continuous mask only; dstBlkStride has no
// effect (documented).
template <typename T, bool isSetMask = true>
void RepeatReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                     const int32_t mask, const int32_t dstBlkStride, const int32_t srcBlkStride,
                     const int32_t dstRepStride, const int32_t srcRepStride, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "RepeatReduceSum");
    using U = T;
    PYPTO_REDUCE_REQUIRE("RepeatReduceSum");
    (void)dstBlkStride;
    uint64_t len = isSetMask ? pypto_emu::mask_length(mask, "RepeatReduceSum") : 0;
    pypto_emu::reduce_repeat<ReduceType::SUM>(dst, src, PYPTO_REDUCE_LEN(len), repeatTime, dstRepStride,
                                              srcBlkStride, srcRepStride, ReduceOrder::ORDER_VALUE_INDEX,
                                              "RepeatReduceSum");
}

// ---- ReduceDataBlock (and BlockReduceSum/Max/Min) ------------------------

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
void ReduceDataBlock(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint64_t mask[],
                     const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                     const int32_t srcRepStride, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "ReduceDataBlock");
    PYPTO_REDUCE_FLOAT_REQUIRE("ReduceDataBlock");
    pypto_emu::reduce_data_block<reduceType>(dst, src, PYPTO_REDUCE_BITS(mask), repeatTime, dstRepStride,
                                             srcBlkStride, srcRepStride, "ReduceDataBlock");
}

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
void ReduceDataBlock(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask,
                     const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                     const int32_t srcRepStride, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "ReduceDataBlock");
    PYPTO_REDUCE_FLOAT_REQUIRE("ReduceDataBlock");
    uint64_t len = isSetMask ? pypto_emu::mask_length(mask, "ReduceDataBlock") : 0;
    pypto_emu::reduce_data_block<reduceType>(dst, src, PYPTO_REDUCE_LEN(len), repeatTime, dstRepStride,
                                             srcBlkStride, srcRepStride, "ReduceDataBlock");
}

#define PYPTO_BLOCK_REDUCE(NAME, KIND)                                                                     \
    template <typename T, bool isSetMask = true>                                                          \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,             \
              const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,              \
              const int32_t srcRepStride, pypto_emu::Site site = pypto_emu::Site::here())                                                                 \
    {                                                                                                     \
        pypto_emu::AtSite at_site(site, #NAME);                                                           \
        using U = T;                                                                                      \
        PYPTO_REDUCE_FLOAT_REQUIRE(#NAME);                                                                \
        pypto_emu::reduce_data_block<KIND>(dst, src, PYPTO_REDUCE_BITS(mask), repeatTime, dstRepStride,    \
                                           srcBlkStride, srcRepStride, #NAME);                            \
    }                                                                                                     \
    template <typename T, bool isSetMask = true>                                                          \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,             \
              const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,                 \
              const int32_t srcRepStride, pypto_emu::Site site = pypto_emu::Site::here())                                                                 \
    {                                                                                                     \
        pypto_emu::AtSite at_site(site, #NAME);                                                           \
        using U = T;                                                                                      \
        PYPTO_REDUCE_FLOAT_REQUIRE(#NAME);                                                                \
        uint64_t len = isSetMask ? pypto_emu::mask_length(mask, #NAME) : 0;                               \
        pypto_emu::reduce_data_block<KIND>(dst, src, PYPTO_REDUCE_LEN(len), repeatTime, dstRepStride,        \
                                           srcBlkStride, srcRepStride, #NAME);                            \
    }

PYPTO_BLOCK_REDUCE(BlockReduceSum, ReduceType::SUM)
PYPTO_BLOCK_REDUCE(BlockReduceMax, ReduceType::MAX)
PYPTO_BLOCK_REDUCE(BlockReduceMin, ReduceType::MIN)
#undef PYPTO_BLOCK_REDUCE

// ---- ReducePairElem (and PairReduceSum) ----------------------------------

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
void ReducePairElem(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint64_t mask[],
                    const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                    const int32_t srcRepStride, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "ReducePairElem");
    PYPTO_REDUCE_FLOAT_REQUIRE("ReducePairElem");
    static_assert(reduceType == ReduceType::SUM, "ReducePairElem: only ReduceType::SUM is supported");
    pypto_emu::reduce_pair(dst, src, PYPTO_REDUCE_BITS(mask), repeatTime, dstRepStride, srcBlkStride, srcRepStride,
                           "ReducePairElem");
}

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
void ReducePairElem(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask,
                    const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                    const int32_t srcRepStride, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "ReducePairElem");
    PYPTO_REDUCE_FLOAT_REQUIRE("ReducePairElem");
    static_assert(reduceType == ReduceType::SUM, "ReducePairElem: only ReduceType::SUM is supported");
    uint64_t len = isSetMask ? pypto_emu::mask_length(mask, "ReducePairElem") : 0;
    pypto_emu::reduce_pair(dst, src, PYPTO_REDUCE_LEN(len), repeatTime, dstRepStride, srcBlkStride, srcRepStride,
                           "ReducePairElem");
}

template <typename T, bool isSetMask = true>
void PairReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                   const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,
                   const int32_t srcRepStride, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "PairReduceSum");
    using U = T;
    PYPTO_REDUCE_FLOAT_REQUIRE("PairReduceSum");
    pypto_emu::reduce_pair(dst, src, PYPTO_REDUCE_BITS(mask), repeatTime, dstRepStride, srcBlkStride, srcRepStride,
                           "PairReduceSum");
}

template <typename T, bool isSetMask = true>
void PairReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                   const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,
                   const int32_t srcRepStride, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "PairReduceSum");
    using U = T;
    PYPTO_REDUCE_FLOAT_REQUIRE("PairReduceSum");
    uint64_t len = isSetMask ? pypto_emu::mask_length(mask, "PairReduceSum") : 0;
    pypto_emu::reduce_pair(dst, src, PYPTO_REDUCE_LEN(len), repeatTime, dstRepStride, srcBlkStride, srcRepStride,
                           "PairReduceSum");
}

// ---- ReduceSum ------------------------------------------------------------

// Count form: the first `count` elements (with isSetMask = false, the count
// the mask register holds in counter mode); each 256-byte repeat by the
// tree, the repeat results added in order. The work buffer is not used.
template <typename T, bool isSetMask = true>
void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
               const int32_t count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "ReduceSum");
    // initcheck: the destination counts as written in full (not checked per element).
    pypto_emu::access_write(dst, 0, dst.GetLength());
    pypto_emu::access_write(sharedTmpBuffer, 0, sharedTmpBuffer.GetLength());
    using U = T;
    PYPTO_REDUCE_REQUIRE("ReduceSum");
    const char* what = "ReduceSum";
    pypto_emu::poll(what);
    int64_t n = count;
    if (!isSetMask) {
        pypto_emu::MaskRegisters& regs = pypto_emu::mask_registers();
        if (regs.mode != MaskMode::COUNTER) {
            pypto_emu::fail(what, ": with isSetMask = false the element count comes from the mask register in "
                                  "counter mode (SetMaskCount, then SetVectorMask), but it is in normal mode");
        }
        n = static_cast<int64_t>(regs.low);
    }
    if (n < 0) {
        pypto_emu::fail(what, ": count ", n, " is negative");
    }
    pypto_emu::check_reduce_operand(src, 32, "src", what);
    pypto_emu::check_reduce_operand(sharedTmpBuffer, 32, "sharedTmpBuffer", what);
    pypto_emu::check_reduce_operand(dst, sizeof(T), "dst", what);
    pypto_emu::model_vector_bytes(what, static_cast<uint64_t>(n) * sizeof(T), sizeof(T));
    if (static_cast<uint64_t>(n) > src.GetSize()) {
        pypto_emu::fail(what, ": count ", n, " exceeds src's ", src.GetSize(), " elements");
    }
    if (n == 0) {
        return;
    }
    if (dst.GetSize() < 1) {
        pypto_emu::fail(what, ": dst has no elements");
    }
    pypto_emu::access_read(what, "src", src, 0, static_cast<uint64_t>(n) * sizeof(T));
    constexpr int64_t per_repeat = 256 / sizeof(T);
    T total{};
    T lanes[per_repeat];
    for (int64_t start = 0; start < n; start += per_repeat) {
        int64_t m = n - start < per_repeat ? n - start : per_repeat;
        std::memcpy(lanes, src.data() + start, static_cast<size_t>(m) * sizeof(T));
        T part = pypto_emu::dense_tree_sum(lanes, static_cast<size_t>(m));
        total = start == 0 ? part : pypto_emu::add_round(total, part);
    }
    dst.data()[0] = total;
    pypto_emu::ReduceRegisters& r = pypto_emu::reduce_registers();
    r.sum = pypto_emu::ReduceRegisters::Sum::Count;
    r.sum_bytes = sizeof(T);
    r.sum_bits = pypto_emu::raw_bits(total);
}

template <typename T>
void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
               const uint64_t mask[], const int32_t repeatTime, const int32_t srcRepStride, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "ReduceSum");
    // initcheck: the destination counts as written in full (not checked per element).
    pypto_emu::access_write(dst, 0, dst.GetLength());
    pypto_emu::access_write(sharedTmpBuffer, 0, sharedTmpBuffer.GetLength());
    using U = T;
    PYPTO_REDUCE_REQUIRE("ReduceSum");
    pypto_emu::reduce_sum_mask(dst, src, sharedTmpBuffer, pypto_emu::MaskArg::Bitwise, mask, 0, repeatTime,
                               srcRepStride, "ReduceSum");
}

template <typename T>
void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
               const int32_t mask, const int32_t repeatTime, const int32_t srcRepStride, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "ReduceSum");
    // initcheck: the destination counts as written in full (not checked per element).
    pypto_emu::access_write(dst, 0, dst.GetLength());
    pypto_emu::access_write(sharedTmpBuffer, 0, sharedTmpBuffer.GetLength());
    using U = T;
    PYPTO_REDUCE_REQUIRE("ReduceSum");
    pypto_emu::reduce_sum_mask(dst, src, sharedTmpBuffer, pypto_emu::MaskArg::Continuous, nullptr,
                               pypto_emu::mask_length(mask, "ReduceSum"), repeatTime, srcRepStride, "ReduceSum");
}

// ---- ReduceMax / ReduceMin ------------------------------------------------

#define PYPTO_REDUCE_ALL(NAME, KIND)                                                                       \
    template <typename T>                                                                                 \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer, \
              const int32_t count, bool calIndex = 0, pypto_emu::Site site = pypto_emu::Site::here())                                                     \
    {                                                                                                     \
        pypto_emu::AtSite at_site(site, #NAME);                                                           \
        using U = T;                                                                                      \
        PYPTO_REDUCE_REQUIRE(#NAME);                                                                      \
        pypto_emu::reduce_maxmin_count<KIND>(dst, src, sharedTmpBuffer, count, calIndex, #NAME);          \
    }                                                                                                     \
    template <typename T>                                                                                 \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer, \
              const uint64_t mask[], const int32_t repeatTime, const int32_t srcRepStride,                \
              bool calIndex = 0, pypto_emu::Site site = pypto_emu::Site::here())                                                                          \
    {                                                                                                     \
        pypto_emu::AtSite at_site(site, #NAME);                                                           \
        using U = T;                                                                                      \
        PYPTO_REDUCE_REQUIRE(#NAME);                                                                      \
        pypto_emu::reduce_maxmin_mask<KIND>(dst, src, sharedTmpBuffer, pypto_emu::MaskArg::Bitwise, mask, \
                                            0, repeatTime, srcRepStride, calIndex, #NAME);                \
    }                                                                                                     \
    template <typename T>                                                                                 \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer, \
              const int32_t mask, const int32_t repeatTime, const int32_t srcRepStride,                   \
              bool calIndex = 0, pypto_emu::Site site = pypto_emu::Site::here())                                                                          \
    {                                                                                                     \
        pypto_emu::AtSite at_site(site, #NAME);                                                           \
        using U = T;                                                                                      \
        PYPTO_REDUCE_REQUIRE(#NAME);                                                                      \
        pypto_emu::reduce_maxmin_mask<KIND>(dst, src, sharedTmpBuffer, pypto_emu::MaskArg::Continuous,    \
                                            nullptr, pypto_emu::mask_length(mask, #NAME), repeatTime,     \
                                            srcRepStride, calIndex, #NAME);                               \
    }

PYPTO_REDUCE_ALL(ReduceMax, ReduceType::MAX)
PYPTO_REDUCE_ALL(ReduceMin, ReduceType::MIN)
#undef PYPTO_REDUCE_ALL

// ---- result registers -----------------------------------------------------

// The result of the last count-form ReduceSum of this block.
template <typename T>
T GetReduceRepeatSumSpr()
{
    static_assert(pypto_emu::reduce_float_type<T>, "GetReduceRepeatSumSpr: T must be half or float");
    const char* what = "GetReduceRepeatSumSpr";
    pypto_emu::poll(what);
    pypto_emu::ReduceRegisters& r = pypto_emu::reduce_registers();
    if (r.sum == pypto_emu::ReduceRegisters::Sum::None) {
        pypto_emu::fail(what, ": no ReduceSum has run in this block");
    }
    if (r.sum == pypto_emu::ReduceRegisters::Sum::Mask) {
        pypto_emu::fail(what, ": the last ReduceSum used a mask form; only the count form (ReduceSum(dst, src, "
                              "work, count)) leaves its result here");
    }
    if (r.sum_bytes != sizeof(T)) {
        pypto_emu::fail(what, ": T has ", sizeof(T), " bytes but the last ReduceSum summed ", r.sum_bytes,
                        "-byte elements; T must be its element type");
    }
    return pypto_emu::index_as<T>(r.sum_bits);
}

// The best value (and its index) of the last ReduceRepeat<MAX/MIN>
// (over all its repeats; the index counts elements from the first repeat's
// start), ReduceMax or ReduceMin of this block (the index there is
// documented as not accurate; the emulation gives all ones).
template <typename T>
void GetReduceRepeatMaxMinSpr(T& maxMinValue, T& maxMinIndex, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "GetReduceRepeatMaxMinSpr");
    static_assert(std::is_same_v<T, T> && pypto_emu::Target::reduce_max_min_spr,
                  "GetReduceRepeatMaxMinSpr: not supported on " PYPTO_ARCH(TARGET_NAME));
    static_assert(pypto_emu::reduce_float_type<T>, "GetReduceRepeatMaxMinSpr: T must be half or float");
    const char* what = "GetReduceRepeatMaxMinSpr";
    pypto_emu::poll(what);
    pypto_emu::ReduceRegisters& r = pypto_emu::reduce_registers();
    if (r.maxmin_from == nullptr) {
        pypto_emu::fail(what, ": no ReduceRepeat<MAX/MIN>, ReduceMax or ReduceMin has run in this block");
    }
    if (r.maxmin_bad != nullptr) {
        pypto_emu::fail(what, ": the last ", r.maxmin_from, " has no result here: ", r.maxmin_bad);
    }
    if (r.maxmin_bytes != sizeof(T)) {
        pypto_emu::fail(what, ": T has ", sizeof(T), " bytes but the last ", r.maxmin_from, " reduced ",
                        r.maxmin_bytes, "-byte elements; T must be its element type");
    }
    maxMinValue = pypto_emu::index_as<T>(r.value_bits);
    maxMinIndex = pypto_emu::index_as<T>(r.index_bits);
}

// The names before CANN 8.5.
template <typename T>
T GetAccVal()
{
    return GetReduceRepeatSumSpr<T>();
}

template <typename T>
void GetReduceMaxMinCount(T& maxMinValue, T& maxMinIndex, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "GetReduceMaxMinCount");
    GetReduceRepeatMaxMinSpr<T>(maxMinValue, maxMinIndex);
}

#undef PYPTO_REDUCE_REQUIRE
#undef PYPTO_REDUCE_BITS
#undef PYPTO_REDUCE_LEN
#undef PYPTO_REDUCE_FLOAT_REQUIRE

} // namespace AscendC
