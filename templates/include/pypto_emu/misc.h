// Names vendor kernels use besides the data path: static tensor programming
// (LocalMemAllocator, Hardware), small utilities (DivCeil, IsSameType),
// QuantMode_t, GetSystemCycle, printf/PRINTF and assert, the core-kind
// tests of mixed kernels (ASCEND_IS_AIC/ASCEND_IS_AIV, __mix__), and
// __NPU_ARCH__.
#pragma once

#include <cassert>
#include <chrono>
#include <cstdio>

#include "sync.h"

// The NPU architecture the kernel is compiled for, as bisheng defines it:
// 2201 for Atlas A2/A3 (the default), 3510 for the Ascend 950.
#ifndef __NPU_ARCH__
#define __NPU_ARCH__ PYPTO_ARCH(NPU_ARCH)
#endif

// `__mix__(cube, vector)` marks a mixed kernel's entry; the kernel type
// macros choose the core mix. On the host the spec or template contract
// says it instead (`cores: vector|cube|mixed`), which picks the block
// runner (core.h).
#define __mix__(...)
// On the host they only check the type against the Atlas A2/A3 list
// (KernelMetaType, system.h).
#ifndef KERNEL_TASK_TYPE_DEFAULT
#define KERNEL_TASK_TYPE_DEFAULT(type) \
    static_assert(::pypto_emu::supported_kernel_type(type), \
                  "KERNEL_TASK_TYPE_DEFAULT: Atlas A2/A3 take KERNEL_TYPE_AIV_ONLY, KERNEL_TYPE_AIC_ONLY or a KERNEL_TYPE_MIX_ type")
#endif
#ifndef KERNEL_TASK_TYPE
#define KERNEL_TASK_TYPE(key, type) \
    static_assert(::pypto_emu::supported_kernel_type(type), \
                  "KERNEL_TASK_TYPE: Atlas A2/A3 take KERNEL_TYPE_AIV_ONLY, KERNEL_TYPE_AIC_ONLY or a KERNEL_TYPE_MIX_ type")
#endif

// Written as `if ASCEND_IS_AIV { ... }` in kernels, so each expands to a
// parenthesised condition: which core this is (pypto_emu::block.aic).
#define ASCEND_IS_AIV (!::pypto_emu::block.aic)
#define ASCEND_IS_AIC (::pypto_emu::block.aic)

// Quantisation modes of Fixpipe and L0C copies (global in CANN).
enum QuantMode_t {
    NoQuant, F322F16, F322BF16, DEQF16, VDEQF16, QF322B8_PRE, VQF322B8_PRE, REQ8, VREQ8,
    PYPTO_ARCH(EXTRA_QUANT_MODES) // the picked row's own modes (arch.h)
};

namespace AscendC {

using ::QuantMode_t;
using ::NoQuant;
using ::F322F16;
using ::F322BF16;
using ::DEQF16;
using ::VDEQF16;
using ::QF322B8_PRE;
using ::VQF322B8_PRE;
using ::REQ8;
using ::VREQ8;

template <typename T, typename U>
struct IsSameType {
    static constexpr bool value = false;
};

template <typename T>
struct IsSameType<T, T> {
    static constexpr bool value = true;
};

// a / b rounded up (b must not be 0: on the host that is SIGFPE for
// integers, reported as an emulation error).
template <typename T, typename U>
constexpr auto DivCeil(T a, U b)
{
    return (a + b - 1) / b;
}

// The system counter: 50 MHz on Atlas A2/A3, 1 GHz on the Ascend 950 (the
// documented conversions to time). On the host: the monotonic clock at
// that rate, so differences convert to host time the documented way.
inline int64_t GetSystemCycle()
{
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::steady_clock::now().time_since_epoch())
                  .count();
    return static_cast<int64_t>(ns / pypto_emu::Target::system_cycle_ns);
}

// Physical memories, for static tensor programming.
enum class Hardware : uint8_t { GM, UB, L1, L0A, L0B, L0C, BIAS, FIXBUF, MAX };

} // namespace AscendC

namespace pypto_emu {

constexpr Memory memory_of(AscendC::Hardware h) { return static_cast<Memory>(h); }

inline const char* hardware_name(AscendC::Hardware h)
{
    static const char* names[] = {"GM", "UB", "L1", "L0A", "L0B", "L0C", "BIAS", "FIXBUF", "MAX"};
    return names[static_cast<int>(h)];
}

// The position Alloc gives when the kernel names none.
constexpr TPosition default_position(AscendC::Hardware h)
{
    switch (h) {
    case AscendC::Hardware::L1: return TPosition::A1;
    case AscendC::Hardware::L0A: return TPosition::A2;
    case AscendC::Hardware::L0B: return TPosition::B2;
    case AscendC::Hardware::L0C: return TPosition::CO1;
    case AscendC::Hardware::BIAS: return TPosition::C2;
    case AscendC::Hardware::FIXBUF: return TPosition::C2PIPE2GM;
    default: return TPosition::VECCALC;
    }
}

// printf arguments as C's printf takes them: the NPU's narrow types print
// as their values.
template <typename A>
auto printf_arg(const A& a)
{
    if constexpr (std::is_same_v<A, half> || std::is_same_v<A, bfloat16_t>) {
        return static_cast<double>(static_cast<float>(a));
    } else if constexpr (std::is_same_v<A, int4b_t>) {
        return static_cast<int>(a.value);
    } else {
        return a;
    }
}

// Formats like printf; the NPU prints nothing for more than 30 KB.
template <typename... Args>
std::string format(const char* fmt, const Args&... args)
{
    int n;
    if constexpr (sizeof...(Args) == 0) {
        n = std::snprintf(nullptr, 0, "%s", fmt);
    } else {
        n = std::snprintf(nullptr, 0, fmt, printf_arg(args)...);
    }
    if (n <= 0) {
        return std::string();
    }
    std::string out(static_cast<size_t>(n) + 1, '\0');
    if constexpr (sizeof...(Args) == 0) {
        std::snprintf(&out[0], out.size(), "%s", fmt);
    } else {
        std::snprintf(&out[0], out.size(), fmt, printf_arg(args)...);
    }
    out.resize(static_cast<size_t>(n));
    return out;
}

// One write per call, so lines of blocks running at once do not mix.
inline void print_from_block(const std::string& text)
{
    std::string line = concat("[block ", block.idx, "] ", text);
    write_stderr(line.data(), line.size());
}

template <typename... Args>
[[noreturn]] void assert_failed(const char* macro, const char* expr, const char* file, int line,
                                const char* fmt = nullptr, const Args&... args)
{
    std::string message = concat(macro, "(", expr, ") failed");
    if (fmt != nullptr) {
        message += concat(": ", format(fmt, args...));
        while (!message.empty() && message.back() == '\n') {
            message.pop_back();
        }
    }
    message += concat(" (", file, ":", line, ")");
    print_from_block(message + "\n");
    fail(message);
}

} // namespace pypto_emu

namespace AscendC {

// Static tensor programming: hands out consecutive tensors of one memory,
// from address 0, with no TPipe. One allocator per memory may be alive at
// a time, and none alongside a TPipe. Each tensor starts at the memory's
// alignment (32 bytes for UB and L1, 512 for L0A/L0B, 64 for L0C).
template <Hardware hard = Hardware::UB>
class LocalMemAllocator {
    static_assert(hard != Hardware::GM && hard != Hardware::MAX,
                  "LocalMemAllocator: the hardware must be an on-chip memory");

public:
    LocalMemAllocator()
    {
        uint32_t bit = 1u << static_cast<int>(hard);
        if ((pypto_emu::block.allocators & bit) != 0) {
            pypto_emu::fail("LocalMemAllocator<", pypto_emu::hardware_name(hard),
                            ">: another allocator of this memory is alive in this block; only one "
                            "may exist");
        }
        if (pypto_emu::block.pipe != nullptr) {
            pypto_emu::fail("LocalMemAllocator<", pypto_emu::hardware_name(hard),
                            ">: a TPipe is alive in this block; static tensor programming does "
                            "not mix with TPipe");
        }
        pypto_emu::block.allocators |= bit;
    }

    ~LocalMemAllocator() { pypto_emu::block.allocators &= ~(1u << static_cast<int>(hard)); }

    LocalMemAllocator(const LocalMemAllocator&) = delete;
    LocalMemAllocator& operator=(const LocalMemAllocator&) = delete;

    // The first free address.
    uint32_t GetCurAddr() const { return cur_; }

    template <class DataType, uint32_t tileSize>
    LocalTensor<DataType> Alloc()
    {
        return Alloc<pypto_emu::default_position(hard), DataType>(tileSize);
    }

    template <TPosition pos, class DataType, uint32_t tileSize>
    LocalTensor<DataType> Alloc()
    {
        return Alloc<pos, DataType>(tileSize);
    }

    template <class DataType>
    LocalTensor<DataType> Alloc(uint32_t tileSize)
    {
        return Alloc<pypto_emu::default_position(hard), DataType>(tileSize);
    }

    template <TPosition pos, class DataType>
    LocalTensor<DataType> Alloc(uint32_t tileSize)
    {
        static_assert(pypto_emu::memory_of(pos) == pypto_emu::memory_of(hard),
                      "LocalMemAllocator::Alloc: the position is not in the allocator's memory");
        pypto_emu::poll("LocalMemAllocator::Alloc");
        const auto& spec = pypto_emu::memory_spec(pypto_emu::memory_of(hard));
        uint64_t bytes = static_cast<uint64_t>(tileSize) * sizeof(DataType);
        if (cur_ + bytes > spec.capacity) {
            pypto_emu::fail("LocalMemAllocator<", pypto_emu::hardware_name(hard), ">::Alloc: ",
                            tileSize, " elements of ", sizeof(DataType), " bytes (", bytes,
                            " bytes) at address ", cur_, " run past the ", spec.capacity,
                            " bytes of the ", spec.name, " (", spec.capacity - cur_, " are free)");
        }
        LocalTensor<DataType> t(pos, cur_, tileSize);
        uint64_t end = (cur_ + bytes + spec.align - 1) / spec.align * spec.align;
        cur_ = static_cast<uint32_t>(end < spec.capacity ? end : spec.capacity);
        return t;
    }

private:
    uint32_t cur_ = 0;
};

// Prints to stderr, prefixed with the block index: `[block 3] ...`.
// ASCENDC_DUMP=0 turns printing off, as on the NPU.
template <typename... Args>
void printf(const char* fmt, Args&&... args)
{
#if !defined(ASCENDC_DUMP) || ASCENDC_DUMP != 0
    pypto_emu::poll("printf");
    std::string text = pypto_emu::format(fmt, args...);
    if (text.size() > 30 * 1024) {
        pypto_emu::print_from_block(pypto_emu::concat(
            "printf: ", text.size(), " bytes exceed the 30 KB a call may print; the NPU prints "
            "nothing\n"));
        return;
    }
    pypto_emu::print_from_block(text);
#else
    (void)fmt;
    ((void)args, ...);
#endif
}

template <typename... Args>
void PRINTF(const char* fmt, Args&&... args)
{
    AscendC::printf(fmt, std::forward<Args>(args)...);
}

} // namespace AscendC

// assert(expr) and assert(expr, fmt, args...): a failure prints the
// condition and message (prefixed with the block index) and ends the
// block with an emulation error. Off under NDEBUG, as on the NPU. A kernel
// that includes <cassert> after kernel_operator.h gets the C assert back.
#undef assert
#if defined(NDEBUG) || (defined(ASCENDC_DUMP) && ASCENDC_DUMP == 0)
#define assert(expr, ...) ((void)0)
#else
#define assert(expr, ...)                                                                         \
    ((expr) ? (void)0 : ::pypto_emu::assert_failed("assert", #expr, __FILE__, __LINE__, ##__VA_ARGS__))
#endif
