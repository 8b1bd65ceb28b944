// The running instruction: one record that its prologue (AtSite, core.h)
// opens and that every consumer reads. Racecheck and initcheck
// (sanitize/) take its name, site and sequence number. The modelled NPU
// (model/) takes its cost and what it touched. Accesses reach the record
// and the sanitizers through one channel (access_read_at /
// access_write_at, access.h; GlobalTensor's note_read / note_write for
// global memory).
#pragma once

#include <cstdint>

#include "memories.h"

namespace pypto_emu {

// What the modelled NPU charges the instruction. Its family's cost
// function notes it (model/cost.h); model_retire reads it.
struct InstrCost {
    bool noted = false;
    pipe_t pipe = PIPE_S;
    double cycles = 0;
    uint64_t bytes = 0;
    uint64_t gm = 0;       // bytes it moves to or from global memory
    double gm_cycles = 0;  // cycles it streams them for (its cost less latencies)
    bool gm_write = false; // it writes them
};

struct Instr {
    const char* name = "an instruction";
    Site site;        // the kernel's line that issued it (a partial helper's caller)
    uint64_t seq = 0; // changes with every instruction and API call
    uint8_t reads = 0;  // the memories it read, bit 1 << Memory
    uint8_t writes = 0; // ... and wrote
    InstrCost cost;
};

inline thread_local Instr instr;

// Starts the record of a new instruction `name` issued at `site`.
inline void instr_open(const char* name, Site site)
{
    uint64_t seq = instr.seq + 1;
    instr = Instr{};
    instr.name = name;
    instr.site = site;
    instr.seq = seq;
}

// The instruction reads (or writes) bytes of `mem`.
inline void instr_access(Memory mem, bool write)
{
    auto bit = static_cast<uint8_t>(1u << static_cast<unsigned>(mem));
    (write ? instr.writes : instr.reads) |= bit;
}

// The instruction moves data from `from` to `to` (a read of one, a write of
// the other).
inline void instr_move(Memory from, Memory to)
{
    instr_access(from, false);
    instr_access(to, true);
}

} // namespace pypto_emu
