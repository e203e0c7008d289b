#!/usr/bin/env bash
# CUTLASS's example 48 (the Hopper warp-specialized GEMM) flattened by `wsoracle --flatten-only`:
# the time it takes, the line counts, and nvcc's compile time of the flattened file (toolkit
# headers only) beside the original's (with CUTLASS's -I folders). Needs scripts/setup.sh's
# CUTLASS tree and a built wsoracle. Usage: bash bench/cpu/flatten_cutlass.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
C=$PWD/build/third_party/cutlass-4.2.0.0
EX=$C/examples/48_hopper_warp_specialized_gemm/48_hopper_warp_specialized_gemm.cu
OUT=${1:-$(mktemp -d)}
mkdir -p "$OUT"
NVCC=/usr/local/cuda/bin/nvcc
nonblank() { grep -c '[^[:space:]]' "$1"; }
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
start=$EPOCHREALTIME
build/oracle/wsoracle --flatten-only "$EX" -I "$C/include" -I "$C/tools/util/include" \
  -I "$C/examples/common" -o "$OUT/ex48.flat.cu"
echo "flatten: $(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }') s wall"
echo "original main file: $(wc -l <"$EX") lines, $(nonblank "$EX") non-blank"
echo "flattened:          $(wc -l <"$OUT/ex48.flat.cu") lines, $(nonblank "$OUT/ex48.flat.cu") non-blank, $(stat -c %s "$OUT/ex48.flat.cu") bytes"
echo "inlined headers:    $(grep -c '^// ---- begin ' "$OUT/ex48.flat.cu")"
echo "#include lines left: $(grep -cE '^\s*#\s*include' "$OUT/ex48.flat.cu"), of CUTLASS/CuTe: $(grep -cE '^\s*#\s*include\s*["<](cutlass|cute)/' "$OUT/ex48.flat.cu" || true)"
flags=(-std=c++17 -arch=sm_90a --expt-relaxed-constexpr -c)
/usr/bin/time -f "nvcc flattened (no -I): %e s wall, %M KiB" \
  $NVCC "${flags[@]}" "$OUT/ex48.flat.cu" -o "$OUT/flat.o"
/usr/bin/time -f "nvcc original (3 -I):  %e s wall, %M KiB" \
  $NVCC "${flags[@]}" "$EX" -I "$C/include" -I "$C/tools/util/include" -I "$C/examples/common" \
  -o "$OUT/orig.o"
