// Whether the GPU a run of candidates started with is still there. A device lost in the middle of
// a reduction (the driver fell over, the node was drained) makes every later run fail in its own
// way: "no CUDA-capable device is detected" where the harness prints it, an exit status where it
// does not. None of that is the candidate's failure. A judge that watches the device probes it
// after each failure verdict; once the probe fails, the device is lost for the rest of the run and
// every verdict is infra-error/device-lost (docs/design.md, "Oracle rules").
#pragma once

#include <chrono>
#include <mutex>
#include <string>

namespace wsr {

class DeviceWatch {
 public:
  using Clock = std::chrono::steady_clock;
  // `probe`: a shell command whose exit status 0 says the device is there; empty: the environment's
  // WSREDUCE_DEVICE_PROBE, else the default probe (/dev/nvidia0 present and `nvidia-smi -L` naming
  // a GPU, where nvidia-smi is installed).
  explicit DeviceWatch(std::string probe = "");
  // Probes now and watches from here on when the device is there: a machine that had no device to
  // begin with has none to lose. Returns whether it watches.
  bool arm();
  bool armed() const { return armed_; }
  // After a failure verdict whose run ended at `finished`: whether the device is still there. A
  // probe that started after `finished` answers for it; otherwise one runs now (one at a time).
  bool stillThere(Clock::time_point finished);
  bool lost() const;
  std::string why() const;  // the failed probe, in one sentence

 private:
  enum class Answer { There, Gone, Unknown };
  Answer probe(std::string *why) const;
  std::string cmd_;
  bool armed_ = false;
  mutable std::mutex m_;
  bool lost_ = false;
  std::string why_;
  Clock::time_point last_start_{};
  bool last_ok_ = false;
};

}  // namespace wsr
