// The classify stage: a pure function from what the build and the runs produced to a
// Verdict. It launches nothing and reads no file; tests feed it recorded runs.
#pragma once

#include "verdict.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace wsr {

struct ClassifyOptions {
  std::string match;            // user --match REGEX (ECMAScript), searched in stdout+stderr
  double slow_baseline_ms = 0;  // > 0: a passing run slower than factor x baseline is `slow`
  double slow_factor = 2.0;
};

// One harness comparison line (oracle/include/wscheck.h).
struct CheckLine {
  std::string name, shape, badrows, badcols, raw;
  long long rows = 0, cols = 0, bad = 0, nan = 0;
  double max_abs = 0;
  bool ref_constant = false;  // the reference was one value everywhere (ref=constant)
  bool out_unrelated =
      false;  // a wrong output whose correlation with the reference is < 0.3 (out=unrelated)
};
std::vector<CheckLine> parseCheckLines(const std::string &text);

// A CUDA runtime/driver error the program printed.
struct CudaError {
  int code = 0;
  std::string name;    // cudaErrorIllegalAddress
  std::string detail;  // crash/illegal-address, infra-error/no-gpu, ...
  std::string line;    // the output line it was found on
};
std::vector<CudaError> findCudaErrors(const std::string &text);

// The first error of a failed build with file names, line numbers and temp names removed.
std::string normaliseCompileError(const std::string &line);

// The hang watchdog (oracle/include/wswatch_rt.cuh). An instrumented program writes
// one record per parked warp: as WSWATCH lines on stderr at exit, and into its watch file,
// which the oracle decodes (decodeWatchBuffer) into the same lines in RunRecord::watch.
struct WatchRecord {
  unsigned block[3] = {0, 0, 0};
  unsigned warp = 0, lane = 0, lanes = 0, site = 0, line = 0, wait_line = 0;
  std::string file, role, name;  // role: "consumer: not warpgroup 0"; name: the barrier ("full")
  int idx = -1, parity = -1;  // barrier index (-1: unknown), parity waited for (-1: a token wait)
  long long iter = -1;        // waits this thread had completed at the site (-1: not counted)
  unsigned long long bar = 0, gbar = 0;
  double waited_ms = 0;
  // Parked in a counted named barrier (bar.sync id, count) rather than on an mbarrier: idx is
  // the barrier id, and these say how many threads it waits for and how many had arrived.
  bool named = false;
  unsigned nb_count = 0, nb_arrived = 0;
  // The copy's mbarrier shadow at the waited address: "" (no shadow), "uninit" (no init in the
  // CTA touched it) or "init" with the init's count, the arrivals, bulk copies and expect_tx bytes
  // since.
  std::string shadow;
  unsigned sh_count = 0, sh_arrivals = 0, sh_copies = 0;
  unsigned long long sh_tx = 0;
  std::string raw;
};
// How far the barrier a parked warp waits on got, from the shadow, in the emulator's words:
// "uninit", "none" (no arrival in the phase waited on), "partial" (some), "tx" (every arrival in,
// the phase held by transaction bytes, some bulk copy issued), "tx-none" (the same, no bulk copy
// ever issued on it); "" without a shadow or when the counts cannot tell (a token wait).
std::string shadowState(const WatchRecord &r);
struct WatchSiteInfo {
  unsigned site = 0, line = 0, wait_line = 0;
  std::string file, kind, role;
  bool ran = false;
};
struct WatchInBar {  // a warp that was inside a CTA barrier (bar.sync / __syncthreads) at the end
  unsigned block = 0, warp = 0, line = 0;
};
struct WatchReport {
  std::vector<WatchRecord> records;  // one per (block, warp, site)
  std::vector<WatchInBar> in_bar;    // warps inside bar.sync / __syncthreads when it ended
  std::vector<WatchSiteInfo> sites;  // every instrumented site, when the program reported them
  std::string mode;                  // file | poll | pinned
  double bound_ms = 0;
  unsigned dropped = 0;
  bool seen = false;  // any WSWATCH line at all
  // WSWATCH-END: the watchdog's exit mode ended the program itself once the records were in
  // (the parked warps left the kernel; no trap), with this exit status.
  bool ended = false;
  int end_status = 0;
};
WatchReport parseWatchRecords(const std::string &text);
// The watch file's bytes (wswatch_buf_t) as WSWATCH lines; empty when they are not a buffer.
std::string decodeWatchBuffer(const std::string &bytes);
// hang:<kind>:<the parked warpgroups>, each with what it waits on: "warpgroup1(first)" when every
// warp of it parked on its first wait at that site, "warpgroup0(named1:128/160)" for a counted
// named barrier (id, threads arrived / the count). `in_cta_barrier`: warpgroups found only inside
// an unbounded CTA barrier (__syncthreads), listed without a detail.
std::string watchSignature(const WatchReport &w, const std::string &kind = "mbarrier",
                           const std::set<unsigned> &in_cta_barrier = {});
// A signature without line numbers (barrier name, role, iteration): stable under edits that move
// lines, for a reducer that wants "the same parked warps" across candidates.
std::string watchSiteKey(const WatchReport &w);
// cuda-gdb style lines: "warpgroup 1 (consumer: not warpgroup 0), 4 warps, parked at
// kernel.cu:212 mbarrier full[1] waiting for parity 0, iteration 1".
std::vector<std::string> watchEvidence(const WatchReport &w, size_t max_lines = 8);

// The CPU emulator's verdict (emu/runtime/core.h Verdict::lines): "WSEMU verdict=hang/mbarrier
// symptom=hang block=0,0,0 signature=k.cu:13,warpgroup0,iter0" and the WSEMU lines after it.
// classifyRun maps it: hang/* as is, ub/<what> -> crash/ub-<what>, infra-error/* as is.
struct EmuVerdict {
  std::string detail, symptom, signature;
  std::vector<std::string> lines;  // the WSEMU lines, verdict first
};
std::optional<EmuVerdict> parseEmuVerdict(const std::string &text);

Verdict classifyBuild(const BuildRecord &b);  // only for !b.ok
// The last line of a program's output that says it failed (FAIL, mismatch, wrong, incorrect),
// its floating-point values as '#' and its integers as printed: what a wrong result without the
// harness reports of itself. Empty when no line says so.
std::string failureReport(const std::string &output);

Verdict classifyRun(const RunRecord &r, const ClassifyOptions &opt);
Verdict classify(const BuildRecord &b, const std::vector<RunRecord> &runs,
                 const ClassifyOptions &opt);

}  // namespace wsr
