// Flattening (frontend/flatten.h) on real files with the real preprocessor and nvcc: a program
// whose code lives in its own headers and a -I library's (tests/fixtures/flatten/app, inc), the
// CLI that prints it, CUTLASS's example 48, and a reduction that starts from the flattened
// program.
#include "edit.h"
#include "flatten.h"
#include "process.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <sstream>

using namespace wsr;
namespace fs = std::filesystem;

namespace {

const std::string kFix = std::string(WSR_FIXTURES) + "/flatten";
const std::string kNvcc = "/usr/local/cuda/bin/nvcc";

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The #include lines left in a text, as written.
std::vector<std::string> includeLines(const std::string &text) {
  std::vector<std::string> out;
  static const std::regex re(R"(^\s*#\s*include\b.*$)");
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (std::regex_match(line, re)) out.push_back(line);
  return out;
}

FlattenOptions appOptions(const std::string &flag = "all") {
  FlattenOptions fo;
  fo.parse.includes = {kFix + "/inc"};
  std::string e = flattenDirsFromFlag(flag, kFix + "/app/main.cu", fo.parse.includes, &fo.dirs);
  EXPECT_EQ(e, "");
  return fo;
}

std::string appText() { return readFile(kFix + "/app/main.cu").value(); }

struct Work {
  std::string dir = makeTempDir("wsr-flatten.");
  ~Work() { removeTree(dir); }
};

RunRecord run(std::vector<std::string> argv, double timeout = 120, const std::string &cwd = "") {
  RunOptions o;
  o.timeout_s = timeout;
  o.workdir = cwd;
  o.env_set["WSREDUCE_CACHE"] = std::string(WSR_BUILD_DIR) + "/test-cache";
  return runProcess(argv, o);
}

bool haveNvcc() { return fs::exists(kNvcc); }

}  // namespace

TEST(Flatten, InlinesEachHeaderOnceAndKeepsTheSystemOnes) {
  FlattenResult r = flattenProgram(appText(), kFix + "/app/main.cu", appOptions());
  ASSERT_TRUE(r.ok()) << r.error;
  const std::string &t = r.text;
  // local.h, sub/inner.h, sub/sibling.h, lib/vec.cuh, lib/dev_math.cuh, once.h, device_only.h,
  // colors.def.
  EXPECT_EQ(r.headers, 8u) << t;
  // A guarded header included three times (twice by the program, once by sub/inner.h as
  // "../local.h") and a #pragma once header included twice: inlined once each.
  EXPECT_EQ(count(t, "// ---- begin local.h\n"), 1u) << t;
  EXPECT_EQ(count(t, "// ---- begin once.h\n"), 1u) << t;
  EXPECT_EQ(count(t, "// ---- end once.h\n"), 1u) << t;
  // Found beside sub/inner.h by its relative name; found through -I.
  EXPECT_EQ(count(t, "// ---- begin sub/sibling.h\n"), 1u) << t;
  EXPECT_EQ(count(t, "// ---- begin lib/vec.cuh\n"), 1u) << t;
  // A header with no guard (an X-macro list) is inlined at each #include.
  EXPECT_EQ(count(t, "// ---- begin colors.def\n"), 2u) << t;
  // The header only the device side includes is inlined, inside the #if that picks the side.
  const size_t dev = t.find("// ---- begin device_only.h");
  ASSERT_NE(dev, std::string::npos) << t;
  ASSERT_GE(dev, 21u);
  EXPECT_EQ(t.substr(dev - 21, 21), "#ifdef __CUDA_ARCH__\n") << t;
  const size_t dev_end = t.find("// ---- end device_only.h\n", dev);
  ASSERT_NE(dev_end, std::string::npos) << t;
  EXPECT_EQ(t.substr(dev_end + 26, 7), "#endif\n") << t;
  // lib/dev_math.cuh is entered first inside lib/vec.cuh on the device side and first in the
  // program on the host side: inlined at both places, its #pragma once made a guard that empties
  // the second copy on the side that has the first.
  EXPECT_EQ(count(t, "// ---- begin lib/dev_math.cuh\n"), 2u) << t;
  EXPECT_EQ(count(t, "#ifndef WSREDUCE_ONCE_lib_dev_math_cuh\n"), 2u) << t;
  EXPECT_EQ(t.find("#pragma once"), std::string::npos) << t;
  // What is left of #include lines: the C++ library's.
  EXPECT_EQ(includeLines(t),
            (std::vector<std::string>{"#include <cstdio>",
                                      "#include <cstdint>  // a system header: stays an #include"}))
      << t;
}

// The flattened program builds and runs with the toolkit alone, where the program itself needs
// -I; its output is the program's.
TEST(Flatten, TheResultBuildsWithoutTheIncludeFolderAndRunsTheSame) {
  if (!haveNvcc()) GTEST_SKIP() << "no nvcc at " << kNvcc;
  Work w;
  FlattenResult r = flattenProgram(appText(), kFix + "/app/main.cu", appOptions());
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_TRUE(writeFileAtomic(w.dir + "/flat.cu", r.text));
  auto plain = run({kNvcc, "-arch=sm_90a", "-o", w.dir + "/plain", kFix + "/app/main.cu"});
  EXPECT_NE(plain.exit_code, 0) << "the program itself needs -I for lib/vec.cuh";
  auto built = run({kNvcc, "-arch=sm_90a", "-o", w.dir + "/flat", w.dir + "/flat.cu"});
  ASSERT_EQ(built.exit_code, 0) << built.err << built.out;
  auto orig = run(
      {kNvcc, "-arch=sm_90a", "-I", kFix + "/inc", "-o", w.dir + "/orig", kFix + "/app/main.cu"});
  ASSERT_EQ(orig.exit_code, 0) << orig.err;
  // main() prints host values only: it runs without a GPU.
  auto a = run({w.dir + "/orig"}), b = run({w.dir + "/flat"});
  EXPECT_EQ(a.exit_code, 0);
  EXPECT_EQ(b.exit_code, 0);
  EXPECT_EQ(b.out, a.out);
  EXPECT_EQ(a.out, "1 8 4\n");
}

TEST(Flatten, OnlyTheFoldersNamedAreInlined) {
  // --flatten=inc: the library's headers; the program's own stay #include lines.
  FlattenResult r = flattenProgram(appText(), kFix + "/app/main.cu", appOptions(kFix + "/inc"));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.headers, 2u) << r.text;  // lib/vec.cuh, lib/dev_math.cuh
  EXPECT_NE(r.text.find("// ---- begin lib/vec.cuh"), std::string::npos);
  EXPECT_NE(r.text.find("#include \"local.h\"\n"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("#include \"sub/inner.h\"\n"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("// ---- begin local.h"), std::string::npos) << r.text;
  // none: the program as it is.
  FlattenResult n = flattenProgram(appText(), kFix + "/app/main.cu", appOptions("none"));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.headers, 0u);
  EXPECT_EQ(n.text, appText());
}

// The reducer's bisection flattens the first k top-level #include trees. A header that a kept
// #include still reaches is not inlined: the kept file's copy would be a second one.
TEST(Flatten, TheFirstTreesOnlyAndNothingAKeptHeaderReaches) {
  std::string err;
  auto f = Flattener::preprocess(appText(), kFix + "/app/main.cu", appOptions(), &err);
  ASSERT_TRUE(f) << err;
  FlattenResult all = f->flatten();
  ASSERT_EQ(f->trees(), 8u);  // each #include of main.cu that flatten() replaced
  EXPECT_EQ(f->treeName(0), "local.h");
  EXPECT_EQ(f->treeName(1), "sub/inner.h");
  EXPECT_EQ(f->treeName(2), "lib/vec.cuh");
  EXPECT_EQ(f->flattenFirstTrees(8).text, all.text);
  // local.h alone: sub/inner.h stays an #include and includes ../local.h, so local.h stays too.
  FlattenResult one = f->flattenFirstTrees(1);
  EXPECT_EQ(one.headers, 0u) << one.text;
  EXPECT_EQ(one.text, appText());
  // local.h and sub/inner.h's tree (inner.h, sub/sibling.h): no kept header reaches them.
  FlattenResult two = f->flattenFirstTrees(2);
  EXPECT_EQ(two.headers, 3u) << two.text;
  EXPECT_NE(two.text.find("#include \"lib/vec.cuh\"\n"), std::string::npos) << two.text;
  if (!haveNvcc()) GTEST_SKIP() << "no nvcc at " << kNvcc;
  Work w;
  ASSERT_TRUE(writeFileAtomic(w.dir + "/two.cu", two.text));
  // The kept #include lines find their files as the reducer's judge finds them: the program's
  // folder and the -I folders on the path.
  auto built = run({kNvcc, "-arch=sm_90a", "-I", kFix + "/app", "-I", kFix + "/inc", "-c", "-o",
                    w.dir + "/two.o", w.dir + "/two.cu"});
  EXPECT_EQ(built.exit_code, 0) << built.err;
}

TEST(Flatten, AnIncludeCycleIsOneSentenceNamingTheHeaderAndTheLine) {
  auto text = readFile(kFix + "/cycle/cycle.cu").value();
  FlattenOptions fo;
  flattenDirsFromFlag("all", kFix + "/cycle/cycle.cu", {}, &fo.dirs);
  FlattenResult r = flattenProgram(text, kFix + "/cycle/cycle.cu", fo);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.text, "");
  EXPECT_NE(r.error.find("cycle/a.h is included again while it is still being included"),
            std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("cycle/b.h:2"), std::string::npos) << r.error;
  EXPECT_EQ(r.error.find('\n'), std::string::npos) << r.error;
}

TEST(Flatten, AMissingHeaderIsOneSentenceNamingItAndWhereItIsIncluded) {
  auto text = readFile(kFix + "/missing/missing.cu").value();
  FlattenOptions fo;
  flattenDirsFromFlag("all", kFix + "/missing/missing.cu", {}, &fo.dirs);
  FlattenResult r = flattenProgram(text, kFix + "/missing/missing.cu", fo);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("gone.h is not found: it is included at "), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("missing/has_missing.h:3"), std::string::npos) << r.error;
}

TEST(Flatten, TheFlagNamesAllNoneOrFolders) {
  std::vector<std::string> dirs;
  EXPECT_EQ(flattenDirsFromFlag("none", kFix + "/app/main.cu", {kFix + "/inc"}, &dirs), "");
  EXPECT_TRUE(dirs.empty());
  EXPECT_EQ(flattenDirsFromFlag("all", kFix + "/app/main.cu", {kFix + "/inc"}, &dirs), "");
  EXPECT_EQ(dirs, (std::vector<std::string>{kFix + "/app", kFix + "/inc"}));
  EXPECT_EQ(flattenDirsFromFlag(kFix + "/inc," + kFix + "/app/sub", "x.cu", {}, &dirs), "");
  EXPECT_EQ(dirs.size(), 2u);
  std::string e = flattenDirsFromFlag(kFix + "/inc,/no/such/dir", "x.cu", {}, &dirs);
  EXPECT_NE(e.find("/no/such/dir is not a folder"), std::string::npos) << e;
}

TEST(FlattenCli, WritesTheFileOrStdoutAndSaysWhatItDid) {
  Work w;
  const std::string wsoracle = std::string(WSR_BUILD_DIR) + "/oracle/wsoracle";
  auto r = run({wsoracle, "--flatten-only", kFix + "/app/main.cu", "-I", kFix + "/inc", "-o",
                w.dir + "/flat.cu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("wsoracle: flattened 8 headers, 31 lines -> "), std::string::npos) << r.err;
  auto file = readFile(w.dir + "/flat.cu");
  ASSERT_TRUE(file);
  // What the library gives, with the flags wsoracle adds (the harness header's folder) inert.
  EXPECT_EQ(*file, flattenProgram(appText(), kFix + "/app/main.cu", appOptions()).text);
  auto s = run({wsoracle, "--flatten-only", kFix + "/app/main.cu", "-I", kFix + "/inc"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(s.out, *file);
}

// CUTLASS's Hopper warp-specialized GEMM (example 48) as one file: no CUTLASS or CuTe #include is
// left, and nvcc builds it with the toolkit's headers alone. The whole compile is the check, the
// suite's one test over a minute when run beside others (33-44 s alone on a loaded 2-core
// machine, about the original's time: bench/results/2026-12-04-cpu-flatten/): a preprocessor-only
// run would not see a declaration that went missing, and a host-only syntax check would not see the
// device side, where the warp-specialized mainloop lives.
TEST(FlattenCutlass, Example48IsOneFileThatNvccBuildsWithoutCutlass) {
  const std::string c = WSREDUCE_CUTLASS_DIR;
  const std::string ex =
      c + "/examples/48_hopper_warp_specialized_gemm/48_hopper_warp_specialized_gemm.cu";
  if (!fs::exists(ex))
    GTEST_SKIP() << "CUTLASS 4.2.0.0 is not at " << c << " (bash scripts/setup.sh fetches it)";
  if (!haveNvcc()) GTEST_SKIP() << "no nvcc at " << kNvcc;
  Work w;
  const std::string wsoracle = std::string(WSR_BUILD_DIR) + "/oracle/wsoracle";
  auto t0 = std::chrono::steady_clock::now();
  auto r = run({wsoracle, "--flatten-only", ex, "-I", c + "/include", "-I",
                c + "/tools/util/include", "-I", c + "/examples/common", "-o", w.dir + "/ex48.cu"});
  const double flatten_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::cerr << r.err << "flatten took " << flatten_s << " s\n";
  auto text = readFile(w.dir + "/ex48.cu");
  ASSERT_TRUE(text);
  EXPECT_GT(countNonBlankLines(*text), 100000u);  // CUTLASS and CuTe are in it
  for (auto &l : includeLines(*text))
    EXPECT_FALSE(std::regex_search(l, std::regex(R"(["<](cutlass|cute)/)"))) << l;
  EXPECT_EQ(count(*text, "#include \"helper.h\""), 0u);
  t0 = std::chrono::steady_clock::now();
  auto built = run({kNvcc, "-std=c++17", "-arch=sm_90a", "--expt-relaxed-constexpr", "-c", "-o",
                    w.dir + "/ex48.o", w.dir + "/ex48.cu"},
                   600);
  std::cerr << "nvcc took "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
            << " s\n";
  EXPECT_EQ(built.exit_code, 0) << built.err.substr(0, 4000);
}

// A reduction of a ptxas error whose cause is in a header: the headers are inlined first, the
// passes then reach the asm inside sub/sync.cuh, and the result is one file that nvcc builds to
// the same error without -I. About 40 s on 2 cores (each candidate is an nvcc run).
TEST(FlattenReduce, ABugInsideAHeaderIsReducedToOneFile) {
  if (!haveNvcc()) GTEST_SKIP() << "no nvcc at " << kNvcc;
  Work w;
  fs::copy(kFix + "/reduce", w.dir + "/reduce", fs::copy_options::recursive);
  const std::string src = w.dir + "/reduce/fence.cu";
  const std::string before = readFile(src).value();
  auto r = run({std::string(WSR_BUILD_DIR) + "/reducer/wsreduce", src, "--symptom", "compile-error",
                "-j2", "--passes", "remove-stmt,remove-function,remove-decl,cleanup"},
               600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("wsreduce: flattened 2 headers, 19 lines -> 33 lines"), std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("(flattened)"), std::string::npos) << r.out;
  EXPECT_EQ(readFile(src).value(), before) << "the input is never changed";
  auto min = readFile(w.dir + "/reduce/fence.min.cu");
  ASSERT_TRUE(min);
  EXPECT_NE(min->find("tcgen05.fence"), std::string::npos) << *min;
  EXPECT_EQ(min->find("#include \""), std::string::npos) << *min;
  EXPECT_LE(countNonBlankLines(*min), 16u) << *min;  // of 33: the AST passes alone, for CI time
  // Alone in a folder of its own, with the toolkit only: the same ptxas error.
  Work alone;
  ASSERT_TRUE(writeFileAtomic(alone.dir + "/fence.min.cu", *min));
  auto built =
      run({kNvcc, "-arch=sm_90a", "-c", "-o", alone.dir + "/m.o", alone.dir + "/fence.min.cu"});
  EXPECT_NE(built.exit_code, 0);
  EXPECT_NE(built.err.find("tcgen05.fence"), std::string::npos) << built.err;
}

// A header whose meaning depends on where it lies (it asks __has_include for a file beside
// itself) fails another way once inlined: nothing is reduced, and the one sentence names it.
TEST(FlattenReduce, AFlatteningThatChangesTheVerdictNamesTheHeaderAndReducesNothing) {
  if (!haveNvcc()) GTEST_SKIP() << "no nvcc at " << kNvcc;
  Work w;
  fs::copy(kFix + "/reduce", w.dir + "/reduce", fs::copy_options::recursive);
  const std::string src = w.dir + "/reduce/probe.cu";
  auto r = run(
      {std::string(WSR_BUILD_DIR) + "/reducer/wsreduce", src, "--symptom", "compile-error", "-j2"},
      300);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  std::string last = r.err.substr(r.err.rfind('\n', r.err.size() - 2) + 1);
  EXPECT_NE(last.find("the header whose inlining does it is sub/probe.h"), std::string::npos)
      << r.err;
  EXPECT_NE(last.find("configured: the error the original shows"), std::string::npos) << last;
  EXPECT_FALSE(fs::exists(w.dir + "/reduce/probe.min.cu"));
  EXPECT_FALSE(fs::exists(w.dir + "/reduce/probe.min.md"));
  EXPECT_FALSE(fs::exists(w.dir + "/reduce/probe.min.trace.jsonl"));
  // --flatten=none reduces the program as it is.
  auto none = run({std::string(WSR_BUILD_DIR) + "/reducer/wsreduce", src, "--symptom",
                   "compile-error", "-j2", "--flatten=none", "--passes", "remove-stmt"},
                  300);
  EXPECT_EQ(none.exit_code, 0) << none.err;
}
