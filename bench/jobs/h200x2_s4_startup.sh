#!/usr/bin/env bash
# Session 4 (issue 8): why two GPUs gave 1.3x, not 2x. A campaign's runs are short processes
# (~0.5 s), so what a run costs besides its kernel is the suspect: the CUDA driver bringing the
# device up for every new process. Measured with a trivial CUDA program (one 1-thread kernel and a
# copy back) and with one of the reference kernels (tma_pipeline, default shape):
#   sequential runs on GPU 0 alone; on GPU 0 and GPU 1 at once (one stream each); 2 and 4
#   streams on GPU 0; then the same with a "keeper" process holding a context open on each GPU.
# Prints wall seconds per batch of N runs. Run through scripts/device-run.sh; $OUT/s4_startup.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
N=${N:-20}
W=/tmp/s4s; rm -rf $W; mkdir -p $W
cat > $W/t.cu <<'EOF'
#include <cstdio>
__global__ void k(int *p) { *p = 1; }
int main() {
  int *d = nullptr, h = 0;
  if (cudaMalloc(&d, 4) != cudaSuccess) return 2;
  k<<<1, 1>>>(d);
  cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost);
  return h == 1 ? 0 : 1;
}
EOF
cat > $W/keep.cu <<'EOF'
#include <unistd.h>
int main() { cudaFree(0); for (;;) pause(); }
EOF
{
echo "== s4_startup $(date -u +%FT%TZ) N=$N"
nvidia-smi --query-gpu=index,name,persistence_mode,compute_mode --format=csv
nvcc -arch=sm_90a -o $W/t $W/t.cu && nvcc -arch=sm_90a -o $W/keep $W/keep.cu || exit 1
nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -I oracle/include -o $W/pipe kernels/tma_pipeline_sm90.cu 2>&1 | tail -3
ls $W
seqrun() { local gpu=$1 prog=$2; for i in $(seq $N); do CUDA_VISIBLE_DEVICES=$gpu $prog > /dev/null 2>&1 || echo "run failed on $gpu"; done; }
TIMEFORMAT=%R
suite() {
  for prog in $W/t $W/pipe; do
    [ -x $prog ] || continue
    echo "-- $(basename $prog): $N runs per stream (wall s)"
    printf "  GPU0, 1 stream:           "; time seqrun 0 $prog
    printf "  GPU0+GPU1, 1 stream each: "; time ( seqrun 0 $prog & seqrun 1 $prog & wait )
    printf "  GPU0, 2 streams:          "; time ( seqrun 0 $prog & seqrun 0 $prog & wait )
    printf "  GPU0, 4 streams:          "; time ( for j in 1 2 3 4; do seqrun 0 $prog & done; wait )
    printf "  GPU0+GPU1, 4 streams each:"; time ( for j in 1 2 3 4; do seqrun 0 $prog & seqrun 1 $prog & done; wait )
  done
}
echo "== without keepers"
suite
CUDA_VISIBLE_DEVICES=0 $W/keep & K0=$!
CUDA_VISIBLE_DEVICES=1 $W/keep & K1=$!
sleep 3
echo "== with a keeper process holding a context on each GPU"
suite
kill $K0 $K1
} 2>&1 | tee "$OUT/s4_startup.log"
