// fp32 views of f32/bf16 tensors for CPU ops that compute in fp32 (GEMM-based ones): f32
// data is used in place; bf16 data is widened into a temporary, and outputs are rounded
// back once by commit(). Any other dtype (i32) throws rather than be read as bf16.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/copy.h"
#include "kernels/cpu/parallel.h"
#include "kernels/dtype.h"

namespace engine::cpu {

class Fp32Input {
 public:
  Fp32Input(DType dtype, const void* data, int64_t n) {
    if (dtype == DType::f32) {
      data_ = static_cast<const float*>(data);
      return;
    }
    if (dtype != DType::bf16) fail_not_float_dtype(dtype, "Fp32Input");
    const bf16* in = static_cast<const bf16*>(data);
    widened_.resize(static_cast<size_t>(n));
    parallel_for(n, [&](int64_t i) { widened_[i] = static_cast<float>(in[i]); });
    data_ = widened_.data();
  }
  const float* data() const { return data_; }

 private:
  std::vector<float> widened_;
  const float* data_ = nullptr;
};

class Fp32Output {
 public:
  // keep_contents: the fp32 view starts with dst's values (for accumulation).
  Fp32Output(DType dtype, void* data, int64_t n, bool keep_contents)
      : dtype_(dtype), destination_(data), n_(n) {
    if (dtype == DType::f32) {
      data_ = static_cast<float*>(data);
      return;
    }
    if (dtype != DType::bf16) fail_not_float_dtype(dtype, "Fp32Output");
    widened_.resize(static_cast<size_t>(n));
    if (keep_contents) {
      const bf16* in = static_cast<const bf16*>(data);
      parallel_for(n, [&](int64_t i) { widened_[i] = static_cast<float>(in[i]); });
    }
    data_ = widened_.data();
  }
  float* data() { return data_; }
  // Rounds the fp32 results into the destination (no-op for f32).
  void commit() {
    if (dtype_ == DType::f32) return;
    cast({.src_dtype = DType::f32,
          .src = widened_.data(),
          .dst_dtype = DType::bf16,
          .dst = destination_,
          .n = n_});
  }

 private:
  DType dtype_;
  void* destination_;
  int64_t n_;
  std::vector<float> widened_;
  float* data_ = nullptr;
};

}  // namespace engine::cpu
