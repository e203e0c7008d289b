#!/usr/bin/env bash
# Session 7 (issue 4): first the mbarrier-word probe (bench/probes/mbarrier_word.cu: what the 64-bit
# barrier object holds after init / arrive / expect_tx on sm_90a, for a GPU-side "arrivals" part of
# the hang signature), then session 6's reduction job (h200x2_s6_reduce.sh, same HALF0 / HALF1 /
# BUDGET / NAME variables) on this session's code: emulator signatures with the barrier's arrivals,
# expression passes after the structure fixpoint. Logs: $OUT/s7_probe.log, $OUT/s6_reduce_$NAME.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
{
  echo "== mbarrier word probe $(date -u +%FT%TZ)"
  nvcc -gencode=arch=compute_90a,code=sm_90a -o /tmp/mbarrier_word bench/probes/mbarrier_word.cu && CUDA_VISIBLE_DEVICES=0 /tmp/mbarrier_word
  echo "probe rc=$?"
} 2>&1 | tee "$OUT/s7_probe.log"
bash bench/jobs/h200x2_s6_reduce.sh
