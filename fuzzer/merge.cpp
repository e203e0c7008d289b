#include "merge.h"

#include "store.h"

#include "process.h"

#include <sqlite3.h>

#include <filesystem>
#include <set>
#include <stdexcept>
#include <unistd.h>

namespace fs = std::filesystem;

namespace wsr::fuzz {

namespace {

// One statement on the merged database, `src` attached; its rows to `row` when given.
void each(sqlite3 *db, const std::string &sql,
          const std::function<void(sqlite3_stmt *)> &row = nullptr) {
  sqlite3_stmt *s = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
    throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(db) + " in: " + sql);
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW)
    if (row) row(s);
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE)
    throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(db) + " in: " + sql);
}

std::string text(sqlite3_stmt *s, int i) {
  auto *p = sqlite3_column_text(s, i);
  return p ? reinterpret_cast<const char *>(p) : "";
}

void attach(sqlite3 *db, const std::string &path) {
  sqlite3_stmt *s = nullptr;
  // ATTACH takes its file name as an expression: bound, any path is taken as it is.
  if (sqlite3_prepare_v2(db, "ATTACH DATABASE ? AS src", -1, &s, nullptr) != SQLITE_OK)
    throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(db));
  sqlite3_bind_text(s, 1, path.c_str(), (int)path.size(), SQLITE_TRANSIENT);
  int rc = sqlite3_step(s);
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE)
    throw std::runtime_error(path +
                             " cannot be opened as a campaign database: " + sqlite3_errmsg(db));
}

// One input into the merged database, in one transaction.
void mergeOne(Store &out, const std::string &path, MergeResult *r) {
  sqlite3 *db = out.db();
  attach(db, path);
  try {
    out.begin();
    each(db,
         "INSERT OR IGNORE INTO main.mutants(hash, kernel, injector, site, note, line, edits, "
         "arch, expected, runtime, created_at, text) SELECT hash, kernel, injector, site, note, "
         "line, edits, arch, expected, runtime, created_at, text FROM src.mutants");
    each(db,
         "INSERT OR IGNORE INTO main.plans(kernel, kernel_hash, injector, sites) "
         "SELECT kernel, kernel_hash, injector, sites FROM src.plans");
    // Each shard judges the baselines of its own kernels; the first one stands for the campaign.
    each(db,
         "INSERT OR IGNORE INTO main.kernels(name, path, arch, baseline_detail, baseline_run_ms, "
         "baseline_json, judged_at) SELECT name, path, arch, baseline_detail, baseline_run_ms, "
         "baseline_json, judged_at FROM src.kernels WHERE baseline_detail IS NOT NULL");
    each(db,
         "SELECT s.hash, m.kernel, m.injector, m.site, v.detail, s.detail FROM src.verdicts s "
         "JOIN main.verdicts v ON v.hash = s.hash LEFT JOIN main.mutants m ON m.hash = s.hash",
         [&](sqlite3_stmt *s) {
           std::string a = text(s, 4), b = text(s, 5);
           r->judged_twice.push_back(text(s, 1) + " " + text(s, 2) + " #" + text(s, 3) + " (" +
                                     text(s, 0).substr(0, 12) + "): " + a + " kept, " +
                                     (a == b ? "the same" : b) + " in " + path);
         });
    // The verdicts the merged database does not have yet, with their runs and judge_log lines.
    each(db, "DROP TABLE IF EXISTS temp.taken");
    each(db,
         "CREATE TEMP TABLE taken AS SELECT hash FROM src.verdicts WHERE hash NOT IN "
         "(SELECT hash FROM main.verdicts)");
    each(db,
         "INSERT INTO main.verdicts(hash, symptom, detail, signature, expected_match, infra, "
         "site_executed, static_check, static_why, verdict_json, gpu, build_ms, wall_ms, "
         "judged_at) SELECT hash, symptom, detail, signature, expected_match, infra, "
         "site_executed, static_check, static_why, verdict_json, gpu, build_ms, wall_ms, "
         "judged_at FROM src.verdicts WHERE hash IN (SELECT hash FROM temp.taken)");
    each(db,
         "INSERT OR IGNORE INTO main.runs(hash, idx, symptom, detail, signature, exit_code, "
         "signal, timed_out, wall_ms) SELECT hash, idx, symptom, detail, signature, exit_code, "
         "signal, timed_out, wall_ms FROM src.runs WHERE hash IN (SELECT hash FROM temp.taken)");
    each(db,
         "INSERT INTO main.judge_log(hash, pid, judged_at) SELECT hash, pid, judged_at FROM "
         "src.judge_log WHERE hash IN (SELECT hash FROM temp.taken)");
    for (const char *t : {"sanitizer(hash, tool, saw, summary, output, judged_at)",
                          "corpus(hash, kernel, injector, signature, path)",
                          "reductions(hash, ok, retained, how, path, error, lines_before, "
                          "lines_after, wall_s)"}) {
      std::string spec = t;
      std::string name = spec.substr(0, spec.find('(')), cols = spec.substr(spec.find('('));
      std::string plain = cols.substr(1, cols.size() - 2);
      each(db, "INSERT OR IGNORE INTO main." + spec + " SELECT " + plain + " FROM src." + name +
                   " WHERE hash IN (SELECT hash FROM temp.taken)");
    }
    each(db,
         "INSERT INTO main.sessions(command, pid, shard, started_at, ended_at, wall_s, judged) "
         "SELECT command, pid, shard, started_at, ended_at, wall_s, judged FROM src.sessions "
         "ORDER BY id");
    each(db,
         "SELECT s.key, m.value, s.value FROM src.meta s JOIN main.meta m ON m.key = s.key "
         "WHERE s.value IS NOT m.value",
         [&](sqlite3_stmt *s) {
           r->notes.push_back(path + " has " + text(s, 0) + " = " + text(s, 2) + ", the first " +
                              "input " + text(s, 1) + ": shards of one campaign agree on it");
         });
    each(db, "INSERT OR IGNORE INTO main.meta(key, value) SELECT key, value FROM src.meta");
    each(db, "DROP TABLE temp.taken");
    out.commit();
  } catch (...) {
    out.rollback();
    sqlite3_exec(db, "DETACH DATABASE src", nullptr, nullptr, nullptr);
    throw;
  }
  each(db, "DETACH DATABASE src");
}

}  // namespace

bool mergeCampaigns(const std::string &out, const std::vector<std::string> &inputs, MergeResult *r,
                    std::string *err) {
  std::error_code ec;
  if (inputs.empty()) {
    *err = "nothing to merge: give the shard databases (or --dir SHARED)";
    return false;
  }
  if (fs::exists(out, ec)) {
    *err = out + " already exists; merge into a new file";
    return false;
  }
  std::set<std::string> seen;
  for (auto &in : inputs) {
    if (!fs::exists(in, ec)) {
      *err = in + " does not exist";
      return false;
    }
    if (std::string e = Store::checkExisting(in); !e.empty()) {
      *err = e;
      return false;
    }
    auto canon = fs::weakly_canonical(in, ec).string();
    if (!seen.insert(canon).second) {
      *err = in + " is given twice";
      return false;
    }
    if (canon == fs::weakly_canonical(out, ec).string()) {
      *err = "the output " + out + " is one of the inputs";
      return false;
    }
  }
  const std::string tmp = out + ".merging." + std::to_string(::getpid());
  auto drop = [&] {
    for (const char *sfx : {"", "-wal", "-shm", "-journal"}) fs::remove(tmp + sfx, ec);
  };
  drop();
  try {
    {
      Store st(tmp);
      for (auto &in : inputs) mergeOne(st, in, r);
      std::string from;
      for (auto &in : inputs) from += (from.empty() ? "" : " ") + in;
      st.setMeta("merged_from", from);
      each(st.db(), "SELECT COUNT(*), (SELECT COUNT(*) FROM verdicts) FROM mutants",
           [&](sqlite3_stmt *s) {
             r->mutants = sqlite3_column_int64(s, 0);
             r->verdicts = sqlite3_column_int64(s, 1);
           });
      // The merged file stands alone: its write-ahead log folded in before it is renamed.
      st.exec("PRAGMA wal_checkpoint(TRUNCATE);");
    }
    fs::rename(tmp, out, ec);
    if (ec) throw std::runtime_error("cannot write " + out + ": " + ec.message());
  } catch (const std::exception &e) {
    drop();
    *err = e.what();
    return false;
  }
  for (const char *sfx : {"-wal", "-shm"}) fs::remove(tmp + sfx, ec);
  return true;
}

}  // namespace wsr::fuzz
