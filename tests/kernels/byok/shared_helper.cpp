// out = 2 * x + offset, through a helper of C linkage, in a source that
// several kernels share (tests/kernels/byok.yaml): its entry is named
// `launch`, as the generated launch shim's own parameter is, and
// `op_helper` and `op_offset` are C-linkage names, one symbol each
// program-wide. pypto-build renames all three in each compiled copy, and
// undefines the names again before its own code.
#include "kernel_operator.h"

extern "C" {
// One symbol program-wide however many copies are compiled: renamed.
float op_offset = 1.0f;
}

extern "C" float op_helper(float v)
{
    return 2.0f * v + op_offset;
}

extern "C" __global__ __aicore__ void launch(GM_ADDR x, GM_ADDR out, uint32_t n)
{
    AscendC::GlobalTensor<float> xGm;
    AscendC::GlobalTensor<float> outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, n);
    outGm.SetGlobalBuffer((__gm__ float*)out, n);
    for (uint32_t i = AscendC::GetBlockIdx(); i < n; i += AscendC::GetBlockNum()) {
        outGm.SetValue(i, op_helper(xGm.GetValue(i)));
    }
}
