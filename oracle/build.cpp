#include "build.h"

#include "process.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <regex>
#include <set>
#include <unistd.h>

namespace fs = std::filesystem;

namespace wsr {

std::string defaultCacheDir() {
  if (const char *c = std::getenv("WSREDUCE_CACHE"); c && *c) return c;
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/wsreduce";
  if (const char *h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/wsreduce";
  return "/tmp/wsreduce-cache";
}

static std::string selfDir() {
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
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "build", ec);
  if (ec || ::access((fs::path(dir) / "build").c_str(), W_OK) != 0) {
    if (err) *err = "the cache directory " + dir + " cannot be created or written (set WSREDUCE_CACHE or --cache-dir)";
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

// The compiler's identity, once per process: part of every cache key.
std::string compilerVersion(const std::string &nvcc) {
  static std::mutex m;
  static std::map<std::string, std::string> memo;
  std::lock_guard<std::mutex> lock(m);
  auto it = memo.find(nvcc);
  if (it != memo.end()) return it->second;
  RunOptions ro;
  ro.timeout_s = 60;
  auto r = runProcess({nvcc, "--version"}, ro);
  return memo[nvcc] = r.out;
}

// Local headers reached by #include "..." from the source (transitively), so that a
// change to one of them changes the key.
void localIncludes(const fs::path &file, const std::vector<std::string> &dirs,
                   std::set<std::string> &seen, std::string &acc) {
  auto text = readFile(file.string());
  if (!text) return;
  static const std::regex inc(R"(^\s*#\s*include\s*\"([^\"]+)\")");
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, inc)) continue;
    std::vector<fs::path> cands = {file.parent_path() / m[1].str()};
    for (auto &d : dirs) cands.push_back(fs::path(d) / m[1].str());
    for (auto &c : cands) {
      std::error_code ec;
      if (!fs::is_regular_file(c, ec)) continue;
      std::string key = fs::weakly_canonical(c, ec).string();
      if (!seen.insert(key).second) break;
      if (auto t = readFile(key)) acc += "\n#file " + key + "\n" + *t;
      localIncludes(c, dirs, seen, acc);
      break;
    }
  }
}

std::string hex(llvm::ArrayRef<uint8_t> bytes) {
  static const char *d = "0123456789abcdef";
  std::string s;
  for (auto b : bytes) { s += d[b >> 4]; s += d[b & 15]; }
  return s;
}

void saveRecord(const fs::path &dir, const BuildRecord &b) {
  llvm::json::Object o{{"ok", b.ok}, {"exit_code", b.exit_code}, {"signal", b.signal},
                       {"timed_out", b.timed_out}, {"log", b.log}, {"wall_ms", b.wall_ms}};
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

BuildRecord buildProgram(const std::string &source_path, const BuildOptions &o) {
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  BuildRecord b;
  std::string nvcc = findNvcc(o.nvcc);
  if (nvcc.empty()) {
    b.tool_missing = true;
    b.tool_error = o.nvcc.empty() ? "nvcc was not found in PATH or /usr/local/cuda/bin (install the CUDA toolkit or pass --nvcc)"
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

  // The key: compiler identity, flags, the source and every local header it includes.
  std::string material = compilerVersion(nvcc) + "\n#nvcc " + nvcc + "\n";
  for (auto &a : args) material += "\n#arg " + a;
  material += "\n#ext " + fs::path(source_path).extension().string();
  material += "\n#source\n" + *src;
  std::set<std::string> seen;
  std::vector<std::string> dirs = o.includes;
  if (auto h = harnessIncludeDir(); !h.empty()) dirs.push_back(h);
  localIncludes(fs::absolute(source_path), dirs, seen, material);
  b.key = hex(llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(material.data()), material.size())));

  std::string cache = o.cache_dir.empty() ? defaultCacheDir() : o.cache_dir;
  fs::path final_dir = fs::path(cache) / "build" / b.key;
  if (o.use_cache) {
    if (auto hit = loadRecord(final_dir)) {
      hit->cache_hit = true;
      hit->key = b.key;
      hit->binary = hit->ok ? (final_dir / "prog").string() : "";
      hit->wall_ms = elapsed();
      return *hit;
    }
  }

  // Compile in a private directory next to the cache entry, then publish it by rename.
  std::error_code ec;
  fs::create_directories(fs::path(cache) / "build", ec);
  std::string work = makeTempDir("wsbuild.");
  fs::path staging = fs::path(cache) / "build" / (".tmp-" + b.key + "-" + std::to_string(::getpid()));
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
  cmd.push_back(fs::absolute(source_path).string());
  cmd.push_back("-o");
  cmd.push_back((staging / "prog").string());
  RunOptions ro;
  ro.timeout_s = o.timeout_s;
  ro.workdir = work;
  ro.env_set["TMPDIR"] = work;  // nvcc's own temp files stay private and are removed with it
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
  b.ok = !r.timed_out && r.signal == 0 && r.exit_code == 0 && fs::exists(staging / "prog");
  b.wall_ms = r.wall_ms;
  saveRecord(staging, b);
  if (!o.use_cache) {
    fs::remove_all(final_dir, ec);
  }
  fs::rename(staging, final_dir, ec);
  if (ec) {  // someone else published the same key first: theirs is as good as ours
    removeTree(staging.string());
  }
  b.binary = b.ok ? (final_dir / "prog").string() : "";
  b.wall_ms = elapsed();
  return b;
}

}  // namespace wsr
