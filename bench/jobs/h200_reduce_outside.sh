#!/usr/bin/env bash
# On the GPU machine (scripts/device-run.sh): one program of corpus/outside/ reduced with the
# default command, its result judged again on the GPU.
#   bash scripts/device-run.sh bench/jobs/h200_reduce_outside.sh NAME SYMPTOM [BUDGET_S] [flags...]
# e.g. rownorm_nb_bug hang 240. Writes $OUT/NAME.{log,min.cu,trace.jsonl.gz} and $OUT/summary.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
NAME=${1:?NAME}; SYMPTOM=${2:?SYMPTOM}; BUDGET=${3:-240}; shift 3 || shift $#
W=/tmp/ro; rm -rf $W; mkdir -p $W; cp corpus/outside/$NAME.cu $W/
nb() { grep -c '[^[:space:]]' "$1"; }
tokens() { grep -o -E '[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[^[:space:][:alnum:]_]' "$1" | wc -l; }
s=$(date +%s)
(cd $W && wsreduce $NAME.cu --symptom $SYMPTOM -j16 --budget $BUDGET "$@") > $OUT/$NAME.log 2>&1
rc=$?
t=$(date +%s)
cp $W/$NAME.min.cu $OUT/ 2>/dev/null
gzip -c $W/$NAME.min.trace.jsonl > $OUT/$NAME.trace.jsonl.gz 2>/dev/null
{
  echo "rc=$rc wall_s=$((t - s)) lines $(nb corpus/outside/$NAME.cu) -> $(nb $W/$NAME.min.cu) tokens $(tokens corpus/outside/$NAME.cu) -> $(tokens $W/$NAME.min.cu) (wsreduce $NAME.cu --symptom $SYMPTOM -j16 --budget $BUDGET $*)"
  grep -E "original verdict|candidates spread|slots busy|tests," $OUT/$NAME.log | tail -4
  echo "== the result on the GPU"
  (cd $W && wsoracle $NAME.min.cu --timeout 20 "$@" 2>&1 | grep -E "^(verdict|signature):")
} 2>&1 | tee $OUT/summary.txt
