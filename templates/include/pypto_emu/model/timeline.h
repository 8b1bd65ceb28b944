// The modelled NPU's timeline: per core, one clock per pipe (S, V, M,
// MTE1, MTE2, MTE3, FIX). The scalar unit issues instructions in program
// order; an instruction starts when it is issued, its pipe is free and
// what orders it has happened (a flag, a queue, a barrier, a cross-core
// flag), and holds its pipe for its cost. Costs come from pypto-rt's
// architecture table (ModelParams); every figure the model prints is
// modelled, not measured.
//
// Off (no ModelSink in the launch) it costs one branch per instruction.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <new>
#include <vector>

#include "../instr.h"
#include "../memories.h"
#include "abi.h"

namespace pypto_emu {

constexpr int model_pipes = 8;  // indexed by pipe_t; PIPE_ALL's slot unused
constexpr int model_events = 32; // HardEvent values
constexpr int model_event_ids = 8;

struct Timeline {
    const ModelSink* sink = nullptr;
    ModelParams p{};
    uint8_t core = 0;       // index in the block (ModelFlow::from_core)
    double gm_in = 0;       // MTE2 bytes per cycle (re-reads and workspaces: L2 hits)
    double gm_out = 0;      // MTE3 bytes per cycle
    double cold_rate = 0;   // MTE2 bytes per cycle of a first read from HBM, after the chip's share
    uint64_t cold_left = 0; // bytes of this core's reads still charged as first reads
    double issue = 0;       // when the scalar unit issues the next instruction
    double free[model_pipes] = {};
    double busy[model_pipes] = {};
    double flag_at[model_events][model_event_ids] = {};
    uint8_t flag_pipe[model_events][model_event_ids] = {};
    uint64_t gm_read = 0, gm_write = 0, gm_cold = 0, instructions = 0, unmodelled = 0;
    std::vector<double> gm_bins[2]; // bytes read from, written to GM per model_gm_bin cycles
    std::vector<ModelEvent> events;
    std::vector<ModelFlow> flows;
    bool trace = false;
    bool timing_only = false; // instructions are costed but compute nothing
    bool failed = false; // an allocation failed: the core reports nothing
};

inline thread_local Timeline timeline;

// Timeline's switches again, as plain thread-locals: they are read by every
// instruction, and a thread-local with a constructor or destructor (as
// Timeline is) costs a call per read.
inline thread_local bool model_on = false;
inline thread_local bool model_tracing = false;
inline thread_local bool model_timing_only = false;

inline bool modelling() { return model_on; }

// Timing-only runs (ModelSink::timing_only): the hot instructions (vector
// arithmetic, copies, LoadData, Mmad, Fixpipe) check their operands and
// note their cost, then return without computing. Control flow that
// depends on data, not on sizes, sees garbage: the documented limit.
inline bool timing_only() { return model_timing_only; }


// Starts the core's timeline (run_core): `sink` null turns the model off.
// `vector`: the core is a vector core; `mixed`: it is one of a mixed
// kernel's three cores of a block (one cube core, two vector cores).
//
// Global memory, as modelled: every byte a core reads or writes goes
// through the chip's L2 at the core's own rate (the platform ini's L2
// rates); cores streaming at once share the L2's bandwidth, which
// pypto-rt applies after the launch from every core's bytes over time
// (gm_bins; model/report.rs), so that it depends on what the cores moved
// and when, not on how many were launched, and stays deterministic while
// the cores run on their own threads. A launch's inputs are read from HBM
// once, the first time: their bytes are split evenly over the launch's
// cores, each charging its share of its first reads at the HBM rate, the
// chip's HBM bandwidth split statically over the cores running at once
// (first reads happen together at the start, when every core fetches its
// first tiles). Re-reads hit L2 (192 MiB on A2/A3): capacity misses are
// not modelled.
inline void model_begin(const ModelSink* sink, uint8_t core, bool vector, bool mixed)
{
    instr.cost = InstrCost{};
    if (!model_on && (sink == nullptr || sink->params == nullptr)) {
        return; // neither this block nor the thread's last was modelled: nothing to reset
    }
    model_on = model_tracing = model_timing_only = false;
    // The trace's buffers keep their capacity from block to block of the
    // thread: growing them again each block (reallocating, and faulting
    // fresh pages in) was most of what tracing cost.
    std::vector<ModelEvent> events = std::move(timeline.events);
    std::vector<ModelFlow> flows = std::move(timeline.flows);
    events.clear();
    flows.clear();
    timeline.~Timeline();
    new (&timeline) Timeline();
    timeline.events = std::move(events);
    timeline.flows = std::move(flows);
    instr.cost = InstrCost{};
    if (sink == nullptr || sink->params == nullptr) {
        return;
    }
    timeline.sink = sink;
    timeline.p = *sink->params;
    timeline.core = core;
    timeline.trace = sink->trace != 0;
    timeline.timing_only = sink->timing_only != 0;
    model_on = true;
    model_tracing = timeline.trace;
    model_timing_only = timeline.timing_only;
    timeline.gm_in = timeline.p.mte2_bytes;
    timeline.gm_out = timeline.p.mte3_bytes;
    // The chip's HBM bandwidth is shared by the blocks running at once (a
    // vector kernel's blocks run two to an AI core, the others one), and
    // each block's share of the inputs' first reads goes to whichever of
    // its cores reads inputs (model_copy counts reads of inputs only): in a
    // mixed kernel that is usually the cube, the vector cores reading what
    // it wrote to a workspace.
    uint64_t slots = static_cast<uint64_t>(sink->ai_cores) * (vector && !mixed ? 2 : 1);
    uint64_t blocks = std::max<uint32_t>(sink->blocks, 1);
    uint64_t at_once = std::min(blocks, std::max<uint64_t>(slots, 1));
    timeline.cold_rate = std::min(timeline.p.mte2_bytes, timeline.p.chip_hbm_bytes / static_cast<double>(at_once));
    timeline.cold_left = sink->input_bytes / blocks;
}

inline uint64_t model_cycle(double t) { return static_cast<uint64_t>(t + 0.5); }

inline void model_push_event(double start, double end, pipe_t pipe, const char* name, const Site& site,
                             bool modelled, uint64_t bytes, uint8_t reads = 0, uint8_t writes = 0)
{
    Timeline& t = timeline;
    if (!t.trace || t.failed) {
        return;
    }
    try {
        t.events.push_back(ModelEvent{model_cycle(start), model_cycle(end), name, site.file, site.line,
                                      static_cast<uint8_t>(pipe), static_cast<uint8_t>(modelled ? 1 : 0), reads,
                                      writes, bytes});
    } catch (...) {
        t.failed = true;
    }
}

inline void model_push_flow(double set, double wait, pipe_t from, pipe_t to, uint8_t from_core)
{
    Timeline& t = timeline;
    if (!t.trace || t.failed) {
        return;
    }
    try {
        t.flows.push_back(ModelFlow{model_cycle(set), model_cycle(wait), static_cast<uint8_t>(from),
                                    static_cast<uint8_t>(to), from_core, t.core, 0});
    } catch (...) {
        t.failed = true;
    }
}

// Occupies `pipe` for `cycles` from when it and the issue allow; returns the end.
inline double model_occupy(pipe_t pipe, double cycles)
{
    Timeline& t = timeline;
    double start = std::max(t.issue, t.free[pipe]);
    double end = start + cycles;
    t.free[pipe] = end;
    t.busy[pipe] += cycles;
    return end;
}

// The running instruction's cost: `cycles` on `pipe`, moving `bytes`.
// Called by the instruction families' cost functions (model/cost.h).
inline void model_note(pipe_t pipe, double cycles, uint64_t bytes)
{
    if (!modelling()) {
        return;
    }
    InstrCost& c = instr.cost;
    if (c.noted && c.pipe == pipe) {
        c.cycles += cycles;
        c.bytes += bytes;
        return;
    }
    c.noted = true;
    c.pipe = pipe;
    c.cycles = cycles;
    c.bytes = bytes;
}

// The running instruction also reads (or, `write`, writes) `bytes` of
// global memory, streaming them for `cycles` (after model_note).
inline void model_note_gm(uint64_t bytes, double cycles, bool write)
{
    instr.cost.gm += bytes;
    instr.cost.gm_cycles += cycles;
    instr.cost.gm_write = write;
}

// Counts `bytes` read (or written) over the cycles [from, to) in the
// core's bins, evenly.
inline void model_count_gm(double from, double to, double bytes, bool write)
{
    Timeline& t = timeline;
    std::vector<double>& bins = t.gm_bins[write ? 1 : 0];
    if (t.failed || bytes <= 0) {
        return;
    }
    constexpr double width = static_cast<double>(model_gm_bin);
    from = std::max(from, 0.0);
    to = std::max(to, from);
    auto first = static_cast<size_t>(from / width);
    auto last = to > from ? static_cast<size_t>(std::ceil(to / width)) - 1 : first;
    last = std::max(last, first);
    try {
        if (bins.size() <= last) {
            bins.resize(last + 1, 0.0);
        }
    } catch (...) {
        t.failed = true;
        return;
    }
    if (first == last) {
        bins[first] += bytes;
        return;
    }
    double rate = bytes / (to - from);
    for (size_t b = first; b <= last; ++b) {
        double lo = std::max(from, static_cast<double>(b) * width);
        double hi = std::min(to, static_cast<double>(b + 1) * width);
        bins[b] += rate * (hi - lo);
    }
}

// The kernel's instruction `name` at `site` is issued: it runs on the pipe
// and for the cycles its record's cost says (one scalar cycle when its
// family noted none), and its slice names the memories the record says it
// read and wrote.
inline void model_retire(const char* name, const Site& site)
{
    Timeline& t = timeline;
    InstrCost r = instr.cost;
    instr.cost = InstrCost{};
    pipe_t pipe = r.noted ? r.pipe : PIPE_S;
    double cycles = r.noted ? r.cycles : 1;
    double start = std::max(t.issue, t.free[pipe]);
    double end = model_occupy(pipe, cycles);
    t.issue += t.p.issue;
    if (pipe == PIPE_S) {
        t.issue = std::max(t.issue, end);
    }
    ++t.instructions;
    if (!r.noted) {
        ++t.unmodelled;
    }
    if (r.gm > 0) {
        model_count_gm(std::max(start, end - r.gm_cycles), end, static_cast<double>(r.gm), r.gm_write);
    }
    model_push_event(start, end, pipe, name, site, r.noted, r.bytes, instr.reads, instr.writes);
}

// SetFlag: raised on `src` once its earlier instructions finish.
inline void model_set_flag(int event, int id, pipe_t src)
{
    if (!modelling() || event < 0 || event >= model_events || id < 0 || id >= model_event_ids) {
        return;
    }
    Timeline& t = timeline;
    double start = std::max(t.issue, t.free[src]);
    double at = model_occupy(src, t.p.flag);
    t.issue += t.p.issue;
    t.flag_at[event][id] = at;
    t.flag_pipe[event][id] = static_cast<uint8_t>(src);
    model_push_event(start, at, src, "SetFlag", Site{}, true, 0);
}

// The pipe `dst` goes on no earlier than `at` (a flag, a queue, a cross-core
// flag set then); a wait on the scalar pipe stalls the issue of everything after.
inline void model_wait_until(pipe_t dst, double at, pipe_t from, uint8_t from_core)
{
    Timeline& t = timeline;
    double ready = std::max(at, t.issue);
    if (dst == PIPE_S) {
        t.issue = std::max(t.issue, ready + t.p.flag);
    } else {
        t.free[dst] = std::max(t.free[dst], ready) + t.p.flag;
        t.busy[dst] += t.p.flag;
    }
    t.issue += t.p.issue;
    model_push_flow(at, ready, from, dst, from_core);
}

inline void model_wait_flag(int event, int id, pipe_t dst)
{
    if (!modelling() || event < 0 || event >= model_events || id < 0 || id >= model_event_ids) {
        return;
    }
    Timeline& t = timeline;
    model_wait_until(dst, t.flag_at[event][id], static_cast<pipe_t>(t.flag_pipe[event][id]), t.core);
}

// When a queue's producer (or consumer, freeing) on `from` hands a buffer over.
inline double model_signal(pipe_t from)
{
    if (!modelling()) {
        return 0;
    }
    Timeline& t = timeline;
    return std::max(t.issue, t.free[from]);
}

inline void model_queue_wait(pipe_t to, double at, pipe_t from)
{
    if (!modelling()) {
        return;
    }
    model_wait_until(to, at, from, timeline.core);
}

// PipeBarrier<PIPE_ALL> (and what acts as one): every pipe drains before
// anything after it issues. A barrier on one pipe orders only that pipe,
// which runs in order anyway.
inline void model_barrier(pipe_t pipe)
{
    if (!modelling() || pipe != PIPE_ALL) {
        return;
    }
    Timeline& t = timeline;
    double all = t.issue;
    for (double f : t.free) {
        all = std::max(all, f);
    }
    t.issue = all;
    for (double& f : t.free) {
        f = all;
    }
}

// A scalar read or write of local memory: the compiler's automatic
// synchronisation makes the scalar unit wait for the vector-side pipes.
inline void model_scalar_access()
{
    if (!modelling()) {
        return;
    }
    Timeline& t = timeline;
    double ready = std::max({t.issue, t.free[PIPE_V], t.free[PIPE_MTE2], t.free[PIPE_MTE3]});
    t.issue = ready + t.p.scalar_access;
    t.busy[PIPE_S] += t.p.scalar_access;
    t.free[PIPE_S] = t.issue;
}

// A cross-core flag leaves `pipe` once its earlier instructions finish;
// returns when it arrives at the other core.
inline double model_cross_set(pipe_t pipe)
{
    if (!modelling()) {
        return 0;
    }
    Timeline& t = timeline;
    double at = model_occupy(pipe, t.p.flag);
    t.issue += t.p.issue;
    return at + t.p.cross_core;
}

// The core's last pipe finished.
inline double model_end_cycle()
{
    double end = timeline.issue;
    for (double f : timeline.free) {
        end = std::max(end, f);
    }
    return end;
}

// Sends the core's timeline to pypto-rt (run_core, after the body returned).
inline void model_finish(uint32_t block, uint32_t core_kind)
{
    Timeline& t = timeline;
    if (!modelling() || t.failed) {
        return;
    }
    ModelCore summary{};
    summary.end = model_cycle(model_end_cycle());
    for (int p = 0; p < model_pipes; ++p) {
        summary.busy[p] = model_cycle(t.busy[p]);
    }
    summary.gm_read = t.gm_read;
    summary.gm_write = t.gm_write;
    summary.instructions = t.instructions;
    summary.unmodelled = t.unmodelled;
    summary.gm_cold = t.gm_cold;
    // Both directions' bins as long as the longer.
    size_t n_bins = std::max(t.gm_bins[0].size(), t.gm_bins[1].size());
    try {
        t.gm_bins[0].resize(n_bins, 0.0);
        t.gm_bins[1].resize(n_bins, 0.0);
    } catch (...) {
        return;
    }
    summary.gm_read_bins = t.gm_bins[0].data();
    summary.gm_write_bins = t.gm_bins[1].data();
    summary.n_gm_bins = n_bins;
    t.sink->core_done(t.sink->ctx, block, core_kind, &summary, t.events.data(), t.events.size(), t.flows.data(),
                      t.flows.size());
}

} // namespace pypto_emu
