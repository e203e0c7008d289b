#!/usr/bin/env bash
# Session 7 (issue 8): session 4's keepers job (h200x2_s4_keepers.sh), whose 2-GPU runs did not fit
# in that session's last device call: the attention kernel's campaign (every injector, repeat 3,
# -j 32) filled into the build cache once with 2 GPUs (cold2, not counted), then on the warm cache
# with the GPU keepers on 1 GPU and on 2 GPUs, each capped at CAP seconds (timeout -s INT: the count
# judged so far is what counts), with per-GPU utilisation (nvidia-smi dmon) and the databases kept
# for `wsfuzz compare`. Log: $OUT/s7_keepers.log (+ s7_keepers.tgz).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
CAP=${CAP:-80}
K=kernels/ws_attention_sm90.cu
W=/tmp/s7k; rm -rf $W; mkdir -p $W
run() {  # name gpus extra...
  local name=$1 gpus=$2; shift 2
  nvidia-smi dmon -s u -d 1 > $W/dmon_$name.txt 2>&1 & local P=$!
  local t0=$(date +%s.%N)
  timeout -s INT $CAP wsfuzz --kernels $K --injectors all --repeat 3 -j 32 --gpus $gpus --timeout 10 --db $W/$name.sqlite \
    --corpus "" --no-sanitizer "$@" > $W/$name.log 2>&1
  local rc=$? t1=$(date +%s.%N); kill $P 2>/dev/null
  local n=$(grep -c '^wsfuzz: \[' $W/$name.log)
  awk -v n=$n -v a=$t0 -v b=$t1 -v name=$name -v rc=$rc -v extra="$*" 'BEGIN{w=b-a; printf "%-8s gpus=%s %-14s rc=%d judged=%d wall_s=%.1f per_min=%.1f\n", name, "'$gpus'", extra, rc, n, w, n*60/w}'
  grep -E "keepers" $W/$name.log | head -1 | sed 's/^/    /'
  awk '!/^#/ && NF>=3 {s[$1]+=$2; c[$1]++} END {for (g in s) printf "    GPU %s mean SM util %.0f%% over %d s\n", g, s[g]/c[g], c[g]}' $W/dmon_$name.txt
}
{
echo "== s7_keepers $(date -u +%FT%TZ) $K cap=${CAP}s"
CAP=300 run cold2 2      # fills the build cache (not counted)
run warm1k 1
run warm2k 2
wsfuzz compare $W/warm1k.sqlite $W/warm2k.sqlite --labels 1gpu,2gpus -o $W/warm1k_vs_warm2k.md > /dev/null 2>&1
grep -iE "identical|same class|same detail" $W/warm1k_vs_warm2k.md | head -5
} 2>&1 | tee "$OUT/s7_keepers.log"
tar -C $W -czf "$OUT/s7_keepers.tgz" .
