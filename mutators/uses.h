// Which statements use which declarations, so that a pass can take a declaration away together
// with everything that uses it, in one edit that still parses (C-Reduce's passes remove a
// variable's declaration alone and leave the parse check to throw the candidate away; on a
// kernel most statements declare something the next ones use, and most such candidates were
// skipped: 139 of 142 remove-function and 244 of 279 remove-stmt tests on the H200 GEMM).
#pragma once

#include "edit.h"
#include "parse.h"

#include <map>
#include <set>
#include <vector>

namespace clang {
class ASTContext;
class CompoundStmt;
class Decl;
class Stmt;
}  // namespace clang

namespace wsr {

// Whether `st` is the last statement of `body`, a `return` with a value, and `body` the body of a
// function or lambda: removing it makes the function fall off its end, which the reducer's strict
// parse check refuses (17% of the remove-stmt candidates on the GEMM were such removals).
bool isFinalReturn(clang::ASTContext &ctx, const clang::CompoundStmt *body, const clang::Stmt *st);

class UseIndex {
 public:
  // Indexes the statements of every block in the main file's function bodies.
  UseIndex(clang::ASTContext &ctx, const ParsedSource &src);

  // The edits that remove `s` (a statement directly in a block) and every later statement of the
  // same block that uses what it declares, transitively. Empty when `s` is not indexed.
  std::vector<Edit> removeWithDependents(const clang::Stmt *s) const;
  // How many statements removeWithDependents(s) takes (1: `s` alone).
  size_t dependentsCount(const clang::Stmt *s) const;

  // The edits that remove every statement using `d` (the innermost statement directly in a block
  // around each use), each with its dependents. False when some use is not inside a block (a
  // global initializer, a default argument): removing `d` cannot be made to parse that way.
  bool removeUses(const clang::Decl *d, std::vector<Edit> &out) const;

  // The declaration uses are keyed by (canonical, and for a template's specialisation the
  // template's own) declaration.
  static const clang::Decl *key(const clang::Decl *d);

 private:
  struct Child {
    std::optional<Range> range;  // widened to whole lines where it stands alone
    std::set<const clang::Decl *> declares, uses;
    bool final_return = false;  // isFinalReturn: never removed
  };
  std::vector<std::vector<Child>> blocks_;
  std::map<const clang::Stmt *, std::pair<size_t, size_t>> where_;  // child -> (block, index)
  std::map<const clang::Decl *, std::set<std::pair<size_t, size_t>>> users_;
  std::set<const clang::Decl *> unplaced_;  // used outside any block
  friend struct UseVisitor;

  std::set<size_t> closure(size_t block, size_t index) const;
  void addEdits(size_t block, const std::set<size_t> &idx, std::vector<Edit> &out) const;
};

}  // namespace wsr
