#include "parse.h"

#include <clang/AST/ASTContext.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/ASTUnit.h>
#include <clang/Frontend/TextDiagnosticBuffer.h>
#include <clang/Lex/Lexer.h>
#include <clang/Tooling/Tooling.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>

#include <unistd.h>
#include <future>
#include <sstream>

namespace fs = std::filesystem;

namespace wsr {

std::string detectCudaPath() {
  if (const char *p = std::getenv("PATH")) {
    std::istringstream in(p);
    std::string dir;
    while (std::getline(in, dir, ':')) {
      std::error_code ec;
      fs::path nvcc = fs::path(dir) / "nvcc";
      if (!dir.empty() && fs::exists(nvcc, ec)) {
        auto real = fs::canonical(nvcc, ec);
        if (!ec) return real.parent_path().parent_path().string();
      }
    }
  }
  return "/usr/local/cuda";
}

std::string clangResourceDir() {
  std::error_code ec;
  auto self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path p = self.parent_path() / ".." / "lib" / "clang" / "22";
    if (fs::exists(p / "include" / "__clang_cuda_runtime_wrapper.h", ec))
      return fs::weakly_canonical(p).string();
  }
  return "/usr/lib/llvm-22/lib/clang/22";
}

ParsedSide::ParsedSide() = default;
ParsedSide::~ParsedSide() = default;  // `ast` goes before `keep` (declared after it)
ParsedSide::ParsedSide(ParsedSide &&) = default;
ParsedSide &ParsedSide::operator=(ParsedSide &&o) {
  ast = std::move(o.ast);  // the old AST goes while what it reads from is still kept
  keep = std::move(o.keep);
  errors = std::move(o.errors);
  device = o.device;
  return *this;
}
ParsedSource::ParsedSource() = default;
ParsedSource::~ParsedSource() = default;

bool ParsedSource::ok() const {
  if (sides.empty()) return false;
  for (auto &s : sides)
    if (!s.ast || !s.errors.empty()) return false;
  return true;
}

std::string ParsedSource::firstError() const {
  for (auto &s : sides) {
    if (!s.ast) return std::string(s.device ? "device" : "host") + " parse failed";
    if (!s.errors.empty()) return s.errors.front();
  }
  return {};
}

static bool isCuda(const std::string &path) {
  auto ext = fs::path(path).extension().string();
  return ext == ".cu" || ext == ".cuh";
}

// Clang's CUDA runtime wrapper, included before the program, #includes "cuda.h" for
// CUDA_VERSION, and so shows the whole driver API (CUtensorMap, cuTensorMapEncodeTiled, CUresult)
// to a program that never included <cuda.h>; nvcc's implicit headers do not. A reduction judged
// on the emulator dropped `#include <cuda.h>`, parsed here and failed in nvcc on the H200
// ("identifier CUtensorMap is undefined"). A directory first on the include path holds a cuda.h
// that gives the wrapper's (first) inclusion CUDA_VERSION only and hands any later one, the
// program's own, to the real header (#include_next). Empty when the version is not found.
static std::mutex cuda_h_m;
// cuda -> (dir, version)
static std::map<std::string, std::pair<std::string, std::string>> cuda_h_memo;

static std::string cudaHOverrideDir(const std::string &cuda, std::string *version) {
  auto &memo = cuda_h_memo;
  std::lock_guard<std::mutex> l(cuda_h_m);
  if (auto it = memo.find(cuda); it != memo.end()) {
    *version = it->second.second;
    return it->second.first;
  }
  auto &slot = memo[cuda];
  std::ifstream in(fs::path(cuda) / "include" / "cuda.h");
  std::string line;
  while (std::getline(in, line)) {
    std::smatch mt;
    static const std::regex re(R"(^\s*#\s*define\s+CUDA_VERSION\s+(\d+))");
    if (std::regex_search(line, mt, re)) {
      slot.second = mt[1];
      break;
    }
  }
  if (slot.second.empty()) return {};
  std::error_code ec;
  fs::path dir = fs::temp_directory_path(ec) / ("wsreduce-cuda-h-" + std::to_string(::getuid()));
  fs::create_directories(dir, ec);
  const std::string text =
      "// wsreduce: clang's CUDA runtime wrapper includes cuda.h for CUDA_VERSION only (nvcc "
      "includes no\n"
      "// cuda.h for the program); the program's own #include <cuda.h> gets the real one.\n"
      "#ifndef WSR_CUDA_H_FROM_WRAPPER\n#define WSR_CUDA_H_FROM_WRAPPER\n#define CUDA_VERSION "
      "WSR_CUDA_VERSION\n"
      "#include <stdint.h>\ntypedef uint32_t cuuint32_t;  // what clang's own CUDA headers use of "
      "it\ntypedef uint64_t cuuint64_t;\n"
      "#define CU_DEVICE_INVALID ((CUdevice)-2)  // the wrapper tests it (CUDA >= 8.0.41); same "
      "tokens as cuda.h\n"
      "#else\n#include_next <cuda.h>\n#endif\n";
  fs::path file = dir / "cuda.h";
  std::ifstream old(file);
  std::stringstream have;
  have << old.rdbuf();
  if (have.str() != text) {
    fs::path tmp = dir / (".cuda.h." + std::to_string(::getpid()));
    std::ofstream(tmp) << text;
    fs::rename(tmp, file, ec);
    if (ec) return {};
  }
  slot.first = dir.string();
  *version = slot.second;
  return slot.first;
}

bool isParseShim(const std::string &path) {
  std::lock_guard<std::mutex> l(cuda_h_m);
  const fs::path dir = fs::path(path).parent_path();
  for (auto &[cuda, slot] : cuda_h_memo)
    if (!slot.first.empty() && fs::path(slot.first) == dir) return true;
  return false;
}

// The clang arguments of each side (without argv[0] and the file): host, then device.
std::vector<std::vector<std::string>> parseArgs(const std::string &path, const ParseOptions &opt) {
  std::string cuda = opt.cuda_path.empty() ? detectCudaPath() : opt.cuda_path;
  // A non-constant narrowing in a braced initializer (`cuuint64_t dims[] = {cols, rows}`) is an
  // error by default in Clang and a warning in nvcc's host compiler: nvcc builds it. The strict
  // parse's -Wno-everything let a reduction take it (a reduction of the missing proxy fence,
  // whose casts simplify-expr removed), and the emulator's own parse then refused the result.
  std::vector<std::string> common = {"-std=c++17", "-resource-dir=" + clangResourceDir(),
                                     "-Wno-unknown-cuda-version", "-Wno-c++11-narrowing",
                                     "-ferror-limit=5"};
  std::string cuda_version;
  if (isCuda(path))
    if (auto dir = cudaHOverrideDir(cuda, &cuda_version); !dir.empty()) {
      common.insert(common.end(), {"-I" + dir, "-DWSR_CUDA_VERSION=" + cuda_version});
      // nvcc's own version macros, as nvcc defines them: Clang is not nvcc, and a program's or a
      // library's #if on them (CUTLASS's example 48 and its epilogue headers) would take other
      // branches here than in the build, or name an undeclared identifier.
      const int n = std::atoi(cuda_version.c_str());
      common.insert(common.end(), {"-D__CUDACC_VER_MAJOR__=" + std::to_string(n / 1000),
                                   "-D__CUDACC_VER_MINOR__=" + std::to_string(n % 1000 / 10)});
    }
  // strict (the reducer's parse check): besides a non-void function falling off its end, a
  // variable read before it is written is undefined behaviour a deletion easily creates (the
  // declaration stays, its initialising call goes); its verdict would be luck, not the bug.
  if (opt.strict_return)
    common.insert(common.end(),
                  {"-Wno-everything", "-Werror=return-type", "-Werror=uninitialized"});
  else
    common.push_back("-w");
  for (auto &i : opt.includes) common.push_back("-I" + i);
  // CUDA 13 keeps libcu++, CUB and Thrust (<cuda/std/...>, what CUTLASS includes) in include/cccl,
  // which nvcc puts on the path as a system folder (nvcc.profile) and Clang does not know of.
  if (std::error_code ec; isCuda(path) && fs::is_directory(fs::path(cuda) / "include" / "cccl", ec))
    common.insert(common.end(), {"-isystem", (fs::path(cuda) / "include" / "cccl").string()});
  for (auto &d : opt.defines) common.push_back("-D" + d);
  common.insert(common.end(), opt.extra.begin(), opt.extra.end());
  std::vector<std::vector<std::string>> out;
  if (!isCuda(path)) {
    auto a = common;
    a.insert(a.begin(), {"-x", "c++", "-fsyntax-only"});
    out.push_back(a);
    return out;
  }
  for (bool device : {false, true}) {
    auto a = common;
    a.insert(a.begin(), {"-x", "cuda", device ? "--cuda-device-only" : "--cuda-host-only",
                         "--cuda-gpu-arch=" + opt.arch, "--cuda-path=" + cuda, "-fsyntax-only"});
    out.push_back(a);
  }
  return out;
}

std::unique_ptr<ParsedSource> parseSource(const std::string &text, const std::string &path,
                                          const ParseOptions &opt) {
  auto out = std::make_unique<ParsedSource>();
  out->path = fs::absolute(path).string();
  out->text = text;
  auto parseSide = [&](const std::vector<std::string> &args, bool device) {
    clang::TextDiagnosticBuffer diags;
    ParsedSide side;
    side.device = device;
    side.ast = clang::tooling::buildASTFromCodeWithArgs(
        text, args, out->path, "wsreduce", std::make_shared<clang::PCHContainerOperations>(),
        clang::tooling::getClangStripDependencyFileAdjuster(), {}, &diags);
    if (side.ast) {
      auto &sm = side.ast->getSourceManager();
      for (auto it = diags.err_begin(); it != diags.err_end() && side.errors.size() < 5; ++it) {
        std::string where;
        if (it->first.isValid()) {
          auto pl = sm.getPresumedLoc(it->first);
          if (pl.isValid())
            where = std::to_string(pl.getLine()) + ":" + std::to_string(pl.getColumn()) + ": ";
        }
        side.errors.push_back(where + it->second);
      }
    } else {
      side.errors.push_back("clang could not build an AST");
    }
    return side;
  };
  // The host and device sides are independent parses: both at once (the reducer waits for this
  // after every accepted step while its slots idle).
  auto all = parseArgs(out->path, opt);
  std::vector<std::future<ParsedSide>> later;
  for (size_t i = 1; i < all.size(); ++i)
    later.push_back(std::async(std::launch::async, parseSide, std::cref(all[i]), true));
  if (!all.empty()) out->sides.push_back(parseSide(all[0], false));
  for (auto &f : later) out->sides.push_back(f.get());
  return out;
}

static thread_local const ParsedSource *t_lent = nullptr;

ParseLoan::ParseLoan(const ParsedSource &p) : prev_(t_lent) { t_lent = &p; }
ParseLoan::~ParseLoan() { t_lent = prev_; }

std::shared_ptr<const ParsedSource> parseOnce(const std::string &text, const std::string &path,
                                              const ParseOptions &opt) {
  if (t_lent && t_lent->text == text)
    return std::shared_ptr<const ParsedSource>(t_lent, [](const ParsedSource *) {});
  return parseSource(text, path, opt);
}

std::optional<unsigned> mainFileOffset(const clang::ASTContext &ctx, clang::SourceLocation l) {
  auto &sm = ctx.getSourceManager();
  if (l.isInvalid() || l.isMacroID() || !sm.isInMainFile(l)) return std::nullopt;
  return sm.getFileOffset(l);
}

std::optional<Range> mainFileRange(const clang::ASTContext &ctx, clang::SourceRange r) {
  auto &sm = ctx.getSourceManager();
  // A range may start or end inside a macro (`__device__`, `__global__` are macros): the
  // lexer maps it to the file when the macro's whole expansion is at that edge.
  if (r.isInvalid()) return std::nullopt;
  auto cr = clang::Lexer::makeFileCharRange(clang::CharSourceRange::getTokenRange(r), sm,
                                            ctx.getLangOpts());
  if (cr.isInvalid()) return std::nullopt;
  if (!sm.isInMainFile(cr.getBegin()) || !sm.isInMainFile(cr.getEnd())) return std::nullopt;
  Range out{sm.getFileOffset(cr.getBegin()), sm.getFileOffset(cr.getEnd())};
  if (out.end < out.begin) return std::nullopt;
  return out;
}

std::optional<Range> mainFileRangeWithSemi(const clang::ASTContext &ctx, clang::SourceRange r) {
  auto base = mainFileRange(ctx, r);
  if (!base) return base;
  auto &sm = ctx.getSourceManager();
  auto fid = sm.getMainFileID();
  llvm::StringRef buf = sm.getBufferData(fid);
  unsigned i = base->end;
  while (i < buf.size() && (buf[i] == ' ' || buf[i] == '\t')) ++i;
  if (i < buf.size() && buf[i] == ';') base->end = i + 1;
  return base;
}

}  // namespace wsr
