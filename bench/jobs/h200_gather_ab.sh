#!/usr/bin/env bash
# On the GPU machine (scripts/device-run.sh): one outside program reduced twice on the same warm
# machine, without `--gather` (off), then with it (on) (wsreduce -j16, the same budget), each result judged
# again: does letting the chunks beside a winner finish take more per round trip?
#   bash scripts/device-run.sh bench/jobs/h200_gather_ab.sh NAME SYMPTOM BUDGET_S
# FLAGS: more flags for wsoracle and both wsreduce runs (e.g. FLAGS=-lcuda).
# Writes $OUT/ab.tsv (gather, lines, tokens, wall, tests, slot use, final verdict) and
# $OUT/{off,on}/NAME.{log,min.cu}.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
NAME=${1:?NAME}; SYMPTOM=${2:?SYMPTOM}; BUDGET=${3:?BUDGET_S}; FLAGS=${FLAGS:-}
nb() { grep -c '[^[:space:]]' "$1"; }
tokens() { grep -o -E '[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[^[:space:][:alnum:]_]' "$1" | wc -l; }
printf 'gather\tlines\ttokens\twall_s\tsummary\tfinal_signature\n' > $OUT/ab.tsv
orig=$(wsoracle corpus/outside/$NAME.cu --timeout 20 $FLAGS 2>&1 | sed -n 's/^signature: *//p')
echo "original signature: $orig" | tee $OUT/original.txt
for g in off on; do
  W=/tmp/ab-$g; rm -rf $W; mkdir -p $W $OUT/$g; cp corpus/outside/$NAME.cu $W/
  s=$(date +%s)
  (cd $W && wsreduce $NAME.cu --symptom $SYMPTOM -j16 --budget $BUDGET $FLAGS $([ $g = on ] && echo --gather)) > $OUT/$g/$NAME.log 2>&1
  w=$(($(date +%s) - s))
  cp $W/$NAME.min.cu $W/$NAME.min.trace.jsonl $OUT/$g/ 2>/dev/null
  fin=$(cd $W && wsoracle $NAME.min.cu --timeout 20 $FLAGS 2>&1 | sed -n 's/^signature: *//p')
  sum=$(grep -E "tests, .* slots busy" $OUT/$g/$NAME.log | tail -1 | sed 's/^wsreduce: //')
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' $g "$(nb $W/$NAME.min.cu)" "$(tokens $W/$NAME.min.cu)" $w "$sum" "$fin" >> $OUT/ab.tsv
done
cat $OUT/ab.tsv
