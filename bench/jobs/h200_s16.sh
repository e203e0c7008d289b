#!/usr/bin/env bash
# Session 16 (issue 4), on nvidia-h200 through scripts/device-run.sh: the hand-injected corpus bugs
# reduced on the emulator judge, each result confirmed on the GPU (bench/jobs/h200_s12.sh reduce).
#   a: gemm_expect_tx (hang) and pipeline_init_in_role (crash), 200 s each, then the missing proxy
#      fence, which the oracle passes: its GPU runs (--repeat 5), the emulator's policy matrix, and
#      wsreduce's refusal on both judges.
#   b: bench/probes/s16_uninit (which uses of a barrier no init set up fail on the GPU: call a's
#      reduction of pipeline_init_in_role kept one try_wait on it and passed there), then
#      gemm_k_loop_short (wrong/row-stripe), 380 s.
#   c: after the emulator reads an uninitialised barrier as the GPU does and the reducer judges an
#      interesting candidate again with zeroed locals: the probe's parity-1 wait, then
#      pipeline_init_in_role (130 s) and gemm_k_loop_short (280 s) again.
#   d: after a fault is what the host is told (a program that ignores it exits normally, as on
#      the GPU): pipeline_init_in_role again, 110 s (the device time left).
# Logs: $OUT/s16a_reduce.log + s16a_reduce.tgz, $OUT/s16_proxy.log; $OUT/s16b_reduce.log + .tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
proxy() {
  local W=/tmp/s16p; rm -rf $W; mkdir -p $W
  cp corpus/examples/pipeline_missing_proxy_fence.cu $W/
  local f=$W/pipeline_missing_proxy_fence.cu
  echo "== s16 proxy $(date -u +%FT%TZ): wsoracle on the GPU, 5 fresh processes"
  wsoracle $f --timeout 10 --repeat 5 2>&1 | grep -vE "^  (WSWATCH|  )"
  echo "== the emulator, every async timing policy"
  wsoracle $f --backend emu --policy matrix 2>&1 | grep -E "^(verdict|signature|backend|  backend)"
  for b in gpu emu; do
    echo "== wsreduce --symptom wrong --backend $b (the oracle passes it: it must refuse with that verdict)"
    WSREDUCE_CACHE=/tmp/wsr-cache-p wsreduce $f --symptom wrong --backend $b -j16 --timeout 10 --budget 60 > $W/reduce-$b.log 2>&1
    echo "   exit status $?"; tail -4 $W/reduce-$b.log
  done
}
case ${1:-a} in
  a) TAG=s16a HALF0="E:gemm_expect_tx:16:200 I:pipeline_init_in_role:16:200:--symptom,crash" bash bench/jobs/h200_s12.sh reduce
     proxy 2>&1 | tee "$OUT/s16_proxy.log" ;;
  b) bash bench/probes/s16_uninit/run.sh 2>&1 | tee "$OUT/s16_uninit.log"
     echo "== the original pipeline_init_in_role on the GPU" | tee -a "$OUT/s16_uninit.log"
     wsoracle corpus/examples/pipeline_init_in_role.cu --timeout 10 2>&1 | grep -vE "^  WSWATCH" | tee -a "$OUT/s16_uninit.log"
     TAG=s16b HALF0="K:gemm_k_loop_short:16:380:--symptom,wrong" bash bench/jobs/h200_s12.sh reduce ;;
  c) MODES=wait1p1 bash bench/probes/s16_uninit/run.sh 2>&1 | tee "$OUT/s16_uninit_p1.log"
     TAG=s16c HALF0="I:pipeline_init_in_role:16:130:--symptom,crash K:gemm_k_loop_short:16:280:--symptom,wrong" bash bench/jobs/h200_s12.sh reduce ;;
  d) TAG=s16d HALF0="I:pipeline_init_in_role:16:110:--symptom,crash" bash bench/jobs/h200_s12.sh reduce ;;
  proxy) proxy 2>&1 | tee "$OUT/s16_proxy.log" ;;
  *) echo "h200_s16: the mode is a, b, c, d or proxy, not '$1'" >&2; exit 2 ;;
esac
