// The loss ops on a CUDA device against the CPU backend, through the op API. Skipped, with
// the reason, when there is no usable CUDA device.
#include <gtest/gtest.h>

#include <string>

#include "close_values.h"
#include "gpu_fixture.h"
#include "kernels/ops.h"
#include "loss_cases.h"

namespace engine {
namespace {

using testing::all_close;
using testing::LossShape;

class LossGpu : public testing::GpuOpTest {};

TEST_F(LossGpu, CrossEntropyAndTopkMatchCpu) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (float smoothing : {0.f, 0.1f}) {
      for (const LossShape& s : testing::kLossShapes) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str() + " smoothing " +
                     std::to_string(smoothing));
        Tensor logits = Tensor::from_floats(
            {s.n, s.k}, testing::normal_values(s.n * s.k, 1, dtype, 100.0, 3.0), dtype);
        std::vector<int32_t> label_values = testing::make_labels(s.n, s.k, 2);
        if (s.n > 2) label_values[1] = static_cast<int32_t>(s.k);  // out of range: NaN row
        Tensor labels = Tensor::from_ints({s.n}, label_values);
        std::vector<std::vector<float>> results[2];
        for (int side = 0; side < 2; ++side) {
          const bool gpu_side = side == 1;
          Stream& stream = gpu_side ? gpu_stream() : cpu_stream;
          const Device device = gpu_side ? gpu : Device::cpu();
          Tensor z = gpu_side ? on_gpu(logits) : logits, y = gpu_side ? on_gpu(labels) : labels;
          Tensor sample = Tensor::empty({s.n}, DType::f32, device);
          Tensor loss = Tensor::empty({1}, DType::f32, device);
          Tensor dz = Tensor::empty({s.n, s.k}, dtype, device);
          Tensor correct = Tensor::empty({2}, DType::f32, device);
          cross_entropy_forward(z, y, smoothing, sample, loss, stream);
          cross_entropy_backward(z, y, smoothing, 1.f, dz, stream);
          topk_correct(z, y, correct, stream);
          results[side] = {host_values(sample), host_values(loss), host_values(dz),
                           host_values(correct)};
        }
        EXPECT_TRUE(all_close(results[0][0], results[1][0], 1e-6, 100.0)) << "sample_loss";
        EXPECT_TRUE(all_close(results[0][1], results[1][1], 1e-6, 100.0)) << "loss";
        EXPECT_TRUE(all_close(results[0][2], results[1][2],
                              dtype == DType::f32 ? 1e-5 : testing::kBf16Ulp, 1.0 / s.n))
            << "dlogits";
        EXPECT_EQ(results[0][3], results[1][3]) << "top-1/top-5";
      }
    }
  }
}

}  // namespace
}  // namespace engine
