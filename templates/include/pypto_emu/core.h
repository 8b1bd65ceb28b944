// Kernel qualifiers, emulation errors, and the per-block context of a launch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

// Device-code qualifiers mean nothing on the host.
#define __global__
#define __aicore__
#define __vector__
#define __cube__
#define __gm__
#define __ubuf__
#define __inout_pipe__(pipe)

#ifndef GM_ADDR
#define GM_ADDR __gm__ uint8_t*
#endif

namespace pypto_emu {

// Every misuse the emulation detects; it reaches Rust as pypto_rt::Error::Kernel.
class EmulationError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

template <typename... Parts>
std::string concat(const Parts&... parts)
{
    std::ostringstream out;
    (out << ... << parts);
    return out.str();
}

template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts)
{
    throw EmulationError(concat(parts...));
}

// One range of global memory the launch may touch: a tensor or the tiling.
struct GmRegion {
    const uint8_t* begin;
    uint64_t bytes;
    uint32_t arg; // index among the kernel's tensor arguments; UINT32_MAX for tiling
};

// What one block of a launch knows about itself.
struct BlockState {
    uint32_t idx = 0;
    uint32_t num = 1;
    std::vector<GmRegion> regions;
    uint64_t ub_peak = 0;
    uint32_t live_pipes = 0;
};

inline thread_local BlockState block;

// The call record pypto-rt passes to a host entry (mirrored in pypto-rt's
// launch.rs as `HostLaunch`; keep the two identical).
struct HostLaunch {
    uint32_t block_idx;
    uint32_t block_num;
    void* const* args;
    const uint64_t* arg_bytes;
    uint32_t num_args;
    const uint8_t* tiling;
    uint64_t tiling_bytes;
    char* err;
    uint64_t err_len;
    uint64_t ub_peak; // out: the block's Unified Buffer high-water mark, bytes
};

// Checks that [ptr, ptr + bytes) lies inside one tensor argument (or the
// tiling data) of the launch.
inline void check_gm(const void* ptr, uint64_t bytes, const char* what)
{
    const auto* p = static_cast<const uint8_t*>(ptr);
    for (const GmRegion& r : block.regions) {
        if (p >= r.begin && p <= r.begin + r.bytes) {
            uint64_t offset = static_cast<uint64_t>(p - r.begin);
            if (offset + bytes <= r.bytes) {
                return;
            }
            if (r.arg == UINT32_MAX) {
                fail(what, ": reads ", bytes, " bytes at offset ", offset,
                     " of the tiling data, which has ", r.bytes, " bytes");
            }
            fail(what, ": ", bytes, " bytes at byte offset ", offset, " of tensor argument ",
                 r.arg, " run past its end (", r.bytes, " bytes)");
        }
    }
    fail(what, ": global memory address is outside every tensor argument of this launch");
}

inline void write_message(HostLaunch* launch, const char* text)
{
    if (launch->err == nullptr || launch->err_len == 0) {
        return;
    }
    size_t n = std::strlen(text);
    if (n >= launch->err_len) {
        n = static_cast<size_t>(launch->err_len - 1);
    }
    std::memcpy(launch->err, text, n);
    launch->err[n] = '\0';
}

// Runs one block of a kernel: sets up the block's context, calls `body`,
// and turns any emulation error into a status and a message.
template <typename Body>
int32_t run_block(HostLaunch* launch, Body&& body)
{
    block = BlockState{};
    block.idx = launch->block_idx;
    block.num = launch->block_num;
    for (uint32_t i = 0; i < launch->num_args; ++i) {
        block.regions.push_back(
            {static_cast<const uint8_t*>(launch->args[i]), launch->arg_bytes[i], i});
    }
    block.regions.push_back({launch->tiling, launch->tiling_bytes, UINT32_MAX});
    int32_t status = 0;
    try {
        body();
    } catch (const EmulationError& e) {
        write_message(launch, e.what());
        status = 1;
    } catch (const std::exception& e) {
        write_message(launch, concat("C++ exception: ", e.what()).c_str());
        status = 2;
    } catch (...) {
        write_message(launch, "unknown C++ exception");
        status = 3;
    }
    launch->ub_peak = block.ub_peak;
    return status;
}

} // namespace pypto_emu

namespace AscendC {

inline int64_t GetBlockIdx() { return pypto_emu::block.idx; }
inline int64_t GetBlockNum() { return pypto_emu::block.num; }

// Pipeline synchronisation orders hardware queues; the host runs each
// block's instructions in program order, so these only need to exist.
enum pipe_t { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_FIX };
enum class HardEvent : uint8_t {
    MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M, V_V,
    MTE3_MTE1, MTE1_MTE3, MTE1_V, MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M, MTE3_MTE2, MTE2_MTE3,
    S_V, V_S, S_MTE2, MTE2_S, S_MTE3, MTE3_S, MTE2_FIX, FIX_MTE2, FIX_S, M_S, FIX_MTE3
};
template <pipe_t pipe>
inline void PipeBarrier() {}
template <HardEvent event>
inline void SetFlag(int32_t) {}
template <HardEvent event>
inline void WaitFlag(int32_t) {}

} // namespace AscendC
