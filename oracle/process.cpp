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
      if (tail.size() < tailcap) tail.push_back(*p);
      else { tail[pos] = *p; pos = (pos + 1) % tailcap; }
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
      if (ec) { done = true; if (on_done) on_done(); return; }
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

void killAllRunning() {
  for (auto &slot : g_running) {
    pid_t g = slot.load();
    if (g > 0) ::kill(-g, SIGKILL);
  }
}

pid_t startDetached(const std::vector<std::string> &argv, const std::map<std::string, std::string> &env_set,
                    std::string *err) {
  auto exe = argv.empty() ? std::nullopt : findInPath(argv[0]);
  if (!exe) {
    if (err) *err = (argv.empty() ? std::string("no program") : argv[0]) + ": not found or not executable";
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
    if (dn >= 0) { ::dup2(dn, 0); ::dup2(dn, 1); ::dup2(dn, 2); }
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

RunRecord runProcess(const std::vector<std::string> &argv, const RunOptions &opt) {
  RunRecord rec;
  rec.timeout_s = opt.timeout_s;
  if (threadCancelled()) {
    rec.cancelled = rec.timed_out = true;
    return rec;
  }
  if (argv.empty()) {
    rec.spawn_failed = true;
    rec.spawn_error = "no program given";
    return rec;
  }
  auto exe = findInPath(argv[0]);
  if (!exe) {
    rec.spawn_failed = true;
    rec.spawn_error = argv[0] + ": not found or not executable";
    return rec;
  }

  std::string workdir = opt.workdir;
  bool own_dir = workdir.empty();
  if (own_dir) workdir = makeTempDir("wsrun.");
  if (workdir.empty()) {
    rec.spawn_failed = true;
    rec.spawn_error = std::string("cannot create a private working directory: ") + std::strerror(errno);
    return rec;
  }

  std::vector<std::string> envs = environmentWith(opt.env_set, opt.env_unset);

  asio::io_context ctx;
  Reader out(ctx, opt.capture_bytes), err(ctx, opt.capture_bytes);
  auto t0 = std::chrono::steady_clock::now();
  std::optional<bp::process> proc;
  // posix_spawn, not fork: glibc starts the child with clone(CLONE_VM | CLONE_VFORK), so nothing
  // of this process's memory is copied or write-protected. wsfuzz --reduce runs 16 reductions
  // in one process of ~10 GiB (their Clang ASTs); each fork of it copied the page tables and
  // made every page the other threads then wrote fault once more: on the H200's 32 cores the
  // machine sat 60% idle while each emulator build took 4-10 s instead of 1
  // (bench/results/2026-11-30-h200-session9/).
  int po[2] = {-1, -1}, pe[2] = {-1, -1};
  auto fail = [&](const std::string &what, int e) {
    for (int fd : {po[0], po[1], pe[0], pe[1]})
      if (fd >= 0) ::close(fd);
    rec.spawn_failed = true;
    rec.spawn_error = "cannot start " + *exe + ": " + what + ": " + std::strerror(e);
    if (own_dir) removeTree(workdir);
    return rec;
  };
  if (::pipe2(po, O_CLOEXEC) != 0 || ::pipe2(pe, O_CLOEXEC) != 0) return fail("pipe", errno);
  std::vector<char *> av = cStrings(argv), ev = cStrings(envs);
  av[0] = const_cast<char *>(exe->c_str());
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawnattr_init(&at);
  ::posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(&fa, po[1], 1);
  ::posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
  ::posix_spawn_file_actions_addchdir_np(&fa, workdir.c_str());
  ::posix_spawn_file_actions_addclosefrom_np(&fa, 3);  // nothing else of ours leaks into it
  // A process group of its own, so the oracle can kill the program together with everything it
  // started; no signal blocked, and the ones a tool may ignore back at their default.
  sigset_t none, dflt;
  sigemptyset(&none);
  sigemptyset(&dflt);
  for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGHUP, SIGQUIT}) sigaddset(&dflt, sig);
  ::posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  ::posix_spawnattr_setpgroup(&at, 0);
  ::posix_spawnattr_setsigmask(&at, &none);
  ::posix_spawnattr_setsigdefault(&at, &dflt);
  pid_t child = -1;
  int se = ::posix_spawn(&child, exe->c_str(), &fa, &at, av.data(), ev.data());
  ::posix_spawn_file_actions_destroy(&fa);
  ::posix_spawnattr_destroy(&at);
  if (se != 0) return fail("posix_spawn", se);
  ::close(po[1]);
  ::close(pe[1]);
  bp::error_code aec;
  out.pipe.assign(po[0], aec);
  err.pipe.assign(pe[0], aec);
  proc.emplace(ctx.get_executor(), child);
  pid_t pgid = proc->id();
  registerGroup(pgid);
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
      try { rec.forensics = opt.on_timeout((int)pgid); } catch (...) {}
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
      if (cancel->load()) {
        rec.cancelled = rec.timed_out = true;
        ::kill(-pgid, SIGKILL);
        return;
      }
      watchCancel();
    });
  };
  if (cancel) watchCancel();
  // A process that left its group (setsid) may still hold our pipes after the kill:
  // give the pipes a short grace period after the program ends, then stop reading.
  asio::steady_timer grace(ctx);
  auto both_done = [&] { if (out.done && err.done) grace.cancel(); };
  out.on_done = both_done;
  err.on_done = both_done;
  proc->async_wait([&](bp::error_code, int) {
    exited = true;
    native = proc->native_exit_code();
    rec.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
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
    rec.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  if (WIFSIGNALED(native)) {
    rec.signal = WTERMSIG(native);
    rec.exit_code = 128 + rec.signal;
  } else if (WIFEXITED(native)) {
    rec.exit_code = WEXITSTATUS(native);
  }
  unregisterGroup(pgid);
  if (rec.timed_out) rec.signal = 0;  // the SIGKILL was ours, not the program's
  rec.out = out.cap.str();
  rec.err = err.cap.str();
  rec.out_truncated = out.cap.truncated();
  rec.err_truncated = err.cap.truncated();
  rec.out_bytes = out.cap.total;
  rec.err_bytes = err.cap.total;
  if (own_dir) removeTree(workdir);
  return rec;
}

}  // namespace wsr
