// Why runProcess uses posix_spawn: starting /bin/true from a process that holds GIB gigabytes of
// touched memory while THREADS other threads keep writing to it (as wsfuzz --reduce does: Clang
// ASTs of 16 reductions, their parse threads busy), by fork+exec and by posix_spawn. Prints the
// mean start-to-exit time of a child and how much work the writer threads got done meanwhile.
//   g++ -O2 -std=c++20 -pthread bench/cpu/spawn_vs_fork.cpp -o /tmp/svf && /tmp/svf 8 2 200
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char **environ;
static std::atomic<bool> stop{false};
static std::atomic<long> writes{0};

int main(int argc, char **argv) {
  size_t gib = argc > 1 ? std::atol(argv[1]) : 4;
  int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  int n = argc > 3 ? std::atoi(argv[3]) : 100;
  size_t bytes = gib << 30;
  char *mem = static_cast<char *>(std::malloc(bytes));
  for (size_t i = 0; i < bytes; i += 4096) mem[i] = 1;  // touched: real pages, real page tables
  std::vector<std::thread> ws;
  for (int t = 0; t < threads; ++t)
    ws.emplace_back([=] {
      size_t slice = bytes / threads, base = slice * t;
      long local = 0;
      while (!stop)
        for (size_t i = 0; i < slice && !stop; i += 4096) { mem[base + i]++; if (++local % 4096 == 0) writes += 4096; }
    });
  char *args[] = {(char *)"/bin/true", nullptr};
  auto run = [&](bool spawn) {
    long w0 = writes;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      pid_t pid;
      if (spawn) {
        posix_spawn(&pid, "/bin/true", nullptr, nullptr, args, environ);
      } else {
        pid = fork();
        if (pid == 0) { execve("/bin/true", args, environ); _exit(127); }
      }
      int st;
      waitpid(pid, &st, 0);
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%-12s %d children: %.2f ms each; writer threads: %.0f M page writes/s\n", spawn ? "posix_spawn" : "fork+exec", n,
                s * 1000 / n, (writes - w0) / s / 1e6);
  };
  std::printf("%zu GiB touched, %d writer threads\n", gib, threads);
  run(false);
  run(true);
  run(false);
  run(true);
  stop = true;
  for (auto &t : ws) t.join();
}
