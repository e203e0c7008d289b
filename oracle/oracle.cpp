#include "oracle.h"

#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>

#include <fcntl.h>
#include <unistd.h>

#include "include/wswatch_abi.h"

namespace fs = std::filesystem;

namespace wsr {

bool gpuPresent() {
  return ::access("/dev/nvidia0", F_OK) == 0 || ::access("/dev/nvidiactl", F_OK) == 0;
}

static void record(const OracleOptions &opt, const RunRecord &r, int index,
                   const std::string &tag) {
  if (opt.record_dir.empty()) return;
  std::error_code ec;
  fs::create_directories(opt.record_dir, ec);
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("{0:2}", toJSON(r));
  writeFileAtomic(opt.record_dir + "/" + tag + "run" + std::to_string(index) + ".json", os.str());
}

double calibratedTimeout(double observed_ms, double k, double floor_s, double cap_s) {
  double t = k * observed_ms / 1000.0;
  if (cap_s > 0 && t > cap_s) t = cap_s;
  if (t < floor_s) t = floor_s;
  return t;
}

// One run; with the watchdog's copy, the program gets a watch file (WSWATCH_FILE) whose records
// survive a trap or a kill, decoded into RunRecord::watch.

// RunOptions::over for an instrumented run: true a while after the watchdog's `fired` flag is set
// in the watch file. By then every parked warp has recorded (the firing warp waits a grace period
// for the others before it traps) and a program that ends normally after a trap has ended.
// In exit mode (WSWATCH_END=exit) the program ends itself: the device sets `ended` (the records
// are final), the host runtime prints them, sets `taken` and calls _exit, and the run comes back
// at that end with nothing waited for here. One whose records are final but not taken
// kAfterEndedS later has no host thread taking them (its sentinel warp traps after the drain) and
// is ended then, without waiting out kAfterFireS.
static constexpr double kAfterFireS = 1.5;
static constexpr double kAfterEndedS = 0.3;
static std::function<bool()> watchFired(const std::string &path) {
  using Clock = std::chrono::steady_clock;
  struct Seen {
    std::optional<Clock::time_point> fired, ended;
    bool taken = false;
  };
  auto seen = std::make_shared<Seen>();
  return [path, seen] {
    if (!seen->taken) {
      int fd = ::open(path.c_str(), O_RDONLY);
      if (fd < 0) return false;
      auto word = [fd](size_t at) {
        uint32_t v = 0;
        return ::pread(fd, &v, sizeof v, (off_t)at) == (ssize_t)sizeof v ? v : 0u;
      };
      const bool fired = word(offsetof(wswatch_buf_t, fired)) != 0;
      const bool ended = word(offsetof(wswatch_buf_t, ended)) != 0;
      seen->taken = word(offsetof(wswatch_buf_t, taken)) != 0;
      ::close(fd);
      if (fired && !seen->fired) seen->fired = Clock::now();
      if (ended && !seen->ended) seen->ended = Clock::now();
    }
    auto since = [](const std::optional<Clock::time_point> &t) {
      return t ? std::chrono::duration<double>(Clock::now() - *t).count() : -1.0;
    };
    return since(seen->fired) > kAfterFireS ||
           (!seen->taken && since(seen->ended) > kAfterEndedS);
  };
}
// One run, started now (gated when ro.gate_library is set: GatedRun) and finished by finish().
struct PendingRun {
  std::string dir;  // the watchdog's record file lives here
  std::unique_ptr<GatedRun> g;
  PendingRun(const BuildRecord &b, const std::vector<std::string> &argv, const RunOptions &ro) {
    RunOptions o = ro;
    if (b.instrumented) {
      dir = makeTempDir("wswatch.");
      if (!dir.empty()) {
        o.env_set["WSWATCH_FILE"] = dir + "/watch.bin";
        o.over = watchFired(dir + "/watch.bin");
      }
    }
    g = std::make_unique<GatedRun>(argv, o);
  }
  ~PendingRun() {
    g.reset();
    removeTree(dir);
  }
  RunRecord finish() {
    RunRecord r = g->run();
    if (!dir.empty())
      if (auto bytes = readFile(dir + "/watch.bin")) r.watch = decodeWatchBuffer(*bytes);
    return r;
  }
};

static RunRecord runOnce(const BuildRecord &b, const std::vector<std::string> &argv,
                         const RunOptions &ro) {
  RunOptions o = ro;
  o.gate_library.clear();  // started now: nothing to wait for
  return PendingRun(b, argv, o).finish();
}

std::string resolveBackend(const OracleOptions &opt) {
  if (opt.backend == "gpu" || opt.backend == "emu") return opt.backend;
  return gpuPresent() || !opt.emu_build ? "gpu" : "emu";
}

const std::vector<std::string> &emuPolicies() {
  static const std::vector<std::string> p = {"eager", "reads-late", "completions-late"};
  return p;
}

bool parsePolicies(const std::string &arg, std::vector<std::string> *out, std::string *err) {
  if (arg == "matrix") {
    *out = emuPolicies();
    return true;
  }
  std::vector<std::string> ps;
  size_t at = 0;
  for (;;) {
    size_t c = arg.find(',', at);
    std::string p = arg.substr(at, c == std::string::npos ? std::string::npos : c - at);
    if (std::find(emuPolicies().begin(), emuPolicies().end(), p) == emuPolicies().end()) {
      *err = "--policy must be matrix or a list of eager, reads-late, completions-late; got '" + p +
             "'";
      return false;
    }
    ps.push_back(p);
    if (c == std::string::npos) break;
    at = c + 1;
  }
  *out = std::move(ps);
  return true;
}

BuildRecord buildFor(const std::string &source, const OracleOptions &opt) {
  // Build-only runs nothing, so the hang watchdog has nothing to bound: its copy would cost a Clang
  // parse and, when the program does not compile, a second nvcc run (the copy's, then the plain
  // file's, so that the error is never the instrumentation's). The plain file alone gives the
  // same diagnostics at the cost of one build.
  BuildOptions bo = opt.build;
  if (opt.build_only) bo.watchdog = false;
  if (resolveBackend(opt) == "emu") {
    if (!opt.emu_build) {
      BuildRecord b;
      b.backend = "emu";
      b.tool_missing = true;
      b.tool_error = "the emulation backend is not built into this tool";
      return b;
    }
    BuildRecord b = opt.emu_build(source, bo);
    b.backend = "emu";
    // Compile errors are nvcc's: the PTX path's build is nvcc's own; after the translator's,
    // nvcc builds the program too.
    if (opt.emu_nvcc_first && !opt.build_only && !b.emu_by_nvcc && !b.cancelled) {
      BuildRecord n = buildProgram(source, bo);
      if (!n.ok) return n;
    }
    return b;
  }
  return buildProgram(source, bo);
}

static Verdict judgeBuiltOn(const BuildRecord &b, const OracleOptions &opt);

size_t matrixPick(const std::vector<Verdict> &vs) {
  auto ub = [](const Verdict &v) { return v.detail.rfind("crash/ub-", 0) == 0; };
  for (size_t i = 0; i < vs.size(); ++i)
    if (ub(vs[i])) return i;
  for (size_t i = 0; i < vs.size(); ++i)
    if (vs[i].symptom != "pass") return i;
  return 0;
}

// The emu backend: one run per policy (deterministic: a repeat would show the same), the verdict
// matrixPick chooses, and what every policy showed.
static Verdict judgeEmu(const BuildRecord &b, const OracleOptions &opt) {
  std::vector<std::string> pols =
      opt.policies.empty() ? std::vector<std::string>{"eager"} : opt.policies;
  std::vector<Verdict> vs;
  for (auto &p : pols) {
    OracleOptions o = opt;
    o.repeat = 1;
    o.retry_timeout = false;
    o.sanitizer.clear();
    o.run.env_set["WSEMU_POLICY"] = p;
    if (opt.emu_max_ops) o.run.env_set["WSEMU_MAX_OPS"] = std::to_string(opt.emu_max_ops);
    vs.push_back(judgeBuiltOn(b, o));
    if (!b.ok) break;  // a translation or compile failure is the same under every policy
  }
  const size_t pick = matrixPick(vs);
  Verdict v = vs[pick];
  v.backend = "emu";
  double total = 0;
  for (auto &x : vs) total += x.timings.total_ms;
  v.timings.total_ms = total;
  if (b.ok) {
    for (size_t i = 0; i < vs.size(); ++i)
      v.policies.push_back(
          {pols[i], vs[i].detail.empty() ? vs[i].symptom : vs[i].detail, vs[i].signature});
    std::string line =
        "backend emu: the program ran on the CPU emulator (emu/), policy " + pols[pick];
    if (vs.size() > 1) {
      line += "; policy matrix:";
      for (size_t i = 0; i < vs.size(); ++i)
        line += " " + pols[i] + " -> " + v.policies[i].detail + (i + 1 < vs.size() ? "," : "");
    }
    v.evidence.push_back(line);
    if (opt.repeat > 1)
      v.evidence.push_back("emu is deterministic: one run per policy instead of --repeat " +
                           std::to_string(opt.repeat));
  }
  return v;
}

Verdict judgeBuilt(const BuildRecord &b, const OracleOptions &opt) {
  if (opt.build_only && b.ok) {
    Verdict v;
    v.symptom = "pass";
    v.detail = "compiled";
    v.signature = "pass";
    v.backend = b.backend;
    v.evidence.push_back("built (" + std::string(b.backend == "emu" ? "emulator" : "nvcc") +
                         "); not run: build-only");
    v.timings.build_ms = b.wall_ms;
    v.timings.build_cached = b.cache_hit;
    v.timings.total_ms = b.wall_ms;
    return v;
  }
  if (b.backend == "emu") return judgeEmu(b, opt);
  Verdict v = judgeBuiltOn(b, opt);
  v.backend = "gpu";
  return v;
}

static Verdict judgeBuiltOn(const BuildRecord &b, const OracleOptions &opt) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<RunRecord> runs;
  std::vector<std::string> notes;
  RunOptions ro = opt.run;
  if (opt.calibrate && opt.calibrate_observed_ms > 0) {
    ro.timeout_s = calibratedTimeout(opt.calibrate_observed_ms, opt.calibrate_k,
                                     opt.calibrate_floor_s, opt.calibrate_cap_s);
    char b[200];
    std::snprintf(
        b, sizeof b,
        "timeout %.1f s = clamp(%g x %.0f ms, %g s, %g s), calibrated on the original's run",
        ro.timeout_s, opt.calibrate_k, opt.calibrate_observed_ms, opt.calibrate_floor_s,
        opt.calibrate_cap_s);
    notes.push_back(b);
  }
  if (b.ok) {
    std::vector<std::string> argv = {b.binary};
    argv.insert(argv.end(), opt.program_args.begin(), opt.program_args.end());
    const int n = std::max(1, opt.repeat);
    const bool gated = !ro.gate_library.empty();
    std::unique_ptr<PendingRun> next;
    if (gated) next = std::make_unique<PendingRun>(b, argv, ro);
    if (opt.wait_turn) opt.wait_turn();
    for (int i = 0; i < n; ++i) {
      RunRecord r;
      if (gated) {
        auto cur = std::move(next);
        if (i + 1 < n)
          next = std::make_unique<PendingRun>(b, argv, ro);  // its context opens during this run
        r = cur->finish();
      } else {
        r = runOnce(b, argv, ro);
      }
      auto seen = parseWatchRecords(r.watch + "\n" + r.err);
      // Retried unless the watchdog saw where it stopped (parked warps, or warps inside a CTA
      // barrier).
      if (r.timed_out && opt.retry_timeout && seen.records.empty() && seen.in_bar.empty()) {
        RunOptions twice = ro;
        twice.timeout_s = 2 * ro.timeout_s;
        record(opt, r, i + 1, "timedout-");
        RunRecord again = runOnce(b, argv, twice);
        notes.push_back(
            llvm::formatv(
                "run {0} was killed at its {1:f1} s timeout and retried with {2:f1} s: {3}", i + 1,
                ro.timeout_s, twice.timeout_s,
                again.timed_out ? "killed again, a hang" : "it finished (slow, not hung)")
                .str());
        r = std::move(again);
      }
      runs.push_back(std::move(r));
      record(opt, runs.back(), i + 1, "");
    }
  }
  Verdict v = classify(b, runs, opt.classify);
  for (auto &n : notes) v.evidence.push_back(n);
  if (b.instrumented)
    v.evidence.push_back(
        "built with the hang watchdog (mbarrier waits bounded; the user's file unchanged)");
  for (size_t i = 0; i < runs.size(); ++i)
    if (!runs[i].forensics.empty())
      v.evidence.push_back("forensics (run " + std::to_string(i + 1) + ", before the kill):\n" +
                           runs[i].forensics);
  if (b.ok && !opt.sanitizer.empty()) {
    // Evidence only: compute-sanitizer has known false positives on TMA and named barriers.
    v.sanitizer_tool = opt.sanitizer;
    auto cs = findInPath("compute-sanitizer");
    if (!cs && ::access("/usr/local/cuda/bin/compute-sanitizer", X_OK) == 0)
      cs = "/usr/local/cuda/bin/compute-sanitizer";
    if (!cs) {
      v.sanitizer_output = "compute-sanitizer was not found; no sanitizer evidence";
    } else {
      std::vector<std::string> argv = {*cs,  "--tool", opt.sanitizer, "--print-limit",
                                       "20", b.binary};
      argv.insert(argv.end(), opt.program_args.begin(), opt.program_args.end());
      RunOptions ro = opt.run;
      ro.timeout_s =
          opt.run.timeout_s * 20;  // the tools slow a kernel down by an order of magnitude or more
      auto r = runProcess(argv, ro);
      record(opt, r, 1, "sanitizer-");
      v.sanitizer_output = r.out + r.err;
      if (r.timed_out) v.sanitizer_output += "\n[compute-sanitizer timed out]";
    }
  }
  v.timings.total_ms =
      b.wall_ms +
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (v.symptom == "infra-error" && b.backend == "gpu" && !gpuPresent())
    v.evidence.push_back("no NVIDIA GPU on this machine (/dev/nvidia0 absent)");
  return v;
}

Verdict judgeText(const std::string &text, const std::string &filename, const OracleOptions &opt) {
  std::string dir = makeTempDir("wscand.");
  std::string file = dir + "/" + filename;
  if (dir.empty() || !writeFileAtomic(file, text)) {
    removeTree(dir);
    Verdict v;
    v.symptom = "infra-error";
    v.detail = "infra-error/tmp";
    v.evidence.push_back("cannot write a candidate under $TMPDIR");
    return v;
  }
  Verdict v = judge(file, opt);
  removeTree(dir);
  return v;
}

// OracleOptions::confirm_plain: the plain build's verdict next to the instrumented one's.
static Verdict confirmedOnPlainBuild(const std::string &source, const OracleOptions &opt,
                                     Verdict v) {
  OracleOptions p = opt;
  p.build.watchdog = false;
  BuildRecord pb = buildFor(source, p);
  if (!pb.ok) return v;  // the copy built and the plain file did not: the copy's verdict, said so
  Verdict pv = judgeBuilt(pb, p);
  pv.timings.total_ms += v.timings.total_ms;
  if (pv.symptom == "infra-error") {
    v.evidence.push_back("the plain build could not confirm it: " + pv.detail);
    return v;
  }
  if (pv.symptom == v.symptom) {
    v.evidence.push_back("the plain build (no watchdog) agrees: " + pv.detail);
    v.timings.total_ms = pv.timings.total_ms;
    return v;
  }
  pv.evidence.insert(pv.evidence.begin(),
                     "the watchdog's instrumented build said " + v.detail + " (" + v.signature +
                         "); the plain build says " + pv.detail +
                         ", and its verdict stands: the instrumentation changed the timing");
  pv.instrumented_said = v.detail;
  return pv;
}

Verdict judge(const std::string &source, const OracleOptions &opt) {
  BuildRecord b = buildFor(source, opt);
  Verdict v = judgeBuilt(b, opt);
  if (opt.confirm_plain && b.instrumented && b.backend == "gpu" && !opt.build_only &&
      v.symptom != "hang" && v.symptom != "infra-error" && v.symptom != "compile-error")
    v = confirmedOnPlainBuild(source, opt, std::move(v));
  if (b.backend == "gpu" && resolveBackend(opt) == "emu")  // buildFor's nvcc-first build failed
    v.evidence.push_back(
        "nvcc built the program first (emu backend): its verdict stands, the emulator did not run "
        "it");
  return v;
}

}  // namespace wsr
