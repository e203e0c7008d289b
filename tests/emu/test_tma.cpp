// TMA: a box that runs past the tensor's edge is zero-filled in shared memory and its full
// byte count still completes the mbarrier's tx; a store drops its out-of-bounds elements.
#include "emu_test.h"

using namespace emutest;

namespace {
// One thread loads one box of `map` at (c0, c1) into a 128B-swizzled tile, everyone waits,
// then the tile is copied (unswizzled) into `tile_out` (box_rows x 64 bf16).
void loadOneBox(const TensorMap map, int c0, int c1, int box_rows, uint16_t *tile_out, uint32_t tx) {
  // __grid_constant__ parameters, as the translator registers them (emu/runtime/tma.cpp, checkMapSpace)
  wsemu::ptx::kernelParam(&map, sizeof map, "map", true);
  using namespace wsemu::ptx;
  uint8_t *smem = dynamicShared();
  auto *bar = reinterpret_cast<uint64_t *>(smem + box_rows * 128);
  if (threadIdx().x == 0) {
    mbarrier_init(smemAddr(bar), 1, WSEMU_HERE);
    fence_mbarrier_init(WSEMU_HERE);
  }
  syncthreads(WSEMU_HERE);
  if (threadIdx().x == 0) {
    mbarrier_arrive_expect_tx(smemAddr(bar), tx, WSEMU_HERE);
    tma_load_2d(smemAddr(smem), &map, smemAddr(bar), c0, c1, WSEMU_HERE);
  }
  while (!mbarrier_try_wait_parity(smemAddr(bar), 0, WSEMU_HERE)) {}
  for (int e = threadIdx().x; e < box_rows * 64; e += blockDim().x)
    at(&tile_out[e], WSEMU_HERE) = at(reinterpret_cast<uint16_t *>(smem + sw128(e / 64, e % 64)), WSEMU_HERE);
}
}  // namespace

// (h) a 40-row tensor, a 32-row box at row 24: rows 24-39 copied, 16 rows zero-filled, and the
// full 4096 bytes counted toward complete_tx (expect_tx 4096 completes the phase).
TEST(Tma, OutOfBoundsBoxIsZeroFilledAndCountedTowardTx) {
  for (Policy p : {Policy::Eager, Policy::ReadsLate, Policy::CompletionsLate}) {
    Bf16Matrix in(40, 64, "in");
    TensorMap map = in.map(32, 64);
    auto *tile = static_cast<uint16_t *>(emuMalloc(32 * 64 * 2, "tile"));
    Verdict v = launch(Dim3(1), Dim3(64), 32 * 128 + 8, [&] { loadOneBox(map, 0, 24, 32, tile, 4096); }, cfgOf(p));
    ASSERT_TRUE(v.pass()) << dump(v);
    for (int r = 0; r < 32; ++r)
      for (int c = 0; c < 64; ++c) {
        uint16_t want = r + 24 < 40 ? in.dev[(r + 24) * 64 + c] : 0;
        ASSERT_EQ(tile[r * 64 + c], want) << policyName(p) << " row " << r << " col " << c;
      }
    emuFree(tile);
  }
}

TEST(Tma, NegativeCoordinatesAreZeroFilled) {
  Bf16Matrix in(64, 64, "in");
  TensorMap map = in.map(32, 64);
  auto *tile = static_cast<uint16_t *>(emuMalloc(32 * 64 * 2, "tile"));
  Verdict v = launch(Dim3(1), Dim3(32), 32 * 128 + 8, [&] { loadOneBox(map, -8, -4, 32, tile, 4096); }, cfgOf());
  ASSERT_TRUE(v.pass()) << dump(v);
  for (int r = 0; r < 32; ++r)
    for (int c = 0; c < 64; ++c) {
      int gr = r - 4, gc = c - 8;
      uint16_t want = (gr >= 0 && gc >= 0) ? in.dev[gr * 64 + gc] : 0;
      ASSERT_EQ(tile[r * 64 + c], want) << r << " " << c;
    }
  emuFree(tile);
}

// Expecting only the in-bounds bytes of a clipped box is the bug: the TMA completes the
// whole box, the tx-count goes negative, the phase never completes.
TEST(Tma, ExpectingOnlyInBoundsBytesHangs) {
  Bf16Matrix in(40, 64, "in");
  TensorMap map = in.map(32, 64);
  auto *tile = static_cast<uint16_t *>(emuMalloc(32 * 64 * 2, "tile"));
  Verdict v = launch(Dim3(1), Dim3(32), 32 * 128 + 8, [&] { loadOneBox(map, 0, 24, 32, tile, 16 * 128); }, cfgOf());
  EXPECT_EQ(v.detail, "hang/mbarrier") << dump(v);
  EXPECT_TRUE(hasLine(v, "pending 0 of 1, tx -2048")) << dump(v);
  emuFree(tile);
}

namespace {
// A zeroed rows x 64 bf16 output and its map, with a 32-row box in the 128B swizzle.
uint16_t *storeTarget(int rows, TensorMap *map) {
  auto *out = static_cast<uint16_t *>(emuMalloc(rows * 64 * 2, "out"));
  std::memset(out, 0, rows * 64 * 2);
  uint64_t dims[2] = {64, (uint64_t)rows}, strides[1] = {128};
  uint32_t box[2] = {64, 32}, es[2] = {1, 1};
  EXPECT_EQ(encodeTiled(map, TM_BFLOAT16, 2, out, dims, strides, box, es, 0, TM_SWIZZLE_128B, 0, 0), 0);
  return out;
}
// One warp writes element e of a 32 x 64 tile as e + 1 (generic stores), fences the async proxy
// when `fenced`, and thread 0 TMA-stores the tile at row `row` of `map`.
void storeOneTile(const TensorMap &map, int row, bool fenced) {
  using namespace wsemu::ptx;
  uint8_t *smem = dynamicShared();
  for (int e = threadIdx().x; e < 32 * 64; e += 32)
    at(reinterpret_cast<uint16_t *>(smem + sw128(e / 64, e % 64)), WSEMU_HERE) = (uint16_t)(e + 1);
  if (fenced) fence_proxy_async(WSEMU_HERE);
  syncwarp(0xffffffff, WSEMU_HERE);
  if (threadIdx().x == 0) {
    tma_store_2d(&map, smemAddr(smem), 0, row, WSEMU_HERE);
    bulk_commit_group(WSEMU_HERE);
    bulk_wait_group(0, false, WSEMU_HERE);
  }
}
}  // namespace

TEST(Tma, StoreDropsOutOfBoundsElements) {
  TensorMap map;
  uint16_t *out = storeTarget(40, &map);
  Verdict v = launch(Dim3(1), Dim3(32), 32 * 128, [&] { storeOneTile(map, 24, true); }, cfgOf(Policy::CompletionsLate));
  ASSERT_TRUE(v.pass()) << dump(v);
  for (int r = 0; r < 40; ++r)
    for (int c = 0; c < 64; ++c) ASSERT_EQ(out[r * 64 + c], r >= 24 ? (uint16_t)((r - 24) * 64 + c + 1) : 0);
  EXPECT_TRUE(redZonesIntact());
  emuFree(out);
}

// A TMA store reads shared memory through the async proxy: generic stores reach it through a
// fence.proxy.async. Without the fence the store writes what the proxy last saw (the arena's
// pattern here, nothing having made the stores visible) and the program's notes say so; with it,
// the stored bytes are the arena's.
TEST(Tma, AStoreOfGenericWritesNeedsTheProxyFence) {
  for (bool fenced : {true, false}) {
    TensorMap map;
    uint16_t *out = storeTarget(32, &map);
    uint64_t before = wsemu::ptx::g_proxy_unfenced.load();
    Verdict v = launch(Dim3(1), Dim3(32), 32 * 128, [&] { storeOneTile(map, 0, fenced); }, cfgOf());
    ASSERT_TRUE(v.pass()) << dump(v);
    EXPECT_EQ(wsemu::ptx::g_proxy_unfenced.load() - before, fenced ? 0u : 1u);
    for (int e = 0; e < 32 * 64; ++e) ASSERT_EQ(out[e], fenced ? (uint16_t)(e + 1) : (uint16_t)0xFFFF) << fenced << " " << e;
    emuFree(out);
  }
}

TEST(Tma, EncodeRejectsABoxWiderThanTheSwizzle) {
  Bf16Matrix in(64, 128, "in");
  TensorMap m;
  uint64_t dims[2] = {128, 64}, strides[1] = {256};
  uint32_t box[2] = {128, 32}, es[2] = {1, 1};
  EXPECT_NE(encodeTiled(&m, TM_BFLOAT16, 2, in.dev, dims, strides, box, es, 0, TM_SWIZZLE_128B, 0, 0), 0);
  EXPECT_NE(m.magic, kTensorMapMagic) << "a refused map is no map: a TMA given it is ub/bad-tensor-map";
}

// The strides the H200's driver takes (bench/results/2026-12-02-h200-session21/d): any multiple of
// 16, 0 and overlapping rows included (a reduction of gemm_expect_tx ended with a stride of 0).
TEST(Tma, EncodeTakesTheStridesTheDriverTakes) {
  Bf16Matrix in(64, 128, "in");
  for (uint64_t stride : {0, 16, 128, 256, 4096}) {
    TensorMap m;
    uint64_t dims[2] = {128, 64}, strides[1] = {stride};
    uint32_t box[2] = {64, 32}, es[2] = {1, 1};
    EXPECT_EQ(encodeTiled(&m, TM_BFLOAT16, 2, in.dev, dims, strides, box, es, 0, TM_SWIZZLE_128B, 0, 0), 0) << stride;
    EXPECT_EQ(m.magic, kTensorMapMagic) << stride;
  }
  TensorMap m;
  uint64_t dims[2] = {128, 64}, strides[1] = {8};
  uint32_t box[2] = {64, 32}, es[2] = {1, 1};
  EXPECT_NE(encodeTiled(&m, TM_BFLOAT16, 2, in.dev, dims, strides, box, es, 0, TM_SWIZZLE_128B, 0, 0), 0) << "not a multiple of 16";
}
