#!/usr/bin/env bash
# Session 8, calls B and C (issue 6, and issue 8's hang on B), on nvidia-h200-x2 through
# scripts/device-run.sh. FROM= the folder (in the working tree) holding call A's full.sqlite and
# corpus/ (h200x2_s8_campaign.sh); they are copied to /tmp and come back in $OUT/s8_reduce_$TAG.tgz.
#  HANG=1 (call B): issue 8: a hang held on GPU 0 (no watchdog) while the tma_pipeline + attention
#     campaign of call A's part B judges on GPU 1 only: its rate beside the hang, and its verdicts.
#  then: the same full campaign command as call A, with --reduce: every detected mutant reduced on
#     the CPU emulator (--reduce-backend emu, RJOBS candidates at once each, BUDGET s each), one
#     reduction per entry of GPUS at once, each reduced program judged on the GPU at the end;
#     stopped at LIMIT s by SIGINT: an interrupted reduction goes on from its best program in the
#     next call (FROM = this call's results).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
# On a machine still warm from call A, its /tmp/c8 and build cache are still there.
WARM=0; [ -f /tmp/c8/full.sqlite ] && WARM=1
FROM=${FROM:-/tmp/c8}
[ -f "$FROM/full.sqlite" ] || { echo "no $FROM/full.sqlite: give FROM= the folder with call A's full.sqlite and corpus/"; exit 2; }
TAG=${TAG:-b}
LIMIT=${LIMIT:-380}
BUDGET=${BUDGET:-100}
RJOBS=${RJOBS:-3}
GPUS=${GPUS:-0,1,0,1,0,1,0,1,0,1}
D=/tmp/c8r; rm -rf $D; mkdir -p $D
# call A's own archive missed its corpus (a tar of `ls` output): taken again here while the machine is warm
[ $WARM = 1 ] && tar -C /tmp/c8 -czf "$OUT/s8_campaign_A.tgz" $(cd /tmp/c8 && ls -d *.sqlite *.log *.md *.html dmon_*.txt corpus 2>/dev/null)
# call A's own archive missed its corpus (tar of `ls` output): taken again here while the machine is warm
[ $WARM = 1 ] && tar -C /tmp/c8 -czf "$OUT/s8_campaign_A.tgz" $(cd /tmp/c8 && ls -d *.sqlite *.log *.md *.html dmon_*.txt corpus 2>/dev/null)
cp "$FROM/full.sqlite" $D/ && cp -r "$FROM/corpus" $D/corpus
KB=kernels/tma_pipeline_sm90.cu,kernels/ws_attention_sm90.cu
now() { date +%s.%N; }
el() { awk -v a="$(now)" -v b="$1" 'BEGIN{printf "%.1f", a-b}'; }
permin() { awk -v n="$1" -v w="$2" 'BEGIN{r = 0; if (w > 0) r = n * 60 / w; printf "%.1f", r}'; }
dmon() { nvidia-smi dmon -s u -d 1 > "$1" 2>&1 & echo $!; }
util() { awk '!/^#/ && NF>=3 {s[$1]+=$2; c[$1]++} END {for (g in s) printf "    GPU %s mean SM util %.0f%% over %d s\n", g, s[g]/c[g], c[g]}' "$1"; }
{
echo "== s8_reduce $TAG $(date -u +%FT%TZ) cores=$(nproc) warm=$WARM from=$FROM limit=${LIMIT}s budget=${BUDGET}s rjobs=$RJOBS gpus=$GPUS"
if [ "${HANG:-0}" = 1 ]; then
  echo "== H. a hang on GPU 0 (no watchdog, 230 s) while tma_pipeline + attention judge on GPU 1 only"
  # on a fresh machine the build cache is cold: fill it first for the campaign's mutants (not counted)
  if [ $WARM = 1 ]; then echo "warm machine: call A's build cache"; else
    timeout -s INT 200 wsfuzz --kernels $KB --injectors all --repeat 1 -j 32 --gpus 2 --timeout 10 \
      --db $D/Hfill.sqlite --corpus "" --no-sanitizer > $D/Hfill.log 2>&1
    echo "fill rc=$? $(grep -c '^wsfuzz: \[' $D/Hfill.log) mutants"
  fi
  HK=$(ls $D/corpus/tma_pipeline_sm90/arrival-count/*.cu 2>/dev/null | grep -v '\.min\.' | head -1)
  [ -z "$HK" ] && HK=corpus/examples/gemm_arrival_count.cu
  t=$(now); P=$(dmon $D/dmon_H.txt)
  ( wsoracle $HK --gpu 0 --no-watchdog --timeout 230 --no-retry > $D/H_hang.txt 2>&1; echo "H hang on GPU 0 ($HK) ended after $(el $t) s: $(head -1 $D/H_hang.txt)" ) &
  HP=$!
  sleep 3
  t2=$(now)
  timeout -s INT 220 wsfuzz --kernels $KB --injectors all --repeat 3 -j 32 --gpus 1, --timeout 10 \
    --db $D/H.sqlite --corpus "" --no-sanitizer > $D/H.log 2>&1
  rc=$?; w=$(el $t2); n=$(grep -c '^wsfuzz: \[' $D/H.log)
  echo "H campaign on GPU 1 while GPU 0 hangs: rc=$rc judged=$n wall_s=$w per_min=$(permin $n $w)"
  grep -E "keepers" $D/H.log | head -1 | sed 's/^/    /'
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader | sed 's/^/    still on a GPU: /'
  wait $HP; kill $P 2>/dev/null
  util $D/dmon_H.txt
fi
touch $D/full.sqlite.start
echo "== R. --reduce on the full campaign (resumes; limit ${LIMIT}s)"
t=$(now)
timeout -s INT -k 60 $LIMIT wsfuzz --kernels kernels/ --injectors all --repeat 3 -j 32 --gpus $GPUS --timeout 10 \
  --db $D/full.sqlite --corpus $D/corpus --no-sanitizer --reduce --reduce-backend emu --reduce-jobs $RJOBS \
  --reduce-budget $BUDGET > $D/R_$TAG.log 2>&1
echo "R rc=$? wall_s=$(el $t)"
grep -E "to judge|reducing|reduced|interrupted|goes on|stopped|done" $D/R_$TAG.log | cut -c1-400 | head -90
echo "== where each reduction's tests went (its trace, this call's part)"
for tr in $(find $D/corpus -name '*.trace.jsonl' -newer $D/full.sqlite.start 2>/dev/null | sort); do
  n=$(wc -l < $tr); i=$(grep -c '"interesting":true' $tr)
  avg() { grep -o "\"$1\":[0-9]*" $tr | awk -F: '{s+=$2; c++} END {printf "%d", c ? s/c : 0}'; }
  echo "$(echo $tr | sed "s|$D/corpus/||") tests=$n interesting=$i ms=$(avg ms) parse_ms=$(avg parse_ms) build_ms=$(avg build_ms) run_ms=$(avg run_ms) last_t=$(tail -1 $tr | grep -o '"t":[0-9]*')"
  grep -o '"detail":"[^"]*"' $tr | sort | uniq -c | sort -rn | head -4 | sed 's/^/      /'
done
echo "recorded reductions: $(sqlite3 $D/full.sqlite 'SELECT COUNT(*) FROM reductions' 2>/dev/null)"
wsfuzz report $D/full.sqlite -o $D/report > /dev/null 2>&1
sed -n '/## Reductions/,/## Time spent/p' $D/report.md
echo "== done $(date -u +%FT%TZ)"
} 2>&1 | tee "$OUT/s8_reduce_$TAG.log"
tar -C $D -czf "$OUT/s8_reduce_$TAG.tgz" $(cd $D && ls -d *.sqlite *.log *.md *.html dmon_*.txt H_hang.txt corpus 2>/dev/null)
