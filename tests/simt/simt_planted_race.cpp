// The planted bug for ThreadSanitizer: block_sum_kernel without the __syncthreads between
// its two stages. CI passes when TSan reports a data race in block_sum_kernel<true> and exits
// with its exit code (check_sanitizer_report.cmake), and fails when the same check accepts the
// build without TSan (simt_planted_race_blind); the correct kernel runs in simt_test_tsan
// without a report. Not a GoogleTest: TSan's report is the result.
#include <cstdio>
#include <vector>

#include "sim/simt/simt.h"
#include "tests/simt/block_sum_kernel.h"
#include "tests/simt/planted_bug_cli.h"

int main(int argc, char** argv) {
  if (const int code = simt::planted_bug_cli(
          argc, argv, "a block reduction without its __syncthreads, for ThreadSanitizer to report");
      code >= 0)
    return code;
  const unsigned n = 256;
  std::vector<int> in(n, 1);
  unsigned long long total = 0;
  simt::launch(block_sum_kernel<true>, dim3(1), dim3(n), 0, nullptr, in.data(), n, &total);
  std::printf("sum without the barrier: %lld (expected %u)\n", static_cast<long long>(total), n);
  return 0;
}
