// pypto-rs host emulation of the Ascend C kernel API (the subset the pypto-rs
// templates use), so that kernel sources written for an Ascend NPU compile
// and run unchanged on a CPU. Written from the public Ascend C documentation;
// see pypto_emu/README.md for what is covered and what is enforced.
//
// On the NPU backend this header is never used: CANN's own
// `kernel_operator.h` is found first.
#pragma once

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
