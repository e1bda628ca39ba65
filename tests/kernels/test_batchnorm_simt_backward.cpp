// The CUDA batchnorm backward's fused variants through their launchers under the SIMT
// emulator: the ReLU folded in, its gradient written for a residual branch, the parameter
// gradients written or accumulated, bit for bit against the unfused passes (on the emulator
// and on the CPU twin) and close to the CPU; f32 and bf16, the BN shapes (vector and scalar
// paths), the default grid and small grids that force several partials per channel.
#include "sim/simt/simt.h"
// The kernels under test, compiled here by g++ for the emulator.
#include "kernels/cuda/batchnorm.cuh"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "batchnorm_cases.h"
#include "batchnorm_simt_helpers.h"
#include "kernels/cpu/batchnorm.h"
#include "simt_buffer.h"
#include "tests/dtype_bytes.h"

namespace engine {
namespace {

using testing::all_close;
using testing::BnShape;
using testing::kBf16Ulp;
using testing::normal_values;
using testing::SimtBuffer;

using testing::expect_counters_reset;
using testing::kDTypes;
using testing::kEps;
using testing::kLaunchShapes;
using testing::LaunchShapes;
using testing::same_bits;
using testing::zeroed_workspace;

// dy where y > 0, else 0: relu_backward's rule, on the host.
std::vector<float> through_relu(const std::vector<float>& dy, const std::vector<float>& y) {
  std::vector<float> g(dy.size());
  for (size_t i = 0; i < dy.size(); ++i)
    g[i] = y[i] > 0.f ? dy[i] : 0.f;
  return g;
}

// What a backward variant folds in: a ReLU (its output y read in both passes), that
// gradient written out for a residual branch, the parameter gradients accumulated.
struct BackwardFusion {
  bool relu, relu_grad, accumulate, weight_grad;
  std::string str() const {
    return std::string(relu ? "relu" : "no relu") + (relu_grad ? " + relu_grad" : "") +
           (accumulate ? " accumulate" : " overwrite") + (weight_grad ? "" : " no weight_grad");
  }
};
const BackwardFusion kBackwardFusions[] = {{true, false, false, true},
                                           {true, true, true, true},
                                           {false, false, true, true},
                                           {false, false, false, false}};

// Runs the fused backward (reduce, then element-wise) through `reduce_fn` / `elementwise_fn`
// (the emulator's or the CPU's) and checks it bit for bit against the unfused passes on the
// masked dy through the same functions: the ReLU folded in, the gradients from the sums.
template <typename ReduceFn, typename ElementwiseFn>
void check_fused_backward(const BnShape& s, DType dtype, const BackwardFusion& f,
                          SimtBuffer& workspace, ReduceFn reduce_fn, ElementwiseFn elementwise_fn,
                          std::vector<float>* sums_out, std::vector<float>* dx_out) {
  const int64_t rows = s.rows(), c = s.c;
  const std::vector<float> dy = normal_values(s.numel(), 41, dtype);
  const std::vector<float> y = normal_values(s.numel(), 42, dtype);  // about half <= 0
  SimtBuffer x(dtype, normal_values(s.numel(), 43, dtype, 0.5, 2.0));
  SimtBuffer ddy(dtype, dy), dy_y(dtype, y), masked(dtype, f.relu ? through_relu(dy, y) : dy);
  std::vector<float> batch_host(2 * c + 1);
  std::vector<double> sums_host(2 * c + 1);
  cpu::batchnorm_stats({.dtype = dtype,
                        .x = x.data(),
                        .rows = rows,
                        .channels = c,
                        .stats = std::vector<float>(2 * c + 1).data(),
                        .sums = sums_host.data(),
                        .finalize = {.eps = kEps, .batch_stats = batch_host.data()}});
  SimtBuffer batch(DType::f32, batch_host), weight(DType::f32, normal_values(c, 44, DType::f32));
  const std::vector<float> grad0 = normal_values(c, 45, DType::f32);

  // Unfused: the masked dy, and the gradients read off grad_sums.
  SimtBuffer ref_sums = SimtBuffer::f32(2 * c), ref_dx(dtype, std::vector<float>(s.numel()));
  BatchNormBackwardReduceArgs reduce{.dtype = dtype,
                                     .dy = masked.data(),
                                     .x = x.data(),
                                     .batch_stats = batch.floats(),
                                     .grad_sums = ref_sums.floats(),
                                     .rows = rows,
                                     .channels = c,
                                     .workspace = workspace.floats()};
  reduce_fn(reduce);
  BatchNormBackwardElementwiseArgs elementwise{.dtype = dtype,
                                               .dy = masked.data(),
                                               .x = x.data(),
                                               .batch_stats = batch.floats(),
                                               .weight = weight.floats(),
                                               .grad_sums = ref_sums.floats(),
                                               .dx = ref_dx.data(),
                                               .rows = rows,
                                               .channels = c};
  elementwise_fn(elementwise);

  // Fused.
  SimtBuffer sums = SimtBuffer::f32(2 * c), dx(dtype, std::vector<float>(s.numel()));
  SimtBuffer relu_grad(dtype, std::vector<float>(s.numel(), 7.f));
  SimtBuffer bias_grad(DType::f32, grad0), weight_grad(DType::f32, grad0);
  reduce.dy = ddy.data();
  reduce.grad_sums = sums.floats();
  reduce.relu_output = f.relu ? dy_y.data() : nullptr;
  reduce.relu_grad = f.relu_grad ? relu_grad.data() : nullptr;
  reduce.bias_grad = bias_grad.floats();
  reduce.weight_grad = f.weight_grad ? weight_grad.floats() : nullptr;
  reduce.accumulate = f.accumulate;
  reduce_fn(reduce);
  elementwise.dy = ddy.data();
  elementwise.relu_output = f.relu ? dy_y.data() : nullptr;
  elementwise.grad_sums = sums.floats();
  elementwise.dx = dx.data();
  elementwise_fn(elementwise);

  const std::vector<float> got_sums = sums.values(), want_sums = ref_sums.values();
  EXPECT_TRUE(same_bits(want_sums, got_sums)) << "grad_sums";
  EXPECT_TRUE(same_bits(ref_dx.values(), dx.values())) << "dx";
  if (f.relu_grad) {
    EXPECT_TRUE(same_bits(masked.values(), relu_grad.values())) << "relu_grad";
  }
  std::vector<float> want_bias(c), want_weight(c);
  for (int64_t i = 0; i < c; ++i) {
    want_bias[i] = f.accumulate ? grad0[i] + want_sums[i] : want_sums[i];
    want_weight[i] = f.accumulate ? grad0[i] + want_sums[c + i] : want_sums[c + i];
  }
  EXPECT_TRUE(same_bits(want_bias, bias_grad.values())) << "bias_grad";
  EXPECT_TRUE(same_bits(f.weight_grad ? want_weight : grad0, weight_grad.values()))
      << "weight_grad";
  *sums_out = got_sums;
  *dx_out = dx.values();
}

TEST(BatchNormSimt, BackwardFoldsReluAndWritesTheParameterGradients) {
  for (DType dtype : kDTypes) {
    for (const BnShape& s : testing::kBnShapes) {
      for (const LaunchShapes& launch : kLaunchShapes) {
        for (const BackwardFusion& f : kBackwardFusions) {
          SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str() + " " + launch.str() + " " +
                       f.str());
          SimtBuffer workspace =
              zeroed_workspace(cuda::batchnorm_workspace_numel(s.rows(), s.c, launch.reduce));
          std::vector<float> gpu_sums, gpu_dx, cpu_sums, cpu_dx;
          check_fused_backward(
              s, dtype, f, workspace,
              [&](const BatchNormBackwardReduceArgs& a) {
                cuda::batchnorm_backward_reduce(a, nullptr, launch.reduce);
              },
              [&](const BatchNormBackwardElementwiseArgs& a) {
                cuda::batchnorm_backward_elementwise(a, nullptr, launch.tile);
              },
              &gpu_sums, &gpu_dx);
          expect_counters_reset(workspace, s.c);
          check_fused_backward(
              s, dtype, f, workspace,
              [](const BatchNormBackwardReduceArgs& a) { cpu::batchnorm_backward_reduce(a); },
              [](const BatchNormBackwardElementwiseArgs& a) {
                cpu::batchnorm_backward_elementwise(a);
              },
              &cpu_sums, &cpu_dx);
          // Sums of rows terms of about 1 that may cancel (2 rows, half of dy masked): to
          // fp32 rounding of the terms' scale.
          EXPECT_TRUE(all_close(cpu_sums, gpu_sums, 1e-5, static_cast<double>(s.rows())))
              << "grad_sums, emulator vs CPU";
          // dx from each side's own sums; at 2 rows it cancels to ~0: to the rounding of its
          // terms (dy, about 1) rather than of its own size.
          EXPECT_TRUE(all_close(cpu_dx, gpu_dx, dtype == DType::f32 ? 1e-5 : kBf16Ulp, 1.0))
              << "dx, emulator vs CPU";
        }
      }
    }
  }
}

}  // namespace
}  // namespace engine
