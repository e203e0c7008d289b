#!/usr/bin/env bash
# Session 15 (issue 4), on nvidia-h200: C-Vise 2.7.0 on the GEMM hang, -n 16, with the judge
# wsreduce's runs used (the emulator, wsoracle --backend emu --timeout 10), asking for the same
# class and the original's exact signature, as wsreduce does. wsreduce's side of the comparison
# is calls a and b of this session (h200_s12.sh, 16 cores, 275-s budget, 287-289 s wall).
# Carry .device/cvise.txz (bench/cvise/pack.sh) and .device/wsoracle.txz (wsoracle alone from
# scripts/device-pack.sh's tree: the two and the working tree must fit in 64 MiB), then run
#   bash bench/jobs/h200_s15_cvise.sh [budget_s]
# With a second argument `wsreduce` (carry .device/wsreduce.txz instead), the same test.sh
# drives wsreduce (--test, -j16) for the budget: the two then differ in the search alone.
# Logs: $OUT/s15_cvise.log (C-Vise's own), $OUT/s15_cvise_progress.txt (non-blank lines and
# tokens of the file every 10 s), $OUT/s15_cvise.tgz (the result and the test script).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
BUDGET=${1:-560}
TOOL=${2:-cvise}
case $TOOL in cvise) need="cvise wsoracle" ;; wsreduce) need=wsreduce ;;
  *) echo "h200_s15_cvise: the second argument is cvise or wsreduce, not '$TOOL'" >&2; exit 2 ;; esac
for p in $need; do
  [ -f .device/$p.txz ] || { echo "h200_s15_cvise: .device/$p.txz is missing: build it (bench/cvise/pack.sh, scripts/device-pack.sh) and carry it" >&2; exit 2; }
done
rm -rf /tmp/cv /tmp/wsr && mkdir -p /tmp/cv /tmp/wsr
# wsreduce.txz holds wsoracle too; a file left by an earlier call on a warm machine may be here
if [ "$TOOL" = wsreduce ]; then tar -C /tmp/wsr -xJf .device/wsreduce.txz
else tar -C /tmp/cv -xJf .device/cvise.txz & tar -C /tmp/wsr -xJf .device/wsoracle.txz & wait; fi
export PATH="/tmp/cv/cvise/bin:/tmp/wsr/wsreduce/bin:/usr/local/cuda/bin:$PATH"
export WSREDUCE_CACHE=/tmp/cv-cache
W=/tmp/cvrun; rm -rf $W; mkdir -p $W
ex=gemm_arrival_count
cp corpus/examples/$ex.cu $W/
nb() { grep -c '[^[:space:]]' "$1"; }
tokens() { grep -o -E '[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[^[:space:][:alnum:]_]' "$1" | wc -l; }
{
  echo "== s15 cvise $(date -u +%FT%TZ) on $(hostname), nproc=$(nproc), $(command -v cvise >/dev/null && cvise --version 2>&1 | head -1 || echo "no C-Vise: the wsreduce side"), python $(python3 --version 2>&1)"
  nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader
  echo "== the original on the emulator judge"
  (cd $W && wsoracle --backend emu --timeout 10 $ex.cu 2>&1 | grep -E "^(verdict|signature|timings):")
} 2>&1 | tee "$OUT/s15_cvise.log"
sig=$(cd $W && wsoracle --backend emu --timeout 10 $ex.cu 2>&1 | sed -n 's/^signature: *//p')
[ -n "$sig" ] || { echo "the original gave no signature" | tee -a "$OUT/s15_cvise.log"; exit 1; }
cat > $W/test.sh <<EOS
#!/usr/bin/env bash
# interesting: the emulator's verdict is hang/mbarrier with the original's signature
echo >> $W/tests.count  # C-Vise's log does not count its tests (session 15's call c ran without this)
out=\$(wsoracle --backend emu --timeout 10 $ex.cu 2>&1)
grep -qE '^verdict: +hang +\(hang/mbarrier\)' <<<"\$out" && grep -qxF 'signature: $sig' <<<"\$out"
EOS
chmod +x $W/test.sh
: > $W/tests.count
(cd $W && ./test.sh) && echo "== test.sh: the original is interesting" | tee -a "$OUT/s15_cvise.log" || { echo "test.sh refuses the original" | tee -a "$OUT/s15_cvise.log"; exit 1; }
if [ "$TOOL" = wsreduce ]; then
  t0=$(date +%s)
  (cd $W && wsreduce $ex.cu --test ./test.sh -j16 --budget $BUDGET) > "$OUT/s15_wsreduce_test.log" 2>&1
  rc=$?
  {
    echo "RESULT wsreduce --test rc=$rc lines=$(nb corpus/examples/$ex.cu)->$(nb $W/$ex.min.cu) tokens=$(tokens corpus/examples/$ex.cu)->$(tokens $W/$ex.min.cu) wall_s=$(( $(date +%s) - t0 )) (wsreduce --test ./test.sh -j16 --budget $BUDGET)"
    grep -E "tests|budget" "$OUT/s15_wsreduce_test.log" | tail -3
    echo "== the result on the GPU (wsoracle)"
    (cd $W && wsoracle --timeout 10 $ex.min.cu 2>&1 | grep -E "^(verdict|signature):")
  } 2>&1 | tee -a "$OUT/s15_cvise.log"
  tar -C $W -czf "$OUT/s15_wsreduce_test.tgz" $ex.min.cu $ex.min.trace.jsonl test.sh
  exit 0
fi
t0=$(date +%s)
( while sleep 10; do echo "t=$(( $(date +%s) - t0 )) s lines=$(nb $W/$ex.cu) tokens=$(tokens $W/$ex.cu)"; done ) > "$OUT/s15_cvise_progress.txt" &
mon=$!
(cd $W && timeout -s INT $BUDGET cvise -n 16 --timeout 120 ./test.sh $ex.cu) >> "$OUT/s15_cvise.log" 2>&1
rc=$?
kill $mon
{
  echo "tests run: $(wc -l < $W/tests.count) (the original's checks included)"
  echo "RESULT cvise rc=$rc lines=$(nb $W/$ex.cu.orig 2>/dev/null || nb corpus/examples/$ex.cu)->$(nb $W/$ex.cu) tokens=$(tokens corpus/examples/$ex.cu)->$(tokens $W/$ex.cu) wall_s=$(( $(date +%s) - t0 )) (cvise -n 16 --timeout 120, budget $BUDGET s)"
  echo "== the result on the GPU (wsoracle)"
  (cd $W && wsoracle --timeout 10 $ex.cu 2>&1 | grep -E "^(verdict|signature):")
} 2>&1 | tee -a "$OUT/s15_cvise.log"
tar -C $W -czf "$OUT/s15_cvise.tgz" $ex.cu test.sh
