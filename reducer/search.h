// The search: delta debugging over each pass's sites, passes in phases to a fixpoint.
// It knows sites, not what they mean (the llvm-reduce split): a pass lists, the search
// picks, the judge (judge.h) judges. The best program so far is on disk after every accepted
// step.
#pragma once

#include "judge.h"
#include "pass.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace wsr {

// The order in which the search runs the passes, as data (C-Vise's pass groups): which passes,
// in which of the search's four moves.
struct Schedule {
  // Once, before anything else, every site in one candidate; these passes read the text alone
  // (Phase::Invisible: what they take changes nothing a compiler sees).
  std::vector<const PassInfo *> first;
  // Rounds to a fixpoint, round r reaching level r of each pass's hierarchical sites.
  std::vector<const PassInfo *> rounds;
  // After a weak round (under a tenth of the lines taken) or at the fixpoint; another round of
  // `rounds` when they took anything.
  std::vector<const PassInfo *> between;
  // After the fixpoint, at every depth; the rounds again from the top when they took anything.
  std::vector<const PassInfo *> last;

  // The registry's (passes.def), by phase: Invisible first; Shape then Structure in rounds;
  // Expression between; Fallback, Cosmetic and Invisible again last. The build-only passes
  // (PassInfo::build_only) only for a symptom the build alone decides (`build_symptom`).
  static Schedule standard(bool build_symptom = false);
  bool is_standard = false;  // made by standard() (not wsreduce --passes)
  // These passes, in this order, in rounds (wsreduce --passes).
  static Schedule only(std::vector<const PassInfo *> passes);
};

struct SearchOptions {
  Schedule schedule = Schedule::standard();
  int jobs = 1;            // candidates judged at once
  std::string best_path;   // written atomically after every accepted step
  std::string trace_path;  // JSON lines, one per test (appended)
  int max_consecutive_infra = 3;
  int max_rounds = 40;  // full passes over the schedule (round r reaches level r)
  // How the plain sites of one level are searched: "ddmin" (chunks halving, Zeller) or "pdd"
  // (probabilistic delta debugging, Wang et al. 2021: each site has a probability of being needed;
  // the subset with the largest expected gain is tried next, and a failed try raises the
  // probabilities of what it held). Measured side by side in bench/cpu/cvise_vs_wsreduce.sh.
  std::string algorithm = "ddmin";
  // Shape passes to completion before any structure pass (the first round of every knob only,
  // when false: the rest after the structure passes' first round).
  bool full_shape_first = false;
  // The first round runs the shape passes after the structure passes instead of before them.
  // A smaller shape pays where a candidate's time is its run (the emulator's runs of the full
  // problem); where the build costs more than the run (a GPU run of under a second after 3 s of
  // nvcc), the shape's tens of tests took no line in the first minute of a 240-s reduction on
  // the H200, and the deletions waited for them (bench/results/2026-12-04-h200-named-barriers).
  bool shape_after_structure = false;
  // Wall-clock seconds for the whole search (0: none); when spent it stops as an interrupt does,
  // with the best program so far (wsfuzz --reduce-budget: a retention sample in bounded time).
  double budget_s = 0;
  // Slots that the current pass leaves idle judge the first candidates of the next passes on the
  // same program (their verdicts wait in the tester's cache; a lookahead still running when the
  // pass asks for its text is waited for, not judged twice). An accepted step cancels them.
  bool lookahead = false;
  // The tools' default (wsreduce --lookahead auto, wsfuzz --reduce): on where the slots wait on
  // the search (the H200's -j16 was 37-43% busy), off where they are the bottleneck
  // (-j2 on 2 cores: the lookahead's cancelled work cost more than its hits,
  // bench/results/2026-11-30-cpu-s13).
  static bool lookaheadByDefault(int jobs) { return jobs >= 8; }
  // Once a stream has its winner, the candidates still running after it in order are given a
  // third of the winner's judgment time (at most 2 s) before they are cancelled: they started
  // with it, finish about when it did, and those that are interesting too are taken together in
  // the next step instead of one round trip each. The slots that finish meanwhile wait, so it
  // pays only where several candidates of a wave are interesting and their verdicts come at
  // once (wsreduce --gather). Off: on one GPU, which runs one candidate at a time, it took no
  // more than without (bench/results/2026-12-05-h100-duel-speed).
  bool gather = false;
};

// N worker threads that judge candidates (the compiles and runs are child processes; the
// threads mostly wait on them). A task that was cancelled before it started returns at once.
class WorkerPool {
 public:
  explicit WorkerPool(int n);
  ~WorkerPool();  // waits for the tasks in hand; the queued ones are dropped
  void post(std::function<void()> task);

 private:
  std::vector<std::thread> threads_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> q_;
  bool stop_ = false;
};

struct SearchStats {
  long tests = 0, cache_hits = 0, parse_skips = 0, accepted = 0, cancelled = 0;
  unsigned start_lines = 0, start_tokens = 0, lines = 0, tokens = 0;
  std::string pass;
  double elapsed_s = 0;
  double busy_s = 0;   // summed wall time of the candidates judged (not cached, not cancelled)
  long lookahead = 0;  // candidates of later passes judged in idle slots (SearchOptions::lookahead)
  int jobs = 1;
  // The share of the slots' time spent judging: what is left is the search's own serial work
  // (parsing the new best, listing sites) and passes too small to fill the slots.
  double slotUse() const { return elapsed_s > 0 ? busy_s / (elapsed_s * jobs) : 0; }
};

// Stops the search: Ctrl-C, or too many infra errors in a row (the message says which).
struct SearchStop {
  std::string reason;
  bool budget = false;  // the search's budget_s was spent (the best so far is a result)
};

class Search {
 public:
  Search(Judge &judge, SearchOptions o,
         std::function<void(const SearchStats &, const std::string &event)> progress);
  // Reduces `start` (already known interesting). Returns the smallest interesting text.
  // Throws SearchStop when it must stop early; best() then holds the best so far.
  std::string run(const std::string &start);
  const std::string &best() const { return best_; }
  const SearchStats &stats() const { return stats_; }
  static void requestStop();  // async-signal-safe

 private:
  bool runPass(const PassInfo &p, int cap, bool *deeper);
  bool ddminLevel(const PassInfo &p, int level);
  bool pddLevel(const PassInfo &p, int level);
  std::vector<PassSite> plainSites(const PassInfo &p, int level);  // ungrouped sites of one level
  // `rounds`: how many rounds of judging every open place at once before returning (0: until
  // none is open); `*cut` says whether it returned with places still open.
  bool groups(const PassInfo &p, int rounds = 0, bool *cut = nullptr);
  std::vector<PassSite> enumerate(const PassInfo &p);
  // The streaming judge: candidates come from `next` (nullopt: no more) in order and are judged
  // `jobs` at a time; a slot that frees up (a parse skip, a quick verdict) takes the next
  // candidate at once, so one slow run never idles the other slots. With `first`, it returns
  // the index of the first interesting candidate in order (every earlier one judged and not
  // interesting: the result does not depend on timing) and cancels what it started after it;
  // otherwise it judges all. Every result in `all` (when given), traced as it comes in.
  // `seen`, when given, hears each result as it comes in (the generator may use it to skip
  // candidates that became pointless). `gather` (SearchOptions::gather): with a winner, the
  // candidates after it get a grace to finish before they are cancelled, for a caller that takes
  // the interesting ones of `all` together (ddmin's disjoint chunks; not pdd's nested prefixes).
  int stream(const std::function<std::optional<std::string>()> &next, const std::string &pass,
             bool first, std::vector<TestResult> *all,
             const std::function<void(size_t, const TestResult &)> &seen = nullptr,
             bool gather = false);
  std::vector<TestResult> evaluate(const std::vector<std::string> &cands, const std::string &pass);
  int firstInteresting(const std::vector<std::string> &cands, const std::string &pass);
  void trace(const std::string &cand, const TestResult &r, const std::string &pass);
  void accept(const std::string &text, const std::string &pass, const std::string &what);
  void checkStop();
  // The parse of best_ in parsed_: the background one when ready (or, with `wait`, once it is).
  bool haveParse(bool wait);
  // Lookahead (SearchOptions::lookahead): fills the idle slots from spec_queue_, built from the
  // passes in upcoming_ on best_; cancelSpec stops them (all, or the newest one).
  void lookahead(size_t real_inflight);
  void buildLookahead();
  size_t specRunning();
  void cancelSpec(bool all);

  Judge &judge_;
  SearchOptions opt_;
  std::function<void(const SearchStats &, const std::string &)> progress_;
  std::string best_;
  // The sites are listed from a parse that keeps a precompiled preamble (frontend/parse_check.h);
  // parsed_ is its AST of best_, handed back after an accepted step.
  std::unique_ptr<SiteParser> parser_;
  std::unique_ptr<ParsedSource> parsed_;
  // The parse of next_parse_text_ (best_ when it was accepted) running in the background; after
  // parser_ so that it is waited for before the parser goes.
  std::future<std::unique_ptr<ParsedSource>> next_parse_;
  std::string next_parse_text_;
  std::vector<const PassInfo *> upcoming_;  // the passes after the current one, this round
  std::deque<std::string> spec_queue_;
  bool spec_built_ = false;  // spec_queue_ is of best_ and upcoming_
  struct SpecTask {
    std::shared_ptr<std::atomic<bool>> cancel, done;
  };
  std::vector<SpecTask> spec_running_;
  std::shared_ptr<std::atomic<long>> spec_busy_ms_ = std::make_shared<std::atomic<long>>(0);
  SearchStats stats_;
  int infra_run_ = 0;
  std::string last_infra_;
  // Each candidate's turn at a shared resource (process.h, setThreadTurn): the order in which
  // the search needs the verdicts, the lookahead's after every one of the passes' own.
  unsigned long long turn_ = 0;
  static constexpr unsigned long long kSpeculativeTurn = 1ull << 62;
  double t0_ = 0;
  std::unique_ptr<WorkerPool> pool_;  // last: destroyed (joined) before what its tasks use
};

}  // namespace wsr
