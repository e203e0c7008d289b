// Hand translation of a small warp-specialized copy kernel: warp 0 lane 0 is the producer
// (TMA 2D loads of 32 x 64 bf16 boxes into a 3-stage ring, 128B swizzle), warps 1-4 are the
// consumers (one warpgroup's worth of threads: wait full[s], copy the tile out, arrive on
// empty[s]). The knobs inject the bugs the tests look for.
#pragma once

#include "emu_test.h"

namespace emutest {

struct RingKnobs {
  uint32_t full_count = 1;         // bug (b): 128
  uint32_t extra_tx = 0;           // bug (f): expect more bytes than the TMA delivers
  bool sync_in_consumer = false;   // bug (c): __syncthreads inside the consumer branch
};

constexpr int kStages = 3, kBoxRows = 32, kTileBytes = kBoxRows * 128;
constexpr int kRingThreads = 160;
constexpr size_t kRingSmem = kStages * kTileBytes + 2 * kStages * 8;

inline void ring_kernel(const TensorMap map, uint16_t *out, int rows, RingKnobs knobs) {
  // __grid_constant__ parameters, as the translator registers them (emu/runtime/tma.cpp, checkMapSpace)
  wsemu::ptx::kernelParam(&map, sizeof map, "map", true);
  using namespace wsemu::ptx;
  uint8_t *smem = dynamicShared();
  uint8_t *tiles = smem;
  uint64_t *full = reinterpret_cast<uint64_t *>(smem + kStages * kTileBytes);
  uint64_t *empty = full + kStages;
  nameShared(full, kStages * 8, 8, "full");
  nameShared(empty, kStages * 8, 8, "empty");
  const int tid = (int)threadIdx().x;
  const int ntiles = rows / kBoxRows;

  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(smemAddr(&full[s]), knobs.full_count, WSEMU_HERE);
      mbarrier_init(smemAddr(&empty[s]), 128, WSEMU_HERE);
    }
    fence_mbarrier_init(WSEMU_HERE);
  }
  syncthreads(WSEMU_HERE);

  if (tid < 32) {  // producer warp
    if (tid == 0) {
      int stage = 0;
      uint32_t phase = 0;
      for (int t = 0; t < ntiles; ++t) {
        while (!mbarrier_try_wait_parity(smemAddr(&empty[stage]), phase ^ 1, WSEMU_HERE)) {}  // @producer-wait
        mbarrier_arrive_expect_tx(smemAddr(&full[stage]), kTileBytes + knobs.extra_tx, WSEMU_HERE);
        tma_load_2d(smemAddr(tiles + stage * kTileBytes), &map, smemAddr(&full[stage]), 0, t * kBoxRows, WSEMU_HERE);
        if (++stage == kStages) stage = 0, phase ^= 1;
      }
    }
  } else {  // consumers: 128 threads
    if (knobs.sync_in_consumer) syncthreads(WSEMU_HERE);  // @consumer-sync
    const int ct = tid - 32;
    int stage = 0;
    uint32_t phase = 0;
    for (int t = 0; t < ntiles; ++t) {
      while (!mbarrier_try_wait_parity(smemAddr(&full[stage]), phase, WSEMU_HERE)) {}  // @consumer-wait
      const uint8_t *tile = tiles + stage * kTileBytes;
      for (int e = ct * 16; e < ct * 16 + 16; ++e) {
        int row = e / 64, col = e % 64;
        uint16_t v = at(reinterpret_cast<const uint16_t *>(tile + sw128(row, col)), WSEMU_HERE);
        at(&out[(size_t)(t * kBoxRows + row) * 64 + col], WSEMU_HERE) = v;
      }
      mbarrier_arrive(smemAddr(&empty[stage]), WSEMU_HERE);
      if (++stage == kStages) stage = 0, phase ^= 1;
    }
  }
}

}  // namespace emutest
