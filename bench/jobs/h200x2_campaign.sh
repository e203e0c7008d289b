#!/usr/bin/env bash
# Session 3, command 1, on nvidia-h200-x2 (2 GPUs, 32 cores). Run through scripts/device-run.sh.
#  A. issue 6: the full campaign over the three Hopper kernels, every injector, 3 repeats,
#     watchdog on, timeouts calibrated from each kernel's baseline, both GPUs (--gpus 2).
#  B. issue 8: the tma_pipeline part again on a warm build cache, --gpus 1 then --gpus 2, into
#     fresh databases, with nvidia-smi dmon logging each GPU's utilisation: candidates per minute
#     side by side; the verdicts are compared afterwards (the databases come back).
#  C. issue 8: a hang held on GPU 0 for 60 s (no watchdog) while a campaign judges on GPU 1 only.
# Everything comes back in $OUT/campaign3.tgz; the log is $OUT/campaign3.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
BUDGET_A=${BUDGET_A:-330}
D=/tmp/c3; rm -rf $D; mkdir -p $D
K3=kernels/tma_pipeline_sm90.cu,kernels/ws_gemm_sm90.cu,kernels/ws_attention_sm90.cu
now() { date +%s.%N; }
el() { awk -v a="$(now)" -v b="$1" 'BEGIN{printf "%.1f", a-b}'; }
permin() { awk -v n="$1" -v w="$2" 'BEGIN{printf "%.1f", w>0 ? n*60/w : 0}'; }
dmon() { nvidia-smi dmon -s u -d 1 > "$1" 2>&1 & echo $!; }
{
echo "== campaign3 $(date -u +%FT%TZ) cores=$(nproc)"
nvidia-smi --query-gpu=index,name --format=csv,noheader

echo "== A. full campaign: 3 kernels, all injectors, repeat 3, -j 32, --gpus 2 (budget ${BUDGET_A}s, resumable)"
t=$(now); P=$(dmon $D/dmon_A.txt)
timeout -s INT $BUDGET_A wsfuzz --kernels $K3 --injectors all --repeat 3 -j 32 --gpus 2 --timeout 10 \
  --db $D/A.sqlite --corpus $D/corpus --no-sanitizer > $D/A.log 2>&1
echo "A rc=$? wall_s=$(el $t)"; kill $P 2>/dev/null
grep -E "planned|baseline|stopped|judged" $D/A.log | tail -8
wsfuzz report $D/A.sqlite -o $D/A-report >/dev/null 2>&1; sed -n '/## Summary/,/## Detection per kernel/p' $D/A-report.md | head -60

echo "== B. tma_pipeline, warm cache: --gpus 1 vs --gpus 2 (repeat 3, fresh databases)"
for g in 1 2; do
  t=$(now); P=$(dmon $D/dmon_B$g.txt)
  timeout -s INT 150 wsfuzz --kernels kernels/tma_pipeline_sm90.cu --injectors all --repeat 3 -j 32 --gpus $g --timeout 10 \
    --db $D/B$g.sqlite --corpus "" --no-sanitizer > $D/B$g.log 2>&1
  rc=$?; w=$(el $t); kill $P 2>/dev/null
  n=$(grep -c '^wsfuzz: \[' $D/B$g.log)
  echo "B gpus=$g rc=$rc judged=$n wall_s=$w per_min=$(permin $n $w)"
  awk '!/^#/ && NF>=3 {s[$1]+=$2; c[$1]++} END {for (g in s) printf "    GPU %s mean SM util %.0f%% over %d s\n", g, s[g]/c[g], c[g]}' $D/dmon_B$g.txt
done

echo "== C. a hang on GPU 0 (60 s, no watchdog) while a campaign judges on GPU 1"
H=$(ls $D/corpus/tma_pipeline_sm90/arrival-count/*.cu 2>/dev/null | head -1)
[ -z "$H" ] && H=corpus/examples/gemm_arrival_count.cu
t=$(now); P=$(dmon $D/dmon_C.txt)
( wsoracle $H --gpu 0 --no-watchdog --timeout 60 --no-retry > $D/C_hang.txt 2>&1; echo "C hang on GPU 0 ended after $(el $t) s: $(head -1 $D/C_hang.txt)" ) &
HP=$!
sleep 2
t2=$(now)
timeout -s INT 150 wsfuzz --kernels kernels/tma_pipeline_sm90.cu --injectors all --repeat 3 -j 32 --gpus 1, --timeout 10 \
  --db $D/C.sqlite --corpus "" --no-sanitizer > $D/C.log 2>&1
w=$(el $t2); n=$(grep -c '^wsfuzz: \[' $D/C.log)
echo "C campaign on GPU 1 while GPU 0 hangs: judged=$n wall_s=$w per_min=$(permin $n $w)"
wait $HP; kill $P 2>/dev/null
awk '!/^#/ && NF>=3 {s[$1]+=$2; c[$1]++} END {for (g in s) printf "    GPU %s mean SM util %.0f%% over %d s\n", g, s[g]/c[g], c[g]}' $D/dmon_C.txt
echo "== done"
} 2>&1 | tee "$OUT/campaign3.log"
tar -C $D -czf "$OUT/campaign3.tgz" $(cd $D && ls *.sqlite *.log *.md *.html dmon_*.txt C_hang.txt corpus 2>/dev/null)
