#!/usr/bin/env bash
# On the GPU machine (scripts/device-run.sh): every program of corpus/outside/ judged by wsoracle
# (GPU backend, watchdog and plain-build confirmation on), then one of them reduced with the
# default command as wsreduce's side of a duel (bench/jobs/h200_duel_half.sh) into $OUT/reduce/.
#   bash scripts/device-run.sh bench/jobs/h200_fidelity.sh [NAME SYMPTOM BUDGET_S [flags...]]
# default: rownorm_nb_bug hang 240. PROGRAMS: the programs to judge (default: those of
# corpus/outside/expected.tsv). PLAIN: programs first run plain, 3 times each, as their authors
# would (bench/jobs/outside_corpus_plain.sh, into $OUT/plain/). SIDE: the duel's side, wsreduce
# (default) or cvise (carry .device/wsoracle.txz and .device/cvise.txz). Writes $OUT/oracle.tsv
# (program, verdict, signature, wall), $OUT/oracle/*.txt and $OUT/reduce/duel-NAME-SIDE/.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
W=/tmp/fid; rm -rf $W; mkdir -p $W $OUT/oracle $OUT/reduce
[ -z "${PLAIN:-}" ] || OUT=$OUT/plain PROGRAMS="$PLAIN" bash bench/jobs/outside_corpus_plain.sh 3
printf 'program\tverdict\tsignature\twall_s\n' > $OUT/oracle.tsv
for n in ${PROGRAMS:-$(awk '!/^#/{sub(/\.cu$/, "", $1); print $1}' corpus/outside/expected.tsv)}; do
  f=corpus/outside/$n.cu
  d=$W/$n; mkdir -p $d; cp $f $d/
  s=$(date +%s.%N)
  (cd $d && wsoracle $n.cu --timeout 20 -l cuda 2>&1) > $OUT/oracle/$n.txt
  t=$(date +%s.%N)
  printf '%s\t%s\t%s\t%s\n' "$n" "$(sed -n 's/^verdict: *//p' $OUT/oracle/$n.txt | head -1)" \
    "$(sed -n 's/^signature: *//p' $OUT/oracle/$n.txt | head -1)" \
    "$(awk "BEGIN{printf \"%.1f\", $t - $s}")" >> $OUT/oracle.tsv
done
cat $OUT/oracle.tsv
[ $# -ge 3 ] || set -- rownorm_nb_bug hang 240
OUT=$OUT/reduce bash bench/jobs/h200_duel_half.sh ${SIDE:-wsreduce} "$@"
