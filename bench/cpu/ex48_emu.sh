#!/usr/bin/env bash
# CUTLASS's example 48 (the Hopper warp-specialized GEMM, clusters of 4x2, multicast TMA, tf32
# wgmma) judged by the CPU emulator's PTX path at a small problem (its own --m/--n/--k), as it
# is and with the TMA pipeline's transaction bytes 16 too high in a CUTLASS header
# (bench/cutlass/inject_tx.sh). Needs scripts/setup.sh's CUTLASS tree and a built wsoracle.
#   bash bench/cpu/ex48_emu.sh [OUT_DIR] [M N K]
# Writes OUT_DIR/{ok,bug}.txt (wsoracle's verdict and timings) and OUT_DIR/ok.out (the
# program's own output, run again from the emulator's build).
set -uo pipefail
cd "$(dirname "$0")/../.."
R=$PWD
C=$R/build/third_party/cutlass-4.2.0.0
EX=$C/examples/48_hopper_warp_specialized_gemm/48_hopper_warp_specialized_gemm.cu
OUT=${1:-$(mktemp -d)}; M=${2:-256}; N=${3:-256}; K=${4:-128}
mkdir -p "$OUT"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export WSREDUCE_CACHE=$T/cache
bash bench/cutlass/inject_tx.sh "$C/include" "$T/bug-include" || exit 1
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/machine.txt"
for side in ok bug; do
  mkdir -p "$T/$side" && cp "$EX" "$T/$side/ex48.cu"
  inc=$C/include; [ $side = bug ] && inc=$T/bug-include
  (cd "$T/$side" && "$R/build/oracle/wsoracle" ex48.cu --backend emu -I"$inc" \
     -I"$C/tools/util/include" -I"$C/examples/common" --nvcc-flag=--expt-relaxed-constexpr \
     --timeout 900 -- --m=$M --n=$N --k=$K --iterations=0) > "$OUT/$side.txt" 2>&1
  grep -E "^(verdict|signature|timings)" "$OUT/$side.txt"
done
# The program's own report of the unmodified run (its "Disposition" line).
prog=$(ls -t "$WSREDUCE_CACHE"/emu/ptx-*/prog | tail -1)
[ -n "$prog" ] && "$prog" --m=$M --n=$N --k=$K --iterations=0 > "$OUT/ok.out" 2>&1
grep -i disposition "$OUT/ok.out"
