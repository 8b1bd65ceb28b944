// Data movement between global memory and on-chip buffers: DataCopy and
// DataCopyPad. Enforced: 32-byte lengths for DataCopy (the hardware would
// silently drop the tail), 32-byte placement of Unified Buffer operands,
// bounds on both sides.
#pragma once

#include <algorithm>

#include "memory.h"
#include "sync.h"

namespace AscendC {

struct DataCopyParams {
    uint16_t blockCount = 1;
    uint16_t blockLen = 0; // DataCopy: 32-byte blocks; legacy DataCopyPad: bytes
    union {
        uint16_t srcGap = 0;
        uint16_t srcStride;
    };
    union {
        uint16_t dstGap = 0;
        uint16_t dstStride;
    };
    DataCopyParams() = default;
    DataCopyParams(uint16_t count, uint16_t len, uint16_t srcStrideIn, uint16_t dstStrideIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
};

struct DataCopyExtParams {
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;  // bytes
    uint32_t srcStride = 0; // gap after each block: bytes on the GM side, 32-byte blocks on UB
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
    DataCopyExtParams() = default;
    DataCopyExtParams(uint16_t count, uint32_t len, uint32_t srcStrideIn, uint32_t dstStrideIn,
                      uint32_t rsvIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn),
          rsv(rsvIn) {}
};

template <typename T>
struct DataCopyPadExtParams {
    bool isPad = false;
    uint8_t leftPadding = 0;  // elements
    uint8_t rightPadding = 0; // elements
    T paddingValue = T(0);
    DataCopyPadExtParams() = default;
    DataCopyPadExtParams(bool isPadIn, uint8_t left, uint8_t right, T value)
        : isPad(isPadIn), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

struct DataCopyPadParams {
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    uint64_t paddingValue = 0;
    DataCopyPadParams() = default;
    DataCopyPadParams(bool isPadIn, uint8_t left, uint8_t right, uint64_t value)
        : isPad(isPadIn), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

} // namespace AscendC

namespace pypto_emu {

template <typename T>
void check_local(const AscendC::LocalTensor<T>& t, uint64_t bytes, const char* what)
{
    static_assert(!is_int4<T>, "DataCopy/DataCopyPad: int4b_t is not a data-movement type on Atlas A2/A3; copy the "
                               "bytes as int8_t or uint8_t and ReinterpretCast<int4b_t>() the local tensor");
    if (t.data() == nullptr) {
        fail(what, ": the LocalTensor was never allocated");
    }
    if (memory_of(t.position()) == Memory::UB && t.offset_bytes() % 32 != 0) {
        fail(what, ": the Unified Buffer operand starts at byte ", t.offset_bytes(),
             ", not on a 32-byte boundary");
    }
    if (bytes > static_cast<uint64_t>(t.GetSize()) * sizeof(T)) {
        fail(what, ": ", bytes, " bytes do not fit the LocalTensor's ", t.GetSize(),
             " elements (", static_cast<uint64_t>(t.GetSize()) * sizeof(T), " bytes)");
    }
}

template <typename T>
void check_count_bytes(uint32_t count, const char* what)
{
    uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
    if (bytes % 32 != 0) {
        fail(what, ": ", count, " elements are ", bytes,
             " bytes, not a multiple of 32; the hardware would move only ", bytes / 32 * 32,
             " bytes and drop the rest. Use DataCopyPad for lengths that are not 32-byte "
             "multiples");
    }
}

// The blocks of a DataCopyParams copy: blockCount blocks of blockLen
// 32-byte units, each followed by its side's gap.
inline void copy_blocks(uint8_t* d, const uint8_t* s, const AscendC::DataCopyParams& p)
{
    uint64_t block = p.blockLen * 32ull;
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        std::memcpy(d + i * (p.blockLen + p.dstGap) * 32, s + i * (p.blockLen + p.srcGap) * 32, block);
    }
}

// Bytes a DataCopyParams copy spans on its source and destination sides.
inline uint64_t span_bytes(const AscendC::DataCopyParams& p, uint16_t gap)
{
    return (p.blockCount - 1ull) * (p.blockLen + gap) * 32ull + p.blockLen * 32ull;
}

} // namespace pypto_emu

namespace AscendC {

// GM -> UB, `count` contiguous elements.
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t count)
{
    pypto_emu::check_count_bytes<T>(count, "DataCopy(GM->local)");
    pypto_emu::check_local(dst, static_cast<uint64_t>(count) * sizeof(T), "DataCopy(GM->local)");
    std::memcpy(dst.data(), src.range(0, count, "DataCopy(GM->local)"), count * sizeof(T));
}

// UB -> GM, `count` contiguous elements.
template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count)
{
    pypto_emu::check_count_bytes<T>(count, "DataCopy(local->GM)");
    pypto_emu::check_local(src, static_cast<uint64_t>(count) * sizeof(T), "DataCopy(local->GM)");
    pypto_emu::store_gm(dst.range_out(0, count, "DataCopy(local->GM)"), src.data(), count, "DataCopy(local->GM)");
}

// UB -> UB, `count` contiguous elements.
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count)
{
    pypto_emu::check_count_bytes<T>(count, "DataCopy(local->local)");
    pypto_emu::check_local(dst, static_cast<uint64_t>(count) * sizeof(T), "DataCopy(local->local)");
    pypto_emu::check_local(src, static_cast<uint64_t>(count) * sizeof(T), "DataCopy(local->local)");
    std::memmove(dst.data(), src.data(), count * sizeof(T));
}

// Strided forms: blockCount blocks of blockLen 32-byte units, with gaps.
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p)
{
    const char* what = "DataCopy(GM->local, DataCopyParams)";
    if (p.blockCount == 0 || p.blockLen == 0) {
        return;
    }
    pypto_emu::check_local(dst, pypto_emu::span_bytes(p, p.dstGap), what);
    const T* s = src.range(0, pypto_emu::span_bytes(p, p.srcGap) / sizeof(T), what);
    pypto_emu::copy_blocks(reinterpret_cast<uint8_t*>(dst.data()), reinterpret_cast<const uint8_t*>(s), p);
}

template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p)
{
    const char* what = "DataCopy(local->GM, DataCopyParams)";
    if (p.blockCount == 0 || p.blockLen == 0) {
        return;
    }
    pypto_emu::check_local(src, pypto_emu::span_bytes(p, p.srcGap), what);
    T* d = dst.range_out(0, pypto_emu::span_bytes(p, p.dstGap) / sizeof(T), what);
    // Block by block, through the atomic mode if one is set.
    uint64_t block = p.blockLen * 32ull / sizeof(T);
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        pypto_emu::store_gm(d + i * (p.blockLen + p.dstGap) * 32 / sizeof(T),
                            src.data() + i * (p.blockLen + p.srcGap) * 32 / sizeof(T), block, what);
    }
}

// GM -> UB for any byte length: each block lands 32-byte aligned in UB,
// padded to a 32-byte multiple.
template <typename T>
void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                 const DataCopyPadExtParams<T>& pad)
{
    const char* what = "DataCopyPad(GM->local)";
    if (p.blockCount == 0 || p.blockLen == 0) {
        return;
    }
    if (p.blockLen % sizeof(T) != 0) {
        pypto_emu::fail(what, ": blockLen ", p.blockLen, " bytes is not a whole number of ",
                        sizeof(T), "-byte elements");
    }
    uint64_t left = pad.leftPadding * sizeof(T);
    uint64_t right = pad.rightPadding * sizeof(T);
    if (left > 32 || right > 32) {
        pypto_emu::fail(what, ": padding of more than 32 bytes on one side");
    }
    uint64_t dst_block = (left + p.blockLen + right + 31) / 32 * 32;
    uint64_t dst_step = dst_block + p.dstStride * 32ull;
    uint64_t src_step = p.blockLen + static_cast<uint64_t>(p.srcStride);
    uint64_t src_total = (p.blockCount - 1ull) * src_step + p.blockLen;
    pypto_emu::check_local(dst, (p.blockCount - 1ull) * dst_step + dst_block, what);
    const auto* s = reinterpret_cast<const uint8_t*>(src.range(0, src_total / sizeof(T), what));
    auto* d = reinterpret_cast<uint8_t*>(dst.data());
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        uint8_t* out = d + i * dst_step;
        const uint8_t* in = s + i * src_step;
        std::memcpy(out + left, in, p.blockLen);
        // Pad and fill to the 32-byte boundary: the pad value when asked for,
        // else the block's first element (the documented dummy fill).
        T fill = pad.isPad ? pad.paddingValue : *reinterpret_cast<const T*>(in);
        for (uint64_t b = 0; b < dst_block; b += sizeof(T)) {
            if (b < left || b >= left + p.blockLen) {
                std::memcpy(out + b, &fill, sizeof(T));
            }
        }
    }
}

// UB -> GM for any byte length: exactly blockLen bytes per block reach GM.
template <typename T>
void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p)
{
    const char* what = "DataCopyPad(local->GM)";
    if (p.blockCount == 0 || p.blockLen == 0) {
        return;
    }
    if (p.blockLen % sizeof(T) != 0) {
        pypto_emu::fail(what, ": blockLen ", p.blockLen, " bytes is not a whole number of ",
                        sizeof(T), "-byte elements");
    }
    uint64_t src_step = (p.blockLen + 31ull) / 32 * 32 + p.srcStride * 32ull;
    uint64_t dst_step = p.blockLen + static_cast<uint64_t>(p.dstStride);
    uint64_t dst_total = (p.blockCount - 1ull) * dst_step + p.blockLen;
    pypto_emu::check_local(src, (p.blockCount - 1ull) * src_step + p.blockLen, what);
    auto* d = reinterpret_cast<uint8_t*>(dst.range_out(0, dst_total / sizeof(T), what));
    const auto* s = reinterpret_cast<const uint8_t*>(src.data());
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        pypto_emu::store_gm(reinterpret_cast<T*>(d + i * dst_step),
                            reinterpret_cast<const T*>(s + i * src_step), p.blockLen / sizeof(T), what);
    }
}

// The older DataCopyParams forms of DataCopyPad: blockLen in bytes.
template <typename T>
void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
                 const DataCopyPadParams& pad)
{
    T value;
    std::memcpy(&value, &pad.paddingValue, sizeof(T));
    DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0),
                DataCopyPadExtParams<T>(pad.isPad, pad.leftPadding, pad.rightPadding, value));
}

template <typename T>
void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p)
{
    DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0));
}

} // namespace AscendC
