// Interestingness: the one contract between the search and the world (C-Reduce's). A
// candidate is interesting when the oracle's verdict has the requested symptom and the
// original's signature (no slippage to another bug), or when the user's --test script
// exits 0. Results are cached by the candidate's content hash.
#pragma once

#include "judge.h"
#include "keep.h"
#include "device_watch.h"
#include "oracle.h"
#include "parse.h"
#include "parse_check.h"

#include <atomic>
#include <future>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace wsr {

// A resource that `width` holders share (one GPU's run slots): among the threads waiting, the
// lowest turn (process.h, threadTurn) enters first, and equal turns in the order they came. The
// search numbers candidates in the order it needs their verdicts and its speculative ones after
// them, so when the GPU is what everyone waits for, the verdict that decides the next step is
// not queued behind one that may be thrown away.
class TurnGate {
 public:
  explicit TurnGate(int width) : width_(width) {}
  // Waits for this thread's turn and enters; false when the thread's cancel flag went up first
  // (then it has not entered).
  bool enter();
  void leave();
  size_t waiting();  // threads waiting now

 private:
  std::mutex m_;
  std::condition_variable cv_;
  const int width_;
  int inside_ = 0;
  unsigned long long arrivals_ = 0;
  std::set<std::pair<unsigned long long, unsigned long long>> waiting_;  // (turn, arrival)
};

struct TestOptions {
  std::string symptom;    // pass|compile-error|hang|crash|wrong|slow|flaky (oracle mode)
  std::string signature;  // the original's; empty with any_signature
  bool any_signature = false;
  std::string test_script;  // C-Reduce-style script instead of the oracle
  double script_timeout_s = 300;
  bool parse_check = true;  // skip candidates Clang cannot parse, before any nvcc run
  OracleOptions oracle;
  ParseOptions parse;
  std::string original_path;  // candidates keep its file name; its dir stays on -I
  // GPU backend: CUDA_VISIBLE_DEVICES values to spread the candidates over. Each judged
  // candidate runs on the one with the fewest candidates on it at that moment; empty: the
  // environment's device, as before.
  std::vector<std::string> gpus;
  // GPU backend, on a machine with a GPU: at most this many candidates run on one GPU at a time
  // (0: no limit); builds are not limited. Runs of hung candidates on one H200 gave 1.0 judgments
  // a second one at a time and 1.1 sixteen at a time, with a median judgment of 1.0 s against
  // 11.6 s (bench/results/2026-12-04-h200-concurrency/): more runs at once only wait longer.
  int runs_per_gpu = 1;
  // Emu backend: an interesting candidate is judged again with its locals zeroed instead of the
  // pattern, and is interesting only when that verdict is the same. On the H200 a
  // reduction of gemm_k_loop_short removed every wgmma: the accumulator was never written, the
  // pattern made the product "wrong/row-stripe" on the emulator, and the GPU's zero registers
  // made it pass. Off when the original's own verdict differs with zeroed locals.
  bool locals_check = true;
  // Emu backend, when the original's failure says proxy-unfenced (TMA/bulk stores or wgmmas read
  // shared bytes the async proxy had not seen): an interesting candidate is judged again with a
  // coherent proxy (WSEMU_PROXY=coherent: as if every fence.proxy.async were there) and is
  // interesting only when that verdict is the original's own with a coherent proxy (a pass: the
  // fence fixes it). The "fix makes it pass" judgement: a reduction of the missing proxy fence on
  // the CPU had kept the stale store and let the stored values go unset, and on the
  // H200 that program was wrong for the unset values, not the fence.
  bool proxy_check = true;
  // Code no candidate may change (keep.h: `// wsreduce: keep begin` ... `end` in the original);
  // a candidate that changed it is skipped before the parse check, unjudged.
  std::vector<KeptRegion> keep;
};

// Kernel launches in the program's host code (<<<>>>, cudaLaunchKernel*, cuLaunchKernel*).
int kernelLaunches(const ParsedSource &parsed);

class Tester : public Judge {
 public:
  explicit Tester(TestOptions o);
  TestResult test(const std::string &text) override;
  // The search lists its sites from parses that share the parse checks' preambles.
  std::unique_ptr<SiteParser> siteParser() const override;
  void warm(const std::string &text) override { checker_->warm(text); }
  JudgeCounts counts() const override { return {tests_, hits_, parse_skips_, cancelled_}; }
  // Judges a program with the oracle (or the script) without the parse check or cache: how the
  // original is classified before the search starts, and the result after the finish. On the
  // emulator nvcc builds it first, when nvcc is here, as the judge of compile errors.
  Verdict judgeOriginal(const std::string &text, TestResult *as_result = nullptr);
  void remember(const std::string &hash, const TestResult &r);  // for --resume
  const TestOptions &options() const { return opt_; }
  OracleOptions &oracleOptions() {
    return opt_.oracle;
  }  // e.g. the calibrated timeout, once the original ran
  // The parse check is strict about missing returns unless the original itself has one. Also
  // counts the original's kernel launches: when it has any, a candidate with none is not
  // interesting (except for compile errors and --test scripts).
  void calibrateParseCheck(const std::string &original);
  // The shared preamble of `text`'s leading #include lines, built now for every side (the search
  // calls it after an accepted step took an #include line).
  int warmParseChecks(const std::string &text) {
    return checker_->warm(text);
  }  // ParseCheckerPool::warm
  // The original's signature, once judged: what every candidate must keep.
  void setSignature(const std::string &sig) { opt_.signature = sig; }
  // After judgeOriginal: why the zeroed-locals check is off for this reduction (empty: it is on,
  // or it does not apply).
  const std::string &localsCheckOff() const { return locals_off_; }
  // After judgeOriginal: the original's verdict with a coherent async proxy, when the proxy check
  // applies (TestOptions::proxy_check); what every interesting candidate's must then be.
  const std::optional<Verdict> &coherentProxyVerdict() const { return proxy_cf_; }
  // From the original's verdict, when every run of it finished on its own (failed fast, or the
  // watchdog named its hang): a candidate killed at the timeout is not retried (unless `retry`),
  // and with `calibrate` the candidates' timeout becomes clamp(10 x its longest run, 2 s, cap_s).
  // Returns the log lines saying what was set (wsreduce prints them, wsfuzz keeps quiet).
  std::vector<std::string> tuneFromOriginal(const Verdict &original, double cap_s, bool calibrate,
                                            bool retry);
  long tests() const { return tests_; }
  long cacheHits() const { return hits_; }
  long parseSkips() const { return parse_skips_; }
  long cancelled() const { return cancelled_; }
  long keepSkips() const { return keep_skips_; }  // candidates that changed a kept region

 private:
  TestResult run(const std::string &text, bool check_parse);
  // With TestOptions::gpus on the GPU backend: the least busy GPU, put into oo's environment and
  // counted until releaseGpu; -1 (oo unchanged) otherwise.
  int takeGpu(OracleOptions *oo);
  void releaseGpu(int g);
  TestOptions opt_;
  std::unique_ptr<ParseCheckerPool> checker_;
  std::mutex m_;
  std::string locals_off_;
  // `v`'s program judged again by `judgeWith`, built with zeroed locals
  // (TestOptions::locals_check); nullopt when the check does not apply (off, a script, not the
  // emulator's verdict).
  std::optional<Verdict> withZeroedLocals(
      const Verdict &v, OracleOptions oo,
      const std::function<Verdict(const OracleOptions &)> &judgeWith) const;
  // `v`'s program judged again with WSEMU_PROXY=coherent; nullopt when the proxy check does not
  // apply (off, a script, not the emulator's verdict, or the original's failure is not
  // proxy-unfenced).
  std::optional<Verdict> withCoherentProxy(
      const Verdict &v, OracleOptions oo,
      const std::function<Verdict(const OracleOptions &)> &judgeWith) const;
  std::optional<Verdict> proxy_cf_;
  static bool sameFailure(const Verdict &a, const Verdict &b);  // the same symptom and signature
  std::unordered_map<std::string, TestResult> cache_;
  // Texts being judged now: a second test of the same text (the search's lookahead judged it
  // first) waits for that verdict instead of judging it again.
  std::unordered_map<std::string, std::shared_future<TestResult>> inflight_;
  std::atomic<long> tests_{0}, hits_{0}, parse_skips_{0}, cancelled_{0}, keep_skips_{0};
  int original_launches_ = 0;
  std::mutex gpu_m_;
  std::vector<int> gpu_load_;  // candidates running on each of opt_.gpus
  // TestOptions::runs_per_gpu: the runs on each GPU now (index g of opt_.gpus, or 0 for the one).
  // `b` already built; returns the verdict of its runs, judged when a run slot is free.
  Verdict runInTurn(const BuildRecord &b, const OracleOptions &oo, int g);
  std::mutex run_m_;
  std::vector<std::unique_ptr<TurnGate>> gates_;  // one per GPU, made on first use
  // On the GPU backend, armed by judgeOriginal when the device is there: a candidate's failure
  // that the original never showed may be the device going away, not the candidate.
  DeviceWatch device_;

 public:
  // The device the candidates ran on is gone (every verdict since is infra-error/device-lost).
  bool deviceLost() const { return device_.lost(); }
  std::string deviceLostWhy() const { return device_.why(); }
};

}  // namespace wsr
