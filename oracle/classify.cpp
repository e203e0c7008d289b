#include "classify.h"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace wsr {
namespace {

std::vector<std::string> lines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    out.push_back(l);
  }
  return out;
}

bool contains(const std::string &h, const char *n) { return h.find(n) != std::string::npos; }

std::string lower(std::string s) {
  for (auto &c : s) c = (char)std::tolower((unsigned char)c);
  return s;
}

std::string signalName(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGTRAP: return "SIGTRAP";
    default: return "SIG" + std::to_string(sig);
  }
}

// CUDA errors by code, runtime name, driver name and message text. The message text is
// what cudaGetErrorString prints, which is what most harnesses show.
struct ErrorSpec {
  int code;
  const char *runtime_name, *driver_name, *text, *detail;
};
const ErrorSpec kErrors[] = {
    {700, "cudaErrorIllegalAddress", "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered", "crash/illegal-address"},
    {716, "cudaErrorMisalignedAddress", "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address", "crash/misaligned"},
    {715, "cudaErrorIllegalInstruction", "CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered", "crash/illegal-instruction"},
    {719, "cudaErrorLaunchFailure", "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure", "crash/launch-failure"},
    {710, "cudaErrorAssert", "CUDA_ERROR_ASSERT", "device-side assert triggered", "crash/device-assert"},
    {714, "cudaErrorHardwareStackError", "CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error", "crash/hardware-stack"},
    {717, "cudaErrorInvalidAddressSpace", "CUDA_ERROR_INVALID_ADDRESS_SPACE", "operation not supported on global/shared address space", "crash/invalid-address-space"},
    {718, "cudaErrorInvalidPc", "CUDA_ERROR_INVALID_PC", "invalid program counter", "crash/invalid-pc"},
    {702, "cudaErrorLaunchTimeout", "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated", "hang/launch-timeout"},
    {701, "cudaErrorLaunchOutOfResources", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch", "crash/out-of-resources"},
    {209, "cudaErrorNoKernelImageForDevice", "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device", "crash/no-kernel-image"},
    {2, "cudaErrorMemoryAllocation", "CUDA_ERROR_OUT_OF_MEMORY", "out of memory", "crash/out-of-memory"},
    {9, "cudaErrorInvalidConfiguration", "CUDA_ERROR_INVALID_CONFIGURATION", "invalid configuration argument", "crash/invalid-configuration"},
    {1, "cudaErrorInvalidValue", "CUDA_ERROR_INVALID_VALUE", "invalid argument", "crash/invalid-argument"},
    {98, "cudaErrorInvalidDeviceFunction", "CUDA_ERROR_INVALID_HANDLE", "invalid device function", "crash/invalid-device-function"},
    {999, "cudaErrorUnknown", "CUDA_ERROR_UNKNOWN", "unknown error", "crash/unknown"},
    // The oracle could not judge: no GPU, or a driver that cannot run this toolkit's code.
    {100, "cudaErrorNoDevice", "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected", "infra-error/no-gpu"},
    {35, "cudaErrorInsufficientDriver", "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "CUDA driver version is insufficient for CUDA runtime version", "infra-error/no-gpu"},
    {34, "cudaErrorStubLibrary", "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library", "infra-error/no-gpu"},
    {46, "cudaErrorDevicesUnavailable", "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable", "infra-error/gpu-unavailable"},
    {222, "cudaErrorUnsupportedPtxVersion", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain", "infra-error/driver-too-old"},
    {3, "cudaErrorInitializationError", "CUDA_ERROR_NOT_INITIALIZED", "initialization error", "infra-error/cuda-init"},
};

std::string symptomOf(const std::string &detail) { return detail.substr(0, detail.find('/')); }

Verdict make(const std::string &detail, const std::string &signature) {
  Verdict v;
  v.detail = detail;
  v.symptom = symptomOf(detail);
  v.signature = signature;
  return v;
}

std::string kv(const std::string &line, const std::string &key) {
  std::string pat = " " + key + "=";
  size_t p = line.find(pat);
  if (p == std::string::npos) return {};
  p += pat.size();
  size_t e = line.find(' ', p);
  return line.substr(p, e == std::string::npos ? std::string::npos : e - p);
}

}  // namespace

std::vector<CheckLine> parseCheckLines(const std::string &text) {
  std::vector<CheckLine> out;
  for (auto &l : lines(text)) {
    size_t p = l.find("WSCHECK ");
    if (p == std::string::npos) continue;
    std::string s = l.substr(p + 7);  // keep the leading space for kv()
    CheckLine c;
    c.raw = l.substr(p);
    c.name = kv(s, "name");
    c.shape = kv(s, "shape");
    c.badrows = kv(s, "badrows");
    c.badcols = kv(s, "badcols");
    try {
      c.rows = std::stoll(kv(s, "rows"));
      c.cols = std::stoll(kv(s, "cols"));
      c.bad = std::stoll(kv(s, "bad"));
      c.nan = std::stoll(kv(s, "nan"));
      c.max_abs = std::stod(kv(s, "max_abs"));
    } catch (...) {
      continue;  // a malformed line is not a comparison
    }
    out.push_back(c);
  }
  return out;
}

std::vector<CudaError> findCudaErrors(const std::string &text) {
  std::vector<CudaError> out;
  for (auto &l : lines(text)) {
    if (contains(l, "WSCHECK ")) continue;
    for (auto &e : kErrors) {
      bool hit = contains(l, e.runtime_name) || contains(l, e.driver_name);
      if (!hit && contains(l, e.text)) {
        // "out of memory", "invalid argument", "unknown error" and "initialization error"
        // are common words: count them only on a line that talks about CUDA.
        bool generic = e.code == 2 || e.code == 1 || e.code == 999 || e.code == 3;
        hit = !generic || contains(lower(l), "cuda");
      }
      if (hit) {
        out.push_back({e.code, e.runtime_name, e.detail, l});
        break;
      }
    }
  }
  return out;
}

std::string normaliseCompileError(const std::string &line) {
  std::string s = line;
  s = std::regex_replace(s, std::regex(R"(tmpxft_[0-9A-Fa-f_]+(-\d+)?)"), "tmpxft");
  // ptxas /tmp/x.ptx, line 12; error   : ...
  s = std::regex_replace(s, std::regex(R"(^ptxas\s+\S+,\s*line\s+\d+;\s*)"), "ptxas ");
  // file.cu(12): error: ...     file.cu:12:3: error: ...
  s = std::regex_replace(s, std::regex(R"(^\S+\(\d+\):\s*)"), "");
  s = std::regex_replace(s, std::regex(R"(^\S+?:\d+(:\d+)?:\s*)"), "");
  s = std::regex_replace(s, std::regex(R"(\s+)"), " ");
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

Verdict classifyBuild(const BuildRecord &b) {
  if (b.tool_missing) {
    Verdict v = make("infra-error/compiler-missing", "infra:compiler-missing");
    v.evidence.push_back(b.tool_error);
    return v;
  }
  auto ls = lines(b.log);
  auto first = [&](auto pred) -> std::string {
    for (auto &l : ls)
      if (pred(l)) return l;
    return {};
  };
  if (b.timed_out) {
    Verdict v = make("compile-error/ice", "compile-error:ice:compiler timed out");
    v.evidence.push_back("the compiler did not finish within its time limit");
    return v;
  }
  std::string ice = first([](const std::string &l) {
    std::string x = lower(l);
    return contains(x, "internal compiler error") || contains(x, "internal error") ||
           contains(x, "died due to signal") || contains(x, "segmentation fault") ||
           contains(x, "please submit a bug report") || contains(x, "assertion") ||
           contains(x, "stack dump");
  });
  if (b.signal || !ice.empty()) {
    std::string what = !ice.empty() ? ice : "compiler killed by " + signalName(b.signal);
    Verdict v = make("compile-error/ice", "compile-error:ice:" + normaliseCompileError(what));
    v.evidence.push_back(what);
    return v;
  }
  std::string ptxas = first([](const std::string &l) {
    return l.rfind("ptxas", 0) == 0 && (contains(l, "error") || contains(l, "fatal"));
  });
  if (!ptxas.empty()) {
    Verdict v = make("compile-error/ptxas", "compile-error:ptxas:" + normaliseCompileError(ptxas));
    v.evidence.push_back(ptxas);
    return v;
  }
  std::string link = first([](const std::string &l) {
    return contains(l, "nvlink error") || contains(l, "undefined reference") ||
           contains(l, "ld returned") || contains(l, "cannot find -l");
  });
  std::string fe = first([](const std::string &l) {
    return contains(l, "error:") || contains(l, "error :") || contains(l, "fatal error") ||
           contains(l, "catastrophic error");
  });
  if (!link.empty() && fe.find("ld returned") != std::string::npos) fe.clear();
  if (!link.empty() && (fe.empty() || fe == link)) {
    Verdict v = make("compile-error/link", "compile-error:link:" + normaliseCompileError(link));
    v.evidence.push_back(link);
    return v;
  }
  if (fe.empty()) fe = ls.empty() ? "compiler exited with status " + std::to_string(b.exit_code) : ls.front();
  Verdict v = make("compile-error/frontend", "compile-error:frontend:" + normaliseCompileError(fe));
  v.evidence.push_back(fe);
  for (auto &l : ls)
    if (&l != &fe && l != fe && v.evidence.size() < 6 && (contains(l, "error") || contains(l, "note")))
      v.evidence.push_back(l);
  return v;
}

Verdict classifyRun(const RunRecord &r, const ClassifyOptions &opt) {
  std::string all = r.err + "\n" + r.out;
  bool matched = false;
  if (!opt.match.empty()) {
    try {
      matched = std::regex_search(all, std::regex(opt.match));
    } catch (const std::regex_error &) {
      matched = false;  // the CLI validates the pattern before any run
    }
  }
  auto finish = [&](Verdict v) {
    v.matched = matched;
    v.timings.run_ms.push_back(r.wall_ms);
    RunSummary s{v.symptom, v.detail, v.signature, r.exit_code, r.signal, r.timed_out, r.wall_ms};
    v.runs.push_back(s);
    return v;
  };

  if (r.spawn_failed) {
    Verdict v = make("infra-error/spawn", "infra:spawn");
    v.evidence.push_back(r.spawn_error);
    return finish(v);
  }
  auto errs = findCudaErrors(r.err);
  auto outs = findCudaErrors(r.out);
  errs.insert(errs.end(), outs.begin(), outs.end());
  // No GPU (or no usable one) decides before anything the program did: it is not a verdict.
  for (auto &e : errs)
    if (symptomOf(e.detail) == "infra-error") {
      Verdict v = make(e.detail, "infra:" + e.name);
      v.evidence.push_back(e.line);
      return finish(v);
    }
  if (r.exit_code == 77 && contains(r.out, "WSSKIP")) {
    Verdict v = make("infra-error/unsupported", "infra:unsupported");
    for (auto &l : lines(r.out))
      if (contains(l, "WSSKIP")) v.evidence.push_back(l);
    return finish(v);
  }
  if (r.timed_out) {
    Verdict v = make("hang/unknown", "hang:unknown");
    v.evidence.push_back("killed after the timeout (" + std::to_string((long)r.wall_ms) + " ms); no watchdog record");
    for (auto &e : errs) v.evidence.push_back(e.line);
    return finish(v);
  }
  if (!errs.empty()) {
    auto &e = errs.front();  // later errors in a poisoned context repeat the first
    Verdict v = make(e.detail, symptomOf(e.detail) + ":" + std::to_string(e.code));
    v.evidence.push_back(e.line);
    for (size_t i = 1; i < errs.size() && v.evidence.size() < 4; ++i)
      if (errs[i].line != e.line) v.evidence.push_back(errs[i].line);
    return finish(v);
  }
  if (r.signal) {
    Verdict v = make("crash/host", "crash:host:" + signalName(r.signal));
    v.evidence.push_back("terminated by " + signalName(r.signal) + " (" + strsignal(r.signal) + ")");
    auto el = lines(r.err);
    for (size_t i = el.size() > 3 ? el.size() - 3 : 0; i < el.size(); ++i)
      if (!el[i].empty()) v.evidence.push_back(el[i]);
    return finish(v);
  }
  for (auto &c : parseCheckLines(r.out)) {
    if (c.bad == 0) continue;
    std::string shape = c.shape.empty() || c.shape == "none" ? "scattered" : c.shape;
    Verdict v = make("wrong/" + shape, "wrong:" + c.name + ":" + shape);
    v.evidence.push_back(c.raw);
    return finish(v);
  }
  if (r.exit_code != 0) {
    Verdict v = make("wrong/unspecified", "wrong:unspecified:exit=" + std::to_string(r.exit_code));
    v.evidence.push_back("exited with status " + std::to_string(r.exit_code) +
                         " and reported no CUDA error, signal or comparison");
    auto el = lines(r.err + "\n" + r.out);
    for (auto &l : el)
      if (!l.empty() && v.evidence.size() < 4 &&
          (contains(lower(l), "fail") || contains(lower(l), "error") || contains(lower(l), "mismatch")))
        v.evidence.push_back(l);
    return finish(v);
  }
  if (matched) {
    Verdict v = make("wrong/match", "wrong:match");
    v.evidence.push_back("the output matches --match " + opt.match);
    return finish(v);
  }
  if (opt.slow_baseline_ms > 0 && r.wall_ms > opt.slow_factor * opt.slow_baseline_ms) {
    Verdict v = make("slow/timing", "slow");
    v.evidence.push_back("ran " + std::to_string((long)r.wall_ms) + " ms against a baseline of " +
                         std::to_string((long)opt.slow_baseline_ms) + " ms");
    return finish(v);
  }
  Verdict v = make("pass", "pass");
  for (auto &c : parseCheckLines(r.out)) v.evidence.push_back(c.raw);
  return finish(v);
}

Verdict classify(const BuildRecord &b, const std::vector<RunRecord> &runs, const ClassifyOptions &opt) {
  Verdict v;
  if (!b.ok) {
    v = classifyBuild(b);
  } else if (runs.empty()) {
    v = make("infra-error/no-run", "infra:no-run");
    v.evidence.push_back("the program was built but not run");
  } else {
    std::vector<Verdict> each;
    for (auto &r : runs) each.push_back(classifyRun(r, opt));
    v = each.front();
    v.runs.clear();
    v.timings.run_ms.clear();
    std::set<std::string> distinct;
    bool infra = false;
    for (auto &e : each) {
      distinct.insert(e.detail + "|" + e.signature);
      infra |= e.symptom == "infra-error";
      v.runs.push_back(e.runs.front());
      v.timings.run_ms.push_back(e.runs.front().wall_ms);
      v.matched = v.matched || e.matched;
    }
    if (infra) {
      for (auto &e : each)
        if (e.symptom == "infra-error") { auto keep = v.runs; auto t = v.timings; v = e; v.runs = keep; v.timings = t; break; }
    } else if (distinct.size() > 1) {
      std::map<std::string, int> count;
      for (auto &e : each) count[e.detail]++;
      std::string sig = "flaky:";
      std::string sep;
      for (auto &[d, n] : count) { sig += sep + d; sep = "|"; }
      auto keep = v.runs;
      auto t = v.timings;
      v = make("flaky/mixed", sig);
      v.runs = keep;
      v.timings = t;
      for (size_t i = 0; i < each.size(); ++i)
        v.evidence.push_back("run " + std::to_string(i + 1) + ": " + each[i].detail +
                             (each[i].evidence.empty() ? "" : "  " + each[i].evidence.front()));
    }
  }
  v.timings.build_ms = b.wall_ms;
  v.timings.build_cached = b.cache_hit;
  return v;
}

}  // namespace wsr
