// PTX semantics as C++ calls: what the translator turns each inline-asm statement into (the
// operands bound to arguments), and what asm.cpp's small parser dispatches to. Addresses of
// shared memory are 32-bit shared-window addresses (smemAddr), as in the PTX.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>

#include "emu/runtime/core.h"
#include "emu/runtime/device.h"
#include "emu/runtime/numeric.h"

namespace wsemu {

// ---- tensor maps: a CUtensorMap-sized model of cuTensorMapEncodeTiled's arguments ----
enum TmDtype : int {  // numeric values of CUtensorMapDataType
  TM_UINT8 = 0,
  TM_UINT16 = 1,
  TM_UINT32 = 2,
  TM_INT32 = 3,
  TM_UINT64 = 4,
  TM_INT64 = 5,
  TM_FLOAT16 = 6,
  TM_FLOAT32 = 7,
  TM_FLOAT64 = 8,
  TM_BFLOAT16 = 9,
  TM_FLOAT32_FTZ = 10,
  TM_TFLOAT32 = 11,
  TM_TFLOAT32_FTZ = 12
};
enum TmSwizzle : int {
  TM_SWIZZLE_NONE = 0,
  TM_SWIZZLE_32B = 1,
  TM_SWIZZLE_64B = 2,
  TM_SWIZZLE_128B = 3
};
enum TmOobFill : int { TM_OOB_FILL_ZERO = 0, TM_OOB_FILL_NAN = 1 };

struct alignas(64) TensorMap {
  uint32_t magic;
  uint8_t rank, elem_bytes, swizzle, oob_fill;
  uint64_t base;
  uint64_t dims[5];
  uint64_t strides[4];  // bytes between consecutive indices of dims 1..rank-1
  uint32_t box[5];
  uint8_t elem_strides[5];
  uint8_t dtype;  // TmDtype: what a reduction (cp.reduce.async.bulk.tensor) combines
  uint8_t pad_[128 - 4 - 4 - 8 - 40 - 32 - 20 - 5 - 1];
};
static_assert(sizeof(TensorMap) == 128, "a TensorMap stands in for a 128-byte CUtensorMap");
constexpr uint32_t kTensorMapMagic = 0x7e45a9c1u;

// cuTensorMapEncodeTiled, same argument order; returns 0 (CUDA_SUCCESS) or 1 (invalid value).
// The interleave and L2 promotion arguments are accepted and ignored.
int encodeTiled(TensorMap *map, int dtype, uint32_t rank, void *base, const uint64_t *dims,
                const uint64_t *strides, const uint32_t *box, const uint32_t *elem_strides,
                int interleave, int swizzle, int l2_promotion, int oob_fill);

namespace ptx {

// ---- mbarrier (PTX ISA 9.7.13.15): phase, pending arrivals, tx-count ----
void mbarrier_init(uint32_t bar, uint32_t count, SrcLoc loc);
// The translator's count of mbarrier.init sites in functions the program calls (or kernels): a
// use before init then says whether the program has an init that did not run ("init=unrun")
// or none ("init=absent"). Not declared (a hand-written test): neither is said.
bool declareInitSites(int sites);
void mbarrier_inval(uint32_t bar, SrcLoc loc);
uint64_t mbarrier_arrive(uint32_t bar, SrcLoc loc, uint32_t count = 1);  // returns the state token
uint64_t mbarrier_arrive_expect_tx(uint32_t bar, uint32_t tx_bytes, SrcLoc loc);
uint64_t mbarrier_arrive_drop(uint32_t bar, SrcLoc loc, uint32_t count = 1);
void mbarrier_expect_tx(uint32_t bar, uint32_t tx_bytes, SrcLoc loc);
// `dep_known` (here and in mbarrier_arrive_async): what the operation's thread, or the thread that
// issued the copy or the commit behind it, knew of the grids its grid depends on having completed
// (a programmatic dependent launch, pdl.cpp): a wait that sees the phase complete knows it too.
void mbarrier_complete_tx(uint32_t bar, uint32_t tx_bytes, SrcLoc loc, bool dep_known = false);
// An arrival of one by an asynchronous unit (tcgen05.commit's mbarrier::arrive::one), not a
// thread: returns the phase it counted toward.
uint64_t mbarrier_arrive_async(uint32_t bar, SrcLoc loc, bool dep_known = false,
                               const char *who = "tcgen05.commit's arrival");
// The current phase's pending count raised by one, for an arrive-on to come (a cp.async.mbarrier
// .arrive without .noinc): the phase cannot complete before it.
void mbarrier_pending_inc(uint32_t bar, SrcLoc loc, const char *op);
// try_wait: a test_wait that may suspend the thread for a while (PTX: up to a time limit, then
// false). A failed poll returns false; a spin on it parks until the barrier changes.
bool mbarrier_try_wait_parity(uint32_t bar, uint32_t parity, SrcLoc loc);
bool mbarrier_try_wait(uint32_t bar, uint64_t state, SrcLoc loc);
// test_wait never blocks; the second failed poll in a row of an unchanged barrier parks the
// thread until the barrier changes, so a spin on it is a deadlock the scheduler can see.
bool mbarrier_test_wait_parity(uint32_t bar, uint32_t parity, SrcLoc loc);
bool mbarrier_test_wait(uint32_t bar, uint64_t state, SrcLoc loc);

// ---- distributed shared memory: what a remote arrive releases ----
// A thread's store, atom or red into the shared memory of the peer CTA `rank` of its cluster, at
// `loc`; a release of the thread's earlier writes at cluster scope or wider (a fence, an arrive,
// barrier.cluster.arrive), which covers them all; and an mbarrier arrive on a barrier of the peer
// CTA `rank` that releases at `cluster_scope` or only at .cta scope. The arrive is
// ub/remote-arrive-cta-scope when it is .cta-scoped and the thread has an uncovered store into that
// CTA: the peer's threads that acquire the phase are not ordered after it (PTX ISA, memory
// consistency model: a release at .cta scope is not morally strong with a peer CTA's thread).
// An arrive that only follows reads of the peer's data (CUTLASS's ClusterBarrier::arrive(cta_id)
// in a consumer release) has nothing to release there and stays clean.
void dsmem_write(int rank, SrcLoc loc);
void cluster_release();
void remote_arrive(int rank, bool cluster_scope, SrcLoc loc, SrcLoc caller);

// ---- fences: no-ops in a sequentially consistent emulator, recorded ----
// The program's notes, "WSEMU note ..." lines: mbarrier-init-unordered=N (mbarrier operations by a
// thread no CTA barrier had ordered after another thread's init of that barrier).
void printNotes(FILE *f);
void fence(const char *which, SrcLoc loc);  // "mbarrier_init", "proxy.async", "acq_rel.cta", ...
inline void fence_mbarrier_init(SrcLoc loc) { fence("mbarrier_init.release.cluster", loc); }
inline void fence_proxy_async(SrcLoc loc) { fence("proxy.async.shared::cta", loc); }

// ---- named barriers: bar.sync / bar.arrive id, count (0 = every thread of the CTA) ----
void bar_sync(uint32_t id, uint32_t count, SrcLoc loc);
void bar_arrive(uint32_t id, uint32_t count, SrcLoc loc);
inline void syncthreads(SrcLoc loc) { bar_sync(0, 0, loc); }
// ---- barrier.cluster.arrive / barrier.cluster.wait: every non-exited thread of the cluster ----
void cluster_arrive(SrcLoc loc);
void cluster_wait(SrcLoc loc);

// ---- warp collectives: rendezvous over the lanes of `mask` ----
bool elect_sync(uint32_t mask, SrcLoc loc, uint32_t *leader_lane = nullptr);
enum class Shfl { Up, Down, Bfly, Idx };
uint32_t shfl_sync(Shfl mode, uint32_t value, uint32_t b, uint32_t c, uint32_t mask, SrcLoc loc,
                   bool *in_range = nullptr);
// __shfl_sync(mask, v, src, width) and friends
inline uint32_t shfl_idx(uint32_t mask, uint32_t v, int src, int width, SrcLoc loc) {
  return shfl_sync(Shfl::Idx, v, (uint32_t)src, ((32u - width) << 8) | 0x1f, mask, loc);
}
inline uint32_t shfl_down(uint32_t mask, uint32_t v, int delta, int width, SrcLoc loc) {
  return shfl_sync(Shfl::Down, v, (uint32_t)delta, ((32u - width) << 8) | 0x1f, mask, loc);
}
inline uint32_t shfl_up(uint32_t mask, uint32_t v, int delta, int width, SrcLoc loc) {
  return shfl_sync(Shfl::Up, v, (uint32_t)delta, ((32u - width) << 8), mask, loc);
}
inline uint32_t shfl_xor(uint32_t mask, uint32_t v, int lanemask, int width, SrcLoc loc) {
  return shfl_sync(Shfl::Bfly, v, (uint32_t)lanemask, ((32u - width) << 8) | 0x1f, mask, loc);
}
enum class Vote { All, Any, Uni, Ballot };
uint32_t vote_sync(Vote mode, bool pred, uint32_t mask, SrcLoc loc);
void syncwarp(uint32_t mask, SrcLoc loc);
// redux.sync.<op>: the operation over the value of every lane of `mask` (add wraps; min and max
// signed or not as `is_signed` says), the same result in each lane.
enum class Redux { Add, Min, Max, And, Or, Xor };
uint32_t redux_sync(Redux op, bool is_signed, uint32_t value, uint32_t mask, SrcLoc loc);
// match.any.sync: the lanes of `mask` whose value equals this lane's. match.all.sync: `mask` when
// every lane of it holds the same value, else 0; *all says which.
uint32_t match_sync(bool all, uint64_t value, uint32_t mask, SrcLoc loc, bool *all_equal);
// ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.shared.b16 / stmatrix: lane i supplies row i%8 of
// matrix i/8
void ldmatrix(int num, bool trans, uint32_t row_addr, uint32_t *regs, SrcLoc loc);
void stmatrix(int num, bool trans, uint32_t row_addr, const uint32_t *regs, SrcLoc loc);

// ---- warpgroup collectives ----
void setmaxnreg(bool inc, uint32_t regs, SrcLoc loc);

// ---- nanosleep: a backoff in a spin; the thread goes to the back of the run queue ----
void nanosleep(uint32_t ns, SrcLoc loc);

// ---- TMA and bulk copies ----
// At a kernel's entry (the translator adds one call per by-value parameter of class or dependent
// type): where the parameter lies in this thread's frame and whether it is __grid_constant__. A TMA
// reads its tensor map from param, const or global memory only (PTX ISA, cp.async.bulk.tensor);
// without
// __grid_constant__ the address of a parameter is a per-thread local copy, and a map there is UB.
void kernelParam(const void *p, size_t bytes, const char *name, bool grid_constant);
// TMA and bulk stores whose shared source generic stores changed after the last fence.proxy.async
// (they store what the async proxy saw; the exit notes say proxy-unfenced=N).
extern std::atomic<uint64_t> g_proxy_unfenced;
// cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [map, {c0..}],
// [bar]
void tma_load(int rank, uint32_t dst, const TensorMap *map, const int32_t *coords, uint32_t bar,
              SrcLoc loc);
// ....multicast::cluster [dst], [map, {c0..}], [bar], ctaMask: the box to shared offset `dst` of
// every CTA of the cluster that ctaMask names, complete_tx of its bytes on the mbarrier at `bar`
// in each (dst and bar: shared::cta offsets, or shared::cluster addresses whose offset is taken).
void tma_load_multicast(int rank, uint32_t dst, const TensorMap *map, const int32_t *coords,
                        uint32_t bar, uint16_t cta_mask, SrcLoc loc);
// cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster
void bulk_load_multicast(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar,
                         uint16_t cta_mask, SrcLoc loc);
// cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group [map, {c0..}], [src]
void tma_store(int rank, const TensorMap *map, const int32_t *coords, uint32_t src, SrcLoc loc);
void bulk_load(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar, SrcLoc loc);
void bulk_store(void *dst, uint32_t src, uint32_t bytes, SrcLoc loc);
void bulk_commit_group(SrcLoc loc);
void bulk_wait_group(int n, bool read_only, SrcLoc loc);
inline void tma_load_2d(uint32_t dst, const TensorMap *map, uint32_t bar, int32_t c0, int32_t c1,
                        SrcLoc loc) {
  int32_t c[2] = {c0, c1};
  tma_load(2, dst, map, c, bar, loc);
}
inline void tma_store_2d(const TensorMap *map, uint32_t src, int32_t c0, int32_t c1, SrcLoc loc) {
  int32_t c[2] = {c0, c1};
  tma_store(2, map, c, src, loc);
}

// ---- wgmma (m64nNk16 bf16/f16, m64nNk8 tf32; f32 accumulators) ----
enum class WgType { BF16, F16, TF32 };
void wgmma_fence(SrcLoc loc);
void wgmma_commit_group(SrcLoc loc);
void wgmma_wait_group(int n, SrcLoc loc);
// d: N/2 pointers to this thread's accumulator registers (the asm's "+f" operands, in order)
void wgmma_ss(int n, WgType t, float *const *d, uint64_t desc_a, uint64_t desc_b, bool scale_d,
              int imm_scale_a, int imm_scale_b, int tnsp_a, int tnsp_b, SrcLoc loc);
void wgmma_rs(int n, WgType t, float *const *d, const uint32_t *a, uint64_t desc_b, bool scale_d,
              int imm_scale_a, int imm_scale_b, int tnsp_b, SrcLoc loc);
// Contiguous accumulators (float acc[N/2]): the common case.
template <int R>
inline void wgmma_ss(float (&d)[R], WgType t, uint64_t desc_a, uint64_t desc_b, bool scale_d,
                     int tnsp_a, int tnsp_b, SrcLoc loc) {
  float *p[R];
  for (int i = 0; i < R; ++i) p[i] = &d[i];
  wgmma_ss(2 * R, t, p, desc_a, desc_b, scale_d, 1, 1, tnsp_a, tnsp_b, loc);
}
template <int R>
inline void wgmma_rs(float (&d)[R], WgType t, const uint32_t (&a)[4], uint64_t desc_b, bool scale_d,
                     int tnsp_b, SrcLoc loc) {
  float *p[R];
  for (int i = 0; i < R; ++i) p[i] = &d[i];
  wgmma_rs(2 * R, t, p, a, desc_b, scale_d, 1, 1, tnsp_b, loc);
}
// The shared-memory element a descriptor designates: (mn, k) of an operand, transposed = MN-major.
uint32_t wgmma_desc_addr(uint64_t desc, bool mn_major, int elem_bytes, int mn, int k);

// ---- tcgen05 and tensor memory, cta_group::1 (tcgen05.cpp) ----
// Warp collectives (.sync.aligned): every lane of the warp, together. tcgen05_alloc writes the
// allocation's address (lane 0, its first column) to the shared word at `dst`.
void tcgen05_alloc(uint32_t dst, uint32_t ncols, SrcLoc loc);
void tcgen05_dealloc(uint32_t taddr, uint32_t ncols, SrcLoc loc);
void tcgen05_relinquish_alloc_permit(SrcLoc loc);
// One thread's asynchronous D[d_tmem] = A * B (+ D), A and B from shared-memory descriptors, the
// shape and types from the instruction descriptor `idesc`.
enum class TcKind { F16, TF32 };
void tcgen05_mma(TcKind kind, uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc, uint32_t idesc,
                 bool enable_input_d, SrcLoc loc);
// One arrival on the mbarrier at `bar` (of the executing CTA) once every tcgen05.mma and
// tcgen05.cp the thread issued before it has completed.
void tcgen05_commit(uint32_t bar, SrcLoc loc);
// tcgen05.ld.sync.aligned.32x32b.x<num>.b32: lane t of the warp reads tensor-memory lane
// (taddr's lane + t), columns taddr's column .. + num - 1, into *dst[0..num-1] (64-bit register
// slots, zero-extended), at the latest by tcgen05_wait_ld.
void tcgen05_ld_32x32b(int num, uint32_t taddr, uint64_t *const *dst, SrcLoc loc);
void tcgen05_wait_ld(SrcLoc loc);
// tcgen05.st.sync.aligned.<shape>.x<num>{.unpack::16b}.b32 [taddr]{, split}, {regs}: the warp's
// registers into tensor memory (the fragment layouts of the PTX ISA's data-movement shapes; lane
// t's src[0..n-1], n = tcgen05_st_regs). `split`: the .16x32bx2 shape's second half's column
// offset. The writes are asynchronous to the thread: tcgen05_wait_st orders them.
enum class TcShape : uint8_t { S32x32b, S16x64b, S16x128b, S16x256b, S16x32bx2 };
int tcgen05_st_regs(TcShape shape, int num);  // registers per thread; 0: not a valid .num
void tcgen05_st(TcShape shape, int num, bool unpack, uint32_t taddr, uint32_t split,
                const uint32_t *src, SrcLoc loc);
void tcgen05_wait_st(SrcLoc loc);
// tcgen05.cp.cta_group::1.<shape>{.<multicast>} [taddr], s_desc: one thread's asynchronous copy
// of a shared-memory matrix (a tcgen05 shared-memory descriptor, K-major rows of 32-bit words)
// into tensor memory. Ordered as an mma is: it completes in issue order with the thread's mmas,
// and tcgen05_commit tracks it.
enum class TcCpShape : uint8_t {
  S128x256b,
  S4x256b,
  S128x128b,
  S64x128b_02_13,  // .64x128b.warpx2::02_13
  S64x128b_01_23,  // .64x128b.warpx2::01_23
  S32x128b_x4      // .32x128b.warpx4
};
void tcgen05_cp(TcCpShape shape, uint32_t taddr, uint64_t s_desc, SrcLoc loc);
// tcgen05.fence::before_thread_sync (after = false) and ::after_thread_sync.
void tcgen05_fence(bool after, SrcLoc loc);

// ---- programmatic dependent launch (pdl.cpp) ----
// griddepcontrol.launch_dependents (cudaTriggerProgrammaticLaunchCompletion): the CTA lets the
// grid that depends on its grid begin, once every CTA has issued it or exited.
void griddepcontrol_launch_dependents(SrcLoc loc);
// griddepcontrol.wait (cudaGridDependencySynchronize): waits until the grids its grid depends on
// have completed; at once in a grid that depends on none.
void griddepcontrol_wait(SrcLoc loc);

// ---- atomics (emulation is sequential: check, then read-modify-write) ----
enum class Atom { Add, Min, Max, And, Or, Xor, Exch, Inc, Dec };
uint32_t atom_u32(Atom op, uint32_t *p, uint32_t v, SrcLoc loc);
int32_t atom_s32(Atom op, int32_t *p, int32_t v, SrcLoc loc);
float atom_add_f32(float *p, float v, SrcLoc loc);
uint32_t atom_cas_u32(uint32_t *p, uint32_t compare, uint32_t v, SrcLoc loc);
uint64_t atom_add_u64(uint64_t *p, uint64_t v, SrcLoc loc);

// ---- bulk reductions into global memory (tma.cpp): bulk stores that combine ----
// Each element of the destination becomes dst <op> src in the element type (Exch is no reduction);
// as relaxed atomics at .gpu scope (PTX ISA, cp.reduce.async.bulk). They join the thread's bulk
// group as stores do (bulk_commit_group, bulk_wait_group) and read shared memory through the
// async proxy's view.
enum class RedType { U32, S32, U64, S64, F16, BF16, F32, F64 };
// cp.reduce.async.bulk.tensor.Nd.global.shared::cta.<op>.tile.bulk_group [map, {c0..}], [src]:
// the element type is the map's.
void tma_reduce(int rank, const TensorMap *map, const int32_t *coords, uint32_t src, Atom op,
                SrcLoc loc);
// cp.reduce.async.bulk.global.shared::cta.bulk_group.<op>.<type> [dst], [src], bytes
void bulk_reduce(void *dst, uint32_t src, uint32_t bytes, Atom op, RedType type, SrcLoc loc);
// cp.async.bulk.prefetch.tensor.Nd.L2.global: nothing the program sees; its map is checked as a
// TMA load's (space, validity, rank).
void tma_prefetch(int rank, const TensorMap *map, const int32_t *coords, SrcLoc loc);

// ---- Ampere cp.async (tma.cpp): a thread's own asynchronous copies into shared memory ----
// cp.async.{ca,cg}.shared.global [dst], [src], cp_size, src_size: src_size bytes of src, then
// zeros up to cp_size. It lands, by the policy, at issue or as late as the thread's
// cp.async.wait_group / wait_all, or the mbarrier arrive that tracks it, lets it.
void cp_async(uint32_t dst, const void *src, uint32_t cp_size, uint32_t src_size, SrcLoc loc);
void cp_async_commit_group(SrcLoc loc);
// Returns once at most `n` of the thread's most recent committed groups are pending.
void cp_async_wait_group(int n, SrcLoc loc);
// cp.async.wait_all: commit_group, then wait_group 0.
void cp_async_wait_all(SrcLoc loc);
// cp.async.mbarrier.arrive{.noinc}: an arrive-on the barrier once every cp.async the thread issued
// before it has completed. Without .noinc the phase's pending count is raised by one at issue, so
// the arrive-on leaves it as it was; with .noinc it counts as one of the phase's arrivals.
void cp_async_mbarrier_arrive(uint32_t bar, bool noinc, SrcLoc loc);

// ---- an instruction the emulator does not know: infra-error naming it, never a no-op ----
[[noreturn]] void unknown_instruction(const char *instruction, SrcLoc loc);

}  // namespace ptx
}  // namespace wsemu
