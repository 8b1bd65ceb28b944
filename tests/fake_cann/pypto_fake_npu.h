// FAKE NPU kernel launch for the pypto-rs test toolkit; NOT part of CANN.
// The fake bisheng rewrites `k<<<blocks, l2ctrl, stream>>>(args...)` into
// `pypto_fake_npu::launch(k, blocks, l2ctrl, stream)(args...)`, which runs
// every block on the calling thread through the host emulation, with each
// argument's bounds taken from the fake runtime's allocations.
#pragma once

#include "kernel_operator.h"

extern "C" {
// 0 and the allocation's size when `ptr` starts one; non-zero otherwise.
int pypto_fake_acl_allocation_bytes(const void* ptr, uint64_t* bytes);
// 0 to run the launch; non-zero when a failure was injected (already
// recorded on the stream).
int pypto_fake_acl_launch_begin(void* stream);
// Records a failed block on the stream, reported at synchronisation.
void pypto_fake_acl_kernel_failed(void* stream, uint32_t block, const char* message);
}

namespace pypto_fake_npu {

template <typename Kernel>
struct Launch {
    Kernel* kernel;
    uint32_t blocks;
    void* stream;

    template <typename... Args>
    void operator()(Args... args) const
    {
        if (pypto_fake_acl_launch_begin(stream) != 0) {
            return;
        }
        constexpr uint32_t n = sizeof...(Args);
        void* ptrs[n] = {static_cast<void*>(args)...};
        uint64_t bytes[n];
        for (uint32_t i = 0; i < n; ++i) {
            bytes[i] = 0;
            if (ptrs[i] != nullptr && pypto_fake_acl_allocation_bytes(ptrs[i], &bytes[i]) != 0) {
                pypto_fake_acl_kernel_failed(stream, 0,
                    "a kernel argument is not the start of device memory");
                return;
            }
        }
        char err[1024] = {0};
        for (uint32_t b = 0; b < blocks; ++b) {
            pypto_emu::HostLaunch record{b, blocks, ptrs, bytes, n - 1,
                static_cast<const uint8_t*>(ptrs[n - 1]), bytes[n - 1], err, sizeof err, 0};
            if (pypto_emu::run_block(&record, [&] { kernel(args...); }) != 0) {
                pypto_fake_acl_kernel_failed(stream, b, err);
                return;
            }
        }
    }
};

template <typename Kernel>
Launch<Kernel> launch(Kernel* kernel, uint32_t blocks, void* /* l2ctrl */, void* stream)
{
    return Launch<Kernel>{kernel, blocks, stream};
}

} // namespace pypto_fake_npu
