#!/usr/bin/env bash
# CUTLASS's example 48 built for plain sm_90 with the sm_90a feature macro forced
# (-D__CUDA_ARCH_FEAT_SM90_ALL, as a user who wants the Hopper path without the `a` target
# might): ptxas refuses setmaxnreg and wgmma. wsreduce flattens it and reduces the compile error
# under a budget. Needs scripts/setup.sh's CUTLASS tree and a built wsreduce.
#   bash bench/cpu/reduce_cutlass.sh [OUT_DIR] [BUDGET_S]      (default budget 780 s)
set -euo pipefail
cd "$(dirname "$0")/../.."
C=$PWD/build/third_party/cutlass-4.2.0.0
OUT=${1:-$(mktemp -d)}
BUDGET=${2:-780}
mkdir -p "$OUT"
cp "$C/examples/48_hopper_warp_specialized_gemm/48_hopper_warp_specialized_gemm.cu" "$OUT/ex48.cu"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
cd "$OUT"
/usr/bin/time -f "wall %e s, peak %M KiB" "$OLDPWD/build/reducer/wsreduce" ex48.cu \
  --symptom compile-error --arch sm_90 -D__CUDA_ARCH_FEAT_SM90_ALL \
  -I "$C/include" -I "$C/tools/util/include" -I "$C/examples/common" \
  --nvcc-flag=--expt-relaxed-constexpr -j2 --budget "$BUDGET"
echo "result: $(grep -c '[^[:space:]]' ex48.min.cu) non-blank lines; setmaxnreg kept: $(grep -c 'setmaxnreg' ex48.min.cu)"
