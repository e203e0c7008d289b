// wsemu-translate: print (or write) the emulator translation of a .cu, or build it.
//   wsemu-translate kernel.cu [-o out.cpp] [-DNAME[=V]]... [-IDIR]...
//   wsemu-translate --build kernel.cu [-D...] [-I...]     (prints the binary's path)
#include "translate.h"

#include "build.h"
#include "process.h"
#include "verdict.h"

#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char **argv) {
  std::string in, out;
  bool build = false;
  wsr::emu::TranslateOptions opt;
  wsr::BuildOptions bo;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-o" && i + 1 < argc)
      out = argv[++i];
    else if (a == "--build")
      build = true;
    else if (a.rfind("-D", 0) == 0)
      opt.parse.defines.push_back(a.substr(2)), bo.defines.push_back(a.substr(2));
    else if (a.rfind("-I", 0) == 0)
      opt.parse.includes.push_back(a.substr(2)), bo.includes.push_back(a.substr(2));
    else
      in = a;
  }
  if (in.empty()) {
    std::fprintf(stderr, "usage: wsemu-translate [--build] kernel.cu [-o out.cpp] [-D..] [-I..]\n");
    return 2;
  }
  if (build) {
    std::string cpp;
    auto b = wsr::emu::buildEmu(in, bo, &cpp);
    std::fprintf(stderr, "%s", b.log.c_str());
    if (!b.ok) {
      std::fprintf(stderr, "build failed (%s); translation: %s\n", b.tool_error.c_str(),
                   cpp.c_str());
      return 1;
    }
    std::printf("%s\n", b.binary.c_str());
    return 0;
  }
  auto text = wsr::readFile(in);
  if (!text) return std::fprintf(stderr, "cannot read %s\n", in.c_str()), 2;
  if (auto h = wsr::harnessIncludeDir(); !h.empty()) opt.parse.includes.push_back(h);
  auto r = wsr::emu::translate(*text, in, opt);
  if (!r.ok) return std::fprintf(stderr, "%s\n", r.error.c_str()), 1;
  for (auto &u : r.unknown) std::fprintf(stderr, "unknown instruction at %s\n", u.c_str());
  for (auto &w : r.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  std::fprintf(stderr, "asm %u (unknown %u), launches %u, shared %u, checked accesses %u\n",
               r.asm_statements, r.asm_unknown, r.launches, r.shared_vars, r.checked_accesses);
  if (out.empty())
    std::fputs(r.text.c_str(), stdout);
  else if (!wsr::writeFileAtomic(out, r.text))
    return 1;
  return 0;
}
