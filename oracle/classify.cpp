#include "classify.h"

#include "include/wswatch_abi.h"

#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <cinttypes>
#include <csignal>
#include <cstdio>
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
    case SIGSEGV:
      return "SIGSEGV";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGKILL:
      return "SIGKILL";
    case SIGTERM:
      return "SIGTERM";
    case SIGTRAP:
      return "SIGTRAP";
    default:
      return "SIG" + std::to_string(sig);
  }
}

// CUDA errors by code, runtime name, driver name and message text. The message text is
// what cudaGetErrorString prints, which is what most harnesses show.
struct ErrorSpec {
  int code;
  const char *runtime_name, *driver_name, *text, *detail;
};
const ErrorSpec kErrors[] = {
    {700, "cudaErrorIllegalAddress", "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered", "crash/illegal-address"},
    {716, "cudaErrorMisalignedAddress", "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address",
     "crash/misaligned"},
    {715, "cudaErrorIllegalInstruction", "CUDA_ERROR_ILLEGAL_INSTRUCTION",
     "an illegal instruction was encountered", "crash/illegal-instruction"},
    {719, "cudaErrorLaunchFailure", "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure",
     "crash/launch-failure"},
    {710, "cudaErrorAssert", "CUDA_ERROR_ASSERT", "device-side assert triggered",
     "crash/device-assert"},
    {714, "cudaErrorHardwareStackError", "CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error",
     "crash/hardware-stack"},
    {717, "cudaErrorInvalidAddressSpace", "CUDA_ERROR_INVALID_ADDRESS_SPACE",
     "operation not supported on global/shared address space", "crash/invalid-address-space"},
    {718, "cudaErrorInvalidPc", "CUDA_ERROR_INVALID_PC", "invalid program counter",
     "crash/invalid-pc"},
    {702, "cudaErrorLaunchTimeout", "CUDA_ERROR_LAUNCH_TIMEOUT",
     "the launch timed out and was terminated", "hang/launch-timeout"},
    {701, "cudaErrorLaunchOutOfResources", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch", "crash/out-of-resources"},
    {209, "cudaErrorNoKernelImageForDevice", "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device", "crash/no-kernel-image"},
    {2, "cudaErrorMemoryAllocation", "CUDA_ERROR_OUT_OF_MEMORY", "out of memory",
     "crash/out-of-memory"},
    {9, "cudaErrorInvalidConfiguration", "CUDA_ERROR_INVALID_CONFIGURATION",
     "invalid configuration argument", "crash/invalid-configuration"},
    {1, "cudaErrorInvalidValue", "CUDA_ERROR_INVALID_VALUE", "invalid argument",
     "crash/invalid-argument"},
    {98, "cudaErrorInvalidDeviceFunction", "CUDA_ERROR_INVALID_HANDLE", "invalid device function",
     "crash/invalid-device-function"},
    {999, "cudaErrorUnknown", "CUDA_ERROR_UNKNOWN", "unknown error", "crash/unknown"},
    // The oracle could not judge: no GPU, or a driver that cannot run this toolkit's code.
    {100, "cudaErrorNoDevice", "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected",
     "infra-error/no-gpu"},
    {35, "cudaErrorInsufficientDriver", "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "CUDA driver version is insufficient for CUDA runtime version", "infra-error/no-gpu"},
    {34, "cudaErrorStubLibrary", "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library",
     "infra-error/no-gpu"},
    {46, "cudaErrorDevicesUnavailable", "CUDA_ERROR_DEVICE_UNAVAILABLE",
     "CUDA-capable device(s) is/are busy or unavailable", "infra-error/gpu-unavailable"},
    {222, "cudaErrorUnsupportedPtxVersion", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain", "infra-error/driver-too-old"},
    {3, "cudaErrorInitializationError", "CUDA_ERROR_NOT_INITIALIZED", "initialization error",
     "infra-error/cuda-init"},
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
    c.ref_constant = kv(s, "ref") == "constant";
    c.out_unrelated = kv(s, "out") == "unrelated";
    try {
      c.rows = std::stoll(kv(s, "rows"));
      c.cols = std::stoll(kv(s, "cols"));
      c.bad = std::stoll(kv(s, "bad"));
      c.nan = std::stoll(kv(s, "nan"));
      c.max_abs = std::stod(kv(s, "max_abs"));
    } catch (...) {
      continue;  // a malformed line is not a comparison
    }
    // Nor is one whose counts cannot be: a resumed H200 reduction of gemm_k_loop_short reached the
    // inlined harness and kept a compare() that printed "rows=0 cols=0 bad=1" for anything.
    if (c.rows <= 0 || c.cols <= 0 || c.bad < 0 || c.bad > c.rows * c.cols || c.nan < 0 ||
        c.nan > c.rows * c.cols)
      continue;
    out.push_back(c);
  }
  return out;
}

std::vector<CudaError> findCudaErrors(const std::string &text) {
  std::vector<CudaError> out;
  for (auto &l : lines(text)) {
    if (contains(l, "WSCHECK ") || contains(l, "WSWATCH") || contains(l, "[wsemu] "))
      continue;  // not the program's own words
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

// ---- the hang watchdog --------------------------------------------------------------------

namespace {

// key=value fields; a value may be "quoted" (with spaces inside).
std::map<std::string, std::string> fields(const std::string &l) {
  std::map<std::string, std::string> m;
  size_t i = 0;
  while (i < l.size()) {
    while (i < l.size() && l[i] == ' ') ++i;
    size_t eq = l.find('=', i);
    size_t sp = l.find(' ', i);
    if (eq == std::string::npos) break;
    if (sp != std::string::npos && sp < eq) {
      i = sp + 1;
      continue;
    }
    std::string k = l.substr(i, eq - i);
    size_t v = eq + 1;
    std::string val;
    if (v < l.size() && l[v] == '"') {
      size_t e = l.find('"', v + 1);
      val = l.substr(v + 1, e == std::string::npos ? std::string::npos : e - v - 1);
      i = e == std::string::npos ? l.size() : e + 1;
    } else {
      size_t e = l.find(' ', v);
      val = l.substr(v, e == std::string::npos ? std::string::npos : e - v);
      i = e == std::string::npos ? l.size() : e;
    }
    m[k] = val;
  }
  return m;
}

long long num(const std::map<std::string, std::string> &m, const char *k, long long dflt) {
  auto it = m.find(k);
  if (it == m.end() || it->second.empty()) return dflt;
  try {
    return std::stoll(it->second, nullptr, 0);
  } catch (...) {
    return dflt;
  }
}

std::string baseName(const std::string &p) {
  size_t s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

}  // namespace

WatchReport parseWatchRecords(const std::string &text) {
  WatchReport w;
  std::set<std::string> seen_rec;
  std::set<unsigned> seen_site;
  for (auto &l : lines(text)) {
    size_t p = l.find("WSWATCH");
    if (p == std::string::npos) continue;
    std::string s = l.substr(p);
    w.seen = true;
    auto f = fields(s.substr(s.find(' ') == std::string::npos ? s.size() : s.find(' ')));
    if (s.rfind("WSWATCH-STATUS", 0) == 0) {
      if (f.count("mode")) w.mode = f["mode"];
      try {
        w.bound_ms = std::stod(f["bound_ms"]);
      } catch (...) {
      }
      w.dropped = (unsigned)num(f, "dropped", 0);
    } else if (s.rfind("WSWATCH-SITE ", 0) == 0) {
      WatchSiteInfo si;
      si.site = (unsigned)num(f, "site", 0);
      if (!seen_site.insert(si.site).second) {
        for (auto &o : w.sites)  // a later report (the file after the exit print) may know more
          if (o.site == si.site && num(f, "ran", 0)) o.ran = true;
        continue;
      }
      si.line = (unsigned)num(f, "line", 0);
      si.wait_line = (unsigned)num(f, "wait_line", si.line);
      si.file = f["file"];
      si.kind = f["kind"];
      si.role = f["role"];
      si.ran = num(f, "ran", 0) != 0;
      w.sites.push_back(si);
    } else if (s.rfind("WSWATCH-END ", 0) == 0) {
      w.ended = true;
      w.end_status = (int)num(f, "status", 0);
    } else if (s.rfind("WSWATCH-BAR ", 0) == 0) {
      WatchInBar ib{(unsigned)num(f, "block", 0), (unsigned)num(f, "warp", 0),
                    (unsigned)num(f, "line", 0)};
      // the watch file and the program's own stderr print the same slots: once each
      if (seen_rec.insert("bar|" + f["block"] + "|" + f["warp"]).second) w.in_bar.push_back(ib);
    } else if (s.rfind("WSWATCH ", 0) == 0) {
      WatchRecord r;
      std::string b = f["block"];
      if (std::sscanf(b.c_str(), "%u,%u,%u", &r.block[0], &r.block[1], &r.block[2]) < 1) continue;
      r.warp = (unsigned)num(f, "warp", 0);
      r.lane = (unsigned)num(f, "lane", 0);
      r.lanes = (unsigned)num(f, "lanes", 0);
      r.site = (unsigned)num(f, "site", 0);
      r.line = (unsigned)num(f, "line", 0);
      r.wait_line = (unsigned)num(f, "wait_line", r.line);
      r.file = f["file"];
      r.role = f["role"];
      r.name = f["name"] == "-" ? "" : f["name"];
      r.idx = (int)num(f, "idx", -1);
      r.parity = (int)num(f, "parity", -1);
      r.iter = num(f, "iter", -1);
      r.bar = (unsigned long long)num(f, "bar", 0);
      r.gbar = (unsigned long long)num(f, "gbar", 0);
      try {
        r.waited_ms = std::stod(f["waited_ms"]);
      } catch (...) {
      }
      if (f.count("sh")) {
        r.shadow = f["sh"];
        r.sh_count = (unsigned)num(f, "sh_count", 0);
        r.sh_arrivals = (unsigned)num(f, "sh_arr", 0);
        r.sh_copies = (unsigned)num(f, "sh_copies", 0);
        r.sh_tx = (unsigned long long)num(f, "sh_tx", 0);
      }
      if (f.count("nbar")) {
        r.named = true;
        r.nb_count = (unsigned)num(f, "count", 0);
        r.nb_arrived = (unsigned)num(f, "arrived", 0);
      }
      r.raw = s;
      std::string key = b + "|" + std::to_string(r.warp) + "|" + std::to_string(r.site);
      if (!seen_rec.insert(key).second) continue;
      w.records.push_back(r);
    }
  }
  return w;
}

std::string decodeWatchBuffer(const std::string &bytes) {
  if (bytes.size() < sizeof(wswatch_buf_t)) return {};
  wswatch_buf_t *b = new wswatch_buf_t;
  std::memcpy(b, bytes.data(), sizeof(wswatch_buf_t));
  std::string out;
  if (b->magic != WSWATCH_MAGIC || b->version != WSWATCH_VERSION) {
    delete b;
    return {};
  }
  auto cstr = [](const char *p, size_t n) { return std::string(p, strnlen(p, n)); };
  unsigned nsites = std::min<unsigned>(b->nsites, WSWATCH_MAX_SITES);
  std::string file = cstr(b->file, sizeof b->file);
  unsigned nrec = 0;
  for (unsigned i = 0; i < WSWATCH_MAX_RECS; ++i) nrec += b->recs[i].valid == WSWATCH_REC_VALID;
  char buf[1024];
  std::snprintf(
      buf, sizeof buf,
      "WSWATCH-STATUS mode=%s records=%u dropped=%u bound_ms=%.1f file=%s source=watch-file\n",
      cstr(b->mode, sizeof b->mode).c_str(), nrec, b->dropped, b->bound_ns / 1e6, file.c_str());
  out += buf;
  for (unsigned i = 0; i < WSWATCH_MAX_RECS; ++i) {
    const wswatch_rec_t &r = b->recs[i];
    if (r.valid != WSWATCH_REC_VALID) continue;
    const wswatch_site_t *st = r.site < nsites ? &b->sites[r.site] : nullptr;
    std::string name = st ? cstr(st->bar, sizeof st->bar) : "";
    std::snprintf(buf, sizeof buf,
                  "WSWATCH block=%u,%u,%u warp=%u lane=%u lanes=%u site=%u file=%s line=%u "
                  "wait_line=%u role=\"%s\" "
                  "bar=0x%x gbar=0x%" PRIx64 " name=%s idx=%d parity=%d iter=%d waited_ms=%.1f",
                  r.block[0], r.block[1], r.block[2], r.warp, r.lane, r.lanes, r.site, file.c_str(),
                  st ? st->line : 0, r.wait_line, st ? cstr(st->role, sizeof st->role).c_str() : "",
                  r.bar_smem, (uint64_t)r.bar_generic, name.empty() ? "-" : name.c_str(), r.idx,
                  (int)r.parity, (int)r.iter, r.waited_ns / 1e6);
    out += buf;
    if (r.kind == WSWATCH_REC_NAMED) {
      std::snprintf(buf, sizeof buf, " nbar=%d count=%u arrived=%u", r.idx, r.nb_count,
                    r.nb_arrived);
      out += buf;
    } else if (r.sh_state == WSWATCH_SH_UNINIT) {
      out += " sh=uninit";
    } else if (r.sh_state == WSWATCH_SH_INIT) {
      std::snprintf(buf, sizeof buf, " sh=init sh_count=%u sh_arr=%u sh_copies=%u sh_tx=%" PRIu64,
                    r.sh_count, r.sh_arrivals, r.sh_copies, (uint64_t)r.sh_tx);
      out += buf;
    }
    out += "\n";
  }
  if (b->end_mode == WSWATCH_END_EXIT && b->taken) {
    std::snprintf(buf, sizeof buf, "WSWATCH-END mode=exit status=%d file=%s source=watch-file\n",
                  WSWATCH_END_STATUS, file.c_str());
    out += buf;
  }
  for (unsigned i = 0; i < WSWATCH_MAX_BAR_SLOTS; ++i) {
    const wswatch_bar_t &e = b->in_bar[i];
    if (!(e.line & WSWATCH_IN_BAR)) continue;
    std::snprintf(buf, sizeof buf, "WSWATCH-BAR block=%u warp=%u line=%u file=%s\n", e.block,
                  e.warp, e.line & ~WSWATCH_IN_BAR, file.c_str());
    out += buf;
  }
  for (unsigned i = 0; i < nsites; ++i) {
    const wswatch_site_t &st = b->sites[i];
    std::snprintf(buf, sizeof buf,
                  "WSWATCH-SITE site=%u file=%s line=%u wait_line=%u kind=%s ran=%u role=\"%s\"\n",
                  i, file.c_str(), st.line, st.wait_line, cstr(st.kind, sizeof st.kind).c_str(),
                  b->ran[i], cstr(st.role, sizeof st.role).c_str());
    out += buf;
  }
  delete b;
  return out;
}

// A wait for parity P blocks while the barrier's current phase has parity P. With every arrival
// counted and C per phase, k = arrivals / C phases have all their arrivals. If k has parity P the
// phase waited on is phase k, with arrivals % C of its C; if not, phase k - 1 has all its arrivals
// and is still open: only transaction bytes can hold it.
std::string shadowState(const WatchRecord &r) {
  if (r.shadow == "uninit") return "uninit";
  if (r.shadow != "init" || r.sh_count == 0 || r.parity < 0) return "";
  const unsigned k = r.sh_arrivals / r.sh_count, rest = r.sh_arrivals % r.sh_count;
  if ((int)(k & 1u) == r.parity) return rest == 0 ? "none" : "partial";
  if (k == 0) return "";  // cannot be: phase -1
  return r.sh_copies == 0 ? "tx-none" : "tx";
}

// "The same hang" for the reducer: which roles (warpgroups) are parked, and on what. Lines move
// and the iteration changes as the reducer shrinks the program and its shape, and a barrier's
// name is what the source shows at the wait (a helper's parameter), so all of those stay in the
// evidence. A role says how far the barrier it waits on got, where the copy's shadow counted it
// (shadowState), as the emulator's signatures do; "first" when every parked warp of it is on its
// first wait at that site (no phase of it completed for that role), from the watchdog's per-site
// iteration count. A role in a counted named barrier says which barrier, and how far its count
// got: the arrivals keep a reduction of a wrong count honest (a candidate that parks the same
// warpgroup with nothing arrived is another bug).
std::string watchSignature(const WatchReport &w, const std::string &kind,
                           const std::set<unsigned> &in_cta_barrier) {
  std::map<unsigned, bool> first;  // warpgroup -> all its mbarrier records at iteration 0
  std::map<unsigned, std::set<std::string>> named;  // warpgroup -> "named1:128/160", "tx"
  for (auto &r : w.records) {
    if (r.named) {
      named[r.warp / 4].insert("named" + std::to_string(r.idx) + ":" +
                               std::to_string(r.nb_arrived) + "/" + std::to_string(r.nb_count));
      continue;
    }
    if (std::string st = shadowState(r); !st.empty()) named[r.warp / 4].insert(st);
    bool f = r.iter == 0;
    auto [it, fresh] = first.insert({r.warp / 4, f});
    if (!fresh) it->second = it->second && f;
  }
  std::set<unsigned> groups = in_cta_barrier;
  for (auto &[g, f] : first) groups.insert(g);
  for (auto &[g, n] : named) groups.insert(g);
  std::string out;
  for (unsigned g : groups) {
    std::string how;  // the barrier's state first, then "first", as the emulator's
    for (auto &n : named[g]) how += (how.empty() ? "" : ",") + n;
    if (first.count(g) && first[g]) how += (how.empty() ? "" : ",") + std::string("first");
    out += (out.empty() ? "" : ";") + std::string("warpgroup") + std::to_string(g) +
           (how.empty() ? "" : "(" + how + ")");
  }
  return "hang:" + kind + ":" + out;
}

std::string watchSiteKey(const WatchReport &w) {
  std::set<std::string> tuples;
  for (auto &r : w.records)
    tuples.insert((r.name.empty() ? "?" : r.name) + " role=" + r.role +
                  " iter=" + (r.iter < 0 ? std::string("?") : std::to_string(r.iter)));
  std::string key;
  std::string sep;
  for (auto &t : tuples) {
    key += sep + t;
    sep = "; ";
  }
  return key;
}

std::vector<std::string> watchEvidence(const WatchReport &w, size_t max_lines) {
  struct Group {
    std::set<std::string> warps, blocks;
    const WatchRecord *first = nullptr;
  };
  std::map<std::string, Group> groups;
  std::vector<std::string> order;
  for (auto &r : w.records) {
    std::string key = std::to_string(r.site) + "|" + std::to_string(r.warp / 4) + "|" +
                      std::to_string(r.iter) + "|" + std::to_string(r.parity) + "|" +
                      std::to_string(r.idx);
    auto &g = groups[key];
    if (!g.first) {
      g.first = &r;
      order.push_back(key);
    }
    std::string blk = std::to_string(r.block[0]) + "," + std::to_string(r.block[1]) + "," +
                      std::to_string(r.block[2]);
    g.blocks.insert(blk);
    g.warps.insert(blk + "/" + std::to_string(r.warp));
  }
  std::stable_sort(order.begin(), order.end(), [&](const std::string &a, const std::string &b) {
    return groups[a].warps.size() > groups[b].warps.size();
  });
  std::vector<std::string> out;
  for (auto &k : order) {
    if (out.size() >= max_lines) {
      out.push_back("... and " + std::to_string(order.size() - max_lines) +
                    " more groups of parked warps");
      break;
    }
    auto &g = groups[k];
    const WatchRecord &r = *g.first;
    std::string who = "warpgroup " + std::to_string(r.warp / 4);
    if (g.warps.size() == 1)
      who += " warp " + std::to_string(r.warp) +
             (r.lanes == 1 ? " lane " + std::to_string(r.lane) : "");
    if (!r.role.empty()) who += " (" + r.role + ")";
    std::string s =
        who + ", " + std::to_string(g.warps.size()) + (g.warps.size() == 1 ? " warp" : " warps");
    if (g.blocks.size() > 1)
      s += " in " + std::to_string(g.blocks.size()) + " blocks";
    else {
      std::string blk = *g.blocks.begin();
      if (blk.size() > 4 && blk.compare(blk.size() - 4, 4, ",0,0") == 0) blk.resize(blk.size() - 4);
      s += " of block " + blk;
    }
    s += ", parked at " + baseName(r.file) + ":" + std::to_string(r.line);
    if (r.named)
      s += " named barrier " + std::to_string(r.idx) + " waiting for " +
           std::to_string(r.nb_count) + " threads, " + std::to_string(r.nb_arrived) + " arrived";
    else
      s += " mbarrier " + (r.name.empty() ? "?" : r.name) +
           (r.idx >= 0 ? "[" + std::to_string(r.idx) + "]" : "") +
           (r.parity >= 0 ? " waiting for parity " + std::to_string(r.parity)
                          : std::string(" waiting on an arrival token"));
    s += ", iteration " + (r.iter < 0 ? std::string("?") : std::to_string(r.iter));
    if (r.shadow == "uninit")
      s += "; no mbarrier.init of this CTA touched that address";
    else if (r.shadow == "init") {
      std::string st = shadowState(r);
      s += "; since its init (count " + std::to_string(r.sh_count) + "): " +
           std::to_string(r.sh_arrivals) + " arrivals, " + std::to_string(r.sh_copies) +
           " bulk copies, " + std::to_string(r.sh_tx) + " tx bytes announced" +
           (st.empty() ? "" : " (" + st + ")");
    }
    if (r.wait_line && r.wait_line != r.line)
      s += " (the wait loop is at line " + std::to_string(r.wait_line) + ")";
    out.push_back(s);
  }
  return out;
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
  // The emulator's build (translation, then g++ against its runtime) failing says what the
  // emulator cannot run, not that the program does not compile: nvcc is the judge of that. The
  // one exception is the translation's own copy of a ptxas check (a static_assert whose message
  // starts "ptxas: "), which fails there as ptxas would. The PTX path's build is nvcc's own:
  // what fails there is the program's compile error, unless the link names a CUDA entry point the
  // emulator's runtime lacks, or nvcc kept no PTX ("[wsemu-ptx] error: " lines).
  const bool emu_refused = b.backend == "emu" && !b.timed_out &&
                           (b.emu_by_nvcc ? contains(b.log, "[wsemu-ptx] error: ")
                                          : !contains(b.log, "ptxas: "));
  if (emu_refused) {
    Verdict v = make("infra-error/unsupported", "infra:unsupported");
    std::string why = first([&](const std::string &l) {
      return b.emu_by_nvcc ? contains(l, "[wsemu-ptx] error: ")
                           : contains(l, "error") || contains(l, "translation failed");
    });
    v.evidence.push_back("the CPU emulator cannot build this program (nvcc is the judge of "
                         "whether it compiles): " +
                         (why.empty() ? std::string("its build failed") : why));
    return v;
  }
  if (b.timed_out) {
    Verdict v = make("compile-error/ice", "compile-error:ice:compiler timed out");
    v.evidence.push_back("the compiler did not finish within its time limit");
    return v;
  }
  std::string ice = first([](const std::string &l) {
    std::string x = lower(l);
    return contains(x, "internal compiler error") || contains(x, "internal error") ||
           contains(x, "died due to signal") || contains(x, "segmentation fault") ||
           contains(x, "please submit a bug report") ||
           (contains(x, "assertion") && !contains(x, "static assertion") &&
            !contains(x, "static_assert")) ||
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
  // The emulator's build stands in for ptxas where the GPU's build would fail there (an
  // immediate out of range: emu/translate/translate.cpp's static_asserts say "ptxas: ...").
  if (ptxas.empty()) {
    std::string emu =
        first([](const std::string &l) { return contains(l, "static assertion failed: ptxas: "); });
    if (!emu.empty()) ptxas = emu.substr(emu.find("ptxas: "));
  }
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
  if (fe.empty())
    fe = ls.empty() ? "compiler exited with status " + std::to_string(b.exit_code) : ls.front();
  Verdict v = make("compile-error/frontend", "compile-error:frontend:" + normaliseCompileError(fe));
  v.evidence.push_back(fe);
  for (auto &l : ls)
    if (&l != &fe && l != fe && v.evidence.size() < 6 &&
        (contains(l, "error") || contains(l, "note")))
      v.evidence.push_back(l);
  return v;
}

// The emulator's notes ("WSEMU note k=N ..." lines) that are part of a failure's signature: "+k"
// for each of `keys` with N != 0, in that order; the note lines themselves into *notes. The
// emulator's notes that are part of any failure's signature (emu/runtime/mbarrier.cpp's
// printNotes).
static const std::vector<const char *> kEmuFailureNotes = {
    "mbarrier-init-unordered", "mbarrier-wait-uninit", "mbarrier-tx-uninit",
    "smem-read-before-tx",     "smem-read-unwaited",   "proxy-unfenced"};

static std::string noteMarks(const std::string &err, const std::vector<const char *> &keys,
                             std::vector<std::string> *notes = nullptr) {
  std::string marks;
  for (auto &l : lines(err)) {
    if (l.rfind("WSEMU note ", 0) != 0) continue;
    if (notes) notes->push_back(l);
    auto f = fields(l.substr(11));
    for (const char *k : keys)
      if (f.count(k) && f[k] != "0") marks += std::string("+") + k;
  }
  return marks;
}

std::optional<EmuVerdict> parseEmuVerdict(const std::string &text) {
  std::optional<EmuVerdict> out;
  for (auto &l : lines(text)) {
    size_t p = l.find("WSEMU ");
    if (p == std::string::npos) continue;
    std::string s = l.substr(p);
    if (s.rfind("WSEMU verdict=", 0) == 0 && !out) {
      auto f = fields(s.substr(6));
      EmuVerdict e;
      e.detail = f["verdict"];
      e.symptom = f.count("symptom") ? f["symptom"] : symptomOf(e.detail);
      // The signature is the line's last field and names source sites, whose file names may
      // hold spaces: it runs to the end of the line.
      const size_t at = s.find(" signature=");
      e.signature = at == std::string::npos ? f["signature"] : s.substr(at + 11);
      out = e;
    }
    if (out && out->lines.size() < 12) out->lines.push_back(s);
  }
  return out;
}

std::string failureReport(const std::string &output) {
  // A line that says the run failed (FAIL, FAILED) is the program's verdict; one that names a
  // mismatch, a wrong or incorrect value is one element of it, printed before the verdict or on
  // the other stream. The last verdict line wins, else the last element line.
  std::string found;
  int found_rank = 0;
  for (auto &l : lines(output)) {
    const std::string x = lower(l);
    const int rank = contains(x, "fail") ? 2
                     : contains(x, "mismatch") || contains(x, "wrong") || contains(x, "incorrect")
                         ? 1
                         : 0;
    if (rank > 0 && rank >= found_rank) {
      found = l;
      found_rank = rank;
    }
  }
  // As printed, but for its floating-point values (an error, a time), which a reordered sum or a
  // clock changes, as '#', and runs of blanks as one space. Its integers stay: the count of bad
  // elements and the rows they are in are what the bug made, and a program that prints the same
  // line with other counts (its reference deleted, its check taken apart) is not the same failure.
  std::string shape;
  for (size_t i = 0; i < found.size(); ++i) {
    const char c = found[i];
    if (std::isdigit((unsigned char)c)) {
      size_t j = i;
      bool fp = false;
      while (j < found.size()) {
        const char d = found[j];
        if (std::isdigit((unsigned char)d)) {
          ++j;
        } else if (d == '.' && j + 1 < found.size() && std::isdigit((unsigned char)found[j + 1])) {
          fp = true;
          ++j;
        } else if ((d == 'e' || d == 'E') && j + 1 < found.size() &&
                   (std::isdigit((unsigned char)found[j + 1]) ||
                    ((found[j + 1] == '-' || found[j + 1] == '+') && j + 2 < found.size() &&
                     std::isdigit((unsigned char)found[j + 2])))) {
          fp = true;
          j += std::isdigit((unsigned char)found[j + 1]) ? 1 : 2;
        } else {
          break;
        }
      }
      if (fp && !shape.empty() && (shape.back() == '-' || shape.back() == '+'))
        shape.pop_back();  // a value's sign is the value's
      shape += fp ? std::string("#") : found.substr(i, j - i);
      i = j - 1;
    } else if (c == ' ' || c == '\t') {
      if (!shape.empty() && shape.back() != ' ') shape += ' ';
    } else {
      shape += c;
    }
  }
  while (!shape.empty() && shape.back() == ' ') shape.pop_back();
  return shape;
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
    // The emulator's notes (a launch it refused as the GPU would, a failed kernel the host never
    // waited for): what a user needs when a bug seems to have gone away or turned into another.
    for (size_t at = 0; (at = r.err.find("[wsemu] ", at)) != std::string::npos;) {
      size_t e = r.err.find('\n', at);
      if (at == 0 || r.err[at - 1] == '\n')
        v.evidence.push_back(r.err.substr(at, e == std::string::npos ? std::string::npos : e - at));
      at = e == std::string::npos ? r.err.size() : e;
    }
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
  // The CPU emulator (emu backend): a failed launch prints WSEMU lines and exits 86/87/88.
  // hang/mbarrier and hang/barrier stay as they are; the emulator's UB (ub/<what>) is a crash with
  // detail crash/ub-<what> (the verdict schema keeps its symptoms); infra-error/... is as printed.
  if (auto emu = parseEmuVerdict(r.err + "\n" + r.out)) {
    std::string d = emu->detail;
    std::string what = d.substr(d.find('/') == std::string::npos ? d.size() : d.find('/') + 1);
    Verdict v;
    // The signature keeps the roles (which warpgroups were parked, or which one did the UB) and,
    // for a role parked on an mbarrier, how far that barrier's phase had got: none, partial (some
    // arrivals missing), tx (bytes missing after some came), tx-none (bytes expected, none came)
    // or tx-over, as "warpgroup0(partial)"; for a use before init, whether the program had an
    // init that never ran, as "warpgroup1(init-unrun)" (emu/runtime/mbarrier.cpp's getBar). Lines
    // move and the iteration changes as a reduction shrinks the program and its shape; both stay in
    // the evidence (the WSEMU lines). The arrivals are what keeps a reduction of a wrong arrival
    // count honest: without them the GEMM hang's 494 lines reduced to 110 in which nothing arrived
    // at all, the same parked roles for another cause. Of the iteration, one bit stays:
    // "first" when the role parked on its first wait at that site (no phase of it ever completed
    // for that role), as "warpgroup1(none,first)". A producer loop one tile short parks the
    // consumer after its other tiles went through; a reduction on the H200 had
    // removed the producer's body, and the consumer, parked on its first wait, gave the same
    // "warpgroup1(none)": the injected bug was gone, the signature the same. The GPU watchdog
    // cannot read a barrier's counts, so its signatures are the roles (and "first") only; a
    // reduction compares signatures of one backend, and --confirm gpu compares the class.
    std::set<std::string> roles;
    for (llvm::StringRef t : llvm::split(llvm::StringRef(emu->signature), ';')) {
      llvm::SmallVector<llvm::StringRef> f;
      t.split(f, ',');
      std::string role, arrivals;
      bool first = false;
      for (auto x : f) {
        if (x.starts_with("warpgroup") || x == "async") role = x.str();
        if (x.consume_front("arrivals=")) arrivals = x.str();
        if (x.consume_front("init="))
          arrivals = "init-" + x.str();  // a use before init: absent, unrun, other
        if (x == "iter0") first = true;
      }
      std::string how = arrivals;
      if (first) how += (how.empty() ? "" : ",") + std::string("first");
      if (!role.empty()) roles.insert(how.empty() ? role : role + "(" + how + ")");
    }
    std::string rs;
    for (auto &r : roles) rs += (rs.empty() ? "" : ";") + r;
    if (rs.empty()) rs = "?";
    // Barriers used before any CTA barrier ordered them after their init (the emulator's note):
    // part of the failure, so that a reduction cannot take the __syncthreads after the inits and
    // keep "the same" hang with a race in it.
    rs += noteMarks(r.err, kEmuFailureNotes);
    if (emu->symptom == "hang")
      v = make(d, "hang:" + what + ":" + rs);
    else if (emu->symptom == "ub")
      v = make("crash/ub-" + what, "crash:ub-" + what + ":" + rs);
    else if (emu->symptom == "crash")  // what the GPU reports as a crash (a trap: 719)
      v = make(d, "crash:" + what + ":" + rs);
    else if (emu->symptom == "compile-error") {
      // An operand ptxas would reject (e.g. a setmaxnreg count): a compile error on the GPU.
      std::string msg;
      for (auto &l : emu->lines)
        if (l.rfind("WSEMU message ", 0) == 0) msg = l.substr(14);
      size_t colon = msg.find(": ");
      v = make(
          d, "compile-error:ptxas:" + (colon == std::string::npos ? what : msg.substr(colon + 2)));
    } else
      v = make(d.find('/') == std::string::npos ? "infra-error/emulator" : d, "infra:" + what);
    for (auto &l : emu->lines) v.evidence.push_back(l);
    return finish(v);
  }
  auto watch = parseWatchRecords(r.watch + "\n" + r.err);
  auto coverage =
      [&](Verdict &v) {  // which instrumented waits never completed (fuzzer: did the site run)
        if (watch.sites.empty()) return;
        std::string never;
        unsigned n = 0;
        for (auto &s : watch.sites)
          if (!s.ran && s.kind != "helper-default") {
            never += (n++ ? "," : "") + std::to_string(s.line);
          }
        v.evidence.push_back(
            "watchdog: " + std::to_string(watch.sites.size()) + " wait sites, " +
            (n ? "never completed at lines " + never : std::string("all completed at least once")));
      };
  // Warps inside a CTA barrier at the end, by warpgroup. A warpgroup found only there (none of its
  // warps parked on an mbarrier) is where the hang starts: the others wait on mbarriers that it
  // would have fed (docs/bugs.md: "__syncthreads in a role branch").
  std::map<unsigned, std::set<std::string>> bar_wg;  // warpgroup -> "line L"
  std::map<unsigned, unsigned> bar_wg_warps;
  for (auto &ib : watch.in_bar) {
    bar_wg[ib.warp / 4].insert(std::to_string(ib.line));
    bar_wg_warps[ib.warp / 4]++;
  }
  std::set<unsigned> mbar_wg;
  for (auto &rec : watch.records) mbar_wg.insert(rec.warp / 4);
  std::set<unsigned> only_bar;
  for (auto &[wg, l] : bar_wg)
    if (!mbar_wg.count(wg)) only_bar.insert(wg);
  auto barEvidence = [&](Verdict &v) {
    for (auto &[wg, ls] : bar_wg) {
      std::string lines;
      for (auto &l : ls) lines += (lines.empty() ? "" : ",") + l;
      v.evidence.push_back(
          "warpgroup " + std::to_string(wg) + ", " + std::to_string(bar_wg_warps[wg]) +
          " warp(s) inside bar.sync / __syncthreads at line " + lines +
          (only_bar.count(wg) ? " (none of its warps waits on an mbarrier: the hang starts here)"
                              : ""));
    }
  };
  auto barSignature = [&]() {  // every parked role, in a CTA barrier or on a bounded wait
    std::set<unsigned> in_cta_bar;
    for (auto &[wg, l] : bar_wg) in_cta_bar.insert(wg);
    return watchSignature(watch, "barrier", in_cta_bar);
  };
  auto endEvidence = [&](Verdict &v) {  // how a run whose watchdog fired ended
    if (r.ended_after_watchdog)
      v.evidence.push_back(
          "the program had not ended after the watchdog fired and its records were in: the oracle "
          "ended it");
    else if (watch.ended && r.exit_code == watch.end_status)
      v.evidence.push_back("the watchdog ended the program itself (exit mode, status " +
                           std::to_string(watch.end_status) +
                           ") once its records were in: the parked warps left the kernel, no trap");
  };
  if (!only_bar.empty() && !watch.records.empty()) {  // the watchdog fired: a hang, not a fault
    Verdict v = make("hang/barrier", barSignature());
    barEvidence(v);
    endEvidence(v);
    for (auto &e : watchEvidence(watch)) v.evidence.push_back(e);
    coverage(v);
    return finish(v);
  }
  if (!watch.records.empty()) {
    // A parked warp was recorded: the program hung on an mbarrier (the trap that ended it, error
    // 719, is the watchdog's). Still hung at the host timeout: the rest sat where the watchdog
    // cannot reach (bar.sync / __syncthreads).
    bool in_named = std::any_of(watch.records.begin(), watch.records.end(),
                                [](const WatchRecord &x) { return x.named; });
    std::string kind = r.timed_out || in_named ? "barrier" : "mbarrier";
    Verdict v = make("hang/" + kind, watchSignature(watch, kind));
    if (r.timed_out)
      v.evidence.push_back(
          "killed after the timeout (" + std::to_string((long)r.wall_ms) +
          " ms) although the watchdog recorded the warps below: the others sat in bar.sync / "
          "__syncthreads, which cannot be bounded");
    endEvidence(v);
    for (auto &e : watchEvidence(watch)) v.evidence.push_back(e);
    double waited = 0;
    for (auto &rec : watch.records) waited = std::max(waited, rec.waited_ms);
    char b[160];
    std::snprintf(b, sizeof b, "watchdog: %zu parked warps recorded (mode %s, bound %.0f ms%s)",
                  watch.records.size(), watch.mode.empty() ? "?" : watch.mode.c_str(),
                  watch.bound_ms, watch.dropped ? ", some records dropped" : "");
    v.evidence.push_back(b);
    coverage(v);
    return finish(v);
  }
  if (r.timed_out && !bar_wg.empty()) {
    Verdict v = make("hang/barrier", barSignature());
    v.evidence.push_back("killed after the timeout (" + std::to_string((long)r.wall_ms) +
                         " ms) with warps inside CTA barriers (no mbarrier wait expired)");
    barEvidence(v);
    return finish(v);
  }
  if (r.timed_out) {
    Verdict v = make("hang/unknown", "hang:unknown");
    v.evidence.push_back("killed after the timeout (" + std::to_string((long)r.wall_ms) +
                         " ms); no watchdog record");
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
    v.evidence.push_back("terminated by " + signalName(r.signal) + " (" + strsignal(r.signal) +
                         ")");
    auto el = lines(r.err);
    for (size_t i = el.size() > 3 ? el.size() - 3 : 0; i < el.size(); ++i)
      if (!el[i].empty()) v.evidence.push_back(el[i]);
    return finish(v);
  }
  for (auto &c : parseCheckLines(r.out)) {
    if (c.bad == 0) continue;
    std::string shape = c.shape.empty() || c.shape == "none" ? "scattered" : c.shape;
    // Every element wrong is another failure than some: the signature says "(all)". A consumer
    // loop one tile short leaves the last tile's rows NaN; on the CPU a reduction of it emptied
    // the kernel and kept wrong:Y:nan from the host's poisoned buffer, every element of it.
    // The detail stays the shape.
    bool all = c.rows > 0 && c.cols > 0 && c.bad >= c.rows * c.cols;
    // On the emulator, a bulk tensor copy clipped at the tensor's bounds is part of the failure:
    // a TMA store whose coordinates all fall outside leaves the output unwritten, as a kernel with
    // no store does; a reduction of the first took the second. The GPU cannot say.
    // So is a barrier used before anything ordered it after its init, or one no
    // init set up that a wait read or a copy signalled, or a load's bytes read before the reader
    // knew they had landed.
    std::vector<std::string> notes;
    std::vector<const char *> keys = {"tma-load-clipped", "tma-store-clipped"};
    keys.insert(keys.end(), kEmuFailureNotes.begin(), kEmuFailureNotes.end());
    std::string marks = noteMarks(r.err, keys, &notes);
    // So is a reference of one value everywhere: a CPU reduction of gemm_k_loop_short deleted the
    // reference GEMM (a zero-filled vector was left) and the whole kernel but one constant store,
    // and kept "the same" wrong rows.
    if (c.ref_constant) marks += "+ref-constant";
    // And an output that no longer follows the reference (wscheck.h: |correlation| < 0.3).
    if (c.out_unrelated) marks += "+out-unrelated";
    // And NaN among wrong values of another shape: the emulator fills memory nobody wrote with a
    // NaN pattern, the GPU leaves what was there. An H200 reduction of gemm_k_loop_short
    // stored an eighth of a tile from shared memory and kept wrong:C:row-stripe with 6144 NaN on
    // the emulator and none on the GPU; the original has none.
    if (c.nan > 0 && shape != "nan") marks += "+some-nan";
    Verdict v =
        make("wrong/" + shape, "wrong:" + c.name + ":" + shape + (all ? "(all)" : "") + marks);
    v.evidence.push_back(c.raw);
    if (!marks.empty()) v.evidence.insert(v.evidence.end(), notes.begin(), notes.end());
    return finish(v);
  }
  if (r.exit_code != 0) {
    // The program's own failure report, when it prints one, is part of the failure: a program
    // that only exits 1 keeps nothing of the check (a reduction of a row-stripe GEMM with its own
    // check once ended in `return 1`).
    const std::string report = failureReport(r.out + "\n" + r.err);
    // The emulator's notes are part of it as for a harness comparison (above): a program with its
    // own check that fails through a missing fence.proxy.async says +proxy-unfenced, which the
    // reducer's coherent-proxy run keys on.
    std::vector<std::string> notes;
    std::vector<const char *> keys = {"tma-load-clipped", "tma-store-clipped"};
    keys.insert(keys.end(), kEmuFailureNotes.begin(), kEmuFailureNotes.end());
    const std::string marks = noteMarks(r.err, keys, &notes);
    Verdict v = make("wrong/unspecified", "wrong:unspecified:exit=" + std::to_string(r.exit_code) +
                                              (report.empty() ? "" : ":report=" + report) + marks);
    v.evidence.push_back("exited with status " + std::to_string(r.exit_code) +
                         " and reported no CUDA error, signal or comparison");
    v.evidence.insert(v.evidence.end(), notes.begin(), notes.end());
    auto el = lines(r.err + "\n" + r.out);
    for (auto &l : el)
      if (!l.empty() && v.evidence.size() < 4 &&
          (contains(lower(l), "fail") || contains(lower(l), "error") ||
           contains(lower(l), "mismatch")))
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
  coverage(v);
  return finish(v);
}

Verdict classify(const BuildRecord &b, const std::vector<RunRecord> &runs,
                 const ClassifyOptions &opt) {
  Verdict v;
  // A process the tool killed on request (a cancelled candidate, Ctrl-C) ended because of us:
  // whatever it left says nothing about the program.
  const bool run_cancelled =
      std::any_of(runs.begin(), runs.end(), [](const RunRecord &r) { return r.cancelled; });
  if (b.cancelled || run_cancelled) {
    v = make("infra-error/cancelled", "infra:cancelled");
    v.evidence.push_back(std::string("the ") + (b.cancelled ? "build" : "run") +
                         " was stopped by the tool (cancelled or interrupted), not by the program");
    return v;
  }
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
        if (e.symptom == "infra-error") {
          auto keep = v.runs;
          auto t = v.timings;
          v = e;
          v.runs = keep;
          v.timings = t;
          break;
        }
    } else if (distinct.size() > 1) {
      std::map<std::string, int> count;
      for (auto &e : each) count[e.detail]++;
      std::string sig = "flaky:";
      std::string sep;
      for (auto &[d, n] : count) {
        sig += sep + d;
        sep = "|";
      }
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
