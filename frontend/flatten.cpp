#include "flatten.h"

#include "edit.h"

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticLex.h>
#include <clang/Basic/FileManager.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Lex/HeaderSearch.h>
#include <clang/Lex/PPCallbacks.h>
#include <clang/Lex/Preprocessor.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/VirtualFileSystem.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace wsr {

std::vector<std::vector<std::string>> parseArgs(const std::string &path,
                                                const ParseOptions &opt);  // parse.cpp

namespace {

std::string canon(const std::string &p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::path(p).lexically_normal().string() : c.string();
}

// `file` lies below `dir` (both canonical).
bool under(const std::string &file, const std::string &dir) {
  if (dir.empty() || file.size() <= dir.size() || file.compare(0, dir.size(), dir) != 0)
    return false;
  return dir.back() == '/' || file[dir.size()] == '/';
}

// A path as a person reads it in a message: relative to the working folder when inside it.
std::string shown(const std::string &path) {
  std::error_code ec;
  const std::string cwd = canon(fs::current_path(ec).string());
  const std::string p = canon(path);
  if (under(p, cwd)) return fs::path(p).lexically_relative(cwd).string();
  return p;
}

std::optional<std::string> slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

// One side's preprocessing, as the flattening needs it: every file instance the preprocessor
// entered from the program or from a header it entered (each entry of a file is one instance,
// so a header without a guard entered twice is two), and for each instance its #include
// directives in order, each with what it did: entered the file (a child instance), skipped it
// (its guard or #pragma once: it was entered before), or resolved it and left it (a file not
// followed, below).
struct Flattener::Trace {
  struct Dir {
    unsigned hash = 0;  // offset of the directive's '#' in its file
    enum Kind { NotEntered, Entered, Skipped } kind = NotEntered;
    std::string target;     // canonical path of the file it resolved to; empty: not found
    int child = -1;         // the instance it entered
    bool relative = false;  // "quoted" and found beside the file that includes it
    bool next = false;      // #include_next
  };
  struct Inst {
    std::string file;  // canonical path
    std::vector<Dir> dirs;
  };
  std::vector<Inst> inst;                               // [0] is the program
  std::set<std::pair<std::string, std::string>> edges;  // includer -> included, every file
  std::set<std::string> files, system, once;  // entered; entered as a system header; #pragma once
  std::string missing;                        // the sentence for a header not found
  std::string cycle;  // the sentence for the first header entered again while still open
  bool too_deep = false;
};

namespace {

using Trace = Flattener::Trace;

class Recorder : public clang::PPCallbacks {
 public:
  Recorder(clang::SourceManager &sm, clang::Preprocessor &pp, Trace &t) : sm_(sm), pp_(pp), t_(t) {}

  void FileChanged(clang::SourceLocation loc, FileChangeReason reason,
                   clang::SrcMgr::CharacteristicKind kind, clang::FileID) override {
    if (reason == ExitFile) {
      if (!open_.empty()) open_.pop_back();
      return;
    }
    if (reason != EnterFile) return;
    const clang::FileID fid = sm_.getFileID(loc);
    const std::string p = pathOf(fid);
    if (!p.empty() && t_.cycle.empty() && std::find(open_.begin(), open_.end(), p) != open_.end())
      t_.cycle = shown(p) + " is included again while it is still being included (an include " +
                 "cycle with no guard or #pragma once), at " + where_;
    open_.push_back(p);
    std::optional<std::pair<int, size_t>> pending = pending_;
    pending_.reset();
    if (p.empty()) return;  // the predefines buffer
    t_.files.insert(p);
    if (clang::SrcMgr::isSystem(kind)) t_.system.insert(p);
    if (auto fe = sm_.getFileEntryRefForID(fid)) refs_.emplace(p, *fe);
    if (fid == sm_.getMainFileID()) {
      t_.inst[0].file = p;
      inst_of_[fid] = 0;
      return;
    }
    if (!pending) return;  // entered from a file that is not followed
    Trace::Dir &d = t_.inst[pending->first].dirs[pending->second];
    if (d.target != p) return;
    d.kind = Trace::Dir::Entered;
    d.child = (int)t_.inst.size();
    inst_of_[fid] = d.child;
    t_.inst.push_back({p, {}});
  }

  void FileSkipped(const clang::FileEntryRef &, const clang::Token &,
                   clang::SrcMgr::CharacteristicKind) override {
    if (pending_) t_.inst[pending_->first].dirs[pending_->second].kind = Trace::Dir::Skipped;
    pending_.reset();
  }

  void InclusionDirective(clang::SourceLocation hash, const clang::Token &tok, llvm::StringRef,
                          bool angled, clang::CharSourceRange, clang::OptionalFileEntryRef file,
                          llvm::StringRef search_path, llvm::StringRef, const clang::Module *, bool,
                          clang::SrcMgr::CharacteristicKind) override {
    pending_.reset();
    const clang::FileID fid = sm_.getFileID(hash);
    const std::string includer = pathOf(fid);
    const std::string target = file ? canonName(file->getName()) : std::string();
    if (!includer.empty() && !target.empty()) t_.edges.insert({includer, target});
    auto pl = sm_.getPresumedLoc(hash);
    where_ = pl.isValid() ? shown(pl.getFilename()) + ":" + std::to_string(pl.getLine()) : "?";
    auto it = inst_of_.find(fid);
    if (it == inst_of_.end()) return;  // inside a file that is not followed
    Trace::Dir d;
    d.hash = sm_.getFileOffset(hash);
    d.target = target;
    d.relative = !angled && file && !search_path.empty() &&
                 canon(search_path.str()) == fs::path(includer).parent_path().string();
    d.next = tok.getIdentifierInfo() &&
             tok.getIdentifierInfo()->getPPKeywordID() == clang::tok::pp_include_next;
    auto &dirs = t_.inst[it->second].dirs;
    dirs.push_back(d);
    pending_ = std::make_pair(it->second, dirs.size() - 1);
  }

  void EndOfMainFile() override {
    auto &hs = pp_.getHeaderSearchInfo();
    for (auto &[p, fe] : refs_)
      if (hs.getFileInfo(fe).isPragmaOnce) t_.once.insert(p);
  }

 private:
  std::string canonName(llvm::StringRef name) {
    auto it = canon_.find(name.str());
    if (it != canon_.end()) return it->second;
    return canon_[name.str()] = canon(name.str());
  }
  std::string pathOf(clang::FileID fid) {
    auto fe = sm_.getFileEntryRefForID(fid);
    return fe ? canonName(fe->getName()) : std::string();
  }
  clang::SourceManager &sm_;
  clang::Preprocessor &pp_;
  Trace &t_;
  std::map<clang::FileID, int> inst_of_;
  std::map<std::string, std::string> canon_;
  std::map<std::string, clang::FileEntryRef> refs_;
  std::vector<std::string> open_;                  // the files being included now, outermost first
  std::optional<std::pair<int, size_t>> pending_;  // the directive just seen: (instance, index)
  std::string where_;                              // and where it is, for messages
};

// The errors that stop a flattening, as they come: a header not found, an include nested too
// deeply (a cycle). Anything else is the program's own business (a compile error a reduction
// keeps), and the preprocessor goes on past it.
class Errors : public clang::DiagnosticConsumer {
 public:
  explicit Errors(Trace &t) : t_(t) {}
  void HandleDiagnostic(clang::DiagnosticsEngine::Level level,
                        const clang::Diagnostic &info) override {
    DiagnosticConsumer::HandleDiagnostic(level, info);
    if (level < clang::DiagnosticsEngine::Error) return;
    if (info.getID() == clang::diag::err_pp_include_too_deep) t_.too_deep = true;
    if (info.getID() != clang::diag::err_pp_file_not_found || !t_.missing.empty()) return;
    std::string where = "?";
    if (info.hasSourceManager() && info.getLocation().isValid()) {
      auto pl = info.getSourceManager().getPresumedLoc(info.getLocation());
      if (pl.isValid()) where = shown(pl.getFilename()) + ":" + std::to_string(pl.getLine());
    }
    t_.missing = info.getArgStdStr(0) + " is not found: it is included at " + where +
                 " (give its folder with -I)";
  }

 private:
  Trace &t_;
};

class RecordAction : public clang::PreprocessOnlyAction {
 public:
  explicit RecordAction(Trace &t) : t_(t) {}
  bool BeginSourceFileAction(clang::CompilerInstance &ci) override {
    ci.getPreprocessor().addPPCallbacks(
        std::make_unique<Recorder>(ci.getSourceManager(), ci.getPreprocessor(), t_));
    return true;
  }

 private:
  Trace &t_;
};

// One side preprocessed: the program's text stands in for its file on disk.
std::unique_ptr<Trace> preprocessSide(const std::string &text, const std::string &path,
                                      std::vector<std::string> args) {
  auto t = std::make_unique<Trace>();
  t->inst.push_back({canon(path), {}});
  auto overlay =
      llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(llvm::vfs::getRealFileSystem());
  auto mem = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  overlay->pushOverlay(mem);
  mem->addFile(path, 0, llvm::MemoryBuffer::getMemBufferCopy(text, path));
  auto files = llvm::makeIntrusiveRefCnt<clang::FileManager>(clang::FileSystemOptions(), overlay);
  args.insert(args.begin(), "wsreduce-flatten");
  args.push_back("-fno-caret-diagnostics");  // and no "N errors generated" on stderr
  args.push_back(path);
  clang::tooling::ToolInvocation inv(args, std::make_unique<RecordAction>(*t), files.get());
  Errors errors(*t);
  inv.setDiagnosticConsumer(&errors);
  inv.run();  // its other errors are the program's: the flattening goes on regardless
  return t;
}

// The line holding the directive whose '#' is at `hash`: [begin, end), end past its newline
// (backslash continuations and a block comment that starts on it included).
std::pair<size_t, size_t> directiveLine(const std::string &s, size_t hash) {
  size_t b = hash;
  while (b > 0 && s[b - 1] != '\n') --b;
  bool block = false;
  size_t i = hash;
  for (; i < s.size(); ++i) {
    if (block) {
      if (s.compare(i, 2, "*/") == 0) block = false, ++i;
    } else if (s.compare(i, 2, "/*") == 0) {
      block = true, ++i;
    } else if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == '\n') {
      ++i;
    } else if (s[i] == '\n') {
      return {b, i + 1};
    }
  }
  return {b, s.size()};
}

// Offsets of the '#' of each #include / #include_next / #import line, and of each #pragma once
// line, outside block comments.
void directiveOffsets(const std::string &s, std::vector<size_t> *includes,
                      std::vector<size_t> *once) {
  bool block = false;
  size_t i = 0;
  while (i < s.size()) {
    size_t eol = s.find('\n', i);
    if (eol == std::string::npos) eol = s.size();
    size_t j = i;
    if (!block) {
      while (j < eol && (s[j] == ' ' || s[j] == '\t')) ++j;
      if (j < eol && s[j] == '#') {
        size_t k = j + 1;
        while (k < eol && (s[k] == ' ' || s[k] == '\t')) ++k;
        auto word = [&](const char *w) {
          size_t n = std::strlen(w);
          return s.compare(k, n, w) == 0 &&
                 (k + n >= eol || (!std::isalnum((unsigned char)s[k + n]) && s[k + n] != '_'));
        };
        if (word("include") || word("include_next") || word("import")) includes->push_back(j);
        if (word("pragma")) {
          size_t m = k + 6;
          while (m < eol && (s[m] == ' ' || s[m] == '\t')) ++m;
          if (s.compare(m, 4, "once") == 0 &&
              (m + 4 >= eol || !std::isalnum((unsigned char)s[m + 4])))
            once->push_back(j);
        }
      }
    }
    // Block comments that open or close on this line (strings and // comments skipped).
    for (size_t c = i; c < eol; ++c) {
      if (block) {
        if (s.compare(c, 2, "*/") == 0) block = false, ++c;
      } else if (s.compare(c, 2, "//") == 0) {
        break;
      } else if (s.compare(c, 2, "/*") == 0) {
        block = true, ++c;
      } else if (s[c] == '"' || s[c] == '\'') {
        const char q = s[c];
        for (++c; c < eol && s[c] != q; ++c)
          if (s[c] == '\\') ++c;
      }
    }
    i = eol + 1;
  }
}

// The name an #include line spells, and whether in <angles>.
std::optional<std::pair<std::string, bool>> spelledName(const std::string &line) {
  size_t q = line.find_first_of("\"<", line.find('#'));
  if (q == std::string::npos) return std::nullopt;
  const char close = line[q] == '"' ? '"' : '>';
  size_t e = line.find(close, q + 1);
  if (e == std::string::npos) return std::nullopt;
  return std::make_pair(line.substr(q + 1, e - q - 1), close == '>');
}

}  // namespace

std::string flattenDirsFromFlag(const std::string &value, const std::string &program_path,
                                const std::vector<std::string> &includes,
                                std::vector<std::string> *dirs) {
  dirs->clear();
  if (value == "none") return "";
  if (value == "all" || value.empty()) {
    dirs->push_back(fs::absolute(program_path).parent_path().string());
    dirs->insert(dirs->end(), includes.begin(), includes.end());
    return "";
  }
  std::stringstream in(value);
  std::string d;
  while (std::getline(in, d, ',')) {
    if (d.empty()) continue;
    std::error_code ec;
    if (!fs::is_directory(d, ec))
      return "--flatten takes all, none or a comma list of folders, and " + d + " is not a folder";
    dirs->push_back(fs::absolute(d).string());
  }
  if (dirs->empty()) return "--flatten takes all, none or a comma list of folders";
  return "";
}

Flattener::~Flattener() = default;

std::unique_ptr<Flattener> Flattener::preprocess(const std::string &text, const std::string &path,
                                                 const FlattenOptions &opt, std::string *error) {
  std::unique_ptr<Flattener> f(new Flattener);
  f->path_ = fs::absolute(path).string();
  f->text_ = text;
  f->opt_ = opt;
  // A .cu is preprocessed twice, as nvcc compiles it: the host side and the device side
  // (__CUDA_ARCH__ defined), both at once. Each side records the directives it took; the
  // flattening inlines a header wherever either side entered it, so an #include only one side
  // takes is inlined too, inside the #if that chooses the side.
  // nvcc's version macros are defined as nvcc defines them (parseArgs): CUTLASS's #if on
  // __CUDACC_VER_MAJOR__ picks its WMMA epilogues, and the headers that hold them.
  const ParseOptions &po = opt.parse;
  std::vector<std::future<std::unique_ptr<Trace>>> sides;
  for (auto &args : parseArgs(f->path_, po))
    sides.push_back(
        std::async(std::launch::async, preprocessSide, std::cref(text), std::cref(f->path_), args));
  for (auto &s : sides) f->sides_.push_back(s.get());
  for (auto &t : f->sides_) {
    std::string e = !t->missing.empty() ? t->missing
                    : t->too_deep ? (t->cycle.empty() ? "an #include in " + shown(path) +
                                                            " nests too deeply (an include cycle)"
                                                      : t->cycle)
                                  : std::string();
    if (!e.empty()) {
      if (error) *error = e;
      return nullptr;
    }
  }
  return f;
}

namespace {

// Writes one flattening: the program's text with each #include of an allowed header replaced by
// the header's text the first time a side enters it, recursively. Instances of a header's two
// sides are walked together; an #include one side enters and the other skips (its guard: the
// other side entered it earlier, where the first did not go) is inlined again, and its guard
// makes the second copy empty for the side that skipped it. A header's own guard is kept as
// written; a #pragma once header inlined more than once gets a guard of its own instead.
struct Emitter {
  Emitter(const std::vector<std::unique_ptr<Trace>> &s, const std::set<std::string> &a,
          const FlattenOptions &o)
      : sides(s), allowed(a), opt(o) {}
  const std::vector<std::unique_ptr<Trace>> &sides;
  const std::set<std::string> &allowed;
  const FlattenOptions &opt;
  std::vector<std::string> shown_dirs;  // canonical, for the names in begin/end comments
  std::set<std::string> guard;          // #pragma once headers given a guard
  std::map<std::string, int> count;     // times each header was inlined
  std::vector<std::string> order;       // distinct headers, in the order first inlined
  std::map<std::string, std::string> texts;
  std::string out;
  // Top-level trees: each #include of the program that was inlined, with the headers first
  // inlined under it.
  std::vector<std::pair<std::string, std::vector<std::string>>> trees;

  const std::string &textOf(const std::string &path) {
    auto it = texts.find(path);
    if (it != texts.end()) return it->second;
    return texts[path] = slurp(path).value_or("");
  }

  std::string nameOf(const std::string &path) const {
    std::string best = fs::path(path).filename().string();
    for (auto &d : shown_dirs)
      if (under(path, d)) {
        std::string rel = fs::path(path).lexically_relative(d).string();
        if (rel.size() < best.size() || best == fs::path(path).filename().string()) best = rel;
      }
    return best;
  }

  // A header that an #include no side took (an #if neither side enters) would name: inside an
  // inlined header it can no longer be found by its relative name, so it is commented out.
  bool deadButFlattened(const std::string &includer, const std::string &line) const {
    auto name = spelledName(line);
    if (!name) return false;
    std::vector<fs::path> look;
    if (!name->second) look.push_back(fs::path(includer).parent_path());
    for (auto &i : opt.parse.includes) look.push_back(i);
    for (auto &d : look) {
      std::error_code ec;
      fs::path p = d / name->first;
      if (fs::is_regular_file(p, ec)) {
        std::string c = canon(p.string());
        for (auto &dir : opt.dirs)
          if (under(c, canon(dir))) return true;
        return false;
      }
    }
    return false;
  }

  void file(const std::string &path, const std::string &text, const std::vector<int> &inst,
            int depth) {
    struct Item {
      std::vector<const Trace::Dir *> side;  // per side, null where it was not processed
      bool once = false;
    };
    std::map<size_t, Item> at;
    for (size_t s = 0; s < sides.size(); ++s) {
      if (inst[s] < 0) continue;
      for (auto &d : sides[s]->inst[inst[s]].dirs) {
        auto &it = at[d.hash];
        it.side.resize(sides.size(), nullptr);
        it.side[s] = &d;
      }
    }
    if (depth > 0) {
      std::vector<size_t> inc, once;
      directiveOffsets(text, &inc, &once);
      for (size_t o : inc) at[o].side.resize(sides.size(), nullptr);
      if (std::any_of(sides.begin(), sides.end(), [&](auto &t) { return t->once.count(path); }))
        for (size_t o : once) {
          at[o].side.resize(sides.size(), nullptr);
          at[o].once = true;
        }
    }
    size_t cursor = 0;
    for (auto &[hash, item] : at) {
      auto [b, e] = directiveLine(text, hash);
      if (b < cursor) continue;
      out.append(text, cursor, b - cursor);
      cursor = e;
      const std::string line = text.substr(b, e - b);
      if (item.once) continue;  // #pragma once of an inlined header
      const Trace::Dir *p = nullptr;
      std::vector<int> child(sides.size(), -1);
      bool entered = false;
      for (size_t s = 0; s < sides.size(); ++s) {
        const Trace::Dir *d = item.side[s];
        if (!d) continue;
        if (!p || (d->kind == Trace::Dir::Entered && !entered)) p = d;
        if (d->kind == Trace::Dir::Entered) {
          child[s] = d->child;
          entered = true;
        }
      }
      if (!p) {  // no side took it
        if (deadButFlattened(path, line)) {
          std::string l = line;
          for (auto &c : l)
            if (c == '\n') c = ' ';
          while (!l.empty() && l.back() == ' ') l.pop_back();
          out += "// " + l + " -- not inlined: no side takes this #if branch\n";
        } else {
          out += line;
        }
        continue;
      }
      if (allowed.count(p->target)) {
        if (!entered) continue;  // entered before on every side that came here: it vanishes
        const std::string name = nameOf(p->target);
        const size_t before = order.size();
        if (!count[p->target]++) order.push_back(p->target);
        out += "// ---- begin " + name + "\n";
        std::string macro = "WSREDUCE_ONCE_" + name;
        for (auto &c : macro)
          if (!std::isalnum((unsigned char)c)) c = '_';
        if (guard.count(p->target)) out += "#ifndef " + macro + "\n#define " + macro + "\n";
        file(p->target, textOf(p->target), child, depth + 1);
        if (!out.empty() && out.back() != '\n') out += '\n';
        if (guard.count(p->target)) out += "#endif\n";
        out += "// ---- end " + name + "\n";
        if (depth == 0)
          trees.push_back({spelledName(line).value_or(std::make_pair(name, false)).first,
                           std::vector<std::string>(order.begin() + before, order.end())});
        continue;
      }
      // Kept as an #include line. One that an inlined header found beside itself, or by
      // #include_next, would not find the same file from the program's folder: it names the
      // file by its path.
      if (depth > 0 && (p->relative || p->next) && !p->target.empty())
        out += "#include \"" + p->target + "\"\n";
      else
        out += line;
    }
    out.append(text, cursor, std::string::npos);
  }
};

}  // namespace

FlattenResult Flattener::emit(const std::vector<std::string> &allowed0, bool record_trees) const {
  // Every file either side entered, and who includes whom.
  std::set<std::string> files, system, once;
  std::map<std::string, std::set<std::string>> edges;
  for (auto &t : sides_) {
    files.insert(t->files.begin(), t->files.end());
    system.insert(t->system.begin(), t->system.end());
    for (auto &[a, b] : t->edges) edges[a].insert(b);
  }
  const std::string main = canon(path_);
  std::set<std::string> allowed(allowed0.begin(), allowed0.end());
  allowed.erase(main);
  // A header stays an #include when a file that is not inlined includes it (a kept header of a
  // folder not flattened, a system header): its one copy must be the file on disk, else the
  // inlined copy and the file would both define it (a #pragma once file knows nothing of a copy).
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<std::string> todo;
    std::set<std::string> reach;
    for (auto &f : files)
      if (f != main && !allowed.count(f)) todo.push_back(f);
    while (!todo.empty()) {
      std::string f = todo.back();
      todo.pop_back();
      for (auto &g : edges[f])
        if (reach.insert(g).second) todo.push_back(g);
    }
    for (auto &g : reach)
      if (allowed.erase(g)) changed = true;
  }
  Emitter em(sides_, allowed, opt_);
  for (auto &d : opt_.dirs) em.shown_dirs.push_back(canon(d));
  for (auto &d : opt_.parse.includes) em.shown_dirs.push_back(canon(d));
  auto run = [&] {
    em.count.clear();
    em.order.clear();
    em.trees.clear();
    em.out.clear();
    std::vector<int> roots(sides_.size(), 0);
    em.file(main, text_, roots, 0);
  };
  run();
  for (auto &[f, n] : em.count)
    if (n > 1 && std::any_of(sides_.begin(), sides_.end(),
                             [&, &f = f](auto &t) { return t->once.count(f) > 0; }))
      em.guard.insert(f);
  if (!em.guard.empty()) run();
  FlattenResult r;
  r.text = std::move(em.out);
  r.headers = em.order.size();
  if (record_trees) {
    trees_.clear();
    for (auto &[name, fs] : em.trees) trees_.push_back({name, fs});
  }
  return r;
}

FlattenResult Flattener::flatten() const {
  std::set<std::string> files;
  for (auto &t : sides_) files.insert(t->files.begin(), t->files.end());
  std::vector<std::string> dirs, keep;
  for (auto &d : opt_.dirs) dirs.push_back(canon(d));
  for (auto &d : opt_.keep_dirs) keep.push_back(canon(d));
  // What the toolkit and the compiler bring is theirs even when a -I names its folder.
  std::vector<std::string> toolkit = {
      canon(opt_.parse.cuda_path.empty() ? detectCudaPath() : opt_.parse.cuda_path),
      canon(clangResourceDir())};
  std::vector<std::string> allowed;
  for (auto &f : files) {
    auto in = [&](const std::vector<std::string> &ds) {
      return std::any_of(ds.begin(), ds.end(), [&](auto &d) { return under(f, d); });
    };
    bool system =
        std::any_of(sides_.begin(), sides_.end(), [&](auto &t) { return t->system.count(f) > 0; });
    if (in(dirs) && !in(keep) && !in(toolkit) && !system && !isParseShim(f)) allowed.push_back(f);
  }
  return emit(allowed, true);
}

FlattenResult Flattener::flattenFirstTrees(size_t k) const {
  if (trees_.empty()) flatten();
  std::vector<std::string> allowed;
  for (size_t i = 0; i < k && i < trees_.size(); ++i)
    allowed.insert(allowed.end(), trees_[i].files.begin(), trees_[i].files.end());
  return emit(allowed, false);
}

std::string flattenSummary(const std::string &before, const FlattenResult &r) {
  return "flattened " + std::to_string(r.headers) + (r.headers == 1 ? " header, " : " headers, ") +
         std::to_string(countNonBlankLines(before)) + " lines -> " +
         std::to_string(countNonBlankLines(r.text)) + " lines";
}

FlattenResult flattenProgram(const std::string &text, const std::string &path,
                             const FlattenOptions &opt) {
  FlattenResult r;
  auto f = Flattener::preprocess(text, path, opt, &r.error);
  if (!f) return r;
  return f->flatten();
}

}  // namespace wsr
