// "Device" buffers for the emulator suites of the batchnorm, pool, loss and optim kernels:
// values stored as dtype in a 16-byte aligned allocation (like cudaMalloc), optionally
// starting `offset` elements in so that the 16-byte vector paths are not taken.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "elementwise_cases.h"
#include "kernels/dtype.h"

namespace engine::testing {

class SimtBuffer {
 public:
  SimtBuffer(DType dtype, const std::vector<float>& values, int offset = 0)
      : dtype_(dtype), offset_bytes_(offset * dtype_size(dtype)), n_(values.size()) {
    const std::vector<std::byte> bytes = encode(dtype, values);
    storage_.assign(bytes.size() + offset_bytes_ + 16, std::byte{0});
    std::copy(bytes.begin(), bytes.end(), storage_.begin() + offset_bytes_);
  }
  // An f32 buffer of n elements, filled with NaN so unwritten outputs show.
  static SimtBuffer f32(size_t n) {
    return SimtBuffer(DType::f32, std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()));
  }

  void* data() { return storage_.data() + offset_bytes_; }
  // Typed views for the launchers: T is float or __nv_bfloat16.
  template <typename T>
  T* as() {
    return static_cast<T*>(data());
  }
  float* floats() { return as<float>(); }
  std::vector<float> values() const {
    return decode(dtype_, storage_.data() + offset_bytes_, static_cast<int64_t>(n_));
  }

 private:
  DType dtype_;
  size_t offset_bytes_;
  size_t n_;
  std::vector<std::byte> storage_;  // operator new: 16-byte aligned
};

}  // namespace engine::testing
