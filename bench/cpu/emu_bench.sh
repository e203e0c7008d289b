#!/usr/bin/env bash
# Issue 7's benchmark on this machine (2 cores): the emulator backend per candidate against nvcc.
#   1. build per candidate: translate (Clang) + g++ -O1 of the 548-line GEMM vs nvcc -O2 for sm_90a
#      (fresh caches, so both really compile), each 3 times
#   2. a hang verdict for the GEMM with a wrong arrival count, from nothing to the verdict (build included)
#   3. fiber switch cost (the runtime's own measurement, 384 fibers on 64 KB stacks)
#   4. run time of the 512^3 GEMM (16 CTAs x 384 threads) once built
# Writes bench/results/<date>-cpu/emu_bench.log. Run it alone on the machine.
set -uo pipefail
cd "$(dirname "$0")/../.."
R=$PWD; B=$R/build
OUT=${OUT:-$R/bench/results/$(date -u +%F)-cpu}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/emubench.XXXX)
ms() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.0f", (b-a)*1000}'; }
now() { date +%s.%N; }
{
echo "== emu bench $(date -u +%FT%TZ) on $(nproc) cores; $(g++ --version | head -1); $(/usr/local/cuda/bin/nvcc --version | tail -1)"
G=kernels/ws_gemm_sm90.cu
# One cache for the emulator, as in a reduction: its precompiled runtime header is made by the first
# build (reported apart); each timed build is a miss all the same (-DBENCH_RUN=i changes the key).
t=$(now); WSREDUCE_CACHE=$W/e $B/oracle/wsoracle $G --backend emu -DGEMM_M=128 -DGEMM_N=128 -DGEMM_K=64 -DBENCH_RUN=0 > $W/e0.txt 2>&1
echo "FIRST emu build in a fresh cache (includes precompiling the runtime header once): $(ms $t $(now)) ms"
for i in 1 2 3; do
  t=$(now); WSREDUCE_CACHE=$W/e $B/oracle/wsoracle $G --backend emu -DGEMM_M=128 -DGEMM_N=128 -DGEMM_K=64 -DBENCH_RUN=$i > $W/e$i.txt 2>&1; e=$(ms $t $(now))
  t=$(now); /usr/local/cuda/bin/nvcc -std=c++17 -O2 -lineinfo -gencode=arch=compute_90a,code=sm_90a -I oracle/include $G -o $W/n$i > $W/n$i.txt 2>&1; n=$(ms $t $(now))
  echo "BUILD run $i: emu (translate + g++ -O1 + one-tile run) ${e} ms [$(grep -o 'build [0-9]* ms' $W/e$i.txt)]; nvcc -O2 sm_90a ${n} ms"
done
t=$(now); WSREDUCE_CACHE=$W/e $B/oracle/wsoracle corpus/examples/gemm_arrival_count.cu --backend emu -DGEMM_M=128 -DGEMM_N=128 -DGEMM_K=384 > $W/h.txt 2>&1
echo "HANG gemm_arrival_count (K=384, 548 lines), not built before: $(ms $t $(now)) ms -> $(head -1 $W/h.txt | tr -s ' ')"
grep -m1 "WSEMU parked" $W/h.txt | sed 's/^/    /'
echo "FIBER $($B/tests/emu/test_emu --gtest_filter=Fiber.SwitchCostIsReported 2>&1 | grep -i -m1 'ns')"
WSREDUCE_CACHE=$W/g $B/oracle/wsoracle $G --backend emu -DGEMM_M=512 -DGEMM_N=512 -DGEMM_K=512 > $W/g1.txt 2>&1
for i in 1 2 3; do
  WSREDUCE_CACHE=$W/g $B/oracle/wsoracle $G --backend emu -DGEMM_M=512 -DGEMM_N=512 -DGEMM_K=512 > $W/g.txt 2>&1
  echo "GEMM512 run $i: $(head -1 $W/g.txt | tr -s ' '); $(grep timings $W/g.txt | tr -s ' ')"
done
} 2>&1 | tee "$OUT/emu_bench.log"
rm -rf $W
