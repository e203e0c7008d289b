#include "report.h"

#include "edit.h"

#include <clang/Format/Format.h>
#include <clang/Tooling/Core/Replacement.h>

#include <filesystem>
#include <regex>
#include <sstream>

namespace fs = std::filesystem;

namespace wsr {

// The `#include "wscheck.h"` line, up to its end.
static const char *const kHarnessInclude = R"([ \t]*#[ \t]*include[ \t]*"wscheck\.h"[^\n]*)";
// The lines an inlined header stands between (inlineHarness writes them, uninlineHarness finds
// them).
static const std::string kInlinedBegin =
    "// ---- wscheck.h (wsreduce's harness header), inlined ----\n";
static const std::string kInlinedEnd = "// ---- end of wscheck.h ----";

std::string inlineHarness(const std::string &text) {
  static const std::regex inc(std::string("(^|\n)") + kHarnessInclude);
  std::smatch m;
  if (!std::regex_search(text, m, inc)) return text;
  std::string dir = harnessIncludeDir();
  auto hdr = readFile(dir + "/wscheck.h");
  if (!hdr) return text;
  std::string body = std::regex_replace(*hdr, std::regex(R"(#pragma once\n)"), "");
  std::string repl = m[1].str() + kInlinedBegin + body + kInlinedEnd;
  return m.prefix().str() + repl + m.suffix().str();
}

std::string uninlineHarness(const std::string &text) {
  size_t b = text.find(kInlinedBegin);
  if (b == std::string::npos) return text;
  size_t e = text.find(kInlinedEnd, b);
  if (e == std::string::npos) return text;
  return text.substr(0, b) + "#include \"wscheck.h\"" + text.substr(e + kInlinedEnd.size());
}

std::string sizeWithoutInlinedHarness(const std::string &text) {
  std::string plain = uninlineHarness(text);
  if (plain == text) return "";
  return std::to_string(countNonBlankLines(plain)) + " lines, " +
         std::to_string(countTokens(plain)) + " tokens";
}

std::string dropHarness(const std::string &text) {
  static const std::regex line(kHarnessInclude + std::string("\n?"));
  static const std::regex exit_code(R"(wscheck\s*::\s*exit_code\s*\(\s*\))");
  if (!std::regex_search(text, line)) return text;
  std::string out = std::regex_replace(std::regex_replace(text, exit_code, "0"), line, "");
  if (out.find("wscheck") != std::string::npos) return text;  // more of the harness is in use
  return out;
}

std::string formatCuda(const std::string &text, int columns) {
  // Clang's own formatter, linked in: the GPU machine has no clang-format binary, and a result
  // reduced there came back with the passes' blank lines and trailing spaces.
  clang::format::FormatStyle style =
      clang::format::getLLVMStyle(clang::format::FormatStyle::LK_Cpp);
  style.ColumnLimit = columns;
  style.SortIncludes.Enabled = false;  // include order can matter
  // The blank line a deleted statement leaves at the top of a block or of the file goes; the
  // ones between statements stay, one at most.
  style.KeepEmptyLines.AtStartOfBlock = false;
  style.KeepEmptyLines.AtStartOfFile = false;
  std::vector<clang::tooling::Range> all{clang::tooling::Range(0, text.size())};
  auto edits = clang::format::reformat(style, text, all, "reduced.cu");
  auto out = clang::tooling::applyAllReplacements(text, edits);
  if (!out) {
    llvm::consumeError(out.takeError());
    return text;
  }
  return *out;
}

std::vector<std::string> knobValues(const std::string &text) {
  std::vector<std::string> out;
  static const std::regex def(R"(#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+(\d+)[uUlL]*[ \t]*(\n|$))");
  static const std::regex cst(
      R"(constexpr[ \t]+(?:unsigned[ \t]+|const[ \t]+)?(?:int|long|unsigned|size_t|uint32_t|int64_t)[ \t]+([A-Za-z_]\w*)[ \t]*=[ \t]*(\d+))");
  for (auto *re : {&def, &cst})
    for (std::sregex_iterator it(text.begin(), text.end(), *re), e; it != e; ++it)
      out.push_back((*it)[1].str() + " = " + (*it)[2].str());
  return out;
}

static std::string firstLines(const std::string &s, int n) {
  std::istringstream in(s);
  std::string l, out;
  for (int i = 0; i < n && std::getline(in, l); ++i) out += l + "\n";
  return out;
}

// The PTX landmarks (docs/methodology.md, "inspecting the generated CUDA"): what a reader checks
// against the worksheet.
static std::string ptxLandmarks(const std::string &file, const BuildOptions &b) {
  std::string nvcc = findNvcc(b.nvcc);
  if (nvcc.empty()) return "(nvcc not found: no PTX)\n";
  std::string dir = makeTempDir("wsptx.");
  std::vector<std::string> cmd = {nvcc};
  for (auto &a : nvccArgs(b)) {
    if (a.rfind("-l", 0) == 0) continue;
    cmd.push_back(a);
  }
  cmd.insert(cmd.end(), {"-ptx", file, "-o", dir + "/k.ptx"});
  RunOptions o;
  o.timeout_s = 300;
  auto r = runProcess(cmd, o);
  auto ptx = readFile(dir + "/k.ptx");
  removeTree(dir);
  if (!ptx) return "(nvcc -ptx failed: " + firstLines(r.err, 3) + ")\n";
  struct L {
    const char *what, *needle;
  };
  const L marks[] = {{"thread index (role guards start here)", "%tid.x"},
                     {"mbarrier.init", "mbarrier.init"},
                     {"mbarrier arrive", "mbarrier.arrive"},
                     {"mbarrier wait", "mbarrier.try_wait"},
                     {"mbarrier test", "mbarrier.test_wait"},
                     {"TMA (cp.async.bulk.tensor)", "cp.async.bulk.tensor"},
                     {"bulk commit/wait", "cp.async.bulk.commit_group"},
                     {"proxy fence", "fence.proxy.async"},
                     {"wgmma", "wgmma."},
                     {"CTA barrier (bar.sync / barrier.sync)", "bar.sync"},
                     {"setmaxnreg", "setmaxnreg"},
                     {"tcgen05", "tcgen05."},
                     {"trap", "trap;"}};
  std::ostringstream s;
  s << "| landmark | count | first occurrence |\n|---|---|---|\n";
  for (auto &m : marks) {
    int count = 0;
    std::string first;
    std::istringstream in(*ptx);
    std::string l;
    while (std::getline(in, l))
      if (l.find(m.needle) != std::string::npos ||
          (std::string(m.needle) == "bar.sync" && l.find("barrier.sync") != std::string::npos)) {
        if (!count) first = l;
        ++count;
      }
    if (!count) continue;
    while (!first.empty() && (first.front() == ' ' || first.front() == '\t'))
      first.erase(first.begin());
    for (auto &c : first)
      if (c == '|') c = '/';
    s << "| " << m.what << " | " << count << " | `" << first << "` |\n";
  }
  return s.str();
}

std::string writeReport(const ReportInput &in) {
  std::ostringstream s;
  std::string name = fs::path(in.original_path).filename().string();
  // Like with like: both sizes with the harness header as the #include line the input has.
  const std::string in_plain = uninlineHarness(in.original_text),
                    out_plain = uninlineHarness(in.reduced_text);
  const bool gained = countNonBlankLines(out_plain) < countNonBlankLines(in_plain) ||
                      countTokens(out_plain) < countTokens(in_plain);
  s << "# " << name << ": " << in.reduced.detail
    << (gained ? " — minimal reproducer\n\n" : " — reproducer (not reduced)\n\n");
  s << "Reduced by wsreduce from " << countNonBlankLines(in.original_text) << " to "
    << countNonBlankLines(in.reduced_text) << " non-blank lines (" << countTokens(in.original_text)
    << " -> " << countTokens(in.reduced_text) << " tokens), " << in.tests << " tests, "
    << in.cache_hits << " cache hits, " << in.parse_skips
    << " candidates skipped by the parse check, " << (long)in.wall_s << " s.";
  // The original includes wscheck.h; the result has it inlined (it builds with plain nvcc): the
  // program's own size is the one to compare.
  if (std::string own = sizeWithoutInlinedHarness(in.reduced_text); !own.empty())
    s << " Without the inlined wscheck.h (as `#include \"wscheck.h\"`, as the original has it): "
      << own << ".";
  if (!gained)
    s << " Nothing was gained: counted as the input has it, the program is as large as the input.";
  s << "\n\n";
  if (!in.run_notes.empty()) {
    for (auto &n : in.run_notes) s << "- " << n << "\n";
    s << "\n";
  }
  if (!in.kept.empty()) {
    s << "Kept as written (`// wsreduce: keep begin` ... `end`), " << in.keep_skips
      << " candidates that changed them skipped unjudged:";
    for (auto &k : in.kept)
      s << " lines " << k.first_line << "-" << k.last_line << " of the original"
        << (&k == &in.kept.back() ? "." : ",");
    s << "\n\n";
  }
  // A maintainer reading odd code (parentheses tidy would drop, unformatted lines) learns why.
  if (!in.finish_notes.empty()) {
    s << "Each finishing step is kept only if the failure survives it; the judge refused:\n";
    for (auto &n : in.finish_notes) s << "- " << n << "\n";
    s << "\n";
  }
  s << "## Verdict\n\n";
  s << "- class: **" << in.reduced.symptom << "** (`" << in.reduced.detail << "`)\n";
  s << "- signature: `" << in.reduced.signature << "`"
    << (in.reduced.signature == in.original.signature
            ? " (the original's)"
            : " (original: `" + in.original.signature + "`)")
    << "\n";
  for (auto &e : in.reduced.evidence) s << "- evidence: `" << e << "`\n";
  if (!in.backend.empty()) {
    s << "- judged on: **" << in.backend << "**";
    if (in.backend == "emu") {
      s << " (the CPU emulator, policy";
      for (size_t i = 0; i < in.policies.size(); ++i) s << (i ? ", " : " ") << in.policies[i];
      s << ")";
    }
    s << "\n";
  }
  if (in.confirmed) {
    auto name = [](const Verdict &v) { return v.detail.empty() ? v.symptom : v.detail; };
    bool same = in.confirmed->symptom == in.reduced.symptom;
    const Verdict *og = in.confirmed_original ? &*in.confirmed_original : nullptr;
    s << "- confirmed on the GPU: `" << name(*in.confirmed) << "` "
      << (same ? "(the same class)" : "(**a different class**)") << ", signature `"
      << in.confirmed->signature << "`\n";
    for (auto &e : in.confirmed->evidence) s << "  - GPU evidence: `" << e << "`\n";
    if (og)
      s << "- the original on the GPU: `" << name(*og) << "`, signature `" << og->signature
        << "`\n";
    if (!same && og && og->symptom == in.confirmed->symptom)
      s << "- the GPU judges the original `" << og->symptom
        << "` too: on this GPU the bug is latent (its timing hides "
        << "what the emulator shows), and the reduction keeps the original's behaviour on both\n";
    else if (!same && og)
      s << "- **the reduction changed what the GPU shows**: the original is `" << og->symptom
        << "` there, the result `" << in.confirmed->symptom << "`\n";
  }
  if (!in.confirm_note.empty()) s << "- confirmation: " << in.confirm_note << "\n";
  s << "\n## Minimal shape\n\n";
  auto knobs = knobValues(in.reduced_text);
  if (knobs.empty()) s << "(no integer knobs left)\n";
  for (auto &k : knobs) s << "- `" << k << "`\n";
  s << "\n## Environment\n\n";
  std::string nvcc = findNvcc(in.build.nvcc);
  if (!nvcc.empty()) {
    RunOptions o;
    o.timeout_s = 30;
    auto r = runProcess({nvcc, "--version"}, o);
    std::string last;
    std::istringstream vi(r.out);
    std::string l;
    while (std::getline(vi, l))
      if (l.find("release") != std::string::npos) last = l;
    s << "- nvcc: " << last << "\n";
  }
  if (auto smi = findInPath("nvidia-smi")) {
    RunOptions o;
    o.timeout_s = 30;
    auto r = runProcess(
        {*smi, "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"}, o);
    s << "- GPU: " << firstLines(r.out, 1);
  } else {
    s << "- GPU: none on the machine that reduced it\n";
  }
  s << "- build: `nvcc";
  for (auto &a : nvccArgs(in.build)) s << " " << a;
  s << " " << fs::path(in.reduced_path).filename().string() << "`\n";
  if (!in.program_args.empty()) {
    s << "- run: `./a.out";
    for (auto &a : in.program_args) s << " " << a;
    s << "`\n";
  }
  s << "\n## Command\n\n```\n" << in.command << "\n```\n";
  s << "\n## Program\n\n```cuda\n"
    << in.reduced_text << (in.reduced_text.empty() || in.reduced_text.back() == '\n' ? "" : "\n")
    << "```\n";
  s << "\n## PTX landmarks\n\n" << ptxLandmarks(fs::absolute(in.reduced_path).string(), in.build);
  return s.str();
}

}  // namespace wsr
