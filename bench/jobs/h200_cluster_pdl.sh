#!/usr/bin/env bash
# On the GPU machine (scripts/device-run.sh): the cluster + PDL reference kernel
# (kernels/ws_cluster_pdl_sm90.cu) built with plain nvcc and run RUNS times as its author would,
# then judged by wsoracle, then its three injectors' mutants judged by wsfuzz (3 runs each) for
# the classes their injectors.def rows expect. Carry .device/wsreduce.txz.
#   bash scripts/device-run.sh bench/jobs/h200_cluster_pdl.sh [RUNS]
# Writes $OUT/machine.txt, $OUT/plain.tsv (run, exit, wall, WSCHECK lines) and plain/*.log,
# $OUT/oracle.txt (wsoracle's report), $OUT/wsfuzz.log, $OUT/cpdl.sqlite, $OUT/corpus/ (the
# detected mutants) and $OUT/verdicts.txt
# (kernel | injector | site | detail | expected | signature), $OUT/report.{md,html} (wsfuzz report).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
RUNS=${1:-5}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
K=kernels/ws_cluster_pdl_sm90.cu
W=/tmp/cpdl; rm -rf $W; mkdir -p $W/kernels $OUT/plain
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader > $OUT/machine.txt 2>&1
"$NVCC" --version | tail -2 >> $OUT/machine.txt

# 1. Plain: the oracle's flags, no tool of ours in between.
"$NVCC" -std=c++17 -O2 -lineinfo -gencode=arch=compute_90a,code=sm_90a -I oracle/include $K \
  -o $W/cpdl > $OUT/plain/build.log 2>&1
echo "build exit=$?" | tee -a $OUT/plain/build.log
printf 'run\texit\twall_s\twscheck\n' > $OUT/plain.tsv
for i in $(seq 1 "$RUNS"); do
  s=$(date +%s.%N)
  timeout -s KILL 30 $W/cpdl > $OUT/plain/run$i.log 2>&1
  e=$?
  t=$(date +%s.%N)
  printf '%s\t%s\t%s\t%s\n' "$i" "$e" "$(awk "BEGIN{printf \"%.2f\", $t - $s}")" \
    "$(grep '^WSCHECK' $OUT/plain/run$i.log | cut -d' ' -f2,5,6 | tr '\n' ' ')" >> $OUT/plain.tsv
done
cat $OUT/plain.tsv

# 2. wsoracle (GPU, watchdog on), 3 fresh processes.
wsoracle $K --repeat 3 --timeout 20 > $OUT/oracle.txt 2>&1
grep -E '^(verdict|signature):' $OUT/oracle.txt

# 3. The three injectors' mutants, on a folder that holds the new kernel alone.
cp $K $W/kernels/
wsfuzz --kernels $W/kernels \
  --injectors missing-griddepcontrol-wait,cta-scope-remote-arrive,cluster-barrier-in-role-branch \
  --repeat 3 -j 8 --db $OUT/cpdl.sqlite --corpus $OUT/corpus --timeout 20 2>&1 | tee $OUT/wsfuzz.log
python3 - "$OUT/cpdl.sqlite" <<'PY' 2>&1 | tee $OUT/verdicts.txt
import sqlite3, sys  # the GPU machine has Python but no sqlite3 command
db = sqlite3.connect(sys.argv[1])
for r in db.execute("SELECT m.kernel, m.injector, m.site, v.detail, v.expected_match, "
                    "substr(v.signature, 1, 120) FROM verdicts v JOIN mutants m USING(hash) "
                    "ORDER BY m.injector, m.site"):
    print(" | ".join(str(x) for x in r))
PY
wsfuzz report $OUT/cpdl.sqlite -o $OUT/report --explain fuzzer/explanations.txt > /dev/null 2>&1
echo "report exit=$?"
