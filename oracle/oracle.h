// The oracle: build a candidate, run it in fresh processes on a backend, classify.
// The three stages live in build.*, process.* and classify.*; this file only wires them.
#pragma once

#include "build.h"
#include "classify.h"
#include "process.h"
#include "verdict.h"

#include <string>
#include <vector>

namespace wsr {

struct OracleOptions {
  BuildOptions build;
  RunOptions run;
  ClassifyOptions classify;
  int repeat = 1;
  std::string backend = "auto";            // gpu | auto (the emulator backend comes later)
  std::vector<std::string> program_args;   // passed to the program
  std::string sanitizer;                   // synccheck | racecheck | memcheck | initcheck
  std::string record_dir;                  // write each raw RunRecord here as JSON
  // Adaptive timeouts (issue 5): with calibrate and an observed run time of the original program
  // (a passing or failing-fast build of it), each run's timeout is
  // calibratedTimeout(calibrate_observed_ms, calibrate_k, calibrate_floor_s, calibrate_cap_s)
  // instead of run.timeout_s; the figures go into the verdict's evidence.
  bool calibrate = false;
  double calibrate_observed_ms = 0;
  double calibrate_k = 10, calibrate_floor_s = 2, calibrate_cap_s = 60;
  // A run killed at the timeout without a watchdog record is retried once with twice the
  // timeout before it is called a hang (slow is not hang).
  bool retry_timeout = true;
};

// clamp(k x observed, floor, cap), in seconds (observed in ms).
double calibratedTimeout(double observed_ms, double k, double floor_s, double cap_s);

// Whether this machine has an NVIDIA GPU the driver exposes.
bool gpuPresent();

// Builds and judges `source`; never throws for anything the program does.
Verdict judge(const std::string &source, const OracleOptions &opt);

// Runs an already-built binary `repeat` times and classifies (the build record is `b`).
Verdict judgeBuilt(const BuildRecord &b, const OracleOptions &opt);

}  // namespace wsr
