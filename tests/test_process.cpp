// The run stage with real programs: a fresh process in its own group, killed with its
// whole tree at the timeout, output captured within a bound, a private working dir.
#include "classify.h"
#include "keeper.h"
#include "oracle.h"
#include "process.h"

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

using namespace wsr;
namespace fs = std::filesystem;

namespace {
std::string bin(const std::string &name) { return std::string(WSR_FIXTURE_BIN) + "/" + name; }

// Gone = no such process, or a zombie nobody has reaped yet (it runs nothing).
bool gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  auto stat = readFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  auto p = stat->rfind(')');
  return p != std::string::npos && p + 2 < stat->size() && (*stat)[p + 2] == 'Z';
}

pid_t readPid(const std::string &file) {
  for (int i = 0; i < 50; ++i) {
    if (auto t = readFile(file); t && !t->empty()) return (pid_t)std::stoi(*t);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}
}  // namespace

TEST(Process, ProgramThatNeverEndsIsKilledAtTheTimeoutAndCalledAHang) {
  RunOptions o;
  o.timeout_s = 1.0;
  auto r = runProcess({bin("forever")}, o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal, 0) << "our own SIGKILL is not the program's signal";
  EXPECT_LT(r.wall_ms, 1500) << "the verdict must come within timeout + 0.5 s";
  EXPECT_EQ(classifyRun(r, {}).detail, "hang/unknown");
}

// The reducer's speculative candidates: once the search no longer needs one, the thread that
// runs it raises its cancel flag and the program (with its whole group) dies within ~50 ms;
// a run asked for after the flag is up never starts.
TEST(Process, CancelFlagKillsTheRunSoonAndMarksItCancelled) {
  std::atomic<bool> cancel{false};
  std::thread raiser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel = true;
  });
  setThreadCancelFlag(&cancel);
  RunOptions o;
  o.timeout_s = 30;
  auto r = runProcess({bin("forever")}, o);
  const bool up_when_it_ended = cancel.load();
  auto again = runProcess({bin("forever")}, o);
  setThreadCancelFlag(nullptr);
  raiser.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_TRUE(r.timed_out)
      << "a cancelled run is no verdict: callers that cache skip timed-out runs";
  EXPECT_LT(r.wall_ms, 2000) << "killed soon after the flag, not at the 30 s timeout";
  // Measured from the event it bounds (the flag), not from before the spawn: on a loaded machine
  // the raiser's delay may run out before the child is even started.
  EXPECT_TRUE(up_when_it_ended) << "not before the flag went up";
  EXPECT_TRUE(again.cancelled);
  EXPECT_EQ(again.wall_ms, 0) << "started although the flag was already up";
  auto free_run = runProcess({bin("forever")}, RunOptions{.timeout_s = 0.3});
  EXPECT_FALSE(free_run.cancelled)
      << "the flag belongs to the thread that set it, and it was cleared";
}

// A run whose hang the watchdog already recorded is over: the oracle ends it when RunOptions::over
// says so, and the end is the oracle's (no signal, not a timeout), wherever the program would
// have gone on waiting. On the H200, a candidate whose own exit path waited 10 s after the trap
// held a slot for 10 s instead of 1.
TEST(Process, ARunTheWatchdogAlreadyNamedIsEndedWithoutItsTimeout) {
  RunOptions o;
  o.timeout_s = 30;
  const auto t0 = std::chrono::steady_clock::now();
  o.over = [t0] { return std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(400); };
  auto r = runProcess({bin("forever")}, o);
  EXPECT_TRUE(r.ended_after_watchdog);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.cancelled);
  EXPECT_EQ(r.signal, 0) << "the SIGKILL was ours";
  EXPECT_LT(r.wall_ms, 5000) << "ended soon after it was over, not at the 30 s timeout";
  EXPECT_GE(r.wall_ms, 350);
  RunOptions never;
  never.timeout_s = 0.5;
  never.over = [] { return false; };
  auto t = runProcess({bin("forever")}, never);
  EXPECT_TRUE(t.timed_out);
  EXPECT_FALSE(t.ended_after_watchdog);
}

// Ctrl-C: killAllRunning() kills every run in flight. What it killed comes back cancelled, and the
// verdict says so: never the program's hang or crash.
TEST(Process, ARunKilledByAnInterruptIsCancelledNotTheProgramsFailure) {
  std::atomic<bool> done{false};
  std::thread interrupter([&] {
    while (!done) {  // until the run is registered and killed, whatever the machine's load
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      killAllRunning();
    }
  });
  RunOptions o;
  o.timeout_s = 60;
  auto r = runProcess({bin("forever")}, o);
  done = true;
  interrupter.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_TRUE(r.timed_out) << "no verdict: callers that cache skip timed-out runs";
  EXPECT_EQ(r.signal, 0) << "the SIGKILL was ours";
  EXPECT_LT(r.wall_ms, 30000) << "killed by the interrupt, not at the timeout";
  BuildRecord b;
  b.ok = true;
  EXPECT_EQ(classify(b, {r}, {}).detail, "infra-error/cancelled");
}

// A helper that lives beside the runs (the GPU keeper): started without waiting, in its own
// group, and stopped (killed and reaped) on demand.
TEST(Process, DetachedHelperRunsUntilStoppedAndIsReaped) {
  std::string err;
  pid_t p = startDetached({bin("forever")}, {}, &err);
  ASSERT_GT(p, 0) << err;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(gone(p)) << "it should still run";
  EXPECT_EQ(::getpgid(p), p) << "in its own process group";
  stopDetached(p);
  EXPECT_TRUE(gone(p));
  EXPECT_LT(startDetached({"/no/such/program"}, {}, &err), 0);
  EXPECT_NE(err.find("not found"), std::string::npos) << err;
}

TEST(Process, GrandchildThatNeverEndsDiesWithTheHungProgram) {
  std::string dir = makeTempDir("wsr-test.");
  std::string pidfile = dir + "/grandchild.pid";
  RunOptions o;
  o.timeout_s = 1.0;
  auto r = runProcess({bin("grandchild"), pidfile, "hang"}, o);
  EXPECT_TRUE(r.timed_out);
  pid_t g = readPid(pidfile);
  ASSERT_GT(g, 0);
  for (int i = 0; i < 50 && !gone(g); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(gone(g)) << "grandchild " << g << " outlived the run";
  removeTree(dir);
}

TEST(Process, GrandchildLeftBehindByAnExitingProgramIsKilledAndDoesNotBlockTheRun) {
  std::string dir = makeTempDir("wsr-test.");
  std::string pidfile = dir + "/grandchild.pid";
  RunOptions o;
  o.timeout_s = 10.0;
  auto r = runProcess({bin("grandchild"), pidfile, "exit"}, o);
  EXPECT_FALSE(r.timed_out) << "the program exited; its leftover must not turn it into a hang";
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_LT(r.wall_ms, 3000);
  EXPECT_NE(r.out.find("parent exits"), std::string::npos);
  pid_t g = readPid(pidfile);
  ASSERT_GT(g, 0);
  for (int i = 0; i < 50 && !gone(g); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(gone(g));
  removeTree(dir);
}

TEST(Process, AbortIsCrashHost) {
  auto r = runProcess({bin("abort")}, {});
  EXPECT_EQ(r.signal, SIGABRT);
  auto v = classifyRun(r, {});
  EXPECT_EQ(v.detail, "crash/host");
  EXPECT_EQ(v.signature, "crash:host:SIGABRT");
  EXPECT_NE(r.err.find("host assertion failed"), std::string::npos);
}

TEST(Process, SegfaultIsCrashHost) {
  auto r = runProcess({bin("segv")}, {});
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(classifyRun(r, {}).signature, "crash:host:SIGSEGV");
}

TEST(Process, HarnessStripesAreWrongRowStripe) {
  auto r = runProcess({bin("stripes")}, {});
  EXPECT_EQ(r.exit_code, 1);
  auto v = classifyRun(r, {});
  EXPECT_EQ(v.detail, "wrong/row-stripe");
  ASSERT_FALSE(v.evidence.empty());
  EXPECT_NE(v.evidence[0].find("badrows=64-127,192-255"), std::string::npos) << v.evidence[0];
}

TEST(Process, HandWrittenFailIsWrongUnspecified) {
  auto r = runProcess({bin("failexit")}, {});
  EXPECT_EQ(classifyRun(r, {}).detail, "wrong/unspecified");
}

TEST(Process, OutputOverTheBoundIsTruncatedNotHeld) {
  RunOptions o;
  o.capture_bytes = 64 * 1024;
  auto r = runProcess({bin("bigout"), "64"}, o);  // 64 MiB of output
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.out_truncated);
  EXPECT_EQ(r.out_bytes, 11 + 64ll * 1024 * 1023 + 10) << "every byte is counted";
  EXPECT_LT(r.out.size(), 64u * 1024 + 200);
  EXPECT_EQ(r.out.rfind("FIRST LINE", 0), 0u) << "the head is kept";
  EXPECT_NE(r.out.find("LAST LINE"), std::string::npos) << "the tail is kept";
  EXPECT_NE(r.out.find("bytes of output not kept"), std::string::npos);
}

TEST(Process, EnvironmentIsControlledAndTheWorkdirIsPrivateAndRemoved) {
  RunOptions o;
  o.env_set["CUDA_VISIBLE_DEVICES"] = "3";
  auto r = runProcess({bin("envdump"), "CUDA_VISIBLE_DEVICES"}, o);
  EXPECT_NE(r.out.find("value=3\n"), std::string::npos) << r.out;
  auto p = r.out.find("cwd=");
  ASSERT_NE(p, std::string::npos);
  std::string cwd = r.out.substr(p + 4, r.out.find('\n', p) - p - 4);
  EXPECT_NE(cwd, fs::current_path().string());
  EXPECT_FALSE(fs::exists(cwd)) << "private working dir " << cwd << " was left behind";

  RunOptions u;
  u.env_unset.push_back("HOME");
  auto r2 = runProcess({bin("envdump"), "HOME"}, u);
  EXPECT_NE(r2.out.find("value=(unset)"), std::string::npos);
}

TEST(Process, MissingProgramIsASpawnFailureAndInfra) {
  auto r = runProcess({"/nonexistent/program"}, {});
  EXPECT_TRUE(r.spawn_failed);
  EXPECT_EQ(classifyRun(r, {}).symptom, "infra-error");
}

TEST(Process, AtomicWriteReplacesWholeFiles) {
  std::string dir = makeTempDir("wsr-test.");
  std::string f = dir + "/best.cu";
  ASSERT_TRUE(writeFileAtomic(f, "one"));
  ASSERT_TRUE(writeFileAtomic(f, "two"));
  EXPECT_EQ(*readFile(f), "two");
  int files = 0;
  for (auto &e : fs::directory_iterator(dir)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1) << "no temp file is left next to it";
  std::string err;
  EXPECT_FALSE(writeFileAtomic("/nonexistent-dir/x.cu", "x", &err));
  EXPECT_FALSE(err.empty());
  removeTree(dir);
}

// A run started ahead of its turn. Its process exists at once but the program does not
// start until run() opens the gate; the program's own children are not gated; a run never opened
// never runs its program; the wall time counts from the gate.
TEST(Process, GatedRunWaitsAtTheGateUntilItsTurn) {
  std::string err;
  std::string gate = gateLibrary(&err);
  ASSERT_FALSE(gate.empty()) << err;
  std::string dir = makeTempDir("wsgate-test.");
  RunOptions o;
  o.gate_library = gate;
  o.timeout_s = 10;
  std::string mark = dir + "/ran";
  GatedRun g({"/bin/sh", "-c",
              "echo yes > " + mark + "; echo \"gate=[$WSR_GATE_FD]\"; sh -c 'echo child'"},
             o);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_FALSE(fs::exists(mark)) << "the program ran before its gate opened";
  auto r = g.run();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(mark));
  EXPECT_NE(r.out.find("gate=[]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("child"), std::string::npos)
      << "a child of the program is not held at a gate";
  EXPECT_LT(r.wall_ms, 300) << "the time at the gate is not the run's";
  {
    GatedRun never({"/bin/sh", "-c", "echo yes > " + dir + "/never"}, o);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(fs::exists(dir + "/never")) << "a run that was never opened ran its program";
  removeTree(dir);
}

// judgeBuilt with a gate: the first run's process is started before wait_turn (the slot's turn)
// and its program runs only after it; every repeat runs once.
TEST(Process, JudgeBuiltOpensTheFirstGateAfterTheTurn) {
  std::string err;
  std::string gate = gateLibrary(&err);
  ASSERT_FALSE(gate.empty()) << err;
  std::string dir = makeTempDir("wsgate-test.");
  std::string log = dir + "/runs";
  BuildRecord b;
  b.ok = true;
  b.binary = "/bin/sh";
  OracleOptions oo;
  oo.program_args = {"-c", "echo run >> " + log};
  oo.repeat = 3;
  oo.run.gate_library = gate;
  std::string at_turn = "unset";
  oo.wait_turn = [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    at_turn = readFile(log).value_or("");
  };
  Verdict v = judgeBuilt(b, oo);
  EXPECT_EQ(at_turn, "") << "a run started before its turn";
  EXPECT_EQ(readFile(log).value_or(""), "run\nrun\nrun\n");
  EXPECT_EQ(v.symptom, "pass") << v.detail;
  removeTree(dir);
}
