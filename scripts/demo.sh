#!/usr/bin/env bash
# The main job on a bundled example: reduce a failing CUDA program and print the result.
# Without a GPU, the example is one a CPU can judge (a 300-line program with one ptxas
# error); with a GPU, a reference kernel with a hang injected by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/demo
mkdir -p "$out"
if [ -e /dev/nvidia0 ] && [ -f corpus/examples/gemm_arrival_count.cu ]; then
  src=corpus/examples/gemm_arrival_count.cu
  cp "$src" "$out/"
  build/reducer/wsreduce "$out/$(basename "$src")" --symptom hang --timeout 5
  echo "== reduced program:"; cat "$out/gemm_arrival_count.min.cu"
else
  echo "demo: no GPU here: reducing a program whose failure the CPU can judge (a ptxas error)"
  cp tests/fixtures/reduce/ptxas_error.cu "$out/"
  build/reducer/wsreduce "$out/ptxas_error.cu" --symptom compile-error
  echo "== reduced program ($out/ptxas_error.min.cu):"; cat "$out/ptxas_error.min.cu"
  echo "== issue report: $out/ptxas_error.min.md"
fi
