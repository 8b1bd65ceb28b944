// Small system-level names of the Ascend C basic API for Atlas A2/A3: scalar
// bit counting and uncached scalar access to global memory, data and
// instruction cache control, the store-atomic configuration, TQueSync and
// DataSyncBarrier, the inter-core and inter-task synchronisation calls,
// Async, a few system values, and Trap / ascendc_assert / the profiling
// markers.
//
// The host has no caches and runs each block in program order, so cache
// control and barriers inside a core have nothing to do; they check their
// documented arguments. Blocks run on a thread pool, not all at once, so a
// wait for another block cannot be honoured: such waits are errors (as
// CrossCoreSetFlag mode 0 with several blocks, sync.h), while the same
// calls in a launch of one block behave as on the NPU.
#pragma once

#include <type_traits>
#include <vector>

#include "misc.h"

namespace pypto_emu {

// Per-block state of this header. BlockState (core.h) is reset by run_block;
// this state is reset the first time a block of a new launch touches it.
struct SystemState {
    uint64_t launch = UINT64_MAX;
    uint32_t idx = 0;
    bool next_task_started = false;  // SetNextTaskStart called
    bool pre_task_waited = false;    // WaitPreTaskEnd called
    bool determine_ready = false;    // InitDetermineComputeWorkspace called
    uint32_t determine_waits = 0;    // WaitPreBlock calls
    uint32_t determine_notifies = 0; // NotifyNextBlock calls
    std::vector<std::pair<int32_t, int32_t>> ib_set; // (blockIdx, eventID) raised by IBSet
};

inline SystemState& system_state()
{
    static thread_local SystemState state;
    if (state.launch != block.launch_id || state.idx != block.idx) {
        state = SystemState{};
        state.launch = block.launch_id;
        state.idx = block.idx;
    }
    return state;
}

// hard_event_of (race.h) gives the HardEvent of a TQueSync<src, dst> pair.

// Bytes a workspace GlobalTensor may hold: its size when SetGlobalBuffer was
// given one, else checked against the launch's tensors.
template <typename G>
void check_gm_workspace(const G& gm, uint64_t need, const char* what, const char* rule)
{
    uint64_t have = gm.GetSize() * sizeof(typename G::PrimType);
    if (gm.GetSize() != 0 && have < need) {
        fail(what, ": gmWorkspace holds ", have, " bytes; it needs at least ", need, " (", rule,
             ")");
    }
    check_gm(gm.GetPhyAddr(), need, what);
}

template <typename L>
void check_ub_workspace(const L& ub, uint64_t need, const char* what, const char* rule)
{
    auto pos = static_cast<AscendC::TPosition>(ub.GetPosition());
    if (pos != AscendC::TPosition::VECIN && pos != AscendC::TPosition::VECCALC &&
        pos != AscendC::TPosition::VECOUT) {
        fail(what, ": ubWorkspace must be at VECIN, VECCALC or VECOUT");
    }
    if (ub.GetLength() < need) {
        fail(what, ": ubWorkspace holds ", ub.GetLength(), " bytes; it needs at least ", need,
             " (", rule, ")");
    }
}

} // namespace pypto_emu

// Kernel types (KERNEL_TASK_TYPE_DEFAULT / KERNEL_TASK_TYPE, misc.h); a
// global enum as documented.
enum KernelMetaType {
    KERNEL_TYPE_AIV_ONLY,
    KERNEL_TYPE_AIC_ONLY,
    KERNEL_TYPE_MIX_AIV_1_0,
    KERNEL_TYPE_MIX_AIC_1_0,
    KERNEL_TYPE_MIX_AIC_1_1,
    KERNEL_TYPE_MIX_AIC_1_2,
    KERNEL_TYPE_AICORE,
    KERNEL_TYPE_VECTORCORE,
    KERNEL_TYPE_MIX_AICORE,
    KERNEL_TYPE_MIX_VECTOR_CORE,
    KERNEL_TYPE_MAX
};

namespace pypto_emu {

// Atlas A2/A3 (and the Ascend 950) take the first six kernel types.
constexpr bool supported_kernel_type(KernelMetaType t) { return t <= KERNEL_TYPE_MIX_AIC_1_2; }

} // namespace pypto_emu

namespace AscendC {

using ::KernelMetaType;

// ---- scalar bit operations ---------------------------------------------

// Leading 0 bits of the 64-bit value (64 for 0).
inline int64_t CountLeadingZero(uint64_t valueIn)
{
    return valueIn == 0 ? 64 : __builtin_clzll(valueIn);
}

// How many bits after the sign bit, from the top, equal the sign bit; -1
// when every bit does (0 and -1).
inline int64_t CountBitsCntSameAsSignBit(int64_t valueIn)
{
    if (valueIn == 0 || valueIn == -1) {
        return -1;
    }
    return __builtin_clrsbll(valueIn);
}

// How many bits of the value are `countValue` (0 or 1).
template <int countValue>
inline int64_t GetBitCount(uint64_t valueIn)
{
    static_assert(countValue == 0 || countValue == 1, "GetBitCount<countValue>: countValue must be 0 or 1");
    int64_t ones = __builtin_popcountll(valueIn);
    return countValue == 1 ? ones : 64 - ones;
}

// The position of the lowest bit equal to `countValue`, or -1.
template <int countValue>
inline int64_t GetSFFValue(uint64_t valueIn)
{
    static_assert(countValue == 0 || countValue == 1, "GetSFFValue<countValue>: countValue must be 0 or 1");
    uint64_t bits = countValue == 1 ? valueIn : ~valueIn;
    return bits == 0 ? -1 : __builtin_ctzll(bits);
}

// ---- uncached scalar access to global memory -----------------------------

template <typename T>
constexpr bool dcache_bypass_type =
    std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t> || std::is_same_v<T, int16_t> ||
    std::is_same_v<T, uint16_t> || std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t> ||
    std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>;

// The host has no data cache: a plain, bounds-checked load and store.
template <typename T>
inline T ReadGmByPassDCache(__gm__ T* addr)
{
    static_assert(dcache_bypass_type<T>, "ReadGmByPassDCache<T>: T must be an 8-, 16-, 32- or 64-bit integer");
    pypto_emu::check_gm(addr, sizeof(T), "ReadGmByPassDCache");
    return __atomic_load_n(addr, __ATOMIC_SEQ_CST);
}

template <typename T>
inline void WriteGmByPassDCache(__gm__ T* addr, T value)
{
    static_assert(dcache_bypass_type<T>, "WriteGmByPassDCache<T>: T must be an 8-, 16-, 32- or 64-bit integer");
    pypto_emu::check_gm(addr, sizeof(T), "WriteGmByPassDCache", true);
    __atomic_store_n(addr, value, __ATOMIC_SEQ_CST);
}

// ---- cache control --------------------------------------------------------

enum class CacheLine : uint8_t { SINGLE_CACHE_LINE, ENTIRE_DATA_CACHE };
enum class DcciDst : uint8_t { CACHELINE_ALL, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };

template <DcciDst dcciDst>
constexpr void check_dcci_dst()
{
    static_assert(pypto_emu::Target::dcci_cacheline_atomic || dcciDst != DcciDst::CACHELINE_ATOMIC,
                  "DataCacheCleanAndInvalid: DcciDst::CACHELINE_ATOMIC is not supported on " PYPTO_ARCH(TARGET_NAME));
}

// No data cache on the host: scalar accesses always see global memory, so
// cleaning and invalidating has nothing to do.
template <typename T, CacheLine entireType, DcciDst dcciDst>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst)
{
    check_dcci_dst<dcciDst>();
    (void)dst;
    pypto_emu::poll("DataCacheCleanAndInvalid");
}

template <typename T, CacheLine entireType, DcciDst dcciDst>
inline void DataCacheCleanAndInvalid(const LocalTensor<T>& dst)
{
    check_dcci_dst<dcciDst>();
    (void)dst;
    pypto_emu::poll("DataCacheCleanAndInvalid");
}

template <typename T, CacheLine entireType>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst)
{
    (void)dst;
    pypto_emu::poll("DataCacheCleanAndInvalid");
}

template <typename T>
inline void DataCachePreload(const GlobalTensor<uint64_t>& src, const T cacheOffset)
{
    static_assert(std::is_same_v<T, int16_t> || std::is_same_v<T, int64_t>,
                  "DataCachePreload: cacheOffset must be int16_t or int64_t");
    (void)src;
    (void)cacheOffset;
    pypto_emu::poll("DataCachePreload");
}

// The prefetch length counts 2 KB units and must stay below the core's
// instruction cache: 16 KB on a vector core (less than 8), 32 KB on a cube
// core (less than 16).
inline void ICachePreLoad(const int64_t preFetchLen)
{
    pypto_emu::poll("ICachePreLoad");
    int64_t limit = pypto_emu::block.aic ? 16 : 8;
    if (preFetchLen >= limit) {
        pypto_emu::fail("ICachePreLoad(", preFetchLen, "): the length counts 2 KB units and must be less than ",
                        limit, " (the ", limit * 2, " KB instruction cache of a ",
                        pypto_emu::block.aic ? "cube" : "vector", " core)");
    }
}

// 0: the preload has finished (there is nothing to load on the host).
inline int64_t GetICachePreloadStatus() { return 0; }

// ---- store-atomic configuration ------------------------------------------

enum class AtomicDtype { ATOMIC_NONE = 0, ATOMIC_F32, ATOMIC_F16, ATOMIC_S16, ATOMIC_S32, ATOMIC_S8, ATOMIC_BF16 };
enum class AtomicOp { ATOMIC_SUM = 0 };

// The atomic-add mode of SetAtomicAdd<T>(), chosen by its documented code
// (ATOMIC_NONE turns it off).
template <AtomicDtype type, AtomicOp op>
inline void SetStoreAtomicConfig()
{
    using pypto_emu::AtomicType;
    constexpr AtomicType types[] = {AtomicType::None, AtomicType::F32, AtomicType::F16, AtomicType::I16,
                                    AtomicType::I32,  AtomicType::I8,  AtomicType::BF16};
    constexpr AtomicType t = types[static_cast<int>(type)];
    pypto_emu::block.atomic_type = static_cast<uint8_t>(t);
    pypto_emu::block.atomic_op =
        static_cast<uint8_t>(t == AtomicType::None ? pypto_emu::AtomicOp::None : pypto_emu::AtomicOp::Add);
}

// The mode in effect, as SetStoreAtomicConfig's codes: atomicType 0 when
// atomics are off; atomicOp 0 for add (1 and 2 after SetAtomicMax /
// SetAtomicMin, whose codes the A2/A3 pages do not give).
inline void GetStoreAtomicConfig(uint16_t& atomicType, uint16_t& atomicOp)
{
    using pypto_emu::AtomicType;
    static constexpr uint16_t codes[] = {0, 1, 2, 6, 4, 3, 5}; // None F32 F16 BF16 I32 I16 I8
    auto op = static_cast<pypto_emu::AtomicOp>(pypto_emu::block.atomic_op);
    atomicType = op == pypto_emu::AtomicOp::None ? 0 : codes[pypto_emu::block.atomic_type % 7];
    atomicOp = op == pypto_emu::AtomicOp::Max ? 1 : op == pypto_emu::AtomicOp::Min ? 2 : 0;
}

// ---- synchronisation inside a core ----------------------------------------

// SetFlag/WaitFlag between two pipes, through the HardEvent of the pair
// (the same flags as SetFlag<HardEvent>, with the same checks).
template <pipe_t src, pipe_t dst>
class TQueSync {
    static constexpr int event = pypto_emu::hard_event_of(src, dst);
    static_assert(event >= 0, "TQueSync<src, dst>: no HardEvent synchronises these two pipes");

public:
    void SetFlag(TEventID id) { AscendC::SetFlag<static_cast<HardEvent>(event)>(id); }
    void WaitFlag(TEventID id) { AscendC::WaitFlag<static_cast<HardEvent>(event)>(id); }
};

enum class MemDsbT : uint8_t { ALL, DDR, UB, SEQ };

// Each block runs in program order: earlier memory accesses are done.
template <MemDsbT arg0>
inline void DataSyncBarrier()
{
    pypto_emu::poll("DataSyncBarrier");
}

// ---- synchronisation across cores -----------------------------------------

// The hard form: every block of the launch meets here. With one block that
// is immediate; with several it cannot be emulated (blocks run on a thread
// pool, not all at once), nor with the cube cores of a mixed kernel.
template <bool isAIVOnly = true>
inline void SyncAll()
{
    pypto_emu::poll("SyncAll");
    if (!isAIVOnly) {
        pypto_emu::fail("SyncAll<false>: a barrier across the cube and vector cores of every block is "
                        "not emulated on the host");
    }
    if (pypto_emu::block.num > 1) {
        pypto_emu::fail("SyncAll: waits for all ", pypto_emu::block.num,
                        " blocks; a barrier across blocks is not emulated on the host");
    }
}

// The soft form, through workspaces of GetBlockNum() * 32 bytes; usedCores
// (0: all) blocks take part.
template <bool isAIVOnly = true>
inline void SyncAll(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace,
                    const int32_t usedCores = 0)
{
    static_assert(isAIVOnly, "SyncAll<false>: the soft form synchronises vector cores only");
    pypto_emu::poll("SyncAll");
    uint64_t need = static_cast<uint64_t>(pypto_emu::block.num) * 32;
    pypto_emu::check_gm_workspace(gmWorkspace, need, "SyncAll", "GetBlockNum() * 32 bytes");
    pypto_emu::check_ub_workspace(ubWorkspace, need, "SyncAll", "GetBlockNum() * 32 bytes");
    if (usedCores < 0 || static_cast<uint32_t>(usedCores) > pypto_emu::block.num) {
        pypto_emu::fail("SyncAll: usedCores is ", usedCores, "; it must be 0 (all) to GetBlockNum() (",
                        pypto_emu::block.num, ")");
    }
    uint32_t cores = usedCores == 0 ? pypto_emu::block.num : static_cast<uint32_t>(usedCores);
    if (cores > 1) {
        pypto_emu::fail("SyncAll: waits for ", cores,
                        " blocks; a barrier across blocks is not emulated on the host");
    }
}

namespace detail_ib {
inline uint32_t cores(bool aiv_only) { return pypto_emu::block.num * (aiv_only ? 1 : 2); }

template <typename G, typename L>
void check(const char* what, const G& gm, const L& ub, int32_t blockIdx, int32_t eventID, bool aiv_only)
{
    uint32_t n = cores(aiv_only);
    if (blockIdx < 0 || static_cast<uint32_t>(blockIdx) >= n) {
        pypto_emu::fail(what, ": blockIdx ", blockIdx, " is not a core of the launch (0 to ", n - 1, ")");
    }
    if (eventID < 0) {
        pypto_emu::fail(what, ": eventID ", eventID, " is negative");
    }
    uint64_t need = (static_cast<uint64_t>(n) * eventID + blockIdx + 1) * 32;
    pypto_emu::check_gm_workspace(gm, need, what,
                                  "cores * 32 * eventID + blockIdx * 32 + 32 bytes");
    pypto_emu::check_ub_workspace(ub, 32, what, "32 bytes");
}
} // namespace detail_ib

// Raises the flag (blockIdx, eventID) that IBWait with the same arguments
// waits for. The flag is kept per block (the workspace is not written).
template <bool isAIVOnly = true>
inline void IBSet(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace,
                  int32_t blockIdx, int32_t eventID)
{
    pypto_emu::poll("IBSet");
    detail_ib::check("IBSet", gmWorkspace, ubWorkspace, blockIdx, eventID, isAIVOnly);
    auto& raised = pypto_emu::system_state().ib_set;
    std::pair<int32_t, int32_t> key{blockIdx, eventID};
    for (const auto& k : raised) {
        if (k == key) {
            return;
        }
    }
    raised.push_back(key);
}

// Waits for IBSet(blockIdx, eventID). Only this block's own earlier IBSet
// can satisfy it on the host.
template <bool isAIVOnly = true>
inline void IBWait(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace,
                   int32_t blockIdx, int32_t eventID)
{
    pypto_emu::poll("IBWait");
    detail_ib::check("IBWait", gmWorkspace, ubWorkspace, blockIdx, eventID, isAIVOnly);
    for (const auto& k : pypto_emu::system_state().ib_set) {
        if (k.first == blockIdx && k.second == eventID) {
            return;
        }
    }
    if (pypto_emu::block.num > 1) {
        pypto_emu::fail("IBWait(blockIdx ", blockIdx, ", eventID ", eventID,
                        "): waits for an IBSet of another block; a wait across blocks is not "
                        "emulated on the host");
    }
    pypto_emu::fail("IBWait(blockIdx ", blockIdx, ", eventID ", eventID,
                    "): no IBSet with these arguments came first; on the NPU the core would wait "
                    "for ever");
}

namespace detail_determine {
template <typename G, typename L>
void check(const char* what, const G& gm, const L& ub)
{
    uint64_t n = pypto_emu::block.num;
    pypto_emu::check_gm_workspace(gm, n * 32, what, "GetBlockNum() * 32 bytes");
    pypto_emu::check_ub_workspace(ub, n * 32 + 32, what, "GetBlockNum() * 32 + 32 bytes");
}
} // namespace detail_determine

// Blocks in ascending order (deterministic computation): WaitPreBlock
// waits for the previous block's NotifyNextBlock. On the host block 0's
// first wait passes; with one block each later wait needs this block's own
// earlier notify; any wait for another block is an error.
template <typename T>
inline void InitDetermineComputeWorkspace(GlobalTensor<T>& gmWorkspace, LocalTensor<T>& ubWorkspace)
{
    pypto_emu::poll("InitDetermineComputeWorkspace");
    detail_determine::check("InitDetermineComputeWorkspace", gmWorkspace, ubWorkspace);
    pypto_emu::system_state().determine_ready = true;
}

template <typename T>
inline void WaitPreBlock(GlobalTensor<T>& gmWorkspace, LocalTensor<T>& ubWorkspace)
{
    pypto_emu::poll("WaitPreBlock");
    detail_determine::check("WaitPreBlock", gmWorkspace, ubWorkspace);
    auto& s = pypto_emu::system_state();
    if (!s.determine_ready) {
        pypto_emu::fail("WaitPreBlock: call InitDetermineComputeWorkspace first");
    }
    bool first = s.determine_waits == 0 && pypto_emu::block.idx == 0;
    bool own = pypto_emu::block.num == 1 && s.determine_notifies >= s.determine_waits;
    if (!first && !own) {
        if (pypto_emu::block.num > 1) {
            pypto_emu::fail("WaitPreBlock: waits for block ",
                            (pypto_emu::block.idx + pypto_emu::block.num - 1) % pypto_emu::block.num,
                            "; a wait across blocks is not emulated on the host");
        }
        pypto_emu::fail("WaitPreBlock: no NotifyNextBlock came since the last WaitPreBlock; on the "
                        "NPU the core would wait for ever");
    }
    ++s.determine_waits;
}

template <typename T>
inline void NotifyNextBlock(GlobalTensor<T>& gmWorkspace, LocalTensor<T>& ubWorkspace)
{
    pypto_emu::poll("NotifyNextBlock");
    detail_determine::check("NotifyNextBlock", gmWorkspace, ubWorkspace);
    auto& s = pypto_emu::system_state();
    if (!s.determine_ready) {
        pypto_emu::fail("NotifyNextBlock: call InitDetermineComputeWorkspace first");
    }
    ++s.determine_notifies;
}

// ---- synchronisation between tasks (SuperKernel early start) --------------

// No effect on Atlas A2 (documented) and none on the host, where launches
// run one after another. Each may be called once per core.
template <pipe_t AIV_PIPE = PIPE_MTE3, pipe_t AIC_PIPE = PIPE_FIX, bool FORCE = false>
inline void SetNextTaskStart()
{
    static_assert(AIV_PIPE == PIPE_MTE2 || AIV_PIPE == PIPE_MTE3 || AIV_PIPE == PIPE_S || AIV_PIPE == PIPE_V,
                  "SetNextTaskStart: AIV_PIPE must be PIPE_MTE2, PIPE_MTE3, PIPE_S or PIPE_V");
    static_assert(AIC_PIPE == PIPE_MTE1 || AIC_PIPE == PIPE_MTE2 || AIC_PIPE == PIPE_MTE3 ||
                      AIC_PIPE == PIPE_FIX || AIC_PIPE == PIPE_M,
                  "SetNextTaskStart: AIC_PIPE must be PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_FIX or PIPE_M");
    pypto_emu::poll("SetNextTaskStart");
    auto& s = pypto_emu::system_state();
    if (s.next_task_started) {
        pypto_emu::fail("SetNextTaskStart: called a second time; each core may call it once");
    }
    s.next_task_started = true;
}

template <bool FORCE = false>
inline void WaitPreTaskEnd()
{
    pypto_emu::poll("WaitPreTaskEnd");
    auto& s = pypto_emu::system_state();
    if (s.pre_task_waited) {
        pypto_emu::fail("WaitPreTaskEnd: called a second time; each core may call it once");
    }
    s.pre_task_waited = true;
}

// ---- execution mode and system values --------------------------------------

enum class EngineType : uint8_t { AIC, AIV };

// Calls funPtr(args...) on the core kind `engine` names, and nothing on the
// other (every host block is a vector core for now).
template <EngineType engine, auto funPtr, class... Args>
inline void Async(Args... args)
{
    bool aic = pypto_emu::block.aic;
    if ((engine == EngineType::AIC) == aic) {
        funPtr(args...);
    }
}

// A DataBlock, the unit of the repeat forms' block strides: 32 bytes.
constexpr int16_t GetDataBlockSizeInBytes() { return 32; }

// A host code address just after the call: identical at one call site,
// different at different ones; not an NPU program counter.
__attribute__((noinline)) inline int64_t GetProgramCounter()
{
    asm volatile("" ::: "memory"); // not a pure function: each call is kept
    return static_cast<int64_t>(reinterpret_cast<uintptr_t>(__builtin_return_address(0)));
}

// ---- debugging ---------------------------------------------------------------

// Stops the core: the block ends with an error.
[[noreturn]] inline void Trap()
{
    pypto_emu::fail("Trap: the kernel called Trap(); the core stopped here");
}

// Profiling markers for msOpProf: nothing to mark on the host.
inline void MetricsProfStart() { pypto_emu::poll("MetricsProfStart"); }
inline void MetricsProfStop() { pypto_emu::poll("MetricsProfStop"); }

} // namespace AscendC

// The documented example calls them unqualified.
using AscendC::MetricsProfStart;
using AscendC::MetricsProfStop;

// ascendc_assert(expr) and ascendc_assert(expr, fmt, args...): like assert
// (misc.h) but not switched off by NDEBUG, only by ASCENDC_DUMP=0.
#if defined(ASCENDC_DUMP) && ASCENDC_DUMP == 0
#define ascendc_assert(expr, ...) ((void)0)
#else
#define ascendc_assert(expr, ...)                                                                  \
    ((expr) ? (void)0                                                                              \
            : ::pypto_emu::assert_failed("ascendc_assert", #expr, __FILE__, __LINE__, ##__VA_ARGS__))
#endif
