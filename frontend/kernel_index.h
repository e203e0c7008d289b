// The kernel index: every use of a synchronisation primitive in a program, found in the Clang
// AST both as a call to a small wrapper function (the kernels' named primitives mbar_init,
// tma_load_2d, ..., or a user's own wrapper, recognised by the PTX in its asm) and as raw PTX in
// a GCCAsmStmt written straight into a kernel. The bug injectors (fuzzer/inject/) read it to find
// where each handoff bug goes; the remove-tma-load pass reads it to pair a TMA load with the
// bytes announced for it.
#pragma once

#include "parse.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wsr {

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
  std::string prim;  // canonical PTX operation, see primitiveOf()
  std::string via;   // the wrapper's name, or "asm" for PTX written in the function
  // The instruction's opcode and qualifiers as its asm writes them (the wrapper's, for a call):
  // "mbarrier.arrive.release.cluster.shared::cluster.b64"; empty for a primitive known by name.
  std::string opcode;
  std::string function;  // the function the use is in
  bool in_kernel = false;
  Range expr;      // the call (or the asm statement)
  Range anchor;    // the statement holding it that sits directly in a `{}` block (with ';')
  int block = -1;  // id of that block
  bool anchor_top_level = false;  // that block is the function body
  std::vector<Operand> ops;       // the instruction's operands, flattened in PTX order
  std::optional<Range> targs;     // explicit template arguments of the call (`<1>` without <>)
  std::optional<long long> targ_value;
  std::vector<Ctl> ctl;  // innermost first
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
  Range body;              // the `{ ... }` of the kernel
  std::vector<TopIf> ifs;  // in source order
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
// "tcgen05.fence.after", "tcgen05.fence.before", "tcgen05.ld", "tcgen05.wait.ld",
// "barrier.cluster.arrive", "barrier.cluster.wait", "barrier.cluster" (both, in one use),
// "griddepcontrol.wait" (also cudaGridDependencySynchronize()), "griddepcontrol.launch_dependents".
// An mbarrier arrive on a peer CTA's barrier is "mbarrier.arrive" with a shared::cluster opcode
// (Occurrence::opcode).
std::string primitiveOf(std::string_view asm_text);

}  // namespace wsr
