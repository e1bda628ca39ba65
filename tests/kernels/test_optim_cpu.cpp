// The CPU optimizer ops through the op API: SGD and AdamW against torch's steps written out op
// by op (five steps for every option set and size), sums of squares and LARS against double
// references, clip_grad against clip_grad_norm_'s formula, the argument errors, and each step's
// rate read from memory in place of the value (what a CUDA graph's replay relies on).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "close_values.h"
#include "kernels/ops.h"
#include "optim_cases.h"
#include "portable_loops.h"

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
        sgd_step(c.options,
                 {.params = params,
                  .grads = Tensor::from_floats({n}, grads),
                  .momentum_buffer = buffer,
                  .buffer_state = step == 0 ? MomentumBuffer::empty : MomentumBuffer::filled},
                 stream);
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

// The bf16 copy written by the step is the cast of the updated params, bit for bit, in both
// CPU paths (AVX-512 and the portable loops), over sizes that end blocks and threads' ranges
// anywhere; the params and buffer are those of the step without a copy.
TEST(OptimCpu, SgdStepWritesTheBf16CopyOfTheUpdatedParams) {
  Stream stream;
  for (bool portable : {false, true}) {
    const testing::PortableLoops loops(portable);
    for (const testing::SgdCase& c : testing::kSgdCases) {
      for (int64_t n : testing::kSgdSizes) {
        SCOPED_TRACE(c.name + " n=" + std::to_string(n) + (portable ? " portable" : ""));
        const std::vector<float> start = testing::normal_values(n, 1, DType::f32);
        Tensor plain = Tensor::from_floats({n}, start);
        Tensor fused = Tensor::from_floats({n}, start);
        Tensor plain_buffer = Tensor::zeros({n}, DType::f32, Device::cpu(), stream);
        Tensor fused_buffer = Tensor::zeros({n}, DType::f32, Device::cpu(), stream);
        Tensor copy = Tensor::empty({n}, DType::bf16);
        fill(copy, std::nanf(""), stream);
        Tensor expect_copy = Tensor::empty({n}, DType::bf16);
        for (int step = 0; step < 2; ++step) {
          const Tensor grads =
              Tensor::from_floats({n}, testing::normal_values(n, 10 + step, DType::f32));
          const MomentumBuffer state = step == 0 ? MomentumBuffer::empty : MomentumBuffer::filled;
          sgd_step(c.options,
                   {.params = plain,
                    .grads = grads,
                    .momentum_buffer = plain_buffer,
                    .buffer_state = state},
                   stream);
          sgd_step(c.options,
                   {.params = fused,
                    .grads = grads,
                    .momentum_buffer = fused_buffer,
                    .buffer_state = state,
                    .params_bf16 = copy},
                   stream);
          cast(plain, expect_copy, stream);
          ASSERT_EQ(fused.to_floats(stream), plain.to_floats(stream));
          ASSERT_EQ(fused_buffer.to_floats(stream), plain_buffer.to_floats(stream));
          ASSERT_EQ(0, std::memcmp(copy.raw_data(), expect_copy.raw_data(), n * sizeof(uint16_t)));
        }
      }
    }
  }
}

TEST(OptimCpu, SgdStepRefusesACopyOfAnotherSizeOrDtype) {
  Stream stream;
  Tensor params = Tensor::zeros({8}, DType::f32, Device::cpu(), stream);
  Tensor grads = Tensor::zeros({8}, DType::f32, Device::cpu(), stream);
  const SgdOptions plain{0.1f, 0.f, 0.f, 0.f, false, 1.f};
  for (Tensor copy : {Tensor::empty({7}, DType::bf16), Tensor::empty({8}, DType::f32)}) {
    try {
      sgd_step(plain, {.params = params, .grads = grads, .params_bf16 = copy}, stream);
      ADD_FAILURE() << "accepted " << copy.describe();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("sgd_step: params_bf16 is"), std::string::npos)
          << e.what();
    }
  }
}

TEST(OptimCpu, FirstStepCopiesTheGradientIntoTheBuffer) {
  // PyTorch's first momentum step: buf = d_p (no dampening), whatever the buffer held.
  Stream stream;
  SgdOptions options{1.f, 0.9f, 0.5f, 0.f, false, 1.f};
  Tensor params = Tensor::from_floats({3}, {1.f, 2.f, 3.f});
  Tensor buffer = Tensor::from_floats({3}, {100.f, 100.f, 100.f});
  sgd_step(options,
           {.params = params,
            .grads = Tensor::from_floats({3}, {0.5f, -1.f, 2.f}),
            .momentum_buffer = buffer,
            .buffer_state = MomentumBuffer::empty},
           stream);
  EXPECT_EQ(buffer.to_floats(stream), (std::vector<float>{0.5f, -1.f, 2.f}));
  EXPECT_EQ(params.to_floats(stream), (std::vector<float>{0.5f, 3.f, 1.f}));
  // Second step: buf = 0.9 * buf + 0.5 * g.
  sgd_step(options,
           {.params = params,
            .grads = Tensor::from_floats({3}, {1.f, 1.f, 1.f}),
            .momentum_buffer = buffer,
            .buffer_state = MomentumBuffer::filled},
           stream);
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
    sgd_step(momentum,
             {.params = params,
              .grads = grads,
              .momentum_buffer = short_buffer,
              .buffer_state = MomentumBuffer::filled},
             stream);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("sgd_step: momentum_buffer is f32[7] on cpu"),
              std::string::npos)
        << error.what();
  }
  // Without momentum no buffer is read: these operands pass, unless the options or params fail.
  const SgdStepOperands no_buffer{.params = params,
                                  .grads = grads,
                                  .momentum_buffer = none,
                                  .buffer_state = MomentumBuffer::filled};
  SgdOptions plain{0.1f, 0.f, 0.f, 0.f, false, 1.f};
  EXPECT_NO_THROW(sgd_step(plain, no_buffer, stream));
  SgdOptions bad_nesterov{0.1f, 0.f, 0.f, 0.f, true, 1.f};
  EXPECT_THROW(sgd_step(bad_nesterov, no_buffer, stream), Error);
  SgdOptions bad_lr{-1.f, 0.f, 0.f, 0.f, false, 1.f};
  EXPECT_THROW(sgd_step(bad_lr, no_buffer, stream), Error);
  SgdStepOperands bf16_params = no_buffer;
  bf16_params.params = Tensor::empty({8}, DType::bf16);
  EXPECT_THROW(sgd_step(plain, bf16_params, stream), Error);
}

TEST(OptimCpu, AdamWStepsMatchTorchFormula) {
  Stream stream;
  for (const testing::AdamWCase& c : testing::kAdamWCases) {
    for (int64_t n : testing::kSgdSizes) {
      SCOPED_TRACE(c.name + " n=" + std::to_string(n));
      std::vector<float> expect_params = testing::normal_values(n, 1, DType::f32);
      std::vector<float> expect_m(n, 0.f), expect_v(n, 0.f);
      Tensor params = Tensor::from_floats({n}, expect_params);
      Tensor m = Tensor::zeros({n}, DType::f32, Device::cpu(), stream);
      Tensor v = Tensor::zeros({n}, DType::f32, Device::cpu(), stream);
      for (int step = 1; step <= 5; ++step) {
        const std::vector<float> grads = testing::normal_values(n, 10 + step, DType::f32);
        testing::reference_adamw(c.options, step, expect_params, grads, expect_m, expect_v);
        adamw_step(c.options,
                   {.params = params,
                    .grads = Tensor::from_floats({n}, grads),
                    .exp_avg = m,
                    .exp_avg_sq = v,
                    .step = step},
                   stream);
      }
      // The same fp32 operations in the same order, up to a contracted multiply-add.
      EXPECT_TRUE(all_close(expect_params, params.to_floats(stream), 1e-6, 1e-2));
      EXPECT_TRUE(all_close(expect_m, m.to_floats(stream), 1e-6));
      EXPECT_TRUE(all_close(expect_v, v.to_floats(stream), 1e-6));
    }
  }
}

const std::vector<int32_t> kSegmentLengths = {3, 4, 0, 70001, 33};

TEST(OptimCpu, SumSquaresPerSegmentInDouble) {
  Stream stream;
  const std::vector<int32_t> table = testing::segment_table(kSegmentLengths);
  const int64_t n = testing::segment_total(table), segments = kSegmentLengths.size();
  const std::vector<float> a = testing::normal_values(n, 4, DType::f32);
  const std::vector<float> b = testing::normal_values(n, 5, DType::f32);
  for (int blocks : {1, 3, 16}) {
    for (bool two : {false, true}) {
      SCOPED_TRACE("blocks " + std::to_string(blocks) + (two ? " two inputs" : " one input"));
      const int inputs = two ? 2 : 1;
      Tensor partials = Tensor::empty(
          {sum_squares_partials(
              {.segments = segments, .blocks_per_segment = blocks, .inputs = inputs})},
          DType::f64);
      Tensor sums = Tensor::empty({segments * inputs}, DType::f64);
      sum_squares({.a = Tensor::from_floats({n}, a),
                   .b = two ? Tensor::from_floats({n}, b) : Tensor(),
                   .segments = Tensor::from_ints({segments, 3}, table),
                   .sums = sums,
                   .partials = partials,
                   .blocks_per_segment = blocks},
                  stream);
      const std::vector<double> got = sums.to_doubles(stream);
      for (int64_t s = 0; s < segments; ++s) {
        for (int k = 0; k < inputs; ++k) {
          const std::vector<float>& x = k == 0 ? a : b;
          double expected = 0;
          for (int32_t i = table[3 * s]; i < table[3 * s + 1]; ++i)
            expected += double(x[i]) * double(x[i]);
          EXPECT_NEAR(got[s * inputs + k], expected, 1e-12 * (1 + expected)) << "segment " << s;
        }
      }
    }
  }
}

TEST(OptimCpu, ClipGradScalesByTheGlobalNorm) {
  Stream stream;
  const std::vector<float> grads = {3.f, -4.f, 0.f, 12.f};  // norm 13
  for (float max_norm : {1.f, 6.5f, 13.f, 100.f}) {
    Tensor g = Tensor::from_floats({4}, grads);
    clip_grad({.grads = g, .sum_squares = Tensor::from_doubles({1}, {169.0}), .max_norm = max_norm},
              stream);
    // torch: clip_coef = max_norm / (13 + 1e-6) in f32, clamped to 1.
    const float coefficient = std::min(1.f, max_norm / (13.f + 1e-6f));
    std::vector<float> expected = grads;
    for (float& x : expected)
      x *= coefficient;
    EXPECT_EQ(g.to_floats(stream), expected) << "max_norm " << max_norm;
  }
  Tensor g = Tensor::from_floats({4}, grads);
  EXPECT_THROW(
      clip_grad({.grads = g, .sum_squares = Tensor::from_doubles({1}, {1.0}), .max_norm = 0.f},
                stream),
      Error);
  EXPECT_THROW(
      clip_grad({.grads = g, .sum_squares = Tensor::from_doubles({2}, {1.0, 1.0}), .max_norm = 1.f},
                stream),
      Error);
}

TEST(OptimCpu, LarsStepsMatchDoubleReference) {
  Stream stream;
  const std::vector<int32_t> table = testing::segment_table(kSegmentLengths);
  const int64_t n = testing::segment_total(table), segments = kSegmentLengths.size();
  const LarsOptions options{
      .lr = 2.f, .momentum = 0.9f, .weight_decay = 1e-3f, .eta = 0.02f, .grad_scale = 0.5f};
  const std::vector<float> initial = testing::normal_values(n, 6, DType::f32);
  std::vector<double> expect_params(initial.begin(), initial.end()), expect_buffer(n, 0.0);
  Tensor params = Tensor::from_floats({n}, initial);
  Tensor buffer = Tensor::zeros({n}, DType::f32, Device::cpu(), stream);
  const Tensor segment_tensor = Tensor::from_ints({segments, 3}, table);
  Tensor partials = Tensor::empty(
      {sum_squares_partials({.segments = segments, .blocks_per_segment = 4, .inputs = 2})},
      DType::f64);
  Tensor sums = Tensor::empty({segments * 2}, DType::f64);
  for (int step = 0; step < 4; ++step) {
    const std::vector<float> grads = testing::normal_values(n, 20 + step, DType::f32);
    const Tensor g = Tensor::from_floats({n}, grads);
    testing::reference_lars(options, table, expect_params, grads, expect_buffer);
    sum_squares({.a = params,
                 .b = g,
                 .segments = segment_tensor,
                 .sums = sums,
                 .partials = partials,
                 .blocks_per_segment = 4},
                stream);
    lars_step(options,
              {.params = params,
               .grads = g,
               .momentum_buffer = buffer,
               .segments = segment_tensor,
               .sum_squares = sums},
              stream);
  }
  EXPECT_TRUE(all_close(expect_params, params.to_floats(stream), 1e-5));
  EXPECT_TRUE(all_close(expect_buffer, buffer.to_floats(stream), 1e-5));
}

// The ops given the step's rate in memory (SgdStepOperands.lr and the like) step exactly as
// given it by value, whatever the by-value rate says; a rate of the wrong shape names itself.
TEST(OptimCpu, RatesInMemoryReplaceTheValues) {
  Stream stream;
  const int64_t n = 70001;  // threaded
  const std::vector<float> initial = testing::normal_values(n, 3, DType::f32);
  const Tensor grads = Tensor::from_floats({n}, testing::normal_values(n, 4, DType::f32));
  const auto fresh = [&] { return Tensor::from_floats({n}, initial); };
  const auto rate = [](float lr) { return Tensor::from_floats({1}, {lr}); };

  const SgdOptions sgd{.lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-4f};
  SgdOptions sgd_decoy = sgd;
  sgd_decoy.lr = 7.f;
  Tensor by_value = fresh(), in_memory = fresh();
  Tensor buffer_a = Tensor::zeros({n}, DType::f32, Device::cpu(), stream);
  Tensor buffer_b = Tensor::zeros({n}, DType::f32, Device::cpu(), stream);
  sgd_step(sgd, {.params = by_value, .grads = grads, .momentum_buffer = buffer_a}, stream);
  sgd_step(sgd_decoy,
           {.params = in_memory, .grads = grads, .momentum_buffer = buffer_b, .lr = rate(0.05f)},
           stream);
  EXPECT_EQ(by_value.to_floats(stream), in_memory.to_floats(stream));
  try {
    sgd_step(sgd,
             {.params = in_memory,
              .grads = grads,
              .momentum_buffer = buffer_b,
              .lr = Tensor::from_floats({2}, {0.1f, 0.1f})},
             stream);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("sgd_step: lr is f32[2]"), std::string::npos)
        << error.what();
  }

  for (const float weight_decay : {0.f, 0.1f}) {
    SCOPED_TRACE("AdamW, weight decay " + std::to_string(weight_decay));
    const AdamWOptions adamw{.lr = 1e-2f, .weight_decay = weight_decay};
    const int64_t step = 3;
    const AdamWScalars s = adamw_scalars(adamw, step);
    AdamWOptions decoy = adamw;
    decoy.lr = 7.f;
    Tensor a = fresh(), b = fresh();
    Tensor m_a = Tensor::zeros({n}, DType::f32, Device::cpu(), stream);
    Tensor v_a = Tensor::zeros({n}, DType::f32, Device::cpu(), stream);
    Tensor m_b = Tensor::zeros({n}, DType::f32, Device::cpu(), stream);
    Tensor v_b = Tensor::zeros({n}, DType::f32, Device::cpu(), stream);
    adamw_step(adamw, {.params = a, .grads = grads, .exp_avg = m_a, .exp_avg_sq = v_a, .step = 3},
               stream);
    // Without weight decay the kernel takes a decay of 1, not the memory's.
    const float decay = weight_decay != 0.f ? s.decay : 0.5f;
    adamw_step(decoy,
               {.params = b,
                .grads = grads,
                .exp_avg = m_b,
                .exp_avg_sq = v_b,
                .step = 1,
                .step_scalars =
                    Tensor::from_floats({3}, {s.neg_step_size, s.bias_correction2_sqrt, decay})},
               stream);
    EXPECT_EQ(a.to_floats(stream), b.to_floats(stream));
    EXPECT_EQ(v_a.to_floats(stream), v_b.to_floats(stream));
  }

  const std::vector<int32_t> table = testing::segment_table({5, 70001 - 5});
  const Tensor segments = Tensor::from_ints({2, 3}, table);
  Tensor sums = Tensor::empty({4}, DType::f64);
  Tensor partials = Tensor::empty({4}, DType::f64);
  const LarsOptions lars{.lr = 0.5f, .momentum = 0.9f, .weight_decay = 1e-3f, .eta = 0.02f};
  LarsOptions lars_decoy = lars;
  lars_decoy.lr = 7.f;
  Tensor c = fresh(), d = fresh();
  Tensor buffer_c = Tensor::zeros({n}, DType::f32, Device::cpu(), stream);
  Tensor buffer_d = Tensor::zeros({n}, DType::f32, Device::cpu(), stream);
  sum_squares({.a = c, .b = grads, .segments = segments, .sums = sums, .partials = partials},
              stream);
  lars_step(lars,
            {.params = c,
             .grads = grads,
             .momentum_buffer = buffer_c,
             .segments = segments,
             .sum_squares = sums},
            stream);
  lars_step(lars_decoy,
            {.params = d,
             .grads = grads,
             .momentum_buffer = buffer_d,
             .segments = segments,
             .sum_squares = sums,
             .lr = rate(0.5f)},
            stream);
  EXPECT_EQ(c.to_floats(stream), d.to_floats(stream));
}

}  // namespace
}  // namespace engine
