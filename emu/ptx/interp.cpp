// The PTX interpreter: one emulated thread through a decoded Function. Arithmetic, moves,
// conversions and memory are done here; every synchronising or asynchronous instruction is the
// runtime's own implementation (emu/runtime: mbarrier.cpp, sync.cpp, tma.cpp), so verdicts and
// their signatures are the ones translated programs get. Registers are 64-bit slots holding a
// value's bits; an instruction reads the width its type names.
#include <alloca.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "emu/ptx/module.h"
#include "emu/runtime/pdl.h"
#include "emu/runtime/ptx.h"
#include "emu/runtime/state.h"

namespace wsemu::ptxe {

namespace {

inline uint64_t maskOf(int bits) { return bits >= 64 ? ~0ull : ((1ull << bits) - 1); }
inline int64_t sext(uint64_t v, int bits) {
  if (bits >= 64) return (int64_t)v;
  uint64_t m = 1ull << (bits - 1);
  v &= maskOf(bits);
  return (int64_t)((v ^ m) - m);
}
inline float f32(uint64_t v) { return bitsToFloat((uint32_t)v); }
inline double f64(uint64_t v) {
  double d;
  std::memcpy(&d, &v, 8);
  return d;
}
inline uint64_t bits(float f) { return floatToBits(f); }
inline uint64_t bits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}
// .ftz: subnormal inputs and results are flushed to zero of the same sign.
inline float flush(float f) {
  return std::fpclassify(f) == FP_SUBNORMAL ? std::copysign(0.0f, f) : f;
}

// The value of a float of type t held in v, as a double (f16/bf16 widened).
inline double fget(Ty t, uint64_t v) {
  switch (t) {
    case Ty::F32:
      return f32(v);
    case Ty::F64:
      return f64(v);
    case Ty::F16:
      return f16ToFloat((uint16_t)v);
    case Ty::BF16:
      return bf16ToFloat((uint16_t)v);
    default:
      return 0;
  }
}
// d as a float rounded to odd (toward zero, the last bit set when inexact): rounded once more to a
// format of at most 22 significant bits (f16, bf16) it gives d correctly rounded, where a float
// rounded to nearest first could round twice onto the wrong side of a tie.
inline float toOddFloat(double d) {
  float f = (float)d;
  if (std::isnan(d) || std::isinf(f) || (double)f == d) return f;
  if (std::fabs((double)f) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u |= 1;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint64_t fput(Ty t, double d) {
  switch (t) {
    case Ty::F32:
      return bits((float)d);
    case Ty::F64:
      return bits(d);
    case Ty::F16:
      return floatToF16(toOddFloat(d));
    case Ty::BF16:
      return floatToBf16(toOddFloat(d));
    default:
      return 0;
  }
}

double roundBy(double d, uint8_t rnd) {
  switch (rnd) {
    case 2:
      return std::trunc(d);
    case 3:
      return std::floor(d);
    case 4:
      return std::ceil(d);
    default:
      return std::nearbyint(d);  // ties to even
  }
}

// The mbarrier operand: a shared-window address (shared::cta, or shared::cluster), or a generic
// pointer into the shared memory of the CTA or of a peer CTA of its cluster when the instruction
// names no state space (a peer's: its shared::cluster address).
uint32_t sharedAddrOf(const Ins &in, uint64_t a) {
  if (in.space == Space::Shared || in.space == Space::SharedCluster) return (uint32_t)a;
  const void *p = reinterpret_cast<const void *>(a);
  if (!isShared(p) && clusterCtaOf(p)) return clusterSmemAddr(p, SrcLoc{});
  return smemAddr(p);
}

struct Interp {
  const Module &m;
  const Function &fn;
  const uint8_t *params;
  size_t param_bytes;
  uint64_t *r;
  uint8_t *local;
  std::vector<uint64_t> symaddr;
  Thread *t;
  int last_chain = -1;
  uint8_t *callbuf = nullptr;  // the body's `.param`s: this frame's calls' arguments
  std::vector<SrcLoc> frames;  // the calls that led to this function (caller first)
  // The grid is one of a programmatic dependent launch: its global accesses are checked against
  // the other grids' (pdl.cpp).
  bool pdl = false;
  // The CTA is in a cluster of several: its stores into a peer's shared memory are recorded for the
  // remote-arrive rule (dsmemWrite).
  bool multi_cta = false;

  SrcLoc loc(const Ins &in) const { return m.srcLoc(in.loc); }
  // The SrcLoc of a runtime call, with the inlined-at chain as the thread's call frames: a parked
  // thread's site reads "caller-line>callee-line", as for a translated program's helpers.
  SrcLoc site(const Ins &in) {
    if ((int)in.loc != last_chain) {
      last_chain = (int)in.loc;
      t->calls = frames;
      const size_t base = t->calls.size();
      for (int p = m.locs[in.loc].parent; p >= 0; p = m.locs[p].parent)
        t->calls.insert(t->calls.begin() + (ptrdiff_t)base, m.srcLoc((uint32_t)p));
    }
    return loc(in);
  }

  // The outermost line of the instruction's inlining chain: the kernel's own line that a wrapper's
  // asm was inlined at.
  SrcLoc rootLoc(const Ins &in) const {
    uint32_t l = in.loc;
    while (m.locs[l].parent >= 0) l = (uint32_t)m.locs[l].parent;
    return m.srcLoc(l);
  }
  // A release of the thread's earlier writes at cluster scope or wider covers its stores into the
  // peers' shared memory.
  void releases(const Ins &in) const {
    if (in.release && in.scope >= kScopeCluster) ptx::cluster_release();
  }
  // A store, atom or red at `a` (the host address `p`) into a peer CTA's shared memory: a
  // shared::cluster address naming another rank, or a generic pointer into a peer's arena.
  void dsmemWrite(const Ins &in, uint64_t a, const uint8_t *p) const {
    int rank = -1;
    if (in.space == Space::SharedCluster) {
      if (const uint32_t field = (uint32_t)a >> kClusterRankShift) rank = (int)field - 1;
    } else if (in.space == Space::Generic && !isShared(p)) {
      if (const Cta *x = clusterCtaOf(p)) rank = x->rank;
    }
    if (rank >= 0 && rank != t->home->rank) ptx::dsmem_write(rank, rootLoc(in));
  }
  // An arrive on the barrier at `a`: on a peer CTA's, the remote-arrive rule; a release at cluster
  // scope covers the thread's earlier stores into the peers either way.
  void arriveScope(const Ins &in, uint32_t a, SrcLoc l) {
    const bool cluster_scope = in.release && in.scope >= kScopeCluster;
    if (multi_cta && in.space != Space::Shared) {
      uint32_t local;
      const Cta &tc = clusterTarget(a, &local, loc(in));
      if (&tc != t->home) return ptx::remote_arrive(tc.rank, cluster_scope, l, rootLoc(in));
    }
    if (cluster_scope) ptx::cluster_release();
  }

  uint64_t special(uint8_t s) const {
    const Cta &c = cta();
    switch ((Special)s) {
      case Special::TidX:
        return t->tid.x;
      case Special::TidY:
        return t->tid.y;
      case Special::TidZ:
        return t->tid.z;
      case Special::NtidX:
        return c.block.x;
      case Special::NtidY:
        return c.block.y;
      case Special::NtidZ:
        return c.block.z;
      case Special::CtaidX:
        return c.block_idx.x;
      case Special::CtaidY:
        return c.block_idx.y;
      case Special::CtaidZ:
        return c.block_idx.z;
      case Special::NctaidX:
        return c.grid.x;
      case Special::NctaidY:
        return c.grid.y;
      case Special::NctaidZ:
        return c.grid.z;
      case Special::ClusteridX:
        return c.cluster->id.x;
      case Special::ClusteridY:
        return c.cluster->id.y;
      case Special::ClusteridZ:
        return c.cluster->id.z;
      case Special::NclusteridX:
        return c.cluster->nclusters.x;
      case Special::NclusteridY:
        return c.cluster->nclusters.y;
      case Special::NclusteridZ:
        return c.cluster->nclusters.z;
      case Special::Laneid:
        return (uint64_t)t->lane;
      case Special::Warpid:
        return (uint64_t)t->warp;
      case Special::Nwarpid:
        return (uint64_t)c.nwarps;
      case Special::Smid:
        return (c.block_idx.x +
                (uint64_t)c.grid.x * (c.block_idx.y + (uint64_t)c.grid.y * c.block_idx.z)) %
               132;
      case Special::Nsmid:
        return 132;
      case Special::GlobalTimer:
        return globaltimer();
      case Special::Clock:
        return (uint32_t)clock64();
      case Special::Clock64:
        return clock64();
      case Special::DynSmem:
        return c.dyn_bytes;
      case Special::TotalSmem:
        return c.dyn_bytes + c.static_used;
      case Special::LanemaskEq:
        return 1u << t->lane;
      case Special::LanemaskLt:
        return (1u << t->lane) - 1;
      case Special::LanemaskLe:
        return (uint32_t)((2ull << t->lane) - 1);
      case Special::LanemaskGt:
        return (uint32_t)~((2ull << t->lane) - 1);
      case Special::LanemaskGe:
        return (uint32_t)~((1u << t->lane) - 1);
      case Special::ClusterCtarank:
        return (uint64_t)c.rank;
      case Special::ClusterCtaidX:
        return c.cluster_ctaid.x;
      case Special::ClusterCtaidY:
        return c.cluster_ctaid.y;
      case Special::ClusterCtaidZ:
        return c.cluster_ctaid.z;
      case Special::IsExplicitCluster:
        return c.cluster->is_explicit ? 1 : 0;
      case Special::ClusterNctarank:
        return c.cluster->ctas.size();
      case Special::ClusterNctaidX:
        return c.cluster->dims.x;
      case Special::ClusterNctaidY:
        return c.cluster->dims.y;
      case Special::ClusterNctaidZ:
        return c.cluster->dims.z;
    }
    return 0;
  }

  inline uint64_t val(const Operand &o) const {
    switch (o.k) {
      case Operand::Reg:
        return r[o.reg];
      case Operand::Imm:
        return (uint64_t)o.imm;
      case Operand::Special:
        return special(o.special);
      case Operand::Sym:
        return symaddr[o.sym] + (uint64_t)o.imm;
      default:
        return 0;
    }
  }
  inline uint64_t addr(const Operand &o) const {
    uint64_t b = o.reg != kNone ? r[o.reg] : o.sym != kNone ? symaddr[o.sym] : 0;
    return b + (uint64_t)o.imm;
  }
  uint32_t sharedAddr(const Ins &in, int i) const { return sharedAddrOf(in, addr(in.o[i])); }

  // Runs f(local) with the CTA that the shared address `a` of `in` names current: a shared::cta
  // address is the executing CTA's; a shared::cluster one (or a generic pointer into a peer's
  // shared memory) may name a peer CTA of the cluster, whose memory and barriers f then reaches.
  // `own_only`: an operation the PTX allows on the executing CTA's shared memory only (the
  // mbarrier waits, whose address is shared::cta or a generic one).
  template <class F>
  auto onCta(const Ins &in, uint32_t a, F f, bool own_only = false) {
    if (in.space == Space::Shared) return f(a);
    uint32_t local;
    Cta &tc = clusterTarget(a, &local, loc(in));
    if (&tc == t->home) return f(local);
    if (own_only)
      fail("ub/remote-mbarrier-wait", loc(in),
           fn.text[&in - fn.code.data()] + " on a barrier of CTA rank " + std::to_string(tc.rank) +
               " of the cluster: an mbarrier wait names the executing CTA's barrier only");
    CtaScope scope(tc);
    return f(local);
  }
  // A copy's barrier: in the CTA of its shared::cluster destination (PTX ISA, cp.async.bulk), its
  // offset there.
  uint32_t sharedBarOf(const Ins &in, uint32_t dst, uint32_t bar) {
    if (in.space == Space::Shared) return bar;
    uint32_t ld, lb;
    Cta &a = clusterTarget(dst, &ld, loc(in));
    Cta &b = clusterTarget(bar, &lb, loc(in));
    if (&a != &b)
      fail("ub/out-of-bounds-shared", loc(in),
           fn.text[&in - fn.code.data()] + ": its mbarrier is in CTA rank " +
               std::to_string(b.rank) + ", its destination in CTA rank " + std::to_string(a.rank) +
               " (they must be in the same CTA)");
    return lb;
  }
  // The CTA of the cluster whose shared memory the generic pointer `a` points into.
  const Cta &ctaHolding(const Ins &in, uint64_t a) {
    const Cta *x = clusterCtaOf(reinterpret_cast<const void *>(a));
    if (!x)
      fail("ub/out-of-bounds-shared", loc(in),
           fn.text[&in - fn.code.data()] +
               ": its address is not in the shared memory of a CTA of the cluster");
    return *x;
  }
  // The rank a mapa names: one of the cluster's CTAs.
  Cta &clusterRank(const Ins &in, uint64_t r) {
    Cluster &cl = *t->home->cluster;
    if (r >= cl.ctas.size())
      fail("ub/cluster-rank", loc(in),
           fn.text[&in - fn.code.data()] + " names CTA rank " + std::to_string(r) +
               " of a cluster of " + std::to_string(cl.ctas.size()) + " CTAs");
    return *cl.ctas[r];
  }
  inline void set(const Operand &o, uint64_t v) {
    if (o.k == Operand::Reg) r[o.reg] = v;
  }

  bool inParams(uint64_t a, size_t n) const {
    auto p = reinterpret_cast<uintptr_t>(params);
    return a >= p && a + n <= p + param_bytes;
  }

  // Where an access of n bytes at a in state space sp lies on the host; checked (an access out of
  // bounds is the runtime's UB verdict, named at the instruction's line).
  uint8_t *mem(Space sp, uint64_t a, size_t n, const Ins &in, bool write) {
    switch (sp) {
      case Space::Shared: {
        uint32_t s = (uint32_t)a;
        checkShared(s, n, loc(in));
        return static_cast<uint8_t *>(smemPtr(s));
      }
      case Space::SharedCluster: {  // distributed shared memory: this CTA's or a peer's
        uint32_t s;
        Cta &tc = clusterTarget((uint32_t)a, &s, loc(in));
        CtaScope scope(tc);
        checkShared(s, n, loc(in));
        return static_cast<uint8_t *>(smemPtr(s));
      }
      case Space::Global:
        checkGlobal(reinterpret_cast<void *>(a), n, loc(in));
        return reinterpret_cast<uint8_t *>(a);
      case Space::Param: {
        // A kernel's parameters are read-only; a .func's are its own copy (its return values are
        // written there); the body's `.param`s are this frame's call buffer.
        auto cb = reinterpret_cast<uintptr_t>(callbuf);
        const bool in_calls = callbuf && a >= cb && a + n <= cb + fn.call_param_bytes;
        if (!in_calls && (!inParams(a, n) || (write && fn.entry)))
          fail("ub/out-of-bounds-param", loc(in),
               std::to_string(n) + " bytes of the parameters at offset " +
                   std::to_string((int64_t)(a - reinterpret_cast<uintptr_t>(params))) +
                   (write && inParams(a, n) ? " written: a kernel's parameters are read-only"
                                            : " are outside them"));
        return reinterpret_cast<uint8_t *>(a);
      }
      case Space::Local: {
        auto l = reinterpret_cast<uintptr_t>(local);
        if (a < l || a + n > l + fn.local_bytes)
          fail("ub/out-of-bounds-local", loc(in),
               std::to_string(n) + " bytes at local offset " + std::to_string((int64_t)(a - l)) +
                   " are outside the thread's " + std::to_string(fn.local_bytes) + " local bytes");
        return reinterpret_cast<uint8_t *>(a);
      }
      case Space::Const:
        checkGlobal(reinterpret_cast<void *>(a), n, loc(in));
        return reinterpret_cast<uint8_t *>(a);
      case Space::Generic:
        if (inParams(a, n) && !write) return reinterpret_cast<uint8_t *>(a);
        checkAccess(reinterpret_cast<void *>(a), n, loc(in));
        return reinterpret_cast<uint8_t *>(a);
    }
    return nullptr;
  }

  // A global access (a generic address outside every global allocation is not one), in a grid of a
  // programmatic dependent launch.
  void track(const Ins &in, const uint8_t *p, size_t n, Access a) const {
    if (in.space == Space::Global || in.space == Space::Generic) pdlAccess(p, n, a, loc(in));
  }

  uint64_t loadElem(const uint8_t *p, Ty ty) const {
    int b = tyBits(ty);
    uint64_t v = 0;
    std::memcpy(&v, p, (size_t)b / 8);
    if (tySigned(ty)) v = (uint64_t)sext(v, b);
    return v;
  }

  void run();
  void call(const Ins &in);
  void vprintf(const Ins &in);
  [[noreturn]] void assertFail(const Ins &in);
  void arith(const Ins &in);
  bool setp(const Ins &in) const;
  uint64_t cvt(const Ins &in, uint64_t a) const;
  void atom(const Ins &in);
};

bool Interp::setp(const Ins &in) const {
  uint64_t a = val(in.o[1]), b = val(in.o[2]);
  const Ty ty = in.ty;
  const int nb = tyBits(ty);
  if (tyFloat(ty)) {
    double x = fget(ty, a), y = fget(ty, b);
    if (in.ftz && ty == Ty::F32) x = flush((float)x), y = flush((float)y);
    bool un = std::isnan(x) || std::isnan(y);
    switch (in.cmp) {
      case 1:
        return !un && x == y;
      case 2:
        return !un && x != y;
      case 3:
        return !un && x < y;
      case 4:
        return !un && x <= y;
      case 5:
        return !un && x > y;
      case 6:
        return !un && x >= y;
      case 11:
        return un || x == y;
      case 12:
        return un || x != y;
      case 13:
        return un || x < y;
      case 14:
        return un || x <= y;
      case 15:
        return un || x > y;
      case 16:
        return un || x >= y;
      case 17:
        return !un;
      case 18:
        return un;
    }
    return false;
  }
  // The integer comparisons, signed or not by the operands' type (lo/ls/hi/hs name the same
  // unsigned ones as lt/le/gt/ge).
  auto compare = [&](auto x, auto y) {
    switch (in.cmp) {
      case 1:
        return x == y;
      case 2:
        return x != y;
      case 3:
      case 7:
        return x < y;
      case 4:
      case 8:
        return x <= y;
      case 5:
      case 9:
        return x > y;
      case 6:
      case 10:
        return x >= y;
    }
    return false;
  };
  if (tySigned(ty)) return compare(sext(a, nb), sext(b, nb));
  return compare(a & maskOf(nb), b & maskOf(nb));
}

uint64_t Interp::cvt(const Ins &in, uint64_t a) const {
  const Ty d = in.ty, s = in.ty2;
  const int db = tyBits(d), sb = tyBits(s);
  if (!tyFloat(d) && !tyFloat(s)) {  // integer to integer: extend by the source, cut to the dest
    uint64_t v = tySigned(s) ? (uint64_t)sext(a, sb) : (a & maskOf(sb));
    if (in.sat) {
      if (tySigned(s)) {
        int64_t x = (int64_t)v;
        int64_t lo = tySigned(d) ? -(int64_t)(1ull << (db - 1)) : 0;
        int64_t hi =
            tySigned(d) ? (int64_t)((1ull << (db - 1)) - 1) : (int64_t)maskOf(std::min(db, 63));
        x = std::max(lo, std::min(hi, x));
        v = (uint64_t)x;
      } else {
        uint64_t hi = tySigned(d) ? (1ull << (db - 1)) - 1 : maskOf(db);
        v = std::min(v, hi);
      }
    }
    // a signed destination keeps its sign in the slot's upper bits; readers take their width
    return tySigned(d) ? (uint64_t)sext(v, db) : (v & maskOf(db));
  }
  if (tyFloat(d) && !tyFloat(s)) {  // integer to float
    double x = tySigned(s) ? (double)sext(a, sb) : (double)(a & maskOf(sb));
    if (d == Ty::F32) {
      float f = tySigned(s) ? (float)sext(a, sb) : (float)(a & maskOf(sb));  // one rounding
      if (in.sat) f = std::min(1.0f, std::max(0.0f, f));
      return bits(f);
    }
    return fput(d, x);
  }
  if (!tyFloat(d) && tyFloat(s)) {  // float to integer: rounded as asked, saturated, NaN is 0
    double x = fget(s, a);
    if (std::isnan(x)) return 0;
    x = roundBy(x, in.rnd ? in.rnd : 2);
    if (tySigned(d)) {
      double lo = -std::ldexp(1.0, db - 1), hi = std::ldexp(1.0, db - 1) - 1;
      int64_t v = x <= lo   ? (int64_t)lo
                  : x >= hi ? (db == 64 ? INT64_MAX : (int64_t)hi)
                            : (int64_t)x;
      return (uint64_t)v & maskOf(db);
    }
    double hi = std::ldexp(1.0, db) - 1;
    uint64_t v = x <= 0 ? 0 : x >= hi ? maskOf(db) : (uint64_t)x;
    return v;
  }
  // float to float
  double x = fget(s, a);
  if (in.ftz && s == Ty::F32) x = flush((float)x);
  if (in.irnd) x = roundBy(x, in.rnd);
  uint64_t out = fput(d, x);
  if (d == Ty::F32 && s == Ty::F64 && in.rnd > 1) {
    // f64 -> f32 toward zero/-inf/+inf: step the nearest result back where it overshot
    float f = (float)x;
    double back = f;
    if ((in.rnd == 2 && std::fabs(back) > std::fabs(x)) || (in.rnd == 3 && back > x))
      f = std::nextafter(f, in.rnd == 2 ? 0.0f : -INFINITY);
    else if (in.rnd == 4 && back < x)
      f = std::nextafter(f, INFINITY);
    out = bits(f);
  }
  if (in.sat && tyFloat(d)) out = fput(d, std::min(1.0, std::max(0.0, fget(d, out))));
  if (in.ftz && d == Ty::F32) out = bits(flush(f32(out)));
  return out;
}

// One floating-point operation in F's precision (f32 in float, f64 and the narrower formats in
// double); 0 for an operation this does not cover.
template <class F>
static F floatOp(Op op, F x, F y, F z) {
  switch (op) {
    case Op::Add:
      return x + y;
    case Op::Sub:
      return x - y;
    case Op::Mul:
      return x * y;
    case Op::Div:
      return x / y;
    case Op::Mad:
    case Op::Fma:
      return std::fma(x, y, z);
    case Op::Min:
      return std::fmin(x, y);
    case Op::Max:
      return std::fmax(x, y);
    case Op::Abs:
      return std::fabs(x);
    case Op::Neg:
      return -x;
    case Op::Sqrt:
      return std::sqrt(x);
    case Op::Rsqrt:
      return F(1) / std::sqrt(x);
    case Op::Rcp:
      return F(1) / x;
    case Op::Ex2:
      return std::exp2(x);
    case Op::Lg2:
      return std::log2(x);
    case Op::Sin:
      return std::sin(x);
    case Op::Cos:
      return std::cos(x);
    case Op::Tanh:
      return std::tanh(x);
    default:
      break;
  }
  return 0;
}

void Interp::arith(const Ins &in) {
  const Ty ty = in.ty;
  const int nb = tyBits(ty);
  const uint64_t mk = maskOf(nb);
  const uint64_t a = val(in.o[1]), b = in.nops > 2 ? val(in.o[2]) : 0,
                 c = in.nops > 3 ? val(in.o[3]) : 0;
  uint64_t out = 0;
  if (ty == Ty::F16x2 || ty == Ty::BF16x2) {  // each 16-bit half on its own, in double
    const Ty h = ty == Ty::F16x2 ? Ty::F16 : Ty::BF16;
    for (int s = 0; s < 32; s += 16) {
      const uint64_t ha = (a >> s) & 0xffff;
      uint64_t r;
      if (in.op == Op::Neg || in.op == Op::Abs) {  // the sign bit alone, NaNs included
        r = in.op == Op::Neg ? ha ^ 0x8000 : ha & 0x7fff;
      } else {
        double res =
            floatOp(in.op, fget(h, ha), fget(h, (b >> s) & 0xffff), fget(h, (c >> s) & 0xffff));
        if (in.sat) res = std::isnan(res) ? 0.0 : std::min(1.0, std::max(0.0, res));
        r = fput(h, res) & 0xffff;
      }
      out |= r << s;
    }
    set(in.o[0], out);
    return;
  }
  if (tyFloat(ty)) {
    if (ty == Ty::F32) {
      float x = f32(a), y = f32(b), z = f32(c), res = 0;
      if (in.ftz) x = flush(x), y = flush(y), z = flush(z);
      res = floatOp(in.op, x, y, z);
      if (in.sat) res = std::isnan(res) ? 0.0f : std::min(1.0f, std::max(0.0f, res));
      if (in.ftz) res = flush(res);
      out = bits(res);
    } else {
      double x = fget(ty, a), y = fget(ty, b), z = fget(ty, c), res = 0;
      res = floatOp(in.op, x, y, z);
      if (in.sat) res = std::isnan(res) ? 0.0 : std::min(1.0, std::max(0.0, res));
      out = fput(ty, res);
    }
    set(in.o[0], out);
    return;
  }
  const bool sg = tySigned(ty);
  const int64_t sa = sext(a, nb), sb = sext(b, nb);
  const uint64_t ua = a & mk, ub = b & mk;
  switch (in.op) {
    case Op::Add:
      out = a + b;
      break;
    case Op::Sub:
      out = a - b;
      break;
    case Op::Mul:
      out = a * b;
      break;
    case Op::Mad:
      out = a * b + c;
      break;
    case Op::MulHi:
    case Op::MadHi: {
      if (nb == 64) {
        if (sg)
          out = (uint64_t)(((__int128)sa * sb) >> 64);
        else
          out = (uint64_t)(((unsigned __int128)ua * ub) >> 64);
      } else {
        if (sg)
          out = (uint64_t)((sa * sb) >> nb);
        else
          out = (ua * ub) >> nb;
      }
      if (in.op == Op::MadHi) out += c;
      break;
    }
    case Op::MulWide:
    case Op::MadWide: {
      // the sources have the type's width, the result twice that
      uint64_t p = sg ? (uint64_t)(sa * sb) : ua * ub;
      if (in.op == Op::MadWide) p += c;
      set(in.o[0], nb == 32 ? p : p & maskOf(2 * nb));
      return;
    }
    case Op::Div:
      if (ub == 0)
        out = mk;  // PTX leaves it unspecified; no host trap
      else if (sg)
        out = (sb == -1 && nb == 64) ? (uint64_t)(-sa) : (uint64_t)(sa / sb);
      else
        out = ua / ub;
      break;
    case Op::Rem:
      if (ub == 0)
        out = ua;
      else if (sg)
        out = sb == -1 ? 0 : (uint64_t)(sa % sb);
      else
        out = ua % ub;
      break;
    case Op::Min:
      out = sg ? (uint64_t)std::min(sa, sb) : std::min(ua, ub);
      break;
    case Op::Max:
      out = sg ? (uint64_t)std::max(sa, sb) : std::max(ua, ub);
      break;
    case Op::Abs:
      out = (uint64_t)(sa < 0 ? -sa : sa);
      break;
    case Op::Neg:
      out = (uint64_t)(-sa);
      break;
    case Op::And:
      out = a & b;
      break;
    case Op::Or:
      out = a | b;
      break;
    case Op::Xor:
      out = a ^ b;
      break;
    case Op::Not:
      out = ~a;
      break;
    case Op::CNot:
      out = ua == 0 ? 1 : 0;
      break;
    case Op::Shl:
      out = (b & 0xffffffffu) >= (uint64_t)nb ? 0 : a << (b & 0xffffffffu);
      break;
    case Op::Shr: {
      uint64_t s = b & 0xffffffffu;
      if (sg)
        out = (uint64_t)(s >= (uint64_t)nb ? (sa < 0 ? -1 : 0) : (sa >> s));
      else
        out = s >= (uint64_t)nb ? 0 : ua >> s;
      break;
    }
    case Op::Popc:
      out = (uint64_t)std::popcount(ua);
      break;
    case Op::Clz:
      out = (uint64_t)(ua == 0 ? nb : std::countl_zero(ua) - (64 - nb));
      break;
    case Op::Brev: {
      uint64_t x = 0;
      for (int i = 0; i < nb; ++i) x |= ((ua >> i) & 1) << (nb - 1 - i);
      out = x;
      break;
    }
    case Op::Bfe: {
      uint32_t pos = (uint32_t)(b & 0xff), len = (uint32_t)(c & 0xff);
      uint64_t x = pos >= (uint32_t)nb ? 0 : ua >> pos;
      if (len == 0) {
        out = 0;
      } else {
        if (len < 64) x &= maskOf((int)len);
        uint32_t top = std::min<uint32_t>(pos + len, (uint32_t)nb) - 1;
        bool neg = sg && ((ua >> top) & 1) && pos < (uint32_t)nb;
        if (sg && len < (uint32_t)nb) {
          uint32_t keep = std::min<uint32_t>(len, (uint32_t)nb - std::min<uint32_t>(pos, nb));
          x &= maskOf((int)keep);
          if (neg) x |= ~maskOf((int)keep);
        }
        out = x;
      }
      break;
    }
    case Op::Bfi: {
      uint64_t d4 = val(in.o[4]);
      uint32_t pos = (uint32_t)(c & 0xff), len = (uint32_t)(d4 & 0xff);
      uint64_t f = len >= 64 ? ~0ull : maskOf((int)len);
      out = pos >= (uint32_t)nb ? ub : ((ub & ~(f << pos)) | ((ua & f) << pos));
      break;
    }
    default:
      break;
  }
  set(in.o[0], out & mk);
}

void Interp::atom(const Ins &in) {
  const bool has_d = in.op == Op::Atom;
  const Operand &ao = in.o[has_d ? 1 : 0];
  const uint64_t v = val(in.o[has_d ? 2 : 1]);
  const Ty ty = in.ty;
  const size_t n = (size_t)tyBits(ty) / 8;
  preempt();
  releases(in);
  uint8_t *p = mem(in.space, addr(ao), n, in, true);
  if (pdl) track(in, p, n, Access::Atomic);
  if (multi_cta) dsmemWrite(in, addr(ao), p);
  uint64_t old = loadElem(p, ty), res = old;
  const int nb = tyBits(ty);
  if (tyFloat(ty)) {
    double x = fget(ty, old), y = fget(ty, v);
    if (in.cmp == 1)
      res = fput(ty, ty == Ty::F32 ? (double)((float)x + (float)y) : x + y);
    else if (in.cmp == 2)
      res = fput(ty, std::fmin(x, y));
    else if (in.cmp == 3)
      res = fput(ty, std::fmax(x, y));
    else if (in.cmp == 7)
      res = v;
  } else {
    const bool sg = tySigned(ty);
    int64_t so = sext(old, nb), sv = sext(v, nb);
    uint64_t uo = old & maskOf(nb), uv = v & maskOf(nb);
    switch (in.cmp) {
      case 1:
        res = old + v;
        break;
      case 2:
        res = sg ? (uint64_t)std::min(so, sv) : std::min(uo, uv);
        break;
      case 3:
        res = sg ? (uint64_t)std::max(so, sv) : std::max(uo, uv);
        break;
      case 4:
        res = old & v;
        break;
      case 5:
        res = old | v;
        break;
      case 6:
        res = old ^ v;
        break;
      case 7:
        res = v;
        break;
      case 8:
        res = uo >= uv ? 0 : uo + 1;
        break;
      case 9:
        res = (uo == 0 || uo > uv) ? uv : uo - 1;
        break;
      case 10:
        res = uo == uv ? val(in.o[3]) : old;
        break;
    }
  }
  std::memcpy(p, &res, n);
  if (has_d) set(in.o[0], tySigned(ty) ? (uint64_t)sext(old, nb) : old & maskOf(nb));
}

void Interp::run() {
  const Ins *code = fn.code.data();
  const Operand *vec = fn.vec.data();
  size_t pc = 0;
  for (;;) {
    const Ins &in = code[pc++];
    if (in.guard != kNone && (r[in.guard] != 0) == in.guard_neg) continue;
    switch (in.op) {
      case Op::Nop:
        break;
      case Op::Mov:
        set(in.o[0], val(in.o[1]) & maskOf(tyBits(in.ty)));
        break;
      case Op::MovPack: {  // mov.b64 d, {a, b}: element 0 in the low bits
        const int n = (int)in.o[1].imm, eb = tyBits(in.ty) / n;
        uint64_t v = 0;
        for (int i = 0; i < n; ++i) v |= (val(vec[in.o[1].reg + i]) & maskOf(eb)) << (i * eb);
        set(in.o[0], v);
        break;
      }
      case Op::MovUnpack: {
        const int n = (int)in.o[0].imm, eb = tyBits(in.ty) / n;
        uint64_t v = val(in.o[1]);
        for (int i = 0; i < n; ++i) set(vec[in.o[0].reg + i], (v >> (i * eb)) & maskOf(eb));
        break;
      }
      case Op::Add:
      case Op::Sub:
      case Op::Mul:
      case Op::MulHi:
      case Op::MulWide:
      case Op::Mad:
      case Op::MadHi:
      case Op::MadWide:
      case Op::Fma:
      case Op::Div:
      case Op::Rem:
      case Op::Min:
      case Op::Max:
      case Op::Abs:
      case Op::Neg:
      case Op::And:
      case Op::Or:
      case Op::Xor:
      case Op::Not:
      case Op::CNot:
      case Op::Shl:
      case Op::Shr:
      case Op::Popc:
      case Op::Clz:
      case Op::Brev:
      case Op::Bfe:
      case Op::Bfi:
      case Op::Sqrt:
      case Op::Rsqrt:
      case Op::Rcp:
      case Op::Ex2:
      case Op::Lg2:
      case Op::Sin:
      case Op::Cos:
      case Op::Tanh:
        if (in.ty == Ty::Pred) {  // and/or/xor/not on predicates
          uint64_t a = val(in.o[1]) & 1, b = in.nops > 2 ? val(in.o[2]) & 1 : 0;
          uint64_t o = in.op == Op::And   ? (a & b)
                       : in.op == Op::Or  ? (a | b)
                       : in.op == Op::Xor ? (a ^ b)
                                          : (a ^ 1);
          set(in.o[0], o);
          break;
        }
        arith(in);
        break;
      case Op::Setp: {
        bool p = setp(in);
        if (in.bool_op) {
          bool c = val(in.o[3]) & 1;
          p = in.bool_op == 1 ? (p && c) : in.bool_op == 2 ? (p || c) : (p != c);
        }
        r[in.o[0].reg] = p;
        if (in.o[0].reg2 != kNone) r[in.o[0].reg2] = !p;
        break;
      }
      case Op::Selp:
        set(in.o[0], (val(in.o[3]) & 1) ? val(in.o[1]) : val(in.o[2]));
        break;
      case Op::Cvt:
        if (in.ty == Ty::F16x2 || in.ty == Ty::BF16x2) {
          const float hi = f32(val(in.o[1])), lo = f32(val(in.o[2]));
          const bool bf = in.ty == Ty::BF16x2;
          const uint32_t h = bf ? floatToBf16(hi) : floatToF16(hi),
                         l = bf ? floatToBf16(lo) : floatToF16(lo);
          set(in.o[0], (uint64_t)h << 16 | l);
          break;
        }
        set(in.o[0], cvt(in, val(in.o[1])));
        break;
      case Op::Cvta: {  // a state space's address to a generic one (a host pointer)
        uint64_t a = val(in.o[1]);
        if (in.space == Space::Shared) a = reinterpret_cast<uintptr_t>(smemPtr((uint32_t)a));
        if (in.space == Space::SharedCluster)
          a = onCta(in, (uint32_t)a,
                    [&](uint32_t l) { return reinterpret_cast<uintptr_t>(smemPtr(l)); });
        set(in.o[0], a);
        break;
      }
      case Op::CvtaTo: {
        uint64_t a = val(in.o[1]);
        if (in.space == Space::Shared) a = smemAddr(reinterpret_cast<void *>(a), loc(in));
        if (in.space == Space::SharedCluster)
          a = clusterSmemAddr(reinterpret_cast<void *>(a), loc(in));
        set(in.o[0], a);
        break;
      }
      case Op::Mapa: {  // the same shared offset in CTA `rank` of the cluster
        const uint64_t a = val(in.o[1]);
        Cta &to = clusterRank(in, val(in.o[2]) & 0xffffffffu);
        if (in.space == Space::SharedCluster) {
          uint32_t local;
          clusterTarget((uint32_t)a, &local, loc(in));
          set(in.o[0], clusterEncode(to.rank, local));
        } else {  // generic: a pointer into the shared memory of a CTA of the cluster
          const Cta &from = ctaHolding(in, a);
          set(in.o[0], reinterpret_cast<uintptr_t>(to.smem) +
                           (a - reinterpret_cast<uintptr_t>(from.smem)));
        }
        break;
      }
      case Op::GetCtaRank: {
        const uint64_t a = val(in.o[1]);
        if (in.space == Space::SharedCluster) {
          uint32_t local;
          set(in.o[0], (uint64_t)clusterTarget((uint32_t)a, &local, loc(in)).rank);
        } else {
          set(in.o[0], (uint64_t)ctaHolding(in, a).rank);
        }
        break;
      }
      case Op::ClusterArrive:
        releases(in);
        ptx::cluster_arrive(site(in));
        break;
      case Op::ClusterWait:
        ptx::cluster_wait(site(in));
        break;
      case Op::Ld: {
        const size_t eb = (size_t)tyBits(in.ty) / 8, n = eb * in.vec;
        const uint8_t *p = mem(in.space, addr(in.o[1]), n, in, false);
        if (pdl) track(in, p, n, Access::Read);
        if (in.vec == 1) {
          set(in.o[0], loadElem(p, in.ty));
        } else {
          for (int i = 0; i < in.vec; ++i) set(vec[in.o[0].reg + i], loadElem(p + i * eb, in.ty));
        }
        break;
      }
      case Op::St: {
        const size_t eb = (size_t)tyBits(in.ty) / 8, n = eb * in.vec;
        releases(in);
        uint8_t *p = mem(in.space, addr(in.o[0]), n, in, true);
        if (pdl) track(in, p, n, Access::Write);
        if (multi_cta) dsmemWrite(in, addr(in.o[0]), p);
        if (in.vec == 1) {
          uint64_t v = val(in.o[1]);
          std::memcpy(p, &v, eb);
        } else {
          for (int i = 0; i < in.vec; ++i) {
            uint64_t v = val(vec[in.o[1].reg + i]);
            std::memcpy(p + i * eb, &v, eb);
          }
        }
        break;
      }
      case Op::Atom:
      case Op::Red:
        atom(in);
        break;
      case Op::Bra:
        if (in.target < pc) loopTick(loc(in));  // a loop: one operation toward the launch's limit
        pc = in.target;
        break;
      case Op::Ret:
      case Op::Exit:
        return;
      case Op::Trap:
        fail("crash/launch-failure", site(in),
             "trap: the kernel executed trap (__trap()); on the GPU the launch fails with "
             "\"unspecified launch failure\"");
      case Op::Brkpt:
        fail("crash/launch-failure", site(in),
             "brkpt: the kernel reached a breakpoint instruction; with no debugger attached the "
             "GPU ends the launch with an error");
      case Op::BarSync:
      case Op::BarArrive: {
        uint32_t id = (uint32_t)val(in.o[0]), count = in.nops > 1 ? (uint32_t)val(in.o[1]) : 0;
        if (in.op == Op::BarSync)
          ptx::bar_sync(id, count, site(in));
        else
          ptx::bar_arrive(id, count, site(in));
        break;
      }
      case Op::BarWarpSync:
        ptx::syncwarp((uint32_t)val(in.o[0]), site(in));
        break;
      case Op::SetMaxNReg:  // the runtime's warpgroup rendezvous and its count checks
        ptx::setmaxnreg(in.cmp != 0, (uint32_t)val(in.o[0]), site(in));
        break;
      case Op::Shfl: {
        bool in_range = false;
        uint32_t v =
            ptx::shfl_sync((ptx::Shfl)in.cmp, (uint32_t)val(in.o[1]), (uint32_t)val(in.o[2]),
                           (uint32_t)val(in.o[3]), (uint32_t)val(in.o[4]), site(in), &in_range);
        r[in.o[0].reg] = v;
        if (in.o[0].reg2 != kNone) r[in.o[0].reg2] = in_range;
        break;
      }
      case Op::Elect: {  // the lowest lane of the mask present: its id, and true in that lane
        uint32_t leader = 0;
        const bool me = ptx::elect_sync((uint32_t)val(in.o[1]), site(in), &leader);
        if (in.o[0].reg != kNone) r[in.o[0].reg] = leader;
        if (in.o[0].reg2 != kNone) r[in.o[0].reg2] = me;
        break;
      }
      case Op::Vote: {
        uint32_t v =
            ptx::vote_sync((ptx::Vote)in.cmp, val(in.o[1]) & 1, (uint32_t)val(in.o[2]), site(in));
        set(in.o[0], v);
        break;
      }
      case Op::Prmt: {
        const uint64_t tmp = (val(in.o[2]) & 0xffffffffu) << 32 | (val(in.o[1]) & 0xffffffffu);
        const uint32_t c = (uint32_t)val(in.o[3]);
        // The byte of tmp each byte of d takes in the modes (PTX ISA, prmt): [mode-1][c&3][byte]
        static const uint8_t sel[6][4][4] = {
            {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}},  // f4e
            {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}},  // b4e
            {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},  // rc8
            {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}},  // ecl
            {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}},  // ecr
            {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}}};  // rc16
        uint32_t d = 0;
        for (int i = 0; i < 4; ++i) {
          uint32_t byte;
          if (in.cmp == 0) {  // generic: a nibble per byte; its msb replicates the byte's sign
            const uint32_t ctl = (c >> (4 * i)) & 0xf;
            byte = (uint32_t)(tmp >> (8 * (ctl & 7))) & 0xff;
            if (ctl & 8) byte = (byte & 0x80) ? 0xff : 0;
          } else {
            byte = (uint32_t)(tmp >> (8 * sel[in.cmp - 1][c & 3][i])) & 0xff;
          }
          d |= byte << (8 * i);
        }
        set(in.o[0], d);
        break;
      }
      case Op::Shf: {  // funnel shift of the 64 bits b:a; .wrap takes c mod 32, .clamp min(c, 32)
        const uint64_t ab = (val(in.o[2]) & 0xffffffffu) << 32 | (val(in.o[1]) & 0xffffffffu);
        const uint32_t c = (uint32_t)val(in.o[3]);
        const uint32_t k = (in.cmp & 2) ? std::min<uint32_t>(c, 32) : (c & 31);
        const uint32_t d = (in.cmp & 1) ? (uint32_t)(ab >> k) : (uint32_t)((ab << k) >> 32);
        set(in.o[0], d);
        break;
      }
      case Op::Dp4a:
      case Op::Dp2a: {
        // Bytes of b (and of a, or a's halves for dp2a) widened by their own type's sign; the sum
        // in 32 bits, c's type signed unless both are unsigned.
        const uint32_t a = (uint32_t)val(in.o[1]), b = (uint32_t)val(in.o[2]);
        const bool sa = in.ty == Ty::S32, sb = in.ty2 == Ty::S32;
        auto part = [](uint32_t x, int bits, int i, bool sg) -> int64_t {
          const uint32_t v = (x >> (bits * i)) & ((1u << bits) - 1);
          return sg ? sext(v, bits) : (int64_t)v;
        };
        int64_t sum = 0;
        if (in.op == Op::Dp4a) {
          for (int i = 0; i < 4; ++i) sum += part(a, 8, i, sa) * part(b, 8, i, sb);
        } else {
          const int k = in.uni ? 2 : 0;
          for (int i = 0; i < 2; ++i) sum += part(a, 16, i, sa) * part(b, 8, k + i, sb);
        }
        set(in.o[0], (uint32_t)((uint32_t)val(in.o[3]) + (uint32_t)sum));
        break;
      }
      case Op::Mul24:
      case Op::Mad24: {  // the 48-bit product of the low 24 bits; .lo its bits 0-31, .hi 16-47
        const uint32_t a = (uint32_t)val(in.o[1]), b = (uint32_t)val(in.o[2]);
        const bool sg = in.ty == Ty::S32;
        const int64_t x = sg ? sext(a & 0xffffff, 24) : (int64_t)(a & 0xffffff),
                      y = sg ? sext(b & 0xffffff, 24) : (int64_t)(b & 0xffffff);
        const uint64_t p = (uint64_t)(x * y);
        uint32_t d = in.uni ? (uint32_t)(p >> 16) : (uint32_t)p;
        if (in.op == Op::Mad24) d += (uint32_t)val(in.o[3]);
        set(in.o[0], d);
        break;
      }
      case Op::Copysign: {  // b with the sign bit of a
        const int nb = tyBits(in.ty);
        const uint64_t sign = 1ull << (nb - 1);
        set(in.o[0], (val(in.o[2]) & (sign - 1)) | (val(in.o[1]) & sign));
        break;
      }
      case Op::Testp: {
        const uint64_t a = val(in.o[1]);
        const bool f32 = in.ty == Ty::F32;
        const uint64_t mant = f32 ? (a & 0x7fffff) : (a & 0xfffffffffffffull);
        const uint64_t ex = f32 ? (a >> 23) & 0xff : (a >> 52) & 0x7ff, ex_max = f32 ? 0xff : 0x7ff;
        const bool inf = ex == ex_max && mant == 0, nan = ex == ex_max && mant != 0;
        bool p = false;
        switch (in.cmp) {
          case 0:  // finite
            p = ex != ex_max;
            break;
          case 1:  // infinite
            p = inf;
            break;
          case 2:  // number
            p = !nan;
            break;
          case 3:  // notanumber
            p = nan;
            break;
          case 4:  // normal: not zero, subnormal, infinite or NaN
            p = ex != 0 && ex != ex_max;
            break;
          case 5:  // subnormal
            p = ex == 0 && mant != 0;
            break;
        }
        set(in.o[0], p);
        break;
      }
      case Op::Slct: {  // c >= 0 selects a; -0 is >= 0, a NaN selects b
        const uint64_t c = val(in.o[3]);
        bool ge;
        if (in.ty2 == Ty::S32) {
          ge = (int32_t)(uint32_t)c >= 0;
        } else {
          float f = f32(c);
          if (in.ftz) f = flush(f);
          ge = f >= 0.0f;
        }
        set(in.o[0], (ge ? val(in.o[1]) : val(in.o[2])) & maskOf(tyBits(in.ty)));
        break;
      }
      case Op::Isspacep: {
        const void *p = reinterpret_cast<const void *>(val(in.o[1]));
        bool yes = false;
        switch (in.space) {
          case Space::Global:  // the kernel's parameters lie in the global window (PTX ISA)
            yes = emuInAllocation(p) || inParams(val(in.o[1]), 1);
            break;
          case Space::Shared:
            yes = isShared(p);
            break;
          case Space::SharedCluster:
            yes = isShared(p) || clusterCtaOf(p) != nullptr;
            break;
          case Space::Local:
            yes = t->fiber.onStack(p);
            break;
          case Space::Param:
            yes = inParams(val(in.o[1]), 1);
            break;
          case Space::Const:
            for (size_t i = 0; i < m.vars.size() && i < m.var_storage.size(); ++i) {
              const auto b = reinterpret_cast<uintptr_t>(m.var_storage[i]);
              if (m.vars[i].space == Space::Const && b && val(in.o[1]) >= b &&
                  val(in.o[1]) < b + m.vars[i].bytes)
                yes = true;
            }
            break;
          default:
            break;
        }
        set(in.o[0], yes);
        break;
      }
      case Op::Nanosleep:
        ptx::nanosleep((uint32_t)val(in.o[0]), site(in));
        break;
      case Op::Redux: {
        static const ptx::Redux ops[] = {ptx::Redux::Add, ptx::Redux::Min, ptx::Redux::Max,
                                         ptx::Redux::And, ptx::Redux::Or,  ptx::Redux::Xor};
        set(in.o[0], ptx::redux_sync(ops[in.cmp], in.ty == Ty::S32, (uint32_t)val(in.o[1]),
                                     (uint32_t)val(in.o[2]), site(in)));
        break;
      }
      case Op::Match: {
        bool eq = false;
        const uint64_t v = val(in.o[1]) & maskOf(tyBits(in.ty));
        const uint32_t d = ptx::match_sync(in.uni, v, (uint32_t)val(in.o[2]), site(in), &eq);
        if (in.o[0].reg != kNone) r[in.o[0].reg] = d;
        if (in.o[0].reg2 != kNone) r[in.o[0].reg2] = eq;
        break;
      }
      case Op::MbarInit:
        ptx::mbarrier_init(sharedAddr(in, 0), (uint32_t)val(in.o[1]), site(in));
        break;
      case Op::MbarInval:
        ptx::mbarrier_inval(sharedAddr(in, 0), site(in));
        break;
      // An arrive, expect_tx or complete_tx on a shared::cluster address (or a generic pointer
      // into a peer's shared memory) updates the barrier of the CTA it names and wakes its
      // waiters there.
      case Op::MbarArrive: {
        uint32_t count = in.nops > 2 ? (uint32_t)val(in.o[2]) : 1;
        const SrcLoc l = site(in);
        const uint32_t bar = sharedAddr(in, 1);
        arriveScope(in, bar, l);
        set(in.o[0], onCta(in, bar, [&](uint32_t a) { return ptx::mbarrier_arrive(a, l, count); }));
        break;
      }
      case Op::MbarArriveExpectTx: {
        const SrcLoc l = site(in);
        const uint32_t tx = (uint32_t)val(in.o[2]);
        const uint32_t bar = sharedAddr(in, 1);
        arriveScope(in, bar, l);
        set(in.o[0],
            onCta(in, bar, [&](uint32_t a) { return ptx::mbarrier_arrive_expect_tx(a, tx, l); }));
        break;
      }
      case Op::MbarArriveDrop: {
        uint32_t count = in.nops > 2 ? (uint32_t)val(in.o[2]) : 1;
        const SrcLoc l = site(in);
        const uint32_t bar = sharedAddr(in, 1);
        arriveScope(in, bar, l);
        set(in.o[0],
            onCta(in, bar, [&](uint32_t a) { return ptx::mbarrier_arrive_drop(a, l, count); }));
        break;
      }
      case Op::MbarExpectTx: {
        const SrcLoc l = site(in);
        const uint32_t tx = (uint32_t)val(in.o[1]);
        onCta(in, sharedAddr(in, 0), [&](uint32_t a) { ptx::mbarrier_expect_tx(a, tx, l); });
        break;
      }
      case Op::MbarCompleteTx: {
        const SrcLoc l = site(in);
        const uint32_t tx = (uint32_t)val(in.o[1]);
        onCta(in, sharedAddr(in, 0),
              [&](uint32_t a) { ptx::mbarrier_complete_tx(a, tx, l, t->dep_known); });
        break;
      }
      case Op::MbarTryWaitParity: {
        const SrcLoc l = site(in);
        const uint32_t par = (uint32_t)val(in.o[2]);
        r[in.o[0].reg] = onCta(
            in, sharedAddr(in, 1),
            [&](uint32_t a) { return ptx::mbarrier_try_wait_parity(a, par, l); }, true);
        break;
      }
      case Op::MbarTestWaitParity: {
        const SrcLoc l = site(in);
        const uint32_t par = (uint32_t)val(in.o[2]);
        r[in.o[0].reg] = onCta(
            in, sharedAddr(in, 1),
            [&](uint32_t a) { return ptx::mbarrier_test_wait_parity(a, par, l); }, true);
        break;
      }
      case Op::MbarTryWait: {
        const SrcLoc l = site(in);
        const uint64_t tok = val(in.o[2]);
        r[in.o[0].reg] = onCta(
            in, sharedAddr(in, 1), [&](uint32_t a) { return ptx::mbarrier_try_wait(a, tok, l); },
            true);
        break;
      }
      case Op::MbarTestWait: {
        const SrcLoc l = site(in);
        const uint64_t tok = val(in.o[2]);
        r[in.o[0].reg] = onCta(
            in, sharedAddr(in, 1), [&](uint32_t a) { return ptx::mbarrier_test_wait(a, tok, l); },
            true);
        break;
      }
      case Op::Fence:
        releases(in);
        if (in.o[0].imm == 1)
          ptx::fence_proxy_async(site(in));
        else if (in.o[0].imm == 2)
          ptx::fence_mbarrier_init(site(in));
        else
          ptx::fence(fn.text[&in - code].c_str(), site(in));
        break;
      case Op::TmaLoad: {
        int32_t c[5];
        for (int i = 0; i < in.rank; ++i) c[i] = (int32_t)val(vec[in.o[2].reg + i]);
        const SrcLoc l = site(in);
        const auto *map = reinterpret_cast<const TensorMap *>(addr(in.o[1]));
        const uint32_t bar = sharedBarOf(in, (uint32_t)addr(in.o[0]), (uint32_t)addr(in.o[3]));
        onCta(in, (uint32_t)addr(in.o[0]),
              [&](uint32_t dst) { ptx::tma_load(in.rank, dst, map, c, bar, l); });
        break;
      }
      case Op::TmaLoadMulticast: {
        int32_t c[5];
        for (int i = 0; i < in.rank; ++i) c[i] = (int32_t)val(vec[in.o[2].reg + i]);
        ptx::tma_load_multicast(in.rank, (uint32_t)addr(in.o[0]),
                                reinterpret_cast<const TensorMap *>(addr(in.o[1])), c,
                                (uint32_t)addr(in.o[3]), (uint16_t)val(in.o[4]), site(in));
        break;
      }
      case Op::BulkLoadMulticast:
        ptx::bulk_load_multicast(
            (uint32_t)addr(in.o[0]), reinterpret_cast<const void *>(addr(in.o[1])),
            (uint32_t)val(in.o[2]), (uint32_t)addr(in.o[3]), (uint16_t)val(in.o[4]), site(in));
        break;
      case Op::TmaStore: {
        int32_t c[5];
        for (int i = 0; i < in.rank; ++i) c[i] = (int32_t)val(vec[in.o[1].reg + i]);
        ptx::tma_store(in.rank, reinterpret_cast<const TensorMap *>(addr(in.o[0])), c,
                       (uint32_t)addr(in.o[2]), site(in));
        break;
      }
      case Op::BulkLoad: {
        const SrcLoc l = site(in);
        const void *src = reinterpret_cast<const void *>(addr(in.o[1]));
        const uint32_t bytes = (uint32_t)val(in.o[2]);
        const uint32_t bar = sharedBarOf(in, (uint32_t)addr(in.o[0]), (uint32_t)addr(in.o[3]));
        onCta(in, (uint32_t)addr(in.o[0]),
              [&](uint32_t dst) { ptx::bulk_load(dst, src, bytes, bar, l); });
        break;
      }
      case Op::BulkStore:
        ptx::bulk_store(reinterpret_cast<void *>(addr(in.o[0])), (uint32_t)addr(in.o[1]),
                        (uint32_t)val(in.o[2]), site(in));
        break;
      case Op::BulkCommit:
        ptx::bulk_commit_group(site(in));
        break;
      case Op::BulkWait:
        ptx::bulk_wait_group((int)val(in.o[0]), in.read_only, site(in));
        break;
      case Op::Call:
        call(in);
        break;
      case Op::Vprintf:
        vprintf(in);
        break;
      case Op::AssertFail:
        assertFail(in);
      case Op::WgmmaFence:
        ptx::wgmma_fence(site(in));
        break;
      case Op::WgmmaCommit:
        ptx::wgmma_commit_group(site(in));
        break;
      case Op::WgmmaWait:
        ptx::wgmma_wait_group((int)in.o[0].imm, site(in));
        break;
      case Op::Wgmma: {
        // The accumulators are this thread's register slots: the runtime writes each result
        // there (its low 32 bits, an f32) when the wgmma completes, which may be after issue.
        float *d[128];
        const int nd = in.rank / 2;
        for (int i = 0; i < nd; ++i) d[i] = reinterpret_cast<float *>(&r[vec[in.o[0].reg + i].reg]);
        const ptx::WgType wt = in.cmp == 0   ? ptx::WgType::BF16
                               : in.cmp == 1 ? ptx::WgType::F16
                                             : ptx::WgType::TF32;
        const bool tf32 = wt == ptx::WgType::TF32;  // no transpose operands: K-major
        if (!in.uni) {
          ptx::wgmma_ss(in.rank, wt, d, val(in.o[1]), val(in.o[2]), val(in.o[3]) & 1,
                        (int)(int64_t)val(in.o[4]), (int)(int64_t)val(in.o[5]),
                        tf32 ? 0 : (int)val(in.o[6]), tf32 ? 0 : (int)val(in.o[7]), site(in));
        } else {
          uint32_t a[4];
          for (int i = 0; i < 4; ++i) a[i] = (uint32_t)val(vec[in.o[1].reg + i]);
          ptx::wgmma_rs(in.rank, wt, d, a, val(in.o[2]), val(in.o[3]) & 1,
                        (int)(int64_t)val(in.o[4]), (int)(int64_t)val(in.o[5]),
                        tf32 ? 0 : (int)val(in.o[6]), site(in));
        }
        break;
      }
      case Op::TcAlloc:
        ptx::tcgen05_alloc(sharedAddr(in, 0), (uint32_t)val(in.o[1]), site(in));
        break;
      case Op::TcDealloc:
        ptx::tcgen05_dealloc((uint32_t)val(in.o[0]), (uint32_t)val(in.o[1]), site(in));
        break;
      case Op::TcRelinquish:
        ptx::tcgen05_relinquish_alloc_permit(site(in));
        break;
      case Op::TcMma:
        ptx::tcgen05_mma(in.cmp ? ptx::TcKind::TF32 : ptx::TcKind::F16, (uint32_t)addr(in.o[0]),
                         val(in.o[1]), val(in.o[2]), (uint32_t)val(in.o[3]), val(in.o[4]) & 1,
                         site(in));
        break;
      case Op::TcCommit: {
        // Its barrier: the executing CTA's (a shared::cluster address naming a peer's is the
        // multicast form's business, which is not decoded).
        const SrcLoc l = site(in);
        uint32_t bar = sharedAddr(in, 0);
        if (in.space != Space::Shared) {
          uint32_t local;
          if (&clusterTarget(bar, &local, l) != t->home)
            ptx::unknown_instruction("tcgen05.commit on a peer CTA's mbarrier", l);
          bar = local;
        }
        ptx::tcgen05_commit(bar, l);
        break;
      }
      case Op::TcLd: {
        // The destinations are this frame's register slots, written by tcgen05.wait::ld at the
        // latest (runFunction drops what a returning frame never waited for).
        uint64_t *d[128];
        for (int i = 0; i < in.rank; ++i) d[i] = &r[vec[in.o[0].reg + i].reg];
        ptx::tcgen05_ld_32x32b(in.rank, (uint32_t)addr(in.o[1]), d, site(in));
        break;
      }
      case Op::TcWaitLd:
        ptx::tcgen05_wait_ld(site(in));
        break;
      case Op::TcSt: {
        // The source registers are read at issue: the store carries their values.
        const ptx::TcShape shape = (ptx::TcShape)in.cmp;
        const bool x2 = shape == ptx::TcShape::S16x32bx2;
        const Operand &regs = in.o[x2 ? 2 : 1];
        uint32_t src[128];
        for (int64_t i = 0; i < regs.imm; ++i) src[i] = (uint32_t)val(vec[regs.reg + i]);
        ptx::tcgen05_st(shape, in.rank, in.uni, (uint32_t)addr(in.o[0]),
                        x2 ? (uint32_t)in.o[1].imm : 0, src, site(in));
        break;
      }
      case Op::TcWaitSt:
        ptx::tcgen05_wait_st(site(in));
        break;
      case Op::TcCp:
        ptx::tcgen05_cp((ptx::TcCpShape)in.cmp, (uint32_t)addr(in.o[0]), val(in.o[1]), site(in));
        break;
      case Op::TcFence:
        ptx::tcgen05_fence(in.o[0].imm == 1, site(in));
        break;
      case Op::GridDepLaunch:
        ptx::griddepcontrol_launch_dependents(site(in));
        break;
      case Op::GridDepWait:
        ptx::griddepcontrol_wait(site(in));
        break;
      case Op::Ldmatrix: {
        // A warp collective (the runtime's rendezvous over all 32 lanes): a lane that is elsewhere
        // or has exited leaves the others waiting, ub/partial-collective. Lanes 0..8N-1 give the
        // rows' addresses, each the start of a 16-byte row.
        const uint32_t a = sharedAddr(in, 1);
        if (t->lane < 8 * in.rank && a % 16)
          fail("ub/misaligned", loc(in), "ldmatrix row address is not 16-byte aligned");
        uint32_t out[4] = {};
        ptx::ldmatrix(in.rank, in.uni, a, out, site(in));
        for (int i = 0; i < in.rank; ++i) set(vec[in.o[0].reg + i], out[i]);
        break;
      }
      case Op::Stmatrix: {
        const uint32_t a = sharedAddr(in, 0);
        if (t->lane < 8 * in.rank && a % 16)
          fail("ub/misaligned", loc(in), "stmatrix row address is not 16-byte aligned");
        uint32_t v[4] = {};
        for (int i = 0; i < in.rank; ++i) v[i] = (uint32_t)val(vec[in.o[1].reg + i]);
        ptx::stmatrix(in.rank, in.uni, a, v, site(in));
        break;
      }
      case Op::TmaReduce: {
        int32_t c[5];
        for (int i = 0; i < in.rank; ++i) c[i] = (int32_t)val(vec[in.o[1].reg + i]);
        ptx::tma_reduce(in.rank, reinterpret_cast<const TensorMap *>(addr(in.o[0])), c,
                        (uint32_t)addr(in.o[2]), (ptx::Atom)in.cmp, site(in));
        break;
      }
      case Op::BulkReduce: {
        ptx::RedType rt;
        switch (in.ty) {
          case Ty::S32:
            rt = ptx::RedType::S32;
            break;
          case Ty::U64:
          case Ty::B64:
            rt = ptx::RedType::U64;
            break;
          case Ty::S64:
            rt = ptx::RedType::S64;
            break;
          case Ty::F16:
            rt = ptx::RedType::F16;
            break;
          case Ty::BF16:
            rt = ptx::RedType::BF16;
            break;
          case Ty::F32:
            rt = ptx::RedType::F32;
            break;
          case Ty::F64:
            rt = ptx::RedType::F64;
            break;
          default:
            rt = ptx::RedType::U32;
        }
        ptx::bulk_reduce(reinterpret_cast<void *>(addr(in.o[0])), (uint32_t)addr(in.o[1]),
                         (uint32_t)val(in.o[2]), (ptx::Atom)in.cmp, rt, site(in));
        break;
      }
      case Op::TmaPrefetch: {
        int32_t c[5];
        for (int i = 0; i < in.rank; ++i) c[i] = (int32_t)val(vec[in.o[1].reg + i]);
        ptx::tma_prefetch(in.rank, reinterpret_cast<const TensorMap *>(addr(in.o[0])), c,
                          site(in));
        break;
      }
      case Op::CpAsync: {
        const uint32_t size = (uint32_t)in.o[2].imm;
        const uint32_t src_size = in.cmp == 1   ? (uint32_t)val(in.o[3])
                                  : in.cmp == 2 ? ((val(in.o[3]) & 1) ? 0 : size)
                                                : size;
        ptx::cp_async((uint32_t)addr(in.o[0]), reinterpret_cast<const void *>(addr(in.o[1])), size,
                      src_size, site(in));
        break;
      }
      case Op::CpAsyncCommit:
        ptx::cp_async_commit_group(site(in));
        break;
      case Op::CpAsyncWait:
        if (in.uni)
          ptx::cp_async_wait_all(site(in));
        else
          ptx::cp_async_wait_group((int)in.o[0].imm, site(in));
        break;
      case Op::CpAsyncMbarArrive:
        ptx::cp_async_mbarrier_arrive(sharedAddr(in, 0), in.uni, site(in));
        break;
      case Op::Unsupported:
        // Refused before the launch (the host library scans every kernel it runs); reached only
        // if that scan was skipped.
        ptx::unknown_instruction(fn.text[&in - code].c_str(), loc(in));
    }
  }
}

}  // namespace

namespace {
// Never destroyed: a launch the host held may run, and print, at exit (emu/host/cudart.cpp).
std::string &devicePrintf() {
  static auto *out = new std::string;
  return *out;
}

// One frame: `fn` with its parameter buffer, its local memory and its calls' buffer on the
// fiber's own stack (the runtime reads an address there as the thread's local memory: a tensor
// map there is ub/tensor-map-space, as on the GPU), its registers on the heap.
void runFunction(const Module &m, const Function &fn, const uint8_t *params, size_t param_bytes,
                 std::vector<SrcLoc> frames) {
  const size_t lb = (fn.local_bytes + 15) & ~size_t(15),
               cb = (fn.call_param_bytes + 15) & ~size_t(15);
  uint8_t *local = nullptr, *callbuf = nullptr;
  if (lb + cb) {
    auto *raw = static_cast<uint8_t *>(alloca(lb + cb + 16));
    raw = reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(raw) + 15) & ~uintptr_t(15));
    if (lb) {
      local = raw;
      uninit(local, fn.local_bytes);
    }
    if (cb) {
      callbuf = raw + lb;
      std::memset(callbuf, 0, cb);
    }
  }
  // Registers no instruction wrote read as the runtime's uninitialised locals do: a pattern, or
  // zeros under WSEMU_LOCALS=zero (the reducer's second judgement, emu/README.md).
  std::vector<uint64_t> regs(fn.nregs + 1);
  uninit(regs.data(), regs.size() * sizeof(uint64_t));
  Interp it{m, fn, params, param_bytes, regs.data(), local, {}, &self(), -1, nullptr, {}};
  it.callbuf = callbuf;
  it.frames = std::move(frames);
  it.pdl = cta().dep != nullptr;
  it.multi_cta = cta().cluster && cta().cluster->ctas.size() > 1;
  it.symaddr.assign(m.vars.size(), 0);
  for (uint32_t i : fn.syms) {
    const Var &v = m.vars[i];
    switch (v.space) {
      case Space::Param:
        it.symaddr[i] = v.call_param ? reinterpret_cast<uintptr_t>(callbuf) + v.param_offset
                                     : reinterpret_cast<uintptr_t>(params) + v.param_offset;
        break;
      case Space::Shared:
        if (v.dynamic) {
          it.symaddr[i] = smemAddr(dynamicShared());
        } else {
          void *p =
              sharedStaticBytes(v.name.c_str(), v.bytes, std::max<uint32_t>(v.align, 16), v.elem);
          it.symaddr[i] = smemAddr(p);
        }
        break;
      case Space::Local:
        it.symaddr[i] = reinterpret_cast<uintptr_t>(local) + v.local_offset;
        break;
      default:
        it.symaddr[i] =
            i < m.var_storage.size() ? reinterpret_cast<uintptr_t>(m.var_storage[i]) : 0;
    }
  }
  it.run();
  // A tcgen05.ld of this frame that no tcgen05.wait::ld took in: its registers are gone.
  std::erase_if(self().tc_lds, [&](const Thread::TcLd &ld) {
    return !ld.dst.empty() && ld.dst[0] >= regs.data() && ld.dst[0] < regs.data() + regs.size();
  });
}

// A call: the arguments are copied from this frame's call buffer into the callee's parameters,
// the callee runs as a frame of its own, and its return values are copied back.
void Interp::call(const Ins &in) {
  const Function &callee = m.funcs[in.target];
  const Operand *rets = &fn.vec[in.o[0].reg], *args = &fn.vec[in.o[1].reg];
  std::vector<uint64_t> store((callee.param_bytes + 7) / 8 + 2, 0);
  auto *buf = reinterpret_cast<uint8_t *>(store.data());
  for (int64_t i = 0; i < in.o[1].imm; ++i) {
    const Var &p = m.vars[callee.params[callee.nrets + i]];
    std::memcpy(buf + p.param_offset, reinterpret_cast<const void *>(symaddr[args[i].sym]),
                p.bytes);
  }
  site(in);
  std::vector<SrcLoc> callers = t->calls;
  callers.push_back(loc(in));
  runFunction(m, callee, buf, callee.param_bytes, std::move(callers));
  last_chain = -1;  // the callee's frames were the thread's
  for (int64_t i = 0; i < in.o[0].imm; ++i) {
    const Var &p = m.vars[callee.params[i]];
    std::memcpy(reinterpret_cast<void *>(symaddr[rets[i].sym]), buf + p.param_offset, p.bytes);
  }
}

// The NUL-terminated device string at p, every byte checked as the program's own read would be.
std::string cString(uint64_t p, SrcLoc l) {
  std::string s;
  for (;; ++p) {
    checkAccess(reinterpret_cast<const void *>(p), 1, l);
    char c = *reinterpret_cast<const char *>(p);
    if (!c) return s;
    s += c;
  }
}

// __assertfail(message, file, line, function, char size): a device assert() that failed. The
// GPU prints its line to stderr and the launch fails (cudaErrorAssert).
void Interp::assertFail(const Ins &in) {
  const Operand *args = &fn.vec[in.o[1].reg];
  const SrcLoc l = loc(in);
  auto u64 = [&](int i) {
    uint64_t v = 0;
    std::memcpy(&v, reinterpret_cast<const void *>(symaddr[args[i].sym]), 8);
    return v;
  };
  auto str = [&](uint64_t p) { return cString(p, l); };
  uint32_t line = 0;
  std::memcpy(&line, reinterpret_cast<const void *>(symaddr[args[2].sym]), 4);
  const Dim3 b = blockIdx(), th = threadIdx();
  char where[160];
  std::snprintf(where, sizeof where, "block: [%u,%u,%u], thread: [%u,%u,%u]", b.x, b.y, b.z, th.x,
                th.y, th.z);
  const std::string text = str(u64(1)) + ":" + std::to_string(line) + ": " + str(u64(3)) + ": " +
                           where + " Assertion `" + str(u64(0)) + "` failed.";
  std::fprintf(stderr, "%s\n", text.c_str());
  fail("crash/device-assert", site(in), "device assert: " + text);
}

// vprintf(format, args): what device printf compiles to. The arguments lie in the caller's local
// buffer, each at its size's alignment: 4 bytes for int and char conversions without a length, 8
// for l/ll, doubles (%f %e %g %a) and pointers (%s %p).
void Interp::vprintf(const Ins &in) {
  const Operand *args = &fn.vec[in.o[1].reg];
  uint64_t fmt, argp;
  std::memcpy(&fmt, reinterpret_cast<const void *>(symaddr[args[0].sym]), 8);
  std::memcpy(&argp, reinterpret_cast<const void *>(symaddr[args[1].sym]), 8);
  const SrcLoc l = loc(in);
  auto str = [&](uint64_t p) { return cString(p, l); };
  const std::string f = str(fmt);
  std::string out;
  size_t off = 0;
  auto arg = [&](size_t n) {
    off = (off + n - 1) / n * n;
    checkAccess(reinterpret_cast<const void *>(argp + off), n, l);
    uint64_t v = 0;
    std::memcpy(&v, reinterpret_cast<const void *>(argp + off), n);
    off += n;
    return v;
  };
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out += f[i];
      continue;
    }
    size_t j = i + 1;
    while (j < f.size() && std::strchr("-+ #0123456789.", f[j])) ++j;
    std::string len;
    while (j < f.size() && std::strchr("hlLqjzt", f[j])) len += f[j++];
    if (j >= f.size()) break;
    const char conv = f[j];
    std::string spec = f.substr(i, j - i - len.size());  // flags, width, precision
    char buf[512];
    if (conv == '%') {
      out += '%';
    } else if (std::strchr("diouxXc", conv)) {
      const bool wide = len.find('l') != std::string::npos || len == "q" || len == "j" ||
                        len == "z" || len == "t";
      uint64_t v = arg(wide ? 8 : 4);
      if (conv == 'c') {
        std::snprintf(buf, sizeof buf, (spec + "c").c_str(), (int)v);
      } else if (conv == 'd' || conv == 'i') {
        long long x = wide ? (long long)v : (long long)(int32_t)v;
        std::snprintf(buf, sizeof buf, (spec + "ll" + conv).c_str(), x);
      } else {
        unsigned long long x = wide ? v : (uint32_t)v;
        std::snprintf(buf, sizeof buf, (spec + "ll" + conv).c_str(), x);
      }
      out += buf;
    } else if (std::strchr("fFeEgGaA", conv)) {
      uint64_t v = arg(8);
      std::snprintf(buf, sizeof buf, (spec + conv).c_str(), f64(v));
      out += buf;
    } else if (conv == 's') {
      std::string s = str(arg(8));
      std::snprintf(buf, sizeof buf, (spec + "s").c_str(), s.c_str());
      out += buf;
    } else if (conv == 'p') {
      std::snprintf(buf, sizeof buf, (spec + "p").c_str(), reinterpret_cast<void *>(arg(8)));
      out += buf;
    } else {
      out += f.substr(i, j - i + 1);  // not a conversion printf knows: printed as written
    }
    i = j;
  }
  devicePrintf() += out;
  if (in.o[0].imm == 1) {
    const int32_t n = (int32_t)out.size();
    std::memcpy(reinterpret_cast<void *>(symaddr[fn.vec[in.o[0].reg].sym]), &n, 4);
  }
}
}  // namespace

std::string takeDevicePrintf() {
  std::string s;
  s.swap(devicePrintf());
  return s;
}

void runThread(const Module &m, const Function &fn, const uint8_t *params, size_t param_bytes) {
  runFunction(m, fn, params, param_bytes, {});
  self().calls.clear();
}

}  // namespace wsemu::ptxe
