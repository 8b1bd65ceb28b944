// y = x * scale + bias, tile by tile, the tiles dealt round-robin to the
// blocks: a vendor-style kernel whose sizes and scalars arrive in a tiling
// struct passed by value, and whose tensors are typed `__gm__ float*`.
// Two entries: the struct last (the vendor's usual order) or first.
#include "kernel_operator.h"
#include "tiled_scale_tiling.h"

namespace {

__aicore__ inline void ScaleTiles(__gm__ float* x, __gm__ float* y, const ScaleTilingData& tiling)
{
    AscendC::GlobalTensor<float> xGm;
    AscendC::GlobalTensor<float> yGm;
    xGm.SetGlobalBuffer(x, tiling.totalLength);
    yGm.SetGlobalBuffer(y, tiling.totalLength);
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, tiling.tileLength * sizeof(float));
    AscendC::LocalTensor<float> t = buf.Get<float>();
    const uint32_t tiles = tiling.totalLength / tiling.tileLength;
    for (uint32_t i = AscendC::GetBlockIdx(); i < tiles; i += AscendC::GetBlockNum()) {
        const uint32_t off = i * tiling.tileLength;
        AscendC::DataCopy(t, xGm[off], tiling.tileLength);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
        AscendC::Muls(t, t, tiling.scale, tiling.tileLength);
        AscendC::Adds(t, t, static_cast<float>(tiling.bias), tiling.tileLength);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
        AscendC::DataCopy(yGm[off], t, tiling.tileLength);
        AscendC::SetFlag<AscendC::HardEvent::MTE3_MTE2>(EVENT_ID0);
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_MTE2>(EVENT_ID0);
    }
}

} // namespace

__global__ __vector__ void tiled_scale(__gm__ float* x, __gm__ float* y, ScaleTilingData tiling)
{
    ScaleTiles(x, y, tiling);
}

__global__ __vector__ void tiled_scale_first(ScaleTilingData tiling, GM_ADDR x, __gm__ float* y)
{
    ScaleTiles(reinterpret_cast<__gm__ float*>(x), y, tiling);
}
