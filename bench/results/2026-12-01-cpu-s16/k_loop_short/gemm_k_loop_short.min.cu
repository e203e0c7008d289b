
#include <cuda.h>
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

  std::printf("WSCHECK name=%s rows=%d cols=%d bad=%lld nan=%lld max_abs=%.6g max_rel=%.6g "
              "badrows=%s badcols=%s shape=%s\n",
              name, rows, cols, r.bad, r.nan, r.max_abs, r.max_rel,
              detail::ranges(brows).c_str(), detail::ranges(bcols).c_str(), r.shape.c_str());
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

typedef __nv_bfloat16 bf16;

__global__ void ws_gemm_kernel(const __grid_constant__ CUtensorMap tmap_c) {
  extern __shared__ unsigned char smem_raw[];

  const int warp = (threadIdx.x % 128) / 32, lane = (threadIdx.x);
  int m0, n0;
  int tile{};
  n0 = (tile % 2) * 64;

#pragma unroll
  for (int j = 0; j < 64 / 8; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = 16 * warp + lane / 4 + h;
      const int col = 8 * j + 2 * (lane % 4);
      *reinterpret_cast<__nv_bfloat162 *>((((smem_raw + (0)) + 73728u)) + (row * 128 + ((((col)) ^ (row)) << 4) + (col % 8) * 2)) =
          __floats2bfloat162_rn(1, 1);
    }
  }

  int c0 = (0);
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(reinterpret_cast<unsigned long>(((&tmap_c)))), "r"((static_cast<unsigned>(__cvta_generic_to_shared(((const void *)(((((smem_raw + (0)) + 73728u))))))))), "r"(0), "r"(0)
               : "memory");
}

struct WsGemmMaps {
  CUtensorMap a, b, c;
};

static PFN_cuTensorMapEncodeTiled_v12000 get_encode_tiled() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;

  void *p = nullptr;
  cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, 0);

  fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);

  return fn;
}

static CUtensorMap make_tmap_2d(const void *base, unsigned long rows, unsigned long cols, unsigned box_rows,
                                unsigned box_cols) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {cols};
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  CUresult r = get_encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(base), dims,
                                  strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                  CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return map;
}

static WsGemmMaps make_ws_gemm_maps(bf16 *dC) {
  WsGemmMaps m;
  m.c = make_tmap_2d(dC, 128, 128, 64, 64u);
  return m;
}

int main() {

  std::vector<bf16> hA(128 * 128), hB(128 * 128), hC((size_t)128 * 128);

  bf16 *dA, *dB, *dC;
  cudaMalloc(&dC, hC.size() * sizeof(bf16));

  const WsGemmMaps maps = make_ws_gemm_maps(dC);

  cudaFuncSetAttribute(ws_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)91184u);

  ws_gemm_kernel<<<1, 192, 91184u, (0)>>>(maps.c);

  cudaMemcpy(hC.data(), dC, hC.size(), cudaMemcpyDeviceToHost);

  std::vector<float> fBt(0), ref(128 * 128, 0.0f), out(hC.size());
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = __bfloat162float(hC[i]);

  wscheck::compare(out.data(), ref.data(), 128, 128, 1e-2, 1e-2, "C");
}
