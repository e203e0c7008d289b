#include "slurm.h"

#include "process.h"

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
namespace json = llvm::json;

namespace wsr::fuzz::slurm {

namespace {

// ---- small helpers ---------------------------------------------------------------------------
std::string shq(const std::string &s) {  // one shell word
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

// The line of a Slurm client's output that says why: its last, less the client's prefix.
std::string reasonLine(const std::string &s) {
  std::string t = s;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  auto nl = t.find_last_of('\n');
  t = nl == std::string::npos ? t : t.substr(nl + 1);
  for (const char *p : {"sbatch: error: ", "squeue: error: ", "sinfo: error: ", "scancel: error: ",
                        "scontrol: error: ", "sacct: error: "})
    if (t.rfind(p, 0) == 0) t = t.substr(std::string(p).size());
  return t;
}

std::vector<std::string> lines(const std::string &s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::string lower(std::string s) {
  for (auto &c : s) c = (char)std::tolower((unsigned char)c);
  return s;
}

// Slurm's clients, run as processes (no shell): the output and the exit status.
RunRecord slurmTool(const std::vector<std::string> &argv, const std::string &cwd = "") {
  RunOptions ro;
  ro.timeout_s = 120;
  ro.workdir = cwd;
  return runProcess(argv, ro);
}

bool ran(const RunRecord &r) {
  return !r.spawn_failed && !r.timed_out && r.signal == 0 && r.exit_code == 0;
}

std::string failure(const RunRecord &r) {
  if (r.spawn_failed) return r.spawn_error;
  if (r.timed_out) return "no answer in " + std::to_string((int)r.timeout_s) + " s";
  std::string l = reasonLine(r.err.empty() ? r.out : r.err);
  return l.empty() ? "exit status " + std::to_string(r.exit_code) : l;
}

std::string missingTool(const std::string &name) {
  return name +
         " was not found on PATH; install Slurm's client (slurm-client) or run the campaign "
         "locally without `slurm`";
}

// "" when `dir` (or, when it does not exist yet, the folder it would be made in) takes a new file;
// else the sentence. The probe file is removed at once.
std::string checkWritable(const std::string &dir) {
  std::error_code ec;
  fs::path at = dir;
  while (!at.empty() && !fs::exists(at, ec)) at = at.parent_path();
  if (at.empty()) at = ".";
  if (!fs::is_directory(at, ec))
    return at.string() + " is not a directory; --dir names the shared directory of the campaign";
  std::string probe = (at / (".wsfuzz-probe." + std::to_string(::getpid()))).string();
  int fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
  if (fd < 0)
    return dir + " cannot be written (" + std::strerror(errno) +
           "); the tasks write their shard databases there: give a shared directory you can "
           "write";
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

std::string shardPath(const std::string &dir, int i) {
  return (fs::path(dir) / ("shard-" + std::to_string(i) + ".sqlite")).string();
}

std::string hostName() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

// ---- campaign.json ---------------------------------------------------------------------------
struct Job {
  std::string id;
  std::vector<int> tasks;
  std::string at;
};

struct Campaign {
  std::string dir, name, wsfuzz, cwd, script, partition, gres, time_limit, host, submitted_at;
  int shards = 0, array_limit = 0, cpus_per_task = 0;
  bool reduce = false;
  std::vector<std::string> task_args, sbatch_args;
  std::vector<PlanKey> plan;
  std::vector<Job> jobs;
};

std::string campaignFile(const std::string &dir) {
  return (fs::path(dir) / "campaign.json").string();
}

json::Value toJson(const Campaign &c) {
  json::Array args, sargs, plan, jobs;
  for (auto &a : c.task_args) args.push_back(a);
  for (auto &a : c.sbatch_args) sargs.push_back(a);
  for (auto &k : c.plan) plan.push_back(json::Array{k.kernel, k.kernel_hash, k.injector});
  for (auto &j : c.jobs) {
    json::Array t;
    for (int i : j.tasks) t.push_back(i);
    jobs.push_back(json::Object{{"id", j.id}, {"tasks", std::move(t)}, {"submitted_at", j.at}});
  }
  return json::Object{{"format", "wsfuzz-slurm-campaign-1"},
                      {"job_name", c.name},
                      {"shards", c.shards},
                      {"wsfuzz", c.wsfuzz},
                      {"cwd", c.cwd},
                      {"script", c.script},
                      {"task_args", std::move(args)},
                      {"sbatch_args", std::move(sargs)},
                      {"partition", c.partition},
                      {"gres", c.gres},
                      {"time", c.time_limit},
                      {"array_limit", c.array_limit},
                      {"cpus_per_task", c.cpus_per_task},
                      {"reduce", c.reduce},
                      {"plan", std::move(plan)},
                      {"submitted_from", c.host},
                      {"submitted_at", c.submitted_at},
                      {"jobs", std::move(jobs)}};
}

bool saveCampaign(const Campaign &c, std::string *err) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("{0:2}", toJson(c)) << "\n";
  return writeFileAtomic(campaignFile(c.dir), os.str(), err);
}

// "" or the sentence.
std::string loadCampaign(const std::string &dir, Campaign *c) {
  std::error_code ec;
  std::string f = campaignFile(dir);
  if (!fs::exists(f, ec))
    return dir + " holds no campaign (no campaign.json); `wsfuzz slurm submit --dir " + dir +
           " ...` starts one";
  auto text = readFile(f);
  if (!text) return f + " cannot be read";
  auto v = json::parse(*text);
  if (!v) {
    llvm::consumeError(v.takeError());
    return f + " is not JSON; it was not written by `wsfuzz slurm submit`";
  }
  auto *o = v->getAsObject();
  if (!o || o->getString("format").value_or("") != "wsfuzz-slurm-campaign-1")
    return f + " is not a wsfuzz campaign description (no format wsfuzz-slurm-campaign-1)";
  auto str = [&](const char *k) { return o->getString(k).value_or("").str(); };
  c->dir = dir;
  c->name = str("job_name");
  c->wsfuzz = str("wsfuzz");
  c->cwd = str("cwd");
  c->script = str("script");
  c->partition = str("partition");
  c->gres = str("gres");
  c->time_limit = str("time");
  c->host = str("submitted_from");
  c->submitted_at = str("submitted_at");
  c->shards = (int)o->getInteger("shards").value_or(0);
  c->array_limit = (int)o->getInteger("array_limit").value_or(0);
  c->cpus_per_task = (int)o->getInteger("cpus_per_task").value_or(0);
  c->reduce = o->getBoolean("reduce").value_or(false);
  if (auto *a = o->getArray("task_args"))
    for (auto &x : *a) c->task_args.push_back(x.getAsString().value_or("").str());
  if (auto *a = o->getArray("sbatch_args"))
    for (auto &x : *a) c->sbatch_args.push_back(x.getAsString().value_or("").str());
  if (auto *a = o->getArray("plan"))
    for (auto &x : *a)
      if (auto *k = x.getAsArray(); k && k->size() == 3)
        c->plan.push_back({(*k)[0].getAsString().value_or("").str(),
                           (*k)[1].getAsString().value_or("").str(),
                           (*k)[2].getAsString().value_or("").str()});
  if (auto *a = o->getArray("jobs"))
    for (auto &x : *a)
      if (auto *j = x.getAsObject()) {
        Job job;
        job.id = j->getString("id").value_or("").str();
        job.at = j->getString("submitted_at").value_or("").str();
        if (auto *t = j->getArray("tasks"))
          for (auto &i : *t) job.tasks.push_back((int)i.getAsInteger().value_or(-1));
        c->jobs.push_back(job);
      }
  if (c->shards < 1 || c->name.empty() || c->script.empty())
    return f + " lacks the shard count, the job name or the script";
  return "";
}

// ---- the shard databases ---------------------------------------------------------------------
struct Shard {
  bool exists = false;
  bool planned = false;  // every plan key of the campaign is in its plans table
  long total = -1;       // its mutants (-1: not known yet)
  long judged = 0;
  long to_reduce = 0, reduced = 0;
  long sessions = 0;
  std::map<std::string, long> details;
  long expected = 0, unexpected = 0, infra = 0;
  std::string error;
  bool complete(bool reduce) const {
    return planned && total >= 0 && judged == total && (!reduce || reduced == to_reduce);
  }
};

struct Q {
  sqlite3_stmt *s = nullptr;
  Q(sqlite3 *db, const char *sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) s = nullptr;
  }
  ~Q() { sqlite3_finalize(s); }
  bool ok() const { return s != nullptr; }
  bool step() { return s && sqlite3_step(s) == SQLITE_ROW; }
  std::string t(int i) {
    auto *p = sqlite3_column_text(s, i);
    return p ? reinterpret_cast<const char *>(p) : "";
  }
  long long n(int i) { return sqlite3_column_int64(s, i); }
  bool null(int i) { return sqlite3_column_type(s, i) == SQLITE_NULL; }
};

// A running task writes its database as this reads it: read-only, the WAL lets both go on.
Shard readShard(const Campaign &c, int i) {
  Shard sh;
  std::string path = shardPath(c.dir, i);
  std::error_code ec;
  if (!fs::exists(path, ec)) return sh;
  sh.exists = true;
  sqlite3 *db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sh.error = path + " cannot be opened";
    sqlite3_close(db);
    return sh;
  }
  sqlite3_busy_timeout(db, 10000);
  std::set<std::tuple<std::string, std::string, std::string>> have;
  {
    Q q(db, "SELECT kernel, kernel_hash, injector FROM plans");
    while (q.step()) have.insert({q.t(0), q.t(1), q.t(2)});
  }
  std::set<std::pair<std::string, std::string>> pairs;
  sh.planned = !c.plan.empty();
  for (auto &k : c.plan) {
    pairs.insert({k.kernel, k.injector});
    if (!have.count({k.kernel, k.kernel_hash, k.injector})) sh.planned = false;
  }
  {
    Q s(db, "SELECT COUNT(*) FROM sessions");
    if (s.step()) sh.sessions = (long)s.n(0);
  }
  Q q(db,
      "SELECT m.hash, m.kernel, m.injector, m.runtime, v.hash IS NOT NULL, v.symptom, v.detail, "
      "v.expected_match, v.infra, EXISTS(SELECT 1 FROM reductions r WHERE r.hash = m.hash) "
      "FROM mutants m LEFT JOIN verdicts v ON v.hash = m.hash");
  if (!q.ok()) {
    sh.planned = false;  // the task has not written its schema yet
    sqlite3_close(db);
    return sh;
  }
  long total = 0;
  while (q.step()) {
    std::string hash = q.t(0);
    if (!pairs.count({q.t(1), q.t(2)}) || hash.size() < 15 || !inShard(hash, i, c.shards)) continue;
    ++total;
    if (!q.n(4)) continue;
    ++sh.judged;
    std::string sym = q.t(5), detail = q.t(6);
    sh.details[detail.empty() ? sym : detail]++;
    bool infra = q.n(8) != 0;
    if (infra)
      ++sh.infra;
    else if (q.n(7))
      ++sh.expected;
    else
      ++sh.unexpected;
    // What the campaign reduces under --reduce (runCampaign): detected runtime mutants.
    if (q.n(3) && !infra && sym != "pass" && sym != "flaky" && sym != "slow") {
      ++sh.to_reduce;
      sh.reduced += q.n(9) != 0;
    }
  }
  if (sh.planned) sh.total = total;
  sqlite3_close(db);
  return sh;
}

// ---- what Slurm says -------------------------------------------------------------------------
struct Queued {
  std::string job, state, node, reason;  // job: "123_4"
};

// The campaign's tasks in the queue (pending, running, completing), by task index: found by the
// job name, so that a script submitted by hand counts too. False with the reason in *err when
// squeue cannot answer.
bool queued(const Campaign &c, std::map<int, Queued> *out, std::string *err) {
  auto r = slurmTool({"squeue", "-h", "-r", "--name=" + c.name, "-o", "%i|%K|%T|%N|%r"});
  if (!ran(r)) {
    *err = "squeue: " + failure(r);
    return false;
  }
  for (auto &l : lines(r.out)) {
    auto f = split(l, '|');
    if (f.size() < 5) continue;
    char *end = nullptr;
    long i = std::strtol(f[1].c_str(), &end, 10);
    if (end == f[1].c_str() || *end) continue;
    (*out)[(int)i] = {f[0], lower(f[2]), f[3], f[4]};
  }
  return true;
}

struct Ended {
  std::string state, exit_code;
};

// How the tasks of `job` that left the queue ended: sacct where the cluster keeps accounting,
// else scontrol, which knows a job for MinJobAge after it ends.
std::map<int, Ended> ended(const std::string &job) {
  std::map<int, Ended> out;
  auto r = slurmTool({"sacct", "-n", "-P", "-X", "-j", job, "-o", "JobID,State,ExitCode"});
  if (ran(r)) {
    for (auto &l : lines(r.out)) {
      auto f = split(l, '|');
      auto us = f[0].find('_');
      if (f.size() < 3 || us == std::string::npos) continue;
      char *end = nullptr;
      long i = std::strtol(f[0].c_str() + us + 1, &end, 10);
      if (*end) continue;  // a pending range "123_[4-7]"
      out[(int)i] = {lower(split(f[1], ' ')[0]), f[2]};
    }
    if (!out.empty()) return out;
  }
  r = slurmTool({"scontrol", "show", "job", "-o", job});
  if (!ran(r)) return out;
  for (auto &l : lines(r.out)) {
    std::map<std::string, std::string> kv;
    for (auto &tok : split(l, ' ')) {
      auto eq = tok.find('=');
      if (eq != std::string::npos) kv[tok.substr(0, eq)] = tok.substr(eq + 1);
    }
    char *end = nullptr;
    const std::string &t = kv["ArrayTaskId"];
    long i = std::strtol(t.c_str(), &end, 10);
    if (t.empty() || *end) continue;
    out[(int)i] = {lower(kv["JobState"]), kv["ExitCode"]};
  }
  return out;
}

struct TaskView {
  int i = 0;
  std::string state;  // pending | running | done | failed
  std::string job, node, why;
  Shard shard;
};

struct View {
  std::vector<TaskView> tasks;
  std::string squeue_error;
  long judged = 0, total = 0, expected = 0, unexpected = 0, infra = 0;
  bool total_known = true;
  std::map<std::string, long> details;
  int count(const std::string &state) const {
    return (int)std::count_if(tasks.begin(), tasks.end(),
                              [&](const TaskView &t) { return t.state == state; });
  }
};

// The latest job that ran task i.
std::string lastJobOf(const Campaign &c, int i) {
  for (auto j = c.jobs.rbegin(); j != c.jobs.rend(); ++j)
    if (std::find(j->tasks.begin(), j->tasks.end(), i) != j->tasks.end()) return j->id;
  return "";
}

// Slurm first, the databases second: a task that left the queue has written all it will.
View gather(const Campaign &c) {
  View v;
  std::map<int, Queued> q;
  bool have_queue = queued(c, &q, &v.squeue_error);
  std::map<std::string, std::map<int, Ended>> ends;
  for (int i = 0; i < c.shards; ++i) {
    TaskView t;
    t.i = i;
    t.shard = readShard(c, i);
    if (auto it = q.find(i); it != q.end()) {
      t.job = it->second.job;
      t.node = it->second.node;
      const std::string &s = it->second.state;
      t.state = s == "pending"                                                ? "pending"
                : (s == "running" || s == "completing" || s == "configuring") ? "running"
                                                                              : s;
      if (t.state == "pending" && it->second.reason != "None") t.why = it->second.reason;
    } else if (t.shard.complete(c.reduce)) {
      t.state = "done";
    } else if (!have_queue) {
      t.state = "unknown";
      t.why = "squeue did not answer";
    } else {
      t.state = "failed";
      std::string job = lastJobOf(c, i);
      if (!job.empty()) {
        t.job = job + "_" + std::to_string(i);
        if (!ends.count(job)) ends[job] = ended(job);
        auto &e = ends[job];
        if (auto it = e.find(i); it != e.end())
          t.why = it->second.state + (it->second.exit_code.empty() || it->second.exit_code == "0:0"
                                          ? ""
                                          : " (exit " + it->second.exit_code + ")");
        else
          t.why = "ended";
      }
      if (!t.shard.exists)
        t.why += std::string(t.why.empty() ? "" : ", ") + "never wrote its database";
      else if (t.shard.total >= 0)
        t.why += std::string(t.why.empty() ? "" : ", ") + "shard incomplete";
      else
        t.why += std::string(t.why.empty() ? "" : ", ") + "plan incomplete";
      if (!job.empty()) t.why += "; log " + (fs::path(c.dir) / "logs" / (t.job + ".out")).string();
    }
    v.judged += t.shard.judged;
    v.expected += t.shard.expected;
    v.unexpected += t.shard.unexpected;
    v.infra += t.shard.infra;
    for (auto &[d, n] : t.shard.details) v.details[d] += n;
    if (t.shard.total < 0)
      v.total_known = false;
    else
      v.total += t.shard.total;
    v.tasks.push_back(std::move(t));
  }
  return v;
}

std::string summaryLine(const View &v) {
  std::string s = std::to_string(v.count("done")) + " done, " + std::to_string(v.count("running")) +
                  " running, " + std::to_string(v.count("pending")) + " pending, " +
                  std::to_string(v.count("failed")) + " failed";
  if (int u = v.count("unknown")) s += ", " + std::to_string(u) + " unknown";
  s += "; " + std::to_string(v.judged) + " of " +
       (v.total_known ? std::to_string(v.total) : std::string("?")) + " mutants judged";
  return s;
}

void printView(const Campaign &c, const View &v) {
  auto &os = llvm::outs();
  os << "campaign " << c.dir << ": " << c.shards << " tasks (job name " << c.name << "; jobs";
  for (auto &j : c.jobs) {
    std::string t;
    for (int i : j.tasks) t += (t.empty() ? "" : ",") + std::to_string(i);
    os << " " << j.id << " [" << (j.tasks.size() == (size_t)c.shards ? "all" : t) << "]";
  }
  os << ")\n";
  if (!v.squeue_error.empty())
    os << "Slurm did not answer (" << v.squeue_error
       << "): the states below come from the shard databases only\n";
  os << llvm::format("%-5s %-8s %-12s %-10s %-10s %s\n", "task", "state", "job", "node", "verdicts",
                     "note");
  for (auto &t : v.tasks) {
    std::string verdicts = std::to_string(t.shard.judged) + "/" +
                           (t.shard.total >= 0 ? std::to_string(t.shard.total) : "?");
    if (c.reduce && t.shard.to_reduce)
      verdicts +=
          " red " + std::to_string(t.shard.reduced) + "/" + std::to_string(t.shard.to_reduce);
    os << llvm::format("%-5d %-8s %-12s %-10s %-10s %s\n", t.i, t.state.c_str(),
                       t.job.empty() ? "-" : t.job.c_str(), t.node.empty() ? "-" : t.node.c_str(),
                       verdicts.c_str(), t.why.c_str());
  }
  os << "summary: " << summaryLine(v) << "\n";
  if (v.judged) {
    std::string d;
    for (auto &[k, n] : v.details) d += (d.empty() ? "" : ", ") + k + " " + std::to_string(n);
    os << "verdicts so far: " << d << " (" << v.expected << " as expected, " << v.unexpected
       << " unexpected, " << v.infra << " infra-error)\n";
  }
  if (v.count("failed"))
    os << "`wsfuzz slurm resume --dir " << c.dir << "` reruns the failed tasks\n";
  else if (v.count("done") == (int)v.tasks.size())
    os << "every shard is done: `wsfuzz merge OUT.sqlite --dir " << c.dir << "` merges them\n";
  os.flush();
}

std::string arraySpec(const std::vector<int> &tasks, int shards, int limit) {
  std::string s;
  if ((int)tasks.size() == shards && shards > 0) {
    s = "0-" + std::to_string(shards - 1);
  } else {
    for (int i : tasks) s += (s.empty() ? "" : ",") + std::to_string(i);
  }
  if (limit > 0) s += "%" + std::to_string(limit);
  return s;
}

// sbatch --parsable: "123" or "123;cluster". The job id or "" with the sentence in *err.
std::string sbatch(const std::string &script, const std::string &cwd,
                   const std::vector<std::string> &extra, std::string *err) {
  std::vector<std::string> argv = {"sbatch", "--parsable"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back(script);
  auto r = slurmTool(argv, cwd);
  std::string id = reasonLine(r.out);
  id = id.substr(0, id.find(';'));
  if (!ran(r) || id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
    *err = "sbatch refused the campaign: " + failure(r);
    return "";
  }
  return id;
}

// The checks every command that submits makes, before it writes anything: sbatch and sinfo on
// PATH, the directory writable, the controller answering, the partition there.
std::string checkCluster(const std::string &dir, const std::string &partition) {
  if (std::string e = checkWritable(dir); !e.empty()) return e;
  for (const char *t : {"sbatch", "sinfo", "squeue"})
    if (!findInPath(t)) return missingTool(t);
  auto r = slurmTool({"sinfo", "-h", "-o", "%P"});
  if (!ran(r))
    return "the Slurm controller did not answer (sinfo: " + failure(r) +
           "); check SLURM_CONF and that slurmctld runs";
  if (!partition.empty()) {
    std::string known;
    bool found = false;
    for (auto l : lines(r.out)) {
      if (!l.empty() && l.back() == '*') l.pop_back();
      found = found || l == partition;
      known += (known.empty() ? "" : ", ") + l;
    }
    if (!found)
      return "the partition '" + partition +
             "' does not exist on this cluster (sinfo lists: " + known + ")";
  }
  return "";
}

std::string randomToken() {
  std::random_device rd;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", (unsigned)rd());
  return buf;
}

}  // namespace

// ---- the command line of a task --------------------------------------------------------------
std::string taskArguments(int argc, char **argv, const std::vector<std::string> &own,
                          std::vector<std::string> *out) {
  auto &opts = llvm::cl::getRegisteredOptions();
  int words = 0;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if (a.size() < 2 || a[0] != '-') {
      // `slurm` and `submit`; any further word would be taken as a kernel by nobody.
      if (++words > 2) return "`wsfuzz slurm submit` takes flags only, not '" + a + "'";
      continue;
    }
    if (a.find_first_not_of('-') == std::string::npos)
      return "`wsfuzz slurm submit` takes flags only, not '" + a + "'";
    std::string name = a.substr(a.find_first_not_of('-'));
    bool inline_value = name.find('=') != std::string::npos;
    name = name.substr(0, name.find('='));
    auto it = opts.find(name);
    bool takes_next = !inline_value && it != opts.end() &&
                      it->second->getValueExpectedFlag() == llvm::cl::ValueRequired;
    if (std::find(own.begin(), own.end(), name) != own.end()) {
      k += takes_next;
      continue;
    }
    if (name == "shard" || name == "db")
      return "--" + name +
             " is set per task by `wsfuzz slurm submit` (--shard i/N, --db SHARED/shard-i.sqlite); "
             "leave it out";
    if (name == "list-sites" || name == "list-injectors")
      return "--" + name + " only lists; run it without `slurm submit`";
    out->push_back(a);
    if (takes_next && k + 1 < argc) out->push_back(argv[++k]);
  }
  return "";
}

std::string batchScript(const SubmitOptions &o, const std::string &job_name) {
  std::vector<int> all;
  for (int i = 0; i < o.shards; ++i) all.push_back(i);
  bool has_j = false, has_gpus = false;
  for (auto &a : o.task_args) {
    has_j = has_j || a.rfind("-j", 0) == 0 || a.rfind("--j", 0) == 0;
    has_gpus = has_gpus || a.rfind("--gpus", 0) == 0 || a.rfind("-gpus", 0) == 0;
  }
  std::string task_cmd;
  for (auto &a : o.task_args) task_cmd += " " + shq(a);
  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# A wsfuzz campaign on Slurm, written by `wsfuzz slurm submit`: one array task per shard.\n"
    << "# Task i runs the ordinary wsfuzz with the campaign's flags on the mutants whose hash is\n"
    << "# i mod " << o.shards << " (--shard i/" << o.shards << "), into " << o.dir
    << "/shard-i.sqlite,\n"
    << "# with the node's GPUs (the ones Slurm gives the task, as --gpus) or, on a CPU partition,\n"
    << "# the emulator (--backend emu). Run again, a task judges only the mutants without a "
       "verdict.\n"
    << "#\n"
    << "#   submitted by: " << o.command << "\n"
    << "#   from:         " << hostName() << ":" << o.cwd << "\n"
    << "#   the task:     " << o.wsfuzz << task_cmd << "\n"
    << "#\n"
    << "# By hand: `sbatch " << o.dir
    << "/campaign.sbatch` submits every task again (a task whose\n"
    << "# shard is done then only checks it); `sbatch --array=1,3 ...` submits some.\n"
    << "# wsfuzz slurm status --dir " << o.dir
    << "    which tasks are pending, running, done, failed\n"
    << "# wsfuzz slurm resume --dir " << o.dir << "    resubmits the failed ones\n"
    << "# wsfuzz merge merged.sqlite --dir " << o.dir
    << "   one campaign database for `wsfuzz report`\n"
    << "#SBATCH --job-name=" << job_name << "\n"
    << "#SBATCH --array=" << arraySpec(all, o.shards, o.array_limit) << "\n"
    << "#SBATCH --output=" << o.dir << "/logs/%A_%a.out\n"
    << "#SBATCH --nodes=1\n"
    << "#SBATCH --ntasks=1\n";
  if (!o.partition.empty()) s << "#SBATCH --partition=" << o.partition << "\n";
  if (!o.gres.empty()) s << "#SBATCH --gres=" << o.gres << "\n";
  if (!o.time_limit.empty()) s << "#SBATCH --time=" << o.time_limit << "\n";
  if (o.cpus_per_task > 0) s << "#SBATCH --cpus-per-task=" << o.cpus_per_task << "\n";
  for (auto &a : o.sbatch_args) s << "#SBATCH " << a << "\n";
  s << "set -u\n"
    << "cd " << shq(o.cwd) << " || exit 2\n"
    << "i=${SLURM_ARRAY_TASK_ID:?this script is a Slurm job array: submit it with sbatch}\n"
    << "args=(" << task_cmd.substr(task_cmd.empty() ? 0 : 1) << ")\n";
  if (!has_j)
    s << "# As many mutants at once as the task has CPUs (the node's cores are not all its own).\n"
      << "args+=(-j \"${SLURM_CPUS_PER_TASK:-${SLURM_CPUS_ON_NODE:-1}}\")\n";
  if (!has_gpus)
    s << "# The GPUs Slurm gave this task (--gres), one slot each.\n"
      << "if [ -n \"${CUDA_VISIBLE_DEVICES:-}\" ]; then args+=(--gpus \"$CUDA_VISIBLE_DEVICES\"); "
         "fi\n";
  s << "exec " << shq(o.wsfuzz) << " \"${args[@]}\" --shard \"$i/" << o.shards << "\" --db "
    << shq(o.dir) << "/shard-\"$i\".sqlite\n";
  return s.str();
}

// ---- the commands ----------------------------------------------------------------------------
int submit(const SubmitOptions &o, const Log &log) {
  auto fail = [&](const std::string &s) {
    log("wsfuzz: " + s);
    return 2;
  };
  if (o.shards < 1) return fail("--shards must be at least 1 (the number of array tasks)");
  if (o.dir.empty()) return fail("give the campaign's shared directory: --dir SHARED");
  if (o.dir.find_first_of(" \t\n%") != std::string::npos)
    return fail("--dir " + o.dir + " has a space or a '%' in it; #SBATCH lines cannot carry them");
  for (const std::string *v : {&o.partition, &o.gres, &o.time_limit})
    if (v->find_first_of(" \t\n") != std::string::npos)
      return fail("'" + *v + "' has a space in it; --partition, --gres and --time take one word");
  for (auto &a : o.sbatch_args)
    if (a.empty() || a[0] != '-' || a.find('\n') != std::string::npos)
      return fail(
          "--sbatch-arg takes one sbatch option on one line, e.g. --sbatch-arg=--qos=long, "
          "not '" +
          a + "'");
  std::error_code ec;
  if (fs::exists(campaignFile(o.dir), ec))
    return fail(o.dir + " already holds a campaign (campaign.json); `wsfuzz slurm resume --dir " +
                o.dir + "` goes on with it");
  if (fs::exists(shardPath(o.dir, 0), ec))
    return fail(o.dir +
                " already has shard databases but no campaign.json; give an empty "
                "directory, the shards are never overwritten");
  if (std::string e = checkCluster(o.dir, o.partition); !e.empty()) return fail(e);

  // Written now; on a refusal, what this call made is removed again.
  std::vector<fs::path> made;
  for (fs::path p : {fs::path(o.dir), fs::path(o.dir) / "logs"})
    if (!fs::exists(p, ec)) {
      fs::create_directories(p, ec);
      if (ec) return fail("cannot make " + p.string() + ": " + ec.message());
      made.push_back(p);
    }
  auto undo = [&] {
    for (auto p = made.rbegin(); p != made.rend(); ++p) fs::remove(*p, ec);  // only when empty
  };
  Campaign c;
  c.dir = o.dir;
  c.name = "wsfuzz-" + randomToken();
  c.wsfuzz = o.wsfuzz;
  c.cwd = o.cwd;
  c.script = (fs::path(o.dir) / "campaign.sbatch").string();
  c.partition = o.partition;
  c.gres = o.gres;
  c.time_limit = o.time_limit;
  c.shards = o.shards;
  c.array_limit = o.array_limit;
  c.cpus_per_task = o.cpus_per_task;
  c.reduce = o.reduce;
  c.task_args = o.task_args;
  c.sbatch_args = o.sbatch_args;
  c.plan = o.plan;
  c.host = hostName();
  c.submitted_at = nowIso();
  std::string err;
  if (!writeFileAtomic(c.script, batchScript(o, c.name), &err)) {
    undo();
    return fail(err);
  }
  ::chmod(c.script.c_str(), 0755);
  auto t0 = std::chrono::steady_clock::now();
  std::string id = sbatch(c.script, o.cwd, {}, &err);
  double submit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (id.empty()) {
    fs::remove(c.script, ec);
    undo();
    return fail(err);
  }
  Job j{id, {}, c.submitted_at};
  for (int i = 0; i < o.shards; ++i) j.tasks.push_back(i);
  c.jobs.push_back(j);
  if (!saveCampaign(c, &err)) {
    slurmTool({"scancel", id});
    fs::remove(c.script, ec);
    undo();
    return fail("cannot record the campaign (" + err + "); job " + id + " was cancelled");
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", submit_s);
  log("wsfuzz: submitted job " + id + ": " + std::to_string(o.shards) +
      " tasks, one per shard, into " + o.dir + "/shard-<i>.sqlite (sbatch took " + buf +
      " s); `wsfuzz slurm status --dir " + o.dir + "` follows them");
  llvm::outs() << id << "\n";
  llvm::outs().flush();
  return 0;
}

int status(const std::string &dir, bool wait, const Log &log) {
  Campaign c;
  if (std::string e = loadCampaign(dir, &c); !e.empty()) {
    log("wsfuzz: " + e);
    return 2;
  }
  if (!findInPath("squeue")) log("wsfuzz: note: " + missingTool("squeue"));
  View v = gather(c);
  if (wait) {
    std::string last;
    while (v.count("pending") || v.count("running") || v.count("unknown")) {
      std::string line = summaryLine(v);
      if (line != last) log("wsfuzz: " + line);
      last = line;
      std::this_thread::sleep_for(std::chrono::seconds(2));
      v = gather(c);
    }
  }
  printView(c, v);
  if (wait) return v.count("done") == (int)v.tasks.size() ? 0 : 1;
  return 0;
}

int resume(const std::string &dir, const Log &log) {
  auto fail = [&](const std::string &s) {
    log("wsfuzz: " + s);
    return 2;
  };
  Campaign c;
  if (std::string e = loadCampaign(dir, &c); !e.empty()) return fail(e);
  if (std::string e = checkCluster(dir, c.partition); !e.empty()) return fail(e);
  View v = gather(c);
  if (!v.squeue_error.empty())
    return fail("cannot tell which tasks are queued (" + v.squeue_error + "); nothing resubmitted");
  std::vector<int> todo;
  for (auto &t : v.tasks)
    if (t.state == "failed") todo.push_back(t.i);
  if (todo.empty()) {
    log("wsfuzz: nothing to resubmit: " + summaryLine(v));
    return 0;
  }
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "logs", ec);
  std::string err;
  std::string id =
      sbatch(c.script, c.cwd, {"--array=" + arraySpec(todo, c.shards, c.array_limit)}, &err);
  if (id.empty()) return fail(err);
  c.jobs.push_back({id, todo, nowIso()});
  if (!saveCampaign(c, &err)) {
    slurmTool({"scancel", id});
    return fail("cannot record the resubmission (" + err + "); job " + id + " was cancelled");
  }
  std::string t;
  for (int i : todo) t += (t.empty() ? "" : ",") + std::to_string(i);
  log("wsfuzz: resubmitted task" + std::string(todo.size() > 1 ? "s " : " ") + t + " as job " + id +
      "; each judges only its shard's mutants without a verdict");
  llvm::outs() << id << "\n";
  llvm::outs().flush();
  return 0;
}

int cancel(const std::string &dir, int task, const Log &log) {
  Campaign c;
  if (std::string e = loadCampaign(dir, &c); !e.empty()) {
    log("wsfuzz: " + e);
    return 2;
  }
  if (!findInPath("scancel")) {
    log("wsfuzz: " + missingTool("scancel"));
    return 2;
  }
  if (task >= c.shards) {
    log("wsfuzz: --task must be below " + std::to_string(c.shards) + ", the number of tasks");
    return 2;
  }
  std::vector<std::string> argv = {"scancel", "--name=" + c.name};
  if (task >= 0) {
    std::map<int, Queued> q;
    std::string err;
    if (!queued(c, &q, &err)) {
      log("wsfuzz: " + err);
      return 2;
    }
    if (!q.count(task)) {
      log("wsfuzz: task " + std::to_string(task) + " is not queued; nothing to cancel");
      return 0;
    }
    argv = {"scancel", q[task].job};
  }
  auto r = slurmTool(argv);
  if (!ran(r)) {
    log("wsfuzz: scancel: " + failure(r));
    return 2;
  }
  log("wsfuzz: cancelled " + (task >= 0 ? "task " + std::to_string(task) : "every task") +
      "; the shard databases keep what was judged, `wsfuzz slurm resume --dir " + dir +
      "` goes on");
  return 0;
}

std::vector<std::string> shardDatabases(const std::string &dir, std::vector<std::string> *missing,
                                        std::string *err) {
  Campaign c;
  if (std::string e = loadCampaign(dir, &c); !e.empty()) {
    *err = e;
    return {};
  }
  std::vector<std::string> out;
  std::error_code ec;
  for (int i = 0; i < c.shards; ++i) {
    std::string p = shardPath(dir, i);
    if (fs::exists(p, ec))
      out.push_back(p);
    else
      missing->push_back(p);
  }
  return out;
}

}  // namespace wsr::fuzz::slurm
