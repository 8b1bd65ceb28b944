// A brought source whose entry takes a tiling struct by value.
#include "kernel_operator.h"

struct TiledData {
    uint32_t n;
    float s;
};

extern "C" __global__ __aicore__ void tiled_kernel(GM_ADDR x, GM_ADDR y, TiledData tiling)
{
    (void)x;
    (void)y;
    (void)tiling;
}
