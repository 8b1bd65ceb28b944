// c = a · b + bias on the cube core, the bias through the BiasTable:
// GM -> L1 (MTE2), L1 -> BiasTable (MTE1, DataCopy into C2), then Mmad's
// bias overload adds it to every row. a is [m, k], b is [k, n], each a
// multiple of 16 and at most 128; bias is [n] floats. `which`:
//   0: every synchronisation in place
//   1: no MTE1 -> M flag after the BiasTable copy: Mmad reads the table
//      before it is filled
//   2: the bias 64 bytes into the BiasTable (Mmad needs 128-byte placement)
//   3: Mmad with cmatrixInitVal true beside a bias
//   4: a copy of 1088 bytes into the 1 KiB BiasTable tensor
//   5: Fixpipe with ndNum 2 (not emulated)
// The Fixpipe parameters take the documented 11-argument form.
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void race_bias(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, uint32_t m,
                                                uint32_t k, uint32_t n, int32_t which)
{
    GlobalTensor<half> aGm;
    GlobalTensor<half> bGm;
    GlobalTensor<float> biasGm;
    GlobalTensor<float> cGm;
    aGm.SetGlobalBuffer((__gm__ half*)a, m * k);
    bGm.SetGlobalBuffer((__gm__ half*)b, k * n);
    biasGm.SetGlobalBuffer((__gm__ float*)bias, n);
    cGm.SetGlobalBuffer((__gm__ float*)c, m * n);
    TPipe pipe;
    TBuf<TPosition::A1> a1Buf;
    TBuf<TPosition::B1> b1Buf;
    TBuf<TPosition::C1> bias1Buf;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B2> b2Buf;
    TBuf<TPosition::C2> bias2Buf;
    TBuf<TPosition::CO1> c1Buf;
    pipe.InitBuffer(a1Buf, m * k * sizeof(half));
    pipe.InitBuffer(b1Buf, k * n * sizeof(half));
    pipe.InitBuffer(bias1Buf, 2048);
    pipe.InitBuffer(a2Buf, m * k * sizeof(half));
    pipe.InitBuffer(b2Buf, k * n * sizeof(half));
    pipe.InitBuffer(bias2Buf, 1024);
    pipe.InitBuffer(c1Buf, m * n * sizeof(float));
    LocalTensor<half> a1 = a1Buf.Get<half>();
    LocalTensor<half> b1 = b1Buf.Get<half>();
    LocalTensor<float> bias1 = bias1Buf.Get<float>();
    LocalTensor<half> a2 = a2Buf.Get<half>();
    LocalTensor<half> b2 = b2Buf.Get<half>();
    LocalTensor<float> bias2 = bias2Buf.Get<float>();
    LocalTensor<float> c1 = c1Buf.Get<float>();

    DataCopy(a1, aGm, Nd2NzParams(1, m, k, 0, k, m, 1, 0));
    DataCopy(b1, bGm, Nd2NzParams(1, k, n, 0, n, k, 1, 0));
    DataCopy(bias1, biasGm, n);
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    uint32_t m1 = m / 16;
    uint32_t k1 = k / 16;
    uint32_t n1 = n / 16;
    for (uint32_t i = 0; i < m1; ++i) {
        LoadData(a2[i * k1 * 256], a1[i * 256], LoadData2DParams(0, k1, m1, 0, 0, false, 0));
    }
    for (uint32_t j = 0; j < k1; ++j) {
        LoadData(b2[j * n1 * 256], b1[j * 256], LoadData2DParams(0, n1, k1, 0, 0, true, 0));
    }
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    LocalTensor<float> table = which == 2 ? bias2[16] : bias2;
    uint16_t units = which == 4 ? 17 : static_cast<uint16_t>(n * sizeof(float) / 64);
    DataCopy(table, bias1, DataCopyParams(1, units, 0, 0));
    if (which != 1) {
        SetFlag<HardEvent::MTE1_M>(EVENT_ID1);
        WaitFlag<HardEvent::MTE1_M>(EVENT_ID1);
    }
    Mmad(c1, a2, b2, table, MmadParams(m, n, k, 0, false, which == 3));
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    FixpipeParamsV220 params(n, m, m, n, false, QuantMode_t::NoQuant, 0, which == 5 ? 2 : 1, 0, 0, 0);
    Fixpipe<float, float, CFG_ROW_MAJOR>(cGm, c1, params);
}
