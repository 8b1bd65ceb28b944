// memcheck (SANITIZE_MEM), across the blocks of one launch: each core
// records the global-memory byte ranges it writes and reads per tensor
// argument; the launch's last block compares the blocks (README.md,
// "Sanitizer checks").
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "../core.h"

namespace pypto_emu {

// ---- sanitizer: memcheck across the blocks of a launch --------------------
//
// Each core records the global-memory bytes it writes without an atomic
// mode (note_gm_write, from store_gm, GlobalTensor::SetValue and
// operator()); when a core ends, its ranges join its block's in a registry
// keyed by launch; the launch's last block to finish compares the blocks.

// Adds [b, e) to merged ranges (begin -> end), joining every range it
// touches (adjacent ones too).
PYPTO_RUNTIME void merge_range(std::map<uint64_t, uint64_t>& m, uint64_t b, uint64_t e)
#if PYPTO_RUNTIME_BODY
{
    auto it = m.upper_bound(b);
    if (it != m.begin()) {
        auto prev = std::prev(it);
        if (prev->second >= b) {
            if (prev->second >= e) {
                return;
            }
            b = prev->first;
            m.erase(prev);
        }
    }
    while (it != m.end() && it->first <= e) {
        e = it->second > e ? it->second : e;
        it = m.erase(it);
    }
    m.emplace(b, e);
}
#else
;
#endif

// Records [p, p + bytes) of a tensor argument in `per_arg` (outputs only
// when `outputs_only`).
PYPTO_RUNTIME void note_gm_range(std::vector<std::map<uint64_t, uint64_t>>& per_arg, const void* ptr, uint64_t bytes,
                          bool outputs_only)
#if PYPTO_RUNTIME_BODY
{
    if (!sanitizing(SANITIZE_MEM) || block.num < 2 || bytes == 0) {
        return;
    }
    const auto* p = static_cast<const uint8_t*>(ptr);
    for (const GmRegion& r : block.regions) {
        if (r.arg != UINT32_MAX && p >= r.begin && p < r.begin + r.bytes) {
            if (outputs_only && !r.writable) {
                return;
            }
            if (per_arg.size() <= r.arg) {
                per_arg.resize(r.arg + 1);
            }
            uint64_t b = static_cast<uint64_t>(p - r.begin);
            merge_range(per_arg[r.arg], b, b + bytes);
            return;
        }
    }
}
#else
;
#endif

// Records that this core wrote [p, p + bytes) of a tensor argument.
inline void note_gm_write(const void* ptr, uint64_t bytes)
{
    note_gm_range(block.gm_writes, ptr, bytes, false);
}

// Records that this core read [p, p + bytes) of a tensor argument; only
// outputs can be written by another block.
inline void note_gm_read(const void* ptr, uint64_t bytes)
{
    note_gm_range(block.gm_reads, ptr, bytes, true);
}

struct LaunchWrites {
    uint32_t num = 0;
    uint32_t finished = 0;
    bool failed = false;
    std::vector<uint8_t> done; // per block
    // Per block, per tensor argument: merged written and read ranges.
    std::vector<std::vector<std::map<uint64_t, uint64_t>>> writes;
    std::vector<std::vector<std::map<uint64_t, uint64_t>>> reads;
};

inline std::mutex& launch_writes_lock()
{
    static std::mutex lock;
    return lock;
}

inline std::map<uint64_t, LaunchWrites>& launch_writes()
{
    static std::map<uint64_t, LaunchWrites> registry;
    return registry;
}

PYPTO_RUNTIME LaunchWrites& launch_entry(uint64_t id, uint32_t num, uint32_t idx)
#if PYPTO_RUNTIME_BODY
{
    LaunchWrites& w = launch_writes()[id];
    // A stale entry (a launch that stopped early with the same ID): start over.
    if (w.num != num || (idx < w.done.size() && w.done[idx] != 0)) {
        w = LaunchWrites{};
        w.num = num;
        w.done.assign(num, 0);
        w.writes.resize(num);
        w.reads.resize(num);
    }
    return w;
}
#else
;
#endif

// Adds this core's written ranges to its block's (cores of one mixed block
// share one entry: their hand-offs are ordered by cross-core flags).
PYPTO_RUNTIME void deposit_gm_writes(const HostLaunch* launch)
#if PYPTO_RUNTIME_BODY
{
    if ((launch->sanitize & 8u) == 0 || launch->block_num < 2) {
        return;
    }
    std::lock_guard<std::mutex> hold(launch_writes_lock());
    LaunchWrites& w = launch_entry(launch->launch_id, launch->block_num, launch->block_idx);
    auto deposit = [](std::vector<std::map<uint64_t, uint64_t>>& mine,
                      std::vector<std::map<uint64_t, uint64_t>>& core) {
        if (mine.size() < core.size()) {
            mine.resize(core.size());
        }
        for (size_t a = 0; a < core.size(); ++a) {
            if (mine[a].empty()) {
                mine[a].swap(core[a]);
                continue;
            }
            for (const auto& range : core[a]) {
                merge_range(mine[a], range.first, range.second);
            }
        }
        core.clear();
    };
    deposit(w.writes[launch->block_idx], block.gm_writes);
    deposit(w.reads[launch->block_idx], block.gm_reads);
}
#else
;
#endif

// The first read by one block of bytes another block writes, as a message;
// "" if none. Called when no two blocks' writes overlap, so the writes to
// one tensor are disjoint.
PYPTO_RUNTIME std::string find_cross_read(const LaunchWrites& w, const HostLaunch* launch, uint32_t* reader)
#if PYPTO_RUNTIME_BODY
{
    struct Range {
        uint64_t begin, end;
        uint32_t block;
        bool operator<(const Range& o) const { return begin < o.begin; }
    };
    std::vector<Range> writes;
    for (size_t a = 0;; ++a) {
        bool any = false;
        writes.clear();
        for (uint32_t b = 0; b < w.writes.size(); ++b) {
            if (a < w.writes[b].size()) {
                any = true;
                for (const auto& range : w.writes[b][a]) {
                    writes.push_back({range.first, range.second, b});
                }
            }
        }
        for (uint32_t b = 0; b < w.reads.size(); ++b) {
            any = any || a < w.reads[b].size();
        }
        if (!any) {
            return "";
        }
        std::sort(writes.begin(), writes.end());
        for (uint32_t b = 0; b < w.reads.size(); ++b) {
            if (a >= w.reads[b].size()) {
                continue;
            }
            for (const auto& read : w.reads[b][a]) {
                // The first write ending after the read begins, then on.
                auto it = std::upper_bound(writes.begin(), writes.end(), Range{read.first, 0, 0});
                if (it != writes.begin() && std::prev(it)->end > read.first) {
                    --it;
                }
                for (; it != writes.end() && it->begin < read.second; ++it) {
                    if (it->block == b) {
                        continue;
                    }
                    uint64_t lo = it->begin > read.first ? it->begin : read.first;
                    uint64_t hi = it->end < read.second ? it->end : read.second;
                    GmRegion region{nullptr, 0, static_cast<uint32_t>(a), true, nullptr, 0, 0, 0};
                    if (launch->arg_info != nullptr) {
                        region.name = launch->arg_info[a].name;
                        region.name_len = launch->arg_info[a].name_len;
                    }
                    *reader = b;
                    return concat("memcheck: block ", b, " reads bytes [", lo, ", ", hi, ") of ",
                                  param_name(region), ", which block ", it->block,
                                  " writes in the same launch; blocks run in no set order, so what it "
                                  "reads depends on timing; read only what this block writes, or "
                                  "split the work into two launches");
                }
            }
        }
    }
}
#else
;
#endif

// The first overlap between two blocks' writes, as a message; "" if none.
PYPTO_RUNTIME std::string find_overlap(const LaunchWrites& w, const HostLaunch* launch, uint32_t* higher)
#if PYPTO_RUNTIME_BODY
{
    size_t args = 0;
    for (const auto& per_block : w.writes) {
        args = per_block.size() > args ? per_block.size() : args;
    }
    struct Range {
        uint64_t begin, end;
        uint32_t block;
        bool operator<(const Range& o) const
        {
            return begin != o.begin ? begin < o.begin : block < o.block;
        }
    };
    std::vector<Range> all;
    for (size_t a = 0; a < args; ++a) {
        all.clear();
        for (uint32_t b = 0; b < w.writes.size(); ++b) {
            if (a < w.writes[b].size()) {
                for (const auto& range : w.writes[b][a]) {
                    all.push_back({range.first, range.second, b});
                }
            }
        }
        std::sort(all.begin(), all.end());
        // Ranges of one block are disjoint, so a range that starts before
        // the furthest end so far overlaps another block's.
        const Range* reach = nullptr;
        for (const Range& r : all) {
            if (reach != nullptr && r.begin < reach->end) {
                uint32_t lo = reach->block < r.block ? reach->block : r.block;
                uint32_t hi = reach->block < r.block ? r.block : reach->block;
                uint64_t end = reach->end < r.end ? reach->end : r.end;
                GmRegion region{nullptr, 0, static_cast<uint32_t>(a), true, nullptr, 0, 0, 0};
                if (launch->arg_info != nullptr) {
                    region.name = launch->arg_info[a].name;
                    region.name_len = launch->arg_info[a].name_len;
                }
                *higher = hi;
                return concat("memcheck: blocks ", lo, " and ", hi, " both write bytes [", r.begin,
                              ", ", end, ") of ", param_name(region),
                              " without an atomic mode, so the result depends on which block "
                              "writes last; give each block its own part of the output, or "
                              "accumulate with SetAtomicAdd");
            }
            if (reach == nullptr || r.end > reach->end) {
                reach = &r;
            }
        }
    }
    return "";
}
#else
;
#endif

// Called once per block of a launch when the block has finished (all its
// cores): the last block checks the launch. Returns a new status.
PYPTO_RUNTIME int32_t finish_gm_writes(HostLaunch* launch, int32_t status)
#if PYPTO_RUNTIME_BODY
{
    if ((launch->sanitize & 8u) == 0 || launch->block_num < 2) {
        return status;
    }
    LaunchWrites w;
    {
        std::lock_guard<std::mutex> hold(launch_writes_lock());
        LaunchWrites& entry = launch_entry(launch->launch_id, launch->block_num, launch->block_idx);
        entry.done[launch->block_idx] = 1;
        entry.failed = entry.failed || status != 0;
        if (++entry.finished < entry.num) {
            return status;
        }
        w = std::move(entry);
        launch_writes().erase(launch->launch_id);
    }
    if (w.failed || status != 0) {
        return status;
    }
    uint32_t higher = 0;
    std::string message = find_overlap(w, launch, &higher);
    if (message.empty()) {
        message = find_cross_read(w, launch, &higher);
    }
    if (message.empty()) {
        return status;
    }
    write_message(launch, message.c_str());
    launch->fail_block = higher + 1;
    return 1;
}
#else
;
#endif

} // namespace pypto_emu
