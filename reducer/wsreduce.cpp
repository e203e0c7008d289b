// wsreduce: shrink a failing CUDA program to the smallest program that still fails the
// same way. Exit status: 0 reduced, 1 the input does not show the symptom, 2 bad input,
// 3 the oracle could not judge (infra-error), 4 reduced but --confirm gpu showed another class
// (than the emulator's, and than the original's on the GPU),
// 130 interrupted (the best so far is saved).
#include "flags.h"
#include "keeper.h"
#include "reduce.h"
#include "report.h"

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <thread>
#include <unistd.h>

namespace cl = llvm::cl;
namespace fs = std::filesystem;

static cl::OptionCategory Cat("wsreduce options");
static cl::opt<std::string> Source(cl::Positional, cl::desc("<kernel.cu>"), cl::cat(Cat));
static cl::list<std::string> ProgramArgs(
    cl::Positional, cl::ZeroOrMore,
    cl::desc("[-- <program arguments>...] (every run of the original and the candidates)"),
    cl::cat(Cat));
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
static cl::opt<bool> Force("force",
                           cl::desc("Start over when the output already holds an earlier result "
                                    "(which is then replaced)"),
                           cl::cat(Cat));
static cl::opt<bool> Resume("resume", cl::desc("Continue from <name>.min.cu of an earlier run"),
                            cl::cat(Cat));
static cl::opt<std::string> Output(
    "o", cl::desc("Reduced program (default <name>.min.cu next to the input)"), cl::cat(Cat));
static cl::opt<bool> NoParseCheck(
    "no-parse-check", cl::desc("Send candidates to nvcc even when Clang cannot parse them"),
    cl::cat(Cat));
static cl::opt<std::string> Arch("arch", cl::init("sm_90a"), cl::desc("Target (default sm_90a)"),
                                 cl::cat(Cat));
static cl::opt<std::string> CudaPath("cuda-path",
                                     cl::desc("CUDA installation for Clang (default: from nvcc)"),
                                     cl::cat(Cat));
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
static cl::opt<int> RunsPerGpu(
    "runs-per-gpu", cl::init(4),
    cl::desc("GPU backend: at most N candidates run on one GPU at a time (default 4; builds are "
             "not limited; 0: no limit)"),
    cl::cat(Cat));
static cl::opt<std::string> Confirm(
    "confirm",
    cl::desc("gpu: judge the reduced program (and, on the emulator, the original) on the GPU and "
             "put both verdicts in the report"),
    cl::cat(Cat));
static cl::opt<double> Budget(
    "budget", cl::init(0),
    cl::desc("Seconds of search (0: none), counted from the end of the original's judgment: when "
             "they are spent the search stops and the best program so far is finished (tidied, "
             "harness inlined, formatted: at most --finish-budget more seconds), judged and "
             "reported as a completed reduction"),
    cl::cat(Cat));
static cl::opt<double> FinishBudget(
    "finish-budget", cl::init(-1),
    cl::desc("Seconds for the finish (tidy, harness, formatting; each step judged) after the "
             "search; the steps it has no time for are left out, and the report says which "
             "(default: 60 with --budget, none without)"),
    cl::cat(Cat));
static cl::opt<std::string> Lookahead(
    "lookahead",
    cl::desc("on | off | auto (default): slots the current pass leaves idle judge the next passes' "
             "first candidates on the same program; auto is on at -j 8 or more"),
    cl::init("auto"), cl::cat(Cat));
static cl::opt<bool> Gather(
    "gather",
    cl::desc("Once a step is found, the candidates judged beside it get a third of its time to "
             "finish, and those interesting too are taken together (fewer round trips; slots "
             "idle meanwhile). Off by default: on one GPU, which runs one candidate at a time, it took no "
             "more"),
    cl::cat(Cat));
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

static cl::opt<std::string> Flatten(
    "flatten", cl::init("all"),
    cl::desc("Inline the headers the program reaches through these folders before the search, so "
             "that a bug inside one can be reduced and the result is one file: all (default: the "
             "program's folder and every -I), none, or DIR[,DIR...]; the flattened program must "
             "fail as the original does"),
    cl::value_desc("all|none|DIRS"), cl::cat(Cat));

static int fail(const std::string &s, int code = 2) {
  llvm::errs() << "wsreduce: " << s << "\n";
  return code;
}

static void onSignal(int) {
  wsr::Search::requestStop();
  wsr::killAllRunning();
}

static int listPasses() {
  for (auto phase : {wsr::Phase::Invisible, wsr::Phase::Shape, wsr::Phase::Structure,
                     wsr::Phase::Expression, wsr::Phase::Fallback, wsr::Phase::Cosmetic})
    for (auto &p : wsr::allPasses())
      if (p.phase == phase)
        llvm::outs() << llvm::format("%-22s %-10s ", p.name, wsr::phaseName(p.phase))
                     << p.description
                     << (p.build_only ? " (compile-error reductions only)" : "") << "\n";
  return 0;
}

static int listSites(const std::string &src, const std::string &text, const wsr::BuildOptions &b) {
  const wsr::PassInfo *p = wsr::findPass(ListSites.getValue());
  if (!p) return fail("unknown pass '" + ListSites + "' (wsreduce --list-passes lists them)");
  wsr::ParseOptions po = wsr::parseOptionsFor(b, src);
  po.cuda_path = CudaPath;
  auto parsed = wsr::parseSource(text, src, po);
  if (!parsed->ok()) return fail(src + " does not parse: " + parsed->firstError());
  for (auto &s : p->sites(*parsed))
    llvm::outs() << llvm::format("line %-5u level %-2d group %-4d ", s.line, s.level, s.group)
                 << s.note << "\n";
  return 0;
}

// The flags, checked, as a request; "" or the one sentence that says what is wrong.
static std::string requestFromFlags(const std::string &src, const std::string &text,
                                    wsr::ReduceRequest &r) {
  std::error_code ec;
  static const std::vector<std::string> symptoms = {"compile-error", "hang",  "crash", "wrong",
                                                    "slow",          "flaky", "pass"};
  if (TestScript.empty() &&
      std::find(symptoms.begin(), symptoms.end(), Symptom.getValue()) == symptoms.end())
    return Symptom.empty() ? "say which failure to keep: --symptom "
                             "compile-error|hang|crash|wrong|slow|flaky (or --test SCRIPT)"
                           : "--symptom must be one of compile-error, hang, crash, wrong, slow, "
                             "flaky, pass";
  std::string script;
  if (!TestScript.empty()) {
    if (fs::exists(TestScript.getValue()))
      script = fs::absolute(TestScript.getValue()).string();
    else if (auto found = wsr::findInPath(TestScript.getValue()))
      script = *found;
    else
      return "--test " + TestScript + " does not exist";
    if (::access(script.c_str(), X_OK) != 0)
      return "--test " + TestScript + " is not executable (chmod +x it)";
  }
  std::vector<const wsr::PassInfo *> passes;
  for (auto &n : Passes) {
    const wsr::PassInfo *p = wsr::findPass(n);
    if (!p) return "unknown pass '" + n + "' (wsreduce --list-passes lists them)";
    passes.push_back(p);
  }
  if (!Match.empty()) {
    try {
      std::regex re(Match.getValue());
    } catch (const std::regex_error &e) {
      return "--match is not a valid regular expression: " + std::string(e.what());
    }
  }
  if (Algorithm != "ddmin" && Algorithm != "pdd") return "--algorithm must be ddmin or pdd";
  if (Lookahead != "on" && Lookahead != "off" && Lookahead != "auto")
    return "--lookahead must be on, off or auto";
  if (!Confirm.empty() && Confirm != "gpu")
    return "--confirm takes gpu (the only backend to confirm on)";
  if (Budget < 0) return "--budget must be a number of seconds, 0 or more (0: no budget)";
  if (FinishBudget < 0 && FinishBudget != -1)
    return "--finish-budget must be a number of seconds, 0 or more (0: no bound)";
  if (!Gpus.empty() && !Gpu.empty())
    return "give --gpu (one CUDA_VISIBLE_DEVICES for every run) or --gpus (candidates spread "
           "over GPUs), not both";

  wsr::TestOptions &t = r.test;
  t.symptom = Symptom;
  t.any_signature = AnySignature;
  t.test_script = script;
  t.parse_check = !NoParseCheck;
  wsr::OracleOptions &o = t.oracle;
  if (std::string e = wsr::applyOracleFlags(o); !e.empty()) return e;
  o.build.arch = Arch;
  if (!Gpu.empty()) o.run.env_set["CUDA_VISIBLE_DEVICES"] = Gpu;
  o.repeat = Repeat;
  o.retry_timeout = !NoRetry;
  o.classify.match = Match;
  o.program_args.assign(ProgramArgs.begin(), ProgramArgs.end());
  if (Symptom == "compile-error" && script.empty()) {
    // A compile error needs no device: nvcc judges it (the emulator's g++ never sees ptxas), and
    // a candidate that builds is not interesting, so it is never run.
    if (o.backend == "auto") o.backend = "gpu";
    o.build_only = true;
  }
  const std::string backend = wsr::resolveBackend(o);
  if (!Gpus.empty()) {
    t.gpus = wsr::parseGpuList(Gpus);
    if (t.gpus.empty())
      return "--gpus takes a number of GPUs or a comma list of devices, not `" + Gpus + "`";
  } else if (Gpu.empty() && !std::getenv("CUDA_VISIBLE_DEVICES") && backend == "gpu" &&
             script.empty()) {
    if (int n = wsr::hostGpuCount(); n > 1) t.gpus = wsr::parseGpuList(std::to_string(n));
  }
  if (RunsPerGpu < 0) return "--runs-per-gpu must be 0 (no limit) or more";
  t.runs_per_gpu = RunsPerGpu;
  wsr::installWatchdog(o, src);  // a hang verdict in about a second, not at the timeout
  t.parse = wsr::parseOptionsFor(o.build);
  t.parse.includes = o.build.includes;  // the Tester adds the input's folder and the harness's
  t.parse.cuda_path = CudaPath;
  if (script.empty() && (backend == "gpu" || !o.build.nvcc.empty()) &&
      wsr::findNvcc(o.build.nvcc).empty())
    return "nvcc was not found in PATH or /usr/local/cuda/bin; install the CUDA toolkit or pass "
           "--nvcc";
  std::string err;
  if (!wsr::prepareCacheDir(o.build.cache_dir, &err)) return err;
  if (!wsr::findKeptRegions(text, &t.keep, &err)) return src + ": " + err;

  if (Flatten != "none") {
    wsr::FlattenOptions fo;
    if (std::string e = wsr::flattenOptionsFor(o.build, src, Flatten, &fo); !e.empty()) return e;
    fo.parse.cuda_path = CudaPath;
    r.flatten = fo;
  }
  r.input_path = src;
  r.text = text;
  r.out_path = Output.empty() ? wsr::defaultOutputPath(src) : Output.getValue();
  if (fs::absolute(r.out_path) == fs::absolute(src))
    return "the output would overwrite the input; pick another -o";
  // Nothing the user had is lost: an earlier result is continued or replaced only when asked.
  if (Resume && Force) return "give --resume (continue the earlier result) or --force (start over)";
  if (fs::exists(r.out_path, ec) && !Resume && !Force)
    return r.out_path +
           " already holds an earlier result: --resume continues it, --force starts "
           "over and replaces it";
  const fs::path out_dir = fs::absolute(r.out_path).parent_path();
  if (!fs::is_directory(out_dir, ec))
    return "the output's folder " + out_dir.string() + " does not exist";
  if (::access(out_dir.c_str(), W_OK) != 0)
    return "cannot write the result into " + out_dir.string() + " (permission denied)";
  r.resume = Resume;
  r.finish_when_interrupted = true;
  r.timeout_cap_s = o.run.timeout_s;
  r.calibrate = !NoCalibrate;
  r.keepers = !NoKeeper;
  wsr::SearchOptions &so = r.search;
  if (!passes.empty()) so.schedule = wsr::Schedule::only(passes);
  so.algorithm = Algorithm;
  so.full_shape_first = FullShapeFirst;
  // Each slot is a thread waiting on a child process: beyond a few per core they only queue.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  so.jobs = Jobs ? (int)std::min<unsigned>(Jobs, 16 * cores) : (int)cores;
  if (Jobs > 16 * cores)
    llvm::errs() << "wsreduce: -j " << Jobs << " is more than this machine runs at once; using "
                 << so.jobs << " (16 per core)\n";
  so.lookahead =
      Lookahead == "on" || (Lookahead == "auto" && wsr::SearchOptions::lookaheadByDefault(so.jobs));
  so.gather = Gather;
  so.budget_s = Budget;
  r.finish_budget_s = FinishBudget >= 0 ? FinishBudget.getValue() : Budget > 0 ? 60 : 0;
  if (!Confirm.empty() && script.empty()) {
    wsr::OracleOptions g = o;  // the user's timeout, no calibration, a run after the build
    g.backend = "gpu";
    g.calibrate = false;
    g.build_only = false;
    r.confirm = g;
    if (!wsr::gpuPresent())
      r.confirm_missing = "--confirm gpu was asked, but this machine has no GPU: not confirmed";
  }
  return "";
}

// Lines for the user on stderr; on a terminal the search's status is one line, rewritten.
static void talkTo(wsr::ReduceRequest &req, bool tty) {
  req.say = [tty](const std::string &line) {
    llvm::errs() << (tty ? "\r\033[K" : "") << "wsreduce: " << line << "\n";
  };
  req.progress = [tty](const wsr::SearchStats &s, const std::string &event) {
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
}

// What the user reads at the end: why there is no result, or what the result is and where.
static int tellOutcome(const std::string &src, const wsr::ReduceRequest &req,
                       const wsr::ReduceOutcome &r) {
  using St = wsr::ReduceOutcome::Status;
  if (r.status == St::NotInteresting || r.status == St::Infra) {
    if (!req.test.test_script.empty() && r.status == St::NotInteresting)
      return fail(r.message, r.exitCode());
    llvm::errs() << wsr::renderHuman(r.original);
    return fail(r.message, r.exitCode());
  }
  if (r.status == St::Interrupted) {
    llvm::errs() << "wsreduce: " << r.message << "\n"
                 << llvm::format("wsreduce: the %d slots were busy %.0f%% of %.0f s\n",
                                 r.stats.jobs, 100 * r.stats.slotUse(), r.stats.elapsed_s);
    return r.exitCode();
  }
  if (r.status != St::Reduced) return fail(r.message, r.exitCode());
  if (!req.confirm_missing.empty()) llvm::errs() << "wsreduce: " << req.confirm_missing << "\n";
  if (r.confirmed) {
    const bool same = r.confirmed->symptom == r.reduced.symptom;
    llvm::errs() << "wsreduce: confirmed on the GPU: " << r.confirmed->detail
                 << (same ? " (the same class)" : " (a different class)")
                 << (r.confirmed->signature != r.reduced.signature
                         ? ", signature " + r.confirmed->signature
                         : std::string())
                 << "\n";
    if (!same && r.confirmed_original)
      llvm::errs() << "wsreduce: the original on the GPU: " << r.confirmed_original->detail
                   << (r.confirm_differs ? " (the reduction changed what the GPU shows)"
                                         : " (the result's class too: the bug is latent on this "
                                           "GPU, and the reduction kept that)")
                   << "\n";
  }
  // Like with like: the sizes count the harness header as the #include line the input has; the
  // file itself holds it inlined, so that plain nvcc builds it.
  const std::string in_plain = wsr::uninlineHarness(r.input_text.empty() ? req.text : r.input_text),
                    out_plain = wsr::uninlineHarness(r.best);
  const bool inlined = out_plain != r.best;
  if (wsr::countNonBlankLines(out_plain) >= wsr::countNonBlankLines(in_plain) &&
      wsr::countTokens(out_plain) >= wsr::countTokens(in_plain))
    llvm::errs() << "wsreduce: nothing was gained: the result is as large as the input\n";
  llvm::outs() << "wsreduce: " << src << (r.flattened.empty() ? "" : " (flattened)") << " "
               << wsr::countNonBlankLines(in_plain) << " -> " << wsr::countNonBlankLines(out_plain)
               << " lines (" << wsr::countTokens(in_plain) << " -> " << wsr::countTokens(out_plain)
               << " tokens"
               << (inlined ? "; " + std::to_string(wsr::countNonBlankLines(r.best)) +
                                 " lines with wscheck.h inlined"
                           : std::string())
               << "), " << r.tests << " tests, " << (long)r.stats.elapsed_s << " s, the "
               << r.stats.jobs << " slots busy " << (long)(100 * r.stats.slotUse())
               << "% of the time"
               << (r.stats.lookahead ? ", " + std::to_string(r.stats.lookahead) +
                                           " candidates judged ahead of their pass"
                                     : std::string())
               << "\n"
               << "wsreduce: reduced program " << req.out_path << "\nwsreduce: issue report   "
               << r.report_path << "\n";
  return r.exitCode();
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions({&Cat, &wsr::oracleFlagCategory()});
  if (!cl::ParseCommandLineOptions(argc, argv,
                                   "wsreduce: reduce a failing CUDA program, keeping its failure\n",
                                   &llvm::errs()))
    return 2;
  wsr::RunTempRoot run_tmp;  // every temporary file of this run, gone with it
  if (ListPasses) return listPasses();
  if (Source.empty())
    return fail("no input: give the failing program, e.g. wsreduce kernel.cu --symptom hang");
  const std::string src = Source;
  auto text = std::make_optional<std::string>();
  if (std::string e = wsr::readProgram(src, &*text); !e.empty()) return fail(e);
  if (!ListSites.empty()) {
    wsr::OracleOptions o;
    if (std::string e = wsr::applyOracleFlags(o); !e.empty()) return fail(e);
    o.build.arch = Arch;
    return listSites(src, *text, o.build);
  }

  wsr::ReduceRequest req;
  if (std::string e = requestFromFlags(src, *text, req); !e.empty()) return fail(e);
  for (int i = 0; i < argc; ++i) req.command += (i ? " " : "") + std::string(argv[i]);
  for (auto &k : req.test.keep)
    llvm::errs() << "wsreduce: lines " << k.first_line << "-" << k.last_line
                 << " are kept as written (// wsreduce: keep)\n";
  const bool tty = ::isatty(2);
  talkTo(req, tty);
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);

  wsr::ReduceOutcome r = wsr::reduce(req);
  if (tty) llvm::errs() << "\n";
  return tellOutcome(src, req, r);
}
