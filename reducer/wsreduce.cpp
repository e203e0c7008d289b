// wsreduce: shrink a failing CUDA program to the smallest program that still fails the
// same way. Exit status: 0 reduced, 1 the input does not show the symptom, 2 bad input,
// 3 the oracle could not judge (infra-error), 4 reduced but --confirm gpu showed another class
// (than the emulator's, and than the original's on the GPU),
// 130 interrupted (the best so far is saved).
#include "report.h"
#include "keeper.h"
#include "search.h"
#include "tidy.h"
#include "watchdog.h"
#ifdef WSR_HAVE_EMU
#include "translate.h"
#endif

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <future>
#include <regex>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace cl = llvm::cl;
namespace fs = std::filesystem;

static cl::OptionCategory Cat("wsreduce options");
static cl::opt<std::string> Source(cl::Positional, cl::desc("<kernel.cu>"), cl::cat(Cat));
static cl::opt<std::string> Symptom(
    "symptom", cl::desc("compile-error | hang | crash | wrong | slow | flaky | pass"),
    cl::cat(Cat));
static cl::opt<bool> AnySignature("any-signature",
                                  cl::desc("Keep the symptom only, not the original's signature"),
                                  cl::cat(Cat));
static cl::opt<std::string> Match("match", cl::desc("REGEX the output must also match"),
                                  cl::cat(Cat));
static cl::opt<std::string> TestScript(
    "test", cl::desc("Interestingness script (exit 0 = interesting) instead of the oracle"),
    cl::cat(Cat));
static cl::opt<unsigned> Jobs("j", cl::desc("Candidates judged at once (default: all cores)"),
                              cl::init(0), cl::Prefix, cl::cat(Cat));
static cl::list<std::string> Passes("passes", cl::CommaSeparated,
                                    cl::desc("Only these passes, in this order"), cl::cat(Cat));
static cl::opt<bool> ListPasses("list-passes", cl::desc("Print the passes and exit"), cl::cat(Cat));
static cl::opt<std::string> ListSites(
    "list-sites",
    cl::desc("PASS: print the sites that pass offers on the input, in the order the search takes "
             "them, and exit"),
    cl::cat(Cat));
static cl::opt<bool> Resume("resume", cl::desc("Continue from <name>.min.cu of an earlier run"),
                            cl::cat(Cat));
static cl::opt<std::string> Output(
    "o", cl::desc("Reduced program (default <name>.min.cu next to the input)"), cl::cat(Cat));
static cl::opt<bool> NoParseCheck(
    "no-parse-check", cl::desc("Send candidates to nvcc even when Clang cannot parse them"),
    cl::cat(Cat));
static cl::opt<double> Timeout("timeout",
                               cl::desc("Seconds before a run is killed and called a hang"),
                               cl::init(10), cl::cat(Cat));
static cl::opt<std::string> Arch("arch", cl::init("sm_90a"), cl::desc("Target (default sm_90a)"),
                                 cl::cat(Cat));
static cl::list<std::string> NvccFlags("nvcc-flag", cl::desc("Extra nvcc flag (repeatable)"),
                                       cl::cat(Cat));
static cl::list<std::string> Includes("I", cl::desc("Include directory"), cl::Prefix, cl::cat(Cat));
static cl::list<std::string> Defines("D", cl::desc("Preprocessor definition"), cl::Prefix,
                                     cl::cat(Cat));
static cl::list<std::string> Libs("l", cl::desc("Library to link"), cl::Prefix, cl::cat(Cat));
static cl::opt<std::string> Nvcc("nvcc", cl::desc("Path of nvcc"), cl::cat(Cat));
static cl::opt<std::string> CudaPath("cuda-path",
                                     cl::desc("CUDA installation for Clang (default: from nvcc)"),
                                     cl::cat(Cat));
static cl::opt<std::string> CacheDir("cache-dir", cl::desc("Build cache directory"), cl::cat(Cat));
static cl::opt<int> Repeat("repeat", cl::init(1), cl::desc("Runs per candidate"), cl::cat(Cat));
static cl::opt<std::string> Gpu(
    "gpu",
    cl::desc("CUDA_VISIBLE_DEVICES for the runs (one device, or the driver's view of several)"),
    cl::cat(Cat));
static cl::opt<std::string> Gpus(
    "gpus",
    cl::desc("N or a,b,...: spread the candidates over these GPUs, each run on the least busy one "
             "(default on the GPU backend: every GPU of the host, unless CUDA_VISIBLE_DEVICES or "
             "--gpu says otherwise)"),
    cl::cat(Cat));
static cl::opt<bool> NoWatchdog(
    "no-watchdog", cl::desc("Do not bound mbarrier waits (hangs then cost the full --timeout)"),
    cl::cat(Cat));
static cl::opt<double> WatchdogMs("watchdog-ms", cl::init(200),
                                  cl::desc("Watchdog bound on a wait without progress, ms"),
                                  cl::cat(Cat));
static cl::opt<std::string> Backend(
    "backend", cl::init("auto"),
    cl::desc("gpu | emu (the CPU emulator) | auto (default: the GPU when this machine has one, "
             "else the emulator; compile errors are always nvcc's)"),
    cl::cat(Cat));
static cl::opt<std::string> Policy(
    "policy", cl::init("eager"),
    cl::desc(
        "emu: async timing policy eager | reads-late | completions-late, a comma list, or matrix"),
    cl::cat(Cat));
static cl::opt<std::string> Confirm(
    "confirm",
    cl::desc("gpu: judge the reduced program (and, on the emulator, the original) on the GPU and "
             "put both verdicts in the report"),
    cl::cat(Cat));
static cl::opt<double> Budget(
    "budget", cl::init(0),
    cl::desc("Seconds of search (0: none): when they are spent the search stops and the best "
             "program so far is finished (harness inlined, formatted), judged and reported as a "
             "completed reduction"),
    cl::cat(Cat));
static cl::opt<std::string> Lookahead(
    "lookahead",
    cl::desc("on | off | auto (default): slots the current pass leaves idle judge the next passes' "
             "first candidates on the same program; auto is on at -j 8 or more"),
    cl::init("auto"), cl::cat(Cat));
static cl::opt<bool> FullShapeFirst(
    "full-shape-first",
    cl::desc("Run the shape passes to completion before the first structure pass (default: one "
             "round of every knob first, the rest after the structure passes' first round)"),
    cl::cat(Cat));
static cl::opt<std::string> Algorithm(
    "algorithm", cl::init("ddmin"),
    cl::desc(
        "Search over each pass's sites: ddmin (default) | pdd (probabilistic delta debugging)"),
    cl::cat(Cat));
static cl::opt<bool> NoKeeper(
    "no-keeper", cl::desc("Do not hold a CUDA context open on the GPU while the candidates run"),
    cl::cat(Cat));
static cl::opt<bool> NoRetry("no-retry",
                             cl::desc("A run killed at the timeout is a hang at once (default: "
                                      "retried once with twice the timeout)"),
                             cl::cat(Cat));
static cl::opt<bool> NoCalibrate(
    "no-calibrate",
    cl::desc(
        "Keep --timeout for every candidate instead of calibrating it from the original's run"),
    cl::cat(Cat));

static int fail(const std::string &s, int code = 2) {
  llvm::errs() << "wsreduce: " << s << "\n";
  return code;
}

static void onSignal(int) {
  wsr::Search::requestStop();
  wsr::killAllRunning();
}

// How Clang parses the input outside the Tester: --arch, -I (then the input's folder and the
// harness header's), -D. Used by --list-sites and the watchdog's instrumenter.
static wsr::ParseOptions parseOptionsFor(const std::string &src) {
  wsr::ParseOptions po;
  po.arch = Arch;
  po.includes.assign(Includes.begin(), Includes.end());
  po.includes.push_back(fs::absolute(src).parent_path().string());
  po.defines.assign(Defines.begin(), Defines.end());
  if (auto h = wsr::harnessIncludeDir(); !h.empty()) po.includes.push_back(h);
  return po;
}

// The oracle's options for --confirm gpu: the GPU backend, the user's timeout (no calibration), a
// run after the build.
static wsr::OracleOptions onTheGpu(wsr::OracleOptions g) {
  g.backend = "gpu";
  g.calibrate = false;
  g.build_only = false;
  return g;
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(Cat);
  if (!cl::ParseCommandLineOptions(argc, argv,
                                   "wsreduce: reduce a failing CUDA program, keeping its failure\n",
                                   &llvm::errs()))
    return 2;
  if (ListPasses) {
    for (auto phase : {wsr::Phase::Shape, wsr::Phase::Structure, wsr::Phase::Expression,
                       wsr::Phase::Fallback, wsr::Phase::Cosmetic})
      for (auto &p : wsr::allPasses())
        if (p.phase == phase)
          llvm::outs() << llvm::format("%-22s %-10s ", p.name, wsr::phaseName(p.phase))
                       << p.description << "\n";
    return 0;
  }
  if (Source.empty())
    return fail("no input: give the failing program, e.g. wsreduce kernel.cu --symptom hang");
  const std::string src = Source;
  std::error_code ec;
  if (!fs::exists(src, ec)) return fail(src + " does not exist");
  if (fs::is_directory(src, ec)) return fail(src + " is a directory; give one .cu file");
  auto text = wsr::readFile(src);
  if (!text || ::access(src.c_str(), R_OK) != 0) return fail(src + " cannot be read");
  if (!ListSites.empty()) {
    const wsr::PassInfo *p = wsr::findPass(ListSites.getValue());
    if (!p) return fail("unknown pass '" + ListSites + "' (wsreduce --list-passes lists them)");
    wsr::ParseOptions po = parseOptionsFor(src);
    po.cuda_path = CudaPath;
    auto parsed = wsr::parseSource(*text, src, po);
    if (!parsed->ok()) return fail(src + " does not parse: " + parsed->firstError());
    for (auto &s : p->sites(*parsed))
      llvm::outs() << llvm::format("line %-5u level %-2d group %-4d ", s.line, s.level, s.group)
                   << s.note << "\n";
    return 0;
  }
  static const std::vector<std::string> symptoms = {"compile-error", "hang",  "crash", "wrong",
                                                    "slow",          "flaky", "pass"};
  if (TestScript.empty() &&
      std::find(symptoms.begin(), symptoms.end(), Symptom.getValue()) == symptoms.end())
    return fail(
        Symptom.empty()
            ? "say which failure to keep: --symptom compile-error|hang|crash|wrong|slow|flaky (or "
              "--test SCRIPT)"
            : "--symptom must be one of compile-error, hang, crash, wrong, slow, flaky, pass");
  if (!TestScript.empty() && !wsr::findInPath(TestScript.getValue()) &&
      !fs::exists(TestScript.getValue()))
    return fail("--test " + TestScript + " does not exist");
  if (!TestScript.empty() && ::access(TestScript.c_str(), X_OK) != 0 &&
      fs::exists(TestScript.getValue()))
    return fail("--test " + TestScript + " is not executable (chmod +x it)");
  for (auto &p : Passes)
    if (!wsr::findPass(p))
      return fail("unknown pass '" + p + "' (wsreduce --list-passes lists them)");
  if (!Match.empty()) {
    try {
      std::regex r(Match.getValue());
    } catch (const std::regex_error &e) {
      return fail("--match is not a valid regular expression: " + std::string(e.what()));
    }
  }
  if (Backend != "auto" && Backend != "gpu" && Backend != "emu")
    return fail("--backend must be gpu, emu or auto");
#ifndef WSR_HAVE_EMU
  if (Backend == "emu")
    return fail(
        "the emulation backend (--backend emu) is not built into this wsreduce; use --backend gpu");
#endif
  if (Algorithm != "ddmin" && Algorithm != "pdd") return fail("--algorithm must be ddmin or pdd");
  if (Lookahead != "on" && Lookahead != "off" && Lookahead != "auto")
    return fail("--lookahead must be on, off or auto");
  if (!Confirm.empty() && Confirm != "gpu")
    return fail("--confirm takes gpu (the only backend to confirm on)");
  if (Budget < 0) return fail("--budget must be a number of seconds, 0 or more (0: no budget)");

  wsr::TestOptions t;
  t.symptom = Symptom;
  t.any_signature = AnySignature;
  t.test_script = TestScript.empty() ? "" : fs::absolute(TestScript.getValue()).string();
  if (!TestScript.empty() && !fs::exists(TestScript.getValue()))
    t.test_script = *wsr::findInPath(TestScript.getValue());
  t.parse_check = !NoParseCheck;
  t.original_path = fs::absolute(src).string();
  auto &o = t.oracle;
  o.build.arch = Arch;
  o.build.nvcc = Nvcc;
  o.build.flags.assign(NvccFlags.begin(), NvccFlags.end());
  o.build.includes.assign(Includes.begin(), Includes.end());
  o.build.defines.assign(Defines.begin(), Defines.end());
  o.build.libs.assign(Libs.begin(), Libs.end());
  o.build.cache_dir = CacheDir.empty() ? wsr::defaultCacheDir() : CacheDir.getValue();
  o.run.timeout_s = Timeout;
  if (!Gpu.empty()) o.run.env_set["CUDA_VISIBLE_DEVICES"] = Gpu;
  o.repeat = Repeat;
  o.retry_timeout = !NoRetry;
  o.classify.match = Match;
  o.backend = Backend;
#ifdef WSR_HAVE_EMU
  o.emu_build = wsr::emu::emuBuilder();
#endif
  {
    std::string perr;
    if (!wsr::parsePolicies(Policy, &o.policies, &perr)) return fail(perr);
  }
  if (Symptom == "compile-error" && TestScript.empty()) {
    // A compile error needs no device: nvcc judges it (the emulator's g++ never sees ptxas), and a
    // candidate that builds is not interesting, so it is never run.
    if (Backend == "auto") o.backend = "gpu";
    o.build_only = true;
  }
  const std::string backend = wsr::resolveBackend(o);
  if (!Gpus.empty() && !Gpu.empty())
    return fail(
        "give --gpu (one CUDA_VISIBLE_DEVICES for every run) or --gpus (candidates spread over "
        "GPUs), not both");
  if (!Gpus.empty()) {
    t.gpus = wsr::parseGpuList(Gpus);
    if (t.gpus.empty())
      return fail("--gpus takes a number of GPUs or a comma list of devices, not `" + Gpus + "`");
  } else if (Gpu.empty() && !std::getenv("CUDA_VISIBLE_DEVICES") && backend == "gpu" &&
             TestScript.empty()) {
    if (int n = wsr::hostGpuCount(); n > 1)
      t.gpus = wsr::parseGpuList(std::to_string(n));  // every GPU of the host (issue 8)
  }
  {  // the hang watchdog on every candidate (issue 5): a hang verdict in ~1 s, not a timeout
    std::string ext = fs::path(src).extension().string();
    o.build.watchdog = !NoWatchdog && (ext == ".cu" || ext == ".cuh");
    o.build.watchdog_ms = WatchdogMs;
    wsr::WatchOptions wo;
    wo.parse = parseOptionsFor(src);
    o.build.instrument = wsr::watchdogInstrumenter(wo);
  }
  t.parse.arch = Arch;
  t.parse.cuda_path = CudaPath;
  t.parse.includes.assign(Includes.begin(), Includes.end());
  t.parse.defines.assign(Defines.begin(), Defines.end());
  if (TestScript.empty() && (backend == "gpu" || !Nvcc.empty()) &&
      wsr::findNvcc(o.build.nvcc).empty())
    return fail(
        "nvcc was not found in PATH or /usr/local/cuda/bin; install the CUDA toolkit or pass "
        "--nvcc");
  std::string err;
  if (!wsr::prepareCacheDir(o.build.cache_dir, &err)) return fail(err);

  std::string out = Output.empty()
                        ? (fs::path(src).parent_path() / (fs::path(src).stem().string() + ".min" +
                                                          fs::path(src).extension().string()))
                              .string()
                        : Output.getValue();
  std::string stem = out.substr(0, out.size() - fs::path(out).extension().string().size());
  std::string statePath = stem + ".state.json", tracePath = stem + ".trace.jsonl",
              reportPath = stem + ".md";
  if (fs::absolute(out) == fs::absolute(src))
    return fail("the output would overwrite the input; pick another -o");

  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  bool tty = ::isatty(2);
  if (!wsr::findKeptRegions(*text, &t.keep, &err)) return fail(src + ": " + err);
  for (auto &k : t.keep)
    llvm::errs() << "wsreduce: lines " << k.first_line << "-" << k.last_line
                 << " are kept as written (// wsreduce: keep)\n";
  wsr::Tester tester(t);

  // 1. The original must show the symptom: nothing to reduce otherwise.
  // A context held open on the GPU for the whole reduction: every candidate's process starts
  // sooner.
  wsr::GpuKeepers keeper;
  if (!NoKeeper && backend == "gpu" && TestScript.empty() && wsr::gpuPresent())
    llvm::errs() << "wsreduce: " << keeper.start(t.gpus, t.oracle.build) << "\n";
  if (t.gpus.size() > 1 && backend == "gpu") {
    std::string l;
    for (auto &g : t.gpus) l += " " + g;
    llvm::errs() << "wsreduce: candidates spread over " << t.gpus.size()
                 << " GPUs (CUDA_VISIBLE_DEVICES" << l << "), each run on the least busy\n";
  }
  llvm::errs() << "wsreduce: judging the original " << src << " ...\n";
  wsr::TestResult orig;
  // On the emulator, the original (and at the end the result) is built by nvcc first when nvcc is
  // here: a program nvcc rejects is a compile error, whatever g++ makes of the translation.
  const bool nvcc_check =
      backend == "emu" && TestScript.empty() && !wsr::findNvcc(o.build.nvcc).empty();
  tester.oracleOptions().emu_nvcc_first = nvcc_check;
  wsr::Verdict ov = tester.judgeOriginal(*text, &orig);
  std::future<wsr::Verdict> gpu_original;  // --confirm gpu on the emulator: the original on the GPU
  tester.oracleOptions().emu_nvcc_first = false;
  if (orig.infra) {
    llvm::errs() << wsr::renderHuman(ov);
    return fail("the oracle could not judge the original (" + ov.detail +
                    "): " + (ov.evidence.empty() ? "" : ov.evidence.front()),
                3);
  }
  if (!orig.interesting) {
    if (!TestScript.empty())
      return fail("the original is not interesting: " + TestScript + " gave " + orig.detail, 1);
    llvm::errs() << wsr::renderHuman(ov);
    // On the emulator a deadlock is named when every thread parks, with no kill: a kill at the
    // timeout is a program still running (session 22: the K-loop GEMM runs 9.8 s there, and
    // --timeout 10 made it a hang).
    if (backend == "emu" && ov.is("hang") && !ov.runs.empty() && ov.runs.front().timed_out &&
        Symptom != "hang")
      llvm::errs() << llvm::format(
          "wsreduce: the emulator was still running the original when --timeout killed it (%.0f "
          "s); "
          "it names the deadlocks it sees without a kill, so the program may only be slow on this "
          "CPU: a larger --timeout tells the two apart\n",
          (double)Timeout);
    return fail(src + " does not show the symptom " + Symptom + ": its verdict is " + ov.detail +
                    "; nothing to reduce",
                1);
  }
  if (TestScript.empty()) {
    t.signature = ov.signature;
    tester.setSignature(ov.signature);
    llvm::errs() << "wsreduce: original verdict " << ov.detail << ", signature " << ov.signature
                 << " (backend " << backend << ")\n";
    if (!tester.localsCheckOff().empty())
      llvm::errs() << "wsreduce: candidates are not judged again with zeroed locals: "
                   << tester.localsCheckOff() << "\n";
    // --confirm gpu on the emulator: the original is judged on the GPU too, while the search runs
    // (its build and run cost the search one core for a while, not wall time at the end), so the
    // result's GPU verdict is compared with the original's: a bug the GPU's timing hides passes
    // there before and after (session 20, the missing proxy fence).
    if (!Confirm.empty() && backend == "emu" && wsr::gpuPresent()) {
      wsr::OracleOptions g = onTheGpu(tester.oracleOptions());
      std::string name = fs::path(src).filename().string(), orig_text = *text;
      gpu_original = std::async(
          std::launch::async, [g, name, orig_text] { return wsr::judgeText(orig_text, name, g); });
    }
    if (auto &c = tester.coherentProxyVerdict())
      llvm::errs() << "wsreduce: the original reads shared bytes the async proxy had not seen; "
                      "with a coherent proxy "
                   << "(every fence.proxy.async in place) its verdict is " << c->detail
                   << ", and every candidate's must be the same\n";
    // Adaptive timeout (issue 5) and no retry of timed-out candidates, from the original's own run.
    for (auto &line : tester.tuneFromOriginal(ov, Timeout, !NoCalibrate, NoRetry))
      llvm::errs() << "wsreduce: " << line << "\n";
  }

  tester.calibrateParseCheck(*text);

  // 2. Resume from the best program of an earlier run of the same input.
  std::string start = *text;
  std::string origHash = wsr::contentHash(*text);
  if (Resume) {
    auto st = wsr::readFile(statePath);
    auto best = wsr::readFile(out);
    if (st && best) {
      auto j = llvm::json::parse(*st);
      auto *obj = j ? j->getAsObject() : nullptr;
      if (obj && obj->getString("original") && *obj->getString("original") == origHash) {
        start = *best;
        llvm::errs() << "wsreduce: resuming from " << out << " (" << wsr::countNonBlankLines(start)
                     << " lines)\n";
        if (auto tr = wsr::readFile(tracePath)) {  // verdicts already known are not judged again
          (void)tr;
        }
      } else {
        llvm::errs() << "wsreduce: " << out << " belongs to another input; starting over\n";
      }
    } else {
      llvm::errs() << "wsreduce: nothing to resume at " << out << "; starting from the input\n";
    }
  } else {
    fs::remove(tracePath, ec);
  }
  // A finished result (or a .min.cu reduced again) holds the harness inlined: it goes back to an
  // include, so that the passes cannot edit the judge's comparison, when the judge agrees.
  if (TestScript.empty()) {
    std::string plain = wsr::uninlineHarness(start);
    if (plain != start) {
      if (tester.test(plain).interesting) {
        start = plain;
        llvm::errs() << "wsreduce: the inlined harness header is `#include \"wscheck.h\"` again "
                        "while the search runs\n";
      } else {
        llvm::errs() << "wsreduce: the program with `#include \"wscheck.h\"` for its inlined "
                        "harness header does not fail "
                        "the same way; the inlined copy stays and the passes may edit it\n";
      }
    }
  }
  // The judge may have learned since (session 18: the emulator's proxy-fence model judged session
  // 17's K-loop result otherwise): a program to resume from that no longer fails the same way is
  // not where a search can start.
  if (start != *text) {
    wsr::TestResult r = tester.test(start);
    if (!r.interesting && !r.infra) {
      llvm::errs() << "wsreduce: the program to resume from no longer fails the same way ("
                   << r.detail << (r.signature.empty() ? "" : ", signature " + r.signature)
                   << "); starting from the input\n";
      start = *text;
    }
  }
  {
    llvm::json::Object s{{"original", origHash},
                         {"input", fs::absolute(src).string()},
                         {"symptom", Symptom.getValue()},
                         {"signature", t.signature},
                         {"command", command}};
    std::string js;
    llvm::raw_string_ostream os(js);
    os << llvm::json::Value(std::move(s));
    if (!wsr::writeFileAtomic(statePath, os.str(), &err)) return fail(err);
    if (!wsr::writeFileAtomic(out, start, &err)) return fail(err);
  }

  // 3. The search.
  wsr::SearchOptions so;
  so.passes.assign(Passes.begin(), Passes.end());
  so.algorithm = Algorithm;
  so.full_shape_first = FullShapeFirst;
  so.jobs = Jobs ? (int)Jobs : (int)std::max(1u, std::thread::hardware_concurrency());
  so.lookahead =
      Lookahead == "on" || (Lookahead == "auto" && wsr::SearchOptions::lookaheadByDefault(so.jobs));
  so.best_path = out;
  so.trace_path = tracePath;
  so.budget_s = Budget;
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  auto progress = [&](const wsr::SearchStats &s, const std::string &event) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "[%s] lines %u -> %u, tokens %u -> %u, tests %ld (cache %ld, parse-skip %ld, "
                  "cancelled %ld), %.0fs",
                  s.pass.c_str(), s.start_lines, s.lines, s.start_tokens, s.tokens, s.tests,
                  s.cache_hits, s.parse_skips, s.cancelled, s.elapsed_s);
    if (tty) {
      llvm::errs() << "\r\033[K" << line;
      if (!event.empty() && event.rfind("accepted", 0) == 0)
        llvm::errs() << "\n  " << event << "\n";
    } else if (!event.empty()) {
      llvm::errs() << "wsreduce: " << event << "  " << line << "\n";
    }
    llvm::errs().flush();
  };
  wsr::Search search(tester, so, progress);
  std::string best;
  int rc = 0;
  try {
    best = search.run(start);
  } catch (const wsr::SearchStop &stop) {
    if (tty) llvm::errs() << "\n";
    if (stop.reason == "interrupted") {
      llvm::errs() << "wsreduce: interrupted; the best program so far is in " << out
                   << " (--resume continues)\n";
      llvm::errs() << llvm::format("wsreduce: the %d slots were busy %.0f%% of %.0f s\n",
                                   search.stats().jobs, 100 * search.stats().slotUse(),
                                   search.stats().elapsed_s);
      return 130;
    }
    if (stop.budget) {
      // The user asked for the best program this much search finds: finish it as a result.
      best = search.best();
      llvm::errs() << "wsreduce: " << stop.reason << "; finishing the best program so far\n";
    } else {
      llvm::errs() << "wsreduce: stopped: " << stop.reason << "; the best program so far is in "
                   << out << "\n";
      return 3;
    }
  }
  if (tty) llvm::errs() << "\n";

  // 4. A standalone, formatted program, re-judged: each finishing step is kept only if the
  // failure survives it.
  // A program that only returns the harness's exit code (a hang, a crash: the search stopped
  // before taking that return) is tried without the harness first; what still needs it gets it
  // inlined.
  // The result is always formatted (a search stopped by its budget leaves the passes' blank lines,
  // trailing spaces and statements joined on one line), and its size is counted after it: of the
  // 100-column format and the one that never breaks a line for length (an asm string broken over
  // lines), the one with fewer lines.
  // tidy's rewrites (mutators/tidy.cpp) come before the harness is inlined: they are for the
  // user's code, and a search its budget stopped never reached them.
  // What the judge refuses of the finish is said, with what it got, now and in the report.
  auto whatItGot = [](const wsr::TestResult &r) {
    return r.infra ? "could not be judged (" + r.detail + ")"
                   : "no longer fails the same way (" + r.detail +
                         (r.signature.empty() ? "" : ", signature " + r.signature) + ")";
  };
  std::vector<std::string> finish_notes;  // said now, and in the report
  auto say = [&](const std::string &note) {
    llvm::errs() << "wsreduce: " << note << "\n";
    finish_notes.push_back(note);
  };
  wsr::ParseOptions tidy_po = parseOptionsFor(src);
  tidy_po.cuda_path = CudaPath;
  struct Step {
    const char *name;
    std::function<std::string(const std::string &)> apply;
    bool expected;  // expected to keep the failure (dropping the harness is only tried)
  };
  const std::vector<Step> finish = {
      {"dropping the harness", wsr::dropHarness, false},
      {"tidy",
       [&](const std::string &b) {
         // Judged round by round: a rewrite the judge refuses (a --test script that reads the text,
         // a kernel whose failure hangs on a cast) is left out, and the others are still taken.
         int left_out = 0;
         std::string why;  // what the last refused text got
         std::string tidied = wsr::tidyProgramJudged(
             b, src, tidy_po, 8,
             [&](const std::string &c) {
               if (!t.keep.empty() && wsr::lostKeptRegion(wsr::normalizeCode(c), t.keep) >= 0) {
                 why = "would change a region kept as written";
                 return false;
               }
               wsr::TestResult r = tester.test(c);
               if (!r.interesting) why = whatItGot(r);
               return r.interesting;
             },
             &left_out);
         if (left_out > 0)
           say(std::string("tidy left out ") + std::to_string(left_out) +
               (left_out == 1 ? " rewrite" : " rewrites") + ": with " +
               (left_out == 1 ? "it" : "the last") + " the program " + why);
         return tidied;
       },
       true},
      {"inlining the harness", wsr::inlineHarness, true},
      {"formatting",
       [](const std::string &b) {
         std::string formatted = wsr::formatCuda(b), unbroken = wsr::formatCuda(b, 0);
         return wsr::countNonBlankLines(unbroken) < wsr::countNonBlankLines(formatted) ? unbroken
                                                                                       : formatted;
       },
       true}};
  for (auto &step : finish) {
    std::string next = step.apply(best);
    if (next == best) continue;
    wsr::TestResult r = tester.test(next);
    if (r.interesting) {
      best = next;
    } else if (step.expected) {
      // Say when an expected step does not keep the failure, with what it got instead, so that
      // the program is known to be left as the search made it.
      say(std::string("the result is not finished by ") + step.name + ": with it the program " +
          whatItGot(r));
    }
  }
  if (!wsr::writeFileAtomic(out, best, &err)) return fail(err);
  wsr::ReportInput ri;
  ri.original_path = src;
  ri.reduced_path = out;
  ri.command = command;
  ri.original_text = *text;
  ri.reduced_text = best;
  ri.finish_notes = finish_notes;
  ri.original = ov;
  tester.oracleOptions().emu_nvcc_first = nvcc_check;
  ri.reduced = TestScript.empty() ? tester.judgeOriginal(best) : ov;
  tester.oracleOptions().emu_nvcc_first = false;
  ri.build = t.oracle.build;
  ri.backend = backend;
  if (backend == "emu") ri.policies = t.oracle.policies;
  if (!Confirm.empty() && TestScript.empty()) {
    if (!wsr::gpuPresent()) {
      ri.confirm_note = "--confirm gpu was asked, but this machine has no GPU: not confirmed";
      llvm::errs() << "wsreduce: " << ri.confirm_note << "\n";
    } else {
      ri.confirmed =
          wsr::judgeText(best, fs::path(src).filename().string(), onTheGpu(tester.oracleOptions()));
      if (gpu_original.valid())
        ri.confirmed_original = gpu_original.get();
      else if (backend == "gpu")
        ri.confirmed_original = ov;
      bool same = ri.confirmed->symptom == ri.reduced.symptom;
      // The original's GPU class, when it is the result's: the reduction kept what the GPU shows
      // (a bug the GPU's timing hides passes there before and after).
      bool as_original =
          ri.confirmed_original && ri.confirmed_original->symptom == ri.confirmed->symptom;
      // The class decides (a hang's signature names barriers the two backends see differently);
      // the GPU's signature is said when it is not the emulator's.
      llvm::errs() << "wsreduce: confirmed on the GPU: " << ri.confirmed->detail
                   << (same ? " (the same class)" : " (a different class)")
                   << (ri.confirmed->signature != ri.reduced.signature
                           ? ", signature " + ri.confirmed->signature
                           : std::string())
                   << "\n";
      if (!same && ri.confirmed_original)
        llvm::errs() << "wsreduce: the original on the GPU: " << ri.confirmed_original->detail
                     << (as_original ? " (the result's class too: the bug is latent on this GPU, "
                                       "and the reduction kept that)"
                                     : " (the reduction changed what the GPU shows)")
                     << "\n";
      if (!same && !as_original) rc = 4;
    }
  }
  ri.wall_s = search.stats().elapsed_s;
  ri.tests = tester.tests();
  ri.cache_hits = tester.cacheHits();
  ri.parse_skips = tester.parseSkips();
  ri.kept = t.keep;
  ri.keep_skips = tester.keepSkips();
  if (!wsr::writeFileAtomic(reportPath, wsr::writeReport(ri), &err)) return fail(err);
  const std::string own = wsr::sizeWithoutInlinedHarness(best);
  llvm::outs() << "wsreduce: " << src << " " << wsr::countNonBlankLines(*text) << " -> "
               << wsr::countNonBlankLines(best) << " lines (" << wsr::countTokens(*text) << " -> "
               << wsr::countTokens(best) << " tokens"
               << (own.empty() ? std::string() : "; " + own + " without the inlined wscheck.h")
               << "), " << ri.tests << " tests, " << (long)ri.wall_s << " s, the "
               << search.stats().jobs << " slots busy " << (long)(100 * search.stats().slotUse())
               << "% of the time"
               << (search.stats().lookahead ? ", " + std::to_string(search.stats().lookahead) +
                                                  " candidates judged ahead of their pass"
                                            : std::string())
               << "\n"
               << "wsreduce: reduced program " << out << "\nwsreduce: issue report   " << reportPath
               << "\n";
  return rc;
}
