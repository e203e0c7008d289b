// The run stage: one program, one fresh process (docs/design.md "Oracle rules").
// Own process group; on timeout, and again when the program exits, SIGKILL goes to
// the whole group so no grandchild outlives the run; stdout/stderr are captured up to a
// bound (head and tail kept, the middle counted); no shell in between.
#pragma once

#include <atomic>
#include <sys/types.h>

#include "verdict.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wsr {

struct RunOptions {
  double timeout_s = 10;
  size_t capture_bytes = 1 << 20;  // per stream; half head, half tail
  std::string workdir;             // empty: a private temp dir, removed afterwards
  // TMPDIR is the working directory: a compiler's temp files stay there, and go with a private
  // one even when the compiler is killed (a cancelled candidate's g++ had left 1000 in /tmp).
  bool tmpdir_in_workdir = false;
  std::map<std::string, std::string> env_set;  // added to / overriding the parent's environment
  std::vector<std::string> env_unset;
  // Called with the program's pid when the timeout fires, before the SIGKILL (forensics, e.g.
  // cuda-gdb attaching to the hung process); what it returns goes to RunRecord::forensics.
  std::function<std::string(int pid)> on_timeout;
  // GatedRun only: the gate library (gateLibrary() in keeper.h), preloaded into the program.
  // Empty: a GatedRun starts the program as runProcess would, at once.
  std::string gate_library;
  // Polled every 50 ms while the program runs: once it says the run is over (the hang watchdog
  // fired and its records are in), the program's group is killed and the run comes back with
  // RunRecord::ended_after_watchdog. A program whose own exit path waits (a host-side timeout
  // loop, a driver slow to tear down a trapped context while other contexts run) then costs the
  // watchdog's bound, not its own timeout.
  std::function<bool()> over;
};

// Runs `argv[0]` (a path, or a name looked up in PATH) with the rest as arguments.
RunRecord runProcess(const std::vector<std::string> &argv, const RunOptions &opt);

// A run started ahead of its turn. The program is spawned at once with the gate library
// preloaded: before main it opens its CUDA context (the 0.2-0.5 s that the driver serialises across
// the whole host) and then blocks on the gate. run() opens the gate and supervises the program as
// runProcess does; its timeout and wall time count from the gate. So the next run's context is
// opened while the current run is still on the GPU. Destroyed without run(): killed and reaped,
// its directory removed. The gate is fd 3 in the program and its name leaves the environment
// before main, so the program's own children start normally.
class GatedRun {
 public:
  GatedRun(const std::vector<std::string> &argv, const RunOptions &opt);
  GatedRun(const GatedRun &) = delete;
  GatedRun &operator=(const GatedRun &) = delete;
  ~GatedRun();
  RunRecord run();  // at most once

 private:
  struct Impl;
  std::unique_ptr<Impl> p_;
};

// Cancellation of the runs one thread starts (the reducer's speculative candidates): while the
// flag set here for the calling thread is true, every runProcess that thread calls is killed
// within ~50 ms (or not started) and comes back with RunRecord::cancelled (and timed_out) set.
void setThreadCancelFlag(const std::atomic<bool> *flag);
bool threadCancelled();

// The calling thread's place in the queue for a shared resource (a GPU's run slot): lower goes
// first. The reducer numbers its candidates in the order the search needs their verdicts, and
// its speculative ones after all of those (reducer/tester.h, TurnGate).
void setThreadTurn(unsigned long long turn);
unsigned long long threadTurn();

// Starts `argv` in its own process group and returns at once (its pid, or -1 with `err` set):
// a helper that lives as long as this process needs it (a GPU keeper). It is killed by
// killAllRunning() on Ctrl-C, and with SIGKILL if this process dies first. stdout/stderr go to
// /dev/null. stopDetached() kills its group and reaps it.
pid_t startDetached(const std::vector<std::string> &argv,
                    const std::map<std::string, std::string> &env_set, std::string *err);
void stopDetached(pid_t pid);

// Kills (SIGKILL) the process group of every run still in progress in this process:
// what an interrupted reducer calls so that no candidate outlives it. Signal-safe.
void killAllRunning();
// How many times killAllRunning() was called: a run or build that ended while the count moved
// was killed by the tool (it comes back cancelled), not by the program. Async-signal-safe.
unsigned interruptCount();

// The absolute path of `name` in PATH, or nullopt.
std::optional<std::string> findInPath(const std::string &name);

// A private directory under $TMPDIR (or /tmp), created now; removeTree() removes it.
std::string makeTempDir(const std::string &prefix);

// Every temporary file of a tool's run lives in one folder, <TMPDIR>/wsreduce-run.<pid>.<start>
// (<start>: the process's start time, so that a reused pid is not taken for the owner). While it
// lives, TMPDIR points there, for makeTempDir and for every child (nvcc's own temporary files
// too). The folder goes when the object does; one a SIGKILL left behind goes at the start and at
// the end of the next run of any tool, which remove the folders whose owner is dead.
class RunTempRoot {
 public:
  RunTempRoot();
  ~RunTempRoot();
  RunTempRoot(const RunTempRoot &) = delete;
  RunTempRoot &operator=(const RunTempRoot &) = delete;
  const std::string &path() const { return path_; }  // empty when it could not be made

 private:
  std::string path_, old_tmpdir_, base_;
  bool had_tmpdir_ = false;
};
void removeTree(const std::string &path);

// Writes `data` to `path` atomically (temp file in the same directory, then rename).
bool writeFileAtomic(const std::string &path, const std::string &data, std::string *err = nullptr);
std::optional<std::string> readFile(const std::string &path);

}  // namespace wsr
