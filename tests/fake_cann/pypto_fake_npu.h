// FAKE NPU kernel launch for the pypto-rs test toolkit; NOT part of CANN.
// The fake bisheng rewrites `k<<<blocks, l2ctrl, stream>>>(args...)` into
// `pypto_fake_npu::launch(k, blocks, l2ctrl, stream)(args...)`, which runs
// every block on the calling thread through the host emulation, with each
// pointer argument's bounds taken from the fake runtime's allocations
// (scalars passed by value are passed on).
#pragma once

#include "kernel_operator.h"

#include <atomic>
#include <cstring>
#include <type_traits>

extern "C" {
// 0 and the bytes from `ptr` to the end of its allocation when `ptr` lies
// in one (a tensor or a view into it); non-zero otherwise.
int pypto_fake_acl_allocation_bytes(const void* ptr, uint64_t* bytes);
// 0 to run the launch; non-zero when a failure was injected (already
// recorded on the stream).
int pypto_fake_acl_launch_begin(void* stream);
// Records a failed block on the stream, reported at synchronisation.
void pypto_fake_acl_kernel_failed(void* stream, uint32_t block, const char* message);
}

namespace pypto_fake_npu {

// The core kind of the next launch on this thread ("vector", "cube",
// "mixed"): set by the launch stubs pypto-build writes for the fake
// toolkit; a real NPU reads it from the compiled kernel.
inline thread_local const char* next_cores = "vector";
inline void next_launch_cores(const char* cores) { next_cores = cores; }

// A kernel argument as a pointer (tensors, the tiling), or nullptr for a
// scalar passed by value.
template <typename T>
void* pointer_of(T value)
{
    if constexpr (std::is_pointer_v<T>) {
        return const_cast<void*>(static_cast<const void*>(value));
    } else {
        (void)value;
        return nullptr;
    }
}

template <typename Kernel>
struct Launch {
    Kernel* kernel;
    uint32_t blocks;
    void* stream;

    template <typename... Args>
    void operator()(Args... args) const
    {
        const char* cores = next_cores;
        next_cores = "vector";
        if (pypto_fake_acl_launch_begin(stream) != 0) {
            return;
        }
        constexpr uint32_t n = sizeof...(Args);
        void* all[n] = {pointer_of(args)...};
        // The pointer arguments are the launch's memory: each must start a
        // device allocation.
        void* ptrs[n];
        uint64_t bytes[n];
        uint32_t count = 0;
        for (uint32_t i = 0; i < n; ++i) {
            if (all[i] == nullptr) {
                continue;
            }
            ptrs[count] = all[i];
            if (pypto_fake_acl_allocation_bytes(all[i], &bytes[count]) != 0) {
                pypto_fake_acl_kernel_failed(stream, 0,
                    "a kernel argument is not in device memory");
                return;
            }
            ++count;
        }
        char err[1024] = {0};
        // Per-block emulation state (sanitizer shadows, clocks) is keyed by
        // the launch: each launch takes a number of its own.
        static std::atomic<uint64_t> launches{0};
        uint64_t launch_id = ++launches;
        for (uint32_t b = 0; b < blocks; ++b) {
            pypto_emu::HostLaunch record{b, blocks, ptrs, bytes, count, nullptr, 0, err,
                sizeof err, 0};
            // Every sanitizer check, as on the host backend by default.
            record.sanitize = 15;
            record.launch_id = launch_id;
            auto body = [&] { kernel(args...); };
            int32_t status = std::strcmp(cores, "mixed") == 0
                ? pypto_emu::run_mixed_block(&record, body)
                : std::strcmp(cores, "cube") == 0 ? pypto_emu::run_cube_block(&record, body)
                                                   : pypto_emu::run_block(&record, body);
            if (status != 0) {
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
