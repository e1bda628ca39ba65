// The planted bug for ThreadSanitizer: block_sum_kernel without the __syncthreads between
// its two stages. CI passes when TSan reports a data race in block_sum_kernel<true> and exits
// with its exit code (check_sanitizer_report.cmake), and fails when the same check accepts the
// build without TSan (simt_planted_race_blind); the correct kernel runs in simt_test_tsan
// without a report. Not a GoogleTest: TSan's report is the result.
#include <cstdio>
#include <cstring>
#include <vector>

#include "simt/block_sum_kernel.h"
#include "simt/simt.h"

// The binaries' command-line convention, by hand: this program links only the emulator.
int main(int argc, char** argv) {
  const char* const usage =
      "usage: %s\n"
      "Runs a block reduction without its __syncthreads, for ThreadSanitizer to report; ctest "
      "checks the report\n"
      "(tests/simt/check_sanitizer_report.cmake).\n";
  if (argc > 1) {
    const bool help = std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0;
    if (!help) std::fprintf(stderr, "%s: unknown argument %s\n", argv[0], argv[1]);
    // The same source builds <name>_tsan/_asan and <name>_blind: the usage names this one.
    const char* program = std::strrchr(argv[0], '/') ? std::strrchr(argv[0], '/') + 1 : argv[0];
    std::fprintf(help ? stdout : stderr, usage, program);
    return help ? 0 : 2;
  }
  const unsigned n = 256;
  std::vector<int> in(n, 1);
  unsigned long long total = 0;
  simt::launch(block_sum_kernel<true>, dim3(1), dim3(n), 0, nullptr, in.data(), n, &total);
  std::printf("sum without the barrier: %lld (expected %u)\n", static_cast<long long>(total), n);
  return 0;
}
