// Division by a divisor fixed at launch (a tensor's width, a filter's taps) as one multiply-high
// and a shift. The implicit-GEMM gathers split flat indices into pixel and tap coordinates
// for every element they load; a 64-bit `/` there is a ~70-instruction subroutine call on
// the GPU, which left the conv kernels issuing 6 instructions per FMA.
//
// For 2 <= d < 2^31 with l = ceil(log2 d): m = ceil(2^(31 + l) / d) fits in 32 bits, and
// floor(n * m / 2^(31 + l)) == floor(n / d) for every 0 <= n < 2^31: m exceeds 2^(31+l)/d by
// e < 1, so n * m / 2^(31+l) exceeds n / d by n * e / 2^(31+l) < 2^31 / 2^(31+l) <= 1 / d,
// less than the distance from n / d up to the next integer. d = 1 is n itself.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace engine {

class FastDivmod {
 public:
  FastDivmod() = default;
  // divisor in [1, 2^31); the dividends passed later must be in [0, 2^31).
  ENGINE_HOST_DEVICE explicit FastDivmod(int32_t divisor) : divisor_(divisor) {
    if (divisor <= 1) return;
    int log2 = 0;
    while ((int64_t{1} << log2) < divisor)
      ++log2;
    const uint64_t power = uint64_t{1} << (31 + log2);
    multiplier_ = static_cast<uint32_t>((power + static_cast<uint64_t>(divisor) - 1) /
                                        static_cast<uint64_t>(divisor));
    shift_ = log2 - 1;
  }

  ENGINE_HOST_DEVICE int32_t divisor() const { return divisor_; }

  ENGINE_HOST_DEVICE int32_t divide(int32_t n) const {
    if (divisor_ == 1) return n;
    return static_cast<int32_t>(multiply_high(static_cast<uint32_t>(n), multiplier_) >> shift_);
  }

  // quotient = n / d, remainder = n % d.
  ENGINE_HOST_DEVICE void divmod(int32_t n, int32_t& quotient, int32_t& remainder) const {
    quotient = divide(n);
    remainder = n - quotient * divisor_;
  }

 private:
  ENGINE_HOST_DEVICE static uint32_t multiply_high(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
    return __umulhi(a, b);
#else
    return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
  }

  int32_t divisor_ = 1;
  uint32_t multiplier_ = 0;
  int32_t shift_ = 0;
};

}  // namespace engine
