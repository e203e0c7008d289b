#include "flags.h"

#include "build.h"
#include "process.h"
#include "watchdog.h"
#ifdef WSR_HAVE_EMU
#include "translate.h"
#endif

#include <filesystem>

#include <unistd.h>

namespace cl = llvm::cl;
namespace fs = std::filesystem;

namespace wsr {

cl::OptionCategory &oracleFlagCategory() {
  static cl::OptionCategory cat("oracle options (wsoracle, wsreduce and wsfuzz share them)");
  return cat;
}

namespace {
cl::opt<std::string> Backend(
    "backend", cl::init("auto"),
    cl::desc("gpu | emu (the CPU emulator) | auto (default: the GPU when this machine has one, "
             "else the emulator; compile errors are always nvcc's)"),
    cl::cat(oracleFlagCategory()));
cl::opt<std::string> Policy(
    "policy", cl::init("eager"),
    cl::desc("emu: async timing policy eager | reads-late | completions-late, a comma list, or "
             "matrix (all three)"),
    cl::cat(oracleFlagCategory()));
cl::opt<double> Timeout("timeout", cl::init(10),
                        cl::desc("Seconds before a run is killed and called a hang (default 10)"),
                        cl::cat(oracleFlagCategory()));
cl::opt<std::string> Nvcc("nvcc",
                          cl::desc("Path of nvcc (default: PATH, then /usr/local/cuda/bin)"),
                          cl::cat(oracleFlagCategory()));
cl::list<std::string> NvccFlags("nvcc-flag", cl::desc("Extra nvcc flag (repeatable)"),
                                cl::cat(oracleFlagCategory()));
cl::list<std::string> Includes("I", cl::Prefix, cl::desc("Include directory"),
                               cl::cat(oracleFlagCategory()));
cl::list<std::string> Defines("D", cl::Prefix, cl::desc("Preprocessor definition NAME[=VALUE]"),
                              cl::cat(oracleFlagCategory()));
cl::list<std::string> Libs("l", cl::Prefix, cl::desc("Library to link"),
                           cl::cat(oracleFlagCategory()));
cl::opt<std::string> CacheDir(
    "cache-dir", cl::desc("Build cache (default $WSREDUCE_CACHE or ~/.cache/wsreduce)"),
    cl::cat(oracleFlagCategory()));
cl::opt<bool> NoWatchdog(
    "no-watchdog",
    cl::desc("Build the program as it is: mbarrier waits unbounded, a hang costs the timeout"),
    cl::cat(oracleFlagCategory()));
cl::opt<double> WatchdogMs(
    "watchdog-ms", cl::init(200),
    cl::desc("The watchdog's bound: ms without progress at one wait (default 200)"),
    cl::cat(oracleFlagCategory()));
cl::opt<std::string> WatchdogEnd(
    "watchdog-end", cl::init("exit"),
    cl::desc("How a kernel the watchdog fired in ends: exit (default: the parked warps leave the "
             "kernel and the program ends itself once the records are in, without a trap's "
             "teardown) | trap (the parked warps trap, error 719)"),
    cl::cat(oracleFlagCategory()));
}  // namespace

const std::string &backendFlag() { return Backend.getValue(); }

std::string readProgram(const std::string &path, std::string *text) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return path + " does not exist";
  if (fs::is_directory(path, ec)) return path + " is a directory; give one .cu file";
  if (::access(path.c_str(), R_OK) != 0) return path + " cannot be read (permission denied)";
  constexpr uintmax_t kMaxBytes = 64u << 20;  // a preprocessed CUTLASS program is about 20 MB
  if (fs::file_size(path, ec) > kMaxBytes)
    return path + " is larger than 64 MB: not a program this tool can judge";
  auto t = readFile(path);
  if (!t) return path + " cannot be read";
  if (t->find_first_not_of(" \t\r\n") == std::string::npos) return path + " is empty";
  if (t->find('\0') != std::string::npos) return path + " is not text (it holds NUL bytes)";
  *text = std::move(*t);
  return "";
}

std::string applyOracleFlags(OracleOptions &o) {
  if (Backend != "auto" && Backend != "gpu" && Backend != "emu")
    return "--backend must be gpu, emu or auto";
#ifndef WSR_HAVE_EMU
  if (Backend == "emu") return "the emulator (--backend emu) is not built into this tool";
#endif
  if (Timeout <= 0) return "--timeout must be a positive number of seconds";
  if (WatchdogMs <= 0) return "--watchdog-ms must be a positive number of milliseconds";
  if (WatchdogEnd != "trap" && WatchdogEnd != "exit") return "--watchdog-end must be trap or exit";
  std::string err;
  if (!parsePolicies(Policy, &o.policies, &err)) return err;
  o.backend = Backend;
#ifdef WSR_HAVE_EMU
  o.emu_build = emu::emuBuilder();
#endif
  o.build.nvcc = Nvcc;
  o.build.flags.assign(NvccFlags.begin(), NvccFlags.end());
  o.build.includes.assign(Includes.begin(), Includes.end());
  o.build.defines.assign(Defines.begin(), Defines.end());
  o.build.libs.assign(Libs.begin(), Libs.end());
  o.build.cache_dir = CacheDir.empty() ? defaultCacheDir()
                                       : std::filesystem::absolute(CacheDir.getValue()).string();
  o.build.watchdog = !NoWatchdog;
  o.build.watchdog_ms = WatchdogMs;
  // A run-time knob of the watchdog's runtime (wswatch_rt.cuh): one build serves both modes.
  o.run.env_set["WSWATCH_END"] = WatchdogEnd;
  o.run.timeout_s = Timeout;
  if (!Nvcc.empty() && findNvcc(o.build.nvcc).empty())
    return "--nvcc " + Nvcc + " is not an executable";
  return "";
}

ParseOptions parseOptionsFor(const BuildOptions &b, const std::string &source_path) {
  ParseOptions po;
  if (!b.arch.empty()) po.arch = b.arch;
  po.includes = b.includes;
  if (!source_path.empty()) po.includes.push_back(fs::absolute(source_path).parent_path().string());
  po.defines = b.defines;
  if (auto h = harnessIncludeDir(); !h.empty()) po.includes.push_back(h);
  return po;
}

std::string flattenOptionsFor(const BuildOptions &b, const std::string &source_path,
                              const std::string &flag, FlattenOptions *fo) {
  fo->parse = parseOptionsFor(b, source_path);
  fo->keep_dirs.clear();
  if (auto h = harnessIncludeDir(); !h.empty()) fo->keep_dirs.push_back(h);
  return flattenDirsFromFlag(flag, source_path, b.includes, &fo->dirs);
}

namespace {

// How many wait instructions a text spells (the watchdog's forms: mbarrier try/test waits,
// counted and CTA-wide barriers, arrive_and_wait). More in the flattened program than in the
// file itself: its headers hold waits.
size_t waitWords(const std::string &t) {
  size_t n = 0;
  for (const char *w : {"try_wait", "test_wait", "bar.sync", "barrier.sync", "bar.red",
                        "barrier.cta.sync", "arrive_and_wait"})
    for (size_t at = t.find(w); at != std::string::npos; at = t.find(w, at + 1)) ++n;
  return n;
}

}  // namespace

void installWatchdog(OracleOptions &o, const std::string &source_path) {
  if (!source_path.empty()) {
    const std::string ext = fs::path(source_path).extension().string();
    if (ext != ".cu" && ext != ".cuh") o.build.watchdog = false;
  }
  WatchOptions wo;
  wo.parse = parseOptionsFor(o.build, source_path);
  auto instrument = watchdogInstrumenter(wo);
  // The waits a program reaches through its own headers and a library's (CUTLASS's
  // ClusterBarrier::wait, the pipelines' consumer_wait) are bounded too: the copy is the
  // flattened program (frontend/flatten.h, --flatten=all), instrumented as one file. Its reports
  // then name NAME.flat.cu and its lines: the program `wsoracle --flatten-only NAME.cu` prints.
  // Headers without a wait leave the copy the file itself, so its reports name the user's lines.
  BuildOptions b = o.build;
  b.instrument = nullptr;
  o.build.instrument = [instrument, b](const std::string &text, const std::string &path) {
    FlattenOptions fo;  // the folder is the candidate's own (a reducer's is a temp dir)
    // A cheap look before the preprocessor: a program that names no header of its own or of an
    // -I folder (every candidate of a flattened reduction) is not preprocessed again.
    if (!flattenOptionsFor(b, path, "all", &fo).empty() ||
        directIncludes(text, fs::absolute(path).parent_path().string(), fo.dirs).empty())
      return instrument(text, path);
    FlattenResult r = flattenProgram(text, path, fo);
    if (!r.ok() || r.headers == 0 || waitWords(r.text) <= waitWords(text))
      return instrument(text, path);
    const fs::path p(path);
    const std::string flat = p.stem().string() + ".flat" + p.extension().string();
    return instrument(r.text, (p.parent_path() / flat).string());
  };
}

}  // namespace wsr
