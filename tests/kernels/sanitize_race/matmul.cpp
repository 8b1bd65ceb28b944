// c = a · b on the cube core with static buffers at each position and the
// flags written by hand: GM -> L1 (MTE2, Nd2Nz), L1 -> L0A/L0B (MTE1,
// LoadData), Mmad (M), L0C -> GM (FIX, Fixpipe). a is [m, k], b is
// [k, n], each a multiple of 16 and at most 128. Each `which` leaves one
// synchronisation out (0 keeps them all):
//   1: no MTE2 -> MTE1 flag: LoadData reads L1 before the copy in lands
//   2: no MTE1 -> M flag: Mmad reads L0A/L0B before LoadData filled them
//   3: no M -> FIX flag: Fixpipe reads L0C before Mmad wrote it
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void race_matmul(GM_ADDR a, GM_ADDR b, GM_ADDR c, uint32_t m, uint32_t k,
                                                  uint32_t n, int32_t which)
{
    GlobalTensor<half> aGm;
    GlobalTensor<half> bGm;
    GlobalTensor<float> cGm;
    aGm.SetGlobalBuffer((__gm__ half*)a, m * k);
    bGm.SetGlobalBuffer((__gm__ half*)b, k * n);
    cGm.SetGlobalBuffer((__gm__ float*)c, m * n);
    TPipe pipe;
    TBuf<TPosition::A1> a1Buf;
    TBuf<TPosition::B1> b1Buf;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B2> b2Buf;
    TBuf<TPosition::CO1> c1Buf;
    pipe.InitBuffer(a1Buf, m * k * sizeof(half));
    pipe.InitBuffer(b1Buf, k * n * sizeof(half));
    pipe.InitBuffer(a2Buf, m * k * sizeof(half));
    pipe.InitBuffer(b2Buf, k * n * sizeof(half));
    pipe.InitBuffer(c1Buf, m * n * sizeof(float));
    LocalTensor<half> a1 = a1Buf.Get<half>();
    LocalTensor<half> b1 = b1Buf.Get<half>();
    LocalTensor<half> a2 = a2Buf.Get<half>();
    LocalTensor<half> b2 = b2Buf.Get<half>();
    LocalTensor<float> c1 = c1Buf.Get<float>();

    DataCopy(a1, aGm, Nd2NzParams(1, m, k, 0, k, m, 1, 0));
    DataCopy(b1, bGm, Nd2NzParams(1, k, n, 0, n, k, 1, 0));
    if (which != 1) {
        SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    }
    uint32_t m1 = m / 16;
    uint32_t k1 = k / 16;
    uint32_t n1 = n / 16;
    for (uint32_t i = 0; i < m1; ++i) {
        LoadData(a2[i * k1 * 256], a1[i * 256], LoadData2DParams(0, k1, m1, 0, 0, false, 0));
    }
    for (uint32_t j = 0; j < k1; ++j) {
        LoadData(b2[j * n1 * 256], b1[j * 256], LoadData2DParams(0, n1, k1, 0, 0, true, 0));
    }
    if (which != 2) {
        SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
        WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    }
    Mmad(c1, a2, b2, MmadParams(m, n, k, 0, false, true));
    if (which != 3) {
        SetFlag<HardEvent::M_FIX>(EVENT_ID0);
        WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    }
    FixpipeParamsV220 params(n, m, m, n, false);
    params.quantPre = QuantMode_t::NoQuant;
    Fixpipe<float, float, CFG_ROW_MAJOR>(cGm, c1, params);
    // The inputs of a next product, loaded over this one's without waiting:
    // 4 (no M -> MTE1 flag) refills L0A while Mmad still reads it, 5 (no
    // MTE1 -> MTE2 flag) refills L1 while LoadData still reads it.
    if (which == 4) {
        LoadData(a2, a1, LoadData2DParams(0, k1, m1, 0, 0, false, 0));
    }
    if (which == 5) {
        DataCopy(a1, aGm, Nd2NzParams(1, m, k, 0, k, m, 1, 0));
    }
}
