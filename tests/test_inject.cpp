// The bug injectors on the reference kernels (docs/bugs.md, one injector per row). For every
// injector and every kernel of its architecture:
//   - its sites: how many, as a specification (non-zero exactly where the kernel has the
//     construct the bug breaks);
//   - every mutant differs from the original only inside the declared edits;
//   - one mutant per (injector, kernel) still parses with Clang and builds with nvcc for its
//     target, or, for wrong-arch, fails in ptxas (compile-error/ptxas) — one only, because
//     nvcc on a reference kernel takes 10-20 s on a CI machine;
//   - the Blackwell injectors' static checks: the defect absent from the original, present in
//     every mutant.
#include "build.h"
#include "classify.h"
#include "inject.h"
#include "process.h"

#include <algorithm>
#include <gtest/gtest.h>

#include <map>
#include <memory>

using namespace wsr;
using namespace wsr::inject;

namespace {

const std::string kKernels = std::string(WSREDUCE_SOURCE_DIR) + "/kernels/";

struct Parsed {
  std::string text, arch;
  std::unique_ptr<ParsedSource> src;
  KernelIndex idx;
};

ParseOptions parseOptions(const std::string &arch) {
  ParseOptions po;
  po.arch = arch;
  po.includes.push_back(std::string(WSREDUCE_SOURCE_DIR) + "/oracle/include");
  return po;
}

// Each kernel is parsed once per test process.
Parsed &kernel(const std::string &name) {
  static std::map<std::string, std::unique_ptr<Parsed>> cache;
  auto &p = cache[name];
  if (!p) {
    p = std::make_unique<Parsed>();
    p->text = *readFile(kKernels + name);
    p->arch = kernelArch(p->text);
    p->src = parseSource(p->text, kKernels + name, parseOptions(p->arch));
    p->idx = buildIndex(*p->src);
  }
  return *p;
}

const std::vector<std::string> kAll = {"tma_pipeline_sm90.cu", "ws_gemm_sm90.cu",
                                       "ws_attention_sm90.cu", "ws_cluster_pdl_sm90.cu",
                                       "ws_gemm_sm100.cu"};

// The number of sites each injector must find on each kernel of its architecture.
const std::map<std::string, std::map<std::string, int>> kSites = {
    // 2 per mbarrier.init use (x2, and 1 <-> 128): pipeline full/empty, gemm full/empty,
    // attention q_full/k_full/v_full/kv_empty, cluster_pdl full/empty/xfull.
    {"arrival-count",
     {{"tma_pipeline_sm90.cu", 4},
      {"ws_gemm_sm90.cu", 4},
      {"ws_attention_sm90.cu", 8},
      {"ws_cluster_pdl_sm90.cu", 6}}},
    // one init block, one role branch thread 0 does not take (cluster_pdl's role branch is
    // `warp == PRODUCER_WARP`, which names no warp number).
    {"init-in-role-branch",
     {{"tma_pipeline_sm90.cu", 1},
      {"ws_gemm_sm90.cu", 1},
      {"ws_attention_sm90.cu", 1},
      {"ws_cluster_pdl_sm90.cu", 0}}},
    // one top-level __syncthreads, two role arms (pipeline: `wg == 0` and `wg == 1`; the others:
    // if/else). cluster_pdl orders its inits with a cluster barrier, not __syncthreads.
    {"cta-sync-in-role-branch",
     {{"tma_pipeline_sm90.cu", 2},
      {"ws_gemm_sm90.cu", 2},
      {"ws_attention_sm90.cu", 2},
      {"ws_cluster_pdl_sm90.cu", 0}}},
    // every counted named barrier a kernel reaches: gemm's two consumer syncs, the pipeline's two
    // staging syncs, attention's epilogue sync.
    {"named-barrier-count",
     {{"tma_pipeline_sm90.cu", 2},
      {"ws_gemm_sm90.cu", 2},
      {"ws_attention_sm90.cu", 1},
      {"ws_cluster_pdl_sm90.cu", 0}}},
    // the same counted named barriers, each made an arrive.
    {"named-barrier-arrive",
     {{"tma_pipeline_sm90.cu", 2},
      {"ws_gemm_sm90.cu", 2},
      {"ws_attention_sm90.cu", 1},
      {"ws_cluster_pdl_sm90.cu", 0}}},
    // the group-dependent ids (`1 + consumer`, `1 + c`) made 0 for every group; the pipeline's
    // one constant id has no other named barrier to collide with.
    {"named-barrier-id-collision",
     {{"tma_pipeline_sm90.cu", 0},
      {"ws_gemm_sm90.cu", 2},
      {"ws_attention_sm90.cu", 1},
      {"ws_cluster_pdl_sm90.cu", 0}}},
    // the producer's and the consumer's handoff loop.
    {"k-loop-off-by-one",
     {{"tma_pipeline_sm90.cu", 2},
      {"ws_gemm_sm90.cu", 2},
      {"ws_attention_sm90.cu", 2},
      {"ws_cluster_pdl_sm90.cu", 2}}},
    // every mbarrier wait's parity (attention: q_full, kv_empty, k_full, v_full; cluster_pdl:
    // empty, full, xfull).
    {"initial-phase",
     {{"tma_pipeline_sm90.cu", 2},
      {"ws_gemm_sm90.cu", 2},
      {"ws_attention_sm90.cu", 4},
      {"ws_cluster_pdl_sm90.cu", 3}}},
    // x2 and /2 per arrive.expect_tx use.
    {"expect-tx-bytes",
     {{"tma_pipeline_sm90.cu", 2},
      {"ws_gemm_sm90.cu", 2},
      {"ws_attention_sm90.cu", 6},
      {"ws_cluster_pdl_sm90.cu", 2}}},
    // grid-stride tile loops of each role; attention is not persistent, cluster_pdl's loops stride
    // by %nclusterid, not gridDim.
    {"scheduler-skip",
     {{"tma_pipeline_sm90.cu", 2},
      {"ws_gemm_sm90.cu", 2},
      {"ws_attention_sm90.cu", 0},
      {"ws_cluster_pdl_sm90.cu", 0}}},
    {"missing-proxy-fence",
     {{"tma_pipeline_sm90.cu", 1},
      {"ws_gemm_sm90.cu", 1},
      {"ws_attention_sm90.cu", 1},
      {"ws_cluster_pdl_sm90.cu", 0}}},
    // commit, wait_group.read, final wait_group (attention has no staging reuse: no .read).
    {"missing-store-wait",
     {{"tma_pipeline_sm90.cu", 3},
      {"ws_gemm_sm90.cu", 3},
      {"ws_attention_sm90.cu", 2},
      {"ws_cluster_pdl_sm90.cu", 0}}},
    // consumer arrives after a wgmma wait: gemm in the k-loop and after the tile; the pipeline has
    // no wgmma.
    {"early-release",
     {{"tma_pipeline_sm90.cu", 0},
      {"ws_gemm_sm90.cu", 2},
      {"ws_attention_sm90.cu", 1},
      {"ws_cluster_pdl_sm90.cu", 0}}},
    {"missing-wgmma-fence",
     {{"tma_pipeline_sm90.cu", 0},
      {"ws_gemm_sm90.cu", 1},
      {"ws_attention_sm90.cu", 2},
      {"ws_cluster_pdl_sm90.cu", 0}}},
    // every TMA load/store row coordinate, plus the pipeline's rstd_out[...] store and
    // cluster_pdl's y[...] store, g[...] and y[...] loads and z[...] store.
    {"oob-coordinate",
     {{"tma_pipeline_sm90.cu", 3},
      {"ws_gemm_sm90.cu", 3},
      {"ws_attention_sm90.cu", 4},
      {"ws_cluster_pdl_sm90.cu", 5}}},
    {"wrong-arch",
     {{"tma_pipeline_sm90.cu", 1},
      {"ws_gemm_sm90.cu", 1},
      {"ws_attention_sm90.cu", 1},
      {"ws_cluster_pdl_sm90.cu", 1}}},
    // STAGES to its static_assert minimum; gemm also wgmma_wait<1> -> <0>.
    {"shallow-pipeline",
     {{"tma_pipeline_sm90.cu", 1},
      {"ws_gemm_sm90.cu", 2},
      {"ws_attention_sm90.cu", 1},
      {"ws_cluster_pdl_sm90.cu", 1}}},
    // the dependent grid's one griddepcontrol.wait; no other kernel launches a dependent.
    {"missing-griddepcontrol-wait",
     {{"tma_pipeline_sm90.cu", 0},
      {"ws_gemm_sm90.cu", 0},
      {"ws_attention_sm90.cu", 0},
      {"ws_cluster_pdl_sm90.cu", 1}}},
    // the one arrive on a peer CTA's barrier (xfull, after the st.shared::cluster stores).
    {"cta-scope-remote-arrive",
     {{"tma_pipeline_sm90.cu", 0},
      {"ws_gemm_sm90.cu", 0},
      {"ws_attention_sm90.cu", 0},
      {"ws_cluster_pdl_sm90.cu", 1}}},
    // two top-level cluster barriers (after the inits, before exit), each into either arm of
    // `if (warp == PRODUCER_WARP)`.
    {"cluster-barrier-in-role-branch",
     {{"tma_pipeline_sm90.cu", 0},
      {"ws_gemm_sm90.cu", 0},
      {"ws_attention_sm90.cu", 0},
      {"ws_cluster_pdl_sm90.cu", 4}}},
    {"tmem-alloc-lane-guard", {{"ws_gemm_sm100.cu", 2}}},
    {"dealloc-without-sync", {{"ws_gemm_sm100.cu", 1}}},
    {"commit-outside-elect", {{"ws_gemm_sm100.cu", 1}}},
    {"missing-tcgen05-fence", {{"ws_gemm_sm100.cu", 2}}},
};

// The mutant differs from the original exactly inside the declared edits.
void expectOnlyDeclaredEdits(const std::string &orig, const std::string &mut, const InjectSite &s) {
  ASSERT_FALSE(s.edits.empty());
  long delta = 0;
  unsigned lo = ~0u, hi = 0;
  for (auto &e : s.edits) {
    delta += (long)e.replacement.size() - (long)e.length;
    lo = std::min(lo, e.offset);
    hi = std::max(hi, e.offset + e.length);
  }
  EXPECT_EQ((long)mut.size(), (long)orig.size() + delta) << s.note;
  EXPECT_NE(mut, orig) << s.note;
  size_t pre = 0;
  while (pre < orig.size() && pre < mut.size() && orig[pre] == mut[pre]) ++pre;
  size_t suf = 0;
  while (suf < orig.size() && suf < mut.size() &&
         orig[orig.size() - 1 - suf] == mut[mut.size() - 1 - suf])
    ++suf;
  EXPECT_GE(pre, lo) << "changed before the first edit: " << s.note;
  EXPECT_GE(suf, orig.size() - std::max<size_t>(hi, std::min<size_t>(pre, orig.size())))
      << "changed after the last edit: " << s.note;
  for (size_t i = 0; i < s.edits.size(); ++i)
    for (size_t j = i + 1; j < s.edits.size(); ++j)
      EXPECT_FALSE(overlaps(s.edits[i], s.edits[j])) << s.note;
}

class Inject : public ::testing::TestWithParam<std::string> {};

TEST(InjectRegistry, EveryCatalogueRowHasAnInjectorWithExpectations) {
  for (auto &[name, kernels] : kSites) {
    auto *i = findInjector(name);
    ASSERT_NE(i, nullptr) << name;
    EXPECT_FALSE(i->expected.empty()) << name;
    EXPECT_EQ(i->runtime, std::string(i->arch) == "sm_90a") << name;
    EXPECT_EQ(i->check != nullptr, !i->runtime)
        << name << ": the Blackwell rows need a static check";
  }
  EXPECT_EQ(allInjectors().size(), kSites.size());
  EXPECT_TRUE(expects(*findInjector("arrival-count"), "hang/mbarrier"));
  EXPECT_FALSE(expects(*findInjector("arrival-count"), "wrong/row-stripe"));
  EXPECT_TRUE(expects(*findInjector("early-release"), "wrong/scattered"));
  EXPECT_TRUE(expects(*findInjector("early-release"), "flaky"));
  EXPECT_TRUE(expects(*findInjector("wrong-arch"), "compile-error/ptxas"));
}

TEST(InjectIndex, FindsPrimitivesThroughWrappersAndRawAsm) {
  // A user kernel with its own wrapper name and PTX written straight into the kernel.
  std::string text = R"(#include <cstdint>
__device__ __forceinline__ void my_barrier_setup(uint64_t* b, unsigned n) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"((unsigned)__cvta_generic_to_shared(b)), "r"(n) : "memory");
}
__global__ void k(float* out) {
  __shared__ uint64_t bar;
  if (threadIdx.x == 0) my_barrier_setup(&bar, 32);
  __syncthreads();
  unsigned a = (unsigned)__cvta_generic_to_shared(&bar);
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(a), "r"(4096) : "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  out[threadIdx.x] = 1.f;
}
int main() {}
)";
  auto src = parseSource(text, "user.cu", parseOptions("sm_90a"));
  auto idx = buildIndex(*src);
  auto inits = idx.find("mbarrier.init");
  ASSERT_EQ(inits.size(), 1u) << "the wrapper's call is the use, its own asm is not";
  EXPECT_EQ(inits[0]->via, "my_barrier_setup");
  ASSERT_NE(inits[0]->last(), nullptr);
  ASSERT_TRUE(inits[0]->last()->src);
  EXPECT_EQ(slice(text, *inits[0]->last()->src), "32");
  EXPECT_EQ(inits[0]->last()->value, 32);
  auto tx = idx.find("mbarrier.arrive.expect_tx");
  ASSERT_EQ(tx.size(), 1u);
  EXPECT_EQ(tx[0]->via, "asm");
  ASSERT_TRUE(tx[0]->last()->src);
  EXPECT_EQ(slice(text, *tx[0]->last()->src), "4096");
  EXPECT_EQ(idx.find("bar.cta").size(), 1u);
  EXPECT_EQ(idx.find("fence.proxy.async").size(), 1u);
  EXPECT_EQ(idx.globals.size(), 1u);

  auto ac = sitesFor(*findInjector("arrival-count"), *src, idx);
  ASSERT_EQ(ac.size(), 2u);
  EXPECT_NE(applySites(text, std::vector<Site>{ac[0]}).find("my_barrier_setup(&bar, (32) * 2)"),
            std::string::npos);
  EXPECT_NE(applySites(text, std::vector<Site>{ac[1]}).find("my_barrier_setup(&bar, 1)"),
            std::string::npos);
  auto tb = sitesFor(*findInjector("expect-tx-bytes"), *src, idx);
  ASSERT_EQ(tb.size(), 2u);
  EXPECT_NE(applySites(text, std::vector<Site>{tb[0]}).find("\"r\"((4096) * 2)"),
            std::string::npos);
}

// The cluster and PDL primitives of a user's kernel written without the reference kernels'
// one-instruction wrappers: the CUDA runtime's cudaGridDependencySynchronize() and cluster-barrier
// intrinsics, a cluster barrier as one asm statement and as a wrapper of two, and a remote arrive
// as raw PTX. Each injector finds them and edits them where they stand.
TEST(InjectIndex, FindsClusterAndPdlPrimitivesByNameAndInRawAsm) {
  std::string text = R"(#include <cstdint>
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive;" ::: "memory");
  asm volatile("barrier.cluster.wait;" ::: "memory");
}
__global__ void dependent(const float* y, float* z) {
  cudaGridDependencySynchronize();
  z[threadIdx.x] = y[threadIdx.x];
}
__global__ void __cluster_dims__(2, 1, 1) pair(float* out, unsigned peer_bar) {
  __shared__ float buf[64];
  __cluster_barrier_arrive();
  __cluster_barrier_wait();
  const int warp = threadIdx.x / 32;
  if (warp == 0) {
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(peer_bar) : "memory");
  } else {
    out[threadIdx.x] = buf[threadIdx.x];
  }
}
__global__ void __cluster_dims__(2, 1, 1) other(float* out) {
  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    out[threadIdx.x] = 1.f;
  }
  asm volatile("barrier.cluster.arrive.release;\n barrier.cluster.wait.acquire;" ::: "memory");
}
__global__ void __cluster_dims__(2, 1, 1) third(float* out) {
  cluster_sync();
  const int warp = threadIdx.x / 32;
  if (warp == 1) {
    out[threadIdx.x] = 2.f;
  }
}
int main() {}
)";
  auto src = parseSource(text, "user.cu", parseOptions("sm_90a"));
  ASSERT_TRUE(src->ok()) << src->firstError();
  auto idx = buildIndex(*src);
  auto waits = idx.find("griddepcontrol.wait");
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0]->via, "cudaGridDependencySynchronize");
  EXPECT_EQ(idx.find("barrier.cluster.arrive").size(), 1u);
  EXPECT_EQ(idx.find("barrier.cluster.wait").size(), 1u);
  auto whole = idx.find("barrier.cluster");
  ASSERT_EQ(whole.size(), 2u);
  EXPECT_EQ(whole[0]->via, "asm");
  EXPECT_EQ(whole[1]->via, "cluster_sync");
  auto arrives = idx.find("mbarrier.arrive");
  ASSERT_EQ(arrives.size(), 1u);
  EXPECT_EQ(arrives[0]->opcode, "mbarrier.arrive.release.cluster.shared::cluster.b64");

  auto mw = sitesFor(*findInjector("missing-griddepcontrol-wait"), *src, idx);
  ASSERT_EQ(mw.size(), 1u);
  EXPECT_EQ(applySites(text, std::vector<Site>{mw[0]}).find("cudaGridDependencySynchronize"),
            std::string::npos);
  auto cs = sitesFor(*findInjector("cta-scope-remote-arrive"), *src, idx);
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_NE(applySites(text, std::vector<Site>{cs[0]})
                .find("\"mbarrier.arrive.release.cta.shared::cluster.b64 _, [%0];\""),
            std::string::npos);
  // The intrinsics' pair into either arm of `if (warp == 0)`; the one asm into `if (wg == 0)`,
  // which comes before it and has no else; the wrapper into `if (warp == 1)`.
  auto cb = sitesFor(*findInjector("cluster-barrier-in-role-branch"), *src, idx);
  ASSERT_EQ(cb.size(), 4u);
  std::string moved = applySites(text, std::vector<Site>{cb[0]});
  EXPECT_NE(
      moved.find("if (warp == 0) {\n    __cluster_barrier_arrive(); __cluster_barrier_wait();\n"),
      std::string::npos)
      << moved;
  EXPECT_EQ(moved.find("buf[64];\n  __cluster_barrier_arrive();"), std::string::npos) << moved;
  std::string moved3 = applySites(text, std::vector<Site>{cb[2]});
  EXPECT_NE(moved3.find("if (wg == 0) {\n    asm volatile(\"barrier.cluster.arrive.release;"),
            std::string::npos)
      << moved3;
  std::string moved4 = applySites(text, std::vector<Site>{cb[3]});
  EXPECT_NE(
      moved4.find(
          "third(float* out) {\n  const int warp = threadIdx.x / 32;\n  if (warp == 1) {\n    "
          "cluster_sync();\n"),
      std::string::npos)
      << moved4;
}

std::vector<std::string> injectorNames() {
  std::vector<std::string> out;
  for (auto &i : allInjectors()) out.push_back(i.name);
  return out;
}

// Every site of every kernel is listed, applied and parsed; nvcc builds one mutant per injector
// (wrong-arch: one per kernel, since ptxas refuses only some), on the kernel picked by the
// injector's place in the registry, so that across the injectors every kernel is built: a build
// costs a few seconds on two cores, and a CI run judges about 25 injectors.
TEST_P(Inject, SitesMutantsAndOneBuild) {
  const std::string name = GetParam();
  const InjectorInfo *inj = findInjector(name);
  ASSERT_NE(inj, nullptr);
  bool have_nvcc = !findNvcc("").empty();
  std::map<std::string, std::vector<InjectSite>> sites_of;  // the kernels of its arch
  std::vector<std::string> with_sites;
  for (auto &kname : kAll) {
    Parsed &k = kernel(kname);
    ASSERT_TRUE(k.src->ok()) << kname << ": " << k.src->firstError();
    if (k.arch != inj->arch) continue;
    sites_of[kname] = sitesFor(*inj, *k.src, k.idx);
    if (!sites_of[kname].empty()) with_sites.push_back(kname);
  }
  const auto names = injectorNames();
  const size_t place = std::find(names.begin(), names.end(), name) - names.begin();
  const std::string built = with_sites.empty() ? "" : with_sites[place % with_sites.size()];
  for (auto &[kname, sites] : sites_of) {
    Parsed &k = kernel(kname);
    auto want = kSites.at(name).find(kname);
    ASSERT_NE(want, kSites.at(name).end())
        << "no site count specified for " << name << " on " << kname;
    EXPECT_EQ((int)sites.size(), want->second) << name << " on " << kname;
    for (auto &s : sites) {
      SCOPED_TRACE(name + " on " + kname + ": " + s.note);
      EXPECT_EQ(s.pass, name);
      EXPECT_FALSE(s.note.empty());
      std::string mut = applySites(k.text, std::vector<Site>{s});
      expectOnlyDeclaredEdits(k.text, mut, s);
      if (!inj->runtime) {
        std::string why;
        auto pm = parseSource(mut, kKernels + kname, parseOptions(k.arch));
        EXPECT_TRUE(inj->check(buildIndex(*pm), &why))
            << "the defect is not in the mutant: " << why;
      }
    }
    if (!inj->runtime) {
      std::string why;
      EXPECT_FALSE(inj->check(k.idx, &why))
          << "the reference kernel already has the defect: " << why;
    }
    if (sites.empty()) continue;

    // One mutant per (injector, kernel): Clang parses it; nvcc builds the chosen kernel's.
    const InjectSite &s = sites.front();
    std::string mut = applySites(k.text, std::vector<Site>{s});
    std::string arch = s.arch.empty() ? k.arch : s.arch;
    auto pm = parseSource(mut, kKernels + kname, parseOptions(k.arch));
    EXPECT_TRUE(pm->ok()) << name << " on " << kname << " no longer parses: " << pm->firstError();
    if (name == "wrong-arch") {
      EXPECT_EQ(archOverride(mut), arch);
    }
    if (!have_nvcc || (name != "wrong-arch" && kname != built)) continue;
    std::string dir = makeTempDir("wsr-inject.");
    ASSERT_TRUE(writeFileAtomic(dir + "/" + kname, mut));
    BuildOptions bo;
    bo.arch = arch;
    bo.cache_dir = std::string(WSR_BUILD_DIR) + "/test-cache";
    BuildRecord b = buildProgram(dir + "/" + kname, bo);
    removeTree(dir);
    if (name == "wrong-arch") {
      // ptxas refuses the plain target only for an instruction of the `a` one (wgmma,
      // setmaxnreg). ws_cluster_pdl_sm90 has none (clusters, TMA, mbarriers and griddepcontrol
      // are sm_90): it builds, and its mutant passes (fuzzer/explanations.txt).
      const bool arch_specific =
          !k.idx.find("wgmma.mma").empty() || !k.idx.find("setmaxnreg").empty();
      if (arch_specific) {
        EXPECT_FALSE(b.ok) << kname << " built for " << arch;
        EXPECT_EQ(classifyBuild(b).detail, "compile-error/ptxas") << b.log.substr(0, 2000);
      } else {
        EXPECT_TRUE(b.ok) << kname << " has no sm_90a-only instruction, yet:\n"
                          << b.log.substr(0, 2000);
      }
    } else {
      EXPECT_TRUE(b.ok) << name << " on " << kname << " (" << s.note << ") does not build for "
                        << arch << ":\n"
                        << b.log.substr(0, 3000);
    }
  }
  if (!have_nvcc) GTEST_SKIP() << "nvcc is not installed: sites checked, builds skipped";
}


INSTANTIATE_TEST_SUITE_P(All, Inject, ::testing::ValuesIn(injectorNames()), [](const auto &info) {
  std::string n = info.param;
  for (auto &c : n)
    if (c == '-') c = '_';
  return n;
});

}  // namespace
