// wsoracle as a user runs it: bad input ends in one clear sentence and a non-zero exit.
#include "process.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include <sys/stat.h>

using namespace wsr;

namespace fs = std::filesystem;

namespace {
std::string tool() { return std::string(WSR_BUILD_DIR) + "/oracle/wsoracle"; }
std::string fixture(const std::string &rel) { return std::string(WSR_FIXTURES) + "/" + rel; }

RunRecord wsoracle(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), tool());
  RunOptions o;
  o.timeout_s = 120;
  o.env_set = env;
  o.env_set["WSREDUCE_CACHE"] = std::string(WSR_BUILD_DIR) + "/test-cache";
  return runProcess(args, o);
}

// One sentence: a single non-empty line on stderr, starting with the tool's name.
void expectOneSentence(const RunRecord &r, const std::string &needle) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  std::string e = r.err;
  while (!e.empty() && e.back() == '\n') e.pop_back();
  EXPECT_EQ(e.find('\n'), std::string::npos) << "more than one line: " << r.err;
  EXPECT_EQ(e.rfind("wsoracle: ", 0), 0u) << e;
  EXPECT_NE(e.find(needle), std::string::npos) << e;
}
}  // namespace

TEST(WsoracleCli, MissingFile) {
  expectOneSentence(wsoracle({"/no/such/kernel.cu"}), "does not exist");
}

TEST(WsoracleCli, Directory) { expectOneSentence(wsoracle({"/tmp"}), "is a directory"); }

TEST(WsoracleCli, UnreadableFile) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads every file; permission errors cannot be shown";
  std::string d = makeTempDir("wsr-cli.");
  writeFileAtomic(d + "/k.cu", "int main(){}");
  ::chmod((d + "/k.cu").c_str(), 0);
  expectOneSentence(wsoracle({d + "/k.cu"}), "cannot be read");
  removeTree(d);
}

TEST(WsoracleCli, NvccNotFound) {
  expectOneSentence(wsoracle({fixture("cuda/host_stripes.cu"), "--nvcc", "/nonexistent/nvcc"}),
                    "not an executable");
}

TEST(WsoracleCli, UnwritableCacheDir) {
  expectOneSentence(wsoracle({fixture("cuda/host_stripes.cu"), "--cache-dir", "/proc/wsr-cache"}),
                    "cache directory");
}

TEST(WsoracleCli, UnreadableCacheLimit) {
  RunOptions o;
  o.timeout_s = 120;
  o.env_set["WSREDUCE_CACHE"] = std::string(WSR_BUILD_DIR) + "/test-cache";
  o.env_set["WSREDUCE_CACHE_MAX"] = "lots";
  expectOneSentence(runProcess({tool(), fixture("cuda/host_stripes.cu")}, o),
                    "WSREDUCE_CACHE_MAX must be a size");
}

TEST(WsoracleCli, BadFlagValue) {
  expectOneSentence(wsoracle({fixture("cuda/host_stripes.cu"), "--sanitizer", "bogus"}),
                    "--sanitizer must be");
  expectOneSentence(wsoracle({fixture("cuda/host_stripes.cu"), "--match", "(["}), "--match");
}

TEST(WsoracleCli, UnknownFlagIsRejected) {
  auto r = wsoracle({fixture("cuda/host_stripes.cu"), "--bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("Unknown command line argument"), std::string::npos) << r.err;
}

TEST(WsoracleCli, VerdictAsJsonAndExitStatusOne) {
  auto r = wsoracle({fixture("cuda/host_stripes.cu"), "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("\"detail\": \"wrong/row-stripe\""), std::string::npos) << r.out;
}

TEST(WsoracleCli, NoGpuIsInfraErrorWithExitThree) {
  if (::access("/dev/nvidia0", F_OK) == 0) GTEST_SKIP() << "this machine has a GPU";
  auto r = wsoracle({fixture("cuda/needs_gpu.cu"), "--backend", "gpu"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("infra-error"), std::string::npos);
  EXPECT_EQ(r.out.find("crash"), std::string::npos);
}

// auto without a GPU: nvcc builds first (its compile errors stand), the emulator runs the program.
TEST(WsoracleCli, AutoWithoutAGpuRunsOnTheEmulator) {
  if (::access("/dev/nvidia0", F_OK) == 0)
    GTEST_SKIP() << "this machine has a GPU: auto means the GPU";
  auto r = wsoracle({fixture("gpu/mbarrier_hang.cu"), "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("\"backend\": \"emu\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"detail\": \"hang/mbarrier\""), std::string::npos) << r.out;
  auto c = wsoracle({fixture("reduce/ptxas_error.cu")});
  EXPECT_NE(c.out.find("compile-error/ptxas"), std::string::npos) << "nvcc's verdict stands:\n"
                                                                  << c.out;
}

// A file name is data: spaces, quotes, non-ASCII and a leading dash give the verdict and the
// signature a plain name gets (the emulator's verdict line names source sites, file and line).
// On both of the emulator's paths: nvcc, which the PTX path runs, names its kept files after the
// source and passes them through a shell.
TEST(WsoracleCli, AnOddFileNameGetsThePlainNamesVerdictAndSignature) {
  for (const char *frontend : {"source", "ptx"}) {
    SCOPED_TRACE(frontend);
    std::string d = makeTempDir("wsr-cli.");
    fs::copy_file(fixture("gpu/common.h"), d + "/common.h");
    auto judge = [&](const std::string &name) {
      fs::copy_file(fixture("gpu/mbarrier_hang.cu"), d + "/" + name);
      auto r = wsoracle({d + "/" + name, "--backend", "emu", "--json"},
                        {{"WSEMU_FRONTEND", frontend}});
      auto field = [&](const std::string &key) {
        size_t at = r.out.find("\"" + key + "\": \"");
        if (at == std::string::npos) return std::string("?");
        at += key.size() + 5;
        return r.out.substr(at, r.out.find('"', at) - at);
      };
      return std::make_pair(field("detail"), field("signature"));
    };
    const auto plain = judge("my_kernel.cu");
    EXPECT_EQ(plain.first, "hang/mbarrier");
    EXPECT_EQ(plain.second.find('?'), std::string::npos) << plain.second;
    for (const char *odd : {"my kernel.cu", "it's \"k\".cu", "k\xc3\xa9rnel.cu", "-k.cu"})
      EXPECT_EQ(judge(odd), plain) << odd;
    removeTree(d);
  }
}

// A front end the emulator does not have is the judge's error, named, never a verdict about the
// program.
TEST(WsoracleCli, AnUnknownEmulatorFrontEndIsNamedAsTheJudgesError) {
  auto r = wsoracle({fixture("gpu/pass.cu"), "--backend", "emu", "--json"},
                    {{"WSEMU_FRONTEND", "llvm"}});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("\"symptom\": \"infra-error\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("WSEMU_FRONTEND must be ptx or source, not 'llvm'"), std::string::npos)
      << r.out;
}

// The PTX path's build is nvcc's own: what ptxas rejects for the program's target (tcgen05 on
// sm_90a) is the program's compile error there, never "the emulator cannot run it".
TEST(WsoracleCli, OnThePtxPathWhatPtxasRejectsIsTheProgramsCompileError) {
  std::string d = makeTempDir("wsr-cli.");
  writeFileAtomic(d + "/tc.cu",
                  "__global__ void k() {\n"
                  "  asm volatile(\"tcgen05.fence::before_thread_sync;\" ::: \"memory\");\n}\n"
                  "int main() { k<<<1, 32>>>(); cudaDeviceSynchronize(); return 0; }\n");
  auto r = wsoracle({d + "/tc.cu", "--backend", "emu", "--json"}, {{"WSEMU_FRONTEND", "ptx"}});
  removeTree(d);
  EXPECT_NE(r.out.find("\"detail\": \"compile-error/ptxas\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tcgen05.fence"), std::string::npos) << r.out;
}

// On the PTX path the host code runs natively: its uninitialised locals get g++'s pattern (0xFE
// bytes), as the translator gives them, so a candidate that reads one fails the same way every
// time instead of by the stack's luck.
TEST(WsoracleCli, OnThePtxPathTheHostsUninitialisedLocalsHoldThePattern) {
  std::string d = makeTempDir("wsr-cli.");
  writeFileAtomic(d + "/p.cu",
                  "__global__ void k(int *p) { *p = 1; }\n"
                  "int main() {\n  int *d;\n  cudaMalloc(&d, 4);\n  k<<<1, 1>>>(d);\n"
                  "  cudaDeviceSynchronize();\n  cudaDeviceProp prop;\n"
                  "  return prop.multiProcessorCount == (int)0xFEFEFEFE ? 0 : 5;\n}\n");
  auto r = wsoracle({d + "/p.cu", "--backend", "emu", "--json"}, {{"WSEMU_FRONTEND", "ptx"}});
  removeTree(d);
  EXPECT_NE(r.out.find("\"symptom\": \"pass\""), std::string::npos) << r.out;
}

// On the PTX path the program's mbarrier.init instructions are counted from its PTX, so a use
// before init still says whether an init exists that never ran (the corpus's init in a role
// branch) or none does.
TEST(WsoracleCli, OnThePtxPathAnInitThatNeverRanIsNamedAsSuch) {
  auto r = wsoracle({std::string(WSREDUCE_SOURCE_DIR) + "/corpus/examples/pipeline_init_in_role.cu",
                     "--backend", "emu", "--json"},
                    {{"WSEMU_FRONTEND", "ptx"}});
  EXPECT_NE(r.out.find("(init-unrun)"), std::string::npos) << r.out;
}

// A program the source translator cannot build (CUDA's make_float2, which its shim lacks) runs
// on the PTX path, which runs what nvcc made of it: it passes, as on a GPU.
TEST(WsoracleCli, AProgramTheTranslatorCannotBuildRunsOnThePtxPath) {
  auto r = wsoracle({fixture("gpu/vector_types.cu"), "--backend", "emu", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("\"symptom\": \"pass\""), std::string::npos) << r.out;
}

// What neither the translator nor the PTX path can build is what the emulator cannot run:
// infra-error/unsupported with the reason, exit 3, never a compile error for a program nvcc
// compiles (on a machine without a GPU, --backend auto once told users that correct programs did
// not compile). Here: a runtime call (cudaMemGetInfo) the emulator's runtime does not define.
TEST(WsoracleCli, AProgramTheEmulatorCannotBuildIsUnsupportedNotACompileError) {
  auto r = wsoracle({fixture("ptx/missing_entry.cu"), "--backend", "emu", "--json"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("\"detail\": \"infra-error/unsupported\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cudaMemGetInfo"), std::string::npos) << "the reason is named:\n" << r.out;
  EXPECT_EQ(r.out.find("compile-error"), std::string::npos) << r.out;
  // the control: nvcc compiles it (a build-only judgment needs no GPU)
  std::string d = makeTempDir("wsr-cli.");
  RunOptions ro;
  ro.timeout_s = 300;
  auto b = runProcess(
      {"/usr/local/cuda/bin/nvcc", "-arch=sm_90a", "-o", d + "/p", fixture("ptx/missing_entry.cu")},
      ro);
  removeTree(d);
  EXPECT_EQ(b.exit_code, 0) << b.err;
}

// A relative cache directory (WSREDUCE_CACHE=cache, or --cache-dir) names the same place for
// every build: builds run in a directory of their own, and the emulator's nvcc once failed
// there to write into the relative path, a failure of ours that read as "cannot build".
TEST(WsoracleCli, ARelativeCacheDirIsTheCallersDirectory) {
  std::string d = makeTempDir("wsr-cli.");
  for (auto args :
       {std::vector<std::string>{"--cache-dir", "flagcache"}, std::vector<std::string>{}}) {
    std::vector<std::string> argv = {tool(), fixture("gpu/vector_types.cu"), "--backend", "emu",
                                     "--json"};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions o;
    o.timeout_s = 300;
    o.workdir = d;
    o.env_set["WSREDUCE_CACHE"] = "envcache";
    auto r = runProcess(argv, o);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("\"symptom\": \"pass\""), std::string::npos) << r.out;
    EXPECT_TRUE(fs::is_directory(d + "/" + (args.empty() ? "envcache" : "flagcache") + "/emu"))
        << "the cache is under the caller's directory";
  }
  removeTree(d);
}

// The outside corpus (programs written elsewhere, corpus/outside/): the emulator gives each the
// class the H200 showed in plain runs (corpus/outside/expected.tsv), or says it cannot run it and
// why. Never a compile error: nvcc compiles every one of them. The source translator cannot build
// any of them; the PTX path (emu/ptx/) runs what nvcc made of them.
//
// Five differ from the GPU under the default schedule, each for a known reason, and are held
// to what the emulator says:
// - tma_xform_bug: the missing fence.proxy.async is latent on the H200 (it passed). The
//   emulator's async proxy stores what it last saw and the output is wrong, with the note
//   +proxy-unfenced in the signature (emu/README.md, "TMA, bulk copies and the async proxy").
// - rownorm_nb_ok: the H200 fails 84 of 1024 rows by up to 1.8e-3, the size of one 16-float
//   chunk read from the wrong tile; the emulator runs the same fma.rn/sqrt.rn and every row is
//   within 5e-7 of the double reference. A race of the GPU's timing that the emulator does not
//   model (emu/README.md, "The PTX path").
// - gemm_ws_bug: a stage released while its wgmma may still read it. The eager policy reads the
//   operands at issue; judged with the wgmma's reads late and a random schedule (below) the
//   refill lands first and the class is the H200's.
// - persistent_gemm_bug: a deadlock on the full barrier. On the H200 the program's own
//   %globaltimer watchdog traps (crash); the emulator parks the spinning waiters and names it.
// - pdl_chain_bug: the dependent grid reads the primary's output before its grid dependency
//   wait, a race that stayed latent in an H100's plain runs (pass). The emulator names it
//   whichever grid ran first (emu/README.md, "The PTX path", PDL).
// corpus/outside/expected.tsv: each program and the class its plain runs on the GPU showed.
std::vector<std::pair<std::string, std::string>> outsidePrograms() {
  std::vector<std::pair<std::string, std::string>> out;
  auto table = readFile(std::string(WSREDUCE_SOURCE_DIR) + "/corpus/outside/expected.tsv");
  if (!table) return out;
  size_t at = 0;
  while (at < table->size()) {
    size_t nl = table->find('\n', at);
    std::string line = table->substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    at = nl == std::string::npos ? table->size() : nl + 1;
    if (line.empty() || line[0] == '#') continue;
    out.emplace_back(line.substr(0, line.find('\t')), line.substr(line.find('\t') + 1));
  }
  return out;
}

TEST(WsoracleCli, TheOutsideCorpusListsItsFourteenPrograms) {
  EXPECT_EQ(outsidePrograms().size(), 14u);
}

// One test per program, so that the two slow ones (the PDL pair) run beside the rest.
class OutsideOnTheEmulator : public ::testing::TestWithParam<std::pair<std::string, std::string>> {
};

TEST_P(OutsideOnTheEmulator, JudgedAsTheH200DidOrSaysUnsupported) {
  const std::string dir = std::string(WSREDUCE_SOURCE_DIR) + "/corpus/outside/";
  const auto &[name, h200] = GetParam();
  struct Known {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::vector<std::string> wants;
  };
  const std::map<std::string, Known> known = {
      {"tma_xform_bug.cu", {{}, {}, {"\"symptom\": \"wrong\"", "+proxy-unfenced"}}},
      {"rownorm_nb_ok.cu", {{}, {}, {"\"symptom\": \"pass\""}}},
      {"gemm_ws_bug.cu",
       {{"--policy", "reads-late"},
        {{"WSEMU_ORDER", "random"}, {"WSEMU_SEED", "1"}},
        {"\"symptom\": \"wrong\"", "BADROWS 0-255"}}},
      {"persistent_gemm_bug.cu", {{}, {}, {"\"symptom\": \"hang\"", "hang/mbarrier"}}},
      // 2.1 G fused multiply-adds in the primary: about 20 s interpreted on an idle core, over
      // 90 s when four such processes share two cores; the timeout leaves room for a loaded
      // machine, since a run killed at it is judged a hang.
      {"pdl_chain_bug.cu",
       {{"--timeout", "240"}, {}, {"ub/pdl-read-before-wait", "pdl_chain_bug.cu:66"}}},
      {"pdl_chain_ok.cu", {{"--timeout", "240"}, {}, {"\"symptom\": \"pass\""}}}};
  auto k = known.find(name);
  std::vector<std::string> args = {dir + name, "--backend", "emu", "-lcuda", "--json"};
  if (k != known.end()) args.insert(args.end(), k->second.args.begin(), k->second.args.end());
  auto r = wsoracle(args, k != known.end() ? k->second.env : std::map<std::string, std::string>{});
  EXPECT_EQ(r.out.find("compile-error"), std::string::npos) << name << "\n" << r.out;
  if (k != known.end()) {
    for (auto &want : k->second.wants)
      EXPECT_NE(r.out.find(want), std::string::npos) << name << ": " << want << "\n" << r.out;
    return;
  }
  const bool unsupported =
      r.out.find("\"detail\": \"infra-error/unsupported\"") != std::string::npos;
  const bool same = r.out.find("\"symptom\": \"" + h200 + "\"") != std::string::npos;
  EXPECT_TRUE(unsupported || same) << name << ": the H200 says " << h200 << "\n" << r.out;
  if (unsupported) {
    EXPECT_TRUE(r.out.find("cannot build this program") != std::string::npos ||
                r.out.find("unsupported: ") != std::string::npos)
        << name << ": the reason is named\n"
        << r.out;
  }
}

INSTANTIATE_TEST_SUITE_P(Outside, OutsideOnTheEmulator, ::testing::ValuesIn(outsidePrograms()),
                         [](const auto &info) {
                           std::string n = info.param.first.substr(0, info.param.first.find('.'));
                           return n;
                         });

TEST(WsoracleCli, PolicyMatrixRecordsEveryPolicy) {
  auto r =
      wsoracle({fixture("gpu/stripes.cu"), "--backend", "emu", "--policy", "matrix", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  for (const char *p : {"eager", "reads-late", "completions-late"})
    EXPECT_NE(r.out.find(std::string("\"policy\": \"") + p + "\""), std::string::npos) << p << "\n"
                                                                                       << r.out;
  auto bad = wsoracle({fixture("gpu/stripes.cu"), "--backend", "emu", "--policy", "late"});
  expectOneSentence(bad, "--policy must be");
}
