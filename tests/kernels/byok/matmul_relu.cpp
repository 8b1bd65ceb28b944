// out = relu(a · b), a mixed cube + vector kernel in the style of Ascend C
// samples for Atlas A2/A3: each AI core's cube core (AIC) multiplies its
// rows of a (half) by b into c (float, in global memory) and signals its two
// vector cores (AIV) with CrossCoreSetFlag; each vector core waits, applies
// Relu to its half of those rows, and signals back. a is [m, k], b is
// [k, n]; m is a multiple of 32 * blocks, k and n multiples of 16, each at
// most 128.
#include "kernel_operator.h"

using namespace AscendC;

constexpr uint16_t CUBE_DONE = 3;
constexpr uint16_t VECTOR_DONE = 4;

__aicore__ inline uint32_t CeilTo16(uint32_t n) { return (n + 15) / 16 * 16; }

class MatmulPart {
public:
    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR c, uint32_t m, uint32_t k, uint32_t n)
    {
        rows_ = m / GetBlockNum();
        k_ = k;
        n_ = n;
        aGm_.SetGlobalBuffer((__gm__ half*)a + GetBlockIdx() * rows_ * k, rows_ * k);
        bGm_.SetGlobalBuffer((__gm__ half*)b, k * n);
        cGm_.SetGlobalBuffer((__gm__ float*)c + GetBlockIdx() * rows_ * n, rows_ * n);
        pipe_.InitBuffer(a1_, 1, rows_ * k * sizeof(half));
        pipe_.InitBuffer(b1_, 1, k * n * sizeof(half));
        pipe_.InitBuffer(a2_, 1, rows_ * k * sizeof(half));
        pipe_.InitBuffer(b2_, 1, k * n * sizeof(half));
        pipe_.InitBuffer(c1_, 1, rows_ * n * sizeof(float));
    }

    __aicore__ inline void Process()
    {
        // GM -> L1 in the Nz layout.
        LocalTensor<half> a1 = a1_.AllocTensor<half>();
        DataCopy(a1, aGm_, Nd2NzParams(1, rows_, k_, 0, k_, CeilTo16(rows_), 1, 0));
        a1_.EnQue(a1);
        LocalTensor<half> b1 = b1_.AllocTensor<half>();
        DataCopy(b1, bGm_, Nd2NzParams(1, k_, n_, 0, n_, CeilTo16(k_), 1, 0));
        b1_.EnQue(b1);

        // L1 -> L0A (Zz) and L0B (Zn: each fractal transposed on the way).
        uint32_t m1 = CeilTo16(rows_) / 16;
        uint32_t k1 = k_ / 16;
        uint32_t n1 = n_ / 16;
        a1 = a1_.DeQue<half>();
        LocalTensor<half> a2 = a2_.AllocTensor<half>();
        for (uint32_t i = 0; i < m1; ++i) {
            LoadData(a2[i * k1 * 256], a1[i * 256], LoadData2DParams(0, k1, m1, 0, 0, false, 0));
        }
        a2_.EnQue(a2);
        a1_.FreeTensor(a1);
        b1 = b1_.DeQue<half>();
        LocalTensor<half> b2 = b2_.AllocTensor<half>();
        for (uint32_t j = 0; j < k1; ++j) {
            LoadData(b2[j * n1 * 256], b1[j * 256], LoadData2DParams(0, n1, k1, 0, 0, true, 0));
        }
        b2_.EnQue(b2);
        b1_.FreeTensor(b1);

        a2 = a2_.DeQue<half>();
        b2 = b2_.DeQue<half>();
        LocalTensor<float> c = c1_.AllocTensor<float>();
        Mmad(c, a2, b2, MmadParams(rows_, n_, k_, 0, false, true));
        a2_.FreeTensor(a2);
        b2_.FreeTensor(b2);
        c1_.EnQue(c);
        c = c1_.DeQue<float>();
        FixpipeParamsV220 params(n_, rows_, CeilTo16(rows_), n_, false);
        params.quantPre = QuantMode_t::NoQuant;
        Fixpipe<float, float, CFG_ROW_MAJOR>(cGm_, c, params);
        c1_.FreeTensor(c);
    }

private:
    TPipe pipe_;
    TQue<TPosition::A1, 1> a1_;
    TQue<TPosition::B1, 1> b1_;
    TQue<TPosition::A2, 1> a2_;
    TQue<TPosition::B2, 1> b2_;
    TQue<TPosition::CO1, 1> c1_;
    GlobalTensor<half> aGm_;
    GlobalTensor<half> bGm_;
    GlobalTensor<float> cGm_;
    uint32_t rows_ = 0;
    uint32_t k_ = 0;
    uint32_t n_ = 0;
};

class ReluPart {
public:
    // Vector core GetBlockIdx() takes half of its AI core's rows.
    __aicore__ inline void Init(GM_ADDR c, GM_ADDR out, uint32_t m, uint32_t n)
    {
        uint32_t rows = m / GetBlockNum() / GetTaskRatio();
        length_ = rows * n;
        cGm_.SetGlobalBuffer((__gm__ float*)c + GetBlockIdx() * length_, length_);
        outGm_.SetGlobalBuffer((__gm__ float*)out + GetBlockIdx() * length_, length_);
        pipe_.InitBuffer(inQueue_, 1, length_ * sizeof(float));
        pipe_.InitBuffer(outQueue_, 1, length_ * sizeof(float));
    }

    __aicore__ inline void Process()
    {
        LocalTensor<float> in = inQueue_.AllocTensor<float>();
        DataCopy(in, cGm_, length_);
        inQueue_.EnQue(in);
        in = inQueue_.DeQue<float>();
        LocalTensor<float> res = outQueue_.AllocTensor<float>();
        Relu(res, in, length_);
        outQueue_.EnQue(res);
        inQueue_.FreeTensor(in);
        res = outQueue_.DeQue<float>();
        DataCopy(outGm_, res, length_);
        outQueue_.FreeTensor(res);
    }

private:
    TPipe pipe_;
    TQue<TPosition::VECIN, 1> inQueue_;
    TQue<TPosition::VECOUT, 1> outQueue_;
    GlobalTensor<float> cGm_;
    GlobalTensor<float> outGm_;
    uint32_t length_ = 0;
};

extern "C" __global__ __aicore__ void matmul_relu(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR out, uint32_t m,
                                                  uint32_t k, uint32_t n)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    if ASCEND_IS_AIC {
        MatmulPart mm;
        mm.Init(a, b, c, m, k, n);
        mm.Process();
        CrossCoreSetFlag<2, PIPE_FIX>(CUBE_DONE);
        CrossCoreWaitFlag<2, PIPE_FIX>(VECTOR_DONE);
    }
    if ASCEND_IS_AIV {
        CrossCoreWaitFlag<2, PIPE_MTE2>(CUBE_DONE);
        ReluPart relu;
        relu.Init(c, out, m, n);
        relu.Process();
        CrossCoreSetFlag<2, PIPE_MTE3>(VECTOR_DONE);
    }
}
