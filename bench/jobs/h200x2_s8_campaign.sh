#!/usr/bin/env bash
# Session 8, call A, on nvidia-h200-x2 (2 GPUs, 32 cores), through scripts/device-run.sh.
#  A. issue 6: the full campaign over the reference kernels (kernels/: the three Hopper kernels run,
#     the sm_100a one compiled and checked statically), every injector, 3 repeats, both GPUs, the
#     detected mutants with a new signature into the corpus. Its database and corpus are what
#     call B's and C's --reduce go on from (h200x2_s8_reduce.sh). Cold: it fills the build cache.
#  B. issue 8: tma_pipeline + attention (59 mutants, repeat 3) on the warm cache with the GPU
#     keepers, --gpus 1 then --gpus 2, fresh databases, nvidia-smi dmon per GPU: mutants per
#     minute side by side; the verdicts compared (wsfuzz compare).
# Log: $OUT/s8_campaign.log; databases, logs, reports, dmon and the corpus in $OUT/s8_campaign.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
LIMIT_A=${LIMIT_A:-300}
D=/tmp/c8; rm -rf $D; mkdir -p $D
KB=kernels/tma_pipeline_sm90.cu,kernels/ws_attention_sm90.cu
now() { date +%s.%N; }
el() { awk -v a="$(now)" -v b="$1" 'BEGIN{printf "%.1f", a-b}'; }
permin() { awk -v n="$1" -v w="$2" 'BEGIN{r = 0; if (w > 0) r = n * 60 / w; printf "%.1f", r}'; }
dmon() { nvidia-smi dmon -s u -d 1 > "$1" 2>&1 & echo $!; }
util() { awk '!/^#/ && NF>=3 {s[$1]+=$2; c[$1]++} END {for (g in s) printf "    GPU %s mean SM util %.0f%% over %d s\n", g, s[g]/c[g], c[g]}' "$1"; }
{
echo "== s8_campaign $(date -u +%FT%TZ) cores=$(nproc)"
nvidia-smi --query-gpu=index,name --format=csv,noheader

echo "== A. full campaign: kernels/, all injectors, repeat 3, -j 32, --gpus 2 (limit ${LIMIT_A}s, resumable)"
t=$(now); P=$(dmon $D/dmon_A.txt)
timeout -s INT $LIMIT_A wsfuzz --kernels kernels/ --injectors all --repeat 3 -j 32 --gpus 2 --timeout 10 \
  --db $D/full.sqlite --corpus $D/corpus --no-sanitizer > $D/A.log 2>&1
echo "A rc=$? wall_s=$(el $t)"; kill $P 2>/dev/null
grep -E "planned|baseline|stopped|done" $D/A.log | tail -12
wsfuzz report $D/full.sqlite -o $D/A-report >/dev/null 2>&1
sed -n '/## Summary/,/## Detection per kernel/p' $D/A-report.md | head -40

echo "== B. tma_pipeline + attention, warm cache, keepers: --gpus 1 vs --gpus 2 (repeat 3, fresh databases)"
for g in 1 2; do
  t=$(now); P=$(dmon $D/dmon_B$g.txt)
  timeout -s INT 200 wsfuzz --kernels $KB --injectors all --repeat 3 -j 32 --gpus $g --timeout 10 \
    --db $D/B$g.sqlite --corpus "" --no-sanitizer > $D/B$g.log 2>&1
  rc=$?; w=$(el $t); kill $P 2>/dev/null
  n=$(grep -c '^wsfuzz: \[' $D/B$g.log)
  echo "B gpus=$g rc=$rc judged=$n wall_s=$w per_min=$(permin $n $w)"
  grep -E "keepers" $D/B$g.log | head -1 | sed 's/^/    /'
  util $D/dmon_B$g.txt
done
wsfuzz compare $D/B1.sqlite $D/B2.sqlite --labels 1gpu,2gpus -o $D/B1_vs_B2.md >/dev/null 2>&1
grep -iE "same class|same detail" $D/B1_vs_B2.md | head -3
echo "== done $(date -u +%FT%TZ)"
} 2>&1 | tee "$OUT/s8_campaign.log"
tar -C $D -czf "$OUT/s8_campaign.tgz" $(cd $D && ls -d *.sqlite *.log *.md *.html dmon_*.txt corpus 2>/dev/null)
