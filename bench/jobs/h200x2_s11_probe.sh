#!/usr/bin/env bash
# Session 11, on nvidia-h200-x2 through scripts/device-run.sh.
#  S (issue 4): bench/probes/smem_base.cu: where dynamic shared memory starts in the shared window.
#  P (issue 8): bench/probes/ctx_start.cu started N times one after the other on GPU 0 alone, then
#    on GPU 0 and GPU 1 at once, under four settings: default; CUDA_DEVICE_MAX_CONNECTIONS=1 (fewer
#    hardware queues per context); keepers (a process holding a context on each GPU, what wsfuzz
#    starts); MPS (a control daemon of our own, its pipes under /tmp, quit at the end).
#  R (issue 4, optional, REDUCE=1): the GEMM hang and the README's demo, one per half of the
#    machine, as session 10's job did, with session 10's fixes (h200x2_s6_reduce.sh).
# Logs: $OUT/s11_probe.log (+ s11_probe_runs.txt), $OUT/s6_reduce_s11.log and .tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
N=${N:-12}
P=/tmp/p11; rm -rf $P; mkdir -p $P
nvcc -O2 -arch=sm_90a -o $P/ctx_start bench/probes/ctx_start.cu
nvcc -O2 -arch=sm_90a -o $P/smem_base bench/probes/smem_base.cu
loop() {  # gpu tag
  for i in $(seq $N); do
    local t=$(date +%s%N)
    local o=$(CUDA_VISIBLE_DEVICES=$1 $P/ctx_start)
    echo "$2 gpu=$1 wall_ms=$(( ($(date +%s%N) - t) / 1000000 )) $o"
  done
}
med() {  # tag field: the median of field (wall_ms=3, ctx_ms=4) over the tag's lines
  local v n
  v=$(awk -v t="$1" -v f="$2" '$1==t {split($f,a,"="); print a[2]}' $P/all.txt | sort -n); n=$(echo "$v" | grep -c .)
  echo "$v" | sed -n "$(( (n+1)/2 ))p"
}
setting() {  # name
  loop 0 $1-warm > /dev/null
  loop 0 $1-alone >> $P/all.txt
  loop 0 $1-pair0 > $P/p0.txt & loop 1 $1-pair1 > $P/p1.txt & wait
  cat $P/p0.txt $P/p1.txt >> $P/all.txt
  for t in alone pair0 pair1; do echo "$1-$t: median wall $(med $1-$t 3) ms, median context $(med $1-$t 4) ms"; done
}
{
echo "== s11_probe $(date -u +%FT%TZ) N=$N"
nvidia-smi --query-gpu=index,name,persistence_mode,compute_mode,driver_version --format=csv,noheader
echo "== S: dynamic shared memory base"
$P/smem_base
echo "== P: context creation"
: > $P/all.txt
setting default
CUDA_DEVICE_MAX_CONNECTIONS=1 setting conn1
CUDA_VISIBLE_DEVICES=0 $P/ctx_start hold > /dev/null & k0=$!
CUDA_VISIBLE_DEVICES=1 $P/ctx_start hold > /dev/null & k1=$!
sleep 2
setting keepers
kill $k0 $k1; wait $k0 $k1 2>/dev/null
if command -v nvidia-cuda-mps-control > /dev/null; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps11/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps11/log
  mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
  nvidia-cuda-mps-control -d && echo "mps daemon started"
  setting mps
  echo quit | nvidia-cuda-mps-control; sleep 1
  tail -5 $CUDA_MPS_LOG_DIRECTORY/control.log 2>/dev/null
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
else
  echo "no nvidia-cuda-mps-control on this machine"
fi
} 2>&1 | tee "$OUT/s11_probe.log"
cp $P/all.txt "$OUT/s11_probe_runs.txt"
if [ "${REDUCE:-0}" = 1 ]; then
  BUDGET=${BUDGET:-300} NAME=s11 HALF0="A:gemm_arrival_count:emu:hang:--budget,250" HALF1="B:pipeline_arrival_count:emu:hang:--budget,250" \
    OUT=$OUT bash bench/jobs/h200x2_s6_reduce.sh > /dev/null 2>&1
  grep -E "^(==|RESULT)|verdict:|signature:" "$OUT/s6_reduce_s11.log" | head -40
fi
