// BatchNorm's backward with the fused ReLU's mask recomputed from x (relu_scale/relu_shift),
// for when y was never stored because the next convolution applied BatchNorm and ReLU as it
// loaded x. On the emulator and on the CPU twin it must give the bits of the same passes
// reading y stored as round_to_dtype(conv_input_value(x, scale, shift, true)): the two masks
// agree wherever rounding to the dtype keeps the sign of y, which the inputs are chosen for
// (and checked). Every dtype, the BN shapes (vector and scalar channel widths) and launch
// geometries of test_batchnorm_simt_backward.cpp. Then the dispatcher's refusals of malformed
// gates.
#include "batchnorm_simt_helpers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "batchnorm_cases.h"
#include "kernels/conv_input_value.h"
#include "kernels/cpu/batchnorm.h"
#include "kernels/ops.h"

namespace engine {
namespace {

using testing::all_close;
using testing::BnShape;
using testing::expect_counters_reset;
using testing::kBf16Ulp;
using testing::kDTypes;
using testing::kEps;
using testing::kLaunchShapes;
using testing::LaunchShapes;
using testing::normal_values;
using testing::same_bits;
using testing::SimtBuffer;
using testing::zeroed_workspace;

// Channels whose index is 4 mod 5 have shift 0 and x = 0 in every third row: y is exactly 0
// there, the boundary that "> 0" must keep out.
bool has_exact_zeros(int64_t channel) {
  return channel % 5 == 4;
}

// The ReLU's scale and shift per channel: negative scales (every third channel) and shifts of
// both signs, so the mask is neither x > 0 nor the same for every channel.
std::vector<float> relu_scales(int64_t channels) {
  std::vector<float> scale = normal_values(channels, 51, DType::f32, 1.0, 0.3);
  for (int64_t c = 1; c < channels; c += 3)
    scale[c] = -scale[c];
  return scale;
}
std::vector<float> relu_shifts(int64_t channels) {
  std::vector<float> shift = normal_values(channels, 52, DType::f32, 0.0, 1.0);
  for (int64_t c = 0; c < channels; ++c)
    shift[c] = has_exact_zeros(c) ? 0.f : (c % 2 == 0 ? 1.f : -1.f) * std::abs(shift[c]);
  return shift;
}
std::vector<float> inputs_x(const BnShape& s, DType dtype) {
  std::vector<float> x = normal_values(s.numel(), 53, dtype, 0.5, 2.0);
  for (int64_t r = 0; r < s.rows(); r += 3) {
    for (int64_t c = 0; c < s.c; ++c) {
      if (has_exact_zeros(c)) x[r * s.c + c] = 0.f;
    }
  }
  return x;
}

// y as a forward that stored it would have: conv_input_value, which SimtBuffer then rounds to
// the dtype.
std::vector<float> stored_y(const std::vector<float>& x, const std::vector<float>& scale,
                            const std::vector<float>& shift) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = conv_input_value(x[i], scale[i % scale.size()], shift[i % shift.size()], true);
  return y;
}

// One case's inputs on the emulator's "device": x, dy, the ReLU's coefficients and its stored
// output y, and x's batch statistics.
struct MaskInputs {
  MaskInputs(const BnShape& shape, DType type)
      : s(shape),
        dtype(type),
        x_values(inputs_x(s, dtype)),
        x(dtype, x_values),
        dy(dtype, normal_values(s.numel(), 54, dtype)),
        scale(DType::f32, relu_scales(s.c)),
        shift(DType::f32, relu_shifts(s.c)),
        y(dtype, stored_y(x_values, scale.values(), shift.values())),
        batch(DType::f32, std::vector<float>(2 * s.c + 1)),
        weight(DType::f32, normal_values(s.c, 55, DType::f32, 1.0, 0.5)),
        grad0(normal_values(s.c, 56, DType::f32)) {
    std::vector<double> sums(2 * s.c + 1);
    cpu::batchnorm_stats({.dtype = dtype,
                          .x = x.data(),
                          .rows = s.rows(),
                          .channels = s.c,
                          .stats = std::vector<float>(2 * s.c + 1).data(),
                          .sums = sums.data(),
                          .finalize = {.eps = kEps, .batch_stats = batch.floats()}});
  }
  // Whether the stored y and the recomputed one pass the same elements: the premise of the
  // bitwise comparison (rounding to bf16 must not take a positive y to 0).
  bool masks_agree() const {
    const std::vector<float> stored = y.values(), a = scale.values(), b = shift.values();
    for (size_t i = 0; i < x_values.size(); ++i) {
      const float v = conv_input_value(x_values[i], a[i % a.size()], b[i % b.size()], true);
      if ((v > 0.f) != (stored[i] > 0.f)) return false;
    }
    return true;
  }
  BnShape s;
  DType dtype;
  std::vector<float> x_values;
  SimtBuffer x, dy, scale, shift, y, batch, weight;
  std::vector<float> grad0;
};

// What the fused passes may also do: write the ReLU's gradient, accumulate the parameter
// gradients.
struct Variant {
  bool relu_grad, accumulate;
  std::string str() const {
    return std::string(relu_grad ? "relu_grad" : "no relu_grad") +
           (accumulate ? " accumulate" : " overwrite");
  }
};
const Variant kVariants[] = {{true, true}, {false, false}};

struct BackwardOutputs {
  std::vector<float> grad_sums, dx, relu_grad, bias_grad, weight_grad;
};

// The fused backward, reduce then element-wise, through reduce_fn / elementwise_fn (the
// emulator's or the CPU's), with the mask read from the stored y or recomputed from x.
template <typename ReduceFn, typename ElementwiseFn>
BackwardOutputs run_backward(MaskInputs& in, bool recompute, const Variant& v,
                             SimtBuffer& workspace, ReduceFn reduce_fn,
                             ElementwiseFn elementwise_fn) {
  const int64_t c = in.s.c, numel = in.s.numel();
  SimtBuffer sums = SimtBuffer::f32(2 * c), dx(in.dtype, std::vector<float>(numel));
  SimtBuffer relu_grad(in.dtype, std::vector<float>(numel, 7.f));
  SimtBuffer bias_grad(DType::f32, in.grad0), weight_grad(DType::f32, in.grad0);
  const void* relu_output = recompute ? nullptr : in.y.data();
  const float* relu_scale = recompute ? in.scale.floats() : nullptr;
  const float* relu_shift = recompute ? in.shift.floats() : nullptr;
  reduce_fn(BatchNormBackwardReduceArgs{.dtype = in.dtype,
                                        .dy = in.dy.data(),
                                        .x = in.x.data(),
                                        .batch_stats = in.batch.floats(),
                                        .grad_sums = sums.floats(),
                                        .rows = in.s.rows(),
                                        .channels = c,
                                        .workspace = workspace.floats(),
                                        .relu_output = relu_output,
                                        .relu_scale = relu_scale,
                                        .relu_shift = relu_shift,
                                        .relu_grad = v.relu_grad ? relu_grad.data() : nullptr,
                                        .bias_grad = bias_grad.floats(),
                                        .weight_grad = weight_grad.floats(),
                                        .accumulate = v.accumulate});
  elementwise_fn(BatchNormBackwardElementwiseArgs{.dtype = in.dtype,
                                                  .dy = in.dy.data(),
                                                  .x = in.x.data(),
                                                  .batch_stats = in.batch.floats(),
                                                  .weight = in.weight.floats(),
                                                  .grad_sums = sums.floats(),
                                                  .dx = dx.data(),
                                                  .rows = in.s.rows(),
                                                  .channels = c,
                                                  .relu_output = relu_output,
                                                  .relu_scale = relu_scale,
                                                  .relu_shift = relu_shift});
  return {sums.values(), dx.values(), relu_grad.values(), bias_grad.values(), weight_grad.values()};
}

void expect_same_bits(const BackwardOutputs& stored, const BackwardOutputs& recomputed) {
  EXPECT_TRUE(same_bits(stored.grad_sums, recomputed.grad_sums)) << "grad_sums";
  EXPECT_TRUE(same_bits(stored.dx, recomputed.dx)) << "dx";
  EXPECT_TRUE(same_bits(stored.relu_grad, recomputed.relu_grad)) << "relu_grad";
  EXPECT_TRUE(same_bits(stored.bias_grad, recomputed.bias_grad)) << "bias_grad";
  EXPECT_TRUE(same_bits(stored.weight_grad, recomputed.weight_grad)) << "weight_grad";
}

TEST(BatchNormReluMaskSimt, RecomputedMaskGivesTheStoredOutputsBits) {
  for (DType dtype : kDTypes) {
    for (const BnShape& s : testing::kBnShapes) {
      for (const LaunchShapes& launch : kLaunchShapes) {
        for (const Variant& v : kVariants) {
          SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str() + " " + launch.str() + " " +
                       v.str());
          MaskInputs in(s, dtype);
          ASSERT_TRUE(in.masks_agree()) << "the inputs round a positive y to 0";
          SimtBuffer workspace =
              zeroed_workspace(cuda::batchnorm_workspace_numel(s.rows(), s.c, launch.reduce));
          auto emulated = [&](bool recompute) {
            return run_backward(
                in, recompute, v, workspace,
                [&](const BatchNormBackwardReduceArgs& a) {
                  cuda::batchnorm_backward_reduce(a, nullptr, launch.reduce);
                },
                [&](const BatchNormBackwardElementwiseArgs& a) {
                  cuda::batchnorm_backward_elementwise(a, nullptr, launch.tile);
                });
          };
          auto on_cpu = [&](bool recompute) {
            return run_backward(
                in, recompute, v, workspace,
                [](const BatchNormBackwardReduceArgs& a) { cpu::batchnorm_backward_reduce(a); },
                [](const BatchNormBackwardElementwiseArgs& a) {
                  cpu::batchnorm_backward_elementwise(a);
                });
          };
          const BackwardOutputs gpu = emulated(true);
          expect_counters_reset(workspace, s.c);
          {
            SCOPED_TRACE("emulator");
            expect_same_bits(emulated(false), gpu);
          }
          const BackwardOutputs cpu = on_cpu(true);
          {
            SCOPED_TRACE("CPU");
            expect_same_bits(on_cpu(false), cpu);
          }
          // As test_batchnorm_simt_backward.cpp's fused backward: sums to fp32 rounding of their
          // terms' scale, dx to the rounding of dy's; the ReLU's gradient is dy or 0: exact.
          EXPECT_TRUE(all_close(cpu.grad_sums, gpu.grad_sums, 1e-5, static_cast<double>(s.rows())))
              << "grad_sums, emulator vs CPU";
          EXPECT_TRUE(all_close(cpu.dx, gpu.dx, dtype == DType::f32 ? 1e-5 : kBf16Ulp, 1.0))
              << "dx, emulator vs CPU";
          EXPECT_TRUE(same_bits(cpu.relu_grad, gpu.relu_grad)) << "relu_grad, emulator vs CPU";
        }
      }
    }
  }
}

// The op API's gate checks, on the CPU: each refusal names the op and the tensor.
void expect_refused(const std::function<void()>& call, const std::string& message) {
  try {
    call();
    FAIL() << "expected an error containing: " << message;
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(message), std::string::npos) << error.what();
  }
}

// run(gate) calls the op `op` with that gate.
template <typename Run>
void expect_malformed_gates_refused(const std::string& op, Run run) {
  SCOPED_TRACE(op);
  Stream stream;
  const Device cpu = Device::cpu();
  Tensor y = Tensor::zeros({2, 3, 3, 4}, DType::f32, cpu, stream);
  Tensor scale = Tensor::zeros({4}, DType::f32, cpu, stream);
  Tensor shift = Tensor::zeros({4}, DType::f32, cpu, stream);
  expect_refused([&] { run({.scale = scale}); }, op + ": relu.scale and relu.shift come together");
  expect_refused([&] { run({.shift = shift}); }, op + ": relu.scale and relu.shift come together");
  expect_refused([&] { run({.output = y, .scale = scale, .shift = shift}); },
                 op + ": relu.output and relu.scale/shift exclude each other");
  Tensor long_shift = Tensor::zeros({5}, DType::f32, cpu, stream);
  expect_refused([&] { run({.scale = scale, .shift = long_shift}); },
                 op + ": relu.shift is f32[5]");
  Tensor bf16_scale = Tensor::zeros({4}, DType::bf16, cpu, stream);
  expect_refused([&] { run({.scale = bf16_scale, .shift = shift}); },
                 op + ": relu.scale is bf16[4]");
  EXPECT_NO_THROW(run({.scale = scale, .shift = shift})) << "a well-formed gate";
}

TEST(BatchNormReluMaskSimt, DispatcherRefusesMalformedGates) {
  Stream stream;
  const Device cpu = Device::cpu();
  const Shape shape{2, 3, 3, 4};
  Tensor x = Tensor::zeros(shape, DType::f32, cpu, stream);
  Tensor dy = Tensor::zeros(shape, DType::f32, cpu, stream);
  Tensor dx = Tensor::empty(shape, DType::f32);
  Tensor batch_stats = Tensor::zeros({9}, DType::f32, cpu, stream);
  Tensor grad_sums = Tensor::zeros({8}, DType::f32, cpu, stream);
  Tensor workspace = Tensor::empty({batchnorm_workspace_numel(x)}, DType::f32);
  auto reduce = [&](const BatchNormReluGate& relu) {
    batchnorm_backward_reduce(
        {.dy = dy,
         .x = x,
         .batch_stats = batch_stats,
         .grad_sums = grad_sums,
         .workspace = workspace},
        stream, {.relu = relu, .relu_grad = dx, .bias_grad = Tensor(), .weight_grad = Tensor()});
  };
  expect_malformed_gates_refused("batchnorm_backward_reduce", reduce);
  expect_refused([&] { reduce({}); }, "batchnorm_backward_reduce: relu_grad needs relu");
  expect_malformed_gates_refused("batchnorm_backward_elementwise",
                                 [&](const BatchNormReluGate& relu) {
                                   batchnorm_backward_elementwise({.dy = dy,
                                                                   .x = x,
                                                                   .batch_stats = batch_stats,
                                                                   .weight = Tensor(),
                                                                   .grad_sums = grad_sums,
                                                                   .dx = dx},
                                                                  stream, relu);
                                 });
}

}  // namespace
}  // namespace engine
