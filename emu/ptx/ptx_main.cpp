// wsemu-ptx PROGRAM.cu [nvcc flags...] [-- program arguments...]: builds the program for the PTX
// emulator (emu/ptx/ptx_build.cpp) and runs it on the CPU. Its output is the program's own; a
// failed launch adds the emulator's WSEMU lines on stderr and the exit status 86 (hang), 87 (crash,
// UB) or 88 (the emulator cannot judge it).
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "emu/ptx/ptx_build.h"

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: wsemu-ptx PROGRAM.cu [nvcc flags...] [-- program arguments...]\n");
    return 2;
  }
  const std::string src = argv[1];
  if (::access(src.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "wsemu-ptx: %s cannot be read.\n", src.c_str());
    return 2;
  }
  wsr::BuildOptions o;
  std::vector<std::string> prog_args;
  int i = 2;
  for (; i < argc && std::string(argv[i]) != "--"; ++i) {
    std::string a = argv[i];
    if (a.rfind("-l", 0) == 0 && a.size() > 2)
      o.libs.push_back(a.substr(2));
    else if (a.rfind("-arch=", 0) == 0)
      o.arch = a.substr(6);
    else
      o.flags.push_back(a);
  }
  for (++i; i < argc; ++i) prog_args.push_back(argv[i]);
  wsr::BuildRecord b = wsr::emu::buildPtxEmu(src, o);
  if (b.tool_missing) {
    std::fprintf(stderr, "wsemu-ptx: %s.\n", b.tool_error.c_str());
    return 2;
  }
  if (!b.ok) {
    std::fprintf(stderr, "%s", b.log.c_str());
    std::fprintf(stderr, "wsemu-ptx: the program could not be built for the PTX emulator.\n");
    return 88;
  }
  std::vector<char *> av = {const_cast<char *>(b.binary.c_str())};
  for (auto &a : prog_args) av.push_back(const_cast<char *>(a.c_str()));
  av.push_back(nullptr);
  std::fflush(nullptr);
  ::execv(b.binary.c_str(), av.data());
  std::perror("wsemu-ptx: exec");
  return 2;
}
