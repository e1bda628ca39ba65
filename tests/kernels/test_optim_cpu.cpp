// The CPU fused SGD step through the op API against torch.optim.SGD written out op by op:
// five steps (the first initializes the momentum buffer) for every option set and size.
#include <gtest/gtest.h>

#include <string>

#include "close_values.h"
#include "kernels/ops.h"
#include "optim_cases.h"

namespace engine {
namespace {

using testing::all_close;

TEST(OptimCpu, SgdStepsMatchTorchFormula) {
  Stream stream;
  for (const testing::SgdCase& c : testing::kSgdCases) {
    for (int64_t n : testing::kSgdSizes) {
      SCOPED_TRACE(c.name + " n=" + std::to_string(n));
      std::vector<float> expect_params = testing::normal_values(n, 1, DType::f32);
      std::vector<float> expect_buffer(n, 0.f);
      Tensor params = Tensor::from_floats({n}, expect_params);
      Tensor buffer = Tensor::zeros({n}, DType::f32, Device::cpu(), stream);
      for (int step = 0; step < 5; ++step) {
        const std::vector<float> grads = testing::normal_values(n, 10 + step, DType::f32);
        testing::reference_sgd(c.options, expect_params, grads, expect_buffer, step == 0);
        sgd_step(c.options, params, Tensor::from_floats({n}, grads), buffer,
                 step == 0 ? MomentumBuffer::empty : MomentumBuffer::filled, stream);
      }
      // The same fp32 operations in the same order; 1 ulp of slack per step for a compiler
      // that fuses a multiply-add.
      EXPECT_TRUE(all_close(expect_params, params.to_floats(stream), 1e-6, 1e-2));
      if (c.options.momentum != 0.f) {
        EXPECT_TRUE(all_close(expect_buffer, buffer.to_floats(stream), 1e-6, 1e-2));
      }
    }
  }
}

TEST(OptimCpu, FirstStepCopiesTheGradientIntoTheBuffer) {
  // PyTorch's first momentum step: buf = d_p (no dampening), whatever the buffer held.
  Stream stream;
  SgdOptions options{1.f, 0.9f, 0.5f, 0.f, false, 1.f};
  Tensor params = Tensor::from_floats({3}, {1.f, 2.f, 3.f});
  Tensor buffer = Tensor::from_floats({3}, {100.f, 100.f, 100.f});
  sgd_step(options, params, Tensor::from_floats({3}, {0.5f, -1.f, 2.f}), buffer,
           MomentumBuffer::empty, stream);
  EXPECT_EQ(buffer.to_floats(stream), (std::vector<float>{0.5f, -1.f, 2.f}));
  EXPECT_EQ(params.to_floats(stream), (std::vector<float>{0.5f, 3.f, 1.f}));
  // Second step: buf = 0.9 * buf + 0.5 * g.
  sgd_step(options, params, Tensor::from_floats({3}, {1.f, 1.f, 1.f}), buffer,
           MomentumBuffer::filled, stream);
  EXPECT_TRUE(all_close(std::vector<double>{0.95, -0.4, 2.3}, buffer.to_floats(stream), 1e-6));
}

TEST(OptimCpu, ArgumentErrorsNameTheTensor) {
  Stream stream;
  Tensor params = Tensor::empty({8}, DType::f32);
  Tensor grads = Tensor::empty({8}, DType::f32);
  Tensor short_buffer = Tensor::empty({7}, DType::f32);
  Tensor none;
  SgdOptions momentum{0.1f, 0.9f, 0.f, 0.f, false, 1.f};
  try {
    sgd_step(momentum, params, grads, short_buffer, MomentumBuffer::filled, stream);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("sgd_step: momentum_buffer is f32[7] on cpu"),
              std::string::npos)
        << error.what();
  }
  SgdOptions plain{0.1f, 0.f, 0.f, 0.f, false, 1.f};
  EXPECT_NO_THROW(sgd_step(plain, params, grads, none, MomentumBuffer::filled, stream));
  SgdOptions bad_nesterov{0.1f, 0.f, 0.f, 0.f, true, 1.f};
  EXPECT_THROW(sgd_step(bad_nesterov, params, grads, none, MomentumBuffer::filled, stream), Error);
  SgdOptions bad_lr{-1.f, 0.f, 0.f, 0.f, false, 1.f};
  EXPECT_THROW(sgd_step(bad_lr, params, grads, none, MomentumBuffer::filled, stream), Error);
  Tensor bf16_params = Tensor::empty({8}, DType::bf16);
  EXPECT_THROW(sgd_step(plain, bf16_params, grads, none, MomentumBuffer::filled, stream), Error);
}

}  // namespace
}  // namespace engine
