// wsfuzz: inject the catalogue's handoff bugs (docs/bugs.md) into reference kernels, judge every
// mutant with the oracle, keep everything in SQLite, and report the confusion matrix.
//   wsfuzz --kernels kernels/ --injectors all --repeat 3 -j 8 --db campaign.sqlite
//   wsfuzz report campaign.sqlite -o report
//   wsfuzz slurm submit --kernels kernels/ --shards 8 --dir /shared/c1 --partition gpu --gres gpu:1
//   wsfuzz merge merged.sqlite --dir /shared/c1
// Exit status: 0 done, 2 bad input, 130 interrupted (the same command resumes).
#include "campaign.h"
#include "merge.h"
#include "report.h"
#include "slurm.h"

#include "flags.h"
#include "oracle.h"

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

namespace cl = llvm::cl;
namespace fs = std::filesystem;

static cl::OptionCategory Cat("wsfuzz options");
static cl::list<std::string> Positional(
    cl::Positional,
    cl::desc("[report <campaign.sqlite>... | compare <a.sqlite> <b.sqlite> | merge <out.sqlite> "
             "<shard.sqlite>... | slurm submit|status|resume|cancel]"),
    cl::cat(Cat));
static cl::list<std::string> Kernels(
    "kernels", cl::CommaSeparated, cl::desc("Reference kernels: a directory of .cu files or files"),
    cl::cat(Cat));
static cl::list<std::string> Injectors(
    "injectors", cl::CommaSeparated,
    cl::desc("Injectors to run (default all; see --list-injectors)"), cl::cat(Cat));
static cl::opt<int> Repeat("repeat", cl::init(3), cl::desc("Fresh runs per mutant"), cl::cat(Cat));
static cl::opt<unsigned> Jobs("j", cl::init(0), cl::Prefix,
                              cl::desc("Mutants judged at once (default: all cores)"),
                              cl::cat(Cat));
static cl::opt<std::string> Db("db", cl::init("campaign.sqlite"), cl::desc("The campaign database"),
                               cl::cat(Cat));
static cl::opt<std::string> Shard(
    "shard", cl::init("0/1"),
    cl::desc("i/N: judge only the mutants whose hash falls in shard i of N"), cl::cat(Cat));
static cl::opt<std::string> Gpus(
    "gpus", cl::desc("GPU slots: N (devices 0..N-1) or a list a,b (CUDA_VISIBLE_DEVICES per run)"),
    cl::cat(Cat));
static cl::opt<bool> Reduce(
    "reduce",
    cl::desc("Reduce every detected mutant and record whether the injected edit survived"),
    cl::cat(Cat));
static cl::opt<std::string> ReduceBackend(
    "reduce-backend", cl::init(""),
    cl::desc("Where --reduce judges its candidates: gpu | emu (default: the campaign's --backend); "
             "with emu on a GPU campaign each reduced program is judged on the GPU at the end, and "
             "a reduction whose program the GPU judges another class counts as failed"),
    cl::cat(Cat));
static cl::opt<double> ReduceBudget(
    "reduce-budget", cl::init(0),
    cl::desc("Seconds of wall clock per reduction (0: none); a reduction stopped by it keeps its "
             "best program and is judged for retention as it is"),
    cl::cat(Cat));
static cl::opt<unsigned> ReduceJobs(
    "reduce-jobs", cl::init(0), cl::desc("Candidates at once per reduction (default -j / slots)"),
    cl::cat(Cat));
static cl::opt<std::string> Corpus(
    "corpus", cl::init("corpus"),
    cl::desc("Where detected mutants go (<dir>/<kernel>/<injector>/); empty: nowhere"),
    cl::cat(Cat));
static cl::opt<bool> RetryInfra(
    "retry-infra",
    cl::desc("Judge infra-error verdicts again (e.g. a CPU campaign moved to the GPU machine)"),
    cl::cat(Cat));
static cl::opt<bool> NoSanitizer("no-sanitizer",
                                 cl::desc("Skip the latent mutants' compute-sanitizer second look"),
                                 cl::cat(Cat));
static cl::opt<double> SlowFactor(
    "slow-factor", cl::init(1.5),
    cl::desc("shallow-pipeline: slower than this x the reference's median run is `slow`"),
    cl::cat(Cat));
static cl::opt<long> MaxMutants("max-mutants", cl::init(0),
                                cl::desc("Judge at most this many mutants in this session"),
                                cl::cat(Cat));
static cl::opt<bool> ListInjectors("list-injectors",
                                   cl::desc("Print the injectors with their expectations and exit"),
                                   cl::cat(Cat));
static cl::opt<bool> ListSites(
    "list-sites", cl::desc("Plan only: print every mutant (kernel, injector, site, note) and exit"),
    cl::cat(Cat));
static cl::opt<int> RunsPerGpu(
    "runs-per-gpu", cl::init(4),
    cl::desc("Mutant runs on one GPU at a time, and each --reduce candidate's (default 4: a hang "
             "ends by exit under the watchdog, so runs share a GPU without a trap's teardown)"),
    cl::cat(Cat));
static cl::opt<int> MaxConnections(
    "max-connections", cl::init(1),
    cl::desc("CUDA_DEVICE_MAX_CONNECTIONS for the GPU runs: hardware queues per context (1: a run "
             "ends sooner, most of all a hung one; 0: the driver's default, for kernels whose "
             "streams must overlap; a value in the environment wins)"),
    cl::cat(Cat));
static cl::opt<bool> NoPrestart("no-prestart",
                                cl::desc("Start each GPU run's process at its turn, not ahead of "
                                         "it (its CUDA context then opens while the GPU waits)"),
                                cl::cat(Cat));
static cl::opt<bool> NoKeepers(
    "no-keepers",
    cl::desc("Do not hold a CUDA context open on each GPU slot while the campaign runs"),
    cl::cat(Cat));
static cl::opt<bool> NoCalibrate(
    "no-calibrate",
    cl::desc("Every run gets --timeout instead of 10 x the reference kernel's run (2 s at least)"),
    cl::cat(Cat));
static cl::opt<std::string> Explain(
    "explain",
    cl::desc(
        "report: explanations file (kernel|injector|observed|why per line) for the disagreements"),
    cl::cat(Cat));
static cl::opt<std::string> Labels("labels",
                                   cl::desc("compare: names of the two databases, e.g. gpu,emu"),
                                   cl::cat(Cat));
static cl::opt<std::string> Output(
    "o", cl::desc("report: output prefix (writes PREFIX.md and PREFIX.html)"), cl::cat(Cat));

static cl::OptionCategory SlurmCat("wsfuzz slurm options (a campaign as a Slurm job array)");
static cl::opt<int> Shards("shards", cl::init(0),
                           cl::desc("slurm submit: array tasks, one shard of the mutants each"),
                           cl::cat(SlurmCat));
static cl::opt<std::string> Dir(
    "dir",
    cl::desc("slurm, merge: the campaign's shared directory (campaign.sbatch, campaign.json, "
             "shard-<i>.sqlite, logs/), one every node can write"),
    cl::cat(SlurmCat));
static cl::opt<std::string> Partition("partition", cl::desc("slurm submit: sbatch --partition"),
                                      cl::cat(SlurmCat));
static cl::opt<std::string> Gres("gres",
                                 cl::desc("slurm submit: sbatch --gres per task, e.g. gpu:1"),
                                 cl::cat(SlurmCat));
static cl::opt<std::string> TimeLimit(
    "time", cl::desc("slurm submit: sbatch --time per task, e.g. 01:00:00"), cl::cat(SlurmCat));
static cl::opt<int> ArrayLimit("array-limit", cl::init(0),
                               cl::desc("slurm submit: at most this many tasks at once (--array "
                                        "...%M)"),
                               cl::cat(SlurmCat));
static cl::opt<int> CpusPerTask("cpus-per-task", cl::init(0),
                                cl::desc("slurm submit: sbatch --cpus-per-task (a task's -j "
                                         "defaults to the CPUs Slurm gives it)"),
                                cl::cat(SlurmCat));
static cl::list<std::string> SbatchArg(
    "sbatch-arg", cl::desc("slurm submit: one more sbatch option, e.g. --sbatch-arg=--account=x"),
    cl::cat(SlurmCat));
static cl::opt<bool> Wait("wait",
                          cl::desc("slurm status: wait until no task is pending or running (exit "
                                   "1 when a task ended with its shard incomplete)"),
                          cl::cat(SlurmCat));
static cl::opt<int> Task("task", cl::init(-1), cl::desc("slurm cancel: this task only"),
                         cl::cat(SlurmCat));

static int fail(const std::string &s, int code = 2) {
  llvm::errs() << "wsfuzz: " << s << "\n";
  return code;
}

static void log(const std::string &s) {
  llvm::errs() << s << "\n";
  llvm::errs().flush();
}

static void onSignal(int) {
  wsr::fuzz::requestStop();
  wsr::killAllRunning();
}

static int listInjectors() {
  for (auto &i : wsr::inject::allInjectors()) {
    std::string exp;
    for (auto &e : i.expected) exp += (exp.empty() ? "" : " | ") + e;
    llvm::outs() << llvm::format("%-24s %-8s %-12s expects %s\n", i.name, i.arch,
                                 *i.sanitizer ? i.sanitizer : "-", exp.c_str())
                 << "    " << i.note << (i.runtime ? "" : " [compile + static check]") << "\n";
  }
  return 0;
}

// wsfuzz compare <a.sqlite> <b.sqlite>: the same mutants judged twice.
static int compareCommand() {
  if (Positional.size() != 3)
    return fail("usage: wsfuzz compare <a.sqlite> <b.sqlite> [--labels A,B] [-o FILE.md]");
  for (int i = 1; i <= 2; ++i) {
    std::error_code ec;
    if (!fs::exists(Positional[i], ec)) return fail(Positional[i] + " does not exist");
    if (std::string e = wsr::fuzz::Store::checkExisting(Positional[i]); !e.empty()) return fail(e);
  }
  std::string la = "A", lb = "B";
  if (!Labels.empty()) {
    auto c = Labels.find(',');
    if (c == std::string::npos) return fail("--labels needs two names, e.g. --labels gpu,emu");
    la = Labels.substr(0, c);
    lb = Labels.substr(c + 1);
  }
  std::string md, err;
  if (!wsr::fuzz::writeComparison(Positional[1], Positional[2], la, lb, &md, &err))
    return fail(err);
  if (Output.empty())
    llvm::outs() << md;
  else if (!wsr::writeFileAtomic(Output, md, &err))
    return fail(err);
  else
    llvm::outs() << "wsfuzz: comparison " << Output << "\n";
  return 0;
}

// wsfuzz report <campaign.sqlite>...: the Markdown and HTML report; several databases (the
// shards of one campaign) are merged first, into a temporary file.
static int reportCommand(const std::string &tmp_root) {
  if (Positional.size() < 2)
    return fail("usage: wsfuzz report <campaign.sqlite> [<shard.sqlite>...] [-o PREFIX]");
  std::vector<std::string> dbs(Positional.begin() + 1, Positional.end());
  std::error_code ec;
  for (auto &db : dbs)
    if (!fs::exists(db, ec)) return fail(db + " does not exist");
  std::string db = dbs[0], title;
  std::string prefix =
      Output.empty() ? (fs::path(db).parent_path() /
                        ((dbs.size() > 1 ? std::string("campaign") : fs::path(db).stem().string()) +
                         "-report"))
                           .string()
                     : Output.getValue();
  std::string err;
  if (!Explain.empty() && !fs::exists(Explain.getValue()))
    return fail("--explain " + Explain + " does not exist");
  if (dbs.size() > 1) {
    if (tmp_root.empty()) return fail("no temporary folder for the merged databases");
    db = tmp_root + "/merged.sqlite";
    wsr::fuzz::MergeResult mr;
    if (!wsr::fuzz::mergeCampaigns(db, dbs, &mr, &err)) return fail(err);
    for (auto &d : dbs) title += (title.empty() ? "" : " + ") + d;
  }
  if (!wsr::fuzz::writeReport(db, prefix, &err, Explain, title)) return fail(err);
  llvm::outs() << "wsfuzz: report " << prefix << ".md and " << prefix << ".html\n";
  return 0;
}

// wsfuzz merge <out.sqlite> [<in.sqlite>...] [--dir SHARED]: one campaign database.
static int mergeCommand() {
  if (Positional.size() < 2 || (Positional.size() < 3 && Dir.empty()))
    return fail(
        "usage: wsfuzz merge <out.sqlite> <shard.sqlite>... | wsfuzz merge <out.sqlite> "
        "--dir SHARED");
  std::vector<std::string> in(Positional.begin() + 2, Positional.end()), missing;
  std::string err;
  if (!Dir.empty()) {
    auto shards = wsr::fuzz::slurm::shardDatabases(Dir, &missing, &err);
    if (!err.empty()) return fail(err);
    in.insert(in.end(), shards.begin(), shards.end());
  }
  auto t0 = std::chrono::steady_clock::now();
  wsr::fuzz::MergeResult r;
  if (!wsr::fuzz::mergeCampaigns(Positional[1], in, &r, &err)) return fail(err);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (auto &m : missing) log("wsfuzz: note: " + m + " does not exist (its task never wrote it)");
  for (auto &n : r.notes) log("wsfuzz: note: " + n);
  for (auto &d : r.judged_twice) log("wsfuzz: judged in two inputs (overlapping shards?): " + d);
  log(llvm::formatv("wsfuzz: merged {0} database(s) into {1} in {2:F2} s: {3} mutants, {4} with a "
                    "verdict, {5} without{6}{7}",
                    in.size(), Positional[1], s, r.mutants, r.verdicts, r.mutants - r.verdicts,
                    r.judged_twice.empty()
                        ? std::string()
                        : ", " + std::to_string(r.judged_twice.size()) + " judged twice (one kept)",
                    r.mutants > r.verdicts ? std::string("; `wsfuzz report` counts them as not yet "
                                                         "judged")
                                           : std::string())
          .str());
  return 0;
}

static std::string campaignFromFlags(wsr::fuzz::CampaignOptions &o);

// wsfuzz slurm submit|status|resume|cancel: the campaign as a Slurm job array (fuzzer/slurm.h).
static int slurmCommand(int argc, char **argv) {
  const std::string usage =
      "the slurm commands are `submit --shards N --dir SHARED <wsfuzz flags>`, `status --dir "
      "SHARED [--wait]`, `resume --dir SHARED` and `cancel --dir SHARED [--task i]`";
  if (Positional.size() != 2) return fail(usage);
  const std::string sub = Positional[1];
  if (sub != "submit" && sub != "status" && sub != "resume" && sub != "cancel")
    return fail("unknown slurm command '" + sub + "'; " + usage);
  if (Dir.empty()) return fail("give the campaign's shared directory: --dir SHARED");
  std::error_code ec;
  const std::string dir = fs::absolute(Dir.getValue(), ec).lexically_normal().string();
  if (sub == "status") return wsr::fuzz::slurm::status(dir, Wait, log);
  if (sub == "resume") return wsr::fuzz::slurm::resume(dir, log);
  if (sub == "cancel") return wsr::fuzz::slurm::cancel(dir, Task, log);

  wsr::fuzz::slurm::SubmitOptions so;
  if (Shards < 1) return fail("--shards must be at least 1 (the number of array tasks)");
  if (ArrayLimit < 0) return fail("--array-limit must be 0 (no limit) or more");
  if (CpusPerTask < 0) return fail("--cpus-per-task must be 0 (Slurm's default) or more");
  wsr::fuzz::CampaignOptions o;
  if (std::string e = campaignFromFlags(o); !e.empty()) return fail(e);
  const std::vector<std::string> own = {"shards", "dir",          "partition",  "gres",
                                        "time",   "array-limit",  "sbatch-arg", "wait",
                                        "task",   "cpus-per-task"};
  if (std::string e = wsr::fuzz::slurm::taskArguments(argc, argv, own, &so.task_args); !e.empty())
    return fail(e);
  std::string err;
  so.plan = wsr::fuzz::planKeys(o, &err);
  if (!err.empty()) return fail(err);
  so.dir = dir;
  so.shards = Shards;
  so.partition = Partition;
  so.gres = Gres;
  so.time_limit = TimeLimit;
  so.array_limit = ArrayLimit;
  so.cpus_per_task = CpusPerTask;
  so.sbatch_args.assign(SbatchArg.begin(), SbatchArg.end());
  so.reduce = Reduce;
  so.wsfuzz = fs::read_symlink("/proc/self/exe", ec).string();
  if (so.wsfuzz.empty()) so.wsfuzz = fs::absolute(argv[0], ec).string();
  so.cwd = fs::current_path(ec).string();
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];  // quoted where a shell would need it, for the script's header
    if (a.empty() || a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789_./:=,@%+-") != std::string::npos)
      a = "'" + a + "'";
    so.command += (i ? " " : "") + a;
  }
  return wsr::fuzz::slurm::submit(so, log);
}

// The flags, checked, as a campaign; "" or the one sentence that says what is wrong. Bad kernels
// are refused here, before anything is written (the campaign's database included).
static std::string campaignFromFlags(wsr::fuzz::CampaignOptions &o) {
  if (Kernels.empty()) return "no kernels: give --kernels DIR|FILE (e.g. --kernels kernels/)";
  auto shard = wsr::fuzz::parseShard(Shard);
  if (!shard) return "--shard must be i/N with 0 <= i < N, e.g. --shard 0/4";
  if (Repeat < 1) return "--repeat must be at least 1";
  if (ReduceBudget < 0)
    return "--reduce-budget must be a number of seconds, 0 or more (0: no budget)";
  o.kernels.assign(Kernels.begin(), Kernels.end());
  o.injectors.assign(Injectors.begin(), Injectors.end());
  for (auto &n : o.injectors)
    if (n != "all" && !wsr::inject::findInjector(n))
      return "unknown injector '" + n + "' (wsfuzz --list-injectors lists them)";
  o.repeat = Repeat;
  o.jobs = Jobs ? (int)Jobs : (int)std::max(1u, std::thread::hardware_concurrency());
  o.db = Db;
  o.shard_i = shard->first;
  o.shard_n = shard->second;
  o.gpus = wsr::fuzz::parseGpus(Gpus);
  if (!Gpus.empty() && o.gpus.empty())
    return "--gpus must be a count or a comma-separated device list";
  if (Gpus.empty() && wsr::gpuPresent()) o.gpus = {"0"};
  if (RunsPerGpu < 1 || RunsPerGpu > 64)
    return "--runs-per-gpu must be between 1 and 64, not " + std::to_string(RunsPerGpu);
  o.runs_per_gpu = RunsPerGpu;
  o.reduce = Reduce;
  o.reduce_jobs = (int)ReduceJobs;
  o.reduce_budget_s = ReduceBudget;
  o.corpus_dir = Corpus;
  o.retry_infra = RetryInfra;
  o.sanitizer = !NoSanitizer;
  o.slow_factor = SlowFactor;
  o.max_mutants = MaxMutants;
  if (std::string e = wsr::applyOracleFlags(o.oracle); !e.empty()) return e;
  if (!ReduceBackend.empty() && ReduceBackend != "gpu" && ReduceBackend != "emu")
    return "--reduce-backend must be gpu or emu";
  o.reduce_backend = ReduceBackend;
#ifndef WSR_HAVE_EMU
  if (ReduceBackend == "emu")
    return "the emulator (--reduce-backend emu) is not built into this wsfuzz; use gpu";
#endif
  o.keepers = !NoKeepers;
  o.prestart = !NoPrestart;
  if (MaxConnections < 0 || MaxConnections > 32)
    return "--max-connections must be between 0 (the driver's default) and 32, not " +
           std::to_string(MaxConnections);
  o.max_connections = MaxConnections;
  wsr::installWatchdog(o.oracle);  // the arch comes from each kernel's build
  o.calibrate = !NoCalibrate;
  std::string kerr;
  if (wsr::fuzz::kernelFiles(o.kernels, &kerr).empty() || !kerr.empty())
    return kerr.empty() ? "no .cu kernels in --kernels" : kerr;
  return "";
}

// --list-sites: every mutant the campaign would judge; a listing changes nothing on disk.
static int listSites(const wsr::fuzz::CampaignOptions &o) {
  try {
    wsr::fuzz::Store store(":memory:");
    std::string err;
    auto ms = wsr::fuzz::plan(store, o, log, &err);
    if (!err.empty()) return fail(err);
    for (auto &m : ms)
      llvm::outs() << m.kernel << "\t" << m.injector << "\t#" << m.site << "\t" << m.arch << "\t"
                   << m.hash.substr(0, 12) << "\t" << m.note << "\n";
    return 0;
  } catch (const std::exception &e) {
    return fail(e.what());
  }
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions({&Cat, &SlurmCat, &wsr::oracleFlagCategory()});
  if (!cl::ParseCommandLineOptions(
          argc, argv, "wsfuzz: inject handoff bugs into reference kernels and check the triage\n",
          &llvm::errs()))
    return 2;
  // Before the run's temporary folder, which sets TMPDIR: sbatch hands the environment to the
  // tasks, which outlive this process and its folder.
  if (!Positional.empty() && Positional[0] == "slurm") return slurmCommand(argc, argv);
  wsr::RunTempRoot run_tmp;  // every temporary file of this run, gone with it
  if (ListInjectors) return listInjectors();
  if (!Positional.empty()) {
    if (Positional[0] == "compare") return compareCommand();
    if (Positional[0] == "report") return reportCommand(run_tmp.path());
    if (Positional[0] == "merge") return mergeCommand();
    return fail("unknown command '" + Positional[0] +
                "' (the commands are `report <campaign.sqlite>`, `compare <a.sqlite> "
                "<b.sqlite>`, `merge <out.sqlite> <shard.sqlite>...` and `slurm "
                "submit|status|resume|cancel`)");
  }
  wsr::fuzz::CampaignOptions o;
  if (std::string e = campaignFromFlags(o); !e.empty()) return fail(e);
  for (int i = 0; i < argc; ++i) o.command += (i ? " " : "") + std::string(argv[i]);
  if (ListSites) return listSites(o);
  if (wsr::resolveBackend(o.oracle) == "gpu" && wsr::findNvcc(o.oracle.build.nvcc).empty())
    return fail(
        "nvcc was not found in PATH or /usr/local/cuda/bin; install the CUDA toolkit or "
        "pass --nvcc");
  std::string err;
  if (!wsr::prepareCacheDir(o.oracle.build.cache_dir, &err)) return fail(err);
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  try {
    return wsr::fuzz::runCampaign(o, log);
  } catch (const std::exception &e) {
    return fail(e.what());
  }
}
