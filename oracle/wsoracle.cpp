// wsoracle: build a CUDA program, run it once (or --repeat N times) in fresh processes and
// print the verdict. Exit status: 0 pass, 1 the program fails (any failure verdict),
// 2 bad input, 3 the oracle could not judge (infra-error).
#include "flags.h"
#include "oracle.h"
#include "watchdog.h"

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <filesystem>
#include <functional>
#include <iostream>
#include <regex>
#include <unistd.h>

namespace cl = llvm::cl;
namespace fs = std::filesystem;

static cl::OptionCategory Cat("wsoracle options");
static cl::opt<std::string> Source(cl::Positional, cl::desc("<kernel.cu>"), cl::Required,
                                   cl::cat(Cat));
static cl::list<std::string> ProgramArgs(cl::Positional, cl::ZeroOrMore,
                                         cl::desc("[-- <program arguments>...]"), cl::cat(Cat));
static cl::opt<int> Repeat("repeat",
                           cl::desc("Run N fresh processes; disagreeing runs are `flaky`"),
                           cl::init(1), cl::cat(Cat));
static cl::opt<bool> Json("json", cl::desc("Print the verdict as JSON"), cl::cat(Cat));
static cl::opt<std::string> Sanitizer(
    "sanitizer",
    cl::desc(
        "Also run compute-sanitizer --tool synccheck|racecheck|memcheck|initcheck (evidence only)"),
    cl::cat(Cat));
static cl::opt<std::string> Arch("arch", cl::desc("Target, e.g. sm_90a (default), sm_100a, sm_90"),
                                 cl::init("sm_90a"), cl::cat(Cat));
static cl::opt<std::string> Match("match",
                                  cl::desc("REGEX: output matching it marks the run as failing "
                                           "(wrong/match when nothing else failed)"),
                                  cl::cat(Cat));
static cl::opt<bool> NoCache("no-cache", cl::desc("Rebuild even when a cached binary exists"),
                             cl::cat(Cat));
static cl::list<std::string> Env("env",
                                 cl::desc("NAME=VALUE for the program's environment (repeatable)"),
                                 cl::cat(Cat));
static cl::opt<std::string> Gpu("gpu",
                                cl::desc("Pin the program to this GPU (CUDA_VISIBLE_DEVICES)"),
                                cl::cat(Cat));
static cl::opt<std::string> RecordDir(
    "record", cl::desc("Write every raw run (exit status, stdout, stderr) as JSON into DIR"),
    cl::cat(Cat));
static cl::opt<unsigned> CaptureKiB("capture-kib",
                                    cl::desc("Output kept per stream, KiB (head and tail)"),
                                    cl::init(1024), cl::cat(Cat));
static cl::opt<double> SlowBaseline(
    "slow-baseline-ms", cl::desc("A passing run slower than --slow-factor x this is `slow`"),
    cl::init(0), cl::cat(Cat));
static cl::opt<double> SlowFactor("slow-factor", cl::init(2.0), cl::desc("See --slow-baseline-ms"),
                                  cl::cat(Cat));

static cl::opt<bool> Watchdog(
    "watchdog",
    cl::desc("Bound every mbarrier wait of a .cu (a copy is instrumented; default on): a hang is "
             "named in well under a second"),
    cl::init(true), cl::cat(Cat));
static cl::opt<std::string> InstrumentOnly(
    "instrument-only",
    cl::desc("Write the watchdog's instrumented copy of the program to FILE and exit (nothing is "
             "built or run)"),
    cl::value_desc("FILE"), cl::cat(Cat));
static cl::opt<bool> FlattenOnly(
    "flatten-only",
    cl::desc("Print the program with the headers it reaches through its own folder and -I inlined "
             "(--flatten says which) and exit (nothing is built or run)"),
    cl::cat(Cat));
static cl::opt<std::string> Flatten(
    "flatten", cl::init("all"),
    cl::desc("With --flatten-only: all (default: the program's folder and every -I), none, or "
             "DIR[,DIR...] (only the headers under these folders)"),
    cl::value_desc("all|none|DIRS"), cl::cat(Cat));
static cl::opt<std::string> Out(
    "o", cl::desc("With --flatten-only: write the program to FILE (atomically), not to stdout"),
    cl::value_desc("FILE"), cl::cat(Cat));
static cl::opt<bool> NoRetry(
    "no-retry",
    cl::desc("Call a run killed at the timeout a hang at once (no retry with twice the timeout)"),
    cl::cat(Cat));
static cl::opt<std::string> Forensics(
    "forensics",
    cl::desc(
        "cuda-gdb: on a host timeout, attach cuda-gdb and add `info cuda threads` to the evidence"),
    cl::cat(Cat));

static int fail(const std::string &sentence) {
  llvm::errs() << "wsoracle: " << sentence << "\n";
  return 2;
}

// --forensics cuda-gdb: before a hung run is killed, cuda-gdb attaches and says where every CUDA
// thread is.
static std::function<std::string(int)> cudaGdbForensics() {
  std::string gdb = wsr::findInPath("cuda-gdb").value_or("");
  if (gdb.empty() && ::access("/usr/local/cuda/bin/cuda-gdb", X_OK) == 0)
    gdb = "/usr/local/cuda/bin/cuda-gdb";
  return [gdb](int pid) -> std::string {
    if (gdb.empty()) return "cuda-gdb was not found: no forensics";
    wsr::RunOptions ro;
    ro.timeout_s = 60;
    auto r = wsr::runProcess(
        {gdb, "-p", std::to_string(pid), "-batch", "-ex", "info cuda threads", "-ex", "detach"},
        ro);
    std::string out = r.out + r.err;
    if (r.timed_out) out += "\n[cuda-gdb timed out]";
    if (out.size() > 16000) out = out.substr(0, 16000) + "\n[cut]";
    return out;
  };
}

// --flatten-only: the program with its headers inlined, on stdout or into -o.
static int flattenOnly(const std::string &src, const std::string &text) {
  wsr::OracleOptions o;
  if (std::string e = wsr::applyOracleFlags(o); !e.empty()) return fail(e);
  o.build.arch = Arch;
  wsr::FlattenOptions fo;
  if (std::string e = wsr::flattenOptionsFor(o.build, src, Flatten, &fo); !e.empty())
    return fail(e);
  std::error_code ec;
  if (!Out.empty()) {
    if (fs::exists(Out.getValue(), ec) && fs::equivalent(Out.getValue(), src, ec))
      return fail("-o " + Out + " would overwrite the input; pick another file");
    const fs::path dir = fs::absolute(Out.getValue()).parent_path();
    if (!fs::is_directory(dir, ec)) return fail("the folder of -o " + Out + " does not exist");
  }
  wsr::FlattenResult r = wsr::flattenProgram(text, src, fo);
  if (!r.ok()) return fail(r.error);
  if (Out.empty()) {
    llvm::outs() << r.text;
    llvm::outs().flush();
  } else if (std::string err; !wsr::writeFileAtomic(Out, r.text, &err)) {
    return fail(err);
  }
  llvm::errs() << "wsoracle: " << wsr::flattenSummary(text, r) << "\n";
  return 0;
}

// The flags, checked, as the oracle's options; "" or the one sentence that says what is wrong.
static std::string oracleFromFlags(const std::string &src, wsr::OracleOptions &o) {
  if (Repeat < 1) return "--repeat must be at least 1";
  if (std::string e = wsr::applyOracleFlags(o); !e.empty()) return e;
  const bool emu = wsr::resolveBackend(o) == "emu";
  if (!Sanitizer.empty() && Sanitizer != "synccheck" && Sanitizer != "racecheck" &&
      Sanitizer != "memcheck" && Sanitizer != "initcheck")
    return "--sanitizer must be one of synccheck, racecheck, memcheck, initcheck";
  if (!Forensics.empty() && Forensics != "cuda-gdb") return "--forensics must be cuda-gdb";
  if (!Match.empty()) {
    try {
      std::regex r(Match.getValue());
    } catch (const std::regex_error &e) {
      return "--match is not a valid regular expression: " + std::string(e.what());
    }
  }

  o.build.arch = Arch;
  o.build.use_cache = !NoCache;
  if (!emu && wsr::findNvcc(o.build.nvcc).empty())
    return "nvcc was not found in PATH or /usr/local/cuda/bin; install the CUDA toolkit or pass "
           "--nvcc";
  std::string err;
  if (!wsr::prepareCacheDir(o.build.cache_dir, &err)) return err;
  o.run.capture_bytes = (size_t)CaptureKiB * 1024;
  for (auto &kv : Env) {
    auto p = kv.find('=');
    if (p == std::string::npos || p == 0) return "--env needs NAME=VALUE, got '" + kv + "'";
    o.run.env_set[kv.substr(0, p)] = kv.substr(p + 1);
  }
  if (!Gpu.empty()) o.run.env_set["CUDA_VISIBLE_DEVICES"] = Gpu;
  o.classify.match = Match;
  o.classify.slow_baseline_ms = SlowBaseline;
  o.classify.slow_factor = SlowFactor;
  o.repeat = Repeat;
  // nvcc still judges compile errors (ptxas, the front end) when it is here: the emulator's g++
  // would not see them.
  o.emu_nvcc_first = wsr::backendFlag() == "auto" && !wsr::findNvcc(o.build.nvcc).empty();
  o.program_args.assign(ProgramArgs.begin(), ProgramArgs.end());
  o.sanitizer = Sanitizer;
  o.record_dir = RecordDir;
  o.build.watchdog = o.build.watchdog && Watchdog;
  wsr::installWatchdog(o, src);
  o.retry_timeout = !NoRetry;
  return "";
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions({&Cat, &wsr::oracleFlagCategory()});
  if (!cl::ParseCommandLineOptions(
          argc, argv, "wsoracle: build, run in a fresh process, classify\n", &llvm::errs()))
    return 2;
  wsr::RunTempRoot run_tmp;  // every temporary file of this run, gone with it

  const std::string src = Source;
  std::string src_text;
  if (std::string e = wsr::readProgram(src, &src_text); !e.empty()) return fail(e);
  if (FlattenOnly) return flattenOnly(src, src_text);
  if (Flatten.getNumOccurrences() || Out.getNumOccurrences())
    return fail(std::string(Out.getNumOccurrences() ? "-o" : "--flatten") +
                " goes with --flatten-only (wsoracle judges the program as it is)");
  wsr::OracleOptions o;
  if (std::string e = oracleFromFlags(src, o); !e.empty()) return fail(e);
  if (!InstrumentOnly.empty()) {
    std::string out = o.build.instrument(src_text, src);
    if (out.empty()) return fail(src + " could not be instrumented (does it parse?)");
    std::string err2;
    if (!wsr::writeFileAtomic(InstrumentOnly, out, &err2)) return fail(err2);
    return 0;
  }
  if (!Forensics.empty()) o.run.on_timeout = cudaGdbForensics();

  wsr::Verdict v = wsr::judge(Source, o);
  if (Json)
    llvm::outs() << llvm::formatv("{0:2}", wsr::toJSON(v)) << "\n";
  else
    llvm::outs() << wsr::renderHuman(v);
  llvm::outs().flush();
  if (v.symptom == "pass") return 0;
  if (v.symptom == "infra-error") return 3;
  return 1;
}
