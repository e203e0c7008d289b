// GPU keepers: one idle process per GPU that holds a CUDA context open while a campaign or a
// reduction runs its many short candidate processes there. Measured on the H200 machine
// (bench/results/2026-11-29-h200-session4/startup/s4_startup.log, persistence mode already on):
// with a context already open on the device, a short CUDA program runs in 0.21 s instead of
// 0.37 s, and the host's ceiling on CUDA process starts (one driver, all GPUs) rises from about
// 4.5 to 5.2 a second. Every candidate still runs in its own fresh process; the keeper only keeps
// the device warm, it runs nothing.
#pragma once

#include "build.h"

#include <string>
#include <sys/types.h>
#include <vector>

namespace wsr {

class GpuKeepers {
 public:
  GpuKeepers() = default;
  GpuKeepers(const GpuKeepers &) = delete;
  GpuKeepers &operator=(const GpuKeepers &) = delete;
  ~GpuKeepers() { stop(); }
  // One keeper per entry of `devices` (each a CUDA_VISIBLE_DEVICES value; "" = this process's
  // own environment). The keeper program is built once with nvcc into the build cache. Returns a
  // line for the log; without a GPU or nvcc nothing is started and the line says why.
  std::string start(const std::vector<std::string> &devices, const BuildOptions &b);
  void stop();
  size_t running() const { return pids_.size(); }

 private:
  std::vector<pid_t> pids_;
};

// The keeper program's path (built on first use), or empty with `err` set.
std::string keeperProgram(const BuildOptions &b, std::string *err);

// "N" -> "0".."N-1"; "a,b,c" -> that list (each a CUDA_VISIBLE_DEVICES value; a fake list works on
// a machine without GPUs: the runs only see the variable).
std::vector<std::string> parseGpuList(const std::string &s);
// The GPUs of this host the driver exposes (/dev/nvidia0, /dev/nvidia1, ...): 0 without any.
int hostGpuCount();

// The gate library for GatedRun (process.h), built on first use into the build cache (`cache_dir`,
// empty: defaultCacheDir()) with the host's C++ compiler; empty with `err` set when it cannot be
// built.
std::string gateLibrary(std::string *err, const std::string &cache_dir = "");

}  // namespace wsr
