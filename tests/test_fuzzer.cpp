// wsfuzz on a CPU, as a specification:
//   - the report, from a database recorded here row by row: its confusion matrix, latent
//     mutants and what the sanitizer saw, the disagreements to explain;
//   - --shard splits any set of mutants into disjoint parts that cover it;
//   - the GPU-slot pool never puts two runs on one slot and uses every slot (a fake list);
//   - a real campaign: wrong-arch on a reference kernel (ptxas rejects sm_90) plus host-only
//     programs on fake GPU slots, an sm_100a mutant compiled and checked statically, the
//     corpus, the report saying which judgments are infra-error (no GPU here);
//   - killed mid-campaign (SIGKILL), the same command resumes: nothing judged twice, the
//     database complete.
#include "campaign.h"
#include "edit.h"
#include "oracle.h"
#include "report.h"
#include "store.h"
#include "tester.h"

#include <algorithm>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace wsr;
using namespace wsr::fuzz;

namespace {

const std::string kWsfuzz = std::string(WSR_BUILD_DIR) + "/fuzzer/wsfuzz";
const std::string kCache = std::string(WSR_BUILD_DIR) + "/test-cache";

long count(const std::string &db, const std::string &sql) {
  sqlite3 *h = nullptr;
  sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_busy_timeout(h, 10000);
  sqlite3_stmt *s = nullptr;
  long n = -1;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW)
    n = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(h);
  return n;
}

// The first column of every row, one per line (for failure messages).
std::string rows(const std::string &db, const std::string &sql) {
  sqlite3 *h = nullptr;
  sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt *s = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr) == SQLITE_OK)
    while (sqlite3_step(s) == SQLITE_ROW)
      if (auto *t = sqlite3_column_text(s, 0)) out += reinterpret_cast<const char *>(t) + std::string("\n");
  sqlite3_finalize(s);
  sqlite3_close(h);
  return out;
}

class Dir {
 public:
  Dir() : path(makeTempDir("wsr-fuzz.")) {}
  ~Dir() { removeTree(path); }
  std::string path;
};

void write(const std::string &path, const std::string &text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// A host-only program (no device code): prints the slot it ran on, sleeps a little.
std::string hostProgram(int n, int sleep_ms) {
  return "// host program " + std::to_string(n) +
         "\n#include <chrono>\n#include <cstdio>\n#include <cstdlib>\n#include <thread>\nint "
         "main() {\n"
         "  const char* v = std::getenv(\"CUDA_VISIBLE_DEVICES\");\n"
         "  std::this_thread::sleep_for(std::chrono::milliseconds(" +
         std::to_string(sleep_ms) +
         "));\n"
         "  std::printf(\"slot=%s\\n\", v ? v : \"(unset)\");\n  return 0;\n}\n";
}

// Starts args[0] with args, stdout and stderr to `log` (a file, or /dev/null); the caller waits.
pid_t spawn(const std::vector<std::string> &args, const std::string &log) {
  pid_t pid = fork();
  if (pid == 0) {
    int f = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(f, 1);
    dup2(f, 2);
    std::vector<char *> av;
    for (auto &a : args) av.push_back(const_cast<char *>(a.c_str()));
    av.push_back(nullptr);
    execv(av[0], av.data());
    _exit(127);
  }
  return pid;
}

int runWsfuzz(const std::vector<std::string> &args, std::string *out) {
  std::vector<std::string> argv = {kWsfuzz};
  argv.insert(argv.end(), args.begin(), args.end());
  RunOptions ro;
  ro.timeout_s = 900;
  RunRecord r = runProcess(argv, ro);
  *out = r.out + r.err;
  return r.timed_out || r.signal ? -1 : r.exit_code;
}

// ---- the report from a recorded database ------------------------------------------------------
TEST(FuzzReport, ConfusionMatrixLatentAndDisagreementsFromRecordedRows) {
  Dir d;
  std::string db = d.path + "/c.sqlite";
  Store st(db);
  struct R {
    const char *hash, *injector, *expected, *detail;
    bool match;
  };
  // Rows by the injector's first expected class: hang (arrival-count, k-loop, initial-phase,
  // expect-tx), wrong (missing-proxy-fence, early-release), crash (oob), compile-error
  // (wrong-arch).
  std::vector<R> rs = {
      {"a1", "arrival-count", R"(["hang/mbarrier","hang/unknown"])", "hang/mbarrier", true},
      {"a2", "arrival-count", R"(["hang/mbarrier","hang/unknown"])", "hang/unknown", true},
      {"a3", "arrival-count", R"(["hang/mbarrier","hang/unknown"])", "infra-error/no-gpu", false},
      {"k1", "k-loop-off-by-one", R"(["hang/mbarrier","hang/unknown","wrong/*"])",
       "wrong/row-stripe", true},
      {"i1", "initial-phase",
       R"(["hang/mbarrier","hang/unknown","wrong/*","crash/launch-failure"])", "pass", false},
      {"e1", "expect-tx-bytes", R"(["hang/mbarrier","hang/unknown","wrong/*"])",
       "crash/launch-failure", false},
      {"p1", "missing-proxy-fence", R"(["wrong/finite-patterned","wrong/*"])", "pass", false},
      {"r1", "early-release", R"(["wrong/*","flaky"])", "flaky", true},
      {"o1", "oob-coordinate", R"(["crash/illegal-address","wrong/*"])", "crash/illegal-address",
       true},
      {"w1", "wrong-arch", R"(["compile-error/ptxas"])", "compile-error/ptxas", true},
  };
  std::vector<MutantRow> ms;
  for (auto &r : rs) {
    MutantRow m;
    m.hash = r.hash;
    m.kernel = "k.cu";
    m.injector = r.injector;
    m.note = std::string("site of ") + r.injector;
    m.expected_json = r.expected;
    m.arch = "sm_90a";
    m.edits_json = "[]";
    ms.push_back(m);
  }
  st.addMutants(ms);
  for (auto &r : rs) {
    VerdictRow v;
    v.hash = r.hash;
    v.detail = r.detail;
    v.symptom = classOf(r.detail);
    v.signature = std::string("sig-") + r.hash;
    v.expected_match = r.match;
    v.infra = v.symptom == "infra-error";
    v.runs = {{0, v.symptom, v.detail, v.signature, 0, 0, false, 100}};
    if (v.symptom == "flaky")
      v.runs = {{0, "wrong", "wrong/scattered", "", 1, 0, false, 90},
                {1, "pass", "pass", "", 0, 0, false, 80}};
    ASSERT_TRUE(st.recordVerdict(v));
    EXPECT_FALSE(st.recordVerdict(v)) << "a second verdict for one mutant must be refused";
  }
  st.recordSanitizer({"p1", "racecheck", true, "ERROR SUMMARY: 3 errors", "..."});
  st.recordSanitizer({"i1", "racecheck", false, "ERROR SUMMARY: 0 errors", "..."});

  auto rep = buildReport(st, "t");
  const std::string &md = rep.markdown;
  // columns: pass, compile-error, hang, crash, wrong, slow, flaky, infra-error, compiled, agree
  EXPECT_NE(md.find("| hang | 1 | 0 | 2 | 1 | 1 | 0 | 0 | 1 | 0 | 3/6 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| wrong | 1 | 0 | 0 | 0 | 0 | 0 | 1 | 0 | 0 | 1/2 |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| crash | 0 | 0 | 0 | 1 | 0 | 0 | 0 | 0 | 0 | 1/1 |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| compile-error | 0 | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 1/1 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("2 latent mutants: a tool saw 1, nothing sees 1"), std::string::npos) << md;
  EXPECT_NE(md.find("SAW IT: ERROR SUMMARY: 3 errors"), std::string::npos);
  EXPECT_NE(md.find("**1 judgments are infra-error**"), std::string::npos);
  // The one disagreement: expect-tx-bytes crashed (719) where the catalogue says hang or wrong.
  EXPECT_NE(md.find("| k.cu | expect-tx-bytes #0 | site of expect-tx-bytes |"), std::string::npos)
      << md;
  // Triage agreement counts the mutants that show anything: 6 (a1 a2 k1 e1 r1 o1 w1 -> 7), 6 agree.
  EXPECT_NE(md.find("85.7% (6/7)"), std::string::npos) << md;  // a tenth, truncated
  EXPECT_NE(md.find("wrong/scattered, pass"), std::string::npos) << "flaky runs listed";
  EXPECT_NE(rep.html.find("<table>"), std::string::npos);
  EXPECT_EQ(rep.html.find("<script"), std::string::npos) << "self-contained, static";

  // Explanations kept with the campaign land next to the disagreement and the latent mutant they
  // name.
  auto ex = parseExplanations(
      "# kernel | injector | observed | why\n"
      "* | expect-tx-bytes | crash/launch | 719: the extra bytes never arrive; a finding\n"
      "k.cu | missing-proxy-fence | pass | the H200 orders these writes anyway\n"
      "malformed line without bars\n");
  ASSERT_EQ(ex.size(), 2u);
  auto rx = buildReport(st, "t", ex).markdown;
  EXPECT_NE(
      rx.find("| crash/launch-failure | sig-e1 | 719: the extra bytes never arrive; a finding |"),
      std::string::npos)
      << rx;
  EXPECT_NE(rx.find("the H200 orders these writes anyway"), std::string::npos) << rx;
}

// ---- the reducer's ground truth: did the injected edit survive? -------------------------------
TEST(FuzzRetention, InjectedTextOrBrokenConstructMustSurvive) {
  MutantRow m;
  m.arch = "sm_90a";
  m.edits_json = R"([{"offset":10,"length":1,"replacement":"(NUM_CONSUMERS) * 2"}])";
  std::string how;
  auto *ac = inject::findInjector("arrival-count");
  EXPECT_TRUE(editRetained(*ac, m, "mbar_init(&empty[0], (NUM_CONSUMERS)*2);", &how)) << how;
  EXPECT_FALSE(editRetained(*ac, m, "mbar_init(&empty[0], NUM_CONSUMERS);", &how)) << how;
  m.edits_json = R"([{"offset":10,"length":30,"replacement":""}])";
  auto *pf = inject::findInjector("missing-proxy-fence");
  EXPECT_TRUE(
      editRetained(*pf, m, "asm(\"cp.async.bulk.tensor.2d.global.shared::cta [%0]\");", &how))
      << how;
  EXPECT_FALSE(editRetained(*pf, m, "int main() {}", &how)) << how;
  auto *wa = inject::findInjector("wrong-arch");
  EXPECT_TRUE(editRetained(*wa, m, "asm(\"setmaxnreg.inc.sync.aligned.u32 232;\");", &how)) << how;
  EXPECT_FALSE(editRetained(*wa, m, "int main() {}", &how)) << how;
}

// ---- sharding and slots ----------------------------------------------------------------------
TEST(FuzzShard, DisjointAndCovering) {
  EXPECT_FALSE(parseShard("3/3"));
  EXPECT_FALSE(parseShard("x"));
  ASSERT_TRUE(parseShard("1/3"));
  std::set<std::string> seen;
  for (int k = 0; k < 600; ++k) {
    std::string h = contentHash("mutant " + std::to_string(k));
    int owners = 0;
    for (int i = 0; i < 3; ++i) owners += inShard(h, i, 3);
    EXPECT_EQ(owners, 1) << h;
  }
  int in0 = 0;
  for (int k = 0; k < 600; ++k) in0 += inShard(contentHash("mutant " + std::to_string(k)), 0, 3);
  EXPECT_GT(in0, 120);
  EXPECT_LT(in0, 280);
}

// The runs on each device at once, at most `per_device`, over `threads` callers.
std::map<std::string, int> mostAtOnce(SlotPool &pool, int threads,
                                      std::map<std::string, int> *used) {
  std::mutex m;
  std::map<std::string, int> busy, most;
  parallelFor(
      12, threads,
      [&](size_t) {
        size_t held = pool.acquire();
        const std::string s = pool.name(held);
        {
          std::lock_guard<std::mutex> l(m);
          most[s] = std::max(most[s], ++busy[s]);
          (*used)[s]++;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        {
          std::lock_guard<std::mutex> l(m);
          busy[s]--;
        }
        pool.release(held);
      },
      [] { return false; });
  return most;
}

TEST(FuzzSlots, FakeDeviceListOneRunPerSlotAllSlotsUsed) {
  EXPECT_EQ(parseGpus("2"), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(parseGpus("0,1"), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(parseGpus("5,3"), (std::vector<std::string>{"5", "3"}));
  SlotPool pool(parseGpus("0,1"));
  std::map<std::string, int> used;
  auto most = mostAtOnce(pool, 5, &used);
  EXPECT_EQ(most["0"], 1);
  EXPECT_EQ(most["1"], 1);
  EXPECT_EQ(pool.maxBusy(), 2);
  EXPECT_EQ(used.size(), 2u);
  EXPECT_EQ(used["0"] + used["1"], 12);
  SlotPool none({});
  EXPECT_EQ(none.size(), 1u);
  EXPECT_EQ(none.name(none.acquire()), "")
      << "no GPU: one CPU slot, CUDA_VISIBLE_DEVICES left alone";
}

// wsfuzz --runs-per-gpu: several slots share a device's name, and releasing one frees that one,
// not another slot of the same device (whose waiter's turn would then come while it still runs).
TEST(FuzzSlots, SeveralRunsPerDeviceAreHeldAndReleasedBySlot) {
  SlotPool pool(parseGpus("0,1"), 3);
  EXPECT_EQ(pool.size(), 6u);
  EXPECT_EQ(pool.devices(), 2u);
  std::map<std::string, int> used;
  auto most = mostAtOnce(pool, 8, &used);
  EXPECT_EQ(most["0"], 3);
  EXPECT_EQ(most["1"], 3);
  EXPECT_EQ(pool.maxBusy(), 6);
  EXPECT_EQ(used["0"] + used["1"], 12);
  // The first free slot spreads the runs over the devices.
  size_t a = pool.acquire(), b = pool.acquire();
  EXPECT_NE(pool.name(a), pool.name(b));
  size_t c = pool.acquire();
  pool.release(c);
  pool.release(c);  // a second release of the same slot frees nothing else
  size_t d = pool.acquire(), e = pool.acquire(), f = pool.acquire(), g = pool.acquire();
  EXPECT_EQ(std::set<size_t>({a, b, d, e, f, g}).size(), 6u) << "six slots held, none twice";
  std::atomic<bool> got{false};
  std::thread t([&] {
    pool.release(pool.acquire());
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(got) << "a seventh run while six slots are held";
  pool.release(a);
  t.join();
  EXPECT_TRUE(got);
}

// A waiter reserves a slot's next turn before the slot is free; nobody else takes that
// turn, at most one waiter per slot, and a free slot is reserved before a busy one.
TEST(FuzzSlots, AReservedTurnIsNotTakenByAnyoneElse) {
  SlotPool pool(parseGpus("0,1"));
  size_t first = pool.acquire();
  EXPECT_EQ(pool.name(first), "0");
  size_t r = pool.reserve();
  EXPECT_EQ(pool.name(r), "1") << "the free slot first";
  std::atomic<bool> got{false};
  size_t other = 99;
  std::thread t([&] {
    other = pool.acquire();
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(got) << "acquire() took a turn another caller had reserved";
  pool.take(r);
  pool.release(first);
  t.join();
  EXPECT_EQ(pool.name(other), "0");
  size_t r2 = pool.reserve(), r3 = pool.reserve();  // both busy: each gets one waiter
  EXPECT_NE(r2, r3);
  std::atomic<bool> third{false};
  std::thread t3([&] {
    pool.take(pool.reserve());
    third = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(third) << "a third waiter with two slots, each already with a waiter";
  pool.release(r2);
  pool.take(r2);  // the waiter's turn: its slot has room for the next waiter again
  pool.release(r3);
  pool.take(r3);
  pool.release(r2);
  t3.join();
  EXPECT_TRUE(third);
}

// The GPU runs get one hardware queue per context unless told otherwise, and the
// caller's own setting is left alone.
TEST(FuzzSlots, RunsGetOneHardwareQueueUnlessTheEnvironmentSaysOtherwise) {
  ::unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  CampaignOptions o;
  EXPECT_EQ(campaignRunEnv(o),
            (std::map<std::string, std::string>{{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}}));
  o.max_connections = 0;
  EXPECT_TRUE(campaignRunEnv(o).empty()) << "0 is the driver's default";
  o.max_connections = 4;
  ::setenv("CUDA_DEVICE_MAX_CONNECTIONS", "8", 1);
  EXPECT_TRUE(campaignRunEnv(o).empty()) << "the environment's value wins";
  ::unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
}

// ---- a real campaign on the CPU ----------------------------------------------------------------
// The Blackwell mutants on the emulator: each is run (tcgen05 and tensor memory on the PTX path)
// and gets a class its injector expects, where a Hopper GPU can only compile them.
TEST(FuzzCampaign, TheBlackwellMutantsRunOnTheEmulatorAndGetTheirExpectedClass) {
  if (findNvcc("").empty()) GTEST_SKIP() << "nvcc is not installed";
  Dir d;
  std::string db = d.path + "/c.sqlite";
  std::string k = std::string(WSREDUCE_SOURCE_DIR) + "/kernels/ws_gemm_sm100.cu";
  std::string out;
  int rc = runWsfuzz({"--kernels", k, "--injectors",
                      "tmem-alloc-lane-guard,dealloc-without-sync,commit-outside-elect,"
                      "missing-tcgen05-fence",
                      "--repeat", "1", "-j", "2", "--backend", "emu", "--policy", "matrix",
                      "--db", db, "--cache-dir", kCache, "--timeout", "60"},
                     &out);
  ASSERT_EQ(rc, 0) << out;
  const long n = count(db, "SELECT COUNT(*) FROM mutants");
  EXPECT_GE(n, 4) << out;
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM verdicts WHERE expected_match = 1"), n)
      << out << "\n"
      << rows(db, "SELECT m.injector || ' ' || v.detail FROM verdicts v JOIN mutants m "
                  "USING(hash)");
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM verdicts WHERE detail LIKE 'compiled%'"), 0)
      << "run, not only compiled";
  for (const char *inj : {"tmem-alloc-lane-guard", "dealloc-without-sync"})
    EXPECT_GE(count(db, std::string("SELECT COUNT(*) FROM verdicts v JOIN mutants m USING(hash) "
                                     "WHERE m.injector = '") +
                            inj + "' AND v.detail LIKE 'crash/ub-%'"),
              1)
        << inj;
}

// The cluster and PDL injectors' mutants of kernels/ws_cluster_pdl_sm90.cu on the emulator: the
// missing griddepcontrol.wait is the dependent's named read (ub/pdl-read-before-wait), the .cta
// remote arrive after DSMEM stores is ub/remote-arrive-cta-scope, and each of the four placements
// of a cluster barrier in a role branch hangs. Every mutant gets a class its injector expects.
TEST(FuzzCampaign, TheClusterAndPdlMutantsRunOnTheEmulatorAndGetTheirExpectedClass) {
  if (findNvcc("").empty()) GTEST_SKIP() << "nvcc is not installed";
  Dir d;
  std::string db = d.path + "/c.sqlite";
  std::string k = std::string(WSREDUCE_SOURCE_DIR) + "/kernels/ws_cluster_pdl_sm90.cu";
  std::string out;
  int rc = runWsfuzz({"--kernels", k, "--injectors",
                      "missing-griddepcontrol-wait,cta-scope-remote-arrive,"
                      "cluster-barrier-in-role-branch",
                      "--repeat", "1", "-j", "2", "--backend", "emu", "--policy", "matrix", "--db",
                      db, "--cache-dir", kCache, "--timeout", "60"},
                     &out);
  ASSERT_EQ(rc, 0) << out;
  const std::string verdicts =
      rows(db,
           "SELECT m.injector || ' #' || m.site || ' ' || v.detail FROM verdicts v JOIN "
           "mutants m USING(hash)");
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM mutants"), 6) << out;
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM verdicts WHERE expected_match = 1"), 6) << out << "\n"
                                                                                    << verdicts;
  EXPECT_EQ(count(db,
                  "SELECT COUNT(*) FROM verdicts v JOIN mutants m USING(hash) WHERE "
                  "m.injector = 'missing-griddepcontrol-wait' AND "
                  "v.detail = 'crash/ub-pdl-read-before-wait'"),
            1)
      << verdicts;
  EXPECT_EQ(count(db,
                  "SELECT COUNT(*) FROM verdicts v JOIN mutants m USING(hash) WHERE "
                  "m.injector = 'cta-scope-remote-arrive' AND "
                  "v.detail = 'crash/ub-remote-arrive-cta-scope'"),
            1)
      << verdicts;
  EXPECT_EQ(count(db,
                  "SELECT COUNT(*) FROM verdicts v JOIN mutants m USING(hash) WHERE "
                  "m.injector = 'cluster-barrier-in-role-branch' AND v.symptom = 'hang'"),
            4)
      << verdicts;
}

TEST(FuzzCampaign, WrongArchHostProgramsBlackwellStaticCorpusAndReport) {
  if (findNvcc("").empty()) GTEST_SKIP() << "nvcc is not installed";
  Dir d;
  std::string hosts = d.path + "/hosts";
  for (int i = 0; i < 3; ++i)
    write(hosts + "/host" + std::to_string(i) + ".cpp", hostProgram(i, 50));
  fs::copy_file(std::string(WSR_FIXTURES) + "/cuda/needs_gpu.cu", hosts + "/needs_gpu.cu");
  std::string db = d.path + "/c.sqlite", corpus = d.path + "/corpus";
  std::string k = std::string(WSREDUCE_SOURCE_DIR) + "/kernels/";
  std::string out;
  int rc = runWsfuzz({"--kernels",   k + "tma_pipeline_sm90.cu," + k + "ws_gemm_sm100.cu," + hosts,
                      "--injectors", "wrong-arch,commit-outside-elect",
                      "--repeat",    "1",
                      "-j",          "2",
                      "--gpus",      "0,1",
                      "--backend",   "gpu",
                      "--db",        db,
                      "--corpus",    corpus,
                      "--cache-dir", kCache,
                      "--timeout",   "30"},
                     &out);
  ASSERT_EQ(rc, 0) << out;
  // wrong-arch: one mutant per sm_90a program (4 hosts + the pipeline); commit-outside-elect: 1.
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM mutants"), 6) << out;
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM verdicts"), 6) << out;
  EXPECT_EQ(count(db,
                  "SELECT COUNT(*) FROM verdicts v JOIN mutants m USING(hash) WHERE m.kernel = "
                  "'tma_pipeline_sm90.cu' "
                  "AND v.detail = 'compile-error/ptxas' AND v.expected_match = 1"),
            1)
      << out;
  EXPECT_EQ(count(db,
                  "SELECT COUNT(*) FROM verdicts v JOIN mutants m USING(hash) WHERE m.injector = "
                  "'commit-outside-elect' "
                  "AND v.detail = 'compiled/static-confirmed' AND v.static_check = 1"),
            1)
      << out;
  EXPECT_EQ(count(db,
                  "SELECT COUNT(*) FROM verdicts v JOIN mutants m USING(hash) WHERE m.kernel LIKE "
                  "'host%' AND v.symptom = 'pass'"),
            3)
      << out;
  if (!gpuPresent()) {
    EXPECT_EQ(count(db,
                    "SELECT COUNT(*) FROM verdicts v JOIN mutants m USING(hash) WHERE m.kernel = "
                    "'needs_gpu.cu' AND v.infra = 1"),
              1)
        << out;
    EXPECT_EQ(count(db,
                    "SELECT COUNT(*) FROM kernels WHERE name = 'tma_pipeline_sm90.cu' AND "
                    "baseline_detail LIKE 'infra-error%'"),
              1)
        << out;
  }
  // Runs that got a slot got one of the fake devices, and both were used.
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM verdicts WHERE gpu NOT IN ('0', '1', '')"), 0);
  EXPECT_GE(count(db, "SELECT COUNT(DISTINCT gpu) FROM verdicts WHERE gpu IN ('0', '1')"), 1)
      << out;
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM verdicts WHERE site_executed IS NOT NULL"), 0)
      << "unknown until the watchdog";
  // The detected mutants went to the corpus with their metadata.
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM corpus"), 2) << out;
  bool meta = false;
  for (auto &e : fs::recursive_directory_iterator(corpus))
    if (e.path().string().find("tma_pipeline_sm90/wrong-arch/") != std::string::npos &&
        e.path().extension() == ".json") {
      auto j = readFile(e.path().string());
      meta = j && j->find("\"injector\": \"wrong-arch\"") != std::string::npos &&
             j->find("compile-error/ptxas") != std::string::npos;
    }
  EXPECT_TRUE(meta) << "corpus/<kernel>/<injector>/<hash>.meta.json";

  // Run again: nothing left to judge.
  rc = runWsfuzz({"--kernels", k + "tma_pipeline_sm90.cu," + k + "ws_gemm_sm100.cu," + hosts,
                  "--injectors", "wrong-arch,commit-outside-elect", "--repeat", "1", "-j", "2",
                  "--backend", "gpu", "--db", db, "--corpus", corpus, "--cache-dir", kCache},
                 &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("0 to judge"), std::string::npos) << out;
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM judge_log"), 6);

  rc = runWsfuzz({"report", db, "-o", d.path + "/report"}, &out);
  ASSERT_EQ(rc, 0) << out;
  auto md = readFile(d.path + "/report.md");
  ASSERT_TRUE(md);
  EXPECT_NE(md->find("static-confirmed"), std::string::npos) << *md;
  if (!gpuPresent()) {
    // wrong-arch row: the kernel fails in ptxas (agrees); the 3 host programs have nothing
    // sm_90a-only and pass; needs_gpu is infra-error here.
    EXPECT_NE(md->find("| compile-error | 3 | 1 | 0 | 0 | 0 | 0 | 0 | 1 | 0 | 1/5 |"),
              std::string::npos)
        << *md;
    EXPECT_NE(md->find("judgments are infra-error"), std::string::npos) << *md;
  }
  EXPECT_TRUE(fs::exists(d.path + "/report.html"));
}

// ---- killed mid-campaign, resumed ---------------------------------------------------------------
TEST(FuzzCampaign, KilledThenResumedJudgesEachMutantOnce) {
  if (findNvcc("").empty()) GTEST_SKIP() << "nvcc is not installed";
  Dir d;
  std::string hosts = d.path + "/hosts";
  const int n = 6;
  for (int i = 0; i < n; ++i)
    write(hosts + "/slow" + std::to_string(i) + ".cpp", hostProgram(100 + i, 700));
  std::string db = d.path + "/c.sqlite";
  std::vector<std::string> args = {
      kWsfuzz, "--kernels", hosts, "--injectors", "wrong-arch", "--backend",
      "gpu",   "--repeat",  "2",   "-j",          "1",          "--db",
      db,      "--corpus",  "",    "--cache-dir", kCache};
  pid_t pid = spawn(args, "/dev/null");
  ASSERT_GE(pid, 0);
  // Kill it (SIGKILL: no handler, no cleanup) once two mutants are judged.
  auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(300)) {
    if (fs::exists(db) && count(db, "SELECT COUNT(*) FROM judge_log") >= 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  long before = count(db, "SELECT COUNT(*) FROM verdicts");
  EXPECT_GE(before, 2);
  EXPECT_LT(before, n)
      << "the campaign finished before it could be killed; the test proves nothing";
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM mutants"), n);

  std::string out;
  int rc = runWsfuzz(std::vector<std::string>(args.begin() + 1, args.end()), &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find(std::to_string(n - before) + " to judge"), std::string::npos) << out;
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM verdicts"), n);
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM judge_log"), n) << "a mutant was judged twice";
  EXPECT_EQ(
      count(db,
            "SELECT COUNT(*) FROM (SELECT hash FROM judge_log GROUP BY hash HAVING COUNT(*) > 1)"),
      0);
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM runs"), 2 * n) << "every verdict has its runs";
  EXPECT_EQ(
      count(db,
            "SELECT COUNT(*) FROM verdicts v LEFT JOIN mutants m USING(hash) WHERE m.hash IS NULL"),
      0);
}

}  // namespace

// ---- a campaign on the emulator: real kernel mutants judged on the CPU ------------------------
TEST(FuzzCampaign, EmulatorJudgesRealMutantsOnTheCpu) {
  if (findNvcc("").empty()) GTEST_SKIP() << "nvcc is not installed (wrong-arch is nvcc's)";
  Dir d;
  std::string db = d.path + "/e.sqlite";
  std::string k = std::string(WSREDUCE_SOURCE_DIR) + "/kernels/tma_pipeline_sm90.cu";
  std::string out;
  int rc = runWsfuzz({"--kernels", k, "--injectors", "arrival-count,wrong-arch", "--backend", "emu",
                      "-DPIPE_ROWS=512", "--repeat", "1", "-j", "2", "--db", db, "--corpus", "",
                      "--cache-dir", kCache},
                     &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM kernels WHERE baseline_detail = 'pass'"), 1) << out;
  long n = count(db, "SELECT COUNT(*) FROM mutants");
  EXPECT_GE(n, 3) << out;
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM verdicts"), n) << out;
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM verdicts WHERE infra = 1"), 0) << out;
  // Every runtime verdict came from the emulator; wrong-arch is nvcc's compile error.
  EXPECT_EQ(count(db,
                  "SELECT COUNT(*) FROM verdicts v JOIN mutants m USING(hash) WHERE m.injector = "
                  "'arrival-count' "
                  "AND v.verdict_json NOT LIKE '%\"backend\":\"emu\"%'"),
            0)
      << out;
  EXPECT_EQ(count(db,
                  "SELECT COUNT(*) FROM verdicts v JOIN mutants m USING(hash) WHERE m.injector = "
                  "'wrong-arch' "
                  "AND v.detail = 'compile-error/ptxas' AND v.expected_match = 1"),
            1)
      << out;
  // Deterministic deadlock reports: every arrival-count mutant that hangs names the mbarrier.
  EXPECT_GE(count(db,
                  "SELECT COUNT(*) FROM verdicts v JOIN mutants m USING(hash) WHERE m.injector = "
                  "'arrival-count' "
                  "AND v.detail = 'hang/mbarrier'"),
            1)
      << out;
  EXPECT_EQ(count(db,
                  "SELECT COUNT(*) FROM verdicts v JOIN mutants m USING(hash) WHERE m.injector = "
                  "'arrival-count' "
                  "AND v.symptom = 'hang' AND v.detail != 'hang/mbarrier'"),
            0)
      << out;
}

// --reduce-budget: each reduction stops at its wall-clock budget with its best program so far,
// which still shows the symptom (every step was judged): its retention is recorded and the
// report says it stopped. A retention sample in bounded time. One of the kernel's four
// arrival-count mutants (--max-mutants): each claim holds per reduction, and each reduction costs
// its whole budget.
TEST(FuzzCampaign, ReduceBudgetEndsEachReductionWithItsBestProgram) {
  if (findNvcc("").empty()) GTEST_SKIP() << "nvcc is not installed";
  Dir d;
  std::string db = d.path + "/r.sqlite";
  std::string k = std::string(WSREDUCE_SOURCE_DIR) + "/kernels/tma_pipeline_sm90.cu";
  std::string out;
  int rc = runWsfuzz({"--kernels",
                      k,
                      "--injectors",
                      "arrival-count",
                      "--backend",
                      "emu",
                      "-DPIPE_ROWS=512",
                      "--repeat",
                      "1",
                      "-j",
                      "2",
                      "--db",
                      db,
                      "--corpus",
                      "",
                      "--cache-dir",
                      kCache,
                      "--reduce",
                      "--reduce-budget",
                      "20",
                      "--max-mutants",
                      "1"},
                     &out);
  ASSERT_EQ(rc, 0) << out;
  long detected = count(
      db,
      "SELECT COUNT(*) FROM verdicts WHERE symptom NOT IN ('pass', 'flaky', 'slow') AND infra = 0");
  ASSERT_GE(detected, 1) << out;
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM reductions"), detected) << out;
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM reductions WHERE ok = 1"), detected) << out;
  // a 325-line kernel is not reduced to a fixpoint in 20 s on this machine: the budget stopped it
  EXPECT_GE(count(db, "SELECT COUNT(*) FROM reductions WHERE how LIKE '%stopped at the budget%'"),
            1)
      << out;
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM reductions WHERE wall_s > 20 + 90"), 0)
      << out;  // budget + judging the mutant
  EXPECT_EQ(
      count(db,
            "SELECT COUNT(*) FROM reductions WHERE lines_after > lines_before OR lines_after <= 0"),
      0)
      << out;
  std::string report_out;
  ASSERT_EQ(runWsfuzz({"report", db, "-o", d.path + "/rep"}, &report_out), 0) << report_out;
  auto md = readFile(d.path + "/rep.md");
  ASSERT_TRUE(md);
  EXPECT_NE(md->find("stopped at --reduce-budget"), std::string::npos) << *md;
  // and how far they got, so that a retention of reductions that hardly reduced is read as such
  EXPECT_NE(md->find("Their median size after reduction: "), std::string::npos) << *md;
  long most =
      count(db, "SELECT COUNT(*) FROM reductions WHERE ok = 1 AND 2 * lines_after > lines_before");
  EXPECT_NE(md->find(std::to_string(most) + " of " + std::to_string(detected) +
                     " kept more than half of their lines"),
            std::string::npos)
      << *md;
}

// Bad input is one sentence and a non-zero exit, before any campaign starts: a negative budget
// once meant "no budget" without a word.
TEST(FuzzCli, ANegativeReduceBudgetIsRefused) {
  std::string out;
  int rc = runWsfuzz({"--kernels", std::string(WSREDUCE_SOURCE_DIR) + "/kernels", "--reduce",
                      "--reduce-budget", "-5", "--db", "/nonexistent-dir/x.sqlite"},
                     &out);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("--reduce-budget must be a number of seconds"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

// --reduce-backend picks the reducer's oracle apart from the campaign's. Where that oracle does not
// reproduce the mutant (here: the GPU, on a machine without one; on the H200, the emulator where
// it hangs and the GPU traps), the mutant is reduced on the campaign's own backend instead, and the
// reduction says so. On the H200 the usual way round, reductions on the emulator and each result
// judged on the GPU, is bench/jobs/h200x2_s9_reduce.sh.
TEST(FuzzCampaign, ReduceBackendIsTheReducersOracle) {
  if (findNvcc("").empty()) GTEST_SKIP() << "nvcc is not installed";
  if (gpuPresent()) GTEST_SKIP() << "this machine has a GPU: the reductions would run there";
  Dir d;
  std::string db = d.path + "/r.sqlite";
  std::string k = std::string(WSREDUCE_SOURCE_DIR) + "/kernels/tma_pipeline_sm90.cu";
  std::string out;
  int rc = runWsfuzz({"--kernels",
                      k,
                      "--injectors",
                      "arrival-count",
                      "--backend",
                      "emu",
                      "-DPIPE_ROWS=512",
                      "--repeat",
                      "1",
                      "-j",
                      "2",
                      "--db",
                      db,
                      "--corpus",
                      "",
                      "--cache-dir",
                      kCache,
                      "--reduce",
                      "--reduce-backend",
                      "gpu",
                      "--reduce-budget",
                      "20",
                      "--max-mutants",
                      "1"},
                     &out);
  ASSERT_EQ(rc, 0) << out;
  long detected = count(
      db,
      "SELECT COUNT(*) FROM verdicts WHERE symptom NOT IN ('pass', 'flaky', 'slow') AND infra = 0");
  ASSERT_GE(detected, 1) << out;
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM reductions"), detected) << out;
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM reductions WHERE ok = 1"), detected) << out;
  EXPECT_EQ(count(db,
                  "SELECT COUNT(*) FROM reductions WHERE how LIKE '%reduced on emu (gpu did not "
                  "reproduce it: infra-error%'"),
            detected)
      << out;
  EXPECT_NE(out.find("reduced on emu (gpu did not reproduce it"), std::string::npos) << out;
  std::string bad;
  EXPECT_NE(
      runWsfuzz({"--kernels", k, "--reduce-backend", "cpu", "--db", d.path + "/x.sqlite"}, &bad),
      0);
  EXPECT_NE(bad.find("--reduce-backend must be gpu or emu"), std::string::npos) << bad;
}

// Killed at the campaign's time limit (SIGINT, as `timeout -s INT` sends it), a reduction is not
// recorded as failed: the same command goes on from its best program on disk with what was left
// of its budget, and records it then (the H200's retention campaign spans several device calls).
// One mutant a session (--max-mutants): the second judges one more and reduces both.
TEST(FuzzCampaign, AnInterruptedReductionGoesOnFromItsBestProgram) {
  if (findNvcc("").empty()) GTEST_SKIP() << "nvcc is not installed";
  Dir d;
  std::string db = d.path + "/r.sqlite", corpus = d.path + "/corpus";
  std::string k = std::string(WSREDUCE_SOURCE_DIR) + "/kernels/tma_pipeline_sm90.cu";
  std::vector<std::string> args = {kWsfuzz,
                                   "--kernels",
                                   k,
                                   "--injectors",
                                   "arrival-count",
                                   "--backend",
                                   "emu",
                                   "-DPIPE_ROWS=512",
                                   "--repeat",
                                   "1",
                                   "-j",
                                   "2",
                                   "--db",
                                   db,
                                   "--corpus",
                                   corpus,
                                   "--cache-dir",
                                   kCache,
                                   "--reduce",
                                   "--reduce-budget",
                                   "20",
                                   "--max-mutants",
                                   "1"};
  std::string log = d.path + "/first.log";
  pid_t pid = spawn(args, log);
  ASSERT_GE(pid, 0);
  // SIGINT once the first reduction has a best program on disk (its first accepted step).
  auto minFiles = [&] {
    std::vector<fs::path> v;
    std::error_code ec;
    if (fs::exists(corpus))
      for (auto &e : fs::recursive_directory_iterator(corpus, ec))
        if (e.path().string().find(".min.cu") != std::string::npos && e.path().extension() == ".cu")
          v.push_back(e.path());
    return v;
  };
  auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(300) && minFiles().empty())
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  auto first = readFile(log).value_or("");
  ASSERT_EQ(minFiles().size(), 1u) << first;
  fs::path best = minFiles().front();
  EXPECT_NE(first.find("the same command goes on from there"), std::string::npos) << first;
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM reductions"), 0)
      << "an interrupted reduction was recorded\n"
      << first;
  // beside it, what it is a reduction of and the search seconds it took (wsreduce's resume state)
  const std::string state = fs::path(best).replace_extension("").string() + ".state.json";
  ASSERT_TRUE(fs::exists(state)) << first;
  EXPECT_NE(readFile(state).value_or("").find("\"spent_s\""), std::string::npos);
  const long at_stop = (long)countNonBlankLines(readFile(best.string()).value_or(""));

  std::string out;
  int rc = runWsfuzz(std::vector<std::string>(args.begin() + 1, args.end()), &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("resuming from " + best.string() + " (" + std::to_string(at_stop) + " lines)"),
            std::string::npos)
      << out;
  long detected = count(
      db,
      "SELECT COUNT(*) FROM verdicts WHERE symptom NOT IN ('pass', 'flaky', 'slow') AND infra = 0");
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM reductions"), detected) << out;
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM reductions WHERE ok = 1"), detected) << out;
  // it went on from where it stopped: never larger than the program it had at the stop
  EXPECT_LE(count(db, "SELECT lines_after FROM reductions WHERE path = '" + best.string() + "'"),
            at_stop)
      << out;
}
