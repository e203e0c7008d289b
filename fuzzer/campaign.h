// A campaign: every (kernel, injector, site) mutant planned into the store, then judged by
// the oracle in fresh processes, -j at a time, compiles on the CPU and runs on a pool of GPU
// slots; verdicts written one transaction per mutant, so killing it loses at most the
// mutants in flight and the same command resumes. See docs/design.md, "Fuzzer rules".
#pragma once

#include "inject.h"
#include "oracle.h"
#include "store.h"

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <map>
#include <string>
#include <vector>

namespace wsr::fuzz {

struct CampaignOptions {
  std::vector<std::string> kernels;    // .cu files or directories of them
  std::vector<std::string> injectors;  // names; empty = all
  int repeat = 3;
  int jobs = 1;
  std::string db;
  int shard_i = 0, shard_n = 1;
  std::vector<std::string> gpus;  // CUDA_VISIBLE_DEVICES per device; empty: one slot, env as is
  // Runs on one GPU at once (its slots): hangs end by exit under the watchdog, so several share a
  // GPU without a trap's teardown (wsreduce --runs-per-gpu, the same measurement).
  int runs_per_gpu = 4;
  bool reduce = false;
  int reduce_jobs = 0;         // candidates at once per reduction (0 = jobs)
  double reduce_budget_s = 0;  // wall clock per reduction (0 = none)
  std::string corpus_dir;      // empty: no corpus written
  bool retry_infra = false;    // judge infra-error verdicts again (e.g. on the GPU machine)
  bool sanitizer = true;       // the latent mutants' second look
  // How every mutant is built, run and judged (the oracle's flags, oracle/flags.h): nvcc and its
  // flags, -I, -D, the cache, the timeout, the backend with the emulator's build stage and
  // policies, the hang watchdog and its instrumenter. Each kernel adds its arch and folder.
  OracleOptions oracle;
  double slow_factor = 1.5;
  long max_mutants = 0;  // judge at most this many this session (0 = all)
  std::string command;   // recorded with the session
  // Where --reduce judges candidates ("": the campaign's backend). "emu" on a GPU campaign: the
  // reductions run on the emulator (CPU only, ~3x cheaper a candidate) and each reduced program is
  // then judged by the campaign's own oracle, which must see the same class.
  std::string reduce_backend;
  // Each mutant's timeout = clamp(10 x the reference kernel's median run, 2 s, timeout_s).
  bool calibrate = true;
  // One idle process per GPU slot holding a CUDA context open (oracle/keeper.h): a short run
  // there starts ~0.16 s sooner. Runs on the GPU backend only.
  bool keepers = true;
  // Each GPU run's process started ahead of its turn (GatedRun, oracle/process.h): it opens its
  // CUDA context while the slot's current run goes on. GPU backend only; --no-prestart turns it
  // off.
  bool prestart = true;
  // CUDA_DEVICE_MAX_CONNECTIONS for the GPU runs (0: the driver's default of 8; a value the
  // caller's environment already has wins). With 1, a run's context has one hardware queue
  // instead of 8: on the H200 a hung or trapped run ended in 0.49 s instead of 0.91, one GPU judged
  // 47.9 mutants/min instead of 29.2, two 81.9 instead of 43.8, with the same verdicts
  // (bench/results/2026-11-30-h200-session11/d). A program whose streams must overlap to finish
  // could then serialise: --max-connections 0 for such kernels.
  int max_connections = 1;
};

// The variables the campaign adds to every GPU run's environment.
std::map<std::string, std::string> campaignRunEnv(const CampaignOptions &o);

// "i/N" -> (i, N) with 0 <= i < N.
std::optional<std::pair<int, int>> parseShard(const std::string &s);
// "N" -> "0".."N-1"; "a,b,c" -> that list (a fake list works: the runs only see the variable).
std::vector<std::string> parseGpus(const std::string &s);
// Deterministic split by mutant hash.
bool inShard(const std::string &hash, int i, int n);
std::string mutantHash(const std::string &arch, const std::vector<std::string> &defines,
                       const std::string &text);

// A pool of GPU slots: at most one run per slot at a time, `per_device` slots per device. With no
// devices it is one slot named "" (no CUDA_VISIBLE_DEVICES set): CPU-only judgments still run.
// Slots are held by index: several slots share a device's name.
class SlotPool {
 public:
  explicit SlotPool(const std::vector<std::string> &devices, int per_device = 1);
  size_t acquire();  // a free slot no waiter has reserved
  void release(size_t i);
  // Taking a turn ahead (GatedRun): reserve() blocks until some slot has no waiter and
  // makes the caller that slot's waiter; the caller starts its run's process on that device, then
  // take() blocks until the slot is free and holds it. At most one waiter per slot.
  size_t reserve();
  const std::string &name(size_t i) const { return slots_[i]; }  // its device
  void take(size_t i);
  size_t size() const { return slots_.size(); }
  size_t devices() const { return devices_; }
  int maxBusy() const { return max_busy_; }  // the most slots held at once so far

 private:
  std::vector<std::string> slots_;
  size_t devices_ = 1;
  std::vector<bool> busy_, waiter_;
  std::mutex m_;
  std::condition_variable cv_;
  int n_busy_ = 0, max_busy_ = 0;
};

// Runs `work(i)` for i in [0, n) on `jobs` threads (in order of i; stops early when
// `stop()` says so).
void parallelFor(size_t n, int jobs, const std::function<void(size_t)> &work,
                 const std::function<bool()> &stop);

// Lists the kernels a --kernels argument names (directories: their *.cu, sorted).
std::vector<std::string> kernelFiles(const std::vector<std::string> &args, std::string *err);

// One (kernel, kernel content, injector) the plan covers: a row of the store's `plans` table.
struct PlanKey {
  std::string kernel, kernel_hash, injector;
};
// What plan() records for `o`, known without parsing (each kernel's arch and content, the
// injectors for that arch): a shard whose store has every key has been planned in full.
std::vector<PlanKey> planKeys(const CampaignOptions &o, std::string *err);

// Plans the mutants (parsing each kernel unless the store already has its plan).
std::vector<MutantRow> plan(Store &store, const CampaignOptions &o,
                            const std::function<void(const std::string &)> &log, std::string *err);

// Whether the injected bug survived a reduction (the reducer's ground truth).
bool editRetained(const inject::InjectorInfo &inj, const MutantRow &m, const std::string &reduced,
                  std::string *how);

// The whole campaign; returns the process exit status (0 done, 2 bad input, 130 stopped).
int runCampaign(const CampaignOptions &o, const std::function<void(const std::string &)> &log);
void requestStop();  // async-signal-safe

}  // namespace wsr::fuzz
