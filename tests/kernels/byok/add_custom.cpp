// z = x + y on half data, written the way Ascend C vector samples are: a
// kernel class with a TPipe and double-buffered queues, the element count
// passed by value, and the work dealt to blocks in tiles. Brought to
// pypto-rs unchanged (tests/kernels/byok.yaml binds `total_length` to
// x.numel, so callers never pass it).
#include "kernel_operator.h"

using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;
constexpr uint32_t TILE_LENGTH = 512; // elements per tile

class KernelAdd {
public:
    __aicore__ inline KernelAdd() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t totalLength)
    {
        totalLength_ = totalLength;
        xGm_.SetGlobalBuffer((__gm__ half*)x, totalLength);
        yGm_.SetGlobalBuffer((__gm__ half*)y, totalLength);
        zGm_.SetGlobalBuffer((__gm__ half*)z, totalLength);
        pipe_.InitBuffer(inQueueX_, BUFFER_NUM, TILE_LENGTH * sizeof(half));
        pipe_.InitBuffer(inQueueY_, BUFFER_NUM, TILE_LENGTH * sizeof(half));
        pipe_.InitBuffer(outQueueZ_, BUFFER_NUM, TILE_LENGTH * sizeof(half));
    }

    // Tiles are dealt round-robin: tile t goes to block t % GetBlockNum().
    __aicore__ inline void Process()
    {
        uint32_t tiles = DivCeil(totalLength_, TILE_LENGTH);
        for (uint32_t t = GetBlockIdx(); t < tiles; t += GetBlockNum()) {
            uint32_t offset = t * TILE_LENGTH;
            uint32_t count = totalLength_ - offset < TILE_LENGTH ? totalLength_ - offset : TILE_LENGTH;
            CopyIn(offset, count);
            Compute(count);
            CopyOut(offset, count);
        }
    }

private:
    __aicore__ inline void CopyIn(uint32_t offset, uint32_t count)
    {
        LocalTensor<half> xLocal = inQueueX_.AllocTensor<half>();
        LocalTensor<half> yLocal = inQueueY_.AllocTensor<half>();
        // DataCopyPad moves any byte count; the tail tile is padded to 32 bytes.
        DataCopyExtParams params{1, static_cast<uint32_t>(count * sizeof(half)), 0, 0, 0};
        DataCopyPadExtParams<half> pad{false, 0, 0, 0};
        DataCopyPad(xLocal, xGm_[offset], params, pad);
        DataCopyPad(yLocal, yGm_[offset], params, pad);
        inQueueX_.EnQue(xLocal);
        inQueueY_.EnQue(yLocal);
    }

    __aicore__ inline void Compute(uint32_t count)
    {
        LocalTensor<half> xLocal = inQueueX_.DeQue<half>();
        LocalTensor<half> yLocal = inQueueY_.DeQue<half>();
        LocalTensor<half> zLocal = outQueueZ_.AllocTensor<half>();
        Add(zLocal, xLocal, yLocal, count);
        outQueueZ_.EnQue<half>(zLocal);
        inQueueX_.FreeTensor(xLocal);
        inQueueY_.FreeTensor(yLocal);
    }

    __aicore__ inline void CopyOut(uint32_t offset, uint32_t count)
    {
        LocalTensor<half> zLocal = outQueueZ_.DeQue<half>();
        DataCopyExtParams params{1, static_cast<uint32_t>(count * sizeof(half)), 0, 0, 0};
        DataCopyPad(zGm_[offset], zLocal, params);
        outQueueZ_.FreeTensor(zLocal);
    }

    TPipe pipe_;
    TQue<TPosition::VECIN, BUFFER_NUM> inQueueX_;
    TQue<TPosition::VECIN, BUFFER_NUM> inQueueY_;
    TQue<TPosition::VECOUT, BUFFER_NUM> outQueueZ_;
    GlobalTensor<half> xGm_;
    GlobalTensor<half> yGm_;
    GlobalTensor<half> zGm_;
    uint32_t totalLength_ = 0;
};

extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t totalLength)
{
    KernelAdd op;
    op.Init(x, y, z, totalLength);
    op.Process();
}
