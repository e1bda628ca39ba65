// The op harness's cases (tests/ops/test_op_harness.cpp): every op of a ResNet training step on
// the model's own layer shapes, each with its tolerance and why. A case makes its inputs on the
// host from fixed seeds, so every device sees the same values; the harness runs it on each
// device present and compares with the CPU, checks its gradients by finite differences, and
// times it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/dtype.h"
#include "kernels/fp32_math.h"
#include "kernels/stream.h"

namespace engine::ops_harness {

// One named result of a case, on the host (f64 results exactly). tolerance < 0: the case's;
// scale < 0: the RMS of the CPU's values (testing::all_close).
struct Output {
  std::string name;
  std::vector<double> values;
  double tolerance = -1;
  double scale = -1;
};

// A case set up on one device: `call` runs the op (what perf mode times); `outputs` then
// copies its results to the host.
struct Prepared {
  std::function<void()> call;
  std::function<std::vector<Output>()> outputs;
};

// One input of an op, differentiated by finite differences: loss(point) = <op(point, the
// other operands fixed), a fixed random probe>, in double on the host from the device's
// outputs; gradient() = d loss / d input by the op's backward pass on the device.
struct Differentiable {
  std::string input;         // "x", "w", "logits", ...
  std::vector<float> point;  // the input's host values at which the check runs
  std::function<double(Stream&, const std::vector<float>&)> loss;
  std::function<std::vector<float>(Stream&)> gradient;
};

struct OpCase {
  std::string op;    // bench's op names (bench/op_cases.h) and conv2d_{forward,...}
  std::string name;  // e.g. "resnet18 layer1.0.conv1 3x3/1 64->64 [2, 8, 8, 64]"
  DType dtype = DType::f32;
  double tolerance = 0;  // relative, against the CPU (testing::all_close: RMS scaled)
  std::string why;       // why that tolerance
  int64_t elements = 0;  // the largest tensor it touches: what an emulated device is capped by
  std::function<Prepared(Stream&)> prepare;
  // The inputs to check by finite differences (f32 cases of differentiable ops), or null.
  std::function<std::vector<Differentiable>()> differentiables;
  // f32 convolutions on a CUDA device: exact fp32 or tf32 tensor cores (the stream's math);
  // against tf32, the CPU multiplies the operands rounded to tf32.
  Fp32Math fp32_math = Fp32Math::exact;

  // "relu_backward/f32/resnet18 layer1 [2, 8, 8, 64]" ("tf32" for the dtype of a tf32 case)
  std::string id() const;
};

struct CaseConfig {
  std::string arch = "resnet18";
  int64_t image_size = 32;
  int64_t batch = 2;
};

// ENGINE_OPS_ARCH, ENGINE_OPS_IMAGE_SIZE and ENGINE_OPS_BATCH override the defaults.
CaseConfig case_config_from_env();

// Every case of the network: its distinct convolutions (forward, input and filter gradient),
// then bench's op cases (BatchNorm, ReLU, add+ReLU, pooling, the fc layer, the loss, top-k,
// SGD), each in f32 and, where the op has it, bf16.
std::vector<OpCase> all_op_cases(const CaseConfig& config);

}  // namespace engine::ops_harness
