// The oracle: build a candidate, run it in fresh processes on a backend, classify.
// The three stages live in build.*, process.* and classify.*; this file only wires them.
#pragma once

#include "build.h"
#include "classify.h"
#include "process.h"
#include "verdict.h"

#include <functional>
#include <string>
#include <vector>

namespace wsr {

struct OracleOptions {
  BuildOptions build;
  RunOptions run;
  ClassifyOptions classify;
  int repeat = 1;
  // Where candidates run: gpu (nvcc + the device), emu (the CPU emulator: the program built
  // against its runtime, emu/README.md; the runs are the same fresh processes) or auto = gpu when this machine
  // has an NVIDIA GPU, else emu when the tool has it built in (emu_build set), else gpu.
  std::string backend = "auto";
  // The emu backend's build stage (wsr::emu::emuBuilder()); the tools install it, which keeps
  // Clang and the emulator out of wsr_oracle.
  std::function<BuildRecord(const std::string &source_path, const BuildOptions &)> emu_build;
  // emu: the async timing policies to run (eager, reads-late, completions-late); more than one is
  // the policy matrix: each policy one run (the emulator is deterministic), the verdict is
  // matrixPick's (UB first), and Verdict::policies records what each one showed.
  std::vector<std::string> policies = {"eager"};
  // emu: make nvcc's compile errors the verdict. The PTX path's build is nvcc's already; after
  // the source translator's (g++, which never sees a ptxas error) nvcc builds the program too.
  bool emu_nvcc_first = false;
  // emu: a launch that has run this many emulated operations without finishing stops with the
  // verdict hang/livelock (0: the emulator's own limit, 2e9). The reducer sets it from the
  // original's count (the emulator's "WSEMU ops N" line), so that a candidate that loops for ever
  // is judged in milliseconds, not killed at the timeout.
  unsigned long long emu_max_ops = 0;
  // Stop after the build: a program that builds is `pass` (detail "compiled"), never run. For
  // compile-error reductions, which need no device.
  bool build_only = false;
  std::vector<std::string> program_args;  // passed to the program
  std::string sanitizer;                  // synccheck | racecheck | memcheck | initcheck
  std::string record_dir;                 // write each raw RunRecord here as JSON
  // Adaptive timeouts: with calibrate and an observed run time of the original program
  // (a passing or failing-fast build of it), each run's timeout is
  // calibratedTimeout(calibrate_observed_ms, calibrate_k, calibrate_floor_s, calibrate_cap_s)
  // instead of run.timeout_s; the figures go into the verdict's evidence.
  bool calibrate = false;
  double calibrate_observed_ms = 0;
  double calibrate_k = 10, calibrate_floor_s = 2, calibrate_cap_s = 60;
  // A run killed at the timeout without a watchdog record is retried once with twice the
  // timeout before it is called a hang (slow is not hang).
  bool retry_timeout = true;
  // Runs started ahead of their turn, when run.gate_library is set (gpu backend): run
  // k+1's process opens its CUDA context while run k goes on; `wait_turn`, when set, is called
  // after the first run's process is started and before its gate opens (a GPU slot's turn).
  std::function<void()> wait_turn;
  // A verdict of the watchdog's instrumented build that is not a hang (pass, wrong, crash) is
  // confirmed on the plain build, whose verdict stands where the two differ: the instrumentation
  // changes the program's timing, and a timing-dependent failure must not turn into a pass. A
  // reducer's candidates skip it (a false pass only refuses a candidate); its original does not.
  bool confirm_plain = true;
};

// clamp(k x observed, floor, cap), in seconds (observed in ms).
double calibratedTimeout(double observed_ms, double k, double floor_s, double cap_s);

// Whether this machine has an NVIDIA GPU the driver exposes.
bool gpuPresent();

// "gpu" or "emu": what `opt.backend` means on this machine.
std::string resolveBackend(const OracleOptions &opt);

// The build stage of the resolved backend (nvcc, or the emulator's build). With emu_nvcc_first, a
// program nvcc rejects comes back as a failed record that classifies as nvcc's compile error.
BuildRecord buildFor(const std::string &source, const OracleOptions &opt);

// The emulator's async timing policies, in matrix order.
const std::vector<std::string> &emuPolicies();

// Which policy's verdict a policy matrix reports: the first that found undefined behaviour
// (crash/ub-*), which outranks a hang or a wrong result under another policy, since those are
// what the UB did under that timing; else the first that fails; else the first.
size_t matrixPick(const std::vector<Verdict> &per_policy);

// A --policy argument ("matrix" or a comma list of policies); false with the sentence in *err.
bool parsePolicies(const std::string &arg, std::vector<std::string> *out, std::string *err);

// Builds and judges `source`; never throws for anything the program does.
Verdict judge(const std::string &source, const OracleOptions &opt);
// Judges `text` as a file named `filename` in a fresh private directory (removed after): a
// candidate, a reduced program. infra-error/tmp when the directory cannot be written.
Verdict judgeText(const std::string &text, const std::string &filename, const OracleOptions &opt);

// Runs an already-built binary `repeat` times and classifies (the build record is `b`).
Verdict judgeBuilt(const BuildRecord &b, const OracleOptions &opt);

}  // namespace wsr
