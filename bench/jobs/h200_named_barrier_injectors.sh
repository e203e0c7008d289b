#!/usr/bin/env bash
# On the GPU machine (scripts/device-run.sh): the named-barrier injectors' mutants of the three
# sm_90a reference kernels judged on the GPU (wsfuzz, 3 runs each), for the classes their
# injectors.def rows expect. Carry .device/wsreduce.txz.
#   bash scripts/device-run.sh bench/jobs/h200_named_barrier_injectors.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
wsfuzz --kernels kernels/tma_pipeline_sm90.cu,kernels/ws_attention_sm90.cu,kernels/ws_gemm_sm90.cu \
  --injectors named-barrier-arrive,named-barrier-id-collision --repeat 3 -j 8 \
  --db $OUT/nb.sqlite --timeout 20 2>&1 | tee $OUT/wsfuzz.log
sqlite3 -separator ' | ' $OUT/nb.sqlite "SELECT m.kernel, m.injector, m.site, v.detail, \
  v.expected_match, substr(v.signature, 1, 120) FROM verdicts v JOIN mutants m USING(hash) \
  ORDER BY m.kernel, m.injector, m.site" 2>&1 | tee $OUT/verdicts.txt
