// Included by vendor programs under ASCENDC_CPU_DEBUG, which the host
// backend defines for a brought source, as the vendor's CPU debug flow
// does. Nothing is needed from it here: the generated code launches the
// kernel, and a program's own `<<<>>>` launches are not compiled on the
// host (pypto-build blanks them in the copy it compiles).
#pragma once
