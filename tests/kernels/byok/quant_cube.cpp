// int8 a [16, 64] · b [64, 64] -> int32 on the cube, b stored [K, N] and
// turned into L0B's Zn fractals by the 8-bit LoadDataWithTranspose (32 x 32
// squares), then moved out four ways: int32 as it is (NoQuant), int32 ->
// half scaled by 1/8 (DEQF16), int32 -> int8 by a scale per column
// (VREQ8, the scales in L1), and int32 -> uint8 scaled by 1/4 with the ReLU
// (REQ8). A vendor-style cube kernel for the emulation's tests; `fault`
// 1 to 4 first makes one documented mistake.
#include "kernel_operator.h"

using namespace AscendC;

namespace {
constexpr uint32_t M = 16, K = 64, N = 64;

// A quantisation word: the float scale in bits 0..31 (its low 13 bits
// ignored), bit 46 set for a signed result.
__aicore__ inline uint64_t QuantWord(float scale, bool is_signed)
{
    uint32_t bits;
    __builtin_memcpy(&bits, &scale, sizeof bits);
    return bits | (is_signed ? (1ull << 46) : 0ull);
}
} // namespace

extern "C" __global__ __cube__ void quant_cube(GM_ADDR a, GM_ADDR b, GM_ADDR scales, GM_ADDR out32,
                                               GM_ADDR out16, GM_ADDR out8, GM_ADDR outu8, int32_t fault)
{
    GlobalTensor<int8_t> aGm, bGm;
    GlobalTensor<uint64_t> scaleGm;
    GlobalTensor<int32_t> out32Gm;
    GlobalTensor<half> out16Gm;
    GlobalTensor<int8_t> out8Gm;
    GlobalTensor<uint8_t> outu8Gm;
    aGm.SetGlobalBuffer((__gm__ int8_t*)a, M * K);
    bGm.SetGlobalBuffer((__gm__ int8_t*)b, K * N);
    scaleGm.SetGlobalBuffer((__gm__ uint64_t*)scales, N);
    out32Gm.SetGlobalBuffer((__gm__ int32_t*)out32, M * N);
    out16Gm.SetGlobalBuffer((__gm__ half*)out16, M * N);
    out8Gm.SetGlobalBuffer((__gm__ int8_t*)out8, M * N);
    outu8Gm.SetGlobalBuffer((__gm__ uint8_t*)outu8, M * N);
    TPipe pipe;
    TQue<TPosition::A1, 1> a1q;
    TQue<TPosition::B1, 1> b1q;
    TQue<TPosition::C1, 1> s1q;
    TQue<TPosition::A2, 1> a2q;
    TQue<TPosition::B2, 1> b2q;
    TQue<TPosition::CO1, 1> cq;
    pipe.InitBuffer(a1q, 1, M * K);
    pipe.InitBuffer(b1q, 1, K * N);
    pipe.InitBuffer(s1q, 1, N * sizeof(uint64_t));
    pipe.InitBuffer(a2q, 1, M * K);
    pipe.InitBuffer(b2q, 1, K * N);
    pipe.InitBuffer(cq, 1, M * N * sizeof(int32_t));

    // GM -> L1 as Nz: column blocks of 32 int8 values.
    LocalTensor<int8_t> a1 = a1q.AllocTensor<int8_t>();
    DataCopy(a1, aGm, Nd2NzParams(1, M, K, 0, K, M, 1, 0));
    a1q.EnQue(a1);
    LocalTensor<int8_t> b1 = b1q.AllocTensor<int8_t>();
    DataCopy(b1, bGm, Nd2NzParams(1, K, N, 0, N, K, 1, 0));
    b1q.EnQue(b1);
    LocalTensor<uint64_t> s1 = s1q.AllocTensor<uint64_t>();
    DataCopy(s1, scaleGm, N);
    s1q.EnQue(s1);

    // L1 -> L0A: A's two 16 x 32 fractals as they are.
    a1 = a1q.DeQue<int8_t>();
    LocalTensor<int8_t> a2 = a2q.AllocTensor<int8_t>();
    LoadData(a2, a1, LoadData2DParams(0, K / 32, 1, 0, 0, false, 0));
    a2q.EnQue(a2);
    a1q.FreeTensor(a1);
    // L1 -> L0B: for each 32-deep K slice, the 32 x 32 squares of each
    // column block (one per repeat, K / 32 squares apart), each transposed
    // into the Zn fractals of 16 columns, two per square.
    b1 = b1q.DeQue<int8_t>();
    LocalTensor<int8_t> b2 = b2q.AllocTensor<int8_t>();
    for (uint32_t kb = 0; kb < K / 32; ++kb) {
        LoadDataWithTranspose(b2[kb * (N / 16) * 512], b1, LoadData2dTransposeParams(kb, N / 32, K / 32, 1, 0));
    }
    b2q.EnQue(b2);
    b1q.FreeTensor(b1);

    a2 = a2q.DeQue<int8_t>();
    b2 = b2q.DeQue<int8_t>();
    LocalTensor<int32_t> c = cq.AllocTensor<int32_t>();
    Mmad(c, a2, b2, MmadParams(M, N, K, 0, false, true));
    a2q.FreeTensor(a2);
    b2q.FreeTensor(b2);
    cq.EnQue(c);
    c = cq.DeQue<int32_t>();
    s1 = s1q.DeQue<uint64_t>();

    FixpipeParamsV220 params(N, M, M, N, false);
    if (fault == 1) { // a mode for other types
        params.quantPre = QuantMode_t::REQ8;
        Fixpipe<half, int32_t, CFG_ROW_MAJOR>(out16Gm, c, params);
    } else if (fault == 2) { // a per-column mode without its scales
        params.quantPre = QuantMode_t::VDEQF16;
        Fixpipe<half, int32_t, CFG_ROW_MAJOR>(out16Gm, c, params);
    } else if (fault == 3) { // the shift bit
        params.quantPre = QuantMode_t::DEQF16;
        params.deqScalar = QuantWord(1.0f, false) | (1ull << 36);
        Fixpipe<half, int32_t, CFG_ROW_MAJOR>(out16Gm, c, params);
    } else if (fault == 4) { // a signed word for an unsigned result
        params.quantPre = QuantMode_t::REQ8;
        params.deqScalar = QuantWord(1.0f, true);
        Fixpipe<uint8_t, int32_t, CFG_ROW_MAJOR>(outu8Gm, c, params);
    }
    params.quantPre = QuantMode_t::NoQuant;
    Fixpipe<int32_t, int32_t, CFG_ROW_MAJOR>(out32Gm, c, params);
    params.quantPre = QuantMode_t::DEQF16;
    params.deqScalar = QuantWord(0.125f, false);
    Fixpipe<half, int32_t, CFG_ROW_MAJOR>(out16Gm, c, params);
    params.quantPre = QuantMode_t::VREQ8;
    params.deqScalar = 0;
    Fixpipe<int8_t, int32_t, CFG_ROW_MAJOR>(out8Gm, c, s1, params);
    params.quantPre = QuantMode_t::REQ8;
    params.reluEn = true;
    params.deqScalar = QuantWord(0.25f, false);
    Fixpipe<uint8_t, int32_t, CFG_ROW_MAJOR>(outu8Gm, c, params);
    s1q.FreeTensor(s1);
    cq.FreeTensor(c);
}
