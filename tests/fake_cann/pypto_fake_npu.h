// FAKE NPU kernel launch for the pypto-rs test toolkit; NOT part of CANN.
// The fake bisheng rewrites `k<<<blocks, l2ctrl, stream>>>(args...)` into
// `pypto_fake_npu::launch(k, blocks, l2ctrl, stream)(args...)`, which queues
// the launch on the stream and returns: the stream's worker thread (in the
// fake runtime) runs every block through the host emulation, with each
// pointer argument's bounds taken from the fake runtime's allocations
// (scalars passed by value are passed on).
#pragma once

#include "kernel_operator.h"

#include <atomic>
#include <cstring>
#include <new>
#include <tuple>
#include <type_traits>

extern "C" {
// 0 and the allocation's size when `ptr` starts one; non-zero otherwise.
int pypto_fake_acl_allocation_bytes(const void* ptr, uint64_t* bytes);
// 0 to run the launch; non-zero when a failure was injected (already
// recorded on the stream).
int pypto_fake_acl_launch_begin(void* stream);
// Records a failed block on the stream, reported at synchronisation.
void pypto_fake_acl_kernel_failed(void* stream, uint32_t block, const char* message);
// Queues `run(ctx)` on the stream; 0 on success.
int pypto_fake_acl_enqueue(void* stream, void (*run)(void*), void* ctx, void* const* ptrs, uint32_t nptrs);
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

// One queued launch: everything the worker needs, copied at launch time
// (the caller's arguments and host data may be gone when it runs).
template <typename Kernel, typename... Args>
struct Job {
    Kernel* kernel;
    uint32_t blocks;
    void* stream;
    const char* cores;
    std::tuple<Args...> args;
    void* ptrs[sizeof...(Args) + 1];
    uint64_t bytes[sizeof...(Args) + 1];
    uint32_t count;

    static void run(void* raw)
    {
        Job* job = static_cast<Job*>(raw);
        char err[1024] = {0};
        // Per-block emulation state (sanitizer shadows, clocks) is keyed by
        // the launch: each launch takes a number of its own.
        static std::atomic<uint64_t> launches{0};
        uint64_t launch_id = ++launches;
        for (uint32_t b = 0; b < job->blocks; ++b) {
            pypto_emu::HostLaunch record{b, job->blocks, job->ptrs, job->bytes, job->count, nullptr, 0, err,
                sizeof err, 0};
            // Every sanitizer check, as on the host backend by default.
            record.sanitize = 15;
            record.launch_id = launch_id;
            auto body = [&] { std::apply(job->kernel, job->args); };
            int32_t status = std::strcmp(job->cores, "mixed") == 0
                ? pypto_emu::run_mixed_block(&record, body)
                : std::strcmp(job->cores, "cube") == 0 ? pypto_emu::run_cube_block(&record, body)
                                                        : pypto_emu::run_block(&record, body);
            if (status != 0) {
                pypto_fake_acl_kernel_failed(job->stream, b, err);
                break;
            }
        }
        delete job;
    }
};

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
        auto* job = new (std::nothrow) Job<Kernel, Args...>{kernel, blocks, stream, cores, {args...}, {}, {}, 0};
        if (job == nullptr) {
            pypto_fake_acl_kernel_failed(stream, 0, "out of host memory for the launch");
            return;
        }
        constexpr uint32_t n = sizeof...(Args);
        void* all[n] = {pointer_of(args)...};
        // The pointer arguments are the launch's memory: each must start a
        // device allocation.
        for (uint32_t i = 0; i < n; ++i) {
            if (all[i] == nullptr) {
                continue;
            }
            job->ptrs[job->count] = all[i];
            if (pypto_fake_acl_allocation_bytes(all[i], &job->bytes[job->count]) != 0) {
                pypto_fake_acl_kernel_failed(stream, 0, "a kernel argument is not the start of device memory");
                delete job;
                return;
            }
            ++job->count;
        }
        if (pypto_fake_acl_enqueue(stream, &Job<Kernel, Args...>::run, job, job->ptrs, job->count) != 0) {
            pypto_fake_acl_kernel_failed(stream, 0, "the launch could not be queued");
            delete job;
        }
    }
};

template <typename Kernel>
Launch<Kernel> launch(Kernel* kernel, uint32_t blocks, void* /* l2ctrl */, void* stream)
{
    return Launch<Kernel>{kernel, blocks, stream};
}

} // namespace pypto_fake_npu
