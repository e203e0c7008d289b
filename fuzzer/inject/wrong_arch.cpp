// wrong-arch: the program built for sm_90, not sm_90a (docs/methodology.md step 2: a wrong build
// looks like wrong results elsewhere). A build flag is not text, so the site inserts a
// `// wsfuzz: arch=sm_90` marker line: the mutant differs from the original (its own hash,
// corpus file and reduction) and the campaign builds it for the marked target
// (archOverride()); InjectSite::arch says the same for callers that apply sites themselves.
#include "inject.h"

namespace wsr::inject {

std::vector<InjectSite> wrongArchSites(const ParsedSource &src, const KernelIndex &idx) {
  std::string arch = kernelArch(src.text);
  if (arch.empty() || arch.back() != 'a') return {};
  std::string wrong = arch.substr(0, arch.size() - 1);
  auto s = makeSite("wrong-arch", src.text, {Edit{0, 0, "// wsfuzz: arch=" + wrong + "\n"}},
                    "build for " + wrong + " instead of " + arch);
  s.arch = wrong;
  return {s};
}

}  // namespace wsr::inject
