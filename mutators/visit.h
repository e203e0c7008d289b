// The body of a visitor pass: on each parsed side, a V(ctx, src, sites, places) walks the
// declarations that begin in the user's file; the sites of both sides come back deduplicated
// and in order (dedupeAndOrder), with one place id per place across the sides (PlaceIds).
#pragma once

#include "pass.h"

#include <clang/AST/ASTContext.h>

namespace wsr {

template <class V>
std::vector<PassSite> visitorSites(const ParsedSource &src) {
  std::vector<PassSite> sites;
  PlaceIds places;
  forEachSide(src, [&](clang::ASTContext &ctx, bool) {
    V v(ctx, src, sites, places);
    forEachMainFileDecl(ctx, [&](clang::Decl *d) { v.TraverseDecl(d); });
    if constexpr (requires { v.flush(); })
      v.flush();  // a visitor that decides once it has seen all
  });
  dedupeAndOrder(sites);
  return sites;
}

}  // namespace wsr
