// (g) wgmma m64n64k16 bf16 -> f32: SS with both operands K-major in 128B-swizzled tiles that a
// TMA wrote, and RS with A from registers and B MN-major (imm-trans-b = 1), against a CPU matmul.
#include <cmath>

#include "emu_test.h"

using namespace emutest;

namespace {

uint64_t makeDesc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return ((uint64_t)((addr & 0x3FFFF) >> 4)) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32) |
         (1ull << 62);
}

// Where A comes from: a TMA (SS), registers (RS), or the threads' own stores into shared memory
// in the layout the TMA would give (SS), with or without a fence.proxy.async after them.
enum class ASrc { Tma, Regs, Stores, StoresFenced };

// C[64][64] = A[64][64] * B, B given K-major as Bnk[n][k] (SS) or MN-major as Bkn[k][n] (RS).
void gemmTile(const TensorMap ma, const TensorMap mb, float *C, ASrc asrc, const uint16_t *Aglob, bool wait_before_read) {
  const bool rs = asrc == ASrc::Regs;
  // __grid_constant__ parameters, as the translator registers them (emu/runtime/tma.cpp, checkMapSpace)
  wsemu::ptx::kernelParam(&ma, sizeof ma, "ma", true); wsemu::ptx::kernelParam(&mb, sizeof mb, "mb", true);
  using namespace wsemu::ptx;
  uint8_t *smem = dynamicShared();
  uint8_t *sA = smem, *sB = smem + 8192;
  auto *bar = reinterpret_cast<uint64_t *>(smem + 16384);
  const int t = (int)threadIdx().x, w = t / 32, l = t % 32;
  if (t == 0) {
    mbarrier_init(smemAddr(bar), 1, WSEMU_HERE);
    fence_mbarrier_init(WSEMU_HERE);
  }
  syncthreads(WSEMU_HERE);
  if (t == 0) {
    mbarrier_arrive_expect_tx(smemAddr(bar), asrc == ASrc::Tma ? 16384 : 8192, WSEMU_HERE);
    if (asrc == ASrc::Tma) tma_load_2d(smemAddr(sA), &ma, smemAddr(bar), 0, 0, WSEMU_HERE);
    tma_load_2d(smemAddr(sB), &mb, smemAddr(bar), 0, 0, WSEMU_HERE);
  }
  if (asrc == ASrc::Stores || asrc == ASrc::StoresFenced) {
    for (int e = t; e < 64 * 64; e += 128)
      at(reinterpret_cast<uint16_t *>(sA + sw128(e / 64, e % 64)), WSEMU_HERE) = Aglob[e];
    if (asrc == ASrc::StoresFenced) fence_proxy_async(WSEMU_HERE);
    syncthreads(WSEMU_HERE);
  }
  while (!mbarrier_try_wait_parity(smemAddr(bar), 0, WSEMU_HERE)) {}
  float acc[32];
  for (float &x : acc) x = 0.f;
  uint32_t a[4][4];
  wgmma_fence(WSEMU_HERE);
  for (int k = 0; k < 4; ++k) {
    if (rs) {
      for (int r = 0; r < 4; ++r) {
        int row = 16 * w + l / 4 + 8 * (r % 2), kk = 16 * k + 8 * (r / 2) + 2 * (l % 4);
        a[k][r] = (uint32_t)Aglob[row * 64 + kk] | ((uint32_t)Aglob[row * 64 + kk + 1] << 16);
      }
      // B MN-major: rows of 64 n (128 B), 8-row k groups 1024 B apart; k16 = 16 rows = +2048 B
      wgmma_rs(acc, WgType::BF16, a[k], makeDesc(smemAddr(sB) + 2048 * k, 8192, 1024), k > 0, 1, WSEMU_HERE);
    } else {
      uint64_t da = makeDesc(smemAddr(sA), 16, 1024), db = makeDesc(smemAddr(sB), 16, 1024);
      wgmma_ss(acc, WgType::BF16, da + 2 * k, db + 2 * k, k > 0, 0, 0, WSEMU_HERE);
    }
  }
  wgmma_commit_group(WSEMU_HERE);
  if (wait_before_read) wgmma_wait_group(0, WSEMU_HERE);
  for (int i = 0; i < 32; ++i) {
    int row = 16 * w + l / 4 + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * (l % 4) + i % 2;
    at(&C[row * 64 + col], WSEMU_HERE) = acc[i];
  }
  if (!wait_before_read) wgmma_wait_group(0, WSEMU_HERE);  // the bug: the wait comes after the read
}

struct Problem {
  Bf16Matrix A{64, 64, "A", true, 11}, B{64, 64, "B", true, 12};  // B: SS reads it as [n][k], RS as [k][n]
  float *C = static_cast<float *>(emuMalloc(64 * 64 * 4, "C"));
  ~Problem() { emuFree(C); }
  double maxErr(bool b_is_kn) const {
    double e = 0;
    for (int m = 0; m < 64; ++m)
      for (int n = 0; n < 64; ++n) {
        double ref = 0;
        for (int k = 0; k < 64; ++k) ref += (double)A.host[m * 64 + k] * (b_is_kn ? B.host[k * 64 + n] : B.host[n * 64 + k]);
        e = std::max(e, std::fabs(ref - C[m * 64 + n]));
      }
    return e;
  }
};

}  // namespace

Verdict runGemmTile(Problem &p, ASrc asrc, bool wait_before_read, Policy pol) {
  TensorMap ma = p.A.map(64, 64), mb = p.B.map(64, 64);
  const uint16_t *Ag = p.A.dev;
  float *C = p.C;
  return launch(Dim3(1), Dim3(128), 16384 + 8, [=] { gemmTile(ma, mb, C, asrc, Ag, wait_before_read); }, cfgOf(pol));
}

TEST(Wgmma, SSBf16KMajor128BSwizzleMatchesCpu) {
  for (Policy pol : {Policy::Eager, Policy::ReadsLate, Policy::CompletionsLate}) {
    Problem p;
    Verdict v = runGemmTile(p, ASrc::Tma, true, pol);
    ASSERT_TRUE(v.pass()) << dump(v);
    EXPECT_LT(p.maxErr(false), 1e-3) << policyName(pol);
  }
}

TEST(Wgmma, RSBf16WithMNMajorBMatchesCpu) {
  for (Policy pol : {Policy::Eager, Policy::ReadsLate, Policy::CompletionsLate}) {
    Problem p;
    Verdict v = runGemmTile(p, ASrc::Regs, true, pol);
    ASSERT_TRUE(v.pass()) << dump(v);
    EXPECT_LT(p.maxErr(true), 1e-3) << policyName(pol);
  }
}

// wgmma reads shared operands through the async proxy: an A tile the threads stored themselves
// reaches it through a fence.proxy.async. Without the fence the wgmma reads what the proxy last
// saw (the arena's 0xFF pattern: NaN) and the notes count it (proxy-unfenced); with it, C is right.
TEST(Wgmma, OperandsFromGenericStoresNeedTheProxyFence) {
  for (ASrc asrc : {ASrc::StoresFenced, ASrc::Stores}) {
    Problem p;
    uint64_t before = ptx::g_proxy_unfenced.load();
    Verdict v = runGemmTile(p, asrc, true, Policy::Eager);
    ASSERT_TRUE(v.pass()) << dump(v);
    bool fenced = asrc == ASrc::StoresFenced;
    EXPECT_EQ(ptx::g_proxy_unfenced.load() - before, fenced ? 0u : 4u) << "one per wgmma that read unfenced bytes";
    if (fenced) EXPECT_LT(p.maxErr(false), 1e-3);
    else EXPECT_TRUE(std::isnan(p.C[0])) << p.C[0];
  }
}

// wgmma.fence (PTX ISA): before a warpgroup's first wgmma, and between the threads' accesses to the
// accumulators and a wgmma that uses them; the emulator asks for one since the thread's start or
// its last wgmma.wait_group that gave registers back (here, one that retired every wgmma).
// `missing`: 0 none, 1 the first fence, 2 the fence after the first full wait. A wgmma whose wait
// never comes is UB at the thread's exit, under the eager policy too (it completed at issue; the
// thread does not know that).
namespace {
void twoBatches(int missing, bool wait_last) {
  using namespace wsemu::ptx;
  uint8_t *smem = dynamicShared();
  uint64_t d = makeDesc(smemAddr(smem), 16, 1024);
  float acc[32] = {};
  if (missing != 1) wgmma_fence(WSEMU_HERE);
  wgmma_ss(acc, WgType::BF16, d, d, false, 0, 0, WSEMU_HERE);  // @first-wgmma
  wgmma_commit_group(WSEMU_HERE);
  wgmma_wait_group(0, WSEMU_HERE);
  if (missing != 2) wgmma_fence(WSEMU_HERE);
  wgmma_ss(acc, WgType::BF16, d, d, true, 0, 0, WSEMU_HERE);  // @second-wgmma
  wgmma_commit_group(WSEMU_HERE);
  if (wait_last) wgmma_wait_group(0, WSEMU_HERE);
}
}  // namespace

TEST(Wgmma, AWgmmaWithoutAFenceSinceTheLastFullWaitIsUb) {
  for (int missing : {0, 1, 2}) {
    Verdict v = launch(Dim3(1), Dim3(128), 8192, [=] { twoBatches(missing, true); }, cfgOf());
    if (missing == 0) {
      EXPECT_TRUE(v.pass()) << dump(v);
      continue;
    }
    EXPECT_EQ(v.detail, "ub/wgmma-unfenced") << missing << dump(v);
    std::string site = siteOfMarker("test_wgmma.cpp", missing == 1 ? "first-wgmma" : "second-wgmma");
    EXPECT_EQ(v.signature.rfind(site + ",", 0), 0u) << missing << dump(v);
  }
}

// Two accumulators in flight, then a partial wait: wgmma_wait_group(1) retires the wgmma on `x` and
// gives x back to the thread, which reads it. A wgmma on x after that needs a wgmma.fence; one that
// goes on with `y`, whose wgmma is still in flight, continues that chain and needs none.
namespace {
void pingPong(bool fence_again, bool reuse_retired) {
  using namespace wsemu::ptx;
  uint8_t *smem = dynamicShared();
  uint64_t d = makeDesc(smemAddr(smem), 16, 1024);
  float x[32] = {}, y[32] = {};
  wgmma_fence(WSEMU_HERE);
  wgmma_ss(x, WgType::BF16, d, d, false, 0, 0, WSEMU_HERE);
  wgmma_commit_group(WSEMU_HERE);
  wgmma_ss(y, WgType::BF16, d, d, false, 0, 0, WSEMU_HERE);
  wgmma_commit_group(WSEMU_HERE);
  wgmma_wait_group(1, WSEMU_HERE);
  x[0] += 1.f;
  if (fence_again) wgmma_fence(WSEMU_HERE);
  wgmma_ss(reuse_retired ? x : y, WgType::BF16, d, d, true, 0, 0, WSEMU_HERE);  // @third-wgmma
  wgmma_commit_group(WSEMU_HERE);
  wgmma_wait_group(0, WSEMU_HERE);
}
}  // namespace

TEST(Wgmma, AWgmmaOnRegistersAPartialWaitGaveBackNeedsAFence) {
  for (bool fence_again : {false, true})
    for (bool reuse_retired : {false, true}) {
      Verdict v = launch(Dim3(1), Dim3(128), 8192, [=] { pingPong(fence_again, reuse_retired); }, cfgOf());
      SCOPED_TRACE(std::string("fence again ") + (fence_again ? "yes" : "no") + ", on " + (reuse_retired ? "x" : "y"));
      if (fence_again || !reuse_retired) {
        EXPECT_TRUE(v.pass()) << dump(v);
        continue;
      }
      EXPECT_EQ(v.detail, "ub/wgmma-unfenced") << dump(v);
      EXPECT_EQ(v.signature.rfind(siteOfMarker("test_wgmma.cpp", "third-wgmma") + ",", 0), 0u) << dump(v);
    }
}

TEST(Wgmma, ExitingBeforeAWaitRetiredAWgmmaIsUbUnderEveryPolicy) {
  for (Policy pol : {Policy::Eager, Policy::ReadsLate, Policy::CompletionsLate}) {
    Verdict v = launch(Dim3(1), Dim3(128), 8192, [=] { twoBatches(0, false); }, cfgOf(pol));
    EXPECT_EQ(v.detail, "ub/exit-with-wgmma-in-flight") << policyName(pol) << dump(v);
    EXPECT_EQ(v.signature.rfind(siteOfMarker("test_wgmma.cpp", "second-wgmma") + ",", 0), 0u) << dump(v);
  }
}

TEST(Wgmma, DescriptorDecode) {
  // 128B swizzle, K-major: (mn, k) -> start + (mn%8)*128 + (mn/8)*SBO + 2k, chunk ^= row%8
  uint64_t d = makeDesc(0x400, 16, 1024);
  EXPECT_EQ(ptx::wgmma_desc_addr(d, false, 2, 0, 0), 0x400u);
  EXPECT_EQ(ptx::wgmma_desc_addr(d, false, 2, 1, 0), 0x400u + 128 + 16);
  EXPECT_EQ(ptx::wgmma_desc_addr(d, false, 2, 9, 8), 0x400u + 1024 + 128 + (1 ^ 1) * 16);
  EXPECT_EQ(ptx::wgmma_desc_addr(d + 2, false, 2, 3, 0), 0x400u + 3 * 128 + ((2 ^ 3) << 4));
  // MN-major: (n, k) -> (2n % 128) + (2n/128)*LBO + (k%8)*128 + (k/8)*SBO
  uint64_t t = makeDesc(0, 8192, 1024);
  EXPECT_EQ(ptx::wgmma_desc_addr(t, true, 2, 8, 1), 128u + ((1 ^ 1) << 4));
  EXPECT_EQ(ptx::wgmma_desc_addr(t, true, 2, 64, 9), 8192u + 1024 + 128 + ((0 ^ 1) << 4));
}
