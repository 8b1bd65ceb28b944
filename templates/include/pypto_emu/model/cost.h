// What each instruction family costs on the modelled NPU (model/timeline.h),
// from pypto-rt's architecture table. Every function notes the running
// instruction's pipe and cycles; the instruction's prologue (AtSite) puts
// it on the timeline when it returns.
#pragma once

#include <cmath>
#include <cstring>

#include "timeline.h"

namespace pypto_emu {

enum class VectorCost : uint8_t { Simple, Special, Reduce };

// The class of a vector instruction, by name: the transcendental and
// dividing ones run at a lower rate (DESIGN.md §6, PyPTO's model).
inline VectorCost vector_cost_by_name(const char* what)
{
    static const char* special[] = {"Exp", "Ln", "Div", "Sqrt", "Rsqrt", "Reciprocal", "Log", "Power",
                                    "Log2", "Log10", "Sin", "Cos", "Tan", "Tanh", "Sinh", "Cosh",
                                    "Asin", "Acos", "Atan", "Asinh", "Acosh", "Atanh", "Erf", "Erfc",
                                    "Sigmoid", "Fmod"};
    for (const char* s : special) {
        if (std::strcmp(what, s) == 0) {
            return VectorCost::Special;
        }
    }
    if (std::strstr(what, "Reduce") != nullptr || std::strstr(what, "Sum") != nullptr) {
        return VectorCost::Reduce;
    }
    return VectorCost::Simple;
}

// vector_cost_by_name, remembered per name: names are the emulation's
// literals, so their addresses key a small cache (plain thread-local
// arrays: no constructor to call on each read).
inline thread_local const char* vector_cost_names[16] = {};
inline thread_local VectorCost vector_cost_kinds[16] = {};

inline VectorCost vector_cost_of(const char* what)
{
    size_t slot = (reinterpret_cast<uintptr_t>(what) >> 4) & 15;
    if (vector_cost_names[slot] != what) {
        vector_cost_kinds[slot] = vector_cost_by_name(what);
        vector_cost_names[slot] = what;
    }
    return vector_cost_kinds[slot];
}

// A vector instruction over `repeats` 256-byte repeats of `elem` -byte elements.
inline void model_vector_repeats(const char* what, uint64_t repeats, uint32_t elem)
{
    if (!modelling()) {
        return;
    }
    const ModelParams& p = timeline.p;
    VectorCost kind = vector_cost_of(what);
    double rate = p.vec_simple_bytes;
    double latency = p.vec_latency;
    if (kind == VectorCost::Special) {
        rate = elem >= 4 ? p.vec_f32_special_bytes : p.vec_f16_special_bytes;
        latency = p.vec_special_latency;
    } else if (kind == VectorCost::Reduce) {
        latency = p.vec_reduce_latency;
    }
    double cycles = p.vec_head + std::ceil(static_cast<double>(repeats) * 256.0 / rate) + latency;
    model_note(PIPE_V, cycles, repeats * 256);
}

// A count-form vector instruction over `bytes` of its widest operand.
inline void model_vector_bytes(const char* what, uint64_t bytes, uint32_t elem)
{
    model_vector_repeats(what, (bytes + 255) / 256, elem);
}

// Whether GM address `p` lies in one of the launch's input tensors: only
// those are read from HBM the first time; outputs and workspaces hold what
// the launch wrote, which stays in L2.
inline bool gm_in_input(const void* p)
{
    const auto* at = static_cast<const uint8_t*>(p);
    for (const GmRegion& r : block.regions) {
        if (at >= r.begin && at < r.begin + r.bytes) {
            return !r.writable && r.arg != UINT32_MAX;
        }
    }
    return false;
}

// A copy of `bytes` from memory `src` to `dst` (global memory or on-chip),
// in `bursts` transfers; `gm_src`, for a read of global memory, is where
// it starts.
inline void model_copy(Memory src, Memory dst, uint64_t bytes, uint64_t bursts = 1,
                       const void* gm_src = nullptr)
{
    if (!modelling()) {
        return;
    }
    Timeline& t = timeline;
    const ModelParams& p = t.p;
    (void)bursts;
    if (src == Memory::GM) {
        t.gm_read += bytes;
        // The core's share of the inputs' first reads comes from HBM, the
        // rest from L2 (model_begin).
        uint64_t cold = gm_src != nullptr && gm_in_input(gm_src) ? std::min(bytes, t.cold_left) : 0;
        t.cold_left -= cold;
        t.gm_cold += cold;
        double stream = static_cast<double>(cold) / t.cold_rate + static_cast<double>(bytes - cold) / t.gm_in;
        model_note(PIPE_MTE2, p.mte2_latency + stream, bytes);
        model_note_gm(bytes, stream, false);
    } else if (dst == Memory::GM) {
        t.gm_write += bytes;
        if (src == Memory::L0C) {
            double stream = static_cast<double>(bytes) / std::min(p.fix_bytes, t.gm_out);
            model_note(PIPE_FIX, p.fix_latency + stream, bytes);
            model_note_gm(bytes, stream, true);
        } else {
            double stream = static_cast<double>(bytes) / t.gm_out;
            model_note(PIPE_MTE3, p.mte3_latency + stream, bytes);
            model_note_gm(bytes, stream, true);
        }
    } else if (dst == Memory::L0A) {
        model_note(PIPE_MTE1, p.mte1_latency + static_cast<double>(bytes) / p.l0a_bytes, bytes);
    } else if (dst == Memory::L0B || dst == Memory::BT) {
        // L1 -> BiasTable is MTE1's too; taken at L0B's rate.
        model_note(PIPE_MTE1, p.mte1_latency + static_cast<double>(bytes) / p.l0b_bytes, bytes);
    } else if (src == Memory::L0C) {
        model_note(PIPE_FIX, p.fix_latency + static_cast<double>(bytes) / p.fix_bytes, bytes);
    } else {
        model_note(PIPE_V, p.vec_head + static_cast<double>(bytes) / p.ub_copy_bytes, bytes);
    }
}

// Mmad of an m x k by k x n product: one cycle per 16 x k0 x 16 fractal
// product (k0 = 32 bytes of the input type: 16 for fp16/bf16, 32 for int8,
// 8 for fp32 at half rate, so 4).
inline void model_mmad(uint64_t m, uint64_t n, uint64_t k, uint32_t in_bytes)
{
    if (!modelling()) {
        return;
    }
    uint64_t k0 = in_bytes == 1 ? 32 : in_bytes == 2 ? 16 : 4;
    uint64_t fractals = ((m + 15) / 16) * ((n + 15) / 16) * ((k + k0 - 1) / k0);
    model_note(PIPE_M, timeline.p.mmad_latency + static_cast<double>(fractals), m * n * k);
}

} // namespace pypto_emu
