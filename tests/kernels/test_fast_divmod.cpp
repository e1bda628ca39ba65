// FastDivmod (kernels/fast_divmod.h), the conv gathers' division, against `/` and `%`: every
// divisor up to 4096 and powers of two and their neighbours up to 2^31 - 1, each with the
// dividends where a rounding error would show first (around multiples of the divisor, and
// the largest allowed, 2^31 - 1), plus random ones.
#include "kernels/fast_divmod.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace engine {
namespace {

std::vector<int32_t> divisors() {
  std::vector<int32_t> out;
  for (int32_t d = 1; d <= 4096; ++d)
    out.push_back(d);
  for (int shift = 12; shift <= 30; ++shift) {
    const int64_t power = int64_t{1} << shift;
    for (int64_t d : {power - 1, power, power + 1, 3 * (power / 2)})
      out.push_back(static_cast<int32_t>(d));
  }
  out.push_back(INT32_MAX);
  return out;
}

void expect_divides(const FastDivmod& divmod, int32_t n) {
  int32_t quotient = -1, remainder = -1;
  divmod.divmod(n, quotient, remainder);
  const int32_t d = divmod.divisor();
  ASSERT_EQ(quotient, n / d) << n << " / " << d;
  ASSERT_EQ(remainder, n % d) << n << " % " << d;
  ASSERT_EQ(divmod.divide(n), n / d) << n << " / " << d;
}

TEST(FastDivmod, MatchesIntegerDivisionNearMultiplesAndAtTheLimit) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> any(0, INT32_MAX);
  for (int32_t d : divisors()) {
    SCOPED_TRACE(d);
    const FastDivmod divmod(d);
    for (int32_t n : {0, 1, d - 1, d, INT32_MAX, INT32_MAX - 1, INT32_MAX - d + 1})
      expect_divides(divmod, n);
    // Around the largest multiples of d (where the multiplier's excess adds up most) and
    // around small ones.
    const int64_t top = INT32_MAX / d * int64_t{d};
    for (int64_t multiple : {top, top - d, int64_t{d} * 2, int64_t{d} * 3}) {
      for (int64_t n = multiple - 1; n <= multiple + 1; ++n) {
        if (n >= 0 && n <= INT32_MAX) expect_divides(divmod, static_cast<int32_t>(n));
      }
    }
    for (int i = 0; i < 64; ++i)
      expect_divides(divmod, any(rng));
  }
}

TEST(FastDivmod, DefaultIsDivisionByOne) {
  const FastDivmod one;
  EXPECT_EQ(one.divisor(), 1);
  EXPECT_EQ(one.divide(12345), 12345);
}

}  // namespace
}  // namespace engine
