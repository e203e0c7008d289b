#include "build.h"

#include "cache.h"
#include "process.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <set>
#include <unistd.h>

namespace fs = std::filesystem;

namespace wsr {

std::string defaultCacheDir() {
  // Absolute: builds run in a directory of their own, where a relative path names nothing.
  if (const char *c = std::getenv("WSREDUCE_CACHE"); c && *c) return fs::absolute(c).string();
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/wsreduce";
  if (const char *h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/wsreduce";
  return "/tmp/wsreduce-cache";
}

void putSourceDirFirst(std::vector<std::string> &args, const std::string &source_path) {
  auto first_inc = std::find_if(args.begin(), args.end(),
                                [](const std::string &a) { return a.rfind("-I", 0) == 0; });
  args.insert(first_inc, "-I" + fs::absolute(source_path).parent_path().string());
}

std::string selfDir() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.parent_path().string();
}

std::string harnessIncludeDir() {
  if (const char *e = std::getenv("WSREDUCE_INCLUDE"); e && *e) return e;
  std::string self = selfDir();
  for (auto rel : {"../share/wsreduce/include", "../../oracle/include", "../oracle/include"}) {
    fs::path p = fs::path(self) / rel;
    if (fs::exists(p / "wscheck.h")) return fs::weakly_canonical(p).string();
  }
#ifdef WSREDUCE_SOURCE_INCLUDE
  if (fs::exists(fs::path(WSREDUCE_SOURCE_INCLUDE) / "wscheck.h")) return WSREDUCE_SOURCE_INCLUDE;
#endif
  return {};
}

bool prepareCacheDir(const std::string &dir, std::string *err) {
  if (!cacheLimitValid(err)) return false;
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "build", ec);
  if (ec || ::access((fs::path(dir) / "build").c_str(), W_OK) != 0) {
    if (err)
      *err = "the cache directory " + dir +
             " cannot be created or written (set WSREDUCE_CACHE or --cache-dir)";
    return false;
  }
  return true;
}

std::string findNvcc(const std::string &hint) {
  if (!hint.empty()) return findInPath(hint).value_or("");
  if (auto p = findInPath("nvcc")) return *p;
  if (::access("/usr/local/cuda/bin/nvcc", X_OK) == 0) return "/usr/local/cuda/bin/nvcc";
  return {};
}

std::vector<std::string> nvccArgs(const BuildOptions &o) {
  std::string a = o.arch;
  std::string num = a.rfind("sm_", 0) == 0 ? a.substr(3) : a;
  std::vector<std::string> args = {"-std=c++17", "-O2", "-lineinfo",
                                   "-gencode=arch=compute_" + num + ",code=sm_" + num};
  std::string inc = harnessIncludeDir();
  if (!inc.empty()) args.push_back("-I" + inc);
  for (auto &i : o.includes) args.push_back("-I" + i);
  for (auto &d : o.defines) args.push_back("-D" + d);
  for (auto &f : o.flags) args.push_back(f);
  for (auto &l : o.libs) args.push_back("-l" + l);
  return args;
}

namespace {

// The compiler's identity: part of every cache key. `nvcc --version` costs ~10 ms, a
// noticeable share of a cached candidate's overhead, so it is remembered per process and
// on disk, keyed by the executable's path, size and modification time.
std::string compilerVersion(const std::string &nvcc, const std::string &cache_dir) {
  static std::mutex m;
  static std::map<std::string, std::string> memo;
  std::lock_guard<std::mutex> lock(m);
  auto it = memo.find(nvcc);
  if (it != memo.end()) return it->second;
  std::error_code ec;
  auto size = fs::file_size(nvcc, ec);
  auto mtime = fs::last_write_time(nvcc, ec).time_since_epoch().count();
  std::string stamp = nvcc + "|" + std::to_string(size) + "|" + std::to_string(mtime);
  auto digest = llvm::SHA256::hash(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(stamp.data()), stamp.size()));
  std::string file = cache_dir + "/nvcc-version-" + std::to_string(digest[0]) + "-" +
                     std::to_string(digest[1]) + "-" + std::to_string(digest[2]) + "-" +
                     std::to_string(digest[3]);
  if (auto t = readFile(file); t && t->rfind(stamp + "\n", 0) == 0)
    return memo[nvcc] = t->substr(stamp.size() + 1);
  RunOptions ro;
  ro.timeout_s = 60;
  auto r = runProcess({nvcc, "--version"}, ro);
  if (r.exit_code == 0) writeFileAtomic(file, stamp + "\n" + r.out);
  return memo[nvcc] = r.out;
}

// Every header `file` reaches (directIncludes, transitively), with its text: the cache key
// holds them, so a header that changed is a new build.
void localIncludes(const fs::path &file, const std::vector<std::string> &dirs,
                   std::set<std::string> &seen, std::string &acc) {
  auto text = readFile(file.string());
  if (!text) return;
  for (auto &h : directIncludes(*text, file.parent_path().string(), dirs)) {
    std::error_code ec;
    std::string key = fs::weakly_canonical(h, ec).string();
    if (!seen.insert(key).second) continue;
    if (auto t = readFile(key)) acc += "\n#file " + key + "\n" + *t;
    localIncludes(h, dirs, seen, acc);
  }
}

std::string hex(llvm::ArrayRef<uint8_t> bytes) {
  static const char *d = "0123456789abcdef";
  std::string s;
  for (auto b : bytes) {
    s += d[b >> 4];
    s += d[b & 15];
  }
  return s;
}

void saveRecord(const fs::path &dir, const BuildRecord &b) {
  llvm::json::Object o{{"ok", b.ok},         {"exit_code", b.exit_code},
                       {"signal", b.signal}, {"timed_out", b.timed_out},
                       {"log", b.log},       {"wall_ms", b.wall_ms}};
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::json::Value(std::move(o));
  writeFileAtomic((dir / "build.json").string(), os.str());
}

std::optional<BuildRecord> loadRecord(const fs::path &dir) {
  auto t = readFile((dir / "build.json").string());
  if (!t) return std::nullopt;
  auto v = llvm::json::parse(*t);
  if (!v || !v->getAsObject()) return std::nullopt;
  auto &o = *v->getAsObject();
  BuildRecord b;
  b.ok = o.getBoolean("ok").value_or(false);
  b.exit_code = (int)o.getInteger("exit_code").value_or(0);
  b.signal = (int)o.getInteger("signal").value_or(0);
  b.timed_out = o.getBoolean("timed_out").value_or(false);
  if (auto l = o.getString("log")) b.log = l->str();
  b.wall_ms = o.getNumber("wall_ms").value_or(0);
  if (b.ok && !fs::exists(dir / "prog")) return std::nullopt;
  return b;
}

}  // namespace

std::string includedName(std::string_view l, bool *angled) {
  size_t i = l.find_first_not_of(" \t");
  if (i == std::string_view::npos || l[i] != '#') return "";
  i = l.find_first_not_of(" \t", i + 1);
  if (i == std::string_view::npos || l.substr(i, 7) != "include") return "";
  i = l.find_first_not_of(" \t", i + 7);
  if (i == std::string_view::npos || (l[i] != '"' && l[i] != '<')) return "";
  const size_t close = l.find(l[i] == '"' ? '"' : '>', i + 1);
  if (close == std::string_view::npos) return "";
  *angled = l[i] == '<';
  return std::string(l.substr(i + 1, close - i - 1));
}

std::vector<std::string> directIncludes(const std::string &text, const std::string &dir,
                                        const std::vector<std::string> &dirs) {
  std::vector<std::string> out;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    bool angled = false;
    const std::string name = includedName(std::string_view(text).substr(at, end - at), &angled);
    at = end + 1;
    if (name.empty()) continue;
    std::vector<fs::path> cands;
    if (!angled) cands.push_back(fs::path(dir) / name);
    for (auto &d : dirs) cands.push_back(fs::path(d) / name);
    for (auto &c : cands) {
      std::error_code ec;
      if (!fs::is_regular_file(c, ec)) continue;
      out.push_back(c.string());
      break;
    }
  }
  return out;
}

std::string reachedHeaders(const std::string &source_path, const std::vector<std::string> &dirs) {
  std::set<std::string> seen;
  std::string headers;
  localIncludes(fs::absolute(source_path), dirs, seen, headers);
  const std::string srcdir = fs::absolute(source_path).parent_path().string();
  for (size_t at = headers.find(srcdir); !srcdir.empty() && at != std::string::npos;
       at = headers.find(srcdir, at + 8))
    headers.replace(at, srcdir.size(), "<srcdir>");
  return headers;
}

BuildRecord buildProgram(const std::string &source_path, const BuildOptions &o) {
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  BuildRecord b;
  std::string nvcc = findNvcc(o.nvcc);
  if (nvcc.empty()) {
    b.tool_missing = true;
    b.tool_error = o.nvcc.empty() ? "nvcc was not found in PATH or /usr/local/cuda/bin (install "
                                    "the CUDA toolkit or pass --nvcc)"
                                  : "nvcc '" + o.nvcc + "' was not found or is not executable";
    return b;
  }
  auto src = readFile(source_path);
  if (!src) {
    b.tool_missing = true;
    b.tool_error = "cannot read " + source_path;
    return b;
  }
  auto args = nvccArgs(o);

  // The hang watchdog: compile an instrumented copy instead of the user's file. The
  // copy is made only on a cache miss (the rewrite parses the program with Clang): the key holds
  // the original, the watchdog's flags and the runtime header instead.
  const bool watchdog = o.watchdog && o.instrument;
  if (watchdog) {
    putSourceDirFirst(args, source_path);  // the copy lives elsewhere
    char ms[64];
    std::snprintf(ms, sizeof ms, "%g", o.watchdog_ms);
    args.push_back(std::string("-DWSWATCH_DEFAULT_MS=") + ms);
  }

  // The key: compiler identity, flags, the source and every local header it includes.
  std::string cache = o.cache_dir.empty() ? defaultCacheDir() : o.cache_dir;
  std::error_code mk;
  fs::create_directories(cache, mk);
  // The program's own directory is a private temp dir for every reducer or fuzzer candidate: the
  // key names it "<srcdir>" (what it holds that matters, its local headers, goes in by content
  // below).
  const std::string srcdir = fs::absolute(source_path).parent_path().string();
  auto norm = [&](std::string x) {
    for (size_t at = x.find(srcdir); !srcdir.empty() && at != std::string::npos;
         at = x.find(srcdir, at + 8))
      x.replace(at, srcdir.size(), "<srcdir>");
    return x;
  };
  std::string material = compilerVersion(nvcc, cache) + "\n#nvcc " + nvcc + "\n";
  for (auto &a : args) material += "\n#arg " + norm(a);
  // The name, not only the extension (which picks the language): -lineinfo, assert() and the
  // watchdog's records carry it, so the same text under another name is another binary.
  material += "\n#name " + fs::path(source_path).filename().string();
  material += "\n#source\n" + *src;
  if (watchdog) {
    material += "\n#watchdog wswatch-1";
    if (auto h = harnessIncludeDir(); !h.empty())
      material += "\n#runtime\n" + readFile(h + "/wswatch_rt.cuh").value_or("") +
                  readFile(h + "/wswatch_abi.h").value_or("");
  }
  std::vector<std::string> dirs = o.includes;
  if (auto h = harnessIncludeDir(); !h.empty()) dirs.push_back(h);
  material += reachedHeaders(source_path, dirs);
  b.key = hex(llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(material.data()), material.size())));

  fs::path final_dir = fs::path(cache) / "build" / b.key;
  // A program the watchdog could not instrument (or whose copy did not compile) is built plain;
  // the marker remembers that, so the next build does not parse it again.
  const fs::path plain_marker = final_dir.string() + ".plain";
  auto buildPlain = [&](const std::string &why, bool remember) {
    if (remember) writeFileAtomic(plain_marker.string(), why + "\n");
    BuildOptions plain = o;
    plain.watchdog = false;
    BuildRecord orig = buildProgram(source_path, plain);
    orig.log = "[wsreduce] watchdog: " + why + "; built without it\n" + orig.log;
    return orig;
  };
  if (watchdog && o.use_cache && fs::exists(plain_marker)) {
    touchCacheEntry(plain_marker.string());
    std::string why = readFile(plain_marker.string()).value_or("");
    why = why.substr(0, why.find('\n'));
    return buildPlain(why.empty() ? "the program could not be instrumented" : why, false);
  }
  if (o.use_cache) {
    if (auto hit = loadRecord(final_dir)) {
      touchCacheEntry(final_dir.string());
      hit->cache_hit = true;
      hit->key = b.key;
      hit->binary = hit->ok ? (final_dir / "prog").string() : "";
      hit->instrumented = watchdog;
      hit->wall_ms = elapsed();
      return *hit;
    }
  }

  // Compile in a private directory next to the cache entry, then publish it by rename.
  std::error_code ec;
  fs::create_directories(fs::path(cache) / "build", ec);
  std::string work = makeTempDir("wsbuild.");
  fs::path staging =
      fs::path(cache) / "build" / (".tmp-" + b.key + "-" + std::to_string(::getpid()));
  fs::create_directories(staging, ec);
  if (work.empty() || ec) {
    b.tool_missing = true;
    b.tool_error = "cannot create a build directory under " + cache;
    removeTree(work);
    return b;
  }
  std::vector<std::string> cmd = {nvcc};
  cmd.insert(cmd.end(), args.begin(), args.end());
  // nvcc picks the language from the extension; a reducer candidate keeps the original's.
  std::string compiled = fs::absolute(source_path).string();
  std::string compile_text;
  if (watchdog) {
    try {
      compile_text = o.instrument(*src, source_path);
    } catch (...) {
      compile_text.clear();
    }
    if (compile_text.empty()) {  // the program could not be instrumented (it does not parse, ...)
      removeTree(work);
      removeTree(staging.string());
      return buildPlain("the program could not be instrumented", true);
    }
  }
  if (!compile_text.empty()) {
    fs::path copy = fs::path(work) / (fs::path(source_path).stem().string() + ".wswatch" +
                                      fs::path(source_path).extension().string());
    if (writeFileAtomic(copy.string(), compile_text)) compiled = copy.string();
  }
  cmd.push_back(compiled);
  cmd.push_back("-o");
  cmd.push_back((staging / "prog").string());
  RunOptions ro;
  ro.timeout_s = o.timeout_s;
  ro.workdir = work;
  ro.tmpdir_in_workdir = true;  // nvcc's own temp files stay private and are removed with it
  auto r = runProcess(cmd, ro);
  removeTree(work);
  b.exit_code = r.exit_code;
  b.signal = r.signal;
  b.timed_out = r.timed_out;
  b.log = r.out + (r.out.empty() || r.err.empty() ? "" : "\n") + r.err;
  if (r.spawn_failed) {
    b.tool_missing = true;
    b.tool_error = r.spawn_error;
    removeTree(staging.string());
    return b;
  }
  if (r.cancelled) {  // the caller gave up on this candidate: nothing to publish
    removeTree(staging.string());
    b.cancelled = b.timed_out = true;
    b.log = "[wsreduce] build cancelled";
    return b;
  }
  b.ok = !r.timed_out && r.signal == 0 && r.exit_code == 0 && fs::exists(staging / "prog");
  b.wall_ms = r.wall_ms;
  b.instrumented = !compile_text.empty();
  if (!b.ok && b.instrumented && !r.timed_out) {
    // Never blame the program for the instrumentation: build the original instead.
    removeTree(staging.string());
    return buildPlain("the instrumented copy did not compile", true);
  }
  saveRecord(staging, b);
  if (!o.use_cache) {
    fs::remove_all(final_dir, ec);
  }
  fs::rename(staging, final_dir, ec);
  if (ec) {  // someone else published the same key first: theirs is as good as ours
    removeTree(staging.string());
  } else {
    noteCacheGrowth(cache);
  }
  b.binary = b.ok ? (final_dir / "prog").string() : "";
  b.wall_ms = elapsed();
  return b;
}

}  // namespace wsr
