// `wsfuzz slurm` on a real Slurm: scripts/slurm-local.sh starts a private cluster on this machine
// (munged, slurmctld, two slurmd as nodes n1 and n2 of one CPU each, partition `cpu`), and a small
// campaign judged by the emulator runs there as a job array of two tasks. One task is killed with
// scancel after its first verdict; status says it failed, resume resubmits it alone, it judges
// only what had no verdict; the shards merge into one database whose verdicts are, mutant by
// mutant, those of the same campaign run as one local process, and whose report says the same.
// Where the cluster cannot start (Slurm not installed, not root), every test here is skipped with
// the reason; scripts/setup.sh installs what it needs.
#include "campaign.h"

#include "process.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using namespace wsr;

namespace {

const std::string kWsfuzz = std::string(WSR_BUILD_DIR) + "/fuzzer/wsfuzz";
const std::string kCache = std::string(WSR_BUILD_DIR) + "/test-cache";
const std::string kScript = std::string(WSREDUCE_SOURCE_DIR) + "/scripts/slurm-local.sh";
const std::string kClusterDir = std::string(WSR_BUILD_DIR) + "/slurm-local-test";
const std::string kKernel = std::string(WSREDUCE_SOURCE_DIR) + "/kernels/tma_pipeline_sm90.cu";

// 8 mutants of the pipeline kernel (4 + 2 + 2), each run twice on the emulator: about 2-3 s
// each on one core, so a task of 3-5 of them is still running when it is killed after its first.
const std::vector<std::string> kCampaign = {
    "--kernels", kKernel, "--injectors", "arrival-count,k-loop-off-by-one,expect-tx-bytes",
    "--backend", "emu",   "--repeat",    "2",
    "--corpus",  ""};

std::string lastLine(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  auto nl = s.find_last_of('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Rows of a query, each row's columns joined by '|'.
std::vector<std::string> rows(const std::string &db, const std::string &sql) {
  sqlite3 *h = nullptr;
  std::vector<std::string> out;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(h, 10000);
    sqlite3_stmt *s = nullptr;
    if (sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr) == SQLITE_OK)
      while (sqlite3_step(s) == SQLITE_ROW) {
        std::string r;
        for (int i = 0; i < sqlite3_column_count(s); ++i) {
          auto *t = sqlite3_column_text(s, i);
          r += (i ? "|" : "") + std::string(t ? reinterpret_cast<const char *>(t) : "");
        }
        out.push_back(r);
      }
    sqlite3_finalize(s);
  }
  sqlite3_close(h);
  return out;
}

long number(const std::string &db, const std::string &sql) {
  auto r = rows(db, sql);
  return r.empty() ? -1 : std::stol(r[0]);
}

// The state column of task i in `wsfuzz slurm status`'s table.
std::string stateOf(const std::string &status_out, int i) {
  std::istringstream in(status_out);
  for (std::string l; std::getline(in, l);) {
    std::istringstream f(l);
    std::string task, state;
    if (f >> task >> state && task == std::to_string(i)) return state;
  }
  return "";
}

// Everything of a report before its timings, less its tables' `time (s)` columns: the verdicts'
// part, which does not depend on who judged in what order or how long it took (the title, naming
// the database, is left out).
std::string verdictPart(const std::string &md) {
  auto a = md.find("## Summary"), b = md.find("## Time spent");
  std::string part = a == std::string::npos ? md : md.substr(a, b == std::string::npos ? b : b - a);
  std::istringstream in(part);
  std::string out;
  int drop = -1;  // the column of `time (s)` in the table being read
  for (std::string l; std::getline(in, l);) {
    if (l.empty() || l[0] != '|') {
      drop = -1;
      out += l + "\n";
      continue;
    }
    std::vector<std::string> cells;
    std::string cell;
    for (size_t i = 1; i < l.size(); ++i) {
      if (l[i] == '|') {
        cells.push_back(cell);
        cell.clear();
      } else {
        cell += l[i];
      }
    }
    if (drop < 0)
      for (size_t i = 0; i < cells.size(); ++i)
        if (cells[i].find("time (s)") != std::string::npos) drop = (int)i;
    for (size_t i = 0; i < cells.size(); ++i)
      if ((int)i != drop) out += "|" + cells[i];
    out += "|\n";
  }
  return out;
}

class SlurmLocal : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RunOptions ro;
    ro.timeout_s = 120;
    auto r = runProcess({"bash", kScript, "start", kClusterDir}, ro);
    if (r.timed_out || r.signal || r.exit_code != 0)
      skip_ = "the local Slurm cluster did not start (scripts/slurm-local.sh exit " +
              std::to_string(r.exit_code) + "): " + lastLine(r.err);
    else
      conf_ = kClusterDir + "/slurm.conf";
  }
  static void TearDownTestSuite() {
    if (conf_.empty()) return;
    RunOptions ro;
    ro.timeout_s = 120;
    auto r = runProcess({"bash", kScript, "stop", kClusterDir}, ro);
    EXPECT_EQ(r.exit_code, 0) << "a daemon of the local cluster was left running: " << r.err;
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    work_ = makeTempDir("wsr-slurm.");
  }
  void TearDown() override {
    if (!work_.empty()) removeTree(work_);
  }

  RunRecord run(const std::vector<std::string> &argv, double timeout_s = 300) {
    RunOptions ro;
    ro.timeout_s = timeout_s;
    ro.workdir = work_;
    ro.env_set["SLURM_CONF"] = conf_for_run_.empty() ? conf_ : conf_for_run_;
    ro.env_set["WSREDUCE_CACHE"] = cache_;
    return runProcess(argv, ro);
  }
  RunRecord wsfuzz(std::vector<std::string> args, double timeout_s = 300) {
    args.insert(args.begin(), kWsfuzz);
    return run(args, timeout_s);
  }

  static std::string conf_, skip_;
  std::string work_, cache_ = kCache, conf_for_run_;
};
std::string SlurmLocal::conf_, SlurmLocal::skip_;

TEST_F(SlurmLocal, ATaskKilledMidwayIsResumedAndTheMergeEqualsOneProcess) {
  const std::string shared = work_ + "/shared";
  // A cache of its own: every mutant is built for the emulator (about 2 s on one core) before it
  // runs in a fraction of that, so the task to be killed is still at work after its first verdict.
  cache_ = work_ + "/cache";
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> submit = {"slurm", "submit",      "--shards", "2",      "--dir",
                                     shared,  "--partition", "cpu",      "--time", "00:10:00"};
  submit.insert(submit.end(), kCampaign.begin(), kCampaign.end());
  auto r = wsfuzz(submit);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const std::string job = trim(r.out);
  ASSERT_FALSE(job.empty());
  ASSERT_EQ(job.find_first_not_of("0123456789"), std::string::npos) << job;

  // The batch script is there to be read and submitted by hand.
  auto script = readFile(shared + "/campaign.sbatch").value_or("");
  EXPECT_NE(script.find("#SBATCH --array=0-1\n"), std::string::npos) << script;
  EXPECT_NE(script.find("#SBATCH --partition=cpu\n"), std::string::npos) << script;
  EXPECT_NE(script.find("#SBATCH --time=00:10:00\n"), std::string::npos) << script;
  EXPECT_NE(script.find("--shard \"$i/2\""), std::string::npos) << script;
  EXPECT_NE(script.find("# A wsfuzz campaign on Slurm"), std::string::npos) << script;
  EXPECT_TRUE(fs::exists(shared + "/campaign.json"));

  // The task with more mutants is cancelled once it has judged its first.
  const std::string dbs[2] = {shared + "/shard-0.sqlite", shared + "/shard-1.sqlite"};
  int victim = -1;
  long victim_total = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(150);
  while (std::chrono::steady_clock::now() < deadline) {
    long total[2] = {0, 0};
    for (int i = 0; i < 2; ++i)
      for (auto &h : rows(dbs[i], "SELECT hash FROM mutants")) total[i] += fuzz::inShard(h, i, 2);
    if (total[0] + total[1] == 8) {
      victim = total[1] >= total[0] ? 1 : 0;
      victim_total = total[victim];
      if (number(dbs[victim], "SELECT COUNT(*) FROM verdicts") >= 1) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(victim, 0) << "the tasks did not plan the 8 mutants in time";
  ASSERT_GE(victim_total, 3) << "the shards split 8 mutants so that neither has 3";
  auto c = run({"scancel", job + "_" + std::to_string(victim)});
  ASSERT_EQ(c.exit_code, 0) << c.err;

  // It leaves the queue as failed (cancelled), midway: some verdicts, not all.
  std::string st;
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    st = wsfuzz({"slurm", "status", "--dir", shared}).out;
    if (stateOf(st, victim) == "failed") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  ASSERT_EQ(stateOf(st, victim), "failed") << st;
  EXPECT_NE(st.find("cancelled"), std::string::npos) << st;
  const long at_kill = number(dbs[victim], "SELECT COUNT(*) FROM verdicts");
  EXPECT_GE(at_kill, 1);
  ASSERT_LT(at_kill, victim_total) << "the task finished before scancel reached it";

  // --wait returns when nothing is queued: 1, since a shard is incomplete.
  r = wsfuzz({"slurm", "status", "--dir", shared, "--wait"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(stateOf(r.out, 1 - victim), "done") << r.out;
  EXPECT_EQ(stateOf(r.out, victim), "failed") << r.out;
  EXPECT_NE(r.out.find("slurm resume"), std::string::npos) << r.out;

  // resume resubmits the failed task alone; a second resume finds it queued and submits nothing.
  r = wsfuzz({"slurm", "resume", "--dir", shared});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string job2 = trim(r.out);
  EXPECT_NE(job2, job);
  EXPECT_NE(r.err.find("task " + std::to_string(victim)), std::string::npos) << r.err;
  r = wsfuzz({"slurm", "resume", "--dir", shared});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(trim(r.out), "") << r.out;
  EXPECT_NE(r.err.find("nothing to resubmit"), std::string::npos) << r.err;
  auto cj = readFile(shared + "/campaign.json").value_or("");
  EXPECT_NE(cj.find("\"id\": \"" + job2 + "\""), std::string::npos) << cj;

  r = wsfuzz({"slurm", "status", "--dir", shared, "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("2 done, 0 running, 0 pending, 0 failed; 8 of 8 mutants judged"),
            std::string::npos)
      << r.out;
  // The resumed task judged only what had no verdict: one judgment per mutant over both runs.
  EXPECT_EQ(number(dbs[victim], "SELECT COUNT(*) FROM judge_log"), victim_total);
  EXPECT_EQ(number(dbs[victim], "SELECT COUNT(*) FROM sessions"), 2);
  const double slurm_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const std::string merged = work_ + "/merged.sqlite";
  r = wsfuzz({"merge", merged, "--dir", shared});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("8 mutants, 8 with a verdict, 0 without"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("judged twice"), std::string::npos) << r.err;
  EXPECT_EQ(number(merged,
                   "SELECT COUNT(*) FROM (SELECT hash FROM judge_log GROUP BY hash "
                   "HAVING COUNT(*) > 1)"),
            0);

  // The same campaign as one local process.
  const std::string local = work_ + "/local.sqlite";
  std::vector<std::string> one = {"--db", local, "-j", "2"};
  one.insert(one.end(), kCampaign.begin(), kCampaign.end());
  t0 = std::chrono::steady_clock::now();
  r = wsfuzz(one);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double local_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Mutant by mutant: the same plan, the same verdict. A verdict that rests on timing (`slow`
  // against the baseline, `flaky` across runs) may differ between two runs of one campaign; such
  // a mutant is named, not compared.
  const std::string q =
      "SELECT m.hash, m.injector || ' #' || m.site, COALESCE(v.detail, '(none)') FROM mutants m "
      "LEFT JOIN verdicts v ON v.hash = m.hash ORDER BY m.hash";
  auto a = rows(merged, q), b = rows(local, q);
  ASSERT_EQ(a.size(), 8u);
  ASSERT_EQ(a.size(), b.size());
  std::vector<std::string> timing;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].substr(0, a[i].find('|')), b[i].substr(0, b[i].find('|')));
    auto timed = [](const std::string &row) {
      return row.find("|slow") != std::string::npos || row.find("|flaky") != std::string::npos;
    };
    if (timed(a[i]) || timed(b[i])) {
      timing.push_back(a[i] + " / " + b[i]);
      continue;
    }
    EXPECT_EQ(a[i], b[i]) << "the merged campaign and the local run disagree";
  }
  for (auto &t : timing) std::printf("timing-dependent, not compared: %s\n", t.c_str());

  // And the reports say the same, up to their timings.
  ASSERT_EQ(wsfuzz({"report", merged, "-o", work_ + "/merged-report"}).exit_code, 0);
  ASSERT_EQ(wsfuzz({"report", local, "-o", work_ + "/local-report"}).exit_code, 0);
  if (timing.empty()) {
    EXPECT_EQ(verdictPart(readFile(work_ + "/merged-report.md").value_or("a")),
              verdictPart(readFile(work_ + "/local-report.md").value_or("b")));
  }
  // The report over the shard databases themselves is the merged one's.
  ASSERT_EQ(wsfuzz({"report", dbs[0], dbs[1], "-o", work_ + "/shards-report"}).exit_code, 0);
  EXPECT_EQ(verdictPart(readFile(work_ + "/shards-report.md").value_or("a")),
            verdictPart(readFile(work_ + "/merged-report.md").value_or("b")));
  std::printf("slurm: submit to all done %.1f s (one task killed and resumed); local -j2 %.1f s\n",
              slurm_s, local_s);
}

TEST_F(SlurmLocal, AnUnknownPartitionIsOneSentenceAndNothingIsWritten) {
  const std::string shared = work_ + "/shared";
  std::vector<std::string> args = {"slurm", "submit", "--shards",    "2",
                                   "--dir", shared,   "--partition", "gpu-a100"};
  args.insert(args.end(), kCampaign.begin(), kCampaign.end());
  auto r = wsfuzz(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("the partition 'gpu-a100' does not exist"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cpu"), std::string::npos) << "the sentence names the partitions: " << r.err;
  EXPECT_FALSE(fs::exists(shared));
  EXPECT_EQ(r.out, "");
}

TEST_F(SlurmLocal, SbatchsRefusalIsOneSentenceAndNothingIsLeft) {
  // A time limit Slurm cannot parse passes wsfuzz's checks; sbatch refuses the script, and the
  // files submit wrote for it are removed again.
  const std::string shared = work_ + "/shared";
  std::vector<std::string> args = {"slurm", "submit", "--shards", "2",
                                   "--dir", shared,   "--time",   "soon"};
  args.insert(args.end(), kCampaign.begin(), kCampaign.end());
  auto r = wsfuzz(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("sbatch refused the campaign"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(shared)) << "a refused submit left files behind";
}

TEST_F(SlurmLocal, AControllerThatDoesNotAnswerIsOneSentence) {
  // The cluster's configuration with the controller's port changed: nothing listens there.
  auto text = readFile(conf_).value_or("");
  auto at = text.find("SlurmctldPort=");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, text.find('\n', at) - at, "SlurmctldPort=9");
  conf_for_run_ = work_ + "/down.conf";
  ASSERT_TRUE(writeFileAtomic(conf_for_run_, text));
  const std::string shared = work_ + "/shared";
  std::vector<std::string> args = {"slurm", "submit", "--shards", "2", "--dir", shared};
  args.insert(args.end(), kCampaign.begin(), kCampaign.end());
  auto r = wsfuzz(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("the Slurm controller did not answer"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(shared));
}

}  // namespace
