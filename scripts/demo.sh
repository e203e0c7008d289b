#!/usr/bin/env bash
# The main job on a bundled example: reduce a warp-specialized kernel that hangs and print the
# result. corpus/examples/pipeline_arrival_count.cu is the reference TMA pipeline with one bug
# (its empty[] barriers expect one arrival more than consumers give: docs/methodology.md class 1).
# With a GPU the candidates run there (the watchdog turns each hang into a verdict in about a
# second); without one, --backend auto runs them on the CPU emulator (emu/), which names the
# deadlock exactly. Either way: build/demo/pipeline_arrival_count.min.cu and .min.md.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/demo
mkdir -p "$out"
name=pipeline_arrival_count
cp corpus/examples/$name.cu "$out/"
if [ -e /dev/nvidia0 ]; then
  echo "demo: a GPU is here: the candidates run on it"
else
  echo "demo: no GPU here: the candidates run on the CPU emulator (--backend auto)"
fi
# --budget: the best program ten minutes of search find, finished and reported (on 2 cores and the
# emulator the search runs on well past that to its fixpoint; see README).
# --force: the demo starts over each time it is run (its result is its own, in build/demo).
build/reducer/wsreduce "$out/$name.cu" --symptom hang --budget 600 --force
echo "== reduced program ($out/$name.min.cu):"
cat "$out/$name.min.cu"
echo "== issue report: $out/$name.min.md"
