// wscheck.h — the harness side of the oracle's contract (host-only C++17, no dependencies).
//
// A program checks each output tensor with wscheck::compare(); it prints one line
//
//   WSCHECK name=C rows=512 cols=512 bad=16384 nan=0 max_abs=3.1 max_rel=1
//           badrows=0-127,256-383 badcols=0-511 shape=row-stripe      (one line)
//
// which the oracle's classifier turns into a verdict detail (wrong/row-stripe,
// wrong/nan, wrong/finite-patterned, wrong/scattered) — docs/methodology.md, class 3: the shape of
// the error tensor names the cause. The program still decides its own exit status;
// wscheck::exit_code() gives the conventional one (0 if every compare passed, 1 if not).
#pragma once

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
  std::string shape;  // none | nan | row-stripe | finite-patterned | scattered
  bool ok() const { return bad == 0; }
};

namespace detail {
inline int &failures() { static int n = 0; return n; }

// "0-127,256-383" from a sorted list of indices; at most `limit` ranges, then "+N".
inline std::string ranges(const std::vector<int> &idx, int limit = 16) {
  std::string s;
  int shown = 0;
  size_t i = 0, total_ranges = 0;
  while (i < idx.size()) {
    size_t j = i;
    while (j + 1 < idx.size() && idx[j + 1] == idx[j] + 1) ++j;
    ++total_ranges;
    if (shown < limit) {
      if (!s.empty()) s += ',';
      s += std::to_string(idx[i]);
      if (j > i) s += '-' + std::to_string(idx[j]);
      ++shown;
    }
    i = j + 1;
  }
  if (total_ranges > (size_t)shown) s += ",+" + std::to_string(total_ranges - shown);
  return s.empty() ? "-" : s;
}

inline float to_float(float v) { return v; }
inline float to_float(double v) { return (float)v; }
// bf16 / fp16 stored as raw 16-bit patterns: pass a converter, or use compare_as().
}  // namespace detail

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
      if (!bad) continue;
      ++r.bad;
      if (isnan) ++r.nan;
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
      if (row_bad[i] * 10 >= cols * 9) ++r.full_rows;  // >= 90% of the row is wrong
    }
  for (int j = 0; j < cols; ++j)
    if (col_bad[j]) bcols.push_back(j);
  r.bad_rows = (long long)brows.size();
  r.bad_cols = (long long)bcols.size();

  // The error shape (docs/methodology.md, class 3). NaN first: unwritten (poisoned) output or math
  // on garbage. Then whole rows wrong. Then structure: the bad set fills most of the
  // rectangle spanned by its bad rows x bad cols (tiles, periodic columns). Else scattered.
  if (r.bad == 0) r.shape = "none";
  else if (r.nan * 2 >= r.bad) r.shape = "nan";
  else if (r.full_rows * 10 >= r.bad_rows * 9) r.shape = "row-stripe";
  else if ((double)r.bad * 2 >= (double)r.bad_rows * (double)r.bad_cols) r.shape = "finite-patterned";
  else r.shape = "scattered";

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
  // reduction of gemm_k_loop_short took that way out. With the bar at 0.1, an H200
  // reduction kept one wgmma but stored an eighth of its tile, the rest unwritten
  // shared memory: 0.100 on the emulator, 0.085 on the GPU. Said only for a wrong output and a
  // varying reference.
  std::string corr_text;
  if (r.bad && !ref_constant) {
    double n = 0, so = 0, se = 0, soo = 0, see = 0, soe = 0;
    for (long long i = 0; i < (long long)rows * cols; ++i) {
      double o = (double)detail::to_float(out[i]), e = (double)detail::to_float(ref[i]);
      if (!std::isfinite(o) || !std::isfinite(e)) continue;
      n += 1; so += o; se += e; soo += o * o; see += e * e; soe += o * e;
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
  if (r.bad) ++detail::failures();
  return r;
}

// Same, with a converter for storage types the header does not know (bf16, fp16 bits).
template <class T, class U, class Conv>
Result compare_as(const T *out, const U *ref, int rows, int cols, double atol, double rtol,
                  const char *name, Conv conv) {
  std::vector<float> o((size_t)rows * cols), e((size_t)rows * cols);
  for (size_t i = 0; i < o.size(); ++i) { o[i] = conv(out[i]); e[i] = conv(ref[i]); }
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

}  // namespace wscheck
