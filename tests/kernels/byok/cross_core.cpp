// Which core is which in a mixed kernel, and what happens when cross-core
// flags are misused. Each core records GetBlockIdx() * 100 +
// GetSubBlockIdx() * 10 + GetTaskRatio() at out[3 * block + core] (core 0
// the cube core, 1 and 2 the vector cores), then, by `which`:
//   0: the cube core and both vector cores hand a flag round (mode 2 both
//      ways, mode 1 between the vector cores);
//   1: the cube core waits for a mode-2 flag only vector core 0 sets;
//   2: vector core 1 waits for a mode-1 flag no core sets;
//   3: vector core 0 sets a mode-0 flag (a barrier across every block's
//      vector cores);
//   4: the cube core sets a mode-2 flag no vector core waits for;
//   5: the vector cores set a mode-2 flag and the cube core waits for it
//      with mode 1 (Atlas A2/A3 ignore a wait's mode).
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void cross_core(GM_ADDR out, int32_t which)
{
    GlobalTensor<int32_t> outGm;
    outGm.SetGlobalBuffer((__gm__ int32_t*)out, 6);
    int64_t block = ASCEND_IS_AIC ? GetBlockIdx() : GetBlockIdx() / GetTaskRatio();
    int64_t core = ASCEND_IS_AIC ? 0 : 1 + GetSubBlockIdx();
    outGm.SetValue(3 * block + core, GetBlockIdx() * 100 + GetSubBlockIdx() * 10 + GetTaskRatio());
    if (which == 0) {
        if ASCEND_IS_AIC {
            CrossCoreSetFlag<2, PIPE_FIX>(1);
            CrossCoreWaitFlag<2, PIPE_FIX>(2);
        }
        if ASCEND_IS_AIV {
            CrossCoreWaitFlag<2, PIPE_V>(1);
            CrossCoreSetFlag<1, PIPE_V>(3);
            CrossCoreWaitFlag<1, PIPE_V>(3);
            CrossCoreSetFlag<2, PIPE_MTE3>(2);
        }
    } else if (which == 1) {
        if ASCEND_IS_AIC {
            CrossCoreWaitFlag<2, PIPE_FIX>(7);
        }
        if (ASCEND_IS_AIV && GetSubBlockIdx() == 0) {
            CrossCoreSetFlag<2, PIPE_MTE3>(7);
        }
    } else if (which == 2) {
        if (ASCEND_IS_AIV && GetSubBlockIdx() == 1) {
            CrossCoreWaitFlag<1, PIPE_V>(2);
        }
    } else if (which == 3) {
        if (ASCEND_IS_AIV && GetSubBlockIdx() == 0) {
            CrossCoreSetFlag<0, PIPE_V>(4);
            CrossCoreWaitFlag(4);
        }
    } else if (which == 4) {
        if ASCEND_IS_AIC {
            CrossCoreSetFlag<2, PIPE_FIX>(6);
        }
    } else if (which == 5) {
        if ASCEND_IS_AIV {
            CrossCoreSetFlag<2, PIPE_MTE3>(9);
        }
        if ASCEND_IS_AIC {
            CrossCoreWaitFlag<1, PIPE_FIX>(9);
        }
    }
}
