// The build cache's size: every candidate the reducer or the fuzzer builds is kept (by content
// hash) so that a repeat is free, and a long campaign would otherwise fill the disk (one CI run
// lost its machine to a 26 GB test cache). Entries are the children of <cache>/build and
// <cache>/emu; a hit marks its entry used now, and when the cache outgrows its limit the least
// recently used entries go first, down to three quarters of the limit.
#pragma once

#include <cstdint>
#include <string>

namespace wsr {

// WSREDUCE_CACHE_MAX: a byte count with an optional K, M or G suffix (powers of 1024), or 0 for
// no limit. Default 4 GiB. An unreadable value is the default.
std::uint64_t cacheLimitBytes();
// False, with a sentence, when WSREDUCE_CACHE_MAX is set but cannot be read as such: the tools
// refuse to start (prepareCacheDir) rather than quietly use the default.
bool cacheLimitValid(std::string *err);

// Marks an entry (a directory or a file) used now.
void touchCacheEntry(const std::string &entry);

struct CachePrune {
  std::uint64_t bytes_before = 0, bytes_after = 0;
  std::size_t entries = 0, removed = 0;
};

// Removes the least recently used entries until the cache holds at most 3/4 of `limit` bytes.
// Entries used within the last `keep_recent_s` seconds are never removed (another process may be
// about to run that binary), so the limit is soft while a campaign is building faster than that.
// Staging directories (".tmp-*") older than an hour are a killed build's leftovers and always go.
// limit 0: nothing is removed but those leftovers. The emulator's precompiled headers
// (<cache>/emu/pch-*) count towards the size but go only when unused for a day.
CachePrune pruneCache(const std::string &cache, std::uint64_t limit, double keep_recent_s = 300);

// After each new entry: prunes to cacheLimitBytes() on this process's first new entry and every
// 32nd after it (walking a large cache costs tens of milliseconds).
void noteCacheGrowth(const std::string &cache);

}  // namespace wsr
