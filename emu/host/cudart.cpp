// The CUDA runtime and driver entry points a program built with `nvcc -cudart none` calls, on the
// CPU emulator. The program is compiled as its author builds it, with the real CUDA headers; it
// links this library instead of libcudart/libcuda (emu/ptx/ptx_build.cpp). nvcc's host stubs
// register each kernel (__cudaRegisterFunction: host stub -> mangled name) and launch through
// __cudaLaunchKernel; the launch runs the kernel's PTX (beside the binary, `<exe>.ptx`, or
// WSEMU_PTX) on the runtime's fibers (emu/ptx/interp.cpp).
//
// What the host sees follows the translator's shim (emu/runtime/cuda_shim.h), whose rules each
// came from an H200 run: a kernel's failure shows at the host's next synchronizing call; a hang
// is the verdict there; a fault is "unspecified launch failure" from then on, and the verdict is
// said when the program asks for that error's text; launches outside the GPU's limits, or over
// 48 KiB of dynamic shared memory without the opt-in, do not run.
//
// A launch runs at the host's next call that orders work after it, not inside the launch call
// (Held, below): a kernel launched next with programmatic stream serialization runs with it.
//
// An entry point this file does not define is a link error, which the build turns into a
// refusal naming it; a driver entry point asked for by name that is not here is refused at run
// time, naming it. Never a silent stand-in.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "emu/ptx/module.h"
#include "emu/runtime/ptx.h"

namespace {

using wsemu::ptxe::Function;
using wsemu::ptxe::Module;

// ---- refusals ----
[[noreturn]] void refuse(const std::string &message) {
  wsemu::Verdict v;
  v.symptom = "infra-error";
  v.detail = "infra-error/unsupported";
  v.signature = "unsupported";
  v.message = message;
  v.block_of_failure = wsemu::Dim3(0, 0, 0);
  std::fflush(stdout);
  v.print(stderr);
  std::fflush(stderr);
  std::_Exit(v.exitStatus());
}

// ---- registration: host stub -> kernel name; host variable -> device symbol ----
struct Registry {
  std::map<const void *, std::string> kernels;
  struct Sym {
    std::string name;
    size_t bytes;
  };
  std::map<const void *, Sym> vars;
  std::map<const void *, int> max_dyn_smem;  // cudaFuncAttributeMaxDynamicSharedMemorySize
  std::map<const void *, int> non_portable;  // cudaFuncAttributeNonPortableClusterSizeAllowed
  struct Config {
    dim3 grid, block;
    size_t smem;
    void *stream;
  };
  std::vector<Config> configs;
};
Registry &reg() {
  static Registry r;
  return r;
}

// ---- the PTX module, loaded at first use ----
std::string ptxPath() {
  if (const char *p = std::getenv("WSEMU_PTX"); p && *p) return p;
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  buf[n] = 0;
  return std::string(buf) + ".ptx";
}

Module &module() {
  static std::unique_ptr<Module> m;
  if (m) return *m;
  const std::string path = ptxPath();
  std::ifstream in(path);
  if (!in)
    refuse("the program's PTX (" + path +
           ") cannot be read: build it with wsemu-ptx, or set WSEMU_PTX");
  std::stringstream ss;
  ss << in.rdbuf();
  m = std::make_unique<Module>();
  std::string err;
  if (!wsemu::ptxe::parseModule(ss.str(), m.get(), &err)) refuse("unsupported: " + err);
  // How many mbarrier.init instructions the program holds: a use before init then says whether
  // the program has none (init-absent), has some its CTA never ran (init-unrun), or ran others'.
  int inits = 0;
  for (auto &f : m->funcs)
    for (auto &in : f.code) inits += in.op == wsemu::ptxe::Op::MbarInit;
  wsemu::ptx::declareInitSites(inits);
  // module-scope .global/.const variables: device memory, initialised as declared
  m->var_storage.assign(m->vars.size(), nullptr);
  for (size_t i = 0; i < m->vars.size(); ++i) {
    auto &v = m->vars[i];
    if (v.space != wsemu::ptxe::Space::Global && v.space != wsemu::ptxe::Space::Const) continue;
    auto *p =
        static_cast<uint8_t *>(wsemu::emuMalloc(std::max<size_t>(v.bytes, 1), v.name.c_str()));
    if (!v.init.empty()) std::memcpy(p, v.init.data(), std::min<size_t>(v.init.size(), v.bytes));
    m->var_storage[i] = p;
  }
  return *m;
}

uint8_t *symbolStorage(const void *host_var, size_t *bytes) {
  auto it = reg().vars.find(host_var);
  if (it == reg().vars.end()) return nullptr;
  Module &m = module();
  for (size_t i = 0; i < m.vars.size(); ++i)
    if (m.vars[i].name == it->second.name && m.var_storage[i]) {
      *bytes = m.vars[i].bytes;
      return m.var_storage[i];
    }
  return nullptr;
}

// ---- a failed launch: shown at the next synchronizing call (cuda_shim.h's Pending) ----
struct Pending {
  bool set = false;
  wsemu::Verdict v;
  std::string kernel;
  bool sticky = false;    // the host was told of a fault: every call returns it from then on
  bool reported = false;  // the host asked for the fault's text: the verdict is said at exit
};
Pending &pending() {
  static Pending p;
  return p;
}
cudaError_t &lastError() {
  static cudaError_t e = cudaSuccess;
  return e;
}

// Device printf's output, written at the host's synchronizing calls and at exit, as the GPU
// writes it out.
void flushDevicePrintf() {
  const std::string s = wsemu::ptxe::takeDevicePrintf();
  if (!s.empty()) std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

[[noreturn]] void sayVerdictAndExit(const Pending &p) {
  flushDevicePrintf();
  p.v.print(stderr);
  std::fflush(stderr);
  std::_Exit(p.v.exitStatus());
}
// The error a failed kernel leaves: a failed device assert is its own (cudaErrorAssert), every
// other fault "unspecified launch failure", as the emulator cannot tell the GPU's finer classes.
cudaError_t faultError() {
  return pending().v.detail == "crash/device-assert" ? cudaErrorAssert : cudaErrorLaunchFailure;
}
void runHeld();
cudaError_t syncPoint() {
  runHeld();
  flushDevicePrintf();
  auto &p = pending();
  if (!p.set) return cudaSuccess;
  if (p.v.symptom == "ub" || p.v.symptom == "crash") {
    p.sticky = true;
    return lastError() = faultError();
  }
  sayVerdictAndExit(p);
}
cudaError_t sticky() { return pending().sticky ? faultError() : cudaSuccess; }
void askedFor(int e) {
  if (pending().sticky && e == (int)faultError()) pending().reported = true;
}
void atExit(int status, void *) {
  auto &p = pending();
  if (!p.set) return;
  if (p.reported) sayVerdictAndExit(p);
  if (p.sticky)
    std::fprintf(stderr,
                 "[wsemu] the kernel %s failed (%s); the program was told (unspecified launch "
                 "failure) and exited with status %d without reporting it: on the GPU nothing more "
                 "is seen\n",
                 p.kernel.c_str(), p.v.detail.c_str(), status);
  else
    std::fprintf(stderr,
                 "[wsemu] the kernel %s failed (%s), but the program never synchronized with it "
                 "before exiting: on the GPU it is abandoned at exit and nothing is seen\n",
                 p.kernel.c_str(), p.v.detail.c_str());
}

// The `.target` of the program's PTX as a number (sm_100a: 100), or 0 when it cannot be read.
int ptxTargetSm() {
  std::ifstream in(ptxPath());
  std::string line;
  for (int i = 0; i < 64 && std::getline(in, line); ++i) {
    const size_t at = line.find(".target");
    if (at == std::string::npos) continue;
    const size_t sm = line.find("sm_", at);
    return sm == std::string::npos ? 0 : std::atoi(line.c_str() + sm + 3);
  }
  return 0;
}

// The device the emulator stands for: an H200, or, for a program whose PTX targets sm_100
// (tcgen05 and tensor memory, emu/runtime/tcgen05.cpp), a device of compute capability 10.0, so
// that a Blackwell program's own capability check lets it run. Its other properties stay the
// H200's (132 SMs, the same thread and shared-memory limits).
const cudaDeviceProp &props() {
  static const cudaDeviceProp p = [] {
    cudaDeviceProp q;
    std::memset(&q, 0, sizeof q);
    const bool sm100 = ptxTargetSm() == 100;
    std::snprintf(q.name, sizeof q.name, "%s",
                  sm100 ? "wsemu (CPU emulation, sm_100a; otherwise an H200's properties)"
                        : "wsemu (CPU emulation of an H200, sm_90a)");
    q.major = sm100 ? 10 : 9;
    q.minor = 0;
    q.multiProcessorCount = 132;
    q.sharedMemPerBlock = 48 * 1024;
    q.sharedMemPerBlockOptin = 227 * 1024;
    q.sharedMemPerMultiprocessor = 228 * 1024;
    q.totalGlobalMem = 141ull << 30;
    q.maxThreadsPerBlock = 1024;
    q.maxThreadsDim[0] = q.maxThreadsDim[1] = 1024;
    q.maxThreadsDim[2] = 64;
    q.maxGridSize[0] = 0x7fffffff;
    q.maxGridSize[1] = q.maxGridSize[2] = 65535;
    q.warpSize = 32;
    q.regsPerBlock = 65536;
    q.regsPerMultiprocessor = 65536;
    q.l2CacheSize = 50 << 20;
    q.maxThreadsPerMultiProcessor = 2048;
    q.maxBlocksPerMultiProcessor = 32;
    q.totalConstMem = 64 * 1024;
    q.clusterLaunch = 1;
    q.concurrentKernels = 1;
    q.canMapHostMemory = 1;
    q.unifiedAddressing = 1;
    q.managedMemory = 1;
    q.memoryBusWidth = 6144;
    q.pciDeviceID = 0;
    return q;
  }();
  return p;
}

bool validConfig(dim3 g, dim3 b) {
  if (g.x < 1 || g.x > 0x7fffffffu || g.y < 1 || g.y > 65535 || g.z < 1 || g.z > 65535)
    return false;
  if (b.x < 1 || b.y < 1 || b.z < 1 || b.x > 1024 || b.y > 1024 || b.z > 64) return false;
  return (uint64_t)b.x * b.y * b.z <= 1024;
}

const wsemu::Config &config() {
  static const wsemu::Config c = [] {
    wsemu::Config k = wsemu::configFromEnv();
    k.exit_on_failure = false;  // deferred to the next synchronizing call
    return k;
  }();
  return c;
}

// A launch configuration's cudaLaunchAttributeClusterDimension, or 0 x 0 x 0 when it names none.
dim3 clusterAttribute(const cudaLaunchConfig_t &config) {
  dim3 cluster(0, 0, 0);
  for (unsigned i = 0; i < config.numAttrs; ++i)
    if (config.attrs[i].id == cudaLaunchAttributeClusterDimension) {
      const auto &d = config.attrs[i].val.clusterDim;
      cluster = dim3(d.x, d.y, d.z);
    }
  return cluster;
}

// A kernel's failure, for the host's next synchronizing call.
void launchFailed(const wsemu::Verdict &v, const std::string &kernel) {
  pending().set = true;
  pending().v = v;
  pending().kernel = kernel;
  static const bool registered = (::on_exit(atExit, nullptr), true);
  (void)registered;
}

// ---- launches made and not run yet ----
// A launch is held until the host's next call that orders work after it in the stream: a
// synchronizing call, a copy, a memset, an event record, a launch, or the program's exit. A kernel
// launched next with programmatic stream serialization (the launch attribute
// cudaLaunchAttributeProgrammaticStreamSerialization) joins it: the two run in one scheduler
// (wsemu::launchDependent), the dependent as early as griddepcontrol.launch_dependents lets it, and
// its accesses before griddepcontrol.wait are checked against the other's. The host sees what it
// saw when launches ran at once: a kernel's failure shows at its next synchronizing call. Every
// stream is the one stream here (cudaStreamCreate gives the null stream).
struct Held {
  std::string name;
  const Function *fn = nullptr;
  dim3 g, b, cd;
  size_t smem = 0;
  bool explicit_cluster = false;
  uint8_t *params = nullptr;  // the launch's parameter buffer (std::aligned_alloc)
};
// Each launch after the first was made with programmatic stream serialization. Never destroyed: it
// is run at exit.
std::vector<Held> &held() {
  static auto *h = new std::vector<Held>;
  return *h;
}

void runHeld() {
  std::vector<Held> chain;
  chain.swap(held());
  if (chain.empty()) return;
  Module &m = module();
  std::vector<wsemu::GridSpec> grids;
  for (const Held &h : chain)
    grids.push_back({wsemu::Dim3(h.g.x, h.g.y, h.g.z), wsemu::Dim3(h.b.x, h.b.y, h.b.z), h.smem,
                     [&m, &h] { wsemu::ptxe::runThread(m, *h.fn, h.params, h.fn->param_bytes); },
                     wsemu::SrcLoc{h.name.c_str(), 0}, wsemu::Dim3(h.cd.x, h.cd.y, h.cd.z),
                     h.explicit_cluster});
  size_t failed = 0;
  const wsemu::GridSpec &one = grids.front();
  const wsemu::Verdict v = grids.size() == 1
                               ? wsemu::launch(one.grid, one.block, one.dynamic_smem, one.kernel,
                                               config(), one.loc, one.cluster, one.explicit_cluster)
                               : wsemu::launchDependent(grids, config(), &failed);
  for (Held &h : chain) std::free(h.params);
  if (!v.pass()) launchFailed(v, chain[failed].name);
}
// A program that exits with launches held: they run then, as the GPU runs them before the process
// ends (what a failure shows then: atExit).
void runHeldAtExit(int, void *) { runHeld(); }

// `cluster`: clusterAttribute's, for cudaLaunchKernelEx; 0 x 0 x 0 for a <<<>>> launch.
// `dependent`: launched with programmatic stream serialization (cudaLaunchKernelEx).
cudaError_t launchKernel(const void *stub, dim3 g, dim3 b, void **args, size_t smem,
                         dim3 cluster = dim3(0, 0, 0), bool dependent = false) {
  auto kit = reg().kernels.find(stub);
  if (kit == reg().kernels.end())
    refuse("unsupported: a launch of a function no __cudaRegisterFunction registered");
  const std::string &name = kit->second;
  if (!validConfig(g, b)) {
    std::fprintf(stderr,
                 "[wsemu] launch of %s not run: grid (%u, %u, %u) x block (%u, %u, %u) is outside "
                 "the GPU's limits (the GPU refuses it: invalid configuration argument)\n",
                 name.c_str(), g.x, g.y, g.z, b.x, b.y, b.z);
    return lastError() = cudaErrorInvalidConfiguration;
  }
  int optin = 0;
  if (auto it = reg().max_dyn_smem.find(stub); it != reg().max_dyn_smem.end()) optin = it->second;
  if (smem > props().sharedMemPerBlock && smem > (size_t)optin) {
    std::fprintf(stderr,
                 "[wsemu] launch of %s not run: %zu bytes of dynamic shared memory > 48 KiB "
                 "without cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize) (the "
                 "GPU refuses it: invalid argument)\n",
                 name.c_str(), smem);
    return lastError() = cudaErrorInvalidValue;
  }
  if (!dependent) runHeld();
  if (pending().set) {  // queued behind a kernel that never finished (or faulted): never runs
    if (sticky()) lastError() = faultError();
    return cudaSuccess;
  }
  Module &m = module();
  static const bool flush_at_exit = (std::atexit(flushDevicePrintf), true);
  (void)flush_at_exit;
  const Function *fn = m.find(name);
  if (!fn || !fn->entry) refuse("unsupported: the PTX holds no kernel " + name);
  // Thread-block clusters: __cluster_dims__ (.reqnctapercluster) or the launch attribute. The
  // launch is refused, as cudaErrorInvalidClusterSize ("a kernel launch error has occurred due to
  // cluster misconfiguration"), when the grid is not a whole number of clusters, or the cluster
  // has more than 8 CTAs (the portable limit; 16 with
  // cudaFuncAttributeNonPortableClusterSizeAllowed, the H200's most), or when both name dimensions
  // and they differ. These error codes follow the CUDA documentation; they were not probed on the
  // H200.
  const bool attr = cluster.x || cluster.y || cluster.z;
  dim3 cd = attr ? dim3(std::max(1u, cluster.x), std::max(1u, cluster.y), std::max(1u, cluster.z))
                 : dim3(1, 1, 1);
  if (fn->cluster_dims[0]) {
    const dim3 k(fn->cluster_dims[0], fn->cluster_dims[1], fn->cluster_dims[2]);
    if (attr && (cd.x != k.x || cd.y != k.y || cd.z != k.z)) {
      std::fprintf(stderr,
                   "[wsemu] launch of %s not run: its cluster attribute (%u, %u, %u) differs from "
                   "its __cluster_dims__ (%u, %u, %u)\n",
                   name.c_str(), cd.x, cd.y, cd.z, k.x, k.y, k.z);
      return lastError() = cudaErrorInvalidClusterSize;
    }
    cd = k;
  }
  const bool explicit_cluster = attr || fn->cluster_dims[0] || fn->explicit_cluster;
  {
    const unsigned n = cd.x * cd.y * cd.z;
    auto np = reg().non_portable.find(stub);
    const unsigned most = np != reg().non_portable.end() && np->second ? 16 : 8;
    const char *why = n > most ? (most == 8 ? "more than the portable 8 CTAs (16 need "
                                              "cudaFuncAttributeNonPortableClusterSizeAllowed)"
                                            : "more than 16 CTAs")
                      : (g.x % cd.x || g.y % cd.y || g.z % cd.z)
                          ? "the grid is not a whole number of clusters"
                          : nullptr;
    if (why) {
      std::fprintf(stderr,
                   "[wsemu] launch of %s not run: grid (%u, %u, %u) in clusters of (%u, %u, %u): "
                   "%s (the GPU refuses it: invalid cluster size)\n",
                   name.c_str(), g.x, g.y, g.z, cd.x, cd.y, cd.z, why);
      return lastError() = cudaErrorInvalidClusterSize;
    }
  }
  // Every instruction of the kernel is decoded before it runs: one the interpreter does not
  // implement refuses the program by name, it never runs as a no-op.
  if (fn->unsupported != wsemu::ptxe::kNone)
    refuse("unsupported: `" + fn->unsupported_why + "` at " +
           m.where(fn->code[fn->unsupported].loc) + " (the PTX emulator does not implement it)");
  // The launch's parameter buffer, laid out as the PTX declares the parameters.
  const size_t bytes = (fn->param_bytes + 127) & ~size_t(127);
  auto *buf = static_cast<uint8_t *>(std::aligned_alloc(128, bytes ? bytes : 128));
  std::memset(buf, 0, bytes ? bytes : 128);
  for (size_t i = 0; i < fn->params.size(); ++i) {
    const auto &v = m.vars[fn->params[i]];
    std::memcpy(buf + v.param_offset, args[i], v.bytes);
  }
  static const bool run_at_exit = (::on_exit(runHeldAtExit, nullptr), true);
  (void)run_at_exit;
  held().push_back(Held{name, fn, g, b, cd, smem, explicit_cluster, buf});
  return cudaSuccess;
}

// a driver entry point asked for by name (cudaGetDriverEntryPoint, cuGetProcAddress)
void *driverSymbol(const char *sym);

}  // namespace

// ---------------------------------------------------------------------------------------
// What nvcc's host stubs call
// ---------------------------------------------------------------------------------------
extern "C" {
void **__cudaRegisterFatBinary(void *) {
  static void *handle = nullptr;
  return &handle;
}
void __cudaRegisterFatBinaryEnd(void **) {}
void __cudaUnregisterFatBinary(void **) {}
void __cudaRegisterFunction(void **, const char *hostFun, char *, const char *deviceName, int,
                            uint3 *, uint3 *, dim3 *, dim3 *, int *) {
  reg().kernels[hostFun] = deviceName;
}
void __cudaRegisterVar(void **, char *hostVar, char *, const char *deviceName, int, size_t size,
                       int, int) {
  reg().vars[hostVar] = Registry::Sym{deviceName, size};
}
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                     struct CUstream_st *stream) {
  reg().configs.push_back({gridDim, blockDim, sharedMem, stream});
  return 0;
}
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                       void *stream) {
  if (reg().configs.empty()) return cudaErrorInvalidConfiguration;
  auto c = reg().configs.back();
  reg().configs.pop_back();
  *gridDim = c.grid;
  *blockDim = c.block;
  *sharedMem = c.smem;
  *static_cast<void **>(stream) = c.stream;
  return cudaSuccess;
}
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *fun) {
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<void *>(fun));
  return cudaSuccess;
}
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 g, dim3 b, void **args, size_t smem,
                               cudaStream_t) {
  return launchKernel(reinterpret_cast<const void *>(kernel), g, b, args, smem);
}
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 g, dim3 b, void **args, size_t smem,
                                    cudaStream_t) {
  return launchKernel(reinterpret_cast<const void *>(kernel), g, b, args, smem);
}
}  // extern "C"

// ---------------------------------------------------------------------------------------
// The runtime API
// ---------------------------------------------------------------------------------------
cudaError_t cudaLaunchKernel(const void *func, dim3 g, dim3 b, void **args, size_t smem,
                             cudaStream_t) {
  return launchKernel(func, g, b, args, smem);
}

// Programmatic dependent launch: cudaLaunchAttributeProgrammaticStreamSerialization lets the kernel
// begin before the kernel launched before it has completed (held launches, above). A programmatic
// event (cudaLaunchAttributeProgrammaticEvent) is not implemented and is refused by name.
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args) {
  bool dependent = false;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    if (config->attrs[i].id == cudaLaunchAttributeProgrammaticStreamSerialization)
      dependent = config->attrs[i].val.programmaticStreamSerializationAllowed != 0;
    if (config->attrs[i].id == cudaLaunchAttributeProgrammaticEvent)
      refuse(
          "unsupported: cudaLaunchKernelEx with cudaLaunchAttributeProgrammaticEvent (an event "
          "that griddepcontrol.launch_dependents triggers; the emulator does not implement it)");
  }
  return launchKernel(func, config->gridDim, config->blockDim, args, config->dynamicSmemBytes,
                      clusterAttribute(*config), dependent);
}

// What cudaGetErrorString and cudaGetErrorName say of each error; a code without a name here
// is named cudaErrorUnknown, one not here at all is "unknown error".
struct ErrorText {
  cudaError_t code;
  const char *name, *text;
};
static constexpr ErrorText kRuntimeErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
     "invalid configuration argument"},
    {cudaErrorInvalidDevice, nullptr, "invalid device ordinal"},
    {cudaErrorInvalidSymbol, nullptr, "invalid device symbol"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, nullptr, "an illegal memory access was encountered"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorAssert, "cudaErrorAssert", "device-side assert triggered"},
    {cudaErrorInvalidResourceHandle, nullptr, "invalid resource handle"},
    {cudaErrorInvalidClusterSize, "cudaErrorInvalidClusterSize", "invalid cluster size"},
};
static const ErrorText *runtimeError(cudaError_t e) {
  for (auto &t : kRuntimeErrors)
    if (t.code == e) return &t;
  return nullptr;
}
const char *cudaGetErrorString(cudaError_t e) {
  askedFor((int)e);
  const ErrorText *t = runtimeError(e);
  return t ? t->text : "unknown error";
}
const char *cudaGetErrorName(cudaError_t e) {
  askedFor((int)e);
  const ErrorText *t = runtimeError(e);
  return t && t->name ? t->name : "cudaErrorUnknown";
}
cudaError_t cudaGetLastError() {
  cudaError_t e = lastError();
  if (!sticky()) lastError() = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return lastError(); }

// cudaMalloc of 0 bytes gives a null pointer, as on the GPU (cuda_shim.h).
cudaError_t cudaMalloc(void **p, size_t bytes) {
  if (cudaError_t e = sticky()) return e;
  if (bytes == 0) {
    *p = nullptr;
    return cudaSuccess;
  }
  *p = wsemu::emuMalloc(bytes);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void *p) {
  if (!p) return cudaSuccess;  // at once, without waiting for the kernel
  if (!wsemu::emuIsAllocation(p)) return lastError() = cudaErrorInvalidValue;
  if (cudaError_t e = syncPoint()) return e;
  wsemu::emuFree(p);
  return cudaSuccess;
}
// Host memory the device may read (mapped, pinned): one allocation both sides see.
cudaError_t cudaMallocHost(void **p, size_t bytes) {
  *p = wsemu::emuMalloc(bytes ? bytes : 1);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int) { return cudaMallocHost(p, bytes); }
cudaError_t cudaHostGetDevicePointer(void **d, void *h, unsigned int) {
  if (!wsemu::emuIsAllocation(h)) return lastError() = cudaErrorInvalidValue;
  *d = h;
  return cudaSuccess;
}
cudaError_t cudaFreeHost(void *p) {
  if (cudaError_t e = syncPoint()) return e;
  wsemu::emuFree(p);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;  // a copy of nothing returns at once
  if (!dst || !src) return lastError() = cudaErrorInvalidValue;
  const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  if ((src_dev && !wsemu::emuInAllocation(src)) || (dst_dev && !wsemu::emuInAllocation(dst)))
    return lastError() = cudaErrorInvalidValue;
  if (cudaError_t e = syncPoint()) return e;
  wsemu::emuMemcpy(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t) {
  return cudaMemcpy(dst, src, bytes, kind);
}
cudaError_t cudaMemset(void *dst, int v, size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  if (!wsemu::emuInAllocation(dst)) return lastError() = cudaErrorInvalidValue;
  runHeld();  // ordered after the kernels launched before it
  wsemu::emuMemset(dst, v, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *dst, int v, size_t bytes, cudaStream_t) {
  return cudaMemset(dst, v, bytes);
}
cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset,
                               cudaMemcpyKind) {
  size_t bytes = 0;
  uint8_t *p = symbolStorage(symbol, &bytes);
  if (!p || offset + count > bytes) return lastError() = cudaErrorInvalidSymbol;
  if (cudaError_t e = syncPoint()) return e;
  std::memcpy(p + offset, src, count);
  return cudaSuccess;
}
cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset,
                                 cudaMemcpyKind) {
  size_t bytes = 0;
  uint8_t *p = symbolStorage(symbol, &bytes);
  if (!p || offset + count > bytes) return lastError() = cudaErrorInvalidSymbol;
  if (cudaError_t e = syncPoint()) return e;
  std::memcpy(dst, p + offset, count);
  return cudaSuccess;
}
cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol) {
  size_t bytes = 0;
  uint8_t *p = symbolStorage(symbol, &bytes);
  if (!p) return lastError() = cudaErrorInvalidSymbol;
  *devPtr = p;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() { return syncPoint(); }
cudaError_t cudaDeviceReset() { return syncPoint(); }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return syncPoint(); }
// A kernel has finished by the time its launch returns here. A hang is the verdict now: on the
// GPU the query would say "not ready" until the program's own timeout; a fault is returned as
// the GPU returns it.
cudaError_t cudaStreamQuery(cudaStream_t) { return syncPoint(); }
cudaError_t cudaStreamCreate(cudaStream_t *s) {
  *s = nullptr;
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int) { return cudaStreamCreate(s); }
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }

cudaError_t cudaSetDevice(int d) {
  return d == 0 ? cudaSuccess : (lastError() = cudaErrorInvalidDevice);
}
cudaError_t cudaGetDevice(int *d) {
  *d = 0;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int *n) {
  *n = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d) {
  if (d != 0) return lastError() = cudaErrorInvalidDevice;
  *p = props();
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int d) {
  if (d != 0) return lastError() = cudaErrorInvalidDevice;
  const cudaDeviceProp &p = props();
  switch (a) {
    case cudaDevAttrMaxThreadsPerBlock:
      *v = p.maxThreadsPerBlock;
      break;
    case cudaDevAttrMultiProcessorCount:
      *v = p.multiProcessorCount;
      break;
    case cudaDevAttrComputeCapabilityMajor:
      *v = p.major;
      break;
    case cudaDevAttrComputeCapabilityMinor:
      *v = p.minor;
      break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *v = (int)p.sharedMemPerBlockOptin;
      break;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *v = (int)p.sharedMemPerBlock;
      break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
      *v = (int)p.sharedMemPerMultiprocessor;
      break;
    case cudaDevAttrWarpSize:
      *v = 32;
      break;
    case cudaDevAttrL2CacheSize:
      *v = p.l2CacheSize;
      break;
    case cudaDevAttrMaxThreadsPerMultiProcessor:
      *v = p.maxThreadsPerMultiProcessor;
      break;
    case cudaDevAttrClusterLaunch:
      *v = 1;
      break;
    default:
      refuse("unsupported: cudaDeviceGetAttribute of attribute " + std::to_string((int)a) +
             " (the emulator's device does not describe it)");
  }
  return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void *func, cudaFuncAttribute a, int v) {
  if (a == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (v < 0 || (size_t)v > props().sharedMemPerBlockOptin)
      return lastError() = cudaErrorInvalidValue;
    reg().max_dyn_smem[func] = v;
  }
  if (a == cudaFuncAttributeNonPortableClusterSizeAllowed) reg().non_portable[func] = v;
  return cudaSuccess;
}

// What the GPU reports of a compiled kernel. The emulator has no register allocation or SASS:
// numRegs is the PTX's virtual registers capped at the hardware's 255 per thread, and the binary
// version is the target the PTX was built for. The static shared size is the kernel's own
// non-extern .shared variables; the dynamic limit is what cudaFuncSetAttribute opted in to.
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attr, const void *func) {
  if (!attr) return lastError() = cudaErrorInvalidValue;
  auto kit = reg().kernels.find(func);
  if (kit == reg().kernels.end()) return lastError() = cudaErrorInvalidDeviceFunction;
  Module &m = module();
  const Function *fn = m.find(kit->second);
  if (!fn) return lastError() = cudaErrorInvalidDeviceFunction;
  std::memset(attr, 0, sizeof *attr);
  for (uint32_t id : fn->syms) {
    const auto &v = m.vars[id];
    if (v.space == wsemu::ptxe::Space::Shared && !v.dynamic) attr->sharedSizeBytes += v.bytes;
  }
  attr->localSizeBytes = fn->local_bytes;
  attr->maxThreadsPerBlock = props().maxThreadsPerBlock;
  attr->numRegs = (int)std::min<uint32_t>(fn->nregs, 255);
  attr->ptxVersion = props().major * 10 + props().minor;
  attr->binaryVersion = attr->ptxVersion;
  int optin = (int)props().sharedMemPerBlock - (int)attr->sharedSizeBytes;
  if (auto it = reg().max_dyn_smem.find(func); it != reg().max_dyn_smem.end()) optin = it->second;
  attr->maxDynamicSharedSizeBytes = optin;
  attr->preferredShmemCarveout = -1;
  attr->nonPortableClusterSizeAllowed = 1;
  return cudaSuccess;
}

// Resident CTAs of `func` per SM at this block size and dynamic shared memory: the H200's thread,
// CTA and shared-memory limits (1 KiB of each CTA's shared memory is the system's). Registers do
// not limit it: PTX's virtual registers say nothing of what ptxas would allocate.
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, const void *func,
                                                                   int block, size_t dyn,
                                                                   unsigned int) {
  cudaFuncAttributes a;
  if (!n || block <= 0) return lastError() = cudaErrorInvalidValue;
  if (cudaError_t e = cudaFuncGetAttributes(&a, func); e != cudaSuccess) return e;
  const cudaDeviceProp &p = props();
  if (block > a.maxThreadsPerBlock) return lastError() = cudaErrorInvalidValue;
  int by_threads = p.maxThreadsPerMultiProcessor / block;
  const size_t smem = a.sharedSizeBytes + dyn + 1024;
  int by_smem = (int)(p.sharedMemPerMultiprocessor / smem);
  *n = std::max(0, std::min({by_threads, by_smem, p.maxBlocksPerMultiProcessor}));
  return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, const void *func, int block,
                                                          size_t dyn) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(n, func, block, dyn, 0);
}

// Clusters of the launch's shape resident at once: every SM's CTAs, grouped by cluster size
// (the H200's GPCs are not modelled: a cluster fits wherever its CTAs do).
cudaError_t cudaOccupancyMaxActiveClusters(int *n, const void *func,
                                           const cudaLaunchConfig_t *config) {
  if (!n || !config) return lastError() = cudaErrorInvalidValue;
  const dim3 d = clusterAttribute(*config);
  const unsigned cluster = std::max(1u, d.x) * std::max(1u, d.y) * std::max(1u, d.z);
  const dim3 b = config->blockDim;
  int per_sm = 0;
  if (cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
          &per_sm, func, (int)(b.x * b.y * b.z), config->dynamicSmemBytes, 0);
      e != cudaSuccess)
    return e;
  if (cluster > 16) return lastError() = cudaErrorInvalidClusterSize;
  *n = (int)((unsigned)props().multiProcessorCount * (unsigned)per_sm / cluster);
  return cudaSuccess;
}

struct EmuEvent {
  double ms = 0;
};
cudaError_t cudaEventCreate(cudaEvent_t *e) {
  *e = reinterpret_cast<cudaEvent_t>(new EmuEvent);
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int) { return cudaEventCreate(e); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete reinterpret_cast<EmuEvent *>(e);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  runHeld();  // the kernels launched before it have run when it is recorded
  reinterpret_cast<EmuEvent *>(e)->ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return syncPoint(); }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = (float)(reinterpret_cast<EmuEvent *>(b)->ms - reinterpret_cast<EmuEvent *>(a)->ms);
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int *v) {
  *v = CUDA_VERSION;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int *v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **fn, unsigned long long,
                                    cudaDriverEntryPointQueryResult *q) {
  *fn = driverSymbol(symbol);
  if (q) *q = cudaDriverEntryPointSuccess;
  return cudaSuccess;
}
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned int,
                                             unsigned long long flags,
                                             cudaDriverEntryPointQueryResult *q) {
  (void)flags;
  *fn = driverSymbol(symbol);
  if (q) *q = cudaDriverEntryPointSuccess;
  return cudaSuccess;
}

// ---------------------------------------------------------------------------------------
// The driver API
// ---------------------------------------------------------------------------------------
CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int *v) {
  *v = CUDA_VERSION;
  return CUDA_SUCCESS;
}
CUresult cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType dt, cuuint32_t rank,
                                void *base, const cuuint64_t *dims, const cuuint64_t *strides,
                                const cuuint32_t *box, const cuuint32_t *estr,
                                CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                                CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  static_assert(sizeof(CUtensorMap) == sizeof(wsemu::TensorMap), "a tensor map is 128 bytes");
  int r = wsemu::encodeTiled(reinterpret_cast<wsemu::TensorMap *>(map), (int)dt, rank, base, dims,
                             strides, box, estr, (int)il, (int)sw, (int)l2, (int)oob);
  return r == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
// The driver's errors the emulator returns, for cuGetErrorString and cuGetErrorName.
struct DriverErrorText {
  CUresult code;
  const char *name, *text;
};
static constexpr DriverErrorText kDriverErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
};
static const DriverErrorText *driverError(CUresult e) {
  for (auto &t : kDriverErrors)
    if (t.code == e) return &t;
  return nullptr;
}
CUresult cuGetErrorString(CUresult e, const char **s) {
  askedFor((int)e);
  const DriverErrorText *t = driverError(e);
  *s = t ? t->text : "unknown error";
  return CUDA_SUCCESS;
}
CUresult cuGetErrorName(CUresult e, const char **s) {
  askedFor((int)e);
  const DriverErrorText *t = driverError(e);
  *s = t ? t->name : "CUDA_ERROR_UNKNOWN";
  return CUDA_SUCCESS;
}
CUresult cuGetProcAddress(const char *symbol, void **pfn, int, cuuint64_t,
                          CUdriverProcAddressQueryResult *status) {
  *pfn = driverSymbol(symbol);
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

namespace {
void *driverSymbol(const char *sym) {
  static const std::map<std::string, void *> table = {
      {"cuTensorMapEncodeTiled", reinterpret_cast<void *>(&cuTensorMapEncodeTiled)},
      {"cuGetErrorString", reinterpret_cast<void *>(&cuGetErrorString)},
      {"cuGetErrorName", reinterpret_cast<void *>(&cuGetErrorName)},
      {"cuInit", reinterpret_cast<void *>(&cuInit)},
      {"cuDriverGetVersion", reinterpret_cast<void *>(&cuDriverGetVersion)}};
  auto it = table.find(sym ? sym : "");
  if (it == table.end())
    refuse(std::string("unsupported: the driver entry point `") + (sym ? sym : "(null)") +
           "` asked for by name (the emulator's driver does not implement it)");
  return it->second;
}
}  // namespace
