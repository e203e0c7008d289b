#include "verdict.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <sstream>

namespace wsr {
namespace json = llvm::json;

json::Value toJSON(const Verdict &v) {
  json::Array ev;
  for (auto &e : v.evidence) ev.push_back(e);
  json::Array runs;
  for (auto &r : v.runs)
    runs.push_back(json::Object{{"symptom", r.symptom},
                                {"detail", r.detail},
                                {"signature", r.signature},
                                {"exit_code", r.exit_code},
                                {"signal", r.signal},
                                {"timed_out", r.timed_out},
                                {"wall_ms", r.wall_ms}});
  json::Array run_ms;
  for (double d : v.timings.run_ms) run_ms.push_back(d);
  json::Object o{{"symptom", v.symptom},
                 {"detail", v.detail},
                 {"signature", v.signature},
                 {"evidence", std::move(ev)},
                 {"matched", v.matched},
                 {"timings", json::Object{{"build_ms", v.timings.build_ms},
                                          {"build_cached", v.timings.build_cached},
                                          {"run_ms", std::move(run_ms)},
                                          {"total_ms", v.timings.total_ms}}},
                 {"runs", std::move(runs)}};
  if (!v.sanitizer_tool.empty())
    o["sanitizer"] = json::Object{{"tool", v.sanitizer_tool}, {"output", v.sanitizer_output}};
  if (!v.backend.empty()) o["backend"] = v.backend;
  if (!v.policies.empty()) {
    json::Array ps;
    for (auto &p : v.policies)
      ps.push_back(
          json::Object{{"policy", p.policy}, {"detail", p.detail}, {"signature", p.signature}});
    o["policies"] = std::move(ps);
  }
  return o;
}

namespace {
std::string str(const json::Object &o, llvm::StringRef k) {
  if (auto s = o.getString(k)) return s->str();
  return {};
}
}  // namespace

std::optional<Verdict> verdictFromJSON(const std::string &text, std::string *err) {
  auto parsed = json::parse(text);
  if (!parsed) {
    if (err) *err = llvm::toString(parsed.takeError());
    return std::nullopt;
  }
  auto *o = parsed->getAsObject();
  if (!o || !o->getString("symptom")) {
    if (err) *err = "not a verdict object";
    return std::nullopt;
  }
  Verdict v;
  v.symptom = str(*o, "symptom");
  v.detail = str(*o, "detail");
  v.signature = str(*o, "signature");
  v.matched = o->getBoolean("matched").value_or(false);
  if (auto b = o->getString("backend")) v.backend = b->str();
  if (auto *ps = o->getArray("policies"))
    for (auto &e : *ps)
      if (auto *po = e.getAsObject())
        v.policies.push_back({po->getString("policy").value_or("").str(),
                              po->getString("detail").value_or("").str(),
                              po->getString("signature").value_or("").str()});
  if (auto *ev = o->getArray("evidence"))
    for (auto &e : *ev)
      if (auto s = e.getAsString()) v.evidence.push_back(s->str());
  if (auto *t = o->getObject("timings")) {
    v.timings.build_ms = t->getNumber("build_ms").value_or(0);
    v.timings.build_cached = t->getBoolean("build_cached").value_or(false);
    v.timings.total_ms = t->getNumber("total_ms").value_or(0);
    if (auto *rm = t->getArray("run_ms"))
      for (auto &d : *rm) v.timings.run_ms.push_back(d.getAsNumber().value_or(0));
  }
  if (auto *rs = o->getArray("runs"))
    for (auto &r : *rs)
      if (auto *ro = r.getAsObject()) {
        RunSummary s;
        s.symptom = str(*ro, "symptom");
        s.detail = str(*ro, "detail");
        s.signature = str(*ro, "signature");
        s.exit_code = (int)ro->getInteger("exit_code").value_or(0);
        s.signal = (int)ro->getInteger("signal").value_or(0);
        s.timed_out = ro->getBoolean("timed_out").value_or(false);
        s.wall_ms = ro->getNumber("wall_ms").value_or(0);
        v.runs.push_back(s);
      }
  if (auto *s = o->getObject("sanitizer")) {
    v.sanitizer_tool = str(*s, "tool");
    v.sanitizer_output = str(*s, "output");
  }
  return v;
}

json::Value toJSON(const RunRecord &r) {
  return json::Object{{"exit_code", r.exit_code},
                      {"signal", r.signal},
                      {"timed_out", r.timed_out},
                      {"spawn_failed", r.spawn_failed},
                      {"spawn_error", r.spawn_error},
                      {"wall_ms", r.wall_ms},
                      {"stdout", r.out},
                      {"stderr", r.err},
                      {"stdout_truncated", r.out_truncated},
                      {"stderr_truncated", r.err_truncated},
                      {"stdout_bytes", r.out_bytes},
                      {"stderr_bytes", r.err_bytes},
                      {"watch", r.watch},
                      {"forensics", r.forensics},
                      {"ended_after_watchdog", r.ended_after_watchdog},
                      {"timeout_s", r.timeout_s}};
}

std::optional<RunRecord> runRecordFromJSON(const std::string &text, std::string *err) {
  auto parsed = json::parse(text);
  if (!parsed) {
    if (err) *err = llvm::toString(parsed.takeError());
    return std::nullopt;
  }
  auto *o = parsed->getAsObject();
  if (!o) {
    if (err) *err = "not a run record object";
    return std::nullopt;
  }
  RunRecord r;
  r.exit_code = (int)o->getInteger("exit_code").value_or(0);
  r.signal = (int)o->getInteger("signal").value_or(0);
  r.timed_out = o->getBoolean("timed_out").value_or(false);
  r.spawn_failed = o->getBoolean("spawn_failed").value_or(false);
  r.spawn_error = str(*o, "spawn_error");
  r.wall_ms = o->getNumber("wall_ms").value_or(0);
  r.out = str(*o, "stdout");
  r.err = str(*o, "stderr");
  r.out_truncated = o->getBoolean("stdout_truncated").value_or(false);
  r.err_truncated = o->getBoolean("stderr_truncated").value_or(false);
  r.out_bytes = o->getInteger("stdout_bytes").value_or((long long)r.out.size());
  r.err_bytes = o->getInteger("stderr_bytes").value_or((long long)r.err.size());
  r.watch = str(*o, "watch");
  r.ended_after_watchdog = o->getBoolean("ended_after_watchdog").value_or(false);
  r.forensics = str(*o, "forensics");
  r.timeout_s = o->getNumber("timeout_s").value_or(0);
  return r;
}

std::string renderHuman(const Verdict &v) {
  std::ostringstream s;
  s << "verdict:   " << v.symptom;
  if (!v.detail.empty() && v.detail != v.symptom) s << "  (" << v.detail << ")";
  s << "\nsignature: " << v.signature << "\n";
  if (!v.evidence.empty()) {
    s << "evidence:\n";
    for (auto &e : v.evidence) s << "  " << e << "\n";
  }
  if (!v.backend.empty()) s << "backend:   " << v.backend << "\n";
  if (v.policies.size() > 1) {
    s << "policies:\n";
    for (auto &p : v.policies) s << "  " << p.policy << ": " << p.detail << "\n";
  }
  if (v.runs.size() > 1) {
    s << "runs:\n";
    for (size_t i = 0; i < v.runs.size(); ++i)
      s << "  #" << i + 1 << " " << v.runs[i].detail << "  " << (long)v.runs[i].wall_ms << " ms\n";
  }
  s << "timings:   build " << (long)v.timings.build_ms << " ms"
    << (v.timings.build_cached ? " (cached)" : "") << ", run";
  for (double d : v.timings.run_ms) s << " " << (long)d << " ms";
  s << ", total " << (long)v.timings.total_ms << " ms\n";
  if (!v.sanitizer_tool.empty()) {
    s << "compute-sanitizer --tool " << v.sanitizer_tool << " (evidence, not the verdict):\n";
    std::istringstream in(v.sanitizer_output);
    std::string line;
    int n = 0;
    while (std::getline(in, line) && n < 40) {
      s << "  | " << line << "\n";
      ++n;
    }
  }
  return s.str();
}

}  // namespace wsr
