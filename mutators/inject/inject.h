// Bug injectors (BUGS.md, one per row): the same site interface as the shrinking passes,
// read the other way round. A shrinking pass offers sites the search may keep; an injector
// offers sites each of which IS one known handoff bug. The campaign (fuzzer/) applies one
// site at a time to a reference kernel that passes and checks the oracle's verdict against
// the injector's declared expectation.
//
// Sites come from the Clang AST through a KernelIndex (index.cpp, the one Clang-heavy file
// here): every use of a synchronisation primitive, found both as a call to a small wrapper
// function (the kernels' named primitives mbar_init, tma_load_2d, ..., or a user's own
// wrapper, recognised by the PTX in its asm) and as raw PTX in a GCCAsmStmt written straight
// into a kernel. The injectors themselves only read the index and the text.
#pragma once

#include "pass.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wsr::inject {

// ---- the index -----------------------------------------------------------------------------

// A PTX operand of a primitive's instruction, resolved to the source expression that
// supplies it at this use (the asm operand, or the wrapper call's argument).
struct Operand {
  std::string ptx;                 // as written in the asm: "%1", "_", "{%3, %4}" parts are split
  bool in_braces = false;          // a tensor coordinate ({c0, c1})
  std::optional<Range> src;        // the expression at this use, when it can be edited
  std::optional<long long> value;  // its value when it is a constant expression
};

// An enclosing control statement of an occurrence, innermost first.
struct Ctl {
  enum Kind { If, Loop } kind = If;
  Range whole;            // the whole statement
  std::string cond_text;  // its condition as written
  bool in_else = false;   // If: the occurrence is in the else arm
  Range arm;              // the arm (If) or body (Loop) holding the occurrence
  bool arm_is_compound = false;
  // Loop only: the bound of `i < N` / `i <= N` / `i != N`, and a grid-stride advance
  // (`t += gridDim.x`, the persistent kernels' tile scheduler).
  std::optional<Range> bound;
  std::optional<Range> grid_advance;  // the right-hand side of the `+=`
  bool top_level = false;             // directly in the function body
};

struct Occurrence {
  std::string prim;     // canonical PTX operation, see primitiveOf()
  std::string via;      // the wrapper's name, or "asm" for PTX written in the function
  std::string function; // the function the use is in
  bool in_kernel = false;
  Range expr;           // the call (or the asm statement)
  Range anchor;         // the statement holding it that sits directly in a `{}` block (with ';')
  int block = -1;       // id of that block
  bool anchor_top_level = false;  // that block is the function body
  std::vector<Operand> ops;       // the instruction's operands, flattened in PTX order
  std::optional<Range> targs;     // explicit template arguments of the call (`<1>` without <>)
  std::optional<long long> targ_value;
  std::vector<Ctl> ctl;           // innermost first
  unsigned line = 0;

  const Operand *last() const { return ops.empty() ? nullptr : &ops.back(); }
  std::vector<const Operand *> coords() const;
  bool underIf() const;
};

// A top-level `if` of a kernel body: where role branches live.
struct TopIf {
  Range whole;
  std::string cond_text;
  Range then_arm, else_arm;  // else_arm.size()==0 when absent
  bool then_compound = false, else_compound = false, has_else = false;
};

struct KernelInfo {
  std::string name;
  Range body;                  // the `{ ... }` of the kernel
  std::vector<TopIf> ifs;      // in source order
};

// A global-memory subscript in a kernel: `p[i]` with p a pointer parameter.
struct GlobalAccess {
  std::string base;
  Range index;
  bool write = false;
  std::string function;
};

// A numeric #define or namespace-scope constant (a knob), and the bounds static_asserts put on it.
struct Knob {
  std::string name;
  Range value;
  long long v = 0;
  long long min_allowed = 1;
};

struct KernelIndex {
  std::vector<Occurrence> occs;  // in source order
  std::vector<KernelInfo> kernels;
  std::vector<GlobalAccess> globals;
  std::vector<Knob> knobs;
  std::string text;
  bool parsed = false;

  std::vector<const Occurrence *> find(std::string_view prim) const;
  std::vector<const Occurrence *> inKernels(std::string_view prim) const;
};

// Builds the index from the device-side AST (the host side when there is none).
KernelIndex buildIndex(const ParsedSource &src);

// The canonical primitive an asm string performs ("" when none we know), e.g.
// "mbarrier.init", "mbarrier.arrive", "mbarrier.arrive.expect_tx", "mbarrier.wait",
// "tma.load", "tma.store", "fence.proxy.async", "bulk.commit_group", "bulk.wait_group.read",
// "bulk.wait_group", "wgmma.fence", "wgmma.commit_group", "wgmma.wait_group", "wgmma.mma",
// "bar.cta" (bar.sync 0 / __syncthreads), "bar.named", "elect.sync", "setmaxnreg",
// "tcgen05.alloc", "tcgen05.dealloc", "tcgen05.relinquish", "tcgen05.mma", "tcgen05.commit",
// "tcgen05.fence.after", "tcgen05.fence.before", "tcgen05.ld", "tcgen05.wait.ld".
std::string primitiveOf(std::string_view asm_text);

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
  const char *arch;          // the kernels it applies to: "sm_90a" or "sm_100a"
  const char *sanitizer;     // seed 000's tool for the class (the latent mutants' second look)
  bool runtime;              // judged by running (Hopper) or compile + static check (Blackwell)
  StaticCheckFn check;       // Blackwell: confirms the defect in the mutant; else null
  std::vector<std::string> expected;  // oracle details ("hang/mbarrier"); "wrong/*" = any wrong/...
  const char *note;          // the catalogue's note
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
std::vector<InjectSite> sitesFor(const InjectorInfo &inj, const ParsedSource &src, const KernelIndex &idx);

// ---- helpers the injectors share --------------------------------------------------------------
InjectSite makeSite(const char *inj, const std::string &text, std::vector<Edit> edits, std::string note);
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
