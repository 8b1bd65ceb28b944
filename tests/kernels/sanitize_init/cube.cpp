// a is [batch, 16, 32] (half), w [32, 16] (half), c [batch, 16, 16]
// (float); block i multiplies batches i, i + blocks, ..., K in two Mmads
// of 16 when `which` is 1 or -1.
//   0: one Mmad over K = 32 with cmatrixInitVal true
//   1: both Mmads accumulate (cmatrixInitVal false) into an L0C that
//      nothing initialised: the bug initcheck reports
//  -1: the first Mmad initialises L0C, the second accumulates (fixed)
//   2: only a's first 7 rows are copied in (rows 7-15 of each fractal of
//      L1, and then of L0A, hold nothing); one Mmad with m = 7 uses only
//      what was written, and c's rows 7-15 are left alone
//   3: the same copy, but the Mmad multiplies all 16 rows: the bug
//      initcheck reports
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void sanitize_init_cube(GM_ADDR a, GM_ADDR w, int32_t which, GM_ADDR c,
                                                         uint32_t batch)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    constexpr uint32_t M = 16, K = 32, N = 16;
    constexpr uint32_t FRACTAL = 256; // 16 x 16 halves
    GlobalTensor<half> aGm, wGm;
    GlobalTensor<float> cGm;
    aGm.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a), batch * M * K);
    wGm.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(w), K * N);
    cGm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c), batch * M * N);
    TPipe pipe;
    TQue<TPosition::A1, 1> a1Queue;
    TQue<TPosition::B1, 1> b1Queue;
    TQue<TPosition::A2, 1> a2Queue;
    TQue<TPosition::B2, 1> b2Queue;
    TQue<TPosition::CO1, 1> c1Queue;
    pipe.InitBuffer(a1Queue, 1, M * K * sizeof(half));
    pipe.InitBuffer(b1Queue, 1, K * N * sizeof(half));
    pipe.InitBuffer(a2Queue, 1, M * K * sizeof(half));
    pipe.InitBuffer(b2Queue, 1, K * N * sizeof(half));
    pipe.InitBuffer(c1Queue, 1, M * N * sizeof(float));

    for (uint64_t b = GetBlockIdx(); b < batch; b += GetBlockNum()) {
        // GM -> L1 in Nz: a as two 16 x 16 column blocks, w as one 32-row column block.
        LocalTensor<half> a1 = a1Queue.AllocTensor<half>();
        uint32_t rows = which == 2 || which == 3 ? 7 : M;
        DataCopy(a1, aGm[b * M * K], Nd2NzParams(1, rows, K, 0, K, M, 1, 0));
        a1Queue.EnQue(a1);
        LocalTensor<half> b1 = b1Queue.AllocTensor<half>();
        DataCopy(b1, wGm, Nd2NzParams(1, K, N, 0, N, K, 1, 0));
        b1Queue.EnQue(b1);

        // L1 -> L0A (Zz) and L0B (Zn, each fractal transposed).
        a1 = a1Queue.DeQue<half>();
        LocalTensor<half> a2 = a2Queue.AllocTensor<half>();
        LoadData(a2, a1, LoadData2DParams(0, K / 16, 1, 0, 0, false, 0));
        a2Queue.EnQue(a2);
        a1Queue.FreeTensor(a1);
        b1 = b1Queue.DeQue<half>();
        LocalTensor<half> b2 = b2Queue.AllocTensor<half>();
        LoadData(b2, b1, LoadData2DParams(0, K / 16, 1, 0, 0, true, 0));
        b2Queue.EnQue(b2);
        b1Queue.FreeTensor(b1);

        a2 = a2Queue.DeQue<half>();
        b2 = b2Queue.DeQue<half>();
        LocalTensor<float> c1 = c1Queue.AllocTensor<float>();
        if (which == 0 || which == 2 || which == 3) {
            Mmad(c1, a2, b2, MmadParams(which == 2 ? rows : M, N, K, 0, false, true));
        } else {
            // K fractal kb of A is a2[kb * FRACTAL], of B is b2[kb * FRACTAL].
            Mmad(c1, a2, b2, MmadParams(M, N, 16, 0, false, which == -1));
            PipeBarrier<PIPE_M>();
            Mmad(c1, a2[FRACTAL], b2[FRACTAL], MmadParams(M, N, 16, 0, false, false));
        }
        a2Queue.FreeTensor(a2);
        b2Queue.FreeTensor(b2);
        c1Queue.EnQue(c1);
        c1 = c1Queue.DeQue<float>();
        FixpipeParamsV220 params(N, which == 2 ? rows : M, M, N, false);
        params.quantPre = QuantMode_t::NoQuant;
        Fixpipe<float, float, CFG_ROW_MAJOR>(cGm[b * M * N], c1, params);
        c1Queue.FreeTensor(c1);
    }
}
