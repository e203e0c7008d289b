#include "pass.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/Type.h>
#include <llvm/ADT/APSInt.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/ASTUnit.h>
#include <clang/Lex/Lexer.h>

#include <algorithm>
#include <set>

namespace wsr {

#define WSR_PASS(name, fn, phase, desc) std::vector<PassSite> fn(const ParsedSource &);
#include "passes.def"
#undef WSR_PASS

std::string rewritten(const std::string &text, Range r, std::vector<Edit> edits) {
  std::sort(edits.begin(), edits.end());
  std::string out;
  unsigned pos = r.begin;
  for (auto &e : edits) {
    out.append(text, pos, e.offset - pos);
    out += e.replacement;
    pos = e.offset + e.length;
  }
  out.append(text, pos, r.end - pos);
  return out;
}

bool sealSite(PassSite &s, const std::string &text) {
  std::sort(s.edits.begin(), s.edits.end());
  for (size_t i = 1; i < s.edits.size(); ++i)
    if (overlaps(s.edits[i - 1], s.edits[i])) return false;
  if (!s.edits.empty()) s.line = lineOf(text, s.edits.front().offset);
  return true;
}

std::vector<RawToken> rawTokens(const std::string &text, const clang::ASTContext &ctx) {
  clang::LangOptions lo = ctx.getLangOpts();
  clang::Lexer lex(clang::SourceLocation(), lo, text.data(), text.data(),
                   text.data() + text.size());
  std::vector<RawToken> out;
  clang::Token tok;
  for (;;) {
    lex.LexFromRawLexer(tok);
    if (tok.is(clang::tok::eof)) break;
    RawToken r;
    r.end = (unsigned)(lex.getBufferLocation() - text.data());
    r.begin = r.end - tok.getLength();
    r.kind = tok.getKind();
    r.line_start = tok.isAtStartOfLine();
    if (tok.is(clang::tok::raw_identifier)) r.id = tok.getRawIdentifier().str();
    out.push_back(std::move(r));
  }
  return out;
}

const std::map<std::string, std::string> &fixedWidthTypes() {
  static const std::map<std::string, std::string> spelled = {
      {"uint8_t", "unsigned char"},  {"int8_t", "signed char"}, {"uint16_t", "unsigned short"},
      {"int16_t", "short"},          {"uint32_t", "unsigned"},  {"int32_t", "int"},
      {"uint64_t", "unsigned long"}, {"int64_t", "long"},       {"uintptr_t", "unsigned long"},
      {"intptr_t", "long"}};
  return spelled;
}

std::string integerLiteralOf(const clang::QualType &t, const llvm::APSInt &v) {
  auto *bt = t.getCanonicalType()->getAs<clang::BuiltinType>();
  if (!bt) return "";
  const char *suffix = nullptr;
  switch (bt->getKind()) {
    case clang::BuiltinType::Int:
      suffix = "";
      break;
    case clang::BuiltinType::UInt:
      suffix = "u";
      break;
    case clang::BuiltinType::Long:
      suffix = "l";
      break;
    case clang::BuiltinType::ULong:
      suffix = "ul";
      break;
    case clang::BuiltinType::LongLong:
      suffix = "ll";
      break;
    case clang::BuiltinType::ULongLong:
      suffix = "ull";
      break;
    default:
      return "";
  }
  if (v.isSigned() && v.isNegative()) {
    if (v.isMinSignedValue()) return "";  // -2^31 has no literal of its own type
    return "(-" + llvm::toString(-v, 10) + suffix + ")";
  }
  return llvm::toString(v, 10) + suffix;
}

const char *phaseName(Phase p) {
  switch (p) {
    case Phase::Shape:
      return "shape";
    case Phase::Structure:
      return "structure";
    case Phase::Expression:
      return "expression";
    case Phase::Fallback:
      return "fallback";
    case Phase::Cosmetic:
      return "cosmetic";
    case Phase::Invisible:
      return "invisible";
  }
  return "?";
}

const std::vector<PassInfo> &allPasses() {
  static const std::vector<PassInfo> passes = {
#define WSR_PASS(name, fn, phase, desc) PassInfo{name, desc, Phase::phase, &fn},
#define WSR_BUILD_PASS(name, fn, phase, desc) PassInfo{name, desc, Phase::phase, &fn, true},
#include "passes.def"
#undef WSR_BUILD_PASS
#undef WSR_PASS
  };
  return passes;
}

const PassInfo *findPass(std::string_view name) {
  for (auto &p : allPasses())
    if (name == p.name) return &p;
  return nullptr;
}

void forEachSide(const ParsedSource &src,
                 const std::function<void(clang::ASTContext &, bool)> &fn) {
  for (auto &s : src.sides)
    if (s.ast) fn(s.ast->getASTContext(), s.device);
}

std::vector<PassSite> sitesEverySideOffers(
    const ParsedSource &src,
    const std::function<void(const ParsedSide &, std::vector<PassSite> &)> &fn) {
  std::map<std::vector<Edit>, std::pair<PassSite, int>>
      offered;  // edits -> (site, sides offering it)
  int sides = 0;
  for (auto &side : src.sides) {
    if (!side.ast) continue;
    ++sides;
    std::vector<PassSite> mine;
    fn(side, mine);
    std::set<std::vector<Edit>> once;  // one vote per side
    for (auto &s : mine)
      if (once.insert(s.edits).second) ++offered.try_emplace(s.edits, s, 0).first->second.second;
  }
  std::vector<PassSite> sites;
  for (auto &[edits, so] : offered)
    if (so.second == sides) sites.push_back(so.first);
  return sites;
}

void dedupeAndOrder(std::vector<PassSite> &sites) {
  std::set<std::pair<std::vector<Edit>, int>> seen;
  std::vector<PassSite> out;
  for (auto &s : sites) {
    auto e = s.edits;
    std::sort(e.begin(), e.end());
    if (!seen.insert({e, s.group}).second) continue;
    out.push_back(s);
  }
  std::stable_sort(out.begin(), out.end(), [](const PassSite &a, const PassSite &b) {
    if (a.level != b.level) return a.level < b.level;
    unsigned ao = a.edits.empty() ? 0 : a.edits.front().offset;
    unsigned bo = b.edits.empty() ? 0 : b.edits.front().offset;
    if (a.group != b.group || a.group < 0) return ao < bo;
    return false;  // alternatives keep the order the pass gave them
  });
  sites = std::move(out);
}

PassSite replaceSite(const char *pass, const ParsedSource &src, Range r, std::string with,
                     std::string note, int level, int group) {
  PassSite s;
  s.pass = pass;
  s.edits.push_back(Edit{r.begin, r.size(), std::move(with)});
  s.note = std::move(note);
  s.line = lineOf(src.text, r.begin);
  s.level = level;
  s.group = group;
  return s;
}

Range widenToLines(const std::string &t, Range r) {
  unsigned b = r.begin, e = r.end;
  while (b > 0 && (t[b - 1] == ' ' || t[b - 1] == '\t')) --b;
  if (b > 0 && t[b - 1] != '\n') return r;
  while (e < t.size() && (t[e] == ' ' || t[e] == '\t' || t[e] == '\r')) ++e;
  if (e < t.size() && t[e] != '\n') return r;
  if (e < t.size()) ++e;
  return Range{b, e};
}

bool isMainFileLoc(const clang::ASTContext &ctx, clang::SourceLocation loc) {
  auto &sm = ctx.getSourceManager();
  return loc.isValid() && sm.getFileID(sm.getExpansionLoc(loc)) == sm.getMainFileID();
}

bool isPreambleCopyOfMainFile(const clang::SourceManager &sm, clang::FileID fid) {
  if (fid.isInvalid() || fid == sm.getMainFileID()) return false;
  auto here = sm.getFileEntryRefForID(fid);
  auto main = sm.getFileEntryRefForID(sm.getMainFileID());
  return here && main && here->getName() == main->getName();
}

bool isUserFileLoc(const clang::ASTContext &ctx, clang::SourceLocation loc) {
  auto &sm = ctx.getSourceManager();
  if (!loc.isValid()) return false;
  auto fid = sm.getFileID(sm.getExpansionLoc(loc));
  return fid == sm.getMainFileID() || isPreambleCopyOfMainFile(sm, fid);
}

void forEachMainFileDecl(clang::ASTContext &ctx, const std::function<void(clang::Decl *)> &fn) {
  for (auto *d : ctx.getTranslationUnitDecl()->decls())
    if (!d->isImplicit() && isMainFileLoc(ctx, d->getBeginLoc())) fn(d);
}

}  // namespace wsr
