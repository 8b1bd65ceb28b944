// pypto-rs host emulation of the Ascend C kernel API (the subset the pypto-rs
// templates use), so that kernel sources written for an Ascend NPU compile
// and run unchanged on a CPU. Written from the public Ascend C documentation;
// see pypto_emu/README.md for what is covered and what is enforced.
//
// On the NPU backend this header is never used: CANN's own
// `kernel_operator.h` is found first.
#pragma once

// A build passes PYPTO_EMU_ABI, a hash of these headers, and it becomes part
// of both namespaces' names (so of every C++ symbol), with the architecture
// row the kernel is emulated as (pypto_emu/arch.h, which defines
// PYPTO_ARCH_ROW before any namespace opens): crates built with different
// versions of the headers, and kernels emulated as different
// architectures, link into one binary without one's runtime or inline
// functions standing in for the other's. Kernel sources still write
// `AscendC::`.
#if defined(PYPTO_EMU_ABI)
#define PYPTO_EMU_JOIN2(a, b) a##b
#define PYPTO_EMU_JOIN(a, b) PYPTO_EMU_JOIN2(a, b)
#define PYPTO_EMU_NAME(base) PYPTO_EMU_JOIN(PYPTO_EMU_JOIN(base, PYPTO_EMU_ABI), PYPTO_EMU_JOIN(_, PYPTO_ARCH_ROW))
#define pypto_emu PYPTO_EMU_NAME(pypto_emu_)
#define AscendC PYPTO_EMU_NAME(AscendC_)
#endif

#include "pypto_emu/memories.h"
#include "pypto_emu/core.h"

// A helper in a builtin partial takes its caller's line as a last
// parameter and opens a scope with it, so that the sanitizers and the
// modelled timeline name the kernel's own line (pypto_emu::AtCaller). The
// partials define both empty for CANN's headers.
#define PYPTO_CALLER , ::pypto_emu::Site pypto_caller = ::pypto_emu::Site::here()
#define PYPTO_CALLER_ONLY ::pypto_emu::Site pypto_caller = ::pypto_emu::Site::here()
#define PYPTO_AT_CALLER ::pypto_emu::AtCaller pypto_at_caller(pypto_caller)
#include "pypto_emu/types.h"
#include "pypto_emu/sanitize/race.h"
#include "pypto_emu/sanitize/init.h"
#include "pypto_emu/sanitize/mem.h"
#include "pypto_emu/memory.h"
#include "pypto_emu/sanitize/sync.h"
#include "pypto_emu/sync.h"
#include "pypto_emu/misc.h"
#include "pypto_emu/copy.h"
#include "pypto_emu/vector.h"
#include "pypto_emu/mask.h"
#include "pypto_emu/compound.h"
#include "pypto_emu/reduce.h"
#include "pypto_emu/cube.h"
#include "pypto_emu/layout.h"
#include "pypto_emu/math.h"
#include "pypto_emu/sort.h"
#include "pypto_emu/system.h"
