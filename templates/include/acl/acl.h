// The ACL runtime calls a vendor program's host code makes, for programs
// brought to the host backend whole (`source:` with a `main`): written from
// the public ACL headers' signatures (hicann/runtime
// include/external/acl/acl_rt.h, acl_base.h), never from CANN code.
// "Device" memory is host memory, a stream is a token, and every call
// succeeds unless its arguments are wrong. A call not declared here is a
// compile error naming it. On the NPU the real header is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>

typedef int aclError;
typedef void* aclrtStream;
typedef void* aclrtContext;
typedef void* aclrtEvent;

constexpr aclError ACL_SUCCESS = 0;
constexpr aclError ACL_ERROR_INVALID_PARAM = 100000;
constexpr aclError ACL_ERROR_BAD_ALLOC = 200000;
// A kernel failed (`pypto-build run` reports it from the emulation).
constexpr aclError ACL_ERROR_RT_AICORE_EXCEPTION = 507015;

typedef enum aclrtMemcpyKind {
    ACL_MEMCPY_HOST_TO_HOST,
    ACL_MEMCPY_HOST_TO_DEVICE,
    ACL_MEMCPY_DEVICE_TO_HOST,
    ACL_MEMCPY_DEVICE_TO_DEVICE,
    ACL_MEMCPY_DEFAULT,
} aclrtMemcpyKind;

typedef enum aclrtMemMallocPolicy {
    ACL_MEM_MALLOC_HUGE_FIRST,
    ACL_MEM_MALLOC_HUGE_ONLY,
    ACL_MEM_MALLOC_NORMAL_ONLY,
} aclrtMemMallocPolicy;

namespace pypto_acl {
// A distinct address for aclrtCreateStream to hand out.
inline char stream_token;

// Every allocation, by start address: a launch finds the memory each of
// its pointer arguments lies in (the emulation's bounds).
struct Allocations {
    std::mutex lock;
    std::map<uintptr_t, size_t> sizes;
    // The first failed launch's message since the last synchronisation.
    std::string failure;
};
inline Allocations& allocations()
{
    static Allocations a;
    return a;
}

inline aclError allocate(void** out, size_t size)
{
    if (out == nullptr) {
        return ACL_ERROR_INVALID_PARAM;
    }
    // 64-byte aligned, as device allocations are at least; one byte for 0.
    size_t rounded = (size + 63) / 64 * 64;
    *out = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (*out == nullptr) {
        return ACL_ERROR_BAD_ALLOC;
    }
    Allocations& a = allocations();
    std::lock_guard<std::mutex> guard(a.lock);
    a.sizes[reinterpret_cast<uintptr_t>(*out)] = size;
    return ACL_SUCCESS;
}

inline aclError release(void* ptr)
{
    if (ptr == nullptr) {
        return ACL_ERROR_INVALID_PARAM;
    }
    Allocations& a = allocations();
    std::lock_guard<std::mutex> guard(a.lock);
    if (a.sizes.erase(reinterpret_cast<uintptr_t>(ptr)) == 0) {
        return ACL_ERROR_INVALID_PARAM; // not from aclrtMalloc/aclrtMallocHost, or freed twice
    }
    std::free(ptr);
    return ACL_SUCCESS;
}

// The allocation `ptr` lies in: its start and size; {nullptr, 0} for none.
inline std::pair<void*, size_t> find(const void* ptr)
{
    Allocations& a = allocations();
    std::lock_guard<std::mutex> guard(a.lock);
    uintptr_t at = reinterpret_cast<uintptr_t>(ptr);
    auto next = a.sizes.upper_bound(at);
    if (next == a.sizes.begin()) {
        return {nullptr, 0};
    }
    --next;
    if (at - next->first >= next->second && at != next->first) {
        return {nullptr, 0};
    }
    return {reinterpret_cast<void*>(next->first), next->second};
}

// A launch's failure, reported by the next synchronisation.
inline void fail(const std::string& message)
{
    Allocations& a = allocations();
    std::lock_guard<std::mutex> guard(a.lock);
    if (a.failure.empty()) {
        a.failure = message;
    }
}

inline aclError synchronize()
{
    Allocations& a = allocations();
    std::lock_guard<std::mutex> guard(a.lock);
    return a.failure.empty() ? ACL_SUCCESS : ACL_ERROR_RT_AICORE_EXCEPTION;
}
} // namespace pypto_acl

inline aclError aclInit(const char*) { return ACL_SUCCESS; }
inline aclError aclFinalize() { return ACL_SUCCESS; }
inline aclError aclrtSetDevice(int32_t) { return ACL_SUCCESS; }
inline aclError aclrtResetDevice(int32_t) { return ACL_SUCCESS; }
inline aclError aclrtCreateStream(aclrtStream* stream)
{
    if (stream == nullptr) {
        return ACL_ERROR_INVALID_PARAM;
    }
    *stream = &pypto_acl::stream_token;
    return ACL_SUCCESS;
}
inline aclError aclrtDestroyStream(aclrtStream) { return ACL_SUCCESS; }
// Launches run to completion on the host: a stream is always idle, and a
// failed launch is reported here, as a kernel fault is on the NPU.
inline aclError aclrtSynchronizeStream(aclrtStream) { return pypto_acl::synchronize(); }
inline aclError aclrtSynchronizeDevice() { return pypto_acl::synchronize(); }
inline aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy)
{
    return pypto_acl::allocate(devPtr, size);
}
inline aclError aclrtMallocHost(void** hostPtr, size_t size) { return pypto_acl::allocate(hostPtr, size); }
inline aclError aclrtFree(void* devPtr) { return pypto_acl::release(devPtr); }
inline aclError aclrtFreeHost(void* hostPtr) { return pypto_acl::release(hostPtr); }
inline aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind)
{
    if (count > destMax || (count > 0 && (dst == nullptr || src == nullptr))) {
        return ACL_ERROR_INVALID_PARAM;
    }
    std::memmove(dst, src, count);
    return ACL_SUCCESS;
}
inline aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count)
{
    if (count > maxCount || (count > 0 && devPtr == nullptr)) {
        return ACL_ERROR_INVALID_PARAM;
    }
    std::memset(devPtr, value, count);
    return ACL_SUCCESS;
}
inline const char* aclGetRecentErrMsg()
{
    pypto_acl::Allocations& a = pypto_acl::allocations();
    std::lock_guard<std::mutex> guard(a.lock);
    return a.failure.c_str();
}
