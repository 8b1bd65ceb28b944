// The leaf vocabulary of the emulation, std headers only: the pipes
// (`pipe_t`), the memory positions (`TPosition`), the on-chip memories with
// their sizes, alignments and names, and where a kernel called an
// instruction (`Site`). Every other header builds on these; this one
// includes none of them.
#pragma once

#include <cstdint>

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

struct MemorySpec {
    const char* name;
    uint32_t capacity; // bytes on the chip
    uint32_t usable;   // bytes a kernel's buffers may take
    uint32_t align;    // start-address alignment, bytes
    const char* why;   // what the difference between capacity and usable is
};

// Atlas A2/A3 (NPU architecture 2201) unless PYPTO_TARGET_950 is defined.
inline const MemorySpec& memory_spec(Memory m)
{
#if defined(PYPTO_TARGET_950)
    static const MemorySpec specs[] = {
        {"global memory", 0, 0, 1, ""},
        {"Unified Buffer", 256 * 1024, 248 * 1024, 32, "256 KiB less the 6 KiB stack and 2 KiB API reserves"},
        {"L1 buffer", 512 * 1024, 512 * 1024, 32, ""},
        {"L0A buffer", 64 * 1024, 64 * 1024, 512, ""},
        {"L0B buffer", 64 * 1024, 64 * 1024, 512, ""},
        {"L0C buffer", 256 * 1024, 256 * 1024, 64, ""},
        {"BiasTable", 4 * 1024, 4 * 1024, 64, ""},
        {"Fixpipe buffer", 4 * 1024, 4 * 1024, 64, ""},
    };
#else
    static const MemorySpec specs[] = {
        {"global memory", 0, 0, 1, ""},
        {"Unified Buffer", 192 * 1024, 192 * 1024 - 256 - 8 * 1024, 32,
         "192 KiB less the 256 B framework and 8 KiB API reserves"},
        {"L1 buffer", 512 * 1024, 512 * 1024 - 256, 32, "512 KiB less the 256 B framework reserve"},
        {"L0A buffer", 64 * 1024, 64 * 1024, 512, ""},
        {"L0B buffer", 64 * 1024, 64 * 1024, 512, ""},
        {"L0C buffer", 128 * 1024, 128 * 1024, 64, ""},
        {"BiasTable", 1024, 1024, 64, ""},
        {"Fixpipe buffer", 2 * 1024, 2 * 1024, 64, ""},
    };
#endif
    return specs[static_cast<int>(m)];
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
