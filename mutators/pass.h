// The mutators' one interface (the llvm-reduce way): a pass looks at the parsed program
// and lists its sites in a fixed order; it never sees the search. The registry
// (passes.def) gives each pass a name to type, a one-line description and a phase.
#pragma once

#include "edit.h"
#include "parse.h"

#include <clang/Basic/TokenKinds.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clang {
class QualType;
class ASTUnit;
class ASTContext;
class FileID;
class SourceManager;
class Decl;
class SourceLocation;
}  // namespace clang
namespace llvm {
class APSInt;
}

namespace wsr {

// docs/design.md, reducer rules: shape first (docs/methodology.md step 1), then structure, then
// expressions, then cosmetics. The language-blind passes (lines, tokens) are the fallback: they
// run only once the AST passes have nothing more to take (C-Reduce runs them with the rest,
// and on a 300-line kernel they cost half the tests while the AST passes would take the same
// code in a few large steps), and the AST passes run again after anything they take. Invisible
// passes take what no compiler sees (comments, blank lines) and read the text alone: all their
// sites in one candidate before anything else, one by one at the end. The search's Schedule
// (reducer/search.h) is built from these phases.
enum class Phase { Shape, Structure, Expression, Fallback, Cosmetic, Invisible };
const char *phaseName(Phase p);

// What a pass returns. `level` orders hierarchical sites (outer blocks are level 0 and
// are tried before the inner ones they contain). Sites sharing a non-negative `group`
// are alternatives for the same place (e.g. a knob's smaller values, most aggressive
// first): the search tries them one at a time and keeps at most one.
struct PassSite : Site {
  int level = 0;
  int group = -1;
  // For alternatives: what the place is, stable across edits elsewhere (a knob's name).
  // After one of its alternatives is taken, a place with a key is settled and the search
  // moves past it; a place without one is revisited in its new form.
  std::string place;
};

using PassFn = std::vector<PassSite> (*)(const ParsedSource &);

struct PassInfo {
  const char *name;
  const char *description;
  Phase phase;
  PassFn sites;
  // Its candidates are judged by the build alone (passes.def, WSR_BUILD_PASS).
  bool build_only = false;
};

const std::vector<PassInfo> &allPasses();
const PassInfo *findPass(std::string_view name);

// tidy's sites applied all at once, again on the result, up to `rounds` times or until none is
// left (the program a reduction finishes with; a round whose result does not parse is dropped).
// `acceptable`, when given, judges each round's text (the reducer's kept regions): when the whole
// round is not, its sites are taken one by one, each only if the text stays acceptable.
std::string tidyProgram(const std::string &text, const std::string &path, const ParseOptions &opt,
                        int rounds = 8,
                        const std::function<bool(const std::string &)> &acceptable = {});

// Helpers shared by passes -----------------------------------------------------------

// Calls fn(ctx, side_is_device) for each parsed side that has an AST.
void forEachSide(const ParsedSource &src, const std::function<void(clang::ASTContext &, bool)> &fn);

// The sites every parsed side offers, each once, in the order of their edits: one side's parse may
// see code the other's does not (under __CUDA_ARCH__), and a site only one side offers could break
// the other. `fn` lists one side's sites (remove-decl's unused declarations, tidy's unused locals).
std::vector<PassSite> sitesEverySideOffers(
    const ParsedSource &src,
    const std::function<void(const ParsedSide &, std::vector<PassSite> &)> &fn);

// `#define NAME ...` lines of the user's file that nothing expanded or tested, each with the
// `#ifndef NAME` / `#endif` around it when those are the lines right before and after (a -D
// default): sites of `pass`. Such a line changes nothing a compiler sees (remove-decl, tidy).
void macroSites(clang::ASTUnit &ast, const ParsedSource &src, const char *pass,
                std::vector<PassSite> &out);

// Drops sites whose edits are identical to an earlier one (the host and the device
// parse see the same text), then sorts by (level, first offset), stable otherwise.
void dedupeAndOrder(std::vector<PassSite> &sites);

// A site that replaces [r.begin, r.end) with `with`.
PassSite replaceSite(const char *pass, const ParsedSource &src, Range r, std::string with,
                     std::string note, int level = 0, int group = -1);

// The range extended to the whole line(s) when nothing else but blanks shares them.
Range widenToLines(const std::string &text, Range r);

// Whether `loc` (its expansion) is in the user's file itself. SourceManager::isInMainFile
// also says yes for the predefines buffer (<built-in>: __CUDA_ARCH__, __cplusplus...),
// whose offsets mean nothing in the user's text.
bool isMainFileLoc(const clang::ASTContext &ctx, clang::SourceLocation loc);
// A parse with a precompiled preamble (the parse check's, which the search lists its sites from)
// holds the leading directives of the user's file in a copy of the file with its own FileID: the
// #defines there and the #includes the headers came through. Its offsets are the text's own (a
// preamble is reused only while the text's leading directives are unchanged).
bool isPreambleCopyOfMainFile(const clang::SourceManager &sm, clang::FileID fid);
// isMainFileLoc, or in the preamble's copy of the user's file.
bool isUserFileLoc(const clang::ASTContext &ctx, clang::SourceLocation loc);

// The text of [r.begin, r.end) with the edits inside it applied (edits of `text`, inside r,
// not overlapping).
std::string rewritten(const std::string &text, Range r, std::vector<Edit> edits);

// A site whose edits were gathered from several places, made ready: its edits sorted and its
// line the first edit's. False when two of its edits overlap (the site cannot be applied).
bool sealSite(PassSite &s, const std::string &text);

// A token of Clang's raw lexer over a text (comments skipped, directives not interpreted): its
// bytes, its kind, whether it begins a line, and an identifier's spelling.
struct RawToken {
  unsigned begin = 0, end = 0;
  clang::tok::TokenKind kind = clang::tok::unknown;
  bool line_start = false;
  std::string id;  // a raw_identifier's spelling, else empty
};
std::vector<RawToken> rawTokens(const std::string &text, const clang::ASTContext &ctx);

// The fixed-width integer types (uint32_t, ...) and the builtin types they are where nvcc builds
// (Linux, LP64, host and device alike): builtin-types spells them so, and remove-decl keeps
// <cstdint> while the text names one.
const std::map<std::string, std::string> &fixedWidthTypes();

// The literal of `v` with the type `t` has (`64`, `64u`, `64l`, `64ul`, `64ll`, `64ull`, a negative
// one in parentheses), or "" for a type no plain literal has (short, char, bool, enums).
std::string integerLiteralOf(const clang::QualType &t, const llvm::APSInt &v);

// Group ids keyed by the place's bytes, so that the host and the device parse (which may
// see different code under __CUDA_ARCH__) give one place one id, and two places never
// share one.
class PlaceIds {
 public:
  int operator()(Range r) {
    return ids_.try_emplace({r.begin, r.end}, (int)ids_.size()).first->second;
  }

 private:
  std::map<std::pair<unsigned, unsigned>, int> ids_;
};

// Calls fn(decl) for each top-level declaration that begins in the main file (a pass
// that only edits the user's text need not walk the CUDA headers' declarations).
void forEachMainFileDecl(clang::ASTContext &ctx, const std::function<void(clang::Decl *)> &fn);

}  // namespace wsr
