// The hang watchdog on a CPU: the rewrite on every wait form (tests/fixtures/watchdog/),
// docs/methodology.md's guard table, the instrumented copies parse and compile for
// sm_90a (and every reference kernel for its architecture), and the classifier's side: WSWATCH
// records, the watch file's decoding, signatures and the cuda-gdb style evidence. What only a GPU
// can show (the trap, the records surviving it, the timings) is bench/jobs/watchdog.sh.
#include "build.h"
#include "classify.h"
#include "flags.h"
#include "include/wswatch_abi.h"
#include "oracle.h"
#include "parse.h"
#include "process.h"
#include "watchdog.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

using namespace wsr;

namespace {

const std::string kFix = std::string(WSR_FIXTURES) + "/watchdog";
const std::string kKernels = std::string(WSREDUCE_SOURCE_DIR) + "/kernels";
const std::string kInclude = std::string(WSREDUCE_SOURCE_DIR) + "/oracle/include";

std::string slurp(const std::string &p) {
  auto t = readFile(p);
  EXPECT_TRUE(t.has_value()) << "cannot read " << p;
  return t.value_or("");
}

std::vector<std::string> linesOf(const std::string &t) {
  std::vector<std::string> out;
  std::istringstream in(t);
  std::string l;
  while (std::getline(in, l)) out.push_back(l);
  return out;
}

WatchOptions watchOptions() {
  WatchOptions o;
  o.parse.includes = {kInclude};
  return o;
}

std::string fullRole(const WatchSite &s) {
  if (s.role_word.empty()) return s.role.empty() ? "-" : s.role;
  return s.role_word + ": " + s.role;
}

// Build with the oracle's own path: BuildOptions::watchdog and the instrument hook.
BuildRecord buildWatched(const std::string &path, const std::string &arch,
                         const std::string &cache) {
  BuildOptions o;
  o.arch = arch;
  o.cache_dir = cache;
  o.watchdog = true;
  o.watchdog_ms = 150;
  WatchOptions wo = watchOptions();
  wo.parse.arch = arch;
  o.instrument = [wo](const std::string &text, const std::string &p) {
    auto r = instrumentWatchdog(text, p, wo);
    return r.ok ? r.text : std::string();
  };
  return buildProgram(path, o);
}

class Watchdog : public ::testing::Test {
 protected:
  void SetUp() override {
    cache = makeTempDir("wsr-watchdog-cache.");
    ASSERT_FALSE(cache.empty());
  }
  void TearDown() override { removeTree(cache); }
  std::string cache;
};

}  // namespace

// ---- docs/methodology.md's guard table -------------------------------------------------------

TEST(GuardTable, SeedRowsReadBackIntoRoles) {
  EXPECT_EQ(roleFromGuardText("(warp_id_in_cta >> 2) == 0"), "warpgroup 0");
  EXPECT_EQ(roleFromGuardText("(warp_id_in_cta & 3) == 0"), "warp 0 of its warpgroup");
  EXPECT_EQ(roleFromGuardText("(threadIdx.x % 32) == 0"), "lane 0");
  EXPECT_EQ(roleFromGuardText("wg_id == 0"), "warpgroup 0");
  EXPECT_EQ(roleFromGuardText("warp_id == 0"), "warp 0");
  EXPECT_EQ(roleFromGuardText("lane_id == 0"), "lane 0");
  EXPECT_EQ(roleFromGuardText("threadIdx.x < 1"), "thread 0");
  EXPECT_EQ(roleFromGuardText("(threadIdx.x / 128) == 1"), "warpgroup 1");
  EXPECT_EQ(roleFromGuardText("threadIdx.x >> 7 == 2"), "warpgroup 2");
  EXPECT_EQ(roleFromGuardText("(int)threadIdx.x / 32 == 5"), "warp 5");
  EXPECT_EQ(roleFromGuardText("threadIdx.x == 0"), "thread 0");
  EXPECT_EQ(roleFromGuardText("threadIdx.x >= 128"), "not warpgroup 0");
  EXPECT_EQ(roleFromGuardText("warpgroup != 0"), "not warpgroup 0");
  EXPECT_EQ(roleFromGuardText("warp == 0 && elect_one_sync()"), "warp 0, elected lane");
  EXPECT_EQ(roleFromGuardText("0 == (threadIdx.x & 31)"), "lane 0");
  EXPECT_EQ(roleFromGuardText("cute::elect_one_sync()"), "elected lane");
  EXPECT_EQ(roleFromGuardText("canonical_warp_group_idx() == 1"), "warpgroup 1");
  // not a role guard
  EXPECT_EQ(roleFromGuardText("kt > 0"), "");
  EXPECT_EQ(roleFromGuardText("blockIdx.x == 0"), "");
}

TEST(GuardTable, GuardsInAKernelResolveThroughTheirVariables) {
  const std::string path = kFix + "/roles.cu";
  auto r = instrumentWatchdog(slurp(path), path, watchOptions());
  ASSERT_TRUE(r.ok) << r.error;
  std::map<unsigned, std::string> role_at;
  for (auto &s : r.sites)
    if (s.kind == "helper-call") role_at[s.line] = fullRole(s);
  auto ls = linesOf(slurp(path));
  int checked = 0;
  for (size_t i = 0; i < ls.size(); ++i) {
    auto p = ls[i].find("// ROLE ");
    if (p == std::string::npos || p == 0) continue;
    std::string want = ls[i].substr(p + 8);
    ASSERT_TRUE(role_at.count(i + 1)) << "no site at line " << i + 1;
    EXPECT_EQ(role_at[i + 1], want) << "line " << i + 1 << ": " << ls[i];
    ++checked;
  }
  EXPECT_EQ(checked, 15);
}

// ---- the rewrite ------------------------------------------------------------------------------

TEST_F(Watchdog, EveryWaitFormIsFoundWithItsLineKindAndRole) {
  const std::string path = kFix + "/forms.cu";
  const std::string text = slurp(path);
  auto r = instrumentWatchdog(text, path, watchOptions());
  ASSERT_TRUE(r.ok) << r.error;
  for (auto &w : r.warnings) ADD_FAILURE() << "warning: " << w;
  auto ls = linesOf(text);
  std::vector<std::tuple<unsigned, std::string, std::string>> want;
  for (size_t i = 0; i < ls.size(); ++i) {
    auto p = ls[i].find("// SITE ");
    if (p == std::string::npos || p == 0) continue;
    std::string rest = ls[i].substr(p + 8);
    auto sp = rest.find(' ');
    want.emplace_back(i + 1, rest.substr(0, sp), rest.substr(sp + 1));
  }
  ASSERT_EQ(want.size(), 8u);
  EXPECT_EQ(r.sites.size(), want.size());
  for (auto &[line, kind, role] : want) {
    bool found = false;
    for (auto &s : r.sites)
      if (s.line == line && s.kind == kind) {
        found = true;
        EXPECT_EQ(fullRole(s), role) << "line " << line;
        if (kind == "helper-call") EXPECT_EQ(s.wait_line, 11u) << "the helper's loop";
      }
    EXPECT_TRUE(found) << "no " << kind << " site at line " << line;
  }
  // barrier names come from the source
  for (auto &s : r.sites)
    if (s.kind == "helper-call") EXPECT_TRUE(s.bar == "full" || s.bar == "empty") << s.bar;

  // the user's lines stay where they were: line L of the file is line L + 2 of the copy
  auto cl = linesOf(r.text);
  ASSERT_GT(cl.size(), ls.size() + 2);
  EXPECT_EQ(cl[0], r.shadow ? "#include \"wswatch_rt_shadow.cuh\"" : "#include \"wswatch_rt.cuh\"");
  EXPECT_EQ(cl[1].rfind("#line 1 ", 0), 0u);
  for (auto &[line, kind, role] : want) {
    if (kind == "asm-loop")
      continue;  // the rebuilt asm statement keeps its lines, not its comments
    auto marker = ls[line - 1].substr(ls[line - 1].find("// SITE"));
    EXPECT_NE(cl[line + 1].find(marker), std::string::npos) << "line " << line << " moved";
  }
  for (size_t i = 0; i < ls.size(); ++i)
    if (ls[i].find("out[threadIdx.x] = 1;") != std::string::npos)
      EXPECT_EQ(cl[i + 2], ls[i]) << "the kernel's last line moved";
  // what the rewrite put in
  EXPECT_NE(r.text.find("unsigned __wsw_site = "), std::string::npos)
      << "the helper gets its site parameter";
  EXPECT_NE(r.text.find("%%globaltimer"), std::string::npos) << "the asm loop checks the timer";
  EXPECT_NE(r.text.find("__wsw_ensure(); forms<<<"), std::string::npos)
      << "the launch initialises the buffer";
  EXPECT_NE(r.text.find("unsigned __wsw_cnt[7] = {};"), std::string::npos)
      << "one counter per kernel site";

  // the copy parses
  const std::string copy = cache + "/forms.cu";
  ASSERT_TRUE(writeFileAtomic(copy, r.text));
  ParseOptions po;
  po.includes = {kInclude};
  auto parsed = parseSource(r.text, copy, po);
  EXPECT_TRUE(parsed->ok()) << parsed->firstError();
}

// A launch whose result initialises a local (`cudaError_t e = cudaLaunchKernelEx(...)`, as
// programs written elsewhere do) gets the hook before its declaration, as a launch statement does:
// without it the watch buffer is never mapped and the hang is not named.
TEST_F(Watchdog, ALaunchThatInitialisesALocalGetsTheHookBeforeIt) {
  const std::string path = std::string(WSR_FIXTURES) + "/gpu/mbarrier_hang.cu";
  std::string text = slurp(path);
  const std::string launch = "  k<<<1, 128>>>(d);\n";
  ASSERT_NE(text.find(launch), std::string::npos);
  text.replace(text.find(launch), launch.size(),
               "  cudaLaunchConfig_t cfg = {};\n  cfg.gridDim = dim3(1);\n"
               "  cfg.blockDim = dim3(128);\n"
               "  cudaError_t e = cudaLaunchKernelEx(&cfg, k, d);\n  CHECK(e);\n");
  auto r = instrumentWatchdog(text, path, watchOptions());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NE(r.text.find("__wsw_ensure(); cudaError_t e = cudaLaunchKernelEx"), std::string::npos)
      << r.text;
}

TEST_F(Watchdog, TheFixtureHangInstrumentsAtItsLoop) {
  const std::string path = std::string(WSR_FIXTURES) + "/gpu/mbarrier_hang.cu";
  auto r = instrumentWatchdog(slurp(path), path, watchOptions());
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.sites.size(), 1u);
  EXPECT_EQ(r.sites[0].kind, "loop");
  EXPECT_EQ(r.sites[0].line, 12u);
  EXPECT_EQ(r.sites[0].bar, "bar");
  EXPECT_EQ(r.sites[0].role, "");
}

// A wait inside a header (a library's ClusterBarrier::wait, the pipelines' consumer_wait) is
// bounded too: the copy is the flattened program, and its sites name NAME.flat.cu's lines. nvcc
// builds that copy. A header without a wait leaves the copy the file itself, with its own lines.
TEST_F(Watchdog, AWaitInsideAHeaderIsBoundedInTheFlattenedCopy) {
  const std::string dir = kFix + "/header_wait/";
  OracleOptions o;
  o.build.cache_dir = cache;
  o.build.watchdog = true;
  o.build.includes = {kInclude};
  installWatchdog(o, dir + "kernel.cu");
  ASSERT_TRUE(o.build.instrument);

  const std::string copy = o.build.instrument(slurp(dir + "kernel.cu"), dir + "kernel.cu");
  EXPECT_NE(copy.find("*file = \"kernel.flat.cu\""), std::string::npos) << copy;
  const size_t wait = copy.find("mbarrier.try_wait.parity");
  ASSERT_NE(wait, std::string::npos) << copy;
  EXPECT_NE(copy.rfind("%%globaltimer", wait), std::string::npos)
      << "the header's loop is bounded:\n"
      << copy;
  EXPECT_EQ(copy.find("#include \"pipe.h\""), std::string::npos) << "pipe.h is inlined";

  const std::string own = o.build.instrument(slurp(dir + "nowait.cu"), dir + "nowait.cu");
  EXPECT_NE(own.find("*file = \"nowait.cu\""), std::string::npos) << own;
  EXPECT_NE(own.find("#include \"plain.h\""), std::string::npos) << own;

  if (findNvcc("").empty()) GTEST_SKIP() << "nvcc is not installed on this machine";
  o.build.arch = "sm_90a";
  auto b = buildProgram(dir + "kernel.cu", o.build);
  EXPECT_TRUE(b.ok && b.instrumented) << b.log;
}

TEST_F(Watchdog, CopiesCompileForSm90aThroughTheOraclesBuild) {
  if (findNvcc("").empty()) GTEST_SKIP() << "nvcc is not installed on this machine";
  for (auto f : {"forms.cu", "roles.cu"}) {
    auto b = buildWatched(kFix + "/" + f, "sm_90a", cache);
    EXPECT_TRUE(b.ok) << f << ":\n" << b.log;
    EXPECT_TRUE(b.instrumented) << f << ":\n" << b.log;
    EXPECT_EQ(b.log.find("[wsreduce] watchdog"), std::string::npos) << b.log;
  }
  // the cache knows the flag: the same file without the watchdog is another entry
  BuildOptions plain;
  plain.cache_dir = cache;
  auto a = buildWatched(kFix + "/forms.cu", "sm_90a", cache);
  auto p = buildProgram(kFix + "/forms.cu", plain);
  EXPECT_TRUE(a.cache_hit);
  EXPECT_FALSE(p.cache_hit);
  EXPECT_NE(a.key, p.key);
  EXPECT_FALSE(p.instrumented);
}

// A reducer's or fuzzer's candidate lives in a fresh temp dir each time: the same text must still
// hit the cache (the key names the program's directory by what it holds, not by its path).
TEST_F(Watchdog, TheSameProgramInAnotherDirectoryIsACacheHit) {
  if (findNvcc("").empty()) GTEST_SKIP() << "nvcc is not installed on this machine";
  std::string text = slurp(std::string(WSR_FIXTURES) + "/gpu/mbarrier_hang.cu");
  std::string common = slurp(std::string(WSR_FIXTURES) + "/gpu/common.h");
  std::vector<BuildRecord> bs;
  for (int i = 0; i < 2; ++i) {
    std::string dir = makeTempDir("wsr-cand.");
    ASSERT_TRUE(writeFileAtomic(dir + "/k.cu", text) && writeFileAtomic(dir + "/common.h", common));
    bs.push_back(buildWatched(dir + "/k.cu", "sm_90a", cache));
    removeTree(dir);
  }
  ASSERT_TRUE(bs[0].ok && bs[0].instrumented) << bs[0].log;
  EXPECT_FALSE(bs[0].cache_hit);
  EXPECT_TRUE(bs[1].cache_hit) << "keys " << bs[0].key << " vs " << bs[1].key;
  EXPECT_EQ(bs[0].key, bs[1].key);
}

TEST_F(Watchdog, AFileThatDoesNotParseIsBuiltPlain) {
  if (findNvcc("").empty()) GTEST_SKIP() << "nvcc is not installed on this machine";
  auto b = buildWatched(std::string(WSR_FIXTURES) + "/cuda/syntax_error.cu", "sm_90a", cache);
  EXPECT_FALSE(b.ok);
  EXPECT_FALSE(b.instrumented);
  EXPECT_NE(b.log.find("could not be instrumented"), std::string::npos) << b.log;
  Verdict v = classifyBuild(b);
  EXPECT_EQ(v.detail, "compile-error/frontend")
      << "the program's own error, not the instrumentation's";
}

// A build-only judgment (wsreduce --symptom compile-error) runs nothing, so the watchdog's copy is
// never made: no Clang parse, and nvcc runs once, on the user's file. Without that, a program that
// does not compile cost two builds, the copy's and then the plain file's (strace).
// The verdict must be the one the watched build gives.
TEST_F(Watchdog, ABuildOnlyJudgmentBuildsOnlyThePlainFile) {
  if (findNvcc("").empty()) GTEST_SKIP() << "nvcc is not installed on this machine";
  int copies = 0;
  OracleOptions o;
  o.backend = "gpu";
  o.build.arch = "sm_90a";
  o.build.cache_dir = cache;
  o.build.watchdog = true;
  WatchOptions wo = watchOptions();
  wo.parse.arch = "sm_90a";
  o.build.instrument = [wo, &copies](const std::string &text, const std::string &p) {
    ++copies;
    auto r = instrumentWatchdog(text, p, wo);
    return r.ok ? r.text : std::string();
  };
  const std::string bad = std::string(WSR_FIXTURES) + "/reduce/ptxas_error.cu";

  o.build_only = true;
  BuildRecord once = buildFor(bad, o);
  EXPECT_EQ(copies, 0) << "build-only made the watchdog's copy";
  EXPECT_FALSE(once.ok);
  EXPECT_FALSE(once.instrumented);
  EXPECT_EQ(once.log.find("[wsreduce] watchdog"), std::string::npos) << once.log;
  Verdict plain = judgeBuilt(once, o);

  o.build_only = false;  // the watched build: the copy fails ptxas, then the plain file is built
  BuildRecord twice = buildFor(bad, o);
  EXPECT_EQ(copies, 1);
  EXPECT_NE(twice.log.find("the instrumented copy did not compile"), std::string::npos)
      << twice.log;
  Verdict watched = judgeBuilt(twice, o);
  EXPECT_EQ(plain.symptom, "compile-error");
  EXPECT_EQ(plain.detail, watched.detail);
  EXPECT_EQ(plain.signature, watched.signature);

  // a program that compiles: build-only says so without instrumenting it either
  o.build_only = true;
  Verdict ok = judge(kFix + "/forms.cu", o);
  EXPECT_EQ(copies, 1);
  EXPECT_EQ(ok.symptom, "pass");
  EXPECT_EQ(ok.detail, "compiled");
}

struct KernelCase {
  const char *name, *arch;
  size_t helper_calls;
};

TEST_F(Watchdog, EveryReferenceKernelInstrumentsAndCompiles) {
  const bool have_nvcc = !findNvcc("").empty();
  for (KernelCase k :
       {KernelCase{"ws_gemm_sm90", "sm_90a", 2}, KernelCase{"tma_pipeline_sm90", "sm_90a", 2},
        KernelCase{"ws_attention_sm90", "sm_90a", 4}, KernelCase{"ws_gemm_sm100", "sm_100a", 4}}) {
    const std::string path = kKernels + "/" + k.name + ".cu";
    WatchOptions wo = watchOptions();
    wo.parse.arch = k.arch;
    auto r = instrumentWatchdog(slurp(path), path, wo);
    ASSERT_TRUE(r.ok) << k.name << ": " << r.error;
    size_t calls = 0;
    for (auto &s : r.sites) {
      if (s.kind != "helper-call" || s.bar.rfind("named", 0) == 0) continue;  // mbarrier waits
      ++calls;
      EXPECT_FALSE(s.role.empty()) << k.name << ":" << s.line << " has no role";
      EXPECT_FALSE(s.role_word.empty())
          << k.name << ":" << s.line << " (role " << s.role << ") has no role word";
      EXPECT_FALSE(s.bar.empty()) << k.name << ":" << s.line;
    }
    EXPECT_EQ(calls, k.helper_calls) << k.name;
    if (!have_nvcc) continue;
    auto b = buildWatched(path, k.arch, cache);
    EXPECT_TRUE(b.ok && b.instrumented) << k.name << ":\n" << b.log;
  }
  if (!have_nvcc) GTEST_SKIP() << "nvcc is not installed: instrumented, not compiled";
}

TEST(WatchdogRoles, ReferenceKernelRolesReadLikeTheWorksheets) {
  const std::string path = kKernels + "/ws_gemm_sm90.cu";
  auto r = instrumentWatchdog(slurp(path), path, watchOptions());
  ASSERT_TRUE(r.ok) << r.error;
  std::vector<std::string> roles;
  for (auto &s : r.sites)
    if (s.kind == "helper-call" && s.bar.rfind("named", 0) != 0)
      roles.push_back(fullRole(s) + " @" + s.bar);
  ASSERT_EQ(roles.size(), 2u);
  EXPECT_EQ(roles[0], "producer: warpgroup 0 / warpgroup thread 0 @empty");
  EXPECT_EQ(roles[1], "consumer: not warpgroup 0 @full");
}

// ---- records, signatures, verdicts -------------------------------------------------------

// What the H200 printed for a K loop one tile short in ws_gemm_sm90 (shape of the lines as
// wswatch_rt.cuh writes them; two consumer warpgroups of block 0 parked at full[1], iteration 1).
const char *kRecorded =
    "CUDA error: unspecified launch failure (719) at ws_gemm_sm90.cu:503\n"
    "WSWATCH-STATUS mode=file records=9 dropped=0 bound_ms=200.0 file=ws_gemm_sm90.cu\n"
    "WSWATCH block=0,0,0 warp=4 lane=0 lanes=32 site=2 file=ws_gemm_sm90.cu line=365 wait_line=128 "
    "role=\"consumer: not warpgroup 0\" bar=0x400 gbar=0x7f0000000400 name=full idx=1 parity=0 "
    "iter=1 waited_ms=200.1\n"
    "WSWATCH block=0,0,0 warp=5 lane=0 lanes=32 site=2 file=ws_gemm_sm90.cu line=365 wait_line=128 "
    "role=\"consumer: not warpgroup 0\" bar=0x400 gbar=0x7f0000000400 name=full idx=1 parity=0 "
    "iter=1 waited_ms=200.1\n"
    "WSWATCH block=0,0,0 warp=6 lane=0 lanes=32 site=2 file=ws_gemm_sm90.cu line=365 wait_line=128 "
    "role=\"consumer: not warpgroup 0\" bar=0x400 gbar=0x7f0000000400 name=full idx=1 parity=0 "
    "iter=1 waited_ms=200.1\n"
    "WSWATCH block=0,0,0 warp=7 lane=0 lanes=32 site=2 file=ws_gemm_sm90.cu line=365 wait_line=128 "
    "role=\"consumer: not warpgroup 0\" bar=0x400 gbar=0x7f0000000400 name=full idx=1 parity=0 "
    "iter=1 waited_ms=200.1\n"
    "WSWATCH block=0,0,0 warp=8 lane=0 lanes=32 site=2 file=ws_gemm_sm90.cu line=365 wait_line=128 "
    "role=\"consumer: not warpgroup 0\" bar=0x400 gbar=0x7f0000000400 name=full idx=1 parity=0 "
    "iter=1 waited_ms=200.1\n"
    "WSWATCH block=0,0,0 warp=0 lane=0 lanes=1 site=1 file=ws_gemm_sm90.cu line=343 wait_line=128 "
    "role=\"producer: warpgroup 0 / warpgroup thread 0\" bar=0x428 gbar=0x7f0000000428 name=empty "
    "idx=0 parity=0 iter=5 waited_ms=1.2\n"
    "WSWATCH-SITE site=0 file=ws_gemm_sm90.cu line=128 wait_line=128 kind=helper-default ran=0 "
    "role=\"\"\n"
    "WSWATCH-SITE site=1 file=ws_gemm_sm90.cu line=343 wait_line=128 kind=helper-call ran=1 "
    "role=\"producer: warpgroup 0 / warpgroup thread 0\"\n"
    "WSWATCH-SITE site=2 file=ws_gemm_sm90.cu line=365 wait_line=128 kind=helper-call ran=1 "
    "role=\"consumer: not warpgroup 0\"\n";

TEST(WatchRecords, ParseDeduplicatesPerWarpAndKeepsTheFields) {
  std::string twice = std::string(kRecorded) + kRecorded;  // the exit print and the watch file
  auto w = parseWatchRecords(twice);
  ASSERT_EQ(w.records.size(), 6u);
  ASSERT_EQ(w.sites.size(), 3u);
  EXPECT_EQ(w.mode, "file");
  EXPECT_DOUBLE_EQ(w.bound_ms, 200.0);
  const auto &r = w.records[0];
  EXPECT_EQ(r.warp, 4u);
  EXPECT_EQ(r.lanes, 32u);
  EXPECT_EQ(r.line, 365u);
  EXPECT_EQ(r.wait_line, 128u);
  EXPECT_EQ(r.role, "consumer: not warpgroup 0");
  EXPECT_EQ(r.name, "full");
  EXPECT_EQ(r.idx, 1);
  EXPECT_EQ(r.parity, 0);
  EXPECT_EQ(r.iter, 1);
  EXPECT_EQ(r.bar, 0x400u);
  EXPECT_FALSE(w.sites[0].ran);
  EXPECT_TRUE(w.sites[2].ran);
}

TEST(WatchRecords, SignatureIsTheSetOfParkedRolesWithoutLinesOrIterations) {
  // Lines move and iterations change while the reducer shrinks a program and its shape:
  // the signature keeps which barrier each role is parked on; the evidence keeps the rest.
  auto w = parseWatchRecords(kRecorded);
  // the parked roles, in the emulator's shape (a reduction on one backend, confirmed on the other)
  std::set<unsigned> wgs;
  for (auto &r : w.records) wgs.insert(r.warp / 4);
  std::string want = "hang:mbarrier:";
  for (unsigned g : wgs)
    want += (want.back() == ':' ? "" : ";") + std::string("warpgroup") + std::to_string(g);
  EXPECT_EQ(watchSignature(w), want);
  EXPECT_EQ(want.rfind("hang:mbarrier:warpgroup0;warpgroup1", 0), 0u) << want;
  EXPECT_EQ(watchSiteKey(w),
            "empty role=producer: warpgroup 0 / warpgroup thread 0 iter=5; "
            "full role=consumer: not warpgroup 0 iter=1");
  // the order records arrive in does not matter
  std::string shuffled = kRecorded;
  auto ls = linesOf(shuffled);
  std::string rev;
  for (auto it = ls.rbegin(); it != ls.rend(); ++it) rev += *it + "\n";
  EXPECT_EQ(watchSignature(parseWatchRecords(rev)), watchSignature(w));
}

// One bit of the iteration stays in the signature: a role whose every parked warp waits at its
// first pass of that site (iter=0) is marked "(first)". A consumer parked on its first wait (the
// producer made nothing) is another hang than one parked after some tiles went through (the loop
// one tile short above), as on the emulator, where a reduction slipped from one to the other.
TEST(WatchRecords, ARoleParkedOnItsFirstWaitIsMarked) {
  auto later = parseWatchRecords(kRecorded);
  EXPECT_EQ(watchSignature(later), "hang:mbarrier:warpgroup0;warpgroup1;warpgroup2");
  std::string first = kRecorded;
  for (size_t at; (at = first.find("iter=1 ")) != std::string::npos;)
    first.replace(at, 7, "iter=0 ");
  EXPECT_EQ(watchSignature(parseWatchRecords(first)),
            "hang:mbarrier:warpgroup0;warpgroup1(first);warpgroup2(first)");
  // a warpgroup with one warp past its first wait is not "first"
  std::string mixed = first;
  size_t w5 = mixed.find("warp=5 ");
  size_t it = mixed.find("iter=0 ", w5);
  mixed.replace(it, 7, "iter=3 ");
  EXPECT_EQ(watchSignature(parseWatchRecords(mixed)),
            "hang:mbarrier:warpgroup0;warpgroup1;warpgroup2(first)");
}

TEST(WatchRecords, EvidenceReadsLikeCudaGdb) {
  auto ev = watchEvidence(parseWatchRecords(kRecorded));
  ASSERT_GE(ev.size(), 3u);
  EXPECT_EQ(
      ev[0],
      "warpgroup 1 (consumer: not warpgroup 0), 4 warps of block 0, parked at ws_gemm_sm90.cu:365 "
      "mbarrier full[1] waiting for parity 0, iteration 1 (the wait loop is at line 128)");
  // groups of equal size keep the order the records came in
  EXPECT_EQ(ev[1].rfind("warpgroup 2 warp 8 (consumer: not warpgroup 0), 1 warp of block 0, parked "
                        "at ws_gemm_sm90.cu:365",
                        0),
            0u)
      << ev[1];
  EXPECT_EQ(ev[2],
            "warpgroup 0 warp 0 lane 0 (producer: warpgroup 0 / warpgroup thread 0), 1 warp of "
            "block 0, parked "
            "at ws_gemm_sm90.cu:343 mbarrier empty[0] waiting for parity 0, iteration 5 (the wait "
            "loop is at "
            "line 128)");
}

TEST(WatchRecords, ARunWithRecordsIsAnMbarrierHangEvenAfterTheTrap) {
  RunRecord r;
  r.exit_code = 1;
  r.err = kRecorded;
  Verdict v = classifyRun(r, {});
  EXPECT_EQ(v.detail, "hang/mbarrier");
  EXPECT_EQ(v.signature, watchSignature(parseWatchRecords(kRecorded)));
  ASSERT_FALSE(v.evidence.empty());
  EXPECT_NE(v.evidence[0].find("parked at ws_gemm_sm90.cu:365 mbarrier full[1]"),
            std::string::npos);
  bool coverage = false;
  for (auto &e : v.evidence)
    coverage |= e.find("3 wait sites, all completed at least once") != std::string::npos;
  EXPECT_TRUE(coverage) << "helper-default sites do not count as never run";

  // the records came only through the watch file (the process was killed before any exit print)
  RunRecord k;
  k.timed_out = true;
  k.exit_code = 137;
  k.watch = kRecorded;
  Verdict vk = classifyRun(k, {});
  EXPECT_EQ(vk.detail, "hang/barrier")
      << "still hung at the host timeout: the rest sat in bar.sync";
  EXPECT_EQ(vk.signature.rfind("hang:barrier:", 0), 0u);

  // no records, timeout: as before
  RunRecord n;
  n.timed_out = true;
  n.exit_code = 137;
  EXPECT_EQ(classifyRun(n, {}).detail, "hang/unknown");
  // a WSWATCH line never counts as a CUDA error of its own
  EXPECT_TRUE(
      findCudaErrors("WSWATCH-INIT no host buffer (code 35): waits stay bounded\n").empty());
}

TEST(WatchRecords, PassingRunsReportSitesThatNeverRan) {
  RunRecord r;
  r.exit_code = 0;
  r.watch =
      "WSWATCH-STATUS mode=file records=0 dropped=0 bound_ms=200.0 file=k.cu\n"
      "WSWATCH-SITE site=0 file=k.cu line=10 wait_line=10 kind=helper-default ran=0 role=\"\"\n"
      "WSWATCH-SITE site=1 file=k.cu line=40 wait_line=10 kind=helper-call ran=1 role=\"producer: "
      "warp 0\"\n"
      "WSWATCH-SITE site=2 file=k.cu line=52 wait_line=10 kind=helper-call ran=0 role=\"consumer: "
      "warp 1\"\n";
  Verdict v = classifyRun(r, {});
  EXPECT_EQ(v.symptom, "pass");
  ASSERT_FALSE(v.evidence.empty());
  EXPECT_EQ(v.evidence.back(), "watchdog: 3 wait sites, never completed at lines 52");
}

// An empty watch buffer of this version for the file k.cu with `nsites` sites, and its records
// decoded as the oracle reads a watch file.
std::unique_ptr<wswatch_buf_t> watchBuffer(unsigned nsites) {
  auto b = std::make_unique<wswatch_buf_t>();
  std::memset(b.get(), 0, sizeof(wswatch_buf_t));
  b->magic = WSWATCH_MAGIC;
  b->version = WSWATCH_VERSION;
  b->nsites = nsites;
  std::strcpy(b->file, "k.cu");
  return b;
}
WatchReport decoded(const wswatch_buf_t &b) {
  return parseWatchRecords(
      decodeWatchBuffer(std::string(reinterpret_cast<const char *>(&b), sizeof(wswatch_buf_t))));
}

TEST(WatchRecords, TheWatchFileDecodesIntoTheSameLines) {
  auto b = std::make_unique<wswatch_buf_t>();
  std::memset(b.get(), 0, sizeof(wswatch_buf_t));
  b->magic = WSWATCH_MAGIC;
  b->version = WSWATCH_VERSION;
  b->nsites = 2;
  b->bound_ns = 200000000ull;
  std::strcpy(b->file, "k.cu");
  std::strcpy(b->mode, "file");
  b->sites[1].line = 212;
  b->sites[1].wait_line = 107;
  std::strcpy(b->sites[1].role, "consumer: warpgroup 1");
  std::strcpy(b->sites[1].bar, "full");
  std::strcpy(b->sites[1].kind, "helper-call");
  b->ran[1] = 1;
  auto &r = b->recs[3];  // any slot: the valid word decides
  r.site = 1;
  r.block[0] = 7;
  r.warp = 5;
  r.lanes = 32;
  r.bar_smem = 0x1010;
  r.parity = 1;
  r.iter = 2;
  r.idx = 1;
  r.wait_line = 107;
  r.waited_ns = 201000000ull;
  r.valid = WSWATCH_REC_VALID;
  std::string bytes(reinterpret_cast<const char *>(b.get()), sizeof(wswatch_buf_t));
  std::string text = decodeWatchBuffer(bytes);
  auto w = parseWatchRecords(text);
  ASSERT_EQ(w.records.size(), 1u) << text;
  EXPECT_EQ(w.records[0].block[0], 7u);
  EXPECT_EQ(w.records[0].line, 212u);
  EXPECT_EQ(w.records[0].role, "consumer: warpgroup 1");
  EXPECT_EQ(w.records[0].name, "full");
  EXPECT_EQ(w.records[0].parity, 1);
  EXPECT_EQ(w.records[0].iter, 2);
  EXPECT_EQ(w.records[0].bar, 0x1010u);
  ASSERT_EQ(w.sites.size(), 2u);
  EXPECT_TRUE(w.sites[1].ran);
  EXPECT_EQ(w.mode, "file");
  // not a buffer: nothing
  EXPECT_EQ(decodeWatchBuffer("garbage"), "");
  bytes[0] ^= 1;
  EXPECT_EQ(decodeWatchBuffer(bytes), "");
}

// CTA barriers cannot be bounded: the copy brackets each so that a warp still inside one is seen.
TEST_F(Watchdog, CtaBarriersAreBracketedNotBounded) {
  const std::string path = kKernels + "/ws_gemm_sm90.cu";
  std::string text = slurp(path);
  auto r = instrumentWatchdog(text, path, watchOptions());
  ASSERT_TRUE(r.ok) << r.error;
  // the named barrier helper's asm (bar.sync id, count) and every __syncthreads() of device code
  std::regex enter(R"(__wsw_bar_enter\((\d+)u\))");
  size_t n = 0;
  for (std::sregex_iterator it(r.text.begin(), r.text.end(), enter), end; it != end; ++it) ++n;
  size_t syncs = 0;
  for (size_t at = text.find("__syncthreads()"); at != std::string::npos;
       at = text.find("__syncthreads()", at + 1))
    ++syncs;
  size_t bar_asm = 0;  // the counted ones are bounded instead (CountedNamedBarriers... below)
  for (size_t at = text.find("\"bar.sync"); at != std::string::npos;
       at = text.find("\"bar.sync", at + 1))
    ++bar_asm;
  size_t counted = 0;
  for (size_t at = r.text.find("__wsw_nbar("); at != std::string::npos;
       at = r.text.find("__wsw_nbar(", at + 1))
    ++counted;
  EXPECT_EQ(n + counted, syncs + bar_asm) << "every CTA barrier, once";
  EXPECT_GT(n, 0u);
  EXPECT_GT(counted, 0u);
  EXPECT_NE(r.text.find(", __syncthreads(), __wsw_bar_leave())"), std::string::npos);
  if (findNvcc("").empty()) GTEST_SKIP() << "nvcc is not installed: bracketed, not compiled";
  auto b = buildWatched(path, "sm_90a", cache);
  EXPECT_TRUE(b.ok && b.instrumented) << b.log;
}

// Counted named barriers (bar.sync id, count; barrier.sync.aligned; bar.arrive) run as the
// runtime's bounded software barrier, a sync being a wait site; barriers without a count and
// bar.red stay hardware barriers, bracketed. Markers in the fixture say which line is which.
TEST_F(Watchdog, CountedNamedBarriersAreBoundedTheOthersBracketed) {
  const std::string path = kFix + "/named.cu";
  std::string text = slurp(path);
  auto r = instrumentWatchdog(text, path, watchOptions());
  ASSERT_TRUE(r.ok) << r.error;
  auto src = linesOf(text), out = linesOf(r.text);
  ASSERT_GT(out.size(), src.size() + 2) << "the include and #line, the site table after";
  unsigned named_sync = 0, named_arrive = 0, cta = 0;
  for (size_t i = 0; i < src.size(); ++i) {
    const std::string &got = out[i + 2];  // the include and the #line directive come first
    if (src[i].find("// NAMED sync") != std::string::npos) {
      ++named_sync;
      EXPECT_NE(got.find("__wsw_nbar("), std::string::npos) << got;
      EXPECT_NE(got.find(", 1, "), std::string::npos) << "a sync waits: " << got;
      EXPECT_EQ(got.find("asm"), std::string::npos) << got;
    } else if (src[i].find("// NAMED arrive") != std::string::npos) {
      ++named_arrive;
      EXPECT_NE(got.find("__wsw_nbar((unsigned)(id), (unsigned)(count), 0, 0xffffffffu"),
                std::string::npos)
          << got;
    } else if (src[i].find("// CTA") != std::string::npos) {
      ++cta;
      EXPECT_NE(got.find("__wsw_bar_enter(" + std::to_string(i + 1) + "u)"), std::string::npos)
          << got;
      EXPECT_EQ(got.find("__wsw_nbar("), std::string::npos) << got;
    }
  }
  EXPECT_EQ(named_sync, 3u);
  EXPECT_EQ(named_arrive, 1u);
  EXPECT_EQ(cta, 2u);
  EXPECT_NE(r.text.find("__wsw_nbar(2u, 128u, 1, "), std::string::npos) << "literal operands";
  EXPECT_NE(r.text.find("__wsw_nbar(3u, (unsigned)(128), 1, "), std::string::npos);
  EXPECT_NE(r.text.find("__global__ void named(int *out) { __wsw_kernel_init();"),
            std::string::npos)
      << "the kernel zeroes the barriers' state at its entry";
  // the helper's sync is reported at its call, in the caller's role
  bool helper_call = false;
  for (auto &s : r.sites)
    if (s.kind == "helper-call" && s.line == 21) {
      helper_call = true;
      EXPECT_EQ(s.role, "not warpgroup 0") << s.role;
    }
  EXPECT_TRUE(helper_call);
  if (findNvcc("").empty()) GTEST_SKIP() << "nvcc is not installed: instrumented, not compiled";
  auto b = buildWatched(path, "sm_90a", cache);
  EXPECT_TRUE(b.ok && b.instrumented) << b.log;
}

// The end mode is the runtime's (WSWATCH_END at run time): one copy holds the trap and the exit,
// and every fire path reaches both. In the PTX of the copies: the trap, the exit, the vote that
// picks the sentinel warp, and the named barrier's fire function (not inlined) with all three; the
// asm-loop form reads the first expiry's time to leave at the end of the grace.
TEST_F(Watchdog, OneCopyHoldsBothEndModesAndCompilesForSm90a) {
  const std::string nvcc = findNvcc("");
  if (nvcc.empty()) GTEST_SKIP() << "nvcc is not installed on this machine";
  auto ptxOf = [&](const std::string &name) {
    const std::string path = kFix + "/" + name;
    auto r = instrumentWatchdog(slurp(path), path, watchOptions());
    EXPECT_TRUE(r.ok) << r.error;
    const std::string copy = cache + "/" + name, ptx = copy + ".ptx";
    EXPECT_TRUE(writeFileAtomic(copy, r.text));
    RunOptions ro;
    ro.timeout_s = 300;
    auto run = runProcess({nvcc, "-std=c++17", "-O2", "-arch=sm_90a", "-ptx", "-I" + kInclude,
                           "-I" + kFix, copy, "-o", ptx},
                          ro);
    EXPECT_EQ(run.exit_code, 0) << name << ":\n" << run.err;
    return std::make_pair(r.text, readFile(ptx).value_or(""));
  };
  auto count = [](const std::string &t, const std::string &w) {
    size_t n = 0;
    for (size_t at = t.find(w); at != std::string::npos; at = t.find(w, at + 1)) ++n;
    return n;
  };
  std::map<std::string, std::pair<std::string, std::string>> out;
  for (auto name : {"forms.cu", "named.cu"}) {
    out[name] = ptxOf(name);
    const std::string &ptx = out[name].second;
    ASSERT_FALSE(ptx.empty()) << name;
    EXPECT_GE(count(ptx, "trap;"), 1u) << name;
    EXPECT_GE(count(ptx, "exit;"), 1u) << name;
    EXPECT_GE(count(ptx, "vote.sync.any.pred"), 1u) << name << ": the sentinel is picked";
    EXPECT_NE(ptx.find(".global .align 4 .u32 __wsw_end_exit"), std::string::npos) << name;
  }
  const auto &[forms, forms_ptx] = out["forms.cu"];
  EXPECT_NE(forms.find("\"l\"(__wsw_bound_ns), \"l\"(__wsw_end_watch()), \"l\"(__wsw_grace())"),
            std::string::npos)
      << "the asm-loop form gets the end watch";
  EXPECT_NE(forms_ptx.find("ld.volatile.u64 __wsw_f"), std::string::npos);
  // the named barrier's fire path is its own function: the trap, the exit and the vote are in it
  const std::string &named_ptx = out["named.cu"].second;
  size_t def = std::string::npos;  // the definition: ".func ... __wsw_nbar_fire...(" then "{"
  for (size_t at = named_ptx.find(".func"); at != std::string::npos;
       at = named_ptx.find(".func", at + 1)) {
    size_t brace = named_ptx.find('{', at), semi = named_ptx.find(';', at);
    size_t name_at = named_ptx.find("__wsw_nbar_fire", at);
    if (name_at != std::string::npos && name_at < brace && brace < semi) {
      def = brace;
      break;
    }
  }
  ASSERT_NE(def, std::string::npos) << "the named barrier's fire function is defined";
  const std::string body = named_ptx.substr(def, named_ptx.find("\n}", def) - def);
  EXPECT_GE(count(body, "trap;"), 1u) << body;
  EXPECT_GE(count(body, "exit;"), 1u) << body;
  EXPECT_GE(count(body, "vote.sync.any.pred"), 1u) << body;
}

// Every asm statement that changes an mbarrier (init, arrive, expect_tx, a bulk copy that
// completes bytes on it) gets the same change in the shadow right before it; the copy defines
// WSWATCH_SHADOW and zeroes the shadow at each kernel's entry.
TEST_F(Watchdog, TheShadowFollowsEveryMbarrierChangeInTheFile) {
  const std::string path = kFix + "/shadow.cu";
  std::string text = slurp(path);
  auto r = instrumentWatchdog(text, path, watchOptions());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.shadow) << r.shadow_off;
  EXPECT_EQ(r.text.rfind("#include \"wswatch_rt_shadow.cuh\"\n", 0), 0u);
  EXPECT_NE(r.text.find("{ __wsw_kernel_init();"), std::string::npos);
  auto src = linesOf(text), out = linesOf(r.text);
  unsigned marked = 0;
  for (size_t i = 0; i < src.size(); ++i) {
    size_t m = src[i].find("// SHADOW ");
    if (m == std::string::npos) continue;
    ++marked;
    const std::string &got = out[i + 2];  // the include and #line come first
    std::istringstream want(src[i].substr(m + 10));
    size_t at = 0;
    for (std::string w; want >> w;) {
      size_t p = got.find("__wsw_sh_" + w + "(", at);
      ASSERT_NE(p, std::string::npos) << "line " << i + 1 << " wants " << w << ": " << got;
      at = p + 1;
    }
    EXPECT_LT(at, got.find("asm volatile")) << "before the asm: " << got;
  }
  EXPECT_EQ(marked, 7u);
  EXPECT_NE(r.text.find("__wsw_sh_init((unsigned long long)(&empty), 0, (unsigned)(128))"),
            std::string::npos)
      << "a generic address, a count operand";
  EXPECT_NE(
      r.text.find("__wsw_sh_arrive((unsigned long long)(smem_u32(&empty)), 1, (unsigned)(1u))"),
      std::string::npos)
      << "an arrive's count";
  if (findNvcc("").empty()) GTEST_SKIP() << "nvcc is not installed: instrumented, not compiled";
  auto b = buildWatched(path, "sm_90a", cache);
  EXPECT_TRUE(b.ok && b.instrumented) << b.log;
}

// The shadow is all or nothing: an mbarrier change it cannot follow turns it off for the program,
// with the reason in the copy.
TEST_F(Watchdog, AnMbarrierChangeOutOfTheShadowsSightTurnsItOff) {
  const std::string base = slurp(kFix + "/shadow.cu");
  const std::string anchor =
      "    asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");";
  ASSERT_NE(base.find(anchor), std::string::npos);
  struct Case {
    const char *asm_line, *why;
  } cases[] = {
      {"asm volatile(\"{ .reg .pred p; elect.sync _|p, 0xffffffff; @p "
       "mbarrier.arrive.shared::cta.b64 "
       "_, [%0]; }\" ::\"r\"(smem_u32(&full)));",
       "a predicated mbarrier operation"},
      {"asm volatile(\"mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\" "
       "::\"r\"(smem_u32(&full)));",
       "cannot follow: mbarrier.arrive.release.cluster.shared::cluster.b64"},
      {"asm volatile(\"mbarrier.arrive_drop.shared::cta.b64 _, [%0];\" ::\"r\"(smem_u32(&full)));",
       "arrive_drop"},
      {"asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\" ::\"r\"(smem_u32(&full) + "
       "(unsigned)(out[0]++)));",
       "cannot evaluate twice"},
  };
  for (auto &c : cases) {
    std::string text = base;
    text.replace(text.find(anchor), anchor.size(), anchor + " " + c.asm_line);
    auto r = instrumentWatchdog(text, kFix + "/shadow.cu", watchOptions());
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_FALSE(r.shadow) << c.asm_line;
    EXPECT_NE(r.shadow_off.find(c.why), std::string::npos) << r.shadow_off;
    EXPECT_EQ(r.text.find("__wsw_sh_"), std::string::npos);
    EXPECT_NE(r.text.find("// mbarrier shadow: off (line "), std::string::npos);
  }
}

// What the shadow's counts say of a parked warp, in the emulator's words: arrivals / count phases
// are complete; if that number has the parity waited for, the phase waited on is the next one
// (none or partial arrivals), else the last complete one is held by transaction bytes.
TEST(WatchRecords, TheShadowSaysHowFarTheBarrierGot) {
  auto rec = [](int parity, const std::string &sh) {
    WatchRecord r;
    r.parity = parity;
    std::istringstream in(sh);
    std::string state;
    in >> state;
    r.shadow = state;
    if (state == "init") in >> r.sh_count >> r.sh_arrivals >> r.sh_copies >> r.sh_tx;
    return shadowState(r);
  };
  // count 1 (a full barrier fed by expect_tx): 3 arrivals, the arrivals of phases 0-2 are in
  EXPECT_EQ(rec(0, "init 1 3 3 49152"), "tx") << "waiting on phase 2: its bytes are missing";
  EXPECT_EQ(rec(0, "init 1 3 0 49152"), "tx-none") << "no bulk copy ever issued on it";
  EXPECT_EQ(rec(1, "init 1 3 3 49152"), "none") << "waiting on phase 3: nothing arrived";
  EXPECT_EQ(rec(1, "init 1 2 2 32768"), "tx");
  EXPECT_EQ(rec(0, "init 1 2 2 32768"), "none");
  // count 8 (one arrival per consumer warp): 13 arrivals = phase 0 complete, 5 of phase 1
  EXPECT_EQ(rec(1, "init 8 13 0 0"), "partial");
  EXPECT_EQ(rec(0, "init 8 16 0 0"), "none");
  EXPECT_EQ(rec(0, "init 8 0 0 0"), "none");
  EXPECT_EQ(rec(0, "uninit"), "uninit");
  EXPECT_EQ(rec(-1, "init 8 13 0 0"), "") << "a token wait has no parity to reason from";
  EXPECT_EQ(rec(0, ""), "") << "no shadow";

  // in a signature and the evidence, and through the watch file
  const std::string line =
      "WSWATCH block=0,0,0 warp=4 lane=0 lanes=32 site=2 file=k.cu line=365 wait_line=128 "
      "role=\"consumer\" bar=0x400 gbar=0x0 name=full idx=1 parity=1 iter=0 waited_ms=200.1 "
      "sh=init sh_count=1 sh_arr=2 sh_copies=2 sh_tx=65552\n";
  RunRecord r;
  r.exit_code = 1;
  r.err = line + "CUDA error: unspecified launch failure (719) at k.cu:10\n";
  Verdict v = classifyRun(r, {});
  EXPECT_EQ(v.detail, "hang/mbarrier");
  EXPECT_EQ(v.signature, "hang:mbarrier:warpgroup1(tx,first)");
  std::string evidence;
  for (auto &e : v.evidence) evidence += e + "\n";
  EXPECT_NE(evidence.find("since its init (count 1): 2 arrivals, 2 bulk copies, 65552 tx bytes "
                          "announced (tx)"),
            std::string::npos)
      << evidence;
  RunRecord u = r;
  u.err = std::regex_replace(r.err, std::regex("sh=init.*"), "sh=uninit");
  EXPECT_EQ(classifyRun(u, {}).signature, "hang:mbarrier:warpgroup1(uninit,first)")
      << "a wait on an address no init touched is its own signature";

  auto b = watchBuffer(3);
  auto &x = b->recs[0];
  x.site = 2;
  x.warp = 4;
  x.lanes = 32;
  x.parity = 1;
  x.iter = 0;
  x.sh_state = WSWATCH_SH_INIT;
  x.sh_count = 1;
  x.sh_arrivals = 2;
  x.sh_copies = 2;
  x.sh_tx = 65552;
  x.valid = WSWATCH_REC_VALID;
  auto w = decoded(*b);
  ASSERT_EQ(w.records.size(), 1u);
  EXPECT_EQ(w.records[0].shadow, "init");
  EXPECT_EQ(w.records[0].sh_tx, 65552u);
  EXPECT_EQ(watchSignature(w), "hang:mbarrier:warpgroup1(tx,first)");
}

// A warpgroup parked in a counted named barrier: hang/barrier, the signature naming the barrier,
// the threads that arrived and the count, so that a reduction keeps that barrier short by that
// many rather than any hang; the watch file carries the same fields.
TEST(WatchRecords, ANamedBarrierHangNamesTheBarrierItsArrivalsAndCount) {
  const std::string rec =
      "WSWATCH block=0,0,0 warp=4 lane=0 lanes=32 site=5 file=k.cu line=164 wait_line=93 "
      "role=\"not warpgroup 0\" bar=0x0 gbar=0x0 name=named idx=1 parity=-1 iter=0 "
      "waited_ms=200.4 nbar=1 count=160 arrived=128\n";
  RunRecord r;
  r.exit_code = 1;
  r.err = rec + "CUDA error: unspecified launch failure (719) at k.cu:250\n";
  Verdict v = classifyRun(r, {});
  EXPECT_EQ(v.detail, "hang/barrier");
  EXPECT_EQ(v.signature, "hang:barrier:warpgroup1(named1:128/160)");
  std::string evidence;
  for (auto &e : v.evidence) evidence += e + "\n";
  EXPECT_NE(evidence.find("k.cu:164 named barrier 1 waiting for 160 threads, 128 arrived"),
            std::string::npos)
      << evidence;
  // another count, or other arrivals, is another signature
  RunRecord o = r;
  o.err = std::regex_replace(o.err, std::regex("arrived=128"), "arrived=0");
  EXPECT_NE(classifyRun(o, {}).signature, v.signature);

  auto b = watchBuffer(6);
  b->sites[5].line = 164;
  b->sites[5].wait_line = 93;
  auto &x = b->recs[0];
  x.site = 5;
  x.warp = 4;
  x.lanes = 32;
  x.parity = 0xffffffffu;
  x.iter = 0;
  x.idx = 1;
  x.kind = WSWATCH_REC_NAMED;
  x.nb_count = 160;
  x.nb_arrived = 128;
  x.valid = WSWATCH_REC_VALID;
  auto w = decoded(*b);
  ASSERT_EQ(w.records.size(), 1u);
  EXPECT_TRUE(w.records[0].named);
  EXPECT_EQ(w.records[0].idx, 1);
  EXPECT_EQ(w.records[0].nb_count, 160u);
  EXPECT_EQ(w.records[0].nb_arrived, 128u);
  EXPECT_EQ(watchSignature(w, "barrier"), "hang:barrier:warpgroup1(named1:128/160)");
}

// A role stuck in a CTA barrier while the others park on mbarriers it would have fed: hang/barrier,
// the role in bar.sync named as where it starts; warps in a barrier of a role that also waits on an
// mbarrier are downstream (hang/mbarrier stays).
TEST(WatchRecords, ARoleInsideACtaBarrierIsWhereTheHangStarts) {
  RunRecord r;
  r.exit_code = 1;
  for (auto &l :
       linesOf(kRecorded))  // the consumers parked on full[]; the producer's record left out
    if (l.find("role=\"producer") == std::string::npos) r.err += l + "\n";
  r.watch = "WSWATCH-BAR block=0 warp=0 line=335 file=ws_gemm_sm90.cu\n";
  Verdict v = classifyRun(r, {});
  EXPECT_EQ(v.detail, "hang/barrier");
  EXPECT_EQ(v.signature.rfind("hang:barrier:warpgroup0;warpgroup1", 0), 0u) << v.signature;
  ASSERT_FALSE(v.evidence.empty());
  EXPECT_NE(
      v.evidence[0].find("warpgroup 0, 1 warp(s) inside bar.sync / __syncthreads at line 335"),
      std::string::npos)
      << v.evidence[0];
  EXPECT_NE(v.evidence[0].find("the hang starts here"), std::string::npos);

  auto w = parseWatchRecords(r.err);
  ASSERT_FALSE(w.records.empty());
  unsigned parked_warp = w.records[0].warp;
  RunRecord d = r;
  d.watch = "WSWATCH-BAR block=0 warp=" + std::to_string(parked_warp) +
            " line=420 file=ws_gemm_sm90.cu\n";
  EXPECT_EQ(classifyRun(d, {}).detail, "hang/mbarrier")
      << "the same warpgroup waits on an mbarrier: downstream";

  // killed at the host timeout with warps in a CTA barrier and no record at all
  RunRecord k;
  k.timed_out = true;
  k.exit_code = 137;
  k.watch =
      "WSWATCH-BAR block=3 warp=4 line=99 file=k.cu\nWSWATCH-BAR block=3 warp=5 line=99 "
      "file=k.cu\n";
  k.err = k.watch;  // the same slots printed twice count once
  Verdict vk = classifyRun(k, {});
  EXPECT_EQ(vk.detail, "hang/barrier");
  EXPECT_EQ(vk.signature, "hang:barrier:warpgroup1");
  bool two = false;
  for (auto &e : vk.evidence) two |= e.find("warpgroup 1, 2 warp(s) inside") != std::string::npos;
  EXPECT_TRUE(two);

  // a crash with warps inside a barrier at that moment is still the crash
  RunRecord c;
  c.exit_code = 1;
  c.err = "CUDA error: an illegal memory access was encountered (700) at k.cu:10\n";
  c.watch = "WSWATCH-BAR block=0 warp=0 line=335 file=k.cu\n";
  EXPECT_EQ(classifyRun(c, {}).symptom, "crash");
}

TEST(WatchRecords, TheWatchFileCarriesTheBarrierSlots) {
  auto b = watchBuffer(0);
  b->in_bar[17] = {WSWATCH_IN_BAR | 193u, 2u, 0u, 0u};
  b->in_bar[18] = {193u, 2u, 1u, 0u};  // left the barrier: not reported
  std::string text = decodeWatchBuffer(
      std::string(reinterpret_cast<const char *>(b.get()), sizeof(wswatch_buf_t)));
  auto w = parseWatchRecords(text);
  ASSERT_EQ(w.in_bar.size(), 1u) << text;
  EXPECT_EQ(w.in_bar[0].block, 2u);
  EXPECT_EQ(w.in_bar[0].warp, 0u);
  EXPECT_EQ(w.in_bar[0].line, 193u);
}

// ---- the exit mode (WSWATCH_END=exit) ---------------------------------------------------------

namespace {

// What a run in the trap mode printed, and the same records as the exit mode ends the program: no
// CUDA error (the kernel ended without a trap), the WSWATCH-END line and WSWATCH_END_STATUS.
RunRecord exitModeTwin(const RunRecord &trap) {
  RunRecord x = trap;
  x.exit_code = WSWATCH_END_STATUS;
  x.signal = 0;
  x.err.clear();
  std::string file = "k.cu";
  for (auto &l : linesOf(trap.err)) {
    if (l.rfind("CUDA error", 0) == 0) continue;
    x.err += l + "\n";
    std::smatch m;
    if (std::regex_search(l, m, std::regex("^WSWATCH-STATUS .* file=(\\S+)"))) file = m[1];
  }
  x.err += "WSWATCH-END mode=exit status=" + std::to_string(WSWATCH_END_STATUS) + " file=" + file +
           "\n";
  return x;
}

// The H200's stderr of tests/fixtures/gpu/mbarrier_hang.cu in the trap mode, as recorded in
// bench/results/2026-11-29-h200-session2/watchdog.log (four warps parked on `bar`, mode poll).
const char *kH200MbarrierHang =
    "WSWATCH-INIT the file mapping could not be registered (code 1): polling instead\n"
    "CUDA error: unspecified launch failure (719) at /tmp/wdvar/mbarrier_hang.cu:22\n"
    "WSWATCH-STATUS mode=poll records=4 dropped=0 bound_ms=200.0 file=mbarrier_hang.cu\n"
    "WSWATCH block=0,0,0 warp=0 lane=0 lanes=32 site=0 file=mbarrier_hang.cu line=12 wait_line=12 "
    "role=\"\" bar=0x400 gbar=0x7f8500000400 name=bar idx=-1 parity=0 iter=0 waited_ms=200.0\n"
    "WSWATCH block=0,0,0 warp=1 lane=0 lanes=32 site=0 file=mbarrier_hang.cu line=12 wait_line=12 "
    "role=\"\" bar=0x400 gbar=0x7f8500000400 name=bar idx=-1 parity=0 iter=0 waited_ms=200.0\n"
    "WSWATCH block=0,0,0 warp=2 lane=0 lanes=32 site=0 file=mbarrier_hang.cu line=12 wait_line=12 "
    "role=\"\" bar=0x400 gbar=0x7f8500000400 name=bar idx=-1 parity=0 iter=0 waited_ms=200.0\n"
    "WSWATCH block=0,0,0 warp=3 lane=0 lanes=32 site=0 file=mbarrier_hang.cu line=12 wait_line=12 "
    "role=\"\" bar=0x400 gbar=0x7f8500000400 name=bar idx=-1 parity=0 iter=0 waited_ms=200.0\n"
    "WSWATCH-SITE site=0 file=mbarrier_hang.cu line=12 wait_line=12 kind=loop ran=0 role=\"\"\n";

}  // namespace

// The same records give the same verdict and signature whichever way the program ended: the exit
// mode changes how a fired kernel ends, never what the oracle calls it. The cases: the H200's
// mbarrier hang, the GEMM's K loop one tile short (three warpgroups), a counted named barrier, a
// role inside a CTA barrier (hang/barrier from the bracket's slots), and the shadow's counts.
TEST(WatchEnd, AnExitModeRunIsJudgedAsTheTrapModeRunWithTheSameRecords) {
  std::vector<std::pair<std::string, RunRecord>> cases;
  auto add = [&](const std::string &name, const std::string &err, const std::string &watch) {
    RunRecord r;
    r.exit_code = 1;
    r.err = err;
    r.watch = watch;
    cases.push_back({name, r});
  };
  add("h200 mbarrier_hang", kH200MbarrierHang, "");
  add("gemm k loop short", kRecorded, "");
  add("gemm k loop short, watch file", kRecorded, kRecorded);
  add("named barrier",
      "WSWATCH-STATUS mode=file records=1 dropped=0 bound_ms=200.0 file=k.cu\n"
      "WSWATCH block=0,0,0 warp=4 lane=0 lanes=32 site=5 file=k.cu line=164 wait_line=93 "
      "role=\"not warpgroup 0\" bar=0x0 gbar=0x0 name=named idx=1 parity=-1 iter=0 "
      "waited_ms=200.4 nbar=1 count=160 arrived=128\n"
      "CUDA error: unspecified launch failure (719) at k.cu:250\n",
      "");
  std::string consumers;
  for (auto &l : linesOf(kRecorded))
    if (l.find("role=\"producer") == std::string::npos) consumers += l + "\n";
  add("cta barrier", consumers, "WSWATCH-BAR block=0 warp=0 line=335 file=ws_gemm_sm90.cu\n");
  add("shadow",
      "WSWATCH block=0,0,0 warp=4 lane=0 lanes=32 site=2 file=k.cu line=365 wait_line=128 "
      "role=\"consumer\" bar=0x400 gbar=0x0 name=full idx=1 parity=1 iter=0 waited_ms=200.1 "
      "sh=init sh_count=1 sh_arr=2 sh_copies=2 sh_tx=65552\n"
      "CUDA error: unspecified launch failure (719) at k.cu:10\n",
      "");
  std::set<std::string> details;
  BuildRecord b;
  b.ok = true;
  b.instrumented = true;
  for (auto &[name, trap] : cases) {
    RunRecord exit = exitModeTwin(trap);
    ASSERT_EQ(exit.err.find("CUDA error"), std::string::npos) << name;
    Verdict vt = classifyRun(trap, {}), vx = classifyRun(exit, {});
    EXPECT_EQ(vt.symptom, "hang") << name;
    EXPECT_EQ(vx.symptom, vt.symptom) << name;
    EXPECT_EQ(vx.detail, vt.detail) << name;
    EXPECT_EQ(vx.signature, vt.signature) << name;
    details.insert(vt.detail);
    // a judgment of several runs (--repeat): the same, and not flaky across the two modes
    Verdict rt = classify(b, {trap, trap, trap}, {}), rx = classify(b, {exit, exit, exit}, {});
    Verdict mixed = classify(b, {trap, exit, trap}, {});
    EXPECT_EQ(rx.detail, rt.detail) << name;
    EXPECT_EQ(rx.signature, rt.signature) << name;
    EXPECT_EQ(mixed.detail, rt.detail) << name << ": one run in each mode is not flaky";
    EXPECT_EQ(mixed.signature, rt.signature) << name;
    // the evidence says how the program ended
    auto said = [](const Verdict &v) {
      for (auto &e : v.evidence)
        if (e.find("the watchdog ended the program itself (exit mode, status " +
                   std::to_string(WSWATCH_END_STATUS) + ")") != std::string::npos)
          return true;
      return false;
    };
    EXPECT_TRUE(said(vx)) << name;
    EXPECT_FALSE(said(vt)) << name;
    EXPECT_TRUE(parseWatchRecords(exit.err).ended);
    EXPECT_EQ(parseWatchRecords(exit.err).end_status, WSWATCH_END_STATUS);
    EXPECT_FALSE(parseWatchRecords(trap.err).ended);
  }
  EXPECT_EQ(details, (std::set<std::string>{"hang/mbarrier", "hang/barrier"}));
}

// The watch file says the exit mode ended the program only once the host runtime took the records
// (`taken`): a sentinel that trapped because no host took them leaves a trap-mode file.
TEST(WatchEnd, TheWatchFileSaysWhenTheHostTookTheRecords) {
  auto b = watchBuffer(1);
  b->fired = 1;
  auto &x = b->recs[0];
  x.site = 0;
  x.warp = 4;
  x.lanes = 32;
  x.parity = 0;
  x.iter = 0;
  x.valid = WSWATCH_REC_VALID;
  auto text = [&] {
    return decodeWatchBuffer(std::string(reinterpret_cast<const char *>(b.get()), sizeof *b));
  };
  EXPECT_EQ(text().find("WSWATCH-END"), std::string::npos) << "the trap mode";
  b->end_mode = WSWATCH_END_EXIT;
  b->ended = 1;
  EXPECT_EQ(text().find("WSWATCH-END"), std::string::npos) << "ended, not yet taken";
  b->taken = 1;
  auto w = parseWatchRecords(text());
  EXPECT_TRUE(w.ended) << text();
  EXPECT_EQ(w.end_status, WSWATCH_END_STATUS);
  ASSERT_EQ(w.records.size(), 1u);
  EXPECT_EQ(watchSignature(w), "hang:mbarrier:warpgroup1(first)");
}

namespace {

// A program (a script standing in for an instrumented binary) that writes a watch file with the
// given fields and then does what `then` says.
struct FakeWatchedRun {
  std::string dir, image;
  BuildRecord b;
  FakeWatchedRun(const wswatch_buf_t &buf, const std::string &then) {
    dir = makeTempDir("wsr-watch-end.");
    image = dir + "/image.bin";
    EXPECT_TRUE(writeFileAtomic(
        image, std::string(reinterpret_cast<const char *>(&buf), sizeof(wswatch_buf_t))));
    const std::string prog = dir + "/prog.sh";
    EXPECT_TRUE(writeFileAtomic(prog, "#!/bin/sh\ncp '" + image + "' \"$WSWATCH_FILE\"\n" + then +
                                          "\n"));
    ::chmod(prog.c_str(), 0755);
    b.ok = true;
    b.instrumented = true;
    b.binary = prog;
  }
  ~FakeWatchedRun() { removeTree(dir); }
};

}  // namespace

// The oracle's side of a run: a program the exit mode ended comes back at its own end (its
// status, no kill, nothing waited for) with the verdict of the trap; one whose records are final
// (`ended`) but that no host thread took (`taken`) is ended soon after, not kAfterFireS (1.5 s)
// after the watchdog fired, as a trap-mode program still is.
TEST(WatchEnd, TheOracleEndsAnExitModeRunAtItsOwnEnd) {
  auto buf = watchBuffer(1);
  buf->fired = 1;
  buf->bound_ns = 200000000ull;
  std::strcpy(buf->mode, "file");
  auto &x = buf->recs[0];
  x.warp = 4;
  x.lanes = 32;
  x.parity = 0;
  x.iter = 0;
  x.valid = WSWATCH_REC_VALID;
  OracleOptions o;
  o.run.timeout_s = 20;
  o.confirm_plain = false;

  // trap mode, the process lives on after the trap: ended 1.5 s after `fired`
  FakeWatchedRun trap(*buf, "sleep 30");
  Verdict vt = judgeBuilt(trap.b, o);
  ASSERT_EQ(vt.runs.size(), 1u);
  EXPECT_EQ(vt.detail, "hang/mbarrier");
  EXPECT_GE(vt.runs[0].wall_ms, 1500);

  // exit mode, the program ends itself: its own status, at once
  buf->end_mode = WSWATCH_END_EXIT;
  buf->ended = 1;
  buf->taken = 1;
  FakeWatchedRun self(*buf, "exit " + std::to_string(WSWATCH_END_STATUS));
  Verdict vs = judgeBuilt(self.b, o);
  ASSERT_EQ(vs.runs.size(), 1u);
  EXPECT_EQ(vs.runs[0].exit_code, WSWATCH_END_STATUS);
  EXPECT_LT(vs.runs[0].wall_ms, 1000);
  EXPECT_EQ(vs.detail, vt.detail);
  EXPECT_EQ(vs.signature, vt.signature);
  bool said = false;
  for (auto &e : vs.evidence) said |= e.find("ended the program itself") != std::string::npos;
  EXPECT_TRUE(said);

  // exit mode, records final, not taken, the process still there: ended well before 1.5 s
  buf->taken = 0;
  FakeWatchedRun held(*buf, "sleep 30");
  Verdict vh = judgeBuilt(held.b, o);
  ASSERT_EQ(vh.runs.size(), 1u);
  EXPECT_LT(vh.runs[0].wall_ms, 1200);
  EXPECT_GE(vh.runs[0].wall_ms, 300);
  EXPECT_EQ(vh.detail, vt.detail);
  EXPECT_EQ(vh.signature, vt.signature);
}

TEST(Timeouts, CalibratedIsClampedKTimesObserved) {
  EXPECT_DOUBLE_EQ(calibratedTimeout(150, 10, 2, 60), 2.0);  // 1.5 s -> the floor
  EXPECT_DOUBLE_EQ(calibratedTimeout(800, 10, 2, 60), 8.0);
  EXPECT_DOUBLE_EQ(calibratedTimeout(30000, 10, 2, 60), 60.0);  // the cap
  EXPECT_DOUBLE_EQ(calibratedTimeout(0, 10, 2, 60), 2.0);
}

TEST(Timeouts, AKilledRunIsRetriedOnceWithTwiceTheTimeout) {
  // a host program that sleeps 1.5 s: killed at 1 s, finishes within the 2 s retry
  const std::string dir = makeTempDir("wsr-retry.");
  const std::string prog = dir + "/slow.sh";
  ASSERT_TRUE(writeFileAtomic(prog, "#!/bin/sh\nsleep 1.5\necho done\n"));
  ::chmod(prog.c_str(), 0755);
  BuildRecord b;
  b.ok = true;
  b.binary = prog;
  OracleOptions o;
  o.run.timeout_s = 1;
  Verdict v = judgeBuilt(b, o);
  EXPECT_EQ(v.symptom, "pass");
  bool noted = false;
  for (auto &e : v.evidence)
    noted |= e.find("retried with 2.0 s: it finished (slow, not hung)") != std::string::npos;
  EXPECT_TRUE(noted);
  o.retry_timeout = false;
  EXPECT_EQ(judgeBuilt(b, o).detail, "hang/unknown");
  // the calibrated timeout is used and explained
  o.retry_timeout = true;
  o.calibrate = true;
  o.calibrate_observed_ms = 250;
  o.calibrate_k = 10;
  o.calibrate_floor_s = 0.5;
  o.calibrate_cap_s = 60;
  Verdict c = judgeBuilt(b, o);
  EXPECT_EQ(c.symptom, "pass");
  bool explained = false;
  for (auto &e : c.evidence)
    explained |= e.find("timeout 2.5 s = clamp(10 x 250 ms") != std::string::npos;
  EXPECT_TRUE(explained);
  removeTree(dir);
}

TEST(Forensics, TheTimeoutHookRunsBeforeTheKill) {
  RunOptions ro;
  ro.timeout_s = 0.5;
  int seen = 0;
  ro.on_timeout = [&](int pid) {
    seen = pid;
    return std::string(::kill(pid, 0) == 0 ? "alive" : "gone");
  };
  RunRecord r = runProcess({"sleep", "5"}, ro);
  EXPECT_TRUE(r.timed_out);
  EXPECT_GT(seen, 0);
  EXPECT_EQ(r.forensics, "alive");
}
