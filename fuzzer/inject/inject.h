// Bug injectors (docs/bugs.md, one per row): the same site interface as the shrinking passes,
// read the other way round. A shrinking pass offers sites the search may keep; an injector
// offers sites each of which IS one known handoff bug. The campaign (fuzzer/) applies one
// site at a time to a reference kernel that passes and checks the oracle's verdict against
// the injector's declared expectation.
//
// Sites come from the Clang AST through the kernel index (frontend/kernel_index.h); the injectors
// themselves only read the index and the text.
#pragma once

#include "kernel_index.h"
#include "pass.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wsr::inject {

using wsr::KernelIndex;
using wsr::Occurrence;

// ---- injectors -------------------------------------------------------------------------------

struct InjectSite : PassSite {
  std::string arch;  // non-empty: the mutant must be built for this target (wrong-arch)
};

using InjectFn = std::vector<InjectSite> (*)(const ParsedSource &, const KernelIndex &);
// A Blackwell injector's static check: is the defect present in this (mutant) program?
using StaticCheckFn = bool (*)(const KernelIndex &, std::string *why);

struct InjectorInfo {
  const char *name;
  InjectFn sites;
  const char *arch;       // the kernels it applies to: "sm_90a" or "sm_100a"
  const char *sanitizer;  // docs/methodology.md's tool for the class (latent mutants' second look)
  bool runtime;           // judged by running (Hopper) or compile + static check (Blackwell)
  StaticCheckFn check;    // Blackwell: confirms the defect in the mutant; else null
  std::vector<std::string> expected;  // oracle details ("hang/mbarrier"); "wrong/*" = any wrong/...
  const char *note;                   // the catalogue's note
};

const std::vector<InjectorInfo> &allInjectors();
const InjectorInfo *findInjector(std::string_view name);

// Whether an observed verdict detail (or symptom) is one the injector expects.
bool expects(const InjectorInfo &inj, const std::string &detail);

// The target a kernel is written for: sm_100a when it uses tcgen05, else sm_90a.
std::string kernelArch(const std::string &text);
// The `// wsfuzz: arch=sm_90` marker wrong-arch puts in a mutant; empty when none.
std::string archOverride(const std::string &text);

// Parses (with the kernel's arch), indexes and lists one injector's sites.
std::vector<InjectSite> sitesFor(const InjectorInfo &inj, const ParsedSource &src,
                                 const KernelIndex &idx);

// ---- helpers the injectors share --------------------------------------------------------------
InjectSite makeSite(const char *inj, const std::string &text, std::vector<Edit> edits,
                    std::string note);
// Removes a statement: its whole line(s) when nothing else is on them; `{}` keeps an
// unbraced if/loop arm a statement.
Edit deleteStmt(const std::string &text, Range stmt, bool in_block);
// Inserts `code` as a new line before the line that holds `at`, with that line's indentation.
Edit insertLineBefore(const std::string &text, unsigned at, const std::string &code);
// Inserts `code` as the first statement of a `{ ... }` block starting at `brace`.
Edit insertAtBlockStart(const std::string &text, Range block, const std::string &code);
std::string slice(const std::string &text, Range r);
// The statement that is exactly this use (`mbar_arrive(&b);`), and whether it sits in a
// `{}` block (else it is an unbraced if/loop arm); nullopt when the use is inside a larger
// expression or statement.
std::optional<std::pair<Range, bool>> useStmt(const std::string &text, const Occurrence &o);
// Deletes that statement.
std::optional<Edit> deleteUse(const std::string &text, const Occurrence &o);
std::string roleOf(const Occurrence &o);  // "producer" / "consumer" / "" from the enclosing guards
// A guard selecting one lane / one thread / an elected lane.
bool isSingleThreadGuard(const std::string &cond);
bool isLaneGuard(const std::string &cond);

}  // namespace wsr::inject
