#include "oracle.h"

#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <filesystem>
#include <unistd.h>

namespace fs = std::filesystem;

namespace wsr {

bool gpuPresent() {
  return ::access("/dev/nvidia0", F_OK) == 0 || ::access("/dev/nvidiactl", F_OK) == 0;
}

static void record(const OracleOptions &opt, const RunRecord &r, int index, const std::string &tag) {
  if (opt.record_dir.empty()) return;
  std::error_code ec;
  fs::create_directories(opt.record_dir, ec);
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("{0:2}", toJSON(r));
  writeFileAtomic(opt.record_dir + "/" + tag + "run" + std::to_string(index) + ".json", os.str());
}

Verdict judgeBuilt(const BuildRecord &b, const OracleOptions &opt) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<RunRecord> runs;
  if (b.ok) {
    std::vector<std::string> argv = {b.binary};
    argv.insert(argv.end(), opt.program_args.begin(), opt.program_args.end());
    for (int i = 0; i < std::max(1, opt.repeat); ++i) {
      runs.push_back(runProcess(argv, opt.run));
      record(opt, runs.back(), i + 1, "");
    }
  }
  Verdict v = classify(b, runs, opt.classify);
  if (b.ok && !opt.sanitizer.empty()) {
    // Evidence only: compute-sanitizer has known false positives on TMA and named barriers.
    v.sanitizer_tool = opt.sanitizer;
    auto cs = findInPath("compute-sanitizer");
    if (!cs && ::access("/usr/local/cuda/bin/compute-sanitizer", X_OK) == 0)
      cs = "/usr/local/cuda/bin/compute-sanitizer";
    if (!cs) {
      v.sanitizer_output = "compute-sanitizer was not found; no sanitizer evidence";
    } else {
      std::vector<std::string> argv = {*cs, "--tool", opt.sanitizer, "--print-limit", "20", b.binary};
      argv.insert(argv.end(), opt.program_args.begin(), opt.program_args.end());
      RunOptions ro = opt.run;
      ro.timeout_s = opt.run.timeout_s * 20;  // the tools slow a kernel down by an order of magnitude or more
      auto r = runProcess(argv, ro);
      record(opt, r, 1, "sanitizer-");
      v.sanitizer_output = r.out + r.err;
      if (r.timed_out) v.sanitizer_output += "\n[compute-sanitizer timed out]";
    }
  }
  v.timings.total_ms = b.wall_ms + std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (v.symptom == "infra-error" && !gpuPresent()) v.evidence.push_back("no NVIDIA GPU on this machine (/dev/nvidia0 absent)");
  return v;
}

Verdict judge(const std::string &source, const OracleOptions &opt) {
  BuildRecord b = buildProgram(source, opt.build);
  return judgeBuilt(b, opt);
}

}  // namespace wsr
