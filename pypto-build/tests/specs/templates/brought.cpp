// A kernel brought as Ascend C, for the spec checker's tests.
#include "kernel_operator.h"

extern "C" __global__ __aicore__ void scale_kernel(GM_ADDR x, GM_ADDR y, uint32_t n, float s)
{
    (void)x;
    (void)y;
    (void)n;
    (void)s;
}
