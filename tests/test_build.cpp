// The build stage with the real nvcc, and judge() end to end on programs a CPU can run.
#include "cache.h"
#include "keeper.h"
#include "oracle.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

using namespace wsr;
namespace fs = std::filesystem;

namespace {
std::string fixture(const std::string &rel) { return std::string(WSR_FIXTURES) + "/" + rel; }

class Build : public ::testing::Test {
 protected:
  void SetUp() override {
    if (findNvcc("").empty()) GTEST_SKIP() << "nvcc is not installed on this machine";
    cache = makeTempDir("wsr-cache.");
    opt.build.cache_dir = cache;
    opt.run.timeout_s = 20;
  }
  void TearDown() override { removeTree(cache); }
  std::string cache;
  OracleOptions opt;
};
}  // namespace

TEST_F(Build, SyntaxErrorIsFrontendAndItsSignatureSurvivesMovedLines) {
  auto v = judge(fixture("cuda/syntax_error.cu"), opt);
  EXPECT_EQ(v.detail, "compile-error/frontend");
  EXPECT_NE(v.signature.find("expected a \";\""), std::string::npos) << v.signature;

  // The same error three lines lower, in another directory: the same signature.
  std::string dir = makeTempDir("wsr-src.");
  std::string moved = dir + "/other.cu";
  ASSERT_TRUE(writeFileAtomic(moved, "\n\n\n" + *readFile(fixture("cuda/syntax_error.cu"))));
  auto w = judge(moved, opt);
  EXPECT_EQ(w.signature, v.signature);
  removeTree(dir);
}

TEST_F(Build, WgmmaBuiltForPlainSm90IsAPtxasError) {
  opt.build.arch = "sm_90";
  auto v = judge(fixture("cuda/wgmma_plain_sm90.cu"), opt);
  EXPECT_EQ(v.detail, "compile-error/ptxas");
  EXPECT_NE(v.signature.find("wgmma"), std::string::npos) << v.signature;
}

TEST_F(Build, TheSameProgramBuiltForSm90aCompiles) {
  auto b = buildProgram(fixture("cuda/wgmma_plain_sm90.cu"), opt.build);
  EXPECT_TRUE(b.ok) << b.log;
}

TEST_F(Build, SecondBuildOfTheSameSourceAndFlagsIsACacheHit) {
  auto a = buildProgram(fixture("cuda/host_stripes.cu"), opt.build);
  ASSERT_TRUE(a.ok) << a.log;
  EXPECT_FALSE(a.cache_hit);
  auto b = buildProgram(fixture("cuda/host_stripes.cu"), opt.build);
  EXPECT_TRUE(b.cache_hit);
  EXPECT_EQ(a.key, b.key);
  EXPECT_TRUE(fs::exists(b.binary));
  // The same text under another name is another binary (-lineinfo and assert() carry the name).
  std::string dir = makeTempDir("wsr-src.");
  ASSERT_TRUE(writeFileAtomic(dir + "/renamed.cu", *readFile(fixture("cuda/host_stripes.cu"))));
  auto r = buildProgram(dir + "/renamed.cu", opt.build);
  removeTree(dir);
  EXPECT_NE(r.key, a.key);
  EXPECT_FALSE(r.cache_hit);
  // Another flag is another program.
  opt.build.defines.push_back("SOMETHING=1");
  auto c = buildProgram(fixture("cuda/host_stripes.cu"), opt.build);
  EXPECT_NE(c.key, a.key);
  EXPECT_FALSE(c.cache_hit);
}

TEST_F(Build, ACacheHitMarksItsEntryUsedNow) {
  auto a = buildProgram(fixture("cuda/host_stripes.cu"), opt.build);
  ASSERT_TRUE(a.ok) << a.log;
  fs::path entry = fs::path(cache) / "build" / a.key;
  ASSERT_TRUE(fs::is_directory(entry));
  const auto past = fs::file_time_type::clock::now() - std::chrono::hours(5);
  fs::last_write_time(entry, past);
  auto b = buildProgram(fixture("cuda/host_stripes.cu"), opt.build);
  ASSERT_TRUE(b.cache_hit);
  EXPECT_GT(fs::last_write_time(entry), past + std::chrono::hours(4));
}

TEST_F(Build, ChangingAnIncludedLocalHeaderChangesTheKey) {
  std::string dir = makeTempDir("wsr-src.");
  ASSERT_TRUE(writeFileAtomic(dir + "/knobs.h", "#define N 4\n"));
  ASSERT_TRUE(
      writeFileAtomic(dir + "/p.cu", "#include \"knobs.h\"\nint main() { return N - 4; }\n"));
  auto a = buildProgram(dir + "/p.cu", opt.build);
  ASSERT_TRUE(writeFileAtomic(dir + "/knobs.h", "#define N 5\n"));
  auto b = buildProgram(dir + "/p.cu", opt.build);
  EXPECT_NE(a.key, b.key);
  EXPECT_FALSE(b.cache_hit);
  auto v = judgeBuilt(b, opt);
  EXPECT_EQ(v.detail, "wrong/unspecified");  // exit 1, nothing else
  removeTree(dir);
}

// What both builds' cache keys hold besides the program (the GPU build and the emulator's): the
// headers it reaches, quoted beside it and angled under an -I folder. An edited library header
// changes it; the same program and headers in another folder (a reducer's temp dir) do not.
TEST(CacheKey, ReachedHeadersFollowLibraryHeadersAndNotTheFolder) {
  const std::string lib = makeTempDir("wsr-lib."), a = makeTempDir("wsr-a."),
                    b = makeTempDir("wsr-b.");
  ASSERT_TRUE(writeFileAtomic(lib + "/pipe.h", "#define STAGES 4\n"));
  for (auto &d : {a, b}) {
    ASSERT_TRUE(writeFileAtomic(d + "/local.h", "#include <pipe.h>\n"));
    ASSERT_TRUE(writeFileAtomic(d + "/p.cu", "#include \"local.h\"\n#include <cstdio>\n"));
  }
  const std::string before = reachedHeaders(a + "/p.cu", {lib});
  EXPECT_NE(before.find("#define STAGES 4"), std::string::npos) << before;
  EXPECT_EQ(before.find("cstdio"), std::string::npos) << "the toolkit's headers stay out";
  EXPECT_EQ(reachedHeaders(b + "/p.cu", {lib}), before) << "another folder, the same key";
  ASSERT_TRUE(writeFileAtomic(lib + "/pipe.h", "#define STAGES 5\n"));
  EXPECT_NE(reachedHeaders(a + "/p.cu", {lib}), before) << "an edited library header";
  for (auto &d : {lib, a, b}) removeTree(d);
}

TEST_F(Build, HostHarnessStripesEndToEnd) {
  auto v = judge(fixture("cuda/host_stripes.cu"), opt);
  EXPECT_EQ(v.detail, "wrong/row-stripe");
  // its reference is 1.0 everywhere, which the harness says (ref=constant) and the signature keeps
  EXPECT_EQ(v.signature, "wrong:C:row-stripe+ref-constant");
}

TEST_F(Build, ACudaCallWithoutAGpuIsInfraError) {
  if (gpuPresent()) GTEST_SKIP() << "this machine has a GPU; the no-GPU path cannot be shown here";
  auto v = judge(fixture("cuda/needs_gpu.cu"), opt);
  EXPECT_EQ(v.symptom, "infra-error") << v.detail;
  EXPECT_EQ(v.detail, "infra-error/no-gpu");
}

TEST_F(Build, EveryGpuFixtureCompilesForSm90a) {
  // The programs the H200 run judges (bench/results) must at least build everywhere.
  for (auto name : {"pass", "mbarrier_hang", "oob_store", "trap", "stripes", "nan"}) {
    auto b = buildProgram(fixture(std::string("gpu/") + name + ".cu"), opt.build);
    EXPECT_TRUE(b.ok) << name << ":\n" << b.log;
  }
}

TEST_F(Build, MissingNvccIsInfraNotACompileError) {
  opt.build.nvcc = "/nonexistent/nvcc";
  auto v = judge(fixture("cuda/host_stripes.cu"), opt);
  EXPECT_EQ(v.detail, "infra-error/compiler-missing");
}

TEST_F(Build, RepeatRunsFreshProcessesAndRecordsEach) {
  opt.repeat = 3;
  auto v = judge(fixture("cuda/host_stripes.cu"), opt);
  EXPECT_EQ(v.detail, "wrong/row-stripe");
  EXPECT_EQ(v.runs.size(), 3u);
}

// The GPU keeper (oracle/keeper.h): built once by the real nvcc into the cache; on a GPU it holds
// a context until stopped, without one it gives up at once (cudaFree fails) and start() says why.
TEST_F(Build, KeeperProgramIsBuiltOnceAndHoldsAContextOnlyWhereThereIsAGpu) {
  std::string err;
  std::string prog = keeperProgram(opt.build, &err);
  ASSERT_FALSE(prog.empty()) << err;
  auto again = keeperProgram(opt.build, &err);
  EXPECT_EQ(again, prog) << "built once per nvcc, then reused from the cache";
  GpuKeepers k;
  std::string line = k.start({""}, opt.build);
  if (!gpuPresent()) {
    EXPECT_EQ(k.running(), 0u) << line;
    EXPECT_NE(line.find("no GPU"), std::string::npos) << line;
    RunOptions ro;
    ro.timeout_s = 60;
    auto r = runProcess({prog}, ro);
    EXPECT_FALSE(r.timed_out) << "without a device the keeper must not idle";
    EXPECT_EQ(r.exit_code, 1);
  } else {
    ASSERT_EQ(k.running(), 1u) << line;
    k.stop();
    EXPECT_EQ(k.running(), 0u);
  }
}

// The cache's size limit, on a real directory tree (no nvcc needed).
namespace {
void entry(const fs::path &p, size_t bytes, std::chrono::minutes age, bool dir = true) {
  fs::create_directories(dir ? p : p.parent_path());
  ASSERT_TRUE(writeFileAtomic(dir ? (p / "prog").string() : p.string(), std::string(bytes, 'x')));
  auto t = fs::file_time_type::clock::now() - age;
  if (dir) fs::last_write_time(p / "prog", t);
  fs::last_write_time(p, t);
}
}  // namespace

TEST(Cache, TheLeastRecentlyUsedEntriesGoFirstDownToThreeQuartersOfTheLimit) {
  std::string c = makeTempDir("wsr-cache.");
  using std::chrono::minutes;
  entry(fs::path(c) / "build" / "a", 1000, minutes(180));
  entry(fs::path(c) / "build" / "b", 1000, minutes(120));
  entry(fs::path(c) / "emu" / "c", 1000, minutes(60));
  entry(fs::path(c) / "emu" / "pre-c", 16, minutes(60), false);
  entry(fs::path(c) / "emu" / "d", 1000, minutes(0));
  entry(fs::path(c) / "emu" / "pch-x", 1000, minutes(150));        // the runtime header: kept
  entry(fs::path(c) / "build" / ".tmp-old-1", 100, minutes(120));  // a killed build's leftover
  entry(fs::path(c) / "build" / ".tmp-new-2", 100, minutes(0));    // a build in progress

  // 5216 bytes, 5116 once the leftover is gone; the limit 4400 asks for at most 3300.
  auto p = pruneCache(c, 4400);
  EXPECT_EQ(p.bytes_before, 5216u);
  EXPECT_FALSE(fs::exists(fs::path(c) / "build" / ".tmp-old-1"));
  EXPECT_FALSE(fs::exists(fs::path(c) / "build" / "a"));
  EXPECT_FALSE(fs::exists(fs::path(c) / "build" / "b"));
  EXPECT_TRUE(fs::exists(fs::path(c) / "emu" / "c"));
  EXPECT_TRUE(fs::exists(fs::path(c) / "emu" / "d"));
  EXPECT_TRUE(fs::exists(fs::path(c) / "emu" / "pch-x"));
  EXPECT_TRUE(fs::exists(fs::path(c) / "build" / ".tmp-new-2"));
  EXPECT_EQ(p.removed, 3u);
  EXPECT_EQ(p.bytes_after, 3116u);

  // Over the limit, but everything left was used within the protected window: nothing goes.
  auto q = pruneCache(c, 1, /*keep_recent_s=*/100000);
  EXPECT_EQ(q.removed, 0u);
  EXPECT_EQ(q.bytes_after, 3116u);
  // Without the window everything but the runtime header and the build in progress goes; limit 0
  // is no limit.
  auto z = pruneCache(c, 0, 0);
  EXPECT_EQ(z.removed, 0u);
  auto r = pruneCache(c, 1, 0);
  EXPECT_EQ(r.bytes_after, 1100u);
  EXPECT_TRUE(fs::exists(fs::path(c) / "emu" / "pch-x"));
  EXPECT_TRUE(fs::exists(fs::path(c) / "build" / ".tmp-new-2"));
  removeTree(c);
}

TEST(Cache, TheLimitIsReadFromTheEnvironment) {
  const char *was = std::getenv("WSREDUCE_CACHE_MAX");
  std::string saved = was ? was : "";
  setenv("WSREDUCE_CACHE_MAX", "512M", 1);
  EXPECT_EQ(cacheLimitBytes(), 512ull << 20);
  setenv("WSREDUCE_CACHE_MAX", "2GiB", 1);
  EXPECT_EQ(cacheLimitBytes(), 2ull << 30);
  setenv("WSREDUCE_CACHE_MAX", "0", 1);
  EXPECT_EQ(cacheLimitBytes(), 0u);
  setenv("WSREDUCE_CACHE_MAX", "lots", 1);
  EXPECT_EQ(cacheLimitBytes(), 4ull << 30);
  unsetenv("WSREDUCE_CACHE_MAX");
  EXPECT_EQ(cacheLimitBytes(), 4ull << 30);
  if (was) setenv("WSREDUCE_CACHE_MAX", saved.c_str(), 1);
}
