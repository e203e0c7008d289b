#include "search.h"

#include "process.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <set>

namespace wsr {

static std::atomic<bool> g_stop{false};
void Search::requestStop() { g_stop = true; }

static double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Search::Search(Tester &t, SearchOptions o, std::function<void(const SearchStats &, const std::string &)> progress)
    : tester_(t), opt_(std::move(o)), progress_(std::move(progress)) {
  if (opt_.jobs < 1) opt_.jobs = 1;
}

void Search::checkStop() {
  if (g_stop) throw SearchStop{"interrupted"};
  if (infra_run_ >= opt_.max_consecutive_infra)
    throw SearchStop{"the oracle could not judge " + std::to_string(infra_run_) +
                     " candidates in a row (" + last_infra_ + ")"};
}

std::vector<PassSite> Search::enumerate(const PassInfo &p) {
  if (!parsed_) parsed_ = parseSource(best_, tester_.options().original_path, tester_.options().parse);
  return p.sites(*parsed_);
}

void Search::accept(const std::string &text, const std::string &pass, const std::string &what) {
  best_ = text;
  parsed_.reset();  // the AST is rebuilt only after an accepted change
  ++stats_.accepted;
  stats_.lines = countNonBlankLines(best_);
  stats_.tokens = countTokens(best_);
  std::string err;
  if (!opt_.best_path.empty() && !writeFileAtomic(opt_.best_path, best_, &err))
    throw SearchStop{"cannot save the best program: " + err};
  if (progress_) progress_(stats_, "accepted " + pass + ": " + what);
}

std::vector<TestResult> Search::evaluate(const std::vector<std::string> &cands, const std::string &pass) {
  std::vector<TestResult> res(cands.size());
  // Each candidate in its own thread (compiles and runs are separate processes, so the
  // threads mostly wait); the caller keeps a batch within `jobs`.
  std::vector<std::future<TestResult>> fut;
  for (size_t i = 0; i < cands.size(); ++i)
    fut.push_back(std::async(std::launch::async, [&, i] { return tester_.test(cands[i]); }));
  for (size_t i = 0; i < cands.size(); ++i) res[i] = fut[i].get();
  for (size_t i = 0; i < cands.size(); ++i) {
    auto &r = res[i];
    if (!opt_.trace_path.empty()) {
      llvm::json::Object o{{"pass", pass}, {"hash", contentHash(cands[i]).substr(0, 16)},
                           {"cached", r.cached}, {"parse_failed", r.parse_failed},
                           {"detail", r.detail}, {"signature", r.signature},
                           {"interesting", r.interesting}, {"ms", (long)r.ms},
                           {"lines", (long)countNonBlankLines(cands[i])}};
      if (!r.note.empty()) o["note"] = r.note;
      std::string s;
      llvm::raw_string_ostream os(s);
      os << llvm::json::Value(std::move(o));
      std::ofstream(opt_.trace_path, std::ios::app) << os.str() << "\n";
    }
    if (r.infra) { ++infra_run_; last_infra_ = r.detail + (r.note.empty() ? "" : ": " + r.note); }
    else if (!r.cached) infra_run_ = 0;
  }
  stats_.tests = tester_.tests();
  stats_.cache_hits = tester_.cacheHits();
  stats_.parse_skips = tester_.parseSkips();
  stats_.elapsed_s = now_s() - t0_;
  if (progress_) progress_(stats_, "");
  checkStop();  // before trusting results: an interrupt kills runs in flight
  return res;
}

int Search::firstInteresting(const std::vector<std::string> &cands, const std::string &pass) {
  for (size_t b = 0; b < cands.size(); b += (size_t)opt_.jobs) {
    size_t e = std::min(cands.size(), b + (size_t)opt_.jobs);
    auto res = evaluate(std::vector<std::string>(cands.begin() + (long)b, cands.begin() + (long)e), pass);
    for (size_t i = 0; i < res.size(); ++i)
      if (res[i].interesting) return (int)(b + i);
  }
  return -1;
}

// ddmin over the plain (ungrouped) sites of one level: try removing (applying) chunks,
// from all of them down to one at a time; after an accepted chunk the AST is rebuilt and
// the level goes on at the same chunk size and about the same position.
std::vector<PassSite> Search::plainSites(const PassInfo &p, int level) {
  std::vector<PassSite> v;
  for (auto &s : enumerate(p))
    if (s.group < 0 && s.level == level) v.push_back(s);
  return v;
}

bool Search::ddminLevel(const PassInfo &p, int level) {
  bool changed = false;
  auto plain = [&] { return plainSites(p, level); };
  auto sites = plain();
  size_t k = sites.size();
  // One sweep over the list in chunks of k; true when some chunk was accepted.
  auto sweep = [&] {
    bool hit = false;
    size_t pos = 0;
    while (pos < sites.size() && k > 0) {
      std::vector<std::string> cands;
      std::vector<std::pair<size_t, size_t>> spans;
      for (size_t i = pos; i < sites.size() && cands.size() < (size_t)opt_.jobs; i += k) {
        std::vector<const Site *> chunk;
        size_t e = std::min(sites.size(), i + k);
        for (size_t j = i; j < e; ++j) chunk.push_back(&sites[j]);
        std::string c = applySites(best_, chunk);
        if (c == best_) continue;
        cands.push_back(std::move(c));
        spans.push_back({i, e});
      }
      if (cands.empty()) break;
      int w = firstInteresting(cands, p.name);
      if (w < 0) {
        pos = spans.back().first + k;
        continue;
      }
      auto [b, e] = spans[(size_t)w];
      accept(cands[(size_t)w], p.name,
             e - b == 1 ? sites[b].note : std::to_string(e - b) + " sites from line " + std::to_string(sites[b].line));
      changed = hit = true;
      sites = plain();  // offsets moved: the AST is rebuilt and the sites listed again
      pos = b;          // same place: the chunks before it were not interesting
      k = std::min(k, sites.size());
    }
    return hit;
  };
  while (!sites.empty() && k > 0) {
    bool hit = sweep();
    if (k == 1 && !hit) break;
    if (k > 1) k = std::max<size_t>(1, k / 2);
  }
  return changed;
}

// Probabilistic delta debugging over the plain sites of one level. Each site i has p_i, the
// probability that it is needed (starts at 0.1). The next try removes the prefix of the sites
// sorted by p that maximises the expected gain |S| x prod(1 - p_i); with -j N the N prefixes
// around it (sizes best, best/2, best/4, ...) are judged at once and the largest interesting one
// wins. A failed try S multiplies each p_i in S by 1 / (1 - prod(1 - p_j)); an accepted one
// removes S (the sites are listed again: the others keep their p by note). A site with p >= 0.99
// counts as needed; the level ends when every remaining site is needed.
bool Search::pddLevel(const PassInfo &p, int level) {
  bool changed = false;
  auto plain = [&] { return plainSites(p, level); };
  auto sites = plain();
  std::map<std::string, double> prob;  // by note: survives re-enumeration after an accepted step
  auto keyOf = [](const PassSite &s) { return s.note + "@" + std::to_string(s.line); };
  auto pOf = [&](const PassSite &s) {
    auto it = prob.find(keyOf(s));
    return it == prob.end() ? 0.1 : it->second;
  };
  for (int guard = 0; guard < 100000 && !sites.empty(); ++guard) {
    checkStop();
    std::vector<size_t> order(sites.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return pOf(sites[a]) < pOf(sites[b]); });
    // the prefix with the largest expected gain, among the sites not yet known to be needed
    size_t best_n = 0;
    double best_gain = 0, keep = 1;
    for (size_t n = 1; n <= order.size(); ++n) {
      double pi = pOf(sites[order[n - 1]]);
      if (pi >= 0.99) break;
      keep *= 1 - pi;
      if (n * keep > best_gain) { best_gain = n * keep; best_n = n; }
    }
    if (best_n == 0) break;
    std::vector<size_t> sizes;
    for (size_t n = best_n; n >= 1 && sizes.size() < (size_t)std::max(1, opt_.jobs); n /= 2) {
      sizes.push_back(n);
      if (n == 1) break;
    }
    std::vector<std::string> cands;
    std::vector<size_t> cand_n;
    for (size_t n : sizes) {
      std::vector<const Site *> chunk;
      for (size_t j = 0; j < n; ++j) chunk.push_back(&sites[order[j]]);
      std::string c = applySites(best_, chunk);
      if (c == best_) continue;
      cands.push_back(std::move(c));
      cand_n.push_back(n);
    }
    if (cands.empty()) {  // these edits change nothing: mark them needed
      for (size_t j = 0; j < best_n; ++j) prob[keyOf(sites[order[j]])] = 1.0;
      continue;
    }
    auto res = evaluate(cands, p.name);
    int win = -1;
    for (size_t i = 0; i < res.size(); ++i)
      if (res[i].interesting) { win = (int)i; break; }  // the largest interesting prefix
    // every failed prefix raises the probabilities of what it held
    for (size_t i = 0; i < res.size(); ++i) {
      if (res[i].interesting) continue;
      double none = 1;
      for (size_t j = 0; j < cand_n[i]; ++j) none *= 1 - pOf(sites[order[j]]);
      for (size_t j = 0; j < cand_n[i]; ++j) {
        auto &s = sites[order[j]];
        prob[keyOf(s)] = std::min(1.0, pOf(s) / std::max(1e-9, 1 - none));
      }
    }
    if (win < 0) continue;
    size_t n = cand_n[(size_t)win];
    accept(cands[(size_t)win], p.name, n == 1 ? sites[order[0]].note : std::to_string(n) + " sites (pdd)");
    changed = true;
    sites = plain();
  }
  return changed;
}

// Alternatives (a group per place): the first interesting one, in the pass's order.
// Places with a key (PassSite::place: a knob's name) are independent enough to be judged
// several at once, filling the -j slots; the winners of one batch are then tried together,
// and if that fails the first winner alone is taken. Places without a key (a branch that
// changes the code around it) go one at a time, in offset order.
bool Search::groups(const PassInfo &p) {
  bool changed = false;
  std::set<std::string> settled;  // keyed places already decided
  size_t g = 0;                   // unkeyed places: how many were decided
  for (;;) {
    std::map<int, std::vector<PassSite>> byGroup;
    std::vector<int> order;
    for (auto &s : enumerate(p)) {
      if (s.group < 0) continue;
      if (!byGroup.count(s.group)) order.push_back(s.group);
      byGroup[s.group].push_back(s);
    }
    // The next batch: open keyed places while they fit in the slots (at least one place).
    std::vector<int> batch;
    size_t slots = 0, unkeyed_seen = 0;
    bool unkeyed_next = false;
    for (int gid : order) {
      auto &alts = byGroup[gid];
      const std::string &key = alts.front().place;
      if (key.empty()) {
        if (unkeyed_seen++ < g) continue;
        if (batch.empty()) { batch.push_back(gid); unkeyed_next = true; }
        break;
      }
      if (settled.count(key)) continue;
      if (!batch.empty() && slots + alts.size() > (size_t)opt_.jobs) break;
      batch.push_back(gid);
      slots += alts.size();
    }
    if (batch.empty()) return changed;

    std::vector<std::string> cands;
    std::vector<std::pair<int, size_t>> who;  // (group, alternative)
    for (int gid : batch) {
      auto &alts = byGroup[gid];
      for (size_t i = 0; i < alts.size(); ++i) {
        std::string c = applySites(best_, std::vector<Site>{alts[i]});
        if (c == best_) continue;
        cands.push_back(std::move(c));
        who.push_back({gid, i});
      }
    }
    std::vector<TestResult> res;
    for (size_t b = 0; b < cands.size(); b += (size_t)opt_.jobs) {
      auto part = evaluate(std::vector<std::string>(cands.begin() + (long)b,
                                                    cands.begin() + (long)std::min(cands.size(), b + (size_t)opt_.jobs)), p.name);
      res.insert(res.end(), part.begin(), part.end());
    }
    std::vector<size_t> winners;  // index into cands: the first interesting alternative per place
    std::set<int> won;
    for (size_t i = 0; i < cands.size(); ++i)
      if (res[i].interesting && won.insert(who[i].first).second) winners.push_back(i);
    // Decided: a keyed place keeps its key; an unkeyed one is passed over only when nothing
    // in it was taken (when something was, the code there changed and is looked at again).
    for (int gid : batch) {
      if (!unkeyed_next) settled.insert(byGroup[gid].front().place);
      else if (winners.empty()) ++g;
    }
    if (winners.empty()) continue;
    const PassSite &first = byGroup[who[winners[0]].first][who[winners[0]].second];
    if (winners.size() > 1) {
      std::vector<Site> all;
      std::string what;
      for (size_t w : winners) {
        all.push_back(byGroup[who[w].first][who[w].second]);
        what += (what.empty() ? "" : ", ") + all.back().note;
      }
      std::string together = applySites(best_, all);
      if (firstInteresting({together}, p.name) == 0) {
        accept(together, p.name, what);
        changed = true;
        continue;
      }
    }
    accept(cands[winners[0]], p.name, first.note);
    changed = true;
    // The other winners were judged against the old program: their places open again.
    for (size_t k = 1; k < winners.size(); ++k) settled.erase(byGroup[who[winners[k]].first].front().place);
  }
}

// One pass, its sites down to level `cap` (the round number): hierarchical across
// passes, so that after the outer statements go, remove-function can take the helpers
// that became unused before anyone works through their insides line by line.
bool Search::runPass(const PassInfo &p, int cap, bool *deeper) {
  stats_.pass = p.name;
  if (progress_) progress_(stats_, "pass " + std::string(p.name));
  bool changed = false;
  changed |= groups(p);
  int maxLevel = 0;
  for (auto &s : enumerate(p)) maxLevel = std::max(maxLevel, s.level);
  for (int level = 0; level <= std::min(maxLevel, cap); ++level) {
    checkStop();
    changed |= opt_.algorithm == "pdd" ? pddLevel(p, level) : ddminLevel(p, level);
    for (auto &s : enumerate(p)) maxLevel = std::max(maxLevel, s.level);
  }
  if (maxLevel > cap) *deeper = true;
  return changed;
}

std::string Search::run(const std::string &start) {
  t0_ = now_s();
  best_ = start;
  stats_.start_lines = stats_.lines = countNonBlankLines(start);
  stats_.start_tokens = stats_.tokens = countTokens(start);
  std::vector<const PassInfo *> schedule;
  if (opt_.passes.empty()) {
    for (auto phase : {Phase::Shape, Phase::Structure, Phase::Expression, Phase::Cosmetic})
      for (auto &p : allPasses())
        if (p.phase == phase) schedule.push_back(&p);
  } else {
    for (auto &n : opt_.passes)
      if (auto *p = findPass(n)) schedule.push_back(p);
  }
  for (int round = 0; round < opt_.max_rounds; ++round) {
    bool changed = false, deeper = false;
    for (auto *p : schedule) {
      checkStop();
      changed |= runPass(*p, round, &deeper);
    }
    if (!changed && !deeper) break;  // a fixpoint: no pass found anything more, at any depth
  }
  stats_.elapsed_s = now_s() - t0_;
  return best_;
}

}  // namespace wsr
