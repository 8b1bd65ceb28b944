// synccheck (SANITIZE_SYNC): what a core leaves behind when its body
// returns normally (a SetFlag never waited for, a queue buffer or event ID
// never given back, a cross-core set never consumed); README.md, "Sanitizer
// checks".
#pragma once

#include <string>

#include "../core.h"
#include "../memory.h"

namespace pypto_emu {

// synccheck, when a core's body returns normally: every SetFlag waited
// for, every event ID and queue buffer given back, every cross-core set
// of this core's own counters consumed.
PYPTO_RUNTIME void sync_check_end()
#if PYPTO_RUNTIME_BODY
{
    for (int e = 0; e < 32; ++e) {
        uint8_t raised = block.flags[e];
        for (int id = 0; id < 8; ++id) {
            if ((raised & (1u << id)) != 0) {
                const char* name = hard_event_name(static_cast<AscendC::HardEvent>(e));
                fail("synccheck: SetFlag<HardEvent::", name, ">(", id,
                     ") was never waited for when the block ended; add WaitFlag<HardEvent::", name,
                     ">(", id, ") before its consumer, or remove the SetFlag");
            }
        }
    }
    if (block.pipe != nullptr) {
        static_cast<AscendC::TPipe*>(block.pipe)->note_leaks("when the block ended");
    }
    if (!block.sync_leak.empty()) {
        fail(block.sync_leak);
    }
    for (int f = 0; f < 16; ++f) {
        if (block.cross_core[f] != 0) {
            fail("synccheck: CrossCoreSetFlag<", static_cast<int>(block.cross_core_mode[f]), ">(", f,
                 ") is pending ", static_cast<int>(block.cross_core[f]),
                 " time(s) with no CrossCoreWaitFlag when the block ended; CrossCoreSetFlag "
                 "and CrossCoreWaitFlag must be paired: add CrossCoreWaitFlag(", f,
                 ") where the set is consumed, or remove the CrossCoreSetFlag");
        }
    }
}
#else
;
#endif

// synccheck for a mixed block whose cores all ended normally: cross-core
// sets left unconsumed between its cube and vector cores. "" if none.
PYPTO_RUNTIME std::string group_sync_check(const CoreGroup& g)
#if PYPTO_RUNTIME_BODY
{
    auto pending = [](int mode, int f, const char* from, int n, const std::string& missing) {
        return concat("synccheck: CrossCoreSetFlag<", mode, ">(", f, ") from ", from,
                      " is pending ", n, " time(s) with no ", missing,
                      " when the block ended; CrossCoreSetFlag and CrossCoreWaitFlag "
                      "must be paired: add the wait, or remove the CrossCoreSetFlag");
    };
    const char* core[3] = {"the cube core (AIC)", "vector core 0 (AIV)", "vector core 1 (AIV)"};
    for (int f = 0; f < 16; ++f) {
        for (int c = 0; c < 3; ++c) {
            int n = g.counter[c][f];
            if (n != 0) {
                int mode = g.counter_mode[c][f];
                // Who raised it: the cube core (mode 2 to a vector core, or
                // mode 0 on the cube core itself) or both vector cores.
                const char* from = (c == 0) == (mode == 2) ? "both vector cores" : core[0];
                return pending(mode, f, from, n, concat("CrossCoreWaitFlag(", f, ") on ", core[c]));
            }
        }
        for (int v = 0; v < 2; ++v) {
            if (g.from_aiv[v][f] != 0) {
                return pending(2, f, core[1 + v], g.from_aiv[v][f],
                               concat("CrossCoreSetFlag<2>(", f, ") from the other vector core (the "
                                      "cube core's counter goes up when both have set it)"));
            }
            for (int m = 0; m < 2; ++m) {
                if (g.pair_sets[m][v][f] != 0) {
                    return pending(m, f, core[1 + v], g.pair_sets[m][v][f],
                                   concat("CrossCoreSetFlag<", m, ">(", f, ") from the other vector "
                                          "core (the counters go up when both have set it)"));
                }
            }
        }
    }
    return "";
}
#else
;
#endif

} // namespace pypto_emu
