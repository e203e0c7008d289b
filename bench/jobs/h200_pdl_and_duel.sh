#!/usr/bin/env bash
# On the GPU machine (scripts/device-run.sh), in one call: the outside PDL pair run as its author
# would (plain nvcc, 5 runs each) and judged by wsoracle, then the wsreduce side of the duel on
# the outside named-barrier hang (h200_duel_half.sh). Carry .device/wsreduce.txz.
#   bash scripts/device-run.sh bench/jobs/h200_pdl_and_duel.sh [DUEL_BUDGET_S]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
BUDGET=${1:-256}
mkdir -p $OUT/plain $OUT/oracle
OUT=$OUT/plain PROGRAMS="pdl_chain_ok pdl_chain_bug" bash bench/jobs/outside_corpus_plain.sh 5
for n in pdl_chain_ok pdl_chain_bug; do
  for i in 1 2; do
    wsoracle corpus/outside/$n.cu --timeout 20 > $OUT/oracle/$n.$i.txt 2>&1
    echo "$n $i: $(grep -E '^(verdict|signature):' $OUT/oracle/$n.$i.txt | tr '\n' ' ')"
  done
done | tee $OUT/oracle/summary.txt
bash bench/jobs/h200_duel_half.sh wsreduce rownorm_nb_bug hang $BUDGET
