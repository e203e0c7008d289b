#!/usr/bin/env bash
# On the GPU machine (scripts/device-run.sh): the watchdog's two end modes side by side. A fired
# kernel either traps (--watchdog-end=trap: error 719 and the lost context's teardown) or its
# parked warps leave the kernel and the program ends itself once the records are in
# (--watchdog-end=exit, the default). Three programs: the outside named-barrier hang
# (corpus/outside/rownorm_nb_bug.cu), the GEMM with a wrong arrival count (an mbarrier hang,
# corpus/examples/gemm_arrival_count.cu at its default shape, as the other jobs build it; GEMM_DEFS
# to change it) and a passing program (corpus/outside/gemm_ws_ok.cu). Each program is built once
# (wsoracle's cache, shared by both modes: the mode is a run-time knob), then judged M times per
# cell, a cell being (mode, N): N wsoracle processes at once, each judging ceil(M / N) times in a
# row. The modes alternate within each N so that both see the same machine state.
#   bash scripts/device-run.sh bench/jobs/h200_watchdog_end.sh
# Settings: M (judgments per cell, default 12), NS (default "1 2 4 8"), MODES (default
# "trap exit"), PROGS (names below, default all three), GEMM_DEFS (default none), TIMEOUT
# (wsoracle --timeout, default 20), BUDGET (seconds; cells not started by then are skipped and
# listed, default 540).
# Writes $OUT/watchdog_end.tsv (mode, n, program, judgments, cell wall, judgments/s, median and max
# wall of one judgment, the verdict+signature set, the runs' exit statuses, oracle kills),
# $OUT/summary.md, and $OUT/oracle.tgz (every wsoracle output and raw run).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
M=${M:-12}; NS=${NS:-"1 2 4 8"}; MODES=${MODES:-"trap exit"}
PROGS=${PROGS:-"rownorm_nb_bug gemm_arrival_count gemm_ws_ok"}
GEMM_DEFS=${GEMM_DEFS:-}; TIMEOUT=${TIMEOUT:-20}; BUDGET=${BUDGET:-540}
W=/tmp/watchdog-end; rm -rf $W; mkdir -p $W/o $W/cache
T0=$(date +%s)

srcOf() {
  case $1 in
    rownorm_nb_bug|gemm_ws_ok) echo corpus/outside/$1.cu ;;
    gemm_arrival_count) echo corpus/examples/$1.cu ;;
  esac
}
defsOf() { [ "$1" = gemm_arrival_count ] && echo $GEMM_DEFS; }

# One judgment: its own folder (the program, the output, the raw runs) and its wall in seconds.
judge() {  # program mode tag
  local p=$1 mode=$2 d=$W/o/$1/$2/$3
  mkdir -p $d
  cp $(srcOf $p) $d/
  local a b
  a=$(date +%s.%N)
  (cd $d && timeout 300 wsoracle $p.cu $(defsOf $p) --backend gpu --timeout $TIMEOUT --cache-dir $W/cache \
     --watchdog-end=$mode --record $d/runs > $d/verdict.txt 2>&1)
  b=$(date +%s.%N)
  awk "BEGIN{printf \"%.3f\n\", $b - $a}" > $d/wall
}

printf 'mode\tn\tprogram\tjudgments\tcell_s\tjudgments_per_s\tmedian_s\tmax_s\tverdicts\trun_exits\toracle_kills\n' \
  > $OUT/watchdog_end.tsv
skipped=""
for p in $PROGS; do
  for mode in $MODES; do judge $p $mode warm; done  # the build, cached for every later judgment
  echo "$p warm: $(grep -E '^(verdict|signature)' $W/o/$p/trap/warm/verdict.txt 2>/dev/null | tr '\n' ' ')"
  for n in $NS; do
    for mode in $MODES; do
      if [ $(( $(date +%s) - T0 )) -gt $BUDGET ]; then skipped+=" $mode/$n/$p"; continue; fi
      k=$(( (M + n - 1) / n ))
      s=$(date +%s.%N)
      for w in $(seq 1 $n); do
        ( for j in $(seq 1 $k); do judge $p $mode n$n.w$w.j$j; done ) &
      done
      wait
      e=$(date +%s.%N)
      cells=$(ls -d $W/o/$p/$mode/n$n.* | wc -l)
      cat $W/o/$p/$mode/n$n.*/wall | sort -n > $W/walls
      med=$(awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}' $W/walls); mx=$(tail -1 $W/walls)
      verdicts=$(for d in $W/o/$p/$mode/n$n.*; do
                   v=$(grep -m1 '^verdict:' $d/verdict.txt | sed 's/^verdict: *//; s/  */ /g')
                   sg=$(grep -m1 '^signature:' $d/verdict.txt | sed 's/^signature: *//')
                   echo "$v|$sg"
                 done | sort | uniq -c | awk '{c=$1; $1=""; sub(/^ /,""); printf "%s%sx %s", (NR>1?"; ":""), c, $0}')
      exits=$(cat $W/o/$p/$mode/n$n.*/runs/run*.json 2>/dev/null | grep -o '"exit_code": *-*[0-9]*' |
                awk '{print $2}' | sort -n | uniq -c | awk '{printf "%s%s:%s", (NR>1?",":""), $2, $1}')
      kills=$(cat $W/o/$p/$mode/n$n.*/runs/run*.json 2>/dev/null | grep -c '"ended_after_watchdog": *true')
      rate=$(awk "BEGIN{printf \"%.2f\", $cells / ($e - $s)}")
      cell=$(awk "BEGIN{printf \"%.1f\", $e - $s}")
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' $mode $n $p $cells $cell $rate $med $mx \
        "$verdicts" "$exits" "$kills" | tee -a $OUT/watchdog_end.tsv
    done
  done
done

# summary.md: judgments/s and the median judgment per program, N and mode; whether the two modes
# gave one verdict+signature set per program (they must).
{
  echo "# The watchdog's end modes: trap vs exit"
  echo
  echo "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1);" \
       "M=$M judgments per cell (rounded up to a multiple of N), wsoracle --timeout $TIMEOUT," \
       "GEMM_DEFS='${GEMM_DEFS}'. A passing program's judgment includes the plain build's" \
       "confirming run (wsoracle's default). Raw: watchdog_end.tsv, oracle.tgz."
  echo
  echo "| program | N | trap judgments/s | exit judgments/s | trap median s | exit median s | trap max s | exit max s |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
  awk -F'\t' 'NR>1 {k=$3"\t"$2; r[k,$1]=$6; m[k,$1]=$7; x[k,$1]=$8; if (!(k in seen)) {seen[k]=1; o[++n]=k}}
    END {for (i=1;i<=n;i++) {split(o[i],a,"\t");
      printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", a[1], a[2], r[o[i],"trap"], r[o[i],"exit"],
        m[o[i],"trap"], m[o[i],"exit"], x[o[i],"trap"], x[o[i],"exit"]}}' $OUT/watchdog_end.tsv
  echo
  echo "Verdict+signature sets per program (all cells of a mode):"
  echo
  for p in $PROGS; do
    t=$(awk -F'\t' -v p=$p 'NR>1 && $3==p && $1=="trap" {print $9}' $OUT/watchdog_end.tsv |
          tr ';' '\n' | sed 's/^ *[0-9]*x //' | sort -u | paste -sd';')
    x=$(awk -F'\t' -v p=$p 'NR>1 && $3==p && $1=="exit" {print $9}' $OUT/watchdog_end.tsv |
          tr ';' '\n' | sed 's/^ *[0-9]*x //' | sort -u | paste -sd';')
    same=$([ -n "$t" ] && [ "$t" = "$x" ] && echo "identical" || echo "DIFFERENT")
    echo "- $p: $same. trap: \`$t\`; exit: \`$x\`"
  done
  echo
  echo "Run exit statuses per cell are in the TSV (85: the exit mode ended the program itself;" \
       "1 with error 719 in its output: the trap; oracle_kills: runs the oracle ended after the" \
       "watchdog fired)."
  [ -n "$skipped" ] && echo && echo "Skipped for the budget ($BUDGET s):$skipped"
  echo
  echo "Total $(( $(date +%s) - T0 )) s."
} > $OUT/summary.md
cat $OUT/summary.md
tar -C $W -czf $OUT/oracle.tgz o
