#include "campaign.h"

#include "keeper.h"
#include "report.h"

#include "oracle.h"
#include "reduce.h"

#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>
#include <thread>

namespace fs = std::filesystem;

namespace wsr::fuzz {

static std::atomic<bool> g_stop{false};
void requestStop() {
  g_stop = true;
  Search::requestStop();
}

std::optional<std::pair<int, int>> parseShard(const std::string &s) {
  static const std::regex re(R"(^\s*(\d+)\s*/\s*(\d+)\s*$)");
  std::smatch m;
  if (!std::regex_match(s, m, re)) return std::nullopt;
  int i = std::stoi(m[1]), n = std::stoi(m[2]);
  if (n < 1 || i < 0 || i >= n) return std::nullopt;
  return std::make_pair(i, n);
}

std::vector<std::string> parseGpus(const std::string &s) { return parseGpuList(s); }

bool inShard(const std::string &hash, int i, int n) {
  if (n <= 1) return true;
  unsigned long long v = std::stoull(hash.substr(0, 15), nullptr, 16);
  return (int)(v % (unsigned long long)n) == i;
}

std::string mutantHash(const std::string &arch, const std::vector<std::string> &defines,
                       const std::string &text) {
  std::string key = "arch=" + arch + "\n";
  for (auto &d : defines) key += "-D" + d + "\n";
  return contentHash(key + text);
}

std::map<std::string, std::string> campaignRunEnv(const CampaignOptions &o) {
  std::map<std::string, std::string> env;
  if (o.max_connections > 0 && !std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"))
    env["CUDA_DEVICE_MAX_CONNECTIONS"] = std::to_string(o.max_connections);
  return env;
}

// ---- GPU slots -------------------------------------------------------------------------------
SlotPool::SlotPool(const std::vector<std::string> &devices, int per_device) {
  // In rounds over the devices (0, 1, 0, 1, ...): the first free slot spreads the runs over them.
  for (int r = 0; r < std::max(1, per_device); ++r)
    for (auto &d : devices) slots_.push_back(d);
  if (slots_.empty()) slots_.push_back("");
  devices_ = std::max<size_t>(1, devices.size());
  busy_.assign(slots_.size(), false);
  waiter_.assign(slots_.size(), false);
}

size_t SlotPool::acquire() {
  std::unique_lock<std::mutex> l(m_);
  for (;;) {
    for (size_t i = 0; i < slots_.size(); ++i)
      if (!busy_[i] && !waiter_[i]) {
        busy_[i] = true;
        max_busy_ = std::max(max_busy_, ++n_busy_);
        return i;
      }
    cv_.wait(l);
  }
}

size_t SlotPool::reserve() {
  std::unique_lock<std::mutex> l(m_);
  for (;;) {
    size_t pick = slots_.size();
    for (size_t i = 0; i < slots_.size(); ++i)  // a free slot first, else any without a waiter
      if (!waiter_[i] && (pick == slots_.size() || (busy_[pick] && !busy_[i]))) pick = i;
    if (pick < slots_.size()) {
      waiter_[pick] = true;
      return pick;
    }
    cv_.wait(l);
  }
}

void SlotPool::take(size_t i) {
  std::unique_lock<std::mutex> l(m_);
  cv_.wait(l, [&] { return !busy_[i]; });
  busy_[i] = true;
  waiter_[i] = false;
  max_busy_ = std::max(max_busy_, ++n_busy_);
  l.unlock();
  cv_.notify_all();  // the slot has room for a waiter again
}

void SlotPool::release(size_t i) {
  {
    std::lock_guard<std::mutex> l(m_);
    if (i < busy_.size() && busy_[i]) {
      busy_[i] = false;
      --n_busy_;
    }
  }
  cv_.notify_all();  // its waiter, or an acquire()
}

void parallelFor(size_t n, int jobs, const std::function<void(size_t)> &work,
                 const std::function<bool()> &stop) {
  std::atomic<size_t> next{0};
  auto loop = [&] {
    for (;;) {
      if (stop()) return;
      size_t i = next++;
      if (i >= n) return;
      work(i);
    }
  };
  int t = std::max(1, std::min<int>(jobs, (int)n));
  std::vector<std::thread> pool;
  for (int k = 1; k < t; ++k) pool.emplace_back(loop);
  loop();
  for (auto &th : pool) th.join();
}

// ---- planning --------------------------------------------------------------------------------
std::vector<std::string> kernelFiles(const std::vector<std::string> &args, std::string *err) {
  std::vector<std::string> out;
  for (auto &a : args) {
    std::error_code ec;
    if (fs::is_directory(a, ec)) {
      std::vector<std::string> here;
      for (auto &e : fs::directory_iterator(a, ec)) {
        auto ext = e.path().extension().string();
        if (e.is_regular_file() && (ext == ".cu" || ext == ".cpp"))
          here.push_back(fs::absolute(e.path()).string());
      }
      std::sort(here.begin(), here.end());
      if (here.empty()) {
        *err = "no .cu files in " + a;
        return {};
      }
      out.insert(out.end(), here.begin(), here.end());
    } else if (fs::exists(a, ec)) {
      out.push_back(fs::absolute(a).string());
    } else {
      *err = a + " does not exist";
      return {};
    }
  }
  return out;
}

static std::string editsJson(const std::vector<Edit> &edits) {
  llvm::json::Array a;
  for (auto &e : edits)
    a.push_back(llvm::json::Object{{"offset", (int64_t)e.offset},
                                   {"length", (int64_t)e.length},
                                   {"replacement", e.replacement}});
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::json::Value(std::move(a));
  return os.str();
}

static std::vector<Edit> editsFromJson(const std::string &s) {
  std::vector<Edit> out;
  auto v = llvm::json::parse(s);
  if (!v) {
    llvm::consumeError(v.takeError());
    return out;
  }
  if (auto *a = v->getAsArray())
    for (auto &e : *a)
      if (auto *o = e.getAsObject())
        out.push_back(Edit{(unsigned)o->getInteger("offset").value_or(0),
                           (unsigned)o->getInteger("length").value_or(0),
                           o->getString("replacement").value_or("").str()});
  return out;
}

static std::string jsonList(const std::vector<std::string> &v) {
  llvm::json::Array a;
  for (auto &s : v) a.push_back(s);
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::json::Value(std::move(a));
  return os.str();
}

static std::vector<const inject::InjectorInfo *> selected(const CampaignOptions &o,
                                                          std::string *err) {
  std::vector<const inject::InjectorInfo *> out;
  if (o.injectors.empty() || (o.injectors.size() == 1 && o.injectors[0] == "all")) {
    for (auto &i : inject::allInjectors()) out.push_back(&i);
    return out;
  }
  for (auto &n : o.injectors) {
    auto *i = inject::findInjector(n);
    if (!i) {
      *err = "unknown injector '" + n + "' (wsfuzz --list-injectors lists them)";
      return {};
    }
    out.push_back(i);
  }
  return out;
}

std::vector<PlanKey> planKeys(const CampaignOptions &o, std::string *err) {
  std::vector<PlanKey> out;
  auto injectors = selected(o, err);
  if (injectors.empty()) return {};
  for (auto &path : kernelFiles(o.kernels, err)) {
    auto text = readFile(path);
    if (!text) {
      *err = path + " cannot be read";
      return {};
    }
    std::string arch = inject::kernelArch(*text);
    std::string khash = mutantHash(arch, o.oracle.build.defines, *text);
    for (auto *inj : injectors)
      if (arch == inj->arch) out.push_back({fs::path(path).filename().string(), khash, inj->name});
  }
  return out;
}

std::vector<MutantRow> plan(Store &store, const CampaignOptions &o,
                            const std::function<void(const std::string &)> &log, std::string *err) {
  std::vector<MutantRow> all;
  auto injectors = selected(o, err);
  if (injectors.empty()) return {};
  auto files = kernelFiles(o.kernels, err);
  if (files.empty()) {
    if (err->empty()) *err = "no kernels given (--kernels DIR|FILE)";
    return {};
  }
  for (auto &path : files) {
    auto text = readFile(path);
    if (!text) {
      *err = path + " cannot be read";
      return {};
    }
    std::string kernel = fs::path(path).filename().string();
    std::string arch = inject::kernelArch(*text);
    std::string khash = mutantHash(arch, o.oracle.build.defines, *text);
    std::vector<const inject::InjectorInfo *> todo;
    for (auto *inj : injectors)
      if (arch == inj->arch) {
        if (store.planned(kernel, khash, inj->name)) {
          auto rows = store.mutantsOf(kernel, inj->name);
          all.insert(all.end(), rows.begin(), rows.end());
        } else {
          todo.push_back(inj);
        }
      }
    if (todo.empty()) continue;
    auto t0 = std::chrono::steady_clock::now();
    ParseOptions po;
    po.arch = arch;
    po.includes = o.oracle.build.includes;
    po.includes.push_back(fs::path(path).parent_path().string());
    if (auto h = harnessIncludeDir(); !h.empty()) po.includes.push_back(h);
    po.defines = o.oracle.build.defines;
    auto parsed = parseSource(*text, path, po);
    if (!parsed->ok())
      log("wsfuzz: warning: " + kernel + " does not parse cleanly (" + parsed->firstError() +
          "); sites may be missing");
    auto idx = buildIndex(*parsed);
    std::string counts;
    for (auto *inj : todo) {
      auto sites = inject::sitesFor(*inj, *parsed, idx);
      std::vector<MutantRow> rows;
      for (size_t i = 0; i < sites.size(); ++i) {
        MutantRow m;
        m.kernel = kernel;
        m.injector = inj->name;
        m.site = (int)i;
        m.note = sites[i].note;
        m.line = (int)sites[i].line;
        m.edits_json = editsJson(sites[i].edits);
        m.arch = sites[i].arch.empty() ? arch : sites[i].arch;
        m.expected_json = jsonList(inj->expected);
        m.runtime = inj->runtime;
        m.text = applySites(*text, std::vector<Site>{sites[i]});
        m.hash = mutantHash(m.arch, o.oracle.build.defines, m.text);
        rows.push_back(std::move(m));
      }
      store.recordPlan(kernel, khash, inj->name, rows);
      counts += " " + std::string(inj->name) + "=" + std::to_string(rows.size());
      all.insert(all.end(), rows.begin(), rows.end());
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    log("wsfuzz: planned " + kernel + " (" + arch + ", parsed in " + std::to_string((int)s) +
        " s):" + counts);
  }
  return all;
}

// ---- retention ---------------------------------------------------------------------------------
static std::string squash(const std::string &s) {
  std::string o;
  for (char c : s)
    if (!isspace((unsigned char)c)) o += c;
  return o;
}

bool editRetained(const inject::InjectorInfo &inj, const MutantRow &m, const std::string &reduced,
                  std::string *how) {
  std::string name = inj.name;
  if (inj.check) {
    ParseOptions po;
    po.arch = m.arch;
    if (auto h = harnessIncludeDir(); !h.empty()) po.includes.push_back(h);
    auto parsed = parseSource(reduced, "reduced.cu", po);
    auto idx = buildIndex(*parsed);
    return inj.check(idx, how);
  }
  if (name == "wrong-arch") {
    for (const char *arch_only : {"wgmma.", "setmaxnreg", "tcgen05.", "multimem."})
      if (reduced.find(arch_only) != std::string::npos) {
        *how = std::string("an arch-specific instruction (") + arch_only + ") is still there";
        return true;
      }
    *how = "no sm_90a-only instruction left";
    return false;
  }
  auto edits = editsFromJson(m.edits_json);
  std::string r = squash(reduced);
  bool any = false;
  for (auto &e : edits) {
    // The first non-blank line of what the injector wrote must still be there.
    std::string first;
    size_t at = 0;
    while (at < e.replacement.size() && first.empty()) {
      size_t nl = e.replacement.find('\n', at);
      first =
          squash(e.replacement.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
      at = nl == std::string::npos ? e.replacement.size() : nl + 1;
    }
    if (first.empty()) continue;
    any = true;
    if (r.find(first) == std::string::npos) {
      *how = "the injected text `" + first + "` is gone";
      return false;
    }
  }
  if (any) {
    *how = "the injected text is still there";
    return true;
  }
  // A deletion: the construct it left unprotected must still be there.
  const char *construct =
      name == "missing-wgmma-fence" ? "wgmma.mma_async" : "cp.async.bulk.tensor";
  bool ok = reduced.find(construct) != std::string::npos;
  *how =
      std::string(ok ? "the unprotected " : "no ") + construct + (ok ? " is still there" : " left");
  return ok;
}

// ---- judging -----------------------------------------------------------------------------------
namespace {

struct Ctx {
  const CampaignOptions &o;
  Store &store;
  std::mutex store_m, log_m;
  SlotPool slots;
  std::string gate;  // the gate library when GPU runs are started ahead of their turn
  const std::function<void(const std::string &)> &log;
  std::atomic<long> judged{0};
  size_t total = 0;
  Ctx(const CampaignOptions &opt, Store &s, const std::function<void(const std::string &)> &l)
      : o(opt), store(s), slots(opt.gpus, opt.runs_per_gpu), log(l) {}
  void say(const std::string &s) {
    std::lock_guard<std::mutex> l(log_m);
    log(s);
  }
};

OracleOptions oracleFor(const CampaignOptions &o, const std::string &arch,
                        const std::string &kernel_dir) {
  OracleOptions oo = o.oracle;
  oo.build.arch = arch;
  oo.build.includes.push_back(kernel_dir);
  if (oo.build.cache_dir.empty()) oo.build.cache_dir = defaultCacheDir();
  oo.repeat = o.repeat;
  oo.build.watchdog = oo.build.watchdog && oo.build.instrument;
  for (auto &[k, v] : campaignRunEnv(o)) oo.run.env_set[k] = v;
  return oo;
}

// The adaptive timeout from the reference kernel's baseline run.
void calibrateFrom(Ctx &c, const std::string &kernel, OracleOptions &oo) {
  if (!c.o.calibrate) return;
  std::lock_guard<std::mutex> l(c.store_m);
  if (auto b = c.store.baselineMs(kernel); b && *b > 0) {
    oo.calibrate = true;
    oo.calibrate_observed_ms = *b;
    oo.calibrate_k = 10;
    oo.calibrate_floor_s = 2;
    oo.calibrate_cap_s = c.o.oracle.run.timeout_s;
  }
}

std::string kernelDir(const CampaignOptions &o, const std::string &kernel) {
  std::string err;
  for (auto &f : kernelFiles(o.kernels, &err))
    if (fs::path(f).filename() == kernel) return fs::path(f).parent_path().string();
  return ".";
}

std::string toJsonText(const Verdict &v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << toJSON(v);
  return os.str();
}

double medianRunMs(const Verdict &v) {
  std::vector<double> ms;
  for (auto &r : v.runs) ms.push_back(r.wall_ms);
  if (ms.empty()) return 0;
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Builds on the CPU, then runs on one GPU slot.
Verdict judgeText(Ctx &c, const std::string &text, const std::string &kernel, OracleOptions oo,
                  std::string *slot_used, BuildRecord *build_out) {
  std::string dir = makeTempDir("wsfuzz.");
  std::string file = dir + "/" + kernel;
  Verdict v;
  if (dir.empty() || !writeFileAtomic(file, text)) {
    v.symptom = "infra-error";
    v.detail = "infra-error/tmp";
    v.evidence.push_back("cannot write the mutant under $TMPDIR");
    removeTree(dir);
    return v;
  }
  BuildRecord b = buildFor(file, oo);  // emu: nvcc first when the injector expects a compile error
  if (b.ok && b.backend == "gpu") {    // the emulator needs no GPU slot
    // With the gate, the first run's process opens its context before the slot's turn comes.
    std::optional<size_t> turn;
    bool taken = false;
    size_t held;
    if (!c.gate.empty()) {
      turn = c.slots.reserve();
      held = *turn;
      oo.run.gate_library = c.gate;
      oo.wait_turn = [&] {
        c.slots.take(*turn);
        taken = true;
      };
    } else {
      held = c.slots.acquire();
    }
    const std::string &slot = c.slots.name(held);
    if (!slot.empty()) oo.run.env_set["CUDA_VISIBLE_DEVICES"] = slot;
    *slot_used = slot;
    v = judgeBuilt(b, oo);
    if (turn && !taken) c.slots.take(*turn);
    c.slots.release(held);
  } else {
    v = judgeBuilt(b, oo);
  }
  if (build_out) *build_out = b;
  removeTree(dir);
  return v;
}

void baseline(Ctx &c, const std::string &path) {
  std::string kernel = fs::path(path).filename().string();
  {
    std::lock_guard<std::mutex> l(c.store_m);
    if (c.store.hasBaseline(kernel)) return;
  }
  auto text = readFile(path);
  if (!text) return;
  std::string arch = inject::kernelArch(*text);
  std::string slot;
  Verdict v =
      judgeText(c, *text, kernel, oracleFor(c.o, arch, fs::path(path).parent_path().string()),
                &slot, nullptr);
  {
    std::lock_guard<std::mutex> l(c.store_m);
    c.store.recordBaseline(kernel, path, arch, v.symptom == "pass" ? "pass" : v.detail,
                           medianRunMs(v), toJsonText(v));
  }
  c.say(
      "wsfuzz: baseline " + kernel + " -> " + (v.detail.empty() ? v.symptom : v.detail) +
      (v.symptom == "pass" ? ", median run " + std::to_string((long)medianRunMs(v)) + " ms" : ""));
}

void writeCorpus(Ctx &c, const MutantRow &m, const VerdictRow &vr) {
  if (c.o.corpus_dir.empty()) return;
  std::lock_guard<std::mutex> l(c.store_m);
  std::string sig = vr.signature.empty() ? vr.detail : vr.signature;
  if (c.store.signatureInCorpus(m.kernel, m.injector, sig)) return;
  fs::path dir = fs::path(c.o.corpus_dir) / fs::path(m.kernel).stem() / m.injector;
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::string stem = m.hash.substr(0, 16);
  std::string cu = (dir / (stem + fs::path(m.kernel).extension().string())).string();
  auto edits = llvm::json::parse(m.edits_json);
  auto expected = llvm::json::parse(m.expected_json);
  llvm::json::Object meta{
      {"hash", m.hash},
      {"kernel", m.kernel},
      {"injector", m.injector},
      {"site", m.site},
      {"note", m.note},
      {"line", m.line},
      {"arch", m.arch},
      {"defines", llvm::json::Array(std::vector<llvm::json::Value>(
                      c.o.oracle.build.defines.begin(), c.o.oracle.build.defines.end()))},
      {"edits", edits ? std::move(*edits) : llvm::json::Value(nullptr)},
      {"expected", expected ? std::move(*expected) : llvm::json::Value(nullptr)},
      {"observed", llvm::json::Object{{"symptom", vr.symptom},
                                      {"detail", vr.detail},
                                      {"signature", vr.signature},
                                      {"expected_match", vr.expected_match}}}};
  if (!edits) llvm::consumeError(edits.takeError());
  if (!expected) llvm::consumeError(expected.takeError());
  if (vr.static_check)
    meta["static_check"] =
        llvm::json::Object{{"confirmed", *vr.static_check}, {"why", vr.static_why}};
  std::string js;
  llvm::raw_string_ostream os(js);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(meta)));
  if (writeFileAtomic(cu, m.text) &&
      writeFileAtomic((dir / (stem + ".meta.json")).string(), os.str() + "\n"))
    c.store.recordCorpus(m.hash, m.kernel, m.injector, sig, cu);
}

// The latent mutant's second look: the compute-sanitizer tool docs/methodology.md maps to its
// class.
void secondLook(Ctx &c, const MutantRow &m, OracleOptions oo, const BuildRecord &b) {
  auto *inj = inject::findInjector(m.injector);
  if (!inj || !*inj->sanitizer) return;
  {
    std::lock_guard<std::mutex> l(c.store_m);
    if (c.store.hasSanitizer(m.hash)) return;
  }
  OracleOptions so = oo;
  so.repeat = 1;
  so.sanitizer = inj->sanitizer;
  const size_t held = c.slots.acquire();
  const std::string &slot = c.slots.name(held);
  if (!slot.empty()) so.run.env_set["CUDA_VISIBLE_DEVICES"] = slot;
  Verdict sv = judgeBuilt(b, so);
  c.slots.release(held);
  SanitizerRow sr;
  sr.hash = m.hash;
  sr.tool = inj->sanitizer;
  sr.saw = sanitizerSaw(sv.sanitizer_output, &sr.summary);
  sr.output = sv.sanitizer_output.substr(0, 16384);
  std::lock_guard<std::mutex> l(c.store_m);
  c.store.recordSanitizer(sr);
  c.say("wsfuzz: second look " + m.kernel + " " + m.injector + " #" + std::to_string(m.site) +
        " with " + sr.tool + ": " +
        (sr.saw ? (*sr.saw ? "it saw the bug" : "nothing") : "no summary") + " (" + sr.summary +
        ")");
}

// A latent mutant judged in an earlier session (e.g. with --no-sanitizer) gets its second look now.
void lateSecondLook(Ctx &c, const MutantRow &m) {
  std::string kdir = kernelDir(c.o, m.kernel);
  OracleOptions oo = oracleFor(c.o, m.arch, kdir);
  calibrateFrom(c, m.kernel, oo);
  if (resolveBackend(oo) != "gpu") return;
  std::string dir = makeTempDir("wsfuzz.");
  std::string file = dir + "/" + m.kernel;
  if (dir.empty() || !writeFileAtomic(file, m.text)) {
    removeTree(dir);
    return;
  }
  BuildRecord b = buildFor(file, oo);  // the content-hash cache has it from the first judgment
  if (b.ok) secondLook(c, m, oo, b);
  removeTree(dir);
}

void judgeMutant(Ctx &c, const MutantRow &m) {
  auto *inj = inject::findInjector(m.injector);
  if (!inj) return;
  auto t0 = std::chrono::steady_clock::now();
  std::string kdir = kernelDir(c.o, m.kernel);
  OracleOptions oo = oracleFor(c.o, m.arch, kdir);
  calibrateFrom(c, m.kernel, oo);
  if (!inj->expected.empty() && std::string(inj->expected.front()).rfind("compile-error", 0) == 0)
    oo.emu_nvcc_first = true;
  if (std::string(inj->name) == "shallow-pipeline") {
    std::lock_guard<std::mutex> l(c.store_m);
    if (auto b = c.store.baselineMs(m.kernel)) {
      oo.classify.slow_baseline_ms = *b;
      oo.classify.slow_factor = c.o.slow_factor;
    }
  }
  VerdictRow vr;
  vr.hash = m.hash;
  Verdict v;
  BuildRecord b;
  // The emulator runs what no GPU here can (tcgen05 and tensor memory of sm_100a); on a GPU of
  // another generation such a mutant is compiled and its defect confirmed statically.
  const bool runs = inj->runtime || resolveBackend(oo) == "emu";
  if (!runs) {
    oo.build.watchdog = false;  // never run: nothing to bound
    std::string dir = makeTempDir("wsfuzz.");
    std::string file = dir + "/" + m.kernel;
    writeFileAtomic(file, m.text);
    b = buildProgram(file, oo.build);
    removeTree(dir);
    ParseOptions po;
    po.arch = m.arch;
    po.includes = oo.build.includes;
    if (auto h = harnessIncludeDir(); !h.empty()) po.includes.push_back(h);
    po.defines = c.o.oracle.build.defines;
    auto parsed = parseSource(m.text, kdir + "/" + m.kernel, po);
    std::string why;
    vr.static_check = inj->check ? inj->check(buildIndex(*parsed), &why) : false;
    vr.static_why = why;
    if (b.ok) {
      v.symptom = "compiled";
      v.detail = *vr.static_check ? "compiled/static-confirmed" : "compiled/static-absent";
      v.signature = "static:" + why;
      v.evidence.push_back("compiled for " + m.arch + "; not run (needs " + m.arch +
                           " hardware): " + why);
      v.timings.build_ms = b.wall_ms;
      v.timings.build_cached = b.cache_hit;
    } else {
      v = judgeBuilt(b, oo);  // the compile error as a verdict, no runs
    }
  } else {
    v = judgeText(c, m.text, m.kernel, oo, &vr.gpu, &b);
  }
  // A judgment that ends after a stop request (Ctrl-C, the SIGTERM a batch system sends the whole
  // job) says nothing about the mutant: its build or run was stopped by the tool, or killed by the
  // same signal (an nvcc whose cicc died that way reports an error of its own). Nothing is
  // recorded, and the same command judges the mutant again.
  if (g_stop || v.detail == "infra-error/cancelled") return;
  vr.symptom = v.symptom;
  vr.detail = v.detail.empty() ? v.symptom : v.detail;
  vr.signature = v.signature;
  vr.infra = v.symptom == "infra-error";
  vr.expected_match =
      runs ? inject::expects(*inj, vr.detail) : (b.ok && vr.static_check.value_or(false));
  vr.verdict_json = toJsonText(v);
  vr.build_ms = v.timings.build_ms;
  vr.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (size_t i = 0; i < v.runs.size(); ++i)
    vr.runs.push_back({(int)i, v.runs[i].symptom, v.runs[i].detail, v.runs[i].signature,
                       v.runs[i].exit_code, v.runs[i].signal, v.runs[i].timed_out,
                       v.runs[i].wall_ms});
  bool fresh;
  {
    std::lock_guard<std::mutex> l(c.store_m);
    fresh = c.store.recordVerdict(vr);
  }
  long n = ++c.judged;
  c.say("wsfuzz: [" + std::to_string(n) + "/" + std::to_string(c.total) + "] " + m.kernel + " " +
        m.injector + " #" + std::to_string(m.site) + " -> " + vr.detail +
        (vr.expected_match ? " (expected)"
         : vr.infra        ? " (infra)"
                           : " (UNEXPECTED)") +
        " " + std::to_string((long)(vr.wall_ms / 1000)) + " s" +
        (fresh ? "" : " [already judged elsewhere; not stored]"));
  if (!fresh) return;

  bool detected = (inj->runtime && !vr.infra && vr.symptom != "pass") ||
                  (!inj->runtime && vr.static_check.value_or(false) && b.ok);
  if (detected) writeCorpus(c, m, vr);

  // Latent: the bug is there and nothing was observed. Second look with the class's sanitizer
  // (docs/methodology.md).
  if (inj->runtime && vr.symptom == "pass" && c.o.sanitizer && *inj->sanitizer && b.ok &&
      b.backend == "gpu")
    secondLook(c, m, oo, b);
}

// A detected mutant reduced as wsreduce reduces a program (reducer/reduce.h), on the campaign's
// oracle or --reduce-backend's, then checked for the injected edit (the reducer's ground truth).
void reduceMutant(Ctx &c, SlotPool &devices, const MutantRow &m, const VerdictRow &v, int jobs) {
  auto *inj = inject::findInjector(m.injector);
  const std::string what = m.kernel + " " + m.injector + " #" + std::to_string(m.site);
  ReductionRow rr;
  rr.hash = m.hash;
  rr.lines_before = (int)countNonBlankLines(m.text);
  auto t0 = std::chrono::steady_clock::now();
  const size_t held = devices.acquire();  // a device for the whole reduction
  const std::string &slot = devices.name(held);
  std::string work = makeTempDir("wsfuzz-reduce.");
  ReduceRequest req;
  req.input_path = work + "/" + m.kernel;
  req.text = m.text;
  writeFileAtomic(req.input_path, m.text);
  // With a corpus the result stays there, and a reduction a stop interrupted goes on from its
  // best program with what was left of its budget; without one it lives in the work folder.
  const bool keep = !c.o.corpus_dir.empty();
  if (keep) {
    fs::path dir = fs::path(c.o.corpus_dir) / fs::path(m.kernel).stem() / m.injector;
    std::error_code ec;
    fs::create_directories(dir, ec);
    req.out_path =
        (dir / (m.hash.substr(0, 16) + ".min" + fs::path(m.kernel).extension().string())).string();
  } else {
    req.out_path = work + "/reduced" + fs::path(m.kernel).extension().string();
  }
  req.resume = keep;
  req.budget_includes_resumed = true;
  req.write_report = keep;
  req.command = c.o.command;
  TestOptions &t = req.test;
  t.symptom = v.symptom;
  const std::string kdir = kernelDir(c.o, m.kernel);
  OracleOptions campaign_oracle = oracleFor(c.o, m.arch, kdir);
  campaign_oracle.repeat = 1;
  if (!slot.empty()) campaign_oracle.run.env_set["CUDA_VISIBLE_DEVICES"] = slot;
  calibrateFrom(c, m.kernel, campaign_oracle);
  const std::string campaign_backend = resolveBackend(campaign_oracle);
  t.oracle = campaign_oracle;
  // A compile error is nvcc's verdict on every backend: it is reduced where it was judged.
  const bool other_backend = !c.o.reduce_backend.empty() &&
                             c.o.reduce_backend != campaign_backend && v.symptom != "compile-error";
  if (other_backend) {
    // On another backend than the campaign's there is no baseline: the timeout comes from the
    // mutant's own run there. The campaign's oracle judges the result.
    t.oracle.backend = c.o.reduce_backend;
    t.oracle.calibrate = false;
    req.fallback = campaign_oracle;
    req.confirm = campaign_oracle;
    req.confirm_original = Verdict{};
    req.confirm_original->symptom = v.symptom;
    req.confirm_original->detail = v.detail;
    req.confirm_original->signature = v.signature;
  }
  req.calibrate = other_backend && c.o.calibrate;
  req.timeout_cap_s = c.o.oracle.run.timeout_s;
  t.parse.arch = m.arch;
  t.parse.includes = t.oracle.build.includes;
  t.parse.defines = c.o.oracle.build.defines;
  {  // the reference kernels mark their reference computation: no reduction may change it
    std::string kerr;
    if (!findKeptRegions(m.text, &t.keep, &kerr))
      c.say("wsfuzz: " + m.kernel + ": " + kerr + "; reduced with nothing kept");
  }
  t.runs_per_gpu = c.o.runs_per_gpu;
  req.search.jobs = jobs;
  req.search.lookahead = SearchOptions::lookaheadByDefault(jobs);
  req.search.budget_s = c.o.reduce_budget_s;
  req.say = [&](const std::string &line) {  // the campaign's log takes what a reader needs
    if (line.rfind("resuming", 0) == 0 || line.rfind("reduced on", 0) == 0)
      c.say("wsfuzz: " + what + ": " + line);
  };

  ReduceOutcome r;
  try {
    r = reduce(req);
  } catch (const std::exception &e) {
    r.status = ReduceOutcome::Status::Error;
    r.message = e.what();
  }
  using St = ReduceOutcome::Status;
  // Stopped before it could finish (Ctrl-C, the campaign's time limit): not recorded, so that the
  // same command does it again, from its best program when the corpus keeps it.
  if (g_stop && r.status != St::Reduced) {
    devices.release(held);
    removeTree(work);
    const auto best = keep ? readFile(req.out_path) : std::nullopt;
    c.say("wsfuzz: interrupted the reduction of " + what +
          (best ? " at " + std::to_string(countNonBlankLines(*best)) +
                      " lines; the same command goes on from there"
                : "; the same command does it again"));
    return;
  }
  devices.release(held);
  if (r.status == St::NotInteresting) {
    rr.error = "the mutant does not reproduce " + v.detail + " under the reducer's oracle (got " +
               r.original.detail + ")";
  } else if (r.status != St::Reduced) {
    rr.error = r.message;
  } else {
    // A reduction stopped by --reduce-budget still ends with a program that keeps the symptom
    // (every step it took was judged): its retention counts, and the report says it stopped.
    rr.ok = true;
    if (r.budget_spent) rr.error = "stopped: the budget is spent";
    rr.path = keep ? req.out_path : "";
    rr.lines_after = (int)r.best_lines;
    rr.retained = inj && editRetained(*inj, m, r.best, &rr.how);
    if (inj && !rr.retained && r.searched != r.best) {
      // The finish rewrites text (tidy, formatting) only where the failure survives it: an edit
      // the search kept is retained, said so.
      std::string how;
      if (editRetained(*inj, m, r.searched, &how)) {
        rr.retained = true;
        rr.how = how + " (in the search's result; the finish rewrote its text)";
      }
    }
    if (r.budget_spent)
      rr.how += " (stopped at the budget, " + std::to_string(rr.lines_after) + " lines)";
    if (!r.fell_back.empty()) rr.how += "; " + r.fell_back;
    if (r.confirmed) {
      const bool same = r.confirmed->symptom == v.symptom;
      rr.how += "; reduced on " + c.o.reduce_backend + ", judged " + r.confirmed->detail + " on " +
                campaign_backend + (same ? "" : " (not the mutant's " + v.detail + ")");
      if (!same) {
        rr.ok = false;
        rr.error = "the reduced program is " + r.confirmed->detail + " on " + campaign_backend +
                   ", not " + v.symptom;
      }
    }
  }
  removeTree(work);
  rr.wall_s =
      r.resumed_s + std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  {
    std::lock_guard<std::mutex> l(c.store_m);
    c.store.recordReduction(rr);
  }
  c.say("wsfuzz: reduced " + what + ": " + std::to_string(rr.lines_before) + " -> " +
        std::to_string(rr.lines_after) + " lines, edit " + (rr.retained ? "retained" : "LOST") +
        (rr.error.empty() ? "" : " (" + rr.error + ")") + " — " + rr.how);
}

}  // namespace

int runCampaign(const CampaignOptions &o, const std::function<void(const std::string &)> &log) {
  Store store(o.db);
  Ctx c(o, store, log);
  std::string err;
  if (o.retry_infra) {
    int n = store.deleteInfraVerdicts();
    if (n)
      log("wsfuzz: --retry-infra: " + std::to_string(n) +
          " infra-error verdicts will be judged again");
  }
  auto mutants = plan(store, o, log, &err);
  if (!err.empty()) {
    log("wsfuzz: " + err);
    return 2;
  }
  long session = store.startSession(o.command, o.shard_i, o.shard_n);
  store.setMeta("gpu_present", gpuPresent() ? "yes" : "no");
  store.setMeta("repeat", std::to_string(o.repeat));
  char tbuf[32];
  std::snprintf(tbuf, sizeof tbuf, "%g", o.oracle.run.timeout_s);
  store.setMeta("timeout_s", tbuf);

  std::vector<MutantRow> todo;
  std::set<std::string> kernels_needed;
  const bool emu = resolveBackend(o.oracle) == "emu";  // runs every mutant (judgeMutant)
  for (auto &m : mutants) {
    if (!inShard(m.hash, o.shard_i, o.shard_n) || store.hasVerdict(m.hash)) continue;
    todo.push_back(m);
    if (m.runtime || emu) kernels_needed.insert(m.kernel);
  }
  if (o.max_mutants > 0 && (long)todo.size() > o.max_mutants) todo.resize(o.max_mutants);
  log("wsfuzz: " + std::to_string(mutants.size()) + " mutants planned, " +
      std::to_string(todo.size()) + " to judge in shard " + std::to_string(o.shard_i) + "/" +
      std::to_string(o.shard_n) + " (-j " + std::to_string(o.jobs) + ", " +
      std::to_string(c.slots.size()) + " GPU slot(s) on " + std::to_string(c.slots.devices()) +
      " device(s), repeat " + std::to_string(o.repeat) + ")" +
      (gpuPresent() || o.oracle.backend == "emu"
           ? ""
           : "; no GPU here: runtime judgments will be infra-error"));

  GpuKeepers keepers;
  if (o.keepers && !todo.empty() && gpuPresent() && o.oracle.backend != "emu") {
    BuildOptions kb;
    kb.nvcc = o.oracle.build.nvcc;
    kb.cache_dir = o.oracle.build.cache_dir;
    log("wsfuzz: " + keepers.start(o.gpus, kb));
  }
  if (o.prestart && !todo.empty() && gpuPresent() && o.oracle.backend != "emu") {
    std::string gerr;
    c.gate = gateLibrary(&gerr, o.oracle.build.cache_dir);
    log("wsfuzz: " +
        (c.gate.empty()
             ? "runs start at their turn (" + gerr + ")"
             : std::string("each GPU run's process starts ahead of its turn and opens its CUDA "
                           "context while the slot's current run goes on")));
  }

  // The references' own verdicts and timings first: the baseline for `slow`, and a check
  // that every kernel passes before its mutants mean anything.
  std::vector<std::string> paths;
  for (auto &f : kernelFiles(o.kernels, &err))
    if (kernels_needed.count(fs::path(f).filename().string())) paths.push_back(f);
  parallelFor(
      paths.size(), o.jobs, [&](size_t i) { baseline(c, paths[i]); }, [] { return g_stop.load(); });

  c.total = todo.size();
  parallelFor(
      todo.size(), o.jobs, [&](size_t i) { judgeMutant(c, todo[i]); },
      [] { return g_stop.load(); });

  if (o.sanitizer && !g_stop) {
    std::vector<MutantRow> late;
    for (auto &m : mutants) {
      if (!m.runtime || !inShard(m.hash, o.shard_i, o.shard_n) || store.hasSanitizer(m.hash))
        continue;
      auto *inj = inject::findInjector(m.injector);
      auto v = store.verdict(m.hash);
      if (inj && *inj->sanitizer && v && v->symptom == "pass") late.push_back(m);
    }
    if (!late.empty()) {
      log("wsfuzz: second look for " + std::to_string(late.size()) +
          " latent mutants judged earlier");
      parallelFor(
          late.size(), o.jobs, [&](size_t i) { lateSecondLook(c, late[i]); },
          [] { return g_stop.load(); });
    }
  }

  if (o.reduce && !g_stop) {
    std::vector<std::pair<MutantRow, VerdictRow>> red;
    for (auto &m : mutants) {
      if (!m.runtime || !inShard(m.hash, o.shard_i, o.shard_n) || store.hasReduction(m.hash))
        continue;
      auto v = store.verdict(m.hash);
      if (!v || v->infra || v->symptom == "pass" || v->symptom == "flaky" || v->symptom == "slow")
        continue;
      red.push_back({m, *v});
    }
    log("wsfuzz: reducing " + std::to_string(red.size()) + " detected mutants");
    SlotPool devices(o.gpus);  // one reduction per device at a time, its runs shared out within
    int per = o.reduce_jobs > 0 ? o.reduce_jobs : std::max(1, o.jobs / (int)devices.size());
    parallelFor(
        red.size(), (int)devices.size(),
        [&](size_t i) { reduceMutant(c, devices, red[i].first, red[i].second, per); },
        [] { return g_stop.load(); });
  }
  store.endSession(session, c.judged);
  if (g_stop) {
    log("wsfuzz: stopped; the same command resumes (" + std::to_string(c.judged) +
        " judged this session)");
    return 130;
  }
  log("wsfuzz: done: " + std::to_string(c.judged) +
      " mutants judged this session; `wsfuzz report " + o.db + "` writes the report");
  return 0;
}

}  // namespace wsr::fuzz
