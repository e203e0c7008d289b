#include "report.h"

#include "inject.h"
#include "process.h"

#include <llvm/Support/JSON.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

namespace wsr::fuzz {

std::string classOf(const std::string &d) { return d.substr(0, d.find('/')); }

std::optional<bool> sanitizerSaw(const std::string &out, std::string *summary) {
  static const std::regex err(R"(ERROR SUMMARY:\s*(\d+) error)");
  static const std::regex haz(
      R"((\w+) SUMMARY:\s*(\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\))");
  static const std::regex fail(R"((CUDA error[^\n]*|Target application returned an error))");
  std::smatch m;
  std::optional<bool> saw;
  if (std::regex_search(out, m, err)) {
    *summary = m[0];
    saw = std::stoi(m[1]) > 0;
  } else if (std::regex_search(out, m, haz)) {
    *summary = m[0];
    saw = std::stoi(m[2]) > 0 || std::stoi(m[3]) > 0 || std::stoi(m[4]) > 0;
  }
  std::smatch f;
  if (saw && !*saw && std::regex_search(out, f, fail)) {
    *summary += "; no hazard, but the program failed under the tool (" + f[0].str() + ")";
    saw = true;
  }
  if (!saw) *summary = out.substr(0, std::min<size_t>(out.size(), 200));
  return saw;
}

namespace {

// A report is a list of blocks, rendered twice (Markdown, HTML).
struct Block {
  enum Kind { H2, P, Table } kind;
  std::string text;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  bool matrix = false;  // colour the cells (the confusion matrix)
};

struct Row {
  std::string hash, kernel, injector, note, expected_json, arch;
  int site = 0;
  bool runtime = true, judged = false;
  std::string symptom, detail, signature, gpu, static_why;
  bool expected_match = false, infra = false;
  int site_executed = -1, static_check = -1;
  double build_ms = 0, wall_ms = 0;
  std::string evidence;
  std::vector<std::string> expected;
};

std::string pct(long a, long b) {
  if (b == 0) return "-";
  // Truncated to a tenth, never rounded up: 55/58 is 94.8%, not the "95%" a >= 95% target asks
  // for.
  char buf[48];
  if (a * 100 % b == 0)
    std::snprintf(buf, sizeof buf, "%ld%% (%ld/%ld)", a * 100 / b, a, b);
  else
    std::snprintf(buf, sizeof buf, "%ld.%ld%% (%ld/%ld)", a * 1000 / b / 10, a * 1000 / b % 10, a,
                  b);
  return buf;
}

std::string fmt(double v, const char *f = "%.1f") {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::vector<std::string> parseList(const std::string &js) {
  std::vector<std::string> out;
  auto v = llvm::json::parse(js);
  if (!v) {
    llvm::consumeError(v.takeError());
    return out;
  }
  if (auto *a = v->getAsArray())
    for (auto &e : *a)
      if (auto s = e.getAsString()) out.push_back(s->str());
  return out;
}

std::string firstEvidence(const std::string &verdict_json) {
  auto v = llvm::json::parse(verdict_json);
  if (!v) {
    llvm::consumeError(v.takeError());
    return "";
  }
  if (auto *o = v->getAsObject())
    if (auto *ev = o->getArray("evidence"))
      for (auto &e : *ev)
        if (auto s = e.getAsString()) return s->str();
  return "";
}

struct Q {
  sqlite3_stmt *s = nullptr;
  Q(sqlite3 *db, const char *sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK)
      throw std::runtime_error(sqlite3_errmsg(db));
  }
  ~Q() { sqlite3_finalize(s); }
  bool step() { return sqlite3_step(s) == SQLITE_ROW; }
  std::string t(int i) {
    auto *p = sqlite3_column_text(s, i);
    return p ? (const char *)p : "";
  }
  long long n(int i) { return sqlite3_column_int64(s, i); }
  double d(int i) { return sqlite3_column_double(s, i); }
  bool null(int i) { return sqlite3_column_type(s, i) == SQLITE_NULL; }
};

std::string esc(const std::string &s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else if (c == '"')
      o += "&quot;";
    else
      o += c;
  }
  return o;
}

std::string mdCell(std::string s) {
  std::string o;
  for (char c : s) {
    if (c == '|')
      o += "\\|";
    else if (c == '\n')
      o += " ";
    else
      o += c;
  }
  return o;
}

std::string renderMd(const std::string &title, const std::vector<Block> &bs) {
  std::string o = "# " + title + "\n\n";
  for (auto &b : bs) {
    if (b.kind == Block::H2)
      o += "## " + b.text + "\n\n";
    else if (b.kind == Block::P)
      o += b.text + "\n\n";
    else {
      if (b.rows.empty()) {
        o += "(none)\n\n";
        continue;
      }
      o += "|";
      for (auto &h : b.header) o += " " + mdCell(h) + " |";
      o += "\n|";
      for (size_t i = 0; i < b.header.size(); ++i) o += i ? " ---: |" : " --- |";
      o += "\n";
      for (auto &r : b.rows) {
        o += "|";
        for (auto &c : r) o += " " + mdCell(c) + " |";
        o += "\n";
      }
      o += "\n";
    }
  }
  return o;
}

std::string renderHtml(const std::string &title, const std::vector<Block> &bs) {
  std::string o =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + esc(title) +
      "</title>\n<style>body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:1200px}"
      "table{border-collapse:collapse;margin:0 0 1.5em}td,th{border:1px solid #ccc;padding:3px "
      "8px;text-align:right}"
      "td:first-child,th:first-child{text-align:left}th{background:#f0f0f0}"
      "td.z{color:#bbb}td.hit{background:#d7f0d7}td.miss{background:#f6dada}td.inf{background:#eee}"
      "code{background:#f4f4f4}</style></head><body>\n<h1>" +
      esc(title) + "</h1>\n";
  for (auto &b : bs) {
    if (b.kind == Block::H2)
      o += "<h2>" + esc(b.text) + "</h2>\n";
    else if (b.kind == Block::P)
      o += "<p>" + esc(b.text) + "</p>\n";
    else {
      if (b.rows.empty()) {
        o += "<p><i>none</i></p>\n";
        continue;
      }
      o += "<table><tr>";
      for (auto &h : b.header) o += "<th>" + esc(h) + "</th>";
      o += "</tr>\n";
      for (auto &r : b.rows) {
        o += "<tr>";
        for (size_t i = 0; i < r.size(); ++i) {
          std::string cls;
          if (b.matrix && i > 0 && i + 1 < r.size()) {
            if (r[i] == "0")
              cls = "z";
            else if (b.header[i] == "infra-error")
              cls = "inf";
            else if (b.header[i] == r[0] || (r[0].find(b.header[i]) != std::string::npos))
              cls = "hit";
            else
              cls = "miss";
          }
          o += cls.empty() ? "<td>" : "<td class=\"" + cls + "\">";
          o += esc(r[i]) + "</td>";
        }
        o += "</tr>\n";
      }
      o += "</table>\n";
    }
  }
  return o + "</body></html>\n";
}

}  // namespace

std::vector<Explanation> parseExplanations(const std::string &text) {
  std::vector<Explanation> out;
  std::istringstream in(text);
  std::string line;
  auto trim = [](std::string x) {
    size_t a = x.find_first_not_of(" \t"), b = x.find_last_not_of(" \t\r");
    return a == std::string::npos ? std::string() : x.substr(a, b - a + 1);
  };
  while (std::getline(in, line)) {
    if (trim(line).empty() || trim(line)[0] == '#') continue;
    std::vector<std::string> f;
    size_t at = 0;
    for (int i = 0; i < 3; ++i) {
      size_t bar = line.find('|', at);
      if (bar == std::string::npos) break;
      f.push_back(trim(line.substr(at, bar - at)));
      at = bar + 1;
    }
    if (f.size() != 3) continue;
    out.push_back({f[0], f[1], f[2], trim(line.substr(at))});
  }
  return out;
}

static std::string explain(const std::vector<Explanation> &ex, const std::string &kernel,
                           const std::string &injector, const std::string &detail) {
  for (auto &e : ex)
    if ((e.kernel == "*" || e.kernel == kernel) && e.injector == injector &&
        detail.rfind(e.observed, 0) == 0)
      return e.text;
  return "";
}

ReportText buildReport(Store &store, const std::string &title, const std::vector<Explanation> &ex) {
  sqlite3 *db = store.db();
  std::vector<Row> rows;
  long refined = 0;  // mutants whose injector's expectation list changed since they were planned
  {
    Q q(db,
        "SELECT m.hash, m.kernel, m.injector, m.site, m.note, m.expected, m.arch, m.runtime, "
        "v.hash IS NOT NULL, "
        "v.symptom, v.detail, v.signature, v.expected_match, v.infra, v.site_executed, "
        "v.static_check, v.static_why, "
        "v.build_ms, v.wall_ms, v.gpu, v.verdict_json FROM mutants m LEFT JOIN verdicts v ON "
        "v.hash = m.hash "
        "ORDER BY m.kernel, m.injector, m.site");
    while (q.step()) {
      Row r;
      r.hash = q.t(0);
      r.kernel = q.t(1);
      r.injector = q.t(2);
      r.site = (int)q.n(3);
      r.note = q.t(4);
      r.expected_json = q.t(5);
      r.expected = parseList(r.expected_json);
      r.arch = q.t(6);
      r.runtime = q.n(7) != 0;
      r.judged = q.n(8) != 0;
      r.symptom = q.t(9);
      r.detail = q.t(10);
      r.signature = q.t(11);
      r.expected_match = q.n(12) != 0;
      r.infra = q.n(13) != 0;
      r.site_executed = q.null(14) ? -1 : (int)q.n(14);
      r.static_check = q.null(15) ? -1 : (int)q.n(15);
      r.static_why = q.t(16);
      r.build_ms = q.d(17);
      r.wall_ms = q.d(18);
      r.gpu = q.t(19);
      if (r.infra) r.evidence = firstEvidence(q.t(20));
      // The catalogue's expectations as this build's injectors state them: a finding that refined
      // an injector's list (e.g. a trap the hardware turned out to give) applies to old campaigns
      // too.
      if (auto *inj = inject::findInjector(r.injector); inj && r.runtime) {
        std::vector<std::string> now(inj->expected.begin(), inj->expected.end());
        if (now != r.expected) {
          ++refined;
          r.expected = now;
          llvm::json::Array a;
          for (auto &e : now) a.push_back(e);
          std::string js;
          llvm::raw_string_ostream os(js);
          os << llvm::json::Value(std::move(a));
          r.expected_json = os.str();
          if (r.judged && !r.infra) r.expected_match = inject::expects(*inj, r.detail);
        }
      }
      rows.push_back(r);
    }
  }
  auto expClass = [](const Row &r) {
    return r.expected.empty() ? std::string("?") : classOf(r.expected.front());
  };
  auto shows = [](const Row &r) {
    return r.judged && !r.infra && r.runtime && r.symptom != "pass";
  };

  std::vector<Block> out;
  auto h2 = [&](const std::string &t) { out.push_back({Block::H2, t, {}, {}, false}); };
  auto p = [&](const std::string &t) { out.push_back({Block::P, t, {}, {}, false}); };
  auto table = [&](std::vector<std::string> h, std::vector<std::vector<std::string>> r,
                   bool m = false) {
    out.push_back({Block::Table, "", std::move(h), std::move(r), m});
  };

  // ---- summary ----
  long judged = 0, infra = 0, runtime_judged = 0, showing = 0, agree_showing = 0;
  std::map<std::string, long> by_sym;
  std::string infra_reason;
  for (auto &r : rows) {
    if (!r.judged) continue;
    ++judged;
    by_sym[r.symptom]++;
    if (r.infra) {
      ++infra;
      if (infra_reason.empty())
        infra_reason = r.detail + (r.evidence.empty() ? "" : ": " + r.evidence);
    }
    if (r.runtime && !r.infra) ++runtime_judged;
    if (shows(r)) {
      ++showing;
      agree_showing += r.expected_match;
    }
  }
  h2("Summary");
  std::string s = std::to_string(rows.size()) + " mutants planned, " + std::to_string(judged) +
                  " judged, " + std::to_string(rows.size() - judged) +
                  " not yet judged. Machine: GPU " +
                  (store.meta("gpu_present") == "yes" ? "present" : "absent") + "; repeat " +
                  store.meta("repeat") + ", timeout " + store.meta("timeout_s") + " s.";
  p(s);
  if (refined)
    p(std::to_string(refined) +
      " mutants are judged against their injector's current expectation list, refined since "
      "the campaign planned them (the findings in fuzzer/inject/injectors.def).");
  std::string syms;
  for (auto &[k, v] : by_sym) syms += (syms.empty() ? "" : ", ") + k + " " + std::to_string(v);
  if (!syms.empty()) p("Observed classes: " + syms + ".");
  if (infra)
    p("**" + std::to_string(infra) +
      " judgments are infra-error** — the oracle could not judge them (" + infra_reason +
      "). They say nothing about the injected bugs; on a machine with the GPU, `wsfuzz ... "
      "--retry-infra` judges them again.");
  p("Triage agreement on the mutants that show anything (runtime, not pass, not infra-error): " +
    pct(agree_showing, showing) + " (target >= 95%).");

  // ---- confusion matrix ----
  h2("Confusion matrix (expected class x observed class)");
  p("Rows: the injector's first expected class (BUGS.md); columns: the oracle's observed class. "
    "`compiled` = an sm_100a "
    "mutant compiled and checked statically, never run. `agree` counts verdicts the injector's "
    "expectation list accepts.");
  static const std::vector<std::string> cols = {"pass",  "compile-error", "hang",
                                                "crash", "wrong",         "slow",
                                                "flaky", "infra-error",   "compiled"};
  std::map<std::string, std::map<std::string, long>> cm;
  std::map<std::string, long> cm_agree;
  for (auto &r : rows) {
    if (!r.judged) continue;
    cm[expClass(r)][r.symptom]++;
    cm_agree[expClass(r)] += r.expected_match;
  }
  std::vector<std::vector<std::string>> mrows;
  for (auto &[e, m] : cm) {
    std::vector<std::string> row = {e};
    long tot = 0;
    for (auto &c : cols) {
      row.push_back(std::to_string(m.count(c) ? m.at(c) : 0));
      tot += m.count(c) ? m.at(c) : 0;
    }
    row.push_back(std::to_string(cm_agree[e]) + "/" + std::to_string(tot));
    mrows.push_back(row);
  }
  std::vector<std::string> mh = {"expected \\ observed"};
  mh.insert(mh.end(), cols.begin(), cols.end());
  mh.push_back("agree");
  table(mh, mrows, true);

  // ---- per injector / per kernel ----
  auto rates = [&](const std::string &title2, auto key) {
    h2(title2);
    std::map<std::string, std::vector<const Row *>> g;
    for (auto &r : rows) g[key(r)].push_back(&r);
    std::vector<std::vector<std::string>> t;
    for (auto &[k, rs] : g) {
      long n = rs.size(), j = 0, inf = 0, det = 0, ag = 0, lat = 0;
      double ms = 0;
      for (auto *r : rs) {
        if (!r->judged) continue;
        ++j;
        ms += r->wall_ms;
        if (r->infra) {
          ++inf;
          continue;
        }
        bool d = r->runtime ? r->symptom != "pass" : r->static_check == 1;
        det += d;
        ag += r->expected_match;
        lat += r->runtime && r->symptom == "pass";
      }
      t.push_back({k, std::to_string(n), std::to_string(j), std::to_string(inf), pct(det, j - inf),
                   pct(ag, j - inf), std::to_string(lat), fmt(ms / 1000.0)});
    }
    table({title2.find("injector") != std::string::npos ? "injector" : "kernel", "mutants",
           "judged", "infra-error", "detected", "as expected", "latent", "time (s)"},
          t);
  };
  rates("Detection per injector", [](const Row &r) { return r.injector; });
  rates("Detection per kernel", [](const Row &r) { return r.kernel; });

  // ---- disagreements ----
  h2("Disagreements to explain");
  p("Mutants that showed something other than what the catalogue predicts. Each is either a real "
    "property of the bug (a "
    "finding: write it up) or an oracle defect (fix it).");
  std::vector<std::vector<std::string>> dis;
  for (auto &r : rows)
    if (shows(r) && !r.expected_match)
      dis.push_back({r.kernel, r.injector + " #" + std::to_string(r.site), r.note, r.expected_json,
                     r.detail, r.signature, explain(ex, r.kernel, r.injector, r.detail)});
  table({"kernel", "mutant", "site", "expected", "observed", "signature", "explanation"}, dis);

  // ---- latent + sanitizer ----
  h2("Latent mutants (bug present, observed pass)");
  std::map<std::string, std::pair<std::string, int>> san;  // hash -> (tool, saw)
  std::map<std::string, std::string> san_summary;
  {
    Q q(db, "SELECT hash, tool, saw, summary, output FROM sanitizer");
    while (q.step()) {
      san[q.t(0)] = {q.t(1), q.null(2) ? -1 : (int)q.n(2)};
      san_summary[q.t(0)] = q.t(3);
      std::string sum;  // read again from the tool's output with this build's parser
      if (auto saw = sanitizerSaw(q.t(4), &sum)) {
        san[q.t(0)].second = *saw;
        san_summary[q.t(0)] = sum;
      }
    }
  }
  std::vector<std::vector<std::string>> lat;
  long seen = 0, unseen = 0, notrun = 0;
  for (auto &r : rows) {
    if (!r.judged || !r.runtime || r.symptom != "pass") continue;
    auto *inj = inject::findInjector(r.injector);
    std::string tool = inj && *inj->sanitizer ? inj->sanitizer : "(none mapped)";
    std::string res = "not run";
    if (san.count(r.hash)) {
      int saw = san[r.hash].second;
      res = saw == 1   ? "SAW IT: " + san_summary[r.hash]
            : saw == 0 ? "nothing (" + san_summary[r.hash] + ")"
                       : "could not run: " + san_summary[r.hash];
      if (saw == 1)
        ++seen;
      else if (saw == 0)
        ++unseen;
      else
        ++notrun;
    } else {
      ++notrun;
    }
    lat.push_back({r.kernel, r.injector + " #" + std::to_string(r.site), r.note, tool, res,
                   explain(ex, r.kernel, r.injector, "pass")});
  }
  p(std::to_string(lat.size()) + " latent mutants: a tool saw " + std::to_string(seen) +
    ", nothing sees " + std::to_string(unseen) + ", no tool evidence for " +
    std::to_string(notrun) + ".");
  table({"kernel", "mutant", "site", "tool (seed 000)", "tool result", "explanation"}, lat);

  // ---- flaky ----
  h2("Flaky mutants");
  std::vector<std::vector<std::string>> fl;
  for (auto &r : rows) {
    if (!r.judged || r.symptom != "flaky") continue;
    std::string runs;
    Q q(db, "SELECT detail, wall_ms FROM runs WHERE hash = ? ORDER BY idx");
    sqlite3_bind_text(q.s, 1, r.hash.c_str(), -1, SQLITE_TRANSIENT);
    while (q.step()) runs += (runs.empty() ? "" : ", ") + q.t(0);
    fl.push_back({r.kernel, r.injector + " #" + std::to_string(r.site), r.note, runs});
  }
  table({"kernel", "mutant", "site", "runs"}, fl);

  // ---- site executed ----
  h2("Sites never executed");
  long unknown = 0;
  std::vector<std::vector<std::string>> ne;
  for (auto &r : rows) {
    if (!r.judged) continue;
    if (r.site_executed == -1) ++unknown;
    if (r.site_executed == 0)
      ne.push_back({r.kernel, r.injector + " #" + std::to_string(r.site), r.note, r.detail});
  }
  p(std::to_string(unknown) +
    " judged mutants have no execution evidence (unknown until the watchdog's progress counters "
    "report which sites ran).");
  table({"kernel", "mutant", "site", "observed"}, ne);

  // ---- Blackwell ----
  h2("Blackwell (sm_100a): compiled and checked statically");
  std::vector<std::vector<std::string>> bw;
  for (auto &r : rows)
    if (!r.runtime)
      bw.push_back({r.kernel, r.injector + " #" + std::to_string(r.site), r.note,
                    r.judged ? r.detail : "not judged",
                    r.static_check == 1   ? "confirmed"
                    : r.static_check == 0 ? "ABSENT"
                                          : "-",
                    r.static_why});
  table({"kernel", "mutant", "site", "build", "static check", "why"}, bw);

  // ---- reductions ----
  h2("Reductions: does the injected edit survive?");
  {
    long n = 0, ok = 0, kept = 0;
    std::vector<double>
        share;  // lines after / lines before, of the reductions that ended with a program
    std::vector<std::vector<std::string>> t;
    Q q(db,
        "SELECT r.hash, m.kernel, m.injector, m.site, r.ok, r.retained, r.how, r.lines_before, "
        "r.lines_after, r.wall_s, "
        "r.error, r.path FROM reductions r JOIN mutants m ON m.hash = r.hash ORDER BY m.kernel, "
        "m.injector, m.site");
    while (q.step()) {
      ++n;
      ok += q.n(4);
      kept += q.n(4) && q.n(5);
      if (q.n(4) && q.n(7) > 0) share.push_back((double)q.n(8) / (double)q.n(7));
      t.push_back({q.t(1), q.t(2) + " #" + std::to_string(q.n(3)),
                   std::to_string(q.n(7)) + " -> " + std::to_string(q.n(8)),
                   q.n(4) ? (q.n(5) ? "retained" : "LOST") : "failed", q.n(4) ? q.t(6) : q.t(10),
                   fmt(q.d(9), "%.0f")});
    }
    long budget = 0;
    for (auto &row : t)
      if (row[4].find("stopped at the budget") != std::string::npos) ++budget;
    p(n ? "Ground-truth retention: " + pct(kept, ok) +
              " of the reductions that ended with a program (target >= 95%; " +
              std::to_string(budget) +
              " of them stopped at --reduce-budget with their best program so far); " +
              std::to_string(n - ok) + " reductions failed."
        : "No reductions recorded (`--reduce`).");
    if (!share.empty()) {
      // A reduction that kept most of the program says little about retention: the edit had
      // nowhere to go (one H200 sample: 16 of 16 retained, all at 90% of the lines).
      std::vector<double> sorted = share;
      std::sort(sorted.begin(), sorted.end());
      long most = std::count_if(share.begin(), share.end(), [](double x) { return x > 0.5; });
      p("Their median size after reduction: " + fmt(100 * sorted[sorted.size() / 2], "%.0f") +
        "% of the mutant's lines; " + std::to_string(most) + " of " + std::to_string(share.size()) +
        " kept more than half of their lines, and their retention says little about the reducer.");
    }
    table({"kernel", "mutant", "lines", "edit", "how", "time (s)"}, t);
  }

  // ---- time ----
  h2("Time spent");
  {
    double build = 0, wall = 0;
    for (auto &r : rows) build += r.build_ms, wall += r.wall_ms;
    double session_s = 0;
    long session_judged = 0, sessions = 0;
    Q q(db, "SELECT wall_s, judged FROM sessions WHERE ended_at IS NOT NULL");
    while (q.step()) session_s += q.d(0), session_judged += q.n(1), ++sessions;
    p("Judging: " + fmt(wall / 1000.0) + " s of worker time, of which builds " +
      fmt(build / 1000.0) + " s. " + std::to_string(sessions) + " finished session(s): " +
      fmt(session_s) + " s wall for " + std::to_string(session_judged) + " mutants" +
      (session_s > 0 ? " = " + fmt(session_judged / (session_s / 60.0)) + " mutants/minute."
                     : "."));
    std::vector<std::vector<std::string>> t;
    Q k(db, "SELECT name, arch, baseline_detail, baseline_run_ms FROM kernels ORDER BY name");
    while (k.step()) t.push_back({k.t(0), k.t(1), k.t(2), fmt(k.d(3), "%.0f")});
    p("Reference baselines (the unmutated kernels, judged with the same options):");
    table({"kernel", "arch", "verdict", "median run (ms)"}, t);
  }

  ReportText rt;
  rt.markdown = renderMd(title, out);
  rt.html = renderHtml(title, out);
  return rt;
}

bool writeReport(const std::string &dbpath, const std::string &prefix, std::string *err,
                 const std::string &explain_path, const std::string &title) {
  std::vector<Explanation> ex;
  if (!explain_path.empty()) {
    auto t = readFile(explain_path);
    if (!t) {
      *err = explain_path + " cannot be read";
      return false;
    }
    ex = parseExplanations(*t);
  }
  try {
    Store store(dbpath);
    auto r = buildReport(store, "wsfuzz campaign report: " + (title.empty() ? dbpath : title), ex);
    if (!writeFileAtomic(prefix + ".md", r.markdown, err)) return false;
    if (!writeFileAtomic(prefix + ".html", r.html, err)) return false;
    return true;
  } catch (const std::exception &e) {
    *err = e.what();
    return false;
  }
}

}  // namespace wsr::fuzz
