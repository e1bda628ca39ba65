// What the CPU convolution tests share (test_conv_cpu.cpp, test_conv_tap_classes_cpu.cpp): the
// cases, the tolerances, a convolution's random operands and a run on 1, 2 and 3 threads.
#pragma once

#include <omp.h>

#include <string>
#include <vector>

#include "bench/resnet_layers.h"
#include "conv_reference.h"
#include "kernels/ops.h"

namespace engine::testing {

// The edge cases, then every distinct convolution of ResNet-50 walked from the model (the
// shapes bench_kernels and the op harness take), at 48 px and batch 1: layer3's strided layers
// then read a 6x6 map and layer4's an odd 3x3 one.
inline std::vector<ConvCase> conv_cases() {
  std::vector<ConvCase> cases = conv_edge_cases();
  for (const bench::ConvLayer& layer : bench::resnet_conv_layers("resnet50", 1, 48))
    cases.push_back({"resnet50 " + layer.name, layer.shape});
  return cases;
}

// fp32: accumulation error grows like sqrt(K) * 2^-24; K <= 4608 here.
constexpr double kF32Tolerance = 1e-5;
// bf16 outputs: one rounding (2^-9 relative to the element, so at most that of the maximum)
// after exact products of bf16 inputs accumulated in fp32.
constexpr double kBf16Tolerance = 1.0 / 256;

inline double tolerance(DType dtype) {
  return dtype == DType::f32 ? kF32Tolerance : kBf16Tolerance;
}

struct ConvTensors {
  ConvTensors(const Conv2dShape& shape, DType dtype)
      : x_values(random_values(shape_numel(shape.input_shape()), 1, dtype == DType::bf16)),
        w_values(random_values(shape_numel(shape.filter_shape()), 2, dtype == DType::bf16)),
        dy_values(random_values(shape_numel(shape.output_shape()), 3, dtype == DType::bf16)),
        bias_values(random_values(shape.out_channels, 4)),
        x(Tensor::from_floats(shape.input_shape(), x_values, dtype)),
        w(Tensor::from_floats(shape.filter_shape(), w_values, dtype)),
        dy(Tensor::from_floats(shape.output_shape(), dy_values, dtype)),
        bias(Tensor::from_floats({shape.out_channels}, bias_values)) {}
  std::vector<float> x_values, w_values, dy_values, bias_values;
  Tensor x, w, dy, bias;

  // conv2d_backward_filter's operands for x and dy on the CPU, which needs no workspace.
  Conv2dBackwardFilterOperands filter_gradient(const Tensor& dw, GradWrite write,
                                               const Tensor& dbias = {}) const {
    return {.x = x, .dy = dy, .dw = dw, .dbias = dbias, .workspace = {}, .write = write};
  }
};

// fn()'s results on 1, 2 and 3 OpenMP threads, in that order; the thread count restored.
template <typename Fn>
std::vector<std::vector<float>> on_1_2_and_3_threads(Fn&& fn) {
  std::vector<std::vector<float>> results;
  const int threads_before = omp_get_max_threads();
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    results.push_back(fn());
  }
  omp_set_num_threads(threads_before);
  return results;
}

}  // namespace engine::testing
