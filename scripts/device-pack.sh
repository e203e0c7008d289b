#!/usr/bin/env bash
# Builds the statically linked tools (only libc/libm left dynamic) and packs an install
# tree for the GPU machine, which has no Clang libraries: .device/wsreduce.txz holds
#   bin/            the tools
#   share/wsreduce/include/   the harness header (found relative to the executables)
#   lib/clang/22/include/     Clang's builtin headers (found relative to the executables)
# Carry `.device/wsreduce.txz` with the working tree; scripts/device-run.sh unpacks it.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="$PWD/.device/wsreduce"
cmake -S . -B build-static -G Ninja -DWSREDUCE_STATIC=ON -DWSREDUCE_TESTS=OFF \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" >/dev/null
ninja -C build-static
rm -rf "$prefix"
ninja -C build-static install >/dev/null
mkdir -p "$prefix/lib/clang/22"
cp -r /usr/lib/llvm-22/lib/clang/22/include "$prefix/lib/clang/22/"
tar -C .device -cJf .device/wsreduce.txz wsreduce
ls -la .device/wsreduce.txz
