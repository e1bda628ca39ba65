// The binaries' command-line convention (train/cli_usage.h) for the planted-bug programs, by
// hand: they link only the emulator. They take no arguments.
#pragma once

#include <cstdio>
#include <cstring>

namespace simt {

// Returns the exit code when argv asks for the usage or holds anything (0 for --help, 2 for
// an unknown argument), or -1 when the program should run.
inline int planted_bug_cli(int argc, char** argv, const char* what) {
  if (argc <= 1) return -1;
  const bool help = std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0;
  // The same source builds <name>_tsan/_asan and <name>_blind: the usage names this one.
  const char* slash = std::strrchr(argv[0], '/');
  const char* program = slash != nullptr ? slash + 1 : argv[0];
  if (!help) std::fprintf(stderr, "%s: unknown argument %s\n", program, argv[1]);
  std::fprintf(help ? stdout : stderr,
               "usage: %s\nRuns %s; ctest checks the report "
               "(tests/simt/check_sanitizer_report.cmake).\n",
               program, what);
  return help ? 0 : 2;
}

}  // namespace simt
