// The leaf vocabulary of the emulation, std headers only: the pipes
// (`pipe_t`), the memory positions (`TPosition`), the on-chip memories with
// their sizes, alignments and names, and where a kernel called an
// instruction (`Site`). Every other header builds on these; this one
// includes only arch.h (the architecture rows).
#pragma once

#include <cstddef>
#include <cstdint>

#include "arch.h"

// Pipes are global names in CANN (`PIPE_V` and `AscendC::PIPE_V` both work).
enum pipe_t { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_FIX };

namespace AscendC {

enum class TPosition : uint8_t {
    GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC,
    LCM = VECCALC, SPM, SHM = SPM, TSCM, C2PIPE2GM, C2PIPE2LOCAL, MAX
};
using QuePosition = TPosition;

} // namespace AscendC

namespace pypto_emu {

using AscendC::TPosition;

enum class Memory : uint8_t { GM, UB, L1, L0A, L0B, L0C, BT, FB, COUNT };

// The sizes, alignments and names of the picked architecture's row (arch.h).
inline const MemorySpec& memory_spec(Memory m)
{
    static_assert(sizeof(Target::memories) / sizeof(MemorySpec) == static_cast<size_t>(Memory::COUNT));
    return Target::memories[static_cast<int>(m)];
}

constexpr Memory memory_of(TPosition p)
{
    switch (p) {
    case TPosition::VECIN: case TPosition::VECOUT: case TPosition::VECCALC:
        return Memory::UB;
    case TPosition::A1: case TPosition::B1: case TPosition::C1: case TPosition::TSCM:
        return Memory::L1;
    case TPosition::A2: return Memory::L0A;
    case TPosition::B2: return Memory::L0B;
    case TPosition::CO1: return Memory::L0C;
    case TPosition::C2: return Memory::BT;
    case TPosition::C2PIPE2GM: return Memory::FB;
    default: return Memory::GM;
    }
}

inline const char* position_name(TPosition p)
{
    static const char* names[] = {"GM", "A1", "A2", "B1", "B2", "C1", "C2", "CO1", "CO2",
                                  "VECIN", "VECOUT", "VECCALC", "SPM", "TSCM", "C2PIPE2GM",
                                  "C2PIPE2LOCAL", "MAX"};
    return names[static_cast<int>(p)];
}

// The memory's short name in racecheck messages ("UB bytes [0, 256)").
inline const char* memory_short_name(Memory mem)
{
    static const char* names[] = {"GM", "UB", "L1", "L0A", "L0B", "L0C", "BT", "FB"};
    return names[static_cast<int>(mem)];
}

// Where a kernel called an API instruction, for racecheck's messages: GCC
// and Clang evaluate __builtin_FILE/__builtin_LINE in a default argument at
// the call, so each instruction takes `Site site = Site::here()` last.
struct Site {
    const char* file = nullptr;
    unsigned line = 0;
    static constexpr Site here(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE())
    {
        return Site{file, line};
    }
};

} // namespace pypto_emu
