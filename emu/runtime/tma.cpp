// TMA (cp.async.bulk.tensor) and plain bulk copies, with the bulk-group bookkeeping.
// A load reads a box of the tensor (out-of-bounds elements zero-filled), writes it to shared
// memory in the map's swizzle, and completes the box's full byte count on the mbarrier.
#include <atomic>
#include <cmath>
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
  map->dtype = (uint8_t)dtype;
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

// One element of a bulk reduction: *g = *g <op> *s in `type` (PTX ISA, cp.reduce.async.bulk).
// Integer add wraps; inc and dec are atom's (inc: 0 once the old value reaches s; dec: s at 0 or
// above s). Float add rounds once to nearest (an f16/bf16 sum is exact in double, an f32 one is the
// float sum); min and max return an operand: a NaN loses to a number, -0 is below +0.
bool firstWins(double x, double y, bool min) {
  if (std::isnan(x)) return false;
  if (std::isnan(y)) return true;
  if (x == y) return std::signbit(x) == min;
  return min ? x < y : x > y;
}
double minMax(double x, double y, bool min) { return firstWins(x, y, min) ? x : y; }
void reduceElem(Atom op, RedType type, uint8_t *g, const uint8_t *s) {
  if (type == RedType::F16 || type == RedType::BF16) {
    uint16_t a, b;
    std::memcpy(&a, g, 2);
    std::memcpy(&b, s, 2);
    const bool h = type == RedType::F16;
    const double x = h ? f16ToFloat(a) : bf16ToFloat(a), y = h ? f16ToFloat(b) : bf16ToFloat(b);
    uint16_t r;
    if (op == Atom::Add)
      r = h ? floatToF16((float)(x + y)) : floatToBf16((float)(x + y));
    else
      r = firstWins(x, y, op == Atom::Min) ? a : b;
    std::memcpy(g, &r, 2);
    return;
  }
  if (type == RedType::F32) {
    float x, y;
    std::memcpy(&x, g, 4);
    std::memcpy(&y, s, 4);
    const float r = op == Atom::Add ? x + y : (float)minMax(x, y, op == Atom::Min);
    std::memcpy(g, &r, 4);
    return;
  }
  if (type == RedType::F64) {
    double x, y;
    std::memcpy(&x, g, 8);
    std::memcpy(&y, s, 8);
    const double r = op == Atom::Add ? x + y : minMax(x, y, op == Atom::Min);
    std::memcpy(g, &r, 8);
    return;
  }
  const size_t n = type == RedType::U32 || type == RedType::S32 ? 4 : 8;
  uint64_t a = 0, b = 0, r = 0;
  std::memcpy(&a, g, n);
  std::memcpy(&b, s, n);
  const bool sg = type == RedType::S32 || type == RedType::S64;
  const int64_t sa = n == 4 ? (int64_t)(int32_t)a : (int64_t)a,
                sb = n == 4 ? (int64_t)(int32_t)b : (int64_t)b;
  switch (op) {
    case Atom::Add:
      r = a + b;
      break;
    case Atom::Min:
      r = sg ? (uint64_t)std::min(sa, sb) : std::min(a, b);
      break;
    case Atom::Max:
      r = sg ? (uint64_t)std::max(sa, sb) : std::max(a, b);
      break;
    case Atom::And:
      r = a & b;
      break;
    case Atom::Or:
      r = a | b;
      break;
    case Atom::Xor:
      r = a ^ b;
      break;
    case Atom::Inc:
      r = a >= b ? 0 : a + 1;
      break;
    case Atom::Dec:
      r = (a == 0 || a > b) ? b : a - 1;
      break;
    case Atom::Exch:
      r = b;
      break;
  }
  std::memcpy(g, &r, n);
}

int redBytes(RedType t) {
  switch (t) {
    case RedType::F16:
    case RedType::BF16:
      return 2;
    case RedType::U32:
    case RedType::S32:
    case RedType::F32:
      return 4;
    default:
      return 8;
  }
}

// A TMA store whose writes combine (cp.reduce.async.bulk.tensor): the box's rows inside the tensor
// reduced element-wise into it.
struct TmaReduce : TmaStore {
  Atom op = Atom::Add;
  RedType type = RedType::F32;
  void complete() override {
    uint64_t clipped = 0;
    forRows(map, coords, box, [&](uint64_t r, uint8_t *g, int64_t lo, int64_t hi) {
      clipped += clippedElements(map, lo, hi, g != nullptr);
      if (!g) return;
      const size_t n = (size_t)(hi - lo) * map.elem_bytes;
      checkGlobal(g, n, loc);
      const uint8_t *s = &image[r * box.row_bytes + lo * map.elem_bytes];
      for (size_t i = 0; i < n; i += map.elem_bytes) reduceElem(op, type, g + i, s + i);
    });
    if (clipped) g_clipped_store += clipped;
  }
};

struct BulkReduce : BulkStore {
  Atom op = Atom::Add;
  RedType type = RedType::F32;
  void complete() override {
    checkGlobal(dst, bytes, loc);
    const size_t e = (size_t)redBytes(type);
    for (size_t i = 0; i < bytes; i += e) reduceElem(op, type, dst + i, image.data() + i);
  }
};

// An Ampere cp.async: a thread's copy of up to 16 bytes into shared memory, the bytes past
// src_size zero. It is a generic-proxy write (the async proxy's view is not written).
struct CpAsync : AsyncOp {
  uint32_t dst = 0, cp_size = 0, src_size = 0;
  const uint8_t *src = nullptr;
  uint8_t image[16] = {};
  void read() override {
    std::memset(image, 0, sizeof image);
    if (src_size) {
      checkGlobal(src, src_size, loc);
      std::memcpy(image, src, src_size);
    }
  }
  void complete() override {
    checkShared(dst, cp_size, loc);
    std::memcpy(smemPtr(dst), image, cp_size);
  }
};

// cp.async.mbarrier.arrive: its arrive-on, once the thread's cp.asyncs before it have completed.
struct CpAsyncArrive : AsyncOp {
  uint32_t bar = 0;
  std::vector<AsyncPtr> prior;
  bool dep_known = false;
  void complete() override {
    for (auto &p : prior) finishAsync(*p);
    prior.clear();
    mbarrier_arrive_async(bar, loc, dep_known, "cp.async.mbarrier.arrive");
  }
};

// The checks and bookkeeping a TMA store and a TMA reduction share: the map's rank, the source's
// alignment and bounds, the async proxy's view of it, the thread's open bulk group.
void issueTmaStore(std::shared_ptr<TmaStore> op, int rank, const TensorMap &m,
                   const int32_t *coords, uint32_t src, const char *opcode, const char *name,
                   Access access, SrcLoc loc) {
  if (rank != m.rank)
    fail("ub/bad-tensor-map", loc,
         std::string(opcode) + "." + std::to_string(rank) + "d with a map of rank " +
             std::to_string(m.rank));
  if (src % 128)
    fail("ub/misaligned", loc,
         std::string(name) + " source in shared memory is not 128-byte aligned");
  op->store = true;
  op->loc = loc;
  op->map = m;
  std::memcpy(op->coords, coords, sizeof(int32_t) * rank);
  op->src = src;
  op->box = boxOf(m);
  checkShared(src, op->box.bytes, loc);
  if (pdlTracked()) trackBox(m, coords, op->box, access, loc);
  if (!op->fenced()) {
    op->stale = true;
    ++g_proxy_unfenced;
  }
  self().bulk_open.push_back(op);
  traceOp("tma.store", src, 0);
  issueAsync(op);
}

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
  auto op = std::make_shared<TmaStore>();
  op->kind = "cp.async.bulk.tensor (store)";
  issueTmaStore(op, rank, m, coords, src, "cp.async.bulk.tensor", "TMA store", Access::Write, loc);
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

namespace {
// The element type of a tensor map, as a reduction combines it; a type the PTX ISA gives no
// reduction for (8- and 16-bit integers, tf32) is refused by name.
RedType redTypeOf(const TensorMap &m, SrcLoc loc) {
  switch (m.dtype) {
    case TM_UINT32:
      return RedType::U32;
    case TM_INT32:
      return RedType::S32;
    case TM_UINT64:
      return RedType::U64;
    case TM_INT64:
      return RedType::S64;
    case TM_FLOAT16:
      return RedType::F16;
    case TM_BFLOAT16:
      return RedType::BF16;
    case TM_FLOAT32:
    case TM_FLOAT32_FTZ:
      return RedType::F32;
    case TM_FLOAT64:
      return RedType::F64;
  }
  unknown_instruction(("cp.reduce.async.bulk.tensor on a tensor map of data type " +
                       std::to_string(m.dtype) + " (CUtensorMapDataType)")
                          .c_str(),
                      loc);
}

const char *atomName(Atom op) {
  static const char *n[] = {"add", "min", "max", "and", "or", "xor", "exch", "inc", "dec"};
  return n[(int)op];
}

bool redAllowed(Atom op, RedType t) {
  const bool fl = t == RedType::F16 || t == RedType::BF16 || t == RedType::F32 || t == RedType::F64;
  if (op == Atom::Exch) return false;
  if (op == Atom::Inc || op == Atom::Dec) return t == RedType::U32;
  if (op == Atom::And || op == Atom::Or || op == Atom::Xor) return !fl;
  return true;
}
}  // namespace

void tma_reduce(int rank, const TensorMap *mp, const int32_t *coords, uint32_t src, Atom op,
                SrcLoc loc) {
  preempt();
  const TensorMap &m = checkMap(mp, loc);
  const RedType type = redTypeOf(m, loc);
  if (!redAllowed(op, type))
    unknown_instruction((std::string("cp.reduce.async.bulk.tensor .") + atomName(op) +
                         " on a tensor map of data type " + std::to_string(m.dtype))
                            .c_str(),
                        loc);
  auto r = std::make_shared<TmaReduce>();
  r->kind = "cp.reduce.async.bulk.tensor (reduce)";
  r->op = op;
  r->type = type;
  issueTmaStore(r, rank, m, coords, src, "cp.reduce.async.bulk.tensor", "TMA reduction",
                Access::Atomic, loc);
}

void bulk_reduce(void *dst, uint32_t src, uint32_t bytes, Atom op, RedType type, SrcLoc loc) {
  preempt();
  if (src % 16 || bytes % 16 || reinterpret_cast<uintptr_t>(dst) % 16)
    fail("ub/misaligned", loc, "cp.reduce.async.bulk needs 16-byte aligned addresses and size");
  checkShared(src, bytes, loc);
  if (pdlTracked()) pdlAccess(dst, bytes, Access::Atomic, loc);
  auto r = std::make_shared<BulkReduce>();
  r->kind = "cp.reduce.async.bulk (reduce)";
  r->store = true;
  r->loc = loc;
  r->dst = static_cast<uint8_t *>(dst);
  r->src = src;
  r->bytes = bytes;
  r->op = op;
  r->type = type;
  if (!proxySees(src, bytes)) {
    r->stale = true;
    ++g_proxy_unfenced;
  }
  self().bulk_open.push_back(r);
  issueAsync(r);
}

void tma_prefetch(int rank, const TensorMap *mp, const int32_t *coords, SrcLoc loc) {
  preempt();
  const TensorMap &m = checkMap(mp, loc);
  if (rank != m.rank)
    fail("ub/bad-tensor-map", loc,
         "cp.async.bulk.prefetch.tensor." + std::to_string(rank) + "d with a map of rank " +
             std::to_string(m.rank));
  traceOp("tma.prefetch", coords[0], 0);
}

// ---- Ampere cp.async ----
// A thread's copies are asynchronous to it alone: issueAsync lands them at issue (eager) or leaves
// them pending (the late policies), and a wait_group or the tracking mbarrier arrive completes
// them. A pending copy is also delivered when every thread is blocked.
void cp_async(uint32_t dst, const void *src, uint32_t cp_size, uint32_t src_size, SrcLoc loc) {
  preempt();
  if (src_size > cp_size)
    fail("ub/cp-async-src-size", loc,
         "cp.async with src-size " + std::to_string(src_size) + " above its cp-size " +
             std::to_string(cp_size));
  if (dst % cp_size || reinterpret_cast<uintptr_t>(src) % cp_size)
    fail("ub/misaligned", loc,
         "cp.async of " + std::to_string(cp_size) + " bytes needs addresses aligned to " +
             std::to_string(cp_size));
  checkShared(dst, cp_size, loc);
  if (src_size && pdlTracked()) pdlAccess(src, src_size, Access::Read, loc);
  Thread &t = self();
  // Copies a tracking mbarrier arrive completed leave the open group, which a program that only
  // arrives (and never commits) would otherwise grow without end.
  if (t.cpa_open.size() >= 64) std::erase_if(t.cpa_open, [](const AsyncPtr &p) { return p->done; });
  auto op = std::make_shared<CpAsync>();
  op->kind = "cp.async";
  op->loc = loc;
  op->thread_copy = true;
  op->dst = dst;
  op->src = static_cast<const uint8_t *>(src);
  op->cp_size = cp_size;
  op->src_size = src_size;
  t.cpa_open.push_back(op);
  traceOp("cp.async", dst, cp_size);
  issueAsync(op);
}

void cp_async_commit_group(SrcLoc loc) {
  preempt();
  Thread &t = self();
  t.cpa_groups.push_back(std::move(t.cpa_open));
  t.cpa_open.clear();
}

void cp_async_wait_group(int n, SrcLoc loc) {
  preempt();
  Thread &t = self();
  traceOp("cp.async.wait_group", n, t.cpa_groups.size());
  while (t.cpa_groups.size() > (size_t)std::max(n, 0)) {
    for (auto &op : t.cpa_groups.front()) finishAsync(*op);
    t.cpa_groups.pop_front();
  }
}

void cp_async_wait_all(SrcLoc loc) {
  cp_async_commit_group(loc);
  cp_async_wait_group(0, loc);
}

void cp_async_mbarrier_arrive(uint32_t bar, bool noinc, SrcLoc loc) {
  preempt();
  Thread &t = self();
  if (!noinc) mbarrier_pending_inc(bar, loc, "cp.async.mbarrier.arrive");
  auto op = std::make_shared<CpAsyncArrive>();
  op->kind = "cp.async.mbarrier.arrive";
  op->loc = loc;
  op->thread_copy = true;
  op->bar = bar;
  op->dep_known = t.dep_known;
  for (auto &p : t.cpa_open)
    if (!p->done) op->prior.push_back(p);
  for (auto &g : t.cpa_groups)
    for (auto &p : g)
      if (!p->done) op->prior.push_back(p);
  traceOp("cp.async.mbarrier.arrive", bar, noinc);
  issueAsync(op);
}

}  // namespace ptx
}  // namespace wsemu
