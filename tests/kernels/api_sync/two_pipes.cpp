// y = 2 * x + 1 in two stages, each with a TPipe of its own, as kernels
// that change their buffer layout between stages do (the TPipe page: only
// one TPipe may exist at a time, so Destroy the first before the second):
//   stage 1: y = 2 * x through a VECIN and a VECOUT queue (UB bytes
//            [0, 1024) and [1024, 2048));
//   stage 2: y = y + 1 in place in one TBuf (UB bytes [0, 1024) again),
//            the pipes synchronised by hand.
// The second pipe's buffers reuse bytes the first pipe's pipes were still
// using; TPipe::Destroy ends with PipeBarrier<PIPE_ALL>, which orders them
// (and orders stage 2's reads of y in global memory after stage 1's writes).
// `which` picks how the first pipe goes:
//   0: Destroy();
//   1: DestroyWithoutPipeAll() and nothing else: a race;
//   2: DestroyWithoutPipeAll() and a PipeBarrier<PIPE_ALL>() by hand;
//   3: each pipe a local of its stage's scope: the destructor runs Destroy.
// Block b takes tiles b, b + GetBlockNum(), ...; n is a multiple of 8.
#include "kernel_operator.h"

using namespace AscendC;

constexpr uint32_t TILE = 256;

class Scale {
public:
    __aicore__ inline void Run(TPipe& pipe, GM_ADDR x, GM_ADDR y, uint32_t n)
    {
        xGm_.SetGlobalBuffer((__gm__ float*)x, n);
        yGm_.SetGlobalBuffer((__gm__ float*)y, n);
        pipe.InitBuffer(in_, 1, TILE * sizeof(float));
        pipe.InitBuffer(out_, 1, TILE * sizeof(float));
        for (uint32_t off = GetBlockIdx() * TILE; off < n; off += GetBlockNum() * TILE) {
            uint32_t len = n - off < TILE ? n - off : TILE;
            LocalTensor<float> in = in_.AllocTensor<float>();
            DataCopy(in, xGm_[off], len);
            in_.EnQue(in);
            in = in_.DeQue<float>();
            LocalTensor<float> out = out_.AllocTensor<float>();
            Muls(out, in, 2.0f, len);
            out_.EnQue(out);
            in_.FreeTensor(in);
            out = out_.DeQue<float>();
            DataCopy(yGm_[off], out, len);
            out_.FreeTensor(out);
        }
    }

private:
    TQue<TPosition::VECIN, 1> in_;
    TQue<TPosition::VECOUT, 1> out_;
    GlobalTensor<float> xGm_;
    GlobalTensor<float> yGm_;
};

class Offset {
public:
    __aicore__ inline void Run(TPipe& pipe, GM_ADDR y, uint32_t n)
    {
        yGm_.SetGlobalBuffer((__gm__ float*)y, n);
        pipe.InitBuffer(buf_, TILE * sizeof(float));
        LocalTensor<float> t = buf_.Get<float>();
        for (uint32_t off = GetBlockIdx() * TILE; off < n; off += GetBlockNum() * TILE) {
            uint32_t len = n - off < TILE ? n - off : TILE;
            if (off != GetBlockIdx() * TILE) {
                WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
            }
            DataCopy(t, yGm_[off], len);
            SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
            WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
            Adds(t, t, 1.0f, len);
            SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
            DataCopy(yGm_[off], t, len);
            if (off + GetBlockNum() * TILE < n) {
                SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
            }
        }
    }

private:
    TBuf<TPosition::VECCALC> buf_;
    GlobalTensor<float> yGm_;
};

extern "C" __global__ __aicore__ void two_pipes(GM_ADDR x, GM_ADDR y, uint32_t n, int32_t which)
{
    if (which == 3) {
        {
            TPipe first;
            Scale scale;
            scale.Run(first, x, y, n);
        }
        {
            TPipe second;
            Offset offset;
            offset.Run(second, y, n);
        }
        return;
    }
    Scale scale;
    Offset offset;
    TPipe first;
    scale.Run(first, x, y, n);
    if (which == 0) {
        first.Destroy();
    } else {
        first.DestroyWithoutPipeAll();
        if (which == 2) {
            PipeBarrier<PIPE_ALL>();
        }
    }
    TPipe second;
    offset.Run(second, y, n);
}
