// The cube unit's data path: GM -> L1 in the Nz fractal layout (DataCopy
// with Nd2NzParams), L1 -> L0A/L0B (LoadData), L0A x L0B -> L0C (Mmad), and
// L0C -> GM (Fixpipe), as the Ascend C documentation describes them for
// Atlas A2/A3. Layouts, for T of C0 = 32 / sizeof(T) elements per 32 bytes:
// - L1 (Nz): column blocks of C0 columns, each holding its rows' 32 bytes in
//   row order; a fractal is 16 rows of one block (512 bytes).
// - L0A (Zz): fractal (m1, k1) at index m1 * K1 + k1, each row-major 16 x C0.
// - L0B (Zn): fractal (k1, n1) at index k1 * N1 + n1, each holding 16 columns
//   of C0 contiguous K-values.
// - L0C (Nz, 16 x 16 fractals of fp32): (m, n) at ((n/16) * M1 + m/16) * 256 + (m%16) * 16 + n%16.
#pragma once

#include "vector.h"

namespace AscendC {

struct Nd2NzParams {
    uint16_t ndNum = 1;
    uint16_t nValue = 0;           // rows
    uint16_t dValue = 0;           // columns
    uint16_t srcNdMatrixStride = 0;
    uint16_t srcDValue = 0;        // source row pitch, elements
    uint16_t dstNzC0Stride = 0;    // column block to column block, 32-byte units
    uint16_t dstNzNStride = 0;     // row to row, 32-byte units
    uint16_t dstNzMatrixStride = 0;
    Nd2NzParams() = default;
    Nd2NzParams(uint16_t ndNumIn, uint16_t nValueIn, uint16_t dValueIn, uint16_t srcNdMatrixStrideIn,
                uint16_t srcDValueIn, uint16_t dstNzC0StrideIn, uint16_t dstNzNStrideIn,
                uint16_t dstNzMatrixStrideIn)
        : ndNum(ndNumIn), nValue(nValueIn), dValue(dValueIn), srcNdMatrixStride(srcNdMatrixStrideIn),
          srcDValue(srcDValueIn), dstNzC0Stride(dstNzC0StrideIn), dstNzNStride(dstNzNStrideIn),
          dstNzMatrixStride(dstNzMatrixStrideIn) {}
};

struct LoadData2DParams {
    uint16_t startIndex = 0;
    uint16_t dstGap = 0;
    uint16_t srcStride = 0;
    bool ifTranspose = false;
    uint8_t repeatTimes = 0;
    uint8_t sid = 0;
    uint8_t addrMode = 0;
    LoadData2DParams() = default;
    LoadData2DParams(uint16_t startIndexIn, uint8_t repeatTimesIn, uint16_t srcStrideIn, uint8_t sidIn,
                     uint16_t dstGapIn, bool ifTransposeIn, uint8_t addrModeIn)
        : startIndex(startIndexIn), dstGap(dstGapIn), srcStride(srcStrideIn), ifTranspose(ifTransposeIn),
          repeatTimes(repeatTimesIn), sid(sidIn), addrMode(addrModeIn) {}
};

struct LoadData2dTransposeParams {
    uint16_t startIndex = 0;  // first source square, in squares
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;   // square to square, in squares
    uint16_t dstGap = 0;      // between iterations' first fractals, 512-byte units
    uint16_t dstFracGap = 0;  // between an iteration's two fractals (32-bit types), 512-byte units
    uint8_t addrMode = 0;
    LoadData2dTransposeParams() = default;
    LoadData2dTransposeParams(uint16_t startIndexIn, uint8_t repeatTimesIn, uint16_t srcStrideIn,
                              uint16_t dstGapIn, uint16_t dstFracGapIn, uint8_t addrModeIn = 0)
        : startIndex(startIndexIn), repeatTimes(repeatTimesIn), srcStride(srcStrideIn), dstGap(dstGapIn),
          dstFracGap(dstFracGapIn), addrMode(addrModeIn) {}
};

struct MmadParams {
    uint16_t m = 0;
    uint16_t n = 0;
    uint16_t k = 0;
    bool isBias = false;
    int32_t fmOffset = 0;
    bool enSsparse = false;
    bool enWinogradA = false;
    bool enWinogradB = false;
    uint8_t unitFlag = 0;
    bool kDirectionAlign = false;
    bool cmatrixSource = false;
    bool cmatrixInitVal = true;
    MmadParams() = default;
    MmadParams(uint16_t mIn, uint16_t nIn, uint16_t kIn, uint8_t unitFlagIn, bool cmatrixSourceIn,
               bool cmatrixInitValIn)
        : m(mIn), n(nIn), k(kIn), unitFlag(unitFlagIn), cmatrixSource(cmatrixSourceIn),
          cmatrixInitVal(cmatrixInitValIn) {}
};

// QuantMode_t is global, in misc.h.
enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR, COLUMN_MAJOR };
struct FixpipeConfig {
    CO2Layout format;
};
constexpr FixpipeConfig CFG_NZ = {CO2Layout::NZ};
constexpr FixpipeConfig CFG_ROW_MAJOR = {CO2Layout::ROW_MAJOR};

struct FixpipeParamsV220 {
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint16_t srcStride = 0; // L0C column block to column block, in rows of 16 values (at least mSize)
    uint32_t dstStride = 0; // row-major output: the destination row pitch, elements
    QuantMode_t quantPre = NoQuant;
    uint64_t deqScalar = 0;
    uint16_t ndNum = 1;
    uint16_t srcNdStride = 0;
    uint16_t dstNdStride = 0;
    bool reluEn = false;
    uint8_t unitFlag = 0;
    bool isChannelSplit = false;
    FixpipeParamsV220() = default;
    FixpipeParamsV220(uint16_t nSizeIn, uint16_t mSizeIn, uint16_t srcStrideIn, uint32_t dstStrideIn,
                      bool reluEnIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), reluEn(reluEnIn) {}
    // The documented longer forms: the quantisation, the ND matrices, the
    // unit flag and (12 arguments) the channel split, in that order.
    FixpipeParamsV220(uint16_t nSizeIn, uint16_t mSizeIn, uint16_t srcStrideIn, uint32_t dstStrideIn,
                      bool reluEnIn, QuantMode_t quantPreIn, int64_t deqScalarIn, uint16_t ndNumIn,
                      uint16_t srcNdStrideIn, uint16_t dstNdStrideIn, uint8_t unitFlagIn,
                      bool isChannelSplitIn = false)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), quantPre(quantPreIn),
          deqScalar(static_cast<uint64_t>(deqScalarIn)), ndNum(ndNumIn), srcNdStride(srcNdStrideIn),
          dstNdStride(dstNdStrideIn), reluEn(reluEnIn), unitFlag(unitFlagIn), isChannelSplit(isChannelSplitIn) {}
};

} // namespace AscendC

namespace pypto_emu {

template <typename T>
void check_cube_operand(const AscendC::LocalTensor<T>& t, Memory expected, uint64_t bytes, const char* what)
{
    poll(what);
    if (t.data() == nullptr) {
        fail(what, ": an operand LocalTensor was never allocated");
    }
    Memory m = memory_of(t.position());
    if (m != expected) {
        fail(what, ": an operand is at position ", position_name(t.position()), "; expected the ",
             memory_spec(expected).name);
    }
    uint32_t align = memory_spec(m).align;
    if (t.offset_bytes() % align != 0) {
        fail(what, ": an operand starts at byte ", t.offset_bytes(), " of the ", memory_spec(m).name,
             ", not on a ", align, "-byte boundary");
    }
    if (bytes > static_cast<uint64_t>(t.GetSize()) * sizeof(T)) {
        fail(what, ": ", bytes, " bytes do not fit the operand's ", static_cast<uint64_t>(t.GetSize()) * sizeof(T),
             " bytes");
    }
}

} // namespace pypto_emu

namespace AscendC {

// GM (row-major) -> L1 or UB in the Nz layout; column tails are zero-filled to 32 bytes.
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "DataCopy");
    pypto_emu::OnPipe on_pipe(PIPE_MTE2); // GM -> L1 or UB
    static_assert(!pypto_emu::is_int4<T>, "DataCopy(Nd2NzParams): int4b_t (b4) is not emulated yet");
    PYPTO_REQUIRE_COPY_TYPE(slice_type, "DataCopy(Nd2NzParams)",
                            "int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float");
    bool to_ub = pypto_emu::memory_of(dst.position()) == pypto_emu::Memory::UB;
    const char* what = to_ub ? "DataCopy(GM->UB, Nd2NzParams)" : "DataCopy(GM->L1, Nd2NzParams)";
    pypto_emu::model_copy(pypto_emu::Memory::GM, pypto_emu::memory_of(dst.position()),
                          uint64_t{p.ndNum} * p.nValue * p.dValue * sizeof(T), uint64_t{p.ndNum} * p.nValue,
                          src.GetPhyAddr());
    pypto_emu::poll(what);
    if (to_ub) {
        // The documented ranges of the GM -> UB form (the upper bounds; the
        // documentation's own example passes dstNzMatrixStride 0 with ndNum 1).
        auto range = [&](const char* name, uint64_t v, uint64_t hi) {
            if (v > hi) {
                pypto_emu::fail(what, ": ", name, " ", v, " exceeds ", hi);
            }
        };
        range("ndNum", p.ndNum, 4095);
        range("nValue", p.nValue, 16384);
        range("dstNzC0Stride", p.dstNzC0Stride, 16384);
        range("dstNzNStride", p.dstNzNStride, 16384);
    }
    if (p.ndNum == 0 || p.nValue == 0 || p.dValue == 0) {
        return;
    }
    constexpr uint32_t c0 = 32 / sizeof(T);
    if (p.srcDValue < p.dValue) {
        pypto_emu::fail(what, ": srcDValue ", p.srcDValue, " is less than dValue ", p.dValue);
    }
    uint32_t blocks = (p.dValue + c0 - 1) / c0;
    uint64_t last = (p.ndNum - 1ull) * p.dstNzMatrixStride * sizeof(T) +
                    ((blocks - 1ull) * p.dstNzC0Stride + (p.nValue - 1ull) * p.dstNzNStride + 1) * 32;
    if (to_ub) {
        pypto_emu::check_local(dst, last, what);
    } else {
        pypto_emu::check_cube_operand(dst, pypto_emu::Memory::L1, last, what);
    }
    uint64_t src_last = (p.ndNum - 1ull) * p.srcNdMatrixStride + (p.nValue - 1ull) * p.srcDValue + p.dValue;
    const T* s = src.range(0, src_last, what);
    if (pypto_emu::timing_only()) {
        // The record, as the accesses skipped here would have filled it.
        pypto_emu::instr_access(pypto_emu::memory_of(dst.position()), true);
        return;
    }
    // The sanitizers' bookkeeping for all 32-byte rows at once (column
    // block by column block, where the rows of a block are contiguous);
    // else row by row as they are copied.
    bool noted = true;
    if (pypto_emu::watching_local()) {
        pypto_emu::AccessView v = pypto_emu::access_view(dst);
        pypto_emu::AccessBatch batch;
        for (uint32_t nd = 0; nd < p.ndNum; ++nd) {
            for (uint32_t b = 0; b < blocks; ++b) {
                for (uint32_t r = 0; r < p.nValue; ++r) {
                    uint64_t row = nd * p.dstNzMatrixStride +
                                   (static_cast<uint64_t>(b) * p.dstNzC0Stride +
                                    static_cast<uint64_t>(r) * p.dstNzNStride) * c0;
                    batch.add(v, true, row * sizeof(T), 32);
                }
            }
        }
        noted = batch.commit();
    }
    for (uint32_t nd = 0; nd < p.ndNum; ++nd) {
        for (uint32_t r = 0; r < p.nValue; ++r) {
            for (uint32_t b = 0; b < blocks; ++b) {
                T* row = dst.data() + nd * p.dstNzMatrixStride +
                         (static_cast<uint64_t>(b) * p.dstNzC0Stride + static_cast<uint64_t>(r) * p.dstNzNStride) * c0;
                for (uint32_t c = 0; c < c0; ++c) {
                    uint32_t col = b * c0 + c;
                    row[c] = col < p.dValue ? s[nd * p.srcNdMatrixStride + static_cast<uint64_t>(r) * p.srcDValue + col]
                                            : T(0);
                }
                if (!noted) {
                    pypto_emu::access_write(dst, static_cast<uint64_t>(row - dst.data()) * sizeof(T), 32);
                }
            }
        }
    }
}

// L1 -> L0A / L0B, whole 512-byte fractals, optionally transposing each
// (16-bit types only).
template <typename T>
void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "LoadData");
    const char* what = "LoadData";
    static_assert(!pypto_emu::is_int4<T>, "LoadData: int4b_t (b4) is not emulated yet");
    if (p.repeatTimes == 0) {
        return;
    }
    pypto_emu::model_copy(pypto_emu::Memory::L1, pypto_emu::memory_of(dst.position()), uint64_t{p.repeatTimes} * 512);
    constexpr uint32_t fractal = 512 / sizeof(T);
    pypto_emu::Memory dm = pypto_emu::memory_of(dst.position());
    if (dm != pypto_emu::Memory::L0A && dm != pypto_emu::Memory::L0B) {
        pypto_emu::fail(what, ": the destination must be in L0A (A2) or L0B (B2), not ",
                        pypto_emu::position_name(dst.position()));
    }
    if (p.ifTranspose && sizeof(T) != 2) {
        pypto_emu::fail(what, ": ifTranspose works on 16-bit types only; use LoadDataWithTranspose");
    }
    uint64_t dst_bytes = ((p.repeatTimes - 1ull) * (1 + p.dstGap) + 1) * 512;
    uint64_t src_bytes = (p.startIndex + (p.repeatTimes - 1ull) * p.srcStride + 1) * 512;
    pypto_emu::check_cube_operand(dst, dm, dst_bytes, what);
    pypto_emu::check_cube_operand(src, pypto_emu::Memory::L1, src_bytes, what);
    if (pypto_emu::timing_only()) {
        // The record, as the accesses skipped here would have filled it.
        pypto_emu::instr_move(pypto_emu::Memory::L1, dm);
        return;
    }
    auto mv = pypto_emu::access_move(what, src, dst);
    // racecheck on every fractal at once (else fractal by fractal below).
    bool raced = false;
    if (mv.race) {
        pypto_emu::AccessView sv = mv.source_view(), dv = mv.destination_view();
        pypto_emu::AccessBatch batch;
        for (uint32_t i = 0; i < p.repeatTimes; ++i) {
            batch.add(sv, false, (p.startIndex + static_cast<uint64_t>(i) * p.srcStride) * 512, 512, false);
        }
        for (uint32_t i = 0; i < p.repeatTimes; ++i) {
            batch.add(dv, true, static_cast<uint64_t>(i) * (1 + p.dstGap) * 512, 512, false);
        }
        raced = batch.commit();
    }
    for (uint32_t i = 0; i < p.repeatTimes; ++i) {
        const T* in = src.data() + (p.startIndex + static_cast<uint64_t>(i) * p.srcStride) * fractal;
        T* out = dst.data() + static_cast<uint64_t>(i) * (1 + p.dstGap) * fractal;
        if (mv.race || mv.init) {
            uint64_t si = static_cast<uint64_t>(in - src.data()) * sizeof(T);
            uint64_t di = static_cast<uint64_t>(out - dst.data()) * sizeof(T);
            if (mv.race && !raced) {
                mv.race_read(si, 512);
                mv.race_write(di, 512);
            }
            if (mv.init && p.ifTranspose) {
                mv.init_copy_transposed16(si, di);
            } else if (mv.init) {
                mv.init_copy(si, di, 512);
            }
        }
        if (p.ifTranspose) {
            for (uint32_t r = 0; r < 16; ++r) {
                for (uint32_t c = 0; c < 16; ++c) {
                    out[c * 16 + r] = in[r * 16 + c];
                }
            }
        } else {
            std::memcpy(out, in, 512);
        }
    }
}

// L1 -> L0A / L0B, transposing squares. 16-bit: a 16 x 16 square is one
// fractal. 32-bit: a 16 x 16 square is two consecutive 16 x 8 fractals side
// by side [F0 | F1]; its transpose is written as two 16 x 8 fractals,
// dstFracGap apart. 8-bit: a 32 x 32 square is two consecutive 16 x 32
// fractals one above the other; its transpose's top and bottom halves are
// written as two 16 x 32 fractals, dstFracGap apart.
template <typename T>
void LoadDataWithTranspose(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                           const LoadData2dTransposeParams& p, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "LoadDataWithTranspose");
    const char* what = "LoadDataWithTranspose";
    static_assert(pypto_emu::one_of<T, int8_t, uint8_t, half, bfloat16_t, int32_t, uint32_t, float>,
                  "LoadDataWithTranspose: supported types are int8_t, uint8_t, half, bfloat16_t, int32_t, "
                  "uint32_t and float (int4b_t is not emulated)");
    if (p.repeatTimes == 0) {
        return;
    }
    pypto_emu::model_copy(pypto_emu::Memory::L1, pypto_emu::memory_of(dst.position()),
                          uint64_t{p.repeatTimes} * (sizeof(T) == 2 ? 512 : 1024));
    pypto_emu::Memory dm = pypto_emu::memory_of(dst.position());
    if (dm != pypto_emu::Memory::L0A && dm != pypto_emu::Memory::L0B) {
        pypto_emu::fail(what, ": the destination must be in L0A (A2) or L0B (B2), not ",
                        pypto_emu::position_name(dst.position()));
    }
    constexpr uint32_t square_bytes = sizeof(T) == 1 ? 32 * 32 : 16 * 16 * sizeof(T);
    constexpr uint32_t fractal = 512 / sizeof(T);
    uint32_t second = sizeof(T) != 2 ? (p.dstFracGap + 1u) : 0u; // in fractals
    uint64_t dst_bytes = ((p.repeatTimes - 1ull) * (1 + p.dstGap) + 1 + second) * 512;
    uint64_t src_bytes = (p.startIndex + (p.repeatTimes - 1ull) * p.srcStride + 1) * square_bytes;
    pypto_emu::check_cube_operand(dst, dm, dst_bytes, what);
    pypto_emu::check_cube_operand(src, pypto_emu::Memory::L1, src_bytes, what);
    if (pypto_emu::timing_only()) {
        // The record, as the accesses skipped here would have filled it.
        pypto_emu::instr_move(pypto_emu::Memory::L1, dm);
        return;
    }
    auto mv = pypto_emu::access_move(what, src, dst);
    // racecheck on every square at once (else square by square below).
    bool raced = false;
    if (mv.race) {
        pypto_emu::AccessView sv = mv.source_view(), dv = mv.destination_view();
        pypto_emu::AccessBatch batch;
        for (uint32_t i = 0; i < p.repeatTimes; ++i) {
            batch.add(sv, false, (p.startIndex + static_cast<uint64_t>(i) * p.srcStride) * square_bytes,
                      square_bytes, false);
        }
        for (uint32_t i = 0; i < p.repeatTimes; ++i) {
            uint64_t di = static_cast<uint64_t>(i) * (1 + p.dstGap) * 512;
            batch.add(dv, true, di, 512, false);
            if (sizeof(T) != 2) {
                batch.add(dv, true, di + second * 512, 512, false);
            }
        }
        raced = batch.commit();
    }
    for (uint32_t i = 0; i < p.repeatTimes; ++i) {
        const T* in = src.data() + (p.startIndex + static_cast<uint64_t>(i) * p.srcStride) * (square_bytes / sizeof(T));
        T* out = dst.data() + static_cast<uint64_t>(i) * (1 + p.dstGap) * fractal;
        if (mv.race || mv.init) {
            uint64_t si = static_cast<uint64_t>(in - src.data()) * sizeof(T);
            uint64_t di = static_cast<uint64_t>(out - dst.data()) * sizeof(T);
            if (mv.race && !raced) {
                // The square read, and the one or two fractals written.
                mv.race_read(si, square_bytes);
                mv.race_write(di, 512);
                if (sizeof(T) != 2) {
                    mv.race_write(di + second * fractal * sizeof(T), 512);
                }
            }
            for (uint32_t r = 0; mv.init && sizeof(T) == 1 && r < 32; ++r) {
                for (uint32_t c = 0; c < 32; ++c) {
                    // S[r][c] lands in fractal c / 16, at row c % 16, column r.
                    mv.init_copy(si + r * 32 + c, di + (c / 16) * second * 512 + (c % 16) * 32 + r, 1);
                }
            }
            for (uint32_t r = 0; mv.init && sizeof(T) != 1 && r < 16; ++r) {
                for (uint32_t c = 0; c < 16; ++c) {
                    // Where S[r][c] lands: 16-bit, out[c][r]; 32-bit, out[c][r] for
                    // r < 8, else the second fractal's [c][r - 8].
                    uint64_t from = sizeof(T) == 2 ? r * 16 + c : (c < 8 ? r * 8 + c : 128 + r * 8 + (c - 8));
                    uint64_t to = sizeof(T) == 2 ? c * 16 + r
                                                 : (r < 8 ? c * 8 + r : second * fractal + c * 8 + (r - 8));
                    mv.init_copy(si + from * sizeof(T), di + to * sizeof(T), sizeof(T));
                }
            }
        }
        if constexpr (sizeof(T) == 1) {
            T* out2 = out + static_cast<uint64_t>(second) * fractal;
            for (uint32_t r = 0; r < 32; ++r) {
                for (uint32_t c = 0; c < 32; ++c) {
                    (c < 16 ? out : out2)[(c % 16) * 32 + r] = in[r * 32 + c];
                }
            }
        } else if constexpr (sizeof(T) == 2) {
            for (uint32_t r = 0; r < 16; ++r) {
                for (uint32_t c = 0; c < 16; ++c) {
                    out[c * 16 + r] = in[r * 16 + c];
                }
            }
        } else {
            // S[r][c] = c < 8 ? F0[r][c] : F1[r][c - 8]; output rows are S's columns.
            auto square = [in](uint32_t r, uint32_t c) { return c < 8 ? in[r * 8 + c] : in[128 + r * 8 + (c - 8)]; };
            T* out2 = out + static_cast<uint64_t>(second) * fractal;
            for (uint32_t r = 0; r < 16; ++r) {
                for (uint32_t c = 0; c < 8; ++c) {
                    out[r * 8 + c] = square(c, r);
                    out2[r * 8 + c] = square(8 + c, r);
                }
            }
        }
    }
}

namespace detail {

// dst (L0C) = A x B, += A x B (cmatrixInitVal false), or bias + A x B with
// `bias` (the row a BiasTable holds, one value per column) not null.
template <typename T, typename U, typename S>
void mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter, const MmadParams& p,
          const T* bias)
{
    using pypto_emu::one_of;
    static_assert(std::is_same_v<U, S>, "Mmad: both inputs take one element type");
    static_assert((std::is_same_v<T, float> && one_of<U, half, bfloat16_t, float>) ||
                      (std::is_same_v<T, int32_t> && std::is_same_v<U, int8_t>),
                  "Mmad: supported are half/bfloat16_t/float -> float and int8_t -> int32_t");
    const char* what = "Mmad";
    if (p.m == 0 || p.n == 0 || p.k == 0) {
        return;
    }
    pypto_emu::model_mmad(p.m, p.n, p.k, sizeof(U));
    constexpr uint32_t k0 = 32 / sizeof(U);
    uint32_t m1 = (p.m + 15) / 16;
    uint32_t n1 = (p.n + 15) / 16;
    uint32_t k1 = (p.k + k0 - 1) / k0;
    pypto_emu::check_cube_operand(fm, pypto_emu::Memory::L0A, uint64_t(m1) * k1 * 512, what);
    pypto_emu::check_cube_operand(filter, pypto_emu::Memory::L0B, uint64_t(k1) * n1 * 512, what);
    pypto_emu::check_cube_operand(dst, pypto_emu::Memory::L0C, uint64_t(m1) * n1 * 256 * sizeof(T), what);
    if (bias == nullptr && !p.cmatrixInitVal && p.cmatrixSource) {
        pypto_emu::fail(what, ": cmatrixSource true takes the bias from the BiasTable; pass it as Mmad's "
                              "bias operand (the overload with a C2 tensor)");
    }
    const bool accumulate = bias == nullptr && !p.cmatrixInitVal;
    if (pypto_emu::timing_only()) {
        // The record, as the accesses skipped here would have filled it.
        pypto_emu::instr_access(pypto_emu::Memory::L0A, false);
        pypto_emu::instr_access(pypto_emu::Memory::L0B, false);
        if (accumulate) {
            pypto_emu::instr_access(pypto_emu::Memory::L0C, false);
        }
        pypto_emu::instr_access(pypto_emu::Memory::L0C, true);
        return;
    }
    const U* a = fm.data();
    const S* b = filter.data();
    T* c = dst.data();
    if (pypto_emu::watching_local()) {
        pypto_emu::OnPipe cube(PIPE_M); // the accumulated C is read by the cube, not by Fixpipe
        // The elements the product reads: A's m x k, B's k x n, and C's
        // m x n when accumulating; then C's m x n are written.
        auto va = pypto_emu::access_view(fm, what, "the A matrix (fm)");
        auto vb = pypto_emu::access_view(filter, what, "the B matrix (filter)");
        auto vc = pypto_emu::access_view(dst, what, "the C matrix (dst, accumulated into)");
        // All at once, operand by operand in the order of memory (else
        // row by row below, which reports a failure).
        pypto_emu::AccessBatch batch;
        for (uint32_t mb = 0; mb < m1; ++mb) {
            for (uint32_t kb = 0; kb < k1; ++kb) {
                uint64_t kn = std::min<uint64_t>(k0, p.k - uint64_t(kb) * k0) * sizeof(U);
                for (uint32_t m = mb * 16; m < p.m && m < mb * 16 + 16; ++m) {
                    batch.add(va, false, (((m / 16) * k1 + kb) * (16ull * k0) + (m % 16) * k0) * sizeof(U), kn);
                }
            }
        }
        for (uint32_t kb = 0; kb < k1; ++kb) {
            uint64_t kn = std::min<uint64_t>(k0, p.k - uint64_t(kb) * k0) * sizeof(U);
            for (uint32_t n = 0; n < p.n; ++n) {
                batch.add(vb, false, ((uint64_t(kb) * n1 + n / 16) * (16ull * k0) + (n % 16) * k0) * sizeof(S), kn);
            }
        }
        for (int write = accumulate ? 0 : 1; write < 2; ++write) {
            for (uint32_t nb = 0; nb < n1; ++nb) {
                uint64_t nn = std::min<uint64_t>(16, p.n - uint64_t(nb) * 16) * sizeof(T);
                for (uint32_t m = 0; m < p.m; ++m) {
                    batch.add(vc, write == 1, ((uint64_t(nb) * m1 + m / 16) * 256 + (m % 16) * 16) * sizeof(T), nn);
                }
            }
        }
        if (!batch.commit()) {
            for (uint32_t kb = 0; kb < k1; ++kb) {
                uint64_t kn = std::min<uint64_t>(k0, p.k - uint64_t(kb) * k0) * sizeof(U);
                for (uint32_t m = 0; m < p.m; ++m) {
                    va.read((((m / 16) * k1 + kb) * (16ull * k0) + (m % 16) * k0) * sizeof(U), kn);
                }
                for (uint32_t n = 0; n < p.n; ++n) {
                    vb.read(((uint64_t(kb) * n1 + n / 16) * (16ull * k0) + (n % 16) * k0) * sizeof(S), kn);
                }
            }
            for (uint32_t nb = 0; nb < n1; ++nb) {
                uint64_t nn = std::min<uint64_t>(16, p.n - uint64_t(nb) * 16) * sizeof(T);
                for (uint32_t m = 0; m < p.m; ++m) {
                    uint64_t off = ((uint64_t(nb) * m1 + m / 16) * 256 + (m % 16) * 16) * sizeof(T);
                    if (accumulate) {
                        vc.read(off, nn);
                    }
                    vc.write(off, nn);
                }
            }
        }
    }
    for (uint32_t m = 0; m < p.m; ++m) {
        for (uint32_t n = 0; n < p.n; ++n) {
            T acc = 0;
            for (uint32_t k = 0; k < p.k; ++k) {
                const U av = a[((m / 16) * k1 + k / k0) * (16 * k0) + (m % 16) * k0 + k % k0];
                const S bv = b[((k / k0) * n1 + n / 16) * (16 * k0) + (n % 16) * k0 + k % k0];
                acc += static_cast<T>(static_cast<float>(av) * static_cast<float>(bv));
            }
            T& out = c[((n / 16) * m1 + m / 16) * 256 + (m % 16) * 16 + n % 16];
            out = bias != nullptr ? static_cast<T>(bias[n] + acc) : accumulate ? static_cast<T>(out + acc) : acc;
        }
    }
}

} // namespace detail

// dst (L0C) = A (L0A, Zz) x B (L0B, Zn), or += with cmatrixInitVal false.
template <typename T, typename U, typename S>
void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter,
          const MmadParams& p, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Mmad");
    detail::mmad(dst, fm, filter, p, static_cast<const T*>(nullptr));
}

// dst = bias + A x B. A bias in the BiasTable (C2) is one row of n values
// (float, or int32_t for int8 products), added to every row of the
// product; a bias in L0C (CO1) is dst itself, accumulated into. The bias's
// position decides, not cmatrixSource; cmatrixInitVal must be false (the
// initial C is the bias).
template <typename T, typename U, typename S, typename V>
void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter,
          const LocalTensor<V>& bias, const MmadParams& p, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Mmad");
    static_assert(std::is_same_v<V, T>, "Mmad: the bias takes dst's element type (float, or int32_t for int8)");
    const char* what = "Mmad(bias)";
    if (p.cmatrixInitVal) {
        pypto_emu::fail(what, ": cmatrixInitVal is true, which starts C at zero and would drop the bias; set it "
                              "false");
    }
    pypto_emu::Memory at = pypto_emu::memory_of(bias.position());
    if (at == pypto_emu::Memory::L0C) {
        if (bias.data() != dst.data()) {
            pypto_emu::fail(what, ": a bias in L0C is emulated only as dst itself (C += A x B)");
        }
        MmadParams acc = p;
        acc.cmatrixSource = false;
        detail::mmad(dst, fm, filter, acc, static_cast<const T*>(nullptr));
        return;
    }
    if (at != pypto_emu::Memory::BT) {
        pypto_emu::fail(what, ": the bias is at position ", pypto_emu::position_name(bias.position()),
                        "; expected C2 (the BiasTable) or CO1");
    }
    if (p.m == 0 || p.n == 0 || p.k == 0) {
        return;
    }
    pypto_emu::check_cube_operand(bias, pypto_emu::Memory::BT, uint64_t{p.n} * sizeof(T), what);
    if (bias.offset_bytes() % 128 != 0) {
        pypto_emu::fail(what, ": the bias starts at byte ", bias.offset_bytes(),
                        " of the BiasTable, not on a 128-byte boundary");
    }
    if (!pypto_emu::timing_only() && pypto_emu::watching_local()) {
        pypto_emu::OnPipe cube(PIPE_M);
        pypto_emu::access_view(bias, what, "the bias").read(0, uint64_t{p.n} * sizeof(T));
    }
    if (pypto_emu::timing_only()) {
        pypto_emu::instr_access(pypto_emu::Memory::BT, false);
    }
    detail::mmad(dst, fm, filter, p, bias.data());
}

namespace detail {

// One scale of the quantising Fixpipe modes (deqScalar, or one column's
// word of cbufWorkspace), as the Atlas A2/A3 documents lay it out: bits
// 13..31 the multiplier, a float with 10 mantissa bits (bits 0..12 are
// ignored); 32..35 the shift N and bit 36 the mode control bit that
// applies it; 37..45 an offset added after scaling; 46 signed (int8) or
// unsigned (uint8) output.
struct FixpipeScale {
    float m1;
    bool shift;
    uint32_t offset;
    bool is_signed;
};

inline FixpipeScale fixpipe_scale(uint64_t word, const char* what)
{
    uint32_t bits = static_cast<uint32_t>(word) & 0xFFFFE000u;
    float m1;
    std::memcpy(&m1, &bits, sizeof m1);
    FixpipeScale s{m1, ((word >> 36) & 1) != 0, static_cast<uint32_t>((word >> 37) & 0x1FF),
                   ((word >> 46) & 1) != 0};
    if (!std::isfinite(m1)) {
        pypto_emu::fail(what, ": the quantisation scale (bits 13..31 of 0x", std::hex, word, std::dec,
                        ") is not finite");
    }
    // Not emulated, so never silently ignored: the documents leave the
    // shift's encoding and the offset's sign open.
    if (s.shift) {
        pypto_emu::fail(what, ": the quantisation word's mode control bit (bit 36: shift by N before "
                              "scaling) is not emulated");
    }
    if (s.offset != 0) {
        pypto_emu::fail(what, ": the quantisation word's offset (bits 37..45) is ", s.offset,
                        "; only 0 is emulated");
    }
    return s;
}

// An L0C value through quantisation mode `mode` with scale `s`: scaled by
// M1 (non-negative values) or M2 (negative ones: M1, or 0 with reluEn),
// then rounded to nearest-even and saturated to T.
template <typename T, typename U>
T fixpipe_quantise(U v, const FixpipeScale& s, bool relu)
{
    float f = static_cast<float>(v);
    f *= f >= 0.0f ? s.m1 : (relu ? 0.0f : s.m1);
    if constexpr (std::is_same_v<T, half>) {
        f = std::min(std::max(f, -65504.0f), 65504.0f);
        return static_cast<half>(f);
    } else {
        // Through int16 ([-256, 255]), then to the 8-bit type.
        float r = std::nearbyint(std::min(std::max(f, -256.0f), 255.0f));
        float lo = std::is_signed_v<T> ? -128.0f : 0.0f;
        float hi = std::is_signed_v<T> ? 127.0f : 255.0f;
        return static_cast<T>(std::min(std::max(r, lo), hi));
    }
}

// The quantisation modes for an L0C of U moved out as T.
template <typename T, typename U>
constexpr bool fixpipe_quantising()
{
    return (std::is_same_v<U, int32_t> && pypto_emu::one_of<T, half, int8_t, uint8_t>) ||
           (std::is_same_v<U, float> && pypto_emu::one_of<T, int8_t, uint8_t>);
}

// L0C (Nz, fp32, or int32 from int8 products) -> GM, row-major
// (CFG_ROW_MAJOR) with a row pitch of dstStride elements, converting with
// quantPre: NoQuant (float and int32 as they are), F322F16/F322BF16, and
// the quantising modes, scalar (deqScalar) or per column (`workspace`, a
// uint64_t word per column in L1): DEQF16/VDEQF16 int32 -> half,
// REQ8/VREQ8 int32 -> int8/uint8, QF322B8_PRE/VQF322B8_PRE float ->
// int8/uint8.
template <typename T, typename U>
void fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const LocalTensor<uint64_t>* workspace,
             const FixpipeParamsV220& p)
{
    const char* what = "Fixpipe";
    static_assert((std::is_same_v<U, float> && pypto_emu::one_of<T, float, half, bfloat16_t, int8_t, uint8_t>) ||
                      (std::is_same_v<U, int32_t> && pypto_emu::one_of<T, int32_t, half, int8_t, uint8_t>),
                  "Fixpipe: emulated are float L0C data to float, half, bfloat16_t, int8_t and uint8_t, and "
                  "int32_t L0C data to int32_t, half, int8_t and uint8_t");
    if (p.nSize == 0 || p.mSize == 0 || p.ndNum == 0) {
        return;
    }
    pypto_emu::model_copy(pypto_emu::Memory::L0C, pypto_emu::Memory::GM,
                          uint64_t{p.ndNum} * p.mSize * p.nSize * sizeof(T), p.mSize);
    if (p.nSize % 16 != 0) {
        pypto_emu::fail(what, ": nSize ", p.nSize, " is not a multiple of 16");
    }
    // Not emulated, so never silently ignored: several ND matrices in one
    // move, and the channel split. (unitFlag only times the move.)
    if (p.ndNum != 1) {
        pypto_emu::fail(what, ": ndNum ", p.ndNum, " (several ND matrices in one move) is not emulated; move them one by one");
    }
    if (p.isChannelSplit) {
        pypto_emu::fail(what, ": isChannelSplit is not emulated");
    }
    if (p.dstStride < p.nSize) {
        pypto_emu::fail(what, ": dstStride ", p.dstStride, " is less than nSize ", p.nSize);
    }
    if (p.srcStride < p.mSize) {
        pypto_emu::fail(what, ": srcStride ", p.srcStride, " (rows per column block) is less than mSize ", p.mSize);
    }
    // The mode the types call for.
    constexpr bool quantising = fixpipe_quantising<T, U>();
    QuantMode_t scalar_mode = NoQuant;
    QuantMode_t vector_mode = NoQuant;
    const char* modes = "";
    if constexpr (std::is_same_v<U, float> && std::is_same_v<T, half>) {
        scalar_mode = vector_mode = F322F16;
        modes = "F322F16 for float to half";
    } else if constexpr (std::is_same_v<U, float> && std::is_same_v<T, bfloat16_t>) {
        scalar_mode = vector_mode = F322BF16;
        modes = "F322BF16 for float to bfloat16_t";
    } else if constexpr (std::is_same_v<U, int32_t> && std::is_same_v<T, half>) {
        scalar_mode = DEQF16;
        vector_mode = VDEQF16;
        modes = "DEQF16 or VDEQF16 for int32_t to half";
    } else if constexpr (std::is_same_v<U, int32_t> && !std::is_same_v<T, int32_t>) {
        scalar_mode = REQ8;
        vector_mode = VREQ8;
        modes = "REQ8 or VREQ8 for int32_t to int8_t/uint8_t";
    } else if constexpr (std::is_same_v<U, float> && quantising) {
        scalar_mode = QF322B8_PRE;
        vector_mode = VQF322B8_PRE;
        modes = "QF322B8_PRE or VQF322B8_PRE for float to int8_t/uint8_t";
    } else {
        modes = "NoQuant for float to float and int32_t to int32_t";
    }
    if (p.quantPre != scalar_mode && p.quantPre != vector_mode) {
        pypto_emu::fail(what, ": quantPre does not match the types; use ", modes);
    }
    const bool per_column = quantising && p.quantPre == vector_mode;
    if (per_column && workspace == nullptr) {
        pypto_emu::fail(what, ": the per-column quantPre mode takes its scales from cbufWorkspace; use the "
                              "overload with a LocalTensor<uint64_t> in L1");
    }
    if (!per_column && workspace != nullptr) {
        pypto_emu::fail(what, ": cbufWorkspace is given, but quantPre is not a per-column (V...) mode");
    }
    uint64_t blocks = p.nSize / 16;
    pypto_emu::check_cube_operand(src, pypto_emu::Memory::L0C,
                                  ((blocks - 1) * p.srcStride * 16 + static_cast<uint64_t>(p.mSize) * 16) * 4, what);
    if (workspace != nullptr) {
        pypto_emu::check_cube_operand(*workspace, pypto_emu::Memory::L1, uint64_t{p.nSize} * 8, what);
        if (workspace->offset_bytes() % 32 != 0) {
            pypto_emu::fail(what, ": cbufWorkspace starts at byte ", workspace->offset_bytes(),
                            " of L1, not on a 32-byte boundary");
        }
    }
    T* out = dst.range_out(0, (p.mSize - 1ull) * p.dstStride + p.nSize, what);
    if (pypto_emu::timing_only()) {
        // The record, as the accesses skipped here would have filled it.
        pypto_emu::instr_move(pypto_emu::Memory::L0C, pypto_emu::Memory::GM);
        return;
    }
    std::vector<T> row(p.nSize);
    if (pypto_emu::watching_local()) {
        auto v = pypto_emu::access_view(src, what, "src");
        // All rows at once, column block by column block (else row by row,
        // which reports a failure).
        pypto_emu::AccessBatch batch;
        for (uint64_t nb = 0; nb < blocks; ++nb) {
            for (uint32_t m = 0; m < p.mSize; ++m) {
                batch.add(v, false, (nb * p.srcStride * 16 + m * 16ull) * 4, 64);
            }
        }
        if (!batch.commit()) {
            for (uint32_t m = 0; m < p.mSize; ++m) {
                for (uint64_t nb = 0; nb < blocks; ++nb) {
                    v.read((nb * p.srcStride * 16 + m * 16ull) * 4, 64);
                }
            }
        }
        if (workspace != nullptr) {
            pypto_emu::access_view(*workspace, what, "cbufWorkspace").read(0, uint64_t{p.nSize} * 8);
        }
    }
    // The scales: one for all columns, or one per column.
    std::vector<FixpipeScale> scales;
    if constexpr (quantising) {
        scales.push_back(fixpipe_scale(p.deqScalar, what));
        if (per_column) {
            scales.clear();
            for (uint32_t n = 0; n < p.nSize; ++n) {
                scales.push_back(fixpipe_scale(workspace->data()[n], what));
            }
        }
        if constexpr (!std::is_same_v<T, half>) {
            for (const FixpipeScale& s : scales) {
                if (s.is_signed != std::is_signed_v<T>) {
                    pypto_emu::fail(what, ": the quantisation word's sign bit (46) says ",
                                    s.is_signed ? "int8" : "uint8", ", but the destination is ",
                                    std::is_signed_v<T> ? "int8_t" : "uint8_t");
                }
            }
        }
    }
    for (uint32_t m = 0; m < p.mSize; ++m) {
        for (uint32_t n = 0; n < p.nSize; ++n) {
            U v = src.data()[(n / 16) * p.srcStride * 16 + m * 16 + n % 16];
            if constexpr (quantising) {
                row[n] = fixpipe_quantise<T>(v, scales[per_column ? n : 0], p.reluEn);
            } else {
                if (p.reluEn && v < 0) {
                    v = 0;
                }
                row[n] = static_cast<T>(v);
            }
        }
        // Through the atomic mode, if one is set (SetAtomicAdd: split-K sums).
        pypto_emu::store_gm(out + static_cast<uint64_t>(m) * p.dstStride, row.data(), p.nSize, what);
    }
}

} // namespace detail

template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p,
             pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Fixpipe");
    static_assert(config.format == CO2Layout::ROW_MAJOR, "Fixpipe: only CFG_ROW_MAJOR is emulated");
    detail::fixpipe(dst, src, static_cast<const LocalTensor<uint64_t>*>(nullptr), p);
}

// The per-column quantisation modes (VDEQF16, VREQ8, VQF322B8_PRE): one
// uint64_t scale word per output column, in L1.
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const LocalTensor<uint64_t>& cbufWorkspace,
             const FixpipeParamsV220& p, pypto_emu::Site site = pypto_emu::Site::here())
{
    pypto_emu::AtSite at_site(site, "Fixpipe");
    static_assert(config.format == CO2Layout::ROW_MAJOR, "Fixpipe: only CFG_ROW_MAJOR is emulated");
    detail::fixpipe(dst, src, &cbufWorkspace, p);
}

} // namespace AscendC
