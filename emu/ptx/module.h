// The PTX front end of the CPU emulator: a module parsed from the PTX text nvcc emits, decoded
// once into a compact form (no string work per executed instruction), and an interpreter that
// runs one kernel thread on the runtime's fibers (emu/runtime). Every state space maps onto the
// runtime's memory: global = the allocations its cudaMalloc made (host memory), shared = the
// CTA's arena (a 32-bit shared-window address, as the PTX operands hold it), param = one buffer
// per launch, local = the thread's own fiber stack.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "emu/runtime/core.h"

namespace wsemu::ptxe {

enum class Ty : uint8_t {
  None,
  B8,
  B16,
  B32,
  B64,
  U8,
  U16,
  U32,
  U64,
  S8,
  S16,
  S32,
  S64,
  F16,
  F16x2,
  BF16,
  BF16x2,
  F32,
  F64,
  Pred
};
int tyBits(Ty t);
bool tySigned(Ty t);
bool tyFloat(Ty t);

// Shared: shared::cta (a 32-bit window address of the executing CTA). SharedCluster: a
// shared::cluster address (emu/runtime/state.h: the CTA's rank above its window address).
enum class Space : uint8_t { Generic, Global, Shared, Param, Local, Const, SharedCluster };

enum class Special : uint8_t {
  TidX,
  TidY,
  TidZ,
  NtidX,
  NtidY,
  NtidZ,
  CtaidX,
  CtaidY,
  CtaidZ,
  NctaidX,
  NctaidY,
  NctaidZ,
  Laneid,
  Warpid,
  Nwarpid,
  Smid,
  Nsmid,
  GlobalTimer,
  Clock,
  Clock64,
  DynSmem,
  TotalSmem,
  LanemaskEq,
  LanemaskLt,
  LanemaskLe,
  LanemaskGt,
  LanemaskGe,
  // The cluster the CTA is in: a launch without cluster dimensions is clusters of one CTA.
  ClusterCtarank,
  ClusterNctarank,
  ClusterCtaidX,
  ClusterCtaidY,
  ClusterCtaidZ,
  ClusterNctaidX,
  ClusterNctaidY,
  ClusterNctaidZ,
  ClusteridX,
  ClusteridY,
  ClusteridZ,
  NclusteridX,
  NclusteridY,
  NclusteridZ,
  IsExplicitCluster
};

constexpr uint32_t kNone = ~0u;

struct Operand {
  enum Kind : uint8_t { None, Reg, Imm, Special, Sym, Addr, Vec, Sink } k = None;
  uint8_t special = 0;
  uint32_t reg = kNone;   // Reg, Addr (base register); Vec: first index into Function::vec
  uint32_t reg2 = kNone;  // `%r1|%p1`: the predicate a shfl also writes
  uint32_t sym = kNone;   // Sym, Addr (base symbol)
  int64_t imm = 0;        // Imm (the bits), Addr/Sym (byte offset), Vec (count)
};

// Opcodes the interpreter implements. Unsupported is an instruction it does not: the kernel is
// refused before it runs (Function::unsupported), never run with it as a no-op.
enum class Op : uint8_t {
  Unsupported,
  Nop,
  Mov,
  MovPack,
  MovUnpack,
  Add,
  Sub,
  Mul,
  MulHi,
  MulWide,
  Mad,
  MadHi,
  MadWide,
  Fma,
  Div,
  Rem,
  Min,
  Max,
  Abs,
  Neg,
  And,
  Or,
  Xor,
  Not,
  CNot,
  Shl,
  Shr,
  Popc,
  Clz,
  Brev,
  Bfe,
  Bfi,
  Setp,
  Selp,
  Cvt,
  Cvta,
  CvtaTo,
  Sqrt,
  Rsqrt,
  Rcp,
  Ex2,
  Lg2,
  Sin,
  Cos,
  Tanh,
  Ld,
  St,
  Atom,
  Red,
  Bra,
  Ret,
  Exit,
  Trap,
  Brkpt,
  AssertFail,
  BarSync,
  BarArrive,
  BarWarpSync,
  SetMaxNReg,
  Shfl,
  Vote,
  Elect,
  MbarInit,
  MbarInval,
  MbarArrive,
  MbarArriveExpectTx,
  MbarArriveDrop,
  MbarExpectTx,
  MbarCompleteTx,
  MbarTryWaitParity,
  MbarTestWaitParity,
  MbarTryWait,
  MbarTestWait,
  Fence,
  TmaLoad,
  TmaStore,
  BulkLoad,
  BulkStore,
  BulkCommit,
  BulkWait,
  Call,     // o[0]: Vec of the return value symbols, o[1]: Vec of the arguments; target: callee
  Vprintf,  // a call of vprintf (device printf), same operands
  Wgmma,
  WgmmaFence,
  WgmmaCommit,
  WgmmaWait,
  ClusterArrive,      // barrier.cluster.arrive{.release,.relaxed}{.aligned}
  ClusterWait,        // barrier.cluster.wait{.acquire}{.aligned}
  Mapa,               // mapa{.shared::cluster}.{u32,u64} d, a, rank
  GetCtaRank,         // getctarank{.shared::cluster}.{u32,u64} d, a
  TmaLoadMulticast,   // cp.async.bulk.tensor...multicast::cluster: o[4] the ctaMask
  BulkLoadMulticast,  // cp.async.bulk.shared::cluster.global...multicast::cluster: o[4] ctaMask
  // tcgen05 and tensor memory (the runtime's tcgen05.cpp), cta_group::1 only:
  TcAlloc,       // tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [dst], ncols
  TcDealloc,     // tcgen05.dealloc.cta_group::1.sync.aligned.b32 taddr, ncols
  TcRelinquish,  // tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned
  TcMma,         // tcgen05.mma.cta_group::1.kind::{f16,tf32} [d], adesc, bdesc, idesc, p
  TcCommit,      // tcgen05.commit.cta_group::1.mbarrier::arrive::one{.shared::cluster}.b64 [bar]
  TcLd,          // tcgen05.ld.sync.aligned.32x32b.xN.b32 {N regs}, [taddr]: rank = N
  TcWaitLd,      // tcgen05.wait::ld.sync.aligned
  // tcgen05.st.sync.aligned.<shape>.xN{.unpack::16b}.b32 [taddr]{, split}, {regs}: cmp = the
  // shape (ptx::TcShape), rank = N, uni = .unpack::16b; split (o[1]) for .16x32bx2 only.
  TcSt,
  TcWaitSt,  // tcgen05.wait::st.sync.aligned
  TcCp,      // tcgen05.cp.cta_group::1.<shape>{.<multicast>} [taddr], s-desc: cmp = ptx::TcCpShape
  TcFence,       // tcgen05.fence::before_thread_sync (o[0].imm 0) / ::after_thread_sync (1)
  // Programmatic dependent launch (the runtime's pdl.cpp):
  GridDepLaunch,  // griddepcontrol.launch_dependents (cudaTriggerProgrammaticLaunchCompletion)
  GridDepWait,    // griddepcontrol.wait (cudaGridDependencySynchronize)
  // Warp-collective matrix loads and stores (the runtime's sync.cpp): m8n8 .b16, rank = 1/2/4
  // matrices, uni = .trans.
  Ldmatrix,  // ldmatrix.sync.aligned.m8n8.xN{.trans}{.shared{::cta}}.b16 {N regs}, [p]
  Stmatrix,  // stmatrix.sync.aligned.m8n8.xN{.trans}{.shared{::cta}}.b16 [p], {N regs}
  // Bulk reductions into global memory, bulk-group completion (the runtime's tma.cpp); cmp: the
  // operation (ptx::Atom).
  TmaReduce,   // cp.reduce.async.bulk.tensor.Nd.global.shared::cta.<op>{.tile}.bulk_group
  BulkReduce,  // cp.reduce.async.bulk.global.shared::cta.bulk_group.<op>{.noftz}.<type>
  // Prefetches to the L2: no effect on the program's values; the tensor form checks its map.
  TmaPrefetch,  // cp.async.bulk.prefetch.tensor.Nd.L2.global{.tile} [map, {c..}]
  // Ampere cp.async (the runtime's tma.cpp): o[3] is src-size (cmp 1) or ignore-src (cmp 2).
  CpAsync,          // cp.async.{ca,cg}.shared{::cta}.global [dst], [src], cp-size{, src-size}
  CpAsyncCommit,    // cp.async.commit_group
  CpAsyncWait,      // cp.async.wait_group N (o[0]); wait_all: uni
  CpAsyncMbarArrive,  // cp.async.mbarrier.arrive{.noinc}.shared{::cta}.b64 [bar]: uni = .noinc
  // Bit and integer operations without a state of their own:
  Prmt,      // prmt.b32{.mode} d, a, b, c: cmp = the mode (0 generic, 1 f4e .. 6 rc16)
  Shf,       // shf.{l,r}.{wrap,clamp}.b32 d, a, b, c: cmp bit 0 = .r, bit 1 = .clamp
  Dp4a,      // dp4a.atype.btype d, a, b, c: ty = atype, ty2 = btype
  Dp2a,      // dp2a.{lo,hi}.atype.btype d, a, b, c: uni = .hi
  Mul24,     // mul24.{lo,hi}.{u32,s32}: uni = .hi
  Mad24,     // mad24.{lo,hi}.{u32,s32}: uni = .hi
  Copysign,  // copysign.{f32,f64} d, a, b: b with the sign of a
  Testp,     // testp.<op>.{f32,f64} p, a: cmp = the test (ptx::Testp order in interp.cpp)
  Slct,      // slct{.ftz}.dtype.{s32,f32} d, a, b, c: ty2 = c's type
  Isspacep,  // isspacep.<space> p, a: space; uni = shared::cluster, read_only = param
  Nanosleep,  // nanosleep.u32 t: yields to the scheduler
  Redux,     // redux.sync.<op>.<type> d, a, membermask: cmp = ptx::Redux
  Match,     // match.{any,all}.sync.{b32,b64} d{|p}, a, membermask: uni = .all
};

// The scopes of the PTX memory model, narrowest first (Ins::scope); None: not named.
enum Scope : uint8_t {
  kScopeNone = 0,
  kScopeCta = 1,
  kScopeCluster = 2,
  kScopeGpu = 3,
  kScopeSys = 4
};

struct Ins {
  Op op = Op::Unsupported;
  Ty ty = Ty::None;   // the instruction's type (cvt: the destination's)
  Ty ty2 = Ty::None;  // cvt: the source's; mul.wide/mad.wide: the sources'
  Space space = Space::Generic;
  uint8_t cmp = 0;      // setp's comparison; shfl/vote's mode; atom's operation; setmaxnreg.inc
  uint8_t bool_op = 0;  // setp.<cmp>.<and|or|xor>: 1 and, 2 or, 3 xor
  uint8_t vec = 1;      // ld/st .v2/.v4
  uint8_t nops = 0;
  bool ftz = false, sat = false, uni = false, read_only = false;
  uint8_t rnd = 0;  // cvt: 0 none, 1 rn/rni, 2 rz/rzi, 3 rm/rmi, 4 rp/rpi; int rounding if `irnd`
  bool irnd = false;
  // The memory-model scope the instruction names (Scope), and whether it releases the executing
  // thread's earlier writes at that scope: an mbarrier arrive or barrier.cluster.arrive that is not
  // .relaxed, a fence (not a proxy fence), st .release, atom/red .release or .acq_rel. An mbarrier
  // arrive that names no scope is .cta (PTX ISA: `.release.cta` by default).
  uint8_t scope = 0;
  bool release = false;
  int rank = 0;  // cp.async.bulk.tensor: dimensions
  uint32_t guard = kNone;
  bool guard_neg = false;
  uint32_t target = kNone;  // bra: instruction index
  uint32_t loc = 0;         // Module::locs
  Operand o[8];
};

struct Var {  // a declared variable of a state space (module scope or a function's)
  std::string name;
  Space space = Space::Global;
  uint32_t align = 1, bytes = 0, elem = 1;
  bool dynamic = false;  // `.extern .shared ... name[]`: the launch's dynamic shared memory
  std::vector<uint8_t> init;
  uint32_t param_offset = 0;  // Space::Param: offset in the launch's parameter buffer
  uint32_t local_offset = 0;  // Space::Local: offset in the thread's local frame
  // A `.param` declared in a function's body: a call's argument or return value, in the calling
  // frame's own buffer at param_offset.
  bool call_param = false;
};

struct Loc {  // a .loc: file (index into Module::files once resolved), line, and its inlining
  int file_no = 0;
  int line = 0;
  int parent = -1;  // the .loc it was inlined at
  const char *file = "?";
};

struct Function {
  std::string name;
  bool entry = false;
  std::vector<uint32_t> params;  // Var ids, in order
  uint32_t param_bytes = 0;
  uint32_t nregs = 0;
  uint32_t local_bytes = 0;
  uint32_t call_param_bytes = 0;  // the body's `.param` declarations (Var::call_param)
  uint32_t nrets = 0;             // a .func's return parameters: the first nrets of params
  std::vector<Ins> code;
  std::vector<Operand> vec;       // vector operands' elements
  std::vector<std::string> text;  // each instruction's text, for messages
  std::vector<uint32_t> syms;     // the variables it names (Var ids), each once
  // `.reqnctapercluster x, y, z` (__cluster_dims__): the CTAs of its clusters; 0 when not given.
  // `.explicitcluster`: it must be launched with cluster dimensions.
  uint32_t cluster_dims[3] = {0, 0, 0};
  bool explicit_cluster = false;
  // The first instruction the interpreter does not implement (index), or kNone.
  uint32_t unsupported = kNone;
  std::string unsupported_why;
};

struct Module {
  std::vector<Var> vars;  // every symbol, module scope and functions' (ids are indices)
  std::vector<Function> funcs;
  std::unordered_map<std::string, uint32_t> func_by_name;
  std::vector<Loc> locs;
  std::map<int, std::string> file_names;
  std::deque<std::string> file_store;  // stable c_str() for SrcLoc
  // Module-scope .global/.const variables: their storage, allocated at load (emuMalloc).
  std::vector<uint8_t *> var_storage;
  const Function *find(const std::string &name) const {
    auto it = func_by_name.find(name);
    return it == func_by_name.end() ? nullptr : &funcs[it->second];
  }
  SrcLoc srcLoc(uint32_t loc) const {
    const Loc &l = locs[loc];
    return SrcLoc{l.file, l.line};
  }
  std::string where(uint32_t loc) const;  // "file.cu:123"
};

// Parses PTX text. On failure returns false and *err is one sentence naming the line.
bool parseModule(const std::string &text, Module *m, std::string *err);

// Runs the current emulated thread (inside wsemu::launch) through `fn` with the launch's
// parameter buffer.
void runThread(const Module &m, const Function &fn, const uint8_t *params, size_t param_bytes);

// What device printf (vprintf) wrote since the last call, in the order the threads ran: the host
// library writes it out at the host's next synchronizing call, as the GPU does.
std::string takeDevicePrintf();

}  // namespace wsemu::ptxe
