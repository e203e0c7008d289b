// wsoracle: build a CUDA program, run it once (or --repeat N times) in fresh processes and
// print the verdict. Exit status: 0 pass, 1 the program fails (any failure verdict),
// 2 bad input, 3 the oracle could not judge (infra-error).
#include "oracle.h"

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <filesystem>
#include <iostream>
#include <regex>
#include <unistd.h>

namespace cl = llvm::cl;
namespace fs = std::filesystem;

static cl::OptionCategory Cat("wsoracle options");
static cl::opt<std::string> Source(cl::Positional, cl::desc("<kernel.cu>"), cl::Required, cl::cat(Cat));
static cl::list<std::string> ProgramArgs(cl::Positional, cl::ZeroOrMore, cl::desc("[-- <program arguments>...]"), cl::cat(Cat));
static cl::opt<int> Repeat("repeat", cl::desc("Run N fresh processes; disagreeing runs are `flaky`"), cl::init(1), cl::cat(Cat));
static cl::opt<double> Timeout("timeout", cl::desc("Seconds before a run is killed and called a hang"), cl::init(10), cl::cat(Cat));
static cl::opt<bool> Json("json", cl::desc("Print the verdict as JSON"), cl::cat(Cat));
static cl::opt<std::string> Sanitizer("sanitizer", cl::desc("Also run compute-sanitizer --tool synccheck|racecheck|memcheck|initcheck (evidence only)"), cl::cat(Cat));
static cl::opt<std::string> Arch("arch", cl::desc("Target, e.g. sm_90a (default), sm_100a, sm_90"), cl::init("sm_90a"), cl::cat(Cat));
static cl::list<std::string> NvccFlags("nvcc-flag", cl::desc("Extra nvcc flag (repeatable)"), cl::cat(Cat));
static cl::list<std::string> Includes("I", cl::desc("Include directory"), cl::Prefix, cl::cat(Cat));
static cl::list<std::string> Defines("D", cl::desc("Preprocessor definition NAME[=VALUE]"), cl::Prefix, cl::cat(Cat));
static cl::list<std::string> Libs("l", cl::desc("Library to link"), cl::Prefix, cl::cat(Cat));
static cl::opt<std::string> Match("match", cl::desc("REGEX: output matching it marks the run as failing (wrong/match when nothing else failed)"), cl::cat(Cat));
static cl::opt<std::string> Nvcc("nvcc", cl::desc("Path of nvcc (default: PATH, then /usr/local/cuda/bin)"), cl::cat(Cat));
static cl::opt<std::string> CacheDir("cache-dir", cl::desc("Build cache (default $WSREDUCE_CACHE or ~/.cache/wsreduce)"), cl::cat(Cat));
static cl::opt<bool> NoCache("no-cache", cl::desc("Rebuild even when a cached binary exists"), cl::cat(Cat));
static cl::list<std::string> Env("env", cl::desc("NAME=VALUE for the program's environment (repeatable)"), cl::cat(Cat));
static cl::opt<std::string> Gpu("gpu", cl::desc("Pin the program to this GPU (CUDA_VISIBLE_DEVICES)"), cl::cat(Cat));
static cl::opt<std::string> Backend("backend", cl::desc("gpu | auto (default; the emulator backend is not built yet)"), cl::init("auto"), cl::cat(Cat));
static cl::opt<std::string> RecordDir("record", cl::desc("Write every raw run (exit status, stdout, stderr) as JSON into DIR"), cl::cat(Cat));
static cl::opt<unsigned> CaptureKiB("capture-kib", cl::desc("Output kept per stream, KiB (head and tail)"), cl::init(1024), cl::cat(Cat));
static cl::opt<double> SlowBaseline("slow-baseline-ms", cl::desc("A passing run slower than --slow-factor x this is `slow`"), cl::init(0), cl::cat(Cat));
static cl::opt<double> SlowFactor("slow-factor", cl::init(2.0), cl::desc("See --slow-baseline-ms"), cl::cat(Cat));

static int fail(const std::string &sentence) {
  llvm::errs() << "wsoracle: " << sentence << "\n";
  return 2;
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(Cat);
  if (!cl::ParseCommandLineOptions(argc, argv, "wsoracle: build, run in a fresh process, classify\n", &llvm::errs()))
    return 2;

  std::error_code ec;
  const std::string src = Source;
  if (!fs::exists(src, ec)) return fail(src + " does not exist");
  if (fs::is_directory(src, ec)) return fail(src + " is a directory; give one .cu file");
  if (::access(src.c_str(), R_OK) != 0) return fail(src + " cannot be read (permission denied)");
  if (Repeat < 1) return fail("--repeat must be at least 1");
  if (Timeout <= 0) return fail("--timeout must be a positive number of seconds");
  if (Backend != "auto" && Backend != "gpu") {
    if (Backend == "emu") return fail("the emulation backend (--backend emu) is not built yet; use --backend gpu");
    return fail("--backend must be gpu or auto");
  }
  if (!Sanitizer.empty() && Sanitizer != "synccheck" && Sanitizer != "racecheck" &&
      Sanitizer != "memcheck" && Sanitizer != "initcheck")
    return fail("--sanitizer must be one of synccheck, racecheck, memcheck, initcheck");
  if (!Match.empty()) {
    try { std::regex r(Match.getValue()); } catch (const std::regex_error &e) {
      return fail("--match is not a valid regular expression: " + std::string(e.what()));
    }
  }

  wsr::OracleOptions o;
  o.build.arch = Arch;
  o.build.nvcc = Nvcc;
  o.build.flags.assign(NvccFlags.begin(), NvccFlags.end());
  o.build.includes.assign(Includes.begin(), Includes.end());
  o.build.defines.assign(Defines.begin(), Defines.end());
  o.build.libs.assign(Libs.begin(), Libs.end());
  o.build.cache_dir = CacheDir.empty() ? wsr::defaultCacheDir() : CacheDir.getValue();
  o.build.use_cache = !NoCache;
  if (wsr::findNvcc(o.build.nvcc).empty())
    return fail(Nvcc.empty() ? "nvcc was not found in PATH or /usr/local/cuda/bin; install the CUDA toolkit or pass --nvcc"
                             : "--nvcc " + Nvcc + " is not an executable");
  std::string err;
  if (!wsr::prepareCacheDir(o.build.cache_dir, &err)) return fail(err);
  o.run.timeout_s = Timeout;
  o.run.capture_bytes = (size_t)CaptureKiB * 1024;
  for (auto &kv : Env) {
    auto p = kv.find('=');
    if (p == std::string::npos || p == 0) return fail("--env needs NAME=VALUE, got '" + kv + "'");
    o.run.env_set[kv.substr(0, p)] = kv.substr(p + 1);
  }
  if (!Gpu.empty()) o.run.env_set["CUDA_VISIBLE_DEVICES"] = Gpu;
  o.classify.match = Match;
  o.classify.slow_baseline_ms = SlowBaseline;
  o.classify.slow_factor = SlowFactor;
  o.repeat = Repeat;
  o.backend = Backend;
  o.program_args.assign(ProgramArgs.begin(), ProgramArgs.end());
  o.sanitizer = Sanitizer;
  o.record_dir = RecordDir;

  wsr::Verdict v = wsr::judge(Source, o);
  if (Json) llvm::outs() << llvm::formatv("{0:2}", wsr::toJSON(v)) << "\n";
  else llvm::outs() << wsr::renderHuman(v);
  llvm::outs().flush();
  if (v.symptom == "pass") return 0;
  if (v.symptom == "infra-error") return 3;
  return 1;
}
