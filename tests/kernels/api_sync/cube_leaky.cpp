// out = LeakyRelu(a · b, alpha), a mixed kernel written as the vendor's
// basic-API fusion samples for Atlas A2/A3 write it: static tensors from
// LocalMemAllocator, the pipes of each core synchronised by hand, and the
// cross-core hand-off as those samples have it: the cube core (AIC) sets
// with mode 2 (CrossCoreSetFlag<0x2, PIPE_FIX>) and the vector cores (AIV)
// wait with the default mode (CrossCoreWaitFlag(id)); Atlas A2/A3 ignore a
// wait's mode. The vector cores then report back the same way (mode-2 sets,
// a default-mode wait on the cube core), so the cube core ends last.
//
// Block b's cube core multiplies rows [b * rows, (b + 1) * rows) of a
// (half, [m, k]) by b (half, [k, n]) into c (float, global memory); each of
// its vector cores takes half of those rows of c and writes them,
// LeakyRelu'd, to out. rows = m / GetBlockNum() is a multiple of 16; k and
// n are multiples of 16, each at most 128.
#include "kernel_operator.h"

using namespace AscendC;

constexpr uint16_t C_READY = 0;
constexpr uint16_t OUT_DONE = 5;

__aicore__ inline void CubePart(GM_ADDR a, GM_ADDR b, GM_ADDR c, uint32_t rows, uint32_t k, uint32_t n)
{
    GlobalTensor<half> aGm;
    GlobalTensor<half> bGm;
    GlobalTensor<float> cGm;
    aGm.SetGlobalBuffer((__gm__ half*)a + GetBlockIdx() * rows * k, rows * k);
    bGm.SetGlobalBuffer((__gm__ half*)b, k * n);
    cGm.SetGlobalBuffer((__gm__ float*)c + GetBlockIdx() * rows * n, rows * n);

    LocalMemAllocator<Hardware::L1> l1;
    LocalMemAllocator<Hardware::L0A> l0a;
    LocalMemAllocator<Hardware::L0B> l0b;
    LocalMemAllocator<Hardware::L0C> l0c;
    LocalTensor<half> a1 = l1.Alloc<half>(rows * k);
    LocalTensor<half> b1 = l1.Alloc<half>(k * n);
    LocalTensor<half> a2 = l0a.Alloc<half>(rows * k);
    LocalTensor<half> b2 = l0b.Alloc<half>(k * n);
    LocalTensor<float> c1 = l0c.Alloc<float>(rows * n);

    DataCopy(a1, aGm, Nd2NzParams(1, rows, k, 0, k, rows, 1, 0));
    DataCopy(b1, bGm, Nd2NzParams(1, k, n, 0, n, k, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    uint32_t m1 = rows / 16;
    uint32_t k1 = k / 16;
    uint32_t n1 = n / 16;
    for (uint32_t i = 0; i < m1; ++i) {
        LoadData(a2[i * k1 * 256], a1[i * 256], LoadData2DParams(0, k1, m1, 0, 0, false, 0));
    }
    for (uint32_t j = 0; j < k1; ++j) {
        LoadData(b2[j * n1 * 256], b1[j * 256], LoadData2DParams(0, n1, k1, 0, 0, true, 0));
    }
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    Mmad(c1, a2, b2, MmadParams(rows, n, k, 0, false, true));
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    FixpipeParamsV220 params(n, rows, rows, n, false);
    params.quantPre = QuantMode_t::NoQuant;
    Fixpipe<float, float, CFG_ROW_MAJOR>(cGm, c1, params);
    // c is in global memory: tell both vector cores of this AI core.
    CrossCoreSetFlag<0x2, PIPE_FIX>(C_READY);
    CrossCoreWaitFlag(OUT_DONE);
}

__aicore__ inline void VectorPart(GM_ADDR c, GM_ADDR out, uint32_t rows, uint32_t n, float alpha)
{
    // Vector core GetBlockIdx() (2 per AI core) takes half of its AI core's rows.
    uint32_t length = rows / GetTaskRatio() * n;
    GlobalTensor<float> cGm;
    GlobalTensor<float> outGm;
    cGm.SetGlobalBuffer((__gm__ float*)c + GetBlockIdx() * length, length);
    outGm.SetGlobalBuffer((__gm__ float*)out + GetBlockIdx() * length, length);
    LocalMemAllocator<Hardware::UB> ub;
    LocalTensor<float> t = ub.Alloc<float>(length);

    CrossCoreWaitFlag(C_READY);
    DataCopy(t, cGm, length);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    LeakyRelu(t, t, alpha, length);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(outGm, t, length);
    CrossCoreSetFlag<0x2, PIPE_MTE3>(OUT_DONE);
}

extern "C" __global__ __aicore__ void cube_leaky(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR out, uint32_t m,
                                                 uint32_t k, uint32_t n, float alpha)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    InitSocState();
    uint32_t rows = m / GetBlockNum();
    if ASCEND_IS_AIC {
        CubePart(a, b, c, rows, k, n);
    }
    if ASCEND_IS_AIV {
        VectorPart(c, out, rows, n, alpha);
    }
    PipeBarrier<PIPE_ALL>();
}
