// The hang watchdog's runtime with the mbarrier shadow on (wswatch_rt.cuh, WSWATCH_SHADOW): what
// an instrumented copy includes, in one line, when the rewrite follows every mbarrier change of
// the program.
#pragma once
#define WSWATCH_SHADOW 1
#include "wswatch_rt.cuh"
