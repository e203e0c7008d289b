#!/usr/bin/env bash
# Issue 5 on the H200: the hang watchdog. Run through scripts/device-run.sh (wsoracle on PATH,
# $OUT set):   bash scripts/device-run.sh bench/jobs/watchdog.sh
# Writes $OUT/watchdog.log. Sections:
#   0. the buffer modes: file (a MAP_SHARED file registered with cudaHostRegister), poll, pinned;
#      whether the records survive a SIGKILL (a long grace period keeps the trap from ending it)
#   1. one-bug variants of the three sm_90a reference kernels (wrong arrival count, K loop one tile
#      short, wrong expect_tx, init in a role branch, __syncthreads in a role branch) and the
#      mbarrier_hang fixture, judged with the watchdog: verdict, signature, time to the verdict;
#      a few without it for the contrast (the 10 s host timeout it replaces)
#   2. 20 runs of every passing reference kernel at its largest shape with the watchdog: 0 hangs
#   3. overhead: the GEMM and attention benches (cuda-event timings) built from the instrumented
#      kernel vs the original, side by side
# About 6-8 minutes of GPU time. BUDGET_S stops starting new sections past it.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
BUDGET_S=${BUDGET_S:-520}
REPEAT=${REPEAT:-20}
V=/tmp/wdvar
rm -rf $V && mkdir -p "$OUT" $V
F="-std=c++17 -O2 -lineinfo -gencode=arch=compute_90a,code=sm_90a -I oracle/include"
now_ns() { date +%s%N; }
secs() { local d=$(( $2 - $1 )); printf "%d.%03d" $(( d / 1000000000 )) $(( d / 1000000 % 1000 )); }
T_START=$(now_ns)
over_budget() { (( ($(now_ns) - T_START) / 1000000000 > BUDGET_S )); }
want() { [[ " ${SKIP:-} " != *" $1 "* ]]; }  # SKIP="0 1" leaves sections out

# ---- the one-bug variants: kernel|name|sed program (line-anchored patterns, checked below) ----
VARIANTS=(
  "ws_gemm_sm90|arrival|s/mbar_init(&empty\[s\], NUM_CONSUMERS);/mbar_init(\&empty[s], NUM_CONSUMERS + 1);/"
  "ws_gemm_sm90|kshort|364s/kt < K_TILES;/kt < K_TILES - 1;/"
  "ws_gemm_sm90|expect_tx|s/mbar_arrive_expect_tx(&full\[stage\], STAGE_TX_BYTES);/mbar_arrive_expect_tx(\&full[stage], STAGE_TX_BYTES + 1024);/"
  "ws_gemm_sm90|init_in_role|324s/if (threadIdx.x == 0) {/if (threadIdx.x == 0 \&\& warpgroup == 1) {/"
  "ws_gemm_sm90|sync_in_role|335s/warpgroup_reg_dealloc<PRODUCER_REGS>();/warpgroup_reg_dealloc<PRODUCER_REGS>(); __syncthreads();/"
  "tma_pipeline_sm90|arrival|s/mbar_init(&empty\[s\], CONSUMER_THREADS);/mbar_init(\&empty[s], CONSUMER_THREADS + 1);/"
  "tma_pipeline_sm90|kshort|213s/t < NUM_TILES;/t < NUM_TILES - 1;/"
  "tma_pipeline_sm90|expect_tx|s/mbar_arrive_expect_tx(&full\[s\], TILE_BYTES);/mbar_arrive_expect_tx(\&full[s], TILE_BYTES + 1024);/"
  "tma_pipeline_sm90|init_in_role|182s/if (threadIdx.x == 0) {/if (threadIdx.x == 0 \&\& wg == 1) {/"
  "tma_pipeline_sm90|sync_in_role|193s/warpgroup_reg_dealloc<PRODUCER_REGS>();/warpgroup_reg_dealloc<PRODUCER_REGS>(); __syncthreads();/"
  "ws_attention_sm90|arrival|s/mbar_init(&kv_empty\[s\], NUM_CONSUMER_THREADS);/mbar_init(\&kv_empty[s], NUM_CONSUMER_THREADS + 1);/"
  "ws_attention_sm90|kshort|376s/it < KV_TILES;/it < KV_TILES - 1;/"
  "ws_attention_sm90|expect_tx|s/mbar_arrive_expect_tx(&k_full\[s\], KV_TILE_BYTES);/mbar_arrive_expect_tx(\&k_full[s], KV_TILE_BYTES + 1024);/"
  "ws_attention_sm90|init_in_role|327s/if (threadIdx.x == 0) {/if (threadIdx.x == 0 \&\& warpgroup == 1) {/"
  "ws_attention_sm90|sync_in_role|340s/warpgroup_reg_dealloc<PRODUCER_REGS>();/warpgroup_reg_dealloc<PRODUCER_REGS>(); __syncthreads();/"
)
# largest benchmark shapes of the passing kernels (kernels_proof.sh / kernels/README.md)
PASSING=(
  "ws_gemm_sm90|default"
  "ws_gemm_sm90|BLOCK_N=256"
  "tma_pipeline_sm90|default"
  "ws_attention_sm90|ATT_BATCH=3 ATT_HEADS=5 ATT_SEQ=384 BLOCK_N=64 STAGES=3"
)
dflags() { [ "$1" = default ] && return; for x in $1; do printf -- "-D%s " "$x"; done; }

judge() {  # label file [wsoracle args...]: one line per verdict, the evidence indented
  local label=$1 f=$2; shift 2
  local t0=$(now_ns)
  local out; out=$(wsoracle "$f" "$@" 2>&1)
  local t1=$(now_ns)
  local v=$(sed -n 's/^verdict: *//p' <<<"$out" | head -1)
  local sig=$(sed -n 's/^signature: *//p' <<<"$out" | head -1)
  local run=$(sed -n 's/^timings:.* run \([0-9]*\) ms.*/\1/p' <<<"$out" | head -1)
  printf "JUDGE %-34s verdict=%-28s run_ms=%s wall_s=%s\n" "$label" "${v:-none}" "${run:-?}" "$(secs $t0 $t1)"
  echo "    signature: $sig"
  sed -n '/^evidence:/,/^timings:/p' <<<"$out" | grep -v '^timings:' | head -14 | sed 's/^/    | /'
}

{
echo "== watchdog $(date -u +%FT%TZ) budget=${BUDGET_S}s repeat=$REPEAT"
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader
nvcc --version | tail -1
command -v cuda-gdb >/dev/null && echo "cuda-gdb: $(command -v cuda-gdb)" || echo "cuda-gdb: absent"

# ---- make the variants, check that each sed changed exactly what it should ----
for c in "${VARIANTS[@]}"; do
  IFS='|' read -r k name prog <<<"$c"
  sed "$prog" kernels/$k.cu > $V/${k}_$name.cu
  n=$(diff kernels/$k.cu $V/${k}_$name.cu | grep -c '^>')
  [ "$n" = 1 ] && echo "VARIANT ${k}_$name: 1 line changed: $(diff kernels/$k.cu $V/${k}_$name.cu | grep '^>' | sed 's/^> *//')" \
               || echo "VARIANT ${k}_$name: BAD SED ($n lines changed): the kernel moved; fix the line number"
done
cp tests/fixtures/gpu/mbarrier_hang.cu tests/fixtures/gpu/common.h $V/

# ---- warm the build cache on all cores, GPU hidden (only compiles) ----
for f in $V/*.cu; do
  wsoracle $f --timeout 60 --env CUDA_VISIBLE_DEVICES= >/dev/null 2>&1 &
done
for c in "${PASSING[@]}"; do
  k=${c%%|*}; d=${c#*|}
  wsoracle kernels/$k.cu --timeout 60 --env CUDA_VISIBLE_DEVICES= $(dflags "$d") >/dev/null 2>&1 &
  wsoracle kernels/$k.cu --no-watchdog --timeout 60 --env CUDA_VISIBLE_DEVICES= $(dflags "$d") >/dev/null 2>&1 &
done
wsoracle $V/mbarrier_hang.cu --no-watchdog --env CUDA_VISIBLE_DEVICES= >/dev/null 2>&1 &
wait
echo "== builds done at $(secs $T_START $(now_ns)) s"

# ---- 0. buffer modes, and the records surviving a kill ----
if want 0; then
echo "== 0. modes"
for m in file poll pinned; do
  judge "mbarrier_hang mode=$m" $V/mbarrier_hang.cu --timeout 10 --no-retry --env WSWATCH_MODE=$m
done
# the trap is held off for 5 s: the host kills the program at 2 s; only the watch file has records
judge "mbarrier_hang killed (file)" $V/mbarrier_hang.cu --timeout 2 --no-retry --env WSWATCH_GRACE_MS=5000
judge "mbarrier_hang killed (poll)" $V/mbarrier_hang.cu --timeout 2 --no-retry --env WSWATCH_GRACE_MS=5000 --env WSWATCH_MODE=poll
# what the program itself prints at exit (the atexit path)
echo "== the raw stderr of one instrumented run (mbarrier_hang, mode file)"
wsoracle $V/mbarrier_hang.cu --timeout 10 --no-retry --record $V/rec_hang >/dev/null 2>&1
grep -h '"stderr"' $V/rec_hang/run1.json | head -c 3000; echo
if command -v cuda-gdb >/dev/null; then
  echo "== forensics: cuda-gdb on a hang the watchdog cannot see (no watchdog, 4 s timeout)"
  judge "mbarrier_hang no-watchdog + cuda-gdb" $V/mbarrier_hang.cu --no-watchdog --timeout 4 --no-retry --forensics cuda-gdb
fi

fi
# ---- 1. the one-bug variants ----
if want 1; then
echo "== 1. one-bug variants with the watchdog (200 ms bound, 10 s host timeout)"
judge "mbarrier_hang" $V/mbarrier_hang.cu --timeout 10 --no-retry
for c in "${VARIANTS[@]}"; do
  IFS='|' read -r k name prog <<<"$c"
  over_budget && { echo "SKIPPED ${k}_$name: past the budget"; continue; }
  judge "${k}_$name" $V/${k}_$name.cu --timeout 10 --no-retry
done
echo "== 1b. the same without the watchdog (the host timeout it replaces; 3 of them)"
for f in mbarrier_hang ws_gemm_sm90_expect_tx ws_attention_sm90_kshort; do
  over_budget && break
  judge "$f (no watchdog)" $V/$f.cu --no-watchdog --timeout 10 --no-retry
done

fi
# ---- 2. no false hangs ----
if want 2; then
echo "== 2. $REPEAT runs of each passing kernel at its largest shape, watchdog on"
for c in "${PASSING[@]}"; do
  k=${c%%|*}; d=${c#*|}
  over_budget && { echo "SKIPPED $k $d: past the budget"; continue; }
  out=$(wsoracle kernels/$k.cu --repeat $REPEAT --timeout 20 $(dflags "$d") 2>&1)
  v=$(sed -n 's/^verdict: *//p' <<<"$out" | head -1)
  npass=$(grep -c '^  #[0-9]* pass ' <<<"$out")
  printf "NOFALSE %-18s %-50s verdict=%-10s pass=%s/%d\n" $k "$d" "${v:-none}" "$npass" $REPEAT
  case "$v" in pass) ;; *) echo "$out" | head -30 | sed 's/^/    | /' ;; esac
  echo "    watchdog on ($REPEAT runs): $(sed -n 's/^timings: *//p' <<<"$out")"
  out=$(wsoracle kernels/$k.cu --no-watchdog --repeat $REPEAT --timeout 20 $(dflags "$d") 2>&1)
  echo "    watchdog off ($REPEAT runs): $(sed -n 's/^verdict: *//p' <<<"$out" | head -1); $(sed -n 's/^timings: *//p' <<<"$out")"
done

fi
# ---- 3. overhead on the kernels' own time (cuda events in the benches) ----
echo "== 3. overhead: bench/gemm_vs_cublas.cu and bench/attention_vs_naive.cu, original vs instrumented kernel"
if want 3 && ! over_budget; then
  B=/tmp/wdbench; rm -rf $B; mkdir -p $B/kernels $B/bench
  for k in ws_gemm_sm90 ws_attention_sm90; do
    wsoracle kernels/$k.cu --instrument-only $B/kernels/$k.cu -DWS_NO_MAIN || echo "instrument-only failed for $k"
  done
  cp bench/gemm_vs_cublas.cu bench/attention_vs_naive.cu $B/bench/
  G="-DWS_NO_MAIN -DGEMM_M=4096 -DGEMM_N=4096 -DGEMM_K=4096"
  nvcc $F $G bench/gemm_vs_cublas.cu -lcublas -o $B/gemm_off > $B/b1.log 2>&1 &
  nvcc $F $G -I kernels $B/bench/gemm_vs_cublas.cu -lcublas -o $B/gemm_on > $B/b2.log 2>&1 &
  nvcc $F -DWS_NO_MAIN bench/attention_vs_naive.cu -lcublas -o $B/att_off > $B/b3.log 2>&1 &
  nvcc $F -DWS_NO_MAIN -I kernels $B/bench/attention_vs_naive.cu -lcublas -o $B/att_on > $B/b4.log 2>&1 &
  wait
  for l in $B/b*.log; do [ -s $l ] && { echo "build log $l:"; tail -5 $l | sed 's/^/    | /'; }; done
  for i in 1 2 3; do
    for b in gemm_off gemm_on att_off att_on; do
      [ -x $B/$b ] || continue
      echo "BENCH $b run $i: $(timeout -s KILL 60 $B/$b 2>&1 | grep -E '^BENCH' | grep -v check | tr '\n' ' ')"
    done
  done
fi
echo "== watchdog job done in $(secs $T_START $(now_ns)) s"
} 2>&1 | tee "$OUT/watchdog.log"
