#!/usr/bin/env bash
# Packs the pinned CUTLASS tree scripts/setup.sh unpacks (include/, tools/util/include/,
# examples/common/ and example 48) for the GPU machine, which has no copy and no network:
# .device/cutlass.txz, unpacked by bench/jobs/h200_cutlass_header_hang.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
V=4.2.0.0
C=build/third_party/cutlass-$V
[ -f $C/include/cutlass/cutlass.h ] || { echo "pack: no CUTLASS tree at $C (bash scripts/setup.sh)" >&2; exit 1; }
mkdir -p .device
tar -C build/third_party -cJf .device/cutlass.txz cutlass-$V/include cutlass-$V/tools/util/include \
  cutlass-$V/examples/common cutlass-$V/examples/48_hopper_warp_specialized_gemm
ls -la .device/cutlass.txz
