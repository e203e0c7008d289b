// wgmma.mma_async: a warpgroup collective (all 128 threads rendezvous; the last arrival
// issues it), operands decoded from shared-memory descriptors (or A from registers), the
// result scattered into every thread's accumulator registers when the op completes.
// Fragment layouts are CUTLASS's CLayout_64xN / ALayout_64x16 / ALayout_64x8 (PTX ISA
// "wgmma-64N16-D", "wgmma-64N16-A"): thread t, warp w = t/32, lane l:
//   D reg i: row 16w + l/4 + 8*((i/2)%2), col 8*(i/4) + 2*(l%4) + i%2
//   A reg r (16-bit, 2 per reg): row 16w + l/4 + 8*(r%2), k 8*(r/2) + 2*(l%4) + {0,1}
//   A reg r (tf32): row 16w + l/4 + 8*(r%2), k 4*(r/2) + l%4
#include <array>
#include <cstring>
#include <sstream>

#include "emu/runtime/ptx.h"
#include "emu/runtime/state.h"

namespace wsemu::ptx {

namespace {

struct Desc {
  uint32_t start, lbo, sbo;
  int mode;  // 0 none, 1 128B, 2 64B, 3 32B
};

Desc decode(uint64_t d) {
  Desc r;
  r.start = (uint32_t)(d & 0x3FFF) << 4;
  r.lbo = (uint32_t)((d >> 16) & 0x3FFF) << 4;
  r.sbo = (uint32_t)((d >> 32) & 0x3FFF) << 4;
  r.mode = (int)((d >> 62) & 3);
  return r;
}

uint32_t swz(uint32_t a, int mode) {
  static const uint32_t masks[] = {0, 7, 3, 1};
  uint32_t m = masks[mode];
  return a ^ (((a >> 7) & m) << 4);
}

int elemBytes(WgType t) { return t == WgType::TF32 ? 4 : 2; }
int kOf(WgType t) { return t == WgType::TF32 ? 8 : 16; }

// wgmma reads its shared operands through the async proxy: bytes a generic store changed after the
// last fence.proxy.async are read as the proxy saw them (asyncView), and `stale` is set.
float loadElem(uint32_t addr, WgType t, SrcLoc loc, bool &stale) {
  size_t n = (size_t)elemBytes(t);
  checkShared(addr, n, loc);
  const uint8_t *p = static_cast<const uint8_t *>(smemPtr(addr));
  if (!proxySees(addr, n)) {
    p = asyncView(addr);
    stale = true;
  }
  if (t == WgType::TF32) {
    uint32_t u;
    std::memcpy(&u, p, 4);
    return tf32ToFloat(u);
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return t == WgType::BF16 ? bf16ToFloat(h) : f16ToFloat(h);
}

float regElem(uint32_t reg, int half, WgType t) {
  if (t == WgType::TF32) return tf32ToFloat(reg);
  uint16_t h = (uint16_t)(half ? reg >> 16 : reg & 0xffff);
  return t == WgType::BF16 ? bf16ToFloat(h) : f16ToFloat(h);
}

struct ThreadArgs {
  float *const *d;
  const uint32_t *a;
  uint64_t da, db;
  bool scale_d;
};

struct WgmmaOp : AsyncOp {
  int n = 0, k = 16;
  WgType type = WgType::BF16;
  bool rs = false;
  uint64_t da = 0, db = 0;
  bool scale_d = true;
  int sa = 1, sb = 1, ta = 0, tb = 0;
  std::vector<float *> d;                      // 128 x n/2
  std::vector<std::array<uint32_t, 4>> aregs;  // 128 (RS): the A registers' values at issue
                                               // (the asm's operands are gone once it returns)
  std::vector<float> A, B;                     // 64 x k, n x k

  void read() override {
    A.assign(64 * k, 0.f);
    B.assign((size_t)n * k, 0.f);
    int e = elemBytes(type);
    bool stale = false;
    if (rs) {
      for (int t = 0; t < 128; ++t) {
        int w = t / 32, l = t % 32;
        for (int r = 0; r < 4; ++r) {
          uint32_t reg = aregs[t][r];
          int row = 16 * w + l / 4 + 8 * (r % 2);
          if (type == WgType::TF32) {
            A[row * k + 4 * (r / 2) + l % 4] = regElem(reg, 0, type);
          } else {
            int kk = 8 * (r / 2) + 2 * (l % 4);
            A[row * k + kk] = regElem(reg, 0, type);
            A[row * k + kk + 1] = regElem(reg, 1, type);
          }
        }
      }
    } else {
      for (int m = 0; m < 64; ++m)
        for (int kk = 0; kk < k; ++kk)
          A[m * k + kk] = loadElem(wgmma_desc_addr(da, ta, e, m, kk), type, loc, stale);
    }
    for (int nn = 0; nn < n; ++nn)
      for (int kk = 0; kk < k; ++kk)
        B[nn * k + kk] = loadElem(wgmma_desc_addr(db, tb, e, nn, kk), type, loc, stale);
    if (stale) ++g_proxy_unfenced;  // operands written by generic stores with no proxy fence after
    if (sa < 0)
      for (auto &x : A) x = -x;
    if (sb < 0)
      for (auto &x : B) x = -x;
  }

  void complete() override {
    int regs = n / 2;
    bool eager = cta().cfg.policy == Policy::Eager;
    auto &overlay = cta().acc_overlay;
    for (int t = 0; t < 128; ++t) {
      int w = t / 32, l = t % 32;
      for (int i = 0; i < regs; ++i) {
        int row = 16 * w + l / 4 + 8 * ((i / 2) % 2);
        int col = 8 * (i / 4) + 2 * (l % 4) + i % 2;
        const float *a = &A[row * k], *b = &B[(size_t)col * k];
        float dot = 0.f;
        for (int kk = 0; kk < k; ++kk) dot += a[kk] * b[kk];
        float *dst = d[(size_t)t * regs + i];
        if (eager) {
          *dst = scale_d ? *dst + dot : dot;
          continue;
        }
        auto it = overlay.find(dst);  // the chain's previous, not yet visible result
        float in = it != overlay.end() ? it->second : *dst;
        overlay[dst] = scale_d ? in + dot : dot;
      }
    }
  }
};

void mma(int n, WgType type, float *const *d, const uint32_t *a, uint64_t da, uint64_t db,
         bool scale_d, int sa, int sb, int ta, int tb, bool rs, SrcLoc loc) {
  preempt();
  if (n < 8 || n > 256 || n % 8)
    unknown_instruction(("wgmma.mma_async with n=" + std::to_string(n)).c_str(), loc);
  // PTX ISA (wgmma.fence): required before the first wgmma.mma_async of a warpgroup and between a
  // thread's accesses to the accumulator or A registers and a wgmma that uses them, except across
  // wgmmas of one shape on the same accumulator. Checked as: a wgmma.fence since the thread's start
  // or its last wgmma.wait_group that gave it registers back (a full wait, or a partial one that
  // retired the last wgmma on some register: the thread may access those now), unless each of
  // this wgmma's accumulator registers is still named by one of the thread's in-flight wgmmas.
  Thread &me = self();
  bool chained = true;
  for (int i = 0; i < n / 2 && chained; ++i) chained = me.wg_inflight.count(d[i]) > 0;
  if (!me.wg_fenced && !chained)
    fail("ub/wgmma-unfenced", loc,
         "wgmma.mma_async with no wgmma.fence before it since the thread's start or its last "
         "wgmma.wait_group "
         "that gave accumulator registers back to it (the accumulators' accesses are unordered "
         "with it)");
  for (int i = 0; i < n / 2; ++i) ++me.wg_inflight[d[i]];
  if (rs && ta) unknown_instruction("wgmma.mma_async with A from registers and imm-trans-a", loc);
  if (type == WgType::TF32 && (ta || tb))
    unknown_instruction("wgmma.mma_async tf32 with a transposed operand", loc);
  std::ostringstream kind;
  kind << "wgmma.mma_async.m64n" << n << "k" << kOf(type) << (rs ? ".rs" : ".ss") << (int)type << ta
       << tb << sa << sb;
  ThreadArgs args{d, a, da, db, scale_d};
  int wg = self().warpgroup;
  auto k = warpgroupRendezvous(kind.str(), loc, &args, [=](Collective &k) {
    auto op = std::make_shared<WgmmaOp>();
    op->kind = "wgmma.mma_async";
    op->loc = loc;
    op->chain = wg;
    op->n = n;
    op->k = kOf(type);
    op->type = type;
    op->rs = rs;
    op->sa = sa;
    op->sb = sb;
    op->ta = ta;
    op->tb = tb;
    const ThreadArgs *first = static_cast<ThreadArgs *>(k.ptrs[0]);
    op->da = first->da;
    op->db = first->db;
    op->scale_d = first->scale_d;
    op->d.resize((size_t)128 * (n / 2));
    op->aregs.resize(128);
    for (int t = 0; t < 128; ++t) {
      const ThreadArgs *ta_ = static_cast<ThreadArgs *>(k.ptrs[t]);
      if (ta_->db != op->db || (!rs && ta_->da != op->da) || ta_->scale_d != op->scale_d)
        fail("ub/non-uniform-wgmma-operand", loc,
             "threads of warpgroup " + std::to_string(wg) +
                 " passed different descriptors or scale-d to one wgmma");
      for (int i = 0; i < n / 2; ++i) op->d[(size_t)t * (n / 2) + i] = ta_->d[i];
      if (rs) std::copy(ta_->a, ta_->a + 4, op->aregs[t].begin());
    }
    // The shared bytes each operand reads, against loads whose barrier phase the warpgroup's
    // threads do not know completed (readBeforeLanded). A and B apart: their tiles lie apart.
    auto check = [&](uint64_t desc, int mn_major, int rows) {
      int e = elemBytes(type);
      uint32_t lo = ~0u, hi = 0;
      for (int r = 0; r < rows; ++r)
        for (int kk = 0; kk < op->k; ++kk) {
          uint32_t a = wgmma_desc_addr(desc, mn_major, e, r, kk);
          lo = std::min(lo, a);
          hi = std::max(hi, a + (uint32_t)e);
        }
      for (int t = 0; t < 128 && lo < hi; ++t)
        if (k.base + t < (int)cta().threads.size() &&
            readBeforeLanded(*cta().threads[(size_t)(k.base + t)], lo, hi))
          break;
    };
    if (!rs) check(op->da, ta, 64);
    check(op->db, tb, n);
    k.result = op;
    traceOp("wgmma.issue", (uint64_t)n, op->db);
    issueAsync(op);
  });
  self().wg_open.push_back(std::static_pointer_cast<AsyncOp>(k->result));
}

}  // namespace

uint32_t wgmma_desc_addr(uint64_t desc, bool mn_major, int e, int mn, int k) {
  Desc d = decode(desc);
  static const uint32_t widths[] = {16, 128, 64, 32};
  uint32_t W = widths[d.mode], off;
  if (!mn_major) {
    uint32_t kb = (uint32_t)k * e;
    off = (mn % 8) * W + (mn / 8) * d.sbo + kb % W + (kb / W) * d.lbo;
  } else {
    uint32_t mb = (uint32_t)mn * e;
    if (d.mode == 0)
      off = mb % 16 + (mb / 16) * d.sbo + (k % 8) * 16 + (k / 8) * d.lbo;
    else
      off = mb % W + (mb / W) * d.lbo + (k % 8) * W + (k / 8) * d.sbo;
  }
  return swz(d.start + off, d.mode);
}

void wgmma_ss(int n, WgType t, float *const *d, uint64_t da, uint64_t db, bool scale_d, int sa,
              int sb, int ta, int tb, SrcLoc loc) {
  mma(n, t, d, nullptr, da, db, scale_d, sa, sb, ta, tb, false, loc);
}

void wgmma_rs(int n, WgType t, float *const *d, const uint32_t *a, uint64_t db, bool scale_d,
              int sa, int sb, int tb, SrcLoc loc) {
  mma(n, t, d, a, 0, db, scale_d, sa, sb, 0, tb, true, loc);
}

void wgmma_fence(SrcLoc loc) {
  fence("wgmma.fence", loc);
  self().wg_fenced = true;
}

void wgmma_commit_group(SrcLoc loc) {
  preempt();
  Thread &t = self();
  t.wg_groups.push_back(std::move(t.wg_open));
  t.wg_open.clear();
}

void wgmma_wait_group(int n, SrcLoc loc) {
  preempt();
  Thread &t = self();
  traceOp("wgmma.wait_group", n, t.wg_groups.size());
  auto &overlay = cta().acc_overlay;
  int slot = t.id - 128 * t.warpgroup;
  while (t.wg_groups.size() > (size_t)n) {
    for (auto &op : t.wg_groups.front()) {
      finishAsync(*op);
      auto &w = static_cast<WgmmaOp &>(*op);
      int regs = w.n / 2;
      for (int i = 0; i < regs; ++i) {  // the result becomes visible in this thread's registers
        float *p = w.d[(size_t)slot * regs + i];
        auto it = overlay.find(p);
        if (it != overlay.end()) {
          *p = it->second;
          overlay.erase(it);
        }
        auto f = t.wg_inflight.find(p);  // no in-flight wgmma names it any more: the thread's again
        if (f != t.wg_inflight.end() && --f->second == 0) {
          t.wg_inflight.erase(f);
          t.wg_fenced = false;
        }
      }
    }
    t.wg_groups.pop_front();
  }
  if (t.wg_groups.empty() && t.wg_open.empty())
    t.wg_fenced = false;  // the accumulators are the thread's again
}

}  // namespace wsemu::ptx
