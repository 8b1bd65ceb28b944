// What differs between the NPU architectures the emulation behaves as: one
// row (a struct) per architecture, and the one place that picks the row a
// kernel is compiled against. Every other header reads the picked row,
// `pypto_emu::Target` (`Target::arith<T>`, `if constexpr
// (Target::reinterpret_cast_gm)`), so adding an architecture is adding a
// row here (and its row in pypto-build's tables.rs), not editing the
// headers that use it. Std headers only; the element types are declared,
// not defined, so that memories.h (the leaf) can include this.
//
// C++17 wants a string literal in a static_assert and the preprocessor in
// an enumerator list, so the strings those use, and the extra QuantMode_t
// enumerators, are macros `PYPTO_<ROW>_<NAME>`, defined next to their row
// and read through `PYPTO_ARCH(NAME)` (`PYPTO_ARCH(TARGET_NAME)`: "Atlas A2/A3"
// or "Ascend 950").
#pragma once

#include <cstdint>
#include <type_traits>

// The row this kernel is compiled against: pypto-build defines the macro
// its tables.rs row names (`ArchRow::host_define`) for a kernel that
// targets that architecture alone. The only test of PYPTO_TARGET_950. The
// row's name is part of the emulation's namespaces (kernel_operator.h), so
// kernels emulated as different architectures link into one binary without
// one row's inline functions (memory sizes, type lists) standing in for the
// other's.
#if defined(PYPTO_TARGET_950)
#define PYPTO_ARCH_ROW A950
#define PYPTO_ARCH_STRUCT Ascend950
#else
#define PYPTO_ARCH_ROW A2A3
#define PYPTO_ARCH_STRUCT AtlasA2A3
#endif

// The element types the rows list (defined in types.h).
struct half;
struct bfloat16_t;

namespace pypto_emu {

template <typename T, typename... List>
constexpr bool one_of = (std::is_same_v<T, List> || ...);

// One on-chip memory's facts, indexed by `Memory` (memories.h).
struct MemorySpec {
    const char* name;
    uint32_t capacity; // bytes on the chip
    uint32_t usable;   // bytes a kernel's buffers may take
    uint32_t align;    // start-address alignment, bytes
    const char* why;   // what the difference between capacity and usable is
};

// ---------------------------------------------------------------------------
// Atlas A2/A3: NPU architecture 2201 (the default).

#define PYPTO_A2A3_TARGET_NAME "Atlas A2/A3"
#define PYPTO_A2A3_NPU_ARCH 2201
#define PYPTO_A2A3_EXTRA_QUANT_MODES
#define PYPTO_A2A3_GATHER_TYPES "int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float"
#define PYPTO_A2A3_GATHERB_TYPES "uint16_t, uint32_t"
#define PYPTO_A2A3_TRANSPOSE_EXT_TYPES "int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t, float"
#define PYPTO_A2A3_TRANS_5HD_TYPES "int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t, float"
#define PYPTO_A2A3_DATACOPY_TYPES                                                                        \
    "int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float, int64_t, uint64_t, " \
    "double"
#define PYPTO_A2A3_GATHER_MASK_TYPES "int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float"
#define PYPTO_A2A3_REDUCE_TYPES "half, float"
#define PYPTO_A2A3_POWER_TYPES "half, float, int32_t"
#define PYPTO_A2A3_COMPOUND_NOTE ""
#define PYPTO_A2A3_CROSS_CORE_MODES "CrossCoreSetFlag: modeId must be 0, 1 or 2 on Atlas A2/A3"
#define PYPTO_A2A3_CROSS_CORE_PIPES "CrossCoreSetFlag: PIPE_S and PIPE_ALL are not supported"

struct AtlasA2A3 {
    static constexpr const char* name = PYPTO_A2A3_TARGET_NAME;
    static constexpr int npu_arch = PYPTO_A2A3_NPU_ARCH;
    static constexpr bool extra_quant_modes = false;

    // Vector unit (vector.h, mask.h).
    template <typename T>
    static constexpr bool arith = one_of<T, int16_t, half, int32_t, float>;
    template <typename T>
    static constexpr bool div = one_of<T, half, float>;
    template <typename T>
    static constexpr bool relu = one_of<T, half, int32_t, float>;
    template <typename T>
    static constexpr bool math = one_of<T, half, float>;
    template <typename T>
    static constexpr bool duplicate = one_of<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>;
    template <typename T>
    static constexpr bool logic = one_of<T, int16_t, uint16_t>;

    // Data movement and layout (copy.h, layout.h, sort.h).
    template <typename T>
    static constexpr bool datacopy = one_of<T, int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t,
                                            uint32_t, float, int64_t, uint64_t, double>;
    template <typename T>
    static constexpr bool gather = one_of<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>;
    template <typename T>
    static constexpr bool gatherb = one_of<T, uint16_t, uint32_t>;
    template <typename T>
    static constexpr bool gather_mask = one_of<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>;
    template <typename T>
    static constexpr bool transpose16 = one_of<T, int16_t, uint16_t, half>;
    // Transpose(TransposeParamsExt) with TRANSPOSE_ND2ND_B16.
    template <typename T>
    static constexpr bool transpose_nd2nd_b16 = std::is_same_v<T, uint16_t>;
    static constexpr const char* transpose_nd2nd_b16_types = "uint16_t";
    template <typename T>
    static constexpr bool transpose_ext = one_of<T, int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t,
                                                 float>;
    template <typename T>
    static constexpr bool trans_5hd = one_of<T, int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t, float>;

    // Reductions and high-level maths (reduce.h, math.h).
    template <typename T>
    static constexpr bool reduce = one_of<T, half, float>;
    static constexpr bool reduce_max_min_spr = true; // GetReduceRepeatMaxMinSpr exists
    template <typename T>
    static constexpr bool power = one_of<T, half, float, int32_t>;
    // The `config` template parameter of the high-level maths is documented
    // for the Ascend 950 only: A2/A3 kernels keep the default.
    static constexpr bool math_config = false;

    // Cube path, synchronisation and system (copy.h, sync.h, memory.h, system.h, misc.h).
    static constexpr uint64_t bias_table_unit = 64;     // bytes per blockLen, L1 -> BiasTable
    static constexpr bool bias_table_pairs = false;     // blockLen must be even
    static constexpr uint32_t cross_core_modes = 0b111; // bit m: CrossCoreSetFlag mode m exists
    static constexpr int cross_core_pipe_s_mode = -1;   // the mode that takes PIPE_S (none)
    static constexpr bool reinterpret_cast_gm = false;  // GlobalTensor::ReinterpretCast exists
    static constexpr bool dcci_cacheline_atomic = false; // DcciDst::CACHELINE_ATOMIC exists
    static constexpr int64_t system_cycle_ns = 20;      // GetSystemCycle: 50 MHz

    // By `Memory`: GM, UB, L1, L0A, L0B, L0C, BT, FB.
    static constexpr MemorySpec memories[] = {
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
};

// ---------------------------------------------------------------------------
// Ascend 950: NPU architecture 3510.

#define PYPTO_A950_TARGET_NAME "Ascend 950"
#define PYPTO_A950_NPU_ARCH 3510
#define PYPTO_A950_EXTRA_QUANT_MODES                                                                       \
    QF322FP8_PRE, VQF322FP8_PRE, QF322HIF8_PRE, VQF322HIF8_PRE, QF322HIF8_PRE_HYBRID, VQF322HIF8_PRE_HYBRID, \
        QS322BF16_PRE, VQS322BF16_PRE, QF322F16_PRE, VQF322F16_PRE, QF322BF16_PRE, VQF322BF16_PRE,           \
        QF322F32_PRE, VQF322F32_PRE,
#define PYPTO_A950_GATHER_TYPES \
    "int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float, int64_t, uint64_t"
#define PYPTO_A950_GATHERB_TYPES PYPTO_A950_GATHER_TYPES
#define PYPTO_A950_TRANSPOSE_EXT_TYPES "int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float"
#define PYPTO_A950_TRANS_5HD_TYPES "int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float"
#define PYPTO_A950_DATACOPY_TYPES "8-, 16-, 32- and 64-bit types"
#define PYPTO_A950_GATHER_MASK_TYPES "int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float"
#define PYPTO_A950_REDUCE_TYPES "int16_t, uint16_t, half, int32_t, uint32_t, float"
#define PYPTO_A950_POWER_TYPES "uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, half, bfloat16_t, float"
#define PYPTO_A950_COMPOUND_NOTE " (the Atlas A2/A3 list is applied on Ascend 950 too)"
#define PYPTO_A950_CROSS_CORE_MODES "CrossCoreSetFlag: modeId must be 0, 1, 2 or 4"
#define PYPTO_A950_CROSS_CORE_PIPES "CrossCoreSetFlag: PIPE_ALL is not supported (PIPE_S only in mode 4)"

struct Ascend950 {
    static constexpr const char* name = PYPTO_A950_TARGET_NAME;
    static constexpr int npu_arch = PYPTO_A950_NPU_ARCH;
    static constexpr bool extra_quant_modes = true;

    template <typename T>
    static constexpr bool arith = one_of<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>;
    template <typename T>
    static constexpr bool div = one_of<T, int16_t, uint16_t, half, int32_t, uint32_t, float>;
    template <typename T>
    static constexpr bool relu = one_of<T, half, int32_t, float>;
    template <typename T>
    static constexpr bool math = one_of<T, half, float>;
    template <typename T>
    static constexpr bool duplicate =
        one_of<T, bool, int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>;
    template <typename T>
    static constexpr bool logic = one_of<T, int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t>;

    template <typename T>
    static constexpr bool datacopy = sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8;
    template <typename T>
    static constexpr bool gather =
        one_of<T, int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float, int64_t, uint64_t>;
    template <typename T>
    static constexpr bool gatherb = gather<T>;
    template <typename T>
    static constexpr bool gather_mask =
        one_of<T, int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>;
    template <typename T>
    static constexpr bool transpose16 = one_of<T, int16_t, uint16_t, half>;
    template <typename T>
    static constexpr bool transpose_nd2nd_b16 = transpose16<T>;
    static constexpr const char* transpose_nd2nd_b16_types = "int16_t, uint16_t or half";
    template <typename T>
    static constexpr bool transpose_ext = one_of<T, int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t,
                                                 uint32_t, float>;
    template <typename T>
    static constexpr bool trans_5hd =
        one_of<T, int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>;

    template <typename T>
    static constexpr bool reduce = one_of<T, int16_t, uint16_t, half, int32_t, uint32_t, float>;
    static constexpr bool reduce_max_min_spr = false;
    template <typename T>
    static constexpr bool power =
        one_of<T, uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, half, bfloat16_t, float>;
    static constexpr bool math_config = true;

    static constexpr uint64_t bias_table_unit = 32; // 64-byte pairs of 32-byte units
    static constexpr bool bias_table_pairs = true;
    static constexpr uint32_t cross_core_modes = 0b10111; // 0, 1, 2 and 4
    static constexpr int cross_core_pipe_s_mode = 4;
    static constexpr bool reinterpret_cast_gm = true;
    static constexpr bool dcci_cacheline_atomic = true;
    static constexpr int64_t system_cycle_ns = 1; // GetSystemCycle: 1 GHz

    static constexpr MemorySpec memories[] = {
        {"global memory", 0, 0, 1, ""},
        {"Unified Buffer", 256 * 1024, 248 * 1024, 32, "256 KiB less the 6 KiB stack and 2 KiB API reserves"},
        {"L1 buffer", 512 * 1024, 512 * 1024, 32, ""},
        {"L0A buffer", 64 * 1024, 64 * 1024, 512, ""},
        {"L0B buffer", 64 * 1024, 64 * 1024, 512, ""},
        {"L0C buffer", 256 * 1024, 256 * 1024, 64, ""},
        {"BiasTable", 4 * 1024, 4 * 1024, 64, ""},
        {"Fixpipe buffer", 4 * 1024, 4 * 1024, 64, ""},
    };
};

// ---------------------------------------------------------------------------
// Every row states every fact: a row missing a member (or giving one the
// wrong kind) fails here, not in whichever header first reads it.
template <typename Row>
constexpr bool complete_row()
{
    static_assert(std::is_same_v<decltype(Row::name), const char* const>);
    static_assert(std::is_same_v<decltype(Row::npu_arch), const int>);
    static_assert(std::is_same_v<decltype(Row::extra_quant_modes), const bool>);
    static_assert(std::is_same_v<decltype(Row::template arith<float>), const bool>);
    static_assert(std::is_same_v<decltype(Row::template div<float>), const bool>);
    static_assert(std::is_same_v<decltype(Row::template relu<float>), const bool>);
    static_assert(std::is_same_v<decltype(Row::template math<float>), const bool>);
    static_assert(std::is_same_v<decltype(Row::template duplicate<float>), const bool>);
    static_assert(std::is_same_v<decltype(Row::template logic<float>), const bool>);
    static_assert(std::is_same_v<decltype(Row::template datacopy<float>), const bool>);
    static_assert(std::is_same_v<decltype(Row::template gather<float>), const bool>);
    static_assert(std::is_same_v<decltype(Row::template gatherb<float>), const bool>);
    static_assert(std::is_same_v<decltype(Row::template gather_mask<float>), const bool>);
    static_assert(std::is_same_v<decltype(Row::template transpose16<float>), const bool>);
    static_assert(std::is_same_v<decltype(Row::template transpose_nd2nd_b16<float>), const bool>);
    static_assert(std::is_same_v<decltype(Row::transpose_nd2nd_b16_types), const char* const>);
    static_assert(std::is_same_v<decltype(Row::template transpose_ext<float>), const bool>);
    static_assert(std::is_same_v<decltype(Row::template trans_5hd<float>), const bool>);
    static_assert(std::is_same_v<decltype(Row::template reduce<float>), const bool>);
    static_assert(std::is_same_v<decltype(Row::reduce_max_min_spr), const bool>);
    static_assert(std::is_same_v<decltype(Row::template power<float>), const bool>);
    static_assert(std::is_same_v<decltype(Row::math_config), const bool>);
    static_assert(std::is_same_v<decltype(Row::bias_table_unit), const uint64_t>);
    static_assert(std::is_same_v<decltype(Row::bias_table_pairs), const bool>);
    static_assert(std::is_same_v<decltype(Row::cross_core_modes), const uint32_t>);
    static_assert(std::is_same_v<decltype(Row::cross_core_pipe_s_mode), const int>);
    static_assert(std::is_same_v<decltype(Row::reinterpret_cast_gm), const bool>);
    static_assert(std::is_same_v<decltype(Row::dcci_cacheline_atomic), const bool>);
    static_assert(std::is_same_v<decltype(Row::system_cycle_ns), const int64_t>);
    static_assert(Row::system_cycle_ns > 0);
    // GM, UB, L1, L0A, L0B, L0C, BT, FB (memories.h checks the count against `Memory`).
    static_assert(std::is_same_v<decltype(Row::memories), const MemorySpec[8]>);
    static_assert((Row::cross_core_modes & 1) != 0, "every row has CrossCoreSetFlag mode 0");
    return true;
}
static_assert(complete_row<AtlasA2A3>());
static_assert(complete_row<Ascend950>());

// The row picked at the top of this file.
using Target = PYPTO_ARCH_STRUCT;

} // namespace pypto_emu

// `PYPTO_ARCH(NAME)`: the picked row's macro `PYPTO_<ROW>_<NAME>`.
#define PYPTO_ARCH_JOIN2(row, name) PYPTO_##row##_##name
#define PYPTO_ARCH_JOIN(row, name) PYPTO_ARCH_JOIN2(row, name)
#define PYPTO_ARCH(name) PYPTO_ARCH_JOIN(PYPTO_ARCH_ROW, name)
