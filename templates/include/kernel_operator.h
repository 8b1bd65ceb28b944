// pypto-rs host emulation of the Ascend C kernel API (the subset the pypto-rs
// templates use), so that kernel sources written for an Ascend NPU compile
// and run unchanged on a CPU. Written from the public Ascend C documentation;
// see pypto_emu/README.md for what is covered and what is enforced.
//
// On the NPU backend this header is never used: CANN's own
// `kernel_operator.h` is found first.
#pragma once

// A build passes PYPTO_EMU_ABI, a hash of these headers, and it becomes part
// of both namespaces' names (so of every C++ symbol): crates built with
// different versions of the headers link into one binary without one's
// runtime or inline functions standing in for the other's. Kernel sources
// still write `AscendC::`.
#if defined(PYPTO_EMU_ABI)
#define PYPTO_EMU_JOIN2(a, b) a##b
#define PYPTO_EMU_JOIN(a, b) PYPTO_EMU_JOIN2(a, b)
#define pypto_emu PYPTO_EMU_JOIN(pypto_emu_, PYPTO_EMU_ABI)
#define AscendC PYPTO_EMU_JOIN(AscendC_, PYPTO_EMU_ABI)
#endif

#include "pypto_emu/core.h"
#include "pypto_emu/types.h"
#include "pypto_emu/memory.h"
#include "pypto_emu/race.h" // already included by memory.h, which it needs
#include "pypto_emu/sync.h"
#include "pypto_emu/misc.h"
#include "pypto_emu/copy.h"
#include "pypto_emu/vector.h"
#include "pypto_emu/mask.h"
#include "pypto_emu/compound.h"
#include "pypto_emu/reduce.h"
#include "pypto_emu/cube.h"
#include "pypto_emu/layout.h"
#include "pypto_emu/system.h"
