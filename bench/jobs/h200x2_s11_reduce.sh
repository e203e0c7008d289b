#!/usr/bin/env bash
# Session 11, on nvidia-h200-x2 through scripts/device-run.sh.
#  Q (issue 8): bench/probes/run_phases.cu, N times on GPU 0 alone, then on GPU 0 and GPU 1 at once,
#    with a keeper (a held context) on each GPU as wsfuzz has: which phase of a short CUDA program
#    grows when the other GPU runs the same (prestarted contexts gained 7% on one GPU and nothing on
#    two: bench/results/2026-11-30-h200-session11/b). Raw lines: $OUT/s11_phases.txt.
#  R (issue 4): the GEMM hang and the README's demo, one per half of the machine (16 cores, one GPU),
#    -j16, on the emulator, --budget 250, judged on the GPU after (h200x2_s6_reduce.sh), with
#    session 10's fixes, the reserved shared kilobyte and the halving chain.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
N=${N:-10}
P=/tmp/p11q; rm -rf $P; mkdir -p $P
nvcc -O2 -arch=sm_90a -o $P/run_phases bench/probes/run_phases.cu
loop() {  # gpu tag
  for i in $(seq $N); do
    local t=$(date +%s%N)
    local o=$(CUDA_VISIBLE_DEVICES=$1 timeout 20 $P/run_phases)
    echo "$2 gpu=$1 wall_ms=$(( ($(date +%s%N) - t) / 1000000 )) $o"
  done
}
{
  echo "== s11_phases $(date -u +%FT%TZ) N=$N"
  CUDA_VISIBLE_DEVICES=0 timeout 100 $P/run_phases hold & CUDA_VISIBLE_DEVICES=1 timeout 100 $P/run_phases hold &
  sleep 2
  loop 0 warm > /dev/null
  loop 0 alone
  loop 0 pair0 > $P/p0.txt & a=$!
  loop 1 pair1 > $P/p1.txt & b=$!
  wait $a $b
  cat $P/p0.txt $P/p1.txt
  pkill -f "run_phases hold"
} > "$OUT/s11_phases.txt" 2>&1
tail -4 "$OUT/s11_phases.txt"
BUDGET=${BUDGET:-300} NAME=s11 HALF0="A:gemm_arrival_count:emu:hang:--budget,250" HALF1="B:pipeline_arrival_count:emu:hang:--budget,250" \
  OUT=$OUT bash bench/jobs/h200x2_s6_reduce.sh > /dev/null 2>&1
grep -E "^(==|RESULT)|verdict:|signature:" "$OUT/s6_reduce_s11.log" | head -40
