// Built-ins, the per-CTA shared arena and the registry of global allocations.
#include "emu/runtime/device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#include "emu/runtime/state.h"

namespace wsemu {

const Dim3 &threadIdx() { return self().tid; }
const Dim3 &blockIdx() { return cta().block_idx; }
const Dim3 &blockDim() { return cta().block; }
const Dim3 &gridDim() { return cta().grid; }
uint32_t laneid() { return (uint32_t)self().lane; }
uint32_t warpid() { return (uint32_t)self().warp; }
uint32_t linearThread() { return (uint32_t)self().id; }
uint64_t globaltimer() { return cta().ops * 10 + cta().step; }
uint64_t clock64() { return cta().ops; }

// ---------------------------------------------------------------------------------------
// Shared memory: the arena is [0, dyn) dynamic, then the statics from a 1024-aligned offset,
// then a guard region. Contents start as 0xFF bytes (NaN as floats): uninitialised reads show.
// A shared-window address (what __cvta_generic_to_shared gives, what the PTX operands hold) is
// the arena offset plus kWindowBase: on the H200 the first KiB of a CTA's shared window is
// reserved and the kernel's own shared memory starts at 1024 (bench/probes/smem_base.cu,
// bench/results/2026-11-30-h200-session11/). A literal address below it (a reduction that
// replaced `smem_u32(&full[0])` by `0`) names no memory of the kernel's: out of bounds here,
// another barrier or none on the GPU.
// ---------------------------------------------------------------------------------------
static constexpr size_t kStaticCap = 64 * 1024, kGuard = 4096;
static constexpr uint32_t kWindowBase = 1024;

static size_t staticBase(const Cta &c) { return (c.dyn_bytes + 1023) & ~size_t(1023); }

void setupSharedArena(Cta &c, size_t dyn) {
  c.dyn_bytes = dyn;
  c.static_cap = kStaticCap;
  c.smem_bytes = staticBase(c) + kStaticCap + kGuard;
  c.smem = static_cast<uint8_t *>(std::aligned_alloc(4096, (c.smem_bytes + 4095) & ~size_t(4095)));
  std::memset(c.smem, 0xFF, c.smem_bytes);
  c.async_view.assign(c.smem, c.smem + c.smem_bytes);
}

void releaseSharedArena(Cta &c) {
  std::free(c.smem);
  c.smem = nullptr;
  c.async_view = {};
}

uint8_t *dynamicShared() { return cta().smem; }

void nameShared(const void *p, size_t bytes, size_t elem, const char *name) {
  Cta &c = cta();
  uint32_t a = smemAddr(p);
  c.smem_names[a] = Cta::Sym{name, bytes, elem ? elem : bytes};
}

void *sharedStaticBytes(const char *name, size_t bytes, size_t align, size_t elem) {
  Cta &c = cta();
  auto it = c.static_offsets.find(name);
  if (it == c.static_offsets.end()) {
    size_t off = (c.static_used + align - 1) / align * align;
    if (off + bytes > c.static_cap)
      fail("crash/out-of-resources", SrcLoc{},
           std::string("static __shared__ ") + name + " exceeds the emulator's 64 KiB");
    c.static_used = off + bytes;
    it = c.static_offsets.emplace(name, staticBase(c) + off).first;
    c.smem_names[(uint32_t)it->second + kWindowBase] = Cta::Sym{name, bytes, elem};
  }
  return c.smem + it->second;
}

bool isShared(const void *p) {
  if (!inKernel()) return false;
  Cta &c = cta();
  auto u = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(c.smem);
  return u >= b && u < b + c.smem_bytes;
}

uint32_t smemAddr(const void *p, SrcLoc loc) {
  Cta &c = cta();
  if (!isShared(p)) {
    std::ostringstream o;
    o << "__cvta_generic_to_shared of " << p << ", which is not in this CTA's shared memory";
    fail("ub/out-of-bounds-shared", loc, o.str());
  }
  return (uint32_t)(static_cast<const uint8_t *>(p) - c.smem) + kWindowBase;
}

void *smemPtr(uint32_t addr) { return cta().smem + (addr - kWindowBase); }

void checkShared(uint32_t addr, size_t bytes, SrcLoc loc) {
  Cta &c = cta();
  const size_t w = kWindowBase, sb = w + staticBase(c);
  // The statics of a CTA are laid out as its threads first name them: the same layout in every CTA
  // of a launch. A peer of the cluster whose threads have not named one yet has it all the same
  // (the GPU gives every CTA of a cluster its shared memory at once).
  size_t used = c.static_used;
  if (c.cluster)
    for (Cta *p : c.cluster->ctas) used = std::max(used, p->static_used);
  size_t a = addr;
  bool ok = (a >= w && a + bytes <= w + c.dyn_bytes) || (a >= sb && a + bytes <= sb + used);
  if (!ok) {
    std::ostringstream o;
    o << bytes << " bytes at shared address 0x" << std::hex << addr << std::dec << " ("
      << smemName(addr) << ") are outside this CTA's shared memory: dynamic [" << w << ", "
      << w + c.dyn_bytes << ")";
    if (used) o << ", static [" << sb << ", " << sb + used << ")";
    if (a < w) o << "; the first " << w << " bytes of the shared window are reserved on sm_90";
    if (a > kClusterLocalMask)
      o << "; it is the shared::cluster address of CTA rank " << (a >> kClusterRankShift) - 1
        << " (mapa), used as a shared::cta one";
    fail("ub/out-of-bounds-shared", loc, o.str());
  }
}

// ---------------------------------------------------------------------------------------
// Distributed shared memory: the shared::cluster window (state.h, kClusterRankShift).
// ---------------------------------------------------------------------------------------
Cta &clusterTarget(uint32_t addr, uint32_t *local, SrcLoc loc) {
  Cta &c = cta();
  const uint32_t field = addr >> kClusterRankShift;
  *local = addr & kClusterLocalMask;
  if (field == 0) return c;
  const size_t n = c.cluster ? c.cluster->ctas.size() : 1;
  if (field > n) {
    std::ostringstream o;
    o << "shared::cluster address 0x" << std::hex << addr << std::dec << " names CTA rank "
      << field - 1 << " of a cluster of " << n << " CTA" << (n == 1 ? "" : "s");
    fail("ub/out-of-bounds-shared", loc, o.str());
  }
  return c.cluster ? *c.cluster->ctas[field - 1] : c;
}

Cta *clusterCtaOf(const void *p) {
  if (!inKernel()) return nullptr;
  Cta &c = cta();
  auto u = reinterpret_cast<uintptr_t>(p);
  auto in = [&](const Cta &x) {
    auto b = reinterpret_cast<uintptr_t>(x.smem);
    return x.smem && u >= b && u < b + x.smem_bytes;
  };
  if (in(c)) return &c;
  if (c.cluster)
    for (Cta *x : c.cluster->ctas)
      if (in(*x)) return x;
  return nullptr;
}

uint32_t clusterSmemAddr(const void *p, SrcLoc loc) {
  Cta *x = clusterCtaOf(p);
  if (!x) {
    std::ostringstream o;
    o << "a shared::cluster address of " << p
      << ", which is not in the shared memory of any CTA of this cluster";
    fail("ub/out-of-bounds-shared", loc, o.str());
  }
  return clusterEncode(x->rank,
                       (uint32_t)(static_cast<const uint8_t *>(p) - x->smem) + kWindowBase);
}

// ---------------------------------------------------------------------------------------
// Global memory
// ---------------------------------------------------------------------------------------
namespace {
constexpr size_t kRedZone = 256;
constexpr uint8_t kRedByte = 0xFB;
struct Alloc {
  size_t bytes;
  std::string name;
};
// Never destroyed: a program's objects of static duration free device memory at exit
// (CUTLASS's examples hold DeviceAllocations in globals), after a function-local map made at the
// first cudaMalloc would be gone.
std::map<uintptr_t, Alloc> &allocs() {
  static auto *m = new std::map<uintptr_t, Alloc>;
  return *m;
}
}  // namespace

void *emuMalloc(size_t bytes, const char *name) {
  size_t total = kRedZone + ((bytes + 15) & ~size_t(15)) + kRedZone;
  auto *raw = static_cast<uint8_t *>(std::aligned_alloc(256, (total + 255) & ~size_t(255)));
  if (!raw) return nullptr;
  std::memset(raw, kRedByte, total);
  uint8_t *p = raw + kRedZone;
  std::memset(p, 0, bytes);
  allocs()[reinterpret_cast<uintptr_t>(p)] = Alloc{bytes, name ? name : ""};
  return p;
}

static bool zoneIntact(uintptr_t base, const Alloc &a) {
  const uint8_t *p = reinterpret_cast<const uint8_t *>(base);
  size_t padded = (a.bytes + 15) & ~size_t(15);
  for (size_t i = 1; i <= kRedZone; ++i)
    if (p[-(ptrdiff_t)i] != kRedByte || p[padded + i - 1] != kRedByte) return false;
  return true;
}

void emuFree(void *p) {
  if (!p) return;
  auto it = allocs().find(reinterpret_cast<uintptr_t>(p));
  if (it == allocs().end()) return;
  std::free(static_cast<uint8_t *>(p) - kRedZone);
  allocs().erase(it);
}

bool emuIsAllocation(const void *p) { return allocs().count(reinterpret_cast<uintptr_t>(p)) > 0; }

bool emuInAllocation(const void *p) {
  auto u = reinterpret_cast<uintptr_t>(p);
  auto it = allocs().upper_bound(u);
  if (it == allocs().begin()) return false;
  --it;
  return u < it->first + std::max<size_t>(it->second.bytes, 1);
}

std::string describeGlobal(const void *p) {
  auto u = reinterpret_cast<uintptr_t>(p);
  auto it = allocs().upper_bound(u);
  std::ostringstream o;
  if (it != allocs().begin()) {
    --it;
    if (u < it->first + std::max<size_t>(it->second.bytes, 1)) {
      o << "offset " << u - it->first << " of "
        << (it->second.name.empty() ? "the allocation" : it->second.name) << " of "
        << it->second.bytes << " bytes at " << reinterpret_cast<void *>(it->first);
      return o.str();
    }
  }
  o << p;
  return o.str();
}

void emuMemcpy(void *dst, const void *src, size_t bytes) { std::memmove(dst, src, bytes); }
void emuMemset(void *dst, int value, size_t bytes) { std::memset(dst, value, bytes); }
size_t liveAllocations() { return allocs().size(); }

bool redZonesIntact(std::string *which) {
  for (auto &[b, a] : allocs())
    if (!zoneIntact(b, a)) {
      if (which) *which = a.name.empty() ? "an allocation" : a.name;
      return false;
    }
  return true;
}

void checkGlobal(const void *p, size_t bytes, SrcLoc loc) {
  auto u = reinterpret_cast<uintptr_t>(p);
  // Local memory: a pointer into the running thread's own fiber stack (the address of a local, as
  // in `*reinterpret_cast<uint32_t *>(&v)`). This frame is the lowest live one on that stack, so
  // the stack spans [here, here + stack size).
  auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (u >= here && u + bytes <= here + cta().cfg.stack_bytes) return;
  auto &m = allocs();
  auto it = m.upper_bound(u);
  if (it != m.begin()) {
    auto prev = std::prev(it);
    if (u >= prev->first && u + bytes <= prev->first + prev->second.bytes) return;
  }
  std::ostringstream o;
  o << bytes << " bytes at " << p << " are outside every global allocation";
  if (it != m.begin()) {
    auto prev = std::prev(it);
    long long off = (long long)(u - prev->first);
    o << "; nearest: " << (prev->second.name.empty() ? "allocation" : prev->second.name) << " of "
      << prev->second.bytes << " bytes at " << reinterpret_cast<void *>(prev->first) << " (offset "
      << off << ")";
  }
  fail("ub/out-of-bounds-global", loc, o.str());
}

void checkAccess(const void *p, size_t bytes, SrcLoc loc) {
  if (isShared(p)) {
    checkShared(smemAddr(p), bytes, loc);
    return;
  }
  // A generic pointer into a peer CTA's shared memory (mapa.u64, cluster.map_shared_rank).
  if (Cta *x = clusterCtaOf(p)) {
    CtaScope in(*x);
    checkShared(smemAddr(p), bytes, loc);
    return;
  }
  checkGlobal(p, bytes, loc);
}

}  // namespace wsemu
