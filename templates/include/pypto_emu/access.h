// The access channel: every local-memory byte range an instruction reads
// or writes comes here once. The running instruction's record (instr.h)
// notes the memory, then racecheck and initcheck, when on, check it.
// The tensor-level helpers that call it (AccessView, access_read,
// access_write, AccessMove, AccessBatch) are in memory.h, next to
// LocalTensor.
#pragma once

#include <cstdint>

#include "core.h"
#include "instr.h"
#include "memories.h"
#include "sanitize/init.h"
#include "sanitize/race.h"

namespace pypto_emu {

// The running instruction writes bytes [at, at + n) of `mem`; `what`
// names the writer in racecheck's messages (the instruction by default).
inline void access_write_at(Memory mem, uint64_t at, uint64_t n, const char* what = nullptr)
{
    if (mem == Memory::GM || n == 0 || !watching_local()) {
        return;
    }
    instr_access(mem, true);
    if (sanitizing(SANITIZE_RACE)) {
        race_access(mem, at, n, true, what != nullptr ? what : instr.name);
    }
    if (sanitizing(SANITIZE_INIT)) {
        init_fill(mem, at, n);
    }
}

// `what` reads bytes [off, off + n) of `operand`, a tensor at byte `base`
// of `mem` (position `pos`).
inline void access_read_at(const char* what, const char* operand, TPosition pos, Memory mem, uint64_t base,
                           uint64_t off, uint64_t n)
{
    if (mem == Memory::GM || n == 0 || !watching_local()) {
        return;
    }
    instr_access(mem, false);
    if (sanitizing(SANITIZE_RACE)) {
        race_access(mem, base + off, n, false, what);
    }
    if (sanitizing(SANITIZE_INIT)) {
        init_verify(what, operand, pos, mem, base, off, n);
    }
}

} // namespace pypto_emu
