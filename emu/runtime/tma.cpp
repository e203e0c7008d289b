// TMA (cp.async.bulk.tensor) and plain bulk copies, with the bulk-group bookkeeping.
// A load reads a box of the tensor (out-of-bounds elements zero-filled), writes it to shared
// memory in the map's swizzle, and completes the box's full byte count on the mbarrier.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "emu/runtime/pdl.h"
#include "emu/runtime/ptx.h"
#include "emu/runtime/state.h"

namespace wsemu {

int encodeTiled(TensorMap *map, int dtype, uint32_t rank, void *base, const uint64_t *dims,
                const uint64_t *strides, const uint32_t *box, const uint32_t *elem_strides,
                int interleave, int swizzle, int l2, int oob_fill) {
  static const int sizes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
  if (!map || dtype < 0 || dtype > 12 || rank < 1 || rank > 5 || !base) return 1;
  if (reinterpret_cast<uintptr_t>(base) % 16 || interleave != 0 || swizzle < 0 || swizzle > 3)
    return 1;
  std::memset(map, 0, sizeof(*map));  // no magic until every check passed: a refused map is no map
  map->rank = (uint8_t)rank;
  map->elem_bytes = (uint8_t)sizes[dtype];
  map->swizzle = (uint8_t)swizzle;
  map->oob_fill = (uint8_t)oob_fill;
  map->base = reinterpret_cast<uint64_t>(base);
  for (uint32_t d = 0; d < rank; ++d) {
    if (dims[d] == 0 || box[d] == 0 || box[d] > 256) return 1;
    if (elem_strides && elem_strides[d] != 1)
      return 1;  // elementStrides other than 1: not modelled
    map->dims[d] = dims[d];
    map->box[d] = box[d];
    map->elem_strides[d] = 1;
    if (d > 0) {
      if (strides[d - 1] % 16) return 1;
      map->strides[d - 1] = strides[d - 1];
    }
  }
  uint32_t inner = box[0] * map->elem_bytes;
  if (inner % 16) return 1;
  if (swizzle && inner > (16u << swizzle)) return 1;  // the inner box row must fit the swizzle span
  // Any multiple of 16 is a stride, 0 and rows that overlap included: the H200's driver takes them
  // all (bench/probes/tmap_strides.cu).
  map->magic = kTensorMapMagic;
  return 0;
}

// The async proxy's view of shared memory (Cta::async_view): a load writes it as it writes the
// arena; a store and a wgmma read it. Generic stores (st.shared, C++) reach it only through a
// fence.proxy.async. A store whose source bytes differ between the arena and the view was written
// after the last fence: it stores what the view holds (stale bytes, the arena's 0xFF NaN pattern
// if nothing ever made them visible) and the program's exit notes say proxy-unfenced=N (stores),
// which the oracle puts in a wrong result's signature. On the H200 the missing fence never showed
// (0 of 50 runs in docs/bugs.md, then 5 of 5 passes): the GPU's own timing hides it.
uint8_t *asyncView(uint32_t addr) {
  return cta().async_view.data() + (static_cast<uint8_t *>(smemPtr(addr)) - cta().smem);
}
void proxyWrite(uint32_t addr, const void *p, size_t n) { std::memcpy(asyncView(addr), p, n); }
// With Config::coherent_proxy (WSEMU_PROXY=coherent, read when the program runs) the proxy sees
// every generic store at once: the counterfactual "every fence.proxy.async the program needs is
// there". The reducer runs an emulator candidate whose failure says proxy-unfenced once more this
// way, and takes it only when the verdict is then the original's (a pass): a failure that stays
// with the fences in place is not the missing fence's (tester.cpp, withCoherentProxy).
bool proxySees(uint32_t addr, size_t n) {
  return cta().cfg.coherent_proxy || std::memcmp(asyncView(addr), smemPtr(addr), n) == 0;
}

namespace ptx {
namespace {

uint32_t swizzleAddr(uint32_t a, int swizzle) {  // TMA/wgmma swizzle on shared address bits
  if (!swizzle) return a;
  uint32_t mask = (1u << swizzle) - 1;  // 32B: 1, 64B: 3, 128B: 7
  return a ^ (((a >> 7) & mask) << 4);
}

// Where the map lies: a __grid_constant__ parameter, or memory outside the thread's stack (global,
// __constant__, a host-made map cudaMemcpy'd to the device), is what the GPU reads a map from. A
// parameter without __grid_constant__, or a local variable, is the thread's local memory; shared
// memory is not a space a map is read from either. On the H200 a reduction that dropped
// __grid_constant__ turned a row-stripe output into one unrelated to the reference
// (bench/results/2026-12-02-h200-session18/).
void checkMapSpace(const TensorMap *map, SrcLoc loc) {
  const Thread &t = self();
  auto a = reinterpret_cast<const char *>(map);
  for (auto &p : t.params)
    if (a >= p.lo && a < p.hi) {
      if (p.grid_constant) return;
      fail(
          "ub/tensor-map-space", loc,
          std::string("the tensor map is kernel parameter `") + p.name +
              "`, which is not __grid_constant__: its address is the thread's local copy, and a "
              "TMA reads a "
              "map only from param, const or global memory (declare it `const __grid_constant__`)");
    }
  if (t.fiber.onStack(map))
    fail("ub/tensor-map-space", loc,
         "the tensor map is in the thread's local memory (a local variable or a by-value copy): a "
         "TMA reads a "
         "map only from param, const or global memory");
  const Cta &c = cta();
  if (a >= reinterpret_cast<const char *>(c.smem) &&
      a < reinterpret_cast<const char *>(c.smem) + c.smem_bytes)
    fail("ub/tensor-map-space", loc,
         "the tensor map is in shared memory: a TMA reads a map only from param, const or global "
         "memory");
}

const TensorMap &checkMap(const TensorMap *map, SrcLoc loc) {
  if (!map || map->magic != kTensorMapMagic)
    fail("ub/bad-tensor-map", loc, "the tensor map operand is not a map made by encodeTiled");
  checkMapSpace(map, loc);
  return *map;
}

// A copy signalling a barrier no init set up is not a fault on the H200: its bytes land and the
// word is left as it was (mbarrier_complete_tx, bench/probes/s16_uninit).
void checkBar(uint32_t bar, SrcLoc loc) { checkShared(bar, 8, loc); }

struct Box {
  uint32_t n[5] = {1, 1, 1, 1, 1};
  uint64_t rows = 1, row_bytes = 0, bytes = 0;
};

Box boxOf(const TensorMap &m) {
  Box b;
  for (int d = 0; d < m.rank; ++d) b.n[d] = m.box[d];
  b.row_bytes = (uint64_t)m.box[0] * m.elem_bytes;
  for (int d = 1; d < m.rank; ++d) b.rows *= m.box[d];
  b.bytes = b.rows * b.row_bytes;
  return b;
}

// Visit every box row: f(row index, global address of element c0 of the row or 0 if the row is
// out of bounds, first valid element, end of valid elements).
template <class F>
void forRows(const TensorMap &m, const int32_t *coords, const Box &b, F f) {
  for (uint64_t r = 0; r < b.rows; ++r) {
    uint64_t rem = r;
    bool in = true;
    uint64_t off = 0;
    for (int d = 1; d < m.rank; ++d) {
      int64_t c = (int64_t)coords[d] + (int64_t)(rem % b.n[d]);
      rem /= b.n[d];
      if (c < 0 || c >= (int64_t)m.dims[d])
        in = false;
      else
        off += (uint64_t)c * m.strides[d - 1];
    }
    int64_t c0 = coords[0];
    int64_t lo = std::max<int64_t>(0, -c0),
            hi = std::min<int64_t>(m.box[0], (int64_t)m.dims[0] - c0);
    if (!in || hi <= lo) {
      f(r, (uint8_t *)nullptr, 0, 0);
      continue;
    }
    f(r, reinterpret_cast<uint8_t *>(m.base + off + (c0 + lo) * m.elem_bytes), lo, hi);
  }
}

// In a programmatic dependent launch: the global bytes of the box a TMA load or store issued now
// reads or writes (pdl.cpp), at its issue, where the issuing thread's order stands.
void trackBox(const TensorMap &m, const int32_t *coords, const Box &b, Access a, SrcLoc loc) {
  forRows(m, coords, b, [&](uint64_t, uint8_t *g, int64_t lo, int64_t hi) {
    if (g) pdlAccess(g, (size_t)(hi - lo) * m.elem_bytes, a, loc);
  });
}

// Box elements a bulk tensor copy clipped at the tensor's bounds: a load zero-fills them, a store
// drops them, both silently, as the GPU does. A program that clipped any says so when it exits
// ("WSEMU note tma-store-clipped=N"), and the oracle adds it to a wrong result's signature: a
// TMA store whose coordinates all fall outside the tensor leaves the output unwritten, and so does
// a kernel with no store at all; without the note a reduction of the first took the second
// (bench/results/2026-11-30-h200-session9/).
std::atomic<uint64_t> g_clipped_load{0}, g_clipped_store{0};
struct ClipNote {
  ~ClipNote() {
    uint64_t l = g_clipped_load.load(), s = g_clipped_store.load();
    if (l || s)
      std::fprintf(stderr, "WSEMU note tma-load-clipped=%llu tma-store-clipped=%llu\n",
                   (unsigned long long)l, (unsigned long long)s);
  }
} g_clip_note;
uint64_t clippedElements(const TensorMap &m, int64_t lo, int64_t hi, bool in) {
  return in ? (uint64_t)(m.box[0] - (hi - lo)) : (uint64_t)m.box[0];
}

// The shared bytes [dst, dst + n) as they are, kept as a load's `before` (Cta::TxWrite) just
// before it lands; only in a CTA that uses tensor memory, whose tcgen05.mma is their one reader.
void keepBefore(const std::shared_ptr<std::vector<uint8_t>> &before, uint32_t dst, uint64_t n) {
  if (!before || !cta().tmem) return;
  const auto *p = static_cast<const uint8_t *>(smemPtr(dst));
  before->assign(p, p + n);
}

struct TmaLoad : AsyncOp {
  TensorMap map;
  int32_t coords[5];
  uint32_t dst, bar;
  Box box;
  std::vector<uint8_t> image;
  std::shared_ptr<std::vector<uint8_t>> before;
  bool dep_known = false;  // its issuing thread's Thread::dep_known (pdl.cpp)
  void read() override {
    image.assign(box.bytes, 0);
    if (map.oob_fill == TM_OOB_FILL_NAN && map.elem_bytes >= 2) {
      for (uint64_t i = 0; i < box.bytes;
           i += map.elem_bytes) {  // canonical NaN of the element type
        if (map.elem_bytes == 2)
          image[i + 1] = 0x7f, image[i] = 0xff;
        else
          std::memset(&image[i], 0xff, map.elem_bytes), image[i + map.elem_bytes - 1] = 0x7f;
      }
    }
    uint64_t clipped = 0;
    forRows(map, coords, box, [&](uint64_t r, uint8_t *g, int64_t lo, int64_t hi) {
      clipped += clippedElements(map, lo, hi, g != nullptr);
      if (!g) return;
      size_t n = (size_t)(hi - lo) * map.elem_bytes;
      checkGlobal(g, n, loc);
      std::memcpy(&image[r * box.row_bytes + lo * map.elem_bytes], g, n);
    });
    if (clipped) g_clipped_load += clipped;
  }
  void complete() override {
    checkShared(dst, box.bytes, loc);
    keepBefore(before, dst, box.bytes);
    for (uint64_t o = 0; o < box.bytes; o += 16) {
      uint32_t a = swizzleAddr(dst + (uint32_t)o, map.swizzle);
      checkShared(a, 16, loc);
      std::memcpy(smemPtr(a), &image[o], 16);
      proxyWrite(a, &image[o], 16);
    }
    mbarrier_complete_tx(bar, (uint32_t)box.bytes, loc, dep_known);
  }
};

struct TmaStore : AsyncOp {
  TensorMap map;
  int32_t coords[5];
  uint32_t src;
  Box box;
  std::vector<uint8_t> image;
  bool stale = false;  // its source was written after the last proxy fence: it reads the view
  // Whether the async proxy sees the source as the arena holds it now.
  bool fenced() const {
    for (uint64_t o = 0; o < box.bytes; o += 16)
      if (!proxySees(swizzleAddr(src + (uint32_t)o, map.swizzle), 16)) return false;
    return true;
  }
  void read() override {
    image.resize(box.bytes);
    checkShared(src, box.bytes, loc);
    for (uint64_t o = 0; o < box.bytes; o += 16) {
      uint32_t a = swizzleAddr(src + (uint32_t)o, map.swizzle);
      checkShared(a, 16, loc);
      std::memcpy(&image[o], stale ? asyncView(a) : smemPtr(a), 16);
    }
  }
  void complete() override {
    uint64_t clipped = 0;
    forRows(map, coords, box, [&](uint64_t r, uint8_t *g, int64_t lo, int64_t hi) {
      clipped += clippedElements(map, lo, hi, g != nullptr);
      if (!g) return;  // out-of-bounds elements of a store are dropped
      size_t n = (size_t)(hi - lo) * map.elem_bytes;
      checkGlobal(g, n, loc);
      std::memcpy(g, &image[r * box.row_bytes + lo * map.elem_bytes], n);
    });
    if (clipped) g_clipped_store += clipped;
  }
};

struct BulkLoad : AsyncOp {
  uint32_t dst, bar, bytes;
  const uint8_t *src;
  std::vector<uint8_t> image;
  std::shared_ptr<std::vector<uint8_t>> before;
  bool dep_known = false;  // as TmaLoad's
  void read() override {
    checkGlobal(src, bytes, loc);
    image.assign(src, src + bytes);
  }
  void complete() override {
    checkShared(dst, bytes, loc);
    keepBefore(before, dst, bytes);
    std::memcpy(smemPtr(dst), image.data(), bytes);
    proxyWrite(dst, image.data(), bytes);
    mbarrier_complete_tx(bar, bytes, loc, dep_known);
  }
};

struct BulkStore : AsyncOp {
  uint8_t *dst;
  uint32_t src, bytes;
  std::vector<uint8_t> image;
  bool stale = false;  // as TmaStore's
  void read() override {
    checkShared(src, bytes, loc);
    auto *p = stale ? asyncView(src) : static_cast<uint8_t *>(smemPtr(src));
    image.assign(p, p + bytes);
  }
  void complete() override {
    checkGlobal(dst, bytes, loc);
    std::memcpy(dst, image.data(), bytes);
  }
};

}  // namespace

void kernelParam(const void *p, size_t bytes, const char *name, bool grid_constant) {
  if (!inKernel()) return;
  auto lo = static_cast<const char *>(p);
  self().params.push_back({lo, lo + bytes, name, grid_constant});
}

namespace {
// A TMA load of a checked map into the current CTA's shared memory.
void issueTmaLoad(int rank, uint32_t dst, const TensorMap &m, const int32_t *coords, uint32_t bar,
                  SrcLoc loc) {
  if (rank != m.rank)
    fail("ub/bad-tensor-map", loc,
         "cp.async.bulk.tensor." + std::to_string(rank) + "d with a map of rank " +
             std::to_string(m.rank));
  if (dst % 128)
    fail("ub/misaligned", loc, "TMA destination in shared memory is not 128-byte aligned");
  checkBar(bar, loc);
  auto op = std::make_shared<TmaLoad>();
  op->kind = "cp.async.bulk.tensor (load)";
  op->loc = loc;
  op->map = m;
  std::memcpy(op->coords, coords, sizeof(int32_t) * rank);
  op->dst = dst;
  op->bar = bar;
  op->box = boxOf(m);
  op->dep_known = self().dep_known;
  checkShared(dst, op->box.bytes, loc);
  if (pdlTracked()) trackBox(m, coords, op->box, Access::Read, loc);
  traceOp("tma.load", dst, bar);
  op->before = noteTxWrite(dst, op->box.bytes, bar);
  issueAsync(op);
}

void issueBulkLoad(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar, SrcLoc loc) {
  if (dst % 16 || bytes % 16 || reinterpret_cast<uintptr_t>(src) % 16)
    fail("ub/misaligned", loc, "cp.async.bulk needs 16-byte aligned addresses and size");
  checkBar(bar, loc);
  checkShared(dst, bytes, loc);
  if (pdlTracked()) pdlAccess(src, bytes, Access::Read, loc);
  auto op = std::make_shared<BulkLoad>();
  op->kind = "cp.async.bulk (load)";
  op->loc = loc;
  op->dst = dst;
  op->bar = bar;
  op->bytes = bytes;
  op->src = static_cast<const uint8_t *>(src);
  op->dep_known = self().dep_known;
  op->before = noteTxWrite(dst, bytes, bar);
  issueAsync(op);
}

// The CTAs of the cluster a multicast's ctaMask names (a rank outside the cluster is UB).
std::vector<Cta *> multicastTargets(uint16_t mask, SrcLoc loc) {
  Cta &c = cta();
  const size_t n = c.cluster ? c.cluster->ctas.size() : 1;
  if (n < 16 && (mask >> n)) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "%x", mask);
    fail("ub/multicast-mask", loc,
         std::string("the multicast's ctaMask 0x") + hex +
             " names a CTA rank outside the cluster of " + std::to_string(n) + " CTAs");
  }
  std::vector<Cta *> out;
  for (size_t r = 0; r < n; ++r)
    if (mask >> r & 1) out.push_back(c.cluster ? c.cluster->ctas[r] : &c);
  return out;
}
}  // namespace

void tma_load(int rank, uint32_t dst, const TensorMap *mp, const int32_t *coords, uint32_t bar,
              SrcLoc loc) {
  preempt();
  const TensorMap &m = checkMap(mp, loc);
  issueTmaLoad(rank, dst, m, coords, bar, loc);
}

// One copy per destination CTA, each into that CTA's shared memory and pending operations, each
// signalling the barrier at the same offset there; under the eager policy each lands at issue.
void tma_load_multicast(int rank, uint32_t dst, const TensorMap *mp, const int32_t *coords,
                        uint32_t bar, uint16_t mask, SrcLoc loc) {
  preempt();
  const TensorMap &m = checkMap(mp, loc);
  for (Cta *t : multicastTargets(mask, loc)) {
    CtaScope in(*t);
    issueTmaLoad(rank, dst & kClusterLocalMask, m, coords, bar & kClusterLocalMask, loc);
  }
}

void bulk_load_multicast(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar, uint16_t mask,
                         SrcLoc loc) {
  preempt();
  for (Cta *t : multicastTargets(mask, loc)) {
    CtaScope in(*t);
    issueBulkLoad(dst & kClusterLocalMask, src, bytes, bar & kClusterLocalMask, loc);
  }
}

void tma_store(int rank, const TensorMap *mp, const int32_t *coords, uint32_t src, SrcLoc loc) {
  preempt();
  const TensorMap &m = checkMap(mp, loc);
  if (rank != m.rank)
    fail("ub/bad-tensor-map", loc,
         "cp.async.bulk.tensor." + std::to_string(rank) + "d with a map of rank " +
             std::to_string(m.rank));
  if (src % 128)
    fail("ub/misaligned", loc, "TMA store source in shared memory is not 128-byte aligned");
  auto op = std::make_shared<TmaStore>();
  op->kind = "cp.async.bulk.tensor (store)";
  op->store = true;
  op->loc = loc;
  op->map = m;
  std::memcpy(op->coords, coords, sizeof(int32_t) * rank);
  op->src = src;
  op->box = boxOf(m);
  checkShared(src, op->box.bytes, loc);
  if (pdlTracked()) trackBox(m, coords, op->box, Access::Write, loc);
  if (!op->fenced()) {
    op->stale = true;
    ++g_proxy_unfenced;
  }
  self().bulk_open.push_back(op);
  traceOp("tma.store", src, 0);
  issueAsync(op);
}

void bulk_load(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar, SrcLoc loc) {
  preempt();
  issueBulkLoad(dst, src, bytes, bar, loc);
}

void bulk_store(void *dst, uint32_t src, uint32_t bytes, SrcLoc loc) {
  preempt();
  if (src % 16 || bytes % 16 || reinterpret_cast<uintptr_t>(dst) % 16)
    fail("ub/misaligned", loc, "cp.async.bulk needs 16-byte aligned addresses and size");
  checkShared(src, bytes, loc);
  if (pdlTracked()) pdlAccess(dst, bytes, Access::Write, loc);
  auto op = std::make_shared<BulkStore>();
  op->kind = "cp.async.bulk (store)";
  op->store = true;
  op->loc = loc;
  op->dst = static_cast<uint8_t *>(dst);
  op->src = src;
  op->bytes = bytes;
  if (!proxySees(src, bytes)) {
    op->stale = true;
    ++g_proxy_unfenced;
  }
  self().bulk_open.push_back(op);
  issueAsync(op);
}

void bulk_commit_group(SrcLoc loc) {
  preempt();
  Thread &t = self();
  t.bulk_groups.push_back(std::move(t.bulk_open));
  t.bulk_open.clear();
}

void bulk_wait_group(int n, bool read_only, SrcLoc loc) {
  preempt();
  Thread &t = self();
  traceOp(read_only ? "bulk.wait_group.read" : "bulk.wait_group", n, t.bulk_groups.size());
  size_t total = t.bulk_groups.size();
  for (size_t i = 0; i + (size_t)n < total; ++i)
    for (auto &op : t.bulk_groups[i]) {
      op->waited = true;
      if (read_only)
        finishAsyncRead(*op);
      else
        finishAsync(*op);
    }
  while (!t.bulk_groups.empty()) {
    bool done = true;
    for (auto &op : t.bulk_groups.front()) done = done && op->done;
    if (!done) break;
    t.bulk_groups.pop_front();
  }
}

}  // namespace ptx
}  // namespace wsemu
