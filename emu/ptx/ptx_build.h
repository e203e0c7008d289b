// The PTX path's build stage: the program compiled by nvcc as its author builds it, linked with
// `-cudart none` against the emulator's CUDA runtime (emu/host/cudart.cpp) instead of the GPU's,
// and its kernels' PTX kept beside the binary (`prog.ptx`), which the runtime loads at the first
// launch. Nothing of the source is rewritten.
#pragma once

#include <string>

#include "build.h"

namespace wsr::emu {

// Builds `source_path` for the PTX emulator into the cache (BuildOptions: nvcc, arch, flags,
// includes, defines, libs, cache_dir, use_cache, timeout_s). A link error naming a CUDA entry
// point the emulator's runtime does not define is a failed build whose log names it
// ("unsupported: the CUDA entry point `x`").
BuildRecord buildPtxEmu(const std::string &source_path, const BuildOptions &o);

// Where the emulator's host libraries are (this build tree's); empty when not built.
std::string ptxEmuLibraryDir();

}  // namespace wsr::emu
