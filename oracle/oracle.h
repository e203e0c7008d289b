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
};

// Whether this machine has an NVIDIA GPU the driver exposes.
bool gpuPresent();

// Builds and judges `source`; never throws for anything the program does.
Verdict judge(const std::string &source, const OracleOptions &opt);

// Runs an already-built binary `repeat` times and classifies (the build record is `b`).
Verdict judgeBuilt(const BuildRecord &b, const OracleOptions &opt);

}  // namespace wsr
