// The PTX path's build: one nvcc run that compiles the program as its author builds it (the
// oracle's nvcc flags), keeps the PTX it generated (--keep), and links with `-cudart none` against
// the emulator's CUDA runtime. A program that links -lcuda finds the emulator's library first
// (<lib dir>/libcuda.a is a copy of it, and -L puts that directory before nvcc's own).
#include "emu/ptx/ptx_build.h"

#include <llvm/Support/xxhash.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <set>

#include "build.h"
#include "cache.h"
#include "process.h"

namespace fs = std::filesystem;

namespace wsr::emu {

// An install tree (scripts/device-pack.sh) keeps the libraries in <bin>/../lib/wsemu-ptx/; a build
// tree's own directory comes second.
std::string ptxEmuLibraryDir() {
  if (std::string self = selfDir(); !self.empty()) {
    std::error_code ec;
    fs::path d = fs::path(self) / ".." / "lib" / "wsemu-ptx";
    if (::access((d / "libwsemu_cudart.a").c_str(), R_OK) == 0)
      return fs::weakly_canonical(d, ec).string();
  }
#ifdef WSEMU_PTX_LIBDIR
  if (::access(WSEMU_PTX_LIBDIR "/libwsemu_cudart.a", R_OK) == 0) return WSEMU_PTX_LIBDIR;
#endif
  return "";
}

BuildRecord buildPtxEmu(const std::string &source_path, const BuildOptions &o) {
  BuildRecord b;
  b.backend = "emu";
  b.emu_by_nvcc = true;
  auto t0 = std::chrono::steady_clock::now();
  auto done = [&]() -> BuildRecord & {
    b.wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return b;
  };
  const std::string libdir = ptxEmuLibraryDir();
  const std::string nvcc = findNvcc(o.nvcc);
  if (libdir.empty() || nvcc.empty()) {
    b.tool_missing = true;
    b.tool_error = libdir.empty() ? "the PTX emulator's runtime (libwsemu_cudart.a) was not found; "
                                    "build wsemu_cudart"
                                  : "nvcc was not found";
    return done();
  }
  auto text = readFile(source_path);
  if (!text) {
    b.tool_missing = true;
    b.tool_error = source_path + " cannot be read";
    return done();
  }
  // The libraries the program links, in the order the linker needs them.
  const std::vector<std::string> archives = {
      libdir + "/libwsemu_cudart.a", libdir + "/libwsr_emu_ptx.a", libdir + "/libwsr_emu_runtime.a",
      libdir + "/libboost_context.a"};
  std::vector<std::string> args = nvccArgs(o);
  // -lineinfo: every verdict's line comes from the PTX's .loc
  if (std::find(args.begin(), args.end(), "-lineinfo") == args.end()) args.push_back("-lineinfo");
  // The host code's uninitialised locals get a pattern (0xFE bytes) instead of what the stack held,
  // as the device's registers do (emu/ptx/interp.cpp): a candidate that reads one (a reduction
  // that dropped `cudaGetDeviceProperties(&prop)` and launched prop.multiProcessorCount blocks)
  // then fails the same way every time instead of by the stack's luck.
  args.push_back("-Xcompiler=-ftrivial-auto-var-init=pattern");

  // The key: the source and the headers it reaches, the flags, nvcc and the libraries.
  std::string material =
      *text + "\n#name " + fs::path(source_path).filename().string() + "\n#nvcc " + nvcc;
  for (auto &a : args) material += " " + a;
  material += reachedHeaders(source_path, o.includes);
  std::error_code ec;
  for (auto &a : archives)
    material +=
        "\n#lib " + a + " " + std::to_string(fs::last_write_time(a, ec).time_since_epoch().count());
  if (auto h = harnessIncludeDir(); !h.empty())
    material += "\n#harness\n" + readFile(h + "/wscheck.h").value_or("");
  char key[32];
  std::snprintf(key, sizeof key, "%016llx",
                (unsigned long long)llvm::xxh3_64bits(llvm::StringRef(material)));
  b.key = std::string("ptx-") + key;
  const std::string cache = o.cache_dir.empty() ? defaultCacheDir() : o.cache_dir;
  const fs::path dir = fs::path(cache) / "emu" / b.key;
  const fs::path bin = dir / "prog", ptx = dir / "prog.ptx";
  if (o.use_cache && fs::exists(bin) && fs::exists(ptx)) {
    touchCacheEntry(dir.string());
    b.ok = true;
    b.cache_hit = true;
    b.binary = bin.string();
    return done();
  }
  fs::create_directories(dir, ec);
  const std::string pid = std::to_string(::getpid());
  const fs::path keep = dir / (".keep-" + pid), tmp = dir / (".prog-" + pid);
  fs::create_directories(keep, ec);
  // nvcc names its kept files after the source and passes them through a shell: a name with a
  // quote or a leading dash breaks it. It compiles a copy named prog<ext> (the extension picks
  // the language) whose #line gives the PTX's line table the program's own path, with the
  // program's directory first among the -I directories for its quoted includes. The PTX's .file
  // directive cannot hold a double quote or a backslash (cicc does not escape them): those two
  // read as '_' in the verdict's lines.
  const fs::path src_abs = fs::absolute(source_path);
  const fs::path copy = keep / ("prog" + src_abs.extension().string());
  std::string esc;
  for (char c : src_abs.string()) esc += (c == '"' || c == '\\') ? '_' : c;
  if (!writeFileAtomic(copy.string(), "#line 1 \"" + esc + "\"\n" + *text)) {
    b.tool_missing = true;
    b.tool_error = "cannot write the program's copy under " + keep.string();
    fs::remove_all(keep, ec);
    return done();
  }
  putSourceDirFirst(args, source_path);
  std::vector<std::string> cmd = {nvcc};
  cmd.insert(cmd.end(), args.begin(), args.end());
  cmd.insert(cmd.end(), {"-cudart", "none", "--keep", "--keep-dir", keep.string(), "-o",
                         tmp.string(), copy.string(), "-L" + libdir});
  cmd.insert(cmd.end(), archives.begin(), archives.end());
  cmd.push_back("-lpthread");
  RunOptions ro;
  ro.timeout_s = o.timeout_s;
  ro.tmpdir_in_workdir = true;
  auto r = runProcess(cmd, ro);
  b.exit_code = r.exit_code;
  b.signal = r.signal;
  b.timed_out = r.timed_out;
  b.cancelled = r.cancelled;
  std::string log = r.out + (r.out.empty() || r.err.empty() ? "" : "\n") + r.err;
  if (r.spawn_failed) {
    b.tool_missing = true;
    b.tool_error = r.spawn_error;
    fs::remove_all(keep, ec);
    return done();
  }
  // The kernels' PTX for the target the binary runs: <stem>.compute_<arch>.ptx, or the one .ptx.
  std::string num = o.arch.rfind("sm_", 0) == 0 ? o.arch.substr(3) : o.arch;
  fs::path kept;
  for (auto &e : fs::directory_iterator(keep, ec)) {
    if (e.path().extension() != ".ptx") continue;
    if (kept.empty() ||
        e.path().filename().string().find("compute_" + num + ".") != std::string::npos)
      kept = e.path();
  }
  // A link error naming a CUDA entry point: what the emulator's runtime does not implement.
  std::string refusals;
  {
    static const std::regex undef(R"(undefined reference to `([A-Za-z_0-9]+)')");
    std::set<std::string> seen;
    for (std::sregex_iterator it(log.begin(), log.end(), undef), end; it != end; ++it) {
      std::string name = (*it)[1].str();
      if (!seen.insert(name).second) continue;
      refusals += "[wsemu-ptx] error: unsupported: the CUDA entry point `" + name +
                  "` (the PTX emulator's runtime does not implement it)\n";
    }
  }
  b.log = refusals + log;
  b.ok = !r.timed_out && r.signal == 0 && r.exit_code == 0 && fs::exists(tmp) && !kept.empty();
  // A failure that names one of the emulator's own libraries (one being rebuilt, truncated, of
  // another format) is the judge's, never the program's compile error.
  if (!b.ok && refusals.empty())
    for (auto &a : archives)
      if (size_t at = log.find(a); at != std::string::npos) {
        size_t bol = log.rfind('\n', at), eol = log.find('\n', at);
        bol = bol == std::string::npos ? 0 : bol + 1;
        b.tool_missing = true;
        b.tool_error = "the PTX emulator's library could not be linked: " +
                       log.substr(bol, eol == std::string::npos ? std::string::npos : eol - bol);
        break;
      }
  if (b.ok) {
    fs::rename(kept, ptx, ec);
    fs::rename(tmp, bin, ec);
    b.binary = bin.string();
    noteCacheGrowth(cache);
  } else {
    if (r.exit_code == 0 && kept.empty())
      b.log = "[wsemu-ptx] error: nvcc kept no PTX for compute_" + num + "\n" + b.log;
    fs::remove(tmp, ec);
  }
  fs::remove_all(keep, ec);
  return done();
}

}  // namespace wsr::emu
