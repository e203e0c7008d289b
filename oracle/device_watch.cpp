#include "device_watch.h"

#include "process.h"

#include <cstdlib>
#include <unistd.h>

namespace wsr {

DeviceWatch::DeviceWatch(std::string probe) : cmd_(std::move(probe)) {
  if (cmd_.empty())
    if (const char *e = std::getenv("WSREDUCE_DEVICE_PROBE")) cmd_ = e;
}

// A probe this process killed (a cancelled candidate's thread, Ctrl-C) says nothing of the device:
// Unknown, never Gone.
DeviceWatch::Answer DeviceWatch::probe(std::string *why) const {
  RunOptions ro;
  ro.timeout_s = 30;
  if (!cmd_.empty()) {
    auto r = runProcess({"/bin/sh", "-c", cmd_}, ro);
    if (r.cancelled || r.spawn_failed) return Answer::Unknown;
    if (r.exit_code == 0 && !r.timed_out && r.signal == 0) return Answer::There;
    *why = "the device probe `" + cmd_ + "` " +
           (r.timed_out ? std::string("did not answer in 30 s")
                        : "exited with " + std::to_string(r.exit_code));
    return Answer::Gone;
  }
  if (::access("/dev/nvidia0", F_OK) != 0) {
    *why = "/dev/nvidia0 is gone";
    return Answer::Gone;
  }
  auto smi = findInPath("nvidia-smi");
  if (!smi) return Answer::There;
  auto r = runProcess({*smi, "-L"}, ro);
  if (r.cancelled || r.spawn_failed) return Answer::Unknown;
  if (r.exit_code == 0 && !r.timed_out && r.out.find("GPU ") != std::string::npos)
    return Answer::There;
  std::string said = r.out + r.err;
  while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
  if (said.size() > 200) said = said.substr(0, 200) + "...";
  *why = "nvidia-smi -L " +
         (r.timed_out ? std::string("did not answer in 30 s") : "says: " + said);
  return Answer::Gone;
}

bool DeviceWatch::arm() {
  std::string why;
  armed_ = probe(&why) == Answer::There;
  return armed_;
}

bool DeviceWatch::stillThere(Clock::time_point finished) {
  if (!armed_) return true;
  std::lock_guard<std::mutex> l(m_);
  if (lost_) return false;
  if (last_start_ > finished && last_ok_) return true;
  const auto start = Clock::now();
  std::string why;
  const Answer a = probe(&why);
  if (a == Answer::Unknown) return true;  // the caller's verdict is not used either
  last_start_ = start;
  last_ok_ = a == Answer::There;
  if (!last_ok_) {
    lost_ = true;
    why_ = why;
  }
  return last_ok_;
}

bool DeviceWatch::lost() const {
  std::lock_guard<std::mutex> l(m_);
  return lost_;
}

std::string DeviceWatch::why() const {
  std::lock_guard<std::mutex> l(m_);
  return why_;
}

}  // namespace wsr
