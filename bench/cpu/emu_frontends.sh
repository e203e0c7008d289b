#!/usr/bin/env bash
# What a reduction pays per candidate on the emulator, by front end: the source translator
# (Clang rewrite + g++ against the runtime) against the PTX path (nvcc as the user builds, the
# PTX interpreted). WSEMU_FRONTEND picks one (emu/translate/translate.cpp, emuBuilder).
#   1. one candidate from nothing: corpus/examples/gemm_arrival_count.cu (the project's 548-line
#      GEMM with a wrong arrival count, a hang), judged by wsoracle --backend emu with a fresh
#      build key each time (-DBENCH_RUN=i), 3 times per front end: wall, build and run;
#   2. the same program reduced, --symptom hang -j$J --budget $BUDGET, per front end: lines,
#      tests, and the median candidate's build and run from the reduction's trace.
# Writes $OUT/emu_frontends.log (and the traces' summaries). Run it alone on the machine.
set -uo pipefail
cd "$(dirname "$0")/../.."
R=$PWD; B=$R/build
OUT=${OUT:-$R/bench/results/$(date -u +%F)-cpu-emu-frontends}
J=${J:-2}; BUDGET=${BUDGET:-240}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/emufront.XXXX)
trap 'rm -rf "$W"' EXIT
G=corpus/examples/gemm_arrival_count.cu
nb() { grep -c '[^[:space:]]' "$1"; }
ms() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.0f", (b-a)*1000}'; }
now() { date +%s.%N; }
{
echo "== emulator front ends $(date -u +%FT%TZ) at $(git rev-parse --short HEAD) on $(nproc) cores; $(g++ --version | head -1); $(/usr/local/cuda/bin/nvcc --version | tail -1)"
echo "program: $G, $(nb $G) non-blank lines"
for fe in source ptx; do
  # The first build of a cache pays one-time costs (the translator's precompiled runtime header).
  WSEMU_FRONTEND=$fe WSREDUCE_CACHE=$W/c-$fe $B/oracle/wsoracle $G --backend emu -DBENCH_RUN=0 > $W/$fe-0.txt 2>&1
  echo "FIRST $fe: $(head -1 $W/$fe-0.txt | tr -s ' ')"
  for i in 1 2 3; do
    t=$(now)
    WSEMU_FRONTEND=$fe WSREDUCE_CACHE=$W/c-$fe $B/oracle/wsoracle $G --backend emu -DBENCH_RUN=$i --json > $W/$fe-$i.json 2>$W/$fe-$i.err
    wall=$(ms $t $(now))
    python3 - "$W/$fe-$i.json" "$fe" "$i" "$wall" <<'EOF'
import json, sys
v = json.load(open(sys.argv[1]))
t = v.get("timings", {})
run_ms = sum(t.get("run_ms", []))
print(f"CANDIDATE {sys.argv[2]} {sys.argv[3]}: wall {sys.argv[4]} ms, build {t.get('build_ms', 0):.0f} ms, "
      f"run {run_ms:.0f} ms, {v.get('symptom')} {v.get('signature')}")
EOF
  done
done
for fe in source ptx; do
  mkdir -p $W/red-$fe && cp $G $W/red-$fe/
  t=$(date +%s)
  WSEMU_FRONTEND=$fe WSREDUCE_CACHE=$W/rc-$fe $B/reducer/wsreduce $W/red-$fe/$(basename $G) \
    --symptom hang --backend emu -j$J --budget $BUDGET > $W/red-$fe/log 2>&1
  rc=$?
  min=$W/red-$fe/$(basename $G .cu).min.cu
  echo "REDUCE $fe: rc=$rc wall_s=$(( $(date +%s) - t )) lines $(nb $G) -> $([ -f $min ] && nb $min || echo -)"
  grep -E "original verdict|tests,|budget" $W/red-$fe/log | sed 's/^/    /'
  trace=$(ls $W/red-$fe/*.trace.jsonl 2>/dev/null | head -1)
  [ -n "$trace" ] && python3 - "$trace" "$fe" <<'EOF'
import json, statistics, sys
b, r, w = [], [], []
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("cached") or e.get("parse_failed") or "build_ms" not in e:
        continue
    b.append(e["build_ms"]); r.append(e.get("run_ms", 0)); w.append(e["ms"])
med = lambda x: f"{statistics.median(x):.0f}" if x else "-"
print(f"    TRACE {sys.argv[2]}: {len(w)} candidates judged; median wall {med(w)} ms, build {med(b)} ms, run {med(r)} ms")
EOF
  cp $W/red-$fe/log "$OUT/reduce-$fe.log"
  [ -f $min ] && cp $min "$OUT/gemm_arrival_count.$fe.min.cu"
done
} 2>&1 | tee "$OUT/emu_frontends.log"
