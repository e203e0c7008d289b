// The hang watchdog's instrumentation (docs/design.md "Oracle rules"): a Clang rewrite of a
// COPY of the user's .cu in which every mbarrier wait is bounded by %globaltimer. On expiry the
// parked warp writes a record (block, warp, lane, site, barrier, parity, iteration) into
// host-visible memory and traps, or leaves the kernel (the runtime's exit mode, WSWATCH_END=exit);
// oracle/include/wswatch_rt.cuh is the runtime the copy includes, oracle/include/wswatch_abi.h
// the record layout the classifier decodes.
//
// Wait forms bounded:
//   loop        a C++ while/do/for loop around an asm statement holding mbarrier.try_wait or
//               mbarrier.test_wait (a tick before each attempt, a completion hook after the loop)
//   asm-loop    a wait written entirely inside one asm block with a label and a predicated
//               backward branch: the branch is rewritten to check %globaltimer and leave the asm
//               with an "expired" flag (in exit mode also at the end of another warp's
//               grace); C++ after the asm records and ends the warp
//   call-loop   a C++ loop around a single-shot try-wait call:
//   cuda::ptx::mbarrier_try_wait(_parity),
//               mbarrier_test_wait(_parity), or a user function whose body is one try_wait asm
//   cuda-barrier  cuda::barrier::wait / wait_parity / arrive_and_wait: replaced by a bounded loop
//               over the barrier's own try_wait_for / try_wait_parity_for
// A wait inside a helper (mbar_wait) is bounded in the helper, which gets three trailing
// defaulted parameters (site id, per-thread iteration counter, barrier index); each call of the
// helper in a kernel passes its own site id, so a record names the CALLER's line and role.
//
// Line numbers of the user's file are preserved (no edit adds a line; a #line directive follows
// the injected include), so nvcc diagnostics and -lineinfo still point at the user's lines.
// Library target wsr_watchdog (Clang); wsr_oracle reaches it only through BuildOptions::instrument.
#pragma once

#include "parse.h"

#include <functional>
#include <string>
#include <vector>

namespace wsr {

struct WatchSite {
  unsigned id = 0;
  std::string kind;   // loop | asm-loop | call-loop | helper-call | helper-default | cuda-barrier
  unsigned line = 0;  // where a report points: the wait, or the call of the helper holding it
  unsigned wait_line = 0;  // the bounded wait loop itself
  std::string function;    // the function holding `line`
  std::string guard;       // condition text of the enclosing role guards, outermost first
  std::string role;        // docs/methodology.md guard-table form: "warpgroup 0 / thread 0"
  std::string role_word;   // producer / consumer / ... when a comment at the guard says so
  std::string bar;         // the barrier's name when the source shows one ("full"), else ""
};

struct WatchOptions {
  ParseOptions parse;
  std::string runtime_include = "wswatch_rt.cuh";  // what the copy #includes
};

struct WatchResult {
  bool ok = false;
  std::string error;                  // why no copy was made (the file does not parse, ...)
  std::string text;                   // the instrumented copy
  std::vector<WatchSite> sites;       // indexed by id
  std::vector<std::string> warnings;  // waits seen but not bounded, with the reason
  // The mbarrier shadow (wswatch_rt.cuh): on when the copy follows every state change of every
  // mbarrier; else why not.
  bool shadow = false;
  std::string shadow_off;
};

// Instruments `text` (the contents of `path`). Never throws; ok=false with a reason when the file
// cannot be parsed. A file without waits still gets the runtime (no sites).
WatchResult instrumentWatchdog(const std::string &text, const std::string &path,
                               const WatchOptions &opt);

// The BuildOptions::instrument hook the tools install: the instrumented text, or empty when
// the program cannot be instrumented (the build then compiles the original).
std::function<std::string(const std::string &, const std::string &)> watchdogInstrumenter(
    WatchOptions opt);

// docs/methodology.md's guard table on a condition's text, for tests and for guards the AST
// path cannot resolve: "(warp_id_in_cta >> 2) == 0" -> "warpgroup 0", "(threadIdx.x % 32) == 0" ->
// "lane 0", "warp_id == 0" -> "warp 0". Empty when the condition names no thread/warp/lane.
std::string roleFromGuardText(const std::string &cond);

}  // namespace wsr
