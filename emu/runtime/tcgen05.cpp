// tcgen05 and tensor memory (PTX ISA, "TensorCore 5th Generation Family Instructions"), for
// cta_group::1: a CTA's tensor memory is 128 lanes x 512 columns of 32-bit cells (state.h, Tmem).
//   - alloc, dealloc and relinquish_alloc_permit are warp collectives (.sync.aligned);
//   - tcgen05.mma is one thread's asynchronous D = A * B (+ D): A and B from shared memory through
//     the descriptors (the layouts of wgmma.cpp), D (f32) in tensor memory, lane m = row m;
//   - tcgen05.commit arrives once on an mbarrier when the thread's earlier mmas have completed;
//   - tcgen05.ld (32x32b) copies tensor memory into registers by tcgen05.wait::ld;
//   - tcgen05.st copies registers into tensor memory by tcgen05.wait::st;
//   - tcgen05.cp is one thread's asynchronous copy of a shared-memory matrix into tensor memory,
//     ordered with its mmas and tracked by its commits as they are;
//   - tcgen05.fence::after_thread_sync orders the thread's later tcgen05 operations after what its
//     thread synchronisation (mbarrier waits, barriers) made it know.
// The timing policies decide when an mma reads its operands and writes D, and when an ld reads, as
// for wgmma and TMA. A tcgen05 operation that no after_thread_sync orders after the wait that told
// its thread the data was there is not ordered after it: under the late policies it reads what was
// there before (the cell's value before the last mma wrote it; the shared bytes before the TMA
// load landed). The eager policy reads what is there, so that the race stays latent there, as the
// missing proxy fence does.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "emu/runtime/ptx.h"
#include "emu/runtime/state.h"

namespace wsemu {

namespace {

// Reads of tensor memory that the reading thread's tcgen05 operations are not ordered after (no
// after_thread_sync since it learned of the write's completion): the exit notes say
// tmem-read-unordered=N, under every policy.
std::atomic<uint64_t> g_tmem_unordered{0};
struct TmemNote {
  ~TmemNote() {
    if (uint64_t n = g_tmem_unordered.load())
      std::fprintf(stderr, "WSEMU note tmem-read-unordered=%llu\n", (unsigned long long)n);
  }
} g_tmem_note;

// Reads (tcgen05.ld) of cells whose tcgen05.st its thread had not waited for (tcgen05.wait::st)
// when the read came: the exit notes say tmem-st-unwaited=N, under every policy. Under the late
// policies such a store has not landed yet, and the read sees the cell as it was before.
std::atomic<uint64_t> g_tmem_st_unwaited{0};
struct TmemStNote {
  ~TmemStNote() {
    if (uint64_t n = g_tmem_st_unwaited.load())
      std::fprintf(stderr, "WSEMU note tmem-st-unwaited=%llu\n", (unsigned long long)n);
  }
} g_tmem_st_note;

bool late() { return cta().cfg.policy != Policy::Eager; }

Tmem &tmemOf(Cta &c) {
  if (!c.tmem) {
    c.tmem = std::make_unique<Tmem>();
    Tmem &m = *c.tmem;
    const size_t cells = (size_t)kTmemLanes * kTmemCols;
    m.cur.resize(cells);
    uninit(m.cur.data(), cells * sizeof(uint32_t));  // never written: as an uninitialised local
    m.prev = m.cur;
    m.writer.assign(cells, 0);
    m.st_pending.assign(cells, 0);
    m.mmas.resize(1);
    m.last_read.assign((size_t)c.nwarps * kTmemCols, 0);
    m.reads.assign((size_t)c.nwarps, 0);
  }
  return *c.tmem;
}

std::string hex(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%x", v);
  return b;
}

// Every column of [lo, hi) lies in an allocation.
bool allocated(const Tmem &m, uint32_t lo, uint32_t hi) {
  for (uint32_t col = lo; col < hi; ++col) {
    bool in = false;
    for (auto &a : m.allocs) in = in || (col >= a.col && col < a.col + a.ncols);
    if (!in) return false;
  }
  return true;
}

// An access of columns [lo, hi) that no allocation holds. One that a dealloc freed is a use after
// the dealloc: nothing ordered it before the dealloc (a CTA barrier between them), or it came
// after.
void checkAllocated(const Tmem &m, uint32_t lo, uint32_t hi, const std::string &op, SrcLoc loc) {
  if (hi <= kTmemCols && allocated(m, lo, hi)) return;
  for (auto &f : m.freed)
    if (f.col < hi && lo < f.col + f.ncols)
      fail("ub/tmem-use-after-dealloc", loc,
           op + " on tensor-memory columns " + std::to_string(lo) + ".." + std::to_string(hi - 1) +
               ", which warp " + std::to_string(f.warp) + "'s tcgen05.dealloc at " + siteOf(f.loc) +
               " freed: nothing orders this access before that dealloc (a CTA barrier between "
               "them), so the memory may be gone when it is used");
  fail("ub/tmem-unallocated", loc,
       op + " on tensor-memory columns " + std::to_string(lo) + ".." + std::to_string(hi - 1) +
           ", which no tcgen05.alloc of this CTA holds (" +
           (m.allocs.empty() ? std::string("none is allocated")
                             : std::to_string(m.allocs.size()) + " allocation(s)") +
           ")");
}

// ---- warp collectives: every lane of the warp, converged ----

// The kind of a tcgen05 warp collective: the instruction and where it is (its call chain), so that
// the lanes of a warp meet only at one instruction.
std::string collectiveKind(const char *op, SrcLoc loc) {
  std::string where;
  for (auto &f : self().calls) where += siteOf(f) + ">";
  return std::string(op) + " at " + where + siteOf(loc);
}

std::shared_ptr<Collective> openTcgen05(Cta &c, int warp) {
  for (auto &[key, k] : c.open_colls)
    if (k->scope == warp && k->kind.rfind("tcgen05.", 0) == 0) return k;
  return nullptr;
}

std::string lanesWaiting(const Collective &k) {
  int n = 0;
  for (char p : k.present) n += p;
  return std::to_string(n) + (n == 1 ? " lane" : " lanes");
}

// .sync.aligned: every lane of the warp executes the instruction together. A lane that has exited,
// or that reached another tcgen05 warp collective while this one waits, never comes: on the GPU
// the warp is not converged there (a lane guard around a whole-warp instruction), which the PTX
// ISA leaves undefined.
void checkConverged(const std::string &kind, SrcLoc loc) {
  Cta &c = cta();
  Thread &t = self();
  if (c.warp_live[t.warp] < c.warp_size[t.warp])
    for (int l = 0; l < c.warp_size[t.warp]; ++l)
      if (c.threads[(size_t)(t.warp * 32 + l)]->state == Thread::Exited)
        fail("ub/tcgen05-diverged", loc,
             kind + " is a whole-warp instruction (.sync.aligned), and lane " + std::to_string(l) +
                 " of warp " + std::to_string(t.warp) +
                 " has exited: the warp is not converged at it");
  if (auto k = openTcgen05(c, t.warp); k && k->kind != kind)
    fail("ub/tcgen05-diverged", k->loc,
         k->kind + " waits with " + lanesWaiting(*k) + " of warp " + std::to_string(t.warp) +
             " for the rest (a whole-warp instruction, .sync.aligned), and lane " +
             std::to_string(t.lane) + " reached " + kind +
             " instead: the warp is not converged at either");
}

std::shared_ptr<Collective> warpCollective(const std::string &kind, SrcLoc loc, uint64_t in,
                                           uint64_t in2,
                                           const std::function<void(Collective &)> &complete) {
  checkConverged(kind, loc);
  return warpRendezvous(kind, 0xffffffffu, loc, in, in2, nullptr, complete);
}

void checkUniform(const Collective &k, const char *what, SrcLoc loc) {
  int first = -1;
  for (int l = 0; l < 32; ++l) {
    if (!k.present[l]) continue;
    if (first < 0) first = l;
    if (k.in[l] != k.in[first] || k.in2[l] != k.in2[first])
      fail("ub/non-uniform-tcgen05-operand", loc,
           std::string("lanes ") + std::to_string(first) + " and " + std::to_string(l) +
               " of warp " + std::to_string(k.scope) + " passed different operands to " + what +
               " (a whole-warp instruction takes one)");
  }
}

// ---- what a thread's tcgen05 operations are ordered after ----

// The mma `id` completed, as the thread `r`'s tcgen05 operations know: a commit of its issuer that
// covers it arrived, and r's tc_seen holds the barrier phase that arrival counted toward.
bool mmaKnown(const Tmem &m, uint32_t id, const Thread &r) {
  const Tmem::Mma &x = m.mmas[id];
  for (auto &cm : m.commits) {
    if (cm.issuer != x.issuer || cm.upto < x.n || !cm.arrived) continue;
    auto it = r.tc_seen.find(cm.bar);
    if (it != r.tc_seen.end() && it->second > cm.phase) return true;
  }
  return false;
}

// Cell (lane, col) as `r` reads it: a write it is not ordered after reads as the value before it
// under the late policies (counted under every policy).
struct CellReader {
  const Tmem &m;
  const Thread &r;
  bool stale_ok;
  std::vector<std::pair<uint32_t, bool>> known;  // mma id -> mmaKnown, per read
  uint32_t operator()(uint32_t lane, uint32_t col) {
    const size_t i = (size_t)lane * kTmemCols + col;
    if (m.st_pending[i]) ++g_tmem_st_unwaited;
    const uint32_t w = m.writer[i];
    if (!w) return m.cur[i];
    bool k = false, found = false;
    for (auto &[id, v] : known)
      if (id == w) k = v, found = true;
    if (!found) {
      k = mmaKnown(m, w, r);
      known.push_back({w, k});
    }
    if (k) return m.cur[i];
    ++g_tmem_unordered;
    return stale_ok ? m.prev[i] : m.cur[i];
  }
};

// ---- tcgen05.mma ----

struct Region {  // a TMA load's bytes that the mma's thread does not know landed
  uint32_t begin, end;
  std::shared_ptr<std::vector<uint8_t>> before;
};

// The shared-memory bytes an asynchronous tcgen05 operation (mma, cp) reads: through the async
// proxy's view, and, under the late policies, a TMA load's bytes that its thread's tcgen05
// operations are not ordered after as they were before the load landed.
struct SmemSource {
  bool stale_ok = false;
  std::vector<Region> unordered;

  const uint8_t *at(uint32_t addr, size_t e, bool &proxy_stale, SrcLoc loc) const {
    checkShared(addr, e, loc);
    const uint8_t *p = static_cast<const uint8_t *>(smemPtr(addr));
    bool before = false;
    if (stale_ok)
      for (auto &r : unordered)
        if (addr >= r.begin && addr + e <= r.end && r.before->size() == r.end - r.begin) {
          p = r.before->data() + (addr - r.begin);
          before = true;
        }
    if (!before && !proxySees(addr, e)) {
      p = asyncView(addr);
      proxy_stale = true;
    }
    return p;
  }

  // The TMA-loaded bytes of [lo, hi) whose barrier phase `t`'s tcgen05 operations are not ordered
  // after (counted as smem-read-unwaited / smem-read-before-tx, under every policy).
  void note(Cta &c, Thread &t, uint32_t lo, uint32_t hi) {
    readBeforeLandedKnowing(t.tc_seen, lo, hi);
    for (auto &w : c.tx_writes) {
      if (w.end <= lo || hi <= w.begin) continue;
      auto it = t.tc_seen.find(w.bar);
      if ((it == t.tc_seen.end() || it->second <= w.phase) && w.before)
        unordered.push_back({w.begin, w.end, w.before});
    }
  }
};

struct TcMmaOp : AsyncOp, SmemSource {
  int m = 128, n = 0, k = 16;
  ptx::WgType ta = ptx::WgType::BF16, tb = ptx::WgType::BF16;
  bool neg_a = false, neg_b = false, acc = true, mn_a = false, mn_b = false;
  uint64_t da = 0, db = 0;  // in wgmma's descriptor form
  uint32_t col = 0, id = 0;
  std::vector<float> A, B;  // m x k, n x k

  float elem(uint32_t addr, ptx::WgType t, bool &proxy_stale) {
    const size_t e = t == ptx::WgType::TF32 ? 4 : 2;
    const uint8_t *p = at(addr, e, proxy_stale, loc);
    if (t == ptx::WgType::TF32) {
      uint32_t u;
      std::memcpy(&u, p, 4);
      return tf32ToFloat(u);
    }
    uint16_t h;
    std::memcpy(&h, p, 2);
    return t == ptx::WgType::BF16 ? bf16ToFloat(h) : f16ToFloat(h);
  }

  void read() override {
    A.assign((size_t)m * k, 0.f);
    B.assign((size_t)n * k, 0.f);
    bool proxy_stale = false;
    const int ea = ta == ptx::WgType::TF32 ? 4 : 2, eb = tb == ptx::WgType::TF32 ? 4 : 2;
    for (int r = 0; r < m; ++r)
      for (int kk = 0; kk < k; ++kk)
        A[(size_t)r * k + kk] = elem(ptx::wgmma_desc_addr(da, mn_a, ea, r, kk), ta, proxy_stale);
    for (int r = 0; r < n; ++r)
      for (int kk = 0; kk < k; ++kk)
        B[(size_t)r * k + kk] = elem(ptx::wgmma_desc_addr(db, mn_b, eb, r, kk), tb, proxy_stale);
    if (proxy_stale) ++ptx::g_proxy_unfenced;
    if (neg_a)
      for (auto &x : A) x = -x;
    if (neg_b)
      for (auto &x : B) x = -x;
  }

  void complete() override {
    Tmem &t = tmemOf(cta());
    for (int r = 0; r < m; ++r) {
      const float *a = &A[(size_t)r * k];
      for (int c = 0; c < n; ++c) {
        const float *b = &B[(size_t)c * k];
        float dot = 0.f;
        for (int kk = 0; kk < k; ++kk) dot += a[kk] * b[kk];
        const size_t i = (size_t)r * kTmemCols + col + (size_t)c;
        const float d = acc ? bitsToFloat(t.cur[i]) + dot : dot;
        t.prev[i] = t.cur[i];
        t.cur[i] = floatToBits(d);
        t.writer[i] = id;
      }
    }
  }
};

// The operand type of an instruction descriptor's format field for `kind`.
bool operandType(ptx::TcKind kind, uint32_t fmt, ptx::WgType *t) {
  if (kind == ptx::TcKind::TF32) {
    *t = ptx::WgType::TF32;
    return fmt == 2;
  }
  *t = fmt == 1 ? ptx::WgType::BF16 : ptx::WgType::F16;
  return fmt == 0 || fmt == 1;
}

// A Blackwell shared-memory descriptor (CUTLASS's UMMA::SmemDescriptor: start, LBO and SBO >> 4 at
// bits 0, 16, 32; version 1 at 46; base offset at 49; LBO mode at 52; layout at 61-63) as the
// Hopper descriptor wgmma_desc_addr reads: the canonical layouts are the same.
uint64_t hopperDesc(uint64_t d, const char *which, SrcLoc loc, const char *op = "tcgen05.mma") {
  const uint32_t version = (uint32_t)(d >> 46) & 3, base = (uint32_t)(d >> 49) & 7,
                 lbo_mode = (uint32_t)(d >> 52) & 1, layout = (uint32_t)(d >> 61) & 7;
  if (version != 1)
    fail("ub/tcgen05-descriptor", loc,
         std::string(op) + "'s " + which + "descriptor has version " + std::to_string(version) +
             " in bits 46-47 (a tcgen05 shared-memory descriptor has 1)");
  if (layout == 3 || layout == 5 || layout == 7)
    fail("ub/tcgen05-descriptor", loc,
         std::string(op) + "'s " + which + "descriptor has layout type " +
             std::to_string(layout) + ", which no swizzling mode has");
  if (layout == 1)
    ptx::unknown_instruction((std::string(op) + " with a SWIZZLE_128B_BASE32B operand").c_str(),
                             loc);
  if (base || lbo_mode)
    ptx::unknown_instruction(
        (std::string(op) + " with a descriptor's matrix base offset or LBO mode other than 0")
            .c_str(),
        loc);
  static const uint64_t mode[] = {0, 0, 1, 0, 2, 0, 3, 0};  // none, 128B, 64B, 32B
  return (d & 0x3FFF3FFF3FFFull) | (mode[layout] << 62);
}

// The lowest and highest shared byte an operand's rows x k elements read.
std::pair<uint32_t, uint32_t> extent(uint64_t desc, bool mn_major, int e, int rows, int k) {
  uint32_t lo = ~0u, hi = 0;
  for (int r = 0; r < rows; ++r)
    for (int kk = 0; kk < k; ++kk) {
      const uint32_t a = ptx::wgmma_desc_addr(desc, mn_major, e, r, kk);
      lo = std::min(lo, a);
      hi = std::max(hi, a + (uint32_t)e);
    }
  return {lo, hi};
}

struct TcCommitOp : AsyncOp {
  uint32_t bar = 0;
  size_t idx = 0;
  bool dep_known = false;  // its thread's Thread::dep_known at the commit (pdl.cpp)
  void complete() override {
    const uint64_t phase = ptx::mbarrier_arrive_async(bar, loc, dep_known);
    Tmem::Commit &cm = tmemOf(cta()).commits[idx];
    cm.phase = phase;
    cm.arrived = true;
  }
};

// One lane's tcgen05.ld values: lane `lane` of tensor memory, columns col .. col + n - 1.
std::vector<uint32_t> readRow(const Tmem &m, const Thread &r, uint32_t lane, uint32_t col, int n) {
  CellReader rd{m, r, late(), {}};
  std::vector<uint32_t> v((size_t)n);
  for (int j = 0; j < n; ++j) v[(size_t)j] = rd(lane, col + (uint32_t)j);
  return v;
}

void writeRegs(const Thread::TcLd &ld) {
  for (size_t j = 0; j < ld.dst.size(); ++j) *ld.dst[j] = ld.values[j];
}

// ---- tcgen05.st ----

const char *shapeName(ptx::TcShape s) {
  static const char *names[] = {"32x32b", "16x64b", "16x128b", "16x256b", "16x32bx2"};
  return names[(int)s];
}

// Where register j of lane l of a tcgen05.st (or ld) of `shape` lies (PTX ISA, "Matrix fragments"
// of the data-movement shapes; CUTLASS's SM100_TMEM_{LOAD,STORE} traits agree): the lane within
// the instruction's 32 or 16 lanes, and its column as a 32-bit register image, `half` counting
// the .16x32bx2 shape's second half (at the split offset). Each further .num repetition of a
// shape lies to the right of the one before.
struct Frag {
  uint32_t row, col, half;
};
Frag fragOf(ptx::TcShape s, uint32_t l, uint32_t j) {
  switch (s) {
    case ptx::TcShape::S32x32b:
      return {l, j, 0};
    case ptx::TcShape::S16x64b:
      return {l / 4 + 8 * (l % 2), (l / 2) % 2 + 2 * j, 0};
    case ptx::TcShape::S16x128b:
      return {l / 4 + 8 * (j % 2), l % 4 + 4 * (j / 2), 0};
    case ptx::TcShape::S16x256b:
      return {l / 4 + 8 * ((j / 2) % 2), j % 2 + 2 * (l % 4) + 8 * (j / 4), 0};
    case ptx::TcShape::S16x32bx2:
      return {l % 16, j, l / 16};
  }
  return {0, 0, 0};
}

// A thread's stores land: their cells take the values, and the thread has waited for them.
void landStores(Thread &t) {
  if (t.tc_sts.empty()) return;
  Tmem &m = tmemOf(cta());
  for (auto &st : t.tc_sts) {
    if (!st.landed) {
      m.prev[st.cell] = m.cur[st.cell];
      m.cur[st.cell] = st.value;
      m.writer[st.cell] = 0;
    }
    if (m.st_pending[st.cell] == (uint32_t)t.id + 1) m.st_pending[st.cell] = 0;
  }
  t.tc_sts.clear();
}

// ---- tcgen05.cp ----

struct CpShape {
  int rows, words;  // of the shared-memory matrix: rows of 32-bit words
};
CpShape cpShape(ptx::TcCpShape s) {
  switch (s) {
    case ptx::TcCpShape::S128x256b:
      return {128, 8};
    case ptx::TcCpShape::S4x256b:
      return {4, 8};
    case ptx::TcCpShape::S128x128b:
      return {128, 4};
    case ptx::TcCpShape::S64x128b_02_13:
    case ptx::TcCpShape::S64x128b_01_23:
      return {64, 4};
    case ptx::TcCpShape::S32x128b_x4:
      return {32, 4};
  }
  return {0, 0};
}

// The tensor-memory lanes (from the address's lane) that row r of the matrix goes to: the
// 4x256b shape puts its rows 32 lanes apart, the warpx2 and warpx4 forms copy a row to the
// sub-partitions they name (02_13: rows 0-31 to warps 0 and 2, 32-63 to warps 1 and 3; 01_23:
// rows 0-31 to warps 0 and 1, 32-63 to warps 2 and 3; warpx4: to all four).
std::vector<uint32_t> cpLanes(ptx::TcCpShape s, uint32_t r) {
  switch (s) {
    case ptx::TcCpShape::S128x256b:
    case ptx::TcCpShape::S128x128b:
      return {r};
    case ptx::TcCpShape::S4x256b:
      return {32 * r};
    case ptx::TcCpShape::S64x128b_02_13:
      return {r, r + 64};
    case ptx::TcCpShape::S64x128b_01_23:
      return {64 * (r / 32) + r % 32, 64 * (r / 32) + r % 32 + 32};
    case ptx::TcCpShape::S32x128b_x4:
      return {r, r + 32, r + 64, r + 96};
  }
  return {};
}

struct TcCpOp : AsyncOp, SmemSource {
  ptx::TcCpShape shape = ptx::TcCpShape::S128x256b;
  int rows = 0, words = 0;
  uint64_t desc = 0;  // in wgmma's descriptor form
  uint32_t lane0 = 0, col = 0, id = 0;
  std::vector<uint32_t> data;  // rows x words

  void read() override {
    data.assign((size_t)rows * words, 0);
    bool proxy_stale = false;
    for (int r = 0; r < rows; ++r)
      for (int w = 0; w < words; ++w)
        std::memcpy(&data[(size_t)r * words + w],
                    at(ptx::wgmma_desc_addr(desc, false, 4, r, w), 4, proxy_stale, loc), 4);
    if (proxy_stale) ++ptx::g_proxy_unfenced;
  }

  void complete() override {
    Tmem &t = tmemOf(cta());
    for (int r = 0; r < rows; ++r)
      for (uint32_t lane : cpLanes(shape, (uint32_t)r))
        for (int w = 0; w < words; ++w) {
          const size_t i = (size_t)(lane0 + lane) * kTmemCols + col + (size_t)w;
          t.prev[i] = t.cur[i];
          t.cur[i] = data[(size_t)r * words + w];
          t.writer[i] = id;
        }
  }
};

}  // namespace

void tcgen05ThreadExit(Thread &t) {
  Cta &c = cta();
  t.tc_lds.clear();  // registers nothing reads any more
  landStores(t);     // its stores still complete
  if (auto k = openTcgen05(c, t.warp); k && !k->present[(size_t)t.lane])
    fail("ub/tcgen05-diverged", k->loc,
         k->kind + " waits with " + lanesWaiting(*k) + " of warp " + std::to_string(t.warp) +
             " for the rest (a whole-warp instruction, .sync.aligned), and lane " +
             std::to_string(t.lane) + " exited instead: the warp is not converged at it");
}

void tcgen05CtaExit(Cta &c) {
  if (!c.tmem || c.tmem->allocs.empty()) return;
  const Tmem::Alloc &a = c.tmem->allocs.front();
  fail("ub/exit-with-tmem-allocated", a.loc,
       "every thread of the CTA exited with " + std::to_string(a.ncols) +
           " tensor-memory columns from column " + std::to_string(a.col) + " (allocated by warp " +
           std::to_string(a.warp) + ") never freed by tcgen05.dealloc");
}

namespace ptx {

void tcgen05_alloc(uint32_t dst, uint32_t ncols, SrcLoc loc) {
  preempt();
  const std::string kind = collectiveKind("tcgen05.alloc", loc);
  const int warp = self().warp;
  warpCollective(kind, loc, dst, ncols, [=](Collective &k) {
    checkUniform(k, "tcgen05.alloc", loc);
    Cta &c = cta();
    Tmem &m = tmemOf(c);
    if (ncols < 32 || ncols > kTmemCols || (ncols & (ncols - 1)))
      fail(
          "ub/tmem-alloc-ncols", loc,
          "tcgen05.alloc of " + std::to_string(ncols) + " columns (a power of two from 32 to 512)");
    if (m.relinquished)
      fail("ub/tmem-alloc-after-relinquish", loc,
           "tcgen05.alloc after this CTA's tcgen05.relinquish_alloc_permit at " +
               siteOf(m.relinquish_loc));
    checkShared(dst, 4, loc);
    // The lowest free run of ncols columns that starts at a multiple of ncols; none free: the
    // alloc waits until a dealloc of this CTA frees one (the GPU's alloc blocks too).
    for (;;) {
      uint32_t at = kTmemCols;
      for (uint32_t col = 0; col + ncols <= kTmemCols && at == kTmemCols; col += ncols) {
        bool free = true;
        for (auto &a : m.allocs) free = free && (a.col + a.ncols <= col || col + ncols <= a.col);
        if (free) at = col;
      }
      if (at < kTmemCols) {
        m.allocs.push_back({at, ncols, warp, loc});
        std::erase_if(m.freed, [&](const Tmem::Alloc &f) {
          return f.col < at + ncols && at < f.col + f.ncols;
        });
        for (uint32_t lane = 0; lane < kTmemLanes; ++lane) {
          std::fill_n(m.writer.begin() + (ptrdiff_t)(lane * kTmemCols + at), ncols, 0u);
          std::fill_n(m.st_pending.begin() + (ptrdiff_t)(lane * kTmemCols + at), ncols, 0u);
        }
        std::memcpy(smemPtr(dst), &at, 4);  // lane 0, column `at`
        traceOp("tcgen05.alloc", at, ncols);
        return;
      }
      m.alloc_waiters.push_back(&self());
      WaitInfo w;
      w.kind = WaitKind::Async;
      w.loc = loc;
      w.what = "tcgen05.alloc waiting for free tensor-memory columns";
      park(w);
    }
  });
}

void tcgen05_dealloc(uint32_t taddr, uint32_t ncols, SrcLoc loc) {
  preempt();
  const std::string kind = collectiveKind("tcgen05.dealloc", loc);
  warpCollective(kind, loc, taddr, ncols, [=](Collective &k) {
    checkUniform(k, "tcgen05.dealloc", loc);
    Cta &c = cta();
    Tmem &m = tmemOf(c);
    const uint32_t lane = taddr >> 16, col = taddr & 0xffff;
    if (lane != 0)
      fail("ub/tmem-address", loc,
           "tcgen05.dealloc of address " + hex(taddr) + ", whose lane is " + std::to_string(lane) +
               " (an allocation's address has lane 0)");
    auto it = std::find_if(m.allocs.begin(), m.allocs.end(),
                           [&](const Tmem::Alloc &a) { return a.col == col && a.ncols == ncols; });
    if (it == m.allocs.end()) {
      if (col + ncols <= kTmemCols && allocated(m, col, col + ncols))
        unknown_instruction("tcgen05.dealloc of part of an allocation, or of several", loc);
      checkAllocated(m, col, col + ncols, "tcgen05.dealloc", loc);  // fails: not all allocated
    }
    // The other warps' tcgen05.lds of these columns must be ordered before the dealloc: the
    // deallocating warp knows of them through a CTA barrier after them (shareSeenPhases). One
    // that it does not know of may still be reading.
    const int me = k.scope;
    std::vector<uint64_t> known((size_t)c.nwarps, 0);
    for (int l = 0; l < 32; ++l) {
      if (!k.present[l]) continue;
      const auto &s = c.threads[(size_t)(k.base + l)]->tmem_reads_seen;
      for (size_t w = 0; w < s.size() && w < known.size(); ++w) known[w] = std::max(known[w], s[w]);
    }
    for (int w = 0; w < c.nwarps; ++w) {
      if (w == me) continue;
      for (uint32_t x = col; x < col + ncols; ++x)
        if (m.last_read[(size_t)w * kTmemCols + x] > known[(size_t)w])
          fail("ub/tmem-dealloc-unordered", loc,
               "tcgen05.dealloc by warp " + std::to_string(me) + " of columns " +
                   std::to_string(col) + ".." + std::to_string(col + ncols - 1) + ", which warp " +
                   std::to_string(w) +
                   " read with tcgen05.ld, and no CTA barrier orders that read before the "
                   "dealloc (the memory may be freed while it is read)");
    }
    m.freed.push_back({col, ncols, me, loc});
    m.allocs.erase(it);
    traceOp("tcgen05.dealloc", col, ncols);
    wakeAll(m.alloc_waiters);
  });
}

void tcgen05_relinquish_alloc_permit(SrcLoc loc) {
  preempt();
  const std::string kind = collectiveKind("tcgen05.relinquish_alloc_permit", loc);
  warpCollective(kind, loc, 0, 0, [=](Collective &) {
    Tmem &m = tmemOf(cta());
    if (!m.relinquished) m.relinquish_loc = loc;
    m.relinquished = true;
  });
}

void tcgen05_mma(TcKind kind, uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc, uint32_t idesc,
                 bool enable_input_d, SrcLoc loc) {
  preempt();
  Cta &c = cta();
  Thread &t = self();
  Tmem &m = tmemOf(c);
  // The instruction descriptor (CUTLASS's UMMA::InstrDescriptor): sparsity at bit 2, saturate 3,
  // D format 4-5 (1: f32), A and B formats 7-9 and 10-12, negate A/B 13/14, A/B major 15/16 (1:
  // MN), N >> 3 at 17-22, M >> 4 at 24-28, max shift 30-31 (.ws only).
  const uint32_t dfmt = (idesc >> 4) & 3, afmt = (idesc >> 7) & 7, bfmt = (idesc >> 10) & 7;
  const int n = (int)((idesc >> 17) & 0x3F) << 3, mm = (int)((idesc >> 24) & 0x1F) << 4;
  const char *kname = kind == TcKind::TF32 ? "kind::tf32" : "kind::f16";
  auto op = std::make_shared<TcMmaOp>();
  if (idesc & 0x4) unknown_instruction("tcgen05.mma with a sparse instruction descriptor", loc);
  if (dfmt != 1)
    unknown_instruction("tcgen05.mma with a D format other than f32 (descriptor bits 4-5)", loc);
  if (!operandType(kind, afmt, &op->ta) || !operandType(kind, bfmt, &op->tb))
    fail("ub/tcgen05-descriptor", loc,
         std::string("tcgen05.mma.") + kname + " whose instruction descriptor names A format " +
             std::to_string(afmt) + " and B format " + std::to_string(bfmt) +
             ", which the kind does not take");
  if ((idesc & 0x8) || (idesc >> 30))
    fail("ub/tcgen05-descriptor", loc,
         std::string("tcgen05.mma.") + kname +
             " whose instruction descriptor sets saturate or a max shift (not valid for the kind)");
  if (mm != 128)
    unknown_instruction(
        ("tcgen05.mma.cta_group::1 with M=" + std::to_string(mm) + " (M=128 is implemented)")
            .c_str(),
        loc);
  if (n < 16 || n > 256 || n % 16)
    fail("ub/tcgen05-descriptor", loc,
         "tcgen05.mma with M=128 and N=" + std::to_string(n) +
             " (N is a multiple of 16 from 16 to 256)");
  op->mn_a = (idesc >> 15) & 1;
  op->mn_b = (idesc >> 16) & 1;
  if (kind == TcKind::TF32 && (op->mn_a || op->mn_b))
    unknown_instruction("tcgen05.mma.kind::tf32 with an MN-major operand", loc);
  op->neg_a = (idesc >> 13) & 1;
  op->neg_b = (idesc >> 14) & 1;
  const uint32_t lane = d_tmem >> 16, col = d_tmem & 0xffff;
  if (lane != 0)
    fail("ub/tmem-address", loc,
         "tcgen05.mma with M=128 writes lanes 0-127; its D address " + hex(d_tmem) + " has lane " +
             std::to_string(lane));
  checkAllocated(m, col, col + (uint32_t)n, "tcgen05.mma", loc);
  op->kind = "tcgen05.mma";
  op->loc = loc;
  op->chain = 1024 + t.id;  // a thread's tcgen05 operations complete in the order it issued them
  op->tensor = true;
  op->m = mm;
  op->n = n;
  op->k = kind == TcKind::TF32 ? 8 : 16;
  op->acc = enable_input_d;
  op->col = col;
  op->da = hopperDesc(a_desc, "A ", loc);
  op->db = hopperDesc(b_desc, "B ", loc);
  op->id = (uint32_t)m.mmas.size();
  m.mmas.push_back({t.id, ++t.tc_issued});
  op->stale_ok = late();
  // The TMA-loaded tiles it reads whose barrier phase its thread's tcgen05 operations are not
  // ordered after (counted as smem-read-unwaited / smem-read-before-tx, under every policy).
  const int ea = op->ta == WgType::TF32 ? 4 : 2, eb = op->tb == WgType::TF32 ? 4 : 2;
  for (auto [lo, hi] :
       {extent(op->da, op->mn_a, ea, mm, op->k), extent(op->db, op->mn_b, eb, n, op->k)})
    op->note(c, t, lo, hi);
  traceOp("tcgen05.mma", (uint64_t)n, col);
  issueAsync(op);
}

void tcgen05_commit(uint32_t bar, SrcLoc loc) {
  preempt();
  Cta &c = cta();
  Thread &t = self();
  Tmem &m = tmemOf(c);
  checkShared(bar, 8, loc);
  auto op = std::make_shared<TcCommitOp>();
  op->kind = "tcgen05.commit";
  op->loc = loc;
  op->chain = 1024 + t.id;
  op->tensor = true;
  op->bar = bar;
  op->dep_known = t.dep_known;
  op->idx = m.commits.size();
  m.commits.push_back({t.id, t.tc_issued, bar, 0, false});
  traceOp("tcgen05.commit", bar, t.tc_issued);
  issueAsync(op);
}

void tcgen05_ld_32x32b(int num, uint32_t taddr, uint64_t *const *dst, SrcLoc loc) {
  preempt();
  const std::string kind =
      collectiveKind(("tcgen05.ld.32x32b.x" + std::to_string(num)).c_str(), loc);
  const Policy policy = cta().cfg.policy;
  auto k = warpCollective(kind, loc, taddr, 0, [=](Collective &k) {
    checkUniform(k, "tcgen05.ld", loc);
    Cta &c = cta();
    Tmem &m = tmemOf(c);
    const int w = k.scope;
    const uint32_t lane = taddr >> 16, col = taddr & 0xffff;
    // A warp reaches the 32 lanes of its sub-partition only: warp w, lanes 32 * (w % 4) on.
    if (lane != 32u * (uint32_t)(w % 4))
      fail("ub/tmem-lane-access", loc,
           "tcgen05.ld.32x32b by warp " + std::to_string(w) + " at address " + hex(taddr) +
               ": warp " + std::to_string(w) + " reaches tensor-memory lanes " +
               std::to_string(32 * (w % 4)) + "-" + std::to_string(32 * (w % 4) + 31) + " only");
    checkAllocated(m, col, col + (uint32_t)num, "tcgen05.ld", loc);
    const uint64_t count = ++m.reads[(size_t)w];
    for (uint32_t x = col; x < col + (uint32_t)num; ++x)
      m.last_read[(size_t)w * kTmemCols + x] = count;
    auto values = std::make_shared<std::vector<uint32_t>>((size_t)32 * num);
    for (int l = 0; l < 32; ++l) {
      if (!k.present[l]) continue;
      Thread &r = *c.threads[(size_t)(k.base + l)];
      if (r.tmem_reads_seen.size() < (size_t)c.nwarps) r.tmem_reads_seen.resize(c.nwarps, 0);
      r.tmem_reads_seen[(size_t)w] = count;
      if (policy != Policy::ReadsLate) {  // read at issue
        auto v = readRow(m, r, lane + (uint32_t)l, col, num);
        std::copy(v.begin(), v.end(), values->begin() + (ptrdiff_t)l * num);
      }
    }
    k.result = values;
  });
  Thread &t = self();
  Thread::TcLd ld;
  ld.dst.assign(dst, dst + num);
  ld.taddr = taddr;
  ld.loc = loc;
  if (policy != Policy::ReadsLate) {
    auto &v = *std::static_pointer_cast<std::vector<uint32_t>>(k->result);
    ld.values.assign(v.begin() + (ptrdiff_t)t.lane * num,
                     v.begin() + (ptrdiff_t)(t.lane + 1) * num);
    ld.read = true;
  }
  if (policy == Policy::Eager)
    writeRegs(ld);  // the registers hold the values at issue
  else
    t.tc_lds.push_back(std::move(ld));  // by tcgen05.wait::ld
}

void tcgen05_wait_ld(SrcLoc loc) {
  preempt();
  warpCollective(collectiveKind("tcgen05.wait::ld", loc), loc, 0, 0, [](Collective &) {});
  Thread &t = self();
  for (auto &ld : t.tc_lds) {
    if (!ld.read) {
      const Tmem &m = tmemOf(cta());
      ld.values =
          readRow(m, t, (ld.taddr >> 16) + (uint32_t)t.lane, ld.taddr & 0xffff, (int)ld.dst.size());
      ld.read = true;
    }
    writeRegs(ld);
  }
  t.tc_lds.clear();
}

int tcgen05_st_regs(TcShape shape, int num) {
  if (num < 1 || num > 128 || (num & (num - 1))) return 0;
  const int per = shape == TcShape::S16x128b ? 2 : shape == TcShape::S16x256b ? 4 : 1;
  return num * per <= 128 ? num * per : 0;
}

void tcgen05_st(TcShape shape, int num, bool unpack, uint32_t taddr, uint32_t split,
                const uint32_t *src, SrcLoc loc) {
  preempt();
  const int nregs = tcgen05_st_regs(shape, num);
  const std::string name = std::string("tcgen05.st.") + shapeName(shape) + ".x" +
                           std::to_string(num) + (unpack ? ".unpack::16b" : "");
  Thread &me = self();
  me.tc_st_src.assign(src, src + nregs);
  const bool eager = cta().cfg.policy == Policy::Eager;
  warpCollective(collectiveKind(name.c_str(), loc), loc, taddr, split, [=](Collective &k) {
    checkUniform(k, "tcgen05.st", loc);
    Cta &c = cta();
    Tmem &m = tmemOf(c);
    const int w = k.scope;
    const uint32_t lane = taddr >> 16, col = taddr & 0xffff, window = 32u * (uint32_t)(w % 4);
    const uint32_t rows = shape == TcShape::S32x32b ? 32 : 16;
    // A warp reaches the 32 lanes of its sub-partition only; a 16-lane shape either half of them.
    if (!(lane == window || (rows == 16 && lane == window + 16)))
      fail("ub/tmem-lane-access", loc,
           name + " by warp " + std::to_string(w) + " at address " + hex(taddr) + ": warp " +
               std::to_string(w) + " reaches tensor-memory lanes " + std::to_string(window) + "-" +
               std::to_string(window + 31) + " only" +
               (rows == 16 ? ", and a 16-lane shape starts at the first or the 17th of them" : ""));
    // With .unpack::16b each register's two 16-bit halves go to two adjacent cells, the low half
    // first, each in the cell's low 16 bits; the PTX ISA leaves the cells' high halves unsaid,
    // so they read as never-written memory does (the uninitialised pattern).
    uint16_t high;
    uninit(&high, sizeof high);
    const uint32_t width = unpack ? 2 : 1;
    std::vector<bool> used(kTmemCols + 1, false);
    for (int l = 0; l < 32; ++l) {
      if (!k.present[l]) continue;
      Thread &r = *c.threads[(size_t)(k.base + l)];
      r.tc_sts.reserve(r.tc_sts.size() + (size_t)nregs * width);
      for (int j = 0; j < nregs; ++j) {
        const Frag f = fragOf(shape, (uint32_t)l, (uint32_t)j);
        const uint32_t v = j < (int)r.tc_st_src.size() ? r.tc_st_src[(size_t)j] : 0;
        for (uint32_t h = 0; h < width; ++h) {
          const uint32_t x = col + f.half * split + f.col * width + h;
          if (x >= kTmemCols) checkAllocated(m, col, x + 1, name, loc);  // fails: past the end
          used[x] = true;
          const uint32_t value =
              unpack ? ((v >> (16 * h)) & 0xffffu) | ((uint32_t)high << 16) : v;
          r.tc_sts.push_back({(uint32_t)((lane + f.row) * kTmemCols + x), value, false});
        }
      }
      r.tc_st_src.clear();
    }
    for (uint32_t x = 0; x < kTmemCols;) {  // each run of columns written lies in an allocation
      if (!used[x]) {
        ++x;
        continue;
      }
      uint32_t end = x;
      while (end < kTmemCols && used[end]) ++end;
      checkAllocated(m, x, end, name, loc);
      x = end;
    }
    for (int l = 0; l < 32; ++l) {
      if (!k.present[l]) continue;
      Thread &r = *c.threads[(size_t)(k.base + l)];
      for (auto &st : r.tc_sts) {
        if (st.landed) continue;
        m.st_pending[st.cell] = (uint32_t)r.id + 1;
        if (eager) {  // the eager policy lands the store at issue
          m.prev[st.cell] = m.cur[st.cell];
          m.cur[st.cell] = st.value;
          m.writer[st.cell] = 0;
          st.landed = true;
        }
      }
    }
    traceOp("tcgen05.st", (uint64_t)nregs, taddr);
  });
}

void tcgen05_wait_st(SrcLoc loc) {
  preempt();
  warpCollective(collectiveKind("tcgen05.wait::st", loc), loc, 0, 0, [](Collective &) {});
  landStores(self());
}

void tcgen05_cp(TcCpShape shape, uint32_t taddr, uint64_t s_desc, SrcLoc loc) {
  preempt();
  Cta &c = cta();
  Thread &t = self();
  Tmem &m = tmemOf(c);
  auto op = std::make_shared<TcCpOp>();
  const CpShape sh = cpShape(shape);
  op->shape = shape;
  op->rows = sh.rows;
  op->words = sh.words;
  op->lane0 = taddr >> 16;
  op->col = taddr & 0xffff;
  uint32_t top = 0;
  for (int r = 0; r < sh.rows; ++r)
    for (uint32_t lane : cpLanes(shape, (uint32_t)r)) top = std::max(top, lane);
  if (op->lane0 + top >= kTmemLanes)
    fail("ub/tmem-address", loc,
         "tcgen05.cp to address " + hex(taddr) + " writes tensor-memory lanes up to " +
             std::to_string(op->lane0 + top) + " (a CTA has lanes 0-127)");
  checkAllocated(m, op->col, op->col + (uint32_t)sh.words, "tcgen05.cp", loc);
  op->kind = "tcgen05.cp";
  op->loc = loc;
  op->chain = 1024 + t.id;  // in issue order with the thread's mmas (the PTX ISA pipelines them)
  op->tensor = true;
  op->desc = hopperDesc(s_desc, "", loc, "tcgen05.cp");
  op->id = (uint32_t)m.mmas.size();
  m.mmas.push_back({t.id, ++t.tc_issued});
  op->stale_ok = late();
  auto [lo, hi] = extent(op->desc, false, 4, sh.rows, sh.words);
  op->note(c, t, lo, hi);
  traceOp("tcgen05.cp", (uint64_t)sh.rows, taddr);
  issueAsync(op);
}

void tcgen05_fence(bool after, SrcLoc loc) {
  fence(after ? "tcgen05.fence::after_thread_sync" : "tcgen05.fence::before_thread_sync", loc);
  if (after) {
    Thread &t = self();
    t.tc_seen = t.seen_phase;
  }
}

}  // namespace ptx
}  // namespace wsemu
