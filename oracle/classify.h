// The classify stage: a pure function from what the build and the runs produced to a
// Verdict. It launches nothing and reads no file; tests feed it recorded runs.
#pragma once

#include "verdict.h"

#include <string>
#include <vector>

namespace wsr {

struct ClassifyOptions {
  std::string match;           // user --match REGEX (ECMAScript), searched in stdout+stderr
  double slow_baseline_ms = 0; // > 0: a passing run slower than factor x baseline is `slow`
  double slow_factor = 2.0;
};

// One harness comparison line (oracle/include/wscheck.h).
struct CheckLine {
  std::string name, shape, badrows, badcols, raw;
  long long rows = 0, cols = 0, bad = 0, nan = 0;
  double max_abs = 0;
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

Verdict classifyBuild(const BuildRecord &b);  // only for !b.ok
Verdict classifyRun(const RunRecord &r, const ClassifyOptions &opt);
Verdict classify(const BuildRecord &b, const std::vector<RunRecord> &runs, const ClassifyOptions &opt);

}  // namespace wsr
