// y = 2 * x + 1, one 64-float row at a time, through one input and one
// output buffer of the Unified Buffer with the flags written by hand. Each
// `which` leaves one synchronisation out (0 keeps them all):
//   1: no MTE2 -> V flag: Muls reads the row before its DataCopy lands
//   2: no V -> MTE3 flag: the copy out reads the row before Adds wrote it
//   3: no V -> MTE2 flag: the next row's DataCopy overwrites the input
//      while Muls may still read it
//   4: a second copy into the same input bytes with no PipeBarrier<PIPE_MTE2>
//   5: the same second copy, with the barrier (correct)
//   6: the scalar unit reads and rewrites element 0 (the compiler orders
//      the scalar unit with V, MTE2 and MTE3 by itself: correct)
//   7: the vector unit first zeroes every other 32-byte block of a third
//      buffer (more ranges than racecheck keeps in its small array), and
//      a DataCopy overwrites the last of them with no V -> MTE2 flag
//   8: the same, with the V -> MTE2 flag (correct)
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void race_rows(GM_ADDR x, GM_ADDR y, uint32_t rows, int32_t which)
{
    constexpr uint32_t COLS = 64;
    GlobalTensor<float> xGm;
    GlobalTensor<float> yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, rows * COLS);
    yGm.SetGlobalBuffer((__gm__ float*)y, rows * COLS);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 2 * COLS * sizeof(float));
    LocalTensor<float> in = buf.Get<float>();
    LocalTensor<float> out = in[COLS];
    if (which == 7 || which == 8) {
        TBuf<TPosition::VECCALC> scattered;
        pipe.InitBuffer(scattered, 80 * 32);
        LocalTensor<float> blocks = scattered.Get<float>();
        for (uint32_t i = 0; i < 80; i += 2) {
            Duplicate(blocks[i * 8], 0.0f, 8);
        }
        if (which == 8) {
            SetFlag<HardEvent::V_MTE2>(EVENT_ID1);
            WaitFlag<HardEvent::V_MTE2>(EVENT_ID1);
        }
        DataCopy(blocks[78 * 8], xGm, 16);
    }
    for (uint32_t r = 0; r < rows; ++r) {
        if (r > 0 && which != 3) {
            WaitFlag<HardEvent::V_MTE2>(EVENT_ID0);
        }
        if (which == 4 || which == 5) {
            DataCopy(in, xGm[r * COLS], COLS / 2);
            if (which == 5) {
                PipeBarrier<PIPE_MTE2>();
            }
        }
        DataCopy(in, xGm[r * COLS], COLS);
        if (which != 1) {
            SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
            WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
        }
        if (r > 0) {
            WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);
        }
        Muls(out, in, 2.0f, COLS);
        if (r + 1 < rows && which != 3) {
            SetFlag<HardEvent::V_MTE2>(EVENT_ID0);
        }
        Adds(out, out, 1.0f, COLS);
        if (which == 6) {
            out.SetValue(0, in.GetValue(0) * 2.0f + 1.0f);
        }
        if (which != 2) {
            SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
        }
        DataCopy(yGm[r * COLS], out, COLS);
        if (r + 1 < rows) {
            SetFlag<HardEvent::MTE3_V>(EVENT_ID0);
        }
    }
}
