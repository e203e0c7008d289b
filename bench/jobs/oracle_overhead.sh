#!/usr/bin/env bash
# Oracle overhead per candidate beyond the program's own run time, with a warm build cache,
# and the time from launch to a hang verdict against the timeout (every process gone).
# Usage: bench/jobs/oracle_overhead.sh [N]   (wsoracle on PATH; GPU programs need a GPU)
set -uo pipefail
N=${1:-10}
ms() { echo $(( ($2 - $1) / 1000000 )); }
progs="tests/fixtures/gpu/pass.cu kernels/tma_pipeline_sm90.cu kernels/ws_gemm_sm90.cu"
[ -e /dev/nvidia0 ] || progs="tests/fixtures/cuda/host_stripes.cu"
for p in $progs; do
  c=/tmp/ov-cache-$(basename $p .cu); rm -rf $c
  wsoracle "$p" --cache-dir $c > /dev/null 2>&1         # warms a cache of its own: one program in it
  bin=$(ls $c/build/*/prog | head -1)
  t0=$(date +%s%N); for i in $(seq $N); do "$bin" > /dev/null 2>&1; done; t1=$(date +%s%N)
  for i in $(seq $N); do wsoracle "$p" --cache-dir $c > /dev/null 2>&1; done; t2=$(date +%s%N)
  direct=$(( $(ms $t0 $t1) / N )); oracle=$(( $(ms $t1 $t2) / N ))
  echo "OVERHEAD program=$p runs=$N direct_ms=$direct oracle_ms=$oracle overhead_ms=$((oracle - direct)) overhead_pct=$(( (oracle - direct) * 100 / (direct > 0 ? direct : 1) ))"
done
# A hang: the verdict must come within timeout + 0.5 s, with no process left.
hang=tests/fixtures/gpu/mbarrier_hang.cu
[ -e /dev/nvidia0 ] || hang=""
if [ -n "$hang" ]; then
  wsoracle $hang --timeout 2 > /dev/null 2>&1   # warm cache
  for i in 1 2 3; do
    t0=$(date +%s%N); wsoracle $hang --timeout 2 --json > /tmp/hang.json 2>&1; t1=$(date +%s%N)
    left=$(pgrep -fc "wsreduce/build/.*/prog" || true)
    gpu_procs=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader | wc -l)
    echo "HANG run=$i timeout_s=2 verdict_ms=$(ms $t0 $t1) over_timeout_ms=$(( $(ms $t0 $t1) - 2000 )) leftover_processes=$left gpu_processes=$gpu_procs detail=$(grep -m1 '"detail"' /tmp/hang.json | tr -d ' ,')"
  done
fi
