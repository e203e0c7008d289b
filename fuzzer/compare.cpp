// `wsfuzz compare A.sqlite B.sqlite`: the same mutants judged twice (two backends, two GPU
// counts, two machines), side by side. Joined on the mutant hash (kernel text + arch + defines),
// so only mutants both campaigns judged are compared: the GPU-vs-emulator agreement table,
// and the check that more GPUs give identical verdicts.
#include "report.h"

#include <llvm/Support/JSON.h>
#include <sqlite3.h>

#include <map>
#include <sstream>

namespace wsr::fuzz {

namespace {

std::string col(sqlite3_stmt *s, int i) {
  auto *t = sqlite3_column_text(s, i);
  return t ? reinterpret_cast<const char *>(t) : "";
}

// "eager: pass, reads-late: wrong/..." from a verdict's policy matrix, if it has one.
std::string policiesOf(const std::string &verdict_json) {
  auto v = llvm::json::parse(verdict_json);
  if (!v) {
    llvm::consumeError(v.takeError());
    return "";
  }
  std::string out;
  if (auto *o = v->getAsObject())
    if (auto *ps = o->getArray("policies"))
      if (ps->size() > 1)
        for (auto &p : *ps)
          if (auto *po = p.getAsObject())
            out += (out.empty() ? "" : ", ") + po->getString("policy").value_or("").str() + ": " +
                   po->getString("detail").value_or("").str();
  return out;
}

std::string cell(std::string s) {
  for (auto &c : s)
    if (c == '|' || c == '\n') c = '/';
  return s;
}

}  // namespace

bool writeComparison(const std::string &a, const std::string &b, const std::string &label_a,
                     const std::string &label_b, std::string *markdown, std::string *err) {
  sqlite3 *h = nullptr;
  if (sqlite3_open_v2(a.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    *err = a + " cannot be opened as a campaign database";
    sqlite3_close(h);
    return false;
  }
  std::string attach = "ATTACH DATABASE '" + b + "' AS b";
  for (char c : b)
    if (c == '\'') {
      *err = "the path " + b + " has a quote in it";
      sqlite3_close(h);
      return false;
    }
  char *msg = nullptr;
  if (sqlite3_exec(h, attach.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
    *err = b + " cannot be opened as a campaign database: " + (msg ? msg : "");
    sqlite3_free(msg);
    sqlite3_close(h);
    return false;
  }
  std::ostringstream md;
  md << "# " << label_a << " vs " << label_b << ": the same mutants judged twice\n\n";
  md << "- " << label_a << ": `" << a << "`\n- " << label_b << ": `" << b << "`\n\n";

  // Reference kernels first.
  md << "## Reference kernels (baselines)\n\n| kernel | " << label_a << " | " << label_b
     << " | agree |\n| --- | --- | --- | --- |\n";
  sqlite3_stmt *s = nullptr;
  const char *ks =
      "SELECT k.name, k.baseline_detail, kb.baseline_detail FROM main.kernels k JOIN b.kernels kb "
      "ON kb.name = k.name "
      "ORDER BY k.name";
  if (sqlite3_prepare_v2(h, ks, -1, &s, nullptr) == SQLITE_OK)
    while (sqlite3_step(s) == SQLITE_ROW)
      md << "| " << col(s, 0) << " | " << col(s, 1) << " | " << col(s, 2) << " | "
         << (col(s, 1) == col(s, 2) ? "yes" : "**no**") << " |\n";
  sqlite3_finalize(s);

  struct R {
    std::string kernel, injector, note, expected, da, db, sa, sb, pol;
    long site;
    int match_a, match_b;
  };
  std::vector<R> rows;
  const char *q =
      "SELECT m.kernel, m.injector, m.site, m.note, m.expected, va.detail, vb.detail, "
      "va.signature, vb.signature, "
      "vb.verdict_json, va.expected_match, vb.expected_match, va.verdict_json "
      "FROM main.mutants m JOIN main.verdicts va ON va.hash = m.hash JOIN b.verdicts vb ON vb.hash "
      "= m.hash "
      "ORDER BY m.kernel, m.injector, m.site";
  if (sqlite3_prepare_v2(h, q, -1, &s, nullptr) != SQLITE_OK) {
    *err = std::string("the databases do not have the campaign schema: ") + sqlite3_errmsg(h);
    sqlite3_close(h);
    return false;
  }
  while (sqlite3_step(s) == SQLITE_ROW) {
    R r{col(s, 0),
        col(s, 1),
        col(s, 3),
        col(s, 4),
        col(s, 5),
        col(s, 6),
        col(s, 7),
        col(s, 8),
        "",
        sqlite3_column_int64(s, 2),
        sqlite3_column_int(s, 10),
        sqlite3_column_int(s, 11)};
    r.pol = policiesOf(col(s, 9));
    if (r.pol.empty()) r.pol = policiesOf(col(s, 12));
    rows.push_back(std::move(r));
  }
  sqlite3_finalize(s);
  sqlite3_close(h);

  long same_detail = 0, same_class = 0, infra = 0, exp_a = 0, exp_b = 0;
  std::map<std::string, std::pair<long, long>> per_injector;  // same class, total
  for (auto &r : rows) {
    bool inf = classOf(r.da) == "infra-error" || classOf(r.db) == "infra-error";
    infra += inf;
    same_detail += r.da == r.db;
    bool sc = classOf(r.da) == classOf(r.db);
    same_class += sc;
    exp_a += r.match_a;
    exp_b += r.match_b;
    auto &pi = per_injector[r.injector];
    pi.first += sc;
    pi.second += 1;
  }
  auto pct = [](long x, long n) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.0f%% (%ld/%ld)", n ? 100.0 * x / n : 0.0, x, n);
    return std::string(buf);
  };
  md << "\n## Summary\n\n";
  md << "- mutants judged by both: " << rows.size() << " (" << infra
     << " with an infra-error on either side)\n";
  md << "- same class: " << pct(same_class, rows.size())
     << "; same detail: " << pct(same_detail, rows.size()) << "\n";
  md << "- as the catalogue expects: " << label_a << " " << pct(exp_a, rows.size()) << ", "
     << label_b << " " << pct(exp_b, rows.size()) << "\n\n";
  md << "| injector | same class |\n| --- | --- |\n";
  for (auto &[k, v] : per_injector) md << "| " << k << " | " << pct(v.first, v.second) << " |\n";

  md << "\n## Disagreements (class)\n\n";
  bool any = false;
  for (auto &r : rows)
    if (classOf(r.da) != classOf(r.db)) {
      if (!any) {
        md << "| kernel | mutant | site | expected | " << label_a << " | " << label_b << " | "
           << label_b << " policies |\n"
           << "| --- | --- | --- | --- | --- | --- | --- |\n";
        any = true;
      }
      md << "| " << r.kernel << " | " << r.injector << " #" << r.site << " | " << cell(r.note)
         << " | " << cell(r.expected) << " | " << r.da << " | " << r.db << " | " << cell(r.pol)
         << " |\n";
    }
  if (!any) md << "None: every mutant got the same class on both.\n";

  md << "\n## Every mutant\n\n| kernel | mutant | " << label_a << " | " << label_b
     << " | class | policies |\n"
     << "| --- | --- | --- | --- | --- | --- |\n";
  for (auto &r : rows)
    md << "| " << r.kernel << " | " << r.injector << " #" << r.site << " | " << r.da << " | "
       << r.db << " | "
       << (classOf(r.da) == classOf(r.db) ? (r.da == r.db ? "same" : "same class") : "**differs**")
       << " | " << cell(r.pol) << " |\n";
  *markdown = md.str();
  return true;
}

}  // namespace wsr::fuzz
