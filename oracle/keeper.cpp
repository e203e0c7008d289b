#include "keeper.h"

#include "oracle.h"
#include "process.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <functional>
#include <unistd.h>

namespace fs = std::filesystem;

namespace wsr {

// Opens the context, then idles until its parent is gone (the parent also kills it; this is the
// second line of defence against a keeper outliving a crashed tool).
static const char *kKeeperSource = R"(#include <unistd.h>
#include <cstdlib>
int main(int argc, char **argv) {
  if (cudaFree(0) != cudaSuccess) return 1;
  const pid_t parent = argc > 1 ? (pid_t)std::atoi(argv[1]) : getppid();
  while (getppid() == parent) sleep(1);
  return 0;
}
)";

// Builds `source` (written as `src_name`) with `compiler` -o <out> `src` `flags` into
// <cache>/keeper/<stem><hash><ext>, once per compiler and source; the path, or empty with `err`.
static std::string buildOnceIntoCache(const std::string &compiler, const std::string &cache_dir,
                                      const char *source, const std::string &src_name,
                                      const std::string &stem, const std::string &ext,
                                      const std::vector<std::string> &flags,
                                      const std::string &what, std::string *err) {
  std::error_code ec;
  auto stamp = compiler + "|" + std::to_string(fs::file_size(compiler, ec)) + "|" +
               std::to_string(fs::last_write_time(compiler, ec).time_since_epoch().count()) + "|" +
               source;
  fs::path dir = fs::path(cache_dir.empty() ? defaultCacheDir() : cache_dir) / "keeper";
  fs::path out = dir / (stem + std::to_string(std::hash<std::string>{}(stamp)) + ext);
  if (fs::exists(out, ec)) return out.string();
  fs::create_directories(dir, ec);
  std::string work = makeTempDir("wskeep.");
  if (work.empty()) {
    if (err) *err = "cannot create a build directory";
    return "";
  }
  std::string src = work + "/" + src_name,
              tmp = out.string() + ".tmp-" + std::to_string(::getpid());
  writeFileAtomic(src, source);
  RunOptions ro;
  ro.timeout_s = 120;
  ro.workdir = work;
  ro.tmpdir_in_workdir = true;
  std::vector<std::string> argv = {compiler, "-o", tmp, src};
  argv.insert(argv.end(), flags.begin(), flags.end());  // after the source: libraries link in order
  auto r = runProcess(argv, ro);
  removeTree(work);
  if (r.exit_code != 0 || r.timed_out || !fs::exists(tmp, ec)) {
    if (err) *err = what + ": " + r.err.substr(0, 300);
    fs::remove(tmp, ec);
    return "";
  }
  fs::rename(tmp, out, ec);
  return out.string();
}

std::string keeperProgram(const BuildOptions &b, std::string *err) {
  std::string nvcc = findNvcc(b.nvcc);
  if (nvcc.empty()) {
    if (err) *err = "nvcc was not found";
    return "";
  }
  return buildOnceIntoCache(nvcc, b.cache_dir, kKeeperSource, "wskeep.cu", "wskeep-", "", {},
                            "nvcc could not build the keeper", err);
}

// The gate (GatedRun in process.h): preloaded into a candidate, it opens the device's primary
// context before main (the CUDA runtime later finds it open) and waits for one byte on fd 3. EOF
// means the run was not wanted after all: the process leaves without running the program. It
// takes its variables out of the environment first, so the program's own children are not gated.
static const char *kGateSource = R"(#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <unistd.h>
__attribute__((constructor)) static void wsr_gate() {
  const char *g = getenv("WSR_GATE_FD");
  if (!g) return;
  int fd = atoi(g);
  unsetenv("WSR_GATE_FD");
  if (const char *pre = getenv("LD_PRELOAD")) {
    std::string keep, s = pre;
    size_t i = 0;
    while (i <= s.size()) {
      size_t j = s.find_first_of(": ", i);
      if (j == std::string::npos) j = s.size();
      std::string e = s.substr(i, j - i);
      if (!e.empty() && e.find("wsgate") == std::string::npos) keep += (keep.empty() ? "" : ":") + e;
      i = j + 1;
    }
    if (keep.empty()) unsetenv("LD_PRELOAD");
    else setenv("LD_PRELOAD", keep.c_str(), 1);
  }
  if (void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL)) {
    auto init = (int (*)(unsigned))dlsym(h, "cuInit");
    auto get = (int (*)(int *, int))dlsym(h, "cuDeviceGet");
    auto retain = (int (*)(void **, int))dlsym(h, "cuDevicePrimaryCtxRetain");
    int dev = 0;
    void *ctx = nullptr;
    if (init && get && retain && init(0) == 0 && get(&dev, 0) == 0) retain(&ctx, dev);
  }
  char b = 0;
  ssize_t n;
  do n = read(fd, &b, 1); while (n < 0 && errno == EINTR);
  close(fd);
  if (n != 1) _exit(0);
}
)";

std::string gateLibrary(std::string *err, const std::string &cache_dir) {
  auto cxx = findInPath("c++");
  if (!cxx) cxx = findInPath("g++");
  if (!cxx) {
    if (err) *err = "no C++ compiler (c++, g++) in PATH";
    return "";
  }
  return buildOnceIntoCache(*cxx, cache_dir, kGateSource, "wsgate.cpp", "libwsgate-", ".so",
                            {"-shared", "-fPIC", "-O2", "-ldl"},
                            "the C++ compiler could not build the gate", err);
}

std::vector<std::string> parseGpuList(const std::string &s) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  if (s.find(',') == std::string::npos && std::all_of(s.begin(), s.end(), ::isdigit)) {
    int n = std::stoi(s);
    for (int i = 0; i < n; ++i) out.push_back(std::to_string(i));
    return out;
  }
  size_t at = 0;
  while (at <= s.size()) {
    size_t c = s.find(',', at);
    std::string d = s.substr(at, c == std::string::npos ? std::string::npos : c - at);
    if (!d.empty()) out.push_back(d);
    if (c == std::string::npos) break;
    at = c + 1;
  }
  return out;
}

int hostGpuCount() {
  int n = 0;
  while (::access(("/dev/nvidia" + std::to_string(n)).c_str(), F_OK) == 0) ++n;
  return n;
}

std::string GpuKeepers::start(const std::vector<std::string> &devices, const BuildOptions &b) {
  stop();
  if (!gpuPresent()) return "keepers: no GPU here, none started";
  std::string err;
  std::string prog = keeperProgram(b, &err);
  if (prog.empty()) return "keepers: none started (" + err + ")";
  std::vector<std::string> devs = devices.empty() ? std::vector<std::string>{""} : devices;
  std::vector<std::string> seen;
  std::string line = "keepers: a context held open on GPU";
  for (auto &d : devs) {
    if (std::find(seen.begin(), seen.end(), d) != seen.end()) continue;  // one per device
    seen.push_back(d);
    std::map<std::string, std::string> env;
    if (!d.empty()) env["CUDA_VISIBLE_DEVICES"] = d;
    pid_t p = startDetached({prog, std::to_string(::getpid())}, env, &err);
    if (p < 0) return line + (pids_.empty() ? "" : " (some)") + "; could not start one: " + err;
    pids_.push_back(p);
    line += " " + (d.empty() ? std::string("(default)") : d);
  }
  return line + " while the runs go on (each run still a fresh process)";
}

void GpuKeepers::stop() {
  for (pid_t p : pids_) stopDetached(p);
  pids_.clear();
}

}  // namespace wsr
