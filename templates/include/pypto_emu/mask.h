// Vector instructions in their mask/repeat ("high-dimensional") form, the
// mask register and its two modes, and the logical, shift, compare and
// select families (count forms too where vector.h has none).
//
// One repeat covers 256 bytes: 8 data blocks of 32 bytes per operand, the
// blocks `blkStride` blocks apart, repeat r starting `r * repStride` blocks
// after the operand's start. The mask picks elements within a repeat
// (normal mode; mask[0] holds elements 0..63, mask[1] elements 64..127) or
// counts elements across repeats (counter mode, repeatTime then ignored).
// Destination elements the mask leaves out keep their values.
//
// Enforced, as errors naming the rule: repeatTime <= 255, the mask width of
// the element type (128 for 16-bit, 64 for 32-bit types), dstBlkStride != 0,
// Unified Buffer operands on 32-byte boundaries, every element an
// instruction touches inside its operand, and per-instruction limits (shift
// distances, Compare's whole 256-byte repeats, CopyRepeatParams ranges).
// Element types are compile errors, as with the CANN compiler.
#pragma once

#include <cstring>
#include <vector>

#include "vector.h"

namespace AscendC {

enum class MaskMode : uint8_t { NORMAL = 0, COUNTER };

// The mask argument of an instruction whose mask comes from SetVectorMask
// (isSetMask = false); the value is not used.
constexpr uint64_t MASK_PLACEHOLDER = 0;

enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };

enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };

// Strides in 32-byte blocks: `*BlkStride` between the blocks of one repeat,
// `*RepStride` between the starts of consecutive repeats.
struct BinaryRepeatParams {
    BinaryRepeatParams() {}
    BinaryRepeatParams(uint8_t dstBlk, uint8_t src0Blk, uint8_t src1Blk, uint8_t dstRep, uint8_t src0Rep,
                       uint8_t src1Rep)
        : dstBlkStride(dstBlk), src0BlkStride(src0Blk), src1BlkStride(src1Blk), dstRepStride(dstRep),
          src0RepStride(src0Rep), src1RepStride(src1Rep)
    {
    }
    uint32_t blockNumber = 8; // reserved
    uint8_t dstBlkStride = 1;
    uint8_t src0BlkStride = 1;
    uint8_t src1BlkStride = 1;
    uint8_t dstRepStride = 8;
    uint8_t src0RepStride = 8;
    uint8_t src1RepStride = 8;
    bool repeatStrideMode = false; // reserved
    bool strideSizeMode = false;   // reserved
};

struct UnaryRepeatParams {
    UnaryRepeatParams() {}
    UnaryRepeatParams(uint16_t dstBlk, uint16_t srcBlk, uint8_t dstRep, uint8_t srcRep)
        : dstBlkStride(dstBlk), srcBlkStride(srcBlk), dstRepStride(dstRep), srcRepStride(srcRep)
    {
    }
    UnaryRepeatParams(uint16_t dstBlk, uint16_t srcBlk, uint8_t dstRep, uint8_t srcRep, bool half)
        : dstBlkStride(dstBlk), srcBlkStride(srcBlk), dstRepStride(dstRep), srcRepStride(srcRep),
          halfBlock(half)
    {
    }
    uint32_t blockNumber = 8; // reserved
    uint16_t dstBlkStride = 1;
    uint16_t srcBlkStride = 1;
    uint8_t dstRepStride = 8;
    uint8_t srcRepStride = 8;
    bool repeatStrideMode = false; // reserved
    bool strideSizeMode = false;   // reserved
    bool halfBlock = false;        // reserved
};

struct BrcbRepeatParams {
    BrcbRepeatParams() {}
    BrcbRepeatParams(uint16_t dstBlk, uint16_t dstRep) : dstBlkStride(dstBlk), dstRepStride(dstRep) {}
    uint32_t blockNumber = 8; // reserved
    uint16_t dstBlkStride = 1;
    uint16_t dstRepStride = 8;
};

// Copy's strides: dstStride/srcStride between blocks, dstRepeatSize/
// srcRepeatSize between repeats, all in 32-byte blocks.
struct CopyRepeatParams {
    CopyRepeatParams() {}
    CopyRepeatParams(uint16_t dst, uint16_t src, uint16_t dstRepeat, uint16_t srcRepeat)
        : dstStride(dst), srcStride(src), dstRepeatSize(dstRepeat), srcRepeatSize(srcRepeat)
    {
    }
    uint16_t dstStride = 1;
    uint16_t srcStride = 1;
    uint16_t dstRepeatSize = 8;
    uint16_t srcRepeatSize = 8;
};

} // namespace AscendC

namespace pypto_emu {

using AscendC::CMPMODE;
using AscendC::MaskMode;
using AscendC::SELMODE;

// A parameter type that does not take part in deduction, so that a scalar
// argument converts to the tensors' element type.
template <typename T>
struct no_deduce {
    using type = T;
};
template <typename T>
using same_t = typename no_deduce<T>::type;

// The mask register, its mode and the 128-bit compare-mask register, per
// block. A block starts in normal mode with every element selected.
struct MaskRegisters {
    uint64_t launch = ~0ull;
    uint32_t block_idx = ~0u;
    MaskMode mode = MaskMode::NORMAL;
    uint64_t high = ~0ull;
    uint64_t low = ~0ull;
    uint64_t cmp[2] = {0, 0};
};

inline MaskRegisters& mask_registers()
{
    static thread_local MaskRegisters regs;
    if (regs.launch != block.launch_id || regs.block_idx != block.idx) {
        regs = MaskRegisters{};
        regs.launch = block.launch_id;
        regs.block_idx = block.idx;
    }
    return regs;
}

inline const char* width_name(uint32_t elem_bytes)
{
    return elem_bytes == 2 ? "16-bit" : elem_bytes == 4 ? "32-bit" : elem_bytes == 8 ? "64-bit" : "8-bit";
}

// Which elements of which repeats an instruction processes.
struct RepeatPlan {
    uint32_t repeats = 0;
    uint32_t per_repeat = 0; // elements one repeat covers
    bool counter = false;
    uint64_t total = 0;        // counter mode: elements over all repeats
    uint64_t bits[2] = {0, 0}; // normal mode: the mask of every repeat

    bool active(uint32_t r, uint32_t e) const
    {
        if (counter) {
            return static_cast<uint64_t>(r) * per_repeat + e < total;
        }
        return ((bits[e / 64] >> (e % 64)) & 1u) != 0;
    }
};

inline void check_repeat_time(int32_t repeat_time, const char* what)
{
    if (repeat_time < 0) {
        fail(what, ": repeatTime ", repeat_time, " is negative");
    }
    if (repeat_time > 255) {
        fail(what, ": repeatTime ", repeat_time, " exceeds 255 (the hardware's 8-bit repeat count)");
    }
}

inline void continuous_bits(uint64_t len, uint64_t bits[2])
{
    bits[0] = len >= 64 ? ~0ull : (len == 0 ? 0 : (~0ull >> (64 - len)));
    bits[1] = len <= 64 ? 0 : len >= 128 ? ~0ull : (~0ull >> (128 - len));
}

// How the mask argument was given.
enum class MaskArg { Bitwise, Continuous, Register };

// The plan of one instruction: its mask (from the arguments, which also
// set the register, or from the register) read in the current mode.
// `copy_counter`: Copy's counter mode, where the mask counts the elements
// of each repeat and repeatTime stays in force.
inline RepeatPlan make_plan(const char* what, uint32_t elem_bytes, MaskArg arg, const uint64_t* mask_bits,
                            uint64_t mask_len, int32_t repeat_time, bool copy_counter = false)
{
    poll(what);
    check_repeat_time(repeat_time, what);
    MaskRegisters& regs = mask_registers();
    RepeatPlan plan;
    plan.per_repeat = 256 / elem_bytes;
    if (arg == MaskArg::Bitwise) {
        if (mask_bits == nullptr) {
            fail(what, ": the mask array is a null pointer");
        }
        regs.low = mask_bits[0];
        regs.high = mask_bits[1];
    } else if (arg == MaskArg::Continuous) {
        if (regs.mode == MaskMode::NORMAL) {
            if (mask_len > plan.per_repeat) {
                fail(what, ": mask ", mask_len, " exceeds the ", plan.per_repeat, " elements of one repeat of ",
                     width_name(elem_bytes), " elements (normal mode takes a mask of 0..", plan.per_repeat, ")");
            }
            uint64_t bits[2];
            continuous_bits(mask_len, bits);
            regs.low = bits[0];
            regs.high = bits[1];
        } else {
            regs.low = mask_len;
            regs.high = 0;
        }
    }
    if (regs.mode == MaskMode::COUNTER && !copy_counter) {
        plan.counter = true;
        plan.total = regs.low;
        uint64_t repeats = (regs.low + plan.per_repeat - 1) / plan.per_repeat;
        plan.repeats = static_cast<uint32_t>(repeats);
        model_vector_repeats(what, plan.repeats, elem_bytes);
        return plan;
    }
    if (regs.mode == MaskMode::COUNTER) {
        if (regs.low > plan.per_repeat) {
            fail(what, ": mask ", regs.low, " exceeds the ", plan.per_repeat, " elements of one repeat of ",
                 width_name(elem_bytes), " elements (Copy's counter mode counts the elements of each repeat)");
        }
        continuous_bits(regs.low, plan.bits);
    } else {
        if (arg == MaskArg::Bitwise && elem_bytes == 4 && regs.high != 0) {
            fail(what, ": the high mask word is 0x", std::hex, regs.high, std::dec,
                 "; a repeat of 32-bit elements has 64 of them, so mask[1] (maskHigh) must be 0");
        }
        plan.bits[0] = regs.low;
        plan.bits[1] = regs.high;
    }
    plan.repeats = static_cast<uint32_t>(repeat_time);
    model_vector_repeats(what, plan.repeats, elem_bytes);
    return plan;
}

// An operand seen through block and repeat strides.
template <typename T>
struct Strided {
    T* base;
    uint64_t bytes;
    uint32_t blk;
    uint32_t rep;
    const char* name;
    AccessView init; // initcheck: reads through get, writes through put

    uint64_t offset(uint32_t r, uint32_t e) const
    {
        uint64_t b = static_cast<uint64_t>(e) * sizeof(T);
        return static_cast<uint64_t>(r) * rep * 32 + (b / 32) * blk * 32 + b % 32;
    }
    T& at(uint32_t r, uint32_t e) const
    {
        return *reinterpret_cast<T*>(reinterpret_cast<uint8_t*>(base) + offset(r, e));
    }
    T get(uint32_t r, uint32_t e) const
    {
        init.read(offset(r, e), sizeof(T));
        return at(r, e);
    }
    void put(uint32_t r, uint32_t e, T v) const
    {
        init.write(offset(r, e), sizeof(T));
        at(r, e) = v;
    }
};

template <typename T>
Strided<T> strided(const AscendC::LocalTensor<T>& t, uint32_t blk, uint32_t rep, const char* name, const char* what,
                   bool is_dst = false)
{
    check_vector_operand(t, 0, what);
    if (is_dst && blk == 0) {
        fail(what, ": ", name, "'s block stride is 0; the destination block stride must be at least 1 (0 is "
                               "undefined on the hardware)");
    }
    if (timing_only()) {
        instr_access(memory_of(t.position()), is_dst); // the record, as run_plan's skipped accesses would fill it
    }
    return Strided<T>{t.data(), static_cast<uint64_t>(t.GetSize()) * sizeof(T), blk, rep, name,
                      access_view(t, what, name)};
}

// Every element the plan touches lies inside the operand.
template <typename T>
void check_reach(const Strided<T>& a, const RepeatPlan& p, const char* what)
{
    uint64_t end = 0;
    uint32_t at_repeat = 0;
    for (uint32_t r = 0; r < p.repeats; ++r) {
        for (uint32_t e = 0; e < p.per_repeat; ++e) {
            if (p.active(r, e)) {
                uint64_t o = a.offset(r, e) + sizeof(T);
                if (o > end) {
                    end = o;
                    at_repeat = r;
                }
            }
        }
    }
    if (end > a.bytes) {
        fail(what, ": repeat ", at_repeat, " reaches byte ", end, " of ", a.name, ", which has ", a.bytes,
             " bytes (block stride ", a.blk, ", repeat stride ", a.rep,
             ", in 32-byte blocks); accesses must stay inside the operands");
    }
}

// Runs the plan: per repeat, every active element is computed, then stored.
template <typename D, typename Compute>
void run_plan(const RepeatPlan& p, const Strided<D>& dst, Compute compute)
{
    if (timing_only()) {
        return;
    }
    std::vector<D> vals(p.per_repeat);
    for (uint32_t r = 0; r < p.repeats; ++r) {
        for (uint32_t e = 0; e < p.per_repeat; ++e) {
            if (p.active(r, e)) {
                vals[e] = compute(r, e);
            }
        }
        for (uint32_t e = 0; e < p.per_repeat; ++e) {
            if (p.active(r, e)) {
                dst.put(r, e, vals[e]);
            }
        }
    }
}

// Every element of every repeat is active.
inline bool plan_full(const RepeatPlan& p)
{
    if (p.counter) {
        return p.total == static_cast<uint64_t>(p.repeats) * p.per_repeat;
    }
    for (uint32_t e = 0; e < p.per_repeat; ++e) {
        if (!p.active(0, e)) {
            return false;
        }
    }
    return true;
}

template <typename T>
bool strided_dense(const Strided<T>& s)
{
    return s.blk == 1 && s.rep == 8;
}

template <typename T, typename U>
bool strided_apart(const Strided<T>& s, uint64_t s_bytes, const Strided<U>& t, uint64_t t_bytes)
{
    auto a = reinterpret_cast<uintptr_t>(s.base);
    auto b = reinterpret_cast<uintptr_t>(t.base);
    return a + s_bytes <= b || b + t_bytes <= a;
}

// The common dense case of a binary op, all elements active: dst and src0
// dense (one repeat after the other), src1 dense or one 32-byte block every
// repeat re-reads (stride 0: a broadcast); dst either is src0/src1 or lies
// apart from it. The same results and accesses as run_plan, as ranges and
// one loop. False when the case does not apply.
template <typename T, typename Op>
bool dense_binary(const RepeatPlan& p, const Strided<T>& d, const Strided<T>& a, const Strided<T>& b, Op op)
{
    bool broadcast = b.blk == 0 && b.rep == 0;
    if (timing_only() || !plan_full(p) || !strided_dense(d) || !strided_dense(a) ||
        !(strided_dense(b) || broadcast)) {
        return false;
    }
    uint64_t n = static_cast<uint64_t>(p.repeats) * p.per_repeat;
    uint64_t bytes = n * sizeof(T);
    uint64_t b_bytes = broadcast ? 32 : bytes;
    // Out of reach: the general path reports it.
    if (bytes > d.bytes || bytes > a.bytes || b_bytes > b.bytes) {
        return false;
    }
    if ((d.base != a.base && !strided_apart(d, bytes, a, bytes)) ||
        (d.base != b.base && !strided_apart(d, bytes, b, b_bytes)) || (broadcast && d.base == b.base)) {
        return false;
    }
    a.init.read(0, bytes);
    b.init.read(0, b_bytes);
    d.init.write(0, bytes);
    if (broadcast) {
        map_binary_block(d.base, a.base, b.base, n, op);
    } else {
        map_binary(d.base, a.base, b.base, n, op);
    }
    return true;
}

// The unary counterpart of dense_binary: every element active, dst and src
// dense, dst either src or apart from it.
template <typename T, typename Op>
bool dense_unary(const RepeatPlan& p, const Strided<T>& d, const Strided<T>& s, Op op)
{
    if (timing_only() || !plan_full(p) || !strided_dense(d) || !strided_dense(s)) {
        return false;
    }
    uint64_t n = static_cast<uint64_t>(p.repeats) * p.per_repeat;
    uint64_t bytes = n * sizeof(T);
    // Out of reach: the general path reports it.
    if (bytes > d.bytes || bytes > s.bytes) {
        return false;
    }
    if (d.base != s.base && !strided_apart(d, bytes, s, bytes)) {
        return false;
    }
    s.init.read(0, bytes);
    d.init.write(0, bytes);
    map_unary(d.base, s.base, n, op);
    return true;
}

template <typename T, typename Op>
void masked_binary(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src0,
                   const AscendC::LocalTensor<T>& src1, MaskArg arg, const uint64_t* bits, uint64_t len,
                   int32_t repeat_time, const AscendC::BinaryRepeatParams& rp, const char* what, Op op)
{
    RepeatPlan p = make_plan(what, sizeof(T), arg, bits, len, repeat_time);
    auto d = strided(dst, rp.dstBlkStride, rp.dstRepStride, "dst", what, true);
    auto a = strided(src0, rp.src0BlkStride, rp.src0RepStride, "src0", what);
    auto b = strided(src1, rp.src1BlkStride, rp.src1RepStride, "src1", what);
    if (dense_binary(p, d, a, b, op)) {
        return;
    }
    check_reach(d, p, what);
    check_reach(a, p, what);
    check_reach(b, p, what);
    run_plan(p, d, [&](uint32_t r, uint32_t e) {
        return static_cast<T>(op(static_cast<compute_t<T>>(a.get(r, e)), static_cast<compute_t<T>>(b.get(r, e))));
    });
}

template <typename T, typename Op>
void masked_unary(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, MaskArg arg,
                  const uint64_t* bits, uint64_t len, int32_t repeat_time, const AscendC::UnaryRepeatParams& rp,
                  const char* what, Op op)
{
    RepeatPlan p = make_plan(what, sizeof(T), arg, bits, len, repeat_time);
    auto d = strided(dst, rp.dstBlkStride, rp.dstRepStride, "dst", what, true);
    auto s = strided(src, rp.srcBlkStride, rp.srcRepStride, "src", what);
    if (dense_unary(p, d, s, op)) {
        return;
    }
    check_reach(d, p, what);
    check_reach(s, p, what);
    run_plan(p, d, [&](uint32_t r, uint32_t e) {
        return static_cast<T>(op(static_cast<compute_t<T>>(s.get(r, e))));
    });
}

// And/Or/Not take the picked row's `Target::logic<T>` (arch.h).
template <typename T>
constexpr bool shift_type = one_of<T, int16_t, uint16_t, int32_t, uint32_t>;
template <typename T>
constexpr bool leaky_type = one_of<T, half, float>;
template <typename T>
constexpr bool copy_type = one_of<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>;
template <typename T>
constexpr bool compare_type = one_of<T, half, float, int32_t>;
template <typename T>
constexpr bool select_type = one_of<T, half, float>;

template <typename T>
void check_shift(T s, const char* what)
{
    constexpr int64_t bits = sizeof(T) * 8;
    if (static_cast<int64_t>(s) < 0 || static_cast<int64_t>(s) > bits) {
        fail(what, ": shift distance ", static_cast<int64_t>(s), " is outside 0..", bits, " for ",
             width_name(sizeof(T)), " elements");
    }
}

template <typename T>
T shift_left(T x, T s)
{
    if (static_cast<int64_t>(s) >= static_cast<int64_t>(sizeof(T) * 8)) {
        return 0;
    }
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(x) << s));
}

// Arithmetic for signed, logical for unsigned types; roundEn adds the last
// bit shifted out (signed types only).
template <typename T>
T shift_right(T x, T s, bool round)
{
    constexpr int64_t bits = sizeof(T) * 8;
    int64_t n = static_cast<int64_t>(s);
    if (n >= bits) {
        return std::is_signed_v<T> && x < 0 ? static_cast<T>(-1) : static_cast<T>(0);
    }
    T out = static_cast<T>(x >> n);
    if constexpr (std::is_signed_v<T>) {
        if (round && n > 0) {
            out = static_cast<T>(out + ((x >> (n - 1)) & 1));
        }
    }
    return out;
}

template <typename V>
bool compare(CMPMODE mode, V a, V b)
{
    switch (mode) {
    case CMPMODE::LT: return a < b;
    case CMPMODE::GT: return a > b;
    case CMPMODE::EQ: return a == b;
    case CMPMODE::LE: return a <= b;
    case CMPMODE::GE: return a >= b;
    case CMPMODE::NE: return a != b;
    }
    return false;
}

template <typename T>
void check_compare_mode(CMPMODE mode, const char* what)
{
    if constexpr (std::is_same_v<T, int32_t>) {
        if (mode != CMPMODE::EQ) {
            fail(what, ": int32_t operands support only CMPMODE::EQ on " PYPTO_ARCH(TARGET_NAME));
        }
    }
}

// A compare result tensor (or selMask) of at least `bytes` bytes.
template <typename U>
uint8_t* bit_operand(const AscendC::LocalTensor<U>& t, uint64_t bytes, const char* name, const char* what)
{
    check_vector_operand(t, 0, what);
    uint64_t have = static_cast<uint64_t>(t.GetSize()) * sizeof(U);
    if (bytes > have) {
        fail(what, ": ", name, " needs ", bytes, " bytes of bits but has ", have);
    }
    return reinterpret_cast<uint8_t*>(t.data());
}

inline bool bit_at(const uint8_t* bits, uint64_t i) { return ((bits[i / 8] >> (i % 8)) & 1u) != 0; }

inline void set_bit(uint8_t* bits, uint64_t i, bool v)
{
    if (v) {
        bits[i / 8] = static_cast<uint8_t>(bits[i / 8] | (1u << (i % 8)));
    } else {
        bits[i / 8] = static_cast<uint8_t>(bits[i / 8] & ~(1u << (i % 8)));
    }
}

template <typename T>
void check_compare_count(uint32_t count, const char* what)
{
    uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
    if (bytes % 256 != 0) {
        fail(what, ": count ", count, " elements are ", bytes,
             " bytes, not a multiple of 256 (the instruction compares whole 256-byte repeats)");
    }
}

} // namespace pypto_emu

namespace AscendC {

// ---- the mask register -----------------------------------------------------

inline void SetMaskCount() { pypto_emu::mask_registers().mode = MaskMode::COUNTER; }

inline void SetMaskNorm() { pypto_emu::mask_registers().mode = MaskMode::NORMAL; }

inline void ResetMask(pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "ResetMask");
    pypto_emu::MaskRegisters& regs = pypto_emu::mask_registers();
    regs.high = ~0ull;
    regs.low = ~0ull;
}

// Normal mode: a bit mask per repeat (maskHigh 0 for 32-bit types).
// Counter mode: maskLow is the element count, maskHigh is ignored.
template <typename T, MaskMode mode = MaskMode::NORMAL>
void SetVectorMask(const uint64_t maskHigh, const uint64_t maskLow, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "SetVectorMask");
    pypto_emu::MaskRegisters& regs = pypto_emu::mask_registers();
    if constexpr (mode == MaskMode::NORMAL && sizeof(T) == 4) {
        if (maskHigh != 0) {
            pypto_emu::fail("SetVectorMask: maskHigh is 0x", std::hex, maskHigh, std::dec,
                            "; a repeat of 32-bit elements has 64 of them, so maskHigh must be 0");
        }
    }
    regs.high = mode == MaskMode::COUNTER ? 0 : maskHigh;
    regs.low = maskLow;
}

// Normal mode: the first `len` elements of every repeat; counter mode:
// `len` elements in all.
template <typename T, MaskMode mode = MaskMode::NORMAL>
void SetVectorMask(int32_t len, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "SetVectorMask");
    if (len < 0) {
        pypto_emu::fail("SetVectorMask: len ", len, " is negative");
    }
    pypto_emu::MaskRegisters& regs = pypto_emu::mask_registers();
    if constexpr (mode == MaskMode::NORMAL) {
        constexpr uint32_t per_repeat = 256 / sizeof(T);
        if (static_cast<uint32_t>(len) > per_repeat) {
            pypto_emu::fail("SetVectorMask: len ", len, " exceeds the ", per_repeat, " elements of one repeat of ",
                            pypto_emu::width_name(sizeof(T)), " elements (normal mode)");
        }
        uint64_t bits[2];
        pypto_emu::continuous_bits(static_cast<uint64_t>(len), bits);
        regs.low = bits[0];
        regs.high = bits[1];
    } else {
        regs.low = static_cast<uint64_t>(len);
        regs.high = 0;
    }
}

} // namespace AscendC

// The two mask forms of an instruction; with isSetMask = false the mask
// argument is ignored (pass MASK_PLACEHOLDER) and the register is used.
#define PYPTO_MASK_ARG(bits_name, len_name)                                                              \
    (isSetMask ? pypto_emu::MaskArg::Bitwise : pypto_emu::MaskArg::Register), bits_name, 0
#define PYPTO_MASK_LEN(len_name)                                                                         \
    (isSetMask ? pypto_emu::MaskArg::Continuous : pypto_emu::MaskArg::Register), nullptr, len_name

#define PYPTO_MASK_BINARY(NAME, TRAIT, TYPES, EXPR)                                                      \
    template <typename T, bool isSetMask = true>                                                         \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,         \
              const uint64_t mask[], const int32_t repeatTime, const BinaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())   \
    {                                                                                                    \
        pypto_emu::AtSite at_site(site, #NAME);                                                         \
        PYPTO_REQUIRE_TYPE(TRAIT, #NAME, TYPES);                                                         \
        pypto_emu::masked_binary(dst, src0, src1, PYPTO_MASK_ARG(mask, 0), repeatTime, repeatParams,     \
                                 #NAME, [](auto a, auto b) { return EXPR; });                            \
    }                                                                                                    \
    template <typename T, bool isSetMask = true>                                                         \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,         \
              const uint64_t mask, const int32_t repeatTime, const BinaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())     \
    {                                                                                                    \
        pypto_emu::AtSite at_site(site, #NAME);                                                         \
        PYPTO_REQUIRE_TYPE(TRAIT, #NAME, TYPES);                                                         \
        pypto_emu::masked_binary(dst, src0, src1, PYPTO_MASK_LEN(mask), repeatTime, repeatParams, #NAME, \
                                 [](auto a, auto b) { return EXPR; });                                   \
    }

#define PYPTO_MASK_SCALAR(NAME, TRAIT, TYPES, CHECK, EXPR)                                               \
    template <typename T, bool isSetMask = true>                                                         \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const pypto_emu::same_t<T>& scalarValue, \
              const uint64_t mask[], const int32_t repeatTime, const UnaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())    \
    {                                                                                                    \
        pypto_emu::AtSite at_site(site, #NAME);                                                         \
        PYPTO_REQUIRE_TYPE(TRAIT, #NAME, TYPES);                                                         \
        CHECK;                                                                                           \
        auto s = static_cast<pypto_emu::compute_t<T>>(scalarValue);                                      \
        pypto_emu::masked_unary(dst, src, PYPTO_MASK_ARG(mask, 0), repeatTime, repeatParams, #NAME,      \
                                [s](auto a) { return EXPR; });                                           \
    }                                                                                                    \
    template <typename T, bool isSetMask = true>                                                         \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const pypto_emu::same_t<T>& scalarValue, \
              const uint64_t mask, const int32_t repeatTime, const UnaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())      \
    {                                                                                                    \
        pypto_emu::AtSite at_site(site, #NAME);                                                         \
        PYPTO_REQUIRE_TYPE(TRAIT, #NAME, TYPES);                                                         \
        CHECK;                                                                                           \
        auto s = static_cast<pypto_emu::compute_t<T>>(scalarValue);                                      \
        pypto_emu::masked_unary(dst, src, PYPTO_MASK_LEN(mask), repeatTime, repeatParams, #NAME,         \
                                [s](auto a) { return EXPR; });                                           \
    }

#define PYPTO_MASK_UNARY(NAME, TRAIT, TYPES, EXPR)                                                       \
    template <typename T, bool isSetMask = true>                                                         \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],               \
              const int32_t repeatTime, const UnaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())                           \
    {                                                                                                    \
        pypto_emu::AtSite at_site(site, #NAME);                                                         \
        PYPTO_REQUIRE_TYPE(TRAIT, #NAME, TYPES);                                                         \
        pypto_emu::masked_unary(dst, src, PYPTO_MASK_ARG(mask, 0), repeatTime, repeatParams, #NAME,      \
                                [](auto a) { return EXPR; });                                            \
    }                                                                                                    \
    template <typename T, bool isSetMask = true>                                                         \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask,                 \
              const int32_t repeatTime, const UnaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())                           \
    {                                                                                                    \
        pypto_emu::AtSite at_site(site, #NAME);                                                         \
        PYPTO_REQUIRE_TYPE(TRAIT, #NAME, TYPES);                                                         \
        pypto_emu::masked_unary(dst, src, PYPTO_MASK_LEN(mask), repeatTime, repeatParams, #NAME,         \
                                [](auto a) { return EXPR; });                                            \
    }

namespace AscendC {

// ---- count forms vector.h does not have ------------------------------------

template <typename T>
void And(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "And");
    PYPTO_REQUIRE_TYPE(Target::logic, "And", "int16_t, uint16_t");
    pypto_emu::binary(dst, src0, src1, count, "And", [](auto a, auto b) { return a & b; });
}

template <typename T>
void Or(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Or");
    PYPTO_REQUIRE_TYPE(Target::logic, "Or", "int16_t, uint16_t");
    pypto_emu::binary(dst, src0, src1, count, "Or", [](auto a, auto b) { return a | b; });
}

template <typename T>
void Not(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Not");
    PYPTO_REQUIRE_TYPE(Target::logic, "Not", "int16_t, uint16_t");
    pypto_emu::unary(dst, src, count, "Not", [](auto a) { return ~a; });
}

template <typename T>
void LeakyRelu(const LocalTensor<T>& dst, const LocalTensor<T>& src, const pypto_emu::same_t<T>& scalarValue,
               const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "LeakyRelu");
    PYPTO_REQUIRE_TYPE(leaky_type, "LeakyRelu", "half, float");
    float s = static_cast<float>(scalarValue);
    pypto_emu::unary(dst, src, count, "LeakyRelu", [s](float a) { return a >= 0 ? a : a * s; });
}

template <typename T>
void ShiftLeft(const LocalTensor<T>& dst, const LocalTensor<T>& src, const pypto_emu::same_t<T>& scalarValue,
               const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "ShiftLeft");
    PYPTO_REQUIRE_TYPE(shift_type, "ShiftLeft", "int16_t, uint16_t, int32_t, uint32_t");
    pypto_emu::check_shift(scalarValue, "ShiftLeft");
    T s = scalarValue;
    pypto_emu::unary(dst, src, count, "ShiftLeft", [s](T a) { return pypto_emu::shift_left(a, s); });
}

template <typename T>
void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src, const pypto_emu::same_t<T>& scalarValue,
                const int32_t& count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "ShiftRight");
    PYPTO_REQUIRE_TYPE(shift_type, "ShiftRight", "int16_t, uint16_t, int32_t, uint32_t");
    pypto_emu::check_shift(scalarValue, "ShiftRight");
    T s = scalarValue;
    pypto_emu::unary(dst, src, count, "ShiftRight", [s](T a) { return pypto_emu::shift_right(a, s, false); });
}

// ---- mask forms --------------------------------------------------------------

PYPTO_MASK_BINARY(Add, Target::arith, "int16_t, half, int32_t, float", a + b)
PYPTO_MASK_BINARY(Sub, Target::arith, "int16_t, half, int32_t, float", a - b)
PYPTO_MASK_BINARY(Mul, Target::arith, "int16_t, half, int32_t, float", a * b)
PYPTO_MASK_BINARY(Div, Target::div, "half, float", a / b)
PYPTO_MASK_BINARY(Max, Target::arith, "int16_t, half, int32_t, float", a > b ? a : b)
PYPTO_MASK_BINARY(Min, Target::arith, "int16_t, half, int32_t, float", a < b ? a : b)
PYPTO_MASK_BINARY(And, Target::logic, "int16_t, uint16_t", a & b)
PYPTO_MASK_BINARY(Or, Target::logic, "int16_t, uint16_t", a | b)

PYPTO_MASK_SCALAR(Adds, Target::arith, "int16_t, half, int32_t, float", (void)0, a + s)
PYPTO_MASK_SCALAR(Muls, Target::arith, "int16_t, half, int32_t, float", (void)0, a * s)
PYPTO_MASK_SCALAR(Maxs, Target::arith, "int16_t, half, int32_t, float", (void)0, a > s ? a : s)
PYPTO_MASK_SCALAR(Mins, Target::arith, "int16_t, half, int32_t, float", (void)0, a < s ? a : s)
PYPTO_MASK_SCALAR(LeakyRelu, leaky_type, "half, float", (void)0, a >= 0 ? a : a * s)
PYPTO_MASK_SCALAR(ShiftLeft, shift_type, "int16_t, uint16_t, int32_t, uint32_t",
                  pypto_emu::check_shift(scalarValue, "ShiftLeft"), pypto_emu::shift_left<T>(a, s))

PYPTO_MASK_UNARY(Exp, Target::math, "half, float", std::exp(static_cast<float>(a)))
PYPTO_MASK_UNARY(Ln, Target::math, "half, float", std::log(static_cast<float>(a)))
PYPTO_MASK_UNARY(Abs, Target::math, "half, float", std::fabs(static_cast<float>(a)))
PYPTO_MASK_UNARY(Reciprocal, Target::math, "half, float", 1.0f / static_cast<float>(a))
PYPTO_MASK_UNARY(Sqrt, Target::math, "half, float", std::sqrt(static_cast<float>(a)))
PYPTO_MASK_UNARY(Rsqrt, Target::math, "half, float", 1.0f / std::sqrt(static_cast<float>(a)))
PYPTO_MASK_UNARY(Relu, Target::relu, "half, int32_t, float", a > 0 ? a : decltype(a)(0))
PYPTO_MASK_UNARY(Not, Target::logic, "int16_t, uint16_t", ~a)

template <typename T, bool isSetMask = true>
void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src, const pypto_emu::same_t<T>& scalarValue,
                const uint64_t mask[], const int32_t repeatTime, const UnaryRepeatParams& repeatParams,
                bool roundEn = false, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "ShiftRight");
    PYPTO_REQUIRE_TYPE(shift_type, "ShiftRight", "int16_t, uint16_t, int32_t, uint32_t");
    pypto_emu::check_shift(scalarValue, "ShiftRight");
    T s = scalarValue;
    pypto_emu::masked_unary(dst, src, PYPTO_MASK_ARG(mask, 0), repeatTime, repeatParams, "ShiftRight",
                            [s, roundEn](T a) { return pypto_emu::shift_right(a, s, roundEn); });
}

template <typename T, bool isSetMask = true>
void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src, const pypto_emu::same_t<T>& scalarValue,
                const uint64_t mask, const int32_t repeatTime, const UnaryRepeatParams& repeatParams,
                bool roundEn = false, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "ShiftRight");
    PYPTO_REQUIRE_TYPE(shift_type, "ShiftRight", "int16_t, uint16_t, int32_t, uint32_t");
    pypto_emu::check_shift(scalarValue, "ShiftRight");
    T s = scalarValue;
    pypto_emu::masked_unary(dst, src, PYPTO_MASK_LEN(mask), repeatTime, repeatParams, "ShiftRight",
                            [s, roundEn](T a) { return pypto_emu::shift_right(a, s, roundEn); });
}

} // namespace AscendC

namespace pypto_emu {

template <typename T>
void masked_duplicate(const AscendC::LocalTensor<T>& dst, T value, MaskArg arg, const uint64_t* bits, uint64_t len,
                      int32_t repeat_time, uint32_t blk, uint32_t rep)
{
    const char* what = "Duplicate";
    RepeatPlan p = make_plan(what, sizeof(T), arg, bits, len, repeat_time);
    auto d = strided(dst, blk, rep, "dst", what, true);
    check_reach(d, p, what);
    run_plan(p, d, [&](uint32_t, uint32_t) { return value; });
}

// A Cast operand seen through block and repeat strides, addressed in bits
// so that int4b_t operands (two elements a byte) work like the others.
template <typename T>
struct CastOperand {
    T* base;
    uint64_t bytes;
    uint32_t blk;
    uint32_t rep;
    const char* name;
    AccessView init;

    uint64_t bit(uint32_t r, uint32_t e) const
    {
        uint64_t b = static_cast<uint64_t>(e) * bits_of<T>;
        return static_cast<uint64_t>(r) * rep * 256 + (b / 256) * blk * 256 + b % 256;
    }
    T get(uint32_t r, uint32_t e) const
    {
        init.read(bit(r, e) / 8, (bits_of<T> + 7) / 8);
        if constexpr (is_int4<T>) {
            return load_int4(base, bit(r, e) / 4);
        } else {
            return *reinterpret_cast<const T*>(reinterpret_cast<const uint8_t*>(base) + bit(r, e) / 8);
        }
    }
    void set(uint32_t r, uint32_t e, T v) const
    {
        init.write(bit(r, e) / 8, (bits_of<T> + 7) / 8);
        if constexpr (is_int4<T>) {
            store_int4(base, bit(r, e) / 4, v);
        } else {
            *reinterpret_cast<T*>(reinterpret_cast<uint8_t*>(base) + bit(r, e) / 8) = v;
        }
    }

    void check_reach(const RepeatPlan& p, const char* what) const
    {
        uint64_t end = 0;
        uint32_t at_repeat = 0;
        for (uint32_t r = 0; r < p.repeats; ++r) {
            for (uint32_t e = 0; e < p.per_repeat; ++e) {
                if (p.active(r, e)) {
                    uint64_t o = (bit(r, e) + bits_of<T> + 7) / 8;
                    if (o > end) {
                        end = o;
                        at_repeat = r;
                    }
                }
            }
        }
        if (end > bytes) {
            fail(what, ": repeat ", at_repeat, " reaches byte ", end, " of ", name, ", which has ", bytes,
                 " bytes (block stride ", blk, ", repeat stride ", rep,
                 ", in 32-byte blocks); accesses must stay inside the operands");
        }
    }
};

template <typename T>
CastOperand<T> cast_operand(const AscendC::LocalTensor<T>& t, uint32_t blk, uint32_t rep, const char* name,
                            const char* what, bool is_dst = false)
{
    check_vector_operand(t, 0, what);
    if (is_dst && blk == 0) {
        fail(what, ": ", name, "'s block stride is 0; the destination block stride must be at least 1 (0 is "
                               "undefined on the hardware)");
    }
    if (timing_only()) {
        instr_access(memory_of(t.position()), is_dst); // the record, as the skipped accesses would fill it
    }
    return CastOperand<T>{t.data(), bytes_for<T>(t.GetSize()), blk, rep, name, access_view(t, what, name)};
}

// With an int4b_t operand the mask selects whole bytes of it: an even
// count, or bits 2k and 2k + 1 alike.
inline void check_int4_mask(const RepeatPlan& p, MaskArg arg, uint64_t len, const char* what)
{
    if (arg == MaskArg::Continuous && len % 2 != 0) {
        fail(what, ": mask ", len, " is odd; with an int4b_t operand the mask must be even");
    }
    if (p.counter) {
        if (p.total % 2 != 0) {
            fail(what, ": the mask register counts ", p.total, " elements, an odd number; with an int4b_t operand "
                       "it must be even");
        }
        return;
    }
    for (int w = 0; w < 2; ++w) {
        uint64_t diff = (p.bits[w] ^ (p.bits[w] >> 1)) & 0x5555555555555555ull;
        if (diff != 0) {
            int k = __builtin_ctzll(diff) + 64 * w;
            fail(what, ": mask bits ", k, " and ", k + 1, " differ; with an int4b_t operand each pair of bits "
                       "(2k, 2k + 1) must be alike");
        }
    }
}

template <typename T, typename U>
void masked_cast(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& src, AscendC::RoundMode mode,
                 MaskArg arg, const uint64_t* bits, uint64_t len, int32_t repeat_time,
                 const AscendC::UnaryRepeatParams& rp, const char* what = "Cast")
{
    check_cast_mode<T, U>(mode, what);
    // The mask counts elements of the wider of the two types.
    constexpr uint32_t wide = static_cast<uint32_t>(bits_of<T> > bits_of<U> ? bits_of<T> : bits_of<U>) / 8;
    RepeatPlan p = make_plan(what, wide, arg, bits, len, repeat_time);
    if constexpr (is_int4<T> || is_int4<U>) {
        check_int4_mask(p, arg, len, what);
    }
    auto d = cast_operand(dst, rp.dstBlkStride, rp.dstRepStride, "dst", what, true);
    auto s = cast_operand(src, rp.srcBlkStride, rp.srcRepStride, "src", what);
    d.check_reach(p, what);
    s.check_reach(p, what);
    std::vector<T> vals(p.per_repeat);
    for (uint32_t r = 0; r < p.repeats; ++r) {
        for (uint32_t e = 0; e < p.per_repeat; ++e) {
            if (p.active(r, e)) {
                vals[e] = convert<T, U>(s.get(r, e), mode);
            }
        }
        for (uint32_t e = 0; e < p.per_repeat; ++e) {
            if (p.active(r, e)) {
                d.set(r, e, vals[e]);
            }
        }
    }
}

template <typename T>
void masked_copy(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, MaskArg arg,
                 const uint64_t* bits, uint64_t len, int32_t repeat_time, const AscendC::CopyRepeatParams& rp)
{
    const char* what = "Copy";
    if (rp.dstRepeatSize > 4095 || rp.srcRepeatSize > 4095) {
        fail(what, ": repeat sizes are ", rp.dstRepeatSize, " (dst) and ", rp.srcRepeatSize,
             " (src) blocks; CopyRepeatParams allows 0..4095");
    }
    RepeatPlan p = make_plan(what, sizeof(T), arg, bits, len, repeat_time, true);
    auto d = strided(dst, rp.dstStride, rp.dstRepeatSize, "dst", what);
    auto s = strided(src, rp.srcStride, rp.srcRepeatSize, "src", what);
    check_reach(d, p, what);
    check_reach(s, p, what);
    run_plan(p, d, [&](uint32_t r, uint32_t e) { return s.get(r, e); });
}

} // namespace pypto_emu

namespace AscendC {

template <typename T, bool isSetMask = true>
void Duplicate(const LocalTensor<T>& dst, const pypto_emu::same_t<T>& scalarValue, const uint64_t mask[],
               const int32_t repeatTime, const uint16_t dstBlockStride, const uint8_t dstRepeatStride, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Duplicate");
    PYPTO_REQUIRE_TYPE(Target::duplicate, "Duplicate", "int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float");
    pypto_emu::masked_duplicate<T>(dst, scalarValue, PYPTO_MASK_ARG(mask, 0), repeatTime, dstBlockStride,
                                   dstRepeatStride);
}

template <typename T, bool isSetMask = true>
void Duplicate(const LocalTensor<T>& dst, const pypto_emu::same_t<T>& scalarValue, const uint64_t mask,
               const int32_t repeatTime, const uint16_t dstBlockStride, const uint8_t dstRepeatStride, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Duplicate");
    PYPTO_REQUIRE_TYPE(Target::duplicate, "Duplicate", "int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float");
    pypto_emu::masked_duplicate<T>(dst, scalarValue, PYPTO_MASK_LEN(mask), repeatTime, dstBlockStride,
                                   dstRepeatStride);
}

template <typename T, typename U, bool isSetMask = true>
void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode, const uint64_t mask[],
          const int32_t repeatTime, const UnaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Cast");
    PYPTO_CAST_TYPES_OK;
    pypto_emu::masked_cast(dst, src, roundMode, PYPTO_MASK_ARG(mask, 0), repeatTime, repeatParams);
}

template <typename T, typename U, bool isSetMask = true>
void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode, const uint64_t mask,
          const int32_t repeatTime, const UnaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Cast");
    PYPTO_CAST_TYPES_OK;
    pypto_emu::masked_cast(dst, src, roundMode, PYPTO_MASK_LEN(mask), repeatTime, repeatParams);
}

#undef PYPTO_CAST_TYPES_OK

template <typename T, bool isSetMask = true>
void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[], const int32_t repeatTime,
          const CopyRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Copy");
    PYPTO_REQUIRE_TYPE(copy_type, "Copy", "int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float");
    pypto_emu::masked_copy(dst, src, PYPTO_MASK_ARG(mask, 0), repeatTime, repeatParams);
}

template <typename T, bool isSetMask = true>
void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask, const int32_t repeatTime,
          const CopyRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Copy");
    PYPTO_REQUIRE_TYPE(copy_type, "Copy", "int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float");
    pypto_emu::masked_copy(dst, src, PYPTO_MASK_LEN(mask), repeatTime, repeatParams);
}

// dst block j of repeat r is filled with src[8 r + j].
template <typename T>
void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
          const BrcbRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Brcb");
    PYPTO_REQUIRE_TYPE(copy_type, "Brcb", "int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float");
    const char* what = "Brcb";
    pypto_emu::poll(what);
    pypto_emu::check_repeat_time(repeatTime, what);
    pypto_emu::model_vector_repeats(what, static_cast<uint64_t>(repeatTime > 0 ? repeatTime : 0), sizeof(T));
    pypto_emu::check_vector_operand(src, 0, what);
    pypto_emu::check_vector_operand(dst, 0, what);
    if (repeatParams.dstBlkStride == 0) {
        pypto_emu::fail(what, ": dst's block stride is 0; the destination block stride must be at least 1 (0 is "
                              "undefined on the hardware)");
    }
    uint32_t reps = static_cast<uint32_t>(repeatTime);
    if (static_cast<uint64_t>(reps) * 8 > src.GetSize()) {
        pypto_emu::fail(what, ": ", reps, " repeats read ", reps * 8, " elements of src, which has ",
                        src.GetSize());
    }
    if (reps == 0) {
        return;
    }
    uint64_t last = (static_cast<uint64_t>(reps - 1) * repeatParams.dstRepStride + 7ull * repeatParams.dstBlkStride)
                        * 32 + 32;
    uint64_t dst_bytes = static_cast<uint64_t>(dst.GetSize()) * sizeof(T);
    if (last > dst_bytes) {
        pypto_emu::fail(what, ": repeat ", reps - 1, " reaches byte ", last, " of dst, which has ", dst_bytes,
                        " bytes (block stride ", repeatParams.dstBlkStride, ", repeat stride ",
                        repeatParams.dstRepStride, ", in 32-byte blocks); accesses must stay inside the operands");
    }
    const uint8_t* s0 = reinterpret_cast<const uint8_t*>(src.data());
    const uint8_t* d0 = reinterpret_cast<const uint8_t*>(dst.data());
    if (s0 < d0 + last && d0 < s0 + reps * 8 * sizeof(T)) {
        pypto_emu::fail(what, ": src and dst overlap; the instruction needs them apart");
    }
    constexpr uint32_t per_block = 32 / sizeof(T);
    pypto_emu::access_read(what, "src", src, 0, reps * 8ull * sizeof(T));
    for (uint32_t r = 0; r < reps; ++r) {
        for (uint32_t j = 0; j < 8; ++j) {
            pypto_emu::access_write(dst, (static_cast<uint64_t>(r) * repeatParams.dstRepStride +
                                        static_cast<uint64_t>(j) * repeatParams.dstBlkStride) * 32, 32);
            T v = src.data()[r * 8 + j];
            T* blk = reinterpret_cast<T*>(reinterpret_cast<uint8_t*>(dst.data()) +
                                          (static_cast<uint64_t>(r) * repeatParams.dstRepStride +
                                           static_cast<uint64_t>(j) * repeatParams.dstBlkStride) * 32);
            for (uint32_t k = 0; k < per_block; ++k) {
                blk[k] = v;
            }
        }
    }
}

// ---- compare and select ------------------------------------------------------
// Compare results are bits, element i at bit i % 8 of byte i / 8.

template <typename T, typename U>
void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
             uint32_t count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Compare");
    PYPTO_REQUIRE_TYPE(compare_type, "Compare", "half, float, int32_t (EQ only)");
    static_assert(pypto_emu::one_of<U, uint8_t, int8_t>, "Compare: the result type must be uint8_t or int8_t");
    const char* what = "Compare";
    pypto_emu::check_compare_mode<T>(cmpMode, what);
    pypto_emu::check_compare_count<T>(count, what);
    pypto_emu::check_vector_operand(src0, static_cast<int32_t>(count), what);
    pypto_emu::check_vector_operand(src1, static_cast<int32_t>(count), what);
    uint8_t* bits = pypto_emu::bit_operand(dst, count / 8, "dst", what);
    pypto_emu::access_read(what, "src0", src0, 0, static_cast<uint64_t>(count) * sizeof(T));
    pypto_emu::access_read(what, "src1", src1, 0, static_cast<uint64_t>(count) * sizeof(T));
    pypto_emu::access_write(dst, 0, count / 8);
    std::vector<uint8_t> out(count / 8, 0);
    for (uint32_t i = 0; i < count; ++i) {
        using C = pypto_emu::compute_t<T>;
        pypto_emu::set_bit(out.data(), i,
                           pypto_emu::compare(cmpMode, static_cast<C>(src0.data()[i]), static_cast<C>(src1.data()[i])));
    }
    std::memcpy(bits, out.data(), out.size());
}

template <typename T, typename U>
void Compares(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const pypto_emu::same_t<T> src1Scalar,
              CMPMODE cmpMode, uint32_t count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Compares");
    PYPTO_REQUIRE_TYPE(compare_type, "Compares", "half, float, int32_t (EQ only)");
    static_assert(std::is_same_v<U, uint8_t>, "Compares: the result type must be uint8_t");
    const char* what = "Compares";
    pypto_emu::check_compare_mode<T>(cmpMode, what);
    pypto_emu::check_compare_count<T>(count, what);
    pypto_emu::check_vector_operand(src0, static_cast<int32_t>(count), what);
    uint8_t* bits = pypto_emu::bit_operand(dst, count / 8, "dst", what);
    pypto_emu::access_read(what, "src0", src0, 0, static_cast<uint64_t>(count) * sizeof(T));
    pypto_emu::access_write(dst, 0, count / 8);
    using C = pypto_emu::compute_t<T>;
    C s = static_cast<C>(src1Scalar);
    std::vector<uint8_t> out(count / 8, 0);
    for (uint32_t i = 0; i < count; ++i) {
        pypto_emu::set_bit(out.data(), i, pypto_emu::compare(cmpMode, static_cast<C>(src0.data()[i]), s));
    }
    std::memcpy(bits, out.data(), out.size());
}

} // namespace AscendC

namespace pypto_emu {

// The repeat forms of Compare/Compares. On Atlas A2/A3 the mask argument is
// reserved (every element of each repeat is compared) and the bits of the
// repeats are packed: repeat r writes bytes [r * n / 8, (r + 1) * n / 8) of
// dst, n the elements per repeat.
template <typename T, typename U, typename Src1>
void compare_repeats(const AscendC::LocalTensor<U>& dst, const Strided<T>& a, Src1 b, CMPMODE mode,
                     int32_t repeat_time, const char* what)
{
    check_compare_mode<T>(mode, what);
    check_repeat_time(repeat_time, what);
    RepeatPlan p;
    p.per_repeat = 256 / sizeof(T);
    p.repeats = static_cast<uint32_t>(repeat_time);
    p.bits[0] = ~0ull;
    p.bits[1] = ~0ull;
    check_reach(a, p, what);
    uint64_t n = static_cast<uint64_t>(p.repeats) * p.per_repeat;
    uint8_t* bits = bit_operand(dst, n / 8, "dst", what);
    access_write(dst, 0, n / 8);
    std::vector<uint8_t> out(n / 8, 0);
    using C = compute_t<T>;
    for (uint32_t r = 0; r < p.repeats; ++r) {
        for (uint32_t e = 0; e < p.per_repeat; ++e) {
            set_bit(out.data(), static_cast<uint64_t>(r) * p.per_repeat + e,
                    compare(mode, static_cast<C>(a.get(r, e)), static_cast<C>(b(r, e))));
        }
    }
    std::memcpy(bits, out.data(), out.size());
}

template <typename T>
void check_select_mode(SELMODE mode, bool scalar, const char* what)
{
    if (scalar && mode != SELMODE::VSEL_TENSOR_SCALAR_MODE) {
        fail(what, ": a scalar src1 needs SELMODE::VSEL_TENSOR_SCALAR_MODE");
    }
    if (!scalar && mode == SELMODE::VSEL_TENSOR_SCALAR_MODE) {
        fail(what, ": SELMODE::VSEL_TENSOR_SCALAR_MODE needs a scalar src1");
    }
}

// Bit of selMask that element e of repeat r reads: mode 0 reuses the first
// repeat's bits for every repeat, modes 1 and 2 consume them in order.
inline uint64_t select_bit(SELMODE mode, uint32_t per_repeat, uint64_t r, uint32_t e)
{
    return mode == SELMODE::VSEL_CMPMASK_SPR ? e : r * per_repeat + e;
}

template <typename T, typename U, typename Src1>
void masked_select(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& selMask,
                   const AscendC::LocalTensor<T>& src0, Src1 src1_at, bool scalar, SELMODE mode, MaskArg arg,
                   const uint64_t* bits, uint64_t len, int32_t repeat_time, const AscendC::BinaryRepeatParams& rp,
                   const Strided<T>* src1)
{
    const char* what = "Select";
    check_select_mode<T>(mode, scalar, what);
    RepeatPlan p = make_plan(what, sizeof(T), arg, bits, len, repeat_time);
    auto d = strided(dst, rp.dstBlkStride, rp.dstRepStride, "dst", what, true);
    auto a = strided(src0, rp.src0BlkStride, rp.src0RepStride, "src0", what);
    check_reach(d, p, what);
    check_reach(a, p, what);
    if (src1 != nullptr) {
        check_reach(*src1, p, what);
    }
    uint64_t need = 0;
    for (uint32_t r = 0; r < p.repeats; ++r) {
        for (uint32_t e = 0; e < p.per_repeat; ++e) {
            if (p.active(r, e)) {
                uint64_t b = select_bit(mode, p.per_repeat, r, e) + 1;
                need = b > need ? b : need;
            }
        }
    }
    const uint8_t* sel = bit_operand(selMask, (need + 7) / 8, "selMask", what);
    access_read(what, "selMask", selMask, 0, (need + 7) / 8);
    run_plan(p, d, [&](uint32_t r, uint32_t e) {
        return bit_at(sel, select_bit(mode, p.per_repeat, r, e)) ? a.get(r, e) : src1_at(r, e);
    });
}

template <typename T, typename U, typename Src1>
void select_count(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& selMask,
                  const AscendC::LocalTensor<T>& src0, Src1 src1_at, SELMODE mode, uint32_t count)
{
    const char* what = "Select";
    check_vector_operand(dst, static_cast<int32_t>(count), what);
    check_vector_operand(src0, static_cast<int32_t>(count), what);
    constexpr uint32_t per_repeat = 256 / sizeof(T);
    uint64_t need = mode == SELMODE::VSEL_CMPMASK_SPR ? (count < per_repeat ? count : per_repeat) : count;
    const uint8_t* sel = bit_operand(selMask, (need + 7) / 8, "selMask", what);
    access_read(what, "selMask", selMask, 0, (need + 7) / 8);
    model_vector_bytes(what, static_cast<uint64_t>(count) * sizeof(T), sizeof(T));
    std::vector<T> out(count);
    for (uint32_t i = 0; i < count; ++i) {
        uint64_t b = mode == SELMODE::VSEL_CMPMASK_SPR ? i % per_repeat : i;
        if (bit_at(sel, b)) {
            access_read(what, "src0", src0, static_cast<uint64_t>(i) * sizeof(T), sizeof(T));
        }
        out[i] = bit_at(sel, b) ? src0.data()[i] : src1_at(i);
    }
    for (uint32_t i = 0; i < count; ++i) {
        dst.data()[i] = out[i];
    }
    access_write(dst, 0, static_cast<uint64_t>(count) * sizeof(T));
}

} // namespace pypto_emu

namespace AscendC {

#define PYPTO_REQUIRE_SELECT                                                                              \
    PYPTO_REQUIRE_TYPE(select_type, "Select", "half, float");                                           \
    static_assert(pypto_emu::one_of<U, uint8_t, uint16_t, uint32_t, uint64_t>,                          \
                  "Select: selMask must be uint8_t, uint16_t, uint32_t or uint64_t")

template <typename T, typename U, bool isSetMask = true>
void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
             const uint64_t mask[], const int32_t repeatTime, const BinaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Compare");
    PYPTO_REQUIRE_TYPE(compare_type, "Compare", "half, float, int32_t (EQ only)");
    static_assert(pypto_emu::one_of<U, uint8_t, int8_t>, "Compare: the result type must be uint8_t or int8_t");
    (void)mask; // reserved on Atlas A2/A3
    auto a = pypto_emu::strided(src0, repeatParams.src0BlkStride, repeatParams.src0RepStride, "src0", "Compare");
    auto b = pypto_emu::strided(src1, repeatParams.src1BlkStride, repeatParams.src1RepStride, "src1", "Compare");
    pypto_emu::RepeatPlan p;
    p.per_repeat = 256 / sizeof(T);
    p.repeats = repeatTime < 0 || repeatTime > 255 ? 0 : static_cast<uint32_t>(repeatTime);
    p.bits[0] = p.bits[1] = ~0ull;
    pypto_emu::check_reach(b, p, "Compare");
    pypto_emu::compare_repeats(dst, a, [&](uint32_t r, uint32_t e) { return b.get(r, e); }, cmpMode, repeatTime,
                               "Compare");
}

template <typename T, typename U, bool isSetMask = true>
void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
             const uint64_t mask, const int32_t repeatTime, const BinaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Compare");
    uint64_t bits[2] = {mask, 0};
    Compare<T, U, isSetMask>(dst, src0, src1, cmpMode, bits, repeatTime, repeatParams);
}

template <typename T, typename U, bool isSetMask = true>
void Compares(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const pypto_emu::same_t<T> src1Scalar,
              CMPMODE cmpMode, const uint64_t mask[], const int32_t repeatTime, const UnaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Compares");
    PYPTO_REQUIRE_TYPE(compare_type, "Compares", "half, float, int32_t (EQ only)");
    static_assert(std::is_same_v<U, uint8_t>, "Compares: the result type must be uint8_t");
    (void)mask; // reserved on Atlas A2/A3
    auto a = pypto_emu::strided(src0, repeatParams.srcBlkStride, repeatParams.srcRepStride, "src0", "Compares");
    T s = src1Scalar;
    pypto_emu::compare_repeats(dst, a, [s](uint32_t, uint32_t) { return s; }, cmpMode, repeatTime, "Compares");
}

template <typename T, typename U, bool isSetMask = true>
void Compares(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const pypto_emu::same_t<T> src1Scalar,
              CMPMODE cmpMode, const uint64_t mask, const int32_t repeatTime, const UnaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Compares");
    uint64_t bits[2] = {mask, 0};
    Compares<T, U, isSetMask>(dst, src0, src1Scalar, cmpMode, bits, repeatTime, repeatParams);
}

// The register form: one repeat, the result into the 128-bit compare-mask
// register (masked-off bits keep their values); GetCmpMask reads it out.
template <typename T, bool isSetMask = true>
void Compare(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode, const uint64_t mask[],
             const BinaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Compare");
    PYPTO_REQUIRE_TYPE(Target::math, "Compare", "half, float");
    const char* what = "Compare";
    pypto_emu::RepeatPlan p = pypto_emu::make_plan(
        what, sizeof(T), isSetMask ? pypto_emu::MaskArg::Bitwise : pypto_emu::MaskArg::Register, mask, 0, 1);
    auto a = pypto_emu::strided(src0, repeatParams.src0BlkStride, repeatParams.src0RepStride, "src0", what);
    auto b = pypto_emu::strided(src1, repeatParams.src1BlkStride, repeatParams.src1RepStride, "src1", what);
    pypto_emu::check_reach(a, p, what);
    pypto_emu::check_reach(b, p, what);
    uint64_t* cmp = pypto_emu::mask_registers().cmp;
    using C = pypto_emu::compute_t<T>;
    for (uint32_t r = 0; r < p.repeats && r < 1; ++r) {
        for (uint32_t e = 0; e < p.per_repeat; ++e) {
            if (p.active(r, e)) {
                bool v = pypto_emu::compare(cmpMode, static_cast<C>(a.get(r, e)), static_cast<C>(b.get(r, e)));
                cmp[e / 64] = v ? (cmp[e / 64] | (1ull << (e % 64))) : (cmp[e / 64] & ~(1ull << (e % 64)));
            }
        }
    }
}

template <typename T, bool isSetMask = true>
void Compare(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode, const uint64_t mask,
             const BinaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Compare");
    PYPTO_REQUIRE_TYPE(Target::math, "Compare", "half, float");
    const char* what = "Compare";
    uint64_t bits[2];
    if (mask > 256 / sizeof(T)) {
        pypto_emu::fail(what, ": mask ", mask, " exceeds the ", 256 / sizeof(T), " elements of one repeat of ",
                        pypto_emu::width_name(sizeof(T)), " elements (normal mode takes a mask of 0..",
                        256 / sizeof(T), ")");
    }
    pypto_emu::continuous_bits(mask, bits);
    if (!isSetMask) {
        Compare<T, false>(src0, src1, cmpMode, bits, repeatParams);
    } else {
        Compare<T, true>(src0, src1, cmpMode, bits, repeatParams);
    }
}

namespace detail_mask {
template <typename T>
uint8_t* cmp_mask_operand(const LocalTensor<T>& t, const char* what)
{
    pypto_emu::poll(what);
    if (t.data() == nullptr) {
        pypto_emu::fail(what, ": the operand LocalTensor was never allocated");
    }
    if (pypto_emu::memory_of(t.position()) != pypto_emu::Memory::UB) {
        pypto_emu::fail(what, ": the operand must be in the Unified Buffer (VECIN, VECOUT or VECCALC), not ",
                        pypto_emu::position_name(t.position()));
    }
    if (t.offset_bytes() % 16 != 0) {
        pypto_emu::fail(what, ": the operand starts at Unified Buffer byte ", t.offset_bytes(),
                        ", not on a 16-byte boundary");
    }
    return reinterpret_cast<uint8_t*>(t.data());
}
} // namespace detail_mask

// Copies the 128-bit compare-mask register to dst (which must hold at least
// 128 bytes, as documented).
template <typename T>
void GetCmpMask(const LocalTensor<T>& dst, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "GetCmpMask");
    const char* what = "GetCmpMask";
    uint8_t* d = detail_mask::cmp_mask_operand(dst, what);
    uint64_t have = static_cast<uint64_t>(dst.GetSize()) * sizeof(T);
    if (have < 128) {
        pypto_emu::fail(what, ": dst has ", have, " bytes; it must have at least 128");
    }
    pypto_emu::access_write(dst, 0, 16);
    std::memcpy(d, pypto_emu::mask_registers().cmp, 16);
}

// Loads the 128-bit compare-mask register from src's first 16 bytes.
template <typename T>
void SetCmpMask(const LocalTensor<T>& src, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "SetCmpMask");
    const char* what = "SetCmpMask";
    uint8_t* s = detail_mask::cmp_mask_operand(src, what);
    if (static_cast<uint64_t>(src.GetSize()) * sizeof(T) < 16) {
        pypto_emu::fail(what, ": src has fewer than 16 bytes");
    }
    pypto_emu::access_read(what, "src", src, 0, 16);
    std::memcpy(pypto_emu::mask_registers().cmp, s, 16);
}

template <typename T, typename U>
void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
            const pypto_emu::same_t<T> src1, SELMODE selMode, uint32_t count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Select");
    PYPTO_REQUIRE_SELECT;
    pypto_emu::check_select_mode<T>(selMode, true, "Select");
    pypto_emu::select_count(dst, selMask, src0, [src1](uint32_t) { return src1; }, selMode, count);
}

template <typename T, typename U>
void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
            const LocalTensor<T>& src1, SELMODE selMode, uint32_t count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Select");
    PYPTO_REQUIRE_SELECT;
    pypto_emu::check_select_mode<T>(selMode, false, "Select");
    pypto_emu::check_vector_operand(src1, static_cast<int32_t>(count), "Select");
    const T* b = src1.data();
    pypto_emu::select_count(dst, selMask, src0, [b, &src1](uint32_t i) {
        pypto_emu::access_read("Select", "src1", src1, static_cast<uint64_t>(i) * sizeof(T), sizeof(T));
        return b[i];
    }, selMode, count);
}

template <typename T, typename U, bool isSetMask = true>
void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
            const pypto_emu::same_t<T> src1, SELMODE selMode, const uint64_t mask[], const int32_t repeatTime,
            const BinaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Select");
    PYPTO_REQUIRE_SELECT;
    pypto_emu::masked_select<T>(dst, selMask, src0, [src1](uint32_t, uint32_t) { return src1; }, true, selMode,
                                PYPTO_MASK_ARG(mask, 0), repeatTime, repeatParams, nullptr);
}

template <typename T, typename U, bool isSetMask = true>
void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
            const pypto_emu::same_t<T> src1, SELMODE selMode, const uint64_t mask, const int32_t repeatTime,
            const BinaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Select");
    PYPTO_REQUIRE_SELECT;
    pypto_emu::masked_select<T>(dst, selMask, src0, [src1](uint32_t, uint32_t) { return src1; }, true, selMode,
                                PYPTO_MASK_LEN(mask), repeatTime, repeatParams, nullptr);
}

template <typename T, typename U, bool isSetMask = true>
void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
            const LocalTensor<T>& src1, SELMODE selMode, const uint64_t mask[], const int32_t repeatTime,
            const BinaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Select");
    PYPTO_REQUIRE_SELECT;
    auto b = pypto_emu::strided(src1, repeatParams.src1BlkStride, repeatParams.src1RepStride, "src1", "Select");
    pypto_emu::masked_select<T>(dst, selMask, src0, [&b](uint32_t r, uint32_t e) { return b.get(r, e); }, false,
                                selMode, PYPTO_MASK_ARG(mask, 0), repeatTime, repeatParams, &b);
}

template <typename T, typename U, bool isSetMask = true>
void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
            const LocalTensor<T>& src1, SELMODE selMode, const uint64_t mask, const int32_t repeatTime,
            const BinaryRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Select");
    PYPTO_REQUIRE_SELECT;
    auto b = pypto_emu::strided(src1, repeatParams.src1BlkStride, repeatParams.src1RepStride, "src1", "Select");
    pypto_emu::masked_select<T>(dst, selMask, src0, [&b](uint32_t r, uint32_t e) { return b.get(r, e); }, false,
                                selMode, PYPTO_MASK_LEN(mask), repeatTime, repeatParams, &b);
}

#undef PYPTO_REQUIRE_SELECT

} // namespace AscendC

#undef PYPTO_MASK_BINARY
#undef PYPTO_MASK_SCALAR
#undef PYPTO_MASK_UNARY
#undef PYPTO_MASK_ARG
#undef PYPTO_MASK_LEN
