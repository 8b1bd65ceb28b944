// racecheck (SANITIZE_RACE): the pipes of an AI core (S, V, M, MTE1, MTE2,
// MTE3, FIX) run asynchronously on the NPU, so a buffer handed from one pipe
// to another must be ordered by a queue, a SetFlag/WaitFlag pair or a
// barrier. The host runs each block in program order, which hides every
// missing one; this file finds them.
//
// Model (README.md, "Sanitizer checks", has the tables):
// - Each instruction runs on the pipe the vendor's pipe table gives it
//   (`default_pipe`, or `OnPipe` where the memory alone does not say).
// - Vector clocks: `vc[p][q]` is how many instructions of pipe q are known
//   complete before pipe p's next one; `vc[p][p]` counts p's instructions.
//   A flag carries its source pipe's clock to the waiting pipe; a wait on
//   the scalar pipe (X_S) stalls issue, so every pipe learns it.
// - Per memory, pipe and kind (read/write), the last access of each byte:
//   an interval map of [begin, end) -> (clock, instruction). An access that
//   conflicts with another pipe's access not known complete is a race.
// - Program order holds within a pipe, except that MTE2 (and MTE3) copies
//   into overlapping bytes need PipeBarrier<PIPE_MTE2> between them.
// - Compiled with --cce-auto-sync (the default of the vendor's kernel
//   projects), the compiler orders S with V, MTE2 and MTE3 itself: those
//   pairs are ordered here too, as the compiler would order them.
#pragma once

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "../core.h"
#include "../memories.h"

namespace pypto_emu {

constexpr int pipe_slots = 8; // indexed by pipe_t; PIPE_ALL's slot unused

inline const char* pipe_name(int p)
{
    static const char* names[] = {"S", "V", "M", "MTE1", "MTE2", "MTE3", "ALL", "FIX"};
    return p >= 0 && p < pipe_slots ? names[p] : "?";
}

// Source and destination pipe of each HardEvent, in HardEvent order (core.h).
constexpr pipe_t hard_event_pipes[][2] = {
    {PIPE_MTE2, PIPE_MTE1}, {PIPE_MTE1, PIPE_MTE2}, {PIPE_MTE1, PIPE_M},    {PIPE_M, PIPE_MTE1},
    {PIPE_MTE2, PIPE_V},    {PIPE_V, PIPE_MTE2},    {PIPE_MTE3, PIPE_V},    {PIPE_V, PIPE_MTE3},
    {PIPE_M, PIPE_V},       {PIPE_V, PIPE_M},       {PIPE_V, PIPE_V},       {PIPE_MTE3, PIPE_MTE1},
    {PIPE_MTE1, PIPE_MTE3}, {PIPE_MTE1, PIPE_V},    {PIPE_MTE2, PIPE_M},    {PIPE_M, PIPE_MTE2},
    {PIPE_V, PIPE_MTE1},    {PIPE_M, PIPE_FIX},     {PIPE_FIX, PIPE_M},     {PIPE_MTE3, PIPE_MTE2},
    {PIPE_MTE2, PIPE_MTE3}, {PIPE_S, PIPE_V},       {PIPE_V, PIPE_S},       {PIPE_S, PIPE_MTE2},
    {PIPE_MTE2, PIPE_S},    {PIPE_S, PIPE_MTE3},    {PIPE_MTE3, PIPE_S},    {PIPE_MTE2, PIPE_FIX},
    {PIPE_FIX, PIPE_MTE2},  {PIPE_FIX, PIPE_S},     {PIPE_M, PIPE_S},       {PIPE_FIX, PIPE_MTE3}};
constexpr int hard_event_count = sizeof(hard_event_pipes) / sizeof(hard_event_pipes[0]);

// The HardEvent from `src` to `dst`, or -1 when there is none.
constexpr int hard_event_of(pipe_t src, pipe_t dst)
{
    for (int i = 0; i < hard_event_count; ++i) {
        if (hard_event_pipes[i][0] == src && hard_event_pipes[i][1] == dst) {
            return i;
        }
    }
    return -1;
}

// The pipe of an instruction that does not say: the vendor's pipe table
// ("API流水类型汇总") read by memory. Vector instructions (and UB->UB
// DataCopy) are V; L1 is written by MTE2 (GM->L1) and read by MTE1
// (LoadData); L0A/L0B are written by MTE1 and read by the cube (M); L0C is
// written by Mmad and read by Fixpipe (FIX).
inline pipe_t default_pipe(Memory mem, bool write)
{
    switch (mem) {
    case Memory::UB: return PIPE_V;
    case Memory::L1: return write ? PIPE_MTE2 : PIPE_MTE1;
    case Memory::L0A: case Memory::L0B: case Memory::BT: return write ? PIPE_MTE1 : PIPE_M;
    case Memory::L0C: return write ? PIPE_M : PIPE_FIX;
    case Memory::FB: return PIPE_FIX;
    default: return PIPE_S;
    }
}

// The pipe named by the running instruction (PIPE_ALL: none), and the
// instruction itself as poll() last saw it.
inline thread_local pipe_t current_pipe = PIPE_ALL;

// Runs the rest of the scope's accesses on `pipe`: copies between global
// and local memory (MTE2 in, MTE3 out), scalar element access (S), Mmad's
// read of the C matrix it accumulates into (M).
struct OnPipe {
    pipe_t saved;
    explicit OnPipe(pipe_t pipe) : saved(current_pipe) { current_pipe = pipe; }
    ~OnPipe() { current_pipe = saved; }
    OnPipe(const OnPipe&) = delete;
    OnPipe& operator=(const OnPipe&) = delete;
};

struct RaceAccess {
    uint64_t end;
    uint32_t clock;
    uint64_t seq;     // instruction number (poll), to tell one instruction's accesses apart
    const char* what; // the instruction
    Site site;        // where the kernel called it, when known
};

// "Muls (rows.cpp:45)": the instruction and its call's file name and line.
PYPTO_RUNTIME std::string race_instruction(const char* what, const Site& site)
#if PYPTO_RUNTIME_BODY
{
    if (site.file == nullptr) {
        return concat("(", what, ")");
    }
    const char* slash = std::strrchr(site.file, '/');
    return concat("(", what, ", ", slash != nullptr ? slash + 1 : site.file, ":", site.line, ")");
}
#else
;
#endif
// The race maps' nodes come from a free list of the thread's RaceState, so
// that recording an access (a node per range) and a block's reset (every
// node) do not call malloc and free each time; launches of a few tiny
// blocks spent a third of racecheck's cost there.
struct RaceNodePool {
    void* free = nullptr;      // a list through the nodes' first word
    size_t node_bytes = 0;     // the one node size pooled (the first allocated)
    std::vector<void*> chunks; // what the nodes were carved from
    RaceNodePool() = default;
    RaceNodePool(const RaceNodePool&) = delete;
    RaceNodePool& operator=(const RaceNodePool&) = delete;
    ~RaceNodePool()
    {
        for (void* c : chunks) {
            ::operator delete(c);
        }
    }
    void* take(size_t bytes)
    {
        if (node_bytes == 0) {
            node_bytes = bytes;
        }
        if (bytes != node_bytes) {
            return ::operator new(bytes);
        }
        if (free == nullptr) {
            // 16 nodes, then twice as many each time: a thread (launches
            // start fresh ones) faults in only the pages its blocks use.
            size_t per_chunk = size_t{16} << std::min<size_t>(chunks.size(), 6);
            chunks.reserve(chunks.size() + 1); // may throw before the chunk exists, not after
            auto* chunk = static_cast<uint8_t*>(::operator new(per_chunk * bytes));
            chunks.push_back(chunk);
            for (size_t i = per_chunk; i-- > 0;) {
                give(chunk + i * bytes, bytes);
            }
        }
        void* node = free;
        free = *static_cast<void**>(node);
        return node;
    }
    void give(void* node, size_t bytes)
    {
        if (bytes != node_bytes) {
            ::operator delete(node);
            return;
        }
        *static_cast<void**>(node) = free;
        free = node;
    }
};

// The thread's pool (its RaceState's), set before any map can allocate.
inline thread_local RaceNodePool* race_pool = nullptr;

template <typename T>
struct RacePoolAlloc {
    using value_type = T;
    RacePoolAlloc() = default;
    template <typename U>
    RacePoolAlloc(const RacePoolAlloc<U>&) noexcept
    {
    }
    T* allocate(size_t n)
    {
        if (n != 1) {
            return static_cast<T*>(::operator new(n * sizeof(T)));
        }
        return static_cast<T*>(race_pool->take(sizeof(T)));
    }
    void deallocate(T* p, size_t n) noexcept
    {
        if (n != 1) {
            ::operator delete(p);
            return;
        }
        race_pool->give(p, sizeof(T));
    }
    template <typename U>
    bool operator==(const RacePoolAlloc<U>&) const noexcept
    {
        return true;
    }
    template <typename U>
    bool operator!=(const RacePoolAlloc<U>&) const noexcept
    {
        return false;
    }
};

using RaceMap = std::map<uint64_t, RaceAccess, std::less<uint64_t>, RacePoolAlloc<std::pair<const uint64_t, RaceAccess>>>;

// The first access in tree `m` overlapping [at, at + n) that pipe p does not
// know to be complete (clock above `known`), skipping instruction `seq`.
inline const RaceMap::value_type* race_find(const RaceMap& m, uint64_t at, uint64_t n, uint32_t known,
                                            uint64_t skip_seq)
{
    auto it = m.upper_bound(at);
    if (it != m.begin()) {
        auto prev = std::prev(it);
        if (prev->second.end > at) {
            it = prev;
        }
    }
    for (; it != m.end() && it->first < at + n; ++it) {
        if (it->second.clock > known && it->second.seq != skip_seq) {
            return &*it;
        }
    }
    return nullptr;
}

// Records [at, at + n) in tree `m` as last accessed by `a`, over what was there.
PYPTO_RUNTIME void race_record(RaceMap& m, uint64_t at, uint64_t n, const RaceAccess& a)
#if PYPTO_RUNTIME_BODY
{
    uint64_t end = at + n;
    auto it = m.upper_bound(at);
    if (it != m.begin()) {
        auto prev = std::prev(it);
        if (prev->second.end > at) {
            RaceAccess tail = prev->second;
            prev->second.end = at; // keep [prev.begin, at)
            if (tail.end > end) {
                m.emplace(end, tail);
            }
            if (prev->first == at) {
                m.erase(prev);
            }
        }
    }
    it = m.lower_bound(at);
    while (it != m.end() && it->first < end) {
        if (it->second.end > end) {
            RaceAccess tail = it->second;
            it = m.erase(it);
            m.emplace(end, tail);
            break;
        }
        it = m.erase(it);
    }
    // Merge with the access just before when it is the same instruction.
    it = m.lower_bound(at);
    if (it != m.begin()) {
        auto prev = std::prev(it);
        if (prev->second.end == at && prev->second.seq == a.seq && prev->second.clock == a.clock) {
            prev->second.end = end;
            return;
        }
    }
    m.emplace(at, RaceAccess{end, a.clock, a.seq, a.what, a.site});
}
#else
;
#endif

// An access race_find found: where its range begins, and the access.
struct RaceHit {
    uint64_t begin;
    const RaceAccess* access;
};

// The last accesses of one memory by one pipe and kind: disjoint ranges.
// A block records a few dozen, so they live in a sorted array searched
// linearly; past `flat_limit` ranges (a kernel touching scattered bytes)
// they move to the tree, whose lookups and updates stay logarithmic.
class RaceRanges {
public:
    static constexpr size_t flat_limit = 32;

    void clear()
    {
        flat_.clear(); // keeps its capacity for the next block
        if (in_tree_) {
            tree_.clear();
            in_tree_ = false;
        }
    }

    RaceHit find(uint64_t at, uint64_t n, uint32_t known, uint64_t skip_seq) const
    {
        if (in_tree_) {
            const RaceMap::value_type* found = race_find(tree_, at, n, known, skip_seq);
            return found != nullptr ? RaceHit{found->first, &found->second} : RaceHit{0, nullptr};
        }
        for (const Entry& e : flat_) {
            if (e.begin >= at + n) {
                break;
            }
            if (e.access.end > at && e.access.clock > known && e.access.seq != skip_seq) {
                return RaceHit{e.begin, &e.access};
            }
        }
        return RaceHit{0, nullptr};
    }

    void record(uint64_t at, uint64_t n, const RaceAccess& a)
    {
        if (in_tree_) {
            race_record(tree_, at, n, a);
            return;
        }
        uint64_t end = at + n;
        flat_.reserve(flat_limit); // first: a failed allocation changes nothing
        // [i, j): the ranges [at, end) overlaps. What replaces them: the
        // first's part before `at`, the new access (unless the range just
        // before is the same instruction's and ends at `at`: it grows),
        // the last's part after `end`.
        size_t i = 0;
        while (i < flat_.size() && flat_[i].access.end <= at) {
            ++i;
        }
        size_t j = i;
        while (j < flat_.size() && flat_[j].begin < end) {
            ++j;
        }
        Entry with[3];
        size_t k = 0;
        if (i < j && flat_[i].begin < at) {
            with[k] = flat_[i];
            with[k].access.end = at;
            ++k;
        }
        Entry* before = k > 0 ? &with[0] : i > 0 ? &flat_[i - 1] : nullptr;
        bool grows = before != nullptr && before->access.end == at && before->access.seq == a.seq &&
                     before->access.clock == a.clock;
        if (!grows) {
            with[k++] = Entry{at, RaceAccess{end, a.clock, a.seq, a.what, a.site}};
        }
        if (i < j && flat_[j - 1].access.end > end) {
            with[k] = flat_[j - 1];
            with[k].begin = end;
            ++k;
        }
        if (flat_.size() - (j - i) + k > flat_limit) {
            move_to_tree();
            race_record(tree_, at, n, a);
            return;
        }
        if (grows) {
            before->access.end = end;
        }
        flat_.erase(flat_.begin() + static_cast<std::ptrdiff_t>(i), flat_.begin() + static_cast<std::ptrdiff_t>(j));
        flat_.insert(flat_.begin() + static_cast<std::ptrdiff_t>(i), with, with + k);
    }

private:
    struct Entry {
        uint64_t begin;
        RaceAccess access;
    };

    void move_to_tree()
    {
        RaceMap tree;
        for (const Entry& e : flat_) {
            tree.emplace(e.begin, e.access);
        }
        tree_.swap(tree);
        flat_.clear();
        in_tree_ = true;
    }

    std::vector<Entry> flat_; // sorted by begin
    RaceMap tree_;
    bool in_tree_ = false;
};

struct RaceState {
    RaceNodePool pool; // first: built before the maps and destroyed after them
    uint32_t vc[pipe_slots][pipe_slots] = {};
    uint32_t done[pipe_slots] = {};    // own instructions known complete (PipeBarrier, flags)
    uint64_t last_seq[pipe_slots] = {};
    uint32_t flag[hard_event_count][8][pipe_slots] = {}; // clocks a raised flag carries
    bool flags_set = false; // some flag was set this block (else `flag` is still all zero)
    // [memory][pipe][0 read, 1 write], and the largest clock in each map.
    RaceRanges acc[static_cast<int>(Memory::COUNT)][pipe_slots][2];
    uint32_t max_clock[static_cast<int>(Memory::COUNT)][pipe_slots][2] = {};
    // Per memory, the pipes with any access recorded (bit 1 << pipe): the
    // only ones an access needs to look at.
    uint8_t pipes_used[static_cast<int>(Memory::COUNT)] = {};

    RaceState() { race_pool = &pool; }
    RaceState(const RaceState&) = delete;
    RaceState& operator=(const RaceState&) = delete;

    // A new block: no clocks, flags or accesses (the nodes go back to the pool).
    void reset()
    {
        for (int mi = 0; mi < static_cast<int>(Memory::COUNT); ++mi) {
            for (unsigned used = pipes_used[mi]; used != 0; used &= used - 1) {
                for (RaceRanges& r : acc[mi][__builtin_ctz(used)]) {
                    r.clear();
                }
            }
        }
        std::memset(vc, 0, sizeof vc);
        std::memset(done, 0, sizeof done);
        std::memset(last_seq, 0, sizeof last_seq);
        if (flags_set) {
            std::memset(flag, 0, sizeof flag); // 8 KiB: only when a block used them
            flags_set = false;
        }
        std::memset(max_clock, 0, sizeof max_clock);
        std::memset(pipes_used, 0, sizeof pipes_used);
    }
};

// The race state of the running block, reset on its first use in a block.
// The fast path reads plain thread-locals only (see block_checks).
inline RaceState& race_state()
{
    thread_local RaceState* current = nullptr;
    thread_local uint64_t serial = 0;
    if (current == nullptr || serial != block_serial) {
        thread_local RaceState s;
        race_pool = &s.pool;
        s.reset();
        current = &s;
        serial = block_serial;
    }
    return *current;
}

using RaceClock = uint32_t[pipe_slots];

// Pipe `p` waits for a flag carrying clock `token`.
inline void race_join(RaceState& s, int p, const uint32_t* token, int from)
{
    for (int q = 0; q < pipe_slots; ++q) {
        if (q == p) {
            s.done[p] = std::max(s.done[p], token[q]);
        } else if (token[q] > s.vc[p][q]) {
            s.vc[p][q] = token[q];
        }
    }
    (void)from;
}

// Every pipe waits for `token`: a wait on the scalar pipe stalls the issue
// of every later instruction.
inline void race_join_all(RaceState& s, const uint32_t* token)
{
    for (int p = 0; p < pipe_slots; ++p) {
        race_join(s, p, token, -1);
    }
}

// The clock a flag set on pipe `p` now carries: all of p's instructions so far.
inline void race_snapshot(const RaceState& s, int p, uint32_t* out)
{
    for (int q = 0; q < pipe_slots; ++q) {
        out[q] = s.vc[p][q];
    }
}

// Describes the local buffer holding byte `at` of `mem` (defined in memory.h,
// where the queues are): ", TQue<VECIN> buffer 0 (UB bytes [0, 4096))" or "".
PYPTO_RUNTIME std::string describe_local(Memory mem, uint64_t at);

// Pipes the compiler orders itself (--cce-auto-sync): the scalar pipe with
// V, MTE2 and MTE3 (both ways) on a vector core.
inline bool race_auto_synced(int p, int q)
{
    auto vector_side = [](int x) { return x == PIPE_V || x == PIPE_MTE2 || x == PIPE_MTE3; };
    return (p == PIPE_S && vector_side(q)) || (q == PIPE_S && vector_side(p));
}

// Whether a TQue orders buffers from pipe q to pipe p (EnQue/DeQue, or
// FreeTensor/AllocTensor for the way back).
inline bool race_queue_pair(int q, int p)
{
    static const int pairs[][2] = {{PIPE_MTE2, PIPE_V}, {PIPE_V, PIPE_MTE3}, {PIPE_MTE2, PIPE_MTE1},
                                   {PIPE_MTE1, PIPE_M}, {PIPE_M, PIPE_FIX},  {PIPE_MTE2, PIPE_MTE3}};
    for (const auto& pr : pairs) {
        if ((pr[0] == q && pr[1] == p) || (pr[0] == p && pr[1] == q)) {
            return true;
        }
    }
    return false;
}

[[gnu::noinline]] PYPTO_RUNTIME void race_fail(Memory mem, int p, bool write, const char* what, int q,
                                        bool other_write, const RaceAccess& other, uint64_t lo, uint64_t hi)
#if PYPTO_RUNTIME_BODY
{
    const char* mname = memory_short_name(mem);
    const char* pn = pipe_name(p);
    const char* qn = pipe_name(q);
    std::string bytes = concat(mname, " bytes [", lo, ", ", hi, ")", describe_local(mem, lo), " ",
                               race_instruction(what, instr.site));
    std::string verb = write ? concat("writes ", bytes, other_write ? ", also written by " : ", still being read by ")
                             : concat("reads ", bytes, ", written by ");
    std::string fix;
    if (p == q) {
        fix = concat("; copies on one ", pn, " pipe into overlapping bytes are not ordered: insert PipeBarrier<PIPE_",
                     pn, ">() between them");
    } else if (hard_event_of(static_cast<pipe_t>(q), static_cast<pipe_t>(p)) >= 0) {
        fix = concat("; insert SetFlag<HardEvent::", qn, "_", pn, ">(id) after the ", other.what,
                     " and WaitFlag<HardEvent::", qn, "_", pn, ">(id) before the ", what);
        if (mem != Memory::GM && race_queue_pair(q, p)) {
            fix += other_write || !write
                       ? concat(", or pass the buffer through a TQue (EnQue after the ", other.what,
                                ", DeQue before the ", what, ")")
                       : concat(", or let a TQue order it (FreeTensor after the ", other.what,
                                ", AllocTensor before the ", what, ")");
        }
    } else {
        fix = concat("; no HardEvent goes from ", qn, " to ", pn, ": insert PipeBarrier<PIPE_ALL>() between them");
    }
    fail("racecheck: ", pn, " ", verb, qn, " ", race_instruction(other.what, other.site),
         " with no synchronisation between them", fix);
}
#else
;
#endif

// The pipe an access of `mem` runs on.
inline int race_pipe(Memory mem, bool write)
{
    return current_pipe != PIPE_ALL ? current_pipe : default_pipe(mem, write);
}

// Pipe `p`'s access counts as one of its running instruction's.
inline void race_tick(RaceState& s, int p)
{
    if (s.last_seq[p] != instr.seq || s.vc[p][p] == 0) {
        s.last_seq[p] = instr.seq;
        ++s.vc[p][p];
    }
}

// Records pipe `p`'s access of bytes [at, at + n) of memory `mi`.
inline void race_note(RaceState& s, int p, int mi, uint64_t at, uint64_t n, bool write, const char* what)
{
    RaceAccess a{0, s.vc[p][p], instr.seq, what, instr.site};
    s.acc[mi][p][write ? 1 : 0].record(at, n, a);
    uint32_t& mc = s.max_clock[mi][p][write ? 1 : 0];
    mc = std::max(mc, a.clock);
    s.pipes_used[mi] = static_cast<uint8_t>(s.pipes_used[mi] | (1u << p));
}

// Calls `hit(q, kind, access)` for each recorded access that overlaps
// [at, at + n) of memory `mi` and that pipe `p` does not know to be
// complete (kind 1: a write), pipe by pipe in pipe order; stops and
// returns false when `hit` does. The pipes it looks at: every other pipe,
// and p itself for a copy engine's write (MTE2 and MTE3 copies into
// overlapping bytes are not ordered).
template <typename Hit>
bool race_scan(RaceState& s, int p, int mi, uint64_t at, uint64_t n, bool write, Hit&& hit)
{
    for (unsigned used = s.pipes_used[mi]; used != 0; used &= used - 1) {
        int q = __builtin_ctz(used);
        bool same = q == p;
        if (same && !(write && (p == PIPE_MTE2 || p == PIPE_MTE3))) {
            continue;
        }
        for (int kind = 1; kind >= (write && !same ? 0 : 1); --kind) {
            // Read again each time: `hit` may order the pipes (auto-sync).
            uint32_t known = same ? s.done[p] : s.vc[p][q];
            if (s.max_clock[mi][q][kind] <= known) {
                continue;
            }
            RaceHit found = s.acc[mi][q][kind].find(at, n, known, same ? instr.seq : ~0ull);
            if (found.access != nullptr && !hit(q, kind, found.begin, *found.access)) {
                return false;
            }
        }
    }
    return true;
}

// Whether race_access(mem, at, n, write, ...) would find no earlier access
// to report or to order (it then only records the access): the same
// lookups, changing nothing.
PYPTO_RUNTIME bool race_clean(Memory mem, uint64_t at, uint64_t n, bool write)
#if PYPTO_RUNTIME_BODY
{
    if (mem == Memory::GM || n == 0) {
        return true;
    }
    return race_scan(race_state(), race_pipe(mem, write), static_cast<int>(mem), at, n, write,
                     [](int, int, uint64_t, const RaceAccess&) { return false; });
}
#else
;
#endif

// race_access of an access race_clean passed: records it.
PYPTO_RUNTIME void race_commit(Memory mem, uint64_t at, uint64_t n, bool write, const char* what)
#if PYPTO_RUNTIME_BODY
{
    if (mem == Memory::GM || n == 0) {
        return;
    }
    RaceState& s = race_state();
    int p = race_pipe(mem, write);
    race_tick(s, p);
    race_note(s, p, static_cast<int>(mem), at, n, write, what);
}
#else
;
#endif

// Pipe `p`'s access of bytes [at, at + n) of `mem`.
PYPTO_RUNTIME void race_access(Memory mem, uint64_t at, uint64_t n, bool write, const char* what)
#if PYPTO_RUNTIME_BODY
{
    if (mem == Memory::GM || n == 0) {
        return;
    }
    RaceState& s = race_state();
    int p = race_pipe(mem, write);
    race_tick(s, p);
    int mi = static_cast<int>(mem);
    race_scan(s, p, mi, at, n, write, [&](int q, int kind, uint64_t begin, const RaceAccess& other) {
        if (race_auto_synced(p, q)) {
            uint32_t token[pipe_slots];
            race_snapshot(s, q, token);
            if (p == PIPE_S) {
                race_join_all(s, token); // WaitFlag<Q_S>: the scalar pipe stalls
            } else {
                race_join(s, p, token, q); // SetFlag/WaitFlag<S_P>
            }
            return true;
        }
        uint64_t lo = std::max(at, begin);
        uint64_t hi = std::min(at + n, other.end);
        race_fail(mem, p, write, what, q, kind == 1, other, lo, hi);
        return true; // not reached: race_fail throws
    });
    race_note(s, p, mi, at, n, write, what);
}
#else
;
#endif

// The pipe that fills a buffer at position `p`, and the one that uses it.
inline pipe_t position_producer(TPosition p)
{
    switch (p) {
    case TPosition::VECIN: case TPosition::A1: case TPosition::B1: case TPosition::C1: case TPosition::TSCM:
        return PIPE_MTE2;
    case TPosition::A2: case TPosition::B2: case TPosition::C2: return PIPE_MTE1;
    case TPosition::CO1: return PIPE_M;
    case TPosition::CO2: return PIPE_FIX;
    default: return PIPE_V;
    }
}

inline pipe_t position_consumer(TPosition p)
{
    switch (p) {
    case TPosition::VECOUT: case TPosition::CO2: return PIPE_MTE3;
    case TPosition::A1: case TPosition::B1: case TPosition::C1: case TPosition::TSCM: return PIPE_MTE1;
    case TPosition::A2: case TPosition::B2: case TPosition::C2: return PIPE_M;
    case TPosition::CO1: return PIPE_FIX;
    default: return PIPE_V;
    }
}

// The flag pair a queue's EnQue/DeQue stand for: producer -> consumer
// (FreeTensor/AllocTensor: the way back). A TQue<pos> fills and empties
// at pos; a TQueBind<src, dst> is filled toward src and emptied toward
// dst (GM ends name the buffer's own position); EnQue<GM, VECIN/VECOUT>
// and EnQue<VECIN/VECOUT, GM> name MTE2 -> V and V -> MTE3.
inline void queue_pipes(TPosition src, TPosition dst, TPosition user_src, TPosition user_dst, pipe_t& from,
                        pipe_t& to)
{
    if (user_src == TPosition::GM) {
        from = PIPE_MTE2;
        to = PIPE_V;
    } else if (user_dst == TPosition::GM) {
        from = PIPE_V;
        to = PIPE_MTE3;
    } else {
        from = position_producer(src == TPosition::GM ? dst : src);
        to = position_consumer(dst == TPosition::GM ? src : dst);
    }
}

// SetFlag<event>(id) on its source pipe, WaitFlag<event>(id) on its destination.
inline void race_set_flag(int event, int id)
{
    RaceState& s = race_state();
    s.flags_set = true;
    race_snapshot(s, hard_event_pipes[event][0], s.flag[event][id]);
}

inline void race_wait_flag(int event, int id)
{
    RaceState& s = race_state();
    int dst = hard_event_pipes[event][1];
    if (dst == PIPE_S) {
        race_join_all(s, s.flag[event][id]);
    } else {
        race_join(s, dst, s.flag[event][id], hard_event_pipes[event][0]);
    }
}

// PipeBarrier<pipe>: the pipe's own instructions complete before its next;
// PIPE_ALL: every pipe's, before any pipe's next.
inline void race_barrier(pipe_t pipe)
{
    RaceState& s = race_state();
    if (pipe != PIPE_ALL) {
        s.done[pipe] = s.vc[pipe][pipe];
        return;
    }
    uint32_t all[pipe_slots] = {};
    for (int p = 0; p < pipe_slots; ++p) {
        all[p] = s.vc[p][p];
    }
    race_join_all(s, all);
}

// Queues: the producer's clock travels with EnQue to DeQue, the consumer's
// with FreeTensor to the next AllocTensor of the buffer.
inline void race_queue_signal(int from, uint32_t* token)
{
    race_snapshot(race_state(), from, token);
}

inline void race_queue_wait(int to, const uint32_t* token)
{
    RaceState& s = race_state();
    race_join(s, to, token, -1);
}

} // namespace pypto_emu
