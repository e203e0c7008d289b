#!/usr/bin/env bash
# Session 11, issue 8, on nvidia-h200-x2 through scripts/device-run.sh: runs started ahead of their
# turn (GatedRun: the next run's process opens its CUDA context while the slot's current run goes
# on, the default now) against sessions 8 and 10's 1.63-1.66x with two GPUs.
#  fill: tma_pipeline + attention, every injector, repeat 1, both GPUs: fills the build cache (not counted)
#  B1 / B2: the same 59 mutants, repeat 3, -j 32, --gpus 1 then --gpus 2, fresh databases, warm
#  cache, prestarted runs; then N1 / N2 the same with --no-prestart (the old order) while time is
#  left: mutants per minute, per-GPU SM utilisation (nvidia-smi dmon), the CPU split, and the
#  verdicts compared (wsfuzz compare).
# SPECS="tag:gpus:flag ..." replaces the four runs (e.g. C1/C2 with CUDA_DEVICE_MAX_CONNECTIONS=1
# exported by the caller: one hardware queue per context, the context opened ~25% sooner in the
# session 11 probe); NAME names the log; KB=kernels runs the whole campaign (every kernel).
# Log: $OUT/s11_scaling.log; databases, logs, dmon and cpu samples in $OUT/s11_scaling.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
D=/tmp/c11; rm -rf $D; mkdir -p $D
KB=${KB:-kernels/tma_pipeline_sm90.cu,kernels/ws_attention_sm90.cu}
now() { date +%s.%N; }
el() { awk -v a="$(now)" -v b="$1" 'BEGIN{printf "%.1f", a-b}'; }
permin() { awk -v n="$1" -v w="$2" 'BEGIN{r = 0; if (w > 0) r = n * 60 / w; printf "%.1f", r}'; }
dmon() { nvidia-smi dmon -s u -d 1 > "$1" 2>&1 & echo $!; }
util() { awk '!/^#/ && NF>=3 {s[$1]+=$2; c[$1]++} END {for (g in s) printf "    GPU %s mean SM util %.0f%% over %d s\n", g, s[g]/c[g], c[g]}' "$1"; }
cpu() {  # the CPU split every 2 s from /proc/stat
  read -r _ u n s i w _ < /proc/stat; local pu=$u pn=$n ps=$s pi=$i pw=$w
  while sleep 2; do
    read -r _ u n s i w _ < /proc/stat
    local du=$((u+n-pu-pn)) ds=$((s-ps)) di=$((i-pi)) dw=$((w-pw)); local tot=$((du+ds+di+dw)); [ $tot -gt 0 ] || tot=1
    echo "$(date +%T) user=$((100*du/tot)) sys=$((100*ds/tot)) idle=$((100*di/tot)) iowait=$((100*dw/tot)) progs=$(pgrep -c -x prog) nvcc=$(pgrep -c -x nvcc)"
    pu=$u; pn=$n; ps=$s; pi=$i; pw=$w
  done > "$1" 2>&1 & echo $!; }
cpusum() { awk '{for(i=2;i<=5;i++){split($i,a,"="); s[a[1]]+=a[2]}; c++} END {if (c) printf "    CPU mean user %.0f%% sys %.0f%% idle %.0f%% over %d samples\n", s["user"]/c, s["sys"]/c, s["idle"]/c, c}' "$1"; }
runs() {  # the runs' wall time as the database has it (the GPU machine has no sqlite3: done afterwards there)
  command -v sqlite3 > /dev/null || { echo "    (no sqlite3 here: the runs' times are read from the databases afterwards)"; return 0; }
  sqlite3 "$1" "SELECT COUNT(*), printf('%.1f', SUM(wall_ms)/1000.0) FROM runs" | awk -F'|' '{printf "    runs %s, sum of run wall %s s", $1, $2}'
  sqlite3 "$1" "SELECT wall_ms FROM runs ORDER BY wall_ms" | awk '{a[NR]=$1} END {if (NR) printf ", median run %.0f ms, p90 %.0f ms\n", a[int((NR+1)/2)], a[int(NR*0.9)]}'
  sqlite3 "$1" "SELECT wall_ms FROM runs r JOIN verdicts v USING(hash) WHERE v.symptom='pass' ORDER BY wall_ms" | awk '{a[NR]=$1} END {if (NR) printf "    pass runs %d, median %.0f ms\n", NR, a[int((NR+1)/2)]}'
}
{
echo "== s11_scaling $(date -u +%FT%TZ) cores=$(nproc) CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-unset}"
nvidia-smi --query-gpu=index,name,persistence_mode --format=csv,noheader
echo "== fill: repeat 1, --gpus 2 (build cache)"
t=$(now)
timeout -s INT 220 wsfuzz --kernels $KB --injectors all --repeat 1 -j 32 --gpus 2 --timeout 10 \
  --db $D/fill.sqlite --corpus "" --no-sanitizer > $D/fill.log 2>&1
echo "fill rc=$? judged=$(grep -c '^wsfuzz: \[' $D/fill.log) wall_s=$(el $t)"
T0=$(now)
for spec in ${SPECS:-B1:1: B2:2: N1:1:--no-prestart N2:2:--no-prestart}; do
  IFS=: read tag g flag <<< "$spec"
  if [ $(awk -v a="$(now)" -v b="$T0" 'BEGIN{print (a-b > 330)}') = 1 ]; then echo "$tag skipped: no time left"; continue; fi
  t=$(now); P=$(dmon $D/dmon_$tag.txt); C=$(cpu $D/cpu_$tag.txt)
  timeout -s INT 200 wsfuzz --kernels $KB --injectors all --repeat 3 -j 32 --gpus $g --timeout 10 \
    --db $D/$tag.sqlite --corpus "" --no-sanitizer $flag > $D/$tag.log 2>&1
  rc=$?; w=$(el $t); kill $P $C 2>/dev/null
  n=$(grep -c '^wsfuzz: \[' $D/$tag.log)
  echo "$tag gpus=$g $flag rc=$rc judged=$n wall_s=$w per_min=$(permin $n $w)"
  grep -E "keepers|ahead of its turn|at their turn" $D/$tag.log | head -2 | sed 's/^/    /'
  util $D/dmon_$tag.txt; cpusum $D/cpu_$tag.txt; runs $D/$tag.sqlite
done
for x in B C F; do
  [ -f $D/${x}2.sqlite ] && wsfuzz compare $D/${x}1.sqlite $D/${x}2.sqlite --labels 1gpu,2gpus -o $D/${x}1_vs_${x}2.md >/dev/null 2>&1
done
grep -iE "same class|same detail" $D/*_vs_*2.md | head -3
[ -f $D/N1.sqlite ] && wsfuzz compare $D/B1.sqlite $D/N1.sqlite --labels prestart,no-prestart -o $D/B1_vs_N1.md >/dev/null 2>&1
echo "== done $(date -u +%FT%TZ)"
} 2>&1 | tee "$OUT/s11_scaling${NAME:-}.log"
tar -C $D -czf "$OUT/s11_scaling${NAME:-}.tgz" $(cd $D && ls -d *.sqlite *.log *.md dmon_*.txt cpu_*.txt 2>/dev/null)
