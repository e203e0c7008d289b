#!/usr/bin/env bash
# On the GPU machine (scripts/device-run.sh): the watchdog with counted named barriers bounded,
# the plain-build confirmation of non-hang verdicts and the device probe's cost, on the outside
# corpus, the project's kernels and corpus; then the outside named-barrier hang reduced on the GPU.
#   bash scripts/device-run.sh bench/jobs/h200_named_barriers.sh [REDUCE_BUDGET_S]
# Writes $OUT/probe.txt, $OUT/oracle.tsv (program, verdict, signature, wall), $OUT/oracle/*.txt,
# $OUT/reduce_rownorm.{log,min.cu,trace.jsonl} and $OUT/reduce_summary.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
BUDGET=${1:-240}
W=/tmp/nbw; rm -rf $W; mkdir -p $W $OUT/oracle
nb() { grep -c '[^[:space:]]' "$1"; }
{
  for i in 1 2 3; do
    s=$(date +%s.%N); nvidia-smi -L > /dev/null; e=$?; t=$(date +%s.%N)
    echo "nvidia-smi -L exit=$e $(awk "BEGIN{printf \"%.3f\", $t - $s}") s"
  done
} 2>&1 | tee $OUT/probe.txt
printf 'program\tverdict\tsignature\twall_s\n' > $OUT/oracle.tsv
for f in corpus/outside/*.cu tests/fixtures/watchdog/named.cu kernels/ws_gemm_sm90.cu \
         kernels/tma_pipeline_sm90.cu kernels/ws_attention_sm90.cu corpus/examples/*.cu; do
  n=$(basename $f .cu)
  d=$W/$n; mkdir -p $d; cp $f $d/
  [ -d "$(dirname $f)/include" ] && cp -r "$(dirname $f)/include" $d/ 2>/dev/null
  s=$(date +%s.%N)
  (cd $d && wsoracle $n.cu --timeout 20 -I "$PWD/kernels" 2>&1) > $OUT/oracle/$n.txt
  t=$(date +%s.%N)
  printf '%s\t%s\t%s\t%s\n' "$n" "$(sed -n 's/^verdict: *//p' $OUT/oracle/$n.txt | head -1)" \
    "$(sed -n 's/^signature: *//p' $OUT/oracle/$n.txt | head -1)" \
    "$(awk "BEGIN{printf \"%.1f\", $t - $s}")" >> $OUT/oracle.tsv
done
cat $OUT/oracle.tsv
R=$W/reduce; mkdir -p $R; cp corpus/outside/rownorm_nb_bug.cu $R/
s=$(date +%s)
(cd $R && wsreduce rownorm_nb_bug.cu --symptom hang -j16 --budget $BUDGET) > $OUT/reduce_rownorm.log 2>&1
rc=$?
t=$(date +%s)
cp $R/rownorm_nb_bug.min.cu $OUT/reduce_rownorm.min.cu 2>/dev/null
cp $R/rownorm_nb_bug.min.trace.jsonl $OUT/reduce_rownorm.trace.jsonl 2>/dev/null
{
  echo "rc=$rc wall_s=$((t - s)) lines $(nb corpus/outside/rownorm_nb_bug.cu) -> $(nb $R/rownorm_nb_bug.min.cu 2>/dev/null || echo ?) (wsreduce rownorm_nb_bug.cu --symptom hang -j16 --budget $BUDGET)"
  grep -E "original verdict|signature" $OUT/reduce_rownorm.log | head -3
  echo "== the result on the GPU"
  (cd $R && wsoracle rownorm_nb_bug.min.cu --timeout 20 2>&1 | grep -E "^(verdict|signature):|named barrier")
  echo "== the bug's construct in the result"
  grep -n -E "bar\.(sync|arrive)|kEpilogueThreads|\+ *32" $R/rownorm_nb_bug.min.cu | head
} 2>&1 | tee $OUT/reduce_summary.txt
