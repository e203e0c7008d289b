#!/usr/bin/env bash
# The outside corpus (corpus/outside/) built with plain nvcc and run as its authors would, with no
# tool of ours in between: the ground truth the oracle's verdicts are checked against.
#   bash bench/jobs/outside_corpus_plain.sh [RUNS]   (on the GPU machine; writes $OUT/summary.tsv)
# PROGRAMS: the programs to run, by stem (default: every .cu of corpus/outside/).
set -uo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-5}
OUT=${OUT:-/tmp/outside-out}
mkdir -p "$OUT" /tmp/outside-bin
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1
FILES=$(for n in ${PROGRAMS:-$(basename -s .cu corpus/outside/*.cu)}; do echo corpus/outside/$n.cu; done)
for f in $FILES; do
  n=$(basename "$f" .cu)
  ( "$NVCC" -std=c++17 -O2 -arch=sm_90a -lineinfo -o "/tmp/outside-bin/$n" "$f" -lcuda \
      > "/tmp/outside-bin/$n.build.log" 2>&1; echo $? > "/tmp/outside-bin/$n.build.rc" ) &
done
wait
printf 'program\tbuild\trun\texit\twall_s\tlast_line\n' > "$OUT/summary.tsv"
for f in $FILES; do
  n=$(basename "$f" .cu)
  rc=$(cat "/tmp/outside-bin/$n.build.rc")
  if [ "$rc" != 0 ]; then
    printf '%s\tfail\t-\t-\t-\t%s\n' "$n" "$(tail -1 /tmp/outside-bin/$n.build.log)" >> "$OUT/summary.tsv"
    continue
  fi
  for i in $(seq 1 "$RUNS"); do
    t0=$(date +%s.%N)
    timeout -s KILL 30 "/tmp/outside-bin/$n" > "/tmp/outside-bin/$n.$i.log" 2>&1
    e=$?
    t1=$(date +%s.%N)
    last=$(grep -v '^\s*$' "/tmp/outside-bin/$n.$i.log" | tail -1 | tr '\t' ' ' | cut -c1-160)
    printf '%s\tok\t%d\t%d\t%s\t%s\n' "$n" "$i" "$e" "$(awk "BEGIN{printf \"%.2f\", $t1 - $t0}")" \
      "$last" >> "$OUT/summary.tsv"
  done
done
tar -C /tmp/outside-bin -czf "$OUT/logs.tgz" .
cat "$OUT/summary.tsv"
