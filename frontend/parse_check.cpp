#include "parse_check.h"

#include <thread>

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/Driver/CreateASTUnitFromArgs.h>
#include <clang/Driver/CreateInvocationFromArgs.h>
#include <clang/Frontend/PrecompiledPreamble.h>
#include <clang/Lex/PreprocessorOptions.h>
#include <clang/Frontend/ASTUnit.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Serialization/PCHContainerOperations.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/VirtualFileSystem.h>

#include <clang/Lex/Lexer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/AST/Stmt.h>

#include <filesystem>
#include <future>
#include <map>
#include <mutex>

namespace fs = std::filesystem;

namespace wsr {

std::vector<std::vector<std::string>> parseArgs(const std::string &path,
                                                const ParseOptions &opt);  // parse.cpp

struct ParseChecker::Side {
  std::vector<std::string> args;
  std::unique_ptr<clang::ASTUnit> unit;
  std::shared_ptr<clang::PCHContainerOperations> pch =
      std::make_shared<clang::PCHContainerOperations>();
};

ParseChecker::ParseChecker(std::string path, ParseOptions opt)
    : path_(fs::absolute(path).string()), opt_(std::move(opt)) {
  for (auto &a : parseArgs(path_, opt_)) {
    auto s = std::make_unique<Side>();
    s->args = a;
    sides_.push_back(std::move(s));
  }
}

ParseChecker::~ParseChecker() = default;

// nvcc refuses an inline-asm operand whose size is not the constraint's ("asm operand type
// size(8) does not match type/size implied by constraint 'r'"); Clang does not check it for
// NVPTX, nor does the emulator. A reduction once dropped the (uint32_t) cast of
// __cvta_generic_to_shared (a size_t) inside an "r" operand: it parsed, ran on the emulator and
// failed in nvcc (CI, test Reducer.KernelHangIsReducedOnTheEmulator). Checked in the user's file.
struct AsmSizes : clang::RecursiveASTVisitor<AsmSizes> {
  clang::ASTContext &ctx;
  std::string error;
  explicit AsmSizes(clang::ASTContext &c) : ctx(c) {}
  void operand(llvm::StringRef constraint, const clang::Expr *e, clang::SourceLocation at) {
    if (!error.empty() || !e || e->getType()->isDependentType() || e->getType()->isIncompleteType())
      return;
    constraint = constraint.ltrim("=+&");
    unsigned want = constraint == "r" ? 4 : constraint == "h" ? 2 : constraint == "l" ? 8 : 0;
    if (!want) return;
    auto size = ctx.getTypeSizeInChars(e->IgnoreImpCasts()->getType()).getQuantity();
    if (size > want) {
      auto pl = ctx.getSourceManager().getPresumedLoc(at);
      error =
          (pl.isValid() ? std::to_string(pl.getLine()) + ":" + std::to_string(pl.getColumn()) + ": "
                        : std::string()) +
          "asm operand type size(" + std::to_string(size) +
          ") does not match type/size implied by constraint '" + constraint.str() +
          "' (as nvcc says)";
    }
  }
  bool VisitGCCAsmStmt(clang::GCCAsmStmt *a) {
    for (unsigned i = 0; i < a->getNumOutputs(); ++i)
      operand(a->getOutputConstraint(i), a->getOutputExpr(i), a->getAsmLoc());
    for (unsigned i = 0; i < a->getNumInputs(); ++i)
      operand(a->getInputConstraint(i), a->getInputExpr(i), a->getAsmLoc());
    return true;
  }
};

static bool asmSizesOk(clang::ASTUnit &u, std::string *err) {
  auto &ctx = u.getASTContext();
  auto &sm = ctx.getSourceManager();
  AsmSizes v(ctx);
  for (auto *d : ctx.getTranslationUnitDecl()->decls()) {
    if (d->isImplicit() || !sm.isInMainFile(sm.getExpansionLoc(d->getBeginLoc()))) continue;
    v.TraverseDecl(d);
    if (!v.error.empty()) break;
  }
  if (v.error.empty()) return true;
  if (err) *err = v.error;
  return false;
}

static bool errorsOf(clang::ASTUnit &u, std::string *err) {
  for (auto it = u.stored_diag_begin(); it != u.stored_diag_end(); ++it) {
    if (it->getLevel() < clang::DiagnosticsEngine::Error) continue;
    if (err) {
      std::string where;
      if (it->getLocation().isValid()) {
        auto pl = it->getLocation().getManager().getPresumedLoc(it->getLocation());
        if (pl.isValid())
          where = std::to_string(pl.getLine()) + ":" + std::to_string(pl.getColumn()) + ": ";
      }
      *err = where + it->getMessage().str();
    }
    return false;
  }
  return true;
}

// The leading preprocessor directives Clang would precompile (Lexer::ComputePreamble).
static std::string preambleOf(const std::string &text) {
  clang::LangOptions lo;
  lo.CPlusPlus = lo.CPlusPlus11 = lo.CPlusPlus14 = lo.CPlusPlus17 = lo.CUDA = true;
  auto b = clang::Lexer::ComputePreamble(text, lo);
  return text.substr(0, b.Size);
}

// The leading #include lines of a text whose preamble (preambleOf) is `pre`: up to the end of the
// last line of it starting with #include. 0 when there is none.
static size_t includePrefix(const std::string &pre) {
  size_t end = 0, at = 0;
  while (at < pre.size()) {
    size_t nl = pre.find('\n', at);
    size_t e = nl == std::string::npos ? pre.size() : nl + 1;
    size_t i = pre.find_first_not_of(" \t", at);
    if (i != std::string::npos && i < e && pre[i] == '#') {
      size_t j = pre.find_first_not_of(" \t", i + 1);
      if (j != std::string::npos && pre.compare(j, 7, "include") == 0) end = e;
    }
    at = e;
  }
  return end;
}

std::string leadingIncludes(const std::string &text) {
  return text.substr(0, includePrefix(preambleOf(text)));
}

// A fresh ASTUnit of `text` under `args`: with PrecompilePreambleAfterNParses 1 it keeps a
// preamble for later Reparse calls, with 0 it is a one-off parse.
static std::unique_ptr<clang::ASTUnit> newUnit(const std::vector<std::string> &args,
                                               const std::string &path, const std::string &text,
                                               std::shared_ptr<clang::PCHContainerOperations> pch,
                                               unsigned preambleAfter) {
  std::vector<const char *> argv = {"clang"};
  for (auto &a : args) argv.push_back(a.c_str());
  argv.push_back(path.c_str());
  auto diagOpts = std::make_shared<clang::DiagnosticOptions>();
  auto vfs = llvm::vfs::getRealFileSystem();
  clang::IntrusiveRefCntPtr<clang::DiagnosticsEngine> diags(
      clang::CompilerInstance::createDiagnostics(*vfs, *diagOpts));
  auto buf = llvm::MemoryBuffer::getMemBufferCopy(text, path);
  std::vector<clang::ASTUnit::RemappedFile> remap = {{path, buf.release()}};
  return clang::CreateASTUnitFromCommandLine(
      argv.data(), argv.data() + argv.size(), std::move(pch), diagOpts, diags, clangResourceDir(),
      /*StorePreamblesInMemory=*/true, "",
      /*OnlyLocalDecls=*/true, clang::CaptureDiagsKind::All, remap,
      /*RemappedFilesKeepOriginalName=*/true, preambleAfter);
}

static std::shared_ptr<clang::CompilerInvocation> invocationOf(const std::vector<std::string> &args,
                                                               const std::string &path) {
  std::vector<const char *> argv = {"clang"};
  for (auto &a : args) argv.push_back(a.c_str());
  argv.push_back(path.c_str());
  auto vfs = llvm::vfs::getRealFileSystem();
  clang::DiagnosticOptions dopts;
  clang::CreateInvocationOptions o;
  o.Diags = clang::CompilerInstance::createDiagnostics(*vfs, dopts, new clang::IgnoringDiagConsumer,
                                                       /*ShouldOwnClient=*/true);
  o.VFS = vfs;
  std::shared_ptr<clang::CompilerInvocation> ci = clang::createInvocation(argv, o);
  if (ci) ci->getHeaderSearchOpts().ResourceDir = clangResourceDir();
  return ci;
}

namespace {

using Preamble = std::shared_ptr<const clang::PrecompiledPreamble>;

// The precompiled leading #include lines of the texts this process parses, one per side and
// text, shared by every checker and the search's listing parse. An accepted step that takes an
// #include line has had its preamble built by its own check already, so the parse of the new
// best and every checker's next candidate find it here: on the H200 each
// such step had stopped the search for 3-6 s with no candidate in flight while the listing parse
// (host side, then device side) and then each checker built the same preamble again.
class IncludePreambles {
 public:
  static IncludePreambles &instance() {
    static IncludePreambles p;
    return p;
  }
  // `inc` (a text's leading lines up to its last #include) precompiled for one side's `args`,
  // built once: a caller asking while another builds it waits for that build. Null when it does
  // not build without an error (the caller parses the text plainly and sees the error there).
  Preamble get(const std::vector<std::string> &args, const std::string &path,
               const std::string &inc) {
    std::string key = path + '\n' + inc;
    for (auto &a : args) key += '\n' + a;
    std::promise<Preamble> mine;
    std::shared_future<Preamble> ready;
    bool owner = false;
    {
      std::lock_guard<std::mutex> l(m_);
      auto it = map_.find(key);
      if (it != map_.end()) {
        it->second.used = ++tick_;
        ready = it->second.ready;
      } else {
        ready = mine.get_future().share();
        map_[key] = {ready, ++tick_};
        owner = true;
      }
    }
    if (!owner) return ready.get();
    Preamble p;
    try {
      p = build(args, path, inc);
    } catch (...) {
    }
    if (p) ++builds_;
    mine.set_value(p);
    std::lock_guard<std::mutex> l(m_);
    evict(key);
    return p;
  }
  long builds() const { return builds_; }

 private:
  // The least recently used go first when the built ones hold more than this (the GEMM's is
  // ~17 MB a side; remove-decl's candidates each bring their own set of #include lines, and the one
  // that is accepted must still be here when the search parses it). An AST that uses a preamble
  // keeps it alive on its own.
  static constexpr size_t kKeepBytes = size_t(512) << 20;
  struct Entry {
    std::shared_future<Preamble> ready;
    unsigned long used = 0;
  };
  void evict(const std::string &keep) {
    for (;;) {
      size_t bytes = 0;
      auto victim = map_.end();
      for (auto it = map_.begin(); it != map_.end(); ++it) {
        if (it->second.ready.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
          continue;
        if (const Preamble &p = it->second.ready.get()) bytes += p->getSize();
        if (it->first != keep && (victim == map_.end() || it->second.used < victim->second.used))
          victim = it;
      }
      if (bytes <= kKeepBytes || victim == map_.end()) return;
      map_.erase(victim);
    }
  }
  static Preamble build(const std::vector<std::string> &args, const std::string &path,
                        const std::string &inc) {
    auto ci = invocationOf(args, path);
    if (!ci) return nullptr;
    auto vfs = llvm::vfs::getRealFileSystem();
    clang::DiagnosticOptions dopts;
    auto diags = clang::CompilerInstance::createDiagnostics(*vfs, dopts,
                                                            new clang::IgnoringDiagConsumer, true);
    auto buf = llvm::MemoryBuffer::getMemBufferCopy(inc, path);
    clang::PreambleBounds bounds((unsigned)inc.size(), true);
    clang::PreambleCallbacks cb;
    auto built = clang::PrecompiledPreamble::Build(
        *ci, buf.get(), bounds, diags, vfs, std::make_shared<clang::PCHContainerOperations>(),
        /*StoreInMemory=*/true, "", cb);
    // A preamble with an error in it would hide that error from every parse that uses it.
    if (!built || diags->hasErrorOccurred()) return nullptr;
    return std::make_shared<const clang::PrecompiledPreamble>(std::move(*built));
  }
  std::mutex m_;
  std::map<std::string, Entry> map_;
  unsigned long tick_ = 0;
  std::atomic<long> builds_{0};
};

}  // namespace

long sharedPreambleBuilds() { return IncludePreambles::instance().builds(); }

// A plain parse of a candidate costs the CUDA headers again on each side (2-5 s each under load on
// the H200, 5-7 s with 30 jobs on 32 cores: most of a campaign reduction's budget), and
// an ASTUnit's own preamble covers the #defines too, so that every knob's edit (shape,
// fold-constant, unwrap-pp) rebuilt it. So a text is parsed with its leading #include lines (maybe
// none) precompiled on their own (IncludePreambles: once per process, side and set of lines), and
// only its #defines and the program after them are parsed. The text is the candidate's, unchanged:
// the ASTs are lent to the stages after the check as a plain parse's are. `*keep` gets the
// preamble, which must outlive the unit. Null when that cannot be done (the caller parses it
// plainly).
std::unique_ptr<clang::ASTUnit> ParseChecker::includeOnly(Side &s, const std::string &text,
                                                          std::shared_ptr<const void> *keep) {
  // With no #include line the preamble is empty: what the driver includes for CUDA on its own
  // (__clang_cuda_runtime_wrapper.h and the CUDA runtime headers under it), shared all the same.
  const std::string inc = leadingIncludes(text);
  Preamble pre = IncludePreambles::instance().get(s.args, path_, inc);
  if (!pre) return nullptr;
  clang::PreambleBounds bounds((unsigned)inc.size(), true);
  auto ci = invocationOf(s.args, path_);
  if (!ci) return nullptr;
  auto buf = llvm::MemoryBuffer::getMemBufferCopy(text, path_);
  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> vfs = llvm::vfs::getRealFileSystem();
  if (!pre->CanReuse(*ci, buf->getMemBufferRef(), bounds, *vfs)) return nullptr;
  // It remaps the main file to the candidate's buffer (the unit owns the remapped buffers and
  // frees it) and puts the in-memory PCH, which stays the preamble's, into `vfs`.
  pre->AddImplicitPreamble(*ci, vfs, buf.release());
  auto dopts = std::make_shared<clang::DiagnosticOptions>();
  auto diags = clang::CompilerInstance::createDiagnostics(*vfs, *dopts);
  auto fm = llvm::makeIntrusiveRefCnt<clang::FileManager>(clang::FileSystemOptions(), vfs);
  auto unit = clang::ASTUnit::LoadFromCompilerInvocation(
      ci, s.pch, dopts, diags, fm, /*OnlyLocalDecls=*/true, clang::CaptureDiagsKind::All, 0);
  if (!unit) return nullptr;
  ++include_only_;
  *keep = pre;
  return unit;
}

// `one(i)` for every side at once (a parse costs seconds a side under load): side 0 here, the
// others on their own threads; host first, then device (parseArgs).
std::vector<ParsedSide> ParseChecker::eachSide(const std::function<ParsedSide(size_t)> &one) {
  std::vector<std::future<ParsedSide>> later;
  for (size_t i = 1; i < sides_.size(); ++i)
    later.push_back(std::async(std::launch::async, one, i));
  std::vector<ParsedSide> out;
  for (size_t i = 0; i < sides_.size(); ++i) {
    out.push_back(i == 0 ? one(0) : later[i - 1].get());
    out.back().device = sides_.size() > 1 && i > 0;
  }
  return out;
}

// One side parsed again from `text`, with the preamble kept across calls (built on the second).
bool ParseChecker::parseSide(Side &s, const std::string &text, std::string *err) {
  if (!s.unit) {
    s.unit = newUnit(s.args, path_, text, s.pch, 1);
    if (!s.unit) {
      if (err) *err = "clang could not parse the candidate";
      return false;
    }
  } else {
    auto buf = llvm::MemoryBuffer::getMemBufferCopy(text, path_);
    std::vector<clang::ASTUnit::RemappedFile> remap = {{path_, buf.release()}};
    if (s.unit->Reparse(s.pch, remap)) {
      s.unit.reset();
      if (err) *err = "clang could not re-parse the candidate";
      return false;
    }
  }
  return true;
}

std::unique_ptr<ParsedSource> ParseChecker::parse(const std::string &text) {
  auto out = std::make_unique<ParsedSource>();
  out->path = path_;
  out->text = text;
  // Each side with the shared preamble of its leading #include lines, as check() parses it; with
  // its unit's own preamble when that cannot be built (an #include line with an error).
  out->sides = eachSide([&](size_t i) {
    ParsedSide side;
    std::string err;
    if ((side.ast = includeOnly(*sides_[i], text, &side.keep))) {
      if (!errorsOf(*side.ast, &err)) side.errors.push_back(err);
    } else if (parseSide(*sides_[i], text, &err)) {
      if (!errorsOf(*sides_[i]->unit, &err)) side.errors.push_back(err);
      side.ast = std::move(sides_[i]->unit);
    } else {
      side.errors.push_back(err);
    }
    return side;
  });
  return out;
}

void ParseChecker::giveBack(std::unique_ptr<ParsedSource> p) {
  if (!p) return;
  // A unit of the shared preamble cannot be re-parsed with a preamble of its own: it just goes.
  for (size_t i = 0; i < sides_.size() && i < p->sides.size(); ++i)
    if (!sides_[i]->unit && !p->sides[i].keep) sides_[i]->unit = std::move(p->sides[i].ast);
}

bool ParseChecker::check(const std::string &text, std::string *err,
                         const std::function<void(const ParsedSource &)> &then) {
  // Every candidate is parsed with its leading #include lines precompiled on their own
  // (includeOnly, shared in the process), not with the automatic preamble of an ASTUnit, which
  // covers the #defines too and is the checker's own: each accepted step that edits a #define
  // (shape, fold-constant, unwrap-pp) made every checker rebuild that preamble on its next
  // candidate, about twice a plain parse (with 16 checkers on the H200, 111 of
  // 972 candidates paid it, 63 of them on the search's serial path, 3-5 s each); and after the last
  // #include line went, each checker's first candidate paid a plain parse (1.2-1.9 s,
  // 16 at once). Plainly, with no preamble kept, when that cannot be done. The ASTs live
  // for the check (and `then`).
  ParsedSource view;
  view.path = path_;
  view.text = text;
  view.sides = eachSide([&](size_t i) {
    ParsedSide side;
    side.ast = includeOnly(*sides_[i], text, &side.keep);
    if (!side.ast)
      side.ast = newUnit(sides_[i]->args, path_, text,
                         std::make_shared<clang::PCHContainerOperations>(), 0);
    return side;
  });
  for (auto &side : view.sides) {
    if (!side.ast) {
      if (err) *err = "clang could not parse the candidate";
      return false;
    }
    if (!errorsOf(*side.ast, err) || !asmSizesOk(*side.ast, err)) return false;
  }
  if (then) then(view);
  return true;
}

bool ParseCheckerPool::check(const std::string &text, std::string *err,
                             const std::function<void(const ParsedSource &)> &then) {
  std::unique_ptr<ParseChecker> c;
  {
    std::lock_guard<std::mutex> l(m_);
    if (!free_.empty()) {
      c = std::move(free_.back());
      free_.pop_back();
    }
  }
  if (!c) c = std::make_unique<ParseChecker>(path_, opt_);
  bool ok = c->check(text, err, then);
  std::lock_guard<std::mutex> l(m_);
  free_.push_back(std::move(c));
  return ok;
}

int ParseCheckerPool::warm(const std::string &text) {
  const std::string inc = leadingIncludes(text);
  const std::string path = fs::absolute(path_).string();
  auto all = parseArgs(path, opt_);
  std::vector<std::future<bool>> sides;
  for (auto &args : all)
    sides.push_back(std::async(std::launch::async, [&args, &path, &inc] {
      return IncludePreambles::instance().get(args, path, inc) != nullptr;
    }));
  int n = 0;
  for (auto &f : sides) n += f.get();
  return n;
}

}  // namespace wsr
