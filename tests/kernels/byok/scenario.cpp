// y = f(x) on float data, the function chosen at compile time by a
// scenario number, as vendor samples choose theirs: SCENARIO_NUM 1 (the
// default when nothing defines it) adds 1, 2 doubles, 3 squares. The entry
// is a plain `__global__ __vector__` function, not `extern "C"`, and its
// element type may come from a macro too (VALUE_T, default float).
#include "kernel_operator.h"

#ifndef SCENARIO_NUM
#define SCENARIO_NUM 1
#endif
#ifndef VALUE_T
#define VALUE_T float
#endif

namespace {
constexpr uint32_t TILE = 256; // elements per tile
}

__global__ __vector__ void scenario_kernel(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    AscendC::GlobalTensor<VALUE_T> xGm;
    AscendC::GlobalTensor<VALUE_T> yGm;
    xGm.SetGlobalBuffer((__gm__ VALUE_T*)x, n);
    yGm.SetGlobalBuffer((__gm__ VALUE_T*)y, n);
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, TILE * sizeof(VALUE_T));
    AscendC::LocalTensor<VALUE_T> t = buf.Get<VALUE_T>();
    for (uint32_t off = AscendC::GetBlockIdx() * TILE; off < n; off += AscendC::GetBlockNum() * TILE) {
        uint32_t count = n - off < TILE ? n - off : TILE;
        AscendC::DataCopyExtParams params{1, static_cast<uint32_t>(count * sizeof(VALUE_T)), 0, 0, 0};
        AscendC::DataCopyPad(t, xGm[off], params, AscendC::DataCopyPadExtParams<VALUE_T>{false, 0, 0, 0});
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
        if constexpr (SCENARIO_NUM == 1) {
            AscendC::Adds(t, t, static_cast<VALUE_T>(1), count);
        } else if constexpr (SCENARIO_NUM == 2) {
            AscendC::Muls(t, t, static_cast<VALUE_T>(2), count);
        } else {
            AscendC::Mul(t, t, t, count);
        }
        AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
        AscendC::DataCopyPad(yGm[off], t, params);
        AscendC::SetFlag<AscendC::HardEvent::MTE3_MTE2>(EVENT_ID0);
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_MTE2>(EVENT_ID0);
    }
}
