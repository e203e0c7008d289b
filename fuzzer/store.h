// The campaign's store: one SQLite file holds the plan (mutants), every verdict and run, the
// latent mutants' sanitizer evidence, the corpus entries and the reductions. A mutant's
// verdict and its runs are written in one transaction after it is judged, so a campaign
// killed at any point resumes by judging exactly the mutants without a verdict.
#pragma once

#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace wsr::fuzz {

struct MutantRow {
  std::string hash;    // content hash of the mutant text and its build target
  std::string kernel;  // file name of the reference kernel, e.g. ws_gemm_sm90.cu
  std::string injector;
  int site = 0;  // index among the injector's sites on that kernel
  std::string note;
  int line = 0;
  std::string edits_json;     // [{"offset":..,"length":..,"replacement":".."}]
  std::string arch;           // the target the mutant is built for
  std::string expected_json;  // ["hang/mbarrier", ...]
  bool runtime = true;        // judged by running (else compile + static check)
  std::string text;           // the mutant program
};

struct RunRow {
  int idx = 0;
  std::string symptom, detail, signature;
  int exit_code = 0, signal = 0;
  bool timed_out = false;
  double wall_ms = 0;
};

struct VerdictRow {
  std::string hash;
  std::string symptom, detail, signature;
  bool expected_match = false;
  bool infra = false;
  std::optional<bool> site_executed;  // unknown until the watchdog's progress counters exist
  std::optional<bool> static_check;   // Blackwell mutants: the defect confirmed in the text
  std::string static_why;
  std::string verdict_json;
  std::string gpu;  // the CUDA_VISIBLE_DEVICES slot the runs used
  double build_ms = 0, wall_ms = 0;
  std::vector<RunRow> runs;
};

struct SanitizerRow {
  std::string hash, tool;
  std::optional<bool> saw;  // nullopt: the tool could not run
  std::string summary, output;
};

struct ReductionRow {
  std::string hash;
  bool ok = false, retained = false;
  std::string how, path, error;
  int lines_before = 0, lines_after = 0;
  double wall_s = 0;
};

// The time now, UTC, as 2026-12-04T21:35:28Z: what the store and the campaign files record.
std::string nowIso();

class Store {
 public:
  // Opens (creating the schema if needed); throws std::runtime_error with a sentence, also for
  // an existing file that is not a campaign database (it is left untouched).
  explicit Store(const std::string &path);
  // "" when `path` is absent or a campaign database, else the sentence that says what it is.
  static std::string checkExisting(const std::string &path);
  ~Store();
  Store(const Store &) = delete;
  Store &operator=(const Store &) = delete;

  void exec(const std::string &sql);
  void begin();
  void commit();
  void rollback();

  void setMeta(const std::string &key, const std::string &value);
  std::string meta(const std::string &key);

  void addMutants(const std::vector<MutantRow> &rows);  // INSERT OR IGNORE, one transaction
  std::vector<MutantRow> mutants();
  std::optional<MutantRow> mutant(const std::string &hash);
  bool hasVerdict(const std::string &hash);
  // Writes the verdict, its runs and a judge_log line in one transaction. Returns false (and
  // writes nothing) when a verdict is already stored: a mutant is never judged twice.
  bool recordVerdict(const VerdictRow &v);
  std::optional<VerdictRow> verdict(const std::string &hash);
  int deleteInfraVerdicts();  // --retry-infra

  // Kernels: the reference's own verdict and timing (the baseline).
  bool hasBaseline(const std::string &kernel);
  void recordBaseline(const std::string &kernel, const std::string &path, const std::string &arch,
                      const std::string &detail, double median_run_ms, const std::string &json);
  std::optional<double> baselineMs(const std::string &kernel);

  bool hasSanitizer(const std::string &hash);
  void recordSanitizer(const SanitizerRow &s);
  bool signatureInCorpus(const std::string &kernel, const std::string &injector,
                         const std::string &signature);
  void recordCorpus(const std::string &hash, const std::string &kernel, const std::string &injector,
                    const std::string &signature, const std::string &path);
  bool hasReduction(const std::string &hash);
  void recordReduction(const ReductionRow &r);

  // The plan of one (kernel, injector): recorded once per kernel content, so a resumed
  // campaign does not parse again.
  bool planned(const std::string &kernel, const std::string &kernel_hash,
               const std::string &injector);
  void recordPlan(const std::string &kernel, const std::string &kernel_hash,
                  const std::string &injector, const std::vector<MutantRow> &rows);
  std::vector<MutantRow> mutantsOf(const std::string &kernel, const std::string &injector);

  long startSession(const std::string &command, int shard_i, int shard_n);
  void endSession(long id, long judged);

  sqlite3 *db() { return db_; }

 private:
  sqlite3 *db_ = nullptr;
};

std::string nowIso();

}  // namespace wsr::fuzz
