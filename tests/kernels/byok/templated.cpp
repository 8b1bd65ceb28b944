// y = 2x + OFFSET on T data, T and OFFSET template parameters of the
// entry, as vendor samples write templated `__global__ __vector__` entries;
// the element count comes by value. Like many vendor sources it includes
// standard headers of its own, which the host backend includes ahead of
// the namespace it wraps a source in.
#include <iostream>
#include <string>

#include "kernel_operator.h"

template <typename T, uint32_t OFFSET>
__global__ __vector__ void twice_plus(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    constexpr uint32_t tile = 256 / sizeof(T) * 4;
    AscendC::GlobalTensor<T> xGm;
    AscendC::GlobalTensor<T> yGm;
    xGm.SetGlobalBuffer((__gm__ T*)x, n);
    yGm.SetGlobalBuffer((__gm__ T*)y, n);
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, tile * sizeof(T));
    AscendC::LocalTensor<T> t = buf.Get<T>();
    for (uint32_t off = AscendC::GetBlockIdx() * tile; off < n; off += AscendC::GetBlockNum() * tile) {
        uint32_t count = n - off < tile ? n - off : tile;
        AscendC::DataCopyExtParams params{1, static_cast<uint32_t>(count * sizeof(T)), 0, 0, 0};
        AscendC::DataCopyPad(t, xGm[off], params, AscendC::DataCopyPadExtParams<T>{false, 0, 0, 0});
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
        AscendC::Muls(t, t, static_cast<T>(2), count);
        AscendC::Adds(t, t, static_cast<T>(OFFSET), count);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
        AscendC::DataCopyPad(yGm[off], t, params);
        AscendC::SetFlag<AscendC::HardEvent::MTE3_MTE2>(EVENT_ID0);
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_MTE2>(EVENT_ID0);
    }
}
