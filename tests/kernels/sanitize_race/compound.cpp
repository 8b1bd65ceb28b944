// y = relu(x + w) (AddRelu), one 64-float row: count-form compound
// instructions read what a DataCopy brings in, so they need the MTE2 -> V
// flag as the simple ones do. Each `which` leaves one synchronisation out
// (0 keeps them all):
//   1: no MTE2 -> V flag after w's copy: AddRelu reads w before it lands
//   2: as 0, but y = x * y + w by FusedMulAdd over y's Duplicate of 2.0
//      (correct)
//   3: as 2 with no MTE2 -> V flag: FusedMulAdd reads w before it lands
//   4: ReduceSum (count form) of w into y[0], no MTE2 -> V flag
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void race_compound(GM_ADDR x, GM_ADDR w, GM_ADDR y, int32_t which)
{
    constexpr uint32_t COLS = 64;
    GlobalTensor<float> xGm, wGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, COLS);
    wGm.SetGlobalBuffer((__gm__ float*)w, COLS);
    yGm.SetGlobalBuffer((__gm__ float*)y, COLS);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 4 * COLS * sizeof(float));
    LocalTensor<float> xs = buf.Get<float>();
    LocalTensor<float> ws = xs[COLS];
    LocalTensor<float> ys = xs[2 * COLS];
    LocalTensor<float> work = xs[3 * COLS];
    DataCopy(xs, xGm, COLS);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    DataCopy(ws, wGm, COLS);
    if (which != 1 && which != 3 && which != 4) {
        SetFlag<HardEvent::MTE2_V>(EVENT_ID1);
        WaitFlag<HardEvent::MTE2_V>(EVENT_ID1);
    }
    if (which == 2 || which == 3) {
        Duplicate(ys, 2.0f, COLS);
        FusedMulAdd(ys, xs, ws, COLS);
    } else if (which == 4) {
        Duplicate(ys, 0.0f, COLS);
        ReduceSum(ys, ws, work, COLS);
    } else {
        AddRelu(ys, xs, ws, COLS);
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(yGm, ys, COLS);
}
