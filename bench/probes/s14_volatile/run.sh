#!/usr/bin/env bash
# Session 14 call e (through scripts/device-run.sh): which of the tokens pass's edits made the
# H200 pass call d's result. asis.cu: call d's L0 result (its try_wait asm has neither volatile nor
# a "memory" clobber); volatile.cu: the same with `asm volatile` back; memory.cu: with only the
# "memory" clobber back. Each judged on the GPU and on the emulator.
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/out}
{
  for f in ${FILES:-asis volatile memory}; do
    echo "== $f.cu on the GPU"
    wsoracle $f.cu --timeout 10 2>&1 | grep -E "^(verdict|signature|timings):|cudaDeviceSynchronize:"
    echo "== $f.cu on the emulator"
    wsoracle $f.cu --backend emu --timeout 10 2>&1 | grep -E "^(verdict|signature):"
    if [ -n "${RAW:-}" ]; then
      echo "== $f.cu built by nvcc -arch=sm_90a and run as is (timeout 12 s)"
      nvcc -arch=sm_90a -o /tmp/$f $f.cu && timeout 12 /tmp/$f; echo "exit status $?"
    fi
  done
  [ -n "${FILES:-}" ] && exit 0
  echo "== the try_wait loop in asis.cu's SASS (nvcc -arch=sm_90a -cubin; cuobjdump -sass)"
  nvcc -arch=sm_90a -cubin -o asis.cubin asis.cu && cuobjdump -sass asis.cubin | grep -cE "SYNCS|MBARRIER|TRYWAIT" 
  cuobjdump -sass asis.cubin | grep -E "SYNCS|BRA|EXIT" | head -30
} 2>&1 | tee "$OUT/s14_volatile${FILES:+_more}.log"
