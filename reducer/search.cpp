#include "search.h"

#include "parse_check.h"
#include "process.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

namespace wsr {

static std::atomic<bool> g_stop{false};
void Search::requestStop() { g_stop = true; }

static double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Search::Search(Judge &t, SearchOptions o,
               std::function<void(const SearchStats &, const std::string &)> progress)
    : judge_(t), opt_(std::move(o)), progress_(std::move(progress)) {
  if (opt_.jobs < 1) opt_.jobs = 1;
  stats_.jobs = opt_.jobs;
}

void Search::checkStop() {
  const bool spent = opt_.budget_s > 0 && now_s() - t0_ > opt_.budget_s;
  if (g_stop || spent) cancelSpec(true);
  if (g_stop) throw SearchStop{"interrupted"};
  if (spent)
    throw SearchStop{"the budget of " + std::to_string((int)opt_.budget_s) + " s is spent", true};
  if (infra_run_ >= opt_.max_consecutive_infra)
    throw SearchStop{"the oracle could not judge " + std::to_string(infra_run_) +
                     " candidates in a row (" + last_infra_ + ")"};
}

bool Search::haveParse(bool wait) {
  if (!parsed_ && next_parse_.valid()) {  // the parse accept() started in the background
    if (!wait && next_parse_.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      return false;
    auto p = next_parse_.get();
    if (next_parse_text_ == best_)
      parsed_ = std::move(p);
    else
      parser_->giveBack(std::move(p));
  }
  if (!parsed_ && wait) {
    if (!parser_) parser_ = judge_.siteParser();
    parsed_ = parser_->parse(best_);
  }
  return parsed_ != nullptr;
}

std::vector<PassSite> Search::enumerate(const PassInfo &p) {
  haveParse(true);
  return p.sites(*parsed_);
}

// The lookahead: what the next passes will judge first on best_ (so that their verdicts are in
// the tester's cache when they ask): a plain level's whole and its halves and quarters, ddmin's
// first chunks; for alternatives every keyed place at its first one, then each place's first.
void Search::buildLookahead() {
  spec_queue_.clear();
  if (!haveParse(false)) return;  // the new best's parse is still running: later
  spec_built_ = true;
  const size_t per_pass = (size_t)std::max(2, opt_.jobs) * 2;
  std::set<std::string> seen;
  auto add = [&](std::string c, size_t &n) {
    if (c == best_ || !seen.insert(contentHash(c)).second) return;
    spec_queue_.push_back(std::move(c));
    ++n;
  };
  size_t passes = 0;
  for (const PassInfo *p : upcoming_) {
    if (++passes > 3) break;
    auto sites = p->sites(*parsed_);
    size_t n = 0;
    std::vector<const Site *> firsts;
    std::set<int> groups;
    for (auto &x : sites)
      if (x.group >= 0 && !x.place.empty() && groups.insert(x.group).second) firsts.push_back(&x);
    if (firsts.size() > 1) add(applySites(best_, firsts), n);
    groups.clear();
    for (auto &x : sites)
      if (x.group >= 0 && groups.insert(x.group).second && n < per_pass)
        add(applySites(best_, std::vector<Site>{x}), n);
    std::vector<const Site *> plain;
    for (auto &x : sites)
      if (x.group < 0 && x.level == 0) plain.push_back(&x);
    for (size_t k = plain.size(); k >= 1 && n < per_pass; k = k > 1 ? k / 2 : 0)
      for (size_t b = 0; b < plain.size() && n < per_pass; b += k)
        add(applySites(best_,
                       std::vector<const Site *>(plain.begin() + b,
                                                 plain.begin() + std::min(plain.size(), b + k))),
            n);
  }
}

size_t Search::specRunning() {
  std::erase_if(spec_running_, [](const SpecTask &t) { return t.done->load(); });
  size_t n = 0;
  for (auto &t : spec_running_)
    if (!t.cancel->load()) ++n;
  return n;
}

void Search::cancelSpec(bool all) {
  for (auto it = spec_running_.rbegin(); it != spec_running_.rend(); ++it)
    if (!it->done->load() && !it->cancel->load()) {
      it->cancel->store(true);
      if (!all) return;
    }
  if (all) {
    spec_queue_.clear();
    spec_built_ = false;
  }
}

void Search::lookahead(size_t real_inflight) {
  if (!opt_.lookahead || opt_.jobs < 2 || upcoming_.empty()) return;
  while (real_inflight + specRunning() < (size_t)opt_.jobs) {
    if (spec_queue_.empty()) {
      if (spec_built_) return;
      buildLookahead();
      if (spec_queue_.empty()) return;
    }
    std::string text = std::move(spec_queue_.front());
    spec_queue_.pop_front();
    SpecTask t{std::make_shared<std::atomic<bool>>(false),
               std::make_shared<std::atomic<bool>>(false)};
    spec_running_.push_back(t);
    ++stats_.lookahead;
    pool_->post(
        [this, t, text = std::move(text), busy = spec_busy_ms_, turn = kSpeculativeTurn + ++turn_] {
          setThreadCancelFlag(t.cancel.get());
          setThreadTurn(turn);
          TestResult r = judge_.test(text);
          setThreadCancelFlag(nullptr);
          if (!r.cached && !r.cancelled) *busy += (long)r.ms;
          t.done->store(true);
        });
  }
}

void Search::accept(const std::string &text, const std::string &pass, const std::string &what) {
  const bool includes_changed = leadingIncludes(text) != leadingIncludes(best_);
  best_ = text;
  cancelSpec(true);  // the lookahead judged edits of the program before this step
  if (!parser_) parser_ = judge_.siteParser();
  if (next_parse_.valid()) parser_->giveBack(next_parse_.get());  // of an older best: not needed
  parser_->giveBack(std::move(parsed_));  // the AST is rebuilt only after an accepted change
  parsed_.reset();
  // The listing parse of the new best starts now, in the background: the search goes on with the
  // rebased sites meanwhile, and when they run out (or the next pass begins) the AST is ready. On
  // the H200 the search waited 0.3-1.4 s for it after most accepted steps, with no
  // candidate in flight (17% of the wall time had none).
  next_parse_text_ = best_;
  next_parse_ =
      std::async(std::launch::async, [p = parser_.get(), t = best_] { return p->parse(t); });
  // After an #include line went, the parse checkers and the listing parse need the preamble of the
  // new #include lines: the accepted candidate's own check built it (they share it), and when it
  // is no longer kept it is built now, beside the listing parse, rather than at the next candidate.
  if (includes_changed && opt_.jobs > 1) judge_.warm(best_);
  ++stats_.accepted;
  stats_.lines = countNonBlankLines(best_);
  stats_.tokens = countTokens(best_);
  std::string err;
  if (!opt_.best_path.empty() && !writeFileAtomic(opt_.best_path, best_, &err))
    throw SearchStop{"cannot save the best program: " + err};
  if (progress_) progress_(stats_, "accepted " + pass + ": " + what);
}

WorkerPool::WorkerPool(int n) {
  for (int i = 0; i < n; ++i)
    threads_.emplace_back([this] {
      for (;;) {
        std::function<void()> t;
        {
          std::unique_lock<std::mutex> l(m_);
          cv_.wait(l, [&] { return stop_ || !q_.empty(); });
          if (stop_) return;
          t = std::move(q_.front());
          q_.pop_front();
        }
        t();
      }
    });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> l(m_);
    stop_ = true;
    q_.clear();
  }
  cv_.notify_all();
  for (auto &t : threads_) t.join();
}

void WorkerPool::post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> l(m_);
    q_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void Search::trace(const std::string &cand, const TestResult &r, const std::string &pass) {
  if (opt_.trace_path.empty() || r.cancelled) return;
  llvm::json::Object o{{"pass", pass},
                       {"hash", contentHash(cand).substr(0, 16)},
                       {"cached", r.cached},
                       {"parse_failed", r.parse_failed},
                       {"detail", r.detail},
                       {"signature", r.signature},
                       {"interesting", r.interesting},
                       {"ms", (long)r.ms},
                       {"t", (long)((now_s() - t0_) * 1000)},
                       {"lines", (long)countNonBlankLines(cand)}};
  // where a candidate's time went: the parse check, the oracle's build (nvcc, or the emulator's
  // translation + g++), its runs
  if (r.parse_ms > 0) o["parse_ms"] = (long)r.parse_ms;
  if (r.build_ms > 0) o["build_ms"] = (long)r.build_ms;
  if (!r.gpu.empty()) o["gpu"] = r.gpu;
  if (r.run_ms > 0) o["run_ms"] = (long)r.run_ms;
  if (!r.note.empty()) o["note"] = r.note;
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::json::Value(std::move(o));
  // One write of the whole line, appended: a kill at any moment leaves whole lines only.
  const std::string line = os.str() + "\n";
  int fd = ::open(opt_.trace_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  (void)!::write(fd, line.data(), line.size());
  ::close(fd);
}

namespace {
// What the tasks of one stream share with it; a task that finishes after the stream returned
// (a cancelled one winding down) still has it.
struct StreamState {
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::optional<TestResult>> res;
  std::vector<std::unique_ptr<std::atomic<bool>>> cancel;
  size_t finished = 0;
};
}  // namespace

int Search::stream(const std::function<std::optional<std::string>()> &next, const std::string &pass,
                   bool first, std::vector<TestResult> *all,
                   const std::function<void(size_t, const TestResult &)> &seen, bool gather) {
  if (!pool_) pool_ = std::make_unique<WorkerPool>(opt_.jobs);
  auto st = std::make_shared<StreamState>();
  std::vector<std::string> texts;  // the candidates submitted, by index (for the trace)
  size_t done_seen = 0, prefix = 0, inflight = 0;
  bool exhausted = false;
  int winner = -1;
  double gather_until = 0;  // with a winner: when the candidates after it are cancelled
  std::vector<char> traced;
  for (;;) {
    // Keep every slot busy: take candidates from the generator while fewer than `jobs` run.
    while (winner < 0 && !exhausted && inflight < (size_t)opt_.jobs) {
      auto c = next();
      if (!c) {
        exhausted = true;
        break;
      }
      if (inflight + specRunning() >= (size_t)opt_.jobs)
        cancelSpec(false);  // the pass's own come first
      size_t i = texts.size();
      texts.push_back(std::move(*c));
      traced.push_back(0);
      {
        std::lock_guard<std::mutex> l(st->m);
        st->res.emplace_back();
        st->cancel.push_back(std::make_unique<std::atomic<bool>>(false));
      }
      ++inflight;
      const std::atomic<bool> *flag = st->cancel.back().get();
      pool_->post([this, st, i, flag, text = texts[i], turn = ++turn_] {
        setThreadCancelFlag(flag);
        setThreadTurn(turn);
        TestResult r = judge_.test(text);
        setThreadCancelFlag(nullptr);
        std::lock_guard<std::mutex> l(st->m);
        st->res[i] = std::move(r);
        ++st->finished;
        st->cv.notify_all();
      });
    }
    if (exhausted && winner < 0) lookahead(inflight);
    std::vector<std::pair<size_t, TestResult>> fresh;
    {
      std::unique_lock<std::mutex> l(st->m);
      if (inflight > 0)
        st->cv.wait_for(l, std::chrono::milliseconds(100),
                        [&] { return st->finished > done_seen || g_stop; });
      inflight -= st->finished - done_seen;
      done_seen = st->finished;
      for (size_t i = 0; i < texts.size(); ++i)
        if (!traced[i] && st->res[i]) {
          traced[i] = 1;
          fresh.push_back({i, *st->res[i]});
        }
      // The first candidate, in order, that is interesting once all before it were judged.
      while (prefix < texts.size() && st->res[prefix] && !(first && st->res[prefix]->interesting))
        ++prefix;
      if (first && prefix < texts.size() && st->res[prefix] && st->res[prefix]->interesting)
        winner = (int)prefix;
    }
    for (auto &[i, r] : fresh) {
      trace(texts[i], r, pass);
      if (seen) seen(i, r);
      if (!r.cached && !r.cancelled) stats_.busy_s += r.ms / 1000.0;
      if (r.infra) {
        ++infra_run_;
        last_infra_ = r.detail + (r.note.empty() ? "" : ": " + r.note);
      } else if (!r.cached && !r.cancelled)
        infra_run_ = 0;
    }
    if (long b = spec_busy_ms_->exchange(0)) stats_.busy_s += b / 1000.0;
    if (!fresh.empty()) {
      const JudgeCounts n = judge_.counts();
      stats_.tests = n.tests;
      stats_.cache_hits = n.cache_hits;
      stats_.parse_skips = n.parse_skips;
      stats_.cancelled = n.cancelled;
      stats_.elapsed_s = now_s() - t0_;
      if (progress_) progress_(stats_, "");
    }
    if (winner >= 0 && gather_until == 0) {
      std::lock_guard<std::mutex> l(st->m);
      const double won_s = st->res[(size_t)winner]->ms / 1000.0;
      gather_until = now_s() + (gather ? std::min(2.0, won_s / 3) : 0.0);
    }
    bool finished = (winner >= 0 && (inflight == 0 || now_s() >= gather_until)) ||
                    (exhausted && prefix == texts.size() && inflight == 0);
    if (g_stop || infra_run_ >= opt_.max_consecutive_infra || finished) {
      // What is still queued or running is not needed any more.
      std::lock_guard<std::mutex> l(st->m);
      for (size_t i = 0; i < st->cancel.size(); ++i)
        if (!st->res[i]) st->cancel[i]->store(true);
    }
    checkStop();  // before trusting results: an interrupt kills runs in flight
    if (finished) break;
  }
  if (all) {
    std::lock_guard<std::mutex> l(st->m);
    all->clear();
    for (auto &r : st->res) all->push_back(r ? *r : TestResult{});
  }
  return winner;
}

std::vector<TestResult> Search::evaluate(const std::vector<std::string> &cands,
                                         const std::string &pass) {
  size_t i = 0;
  std::vector<TestResult> res;
  stream(
      [&]() -> std::optional<std::string> {
        return i < cands.size() ? std::optional<std::string>(cands[i++]) : std::nullopt;
      },
      pass, false, &res);
  return res;
}

int Search::firstInteresting(const std::vector<std::string> &cands, const std::string &pass) {
  size_t i = 0;
  return stream(
      [&]() -> std::optional<std::string> {
        return i < cands.size() ? std::optional<std::string>(cands[i++]) : std::nullopt;
      },
      pass, true, nullptr);
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
  auto sites = plainSites(p, level);
  bool fresh = true;  // `sites` come from a parse of best_ (not rebased)
  // The whole of ddmin as one stream: chunks of k from `pos` to the end, then k/2 from the
  // start, ... down to single sites (a sweep at 1 that took something is run again). The
  // stream's first interesting candidate is the one serial ddmin would have taken; the slots
  // judge the candidates after it speculatively. Those of them that were interesting too are
  // not thrown away: the next stream starts with all of them applied together on top of the
  // winner (one more candidate, judged beside the rest), so that independent removals found in
  // one round trip are taken in one step when they also hold together.
  // After an accepted step the sites are rebased onto the new text (rebaseSites: no parse), so
  // the next stream starts at once; the program is parsed again only when the rebased list is
  // exhausted, and the level ends when that parse offers exactly the sites just exhausted.
  // Single sites judged not interesting since this level began, by what they take out: after an
  // accepted step the sweep goes on from the winner, and the single sites after it that were
  // already judged against the program before that step are not judged again in this level (the
  // next round's visit judges every site afresh). On the GEMM hang (H200, -j16) this
  // cut remove-stmt's judged candidates from 378 to 237 for about the same lines taken.
  std::set<std::string> refused;
  auto keyOf = [&](const PassSite &s) {
    std::string k = s.note;
    for (auto &e : s.edits)
      k +=
          "\x1f" +
          (e.offset + e.length <= best_.size() ? best_.substr(e.offset, e.length) : std::string()) +
          "\x1e" + e.replacement;
    return k;
  };
  size_t k = sites.size(), pos = 0;
  bool hit = false;   // the current sweep at k == 1 took something
  std::string bonus;  // the winner and the other interesting chunks together
  std::vector<Edit> bonus_edits;
  size_t bonus_count = 0;
  struct Chunk {
    size_t k, b, e;
  };
  auto sameSites = [](const std::vector<PassSite> &a, const std::vector<PassSite> &b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].edits != b[i].edits) return false;
    return true;
  };
  for (;;) {
    std::vector<Chunk> meta;
    std::vector<std::string> texts;
    size_t gk = k, gpos = pos;
    bool ghit = hit;
    bool bonus_first = !bonus.empty() && bonus != best_;
    auto next = [&]() -> std::optional<std::string> {
      if (bonus_first && texts.empty()) {
        meta.push_back({0, 0, 0});
        texts.push_back(bonus);
        return bonus;
      }
      for (;;) {
        if (gk == 0) return std::nullopt;
        if (gpos >= sites.size()) {
          if (gk > 1) {
            gk = std::max<size_t>(1, gk / 2);
            gpos = 0;
            continue;
          }
          if (!ghit) return std::nullopt;
          ghit = false;
          gpos = 0;
          continue;
        }
        size_t b = gpos, e = std::min(sites.size(), gpos + gk);
        gpos += gk;
        if (e - b == 1 && refused.count(keyOf(sites[b]))) continue;
        std::vector<const Site *> chunk;
        for (size_t j = b; j < e; ++j) chunk.push_back(&sites[j]);
        std::string c = applySites(best_, chunk);
        if (c == best_) continue;
        meta.push_back({gk, b, e});
        texts.push_back(c);
        return c;
      }
    };
    std::vector<TestResult> all;
    int w = stream(
        next, p.name, true, &all,
        [&](size_t i, const TestResult &r) {
          if (i >= meta.size() || meta[i].k == 0 || meta[i].e - meta[i].b != 1) return;
          if (!r.interesting && !r.cancelled && !r.infra) refused.insert(keyOf(sites[meta[i].b]));
        },
        opt_.gather);
    if (w < 0) {
      bonus.clear();
      if (fresh) break;
      // The rebased list is exhausted: list the sites again from the program as it is now.
      auto again = plainSites(p, level);
      if (sameSites(again, sites)) break;  // nothing new: every one of them was just tried
      sites = std::move(again);
      fresh = true;
      k = sites.size();
      pos = 0;
      hit = false;
      if (sites.empty()) break;
      continue;
    }
    auto [wk, b, e] = meta[(size_t)w];
    std::vector<Edit> took;
    std::vector<PassSite> others;  // the other chunks judged interesting beside the winner
    if (wk == 0) {                 // the bonus: several chunks at once
      took = bonus_edits;
      accept(texts[(size_t)w], p.name,
             std::to_string(bonus_count) +
                 " more sites found interesting beside the last step, together");
      // go on where the first of them was
    } else {
      std::vector<const Site *> chunk;
      for (size_t j = b; j < e; ++j) chunk.push_back(&sites[j]);
      took = appliedEdits(best_, chunk);
      for (size_t i = (size_t)w + 1; i < all.size() && i < meta.size(); ++i)
        if (all[i].interesting && meta[i].k > 0)
          for (size_t j = meta[i].b; j < meta[i].e; ++j) others.push_back(sites[j]);
      accept(texts[(size_t)w], p.name,
             e - b == 1
                 ? sites[b].note
                 : std::to_string(e - b) + " sites from line " + std::to_string(sites[b].line));
      k = wk;
      pos = b;  // same place: the chunks before it were not interesting
      hit = wk == 1;
    }
    bonus.clear();
    bonus_edits.clear();
    if (!others.empty()) {  // the next bonus: the others on top of the winner
      others = rebaseSites(others, took, best_);
      std::vector<const Site *> ptrs;
      for (auto &o : others) ptrs.push_back(&o);
      bonus = applySites(best_, ptrs);
      bonus_edits = appliedEdits(best_, ptrs);
      bonus_count = others.size();
    }
    changed = true;
    sites = rebaseSites(sites, took, best_);  // offsets moved: the sites follow without a parse
    fresh = false;
    k = std::min(k, sites.size());  // none left: the next stream is empty and lists them again
  }
  return changed;
}

// Probabilistic delta debugging (Wang, Lam, Xiong, Zhang: "Probabilistic Delta Debugging",
// ESEC/FSE 2021) over the plain sites of one level. Each site has p, the probability that it is
// needed (0.1 at first). The next try removes the prefix of the sites sorted by p that maximises
// the expected gain |S| x prod(1 - p_i); with -j N the prefixes best, best/2, best/4, ... are
// judged as one stream and the first (largest) interesting one wins, the smaller ones cancelled.
// A failed try S multiplies each p_i in S by 1 / (1 - prod(1 - p_j)) (a single site that fails is
// needed: p = 1); cancelled and infra results say nothing. An accepted try removes S and the other
// sites are rebased onto the new text with their p (no parse), as ddminLevel does; when every
// remaining site is needed (p >= 0.99) the program is parsed again, the sites it offers unchanged
// keep their p, and the level ends when nothing new is offered.
bool Search::pddLevel(const PassInfo &p, int level) {
  bool changed = false;
  auto sites = plainSites(p, level);
  std::vector<double> prob(sites.size(), 0.1);
  bool fresh = true;  // `sites` come from a parse of best_ (not rebased)
  auto editsKey = [](const PassSite &s) {
    std::string k;
    for (auto &e : s.edits)
      k += std::to_string(e.offset) + ":" + std::to_string(e.length) + ":" + e.replacement + "\x1e";
    return k;
  };
  for (int guard = 0; guard < 100000; ++guard) {
    checkStop();
    std::vector<size_t> order(sites.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return prob[a] < prob[b]; });
    // the prefix with the largest expected gain, among the sites not yet known to be needed
    size_t best_n = 0;
    double best_gain = 0, keep = 1;
    for (size_t n = 1; n <= order.size(); ++n) {
      double pi = prob[order[n - 1]];
      if (pi >= 0.99) break;
      keep *= 1 - pi;
      if (n * keep > best_gain) {
        best_gain = n * keep;
        best_n = n;
      }
    }
    if (best_n == 0) {  // every site left is needed
      if (fresh) break;
      auto again = plainSites(p, level);
      std::map<std::string, double> known;
      for (size_t i = 0; i < sites.size(); ++i) known[editsKey(sites[i])] = prob[i];
      std::vector<double> pa(again.size(), 0.1);
      bool any_new = false;
      for (size_t i = 0; i < again.size(); ++i) {
        auto it = known.find(editsKey(again[i]));
        if (it != known.end())
          pa[i] = it->second;
        else
          any_new = true;
      }
      if (!any_new) break;  // the parse offers only what was just found needed
      sites = std::move(again);
      prob = std::move(pa);
      fresh = true;
      continue;
    }
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
      for (size_t j = 0; j < best_n; ++j) prob[order[j]] = 1.0;
      continue;
    }
    size_t next_i = 0;
    std::vector<TestResult> res;
    int win = stream(
        [&]() -> std::optional<std::string> {
          return next_i < cands.size() ? std::optional<std::string>(cands[next_i++]) : std::nullopt;
        },
        p.name, true, &res);
    // every failed prefix raises the probabilities of what it held
    for (size_t i = 0; i < res.size() && i < cand_n.size(); ++i) {
      if (res[i].interesting || res[i].cancelled || res[i].infra) continue;
      double none = 1;
      for (size_t j = 0; j < cand_n[i]; ++j) none *= 1 - prob[order[j]];
      std::vector<double> raised(cand_n[i]);
      for (size_t j = 0; j < cand_n[i]; ++j)
        raised[j] = std::min(1.0, prob[order[j]] / std::max(1e-9, 1 - none));
      for (size_t j = 0; j < cand_n[i]; ++j) prob[order[j]] = raised[j];
    }
    if (win < 0) continue;
    size_t n = cand_n[(size_t)win];
    std::vector<const Site *> chunk;
    for (size_t j = 0; j < n; ++j) chunk.push_back(&sites[order[j]]);
    std::vector<Edit> took = appliedEdits(best_, chunk);
    accept(cands[(size_t)win], p.name,
           n == 1 ? sites[order[0]].note : std::to_string(n) + " sites (pdd)");
    changed = true;
    // the sites not taken follow the edits with their probabilities
    std::vector<PassSite> kept;
    std::vector<double> kept_p;
    for (size_t i = 0; i < sites.size(); ++i) {
      PassSite t = sites[i];
      if (rebaseSite(t, took, best_)) {
        kept.push_back(std::move(t));
        kept_p.push_back(prob[i]);
      }
    }
    sites = std::move(kept);
    prob = std::move(kept_p);
    fresh = false;
  }
  return changed;
}

// Alternatives (a group per place): per place, the first interesting alternative in the pass's
// order. Every open place is judged at once (all alternatives of all places in one stream,
// filling the -j slots), and the winners are then taken together as far as they hold: the
// prefixes winner 1, 1+2, 1+2+3, ... are judged at once and the longest interesting one is taken
// (winner 1 alone when none is). A place is open until judged; a place with a key (a knob's
// name) is settled once judged and opens again only when its winner was judged against a program
// that then changed; a place without one (a branch, a loop bound) is passed over while its text
// stays as judged and looked at again in any new form (the list is rebased after each step and
// read from a fresh parse when it runs out).
bool Search::groups(const PassInfo &p, int rounds, bool *cut) {
  bool changed = false;
  int round = 0;
  std::set<std::string> settled;  // keyed places already decided
  std::vector<PassSite> passed;   // unkeyed places decided without a take: their first alternative
  auto grouped = [&] {
    std::vector<PassSite> v;
    for (auto &s : enumerate(p))
      if (s.group >= 0) v.push_back(s);
    return v;
  };
  auto cur = grouped();
  bool dirty = false;  // `cur` was rebased since the last parse
  // An accepted step: the remaining alternatives follow the text without a parse.
  auto take = [&](const std::string &text, const std::vector<const Site *> &sites,
                  const std::string &what) {
    auto took = appliedEdits(best_, sites);
    accept(text, p.name, what);
    cur = rebaseSites(cur, took, best_);
    passed = rebaseSites(passed, took, best_);
    dirty = true;
    changed = true;
  };
  {
    // Every keyed place at its first alternative, in one test (the shape pass: every knob at
    // its smallest value; when the program still fails so, the minimum shape costs one test).
    std::vector<const Site *> firsts;
    std::set<int> seen;
    std::string what;
    for (auto &s : cur)
      if (!s.place.empty() && seen.insert(s.group).second) {
        firsts.push_back(&s);
        if (firsts.size() <= 3) what += (what.empty() ? "" : ", ") + s.note;
      }
    if (firsts.size() > 1) {
      std::string c = applySites(best_, firsts);
      if (c != best_ && firstInteresting({c}, p.name) == 0)
        take(c, firsts,
             "all " + std::to_string(firsts.size()) + " places at their first alternative (" +
                 what + ", ...)");
    }
  }
  auto isPassed = [&](const PassSite &s) {
    for (auto &q : passed)
      if (q.edits == s.edits) return true;
    return false;
  };
  for (;;) {
    checkStop();
    std::map<int, std::vector<PassSite>> byGroup;
    std::vector<int> order;
    for (auto &s : cur) {
      if (!byGroup.count(s.group)) order.push_back(s.group);
      byGroup[s.group].push_back(s);
    }
    std::vector<int> open;
    for (int gid : order) {
      auto &alts = byGroup[gid];
      const std::string &key = alts.front().place;
      if (key.empty() ? isPassed(alts.front()) : settled.count(key) > 0) continue;
      open.push_back(gid);
    }
    if (open.empty()) {
      if (!dirty) return changed;
      cur = grouped();  // the rebased list is used up: look at the program as it is now
      dirty = false;
      continue;
    }
    if (rounds > 0 && round++ >= rounds) {
      if (cut) *cut = true;
      return changed;
    }

    // Every place's first alternative, then every place's second, ...: an alternative whose place
    // already has an interesting one before it is not judged at all.
    std::vector<std::pair<int, size_t>> plan;
    size_t most = 0;
    for (int gid : open) most = std::max(most, byGroup[gid].size());
    for (size_t i = 0; i < most; ++i)
      for (int gid : open)
        if (i < byGroup[gid].size()) plan.push_back({gid, i});
    std::vector<std::string> cands;
    std::vector<std::pair<int, size_t>> who;  // (group, alternative) of each candidate
    std::map<int, size_t> best_alt;  // place -> its first interesting alternative seen so far
    size_t at = 0;
    std::vector<TestResult> res;
    stream(
        [&]() -> std::optional<std::string> {
          for (; at < plan.size(); ++at) {
            auto [gid, i] = plan[at];
            if (auto it = best_alt.find(gid); it != best_alt.end() && it->second < i) continue;
            std::string c = applySites(best_, std::vector<Site>{byGroup[gid][i]});
            if (c == best_) continue;
            cands.push_back(std::move(c));
            who.push_back({gid, i});
            ++at;
            return cands.back();
          }
          return std::nullopt;
        },
        p.name, false, &res,
        [&](size_t k, const TestResult &r) {
          if (!r.interesting) return;
          auto [gid, i] = who[k];
          auto it = best_alt.find(gid);
          if (it == best_alt.end() || i < it->second) best_alt[gid] = i;
        });
    std::vector<size_t>
        winners;  // index into cands: the first interesting alternative per place, in place order
    std::set<int> won;
    for (auto &[gid, i] : best_alt) won.insert(gid);
    for (int gid : open)
      if (won.count(gid))
        for (size_t k = 0; k < cands.size(); ++k)
          if (who[k].first == gid && who[k].second == best_alt[gid]) {
            winners.push_back(k);
            break;
          }
    for (int gid : open) {
      auto &front = byGroup[gid].front();
      if (!front.place.empty())
        settled.insert(front.place);
      else if (!won.count(gid))
        passed.push_back(front);
    }
    if (winners.empty()) continue;
    auto site = [&](size_t w) -> const PassSite & { return byGroup[who[w].first][who[w].second]; };
    size_t n = 1;  // how many winners, in order, are taken
    std::string text = cands[winners[0]];
    if (winners.size() > 1) {
      std::vector<std::string> prefixes;  // winners 1..k applied together, k = 2..all
      std::vector<const Site *> acc{&site(winners[0])};
      for (size_t k = 1; k < winners.size(); ++k) {
        acc.push_back(&site(winners[k]));
        prefixes.push_back(applySites(best_, acc));
      }
      auto pres = evaluate(prefixes, p.name);
      for (size_t k = pres.size(); k-- > 0;)
        if (pres[k].interesting) {
          n = k + 2;
          text = prefixes[k];
          break;
        }
    }
    std::vector<const Site *> taken;
    std::string what;
    for (size_t k = 0; k < n; ++k) {
      taken.push_back(&site(winners[k]));
      if (k < 3) what += (what.empty() ? "" : ", ") + site(winners[k]).note;
    }
    if (n > 3) what += " and " + std::to_string(n - 3) + " more";
    // The other winners were judged against the old program: their places open again.
    for (size_t k = n; k < winners.size(); ++k)
      if (!site(winners[k]).place.empty()) settled.erase(site(winners[k]).place);
    take(text, taken, what);
  }
}

// One pass, its sites down to level `cap` (the round number): hierarchical across
// passes, so that after the outer statements go, remove-function can take the helpers
// that became unused before anyone works through their insides line by line.
bool Search::runPass(const PassInfo &p, int cap, bool *deeper) {
  stats_.pass = p.name;
  if (progress_) progress_(stats_, "pass " + std::string(p.name));
  bool changed = false;
  // The shape passes' first visit (round 0) is one round of every knob at once: the minimum
  // shape comes first, as the seed's step 1 says, but its last halvings (each a round of ~20 s
  // on the H200) wait for the next visit, after the structure passes' first round: on the GEMM
  // hang the shape passes had taken 35-40% of a 255 s budget before any line went.
  bool cut = false;
  changed |= groups(p, p.phase == Phase::Shape && cap == 0 && !opt_.full_shape_first ? 1 : 0, &cut);
  if (cut) *deeper = true;
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

Schedule Schedule::standard(bool build_symptom) {
  Schedule s;
  s.is_standard = true;
  auto add = [&](std::vector<const PassInfo *> &to, std::initializer_list<Phase> phases) {
    for (Phase ph : phases)
      for (auto &p : allPasses())
        if (p.phase == ph && (build_symptom || !p.build_only)) to.push_back(&p);
  };
  add(s.first, {Phase::Invisible});
  add(s.rounds, {Phase::Shape, Phase::Structure});
  add(s.between, {Phase::Expression});
  add(s.last, {Phase::Fallback, Phase::Cosmetic, Phase::Invisible});
  return s;
}

Schedule Schedule::only(std::vector<const PassInfo *> passes) {
  Schedule s;
  s.rounds = std::move(passes);
  return s;
}

std::string Search::run(const std::string &start) {
  t0_ = now_s();
  best_ = start;
  stats_.start_lines = stats_.lines = countNonBlankLines(start);
  stats_.start_tokens = stats_.tokens = countTokens(start);
  const Schedule &sched = opt_.schedule;
  // What no compiler sees goes first, all in one test: left to the end, comments and blank-line
  // runs were a third of the lines of a reduction interrupted on the H200 (71 of 253).
  for (const PassInfo *c : sched.first) {
    ParsedSource text_only;
    text_only.text = best_;
    auto sites = c->sites(text_only);
    std::vector<const Site *> all;
    for (auto &x : sites) all.push_back(&x);
    std::string cand = applySites(best_, all);
    if (!sites.empty() && cand != best_ && firstInteresting({cand}, c->name) == 0)
      accept(cand, c->name, "all " + std::to_string(sites.size()) + " sites at once");
  }
  const auto &main = sched.rounds, &expr = sched.between, &tail = sched.last;
  int round = 0;
  bool expr_since_strong = false;  // the expression passes ran since the last strong round
  for (;;) {
    for (; round < opt_.max_rounds; ++round) {
      bool changed = false, deeper = false;
      unsigned lines0 = stats_.lines;
      std::vector<const PassInfo *> order = main;
      if (round == 0 && opt_.shape_after_structure)
        std::stable_partition(order.begin(), order.end(),
                              [](const PassInfo *p) { return p->phase != Phase::Shape; });
      for (size_t i = 0; i < order.size(); ++i) {
        checkStop();
        upcoming_.assign(order.begin() + (long)i + 1, order.end());
        spec_queue_.clear();  // built again for the passes after this one
        spec_built_ = false;
        changed |= runPass(*order[i], round, &deeper);
      }
      upcoming_.clear();
      // A weak round (after the first two, under 10% of the lines taken) does not wait for the
      // fixpoint: the expression passes run now, once until a strong round comes. On the H200
      // rounds 3-5 took 3 lines in 47 s before simplify-expr ran, and what
      // it cut then freed 14 lines in the next round.
      bool weak = round >= 2 && (long)(lines0 - stats_.lines) * 10 < (long)lines0;
      if (!weak) expr_since_strong = false;
      if ((changed || deeper) && (!weak || expr_since_strong)) continue;
      // The shape and structure passes are at a fixpoint (or weak): now the expression passes.
      // They take few lines for many tests (simplify-expr on the GEMM hang: 98 tests,
      // 30 s, 2 lines), so they wait until little is left to take by declaration, statement or
      // function; what they change (a condition folded to 0) can free more structure, hence
      // another round.
      bool echanged = false;
      for (auto *p : expr) {
        checkStop();
        echanged |= runPass(*p, round, &deeper);
      }
      expr_since_strong = true;
      if (!changed && !echanged && !deeper)
        break;  // a fixpoint: no pass found anything more, at any depth
    }
    bool changed = false, deeper = false;
    for (auto *p : tail) {
      checkStop();
      changed |= runPass(*p, 1 << 20, &deeper);
    }
    if (!changed || round >= opt_.max_rounds) break;
    round = 0;  // the fallback changed the program: the AST passes from the top again
  }
  stats_.elapsed_s = now_s() - t0_;
  return best_;
}

}  // namespace wsr
