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
#include <optional>

namespace fs = std::filesystem;

namespace wsr {

std::vector<std::vector<std::string>> parseArgs(const std::string &path, const ParseOptions &opt);  // parse.cpp

struct ParseChecker::Side {
  std::vector<std::string> args;
  std::unique_ptr<clang::ASTUnit> unit;
  std::shared_ptr<clang::PCHContainerOperations> pch = std::make_shared<clang::PCHContainerOperations>();
  // The base's leading #include lines precompiled on their own (see includeOnly below).
  std::string inc_text;  // the text they were built from; empty: not built
  std::optional<clang::PrecompiledPreamble> inc;
};

ParseChecker::ParseChecker(std::string path, ParseOptions opt) : path_(fs::absolute(path).string()), opt_(std::move(opt)) {
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
    if (!error.empty() || !e || e->getType()->isDependentType() || e->getType()->isIncompleteType()) return;
    constraint = constraint.ltrim("=+&");
    unsigned want = constraint == "r" ? 4 : constraint == "h" ? 2 : constraint == "l" ? 8 : 0;
    if (!want) return;
    auto size = ctx.getTypeSizeInChars(e->IgnoreImpCasts()->getType()).getQuantity();
    if (size > want) {
      auto pl = ctx.getSourceManager().getPresumedLoc(at);
      error = (pl.isValid() ? std::to_string(pl.getLine()) + ":" + std::to_string(pl.getColumn()) + ": " : std::string()) +
              "asm operand type size(" + std::to_string(size) + ") does not match type/size implied by constraint '" +
              constraint.str() + "' (as nvcc says)";
    }
  }
  bool VisitGCCAsmStmt(clang::GCCAsmStmt *a) {
    for (unsigned i = 0; i < a->getNumOutputs(); ++i) operand(a->getOutputConstraint(i), a->getOutputExpr(i), a->getAsmLoc());
    for (unsigned i = 0; i < a->getNumInputs(); ++i) operand(a->getInputConstraint(i), a->getInputExpr(i), a->getAsmLoc());
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
        if (pl.isValid()) where = std::to_string(pl.getLine()) + ":" + std::to_string(pl.getColumn()) + ": ";
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

std::string leadingIncludes(const std::string &text) { return text.substr(0, includePrefix(preambleOf(text))); }

void ParseChecker::setBase(const std::string &base) {
  base_preamble_ = preambleOf(base);
  base_inc_ = base.substr(0, includePrefix(base_preamble_));
  has_base_ = true;
}

// A fresh ASTUnit of `text` under `args`: with PrecompilePreambleAfterNParses 1 it keeps a
// preamble for later Reparse calls, with 0 it is a one-off parse.
static std::unique_ptr<clang::ASTUnit> newUnit(const std::vector<std::string> &args, const std::string &path,
                                               const std::string &text,
                                               std::shared_ptr<clang::PCHContainerOperations> pch, unsigned preambleAfter) {
  std::vector<const char *> argv = {"clang"};
  for (auto &a : args) argv.push_back(a.c_str());
  argv.push_back(path.c_str());
  auto diagOpts = std::make_shared<clang::DiagnosticOptions>();
  auto vfs = llvm::vfs::getRealFileSystem();
  clang::IntrusiveRefCntPtr<clang::DiagnosticsEngine> diags(clang::CompilerInstance::createDiagnostics(*vfs, *diagOpts));
  auto buf = llvm::MemoryBuffer::getMemBufferCopy(text, path);
  std::vector<clang::ASTUnit::RemappedFile> remap = {{path, buf.release()}};
  return clang::CreateASTUnitFromCommandLine(argv.data(), argv.data() + argv.size(), std::move(pch), diagOpts, diags,
                                             clangResourceDir(), /*StorePreamblesInMemory=*/true, "",
                                             /*OnlyLocalDecls=*/true, clang::CaptureDiagsKind::All, remap,
                                             /*RemappedFilesKeepOriginalName=*/true, preambleAfter);
}

static std::shared_ptr<clang::CompilerInvocation> invocationOf(const std::vector<std::string> &args, const std::string &path) {
  std::vector<const char *> argv = {"clang"};
  for (auto &a : args) argv.push_back(a.c_str());
  argv.push_back(path.c_str());
  auto vfs = llvm::vfs::getRealFileSystem();
  clang::DiagnosticOptions dopts;
  clang::CreateInvocationOptions o;
  o.Diags = clang::CompilerInstance::createDiagnostics(*vfs, dopts, new clang::IgnoringDiagConsumer, /*ShouldOwnClient=*/true);
  o.VFS = vfs;
  std::shared_ptr<clang::CompilerInvocation> ci = clang::createInvocation(argv, o);
  if (ci) ci->getHeaderSearchOpts().ResourceDir = clangResourceDir();
  return ci;
}

// A candidate that edits the leading directives (a knob's #define: the shape passes) cannot use the
// preamble kept for the base, and a plain parse of it costs the CUDA headers again on each side
// (2-5 s each under load on the H200, 5-7 s with 30 jobs on 32 cores: most of a campaign
// reduction's budget, session 8). When the candidate's leading #include lines are the base's, it
// is parsed with those lines precompiled on their own (once per base and side), so only its
// #defines and the program after them are parsed. The text is the candidate's, unchanged: the
// ASTs are lent to the stages after the check as a plain parse's are. Null when that cannot be
// done (the caller parses it plainly).
std::unique_ptr<clang::ASTUnit> ParseChecker::includeOnly(Side &s, const std::string &text) {
  if (!has_base_ || base_inc_.empty() || text.compare(0, base_inc_.size(), base_inc_) != 0) return nullptr;
  clang::PreambleBounds bounds((unsigned)base_inc_.size(), true);
  if (s.inc_text != base_inc_) {
    s.inc.reset();
    s.inc_text = base_inc_;
    auto ci = invocationOf(s.args, path_);
    if (!ci) return nullptr;
    auto vfs = llvm::vfs::getRealFileSystem();
    clang::DiagnosticOptions dopts;
    auto diags = clang::CompilerInstance::createDiagnostics(*vfs, dopts);
    auto buf = llvm::MemoryBuffer::getMemBufferCopy(base_inc_, path_);
    clang::PreambleCallbacks cb;
    auto built = clang::PrecompiledPreamble::Build(*ci, buf.get(), bounds, diags, vfs, s.pch, /*StoreInMemory=*/true, "", cb);
    if (!built) return nullptr;
    s.inc.emplace(std::move(*built));
    ++preamble_builds_;
  }
  if (!s.inc) return nullptr;
  auto ci = invocationOf(s.args, path_);
  if (!ci) return nullptr;
  auto buf = llvm::MemoryBuffer::getMemBufferCopy(text, path_);
  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> vfs = llvm::vfs::getRealFileSystem();
  if (!s.inc->CanReuse(*ci, buf->getMemBufferRef(), bounds, *vfs)) return nullptr;
  // It remaps the main file to the candidate's buffer (the unit owns the remapped buffers and
  // frees it) and puts the in-memory PCH, which stays the preamble's, into `vfs`.
  s.inc->AddImplicitPreamble(*ci, vfs, buf.release());
  auto dopts = std::make_shared<clang::DiagnosticOptions>();
  auto diags = clang::CompilerInstance::createDiagnostics(*vfs, *dopts);
  auto fm = llvm::makeIntrusiveRefCnt<clang::FileManager>(clang::FileSystemOptions(), vfs);
  auto unit = clang::ASTUnit::LoadFromCompilerInvocation(ci, s.pch, dopts, diags, fm, /*OnlyLocalDecls=*/true,
                                                         clang::CaptureDiagsKind::All, 0);
  if (!unit) return nullptr;
  ++include_only_;
  return unit;
}

// One parse per side, at once, with no preamble kept: the ASTs live for the check (and `then`).
bool ParseChecker::oneOff(const std::string &text, std::string *err,
                          const std::function<void(const ParsedSource &)> &then) {
  auto parseSide = [&](size_t i) {
    if (auto u = includeOnly(*sides_[i], text)) return u;
    return newUnit(sides_[i]->args, path_, text, std::make_shared<clang::PCHContainerOperations>(), 0);
  };
  std::vector<std::future<std::unique_ptr<clang::ASTUnit>>> later;
  for (size_t i = 1; i < sides_.size(); ++i) later.push_back(std::async(std::launch::async, parseSide, i));
  ParsedSource view;
  view.path = path_;
  view.text = text;
  for (size_t i = 0; i < sides_.size(); ++i) {
    ParsedSide side;
    side.device = sides_.size() > 1 && i > 0;
    side.ast = i == 0 ? parseSide(0) : later[i - 1].get();
    view.sides.push_back(std::move(side));
  }
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
  for (size_t i = 0; i < sides_.size(); ++i) {
    ParsedSide side;
    side.device = sides_.size() > 1 && i > 0;  // parseArgs: host first, then device
    std::string err;
    // With its own preamble of every leading directive (not the #include-only one of check()):
    // session 12's H200 calls used the #include-only one here too; it was taken out while a CI
    // failure was chased whose cause turned out to be elsewhere (<cstdint>, see remove-decl), and
    // has not been measured back in.
    if (parseSide(*sides_[i], text, &err)) {
      if (!errorsOf(*sides_[i]->unit, &err)) side.errors.push_back(err);
      side.ast = std::move(sides_[i]->unit);
    } else {
      side.errors.push_back(err);
    }
    out->sides.push_back(std::move(side));
  }
  return out;
}

void ParseChecker::giveBack(std::unique_ptr<ParsedSource> p) {
  if (!p) return;
  for (size_t i = 0; i < sides_.size() && i < p->sides.size(); ++i)
    if (!sides_[i]->unit) sides_[i]->unit = std::move(p->sides[i].ast);
}

bool ParseChecker::check(const std::string &text, std::string *err,
                         const std::function<void(const ParsedSource &)> &then) {
  // Every candidate whose leading #include lines are the base's is parsed with those lines
  // precompiled on their own (includeOnly), not with the automatic preamble of its ASTUnit, which
  // covers the #defines too: each accepted step that edits a #define (shape, fold-constant,
  // unwrap-pp) made every checker rebuild that preamble on its next candidate, about twice a
  // plain parse. With 16 checkers on the H200 (session 11, call c) 111 of 972 candidates paid it,
  // 63 of them on the search's serial path (the interesting ones), 3-5 s each.
  if (has_base_ && (!base_inc_.empty() || preambleOf(text) != base_preamble_)) return oneOff(text, err, then);
  for (auto &s : sides_) {
    if (!parseSide(*s, text, err)) return false;
    if (!errorsOf(*s->unit, err) || !asmSizesOk(*s->unit, err)) return false;
  }
  if (then) {
    // The units move into a ParsedSource for the call and back after it, thrown or not.
    ParsedSource view;
    view.path = path_;
    view.text = text;
    for (size_t i = 0; i < sides_.size(); ++i) {
      ParsedSide side;
      side.device = sides_.size() > 1 && i > 0;  // parseArgs: host first, then device
      side.ast = std::move(sides_[i]->unit);
      view.sides.push_back(std::move(side));
    }
    struct Back {
      ParsedSource &v;
      std::vector<std::unique_ptr<Side>> &s;
      ~Back() {
        for (size_t i = 0; i < s.size() && i < v.sides.size(); ++i) s[i]->unit = std::move(v.sides[i].ast);
      }
    } back{view, sides_};
    then(view);
  }
  return true;
}

void ParseCheckerPool::setBase(const std::string &base) {
  std::lock_guard<std::mutex> l(m_);
  base_ = base;
  has_base_ = true;
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
  {
    std::lock_guard<std::mutex> l(m_);
    if (has_base_) c->setBase(base_);
  }
  bool ok = c->check(text, err, then);
  std::lock_guard<std::mutex> l(m_);
  free_.push_back(std::move(c));
  return ok;
}

int ParseCheckerPool::warm(const std::string &text) {
  std::vector<std::unique_ptr<ParseChecker>> idle;
  {
    std::lock_guard<std::mutex> l(m_);
    idle.swap(free_);
    for (auto &c : idle)
      if (has_base_) c->setBase(base_);
  }
  std::vector<std::thread> threads;
  for (auto &c : idle) threads.emplace_back([&c, &text] { c->check(text); });
  for (auto &t : threads) t.join();
  std::lock_guard<std::mutex> l(m_);
  for (auto &c : idle) free_.push_back(std::move(c));
  return (int)idle.size();
}

long ParseCheckerPool::preambleBuilds() {
  std::lock_guard<std::mutex> l(m_);
  long n = 0;
  for (auto &c : free_) n += c->preambleBuilds();
  return n;
}

}  // namespace wsr
