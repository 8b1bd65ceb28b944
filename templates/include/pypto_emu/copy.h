// Data movement between global memory and the Unified Buffer, and within
// the Unified Buffer: DataCopy (count, DataCopyParams, SliceInfo,
// Nz2NdParamsFull forms), DataCopyPad and SetPadValue.
//
// Units, as the Ascend C documentation gives them for Atlas A2/A3:
// - DataCopyParams: blockLen, srcGap/srcStride and dstGap/dstStride count
//   32-byte blocks on both sides (GM and UB alike).
// - DataCopyExtParams (DataCopyPad): blockLen in bytes; the gap on the GM
//   side in bytes, on the UB side in 32-byte blocks.
//
// Enforced: 32-byte lengths for the count form (the hardware would silently
// drop the tail), 32-byte placement of Unified Buffer operands, global
// operands on element boundaries, the documented parameter ranges, bounds
// on both sides, element types (static_assert).
#pragma once

#include <algorithm>
#include <type_traits>
#include <vector>

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

// One dimension of a slice copy (dimension 0 is the innermost): elements
// startIndex..endIndex (both included) of a dimension of shapeValue
// elements, taken as bursts separated by `stride` elements. A burst is
// burstLen 32-byte blocks in dimension 0 and one index in the others.
struct SliceInfo {
    uint32_t startIndex = 0;
    uint32_t endIndex = 0;
    uint32_t stride = 0;
    uint32_t burstLen = 0;
    uint32_t shapeValue = 0;
    SliceInfo() = default;
    SliceInfo(uint32_t startIndexIn, uint32_t endIndexIn, uint32_t strideIn, uint32_t burstLenIn,
              uint32_t shapeValueIn)
        : startIndex(startIndexIn), endIndex(endIndexIn), stride(strideIn), burstLen(burstLenIn),
          shapeValue(shapeValueIn) {}
};

// UB (Nz: 16-column blocks of 16-element rows) -> GM (row-major).
struct Nz2NdParamsFull {
    uint16_t ndNum = 1;
    uint16_t nValue = 0;            // rows
    uint16_t dValue = 0;            // columns, a multiple of 16
    uint16_t srcNdMatrixStride = 0; // matrix to matrix, 256-element units
    uint16_t srcNStride = 0;        // column block to column block, 16-element units
    uint16_t dstDStride = 0;        // row to row, elements
    uint16_t dstNdMatrixStride = 0; // matrix to matrix, elements
    Nz2NdParamsFull() = default;
    Nz2NdParamsFull(uint16_t ndNumIn, uint16_t nValueIn, uint16_t dValueIn, uint16_t srcNdMatrixStrideIn,
                    uint16_t srcNStrideIn, uint16_t dstDStrideIn, uint16_t dstNdMatrixStrideIn)
        : ndNum(ndNumIn), nValue(nValueIn), dValue(dValueIn), srcNdMatrixStride(srcNdMatrixStrideIn),
          srcNStride(srcNStrideIn), dstDStride(dstDStrideIn), dstNdMatrixStride(dstNdMatrixStrideIn) {}
};

} // namespace AscendC

namespace pypto_emu {

template <typename T, typename... List>
constexpr bool copy_one_of = (std::is_same_v<T, List> || ...);

// Element types of DataCopy and DataCopyPad between GM and UB and within UB.
// The list is the picked row's (arch.h): `Target::datacopy<T>`.
// The slice and Nd2Nz forms: no 64-bit types on A2/A3.
template <typename T>
constexpr bool slice_type =
    copy_one_of<T, int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>;
template <typename T>
constexpr bool nz2nd_type = copy_one_of<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>;

#define PYPTO_REQUIRE_COPY_TYPE(trait, op, supported)                                                    \
    static_assert(pypto_emu::trait<T>, op ": element type not supported on " PYPTO_ARCH(TARGET_NAME)          \
                                          " (supported: " supported ")")

template <typename T>
const char* copy_type_name()
{
    if constexpr (std::is_same_v<T, int8_t>) return "int8_t";
    else if constexpr (std::is_same_v<T, uint8_t>) return "uint8_t";
    else if constexpr (std::is_same_v<T, int16_t>) return "int16_t";
    else if constexpr (std::is_same_v<T, uint16_t>) return "uint16_t";
    else if constexpr (std::is_same_v<T, half>) return "half";
    else if constexpr (std::is_same_v<T, bfloat16_t>) return "bfloat16_t";
    else if constexpr (std::is_same_v<T, int32_t>) return "int32_t";
    else if constexpr (std::is_same_v<T, uint32_t>) return "uint32_t";
    else if constexpr (std::is_same_v<T, float>) return "float";
    else if constexpr (std::is_same_v<T, int64_t>) return "int64_t";
    else if constexpr (std::is_same_v<T, uint64_t>) return "uint64_t";
    else if constexpr (std::is_same_v<T, double>) return "double";
    else return "another type";
}

template <typename T>
void check_local(const AscendC::LocalTensor<T>& t, uint64_t bytes, const char* what)
{
    static_assert(!is_int4<T>, "DataCopy/DataCopyPad: int4b_t is not a data-movement type on Atlas A2/A3; copy the "
                               "bytes as int8_t or uint8_t and ReinterpretCast<int4b_t>() the local tensor");
    poll(what);
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

// A global operand starts on an element boundary (DataCopy's documented
// alignment; a raw GM_ADDR can break it).
template <typename T>
void check_gm_align(const AscendC::GlobalTensor<T>& g, const char* what)
{
    auto addr = reinterpret_cast<uintptr_t>(g.GetPhyAddr());
    if (addr % sizeof(T) != 0) {
        fail(what, ": the global operand's address is ", addr % sizeof(T), " bytes past a ", sizeof(T),
             "-byte element boundary; DataCopy needs global addresses aligned to the element size");
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

inline void check_block_count(uint32_t count, const char* what)
{
    if (count > 4095) {
        fail(what, ": blockCount ", count, " exceeds 4095");
    }
}

// The blocks of a DataCopyParams copy: blockCount blocks of blockLen
// 32-byte units, each followed by its side's gap (32-byte units too).
inline void copy_blocks(uint8_t* d, const uint8_t* s, const AscendC::DataCopyParams& p)
{
    uint64_t block = p.blockLen * 32ull;
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        std::memmove(d + i * (p.blockLen + p.dstGap) * 32, s + i * (p.blockLen + p.srcGap) * 32, block);
    }
}

// initcheck for the blocks of a DataCopyParams copy on the local side.
inline void init_blocks(const AccessView& v, const AscendC::DataCopyParams& p, uint16_t gap, bool read = false)
{
    if (v.mem == Memory::GM) {
        return;
    }
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        uint64_t off = i * (p.blockLen + gap) * 32ull;
        if (read) {
            v.read(off, p.blockLen * 32ull);
        } else {
            v.write(off, p.blockLen * 32ull);
        }
    }
}

// Bytes a DataCopyParams copy spans on its source and destination sides.
inline uint64_t span_bytes(const AscendC::DataCopyParams& p, uint16_t gap)
{
    return (p.blockCount - 1ull) * (p.blockLen + gap) * 32ull + p.blockLen * 32ull;
}

// The pad-value register SetPadValue writes, per block; unset at the start
// of every block.
struct PadRegister {
    uint64_t launch = ~0ull;
    uint32_t block_idx = ~0u;
    bool set = false;
    const char* type = "";
    uint8_t bytes[8] = {};
};

inline PadRegister& pad_register()
{
    static thread_local PadRegister reg;
    if (reg.launch != block.launch_id || reg.block_idx != block.idx) {
        reg = PadRegister{};
        reg.launch = block.launch_id;
        reg.block_idx = block.idx;
    }
    return reg;
}

// What the hardware leaves in padding it was given no value for (the
// documentation says "random"): every bit set, a NaN for floating types.
constexpr uint8_t UNSPECIFIED_PAD_BYTE = 0xFF;

// One dimension of a slice copy, resolved: `count` bursts, the k-th at
// index start + k * step of the dimension.
struct SliceDim {
    uint64_t start;
    uint64_t step;
    uint64_t count;
    uint64_t pitch; // elements between consecutive indices of this dimension
};

template <typename T>
std::vector<SliceDim> slice_dims(const AscendC::SliceInfo* info, uint32_t dims, const char* side,
                                 const char* what)
{
    std::vector<SliceDim> out;
    uint64_t pitch = 1;
    for (uint32_t i = 0; i < dims; ++i) {
        const AscendC::SliceInfo& s = info[i];
        if (!(s.startIndex < s.endIndex && s.endIndex <= s.shapeValue)) {
            fail(what, ": ", side, "SliceInfo[", i, "] has startIndex ", s.startIndex, ", endIndex ", s.endIndex,
                 ", shapeValue ", s.shapeValue, "; they must satisfy startIndex < endIndex <= shapeValue");
        }
        if (i > 0 && s.burstLen != 1) {
            fail(what, ": ", side, "SliceInfo[", i, "].burstLen is ", s.burstLen,
                 "; dimensions past the first take burstLen 1");
        }
        if (i == 0 && s.burstLen == 0) {
            fail(what, ": ", side, "SliceInfo[0].burstLen is 0; a burst is at least one 32-byte block");
        }
        uint64_t unit = i == 0 ? static_cast<uint64_t>(s.burstLen) * 32 / sizeof(T) : 1;
        uint64_t span = static_cast<uint64_t>(s.endIndex) - s.startIndex + 1;
        // span = (N - 1) * stride + N * unit for a whole N >= 1.
        uint64_t n = (span + s.stride) / (unit + s.stride);
        if (n == 0 || (n - 1) * s.stride + n * unit != span) {
            fail(what, ": ", side, "SliceInfo[", i, "] covers ", span, " elements (", s.startIndex, "..",
                 s.endIndex, "), which is not (N - 1) * stride + N * ", unit, " for any whole N (stride ",
                 s.stride, ", a burst of ", unit, i == 0 ? " elements)" : " index)");
        }
        out.push_back(SliceDim{s.startIndex, unit + s.stride, n, pitch});
        pitch *= s.shapeValue;
    }
    return out;
}

// The element offset of every burst of a slice, outer dimensions slowest.
inline std::vector<uint64_t> slice_bursts(const std::vector<SliceDim>& dims)
{
    std::vector<uint64_t> out{0};
    for (size_t i = dims.size(); i-- > 0;) {
        std::vector<uint64_t> next;
        next.reserve(out.size() * dims[i].count);
        for (uint64_t base : out) {
            for (uint64_t k = 0; k < dims[i].count; ++k) {
                next.push_back(base + (dims[i].start + k * dims[i].step) * dims[i].pitch);
            }
        }
        out.swap(next);
    }
    return out;
}

struct SlicePlan {
    std::vector<uint64_t> dst;
    std::vector<uint64_t> src;
    uint64_t burst = 0; // elements
    uint64_t dst_end = 0;
    uint64_t src_end = 0;
};

template <typename T>
SlicePlan slice_plan(const AscendC::SliceInfo* dst_info, const AscendC::SliceInfo* src_info, uint32_t dims,
                     bool dst_is_ub, const char* what)
{
    if (dims < 1 || dims > 8) {
        fail(what, ": dimValue ", dims, " is outside 1..8");
    }
    if (dst_info == nullptr || src_info == nullptr) {
        fail(what, ": a SliceInfo array is a null pointer");
    }
    for (uint32_t i = 0; i < dims; ++i) {
        if (dst_info[i].burstLen != src_info[i].burstLen) {
            fail(what, ": dstSliceInfo[", i, "].burstLen ", dst_info[i].burstLen, " differs from srcSliceInfo[",
                 i, "].burstLen ", src_info[i].burstLen, "; they must be equal");
        }
    }
    SlicePlan p;
    p.dst = slice_bursts(slice_dims<T>(dst_info, dims, "dst", what));
    p.src = slice_bursts(slice_dims<T>(src_info, dims, "src", what));
    p.burst = static_cast<uint64_t>(dst_info[0].burstLen) * 32 / sizeof(T);
    if (p.dst.size() != p.src.size()) {
        fail(what, ": the source slice has ", p.src.size(), " bursts and the destination slice ", p.dst.size(),
             "; both must select the same number of elements");
    }
    const std::vector<uint64_t>& ub = dst_is_ub ? p.dst : p.src;
    for (uint64_t b : ub) {
        if (b * sizeof(T) % 32 != 0) {
            fail(what, ": a burst starts at Unified Buffer byte ", b * sizeof(T),
                 " of the local operand, not on a 32-byte boundary (the local slice's shapeValue and "
                 "indices must keep every burst 32-byte aligned)");
        }
    }
    for (uint64_t b : p.dst) p.dst_end = std::max(p.dst_end, b + p.burst);
    for (uint64_t b : p.src) p.src_end = std::max(p.src_end, b + p.burst);
    return p;
}

// L1 -> BiasTable (DataCopy into a C2 tensor, PIPE_MTE1): the bias a
// Mmad adds to every row. Atlas A2/A3 count blockLen and dstGap in 64-byte
// units, srcGap in 32-byte ones; Ascend 950 counts all three in 32-byte
// units, with blockLen even. Emulated for one element type on both sides
// (float or int32_t, what Mmad reads from the table); the widening forms
// (half source) are not.
template <typename T>
void bias_table_copy(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                     const AscendC::DataCopyParams& p)
{
    OnPipe on_pipe(PIPE_MTE1);
    const char* what = "DataCopy(L1->BiasTable, DataCopyParams)";
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, int32_t>,
                  "DataCopy(L1->BiasTable): emulated for float and int32_t on both sides");
    constexpr uint64_t unit = Target::bias_table_unit;
    if constexpr (Target::bias_table_pairs) {
        if (p.blockLen % 2 != 0) {
            fail(what, ": blockLen ", p.blockLen, " is odd; Ascend 950 moves 64-byte pairs of 32-byte units");
        }
    }
    if (memory_of(src.position()) != Memory::L1) {
        fail(what, ": the source is at position ", position_name(src.position()),
             "; the bias table is filled from the L1 buffer (C1)");
    }
    check_block_count(p.blockCount, what);
    model_copy(Memory::L1, Memory::BT, uint64_t{p.blockCount} * p.blockLen * unit, p.blockCount);
    if (p.blockCount == 0 || p.blockLen == 0) {
        return;
    }
    if (dst.offset_bytes() % 64 != 0) {
        fail(what, ": the destination starts at byte ", dst.offset_bytes(),
             " of the BiasTable, not on a 64-byte boundary");
    }
    uint64_t block = p.blockLen * unit;
    uint64_t src_span = (p.blockCount - 1ull) * (block + p.srcGap * 32ull) + block;
    uint64_t dst_span = (p.blockCount - 1ull) * (block + p.dstGap * unit) + block;
    check_local(src, src_span, what);
    check_local(dst, dst_span, what);
    if (timing_only()) {
        instr_access(Memory::BT, true);
        return;
    }
    auto from = access_view(src, what, "src");
    auto to = access_view(dst);
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        uint64_t s_off = i * (block + p.srcGap * 32ull);
        uint64_t d_off = i * (block + p.dstGap * unit);
        from.read(s_off, block);
        std::memmove(reinterpret_cast<uint8_t*>(dst.data()) + d_off,
                     reinterpret_cast<const uint8_t*>(src.data()) + s_off, block);
        to.write(d_off, block);
    }
}

} // namespace pypto_emu

namespace AscendC {

// ---- DataCopy: count forms -------------------------------------------------

// GM -> UB, `count` contiguous elements.
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "DataCopy");
    pypto_emu::OnPipe on_pipe(PIPE_MTE2);
    PYPTO_REQUIRE_COPY_TYPE(Target::datacopy, "DataCopy", PYPTO_ARCH(DATACOPY_TYPES));
    const char* what = "DataCopy(GM->local)";
    pypto_emu::model_copy(pypto_emu::Memory::GM, pypto_emu::memory_of(dst.position()), uint64_t{count} * sizeof(T), 1,
                          src.GetPhyAddr());
    pypto_emu::check_count_bytes<T>(count, what);
    pypto_emu::check_local(dst, static_cast<uint64_t>(count) * sizeof(T), what);
    pypto_emu::check_gm_align(src, what);
    const T* from = src.range(0, count, what);
    if (pypto_emu::timing_only()) {
        // The record, as the accesses skipped here would have filled it.
        pypto_emu::instr_access(pypto_emu::memory_of(dst.position()), true);
        return;
    }
    std::memcpy(dst.data(), from, count * sizeof(T));
    pypto_emu::access_write(dst, 0, static_cast<uint64_t>(count) * sizeof(T));
}

// UB -> GM, `count` contiguous elements.
template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "DataCopy");
    pypto_emu::OnPipe on_pipe(PIPE_MTE3);
    PYPTO_REQUIRE_COPY_TYPE(Target::datacopy, "DataCopy", PYPTO_ARCH(DATACOPY_TYPES));
    const char* what = "DataCopy(local->GM)";
    pypto_emu::model_copy(pypto_emu::memory_of(src.position()), pypto_emu::Memory::GM, uint64_t{count} * sizeof(T));
    pypto_emu::check_count_bytes<T>(count, what);
    pypto_emu::check_local(src, static_cast<uint64_t>(count) * sizeof(T), what);
    pypto_emu::check_gm_align(dst, what);
    pypto_emu::access_read(what, "src", src, 0, static_cast<uint64_t>(count) * sizeof(T));
    T* to = dst.range_out(0, count, what);
    if (pypto_emu::timing_only()) {
        // The record, as the accesses skipped here would have filled it.
        pypto_emu::instr_access(pypto_emu::Memory::GM, true);
        return;
    }
    pypto_emu::store_gm(to, src.data(), count, what);
}

// UB -> UB, `count` contiguous elements.
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "DataCopy");
    PYPTO_REQUIRE_COPY_TYPE(Target::datacopy, "DataCopy", PYPTO_ARCH(DATACOPY_TYPES));
    const char* what = "DataCopy(local->local)";
    pypto_emu::model_copy(pypto_emu::memory_of(src.position()), pypto_emu::memory_of(dst.position()),
                          uint64_t{count} * sizeof(T));
    pypto_emu::check_count_bytes<T>(count, what);
    pypto_emu::check_local(dst, static_cast<uint64_t>(count) * sizeof(T), what);
    pypto_emu::check_local(src, static_cast<uint64_t>(count) * sizeof(T), what);
    pypto_emu::access_read(what, "src", src, 0, static_cast<uint64_t>(count) * sizeof(T));
    if (pypto_emu::timing_only()) {
        // The record, as the accesses skipped here would have filled it.
        pypto_emu::instr_access(pypto_emu::memory_of(dst.position()), true);
        return;
    }
    std::memmove(dst.data(), src.data(), count * sizeof(T));
    pypto_emu::access_write(dst, 0, static_cast<uint64_t>(count) * sizeof(T));
}

// ---- DataCopy: DataCopyParams forms ----------------------------------------
// blockCount blocks of blockLen 32-byte units; srcGap/dstGap (32-byte units)
// between the end of one block and the start of the next. blockCount or
// blockLen 0: nothing happens.

template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "DataCopy");
    pypto_emu::OnPipe on_pipe(PIPE_MTE2);
    PYPTO_REQUIRE_COPY_TYPE(Target::datacopy, "DataCopy", PYPTO_ARCH(DATACOPY_TYPES));
    const char* what = "DataCopy(GM->local, DataCopyParams)";
    pypto_emu::model_copy(pypto_emu::Memory::GM, pypto_emu::memory_of(dst.position()),
                          uint64_t{p.blockCount} * p.blockLen * 32, p.blockCount, src.GetPhyAddr());
    pypto_emu::check_block_count(p.blockCount, what);
    if (p.blockCount == 0 || p.blockLen == 0) {
        return;
    }
    pypto_emu::check_local(dst, pypto_emu::span_bytes(p, p.dstGap), what);
    pypto_emu::check_gm_align(src, what);
    const T* s = src.range(0, pypto_emu::span_bytes(p, p.srcGap) / sizeof(T), what);
    if (pypto_emu::timing_only()) {
        // The record, as the accesses skipped here would have filled it.
        pypto_emu::instr_access(pypto_emu::memory_of(dst.position()), true);
        return;
    }
    pypto_emu::copy_blocks(reinterpret_cast<uint8_t*>(dst.data()), reinterpret_cast<const uint8_t*>(s), p);
    pypto_emu::init_blocks(pypto_emu::access_view(dst), p, p.dstGap);
}

template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "DataCopy");
    pypto_emu::OnPipe on_pipe(PIPE_MTE3);
    PYPTO_REQUIRE_COPY_TYPE(Target::datacopy, "DataCopy", PYPTO_ARCH(DATACOPY_TYPES));
    const char* what = "DataCopy(local->GM, DataCopyParams)";
    pypto_emu::model_copy(pypto_emu::memory_of(src.position()), pypto_emu::Memory::GM,
                          uint64_t{p.blockCount} * p.blockLen * 32, p.blockCount);
    pypto_emu::check_block_count(p.blockCount, what);
    if (p.blockCount == 0 || p.blockLen == 0) {
        return;
    }
    pypto_emu::check_local(src, pypto_emu::span_bytes(p, p.srcGap), what);
    pypto_emu::check_gm_align(dst, what);
    T* d = dst.range_out(0, pypto_emu::span_bytes(p, p.dstGap) / sizeof(T), what);
    if (pypto_emu::timing_only()) {
        // The record, as the accesses skipped here would have filled it.
        pypto_emu::instr_access(pypto_emu::Memory::GM, true);
        return;
    }
    pypto_emu::init_blocks(pypto_emu::access_view(src, what, "src"), p, p.srcGap, true);
    // Block by block, through the atomic mode if one is set.
    uint64_t block = p.blockLen * 32ull / sizeof(T);
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        pypto_emu::store_gm(d + i * (p.blockLen + p.dstGap) * 32 / sizeof(T),
                            src.data() + i * (p.blockLen + p.srcGap) * 32 / sizeof(T), block, what);
    }
}

template <typename T>
void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "DataCopy");
    PYPTO_REQUIRE_COPY_TYPE(Target::datacopy, "DataCopy", PYPTO_ARCH(DATACOPY_TYPES));
    const char* what = "DataCopy(local->local, DataCopyParams)";
    if (pypto_emu::memory_of(dst.position()) == pypto_emu::Memory::BT) {
        pypto_emu::bias_table_copy(dst, src, p);
        return;
    }
    pypto_emu::model_copy(pypto_emu::memory_of(src.position()), pypto_emu::memory_of(dst.position()),
                          uint64_t{p.blockCount} * p.blockLen * 32, p.blockCount);
    pypto_emu::check_block_count(p.blockCount, what);
    if (p.blockCount == 0 || p.blockLen == 0) {
        return;
    }
    pypto_emu::check_local(dst, pypto_emu::span_bytes(p, p.dstGap), what);
    pypto_emu::check_local(src, pypto_emu::span_bytes(p, p.srcGap), what);
    pypto_emu::init_blocks(pypto_emu::access_view(src, what, "src"), p, p.srcGap, true);
    pypto_emu::copy_blocks(reinterpret_cast<uint8_t*>(dst.data()), reinterpret_cast<const uint8_t*>(src.data()),
                           p);
    pypto_emu::init_blocks(pypto_emu::access_view(dst), p, p.dstGap);
}

// ---- DataCopy: slice forms ---------------------------------------------------
// The bursts the source slice selects, in order (outer dimensions slowest),
// land on the bursts the destination slice selects.

template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const SliceInfo dstSliceInfo[],
              const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "DataCopy");
    pypto_emu::OnPipe on_pipe(PIPE_MTE2);
    PYPTO_REQUIRE_COPY_TYPE(slice_type, "DataCopy(SliceInfo)",
                            "int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float");
    const char* what = "DataCopy(GM->local, SliceInfo)";
    pypto_emu::poll(what);
    pypto_emu::SlicePlan p = pypto_emu::slice_plan<T>(dstSliceInfo, srcSliceInfo, dimValue, true, what);
    pypto_emu::check_local(dst, p.dst_end * sizeof(T), what);
    const T* s = src.range(0, p.src_end, what);
    for (size_t i = 0; i < p.dst.size(); ++i) {
        std::memcpy(dst.data() + p.dst[i], s + p.src[i], p.burst * sizeof(T));
        pypto_emu::access_write(dst, p.dst[i] * sizeof(T), p.burst * sizeof(T));
    }
}

template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const SliceInfo dstSliceInfo[],
              const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "DataCopy");
    pypto_emu::OnPipe on_pipe(PIPE_MTE3);
    PYPTO_REQUIRE_COPY_TYPE(slice_type, "DataCopy(SliceInfo)",
                            "int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float");
    const char* what = "DataCopy(local->GM, SliceInfo)";
    pypto_emu::poll(what);
    pypto_emu::SlicePlan p = pypto_emu::slice_plan<T>(dstSliceInfo, srcSliceInfo, dimValue, false, what);
    pypto_emu::check_local(src, p.src_end * sizeof(T), what);
    T* d = dst.range_out(0, p.dst_end, what);
    for (size_t i = 0; i < p.dst.size(); ++i) {
        pypto_emu::access_read(what, "src", src, p.src[i] * sizeof(T), p.burst * sizeof(T));
        pypto_emu::store_gm(d + p.dst[i], src.data() + p.src[i], p.burst, what);
    }
}

// ---- DataCopy: UB (Nz) -> GM (Nd) --------------------------------------------
// Element (r, c) of matrix m comes from src[m * srcNdMatrixStride * 256 +
// (c / 16) * srcNStride * 16 + r * 16 + c % 16] and goes to
// dst[m * dstNdMatrixStride + r * dstDStride + c].

template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const Nz2NdParamsFull& p, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "DataCopy");
    pypto_emu::OnPipe on_pipe(PIPE_MTE3);
    PYPTO_REQUIRE_COPY_TYPE(nz2nd_type, "DataCopy(Nz2NdParamsFull)",
                            "int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float");
    const char* what = "DataCopy(local->GM, Nz2NdParamsFull)";
    pypto_emu::poll(what);
    auto range = [&](const char* name, uint64_t v, uint64_t lo, uint64_t hi) {
        if (v < lo || v > hi) {
            pypto_emu::fail(what, ": ", name, " ", v, " is outside ", lo, "..", hi);
        }
    };
    range("ndNum", p.ndNum, 0, 4095);
    range("nValue", p.nValue, 1, 8192);
    range("dValue", p.dValue, 1, 8192);
    range("srcNdMatrixStride", p.srcNdMatrixStride, 1, 512);
    range("srcNStride", p.srcNStride, 0, 4096);
    range("dstDStride", p.dstDStride, 1, 65535);
    range("dstNdMatrixStride", p.dstNdMatrixStride, 1, 65535);
    if (p.dValue % 16 != 0) {
        pypto_emu::fail(what, ": dValue ", p.dValue, " is not a multiple of 16");
    }
    if (p.ndNum == 0) {
        return;
    }
    uint32_t blocks = p.dValue / 16;
    auto src_at = [&](uint64_t m, uint64_t r, uint64_t c) {
        return m * p.srcNdMatrixStride * 256 + (c / 16) * p.srcNStride * 16ull + r * 16 + c % 16;
    };
    uint64_t src_end = 0;
    for (uint64_t b = 0; b < blocks; ++b) {
        src_end = std::max<uint64_t>(src_end, src_at(p.ndNum - 1, p.nValue - 1, b * 16 + 15) + 1);
    }
    pypto_emu::check_local(src, src_end * sizeof(T), what);
    uint64_t dst_end = (p.ndNum - 1ull) * p.dstNdMatrixStride + (p.nValue - 1ull) * p.dstDStride + p.dValue;
    T* d = dst.range_out(0, dst_end, what);
    for (uint64_t m = 0; m < p.ndNum; ++m) {
        for (uint64_t r = 0; r < p.nValue; ++r) {
            for (uint64_t b = 0; b < blocks; ++b) {
                pypto_emu::access_read(what, "src", src, src_at(m, r, b * 16) * sizeof(T), 16 * sizeof(T));
                pypto_emu::store_gm(d + m * p.dstNdMatrixStride + r * p.dstDStride + b * 16,
                                    src.data() + src_at(m, r, b * 16), 16, what);
            }
        }
    }
}

// ---- SetPadValue --------------------------------------------------------------
// The value DataCopyPad (GM -> UB) pads with when its isPad is false.

template <typename T, TPosition pos = TPosition::MAX>
void SetPadValue(T paddingValue, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "SetPadValue");
    PYPTO_REQUIRE_COPY_TYPE(Target::datacopy, "SetPadValue", PYPTO_ARCH(DATACOPY_TYPES));
    static_assert(pos == TPosition::VECIN || pos == TPosition::VECOUT || pos == TPosition::MAX,
                  "SetPadValue<T, pos>: pos must be TPosition::VECIN, VECOUT or MAX");
    pypto_emu::poll("SetPadValue");
    pypto_emu::PadRegister& reg = pypto_emu::pad_register();
    reg.set = true;
    reg.type = pypto_emu::copy_type_name<T>();
    std::memset(reg.bytes, 0, sizeof(reg.bytes));
    std::memcpy(reg.bytes, &paddingValue, sizeof(T));
}

// ---- DataCopyPad ----------------------------------------------------------------

// GM -> UB for any byte length. Block i lands at UB byte i * (its padded
// length + dstStride * 32): leftPadding elements, blockLen bytes, then
// rightPadding elements and a dummy tail up to the next 32-byte multiple.
// Fill, as documented: with no left or right padding the tail repeats the
// block's first element; otherwise padding and tail take paddingValue
// (isPad), the SetPadValue value (isPad false, after SetPadValue), or are
// unspecified (isPad false, no SetPadValue: every bit set on the host).
template <typename T>
void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                 const DataCopyPadExtParams<T>& pad, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "DataCopyPad");
    pypto_emu::OnPipe on_pipe(PIPE_MTE2);
    PYPTO_REQUIRE_COPY_TYPE(Target::datacopy, "DataCopyPad", PYPTO_ARCH(DATACOPY_TYPES));
    const char* what = "DataCopyPad(GM->local)";
    pypto_emu::model_copy(pypto_emu::Memory::GM, pypto_emu::memory_of(dst.position()),
                          uint64_t{p.blockCount} * p.blockLen, p.blockCount, src.GetPhyAddr());
    pypto_emu::check_block_count(p.blockCount, what);
    if (p.blockLen > 2097151) {
        pypto_emu::fail(what, ": blockLen ", p.blockLen, " bytes exceeds 2097151");
    }
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
        bool l = left > 32;
        pypto_emu::fail(what, ": ", l ? "leftPadding " : "rightPadding ", l ? +pad.leftPadding : +pad.rightPadding,
                        " elements are ", l ? left : right,
                        " bytes; leftPadding and rightPadding may each cover at most 32 bytes");
    }
    if constexpr (sizeof(T) == 8) {
        uint64_t bits;
        std::memcpy(&bits, &pad.paddingValue, 8);
        if (pad.isPad && bits != 0) {
            pypto_emu::fail(what, ": paddingValue must be 0 for 64-bit elements");
        }
    }
    bool padded = left != 0 || right != 0;
    uint8_t fill[sizeof(T)];
    bool first_element = !padded;
    if (padded) {
        if (pad.isPad) {
            std::memcpy(fill, &pad.paddingValue, sizeof(T));
        } else {
            pypto_emu::PadRegister& reg = pypto_emu::pad_register();
            if (!reg.set) {
                std::memset(fill, pypto_emu::UNSPECIFIED_PAD_BYTE, sizeof(T));
            } else if (std::strcmp(reg.type, pypto_emu::copy_type_name<T>()) != 0) {
                pypto_emu::fail(what, ": isPad is false, so the padding takes the SetPadValue value, but that "
                                      "value is ",
                                reg.type, " and the copy moves ", pypto_emu::copy_type_name<T>(),
                                " elements; call SetPadValue with the copied type");
            } else {
                std::memcpy(fill, reg.bytes, sizeof(T));
            }
        }
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
        std::memmove(out + left, in, p.blockLen);
        if (first_element) {
            std::memcpy(fill, out, sizeof(T));
        }
        // The padding only: before the data, and after it to the 32-byte
        // end of the block (a row's data is not looked at again).
        for (uint64_t b = 0; b < left; b += sizeof(T)) {
            std::memcpy(out + b, fill, sizeof(T));
        }
        for (uint64_t b = left + p.blockLen; b < dst_block; b += sizeof(T)) {
            std::memcpy(out + b, fill, sizeof(T));
        }
        pypto_emu::access_write(dst, i * dst_step, dst_block);
    }
}

// UB -> GM for any byte length: exactly blockLen bytes per block reach GM;
// a UB block occupies blockLen rounded up to 32 bytes, then srcStride
// 32-byte blocks of gap; dstStride bytes of gap in GM.
template <typename T>
void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "DataCopyPad");
    pypto_emu::OnPipe on_pipe(PIPE_MTE3);
    PYPTO_REQUIRE_COPY_TYPE(Target::datacopy, "DataCopyPad", PYPTO_ARCH(DATACOPY_TYPES));
    const char* what = "DataCopyPad(local->GM)";
    pypto_emu::model_copy(pypto_emu::memory_of(src.position()), pypto_emu::Memory::GM,
                          uint64_t{p.blockCount} * p.blockLen, p.blockCount);
    pypto_emu::check_block_count(p.blockCount, what);
    if (p.blockLen > 2097151) {
        pypto_emu::fail(what, ": blockLen ", p.blockLen, " bytes exceeds 2097151");
    }
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
        pypto_emu::access_read(what, "src", src, i * src_step, p.blockLen);
        pypto_emu::store_gm(reinterpret_cast<T*>(d + i * dst_step),
                            reinterpret_cast<const T*>(s + i * src_step), p.blockLen / sizeof(T), what);
    }
}

// The older DataCopyParams forms of DataCopyPad: blockLen in bytes, strides
// in the units of the DataCopyExtParams forms.
template <typename T>
void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
                 const DataCopyPadParams& pad, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "DataCopyPad");
    pypto_emu::OnPipe on_pipe(PIPE_MTE2);
    T value;
    std::memcpy(&value, &pad.paddingValue, sizeof(T));
    DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0),
                DataCopyPadExtParams<T>(pad.isPad, pad.leftPadding, pad.rightPadding, value));
}

template <typename T>
void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "DataCopyPad");
    pypto_emu::OnPipe on_pipe(PIPE_MTE3);
    DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0));
}

} // namespace AscendC
