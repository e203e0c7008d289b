// The CPU emulation backend's translator: a Clang 22 LibTooling rewrite of a .cu
// into one host C++ translation unit against the wsemu runtime (emu/runtime/ptx.h) and the CUDA
// shim (emu/runtime/cuda_shim.h; emu/runtime/shim/ forwards cuda.h, cuda_runtime.h, ... to it).
//
// What the rewrite does (edits on the user's text; every edit keeps the line count, so WSEMU_HERE
// in the translated file names the user's line, and a `#line 1 "<path>"` follows the shim include):
//   - every asm statement in device code -> C++ calls into wsemu::ptx with the operands bound
//     (translateAsm below); a statement it cannot map -> wsemu::ptx::unknown_instruction("<text>")
//   - `__shared__ T x[...]` -> `auto &x = wsemu_shim::sharedVar<T[...]>("x")` (per-CTA storage);
//     `extern __shared__ T x[]` -> `T *x = (T *)wsemu::dynamicShared()`
//   - `p[i]` and `*p` on pointers in device-only functions -> wsemu::at(...) (checked accesses:
//     an out-of-bounds global or shared access is UB named at the user's line)
//   - calls of the user's device functions from device code -> wsemu_shim::at_call(WSEMU_HERE, ...)
//     (a parked thread's site reads "caller>callee")
//   - `k<<<g, b, smem, s>>>(args)` (host AST) -> wsemu_shim::launch(g, b, smem, [..]{ k(args); },
//   WSEMU_HERE):
//     a failing launch prints its WSEMU lines and exits 86 (hang) / 87 (UB) / 88 (infra)
// What the shim does instead of edits: the CUDA attributes (__global__, __device__,
// __forceinline__,
// __launch_bounds__, __grid_constant__) are macros; threadIdx/blockIdx/blockDim/gridDim and the
// intrinsics (__syncthreads, __shfl_*_sync, __cvta_generic_to_shared, ...) are macros onto the
// runtime with WSEMU_HERE; the runtime API subset is inline functions; __CUDA_ARCH__ is 900.
#pragma once

#include "parse.h"

#include <functional>
#include <string>
#include <vector>

namespace wsr {
struct BuildOptions;
struct BuildRecord;
}  // namespace wsr

namespace wsr::emu {

struct AsmOperand {
  std::string constraint;  // "r", "=r", "+f", "l", "n", ...
  std::string text;        // the C++ expression as the user wrote it
};

// One asm statement's template and operands (outputs first, then inputs, GCC numbering) as C++
// statements against wsemu::ptx (no surrounding braces). Returns false when an instruction is not
// known: *unknown names it, and *out is a call of wsemu::ptx::unknown_instruction. `uid` makes the
// labels of the block unique.
bool translateAsm(const std::string &tmpl, const std::vector<AsmOperand> &ops, unsigned uid,
                  std::string *out, std::string *unknown);

struct TranslateOptions {
  ParseOptions
      parse;  // -I, -D as for the GPU build (the harness include dir is added by the caller)
};

struct TranslateResult {
  bool ok = false;
  std::string error;  // why there is no translation (the file does not parse, ...)
  std::string text;   // the translated C++ (compile with -I <repo> -I <repo>/emu/runtime/shim)
  unsigned asm_statements = 0, asm_unknown = 0, launches = 0, shared_vars = 0, checked_accesses = 0;
  std::vector<std::string> unknown;   // "line N: <instruction>" for each asm it could not map
  std::vector<std::string> warnings;  // things left as they were (a __shared__ at file scope, ...)
  // mbarrier.init asm statements in kernels, in functions the program names, or in lambdas: what
  // the runtime's use-before-init verdict says it had (wsemu::ptx::declareInitSites).
  unsigned init_sites = 0;
};

TranslateResult translate(const std::string &text, const std::string &path,
                          const TranslateOptions &opt);

// The emu backend's build stage: translate `source_path`, write the C++ into the cache and compile
// it with g++ (-O1 -std=c++20) against the runtime library. A translation failure is a BuildRecord
// with ok=false and the reason in the log; the classifier makes it a compile-error.
// Flags from `o`: includes, defines, cache_dir, use_cache, timeout_s (nvcc flags and arch are
// ignored).
BuildRecord buildEmu(const std::string &source_path, const BuildOptions &o,
                     std::string *translated_path = nullptr);

// buildEmu as the oracle's OracleOptions::emu_build hook.
std::function<BuildRecord(const std::string &, const BuildOptions &)> emuBuilder();

// Where the runtime library, Boost.Context and the include roots are (compile definitions of this
// build tree); empty when not found.
std::string emuRuntimeLibrary();
std::string emuIncludeRoot();

}  // namespace wsr::emu
