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

std::string keeperProgram(const BuildOptions &b, std::string *err) {
  std::string nvcc = findNvcc(b.nvcc);
  if (nvcc.empty()) {
    if (err) *err = "nvcc was not found";
    return "";
  }
  std::error_code ec;
  auto stamp = nvcc + "|" + std::to_string(fs::file_size(nvcc, ec)) + "|" +
               std::to_string(fs::last_write_time(nvcc, ec).time_since_epoch().count()) + "|" + kKeeperSource;
  fs::path dir = fs::path(b.cache_dir.empty() ? defaultCacheDir() : b.cache_dir) / "keeper";
  fs::path bin = dir / ("wskeep-" + std::to_string(std::hash<std::string>{}(stamp)));
  if (fs::exists(bin, ec)) return bin.string();
  fs::create_directories(dir, ec);
  std::string work = makeTempDir("wskeep.");
  if (work.empty()) {
    if (err) *err = "cannot create a build directory";
    return "";
  }
  std::string src = work + "/wskeep.cu", tmp = bin.string() + ".tmp-" + std::to_string(::getpid());
  writeFileAtomic(src, kKeeperSource);
  RunOptions ro;
  ro.timeout_s = 120;
  ro.workdir = work;
  ro.env_set["TMPDIR"] = work;
  auto r = runProcess({nvcc, src, "-o", tmp}, ro);
  removeTree(work);
  if (r.exit_code != 0 || r.timed_out || !fs::exists(tmp, ec)) {
    if (err) *err = "nvcc could not build the keeper: " + r.err.substr(0, 300);
    fs::remove(tmp, ec);
    return "";
  }
  fs::rename(tmp, bin, ec);
  return bin.string();
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
