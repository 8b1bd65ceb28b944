// Kernel qualifiers, emulation errors, and the per-block context of a launch.
#pragma once

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <chrono>
#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <iterator>
#include <exception>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <type_traits>
#include <cstdio>
#include <ios>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "instr.h"
#include "memories.h"
#include "model/abi.h"
#include "model/timeline.h"

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

// The emulation's large, cold functions (launch bookkeeping, the fault
// handler, sanitizer reports) are "runtime" functions. By default they are
// inline, like the rest of the headers. A build that compiles many kernels
// defines PYPTO_EMU_SPLIT for them, so each kernel only declares these
// functions, and compiles one source with PYPTO_EMU_RUNTIME that defines them:
// each kernel then compiles in about half the time.
#if defined(PYPTO_EMU_RUNTIME)
#define PYPTO_RUNTIME
#define PYPTO_RUNTIME_BODY 1
#elif defined(PYPTO_EMU_SPLIT)
#define PYPTO_RUNTIME
#define PYPTO_RUNTIME_BODY 0
#else
#define PYPTO_RUNTIME inline
#define PYPTO_RUNTIME_BODY 1
#endif

// CANN declares these for kernels at global scope: the block this core
// runs and the launch's block count (GetBlockIdx(), GetBlockNum()). Set by
// run_block for each block.
inline thread_local int64_t block_idx = 0;
inline thread_local int64_t block_num = 1;


namespace pypto_emu {

// Every misuse the emulation detects; it reaches Rust as pypto_rt::Error::Kernel.
class EmulationError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Message building. Kernels build hundreds of messages with different lists
// of argument types, so each part is turned into a small type-erased record
// at the call site and one out-of-line function formats them all (as
// std::ostream would): an instantiation of concat or fail is then only the
// array of records and one call.
struct MsgPart {
    enum Kind : uint8_t { Text, Chars, Char, Signed, Unsigned, Real, Pointer, Hex, Dec };
    Kind kind;
    union {
        const char* text;
        char c;
        long long i;
        unsigned long long u;
        double d;
        const void* p;
    };
    uint64_t len = 0; // Chars: a std::string's bytes

    MsgPart(const char* t) : kind(Text), text(t) {}
    MsgPart(char* t) : kind(Text), text(t) {}
    MsgPart(const std::string& t) : kind(Chars), text(t.data()), len(t.size()) {}
    MsgPart(char v) : kind(Char), c(v) {}
    MsgPart(signed char v) : kind(Char), c(static_cast<char>(v)) {}
    MsgPart(unsigned char v) : kind(Char), c(static_cast<char>(v)) {}
    MsgPart(bool v) : kind(Signed), i(v ? 1 : 0) {}
    MsgPart(short v) : kind(Signed), i(v) {}
    MsgPart(int v) : kind(Signed), i(v) {}
    MsgPart(long v) : kind(Signed), i(v) {}
    MsgPart(long long v) : kind(Signed), i(v) {}
    MsgPart(unsigned short v) : kind(Unsigned), u(v) {}
    MsgPart(unsigned v) : kind(Unsigned), u(v) {}
    MsgPart(unsigned long v) : kind(Unsigned), u(v) {}
    MsgPart(unsigned long long v) : kind(Unsigned), u(v) {}
    MsgPart(float v) : kind(Real), d(v) {}
    MsgPart(double v) : kind(Real), d(v) {}
    MsgPart(const void* v) : kind(Pointer), p(v) {}
    // std::hex and std::dec switch the base of the integers that follow.
    MsgPart(std::ios_base& (*manip)(std::ios_base&))
        : kind(manip == static_cast<std::ios_base& (*)(std::ios_base&)>(std::hex) ? Hex : Dec), i(0)
    {
    }
    // Enumerations print as their numbers; other types (half, bfloat16_t)
    // as the number they convert to.
    template <typename T, typename = std::enable_if_t<std::is_enum_v<T>>>
    MsgPart(T v) : MsgPart(static_cast<std::underlying_type_t<T>>(v))
    {
    }
    template <typename T, typename = std::enable_if_t<!std::is_enum_v<T> && !std::is_pointer_v<T> &&
                                                      std::is_convertible_v<const T&, float>>,
              typename = void>
    MsgPart(const T& v) : kind(Real), d(static_cast<float>(v))
    {
    }
};

PYPTO_RUNTIME std::string format_parts(const MsgPart* parts, size_t n)
#if PYPTO_RUNTIME_BODY
{
    std::string out;
    bool hex = false;
    char buf[64];
    for (size_t k = 0; k < n; ++k) {
        const MsgPart& part = parts[k];
        switch (part.kind) {
        case MsgPart::Text:
            if (part.text != nullptr) {
                out += part.text;
            }
            break;
        case MsgPart::Chars:
            out.append(part.text, part.len);
            break;
        case MsgPart::Char:
            out += part.c;
            break;
        case MsgPart::Signed:
            if (hex) {
                std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(part.i));
                out += buf;
            } else {
                out += std::to_string(part.i);
            }
            break;
        case MsgPart::Unsigned:
            if (hex) {
                std::snprintf(buf, sizeof buf, "%llx", part.u);
                out += buf;
            } else {
                out += std::to_string(part.u);
            }
            break;
        case MsgPart::Real: {
            std::ostringstream text;
            text << part.d;
            out += text.str();
            break;
        }
        case MsgPart::Pointer: {
            std::ostringstream text;
            text << part.p;
            out += text.str();
            break;
        }
        case MsgPart::Hex:
            hex = true;
            break;
        case MsgPart::Dec:
            hex = false;
            break;
        }
    }
    return out;
}
#else
;
#endif

[[noreturn]] PYPTO_RUNTIME void fail_parts(const MsgPart* parts, size_t n)
#if PYPTO_RUNTIME_BODY
{
    throw EmulationError(format_parts(parts, n));
}
#else
;
#endif

template <typename... Parts>
std::string concat(const Parts&... parts)
{
    const MsgPart list[] = {MsgPart(parts)...};
    return format_parts(list, sizeof...(Parts));
}

template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts)
{
    const MsgPart list[] = {MsgPart(parts)...};
    fail_parts(list, sizeof...(Parts));
}

// One range of global memory the launch may touch: a tensor or the tiling.
struct GmRegion {
    const uint8_t* begin;
    uint64_t bytes;
    uint32_t arg; // index among the kernel's tensor arguments; UINT32_MAX for tiling
    bool writable; // outputs only: inputs are read-only to a kernel
    const char* name; // the param's name (not NUL-terminated), for messages
    uint64_t name_len;
    uintptr_t map_begin; // the tensor's whole mapping, guard pages included
    uintptr_t map_end;   // (0, 0 when pypto-rt gave none)
};

// What one block of a launch knows about itself.
struct BlockState {
    uint32_t idx = 0;
    uint32_t num = 1;
    std::vector<GmRegion> regions;
    uint64_t ub_peak = 0;
    uint32_t live_pipes = 0;
    uint64_t launch_id = 0;
    const uint64_t* cancel = nullptr; // holds launch_id once pypto-rt's watchdog cancels the launch
    uint64_t timeout_ms = 0;
    const char* kernel = "";
    uint64_t kernel_len = 0;
    volatile sig_atomic_t in_kernel = 0; // the fault handler's cue
    // Synchronisation and SoC state (sync.h): a bit per event ID of each
    // HardEvent set by SetFlag and not yet consumed by WaitFlag; the DMA
    // atomic mode; outside mixed kernels, the core's cross-core flag
    // counters (what CrossCoreWaitFlag takes, whatever its mode) and the
    // mode of the set that last raised each.
    uint8_t flags[64] = {};
    uint8_t atomic_op = 0;   // AtomicOp: none, add, max, min
    uint8_t atomic_type = 0; // AtomicType of the elements
    uint8_t cross_core[16] = {};
    uint8_t cross_core_mode[16] = {};
    void* pipe = nullptr;     // the live AscendC::TPipe (GetTPipePtr)
    uint32_t allocators = 0;  // a bit per Hardware with a live LocalMemAllocator
    bool aic = false;         // runs as a cube core (ASCEND_IS_AIC)
    uint8_t sub = 0;          // GetSubBlockIdx: which vector core of a mixed kernel's AI core
    uint8_t ratio = 1;        // GetTaskRatio: 2 on the vector cores of a mixed kernel
    struct CoreGroup* group = nullptr; // the AI core's cores, for a mixed kernel
    uint32_t sanitize = 0;    // SANITIZE_* bits of the launch
    // synccheck: the first leak seen while the block ran (a queue buffer
    // or an event ID dropped while still held), reported if the block ends
    // normally; the live queues with buffers (AscendC::QueueBase).
    std::string sync_leak;
    std::vector<void*> queues;
    // memcheck: per tensor argument, the byte ranges [begin, end) this core
    // wrote without an atomic mode, merged (begin -> end).
    std::vector<std::map<uint64_t, uint64_t>> gm_writes;
    // ... and the ranges of outputs it read (a read of bytes another block
    // writes is a race between blocks).
    std::vector<std::map<uint64_t, uint64_t>> gm_reads;

    // Every field as a new BlockState's, but the lists keep their storage,
    // so a block on a thread that ran one before allocates nothing to start.
    void reset()
    {
        std::vector<GmRegion> keep_regions = std::move(regions);
        std::vector<void*> keep_queues = std::move(queues);
        std::string keep_leak = std::move(sync_leak);
        *this = BlockState{};
        keep_regions.clear();
        keep_queues.clear();
        keep_leak.clear();
        regions = std::move(keep_regions);
        queues = std::move(keep_queues);
        sync_leak = std::move(keep_leak);
    }
};

// The sanitizer checks (pypto-rt's `Sanitize`, PYPTO_SANITIZE).
constexpr uint32_t SANITIZE_RACE = 1; // pipe races
constexpr uint32_t SANITIZE_INIT = 2; // reads of unwritten local memory
constexpr uint32_t SANITIZE_SYNC = 4; // unpaired flags, unreleased IDs, unfreed buffers
constexpr uint32_t SANITIZE_MEM = 8;  // blocks overlapping in global memory
constexpr uint32_t SANITIZE_LOCAL = SANITIZE_RACE | SANITIZE_INIT; // checks that watch on-chip memory

// The three cores of one AI core running a mixed kernel (Atlas A2/A3 pair
// one cube core with two vector cores), and the cross-core flags between
// them (sync.h). Each core runs on a thread of its own; a wait that no
// running core can satisfy any more is reported instead of hanging.
struct CoreGroup {
    std::mutex lock;
    std::condition_variable changed;
    int running = 3;    // cores neither waiting nor finished
    bool stuck = false; // every core is waiting or finished: waits fail
    int first_failed = -1;
    uint8_t* waiting_on[3] = {}; // per core: the counter it waits on
    // Each core's counter per flag ID ([0] the cube core, [1] and [2] the
    // vector cores): what its CrossCoreWaitFlag takes, whatever the wait's
    // mode (Atlas A2/A3 ignore it), and the mode of the set that last
    // raised it.
    uint8_t counter[3][16] = {};
    uint8_t counter_mode[3][16] = {};
    // Sets that count only once both vector cores made them: mode 2 (then
    // the cube core's counter goes up) and modes 0 and 1 (then both vector
    // cores' counters do), per vector core.
    uint8_t from_aiv[2][16] = {};
    uint8_t pair_sets[2][2][16] = {}; // [mode 0/1][vector core][flag]
    // The modelled NPU: per core and flag, when each pending set arrives
    // (a ring in counter order) and from which core and pipe; a vector
    // core's last set of a pair, per flag.
    double model_at[3][16][16] = {};
    uint8_t model_from[3][16][16] = {};
    uint8_t model_head[3][16] = {};
    uint8_t model_tail[3][16] = {};
    // Per kind of pair (mode 2, mode 1, mode 0), vector core and flag: when
    // each of its sets not yet paired arrives (a ring in set order).
    double model_pair_at[3][2][16][16] = {};
    uint8_t model_pair_head[3][2][16] = {};
    uint8_t model_pair_tail[3][2][16] = {};
};

inline thread_local BlockState block;

// block.sanitize again, as a plain thread-local: read by every instruction,
// and a thread-local with a constructor or destructor (as BlockState is)
// costs a call per read.
inline thread_local uint32_t block_checks = 0;

// A number that changes with every block a thread runs.
inline thread_local uint64_t block_serial = 0;

// Whether the launch runs sanitizer check `bit` (SANITIZE_*).
inline bool sanitizing(uint32_t bit) { return (block_checks & bit) != 0; }

// Whether local-memory accesses go through the access channel (access.h):
// a sanitizer checks them, or the traced timeline shows them.
inline bool watching_local() { return sanitizing(SANITIZE_LOCAL) || model_tracing; }

// Per tensor argument, what pypto-rt says about its memory (mirrored in
// abi.rs as `HostArg`).
struct HostArg {
    uint64_t map_begin;
    uint64_t map_end;
    const char* name;
    uint64_t name_len;
    uint32_t writable;
    uint32_t reserved;
};

// The call record pypto-rt passes to a host entry (mirrored in pypto-rt's
// abi.rs as `HostLaunch`; keep the two identical).
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
    const HostArg* arg_info;
    const char* kernel;
    uint64_t kernel_len;
    uint64_t launch_id;
    const uint64_t* cancel;
    uint64_t timeout_ms;
    uint32_t sanitize; // SANITIZE_* bits: the sanitizer checks to run
    uint32_t fail_block; // out: non-zero when the failure belongs to block fail_block - 1
    const ModelSink* model; // the modelled NPU's cost table and receiver; null: not modelled
};

// The layout pypto-rt's abi.rs asserts too, with the same numbers (a
// pypto-rt unit test reads these lines and compares): a mismatch names the
// struct and field.
#define PYPTO_EMU_SIZE(type, bytes) \
    static_assert(sizeof(type) == bytes, \
                  #type " is not " #bytes " bytes; core.h and pypto-rt's abi.rs must agree on it")
#define PYPTO_EMU_FIELD(type, field, offset) \
    static_assert(offsetof(type, field) == offset, \
                  #type "::" #field " is not at byte " #offset "; core.h and pypto-rt's abi.rs must agree on it")
PYPTO_EMU_SIZE(HostArg, 40);
PYPTO_EMU_FIELD(HostArg, map_begin, 0);
PYPTO_EMU_FIELD(HostArg, map_end, 8);
PYPTO_EMU_FIELD(HostArg, name, 16);
PYPTO_EMU_FIELD(HostArg, name_len, 24);
PYPTO_EMU_FIELD(HostArg, writable, 32);
PYPTO_EMU_FIELD(HostArg, reserved, 36);
PYPTO_EMU_SIZE(HostLaunch, 136);
PYPTO_EMU_FIELD(HostLaunch, block_idx, 0);
PYPTO_EMU_FIELD(HostLaunch, block_num, 4);
PYPTO_EMU_FIELD(HostLaunch, args, 8);
PYPTO_EMU_FIELD(HostLaunch, arg_bytes, 16);
PYPTO_EMU_FIELD(HostLaunch, num_args, 24);
PYPTO_EMU_FIELD(HostLaunch, tiling, 32);
PYPTO_EMU_FIELD(HostLaunch, tiling_bytes, 40);
PYPTO_EMU_FIELD(HostLaunch, err, 48);
PYPTO_EMU_FIELD(HostLaunch, err_len, 56);
PYPTO_EMU_FIELD(HostLaunch, ub_peak, 64);
PYPTO_EMU_FIELD(HostLaunch, arg_info, 72);
PYPTO_EMU_FIELD(HostLaunch, kernel, 80);
PYPTO_EMU_FIELD(HostLaunch, kernel_len, 88);
PYPTO_EMU_FIELD(HostLaunch, launch_id, 96);
PYPTO_EMU_FIELD(HostLaunch, cancel, 104);
PYPTO_EMU_FIELD(HostLaunch, timeout_ms, 112);
PYPTO_EMU_FIELD(HostLaunch, sanitize, 120);
PYPTO_EMU_FIELD(HostLaunch, fail_block, 124);
PYPTO_EMU_FIELD(HostLaunch, model, 128);
#undef PYPTO_EMU_FIELD
#undef PYPTO_EMU_SIZE

// A param's name as written in messages: `x`.
PYPTO_RUNTIME std::string param_name(const GmRegion& r)
#if PYPTO_RUNTIME_BODY
{
    if (r.name == nullptr) {
        return concat("tensor argument ", r.arg);
    }
    return concat("`", std::string(r.name, r.name_len), "`");
}
#else
;
#endif


// The line of a kernel's own source that called a helper of a builtin
// partial (the helper takes `PYPTO_CALLER` and opens `PYPTO_AT_CALLER`):
// the instructions the helper runs are reported there, the line a user
// wrote, not the partial's. The outermost helper call wins.
inline thread_local Site caller_site;

struct AtCaller {
    bool set;
    explicit AtCaller(Site site) : set(caller_site.file == nullptr && site.file != nullptr)
    {
        if (set) {
            caller_site = site;
        }
    }
    ~AtCaller()
    {
        if (set) {
            caller_site = Site{};
        }
    }
    AtCaller(const AtCaller&) = delete;
    AtCaller& operator=(const AtCaller&) = delete;
};


// An instruction called by the kernel: the prologue that opens its record
// (instr.h) and, when it returns, hands the record to the modelled NPU
// (the cost its family noted goes on the timeline). Calls from inside the
// emulation (an instruction built on another) keep the kernel's record.
struct AtSite {
    // Whether `file` is the kernel's, not the emulation's own. Each call
    // site passes one string literal, so answers are kept by address, in
    // a few slots: a kernel's instructions alternate between its own file
    // and the emulation's headers (an instruction built on another).
    static bool from_kernel(const char* file)
    {
        thread_local const char* files[8] = {};
        thread_local bool answers[8] = {};
        if (file == nullptr) {
            return false;
        }
        size_t slot = (reinterpret_cast<uintptr_t>(file) >> 4) & 7;
        if (files[slot] != file) {
            files[slot] = file;
            answers[slot] = std::strstr(file, "pypto_emu/") == nullptr;
        }
        return answers[slot];
    }
    Site saved;
    Site site;
    const char* name;
    bool set;
    // `called` is where the instruction was written; `site` is where the
    // kernel's own source called it (the caller of a partial's helper).
    AtSite(Site called, const char* name)
        : saved(instr.site), site(caller_site.file != nullptr ? caller_site : called), name(name),
          set(from_kernel(called.file))
    {
        if (set) {
            instr_open(name, site);
        }
    }
    ~AtSite()
    {
        if (set) {
            instr.site = saved;
            if (modelling() && std::uncaught_exceptions() == 0) {
                model_retire(name, site);
            }
        }
    }
    AtSite(const AtSite&) = delete;
    AtSite& operator=(const AtSite&) = delete;
};

// A launch's timeout as pypto-rt's watchdog words it: whole milliseconds
// below a second ("250 ms"), seconds from one ("2.5 s", "300 s").
inline std::string timeout_text(uint64_t ms)
{
    if (ms < 1000) {
        return std::to_string(ms) + " ms";
    }
    std::string out = std::to_string(ms / 1000);
    if (ms % 1000 != 0) {
        char frac[8];
        std::snprintf(frac, sizeof frac, ".%03u", static_cast<unsigned>(ms % 1000));
        std::string digits = frac;
        while (digits.back() == '0') {
            digits.pop_back();
        }
        out += digits;
    }
    return out + " s";
}

// Ends a launch that pypto-rt's watchdog gave up on: every API call polls.
inline void poll(const char* what)
{
    ++instr.seq;
    instr.name = what;
    // One look-up of the thread-local state for both fields: each costs a
    // call to its initialiser's guard.
    const BlockState& self = block;
    if (self.cancel != nullptr && __atomic_load_n(self.cancel, __ATOMIC_RELAXED) == self.launch_id) {
        fail(what, ": the launch did not finish within ", timeout_text(self.timeout_ms),
             " (PYPTO_KERNEL_TIMEOUT); this block was stopped here");
    }
}

// Checks that [ptr, ptr + bytes) lies inside one tensor argument (or the
// tiling data) of the launch, and that a write goes to an output.
PYPTO_RUNTIME void check_gm(const void* ptr, uint64_t bytes, const char* what, bool write = false)
#if PYPTO_RUNTIME_BODY
{
    poll(what);
    const auto* p = static_cast<const uint8_t*>(ptr);
    // Views of one tensor may be adjacent or overlap (two inputs): an access
    // that runs past one region may lie inside another, so a region the
    // access only starts in is reported only when no region holds it whole.
    const GmRegion* partial = nullptr;
    for (const GmRegion& r : block.regions) {
        if (p >= r.begin && p <= r.begin + r.bytes) {
            uint64_t offset = static_cast<uint64_t>(p - r.begin);
            if (offset + bytes <= r.bytes) {
                if (write && !r.writable) {
                    if (r.arg == UINT32_MAX) {
                        fail(what, ": writes the tiling data, which kernels only read");
                    }
                    fail(what, ": writes ", bytes, " bytes at byte offset ", offset,
                         " of input ", param_name(r),
                         "; inputs are read-only to a kernel (make the param an output "
                         "with `output: true` to write it)");
                }
                return;
            }
            if (partial == nullptr) {
                partial = &r;
            }
        }
    }
    if (partial != nullptr) {
        const GmRegion& r = *partial;
        uint64_t offset = static_cast<uint64_t>(p - r.begin);
        if (r.arg == UINT32_MAX) {
            fail(what, ": reads ", bytes, " bytes at offset ", offset,
                 " of the tiling data, which has ", r.bytes, " bytes");
        }
        fail(what, ": ", bytes, " bytes at byte offset ", offset, " of ", param_name(r),
             " run past its end (", r.bytes, " bytes)");
    }
    fail(what, ": global memory address is outside every tensor argument of this launch");
}
#else
;
#endif

// ---- faults ----------------------------------------------------------------
//
// pypto-rt places each host tensor between inaccessible guard pages and
// makes inputs read-only during a launch. A kernel that touches a guard
// page, writes an input, or divides an integer by zero traps; the handler
// below turns that trap into an EmulationError (kernel objects are built
// with -fnon-call-exceptions, so trapping instructions may throw). Any other
// trap in a kernel is fatal: it is reported on stderr with the kernel and
// block, and the process ends as it would have without the handler.

// Writes `text` to stderr with no allocation (signal context).
inline void write_stderr(const char* text, size_t len)
{
    while (len > 0) {
        ssize_t n = ::write(2, text, len);
        if (n <= 0) {
            return;
        }
        text += n;
        len -= static_cast<size_t>(n);
    }
}

inline void write_stderr(const char* text) { write_stderr(text, std::strlen(text)); }

PYPTO_RUNTIME void write_stderr_number(uint64_t value, int base)
#if PYPTO_RUNTIME_BODY
{
    char digits[32];
    int n = 0;
    do {
        uint64_t d = value % static_cast<uint64_t>(base);
        digits[n++] = static_cast<char>(d < 10 ? '0' + d : 'a' + d - 10);
        value /= static_cast<uint64_t>(base);
    } while (value != 0 && n < 32);
    char out[34];
    int len = 0;
    if (base == 16) {
        out[len++] = '0';
        out[len++] = 'x';
    }
    while (n > 0) {
        out[len++] = digits[--n];
    }
    write_stderr(out, static_cast<size_t>(len));
}
#else
;
#endif

struct PreviousHandlers {
    struct sigaction segv, bus, fpe, ill;
};

inline PreviousHandlers& previous_handlers()
{
    static PreviousHandlers previous{};
    return previous;
}

inline struct sigaction& previous_for(int sig)
{
    PreviousHandlers& p = previous_handlers();
    switch (sig) {
    case SIGSEGV: return p.segv;
    case SIGBUS: return p.bus;
    case SIGFPE: return p.fpe;
    default: return p.ill;
    }
}

// Hands the signal to whoever handled it before us (Rust's stack-overflow
// report, or the default action when the faulting instruction runs again).
PYPTO_RUNTIME void chain_signal(int sig, siginfo_t* info, void* context)
#if PYPTO_RUNTIME_BODY
{
    struct sigaction& prev = previous_for(sig);
    if ((prev.sa_flags & SA_SIGINFO) != 0 && prev.sa_sigaction != nullptr) {
        prev.sa_sigaction(sig, info, context);
        return;
    }
    if (prev.sa_handler == SIG_IGN) {
        return;
    }
    if (prev.sa_handler != SIG_DFL && prev.sa_handler != nullptr) {
        prev.sa_handler(sig);
        return;
    }
    // Default action: restore it; returning re-runs the faulting
    // instruction, which then ends the process with the signal.
    ::signal(sig, SIG_DFL);
}
#else
;
#endif

// What a fault at `addr` means for the current launch, or nullptr.
PYPTO_RUNTIME const GmRegion* region_of_fault(uintptr_t addr)
#if PYPTO_RUNTIME_BODY
{
    for (const GmRegion& r : block.regions) {
        if (r.map_begin != 0 && addr >= r.map_begin && addr < r.map_end) {
            return &r;
        }
    }
    return nullptr;
}
#else
;
#endif

PYPTO_RUNTIME void report_fatal(int sig, uintptr_t addr)
#if PYPTO_RUNTIME_BODY
{
    write_stderr("pypto-rt: kernel `");
    write_stderr(block.kernel, block.kernel_len);
    write_stderr("`, block ");
    write_stderr_number(block.idx, 10);
    switch (sig) {
    case SIGSEGV: write_stderr(": fatal SIGSEGV (invalid memory access) at address "); break;
    case SIGBUS: write_stderr(": fatal SIGBUS (bus error) at address "); break;
    case SIGILL: write_stderr(": fatal SIGILL (illegal instruction) at address "); break;
    default: write_stderr(": fatal signal at address "); break;
    }
    write_stderr_number(addr, 16);
    if (sig == SIGSEGV && addr < 4096) {
        write_stderr(" (a null pointer)");
    }
    write_stderr(", outside every tensor of the launch; a raw GM_ADDR or pointer went astray. "
                 "The process cannot continue.\n");
}
#else
;
#endif

[[noreturn]] PYPTO_RUNTIME void throw_fault(const GmRegion& r, uintptr_t addr)
#if PYPTO_RUNTIME_BODY
{
    auto begin = reinterpret_cast<uintptr_t>(r.begin);
    if (addr >= begin && addr < begin + r.bytes) {
        fail("writes input ", param_name(r), " at byte offset ", addr - begin,
             " through a raw pointer; inputs are read-only to a kernel (make the param an "
             "output with `output: true` to write it)");
    }
    if (addr >= begin + r.bytes) {
        fail("accesses ", param_name(r), " at byte offset ", addr - begin,
             " through a raw pointer, past its end (", r.bytes,
             " bytes); the guard page after the tensor stopped it");
    }
    fail("accesses ", param_name(r), " ", begin - addr,
         " bytes before its start through a raw pointer; the guard page before the tensor "
         "stopped it");
}
#else
;
#endif

PYPTO_RUNTIME void on_fault(int sig, siginfo_t* info, void* context)
#if PYPTO_RUNTIME_BODY
{
    if (block.in_kernel == 0) {
        chain_signal(sig, info, context);
        return;
    }
    auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
#if defined(PYPTO_NON_CALL_EXCEPTIONS)
    if (sig == SIGFPE) {
        fail("integer division by zero or overflow (SIGFPE) at instruction 0x", std::hex, addr);
    }
    if (sig == SIGSEGV || sig == SIGBUS) {
        if (const GmRegion* r = region_of_fault(addr)) {
            throw_fault(*r, addr);
        }
    }
#endif
    report_fatal(sig, addr);
    block.in_kernel = 0;
    ::sigaction(sig, &previous_for(sig), nullptr);
    chain_signal(sig, info, context);
}
#else
;
#endif

PYPTO_RUNTIME void install_fault_handler()
#if PYPTO_RUNTIME_BODY
{
    static const bool installed = [] {
        struct sigaction action {};
        action.sa_sigaction = on_fault;
        // NODEFER: a handler that throws never returns through sigreturn,
        // so the signal must not stay blocked.
        action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
        sigemptyset(&action.sa_mask);
        PreviousHandlers& p = previous_handlers();
        ::sigaction(SIGSEGV, &action, &p.segv);
        ::sigaction(SIGBUS, &action, &p.bus);
        ::sigaction(SIGFPE, &action, &p.fpe);
        ::sigaction(SIGILL, &action, &p.ill);
        return true;
    }();
    (void)installed;
}
#else
;
#endif

// The alternate stack the fault handler runs on. The handler turns a fault
// into a C++ exception thrown from the signal frame, and unwinding needs
// more stack than the few KiB Rust gives its threads' alternate stacks (a
// process's first throw from there overflowed it). A thread gets this one at
// its first core and keeps it until it exits, when the one it had before is
// put back: swapping per core would cost two system calls (about 480 ns) a
// launch. A guard page below it makes an overflow fault instead of writing
// over other memory.
constexpr size_t FAULT_STACK_BYTES = 256 * 1024;

struct FaultStack {
    void* map = nullptr;
    size_t len = 0;
    stack_t previous{};
    ~FaultStack();
};

// Gives this thread its fault stack if it has none yet. Without memory for
// it, or while the thread runs on its alternate stack (a kernel launched
// from a signal handler), the stack it has stays, and a later core tries
// again.
PYPTO_RUNTIME void use_fault_stack();

#if PYPTO_RUNTIME_BODY
PYPTO_RUNTIME FaultStack::~FaultStack()
{
    if (map == nullptr) {
        return;
    }
    size_t page = len - FAULT_STACK_BYTES;
    void* ours = static_cast<char*>(map) + page;
    stack_t current{};
    if (::sigaltstack(nullptr, &current) == 0 && current.ss_sp == ours
        && (current.ss_flags & SS_DISABLE) == 0) {
        if (::sigaltstack(&previous, nullptr) != 0) {
            // Still in use: keeping the memory is better than a signal
            // landing on unmapped pages.
            return;
        }
    }
    // Not installed any more (Rust's thread exit disables the alternate
    // stack before thread-local destructors run), or just put back.
    ::munmap(map, len);
}

PYPTO_RUNTIME void use_fault_stack()
{
    static thread_local FaultStack mine;
    static thread_local bool installed = false;
    if (installed) {
        return;
    }
    if (mine.map == nullptr) {
        size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
        size_t len = FAULT_STACK_BYTES + page;
        void* map = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (map == MAP_FAILED) {
            return;
        }
        if (::mprotect(map, page, PROT_NONE) != 0) {
            ::munmap(map, len);
            return;
        }
        mine.map = map;
        mine.len = len;
    }
    stack_t ours{};
    ours.ss_sp = static_cast<char*>(mine.map) + (mine.len - FAULT_STACK_BYTES);
    ours.ss_size = FAULT_STACK_BYTES;
    ours.ss_flags = 0;
    installed = ::sigaltstack(&ours, &mine.previous) == 0;
}
#endif

PYPTO_RUNTIME void write_message(HostLaunch* launch, const char* text)
#if PYPTO_RUNTIME_BODY
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
#else
;
#endif

// memcheck (sanitize/mem.h defines them): a core's global-memory ranges
// join its block's when it ends, and the launch's last block compares them.
PYPTO_RUNTIME void deposit_gm_writes(const HostLaunch* launch);
PYPTO_RUNTIME int32_t finish_gm_writes(HostLaunch* launch, int32_t status);

// synccheck at the end of a block (sanitize/sync.h defines it).
PYPTO_RUNTIME void sync_check_end();

// Which core of an AI core a block runs as.
enum class CoreRole : uint8_t { Vector, Cube, MixedCube, MixedVector0, MixedVector1 };

// Runs one core of one block: sets up its context, calls `body`, and turns
// any emulation error into a status and a message.
template <typename Body>
int32_t run_core(HostLaunch* launch, CoreRole role, CoreGroup* group, Body&& body)
{
    install_fault_handler();
    use_fault_stack();
    block.reset();
    bool vector1 = role == CoreRole::MixedVector1;
    bool mixed_vector = role == CoreRole::MixedVector0 || vector1;
    // Mixed kernels number their vector cores 2 * block + sub.
    block.idx = mixed_vector ? launch->block_idx * 2 + (vector1 ? 1 : 0) : launch->block_idx;
    block.num = launch->block_num;
    block.aic = role == CoreRole::Cube || role == CoreRole::MixedCube;
    block.sub = vector1 ? 1 : 0;
    block.ratio = mixed_vector ? 2 : 1;
    block.group = group;
    block.launch_id = launch->launch_id;
    // A record with no launch id (a hand-made call) cannot be cancelled.
    block.cancel = launch->launch_id != 0 ? launch->cancel : nullptr;
    block.timeout_ms = launch->timeout_ms;
    block.sanitize = launch->sanitize;
    block_checks = launch->sanitize;
    ++block_serial;
    block.kernel = launch->kernel != nullptr ? launch->kernel : "";
    block.kernel_len = launch->kernel != nullptr ? launch->kernel_len : 0;
    ::block_idx = block.idx;
    ::block_num = launch->block_num;
    int32_t status = 0;
    try {
        for (uint32_t i = 0; i < launch->num_args; ++i) {
            GmRegion r{static_cast<const uint8_t*>(launch->args[i]), launch->arg_bytes[i], i,
                       true, nullptr, 0, 0, 0};
            if (launch->arg_info != nullptr) {
                const HostArg& info = launch->arg_info[i];
                r.writable = info.writable != 0;
                r.name = info.name;
                r.name_len = info.name_len;
                r.map_begin = static_cast<uintptr_t>(info.map_begin);
                r.map_end = static_cast<uintptr_t>(info.map_end);
            }
            block.regions.push_back(r);
        }
        block.regions.push_back(
            {launch->tiling, launch->tiling_bytes, UINT32_MAX, false, nullptr, 0, 0, 0});
        model_begin(launch->model, vector1 ? 2 : mixed_vector ? 1 : 0, !block.aic,
                    mixed_vector || role == CoreRole::MixedCube);
        block.in_kernel = 1;
        body();
        block.in_kernel = 0;
        if (sanitizing(SANITIZE_SYNC)) {
            sync_check_end();
        }
        model_finish(launch->block_idx, static_cast<uint32_t>(role));
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
    block.in_kernel = 0;
    launch->ub_peak = block.ub_peak;
    deposit_gm_writes(launch);
    block.queues.clear();
    return status;
}

// Runs one block of a vector kernel.
template <typename Body>
int32_t run_block(HostLaunch* launch, Body&& body)
{
    launch->fail_block = 0;
    return finish_gm_writes(launch, run_core(launch, CoreRole::Vector, nullptr, body));
}

// Runs one block of a cube kernel: ASCEND_IS_AIC holds.
template <typename Body>
int32_t run_cube_block(HostLaunch* launch, Body&& body)
{
    launch->fail_block = 0;
    return finish_gm_writes(launch, run_core(launch, CoreRole::Cube, nullptr, body));
}

PYPTO_RUNTIME std::string group_sync_check(const CoreGroup& g);

// Runs one block of a mixed kernel as the hardware does: one cube core and
// two vector cores at once, each on its own thread (this one runs the cube
// core), paired through the cross-core flags. The block's error is the
// first core's to fail, named by core.
template <typename Body>
int32_t run_mixed_block(HostLaunch* launch, Body&& body)
{
    CoreGroup group;
    int32_t status[3] = {0, 0, 0};
    char messages[3][1024] = {{0}, {0}, {0}};
    uint64_t peaks[3] = {0, 0, 0};
    auto core = [&](int c) {
        HostLaunch mine = *launch;
        mine.err = messages[c];
        mine.err_len = sizeof messages[c];
        CoreRole role = c == 0 ? CoreRole::MixedCube
                        : c == 1 ? CoreRole::MixedVector0
                                 : CoreRole::MixedVector1;
        status[c] = run_core(&mine, role, &group, body);
        peaks[c] = mine.ub_peak;
        std::lock_guard<std::mutex> hold(group.lock);
        if (status[c] != 0 && group.first_failed < 0) {
            group.first_failed = c;
        }
        --group.running;
        group.changed.notify_all();
    };
    std::thread vectors[2];
    const char* spawn_error = nullptr;
    std::string spawn_reason;
    for (int v = 0; v < 2; ++v) {
        try {
            vectors[v] = std::thread(core, v + 1);
        } catch (const std::system_error& e) {
            spawn_error = "could not start a thread for a vector core of this mixed kernel: ";
            spawn_reason = e.what();
            std::lock_guard<std::mutex> hold(group.lock);
            // The cores that do not start (this one, the cube core) will
            // never set a flag: a vector core already running stops at its
            // next wait.
            group.running -= 3 - v;
            group.stuck = true;
            group.changed.notify_all();
            break;
        }
    }
    if (spawn_error == nullptr) {
        core(0);
    }
    for (std::thread& t : vectors) {
        if (t.joinable()) {
            t.join();
        }
    }
    launch->ub_peak = peaks[0] > peaks[1] ? peaks[0] : peaks[1];
    launch->ub_peak = launch->ub_peak > peaks[2] ? launch->ub_peak : peaks[2];
    launch->fail_block = 0;
    if (spawn_error != nullptr) {
        write_message(launch, concat(spawn_error, spawn_reason).c_str());
        return finish_gm_writes(launch, 2);
    }
    if (group.first_failed < 0) {
        if ((launch->sanitize & SANITIZE_SYNC) != 0) {
            std::string leak = group_sync_check(group);
            if (!leak.empty()) {
                write_message(launch, leak.c_str());
                return finish_gm_writes(launch, 1);
            }
        }
        return finish_gm_writes(launch, 0);
    }
    finish_gm_writes(launch, status[group.first_failed]);
    int c = group.first_failed;
    const char* who = c == 0 ? "cube core (AIC): " : c == 1 ? "vector core 0 (AIV): " : "vector core 1 (AIV): ";
    write_message(launch, concat(who, messages[c]).c_str());
    return status[c];
}

} // namespace pypto_emu

namespace AscendC {

inline int64_t GetBlockIdx() { return pypto_emu::block.idx; }
inline int64_t GetBlockNum() { return pypto_emu::block.num; }
// The vector core within its AI core (0 or 1 in a mixed kernel; 0 else).
inline int64_t GetSubBlockIdx() { return pypto_emu::block.sub; }
// Cores of this kind per AI core: 2 on a mixed kernel's vector cores.
inline int64_t GetTaskRatio() { return pypto_emu::block.ratio; }
inline int64_t GetSubBlockNum() { return pypto_emu::block.ratio; }

using ::pipe_t;
using ::PIPE_S;
using ::PIPE_V;
using ::PIPE_M;
using ::PIPE_MTE1;
using ::PIPE_MTE2;
using ::PIPE_MTE3;
using ::PIPE_ALL;
using ::PIPE_FIX;

// Synchronisation events between pipes (SetFlag/WaitFlag in sync.h).
enum class HardEvent : uint8_t {
    MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M, V_V,
    MTE3_MTE1, MTE1_MTE3, MTE1_V, MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M, MTE3_MTE2, MTE2_MTE3,
    S_V, V_S, S_MTE2, MTE2_S, S_MTE3, MTE3_S, MTE2_FIX, FIX_MTE2, FIX_S, M_S, FIX_MTE3
};
using TEventID = int8_t;

} // namespace AscendC

namespace pypto_emu {

inline const char* hard_event_name(AscendC::HardEvent e)
{
    static const char* names[] = {
        "MTE2_MTE1", "MTE1_MTE2", "MTE1_M", "M_MTE1", "MTE2_V", "V_MTE2", "MTE3_V", "V_MTE3",
        "M_V", "V_M", "V_V", "MTE3_MTE1", "MTE1_MTE3", "MTE1_V", "MTE2_M", "M_MTE2", "V_MTE1",
        "M_FIX", "FIX_M", "MTE3_MTE2", "MTE2_MTE3", "S_V", "V_S", "S_MTE2", "MTE2_S", "S_MTE3",
        "MTE3_S", "MTE2_FIX", "FIX_MTE2", "FIX_S", "M_S", "FIX_MTE3"};
    auto i = static_cast<size_t>(e);
    return i < sizeof(names) / sizeof(names[0]) ? names[i] : "?";
}

} // namespace pypto_emu
