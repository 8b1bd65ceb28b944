// Sorting and compaction (Atlas A2/A3 forms): Sort32, MrgSort with
// MrgSortSrcList and MrgSort4Info, GetMrgSortResult (排序组合), and
// GatherMask with GatherMaskParams (比较与选择).
//
// A proposal is 8 bytes: the score (a float in bytes 0-3, or a half in
// bytes 0-1 with bytes 2-3 reserved) and a uint32_t index in bytes 4-7.
// Sort32 sorts each group of 32 scores descending into proposals; MrgSort
// merges up to four descending proposal lists. Equal scores keep their
// order (the documented rule: of score[i] == score[j] with i > j, j comes
// first); in a merge, the lower-numbered list first. NaN scores sort
// above every number (a decision; the documentation is silent).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

#include "layout.h"
#include "mask.h"
#include "vector.h"

namespace AscendC {

template <typename T>
struct MrgSortSrcList {
    MrgSortSrcList() {}
    MrgSortSrcList(const LocalTensor<T> src1In, const LocalTensor<T> src2In, const LocalTensor<T> src3In,
                   const LocalTensor<T> src4In)
        : src1(src1In[0]), src2(src2In[0]), src3(src3In[0]), src4(src4In[0])
    {
    }
    LocalTensor<T> src1;
    LocalTensor<T> src2;
    LocalTensor<T> src3;
    LocalTensor<T> src4;
};

// elementLengths count proposals (8 bytes each). Default-constructed: no
// elements, no suspension, four lists, one repeat (the defaults are not
// documented; kernels set every field).
struct MrgSort4Info {
    MrgSort4Info() {}
    MrgSort4Info(const uint16_t elementLengthsIn[4], const bool ifExhaustedSuspensionIn, const uint16_t validBitIn,
                 const uint16_t repeatTimesIn)
        : ifExhaustedSuspension(ifExhaustedSuspensionIn), validBit(validBitIn), repeatTimes(repeatTimesIn)
    {
        for (int i = 0; i < 4; ++i) {
            elementLengths[i] = elementLengthsIn[i];
        }
    }
    uint16_t elementLengths[4] = {0, 0, 0, 0};
    bool ifExhaustedSuspension = false;
    uint16_t validBit = 15;
    uint16_t repeatTimes = 1;
};

} // namespace AscendC

namespace pypto_emu {

template <typename T>
constexpr bool sort_type = one_of<T, half, float>;

// What the last MrgSort with ifExhaustedSuspension left for
// GetMrgSortResult, per block.
struct MrgSortResult {
    uint64_t launch = ~0ull;
    uint32_t block_idx = ~0u;
    bool set = false;
    uint16_t taken[4] = {0, 0, 0, 0};
};

inline MrgSortResult& mrg_sort_result()
{
    static thread_local MrgSortResult r;
    if (r.launch != block.launch_id || r.block_idx != block.idx) {
        r = MrgSortResult{};
        r.launch = block.launch_id;
        r.block_idx = block.idx;
    }
    return r;
}

// Whether score a goes before score b: descending, NaN first.
inline bool sort_before(float a, float b)
{
    if (std::isnan(a)) {
        return !std::isnan(b);
    }
    return a > b;
}

template <typename T>
void check_sort_operand(const AscendC::LocalTensor<T>& t, uint64_t align, uint64_t bytes, const char* name,
                        const char* what)
{
    if (t.data() == nullptr) {
        fail(what, ": ", name, " was never allocated");
    }
    if (memory_of(t.position()) != Memory::UB) {
        fail(what, ": ", name, " must be in the Unified Buffer (VECIN, VECOUT or VECCALC), not ",
             position_name(t.position()));
    }
    if (t.offset_bytes() % align != 0) {
        fail(what, ": ", name, " starts at Unified Buffer byte ", t.offset_bytes(), ", not on a ", align,
             "-byte boundary");
    }
    uint64_t size = static_cast<uint64_t>(t.GetSize()) * sizeof(T);
    if (bytes > size) {
        fail(what, ": ", name, " needs ", bytes, " bytes; it has ", size);
    }
}

// The score of a proposal at byte `p` of a list.
template <typename T>
float proposal_score(const uint8_t* p)
{
    T v;
    std::memcpy(&v, p, sizeof(T));
    return static_cast<float>(v);
}

} // namespace pypto_emu

namespace AscendC {

// Sorts each of `repeatTime` groups of 32 scores of src0 descending; dst
// takes (score, src1 index) proposals, 256 bytes a group.
template <typename T>
void Sort32(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<uint32_t>& src1,
            const int32_t repeatTime, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Sort32");
    PYPTO_REQUIRE_TYPE(sort_type, "Sort32", "half, float");
    const char* what = "Sort32";
    pypto_emu::poll(what);
    if (repeatTime < 0 || repeatTime > 255) {
        pypto_emu::fail(what, ": repeatTime ", repeatTime, " is outside 0..255");
    }
    uint64_t n = static_cast<uint64_t>(repeatTime) * 32;
    // Each repeat's src0 on 128 bytes (float) / 64 bytes (half), src1 on
    // 128 and dst on 256 (documented); repeats follow one another.
    pypto_emu::check_sort_operand(dst, 256, n * 8, "dst", what);
    pypto_emu::check_sort_operand(src0, 32 * sizeof(T), n * sizeof(T), "src0", what);
    pypto_emu::check_sort_operand(src1, 128, n * 4, "src1", what);
    if (pypto_emu::overlaps(dst.data(), n * 8, src0.data(), n * sizeof(T)) ||
        pypto_emu::overlaps(dst.data(), n * 8, src1.data(), n * 4)) {
        pypto_emu::fail(what, ": dst overlaps a source; the sorted proposals need a destination of their own");
    }
    // Issued (and costed) even with no repeats, as the mask forms are.
    pypto_emu::model_vector_repeats(what, static_cast<uint64_t>(repeatTime), sizeof(T));
    if (repeatTime == 0) {
        return; // documented: a no-op on Atlas A2/A3
    }
    pypto_emu::access_read(what, "src0", src0, 0, n * sizeof(T));
    pypto_emu::access_read(what, "src1", src1, 0, n * 4);
    pypto_emu::access_write(dst, 0, n * 8);
    if (pypto_emu::timing_only()) {
        return;
    }
    auto* out = reinterpret_cast<uint8_t*>(dst.data());
    for (int32_t r = 0; r < repeatTime; ++r) {
        uint32_t order[32];
        for (uint32_t e = 0; e < 32; ++e) {
            order[e] = e;
        }
        const T* s = src0.data() + r * 32;
        std::stable_sort(order, order + 32, [s](uint32_t x, uint32_t y) {
            return pypto_emu::sort_before(static_cast<float>(s[x]), static_cast<float>(s[y]));
        });
        for (uint32_t e = 0; e < 32; ++e) {
            uint8_t* p = out + (static_cast<uint64_t>(r) * 32 + e) * 8;
            std::memset(p, 0, 8); // half: bytes 2-3 reserved, written as 0
            std::memcpy(p, &s[order[e]], sizeof(T));
            uint32_t index = src1.data()[r * 32 + order[e]];
            std::memcpy(p + 4, &index, 4);
        }
    }
}

// Merges up to four descending proposal lists into dst (see the header).
template <typename T>
void MrgSort(const LocalTensor<T>& dst, const MrgSortSrcList<T>& src, const MrgSort4Info& params,
             pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "MrgSort");
    PYPTO_REQUIRE_TYPE(sort_type, "MrgSort", "half, float");
    const char* what = "MrgSort";
    pypto_emu::poll(what);
    uint32_t lists = 0;
    switch (params.validBit) {
    case 3: lists = 2; break;
    case 7: lists = 3; break;
    case 15: lists = 4; break;
    default:
        pypto_emu::fail(what, ": validBit ", params.validBit, " is not 3, 7 or 15 (the first 2, 3 or 4 lists)");
    }
    if (params.repeatTimes > 255) {
        pypto_emu::fail(what, ": repeatTimes ", params.repeatTimes, " is outside 0..255");
    }
    const LocalTensor<T>* in[4] = {&src.src1, &src.src2, &src.src3, &src.src4};
    const char* names[4] = {"src.src1", "src.src2", "src.src3", "src.src4"};
    uint64_t len[4] = {0, 0, 0, 0};
    uint64_t total = 0;
    for (uint32_t q = 0; q < lists; ++q) {
        if (params.elementLengths[q] > 4095) {
            pypto_emu::fail(what, ": elementLengths[", q, "] = ", params.elementLengths[q], " is outside 0..4095");
        }
        len[q] = params.elementLengths[q];
        total += len[q];
    }
    uint32_t repeats = params.repeatTimes;
    if (repeats > 1) {
        // Documented: repeats need four lists of one length, stored one after
        // another, and no suspension.
        bool contiguous = true;
        for (uint32_t q = 1; q < 4; ++q) {
            contiguous = contiguous && in[q]->data() != nullptr && in[0]->data() != nullptr &&
                         reinterpret_cast<const uint8_t*>(in[q]->data()) ==
                             reinterpret_cast<const uint8_t*>(in[0]->data()) + q * len[0] * 8;
        }
        if (lists != 4 || params.ifExhaustedSuspension || len[1] != len[0] || len[2] != len[0] ||
            len[3] != len[0] || !contiguous) {
            pypto_emu::fail(what, ": repeatTimes ", repeats, " needs validBit 15, four lists of one length stored "
                                  "one after another and ifExhaustedSuspension false (documented)");
        }
    }
    uint64_t span = static_cast<uint64_t>(repeats) * total * 8;
    pypto_emu::check_sort_operand(dst, 32, span, "dst", what);
    for (uint32_t q = 0; q < lists; ++q) {
        // With repeats every list runs on by the four lists' total.
        uint64_t reach = repeats > 1 ? (static_cast<uint64_t>(repeats - 1) * total + len[q]) * 8 : len[q] * 8;
        pypto_emu::check_sort_operand(*in[q], 8, reach, names[q], what);
        if (pypto_emu::overlaps(dst.data(), span, in[q]->data(), reach)) {
            pypto_emu::fail(what, ": dst overlaps ", names[q], "; the source and destination must be apart");
        }
    }
    pypto_emu::model_vector_bytes(what, span, sizeof(T));
    if (repeats == 0) {
        return; // documented: a no-op on Atlas A2/A3
    }
    for (uint32_t q = 0; q < lists; ++q) {
        uint64_t reach = repeats > 1 ? (static_cast<uint64_t>(repeats - 1) * total + len[q]) * 8 : len[q] * 8;
        pypto_emu::access_read(what, names[q], *in[q], 0, reach);
    }
    uint64_t written = 0;
    uint64_t taken[4] = {0, 0, 0, 0};
    if (!pypto_emu::timing_only()) {
        std::vector<uint8_t> out(span);
        for (uint32_t r = 0; r < repeats; ++r) {
            const uint8_t* base[4];
            for (uint32_t q = 0; q < lists; ++q) {
                base[q] = reinterpret_cast<const uint8_t*>(in[q]->data()) + static_cast<uint64_t>(r) * total * 8;
                taken[q] = 0;
            }
            while (true) {
                int best = -1;
                float best_score = 0;
                bool exhausted = false;
                for (uint32_t q = 0; q < lists; ++q) {
                    if (taken[q] == len[q]) {
                        exhausted = true;
                        continue;
                    }
                    float s = pypto_emu::proposal_score<T>(base[q] + taken[q] * 8);
                    if (best < 0 || pypto_emu::sort_before(s, best_score)) {
                        best = static_cast<int>(q);
                        best_score = s;
                    }
                }
                if (best < 0 || (exhausted && params.ifExhaustedSuspension)) {
                    break;
                }
                std::memcpy(out.data() + written, base[best] + taken[best] * 8, 8);
                written += 8;
                ++taken[best];
            }
        }
        std::memcpy(dst.data(), out.data(), written);
    } else {
        written = span;
    }
    pypto_emu::access_write(dst, 0, written);
    // GetMrgSortResult reports a suspending MrgSort only (documented); one
    // without suspension leaves nothing to report.
    pypto_emu::MrgSortResult& res = pypto_emu::mrg_sort_result();
    res.set = params.ifExhaustedSuspension;
    for (uint32_t q = 0; q < 4; ++q) {
        res.taken[q] = static_cast<uint16_t>(taken[q]);
    }
}

// After a MrgSort with ifExhaustedSuspension: how many proposals it took
// from each list.
// A register read: no pipe time.
inline void GetMrgSortResult(uint16_t& mrgSortList1, uint16_t& mrgSortList2, uint16_t& mrgSortList3,
                             uint16_t& mrgSortList4)
{
    const char* what = "GetMrgSortResult";
    pypto_emu::poll(what);
    pypto_emu::MrgSortResult& res = pypto_emu::mrg_sort_result();
    if (!res.set) {
        pypto_emu::fail(what, ": no MrgSort with ifExhaustedSuspension = true has run in this block (documented: "
                              "it reports such a MrgSort)");
    }
    mrgSortList1 = res.taken[0];
    mrgSortList2 = res.taken[1];
    mrgSortList3 = res.taken[2];
    mrgSortList4 = res.taken[3];
}

// ---- GatherMask -------------------------------------------------------------

// Reserved on Atlas A2/A3 (documented: keep the default). The enumerator
// names are not in the documentation.
enum class GatherMaskMode : uint8_t { VERSION_V1 = 0, VERSION_V2 = 1 };
inline constexpr GatherMaskMode defaultGatherMaskMode = GatherMaskMode::VERSION_V1;

// Strides in 32-byte blocks. The defaults are not documented: block stride
// 1, repeat strides 8 (one dense repeat after another), no repeats.
struct GatherMaskParams {
    GatherMaskParams() {}
    GatherMaskParams(const uint8_t src0BlockStrideIn, const uint16_t repeatTimesIn, const uint16_t src0RepeatStrideIn,
                     const uint8_t src1RepeatStrideIn)
        : src0BlockStride(src0BlockStrideIn), repeatTimes(repeatTimesIn), src0RepeatStride(src0RepeatStrideIn),
          src1RepeatStride(src1RepeatStrideIn)
    {
    }
    uint8_t src0BlockStride = 1;
    uint16_t repeatTimes = 0;
    uint16_t src0RepeatStride = 8;
    uint8_t src1RepeatStride = 8;
};

} // namespace AscendC

namespace pypto_emu {

// The GatherMask type list is the picked row's (arch.h).
// The pattern tensor's element: unsigned, of T's width.
template <typename T>
using gather_pattern_t = std::conditional_t<sizeof(T) == 1, uint8_t, std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>>;

// GatherMask: repeat r takes `per` elements of src0 (256 bytes' worth in
// normal mode, `mask` in counter mode), element e at block e / (32 /
// sizeof(T)) of the repeat; `bit(r, e)` says whether it is kept. Kept
// elements go to dst one after another; rsvdCnt counts them.
template <typename T, typename Bit>
void gather_mask(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src0, bool reduce_mode,
                 uint32_t mask, const AscendC::GatherMaskParams& p, uint64_t& rsvd, const char* what, Bit bit,
                 const std::function<void(uint64_t per)>& check_pattern)
{
    poll(what);
    check_sort_operand(dst, 32, 0, "dst", what);
    check_sort_operand(src0, 32, 0, "src0", what);
    if (p.repeatTimes > 255) {
        fail(what, ": repeatTimes ", p.repeatTimes, " is outside 0..255");
    }
    if (p.src0BlockStride == 0) {
        fail(what, ": src0BlockStride is 0");
    }
    if (reduce_mode && mask == 0) {
        fail(what, ": in counter mode (reduceMode true) mask must be 1 or more");
    }
    constexpr uint64_t per_block = 32 / sizeof(T);
    uint64_t per = reduce_mode ? mask : 256 / sizeof(T);
    uint64_t repeats = p.repeatTimes;
    auto src_byte = [&](uint64_t r, uint64_t e) {
        return (r * p.src0RepeatStride + (e / per_block) * p.src0BlockStride) * 32 + (e % per_block) * sizeof(T);
    };
    uint64_t src_bytes = static_cast<uint64_t>(src0.GetSize()) * sizeof(T);
    uint64_t dst_bytes = static_cast<uint64_t>(dst.GetSize()) * sizeof(T);
    if (repeats > 0) {
        for (uint64_t r = 0; r < repeats; ++r) {
            uint64_t end = src_byte(r, per - 1) + sizeof(T);
            if (end > src_bytes) {
                fail(what, ": repeat ", r, " reads up to byte ", end, " of src0, which has ", src_bytes, " bytes");
            }
        }
        check_pattern(per);
    }
    // dst may be src0 itself (the documented example); a partial overlap
    // is an error.
    if (dst.data() != src0.data() && overlaps(dst.data(), dst_bytes, src0.data(), src_bytes)) {
        fail(what, ": dst overlaps src0 without starting at it; the destination must be src0 itself or apart");
    }
    mask_registers().mode = AscendC::MaskMode::NORMAL; // documented: normal mode afterwards
    for (uint64_t r = 0; r < repeats; ++r) {
        for (uint64_t b = 0; b * per_block < per; ++b) {
            uint64_t first = src_byte(r, b * per_block);
            uint64_t n = std::min(per_block, per - b * per_block) * sizeof(T);
            access_read(what, "src0", src0, first, n);
        }
    }
    model_vector_repeats(what, repeats * ((per * sizeof(T) + 255) / 256), sizeof(T));
    if (timing_only()) {
        rsvd = 0; // the data is not computed in timing-only runs
        return;
    }
    std::vector<T> kept;
    for (uint64_t r = 0; r < repeats; ++r) {
        for (uint64_t e = 0; e < per; ++e) {
            if (bit(r, e)) {
                T v;
                std::memcpy(&v, reinterpret_cast<const uint8_t*>(src0.data()) + src_byte(r, e), sizeof(T));
                kept.push_back(v);
            }
        }
    }
    uint64_t out_bytes = kept.size() * sizeof(T);
    if (out_bytes > dst_bytes) {
        fail(what, ": ", kept.size(), " elements are kept, which is ", out_bytes, " bytes; dst has ", dst_bytes);
    }
    access_write(dst, 0, out_bytes);
    if (!kept.empty()) {
        std::memcpy(dst.data(), kept.data(), out_bytes);
    }
    rsvd = kept.size();
}

} // namespace pypto_emu

namespace AscendC {

// The user pattern: bit e of repeat r's words (element e % bits of word
// e / bits) keeps element e; repeat r's words start src1RepeatStride
// blocks after repeat r - 1's.
template <typename T, typename U, GatherMaskMode mode = defaultGatherMaskMode>
void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<U>& src1Pattern,
                const bool reduceMode, const uint32_t mask, const GatherMaskParams& gatherMaskParams,
                uint64_t& rsvdCnt, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "GatherMask");
    PYPTO_REQUIRE_TYPE(Target::gather_mask, "GatherMask", PYPTO_ARCH(GATHER_MASK_TYPES));
    static_assert(std::is_same_v<U, pypto_emu::gather_pattern_t<T>>,
                  "GatherMask: src1Pattern's type must be the unsigned type of T's width (uint16_t for 16-bit T, "
                  "uint32_t for 32-bit T)");
    const char* what = "GatherMask";
    constexpr uint64_t bits = 8 * sizeof(U);
    const GatherMaskParams& p = gatherMaskParams;
    auto word_byte = [&](uint64_t r, uint64_t e) { return r * p.src1RepeatStride * 32 + (e / bits) * sizeof(U); };
    auto check = [&](uint64_t per) {
        pypto_emu::check_sort_operand(src1Pattern, 32, 0, "src1Pattern", what);
        uint64_t size = static_cast<uint64_t>(src1Pattern.GetSize()) * sizeof(U);
        for (uint64_t r = 0; r < p.repeatTimes; ++r) {
            uint64_t end = word_byte(r, per - 1) + sizeof(U);
            if (end > size) {
                pypto_emu::fail(what, ": repeat ", r, " reads its pattern up to byte ", end,
                                " of src1Pattern, which has ", size, " bytes");
            }
            pypto_emu::access_read(what, "src1Pattern", src1Pattern, word_byte(r, 0), end - word_byte(r, 0));
        }
    };
    const auto* words = reinterpret_cast<const uint8_t*>(src1Pattern.data());
    pypto_emu::gather_mask(
        dst, src0, reduceMode, mask, p, rsvdCnt, what,
        [&](uint64_t r, uint64_t e) {
            U w;
            std::memcpy(&w, words + word_byte(r, e), sizeof(U));
            return ((w >> (e % bits)) & 1u) != 0;
        },
        check);
}

// The built-in patterns 1..7 (the same for every repeat): 1 even elements,
// 2 odd ones, 3..6 the first..fourth of every four, 7 all.
template <typename T, GatherMaskMode mode = defaultGatherMaskMode>
void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const uint8_t src1Pattern,
                const bool reduceMode, const uint32_t mask, const GatherMaskParams& gatherMaskParams,
                uint64_t& rsvdCnt, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "GatherMask");
    PYPTO_REQUIRE_TYPE(Target::gather_mask, "GatherMask", PYPTO_ARCH(GATHER_MASK_TYPES));
    const char* what = "GatherMask";
    if (src1Pattern < 1 || src1Pattern > 7) {
        pypto_emu::poll(what);
        pypto_emu::fail(what, ": src1Pattern ", static_cast<uint32_t>(src1Pattern),
                        " is not a built-in pattern (1..7)");
    }
    pypto_emu::gather_mask(
        dst, src0, reduceMode, mask, gatherMaskParams, rsvdCnt, what,
        [src1Pattern](uint64_t, uint64_t e) {
            switch (src1Pattern) {
            case 1: return e % 2 == 0;
            case 2: return e % 2 == 1;
            case 7: return true;
            default: return e % 4 == static_cast<uint64_t>(src1Pattern - 3);
            }
        },
        [](uint64_t) {});
}

} // namespace AscendC
