// Synchronisation and SoC state: PipeBarrier, SetFlag/WaitFlag with their
// event IDs (`EVENT_ID0`..`EVENT_ID7`, global as in CANN), InitSocState,
// the DMA atomic modes (SetAtomicAdd/Max/Min, SetAtomicNone,
// DisableDmaAtomic) that turn a following copy into global memory into a
// read-modify-write, and the cross-core flags of mixed kernels.
//
// Each block runs its instructions in program order, so the host never
// reorders one pipe's work around another's (the racecheck sanitizer
// reports where the NPU could): the checks here catch what would hang or
// misbehave on the NPU (a WaitFlag nothing set, an ID out of range, a
// second SetFlag before its WaitFlag).
#pragma once

#include <mutex>

#include "memory.h"
#include "sanitize/sync.h"

// Event IDs for SetFlag/WaitFlag: global names in CANN.
enum event_t { EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };

namespace pypto_emu {

enum class AtomicOp : uint8_t { None, Add, Max, Min };
enum class AtomicType : uint8_t { None, F32, F16, BF16, I32, I16, I8 };

template <typename T>
constexpr AtomicType atomic_type_of()
{
    if constexpr (std::is_same_v<T, float>) {
        return AtomicType::F32;
    } else if constexpr (std::is_same_v<T, half>) {
        return AtomicType::F16;
    } else if constexpr (std::is_same_v<T, bfloat16_t>) {
        return AtomicType::BF16;
    } else if constexpr (std::is_same_v<T, int32_t>) {
        return AtomicType::I32;
    } else if constexpr (std::is_same_v<T, int16_t>) {
        return AtomicType::I16;
    } else if constexpr (std::is_same_v<T, int8_t>) {
        return AtomicType::I8;
    } else {
        return AtomicType::None;
    }
}

inline const char* atomic_type_name(uint8_t t)
{
    static const char* names[] = {"none", "float", "half", "bfloat16_t", "int32_t", "int16_t", "int8_t"};
    return t < 7 ? names[t] : "?";
}

inline const char* atomic_op_name(uint8_t op)
{
    static const char* names[] = {"none", "SetAtomicAdd", "SetAtomicMax", "SetAtomicMin"};
    return op < 4 ? names[op] : "?";
}

// Blocks run on several host threads; read-modify-write stores of all of
// them are serialised, which is what the hardware's atomic DMA guarantees.
inline std::mutex& atomic_mutex()
{
    static std::mutex m;
    return m;
}

template <typename T>
T atomic_combine(AtomicOp op, T old, T value)
{
    if constexpr (std::is_integral_v<T>) {
        using W = int64_t;
        W a = static_cast<W>(old);
        W b = static_cast<W>(value);
        switch (op) {
        case AtomicOp::Add: {
            // Two's complement wrap-around (the hardware's overflow
            // behaviour is not documented).
            using U = std::make_unsigned_t<T>;
            return static_cast<T>(static_cast<U>(static_cast<U>(old) + static_cast<U>(value)));
        }
        case AtomicOp::Max: return static_cast<T>(a > b ? a : b);
        case AtomicOp::Min: return static_cast<T>(a < b ? a : b);
        default: return value;
        }
    } else {
        // One correctly rounded operation in the element type.
        float a = static_cast<float>(old);
        float b = static_cast<float>(value);
        switch (op) {
        case AtomicOp::Add: return static_cast<T>(a + b);
        case AtomicOp::Max: return static_cast<T>(a > b ? a : b);
        case AtomicOp::Min: return static_cast<T>(a < b ? a : b);
        default: return value;
        }
    }
}

// Stores `count` elements into global memory (already bounds-checked by the
// caller), honouring the atomic mode set by SetAtomicAdd/Max/Min.
template <typename T>
void store_gm(T* dst, const T* src, uint64_t count, const char* what)
{
    instr_access(Memory::GM, true);
    auto op = static_cast<AtomicOp>(block.atomic_op);
    if (op == AtomicOp::None) {
        std::memcpy(static_cast<void*>(dst), src, count * sizeof(T));
        note_gm_write(dst, count * sizeof(T));
        return;
    }
    if (static_cast<uint8_t>(atomic_type_of<T>()) != block.atomic_type) {
        fail(what, ": ", atomic_op_name(block.atomic_op), "<", atomic_type_name(block.atomic_type),
             "> is in effect but the copy moves ", sizeof(T), "-byte elements of another type (",
             atomic_type_name(static_cast<uint8_t>(atomic_type_of<T>())),
             "); set the atomic type of the data moved");
    }
    if constexpr (atomic_type_of<T>() != AtomicType::None) {
        std::lock_guard<std::mutex> lock(atomic_mutex());
        for (uint64_t i = 0; i < count; ++i) {
            dst[i] = atomic_combine(op, dst[i], src[i]);
        }
    }
}

template <typename T>
void set_atomic(AtomicOp op)
{
    // The same list on Atlas A2/A3 and the Ascend 950.
    static_assert(atomic_type_of<T>() != AtomicType::None,
                  "SetAtomicAdd/Max/Min<T>: T must be float, half, bfloat16_t, int32_t, int16_t or "
                  "int8_t");
    block.atomic_op = static_cast<uint8_t>(op);
    block.atomic_type = static_cast<uint8_t>(atomic_type_of<T>());
}

inline void check_event_id(int32_t id, const char* what, AscendC::HardEvent event)
{
    if (id < 0 || id > 7) {
        fail(what, "<HardEvent::", hard_event_name(event), ">(", id,
             "): event IDs are 0 to 7 (EVENT_ID0..EVENT_ID7)");
    }
}

} // namespace pypto_emu

namespace AscendC {

template <pipe_t pipe>
inline void PipeBarrier()
{
    pypto_emu::poll("PipeBarrier");
    pypto_emu::model_barrier(pipe);
    if (pypto_emu::sanitizing(pypto_emu::SANITIZE_RACE)) {
        pypto_emu::race_barrier(pipe);
    }
}

// SetFlag raises the (event, ID) flag; WaitFlag consumes it. The host runs
// in program order, so a WaitFlag whose flag is not raised would wait for
// ever on the NPU, and a second SetFlag of a raised flag is undefined
// behaviour there: both are errors.
template <HardEvent event>
inline void SetFlag(int32_t eventID)
{
    pypto_emu::poll("SetFlag");
    pypto_emu::check_event_id(eventID, "SetFlag", event);
    uint8_t& raised = pypto_emu::block.flags[static_cast<int>(event)];
    if ((raised & (1u << eventID)) != 0) {
        pypto_emu::fail("SetFlag<HardEvent::", pypto_emu::hard_event_name(event), ">(", eventID,
                        "): the flag is already set and not yet waited for; a second SetFlag "
                        "with the same event and ID is undefined behaviour on the NPU");
    }
    raised = static_cast<uint8_t>(raised | (1u << eventID));
    pypto_emu::model_set_flag(static_cast<int>(event), eventID, pypto_emu::hard_event_pipes[static_cast<int>(event)][0]);
    if (pypto_emu::sanitizing(pypto_emu::SANITIZE_RACE)) {
        pypto_emu::race_set_flag(static_cast<int>(event), eventID);
    }
}

template <HardEvent event>
inline void WaitFlag(int32_t eventID)
{
    pypto_emu::poll("WaitFlag");
    pypto_emu::check_event_id(eventID, "WaitFlag", event);
    uint8_t& raised = pypto_emu::block.flags[static_cast<int>(event)];
    if ((raised & (1u << eventID)) == 0) {
        pypto_emu::fail("WaitFlag<HardEvent::", pypto_emu::hard_event_name(event), ">(", eventID,
                        "): no SetFlag with this event and ID is pending; on the NPU the pipe "
                        "would wait for ever");
    }
    raised = static_cast<uint8_t>(raised & ~(1u << eventID));
    pypto_emu::model_wait_flag(static_cast<int>(event), eventID, pypto_emu::hard_event_pipes[static_cast<int>(event)][1]);
    if (pypto_emu::sanitizing(pypto_emu::SANITIZE_RACE)) {
        pypto_emu::race_wait_flag(static_cast<int>(event), eventID);
    }
}

// Resets the core's global state; of what the host models, that is the
// atomic mode (off).
inline void InitSocState()
{
    pypto_emu::block.atomic_op = 0;
    pypto_emu::block.atomic_type = 0;
}

// Following copies into global memory (DataCopy, DataCopyPad, Fixpipe) add
// (or take the max/min) into what is there, in type T, atomically across
// blocks. T must be the type of the data those copies move.
template <typename T>
inline void SetAtomicAdd()
{
    pypto_emu::set_atomic<T>(pypto_emu::AtomicOp::Add);
}

template <typename T>
inline void SetAtomicMax()
{
    pypto_emu::set_atomic<T>(pypto_emu::AtomicOp::Max);
}

template <typename T>
inline void SetAtomicMin()
{
    pypto_emu::set_atomic<T>(pypto_emu::AtomicOp::Min);
}

// Sets the type of an atomic mode already chosen (or of the next).
template <typename T>
inline void SetAtomicType()
{
    static_assert(pypto_emu::atomic_type_of<T>() != pypto_emu::AtomicType::None,
                  "SetAtomicType<T>: T must be float, half, bfloat16_t, int32_t, int16_t or int8_t");
    pypto_emu::block.atomic_type = static_cast<uint8_t>(pypto_emu::atomic_type_of<T>());
}

inline void SetAtomicNone()
{
    pypto_emu::block.atomic_op = 0;
    pypto_emu::block.atomic_type = 0;
}

inline void DisableDmaAtomic() { SetAtomicNone(); }

// Cross-core flags. Each core has a counter per flag ID (0-15).
// CrossCoreWaitFlag waits until the core's counter is non-zero and takes
// one from it; on Atlas A2/A3 its modeId and pipe have no effect (the
// CrossCoreWaitFlag page), so a default-mode wait is satisfied by a set of
// any mode that raises this core's counter. The set's mode says whose
// counters go up, and when: mode 2 on the cube core raises both vector
// cores' counters; mode 2 on both vector cores raises the cube core's;
// mode 1 (and mode 0 with one block) on both vector cores raises both of
// theirs; mode 0 with one block on the cube core raises its own. A mixed
// kernel's block runs its cube core and two vector cores at once (core.h,
// run_mixed_block), so waits between them block as on the NPU; a wait no
// running core can satisfy any more is an error, not a hang. Kernels that
// are not mixed run one core per block: there a wait is satisfied only by
// the core's own earlier set (mode 0 with one block, mode 1), and a set of
// mode 2 or 4 (to the other core kind) is an error. Mode 0 with several
// blocks synchronises every block's cores: not emulated (an error at the
// set). Ascend 950 (its row in arch.h) documents its wait's mode as taking
// effect; the host treats modes 0-2 alike there too (they share the flag
// IDs), and mode 4 is not emulated.
} // namespace AscendC

namespace pypto_emu {

PYPTO_RUNTIME const char* cross_core_stuck()
#if PYPTO_RUNTIME_BODY
{
    return ": no core of this AI core can set the flag any more (the others are waiting or have "
           "finished); on the NPU this core would wait for ever";
}
#else
;
#endif

PYPTO_RUNTIME const char* cross_core_not_mixed()
#if PYPTO_RUNTIME_BODY
{
    return "the other core kind of a mixed kernel, but this kernel runs one core kind; declare it "
           "`cores: mixed` (its spec or template contract) so that its cube and vector cores run "
           "paired";
}
#else
;
#endif

// The index of this core in its group: 0 the cube core, 1 and 2 the vector cores.
inline int group_core() { return block.aic ? 0 : 1 + block.sub; }

// Waits until `counter` (guarded by the group's lock) is non-zero, then
// takes one from it.
PYPTO_RUNTIME void group_take(const std::string& what, uint8_t& counter)
#if PYPTO_RUNTIME_BODY
{
    CoreGroup& g = *block.group;
    std::unique_lock<std::mutex> hold(g.lock);
    int me = group_core();
    while (counter == 0) {
        if (g.stuck) {
            fail(what, cross_core_stuck());
        }
        g.waiting_on[me] = &counter;
        --g.running;
        // Stuck when no core runs and no waiting core has been given what
        // it waits for (one that has will wake and go on).
        bool woken = false;
        for (uint8_t* other : g.waiting_on) {
            woken = woken || (other != nullptr && *other > 0);
        }
        if (g.running == 0 && !woken) {
            g.stuck = true;
            g.changed.notify_all();
            ++g.running;
            g.waiting_on[me] = nullptr;
            fail(what, cross_core_stuck());
        }
        g.changed.wait_for(hold, std::chrono::milliseconds(20));
        ++g.running;
        g.waiting_on[me] = nullptr;
        if (block.cancel != nullptr && __atomic_load_n(block.cancel, __ATOMIC_RELAXED) == block.launch_id) {
            fail(what, ": the launch did not finish within ", timeout_text(block.timeout_ms),
                 " (PYPTO_KERNEL_TIMEOUT); this core was stopped here, waiting");
        }
    }
    --counter;
}
#else
;
#endif

PYPTO_RUNTIME void group_add(const std::string& what, uint8_t& counter)
#if PYPTO_RUNTIME_BODY
{
    if (counter == 15) {
        fail(what, ": 15 sets are pending with no wait; the flag's counter is full");
    }
    ++counter;
}
#else
;
#endif

// Raises core `c`'s counter of `flag` in group `g` (its lock held) by a
// set of `mode` that arrives at cycle `at` (the modelled NPU) from `from`
// (core << 4 | pipe).
inline void group_raise(const std::string& what, CoreGroup& g, int c, uint16_t flag, uint8_t mode, double at = 0,
                        uint8_t from = 0)
{
    group_add(what, g.counter[c][flag]);
    g.counter_mode[c][flag] = mode;
    uint8_t& tail = g.model_tail[c][flag];
    g.model_at[c][flag][tail] = at;
    g.model_from[c][flag][tail] = from;
    tail = static_cast<uint8_t>((tail + 1) % 16);
}

// The modelled NPU: this core took a set of `flag` (group_take); `pipe`
// goes on once it has arrived.
inline void model_cross_wait(CoreGroup& g, uint16_t flag, pipe_t pipe)
{
    if (!modelling()) {
        return;
    }
    int me = group_core();
    double at;
    uint8_t from;
    {
        std::lock_guard<std::mutex> hold(g.lock);
        uint8_t& head = g.model_head[me][flag];
        at = g.model_at[me][flag][head];
        from = g.model_from[me][flag][head];
        head = static_cast<uint8_t>((head + 1) % 16);
    }
    model_wait_until(pipe, at, static_cast<pipe_t>(from & 15), static_cast<uint8_t>(from >> 4));
}

} // namespace pypto_emu

namespace AscendC {

template <uint8_t modeId, pipe_t pipe>
inline void CrossCoreSetFlag(uint16_t flagId)
{
    // The modes and pipes of the picked row (arch.h).
    static_assert(modeId < 32 && ((pypto_emu::Target::cross_core_modes >> modeId) & 1) != 0,
                  PYPTO_ARCH(CROSS_CORE_MODES));
    static_assert(pipe != PIPE_ALL && (pipe != PIPE_S || modeId == pypto_emu::Target::cross_core_pipe_s_mode),
                  PYPTO_ARCH(CROSS_CORE_PIPES));
    pypto_emu::poll("CrossCoreSetFlag");
    uint16_t limit = modeId == 4 ? 27 : 16;
    std::string what = pypto_emu::concat("CrossCoreSetFlag<", static_cast<int>(modeId), ">(",
                                         flagId, ")");
    if (flagId >= limit) {
        pypto_emu::fail(what, ": flag IDs are 0 to ", limit - 1);
    }
    pypto_emu::BlockState& b = pypto_emu::block;
    pypto_emu::CoreGroup* g = b.group;
    if (g == nullptr && (modeId == 2 || modeId == 4)) {
        pypto_emu::fail(what, ": signals ", pypto_emu::cross_core_not_mixed());
    }
    if (g != nullptr && modeId == 4) {
        pypto_emu::fail(what, ": mode 4 (Ascend 950) is not emulated");
    }
    if (modeId == 0 && b.num > 1) {
        pypto_emu::fail(what, ": mode 0 synchronises the ", b.aic ? "cube cores (AIC)" : "vector cores (AIV)",
                        " of all ", b.num, " blocks; a barrier across blocks is not emulated on the host");
    }
    if (g != nullptr && modeId == 1 && b.aic) {
        pypto_emu::fail(what, ": mode 1 synchronises the two vector cores of an AI core; the "
                              "cube core cannot take part");
    }
    if (g == nullptr) {
        // One core kind: mode 0 with one block (this core is all of its
        // kind) or mode 1 raise this core's own counter.
        pypto_emu::group_add(what, b.cross_core[flagId]);
        b.cross_core_mode[flagId] = modeId;
        return;
    }
    double at = pypto_emu::model_cross_set(pipe);
    uint8_t from = static_cast<uint8_t>(pypto_emu::group_core() << 4 | static_cast<int>(pipe));
    std::lock_guard<std::mutex> hold(g->lock);
    if (b.aic) {
        if (modeId == 2) {
            pypto_emu::group_raise(what, *g, 1, flagId, modeId, at, from);
            pypto_emu::group_raise(what, *g, 2, flagId, modeId, at, from);
        } else {
            // Mode 0 with one AI core: the only cube core is this one.
            pypto_emu::group_raise(what, *g, 0, flagId, modeId, at, from);
        }
    } else {
        // A pair's set arrives when the later of the two vector cores'
        // sets does; each core's sets pair in the order it made them.
        int kind = modeId == 2 ? 0 : modeId == 1 ? 1 : 2;
        uint8_t& tail = g->model_pair_tail[kind][b.sub][flagId];
        g->model_pair_at[kind][b.sub][flagId][tail] = at;
        tail = static_cast<uint8_t>((tail + 1) % 16);
        // The pair's arrival, and as its source the core whose set came
        // later (the first on a tie), whichever thread completed it.
        auto pair_at = [&]() {
            double latest = -1;
            for (int sub = 0; sub < 2; ++sub) {
                uint8_t& head = g->model_pair_head[kind][sub][flagId];
                double at_sub = g->model_pair_at[kind][sub][flagId][head];
                head = static_cast<uint8_t>((head + 1) % 16);
                if (at_sub > latest) {
                    latest = at_sub;
                    from = static_cast<uint8_t>((1 + sub) << 4 | static_cast<int>(pipe));
                }
            }
            return latest;
        };
        if (modeId == 2) {
            pypto_emu::group_add(what, g->from_aiv[b.sub][flagId]);
            if (g->from_aiv[0][flagId] > 0 && g->from_aiv[1][flagId] > 0) {
                --g->from_aiv[0][flagId];
                --g->from_aiv[1][flagId];
                double both = pair_at(); // sets `from`: before the call reads it
                pypto_emu::group_raise(what, *g, 0, flagId, modeId, both, from);
            }
        } else {
            uint8_t (&sets)[2][16] = g->pair_sets[modeId == 1 ? 1 : 0];
            pypto_emu::group_add(what, sets[b.sub][flagId]);
            if (sets[0][flagId] > 0 && sets[1][flagId] > 0) {
                --sets[0][flagId];
                --sets[1][flagId];
                double both = pair_at();
                pypto_emu::group_raise(what, *g, 1, flagId, modeId, both, from);
                pypto_emu::group_raise(what, *g, 2, flagId, modeId, both, from);
            }
        }
    }
    g->changed.notify_all();
}

// Waits for this core's counter of flagId. On Atlas A2/A3 modeId and pipe
// have no effect (the default mode 0 is what vendor kernels write after a
// cube core's CrossCoreSetFlag<2>); mode 4 (Ascend 950) is not emulated.
template <uint8_t modeId = 0, pipe_t pipe = PIPE_S>
inline void CrossCoreWaitFlag(uint16_t flagId)
{
    pypto_emu::poll("CrossCoreWaitFlag");
    uint16_t limit = modeId == 4 ? 27 : 16;
    std::string what = pypto_emu::concat("CrossCoreWaitFlag<", static_cast<int>(modeId), ">(",
                                         flagId, ")");
    if (flagId >= limit) {
        pypto_emu::fail(what, ": flag IDs are 0 to ", limit - 1);
    }
    pypto_emu::BlockState& b = pypto_emu::block;
    pypto_emu::CoreGroup* g = b.group;
    if (modeId == 4) {
        if (g == nullptr) {
            pypto_emu::fail(what, ": waits for ", pypto_emu::cross_core_not_mixed());
        }
        pypto_emu::fail(what, ": mode 4 (Ascend 950) is not emulated");
    }
    if (g == nullptr) {
        uint8_t& count = b.cross_core[flagId];
        if (count == 0) {
            if (modeId == 2) {
                pypto_emu::fail(what, ": waits for ", pypto_emu::cross_core_not_mixed());
            }
            pypto_emu::fail(what, ": no CrossCoreSetFlag with this ID is pending; on the NPU the "
                                  "core would wait for ever");
        }
        --count;
        return;
    }
    pypto_emu::group_take(what, g->counter[pypto_emu::group_core()][flagId]);
    pypto_emu::model_cross_wait(*g, flagId, pipe);
}

} // namespace AscendC

// CANN declares this at global scope.
inline AscendC::TPipe* GetTPipePtr()
{
    auto* pipe = static_cast<AscendC::TPipe*>(pypto_emu::block.pipe);
    if (pipe == nullptr) {
        pypto_emu::fail("GetTPipePtr: no TPipe is alive in this block; create one first");
    }
    return pipe;
}

namespace AscendC {
using ::GetTPipePtr;
} // namespace AscendC
