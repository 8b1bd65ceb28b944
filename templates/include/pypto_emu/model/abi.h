// The modelled NPU's records as pypto-rt reads them (mirrored in pypto-rt's
// model/abi.rs; both sides assert the same sizes and offsets). pypto-rt
// owns the cost table (ModelParams, one row per architecture) and receives
// each core's timeline when the core finishes (ModelSink::core_done).
#pragma once

#include <cstddef>
#include <cstdint>

namespace pypto_emu {

// The width in cycles of the bins a core counts its global-memory bytes in
// (ModelCore::gm_read_bins, gm_write_bins): pypto-rt adds every core's bins up to share the
// chip's bandwidth after the launch (model/report.rs).
constexpr uint64_t model_gm_bin = 1024;

// Costs in cycles of the modelled core's clock; rates in bytes per cycle.
// Every number comes from pypto-rt's architecture table, which names its
// source.
struct ModelParams {
    double issue;            // scalar cycles to issue one instruction
    double vec_head;         // fixed cycles of every vector instruction
    double vec_simple_bytes; // add, mul, max, copy, cast...: bytes per cycle
    double vec_f32_special_bytes; // exp, ln, div, sqrt... on 32-bit data
    double vec_f16_special_bytes; // ... on 16-bit data
    double vec_latency;      // add-like
    double vec_special_latency; // exp/div-like
    double vec_reduce_latency;  // reductions
    double mte2_latency;     // GM -> UB / L1, per transfer
    double mte2_bytes;       // GM -> UB / L1, per core (before the chip's share)
    double mte3_latency;     // UB -> GM, per transfer
    double mte3_bytes;       // UB -> GM, per core
    double mte1_latency;     // L1 -> L0A / L0B, per LoadData
    double l0a_bytes;        // L1 -> L0A
    double l0b_bytes;        // L1 -> L0B
    double ub_copy_bytes;    // UB -> UB (vector pipe)
    double mmad_latency;     // per Mmad
    double fix_latency;      // L0C -> GM, per Fixpipe
    double fix_bytes;        // L0C -> GM (bytes written)
    double flag;             // SetFlag / WaitFlag
    double cross_core;       // a cross-core flag's travel time
    double scalar_access;    // GetValue / SetValue on local memory
    double chip_l2_bytes;    // the chip's L2 read bytes per cycle, shared by every core that moves GM data
    double chip_l2_write_bytes; // ... and its L2 write bytes per cycle
    double chip_hbm_bytes;   // the chip's HBM bytes per cycle: first reads of a launch's inputs
};

// One instruction on one pipe of one core.
struct ModelEvent {
    uint64_t start;   // cycles from the core's start
    uint64_t end;
    const char* name; // the instruction (a string literal of the kernel library)
    const char* file; // where the kernel called it, or null
    uint32_t line;
    uint8_t pipe;     // pipe_t
    uint8_t modelled; // 0: no cost in the table (costed as one cycle)
    uint8_t reads;    // the memories it read, bit 1 << Memory (GM, UB, L1, L0A, L0B, L0C, BT, FB)
    uint8_t writes;   // ... and wrote
    uint64_t bytes;   // bytes moved or processed
};

// A flag: set on one pipe (of one core of the block), waited for on another.
struct ModelFlow {
    uint64_t set;     // cycle the flag was set
    uint64_t wait;    // cycle the waiting pipe went on
    uint8_t from_pipe;
    uint8_t to_pipe;
    uint8_t from_core; // index in the block: 0 the cube core or the only core, 1 and 2 the vector cores
    uint8_t to_core;
    uint32_t reserved;
};

// One core's totals.
struct ModelCore {
    uint64_t end;           // cycle its last pipe finished
    uint64_t busy[8];       // cycles per pipe_t (PIPE_ALL's slot unused)
    uint64_t gm_read;       // bytes
    uint64_t gm_write;
    uint64_t instructions;
    uint64_t unmodelled;    // instructions with no cost in the table
    uint64_t gm_cold;       // bytes of gm_read charged as first reads from HBM
    const double* gm_read_bins;  // global-memory bytes read per model_gm_bin cycles, from the core's start
    const double* gm_write_bins; // ... and written
    uint64_t n_gm_bins;
};

// Where a core sends its timeline. `core`: 0 a vector kernel's core, 1 a
// cube kernel's, 2 a mixed kernel's cube core, 3 and 4 its vector cores.
typedef void (*ModelCoreDone)(void* ctx, uint32_t block, uint32_t core, const ModelCore* summary,
                              const ModelEvent* events, uint64_t n_events, const ModelFlow* flows,
                              uint64_t n_flows);

struct ModelSink {
    const ModelParams* params;
    void* ctx;
    ModelCoreDone core_done;
    uint32_t trace;    // non-zero: send every event and flow, not only the totals
    uint32_t blocks;   // the launch's block count
    uint32_t ai_cores; // the chip's AI cores (one cube core and two vector cores each)
    uint32_t timing_only; // non-zero: cost the instructions, compute nothing
    uint64_t input_bytes; // bytes of the launch's read-only global-memory regions (its inputs)
};

#define PYPTO_MODEL_SIZE(type, bytes) \
    static_assert(sizeof(type) == bytes, #type " is not " #bytes " bytes; model/abi.h and pypto-rt must agree")
PYPTO_MODEL_SIZE(ModelParams, 25 * 8);
PYPTO_MODEL_SIZE(ModelEvent, 48);
PYPTO_MODEL_SIZE(ModelFlow, 24);
PYPTO_MODEL_SIZE(ModelCore, 136);
PYPTO_MODEL_SIZE(ModelSink, 48);
#undef PYPTO_MODEL_SIZE

} // namespace pypto_emu
