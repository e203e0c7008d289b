#!/usr/bin/env bash
# Session 14 call e (through scripts/device-run.sh): which of the tokens pass's edits made the
# H200 pass call d's result. asis.cu is call d's L0 result; each other variant is it with one edit
# back (made here by make_variant, as they ran):
#   volatile           `asm volatile` back in the try_wait loop (its asm had neither volatile nor "memory")
#   memory             only the "memory" clobber back there
#   consumer_volatile  the consumers' arrive `asm volatile`
#   uchar              `extern __shared__ unsigned char`
#   init_volatile      the mbarrier.init asm statements `asm volatile`
#   tid0, tid1         one producer thread (`== 0`, `== 1`) where asis has threads 1-127
#   checked            asis, printing cudaDeviceSynchronize's error
# FILES picks variants (default: asis volatile memory); RAW=1 also runs each as nvcc builds it.
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/out}
W=$(mktemp -d)
make_variant() {
  local v=$1 f=$W/$1.cu
  cp asis.cu "$f"
  case $v in
    volatile) sed -i '6s/    asm(/    asm volatile(/' "$f" ;;
    memory) sed -i '7s/"r"(phase));/"r"(phase) : "memory");/' "$f" ;;
    consumer_volatile) sed -i 's/        asm("mbarrier.arrive.shared/        asm volatile("mbarrier.arrive.shared/' "$f" ;;
    uchar) sed -i 's/extern __shared__ char smem_raw/extern __shared__ unsigned char smem_raw/' "$f" ;;
    init_volatile) sed -i 's/    asm("mbarrier.init/    asm volatile("mbarrier.init/' "$f" ;;
    tid0) sed -i 's/if ((threadIdx.x)) {/if ((threadIdx.x) == 0) {/' "$f" ;;
    tid1) sed -i 's/if ((threadIdx.x)) {/if ((threadIdx.x) == 1) {/' "$f" ;;
    checked) sed -i 's/^  cudaDeviceSynchronize();$/  cudaError_t e = cudaDeviceSynchronize();\n  __builtin_printf("cudaDeviceSynchronize: %s\\n", cudaGetErrorString(e));/' "$f" ;;
  esac
  cmp -s asis.cu "$f" && [ "$v" != asis ] && { echo "make_variant: $v changed nothing" >&2; return 1; }
  return 0
}
{
  for f in ${FILES:-asis volatile memory}; do
    make_variant $f || continue
    echo "== $f.cu on the GPU"
    wsoracle $W/$f.cu --timeout 10 2>&1 | grep -E "^(verdict|signature|timings):|cudaDeviceSynchronize:"
    echo "== $f.cu on the emulator"
    wsoracle $W/$f.cu --backend emu --timeout 10 2>&1 | grep -E "^(verdict|signature):"
    if [ -n "${RAW:-}" ]; then
      echo "== $f.cu built by nvcc -arch=sm_90a and run as is (timeout 12 s)"
      nvcc -arch=sm_90a -o $W/$f $W/$f.cu && timeout 12 $W/$f; echo "exit status $?"
    fi
  done
  [ -n "${FILES:-}" ] && exit 0
  echo "== the try_wait loop in asis.cu's SASS (nvcc -arch=sm_90a -cubin; cuobjdump -sass)"
  nvcc -arch=sm_90a -cubin -o $W/asis.cubin asis.cu && cuobjdump -sass $W/asis.cubin | grep -cE "SYNCS|MBARRIER|TRYWAIT"
  cuobjdump -sass $W/asis.cubin | grep -E "SYNCS|BRA|EXIT" | head -30
} 2>&1 | tee "$OUT/s14_volatile${FILES:+_more}.log"
rm -rf "$W"
