#!/usr/bin/env bash
# Issue 4's comparison on the CPU cases: C-Vise and wsreduce on the same inputs with the same
# interestingness, side by side: final non-blank lines, tokens, wall time. Both get -j/-n 2 (this
# machine's cores). Writes bench/results/<date>-cpu/cvise_vs_wsreduce.log.
#   ptxas_error   a 300-line .cu with one ptxas error (compile-error: nvcc judges it)
#   host_hang     host code that hangs only when one construct is present (a timeout judges it)
#   kernel_hang   a kernel whose mbarrier never completes (the CPU emulator judges it)
# C-Vise's interestingness scripts call the same judge wsreduce uses (wsoracle), so the two
# differ only in the search (but the scripts ask for the class alone, where wsreduce also keeps
# the original's signature: a C-Vise result can fail another way). Each C-Vise test is counted.
# ALGOS (default "ddmin pdd") picks wsreduce's runs, CVISE=0 skips C-Vise, CVISE_BUDGET its
# seconds (default 1800), LOG names the log (default cvise_vs_wsreduce.log).
set -uo pipefail
cd "$(dirname "$0")/../.."
R=$PWD
B=$R/build
OUT=${OUT:-$R/bench/results/$(date -u +%F)-cpu}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/cvbench.XXXX)
export WSREDUCE_CACHE=$W/cache
J=${J:-2}
tokens() { grep -o -E '[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[^[:space:][:alnum:]_]' "$1" | wc -l; }
nb() { grep -c '[^[:space:]]' "$1"; }
now() { date +%s.%N; }
el() { awk -v a="$(now)" -v b="$1" 'BEGIN{printf "%.0f", a-b}'; }
case_def() {  # name symptom wsreduce-args grep-pattern-of-wsoracle-output
  case $1 in
    ptxas_error) echo "compile-error|--symptom compile-error|compile-error/ptxas";;
    host_hang)   echo "hang|--symptom hang --backend gpu --timeout 1|^verdict: *hang";;
    kernel_hang) echo "hang|--symptom hang --backend emu|hang/mbarrier";;
  esac
}
{
echo "== cvise vs wsreduce $(date -u +%FT%TZ) on $(nproc) cores, -j$J; $(cvise --version 2>&1 | head -1)"
printf "%-12s %-9s %6s %7s %6s\n" case tool lines tokens wall_s
for c in ${CASES:-ptxas_error host_hang kernel_hang}; do
  IFS='|' read -r sym wargs pat <<<"$(case_def $c)"
  src=$R/tests/fixtures/reduce/$c.cu
  printf "%-12s %-9s %6s %7s %6s\n" $c input $(nb $src) $(tokens $src) -
  # wsreduce, with each search algorithm
  for algo in ${ALGOS:-ddmin pdd}; do
    mkdir -p $W/ws-$algo-$c && cp $src $W/ws-$algo-$c/
    t=$(now)
    $B/reducer/wsreduce $W/ws-$algo-$c/$c.cu $wargs -j$J --algorithm $algo > $W/ws-$algo-$c/log 2>&1
    rc=$?
    printf "%-12s %-9s %6s %7s %6s  (rc=%s, %s)\n" $c ws-$algo $(nb $W/ws-$algo-$c/$c.min.cu) $(tokens $W/ws-$algo-$c/$c.min.cu) $(el $t) $rc \
      "$(grep -o '[0-9]* tests' $W/ws-$algo-$c/log | tail -1)"
  done
  for algo in ${ALGOS:-ddmin pdd}; do cp $W/ws-$algo-$c/$c.min.cu "$OUT/$c.wsreduce$([ $algo = pdd ] && echo -pdd).cu"; done
  [ "${CVISE:-1}" = 0 ] && continue
  # C-Vise with a script around the same judge
  mkdir -p $W/cv-$c && cp $src $W/cv-$c/
  extra=""
  [ $c = host_hang ] && extra="--backend gpu --timeout 1 --no-retry"
  [ $c = kernel_hang ] && extra="--backend emu"
  : > $W/cv-$c.tests  # one line per test C-Vise runs (its own log does not count them)
  cat > $W/cv-$c/test.sh <<EOS
#!/usr/bin/env bash
echo >> $W/cv-$c.tests
$B/oracle/wsoracle $c.cu $extra 2>&1 | grep -q -E '$pat'
EOS
  chmod +x $W/cv-$c/test.sh
  t=$(now)
  (cd $W/cv-$c && timeout ${CVISE_BUDGET:-1800} cvise -n $J --timeout 120 ./test.sh $c.cu > log 2>&1)
  rc=$?
  printf "%-12s %-9s %6s %7s %6s  (rc=%s, %s tests)\n" $c cvise $(nb $W/cv-$c/$c.cu) $(tokens $W/cv-$c/$c.cu) $(el $t) $rc $(wc -l < $W/cv-$c.tests)
  cp $W/cv-$c/$c.cu "$OUT/$c.cvise.cu"
done
} 2>&1 | tee "$OUT/${LOG:-cvise_vs_wsreduce.log}"
rm -rf $W
