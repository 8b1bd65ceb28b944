// A templated entry, for the spec tests.
#include "kernel_operator.h"

template <typename T, uint32_t N>
__global__ __vector__ void twice(GM_ADDR x, GM_ADDR y)
{
    (void)x;
    (void)y;
}
