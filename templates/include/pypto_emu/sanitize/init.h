// initcheck (SANITIZE_INIT): a shadow byte per byte of each on-chip
// memory, set when an instruction of the running block writes the byte and
// checked when one reads it (README.md, "initcheck"). Accesses reach it
// through the access channel (access.h; the tensor-level helpers
// AccessView, access_read, access_write and AccessMove are in memory.h,
// next to LocalTensor).
#pragma once

#include <cstdlib>
#include <cstring>
#include <new>
#include <memory>

#include "../core.h"
#include "../memories.h"

namespace pypto_emu {

// ---- initcheck (SANITIZE_INIT) -------------------------------------------
// A shadow byte per byte of each on-chip memory: 1 once an instruction of
// this block wrote it. Every block of every launch starts with nothing
// written (the arenas themselves carry over between blocks).

struct InitShadowFree {
    void operator()(uint8_t* p) const { std::free(p); }
};

struct InitShadow {
    // calloc'd: a fresh thread's (each launch of several blocks starts
    // threads) gets zero pages from the system, touched only where used.
    std::unique_ptr<uint8_t[], InitShadowFree> bytes;
    uint64_t launch = ~0ull;
    uint32_t block_idx = ~0u;
    bool aic = false;
    // Bytes [lo, hi) may be nonzero, all others are zero: a new block
    // clears only those (a short block touches a few bytes of a memory of
    // hundreds of KiB).
    uint64_t lo = ~0ull, hi = 0;

    // Bytes [at, end) may become nonzero.
    void dirty(uint64_t at, uint64_t end)
    {
        lo = std::min(lo, at);
        hi = std::max(hi, end);
    }
};

// The shadow of `mem` for the running block, cleared on its first use in a block.
inline InitShadow& init_shadow_state(Memory mem)
{
    thread_local InitShadow shadows[static_cast<int>(Memory::COUNT)];
    InitShadow& s = shadows[static_cast<int>(mem)];
    if (!s.bytes) {
        uint32_t cap = memory_spec(mem).capacity;
        s.bytes.reset(static_cast<uint8_t*>(std::calloc(cap, 1)));
        if (!s.bytes) {
            throw std::bad_alloc();
        }
    }
    if (s.launch != block.launch_id || s.block_idx != block.idx || s.aic != block.aic) {
        if (s.hi > s.lo) {
            std::memset(s.bytes.get() + s.lo, 0, s.hi - s.lo);
        }
        s.lo = ~0ull;
        s.hi = 0;
        s.launch = block.launch_id;
        s.block_idx = block.idx;
        s.aic = block.aic;
    }
    return s;
}

inline uint8_t* init_shadow(Memory mem) { return init_shadow_state(mem).bytes.get(); }

// initcheck's part of access_write_at: bytes [at, at + n) of `mem` are written.
inline void init_fill(Memory mem, uint64_t at, uint64_t n)
{
    uint64_t cap = memory_spec(mem).capacity;
    if (at < cap) {
        uint64_t len = at + n > cap ? cap - at : n;
        InitShadow& s = init_shadow_state(mem);
        s.dirty(at, at + len);
        std::memset(s.bytes.get() + at, 1, len);
    }
}

// initcheck's part of access_read_at, without the report: whether every byte
// of [at, at + n) of `mem` (what lies inside it) was written.
inline bool init_written(Memory mem, uint64_t at, uint64_t n)
{
    uint64_t cap = memory_spec(mem).capacity;
    if (at >= cap) {
        return true;
    }
    uint64_t len = at + n > cap ? cap - at : n;
    const uint8_t* sh = init_shadow(mem) + at;
    return len == 1 ? sh[0] != 0 : std::memchr(sh, 0, len) == nullptr;
}

PYPTO_RUNTIME const char* init_fix(Memory mem)
#if PYPTO_RUNTIME_BODY
{
    switch (mem) {
    case Memory::UB:
        return "copy data in (DataCopy/DataCopyPad) or write it (Duplicate, a vector instruction, SetValue) "
               "before reading it";
    case Memory::L1: return "DataCopy the data into the L1 buffer before reading it";
    case Memory::L0A: case Memory::L0B:
        return "LoadData it from L1 bytes that DataCopy wrote before the Mmad reads it";
    case Memory::L0C:
        return "start the accumulation with an Mmad that initialises C (cmatrixInitVal true) before "
               "accumulating into it or moving it out";
    default: return "write it before reading it";
    }
}
#else
;
#endif

// `what` read bytes [off, off + n) of `operand`, a tensor at byte `base`
// of `mem` (position `pos`), and byte `bad` of it was never written.
[[gnu::noinline]] PYPTO_RUNTIME void init_fail(const char* what, const char* operand, TPosition pos, Memory mem,
                                        uint64_t base, uint64_t off, uint64_t n, uint64_t bad)
#if PYPTO_RUNTIME_BODY
{
    const char* name = position_name(pos);
    fail("initcheck: ", what, " reads bytes [", off, ", ", off + n, ") of ", operand, name[0] == 'A' ? " (an " : " (a ",
         name, " tensor at byte ", base, " of the ", memory_spec(mem).name, ") but byte ", bad,
         " of it (byte ", base + bad, " of the ", memory_spec(mem).name,
         ") was never written in this block; ", init_fix(mem));
}
#else
;
#endif

// initcheck's part of access_read_at: every byte of [off, off + n) of
// `operand` (at byte `base` of `mem`, position `pos`) that lies inside the
// memory must have been written.
PYPTO_RUNTIME void init_verify(const char* what, const char* operand, TPosition pos, Memory mem, uint64_t base,
                                uint64_t off, uint64_t n)
#if PYPTO_RUNTIME_BODY
{
    uint64_t cap = memory_spec(mem).capacity;
    uint64_t at = base + off;
    if (at >= cap) {
        return;
    }
    uint64_t len = at + n > cap ? cap - at : n;
    const uint8_t* sh = init_shadow(mem) + at;
    if (len == 1 ? sh[0] != 0 : std::memchr(sh, 0, len) == nullptr) {
        return;
    }
    const void* z = std::memchr(sh, 0, len);
    init_fail(what, operand, pos, mem, base, off, n, off + static_cast<uint64_t>(static_cast<const uint8_t*>(z) - sh));
}
#else
;
#endif

} // namespace pypto_emu
