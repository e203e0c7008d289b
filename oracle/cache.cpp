#include "cache.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <vector>

namespace fs = std::filesystem;

namespace wsr {

namespace {
constexpr std::uint64_t kDefaultLimit = 4ull << 30;

// The value of WSREDUCE_CACHE_MAX `e`, or nothing when it is not one.
std::optional<std::uint64_t> parseLimit(const char *e) {
  char *end = nullptr;
  if (!std::isdigit((unsigned char)*e)) return std::nullopt;
  unsigned long long n = std::strtoull(e, &end, 10);
  std::uint64_t scale = 1;
  switch (*end) {
    case 'k':
    case 'K':
      scale = 1ull << 10;
      ++end;
      break;
    case 'm':
    case 'M':
      scale = 1ull << 20;
      ++end;
      break;
    case 'g':
    case 'G':
      scale = 1ull << 30;
      ++end;
      break;
    default:
      break;
  }
  if (*end == 'i' || *end == 'I') ++end;  // "4GiB" reads as 4G
  if (*end == 'b' || *end == 'B') ++end;
  if (*end) return std::nullopt;
  return n * scale;
}
}  // namespace

std::uint64_t cacheLimitBytes() {
  const char *e = std::getenv("WSREDUCE_CACHE_MAX");
  if (!e || !*e) return kDefaultLimit;
  return parseLimit(e).value_or(kDefaultLimit);
}

bool cacheLimitValid(std::string *err) {
  const char *e = std::getenv("WSREDUCE_CACHE_MAX");
  if (!e || !*e || parseLimit(e)) return true;
  if (err)
    *err =
        std::string("WSREDUCE_CACHE_MAX must be a size such as 4G, 512M or 0 (no limit), not '") +
        e + "'";
  return false;
}

void touchCacheEntry(const std::string &entry) {
  std::error_code ec;
  fs::last_write_time(entry, fs::file_time_type::clock::now(), ec);
}

namespace {
std::uint64_t treeBytes(const fs::path &p) {
  std::error_code ec;
  if (fs::is_symlink(p, ec)) return 0;
  if (!fs::is_directory(p, ec)) {
    auto n = fs::file_size(p, ec);
    return ec ? 0 : n;
  }
  std::uint64_t sum = 0;
  for (fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    if (it->is_regular_file(e2) && !it->is_symlink(e2)) {
      auto n = it->file_size(e2);
      if (!e2) sum += n;
    }
  }
  return sum;
}
}  // namespace

CachePrune pruneCache(const std::string &cache, std::uint64_t limit, double keep_recent_s) {
  struct Entry {
    fs::path path;
    fs::file_time_type used;
    std::uint64_t bytes;
  };
  CachePrune out;
  std::vector<Entry> entries;
  std::uint64_t pinned = 0;  // counted, never removed
  const auto now = fs::file_time_type::clock::now();
  auto age_s = [&](fs::file_time_type t) { return std::chrono::duration<double>(now - t).count(); };
  for (const char *sub : {"build", "emu"}) {
    std::error_code ec;
    for (fs::directory_iterator it(fs::path(cache) / sub, ec), end; !ec && it != end;
         it.increment(ec)) {
      std::error_code e2;
      auto used = fs::last_write_time(it->path(), e2);
      if (e2) continue;
      std::uint64_t bytes = treeBytes(it->path());
      out.bytes_before += bytes;
      if (it->path().filename().string().rfind(".tmp-", 0) == 0) {  // a build's staging directory
        if (age_s(used) > 3600) {                                   // a killed build's leftover
          fs::remove_all(it->path(), e2);
          if (!e2) {
            ++out.removed;
            continue;
          }
        }
        pinned += bytes;  // a build in progress
        continue;
      }
      // the emulator's precompiled runtime header: in use for a whole campaign, touched only at
      // its start, and dearer to rebuild than any binary; it goes when unused for a day
      if (it->path().filename().string().rfind("pch-", 0) == 0 && age_s(used) < 86400) {
        pinned += bytes;
        continue;
      }
      entries.push_back({it->path(), used, bytes});
    }
  }
  out.entries = entries.size() + out.removed;
  std::uint64_t total = pinned;
  for (auto &e : entries) total += e.bytes;
  if (limit > 0 && total > limit) {
    std::sort(entries.begin(), entries.end(),
              [](const Entry &a, const Entry &b) { return a.used < b.used; });
    const std::uint64_t target = limit / 4 * 3;
    for (auto &e : entries) {
      if (total <= target) break;
      if (age_s(e.used) < keep_recent_s) break;  // sorted: everything after is as recent
      std::error_code ec;
      fs::remove_all(e.path, ec);
      if (ec) continue;
      total -= e.bytes;
      ++out.removed;
    }
  }
  out.bytes_after = total;
  return out;
}

void noteCacheGrowth(const std::string &cache) {
  static std::atomic<unsigned> added{0};
  if (added.fetch_add(1) % 32 != 0) return;
  pruneCache(cache, cacheLimitBytes());
}

}  // namespace wsr
