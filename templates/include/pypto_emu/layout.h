// Gathering and layout changes inside the Unified Buffer: Gather (count and
// mask forms), Gatherb, Transpose (16 x 16 and TransposeParamsExt forms),
// CreateVecIndex (count form), TransDataTo5HD (its three address forms).
//
// Offsets given to Gather and Gatherb are bytes from the start of src (plus
// srcBaseAddr for Gather). Enforced, as errors naming the rule: offsets on
// element boundaries (Gatherb: 32-byte boundaries), every element read
// inside src and written inside dst, source and destination apart,
// repeatTime <= 255, the mask width, the TransposeParamsExt ranges and its
// temporary-buffer size. Element types are static_asserts following the
// Atlas A2/A3 lists.
#pragma once

#include <vector>

#include "mask.h"

namespace AscendC {

// Gatherb's strides in 32-byte blocks; dstBlkStride 0 counts as 1. The
// other fields are reserved.
struct GatherRepeatParams {
    GatherRepeatParams() {}
    GatherRepeatParams(uint8_t dstBlk, uint8_t dstRep) : dstBlkStride(dstBlk), dstRepStride(dstRep) {}
    uint32_t blockNumber = 8; // reserved
    uint8_t dstBlkStride = 1;
    uint8_t src0BlkStride = 1; // reserved
    uint8_t src1BlkStride = 1; // reserved
    uint8_t dstRepStride = 8;
    uint8_t src0RepStride = 8; // reserved
    uint8_t src1RepStride = 8; // reserved
    bool repeatStrideMode = false; // reserved
    bool strideSizeMode = false;   // reserved
};

enum class TransposeType : uint8_t {
    TRANSPOSE_TYPE_NONE,
    TRANSPOSE_NZ2ND_0213,
    TRANSPOSE_NZ2NZ_0213,
    TRANSPOSE_NZ2NZ_012_WITH_N,
    TRANSPOSE_NZ2ND_012_WITH_N,
    TRANSPOSE_NZ2ND_012_WITHOUT_N,
    TRANSPOSE_NZ2NZ_012_WITHOUT_N,
    TRANSPOSE_ND2ND_ONLY,
    TRANSPOSE_ND_UB_GM,
    TRANSPOSE_GRAD_ND_UB_GM,
    TRANSPOSE_ND2ND_B16,
    TRANSPOSE_NCHW2NHWC,
    TRANSPOSE_NHWC2NCHW
};

struct TransposeParamsExt {
    TransposeParamsExt() {}
    TransposeParamsExt(const uint16_t nSizeIn, const uint16_t cSizeIn, const uint16_t hSizeIn,
                       const uint16_t wSizeIn, const TransposeType transposeTypeIn)
        : nSize(nSizeIn), cSize(cSizeIn), hSize(hSizeIn), wSize(wSizeIn), transposeType(transposeTypeIn)
    {
    }
    uint16_t nSize = 0;
    uint16_t cSize = 0;
    uint16_t hSize = 0;
    uint16_t wSize = 0;
    TransposeType transposeType = TransposeType::TRANSPOSE_ND2ND_B16;
};

} // namespace AscendC

namespace pypto_emu {

// The Gather, Gatherb and Transpose type lists are the picked row's (arch.h).
template <typename T>
constexpr bool vec_index_type = one_of<T, int16_t, half, int32_t, float>;

// Two byte ranges [a, a + an) and [b, b + bn) overlap.
inline bool overlaps(const void* a, uint64_t an, const void* b, uint64_t bn)
{
    auto x = reinterpret_cast<uintptr_t>(a);
    auto y = reinterpret_cast<uintptr_t>(b);
    return an != 0 && bn != 0 && x < y + bn && y < x + an;
}

// The byte offset, within src, of a Gather element; checked.
template <typename T>
uint64_t gather_source(const AscendC::LocalTensor<T>& src, uint64_t base, uint32_t offset, uint64_t index,
                       const char* what)
{
    uint64_t byte = base + offset;
    if (byte % sizeof(T) != 0) {
        fail(what, ": srcOffset[", index, "] = ", offset, " plus srcBaseAddr ", base, " is byte ", byte,
             ", not on a ", sizeof(T), "-byte element boundary (the hardware would read misaligned data)");
    }
    uint64_t size = static_cast<uint64_t>(src.GetSize()) * sizeof(T);
    if (byte + sizeof(T) > size) {
        fail(what, ": srcOffset[", index, "] = ", offset, " plus srcBaseAddr ", base, " reads bytes ", byte, "..",
             byte + sizeof(T), " of src, which has ", size, " bytes");
    }
    return byte;
}

} // namespace pypto_emu

namespace AscendC {

// ---- Gather --------------------------------------------------------------------
// dst[i] = the element at byte srcBaseAddr + srcOffset[i] of src.

template <typename T>
void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
            const uint32_t srcBaseAddr, const uint32_t count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Gather");
    // initcheck: the destination counts as written in full (not checked per element).
    pypto_emu::access_write(dst, 0, dst.GetLength());
    PYPTO_REQUIRE_TYPE(Target::gather, "Gather", PYPTO_ARCH(GATHER_TYPES));
    const char* what = "Gather";
    if (count > static_cast<uint32_t>(INT32_MAX)) {
        pypto_emu::fail(what, ": count ", count, " is too large");
    }
    pypto_emu::check_vector_operand(dst, static_cast<int32_t>(count), what);
    pypto_emu::check_vector_operand(src, 0, what);
    pypto_emu::check_vector_operand(srcOffset, static_cast<int32_t>(count), what);
    if (count == 0) {
        return;
    }
    // Timing only: the offsets may come from vector instructions, which
    // computed nothing, so no offset is read or checked.
    if (pypto_emu::timing_only()) {
        return;
    }
    std::vector<T> vals(count);
    const auto* s = reinterpret_cast<const uint8_t*>(src.data());
    uint64_t lo = ~0ull, hi = 0;
    pypto_emu::access_read(what, "srcOffset", srcOffset, 0, static_cast<uint64_t>(count) * sizeof(uint32_t));
    for (uint32_t i = 0; i < count; ++i) {
        uint64_t b = pypto_emu::gather_source(src, srcBaseAddr, srcOffset.data()[i], i, what);
        pypto_emu::access_read(what, "src", src, b, sizeof(T));
        lo = std::min(lo, b);
        hi = std::max<uint64_t>(hi, b + sizeof(T));
        std::memcpy(&vals[i], s + b, sizeof(T));
    }
    if (pypto_emu::overlaps(dst.data(), count * sizeof(T), s + lo, hi - lo)) {
        pypto_emu::fail(what, ": dst overlaps the source elements it gathers; source and destination must "
                              "be apart");
    }
    std::memcpy(dst.data(), vals.data(), count * sizeof(T));
}

} // namespace AscendC

namespace pypto_emu {

// The mask forms of Gather: repeat r, element e reads srcOffset[r * (256 /
// sizeof(T)) + e] and writes dst at repeat stride dstRepStride (blocks of a
// repeat are contiguous).
template <typename T>
void masked_gather(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                   const AscendC::LocalTensor<uint32_t>& offsets, uint32_t base, MaskArg arg, const uint64_t* bits,
                   uint64_t len, int32_t repeat_time, uint16_t dst_rep)
{
    // initcheck: the destination counts as written in full (not checked per element).
    access_write(dst, 0, dst.GetLength());
    const char* what = "Gather";
    RepeatPlan p = make_plan(what, sizeof(T), arg, bits, len, repeat_time);
    auto d = strided(dst, 1, dst_rep, "dst", what, true);
    check_vector_operand(src, 0, what);
    check_vector_operand(offsets, 0, what);
    check_reach(d, p, what);
    // Timing only: offsets are not read or checked (see Gather).
    if (timing_only()) {
        return;
    }
    const auto* s = reinterpret_cast<const uint8_t*>(src.data());
    uint64_t lo = ~0ull, hi = 0;
    for (uint32_t r = 0; r < p.repeats; ++r) {
        for (uint32_t e = 0; e < p.per_repeat; ++e) {
            if (!p.active(r, e)) {
                continue;
            }
            uint64_t k = static_cast<uint64_t>(r) * p.per_repeat + e;
            if (k >= offsets.GetSize()) {
                fail(what, ": repeat ", r, " reads srcOffset[", k, "], past its ", offsets.GetSize(), " elements");
            }
            access_read(what, "srcOffset", offsets, k * sizeof(uint32_t), sizeof(uint32_t));
            uint64_t b = gather_source(src, base, offsets.data()[k], k, what);
            access_read(what, "src", src, b, sizeof(T));
            lo = std::min(lo, b);
            hi = std::max<uint64_t>(hi, b + sizeof(T));
        }
    }
    if (hi > lo) {
        uint64_t dst_end = 0;
        for (uint32_t r = 0; r < p.repeats; ++r) {
            for (uint32_t e = 0; e < p.per_repeat; ++e) {
                if (p.active(r, e)) {
                    dst_end = std::max<uint64_t>(dst_end, d.offset(r, e) + sizeof(T));
                }
            }
        }
        if (overlaps(dst.data(), dst_end, s + lo, hi - lo)) {
            fail(what, ": dst overlaps the source elements it gathers; source and destination must be apart");
        }
    }
    run_plan(p, d, [&](uint32_t r, uint32_t e) {
        uint64_t k = static_cast<uint64_t>(r) * p.per_repeat + e;
        T v;
        std::memcpy(&v, s + base + offsets.data()[k], sizeof(T));
        return v;
    });
}

} // namespace pypto_emu

namespace AscendC {

template <typename T>
void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
            const uint32_t srcBaseAddr, const uint64_t mask[], const uint8_t repeatTime, const uint16_t dstRepStride, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Gather");
    // initcheck: the destination counts as written in full (not checked per element).
    pypto_emu::access_write(dst, 0, dst.GetLength());
    PYPTO_REQUIRE_TYPE(Target::gather, "Gather", PYPTO_ARCH(GATHER_TYPES));
    pypto_emu::masked_gather(dst, src, srcOffset, srcBaseAddr, pypto_emu::MaskArg::Bitwise, mask, 0, repeatTime,
                             dstRepStride);
}

template <typename T>
void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
            const uint32_t srcBaseAddr, const uint64_t mask, const uint8_t repeatTime, const uint16_t dstRepStride, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Gather");
    // initcheck: the destination counts as written in full (not checked per element).
    pypto_emu::access_write(dst, 0, dst.GetLength());
    PYPTO_REQUIRE_TYPE(Target::gather, "Gather", PYPTO_ARCH(GATHER_TYPES));
    pypto_emu::masked_gather(dst, src, srcOffset, srcBaseAddr, pypto_emu::MaskArg::Continuous, nullptr, mask,
                             repeatTime, dstRepStride);
}

// ---- Gatherb -----------------------------------------------------------------
// Block j of repeat r of dst (blocks dstBlkStride apart, repeats
// dstRepStride apart, 32-byte units) is the 32 bytes at byte offset[8r + j]
// of src.

template <typename T>
void Gatherb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& offset,
             const uint8_t repeatTime, const GatherRepeatParams& repeatParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Gatherb");
    // initcheck: the destination counts as written in full (not checked per element).
    pypto_emu::access_write(dst, 0, dst.GetLength());
    PYPTO_REQUIRE_TYPE(Target::gatherb, "Gatherb", PYPTO_ARCH(GATHERB_TYPES));
    const char* what = "Gatherb";
    pypto_emu::poll(what);
    pypto_emu::check_vector_operand(dst, 0, what);
    pypto_emu::check_vector_operand(src, 0, what);
    pypto_emu::check_vector_operand(offset, 0, what);
    if (repeatTime == 0) {
        return;
    }
    uint64_t blk = repeatParams.dstBlkStride == 0 ? 1 : repeatParams.dstBlkStride;
    uint64_t rep = repeatParams.dstRepStride;
    uint64_t blocks = repeatTime * 8ull;
    if (blocks > offset.GetSize()) {
        pypto_emu::fail(what, ": ", +repeatTime, " repeats read ", blocks, " offsets; offset has ",
                        offset.GetSize(), " elements");
    }
    // Timing only: offsets are not read or checked (see Gather).
    if (pypto_emu::timing_only()) {
        return;
    }
    uint64_t src_bytes = static_cast<uint64_t>(src.GetSize()) * sizeof(T);
    uint64_t dst_bytes = static_cast<uint64_t>(dst.GetSize()) * sizeof(T);
    const auto* s = reinterpret_cast<const uint8_t*>(src.data());
    auto* d = reinterpret_cast<uint8_t*>(dst.data());
    std::vector<uint8_t> vals(blocks * 32);
    uint64_t dst_end = 0, lo = ~0ull, hi = 0;
    pypto_emu::access_read(what, "offset", offset, 0, blocks * sizeof(uint32_t));
    for (uint64_t k = 0; k < blocks; ++k) {
        uint32_t o = offset.data()[k];
        if (o % 32 != 0) {
            pypto_emu::fail(what, ": offset[", k, "] = ", o, " is not a multiple of 32 (blocks are gathered from "
                                                              "32-byte boundaries)");
        }
        if (o + 32ull > src_bytes) {
            pypto_emu::fail(what, ": offset[", k, "] = ", o, " reads bytes ", o, "..", o + 32ull,
                            " of src, which has ", src_bytes, " bytes");
        }
        uint64_t at = (k / 8) * rep * 32 + (k % 8) * blk * 32;
        if (at + 32 > dst_bytes) {
            pypto_emu::fail(what, ": repeat ", k / 8, " reaches byte ", at + 32, " of dst, which has ", dst_bytes,
                            " bytes (block stride ", blk, ", repeat stride ", rep,
                            ", in 32-byte blocks); accesses must stay inside the operands");
        }
        dst_end = std::max(dst_end, at + 32);
        lo = std::min<uint64_t>(lo, o);
        hi = std::max<uint64_t>(hi, o + 32ull);
        pypto_emu::access_read(what, "src", src, o, 32);
        std::memcpy(&vals[k * 32], s + o, 32);
    }
    if (pypto_emu::overlaps(d, dst_end, s + lo, hi - lo)) {
        pypto_emu::fail(what, ": dst overlaps the source blocks it gathers; source and destination must be "
                              "apart");
    }
    for (uint64_t k = 0; k < blocks; ++k) {
        std::memcpy(d + (k / 8) * rep * 32 + (k % 8) * blk * 32, &vals[k * 32], 32);
    }
}

// ---- Transpose ---------------------------------------------------------------------

// One 16 x 16 matrix of 16-bit elements; dst may be src.
template <typename T>
void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Transpose");
    PYPTO_REQUIRE_TYPE(Target::transpose16, "Transpose", "int16_t, uint16_t, half");
    const char* what = "Transpose";
    pypto_emu::check_vector_operand(dst, 256, what);
    pypto_emu::check_vector_operand(src, 256, what);
    // The source is read before the destination (which may be the source) is written.
    pypto_emu::access_read(what, "src", src, 0, 256 * sizeof(T));
    // initcheck: the destination counts as written in full (not checked per element).
    pypto_emu::access_write(dst, 0, dst.GetLength());
    T tmp[256];
    std::memcpy(tmp, src.data(), sizeof(tmp));
    for (int r = 0; r < 16; ++r) {
        for (int c = 0; c < 16; ++c) {
            dst.data()[c * 16 + r] = tmp[r * 16 + c];
        }
    }
}

// [N, C, H, W] <-> [N, H, W, C], or one 16 x 16 matrix (TRANSPOSE_ND2ND_B16).
template <typename T>
void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
               const TransposeParamsExt& p, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Transpose");
    // initcheck: the destination counts as written in full (not checked per element).
    pypto_emu::access_write(dst, 0, dst.GetLength());
    pypto_emu::access_write(sharedTmpBuffer, 0, sharedTmpBuffer.GetLength());
    PYPTO_REQUIRE_TYPE(Target::transpose_ext, "Transpose(TransposeParamsExt)", PYPTO_ARCH(TRANSPOSE_EXT_TYPES));
    const char* what = "Transpose(TransposeParamsExt)";
    pypto_emu::poll(what);
    switch (p.transposeType) {
    case TransposeType::TRANSPOSE_TYPE_NONE:
        return;
    case TransposeType::TRANSPOSE_ND2ND_B16: {
        constexpr bool ok = pypto_emu::Target::transpose_nd2nd_b16<T>;
        const char* types = pypto_emu::Target::transpose_nd2nd_b16_types;
        if (!ok) {
            pypto_emu::fail(what, ": TRANSPOSE_ND2ND_B16 takes ", types, " elements on " PYPTO_ARCH(TARGET_NAME));
        }
        if (p.hSize != 16 || p.wSize != 16) {
            pypto_emu::fail(what, ": TRANSPOSE_ND2ND_B16 takes hSize and wSize 16, not ", p.hSize, " and ",
                            p.wSize);
        }
        if constexpr (sizeof(T) == 2) {
            Transpose(dst, src);
        }
        return;
    }
    case TransposeType::TRANSPOSE_NCHW2NHWC:
    case TransposeType::TRANSPOSE_NHWC2NCHW:
        break;
    default:
        pypto_emu::fail(what, ": transposeType ", static_cast<int>(p.transposeType),
                        " is not supported (TRANSPOSE_ND2ND_B16, TRANSPOSE_NCHW2NHWC and TRANSPOSE_NHWC2NCHW are)");
    }
    bool to_nhwc = p.transposeType == TransposeType::TRANSPOSE_NCHW2NHWC;
    uint64_t hw = static_cast<uint64_t>(p.hSize) * p.wSize;
    if (p.cSize > 4095) {
        pypto_emu::fail(what, ": cSize ", p.cSize, " exceeds 4095");
    }
    if (hw > 4095) {
        pypto_emu::fail(what, ": hSize * wSize is ", hw, ", more than 4095");
    }
    if (hw * sizeof(T) % 32 != 0) {
        pypto_emu::fail(what, ": hSize * wSize * sizeof(T) is ", hw * sizeof(T),
                        " bytes, not a multiple of 32");
    }
    pypto_emu::check_vector_operand(dst, 0, what);
    pypto_emu::check_vector_operand(src, 0, what);
    if (p.nSize == 0 || p.cSize == 0 || hw == 0) {
        return;
    }
    uint64_t h0 = sizeof(T) == 1 ? 32 : 16;
    uint64_t w0 = 32 / sizeof(T);
    uint64_t need = (to_nhwc ? p.cSize + 2ull : p.cSize * 2ull + 1) * h0 * w0 * sizeof(T);
    if (sharedTmpBuffer.GetSize() < need) {
        pypto_emu::fail(what, ": sharedTmpBuffer has ", sharedTmpBuffer.GetSize(), " bytes; ",
                        to_nhwc ? "TRANSPOSE_NCHW2NHWC" : "TRANSPOSE_NHWC2NCHW", " with cSize ", p.cSize,
                        " needs ", need);
    }
    uint64_t total = p.nSize * static_cast<uint64_t>(p.cSize) * hw;
    if (total > dst.GetSize() || total > src.GetSize()) {
        pypto_emu::fail(what, ": ", total, " elements (n * c * h * w) do not fit ",
                        total > dst.GetSize() ? "dst" : "src", " (", std::min(dst.GetSize(), src.GetSize()),
                        " elements)");
    }
    if (pypto_emu::overlaps(dst.data(), total * sizeof(T), src.data(), total * sizeof(T))) {
        pypto_emu::fail(what, ": src and dst overlap; the NCHW <-> NHWC transposes need them apart");
    }
    pypto_emu::access_read(what, "src", src, 0, total * sizeof(T));
    uint64_t c = p.cSize;
    for (uint64_t n = 0; n < p.nSize; ++n) {
        for (uint64_t ci = 0; ci < c; ++ci) {
            for (uint64_t k = 0; k < hw; ++k) {
                uint64_t nchw = (n * c + ci) * hw + k;
                uint64_t nhwc = (n * hw + k) * c + ci;
                if (to_nhwc) {
                    dst.data()[nhwc] = src.data()[nchw];
                } else {
                    dst.data()[nchw] = src.data()[nhwc];
                }
            }
        }
    }
}

// ---- CreateVecIndex (count form) ---------------------------------------------------
// dst[i] = firstValue + i, computed in T.
template <typename T>
void CreateVecIndex(LocalTensor<T> dst, const T& firstValue, uint32_t count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "CreateVecIndex");
    // initcheck: the destination counts as written in full (not checked per element).
    pypto_emu::access_write(dst, 0, dst.GetLength());
    PYPTO_REQUIRE_TYPE(vec_index_type, "CreateVecIndex", "int16_t, half, int32_t, float");
    const char* what = "CreateVecIndex";
    if (count > static_cast<uint32_t>(INT32_MAX)) {
        pypto_emu::fail(what, ": count ", count, " is too large");
    }
    pypto_emu::check_vector_operand(dst, static_cast<int32_t>(count), what);
    for (uint32_t i = 0; i < count; ++i) {
        if constexpr (std::is_integral_v<T>) {
            dst.data()[i] = static_cast<T>(static_cast<int64_t>(firstValue) + i);
        } else {
            dst.data()[i] = static_cast<T>(static_cast<float>(firstValue) + static_cast<float>(i));
        }
    }
}

} // namespace AscendC

// ---- TransDataTo5HD ----------------------------------------------------------

namespace AscendC {

constexpr uint32_t NCHW_CONV_ADDR_LIST_SIZE = 16;

// dstHighHalf/srcHighHalf: 8-bit types only. repeatTimes 0..255; the
// strides count 32-byte blocks.
struct TransDataTo5HDParams {
    TransDataTo5HDParams() {}
    TransDataTo5HDParams(const bool dstHighHalfIn, const bool srcHighHalfIn, const uint8_t repeatTimesIn,
                         const uint16_t dstRepStrideIn, const uint16_t srcRepStrideIn)
        : dstHighHalf(dstHighHalfIn), srcHighHalf(srcHighHalfIn), repeatTimes(repeatTimesIn),
          dstRepStride(dstRepStrideIn), srcRepStride(srcRepStrideIn)
    {
    }
    bool dstHighHalf = false;
    bool srcHighHalf = false;
    uint8_t repeatTimes = 0;
    uint16_t dstRepStride = 0;
    uint16_t srcRepStride = 0;
};

} // namespace AscendC

namespace pypto_emu {

// The TransDataTo5HD type list is the picked row's (arch.h).

// The 16 destination and 16 source blocks, as Unified Buffer byte
// addresses, and how far each may reach (its tensor's end, or the Unified
// Buffer's for raw addresses).
struct Trans5hdBlocks {
    uint64_t dst[16];
    uint64_t src[16];
    uint64_t dst_end[16];
    uint64_t src_end[16];
};

// One repeat moves 16 blocks: b16, dst block i element j = src block j
// element i (a 16 x 16 transpose); b32, dst blocks 2k and 2k + 1 take
// element k of src blocks 0..7 and 8..15; b8, the low or high half
// (dstHighHalf) of dst block i takes element i (+ 16 with srcHighHalf) of
// every src block. Repeat r adds r repeat strides (with one repeat, one
// stride: documented). Each repeat reads all its blocks before writing.
template <typename T>
void trans_5hd(const Trans5hdBlocks& b, const AscendC::TransDataTo5HDParams& p, const char* what)
{
    for (int i = 0; i < 16; ++i) {
        if (b.dst[i] % 32 != 0) {
            fail(what, ": dstList[", i, "] is Unified Buffer byte ", b.dst[i], ", not on a 32-byte boundary");
        }
        if (b.src[i] % 32 != 0) {
            fail(what, ": srcList[", i, "] is Unified Buffer byte ", b.src[i], ", not on a 32-byte boundary");
        }
    }
    uint32_t repeats = p.repeatTimes;
    auto step = [repeats](uint32_t r) { return static_cast<uint64_t>(repeats == 1 ? 1 : r); };
    for (uint32_t r = 0; r < repeats; ++r) {
        for (int i = 0; i < 16; ++i) {
            uint64_t s = b.src[i] + step(r) * p.srcRepStride * 32;
            uint64_t d = b.dst[i] + step(r) * p.dstRepStride * 32;
            if (s + 32 > b.src_end[i]) {
                fail(what, ": repeat ", r, " reads src block ", i, " at Unified Buffer bytes ", s, "..", s + 32,
                     ", past its operand's end at ", b.src_end[i]);
            }
            if (d + 32 > b.dst_end[i]) {
                fail(what, ": repeat ", r, " writes dst block ", i, " at Unified Buffer bytes ", d, "..", d + 32,
                     ", past its operand's end at ", b.dst_end[i]);
            }
        }
    }
    model_vector_bytes(what, static_cast<uint64_t>(repeats) * 512, sizeof(T));
    if (timing_only()) {
        return;
    }
    uint8_t* ub = arena(Memory::UB);
    for (uint32_t r = 0; r < repeats; ++r) {
        uint8_t in[16][32];
        uint64_t s[16], d[16];
        for (int i = 0; i < 16; ++i) {
            s[i] = b.src[i] + step(r) * p.srcRepStride * 32;
            d[i] = b.dst[i] + step(r) * p.dstRepStride * 32;
            access_read_at(what, "src", AscendC::TPosition::VECCALC, Memory::UB, s[i], 0, 32);
            std::memcpy(in[i], ub + s[i], 32);
        }
        for (int i = 0; i < 16; ++i) {
            uint8_t* out = ub + d[i];
            if constexpr (sizeof(T) == 1) {
                uint32_t dh = p.dstHighHalf ? 16 : 0, sh = p.srcHighHalf ? 16 : 0;
                for (int j = 0; j < 16; ++j) {
                    out[dh + j] = in[j][sh + i];
                }
                access_write_at(Memory::UB, d[i] + dh, 16, what);
            } else if constexpr (sizeof(T) == 2) {
                for (int j = 0; j < 16; ++j) {
                    std::memcpy(out + 2 * j, in[j] + 2 * i, 2);
                }
                access_write_at(Memory::UB, d[i], 32, what);
            } else {
                int k = i / 2, half_sel = i % 2;
                for (int j = 0; j < 8; ++j) {
                    std::memcpy(out + 4 * j, in[half_sel * 8 + j] + 4 * k, 4);
                }
                access_write_at(Memory::UB, d[i], 32, what);
            }
        }
    }
}

inline uint64_t ub_end() { return memory_spec(Memory::UB).capacity; }

} // namespace pypto_emu

namespace AscendC {

// The address-list forms: Unified Buffer byte addresses (GetPhyAddr).
template <typename T>
void TransDataTo5HD(uint64_t dstList[NCHW_CONV_ADDR_LIST_SIZE], uint64_t srcList[NCHW_CONV_ADDR_LIST_SIZE],
                    const TransDataTo5HDParams& nchwconvParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "TransDataTo5HD");
    PYPTO_REQUIRE_TYPE(Target::trans_5hd, "TransDataTo5HD", PYPTO_ARCH(TRANS_5HD_TYPES));
    const char* what = "TransDataTo5HD";
    pypto_emu::poll(what);
    pypto_emu::Trans5hdBlocks b;
    for (int i = 0; i < 16; ++i) {
        b.dst[i] = dstList[i];
        b.src[i] = srcList[i];
        b.dst_end[i] = b.src_end[i] = pypto_emu::ub_end();
    }
    pypto_emu::trans_5hd<T>(b, nchwconvParams, what);
}

// The addresses held in two Unified Buffer tensors of 16 uint64_t.
template <typename T>
void TransDataTo5HD(const LocalTensor<uint64_t>& dst, const LocalTensor<uint64_t>& src,
                    const TransDataTo5HDParams& nchwconvParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "TransDataTo5HD");
    PYPTO_REQUIRE_TYPE(Target::trans_5hd, "TransDataTo5HD", PYPTO_ARCH(TRANS_5HD_TYPES));
    const char* what = "TransDataTo5HD";
    pypto_emu::check_vector_operand(dst, 16, what);
    pypto_emu::check_vector_operand(src, 16, what);
    pypto_emu::access_read(what, "dst", dst, 0, 128);
    pypto_emu::access_read(what, "src", src, 0, 128);
    pypto_emu::Trans5hdBlocks b;
    for (int i = 0; i < 16; ++i) {
        b.dst[i] = dst.data()[i];
        b.src[i] = src.data()[i];
        b.dst_end[i] = b.src_end[i] = pypto_emu::ub_end();
    }
    pypto_emu::trans_5hd<T>(b, nchwconvParams, what);
}

// Two lists of 16 tensors; each block must lie inside its tensor.
template <typename T>
void TransDataTo5HD(const LocalTensor<T> (&dstList)[NCHW_CONV_ADDR_LIST_SIZE],
                    const LocalTensor<T> (&srcList)[NCHW_CONV_ADDR_LIST_SIZE],
                    const TransDataTo5HDParams& nchwconvParams, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "TransDataTo5HD");
    PYPTO_REQUIRE_TYPE(Target::trans_5hd, "TransDataTo5HD", PYPTO_ARCH(TRANS_5HD_TYPES));
    const char* what = "TransDataTo5HD";
    pypto_emu::Trans5hdBlocks b;
    for (int i = 0; i < 16; ++i) {
        pypto_emu::check_vector_operand(dstList[i], 0, what);
        pypto_emu::check_vector_operand(srcList[i], 0, what);
        b.dst[i] = dstList[i].offset_bytes();
        b.src[i] = srcList[i].offset_bytes();
        b.dst_end[i] = b.dst[i] + static_cast<uint64_t>(dstList[i].GetSize()) * sizeof(T);
        b.src_end[i] = b.src[i] + static_cast<uint64_t>(srcList[i].GetSize()) * sizeof(T);
    }
    pypto_emu::trans_5hd<T>(b, nchwconvParams, what);
}

} // namespace AscendC
