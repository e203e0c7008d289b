// The search on its own, driven by a predicate on the text: ddmin, pdd, the alternatives of one
// place, the schedule's moves and the stops, with no parse, build or run behind the judge. What
// a whole reduction does with them is tests/test_reducer.cpp.
#include "process.h"
#include "search.h"
#include "tester.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <set>

namespace {

using namespace wsr;

// A judge that asks a predicate; it counts and remembers what it was asked.
class PredicateJudge : public Judge {
 public:
  explicit PredicateJudge(std::function<bool(const std::string &)> interesting)
      : interesting_(std::move(interesting)) {}
  TestResult test(const std::string &text) override {
    TestResult r;
    r.interesting = interesting_(text);
    r.detail = r.interesting ? "interesting" : "not interesting";
    std::lock_guard<std::mutex> l(m_);
    ++counts_.tests;
    asked_.push_back(text);
    return r;
  }
  std::unique_ptr<SiteParser> siteParser() const override {
    return std::make_unique<TextOnlyParser>();
  }
  JudgeCounts counts() const override {
    std::lock_guard<std::mutex> l(m_);
    return counts_;
  }
  std::vector<std::string> asked() const {
    std::lock_guard<std::mutex> l(m_);
    return asked_;
  }

 private:
  std::function<bool(const std::string &)> interesting_;
  mutable std::mutex m_;
  JudgeCounts counts_;
  std::vector<std::string> asked_;
};

// A judge that cannot judge anything.
class BrokenJudge : public PredicateJudge {
 public:
  BrokenJudge() : PredicateJudge([](const std::string &) { return false; }) {}
  TestResult test(const std::string &text) override {
    TestResult r = PredicateJudge::test(text);
    r.infra = true;
    r.detail = "infra-error";
    return r;
  }
};

std::string numberedLines(int n) {
  std::string t;
  for (int i = 0; i < n; ++i) t += "line" + std::to_string(i) + "\n";
  return t;
}

bool has(const std::string &text, const std::string &line) {
  return text.find(line + "\n") != std::string::npos;
}

// Each digit a place whose alternatives are the smaller of 0 and 1, the smallest first.
std::vector<PassSite> digitSites(const ParsedSource &src) {
  std::vector<PassSite> sites;
  for (unsigned i = 0; i < src.text.size(); ++i) {
    char d = src.text[i];
    if (d < '0' || d > '9') continue;
    for (char v : {'0', '1'}) {
      if (v >= d) continue;
      PassSite s;
      s.pass = "digits";
      s.edits = {Edit{i, 1, std::string(1, v)}};
      s.note = std::string("digit at ") + std::to_string(i) + " -> " + v;
      s.group = (int)i;
      s.place = "digit" + std::to_string(i);
      sites.push_back(s);
    }
  }
  return sites;
}
const PassInfo kDigits{"digits", "each digit lowered to 0 or 1", Phase::Shape, &digitSites};

const PassInfo &pass(const char *name) {
  const PassInfo *p = findPass(name);
  EXPECT_NE(p, nullptr) << name;
  return *p;
}

std::string reduce(Judge &judge, const std::string &start, SearchOptions o) {
  Search search(judge, std::move(o), nullptr);
  return search.run(start);
}

SearchOptions linesOnly(int jobs = 1, const std::string &algorithm = "ddmin") {
  SearchOptions o;
  o.schedule = Schedule::only({&pass("lines")});
  o.jobs = jobs;
  o.algorithm = algorithm;
  return o;
}

TEST(Search, DdminKeepsExactlyTheLinesThePredicateNeeds) {
  PredicateJudge judge([](const std::string &t) { return has(t, "line3") && has(t, "line17"); });
  const std::string start = numberedLines(20);
  ASSERT_TRUE(judge.test(start).interesting);
  EXPECT_EQ(reduce(judge, start, linesOnly()), "line3\nline17\n");
  // Chunks halve: far fewer tests than trying each subset, a few more than the 20 lines.
  EXPECT_LT(judge.counts().tests, 80) << "tests: " << judge.counts().tests;
}

TEST(Search, PddKeepsExactlyTheLinesThePredicateNeeds) {
  PredicateJudge judge([](const std::string &t) { return has(t, "line3") && has(t, "line17"); });
  EXPECT_EQ(reduce(judge, numberedLines(20), linesOnly(1, "pdd")), "line3\nline17\n");
}

// The first interesting candidate in order wins, whatever finishes first: more slots give the
// same result.
TEST(Search, TheResultDoesNotDependOnHowManyCandidatesRunAtOnce) {
  auto needs = [](const std::string &t) {
    return has(t, "line1") && has(t, "line8") && has(t, "line9") && has(t, "line30");
  };
  PredicateJudge one(needs), four(needs);
  const std::string start = numberedLines(40);
  EXPECT_EQ(reduce(one, start, linesOnly(1)), reduce(four, start, linesOnly(4)));
}

// Alternatives of one place are tried smallest first and at most one is kept: 7 becomes 1 where
// 0 fails, 9 becomes 0.
TEST(Search, AlternativesKeepTheSmallestValueThatStillFails) {
  PredicateJudge judge([](const std::string &t) { return t.size() == 7 && t[2] != '0'; });
  SearchOptions o;
  o.schedule = Schedule::only({&kDigits});
  EXPECT_EQ(reduce(judge, "K=7 M=9", o), "K=1 M=0");
}

TEST(Search, TheStandardScheduleIsTheRegistrysPhases) {
  const Schedule s = Schedule::standard();
  auto names = [](const std::vector<const PassInfo *> &v) {
    std::vector<std::string> n;
    for (auto *p : v) n.push_back(p->name);
    return n;
  };
  EXPECT_EQ(names(s.first), std::vector<std::string>{"cleanup"});
  ASSERT_FALSE(s.rounds.empty());
  EXPECT_EQ(s.rounds.front()->phase, Phase::Shape) << "the minimum failing shape first";
  bool structure = false;
  for (auto *p : s.rounds) {
    EXPECT_TRUE(p->phase == Phase::Shape || p->phase == Phase::Structure) << p->name;
    if (p->phase == Phase::Structure) structure = true;
    if (structure) {
      EXPECT_NE(p->phase, Phase::Shape) << p->name << " after a structure pass";
    }
  }
  for (auto *p : s.between) EXPECT_EQ(p->phase, Phase::Expression) << p->name;
  auto last = names(s.last);
  EXPECT_EQ(last.back(), "cleanup") << "comments left by the fallback go one by one at the end";
  std::set<std::string> all;
  for (auto *v : {&s.first, &s.rounds, &s.between, &s.last})
    for (auto *p : *v) all.insert(p->name);
  for (auto &p : allPasses())
    EXPECT_TRUE(all.count(p.name) != p.build_only)
        << p.name << (p.build_only ? " runs where a program's run judges" : " is never run");
  // A compile error, which only a build judges, has them too.
  const Schedule b = Schedule::standard(/*build_symptom=*/true);
  for (auto &p : allPasses())
    if (p.build_only)
      EXPECT_NE(std::find(b.rounds.begin(), b.rounds.end(), &p), b.rounds.end()) << p.name;
}

// What no compiler sees goes in the first test, all at once.
TEST(Search, TheFirstMoveTakesEveryCommentInOneTest) {
  PredicateJudge judge([](const std::string &t) { return t.find("keep") != std::string::npos; });
  SearchOptions o;
  o.schedule = Schedule::only({});
  o.schedule.first = {&pass("cleanup")};
  const std::string start = "// one\nkeep\n\n\n\n// two\nkeep too /* three */\n";
  std::string out = reduce(judge, start, o);
  EXPECT_EQ(out.find("//"), std::string::npos) << out;
  EXPECT_EQ(out.find("/*"), std::string::npos) << out;
  ASSERT_EQ(judge.asked().size(), 1u) << "one test for every comment and blank-line run";
}

TEST(Search, AJudgeThatCannotJudgeStopsTheSearchWithTheReason) {
  BrokenJudge judge;
  SearchOptions o = linesOnly();
  o.max_consecutive_infra = 3;
  Search search(judge, o, nullptr);
  try {
    search.run(numberedLines(10));
    FAIL() << "the search went on without a judge";
  } catch (const SearchStop &stop) {
    EXPECT_FALSE(stop.budget);
    EXPECT_NE(stop.reason.find("could not judge 3 candidates in a row"), std::string::npos)
        << stop.reason;
    EXPECT_EQ(search.best(), numberedLines(10)) << "nothing was accepted";
  }
}

// The best program so far is on disk after every accepted step.
TEST(Search, TheBestProgramIsWrittenAfterEveryAcceptedStep) {
  const std::string path = ::testing::TempDir() + "/search_best.txt";
  std::vector<std::string> on_disk;
  PredicateJudge judge([](const std::string &t) { return has(t, "line5"); });
  SearchOptions o = linesOnly();
  o.best_path = path;
  Search search(judge, o, [&](const SearchStats &, const std::string &event) {
    if (event.rfind("accepted", 0) == 0) on_disk.push_back(readFile(path).value_or("?"));
  });
  EXPECT_EQ(search.run(numberedLines(12)), "line5\n");
  ASSERT_FALSE(on_disk.empty());
  EXPECT_EQ(on_disk.back(), "line5\n");
  EXPECT_EQ(search.stats().accepted, (long)on_disk.size());
}

// A judge whose judgments take a while, a little longer the later the first line a candidate
// removes (ddmin's later chunks), as GPU judgments spread around their build time.
class SlowJudge : public PredicateJudge {
 public:
  using PredicateJudge::PredicateJudge;
  TestResult test(const std::string &text) override {
    int first_missing = 0;
    while (has(text, "line" + std::to_string(first_missing))) ++first_missing;
    const int ms = 120 + first_missing;
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    TestResult r = PredicateJudge::test(text);
    r.ms = ms;
    return r;
  }
};

// With a winner found, the chunks judged beside it that finish a few milliseconds later are not
// cancelled but taken together in the next step: the same result in fewer accepted steps (each
// step is a round trip of a whole judgment).
TEST(Search, GatherTakesTheChunksFinishingBesideTheWinnerTogether) {
  auto needs = [](const std::string &t) {
    for (int i = 0; i < 40; i += 5)
      if (!has(t, "line" + std::to_string(i))) return false;
    return true;
  };
  const std::string start = numberedLines(40);
  long steps[2] = {0, 0};
  std::string results[2];
  for (int gather = 0; gather < 2; ++gather) {
    SlowJudge judge(needs);
    SearchOptions o = linesOnly(8);
    o.gather = gather;
    Search search(judge, o, nullptr);
    results[gather] = search.run(start);
    steps[gather] = search.stats().accepted;
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_TRUE(needs(results[1]));
  EXPECT_LT(steps[1], steps[0]) << "gathered " << steps[1] << " steps, plain " << steps[0];
}

}  // namespace

// One GPU slot, four candidates waiting for it: they run in the order the search needs their
// verdicts (lowest turn first), not in the order their builds happened to finish, and one the
// search stopped needing leaves the queue without running.
TEST(TurnGate, TheLowestTurnRunsFirstAndACancelledOneNeverEnters) {
  wsr::TurnGate gate(1);
  ASSERT_TRUE(gate.enter());  // turn 0 (this thread's): holds the slot
  std::mutex m;
  std::vector<unsigned long long> order;
  std::atomic<bool> cancel_seven{false};
  std::vector<std::thread> ts;
  for (unsigned long long turn : {9ull, 3ull, 7ull, 5ull})
    ts.emplace_back([&, turn] {
      if (turn == 7) wsr::setThreadCancelFlag(&cancel_seven);
      wsr::setThreadTurn(turn);
      if (!gate.enter()) {
        std::lock_guard<std::mutex> l(m);
        order.push_back(1000 + turn);  // left without entering
        return;
      }
      {
        std::lock_guard<std::mutex> l(m);
        order.push_back(turn);
      }
      gate.leave();
    });
  while (gate.waiting() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  cancel_seven = true;
  while (gate.waiting() > 3) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  gate.leave();
  for (auto &t : ts) t.join();
  EXPECT_EQ(order, (std::vector<unsigned long long>{1007, 3, 5, 9}));
}
