#!/usr/bin/env bash
# SASS landmarks (the fast paths really generated) and speed side by side.
set -uo pipefail
F="-std=c++17 -O3 -lineinfo -gencode=arch=compute_90a,code=sm_90a -I oracle/include"
mkdir -p /tmp/k
for k in ws_gemm_sm90 tma_pipeline_sm90 ws_attention_sm90; do
  nvcc $F kernels/$k.cu -o /tmp/k/$k &
done
nvcc $F -DWS_NO_MAIN -DGEMM_M=4096 -DGEMM_N=4096 -DGEMM_K=4096 bench/gemm_vs_cublas.cu -lcublas -o /tmp/k/gemm_bench &
nvcc $F -DWS_NO_MAIN -DGEMM_M=4096 -DGEMM_N=4096 -DGEMM_K=4096 -DBLOCK_N=256 bench/gemm_vs_cublas.cu -lcublas -o /tmp/k/gemm_bench256 &
nvcc $F -DWS_NO_MAIN bench/attention_vs_naive.cu -lcublas -o /tmp/k/att_bench &
wait
for k in ws_gemm_sm90 tma_pipeline_sm90 ws_attention_sm90; do
  s=$(cuobjdump -sass /tmp/k/$k)
  printf "SASS %-18s HGMMA=%d UTMALDG=%d UTMASTG=%d SETMAXREG=%d\n" $k \
    $(grep -c HGMMA <<<"$s") $(grep -c UTMALDG <<<"$s") $(grep -c UTMASTG <<<"$s") $(grep -c SETMAXREG <<<"$s")
done
echo "== gemm 4096^3 BLOCK_N=128"; timeout 120 /tmp/k/gemm_bench
echo "== gemm 4096^3 BLOCK_N=256"; timeout 120 /tmp/k/gemm_bench256
echo "== attention"; timeout 120 /tmp/k/att_bench
