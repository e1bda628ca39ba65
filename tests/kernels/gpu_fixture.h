// The fixture of the GPU suites (conv, warp mma): skipped, with
// the reason, when this process has no usable CUDA device; helpers that run the same op on CPU
// tensors and on their GPU copies.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "kernels/runtime.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine::testing {

class GpuOpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) {
      GTEST_SKIP() << "no usable CUDA device: " << cuda_unavailable_reason();
    }
    gpu_stream_ = std::make_unique<Stream>(gpu);
  }
  Stream& gpu_stream() { return *gpu_stream_; }
  Tensor on_gpu(const Tensor& host) { return host.to(gpu, gpu_stream()); }
  std::vector<float> host_values(const Tensor& t) {
    return t.device().is_cpu() ? t.to_floats(cpu_stream) : t.to_floats(gpu_stream());
  }

  Device gpu = Device::cuda(0);
  Stream cpu_stream;

 private:
  std::unique_ptr<Stream> gpu_stream_;
};

}  // namespace engine::testing
