#!/usr/bin/env bash
# Issue 4's hand-injected bugs (corpus/examples/), each reduced on this machine with the CPU
# emulator as the judge and the symptom the oracle sees there, -j$J, --budget $BUDGET each:
#   gemm_expect_tx hang, gemm_k_loop_short wrong, pipeline_init_in_role crash; and
#   pipeline_missing_proxy_fence, which the oracle passes (on every emulator timing policy; the
#   H200 passed it in session 2's campaign), so wsreduce must refuse it with that verdict.
# The H200 runs the same cases with --confirm gpu (bench/jobs/h200_s12.sh). Writes $OUT/corpus.log
# and, per case, the reduced program and its report.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=$PWD/build
OUT=${OUT:-$PWD/bench/results/$(date -u +%F)-cpu}/corpus
mkdir -p "$OUT"
J=${J:-2}; BUDGET=${BUDGET:-240}
W=$(mktemp -d /tmp/corpusred.XXXX)
export WSREDUCE_CACHE=$W/cache
nb() { grep -c '[^[:space:]]' "$1"; }
{
echo "== corpus reductions $(date -u +%FT%TZ) at $(git rev-parse --short HEAD), $(nproc) cores, -j$J, budget $BUDGET s, emulator judge"
for spec in gemm_expect_tx:hang gemm_k_loop_short:wrong pipeline_init_in_role:crash pipeline_missing_proxy_fence:wrong; do
  ex=${spec%%:*}; sym=${spec#*:}
  mkdir -p $W/$ex && cp corpus/examples/$ex.cu $W/$ex/
  t=$(date +%s)
  $B/reducer/wsreduce $W/$ex/$ex.cu --symptom $sym --backend emu -j$J --budget $BUDGET > $W/$ex/log 2>&1
  rc=$?
  echo "RESULT $ex --symptom $sym rc=$rc wall_s=$(( $(date +%s) - t )) lines=$(nb corpus/examples/$ex.cu)->$([ -f $W/$ex/$ex.min.cu ] && nb $W/$ex/$ex.min.cu || echo -)"
  grep -E "original verdict|refus|does not show|tests,|budget" $W/$ex/log | sed 's/^/    /'
  [ -f $W/$ex/$ex.min.cu ] && cp $W/$ex/$ex.min.cu $W/$ex/$ex.min.md "$OUT/"
  cp $W/$ex/log "$OUT/$ex.log"
done
} 2>&1 | tee "$OUT/corpus.log"
rm -rf $W
