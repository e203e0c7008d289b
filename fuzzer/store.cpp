#include "store.h"

#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <ctime>
#include <stdexcept>
#include <unistd.h>

namespace wsr::fuzz {

static const char *kSchema = R"SQL(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS sessions(
  id INTEGER PRIMARY KEY AUTOINCREMENT, command TEXT, pid INTEGER, shard TEXT,
  started_at TEXT, ended_at TEXT, wall_s REAL, judged INTEGER);
CREATE TABLE IF NOT EXISTS kernels(
  name TEXT PRIMARY KEY, path TEXT, arch TEXT,
  baseline_detail TEXT, baseline_run_ms REAL, baseline_json TEXT, judged_at TEXT);
CREATE TABLE IF NOT EXISTS mutants(
  hash TEXT PRIMARY KEY, kernel TEXT NOT NULL, injector TEXT NOT NULL, site INTEGER NOT NULL,
  note TEXT, line INTEGER, edits TEXT, arch TEXT, expected TEXT, runtime INTEGER, created_at TEXT, text TEXT);
CREATE TABLE IF NOT EXISTS plans(kernel TEXT, kernel_hash TEXT, injector TEXT, sites INTEGER, PRIMARY KEY(kernel, kernel_hash, injector));
CREATE TABLE IF NOT EXISTS verdicts(
  hash TEXT PRIMARY KEY REFERENCES mutants(hash),
  symptom TEXT, detail TEXT, signature TEXT, expected_match INTEGER, infra INTEGER,
  site_executed INTEGER, static_check INTEGER, static_why TEXT,
  verdict_json TEXT, gpu TEXT, build_ms REAL, wall_ms REAL, judged_at TEXT);
CREATE TABLE IF NOT EXISTS runs(
  hash TEXT, idx INTEGER, symptom TEXT, detail TEXT, signature TEXT,
  exit_code INTEGER, signal INTEGER, timed_out INTEGER, wall_ms REAL, PRIMARY KEY(hash, idx));
CREATE TABLE IF NOT EXISTS judge_log(hash TEXT, pid INTEGER, judged_at TEXT);
CREATE TABLE IF NOT EXISTS sanitizer(
  hash TEXT PRIMARY KEY, tool TEXT, saw INTEGER, summary TEXT, output TEXT, judged_at TEXT);
CREATE TABLE IF NOT EXISTS corpus(
  hash TEXT PRIMARY KEY, kernel TEXT, injector TEXT, signature TEXT, path TEXT);
CREATE TABLE IF NOT EXISTS reductions(
  hash TEXT PRIMARY KEY, ok INTEGER, retained INTEGER, how TEXT, path TEXT, error TEXT,
  lines_before INTEGER, lines_after INTEGER, wall_s REAL);
)SQL";

std::string nowIso() {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buf[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {
// A prepared statement with positional binds, finalized on scope exit.
struct Stmt {
  sqlite3 *db;
  sqlite3_stmt *s = nullptr;
  int n = 0;
  Stmt(sqlite3 *d, const char *sql) : db(d) {
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK)
      throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(db) + " in: " + sql);
  }
  ~Stmt() { sqlite3_finalize(s); }
  Stmt &operator<<(const std::string &v) {
    sqlite3_bind_text(s, ++n, v.c_str(), (int)v.size(), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt &operator<<(const char *v) { return *this << std::string(v); }
  Stmt &operator<<(long long v) {
    sqlite3_bind_int64(s, ++n, v);
    return *this;
  }
  Stmt &operator<<(int v) { return *this << (long long)v; }
  Stmt &operator<<(bool v) { return *this << (long long)v; }
  Stmt &operator<<(double v) {
    sqlite3_bind_double(s, ++n, v);
    return *this;
  }
  Stmt &operator<<(std::optional<bool> v) {
    if (v) return *this << (long long)*v;
    sqlite3_bind_null(s, ++n);
    return *this;
  }
  bool step() {
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(db));
  }
  std::string text(int i) {
    auto *p = sqlite3_column_text(s, i);
    return p ? reinterpret_cast<const char *>(p) : "";
  }
  long long integer(int i) { return sqlite3_column_int64(s, i); }
  double real(int i) { return sqlite3_column_double(s, i); }
  bool null(int i) { return sqlite3_column_type(s, i) == SQLITE_NULL; }
  std::optional<bool> optBool(int i) {
    return null(i) ? std::nullopt : std::optional<bool>(integer(i) != 0);
  }
};
}  // namespace

std::string Store::checkExisting(const std::string &path) {
  std::error_code ec;
  if (path == ":memory:" || !std::filesystem::exists(path, ec)) return "";
  sqlite3 *h = nullptr;
  std::string err;
  if (sqlite3_open_v2(path.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    err = path + " cannot be opened as a campaign database";
  } else {
    // Any query reads the header: a file that is not SQLite fails here.
    sqlite3_stmt *st = nullptr;
    int tables = 0, ours = 0;
    if (sqlite3_prepare_v2(h, "SELECT name FROM sqlite_master WHERE type = 'table'", -1, &st,
                           nullptr) != SQLITE_OK) {
      err = path + " is not a SQLite database; give another --db";
    } else {
      int rc;
      while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        ++tables;
        std::string name = reinterpret_cast<const char *>(sqlite3_column_text(st, 0));
        if (name == "mutants" || name == "verdicts") ++ours;
      }
      if (rc != SQLITE_DONE) err = path + " is not a SQLite database; give another --db";
      else if (tables > 0 && ours < 2)
        err = path + " is a SQLite database of something else (no wsfuzz tables); give another --db";
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(h);
  return err;
}

Store::Store(const std::string &path) {
  // Nothing is written into a file that is not a campaign of ours.
  if (std::string e = checkExisting(path); !e.empty()) throw std::runtime_error(e);
  if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
    std::string e = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw std::runtime_error("cannot open the campaign database " + path + ": " + e);
  }
  sqlite3_busy_timeout(db_, 60000);  // shards of one campaign may share the file
  exec("PRAGMA journal_mode=WAL;");
  exec("PRAGMA synchronous=NORMAL;");
  exec(kSchema);
}

Store::~Store() { sqlite3_close(db_); }

void Store::exec(const std::string &sql) {
  char *err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string e = err ? err : "?";
    sqlite3_free(err);
    throw std::runtime_error("sqlite: " + e);
  }
}

void Store::begin() { exec("BEGIN IMMEDIATE;"); }
void Store::commit() { exec("COMMIT;"); }
void Store::rollback() { sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr); }

void Store::setMeta(const std::string &k, const std::string &v) {
  Stmt s(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)");
  s << k << v;
  s.step();
}

std::string Store::meta(const std::string &k) {
  Stmt s(db_, "SELECT value FROM meta WHERE key = ?");
  s << k;
  return s.step() ? s.text(0) : "";
}

void Store::addMutants(const std::vector<MutantRow> &rows) {
  begin();
  try {
    for (auto &m : rows) {
      Stmt s(db_,
             "INSERT OR IGNORE INTO mutants(hash, kernel, injector, site, note, line, edits, arch, "
             "expected, runtime, created_at, text) "
             "VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
      s << m.hash << m.kernel << m.injector << m.site << m.note << m.line << m.edits_json << m.arch
        << m.expected_json << m.runtime << nowIso() << m.text;
      s.step();
    }
    commit();
  } catch (...) {
    rollback();
    throw;
  }
}

static MutantRow readMutant(Stmt &s) {
  MutantRow m;
  m.hash = s.text(0);
  m.kernel = s.text(1);
  m.injector = s.text(2);
  m.site = (int)s.integer(3);
  m.note = s.text(4);
  m.line = (int)s.integer(5);
  m.edits_json = s.text(6);
  m.arch = s.text(7);
  m.expected_json = s.text(8);
  m.runtime = s.integer(9) != 0;
  m.text = s.text(10);
  return m;
}

std::vector<MutantRow> Store::mutants() {
  Stmt s(db_,
         "SELECT hash, kernel, injector, site, note, line, edits, arch, expected, runtime, text "
         "FROM mutants "
         "ORDER BY kernel, injector, site");
  std::vector<MutantRow> out;
  while (s.step()) out.push_back(readMutant(s));
  return out;
}

std::optional<MutantRow> Store::mutant(const std::string &hash) {
  Stmt s(db_,
         "SELECT hash, kernel, injector, site, note, line, edits, arch, expected, runtime, text "
         "FROM mutants WHERE hash = ?");
  s << hash;
  if (!s.step()) return std::nullopt;
  return readMutant(s);
}

bool Store::hasVerdict(const std::string &hash) {
  Stmt s(db_, "SELECT 1 FROM verdicts WHERE hash = ?");
  s << hash;
  return s.step();
}

bool Store::recordVerdict(const VerdictRow &v) {
  begin();
  try {
    {
      Stmt q(db_, "SELECT 1 FROM verdicts WHERE hash = ?");
      q << v.hash;
      if (q.step()) {
        rollback();
        return false;
      }
    }
    Stmt s(db_,
           "INSERT INTO verdicts(hash, symptom, detail, signature, expected_match, infra, "
           "site_executed, static_check, "
           "static_why, verdict_json, gpu, build_ms, wall_ms, judged_at) "
           "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    s << v.hash << v.symptom << v.detail << v.signature << v.expected_match << v.infra
      << v.site_executed << v.static_check << v.static_why << v.verdict_json << v.gpu << v.build_ms
      << v.wall_ms << nowIso();
    s.step();
    for (auto &r : v.runs) {
      Stmt q(db_,
             "INSERT OR REPLACE INTO runs(hash, idx, symptom, detail, signature, exit_code, "
             "signal, timed_out, wall_ms) "
             "VALUES(?,?,?,?,?,?,?,?,?)");
      q << v.hash << r.idx << r.symptom << r.detail << r.signature << r.exit_code << r.signal
        << r.timed_out << r.wall_ms;
      q.step();
    }
    Stmt l(db_, "INSERT INTO judge_log(hash, pid, judged_at) VALUES(?,?,?)");
    l << v.hash << (long long)::getpid() << nowIso();
    l.step();
    commit();
    return true;
  } catch (...) {
    rollback();
    throw;
  }
}

std::optional<VerdictRow> Store::verdict(const std::string &hash) {
  Stmt s(db_,
         "SELECT symptom, detail, signature, expected_match, infra, site_executed, static_check, "
         "static_why, "
         "verdict_json, gpu, build_ms, wall_ms FROM verdicts WHERE hash = ?");
  s << hash;
  if (!s.step()) return std::nullopt;
  VerdictRow v;
  v.hash = hash;
  v.symptom = s.text(0);
  v.detail = s.text(1);
  v.signature = s.text(2);
  v.expected_match = s.integer(3) != 0;
  v.infra = s.integer(4) != 0;
  v.site_executed = s.optBool(5);
  v.static_check = s.optBool(6);
  v.static_why = s.text(7);
  v.verdict_json = s.text(8);
  v.gpu = s.text(9);
  v.build_ms = s.real(10);
  v.wall_ms = s.real(11);
  Stmt r(db_,
         "SELECT idx, symptom, detail, signature, exit_code, signal, timed_out, wall_ms FROM runs "
         "WHERE hash = ? ORDER BY idx");
  r << hash;
  while (r.step())
    v.runs.push_back({(int)r.integer(0), r.text(1), r.text(2), r.text(3), (int)r.integer(4),
                      (int)r.integer(5), r.integer(6) != 0, r.real(7)});
  return v;
}

int Store::deleteInfraVerdicts() {
  begin();
  try {
    exec("DELETE FROM runs WHERE hash IN (SELECT hash FROM verdicts WHERE infra = 1);");
    exec("DELETE FROM verdicts WHERE infra = 1;");
    int n = sqlite3_changes(db_);
    commit();
    return n;
  } catch (...) {
    rollback();
    throw;
  }
}

bool Store::hasBaseline(const std::string &kernel) {
  Stmt s(db_, "SELECT 1 FROM kernels WHERE name = ? AND baseline_detail IS NOT NULL");
  s << kernel;
  return s.step();
}

void Store::recordBaseline(const std::string &kernel, const std::string &path,
                           const std::string &arch, const std::string &detail, double ms,
                           const std::string &json) {
  Stmt s(db_,
         "INSERT OR REPLACE INTO kernels(name, path, arch, baseline_detail, baseline_run_ms, "
         "baseline_json, judged_at) "
         "VALUES(?,?,?,?,?,?,?)");
  s << kernel << path << arch << detail << ms << json << nowIso();
  s.step();
}

std::optional<double> Store::baselineMs(const std::string &kernel) {
  Stmt s(db_, "SELECT baseline_run_ms, baseline_detail FROM kernels WHERE name = ?");
  s << kernel;
  if (!s.step() || s.null(0) || s.text(1) != "pass") return std::nullopt;
  return s.real(0);
}

bool Store::hasSanitizer(const std::string &hash) {
  Stmt s(db_, "SELECT 1 FROM sanitizer WHERE hash = ?");
  s << hash;
  return s.step();
}

void Store::recordSanitizer(const SanitizerRow &r) {
  Stmt s(db_,
         "INSERT OR REPLACE INTO sanitizer(hash, tool, saw, summary, output, judged_at) "
         "VALUES(?,?,?,?,?,?)");
  s << r.hash << r.tool << r.saw << r.summary << r.output << nowIso();
  s.step();
}

bool Store::signatureInCorpus(const std::string &kernel, const std::string &injector,
                              const std::string &sig) {
  Stmt s(db_, "SELECT 1 FROM corpus WHERE kernel = ? AND injector = ? AND signature = ?");
  s << kernel << injector << sig;
  return s.step();
}

void Store::recordCorpus(const std::string &hash, const std::string &kernel,
                         const std::string &injector, const std::string &sig,
                         const std::string &path) {
  Stmt s(
      db_,
      "INSERT OR REPLACE INTO corpus(hash, kernel, injector, signature, path) VALUES(?,?,?,?,?)");
  s << hash << kernel << injector << sig << path;
  s.step();
}

bool Store::hasReduction(const std::string &hash) {
  Stmt s(db_, "SELECT 1 FROM reductions WHERE hash = ?");
  s << hash;
  return s.step();
}

void Store::recordReduction(const ReductionRow &r) {
  Stmt s(db_,
         "INSERT OR REPLACE INTO reductions(hash, ok, retained, how, path, error, lines_before, "
         "lines_after, wall_s) "
         "VALUES(?,?,?,?,?,?,?,?,?)");
  s << r.hash << r.ok << r.retained << r.how << r.path << r.error << r.lines_before << r.lines_after
    << r.wall_s;
  s.step();
}

bool Store::planned(const std::string &kernel, const std::string &khash,
                    const std::string &injector) {
  Stmt s(db_, "SELECT 1 FROM plans WHERE kernel = ? AND kernel_hash = ? AND injector = ?");
  s << kernel << khash << injector;
  return s.step();
}

void Store::recordPlan(const std::string &kernel, const std::string &khash,
                       const std::string &injector, const std::vector<MutantRow> &rows) {
  addMutants(rows);
  Stmt s(db_, "INSERT OR REPLACE INTO plans(kernel, kernel_hash, injector, sites) VALUES(?,?,?,?)");
  s << kernel << khash << injector << (int)rows.size();
  s.step();
}

std::vector<MutantRow> Store::mutantsOf(const std::string &kernel, const std::string &injector) {
  Stmt s(db_,
         "SELECT hash, kernel, injector, site, note, line, edits, arch, expected, runtime, text "
         "FROM mutants "
         "WHERE kernel = ? AND injector = ? ORDER BY site");
  s << kernel << injector;
  std::vector<MutantRow> out;
  while (s.step()) out.push_back(readMutant(s));
  return out;
}

long Store::startSession(const std::string &command, int i, int n) {
  Stmt s(db_, "INSERT INTO sessions(command, pid, shard, started_at) VALUES(?,?,?,?)");
  s << command << (long long)::getpid() << (std::to_string(i) + "/" + std::to_string(n))
    << nowIso();
  s.step();
  return (long)sqlite3_last_insert_rowid(db_);
}

void Store::endSession(long id, long judged) {
  Stmt s(db_,
         "UPDATE sessions SET ended_at = ?, judged = ?, "
         "wall_s = (julianday(?) - julianday(started_at)) * 86400.0 WHERE id = ?");
  std::string now = nowIso();
  s << now << (long long)judged << now << (long long)id;
  s.step();
}

}  // namespace wsr::fuzz
