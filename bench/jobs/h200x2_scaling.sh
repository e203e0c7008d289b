#!/usr/bin/env bash
# Session 3, command 4 (issue 8): one campaign (the attention kernel's mutants, every injector,
# repeat 3) judged with --gpus 2 first (cold: it fills the build cache), then on the warm cache
# with --gpus 1 and --gpus 2 side by side: mutants per minute, per-GPU utilisation (nvidia-smi
# dmon), and the databases for comparing verdicts (wsfuzz compare). Logs go straight to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
K=kernels/ws_attention_sm90.cu
run() {  # name gpus
  nvidia-smi dmon -s u -d 1 > "$OUT/dmon_$1.txt" 2>&1 & local P=$!
  local t0=$(date +%s.%N)
  timeout -s INT 170 wsfuzz --kernels $K --injectors all --repeat 3 -j 32 --gpus $2 --timeout 10 --db "$OUT/$1.sqlite" \
    --corpus "" --no-sanitizer > "$OUT/$1.log" 2>&1
  local rc=$? t1=$(date +%s.%N); kill $P 2>/dev/null
  local n=$(grep -c '^wsfuzz: \[' "$OUT/$1.log")
  awk -v n=$n -v a=$t0 -v b=$t1 -v name=$1 -v rc=$rc 'BEGIN{w=b-a; printf "%s rc=%d judged=%d wall_s=%.1f per_min=%.1f\n", name, rc, n, w, n*60/w}'
  awk '!/^#/ && NF>=3 {s[$1]+=$2; c[$1]++} END {for (g in s) printf "    GPU %s mean SM util %.0f%% over %d s\n", g, s[g]/c[g], c[g]}' "$OUT/dmon_$1.txt"
}
{
echo "== scaling $(date -u +%FT%TZ) $K"
run cold2 2
run warm1 1
run warm2 2
} 2>&1 | tee "$OUT/scaling.log"
