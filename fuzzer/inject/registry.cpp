// The injector registry (injectors.def) and the helpers the injectors share. No Clang here.
#include "inject.h"

#include <algorithm>
#include <regex>

namespace wsr::inject {

#define WSR_INJECTOR(name, fn, arch, runtime, check, tool, note, ...) \
  std::vector<InjectSite> fn(const ParsedSource &, const KernelIndex &);
#include "injectors.def"
#undef WSR_INJECTOR
bool tmemAllocLaneGuardCheck(const KernelIndex &, std::string *);
bool deallocWithoutSyncCheck(const KernelIndex &, std::string *);
bool commitOutsideElectCheck(const KernelIndex &, std::string *);
bool missingTcgen05FenceCheck(const KernelIndex &, std::string *);

const std::vector<InjectorInfo> &allInjectors() {
  static const std::vector<InjectorInfo> all = {
#define WSR_INJECTOR(name, fn, arch, runtime, check, tool, note, ...) \
  InjectorInfo{name, &fn, arch, tool, runtime, check, std::vector<std::string>{__VA_ARGS__}, note},
#include "injectors.def"
#undef WSR_INJECTOR
  };
  return all;
}

const InjectorInfo *findInjector(std::string_view name) {
  for (auto &i : allInjectors())
    if (name == i.name) return &i;
  return nullptr;
}

bool expects(const InjectorInfo &inj, const std::string &detail) {
  std::string symptom = detail.substr(0, detail.find('/'));
  for (auto &e : inj.expected) {
    if (e == detail || e == symptom) return true;
    if (e.size() > 2 && e.compare(e.size() - 2, 2, "/*") == 0 &&
        detail.rfind(e.substr(0, e.size() - 1), 0) == 0)
      return true;
    if (e.size() > 2 && e.compare(e.size() - 2, 2, "/*") == 0 &&
        symptom == e.substr(0, e.size() - 2))
      return true;
  }
  return false;
}

std::string kernelArch(const std::string &text) {
  if (text.find("tcgen05.") != std::string::npos || text.find("compute_100a") != std::string::npos)
    return "sm_100a";
  return "sm_90a";
}

std::string archOverride(const std::string &text) {
  static const std::regex marker("// wsfuzz: arch=([A-Za-z0-9_]+)");
  std::smatch m;
  if (std::regex_search(text, m, marker)) return m[1];
  return {};
}

std::vector<InjectSite> sitesFor(const InjectorInfo &inj, const ParsedSource &src,
                                 const KernelIndex &idx) {
  auto sites = inj.sites(src, idx);
  // One bug per site, each site once, in source order.
  std::vector<InjectSite> out;
  for (auto &s : sites) {
    auto e = s.edits;
    std::sort(e.begin(), e.end());
    bool dup = false;
    for (auto &o : out) {
      auto f = o.edits;
      std::sort(f.begin(), f.end());
      dup |= f == e && o.arch == s.arch;
    }
    if (!dup) out.push_back(s);
  }
  std::stable_sort(out.begin(), out.end(), [](const InjectSite &a, const InjectSite &b) {
    unsigned ao = a.edits.empty() ? 0 : a.edits.front().offset,
             bo = b.edits.empty() ? 0 : b.edits.front().offset;
    return ao < bo;
  });
  return out;
}

InjectSite makeSite(const char *inj, const std::string &text, std::vector<Edit> edits,
                    std::string note) {
  InjectSite s;
  s.pass = inj;
  std::sort(edits.begin(), edits.end());
  s.edits = std::move(edits);
  s.note = std::move(note);
  s.line = s.edits.empty() ? 0 : lineOf(text, s.edits.front().offset);
  return s;
}

std::string slice(const std::string &text, Range r) {
  if (r.begin > text.size() || r.end > text.size() || r.end < r.begin) return {};
  return text.substr(r.begin, r.size());
}

std::optional<std::pair<Range, bool>> useStmt(const std::string &text, const Occurrence &o) {
  Range e = o.expr;
  unsigned i = e.end;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  Range es = e;
  if (i < text.size() && text[i] == ';') es.end = i + 1;
  if (o.block >= 0 && o.anchor.begin == es.begin && o.anchor.end == es.end)
    return std::make_pair(es, true);
  if (!o.ctl.empty() && !o.ctl[0].arm_is_compound && o.ctl[0].arm.begin == e.begin &&
      o.ctl[0].arm.end <= es.end)
    return std::make_pair(es, false);
  return std::nullopt;
}

std::optional<Edit> deleteUse(const std::string &text, const Occurrence &o) {
  auto st = useStmt(text, o);
  if (!st) return std::nullopt;
  return deleteStmt(text, st->first, st->second);
}

// The range extended to whole lines when nothing else shares them (as mutators' widenToLines).
static Range wholeLines(const std::string &t, Range r) {
  unsigned b = r.begin, e = r.end;
  while (b > 0 && (t[b - 1] == ' ' || t[b - 1] == '\t')) --b;
  if (b > 0 && t[b - 1] != '\n') return r;
  while (e < t.size() && (t[e] == ' ' || t[e] == '\t' || t[e] == '\r')) ++e;
  if (e < t.size() && t[e] != '\n') {
    // a trailing `// comment` belongs to the statement
    if (t.compare(e, 2, "//") != 0) return r;
    while (e < t.size() && t[e] != '\n') ++e;
  }
  if (e < t.size()) ++e;
  return Range{b, e};
}

Edit deleteStmt(const std::string &text, Range stmt, bool in_block) {
  if (!in_block) return Edit{stmt.begin, stmt.size(), "{}"};
  Range w = wholeLines(text, stmt);
  return Edit{w.begin, w.size(), ""};
}

static std::string indentOfLine(const std::string &text, unsigned at, unsigned *line_start) {
  unsigned b = at;
  while (b > 0 && text[b - 1] != '\n') --b;
  *line_start = b;
  unsigned e = b;
  while (e < text.size() && (text[e] == ' ' || text[e] == '\t')) ++e;
  return text.substr(b, e - b);
}

Edit insertLineBefore(const std::string &text, unsigned at, const std::string &code) {
  unsigned ls;
  std::string ind = indentOfLine(text, at, &ls);
  return Edit{ls, 0, ind + code + "\n"};
}

Edit insertAtBlockStart(const std::string &text, Range block, const std::string &code) {
  // After the `{` and its line break; indented like the block's first statement.
  unsigned at = block.begin + 1;
  while (at < block.end && (text[at] == ' ' || text[at] == '\t' || text[at] == '\r')) ++at;
  if (at < block.end && text[at] == '\n') {
    ++at;
    unsigned e = at;
    while (e < block.end && (text[e] == ' ' || text[e] == '\t')) ++e;
    return Edit{at, 0, text.substr(at, e - at) + code + "\n"};
  }
  return Edit{block.begin + 1, 0, " " + code + " "};
}

bool isLaneGuard(const std::string &c) {
  static const std::regex lane(
      R"((\blane(_id)?\s*==\s*0)|(%\s*32\s*\)?\s*==\s*0)|(&\s*31\s*\)?\s*==\s*0)|elect)");
  return std::regex_search(c, lane);
}

bool isSingleThreadGuard(const std::string &c) {
  static const std::regex one(
      R"(((threadIdx\.x|tid|thread|wg_thread|ctid|lane(_id)?)\s*(==\s*0|<\s*1)\b)|elect|store_thread)");
  return std::regex_search(c, one);
}

std::string roleOf(const Occurrence &o) {
  static const std::regex wg(R"(\b(warpgroup|wg|wg_id|warp_group|role)\s*==\s*0\b)");
  for (auto it = o.ctl.rbegin(); it != o.ctl.rend(); ++it) {
    if (it->kind != Ctl::If || !it->top_level) continue;
    bool zero = std::regex_search(it->cond_text, wg);
    if (zero) return it->in_else ? "consumer" : "producer";
    if (it->cond_text.find("== 1") != std::string::npos ||
        it->cond_text.find("!= 0") != std::string::npos)
      return it->in_else ? "producer" : "consumer";
  }
  return "";
}

}  // namespace wsr::inject
