#!/usr/bin/env bash
# Session 9 (issue 6): --reduce on every detected mutant of session 8's full campaign, redone from
# scratch with this session's reducer (first-wait and (all) signatures, the include-only preamble
# of the parse check, the fallback to the campaign's backend), on nvidia-h200-x2 through
# scripts/device-run.sh. FROM= a folder in the working tree holding full.sqlite (session 8's
# d/full.sqlite with its reductions deleted, or the previous call's) and corpus/ (empty at first;
# later the previous call's: its .min.cu + .min.state.json files are the interrupted reductions to go on).
# Every reduction runs on the CPU emulator (--reduce-backend emu, RJOBS candidates at once, BUDGET s),
# one per entry of GPUS at once, each result judged on the GPU at the end; stopped at LIMIT s by
# SIGINT, the interrupted ones go on in the next call. Results come back in $OUT/s9_reduce_$TAG.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
FROM=${FROM:?FROM= the folder with full.sqlite and corpus/}
[ -f "$FROM/full.sqlite" ] || { echo "no $FROM/full.sqlite"; exit 2; }
TAG=${TAG:-a}
LIMIT=${LIMIT:-520}
BUDGET=${BUDGET:-240}
RJOBS=${RJOBS:-2}
GPUS=${GPUS:-0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1}
D=/tmp/c9; rm -rf $D; mkdir -p $D
cp "$FROM/full.sqlite" $D/ && mkdir -p $D/corpus && { [ -d "$FROM/corpus" ] && cp -r "$FROM/corpus/." $D/corpus/ || true; }
now() { date +%s.%N; }
el() { awk -v a="$(now)" -v b="$1" 'BEGIN{printf "%.1f", a-b}'; }
{
echo "== s9_reduce $TAG $(date -u +%FT%TZ) cores=$(nproc) from=$FROM limit=${LIMIT}s budget=${BUDGET}s rjobs=$RJOBS gpus=$GPUS"
echo "recorded reductions before: $(sqlite3 $D/full.sqlite 'SELECT COUNT(*) FROM reductions' 2>/dev/null); interrupted to go on: $(find $D/corpus -name '*.state.json' | wc -l)"
touch $D/full.sqlite.start
t=$(now)
timeout -s INT -k 60 $LIMIT wsfuzz --kernels kernels/ --injectors all --repeat 3 -j 32 --gpus $GPUS --timeout 10 \
  --db $D/full.sqlite --corpus $D/corpus --no-sanitizer --reduce --reduce-backend emu --reduce-jobs $RJOBS \
  --reduce-budget $BUDGET > $D/R_$TAG.log 2>&1
echo "R rc=$? wall_s=$(el $t)"
grep -E "reduc|interrupted|goes on|instead|done" $D/R_$TAG.log | cut -c1-400 | head -120
echo "== where each reduction's tests went (this call's part of its trace)"
for tr in $(find $D/corpus -name '*.trace.jsonl' -newer $D/full.sqlite.start 2>/dev/null | sort); do
  n=$(wc -l < $tr); i=$(grep -c '"interesting":true' $tr)
  avg() { grep -o "\"$1\":[0-9]*" $tr | awk -F: '{s+=$2; c++} END {printf "%d", c ? s/c : 0}'; }
  echo "$(echo $tr | sed "s|$D/corpus/||") tests=$n interesting=$i ms=$(avg ms) parse_ms=$(avg parse_ms) build_ms=$(avg build_ms) run_ms=$(avg run_ms)"
done
echo "recorded reductions: $(sqlite3 $D/full.sqlite 'SELECT COUNT(*) FROM reductions' 2>/dev/null)"
wsfuzz report $D/full.sqlite -o $D/report > /dev/null 2>&1
sed -n '/## Reductions/,/## Time spent/p' $D/report.md
echo "== done $(date -u +%FT%TZ)"
} 2>&1 | tee "$OUT/s9_reduce_$TAG.log"
tar -C $D -czf "$OUT/s9_reduce_$TAG.tgz" $(cd $D && ls -d *.sqlite *.log *.md *.html corpus 2>/dev/null)
