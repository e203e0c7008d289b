// wsreduce end to end, as a user runs it, on failures a CPU can produce: a ptxas error in a
// 300-line program, host code that hangs, a C-Reduce-style script; the parse check, resume
// after a kill, and refusing an input that does not fail.
#include "edit.h"
#include "keep.h"
#include "process.h"
#include "report.h"
#include "tester.h"

#include <gtest/gtest.h>
#include <llvm/Support/JSON.h>

#include <chrono>

#include <csignal>
#include <filesystem>
#include <functional>
#include <random>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace wsr;
namespace fs = std::filesystem;

namespace {
std::string tool() { return std::string(WSR_BUILD_DIR) + "/reducer/wsreduce"; }
std::string fixture(const std::string &rel) { return std::string(WSR_FIXTURES) + "/" + rel; }

struct Work {
  std::string dir;
  Work() : dir(makeTempDir("wsr-reduce.")) {}
  ~Work() { removeTree(dir); }
  std::string copy(const std::string &rel) {
    std::string to = dir + "/" + fs::path(rel).filename().string();
    fs::copy_file(fixture(rel), to);
    return to;
  }
};

RunRecord wsreduce(std::vector<std::string> args, double timeout = 1200,
                   const std::string &tmpdir = "") {
  args.insert(args.begin(), tool());
  RunOptions o;
  o.timeout_s = timeout;
  o.env_set["WSREDUCE_CACHE"] = std::string(WSR_BUILD_DIR) + "/test-cache";
  if (!tmpdir.empty()) o.env_set["TMPDIR"] = tmpdir;
  return runProcess(args, o);
}

std::string minOf(const std::string &path) {
  auto p = fs::path(path);
  return (p.parent_path() / (p.stem().string() + ".min" + p.extension().string())).string();
}

// wsreduce started in the background, its stderr into `err_file`.
pid_t spawnWsreduce(const std::vector<std::string> &args, const std::string &err_file,
                    const std::string &tmpdir = "") {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("WSREDUCE_CACHE", (std::string(WSR_BUILD_DIR) + "/test-cache").c_str(), 1);
    if (!tmpdir.empty()) setenv("TMPDIR", tmpdir.c_str(), 1);
    int fd = open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    std::vector<std::string> all = {tool()};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char *> argv;
    for (auto &a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// The grep test of the script contract, made slow: a run stays in its search for a while.
std::string slowGrepTest(const Work &w, const char *sleep_s = "0.3") {
  std::string path = w.dir + "/slow_test.sh";
  writeFileAtomic(path, "#!/bin/sh\nsleep " + std::string(sleep_s) +
                            "\ngrep -qF 'tcgen05.fence' \"$1\" && grep -qF 'int main' \"$1\"\n");
  ::chmod(path.c_str(), 0755);
  return path;
}

bool waitFor(const std::function<bool()> &cond, int seconds) {
  for (int i = 0; i < seconds * 20; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return cond();
}

// Whether a reduction of `original` wrote its first accepted step to `best` within `seconds`.
bool waitForFirstStep(const std::string &best, const std::string &original, int seconds = 300) {
  return waitFor(
      [&] {
        auto t = readFile(best);
        return t && countNonBlankLines(*t) < countNonBlankLines(original);
      },
      seconds);
}

// Sends `sig` to a run started by spawnWsreduce, waits for it to end; its stderr.
std::string signalAndWait(pid_t pid, int sig, const std::string &err_file, int *status) {
  ::kill(pid, sig);
  ::waitpid(pid, status, 0);
  return readFile(err_file).value_or("");
}
}  // namespace

TEST(Reducer, PtxasErrorIn300LinesShrinksToAHandfulWithTheSameError) {
  Work w;
  std::string src = w.copy("reduce/ptxas_error.cu");
  ASSERT_GE(countNonBlankLines(*readFile(src)), 280u);
  // The structural passes: what takes a 300-line program to a handful of lines (the shape
  // and expression passes would only cost CI time here).
  auto r = wsreduce(
      {src, "--symptom", "compile-error", "-j2", "--passes",
       "remove-stmt,remove-function,unwrap-branch,remove-decl,remove-param,inline-call,cleanup"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto min = readFile(minOf(src));
  ASSERT_TRUE(min);
  EXPECT_LE(countNonBlankLines(*min), 15u) << *min;
  EXPECT_NE(min->find("tcgen05.fence"), std::string::npos) << "the construct that fails is kept";
  // The report says the signature is the original's.
  auto md = readFile(w.dir + "/ptxas_error.min.md");
  ASSERT_TRUE(md);
  EXPECT_NE(md->find("(the original's)"), std::string::npos);
  EXPECT_NE(md->find("compile-error/ptxas"), std::string::npos);
  // Candidates Clang could not parse never reached nvcc.
  auto trace = readFile(w.dir + "/ptxas_error.min.trace.jsonl");
  ASSERT_TRUE(trace);
  EXPECT_NE(trace->find("\"parse_failed\":true"), std::string::npos);
}

// The kernel of a template library, reduced for an error ptxas reports: the whole program becomes
// the one asm statement that fails, where deleting inside the instantiated templates would take
// many builds (CUTLASS's example 48: bench/cpu/reduce_cutlass.sh).
TEST(Reducer, APtxasErrorInALibrarysKernelIsolatesTheAsmThatFails) {
  Work w;
  std::string src = w.copy("passes/isolate_asm.cu");
  auto r = wsreduce({src, "--symptom", "compile-error", "--arch", "sm_90", "-j2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto min = readFile(minOf(src));
  ASSERT_TRUE(min);
  EXPECT_LE(countNonBlankLines(*min), 3u) << *min;
  EXPECT_NE(min->find("setmaxnreg.inc.sync.aligned.u32 %0;"), std::string::npos) << *min;
  EXPECT_NE(min->find("\"n\"(232)"), std::string::npos) << "the template's register count" << *min;
  EXPECT_EQ(min->find("laneid"), std::string::npos) << *min;
  auto trace = readFile(w.dir + "/isolate_asm.min.trace.jsonl");
  ASSERT_TRUE(trace);
  bool taken = false;
  std::istringstream lines(*trace);
  for (std::string l; std::getline(lines, l);)
    taken |= l.find("\"pass\":\"isolate-asm\"") != std::string::npos &&
             l.find("\"interesting\":true") != std::string::npos;
  EXPECT_TRUE(taken) << "the isolated program was the step that took the library";
}

// --budget: the best program a bounded search finds, finished and reported like any result (the
// time limit set by a user rather than by `timeout -s INT`).
TEST(Reducer, ABudgetEndsTheSearchAndTheResultIsStillFinishedAndReported) {
  Work w;
  std::string src = w.copy("reduce/ptxas_error.cu");
  // The result is formatted, and LLVM's style gives each arm of the fixture's one-line if/else its
  // own line: a search stopped early can end with more lines than the input has (in CI:
  // 290 -> 316 on a slow machine). Smaller means smaller than the input laid out the same way.
  size_t before = countNonBlankLines(formatCuda(*readFile(src)));
  auto t0 = std::chrono::steady_clock::now();
  // The statement passes (isolate-asm takes this program in one step, well within the budget).
  auto r = wsreduce({src, "--symptom", "compile-error", "-j2", "--budget", "15", "--passes",
                     "remove-stmt,remove-function,unwrap-branch,remove-decl,cleanup"});
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("the budget of 15 s is spent; finishing the best program so far"),
            std::string::npos)
      << r.err;
  auto min = readFile(minOf(src));
  ASSERT_TRUE(min);
  EXPECT_LT(countNonBlankLines(*min), before)
      << "the input, formatted, has " << before << " lines:\n"
      << *min;
  EXPECT_NE(min->find("tcgen05.fence"), std::string::npos) << "the construct that fails is kept";
  // Stopped midway, the program is still formatted: no trailing spaces, no runs of blank lines.
  EXPECT_EQ(min->find(" \n"), std::string::npos) << *min;
  EXPECT_EQ(min->find("\n\n\n"), std::string::npos) << *min;
  auto md = readFile(w.dir + "/ptxas_error.min.md");
  ASSERT_TRUE(md) << "the report is written as for a finished reduction";
  EXPECT_NE(md->find("compile-error/ptxas"), std::string::npos);
  EXPECT_LT(wall, 15 + 120) << "the budget, then a candidate in flight and the finishing steps";
  auto bad = wsreduce({src, "--symptom", "compile-error", "--budget", "-1"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--budget must be a number of seconds"), std::string::npos) << bad.err;
}

TEST(Reducer, HostHangIsReducedToTheWaitThatNeverEnds) {
  Work w;
  std::string src = w.copy("reduce/host_hang.cu");
  auto r =
      wsreduce({src, "--symptom", "hang", "--timeout", "1", "--no-retry", "-j2", "--backend", "gpu",
                "--passes", "remove-stmt,remove-function,unwrap-branch,remove-decl,cleanup"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto min = readFile(minOf(src));
  ASSERT_TRUE(min);
  EXPECT_NE(min->find("while (!ready)"), std::string::npos) << *min;
  EXPECT_EQ(min->find("Stage3"), std::string::npos) << "unrelated code is gone:\n" << *min;
  EXPECT_LE(countNonBlankLines(*min), 15u) << *min;
}

// With several GPUs (a fake list here: the runs only see CUDA_VISIBLE_DEVICES) the
// candidates are spread over them, each on the least busy; the trace says which ran where.
TEST(Reducer, CandidatesAreSpreadOverTheGpusGiven) {
  Work w;
  std::string src = w.copy("reduce/host_hang.cu");
  // A budget: a dozen seconds of candidates show where they ran.
  auto r =
      wsreduce({src, "--symptom", "hang", "--timeout", "1", "--no-retry", "-j2", "--backend", "gpu",
                "--gpus", "0,1", "--budget", "12", "--passes", "remove-function,cleanup"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("candidates spread over 2 GPUs"), std::string::npos) << r.err;
  auto trace = readFile(w.dir + "/host_hang.min.trace.jsonl");
  ASSERT_TRUE(trace);
  size_t on0 = 0, on1 = 0;
  for (size_t at = 0; (at = trace->find("\"gpu\":\"0\"", at)) != std::string::npos; ++at) ++on0;
  for (size_t at = 0; (at = trace->find("\"gpu\":\"1\"", at)) != std::string::npos; ++at) ++on1;
  EXPECT_GT(on0, 0u) << *trace;
  EXPECT_GT(on1, 0u) << *trace;
  auto both = wsreduce({src, "--symptom", "hang", "--gpu", "0", "--gpus", "2"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("not both"), std::string::npos) << both.err;
  auto none = wsreduce({src, "--symptom", "hang", "--gpus", ","});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("--gpus takes"), std::string::npos) << none.err;
}

// A C-Reduce-style script instead of the oracle; both search algorithms (ddmin and probabilistic
// delta debugging) reach the same minimum (bench/cpu measures which needs fewer tests on real
// cases).
TEST(Reducer, InterestingnessScriptInsteadOfTheOracle) {
  for (const char *algo : {"ddmin", "pdd"}) {
    Work w;
    std::string src = w.copy("reduce/ptxas_error.cu");
    auto r = wsreduce({src, "--test", fixture("reduce/grep_test.sh"), "-j2", "--no-parse-check",
                       "--algorithm", algo, "--passes", "remove-function,remove-stmt,lines"});
    ASSERT_EQ(r.exit_code, 0) << algo << ": " << r.err;
    auto min = readFile(minOf(src));
    ASSERT_TRUE(min);
    EXPECT_NE(min->find("tcgen05.fence"), std::string::npos) << algo << ": " << *min;
    EXPECT_NE(min->find("int main"), std::string::npos) << algo;
    EXPECT_LE(countNonBlankLines(*min), 4u) << algo << ": " << *min;
    if (std::string(algo) == "pdd") {
      auto bad = wsreduce({src, "--test", fixture("reduce/grep_test.sh"), "--algorithm", "bisect"});
      EXPECT_EQ(bad.exit_code, 2);
      EXPECT_NE(bad.err.find("--algorithm must be ddmin or pdd"), std::string::npos) << bad.err;
    }
  }
}

// The finish is judged: what the judge refuses is left out and said, with what it got instead,
// on the terminal and in the report.
// tidy is judged rewrite by rewrite (by halves), so the one it refuses here (the parentheses
// around threadIdx.x) does not cost the other (`+ 0`); formatting is one step, refused whole.
TEST(Reducer, AFinishingStepTheJudgeRefusesIsSaid) {
  Work w;
  std::string src = w.dir + "/parens.cu";
  ASSERT_TRUE(writeFileAtomic(src,
                              "__global__ void k(int *o) { o[0] = (threadIdx.x); o[1] = blockIdx.x "
                              "+ 0; }\nint main() { return 0; }\n"));
  auto r = wsreduce({src, "--test", fixture("reduce/needs_parens.sh"), "-j1", "--passes", "lines"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("tidy left out 1 rewrite: with it the program no longer fails the same way "
                       "(script exit 1)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("the result is not finished by formatting: with it the program no longer "
                       "fails the same way "
                       "(script exit 1)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("not finished by tidy"), std::string::npos) << r.err;
  auto min = readFile(minOf(src));
  ASSERT_TRUE(min);
  EXPECT_NE(min->find("(threadIdx.x); o[1] = blockIdx.x;"), std::string::npos)
      << "the `+ 0` went, the parentheses stayed:\n"
      << *min;
  // the report says it too: a maintainer reading the unformatted line learns why
  auto md = readFile(w.dir + "/parens.min.md");
  ASSERT_TRUE(md);
  EXPECT_NE(md->find("the judge refused:\n- tidy left out 1 rewrite: with it the program no longer "
                     "fails the same way "
                     "(script exit 1)\n- the result is not finished by formatting"),
            std::string::npos)
      << *md;
}

// The lookahead judges later passes' candidates in idle slots; which candidate wins stays the
// search's own order, so the result is the same with it and without it.
TEST(Reducer, TheLookaheadDoesNotChangeTheResult) {
  std::string results[2];
  for (int on = 0; on < 2; ++on) {
    Work w;
    std::string src = w.copy("reduce/ptxas_error.cu");
    auto r = wsreduce({src, "--test", fixture("reduce/grep_test.sh"), "-j4", "--no-parse-check",
                       "--lookahead", on ? "on" : "off", "--passes",
                       "remove-function,remove-decl,remove-stmt,unwrap-branch,lines"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find("judged ahead") != std::string::npos, on == 1) << r.out;
    results[on] = readFile(minOf(src)).value_or("");
  }
  EXPECT_FALSE(results[0].empty());
  EXPECT_EQ(results[0], results[1]);
  Work w;
  auto bad = wsreduce({w.copy("reduce/ptxas_error.cu"), "--test", fixture("reduce/grep_test.sh"),
                       "--lookahead", "maybe"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--lookahead must be on, off or auto"), std::string::npos) << bad.err;
}

TEST(Reducer, RefusesAnInputWithoutTheSymptomAndSaysItsVerdict) {
  Work w;
  std::string src = w.copy("reduce/ptxas_error.cu");
  auto r = wsreduce({src, "--symptom", "hang"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("does not show the symptom hang: its verdict is compile-error/ptxas"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(minOf(src)));
}

// On the emulator a kill at --timeout is a program still running, not a deadlock (the emulator
// names those without one): the refusal says so and what to change. Not for --symptom hang,
// where the kill is what the user asked about.
TEST(Reducer, AnOriginalKilledAtTheTimeoutOnTheEmulatorIsCalledSlowNotDeadlocked) {
  Work w;
  std::string src = w.copy("reduce/slow_on_the_emulator.cu");
  auto r = wsreduce({src, "--symptom", "wrong", "--backend", "emu", "--timeout", "1", "-j1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(
      r.err.find("the emulator was still running the original when --timeout killed it (1 s)"),
      std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("does not show the symptom wrong: its verdict is hang/"), std::string::npos)
      << r.err;
  auto c = wsreduce({w.copy("reduce/ptxas_error.cu"), "--symptom", "wrong", "--backend", "emu",
                     "--timeout", "1", "-j1"});
  EXPECT_EQ(c.exit_code, 1) << c.err;
  EXPECT_EQ(c.err.find("still running"), std::string::npos) << "a compile error was not killed:\n"
                                                            << c.err;
}

TEST(Reducer, BadInputIsOneSentence) {
  auto r = wsreduce({"/no/such/file.cu", "--symptom", "hang"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos);
  Work w;
  std::string src = w.copy("reduce/ptxas_error.cu");
  auto s = wsreduce({src});
  EXPECT_EQ(s.exit_code, 2);
  EXPECT_NE(s.err.find("--symptom"), std::string::npos) << s.err;
  auto p = wsreduce({src, "--symptom", "hang", "--passes", "no-such-pass"});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.err.find("unknown pass"), std::string::npos);
}

TEST(Reducer, KilledMidwayLosesNothingAndResumes) {
  Work w;
  std::string src = w.copy("reduce/host_hang.cu");
  std::string best = minOf(src);
  std::string original = *readFile(src);
  // Start, wait for the first accepted steps, kill it hard (no chance to clean up).
  pid_t pid = fork();
  if (pid == 0) {
    setenv("WSREDUCE_CACHE", (std::string(WSR_BUILD_DIR) + "/test-cache").c_str(), 1);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 2);
    execl(tool().c_str(), tool().c_str(), src.c_str(), "--symptom", "hang", "--timeout", "1",
          "--no-retry", "-j2", "--backend", "gpu", "--passes", "remove-stmt,remove-function",
          (char *)nullptr);
    _exit(127);
  }
  std::string seen;
  for (int i = 0; i < 6000; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto t = readFile(best);
    if (t && *t != original && countNonBlankLines(*t) < countNonBlankLines(original)) {
      seen = *t;
      break;
    }
  }
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
  ASSERT_FALSE(seen.empty()) << "no accepted step was written within 600 s";
  auto atKill = readFile(best);
  ASSERT_TRUE(atKill);
  EXPECT_LT(countNonBlankLines(*atKill), countNonBlankLines(original))
      << "the best so far is on disk";
  EXPECT_NE(atKill->find("while (!ready)"), std::string::npos)
      << "and it is a program that still hangs";

  // What is checked is where the resumed search starts and that its result is no larger: a budget
  // bounds the rest of it.
  auto r =
      wsreduce({src, "--symptom", "hang", "--timeout", "1", "--no-retry", "-j2", "--backend", "gpu",
                "--resume", "--budget", "20", "--passes", "remove-stmt,remove-function"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("resuming from"), std::string::npos) << r.err;
  auto fin = readFile(best);
  EXPECT_LE(countNonBlankLines(*fin), countNonBlankLines(*atKill));
  EXPECT_NE(fin->find("while (!ready)"), std::string::npos);
}

// Nothing the user had is lost: an earlier result is continued (--resume) or replaced (--force)
// only when asked, and the refusal changes nothing on disk.
TEST(Reducer, AnEarlierResultIsNeverOverwrittenUnasked) {
  Work w;
  std::string src = w.copy("reduce/ptxas_error.cu");
  std::vector<std::string> args = {src,
                                   "--test",
                                   fixture("reduce/grep_test.sh"),
                                   "-j2",
                                   "--no-parse-check",
                                   "--passes",
                                   "remove-function,remove-stmt,lines"};
  ASSERT_EQ(wsreduce(args).exit_code, 0);
  const std::string mine = *readFile(minOf(src)) + "// the user's own note\n";
  ASSERT_TRUE(writeFileAtomic(minOf(src), mine));
  auto again = wsreduce(args);
  EXPECT_EQ(again.exit_code, 2) << again.err;
  EXPECT_NE(again.err.find(minOf(src) + " already holds an earlier result: --resume continues it, "
                                        "--force starts over"),
            std::string::npos)
      << again.err;
  EXPECT_EQ(std::count(again.err.begin(), again.err.end(), '\n'), 1) << again.err;
  EXPECT_EQ(readFile(minOf(src)).value_or(""), mine) << "the refusal changed the result";
  args.push_back("--force");
  auto forced = wsreduce(args);
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_EQ(readFile(minOf(src)).value_or("").find("the user's own note"), std::string::npos);
}

// Two runs on one output (two terminals, a script started twice): the second is refused with the
// first's pid, before it judges anything, and the first goes on.
TEST(Reducer, ASecondRunOnTheSameOutputIsRefusedWithTheFirstsPid) {
  Work w;
  std::string src = w.copy("reduce/ptxas_error.cu");
  std::string slow = slowGrepTest(w);
  pid_t first = spawnWsreduce({src, "--test", slow, "-j1", "--no-parse-check", "--passes", "lines"},
                              w.dir + "/first.err");
  ASSERT_GT(first, 0);
  const std::string trace = w.dir + "/ptxas_error.min.trace.jsonl";
  ASSERT_TRUE(waitFor([&] { return fs::exists(trace); }, 60)) << "the first run never started";
  auto second =
      wsreduce({src, "--test", slow, "-j1", "--no-parse-check", "--passes", "lines", "--force"});
  const bool first_alive = ::kill(first, 0) == 0;
  ::kill(first, SIGKILL);
  int st = 0;
  ::waitpid(first, &st, 0);
  ASSERT_TRUE(first_alive) << "the first run had ended: nothing to lock against";
  EXPECT_EQ(second.exit_code, 2) << second.err;
  EXPECT_NE(second.err.find("another run (pid " + std::to_string(first) + ") is reducing into " +
                            minOf(src)),
            std::string::npos)
      << second.err;
}

// Ctrl-C during the search: the best program so far is finished and reported, as a spent budget
// does, and the exit status says the run was interrupted.
TEST(Reducer, CtrlCFinishesTheBestProgramSoFarAndSaysItWasInterrupted) {
  Work w;
  std::string src = w.copy("reduce/ptxas_error.cu");
  const std::string original = *readFile(src);
  pid_t pid = spawnWsreduce(
      {src, "--test", slowGrepTest(w), "-j2", "--no-parse-check", "--passes", "remove-stmt,lines"},
      w.dir + "/run.err");
  ASSERT_GT(pid, 0);
  const bool stepped = waitForFirstStep(minOf(src), original);
  int st = 0;
  const std::string err = signalAndWait(pid, SIGINT, w.dir + "/run.err", &st);
  ASSERT_TRUE(stepped) << "no accepted step within 300 s\n" << err;
  ASSERT_TRUE(WIFEXITED(st)) << err;
  EXPECT_EQ(WEXITSTATUS(st), 130) << err;
  EXPECT_NE(err.find("interrupted; finishing the best program so far"), std::string::npos) << err;
  auto min = readFile(minOf(src));
  ASSERT_TRUE(min);
  EXPECT_LT(countNonBlankLines(*min), countNonBlankLines(original));
  EXPECT_NE(min->find("tcgen05.fence"), std::string::npos) << *min;
  auto md = readFile(w.dir + "/ptxas_error.min.md");
  ASSERT_TRUE(md) << err;
  EXPECT_NE(md->find("interrupted (Ctrl-C)"), std::string::npos) << *md;
}

// Killed with SIGKILL at random moments (seeded) and resumed each time, a reduction ends with the
// result of an uninterrupted run, a trace of whole JSON lines, nothing left in its temporary root
// and no process of its own still running. The lines pass on a grep test has one minimum (the
// two lines the test needs), so where the kills land cannot change the result.
TEST(Reducer, KilledTenTimesAtRandomAndResumedItEndsAsAnUninterruptedRun) {
  auto args = [](const Work &w, const std::string &src) {
    return std::vector<std::string>{src,  "--test", slowGrepTest(w, "0.05"), "-j2", "--no-parse-check",
                                    "--passes", "lines"};
  };
  Work ref;
  std::string ref_src = ref.copy("reduce/ptxas_error.cu");
  auto r = wsreduce(args(ref, ref_src));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string expected = readFile(minOf(ref_src)).value_or("");
  ASSERT_EQ(countNonBlankLines(expected), 2u) << expected;

  Work w;
  std::string src = w.copy("reduce/ptxas_error.cu");
  const std::string tmp = w.dir + "/tmp";
  fs::create_directories(tmp);
  std::mt19937 rng(39);
  std::uniform_int_distribution<int> delay_ms(300, 1500);
  int kills = 0;
  for (int run = 0; run < 40 && kills < 10; ++run) {
    auto a = args(w, src);
    if (run > 0) a.push_back("--resume");
    pid_t pid = spawnWsreduce(a, w.dir + "/run.err", tmp);
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    ::kill(pid, SIGKILL);
    int st = 0;
    ::waitpid(pid, &st, 0);
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) ++kills;
  }
  ASSERT_EQ(kills, 10) << "the runs ended before the kills landed";
  auto a = args(w, src);
  a.push_back("--resume");
  auto fin = wsreduce(a, 1200, tmp);
  ASSERT_EQ(fin.exit_code, 0) << fin.err;
  EXPECT_EQ(readFile(minOf(src)).value_or(""), expected);
  // the trace: whole JSON lines, whatever moments the kills came at
  auto trace = readFile(w.dir + "/ptxas_error.min.trace.jsonl");
  ASSERT_TRUE(trace);
  size_t at = 0, lines = 0;
  while (at < trace->size()) {
    size_t nl = trace->find('\n', at);
    ASSERT_NE(nl, std::string::npos) << "a line cut short at the end of the trace";
    auto parsed = llvm::json::parse(trace->substr(at, nl - at));
    EXPECT_TRUE((bool)parsed) << trace->substr(at, nl - at);
    if (!parsed) llvm::consumeError(parsed.takeError());
    at = nl + 1;
    ++lines;
  }
  EXPECT_GT(lines, 0u);
  // the temporary root: the killed runs' folders were swept, the last run removed its own
  std::vector<std::string> left;
  for (auto &e : fs::directory_iterator(tmp)) left.push_back(e.path().filename().string());
  EXPECT_TRUE(left.empty()) << left.size() << " left, e.g. " << left.front();
  // no process of ours: nothing still runs the test script of this work folder
  std::error_code ec;
  for (auto &e : fs::directory_iterator("/proc", ec)) {
    auto cmd = readFile(e.path().string() + "/cmdline");
    if (cmd && cmd->find(w.dir) != std::string::npos)
      ADD_FAILURE() << "left running: pid " << e.path().filename().string();
  }
}

// Ctrl-C during the finish stops it: the result is written as far as the finish got, the exit
// status says the run was interrupted, and the judge the interrupt killed is not taken for a
// verdict (a killed compiler was once reported as the result's compile-error/ice).
TEST(Reducer, CtrlCDuringTheFinishStopsItWithNoVerdictFromTheKill) {
  Work w;
  std::string src = w.dir + "/parens.cu";
  ASSERT_TRUE(writeFileAtomic(src,
                              "__global__ void k(int *o) { o[0] = (threadIdx.x); o[1] = blockIdx.x "
                              "+ 0; }\nint main() { return 0; }\n"));
  // The search (lines) never makes `blockIdx.x;`: only the finish's tidy does. The script then
  // says so and takes its time.
  const std::string script = w.dir + "/finish_test.sh";
  writeFileAtomic(script, "#!/bin/sh\nif grep -qF 'blockIdx.x;' \"$1\"; then touch " + w.dir +
                              "/in_finish; sleep 30; fi\ngrep -qF '(threadIdx.x); o[1]' \"$1\" && "
                              "grep -qF 'int main' \"$1\"\n");
  ::chmod(script.c_str(), 0755);
  pid_t pid = spawnWsreduce({src, "--test", script, "-j1", "--passes", "lines"}, w.dir + "/run.err");
  ASSERT_GT(pid, 0);
  const bool in_finish = waitFor([&] { return fs::exists(w.dir + "/in_finish"); }, 300);
  int st = 0;
  const std::string err = signalAndWait(pid, SIGINT, w.dir + "/run.err", &st);
  ASSERT_TRUE(in_finish) << "the finish never judged tidy's rewrite\n" << err;
  ASSERT_TRUE(WIFEXITED(st)) << err;
  EXPECT_EQ(WEXITSTATUS(st), 130) << err;
  EXPECT_NE(err.find("interrupted during the finish"), std::string::npos) << err;
  EXPECT_EQ(err.find("no longer fails the same way"), std::string::npos)
      << "the killed judge was taken for a verdict\n"
      << err;
  auto md = readFile(w.dir + "/parens.min.md");
  ASSERT_TRUE(md) << err;
  EXPECT_NE(md->find("written as far as the finish got"), std::string::npos) << *md;
  auto min = readFile(minOf(src));
  ASSERT_TRUE(min);
  EXPECT_NE(min->find("(threadIdx.x)"), std::string::npos) << *min;
}

// The disk the result is written to fills up midway (ENOSPC): the run ends with one sentence that
// says why, the exit status of a run that could not go on, and the best program so far kept. The
// result's folder is a small tmpfs of the test's own.
TEST(Reducer, ADiskThatFillsUpMidwayEndsInOneSentenceWithTheBestResultKept) {
  Work w;
  const std::string out_dir = w.dir + "/out";
  fs::create_directories(out_dir);
  if (::system(("mount -t tmpfs -o size=1m tmpfs '" + out_dir + "' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (not root, or no mount privilege)";
  struct Unmount {
    std::string at;
    ~Unmount() { (void)!::system(("umount -l '" + at + "'").c_str()); }
  } unmount{out_dir};
  std::string src = w.copy("reduce/ptxas_error.cu");
  const std::string original = *readFile(src), out = out_dir + "/ptxas_error.min.cu";
  pid_t pid = spawnWsreduce({src, "--test", slowGrepTest(w, "0.2"), "-j2", "--no-parse-check",
                             "--passes", "lines", "-o", out},
                            w.dir + "/run.err");
  ASSERT_GT(pid, 0);
  const bool stepped = waitForFirstStep(out, original);
  // fill the result's disk: the next accepted step cannot be saved (nothing else writes there)
  (void)!::system(("dd if=/dev/zero of='" + out_dir + "/fill' bs=64k 2>/dev/null").c_str());
  int st = 0;
  const bool ended = waitFor([&] { return ::waitpid(pid, &st, WNOHANG) == pid; }, 300);
  if (!ended) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &st, 0);
  }
  const std::string err = readFile(w.dir + "/run.err").value_or("");
  ASSERT_TRUE(stepped) << err;
  ASSERT_TRUE(ended) << "the run went on with a full disk\n" << err;
  ASSERT_TRUE(WIFEXITED(st)) << err;
  EXPECT_EQ(WEXITSTATUS(st), 3) << err;
  std::string last = err.substr(0, err.size() - 1);
  last = last.substr(last.rfind('\n') + 1);
  EXPECT_EQ(last.rfind("wsreduce: stopped: cannot save the best program: ", 0), 0u) << err;
  EXPECT_NE(last.find("No space left on device"), std::string::npos) << err;
  EXPECT_NE(last.find("the best program so far is in " + out), std::string::npos) << err;
  auto best = readFile(out);
  ASSERT_TRUE(best);
  EXPECT_LT(countNonBlankLines(*best), countNonBlankLines(original));
  EXPECT_NE(best->find("tcgen05.fence"), std::string::npos) << "and it still passes the test";
}

// A wrong result from a program without the harness: its own failure report (the line it prints
// when its check fails) is part of the signature, so the reduction keeps the check that prints it
// instead of ending in `return 1`. The emulator judges (a host program, no GPU).
TEST(Reducer, AWrongResultWithItsOwnCheckKeepsTheCheckNotJustTheExitStatus) {
  Work w;
  std::string src = w.copy("reduce/host_wrong_own_check.cu");
  auto r = wsreduce({src, "--symptom", "wrong", "-j2", "--backend", "emu", "--passes",
                     "remove-stmt,remove-function,unwrap-branch"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("signature wrong:unspecified:exit=1:report=RESULT FAIL bad=16 of 128 "
                       "BADROWS 7-7"),
            std::string::npos)
      << r.err;
  auto min = readFile(minOf(src));
  ASSERT_TRUE(min);
  const std::string code = normalizeCode(*min);
  EXPECT_NE(min->find("\"RESULT FAIL bad="), std::string::npos) << "the report is kept:\n" << *min;
  EXPECT_NE(code.find("++bad"), std::string::npos) << "and the check that counts:\n" << *min;
  EXPECT_NE(code.find("ref[i]=weight(i)*a[i]+b[i]"), std::string::npos)
      << "and the reference it counts against:\n"
      << *min;
  EXPECT_EQ(code.find("unrelated_setup"), std::string::npos) << "the rest was reduced:\n" << *min;
}

// A program whose failure needs its command line (CUTLASS's examples take --m/--n/--k): the
// arguments after `--` go to every run of the original and the candidates, and the report says
// how to run the result. Without them the original passes and is refused for saying so.
TEST(Reducer, TheProgramsArgumentsGoToEveryRunAndIntoTheReport) {
  Work w;
  std::string src = w.copy("reduce/wrong_at_the_size_asked.cu");
  auto plain = wsreduce({src, "--symptom", "wrong", "-j2", "--backend", "emu"});
  EXPECT_EQ(plain.exit_code, 1) << plain.err;
  EXPECT_NE(plain.err.find("does not show the symptom wrong: its verdict is pass"),
            std::string::npos)
      << plain.err;
  auto r = wsreduce({src, "--symptom", "wrong", "-j2", "--backend", "emu", "--passes",
                     "remove-stmt,remove-function", "--", "--rows=100"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("report=RESULT FAIL bad=36 of 100"), std::string::npos) << r.err;
  auto min = readFile(minOf(src));
  ASSERT_TRUE(min);
  EXPECT_EQ(min->find("banner("), std::string::npos) << "the rest was reduced:\n" << *min;
  EXPECT_NE(min->find("--rows="), std::string::npos) << "the size still comes from argv:\n" << *min;
  auto md = readFile(fs::path(minOf(src)).replace_extension(".md").string());
  ASSERT_TRUE(md);
  EXPECT_NE(md->find("- run: `./a.out --rows=100`"), std::string::npos) << *md;
}

// The device goes away in the middle of a GPU reduction (here a file that stands for it, named to
// the program and to the device probe): the candidates' failures since are not theirs. The run
// stops with infra-error naming the device, the best program so far on disk, no verdict of a
// candidate judged without the device in the trace, and --resume goes on once the device is back.
TEST(Reducer, ADeviceLostMidwayStopsTheRunWithNoFalseVerdict) {
  Work w;
  std::string src = w.copy("reduce/device_loss.cu");
  const std::string original = *readFile(src);
  const std::string dev = w.dir + "/device";
  writeFileAtomic(dev, "");
  ::setenv("WSR_TEST_DEVICE", dev.c_str(), 1);
  ::setenv("WSREDUCE_DEVICE_PROBE", ("test -e " + dev).c_str(), 1);
  const std::vector<std::string> args = {src, "--symptom", "wrong", "-j2", "--backend", "gpu",
                                         "--passes", "remove-stmt,remove-function,cleanup"};
  pid_t pid = spawnWsreduce(args, w.dir + "/run.err");
  ASSERT_GT(pid, 0);
  const bool stepped = waitForFirstStep(minOf(src), original);
  ::unlink(dev.c_str());
  int st = 0;
  ::waitpid(pid, &st, 0);
  const std::string err = readFile(w.dir + "/run.err").value_or("");
  ASSERT_TRUE(stepped) << err;
  ASSERT_TRUE(WIFEXITED(st)) << err;
  EXPECT_NE(WEXITSTATUS(st), 0) << err;
  EXPECT_NE(err.find("infra-error/device-lost"), std::string::npos) << err;
  EXPECT_NE(err.find("the device probe `test -e " + dev + "`"), std::string::npos) << err;
  auto best = readFile(minOf(src));
  ASSERT_TRUE(best);
  EXPECT_LT(countNonBlankLines(*best), countNonBlankLines(original));
  EXPECT_NE(best->find("RESULT FAIL"), std::string::npos) << *best;
  auto trace = readFile(w.dir + "/device_loss.min.trace.jsonl");
  ASSERT_TRUE(trace);
  EXPECT_EQ(trace->find("exit=4"), std::string::npos)
      << "a candidate run without the device was judged as the program's failure:\n"
      << *trace;
  EXPECT_NE(trace->find("infra-error/device-lost"), std::string::npos);

  writeFileAtomic(dev, "");  // the device is back
  std::vector<std::string> again = args;
  again.push_back("--resume");
  auto r = wsreduce(again);
  ::unsetenv("WSR_TEST_DEVICE");
  ::unsetenv("WSREDUCE_DEVICE_PROBE");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto min = readFile(minOf(src));
  ASSERT_TRUE(min);
  EXPECT_NE(min->find("RESULT FAIL"), std::string::npos) << *min;
  EXPECT_EQ(min->find("scratch_total"), std::string::npos) << *min;
}

// A wrong result that says nothing of itself but its exit status gives the search nothing to
// keep: it is refused with one sentence that says what to add.
TEST(Reducer, AWrongResultThatSaysNothingButItsExitStatusIsRefusedWithWhatToAdd) {
  Work w;
  std::string src = w.dir + "/silent.cu";
  ASSERT_TRUE(writeFileAtomic(src, "#include <vector>\nint main() {\n  std::vector<int> v(3);\n"
                                   "  return v.size() == 3 ? 1 : 0;\n}\n"));
  auto r = wsreduce({src, "--symptom", "wrong", "-j2", "--backend", "emu"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("fails only by its exit status"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--match REGEX"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(minOf(src))) << "nothing was reduced";
}

// A judge that learned something since the earlier run can reject the program a resume would
// start from (the emulator's proxy-fence model did so to a K-loop result). The
// search then starts from the input, and says so.
TEST(Reducer, AResumedProgramThatNoLongerFailsTheSameWayIsLeftForTheInput) {
  Work w;
  std::string src = w.copy("reduce/host_hang.cu");
  std::string original = *readFile(src);
  std::string best = minOf(src);
  ASSERT_TRUE(writeFileAtomic(best, "int main() { return 0; }\n"));
  std::string state = best.substr(0, best.size() - 3) + ".state.json";
  ASSERT_TRUE(writeFileAtomic(state, "{\"original\": \"" + contentHash(original) + "\"}"));
  auto r =
      wsreduce({src, "--symptom", "hang", "--timeout", "1", "--no-retry", "-j2", "--backend", "gpu",
                "--resume", "--budget", "15", "--passes", "remove-stmt,remove-function"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("resuming from"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the program to resume from no longer fails the same way (pass"),
            std::string::npos)
      << r.err;
  auto fin = readFile(best);
  ASSERT_TRUE(fin);
  EXPECT_NE(fin->find("while (!ready)"), std::string::npos) << "reduced from the input:\n" << *fin;
}

// The emulator backend end to end, no GPU: a kernel hang (an mbarrier initialised for two
// arrivals, one arrives) reduced on the CPU emulator to the handoff that deadlocks.
TEST(Reducer, KernelHangIsReducedOnTheEmulator) {
  Work w;
  std::string src = w.copy("reduce/kernel_hang.cu");
  auto r = wsreduce({src, "--symptom", "hang", "--backend", "emu", "-j2", "--passes",
                     "remove-function,remove-stmt,unwrap-branch,unwrap-macro,remove-decl,inline-"
                     "call,simplify-expr,cleanup"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("signature hang:mbarrier:warpgroup0(partial,first) (backend emu)"),
            std::string::npos)
      << r.err;
  auto min = readFile(minOf(src));
  ASSERT_TRUE(min);
  EXPECT_NE(min->find("mbarrier.init"), std::string::npos) << *min;
  EXPECT_NE(min->find("mbarrier.try_wait"), std::string::npos) << *min;
  // the bug itself: fewer arrivals than the init count, not a barrier nobody arrives on
  EXPECT_NE(min->find("mbarrier.arrive"), std::string::npos) << *min;
  EXPECT_EQ(min->find("scale_kernel"), std::string::npos) << "the unrelated kernel is gone:\n"
                                                          << *min;
  EXPECT_EQ(min->find("check_scaled"), std::string::npos) << *min;
  EXPECT_LE(countNonBlankLines(*min), 30u) << *min;
  auto md = readFile(w.dir + "/kernel_hang.min.md");
  ASSERT_TRUE(md);
  EXPECT_NE(md->find("judged on: **emu**"), std::string::npos) << *md;
  EXPECT_NE(md->find("hang/mbarrier"), std::string::npos) << *md;
}

// Kept regions (reducer/keep.h): the markers pair up or the input is refused in one sentence,
// and a region is the same code through comment removal and reformatting, not through an edit.
TEST(Keep, RegionsPairUpAndCompareWithoutCommentsOrLayout) {
  std::vector<KeptRegion> k;
  std::string err;
  ASSERT_TRUE(findKeptRegions(
      "int x;\n// wsreduce: keep begin\nref[i] = a[i] * 2;  // two\n// wsreduce: keep end\n", &k,
      &err))
      << err;
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].first_line, 2);
  EXPECT_EQ(k[0].last_line, 4);
  EXPECT_EQ(k[0].code, "ref[i]=a[i]*2;");
  EXPECT_EQ(normalizeCode("unsigned  int /* c */ x = y ;"), "unsigned int x=y;");
  EXPECT_EQ(normalizeCode("s = \"a  // b\";"), "s=\"a  // b\";")
      << "string literals stay as written";
  EXPECT_EQ(lostKeptRegion(normalizeCode("f();\nref[i] =\n    a[i]*2;\n"), k), -1) << "reformatted";
  EXPECT_EQ(lostKeptRegion(normalizeCode("f();\nref[i] = a[i];\n"), k), 0) << "an operand dropped";
  EXPECT_FALSE(findKeptRegions("// wsreduce: keep end\n", &k, &err));
  EXPECT_EQ(err, "line 1 ends a kept region that was never begun (// wsreduce: keep begin)");
  EXPECT_FALSE(findKeptRegions("// wsreduce: keep begin\nx;\n", &k, &err));
  EXPECT_EQ(err, "the kept region begun at line 1 is never ended (// wsreduce: keep end)");
  EXPECT_FALSE(findKeptRegions("// wsreduce: keep begin\n// wsreduce: keep begin\n", &k, &err));
  EXPECT_FALSE(findKeptRegions(
      "// wsreduce: keep begin\n  // only a comment\n// wsreduce: keep end\n", &k, &err));
  EXPECT_EQ(err, "the kept region at lines 1-3 holds no code");
}

// A wrong result is judged against the program's own reference. Marked, the reference comes out
// of the reduction as it went in, and the candidates that changed it were skipped unjudged;
// unmarked, the same reduction does change it (its NaN guard, a no-op on this input, goes: the
// test can fail). The emulator judges: a host program, no GPU, and no nvcc run per candidate.
// Resumed from the finished result, whose harness header is inlined, the search gets the header
// back as an include, and no pass edits the judge's comparison.
TEST(Reducer, AKeptReferenceComesOutUnchangedAndUnmarkedItDoesNot) {
  const std::string ref_line = "ref[i]=weight(i)*a[i]+b[i];";
  const std::string guard_line = "if(ref[i]!=ref[i])ref[i]=0.f;";
  const std::vector<std::string> args = {
      "--symptom", "wrong", "-j2", "--backend", "emu", "--passes", "remove-stmt,remove-function"};
  auto reduce = [&](bool marked, std::string *min, std::string *md, std::string *trace) {
    Work w;
    std::string src = w.copy("reduce/host_wrong_kept.cu");
    if (!marked) {
      std::string t = *readFile(src);
      for (const char *m : {"// wsreduce: keep begin\n", "// wsreduce: keep end\n"})
        t.erase(t.find(m), std::string(m).size());
      writeFileAtomic(src, t);
    }
    std::vector<std::string> a = {src};
    a.insert(a.end(), args.begin(), args.end());
    auto r = wsreduce(a);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    if (marked)
      EXPECT_NE(r.err.find("lines 27-31 are kept as written"), std::string::npos) << r.err;
    *min = *readFile(minOf(src));
    *md = *readFile(w.dir + "/host_wrong_kept.min.md");
    *trace = *readFile(w.dir + "/host_wrong_kept.min.trace.jsonl");
    if (!marked) return;
    // again, from the finished result
    const std::string harness = normalizeCode(inlineHarness("#include \"wscheck.h\"\n"));
    ASSERT_NE(normalizeCode(*min).find(harness), std::string::npos)
        << "the result holds the harness inlined:\n"
        << *min;
    a.push_back("--resume");
    auto again = wsreduce(a);
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_NE(again.err.find("resuming from"), std::string::npos) << again.err;
    EXPECT_NE(again.err.find("is `#include \"wscheck.h\"` again"), std::string::npos) << again.err;
    auto fin = readFile(minOf(src));
    EXPECT_NE(normalizeCode(*fin).find(harness), std::string::npos)
        << "the comparison is wscheck.h's own:\n"
        << *fin;
  };
  std::string min, md, trace;
  reduce(true, &min, &md, &trace);
  EXPECT_NE(normalizeCode(min).find(ref_line), std::string::npos) << min;
  EXPECT_NE(normalizeCode(min).find(guard_line), std::string::npos) << min;
  EXPECT_NE(normalizeCode(min).find("wscheck::compare(out.data(),ref.data(),R,C,1e-4,1e-4,\"C\");"),
            std::string::npos)
      << min;
  EXPECT_EQ(min.find("unrelated_setup"), std::string::npos) << "the rest was reduced:\n" << min;
  EXPECT_NE(trace.find("kept-region-changed"), std::string::npos)
      << "candidates that changed it were offered";
  EXPECT_NE(md.find("Kept as written"), std::string::npos) << md;
  // the report gives the program's own size too: the original includes the header, the result
  // inlines it
  const std::string plain = uninlineHarness(min);
  EXPECT_LT(countNonBlankLines(plain), countNonBlankLines(min));
  EXPECT_NE(
      md.find(
          "Without the inlined wscheck.h (as `#include \"wscheck.h\"`, as the original has it): " +
          std::to_string(countNonBlankLines(plain)) + " lines, "),
      std::string::npos)
      << md;
  reduce(false, &min, &md, &trace);
  EXPECT_NE(normalizeCode(min).find(ref_line), std::string::npos) << min;
  EXPECT_EQ(normalizeCode(min).find(guard_line), std::string::npos)
      << "unmarked, the reference was reduced too:\n"
      << min;
}

namespace {
// The report of a reduction confirmed on the GPU (--confirm gpu), from verdicts as wsreduce
// gathers them: the emulator's of the result, the GPU's of the result and of the original.
std::string confirmedReport(const std::string &dir, const std::string &emu,
                            const std::string &gpu_result, const std::string &gpu_original) {
  std::string path = dir + "/k.min.cu";
  writeFileAtomic(
      path, "__global__ void k() {}\nint main() { k<<<1, 1>>>(); cudaDeviceSynchronize(); }\n");
  ReportInput in;
  in.original_path = dir + "/k.cu";
  in.reduced_path = path;
  in.reduced_text = *readFile(path);
  in.original_text = in.reduced_text;
  in.command = "wsreduce k.cu --symptom " + emu + " --backend emu --confirm gpu";
  auto v = [](const std::string &symptom) {
    Verdict x;
    x.symptom = symptom;
    x.detail = symptom;
    x.signature = symptom;
    return x;
  };
  in.original = in.reduced = v(emu);
  in.backend = "emu";
  in.confirmed = v(gpu_result);
  in.confirmed_original = v(gpu_original);
  return writeReport(in);
}
}  // namespace

// --confirm gpu judges the original on the GPU too, and the report compares the result's GPU
// verdict with it: the missing proxy fence passes on the H200 before and after its reduction,
// which is the bug being latent there, not the reduction losing it; a result the
// GPU judges otherwise than the original is said to have changed what the GPU shows.
TEST(Report, TheResultsGpuVerdictIsComparedWithTheOriginals) {
  Work w;
  std::string latent = confirmedReport(w.dir, "wrong", "pass", "pass");
  EXPECT_NE(latent.find("- the original on the GPU: `pass`"), std::string::npos) << latent;
  EXPECT_NE(latent.find("the bug is latent"), std::string::npos) << latent;
  EXPECT_EQ(latent.find("changed what the GPU shows"), std::string::npos) << latent;
  std::string changed = confirmedReport(w.dir, "wrong", "pass", "wrong");
  EXPECT_NE(
      changed.find("**the reduction changed what the GPU shows**: the original is `wrong` there"),
      std::string::npos)
      << changed;
  EXPECT_EQ(changed.find("latent"), std::string::npos) << changed;
  std::string same = confirmedReport(w.dir, "hang", "hang", "hang");
  EXPECT_NE(same.find("(the same class)"), std::string::npos) << same;
  EXPECT_EQ(same.find("latent"), std::string::npos) << same;
  EXPECT_EQ(same.find("changed what"), std::string::npos) << same;
}
