#!/usr/bin/env bash
# Builds the statically linked tools (only libc/libm left dynamic) and packs an install
# tree for the GPU machine, which has no Clang libraries: .device/wsreduce.txz holds
#   bin/            the tools
#   share/wsreduce/include/   the harness header (found relative to the executables)
#   lib/clang/22/include/     Clang's builtin headers (found relative to the executables)
#   lib/libwsr_emu_runtime.a, lib/libboost_context.a, share/wsreduce/emu-root/emu/runtime/
#                             the CPU emulator's runtime and headers (--backend emu there too;
#                             the candidates are compiled by the GPU machine's own g++)
#   lib/wsemu-ptx/            the PTX path's libraries (its CUDA runtime, interpreter, runtime)
# Carry `.device/wsreduce.txz` with the working tree; scripts/device-run.sh unpacks it.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="$PWD/.device/wsreduce"
cmake -S . -B build-static -G Ninja -DWSREDUCE_STATIC=ON -DWSREDUCE_TESTS=OFF \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" >/dev/null
tools="oracle/wsoracle reducer/wsreduce fuzzer/wsfuzz"
ninja -C build-static $(for t in $tools; do basename $t; done) wsr_emu_runtime wsemu_ptx_libdir
rm -rf "$prefix"
mkdir -p "$prefix/bin" "$prefix/share/wsreduce/include" "$prefix/lib/clang/22"
for t in $tools; do cp build-static/$t "$prefix/bin/"; done
cp oracle/include/*.h oracle/include/*.cuh "$prefix/share/wsreduce/include/" 2>/dev/null || cp oracle/include/*.h "$prefix/share/wsreduce/include/"
for b in "$prefix"/bin/*; do  # the GPU machine has no Clang or LLVM libraries
  extra=$(ldd "$b" | grep -v -E 'libc\.so|libm\.so|vdso|ld-linux' || true)
  [ -z "$extra" ] || { echo "device-pack: $b needs shared libraries the GPU machine lacks:"; echo "$extra"; exit 1; }
done
cp -r /usr/lib/llvm-22/lib/clang/22/include "$prefix/lib/clang/22/"
mkdir -p "$prefix/share/wsreduce/emu-root/emu/runtime/shim"
cp emu/runtime/*.h "$prefix/share/wsreduce/emu-root/emu/runtime/"
cp emu/runtime/shim/* "$prefix/share/wsreduce/emu-root/emu/runtime/shim/"
cp build-static/emu/libwsr_emu_runtime.a "$prefix/lib/"
cp /usr/lib/x86_64-linux-gnu/libboost_context.a "$prefix/lib/"
mkdir -p "$prefix/lib/wsemu-ptx"  # the PTX path links these (emu/ptx/ptx_build.cpp)
cp build-static/emu/ptx-lib/*.a "$prefix/lib/wsemu-ptx/"
tar -C .device -cJf .device/wsreduce.txz wsreduce
# wsoracle alone, for calls that carry another large tree beside it (bench/jobs/h200_s15_cvise.sh)
tar -C .device -cJf .device/wsoracle.txz --exclude=wsreduce/bin/wsreduce --exclude=wsreduce/bin/wsfuzz wsreduce
ls -la .device/wsreduce.txz .device/wsoracle.txz
