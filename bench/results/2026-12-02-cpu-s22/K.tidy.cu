#include <cudaTypedefs.h>
#include <cuda_bf16.h>

#include <random>

// ---- wscheck.h (wsreduce's harness header), inlined ----
// wscheck.h — the harness side of the oracle's contract (host-only C++17, no dependencies).
//
// A program checks each output tensor with wscheck::compare(); it prints one line
//
//   WSCHECK name=C rows=512 cols=512 bad=16384 nan=0 max_abs=3.1 max_rel=1
//           badrows=0-127,256-383 badcols=0-511 shape=row-stripe      (one line)
//
// which the oracle's classifier turns into a verdict detail (wrong/row-stripe,
// wrong/nan, wrong/finite-patterned, wrong/scattered) — seed 000, class 3: the shape of
// the error tensor names the cause. The program still decides its own exit status;
// wscheck::exit_code() gives the conventional one (0 if every compare passed, 1 if not).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace wscheck {

struct Result {
  long long bad = 0, nan = 0;
  double max_abs = 0, max_rel = 0;
  long long bad_rows = 0, full_rows = 0, bad_cols = 0;
  std::string shape; // none | nan | row-stripe | finite-patterned | scattered
  bool ok() const { return bad == 0; }
};

namespace detail {
inline int &failures() {
  static int n = 0;
  return n;
}

// "0-127,256-383" from a sorted list of indices; at most `limit` ranges, then "+N".
inline std::string ranges(const std::vector<int> &idx, int limit = 16) {
  std::string s;
  int shown = 0;
  size_t i = 0, total_ranges = 0;
  while (i < idx.size()) {
    size_t j = i;
    while (j + 1 < idx.size() && idx[j + 1] == idx[j] + 1)
      ++j;
    ++total_ranges;
    if (shown < limit) {
      if (!s.empty())
        s += ',';
      s += std::to_string(idx[i]);
      if (j > i)
        s += '-' + std::to_string(idx[j]);
      ++shown;
    }
    i = j + 1;
  }
  if (total_ranges > (size_t)shown)
    s += ",+" + std::to_string(total_ranges - shown);
  return s.empty() ? "-" : s;
}

inline float to_float(float v) { return v; }
inline float to_float(double v) { return (float)v; }
// bf16 / fp16 stored as raw 16-bit patterns: pass a converter, or use compare_as().
} // namespace detail

// Compare `out` against `ref` (row-major rows x cols). An element is bad when it is
// NaN/Inf while the reference is finite, or |out-ref| > atol + rtol*|ref|.
template <class T, class U>
Result compare(const T *out, const U *ref, int rows, int cols, double atol, double rtol,
               const char *name = "C") {
  Result r;
  std::vector<int> row_bad(rows, 0), col_bad(cols, 0);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      double o = (double)detail::to_float(out[(size_t)i * cols + j]);
      double e = (double)detail::to_float(ref[(size_t)i * cols + j]);
      bool isnan = std::isnan(o) || std::isinf(o);
      double err = std::fabs(o - e);
      bool bad = (isnan && std::isfinite(e)) || err > atol + rtol * std::fabs(e);
      if (!bad)
        continue;
      ++r.bad;
      if (isnan)
        ++r.nan;
      else {
        r.max_abs = std::max(r.max_abs, err);
        r.max_rel = std::max(r.max_rel, err / std::max(std::fabs(e), 1e-30));
      }
      ++row_bad[i];
      ++col_bad[j];
    }
  std::vector<int> brows, bcols;
  for (int i = 0; i < rows; ++i)
    if (row_bad[i]) {
      brows.push_back(i);
      if (row_bad[i] * 10 >= cols * 9)
        ++r.full_rows; // >= 90% of the row is wrong
    }
  for (int j = 0; j < cols; ++j)
    if (col_bad[j])
      bcols.push_back(j);
  r.bad_rows = (long long)brows.size();
  r.bad_cols = (long long)bcols.size();

  // The error shape (seed 000, class 3). NaN first: unwritten (poisoned) output or math
  // on garbage. Then whole rows wrong. Then structure: the bad set fills most of the
  // rectangle spanned by its bad rows x bad cols (tiles, periodic columns). Else scattered.
  if (r.bad == 0)
    r.shape = "none";
  else if (r.nan * 2 >= r.bad)
    r.shape = "nan";
  else if (r.full_rows * 10 >= r.bad_rows * 9)
    r.shape = "row-stripe";
  else if ((double)r.bad * 2 >= (double)r.bad_rows * (double)r.bad_cols)
    r.shape = "finite-patterned";
  else
    r.shape = "scattered";

  // A reference of one value everywhere (a zero-filled vector nobody computed) says so: a
  // reduction that deleted the reference's computation still "fails", against nothing.
  bool ref_constant = (long long)rows * cols > 1;
  for (long long i = 1; ref_constant && i < (long long)rows * cols; ++i)
    ref_constant = (double)detail::to_float(ref[i]) == (double)detail::to_float(ref[0]);
  // A wrong output that no longer follows the reference says so: its Pearson correlation with the
  // reference, over the elements finite in both, is under 0.3 in magnitude (it explains less than
  // 9% of the reference's variance; a constant output counts as 0). A GEMM that misses part of K
  // still follows it (about sqrt of the fraction it summed: 0.5 for one wgmma step of four); a
  // kernel reduced to one constant store does not, whatever rows it leaves wrong, and a CPU
  // reduction of gemm_k_loop_short took that way out (session 16). With the bar at 0.1, an H200
  // reduction (session 17) kept one wgmma but stored an eighth of its tile, the rest unwritten
  // shared memory: 0.100 on the emulator, 0.085 on the GPU. Said only for a wrong output and a
  // varying reference.
  std::string corr_text;
  if (r.bad && !ref_constant) {
    double n = 0, so = 0, se = 0, soo = 0, see = 0, soe = 0;
    for (long long i = 0; i < (long long)rows * cols; ++i) {
      double o = (double)detail::to_float(out[i]), e = (double)detail::to_float(ref[i]);
      if (!std::isfinite(o) || !std::isfinite(e))
        continue;
      n += 1;
      so += o;
      se += e;
      soo += o * o;
      see += e * e;
      soe += o * e;
    }
    double vo = soo - so * so / std::max(n, 1.0), ve = see - se * se / std::max(n, 1.0);
    if (n >= 2 && ve > 0) {
      double corr = vo > 0 ? (soe - so * se / n) / std::sqrt(vo * ve) : 0.0;
      char buf[64];
      std::snprintf(buf, sizeof buf, " corr=%.3f%s", corr, std::fabs(corr) < 0.3 ? " out=unrelated" : "");
      corr_text = buf;
    }
  }
  std::printf("WSCHECK name=%s rows=%d cols=%d bad=%lld nan=%lld max_abs=%.6g max_rel=%.6g "
              "badrows=%s badcols=%s shape=%s%s%s\n",
              name, rows, cols, r.bad, r.nan, r.max_abs, r.max_rel,
              detail::ranges(brows).c_str(), detail::ranges(bcols).c_str(), r.shape.c_str(),
              ref_constant ? " ref=constant" : "", corr_text.c_str());
  std::fflush(stdout);
  if (r.bad)
    ++detail::failures();
  return r;
}

// Same, with a converter for storage types the header does not know (bf16, fp16 bits).
template <class T, class U, class Conv>
Result compare_as(const T *out, const U *ref, int rows, int cols, double atol, double rtol,
                  const char *name, Conv conv) {
  std::vector<float> o((size_t)rows * cols), e((size_t)rows * cols);
  for (size_t i = 0; i < o.size(); ++i) {
    o[i] = conv(out[i]);
    e[i] = conv(ref[i]);
  }
  return compare(o.data(), e.data(), rows, cols, atol, rtol, name);
}

// The program cannot run here (e.g. an sm_100a kernel on a Hopper GPU): one WSSKIP line
// and exit status 77, which the oracle reads as infra-error/unsupported, never a verdict.
[[noreturn]] inline void skip(const char *reason) {
  std::printf("WSSKIP %s\n", reason);
  std::fflush(stdout);
  std::exit(77);
}

// 0 when every compare() so far passed, 1 otherwise.
inline int exit_code() { return detail::failures() ? 1 : 0; }

} // namespace wscheck
// ---- end of wscheck.h ----

#define GEMM_M 128
#define GEMM_N 64
#define GEMM_K 64

typedef __nv_bfloat16 bf16;

__device__ void tma_load_2d(void *dst, const CUtensorMap *map, unsigned long *bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"((unsigned int)__cvta_generic_to_shared(dst)), "l"(reinterpret_cast<long>(map)), "r"((unsigned int)__cvta_generic_to_shared(bar)), "r"(0), "r"(0)
      : "memory");
}

__device__ long make_desc_sw128(void *tile) {
  long desc = 0;
  desc |= (__cvta_generic_to_shared(tile) >> 4);
  desc |= (long)(1024 >> 4) << 32;
  desc |= (long)1 << 62;
  return desc;
}

__global__ void ws_gemm_kernel(const __grid_constant__ CUtensorMap tmap_a, const __grid_constant__ CUtensorMap tmap_b,
                               const __grid_constant__ CUtensorMap tmap_c) {
  extern __shared__ char smem_raw[];

  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"((unsigned int)__cvta_generic_to_shared(smem_raw + 40960u)), "r"(1u) : "memory");
  }
  __syncthreads();

  {
    if (threadIdx.x == 0) {
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"((unsigned int)__cvta_generic_to_shared(smem_raw + 40960u)), "r"(24576u) : "memory");
      tma_load_2d(smem_raw, &tmap_a, reinterpret_cast<unsigned long *>(smem_raw + 40960u));
      tma_load_2d(smem_raw + 16384u, &tmap_b, reinterpret_cast<unsigned long *>(smem_raw + 40960u));
    }
    int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
    float acc[64 / 2];

    unsigned done = 0;
    while (!done) {
      asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                   : "=r"(done) : "r"((unsigned int)__cvta_generic_to_shared(smem_raw + 40960u)), "r"(0) : "memory");
    }

    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    {
      float (&d)[64 / 2] = acc;
      asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %34, 0;\n"
                   " wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
                   "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
                   "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31},"
                   " %32, %33, p, 1, 1, 0, 0;\n}\n"
                   : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                     "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                     "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                     "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                   : "l"(make_desc_sw128(smem_raw)), "l"(make_desc_sw128(smem_raw + 16384u)), "r"(0));
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");

    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(0) : "memory");

    for (int j = 0; j < 8; ++j) {
      for (int h = 0; h < 2; ++h) {
        int row = 16 * warp + lane / 4 + 8 * h;
        int col = 8 * j + 2 * (lane % 4);
        *reinterpret_cast<__nv_bfloat162 *>((smem_raw + 24576u) + (row * 128 + (((col / 8) ^ (row % 8)) << 4) + (col % 8) * 2)) =
            __floats2bfloat162_rn(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
      }
    }
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");

    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(reinterpret_cast<long>((&tmap_c))), "r"((unsigned int)__cvta_generic_to_shared(smem_raw + 24576u)), "r"(0), "r"(0)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");

    asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(0) : "memory");
  }
}

struct WsGemmMaps {
  CUtensorMap a, b, c;
};

PFN_cuTensorMapEncodeTiled_v12000 get_encode_tiled() {
  PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;

  void *p = nullptr;
  cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, 0);

  fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);

  return fn;
}

CUtensorMap make_tmap_2d(const void *base, long rows, long cols, unsigned box_rows,
                         unsigned box_cols) {
  CUtensorMap map;
  cuuint64_t dims[]{};
  cuuint64_t strides[]{cols * sizeof(bf16)};
  cuuint32_t box[]{box_cols, box_rows};
  cuuint32_t elem_strides[]{1, 1};
  get_encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(base), dims,
                     strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                     CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return map;
}

WsGemmMaps make_ws_gemm_maps(bf16 *dA, bf16 *dB, bf16 *dC) {
  WsGemmMaps m;
  m.a = make_tmap_2d(dA, GEMM_M, GEMM_K, 128, 64);
  m.b = make_tmap_2d(dB, GEMM_N, GEMM_K, 64, 64);
  m.c = make_tmap_2d(dC, GEMM_M, GEMM_N, 64, 64u);
  return m;
}

void fill_random_bf16(std::mt19937 gen, std::vector<bf16> &bits, std::vector<float> &rounded) {
  std::uniform_real_distribution dist(-1.0f, 1.0f);
  for (size_t i = 0; i < bits.size(); ++i) {
    bits[i] = dist(gen);
    rounded[i] = bits[i];
  }
}

int main() {
  std::mt19937 gen;
  std::vector<bf16> hA(GEMM_M * GEMM_K), hB(GEMM_N * GEMM_K), hC(GEMM_M * GEMM_N);
  std::vector<float> fA(hA.size()), fB(hB.size());
  fill_random_bf16(gen, hA, fA);
  fill_random_bf16(gen, hB, fB);

  bf16 *dA, *dB, *dC;
  cudaMalloc(&dA, hA.size() * sizeof(bf16));
  cudaMalloc(&dB, hB.size() * sizeof(bf16));
  cudaMalloc(&dC, hC.size());
  cudaMemcpy(dA, hA.data(), hA.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(dB, hB.data(), hB.size() * sizeof(bf16), cudaMemcpyHostToDevice);

  WsGemmMaps maps = make_ws_gemm_maps(dA, dB, dC);

  ws_gemm_kernel<<<1, 384, 42000u>>>(maps.a, maps.b, maps.c);

  cudaMemcpy(hC.data(), dC, hC.size(), cudaMemcpyDeviceToHost);

  std::vector<float> fBt((size_t)GEMM_K * GEMM_N), ref((size_t)GEMM_M * GEMM_N, 0.0f), out(hC.size());
  for (int n = 0; n < GEMM_N; ++n)
    for (int k = 0; k < GEMM_K; ++k)
      fBt[(size_t)k * GEMM_N + n] = fB[(size_t)n * GEMM_K + k];
  for (int m = 0; m < GEMM_M; ++m) {
    float *c = &ref[(size_t)m * GEMM_N];
    for (int k = 0; k < GEMM_K; ++k) {
      const float a = fA[(size_t)m * GEMM_K + k];
      const float *b = &fBt[(size_t)k * GEMM_N];
      for (int n = 0; n < GEMM_N; ++n)
        c[n] += a * b[n];
    }
  }
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = __bfloat162float(hC[i]);

  wscheck::compare(out.data(), ref.data(), GEMM_M, GEMM_N, 1e-2, 1e-2, "C");
}
