// Bad input, tool by tool and command by command: one sentence on stderr, exit status 2, and
// nothing on disk changed (the work folder holds the same files with the same contents after the
// refusal as before it). Each row is a mistake a user makes.
#include "process.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <map>

using namespace wsr;
namespace fs = std::filesystem;

namespace {

std::string tool(const std::string &name) {
  static const std::map<std::string, std::string> at = {{"wsreduce", "/reducer/wsreduce"},
                                                        {"wsoracle", "/oracle/wsoracle"},
                                                        {"wsfuzz", "/fuzzer/wsfuzz"}};
  return std::string(WSR_BUILD_DIR) + at.at(name);
}

// Every file below `dir`, with its contents.
std::map<std::string, std::string> snapshot(const std::string &dir) {
  std::map<std::string, std::string> files;
  for (auto &e : fs::recursive_directory_iterator(dir))
    files[e.path().string()] = e.is_regular_file() ? readFile(e.path().string()).value_or("?")
                                                   : std::string("<dir>");
  return files;
}

struct Row {
  const char *tool;
  std::vector<std::string> args;  // "$W" stands for the work folder, "$F" for tests/fixtures
  const char *says;               // a phrase of the one sentence
  std::map<std::string, std::string> env = {};  // set for the tool's run (PATH without Slurm)
};

class BadInput : public ::testing::TestWithParam<Row> {};

TEST_P(BadInput, IsOneSentenceExitTwoAndChangesNothing) {
  const Row &row = GetParam();
  const std::string w = makeTempDir("wsr-bad.");
  writeFileAtomic(w + "/k.cu", "int main() { return 0; }\n");
  writeFileAtomic(w + "/empty.cu", "\n  \n");
  writeFileAtomic(w + "/binary.cu", std::string("\x7f" "ELF\0\0\1", 7));
  writeFileAtomic(w + "/notexec.sh", "#!/bin/sh\nexit 0\n");
  writeFileAtomic(w + "/corrupt.sqlite", "this is not a database\n");
  {  // a SQLite database of something else
    sqlite3 *db = nullptr;
    ASSERT_EQ(sqlite3_open((w + "/foreign.sqlite").c_str(), &db), SQLITE_OK);
    sqlite3_exec(db, "CREATE TABLE recipes(name TEXT); INSERT INTO recipes VALUES('bread');",
                 nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  {  // a campaign already submitted to Slurm from this folder
    fs::create_directories(w + "/camp");
    writeFileAtomic(w + "/camp/campaign.json", "{\"format\": \"wsfuzz-slurm-campaign-1\"}\n");
  }
  const auto before = snapshot(w);
  std::vector<std::string> argv = {tool(row.tool)};
  for (auto a : row.args) {
    for (size_t at; (at = a.find("$W")) != std::string::npos;) a.replace(at, 2, w);
    for (size_t at; (at = a.find("$F")) != std::string::npos;) a.replace(at, 2, WSR_FIXTURES);
    argv.push_back(a);
  }
  RunOptions o;
  o.timeout_s = 120;
  o.env_set["WSREDUCE_CACHE"] = std::string(WSR_BUILD_DIR) + "/test-cache";
  for (auto &[k, v] : row.env) o.env_set[k] = v;
  auto r = runProcess(argv, o);
  std::string cmd;
  for (auto &a : argv) cmd += " " + a;
  EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.err << r.out;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << cmd << "\n" << r.err;
  EXPECT_EQ(r.err.rfind(std::string(row.tool) + ": ", 0), 0u) << cmd << "\n" << r.err;
  EXPECT_NE(r.err.find(row.says), std::string::npos) << cmd << "\n" << r.err;
  EXPECT_EQ(snapshot(w), before) << cmd << ": the refusal changed the work folder";
  removeTree(w);
}

const Row kRows[] = {
    {"wsreduce", {"$W/none.cu", "--symptom", "hang"}, "does not exist"},
    {"wsreduce", {"$W", "--symptom", "hang"}, "is a directory"},
    {"wsreduce", {"$W/empty.cu", "--symptom", "hang"}, "is empty"},
    {"wsreduce", {"$W/binary.cu", "--symptom", "hang"}, "is not text"},
    {"wsreduce", {"$W/k.cu"}, "say which failure to keep"},
    {"wsreduce", {"$W/k.cu", "--symptom", "sleepy"}, "--symptom must be one of"},
    {"wsreduce", {"$W/k.cu", "--symptom", "hang", "--budget", "-1"}, "--budget must be"},
    {"wsreduce", {"$W/k.cu", "--symptom", "hang", "--runs-per-gpu", "-1"}, "--runs-per-gpu must be"},
    {"wsreduce", {"$W/k.cu", "--test", "$W/notexec.sh"}, "is not executable"},
    {"wsreduce", {"$W/k.cu", "--test", "$W/none.sh"}, "does not exist"},
    {"wsreduce", {"$W/k.cu", "--symptom", "hang", "--timeout", "0"}, "--timeout must be"},
    {"wsreduce", {"$W/k.cu", "--symptom", "hang", "--backend", "cpu"}, "--backend must be"},
    {"wsreduce",
     {"$W/k.cu", "--symptom", "hang", "--watchdog-end", "abort"},
     "--watchdog-end must be trap or exit"},
    {"wsreduce", {"$W/k.cu", "--symptom", "hang", "--policy", "late"}, "late"},
    {"wsreduce", {"$W/k.cu", "--symptom", "hang", "--passes", "shrink"}, "unknown pass"},
    {"wsreduce", {"$W/k.cu", "--symptom", "hang", "--resume", "--force"}, "--resume"},
    {"wsreduce", {"$W/k.cu", "--symptom", "hang", "-o", "$W/k.cu"}, "would overwrite the input"},
    {"wsreduce", {"$W/k.cu", "--symptom", "hang", "-o", "$W/no/dir/k.cu"}, "does not exist"},
    // Headers that cannot be inlined: refused before anything is judged.
    {"wsreduce",
     {"$F/flatten/cycle/cycle.cu", "--symptom", "compile-error", "-o", "$W/c.min.cu"},
     "cycle/a.h is included again while it is still being included"},
    {"wsreduce",
     {"$F/flatten/missing/missing.cu", "--symptom", "compile-error", "-o", "$W/m.min.cu"},
     "gone.h is not found: it is included at"},
    {"wsreduce", {"$W/k.cu", "--symptom", "hang", "--flatten", "$W/nodir"}, "is not a folder"},
    {"wsoracle", {"$W/none.cu"}, "does not exist"},
    {"wsoracle", {"$W"}, "is a directory"},
    {"wsoracle", {"$W/empty.cu"}, "is empty"},
    {"wsoracle", {"$W/binary.cu"}, "is not text"},
    {"wsoracle", {"$W/k.cu", "--repeat", "0"}, "--repeat must be"},
    {"wsoracle", {"$W/k.cu", "--timeout", "-1"}, "--timeout must be"},
    {"wsoracle", {"$W/k.cu", "--sanitizer", "leakcheck"}, "--sanitizer must be"},
    {"wsoracle", {"$W/k.cu", "--watchdog-end", "abort"}, "--watchdog-end must be trap or exit"},
    {"wsoracle",
     {"--flatten-only", "$F/flatten/cycle/cycle.cu", "-o", "$W/flat.cu"},
     "cycle/a.h is included again while it is still being included"},
    {"wsoracle",
     {"--flatten-only", "$F/flatten/missing/missing.cu", "-o", "$W/flat.cu"},
     "missing/has_missing.h:3"},
    {"wsoracle", {"--flatten-only", "$W/k.cu", "--flatten", "$W/nodir"}, "is not a folder"},
    {"wsoracle", {"--flatten-only", "$W/k.cu", "-o", "$W/k.cu"}, "would overwrite the input"},
    {"wsoracle", {"--flatten-only", "$W/k.cu", "-o", "$W/no/dir/f.cu"}, "does not exist"},
    {"wsoracle", {"$W/k.cu", "--flatten", "none"}, "goes with --flatten-only"},
    {"wsfuzz", {"--kernels", "$W/none", "--db", "$W/c.sqlite"}, "does not exist"},
    {"wsfuzz",
     {"--kernels", "$W/k.cu", "--db", "$W/c.sqlite", "--injectors", "x"},
     "unknown injector"},
    {"wsfuzz",
     {"--kernels", "$W/k.cu", "--db", "$W/c.sqlite", "--reduce-budget", "-5"},
     "--reduce-budget must be"},
    {"wsfuzz", {"--kernels", "$W/k.cu", "--db", "$W/foreign.sqlite"}, "something else"},
    {"wsfuzz", {"--kernels", "$W/k.cu", "--db", "$W/corrupt.sqlite"}, "not a SQLite database"},
    {"wsfuzz", {"report", "$W/none.sqlite", "-o", "$W/rep"}, "does not exist"},
    {"wsfuzz", {"report", "$W/foreign.sqlite", "-o", "$W/rep"}, "something else"},
    {"wsfuzz", {"report", "$W/corrupt.sqlite", "-o", "$W/rep"}, "not a SQLite database"},
    {"wsfuzz", {"compare", "$W/foreign.sqlite", "$W/corrupt.sqlite"}, "something else"},
    {"wsfuzz", {"frobnicate"}, "unknown command"},
    // A campaign on Slurm: refused before anything is written or submitted.
    {"wsfuzz",
     {"slurm", "submit", "--kernels", "$W/k.cu", "--shards", "2", "--dir", "$W/shared"},
     "sbatch was not found on PATH",
     {{"PATH", "/nonexistent"}}},
    {"wsfuzz",
     {"slurm", "submit", "--kernels", "$W/k.cu", "--shards", "2", "--dir", "/proc/wsfuzz-shared"},
     "cannot be written"},
    {"wsfuzz",
     {"slurm", "submit", "--kernels", "$W/k.cu", "--shards", "2", "--dir", "$W/camp"},
     "already holds a campaign"},
    {"wsfuzz",
     {"slurm", "submit", "--kernels", "$W/k.cu", "--shards", "2", "--dir", "$W/s", "--db",
      "$W/c.sqlite"},
     "--db is set per task"},
    {"wsfuzz",
     {"slurm", "submit", "--kernels", "$W/k.cu", "--shards", "2", "--dir", "$W/s", "--shard",
      "1/2"},
     "--shard is set per task"},
    {"wsfuzz", {"slurm", "submit", "--kernels", "$W/k.cu", "--dir", "$W/s"}, "--shards must be"},
    {"wsfuzz",
     {"slurm", "submit", "--kernels", "$W/none.cu", "--shards", "2", "--dir", "$W/s"},
     "does not exist"},
    {"wsfuzz", {"slurm"}, "the slurm commands are"},
    {"wsfuzz", {"slurm", "launch", "--dir", "$W"}, "unknown slurm command"},
    {"wsfuzz", {"slurm", "status", "--dir", "$W"}, "holds no campaign"},
    {"wsfuzz", {"slurm", "resume", "--dir", "$W/camp/campaign.json"}, "holds no campaign"},
    {"wsfuzz", {"merge", "$W/out.sqlite"}, "usage: wsfuzz merge"},
    {"wsfuzz", {"merge", "$W/foreign.sqlite", "$W/corrupt.sqlite"}, "already exists"},
    {"wsfuzz", {"merge", "$W/out.sqlite", "$W/foreign.sqlite"}, "something else"},
    {"wsfuzz", {"merge", "$W/out.sqlite", "$W/none.sqlite"}, "does not exist"},
    {"wsfuzz", {"merge", "$W/out.sqlite", "--dir", "$W"}, "holds no campaign"},
    {"wsfuzz", {"report", "$W/foreign.sqlite", "$W/none.sqlite"}, "does not exist"},
};

INSTANTIATE_TEST_SUITE_P(AllTools, BadInput, ::testing::ValuesIn(kRows),
                         [](const ::testing::TestParamInfo<Row> &i) {
                           return std::string(i.param.tool) + "_" + std::to_string(i.index);
                         });

}  // namespace
