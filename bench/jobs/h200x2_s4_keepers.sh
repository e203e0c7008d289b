#!/usr/bin/env bash
# Session 4 (issue 8): the same campaign as session 3's scaling job (the attention kernel's
# mutants, every injector, repeat 3, -j 32), on a warm build cache, with and without the GPU
# keepers (oracle/keeper.h: an idle process per GPU holding a context open), on 1 and 2 GPUs.
# Each campaign is capped at CAP seconds (timeout -s INT: the count judged so far is what counts).
# Logs: $OUT/s4_keepers.log (+ every campaign's log in s4_keepers.tgz with its database).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
CAP=${CAP:-100}
K=kernels/ws_attention_sm90.cu
W=/tmp/s4k; rm -rf $W; mkdir -p $W
run() {  # name gpus extra...
  local name=$1 gpus=$2; shift 2
  local t0=$(date +%s.%N)
  timeout -s INT $CAP wsfuzz --kernels $K --injectors all --repeat 3 -j 32 --gpus $gpus --timeout 10 --db $W/$name.sqlite \
    --corpus "" --no-sanitizer "$@" > $W/$name.log 2>&1
  local rc=$? t1=$(date +%s.%N)
  local n=$(grep -c '^wsfuzz: \[' $W/$name.log)
  awk -v n=$n -v a=$t0 -v b=$t1 -v name=$name -v rc=$rc -v extra="$*" 'BEGIN{w=b-a; printf "%-10s %-14s rc=%d judged=%d wall_s=%.1f per_min=%.1f\n", name, extra, rc, n, w, n*60/w}'
  grep -E "keepers" $W/$name.log | head -1 | sed 's/^/    /'
}
{
echo "== s4_keepers $(date -u +%FT%TZ) $K cap=${CAP}s"
run cold2 2                       # fills the build cache (not counted)
run warm1 1 --no-keepers
run warm1k 1
run warm2k 2
run warm2 2 --no-keepers
} 2>&1 | tee "$OUT/s4_keepers.log"
tar -C $W -czf "$OUT/s4_keepers.tgz" .
