#include "process.h"

// Boost 1.81 Process v2 with BOOST_PROCESS_USE_STD_FS forgets these includes.
#include <boost/optional.hpp>
#include <boost/type_traits/remove_pointer.hpp>
#include <type_traits>

#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/process/v2/process.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <functional>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <cstdio>
#include <sstream>
#include <fcntl.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace asio = boost::asio;
namespace bp = boost::process::v2;
namespace fs = std::filesystem;

namespace wsr {
namespace {

// Keeps the first and the last `cap/2` bytes of a stream and counts the rest.
struct BoundedCapture {
  size_t cap;
  std::string head;
  std::string tail;  // ring buffer contents in order are tail[pos..] + tail[..pos]
  size_t pos = 0;
  long long total = 0;
  explicit BoundedCapture(size_t c) : cap(c) {}
  void add(const char *p, size_t n) {
    total += (long long)n;
    size_t headcap = cap / 2, tailcap = cap - headcap;
    size_t take = std::min(n, headcap - std::min(headcap, head.size()));
    head.append(p, take);
    p += take;
    n -= take;
    for (; n > 0; ++p, --n) {
      if (tail.size() < tailcap)
        tail.push_back(*p);
      else {
        tail[pos] = *p;
        pos = (pos + 1) % tailcap;
      }
    }
  }
  bool truncated() const { return (size_t)total > head.size() + tail.size(); }
  std::string str() const {
    std::string t = tail.substr(pos) + tail.substr(0, pos);
    if (!truncated()) return head + t;
    long long dropped = total - (long long)head.size() - (long long)t.size();
    return head + "\n[wsreduce: " + std::to_string(dropped) + " bytes of output not kept]\n" + t;
  }
};

struct Reader {
  asio::readable_pipe pipe;
  BoundedCapture cap;
  std::array<char, 65536> buf{};
  bool done = false;
  std::function<void()> on_done;
  Reader(asio::io_context &ctx, size_t bound) : pipe(ctx), cap(bound) {}
  void start() {
    pipe.async_read_some(asio::buffer(buf), [this](bp::error_code ec, size_t n) {
      if (n) cap.add(buf.data(), n);
      if (ec) {
        done = true;
        if (on_done) on_done();
        return;
      }
      start();
    });
  }
};

// Process groups of the runs in flight, for killAllRunning() (a fixed table: it is read
// from a signal handler).
constexpr int kMaxRunning = 256;
std::atomic<pid_t> g_running[kMaxRunning];

void registerGroup(pid_t g) {
  for (auto &slot : g_running) {
    pid_t expected = 0;
    if (slot.compare_exchange_strong(expected, g)) return;
  }
}
void unregisterGroup(pid_t g) {
  for (auto &slot : g_running) {
    pid_t expected = g;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

thread_local const std::atomic<bool> *t_cancel = nullptr;
thread_local unsigned long long t_turn = 0;

// The environment: the parent's, with the requested changes.
std::vector<std::string> environmentWith(const std::map<std::string, std::string> &set,
                                         const std::vector<std::string> &unset) {
  std::vector<std::string> envs;
  for (char **e = environ; e && *e; ++e) {
    std::string kv(*e);
    std::string k = kv.substr(0, kv.find('='));
    if (set.count(k)) continue;
    if (std::find(unset.begin(), unset.end(), k) != unset.end()) continue;
    envs.push_back(kv);
  }
  for (auto &[k, v] : set) envs.push_back(k + "=" + v);
  return envs;
}

// A null-terminated char* array over `v` (argv, envp), valid while `v` lives.
std::vector<char *> cStrings(const std::vector<std::string> &v) {
  std::vector<char *> out;
  for (auto &s : v) out.push_back(const_cast<char *>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

void setThreadCancelFlag(const std::atomic<bool> *flag) { t_cancel = flag; }
bool threadCancelled() { return t_cancel && t_cancel->load(); }
void setThreadTurn(unsigned long long turn) { t_turn = turn; }
unsigned long long threadTurn() { return t_turn; }

static std::atomic<unsigned> g_interrupts{0};
unsigned interruptCount() { return g_interrupts.load(); }

void killAllRunning() {
  g_interrupts.fetch_add(1);
  for (auto &slot : g_running) {
    pid_t g = slot.load();
    if (g > 0) ::kill(-g, SIGKILL);
  }
}

pid_t startDetached(const std::vector<std::string> &argv,
                    const std::map<std::string, std::string> &env_set, std::string *err) {
  auto exe = argv.empty() ? std::nullopt : findInPath(argv[0]);
  if (!exe) {
    if (err)
      *err = (argv.empty() ? std::string("no program") : argv[0]) + ": not found or not executable";
    return -1;
  }
  std::vector<std::string> envs = environmentWith(env_set, {});
  std::vector<char *> av = cStrings(argv), ev = cStrings(envs);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    if (err) *err = std::string("fork: ") + std::strerror(errno);
    return -1;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the tool
    if (::getppid() != parent) ::_exit(127);
    int dn = ::open("/dev/null", O_RDWR);
    if (dn >= 0) {
      ::dup2(dn, 0);
      ::dup2(dn, 1);
      ::dup2(dn, 2);
    }
    ::execve(exe->c_str(), av.data(), ev.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  registerGroup(pid);
  return pid;
}

void stopDetached(pid_t pid) {
  if (pid <= 0) return;
  ::kill(-pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
  unregisterGroup(pid);
}

std::optional<std::string> findInPath(const std::string &name) {
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) == 0) return fs::absolute(name).string();
    return std::nullopt;
  }
  const char *path = std::getenv("PATH");
  std::istringstream in(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(in, dir, ':')) {
    if (dir.empty()) continue;
    fs::path p = fs::path(dir) / name;
    if (::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p)) return p.string();
  }
  return std::nullopt;
}

std::string makeTempDir(const std::string &prefix) {
  const char *t = std::getenv("TMPDIR");
  std::string tmpl = std::string(t && *t ? t : "/tmp") + "/" + prefix + "XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) return {};
  return std::string(buf.data());
}

namespace {
// Field 22 of /proc/<pid>/stat: when the process started (clock ticks since boot); 0 if gone.
unsigned long long startTime(long pid) {
  auto stat = readFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return 0;
  size_t p = stat->rfind(')');
  if (p == std::string::npos) return 0;
  std::istringstream in(stat->substr(p + 2));
  std::string f;
  for (int i = 3; i <= 22 && (in >> f); ++i)
    if (i == 22) return std::strtoull(f.c_str(), nullptr, 10);
  return 0;
}

const char *const kRunPrefix = "wsreduce-run.";

// Removes the folders under `base` whose owner is dead (killed before it could remove its own).
void sweepDeadRoots(const fs::path &base) {
  std::error_code ec;
  const std::string prefix = kRunPrefix;
  for (auto &e : fs::directory_iterator(base, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    long pid = 0;
    unsigned long long start = 0;
    if (std::sscanf(name.c_str() + prefix.size(), "%ld.%llu", &pid, &start) != 2) continue;
    if (pid > 0 && startTime(pid) != start) removeTree(e.path().string());
  }
}
}  // namespace

RunTempRoot::RunTempRoot() {
  const char *t = std::getenv("TMPDIR");
  had_tmpdir_ = t != nullptr;
  if (t) old_tmpdir_ = t;
  const fs::path base = t && *t ? t : "/tmp";
  base_ = base.string();
  sweepDeadRoots(base);
  std::error_code ec;
  const long self = (long)::getpid();
  const fs::path mine =
      base / (kRunPrefix + std::to_string(self) + "." + std::to_string(startTime(self)));
  if (!fs::create_directories(mine, ec) && !fs::is_directory(mine)) return;
  path_ = mine.string();
  ::setenv("TMPDIR", path_.c_str(), 1);
}

RunTempRoot::~RunTempRoot() {
  if (path_.empty()) return;
  if (had_tmpdir_)
    ::setenv("TMPDIR", old_tmpdir_.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
  removeTree(path_);
  // A killed run's children (a test script, nvcc) live on in their own process groups and may
  // still have been writing into its folder when this run swept it at its start.
  sweepDeadRoots(base_);
}

void removeTree(const std::string &path) {
  if (path.empty()) return;
  std::error_code ec;
  fs::remove_all(path, ec);
}

bool writeFileAtomic(const std::string &path, const std::string &data, std::string *err) {
  fs::path p(path);
  fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + p.filename().string() + ".tmpXXXXXX")).string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  int fd = ::mkstemp(buf.data());
  if (fd < 0) {
    if (err) *err = "cannot write in " + dir.string() + ": " + std::strerror(errno);
    return false;
  }
  size_t off = 0;
  while (off < data.size()) {
    ssize_t w = ::write(fd, data.data() + off, data.size() - off);
    if (w <= 0) {
      if (err) *err = "cannot write " + path + ": " + std::strerror(errno);
      ::close(fd);
      ::unlink(buf.data());
      return false;
    }
    off += (size_t)w;
  }
  ::fsync(fd);
  ::fchmod(fd, 0644);
  ::close(fd);
  if (::rename(buf.data(), path.c_str()) != 0) {
    if (err) *err = "cannot replace " + path + ": " + std::strerror(errno);
    ::unlink(buf.data());
    return false;
  }
  return true;
}

std::optional<std::string> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

namespace {

// A spawned program not yet supervised: its pipes, its working directory and, for a gated run,
// the write end of its gate.
struct Child {
  pid_t pid = -1;
  int out = -1, err = -1, gate = -1;
  std::string exe, workdir;
  bool own_dir = false;
  RunRecord failed;  // spawn_failed set when pid < 0
};

Child spawnChild(const std::vector<std::string> &argv, const RunOptions &opt, bool gated) {
  Child ch;
  RunRecord &rec = ch.failed;
  rec.timeout_s = opt.timeout_s;
  if (argv.empty()) {
    rec.spawn_failed = true;
    rec.spawn_error = "no program given";
    return ch;
  }
  auto exe = findInPath(argv[0]);
  if (!exe) {
    rec.spawn_failed = true;
    rec.spawn_error = argv[0] + ": not found or not executable";
    return ch;
  }
  ch.exe = *exe;
  ch.workdir = opt.workdir;
  ch.own_dir = ch.workdir.empty();
  if (ch.own_dir) ch.workdir = makeTempDir("wsrun.");
  if (ch.workdir.empty()) {
    rec.spawn_failed = true;
    rec.spawn_error =
        std::string("cannot create a private working directory: ") + std::strerror(errno);
    return ch;
  }

  std::map<std::string, std::string> env_set = opt.env_set;
  if (opt.tmpdir_in_workdir) env_set["TMPDIR"] = ch.workdir;
  if (gated) {
    // The gate library opens the CUDA context before main and reads one byte from fd 3.
    const char *pre = std::getenv("LD_PRELOAD");
    std::string have = env_set.count("LD_PRELOAD") ? env_set["LD_PRELOAD"] : (pre ? pre : "");
    env_set["LD_PRELOAD"] = opt.gate_library + (have.empty() ? "" : ":" + have);
    env_set["WSR_GATE_FD"] = "3";
  }
  std::vector<std::string> envs = environmentWith(env_set, opt.env_unset);

  // posix_spawn, not fork: glibc starts the child with clone(CLONE_VM | CLONE_VFORK), so nothing
  // of this process's memory is copied or write-protected. wsfuzz --reduce runs 16 reductions
  // in one process of ~10 GiB (their Clang ASTs); each fork of it copied the page tables and
  // made every page the other threads then wrote fault once more: on the H200's 32 cores the
  // machine sat 60% idle while each emulator build took 4-10 s instead of 1
  // (bench/results/2026-11-30-h200-session9/).
  int po[2] = {-1, -1}, pe[2] = {-1, -1}, pg[2] = {-1, -1};
  auto fail = [&](const std::string &what, int e) {
    for (int fd : {po[0], po[1], pe[0], pe[1], pg[0], pg[1]})
      if (fd >= 0) ::close(fd);
    rec.spawn_failed = true;
    rec.spawn_error = "cannot start " + ch.exe + ": " + what + ": " + std::strerror(e);
    if (ch.own_dir) removeTree(ch.workdir);
    return ch;
  };
  if (::pipe2(po, O_CLOEXEC) != 0 || ::pipe2(pe, O_CLOEXEC) != 0) return fail("pipe", errno);
  if (gated && ::pipe2(pg, O_CLOEXEC) != 0) return fail("pipe", errno);
  std::vector<char *> av = cStrings(argv), ev = cStrings(envs);
  av[0] = const_cast<char *>(ch.exe.c_str());
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawnattr_init(&at);
  ::posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(&fa, po[1], 1);
  ::posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
  if (gated) ::posix_spawn_file_actions_adddup2(&fa, pg[0], 3);  // the gate (dup2 clears CLOEXEC)
  ::posix_spawn_file_actions_addchdir_np(&fa, ch.workdir.c_str());
  ::posix_spawn_file_actions_addclosefrom_np(&fa,
                                             gated ? 4 : 3);  // nothing else of ours leaks into it
  // A process group of its own, so the oracle can kill the program together with everything it
  // started; no signal blocked, and the ones a tool may ignore back at their default.
  sigset_t none, dflt;
  sigemptyset(&none);
  sigemptyset(&dflt);
  for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGHUP, SIGQUIT}) sigaddset(&dflt, sig);
  ::posix_spawnattr_setflags(
      &at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  ::posix_spawnattr_setpgroup(&at, 0);
  ::posix_spawnattr_setsigmask(&at, &none);
  ::posix_spawnattr_setsigdefault(&at, &dflt);
  pid_t child = -1;
  int se = ::posix_spawn(&child, ch.exe.c_str(), &fa, &at, av.data(), ev.data());
  ::posix_spawn_file_actions_destroy(&fa);
  ::posix_spawnattr_destroy(&at);
  if (se != 0) return fail("posix_spawn", se);
  ::close(po[1]);
  ::close(pe[1]);
  if (gated) ::close(pg[0]);
  ch.pid = child;
  ch.out = po[0];
  ch.err = pe[0];
  ch.gate = pg[1];
  registerGroup(child);
  return ch;
}

// Kills a child that never ran (its group), reaps it, closes what is ours.
void discardChild(Child &ch) {
  if (ch.pid < 0) return;
  if (ch.gate >= 0) ::close(ch.gate);
  ::kill(-ch.pid, SIGKILL);
  int st = 0;
  ::waitpid(ch.pid, &st, 0);
  unregisterGroup(ch.pid);
  ::close(ch.out);
  ::close(ch.err);
  if (ch.own_dir) removeTree(ch.workdir);
  ch.pid = -1;
}

// Waits for the child (opening its gate first, if it has one) with the timeout, the cancel flag
// and the bounded captures.
RunRecord supervise(Child &ch, const RunOptions &opt) {
  RunRecord rec;
  rec.timeout_s = opt.timeout_s;
  const unsigned interrupts0 = interruptCount();
  asio::io_context ctx;
  Reader out(ctx, opt.capture_bytes), err(ctx, opt.capture_bytes);
  auto t0 = std::chrono::steady_clock::now();
  if (ch.gate >= 0) {
    char go = 'g';
    (void)!::write(ch.gate, &go, 1);
    ::close(ch.gate);
    ch.gate = -1;
  }
  std::optional<bp::process> proc;
  bp::error_code aec;
  out.pipe.assign(ch.out, aec);
  err.pipe.assign(ch.err, aec);
  proc.emplace(ctx.get_executor(), ch.pid);
  pid_t pgid = ch.pid;
  out.start();
  err.start();
  bool exited = false;
  int native = 0;
  asio::steady_timer timer(ctx);
  timer.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(opt.timeout_s)));
  timer.async_wait([&](bp::error_code e) {
    if (e || exited) return;
    rec.timed_out = true;
    if (opt.on_timeout) {
      try {
        rec.forensics = opt.on_timeout((int)pgid);
      } catch (...) {
      }
    }
    ::kill(-pgid, SIGKILL);
  });
  // The caller's cancel flag, polled: a cancelled candidate frees its slot at once.
  const std::atomic<bool> *cancel = t_cancel;
  asio::steady_timer poll(ctx);
  std::function<void()> watchCancel = [&] {
    poll.expires_after(std::chrono::milliseconds(50));
    poll.async_wait([&](bp::error_code e) {
      if (e || exited) return;
      if (cancel && cancel->load()) {
        rec.cancelled = rec.timed_out = true;
        ::kill(-pgid, SIGKILL);
        return;
      }
      if (opt.over && opt.over()) {
        rec.ended_after_watchdog = true;
        ::kill(-pgid, SIGKILL);
        return;
      }
      watchCancel();
    });
  };
  if (cancel || opt.over) watchCancel();
  // A process that left its group (setsid) may still hold our pipes after the kill:
  // give the pipes a short grace period after the program ends, then stop reading.
  asio::steady_timer grace(ctx);
  auto both_done = [&] {
    if (out.done && err.done) grace.cancel();
  };
  out.on_done = both_done;
  err.on_done = both_done;
  proc->async_wait([&](bp::error_code, int) {
    exited = true;
    native = proc->native_exit_code();
    rec.wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    // Whatever the program left behind in its group dies with it; that also closes
    // the pipes a grandchild may still hold.
    ::kill(-pgid, SIGKILL);
    timer.cancel();
    poll.cancel();
    if (out.done && err.done) return;
    grace.expires_after(std::chrono::seconds(2));
    grace.async_wait([&](bp::error_code e) {
      if (e) return;
      bp::error_code ignore;
      out.pipe.close(ignore);
      err.pipe.close(ignore);
    });
  });
  ctx.run();
  if (!exited) {  // should not happen; make sure nothing is left
    ::kill(-pgid, SIGKILL);
    int st = 0;
    ::waitpid(pgid, &st, 0);
    native = st;
  }
  if (rec.wall_ms == 0)
    rec.wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  if (WIFSIGNALED(native)) {
    rec.signal = WTERMSIG(native);
    rec.exit_code = 128 + rec.signal;
  } else if (WIFEXITED(native)) {
    rec.exit_code = WEXITSTATUS(native);
  }
  unregisterGroup(pgid);
  // killAllRunning() (Ctrl-C) killed it: the tool's doing, never the program's failure.
  if (rec.signal == SIGKILL && interruptCount() != interrupts0)
    rec.cancelled = rec.timed_out = true;
  if (rec.timed_out || rec.ended_after_watchdog) rec.signal = 0;  // our SIGKILL, not the program's
  rec.out = out.cap.str();
  rec.err = err.cap.str();
  rec.out_truncated = out.cap.truncated();
  rec.err_truncated = err.cap.truncated();
  rec.out_bytes = out.cap.total;
  rec.err_bytes = err.cap.total;
  if (ch.own_dir) removeTree(ch.workdir);
  ch.pid = -1;
  return rec;
}

}  // namespace

RunRecord runProcess(const std::vector<std::string> &argv, const RunOptions &opt) {
  if (threadCancelled()) {
    RunRecord rec;
    rec.timeout_s = opt.timeout_s;
    rec.cancelled = rec.timed_out = true;
    return rec;
  }
  Child ch = spawnChild(argv, opt, false);
  if (ch.pid < 0) return ch.failed;
  return supervise(ch, opt);
}

struct GatedRun::Impl {
  Child ch;
  RunOptions opt;
};

GatedRun::GatedRun(const std::vector<std::string> &argv, const RunOptions &opt)
    : p_(std::make_unique<Impl>()) {
  p_->opt = opt;
  p_->ch = spawnChild(argv, opt, !opt.gate_library.empty());
}

GatedRun::~GatedRun() {
  if (p_) discardChild(p_->ch);
}

RunRecord GatedRun::run() {
  Child &ch = p_->ch;
  if (ch.pid < 0) return ch.failed;
  if (threadCancelled()) {
    discardChild(ch);
    RunRecord rec;
    rec.timeout_s = p_->opt.timeout_s;
    rec.cancelled = rec.timed_out = true;
    return rec;
  }
  return supervise(ch, p_->opt);
}

}  // namespace wsr
