// The planted bug for AddressSanitizer: a kernel writes one element past its dynamic shared
// memory. CI passes when ASan reports a heap-buffer-overflow in overflow_kernel and exits with
// its exit code (check_sanitizer_report.cmake), and fails when the same check accepts the build
// without ASan (simt_planted_overflow_blind).
#include <cstdio>
#include <cstring>

#include "simt/simt.h"

__global__ void overflow_kernel(unsigned n) {
  DYNAMIC_SHARED_MEMORY(float, values);
  values[threadIdx.x] = 1.0f;  // threads 0..n: thread n writes past the end
  (void)n;
}

// The binaries' command-line convention, by hand: this program links only the emulator.
int main(int argc, char** argv) {
  const char* const usage =
      "usage: %s\n"
      "Runs a write past the dynamic shared memory, for AddressSanitizer to report; ctest checks "
      "the report\n"
      "(tests/simt/check_sanitizer_report.cmake).\n";
  if (argc > 1) {
    const bool help = std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0;
    if (!help) std::fprintf(stderr, "%s: unknown argument %s\n", argv[0], argv[1]);
    // The same source builds <name>_tsan/_asan and <name>_blind: the usage names this one.
    const char* program = std::strrchr(argv[0], '/') ? std::strrchr(argv[0], '/') + 1 : argv[0];
    std::fprintf(help ? stdout : stderr, usage, program);
    return help ? 0 : 2;
  }
  const unsigned n = 64;
  simt::launch(overflow_kernel, dim3(1), dim3(n + 1), n * sizeof(float), nullptr, n);
  std::printf("no AddressSanitizer report: the overflow went unnoticed\n");
  return 0;
}
