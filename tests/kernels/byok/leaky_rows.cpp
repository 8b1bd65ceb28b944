// out = LeakyRelu(x, alpha) + 1 row by row, in the style of low-level
// Ascend C vector kernels: buffers carved out with LocalMemAllocator,
// pipes ordered by hand with SetFlag/WaitFlag on HardEvents, and the
// mask/repeat forms of the vector instructions (a normal-mode mask with a
// repeat count, then a counter-mode mask). One row per block turn; the
// row count and width arrive by value (bound to x.0 and x.1 in the spec).
#include "kernel_operator.h"

constexpr uint32_t MAX_COLS = 8192; // floats of one row in the Unified Buffer

extern "C" __global__ __aicore__ void leaky_rows(GM_ADDR x, GM_ADDR out, float alpha, uint32_t rows,
                                                 uint32_t cols)
{
    AscendC::InitSocState();
    AscendC::GlobalTensor<float> xGm;
    AscendC::GlobalTensor<float> outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, static_cast<uint64_t>(rows) * cols);
    outGm.SetGlobalBuffer((__gm__ float*)out, static_cast<uint64_t>(rows) * cols);
    AscendC::LocalMemAllocator<AscendC::Hardware::UB> ub;
    AscendC::LocalTensor<float> in = ub.Alloc<AscendC::TPosition::VECIN, float, MAX_COLS>();
    AscendC::LocalTensor<float> res = ub.Alloc<AscendC::TPosition::VECOUT, float, MAX_COLS>();

    // 64 floats per 256-byte repeat; cols is a multiple of 64 (the spec's caller's promise).
    uint8_t repeats = static_cast<uint8_t>(cols / 64);
    AscendC::UnaryRepeatParams contiguous(1, 1, 8, 8);
    bool first = true;
    for (uint32_t row = AscendC::GetBlockIdx(); row < rows; row += AscendC::GetBlockNum()) {
        if (!first) {
            // The previous row's copy out must leave `res` before V writes it again,
            // and V must be done with `in` before MTE2 refills it.
            AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(EVENT_ID1);
            AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(EVENT_ID2);
        }
        first = false;
        AscendC::DataCopy(in, xGm[static_cast<uint64_t>(row) * cols], cols);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);

        // Normal mode: all 64 lanes of every repeat.
        AscendC::LeakyRelu<float, true>(res, in, alpha, 64, repeats, contiguous);
        AscendC::PipeBarrier<PIPE_V>();
        // Counter mode: exactly `cols` elements, whatever the repeat count.
        AscendC::SetMaskCount();
        AscendC::SetVectorMask<float, AscendC::MaskMode::COUNTER>(0, cols);
        AscendC::Adds<float, false>(res, res, 1.0f, AscendC::MASK_PLACEHOLDER, 1, contiguous);
        AscendC::SetMaskNorm();
        AscendC::ResetMask();
        AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(EVENT_ID2);

        AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
        AscendC::DataCopy(outGm[static_cast<uint64_t>(row) * cols], res, cols);
        AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(EVENT_ID1);
    }
    if (!first) {
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(EVENT_ID1);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(EVENT_ID2);
    }
}
