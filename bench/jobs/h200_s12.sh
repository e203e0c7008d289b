#!/usr/bin/env bash
# Session 12 (issue 4), on nvidia-h200 (16 cores, 1 GPU) through scripts/device-run.sh.
#  Q: why one emulator candidate costs ~2.3x on the GPU machine what it costs on the 2-core CPU
#     machine (session 11 call c: parse 438 vs 184 ms, build 1255 vs 575 ms), with nothing else
#     running: the CPU, a pure-CPU loop, wsoracle --backend emu --no-cache on one program (build
#     time), the translated program compiled by g++ with and without the precompiled runtime
#     header (-Winvalid-pch says when g++ refuses it), and -H (whether the .gch is read).
#     Run the same here: `bash bench/jobs/h200_s12.sh probe` (no GPU needed for Q).
#  S: which host calls wait for a running kernel (bench/probes/sync_points.cu): MODE sync.
#  R: reductions on the emulator judge (--symptom hang unless the flags name one), each result confirmed on the GPU: HALF0="tag:example:jobs:
#     budget[:flags] ..." (flags comma-separated) one after the other on cores 0-15 and GPU 0;
#     HALF1 the same on cores 16-31 and GPU 1 (nvidia-h200-x2: two halves the size of nvidia-h200).
#     RESUME_FROM=dir: continue an earlier call's reduction of the same example (session 17).
# Logs: $OUT/s12_probe.log, $OUT/s12_reduce.log and s12_reduce.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
MODE=${1:-all}
TAG=${TAG:-s12}  # the session whose evidence this is (log and folder names); session 13 ran it with TAG=s13
P=/tmp/p12
probe() {
  rm -rf $P; mkdir -p $P
  cp bench/results/2026-11-30-cpu-s11/gemm-300s/gemm_arrival_count.min.cu $P/g.cu
  echo "== s12 probe $(date -u +%FT%TZ) on $(hostname)"
  lscpu | grep -E "^(Model name|CPU\(s\)|Thread|Core|Socket|CPU max MHz|CPU MHz|L3)" | sed 's/  */ /g'
  nproc; free -g | head -2; df -h /tmp | tail -1; g++ --version | head -1
  TIMEFORMAT='%R s'
  echo "== a pure-CPU loop (python3), 3 times"
  for i in 1 2 3; do python3 -c 'import time
t=time.time(); s=0
for i in range(5*10**6): s+=i*i
print("loop %.3f s" % (time.time()-t))'; done
  echo "== wsoracle --backend emu: cold (builds the .gch), then --no-cache x4"
  export WSREDUCE_CACHE=$P/cache
  wsoracle --backend emu $P/g.cu 2>&1 | grep -E "^(verdict|timings)"
  for i in 1 2 3 4; do wsoracle --backend emu --no-cache $P/g.cu 2>&1 | grep -E "^timings"; done
  local pch cpp root lib ctx
  pch=$(ls -d $P/cache/emu/pch-* | head -1); cpp=$(ls $P/cache/emu/emu-*/g.emu.cpp | head -1)
  if [ -n "${WSR:-}" ]; then root=$WSR/share/wsreduce/emu-root; lib=$WSR/lib/libwsr_emu_runtime.a; ctx=$WSR/lib/libboost_context.a
  else root=$PWD; lib=$PWD/build/emu/libwsr_emu_runtime.a; ctx=/usr/lib/x86_64-linux-gnu/libboost_context.a; fi
  echo "pch=$pch ($(du -sh $pch | cut -f1)) cpp=$cpp"
  local base=(g++ -std=c++20 -O1 -w -ftrivial-auto-var-init=pattern)
  echo "== g++ with the .gch (-Winvalid-pch), x3: compile+link, then compile only"
  for i in 1 2 3; do time "${base[@]}" -Winvalid-pch -I $pch -I $root -I $root/emu/shim -I $P $cpp $lib $ctx -lpthread -o $P/prog; done
  for i in 1 2 3; do time "${base[@]}" -Winvalid-pch -I $pch -I $root -I $root/emu/shim -I $P -c $cpp -o $P/prog.o; done
  echo "== g++ without it, x2"
  for i in 1 2; do time "${base[@]}" -I $root -I $root/emu/shim -I $P -c $cpp -o $P/prog.o; done
  echo "== link only, x2"
  for i in 1 2; do time g++ $P/prog.o $lib $ctx -lpthread -o $P/prog; done
  echo "== -H: the first headers g++ reads (a '!' line: the .gch was used)"
  "${base[@]}" -Winvalid-pch -H -fsyntax-only -I $pch -I $root -I $root/emu/shim -I $P $cpp 2>&1 | head -4
  echo "== 8 of the same g++ at once (contention), wall of all"
  time (for i in 1 2 3 4 5 6 7 8; do "${base[@]}" -I $pch -I $root -I $root/emu/shim -I $P -c $cpp -o $P/prog$i.o & done; wait)
}
one() {  # tag cores gpu example jobs budget flags
  local tag=$1 cores=$2 gpu=$3 ex=$4 jobs=$5 budget=$6 flags=${7:-}
  local W=$W0/$tag; mkdir -p $W; cp corpus/examples/$ex.cu $W/
  local extra=(); [ -n "$flags" ] && extra+=(${flags//,/ })
  # RESUME_FROM=dir holding an earlier call's $ex.min.cu and $ex.min.state.json (carried in the
  # working tree): that call's best program is where this one starts (--resume), same input.
  if [ -n "${RESUME_FROM:-}" ] && [ -f "$RESUME_FROM/$ex.min.cu" ] && [ -f "$RESUME_FROM/$ex.min.state.json" ]; then
    cp "$RESUME_FROM/$ex.min.cu" "$RESUME_FROM/$ex.min.state.json" $W/
    extra+=(--resume)
  fi
  local sym=(--symptom hang); [[ "$flags" == *--symptom* ]] && sym=()  # flags may name another
  local t0=$(date +%s%N)
  CUDA_VISIBLE_DEVICES=$gpu WSREDUCE_CACHE=/tmp/wsr-cache-$tag timeout -s INT $((budget + 60)) taskset -c $cores \
    wsreduce $W/$ex.cu "${sym[@]}" -j$jobs --timeout ${TIMEOUT:-10} --backend emu --confirm gpu --budget $budget "${extra[@]}" > $W/$ex.log 2>&1
  local rc=$? t1=$(date +%s%N)
  {
    echo "RESULT $tag rc=$rc lines=$(grep -c '[^[:space:]]' $W/$ex.cu)->$(grep -c '[^[:space:]]' $W/$ex.min.cu) wall_s=$(( (t1 - t0) / 1000000000 )) (wsreduce $ex.cu ${sym[*]} -j$jobs --backend emu --confirm gpu --budget $budget ${extra[*]}; cores $cores, GPU $gpu)"
    grep -E "original verdict|confirmed|slots|budget" $W/$ex.log | sed 's/^/    /'
    echo "    the reduced program on GPU $gpu (wsoracle):"
    CUDA_VISIBLE_DEVICES=$gpu wsoracle $W/$ex.min.cu --timeout 10 2>&1 | grep -E "^(verdict|signature):" | sed 's/^/      /'
  } > $W/summary.txt
}
half() {  # cores gpu specs...
  local cores=$1 gpu=$2; shift 2
  for spec in "$@"; do IFS=: read tag ex jobs budget flags <<< "$spec"; one $tag $cores $gpu $ex $jobs $budget "${flags:-}"; done
}
reduce() {
  W0=/tmp/$TAG; rm -rf $W0; mkdir -p $W0
  echo "== $TAG reduce $(date -u +%FT%TZ) half0=[${HALF0:-}] half1=[${HALF1:-}] nproc=$(nproc)"
  half 0-15 0 ${HALF0:-} &
  [ -n "${HALF1:-}" ] && half 16-31 1 $HALF1 &
  wait
  for s in $W0/*/summary.txt; do cat $s; done
  for d in $W0/*/; do echo "== $(basename $d): the reduced program"; cat $d/*.min.cu; done
  tar -C $W0 -czf "$OUT/${TAG}_reduce.tgz" $(cd $W0 && ls)
}
sync() {  # which host calls wait for a running kernel (bench/probes/sync_points.cu), process wall too
  mkdir -p $P
  nvcc -O2 -arch=sm_90a -o $P/sync_points bench/probes/sync_points.cu || return
  echo "== sync points $(date -u +%FT%TZ): a kernel spins 1500 ms, then one host call, timed"
  for w in sync memcpy0 memcpy0d memcpy4 memcpyh2h free0 free memset getlasterror malloc0memcpy memcpyhostsrc freeinterior freegarbage memcpyhostdst; do
    local t=$(date +%s%N)
    local o=$(CUDA_VISIBLE_DEVICES=0 $P/sync_points $w 2>&1)
    echo "$o  process wall $(( ($(date +%s%N) - t) / 1000000 )) ms"
  done
}
case $MODE in
  sync) sync 2>&1 | tee "$OUT/${TAG}_sync.log" ;;
  sync+reduce) sync 2>&1 | tee "$OUT/${TAG}_sync.log"; reduce 2>&1 | tee "$OUT/${TAG}_reduce.log" ;;
  probe) probe 2>&1 | tee "$OUT/s12_probe.log" ;;
  reduce) reduce 2>&1 | tee "$OUT/${TAG}_reduce.log" ;;
  all) probe 2>&1 | tee "$OUT/s12_probe.log"; reduce 2>&1 | tee "$OUT/s12_reduce.log" ;;
esac
