// One case of an op: the op on one shape and dtype of the model, with everything the op
// harness (tests/ops: Check, Gradient, Perf) and bench_kernels need to run it, check it and
// time it. Cases come from the op's description (op_description.h), the one place that
// knows the op.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/dtype.h"
#include "kernels/fp32_math.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine::op_registry {

enum class OpId : int {
#define ENGINE_OP(name) name,
#include "bench/ops/op_list.h"
#undef ENGINE_OP
};

// The values a case's inputs take. seeded: normal values from fixed seeds, made on the host,
// so every device sees the same ones (the harness compares devices). fast: uniform values in
// [-1, 1) drawn on the stream's device (bench/random_fill.h), so a benchmark of large shapes
// does not wait on the host's generator; values fixed by the case (labels, ranked logits) are
// the same in both.
enum class Inputs { seeded, fast };

// One named result of a case, on the host (f64 results exactly). tolerance < 0: the case's;
// scale < 0: the RMS of the CPU's values (testing::all_close).
struct Output {
  std::string name;
  std::vector<double> values;
  double tolerance = -1;
  double scale = -1;
};

// A case set up on one device: `call` runs the op (what perf mode and the bench time);
// `outputs` then copies its results to the host.
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
  OpId op{};
  std::string name;  // e.g. "resnet18 layer1 [8, 56, 56, 64] relu_backward"
  DType dtype = DType::f32;
  double tolerance = 0;  // relative, against the CPU (testing::all_close: RMS scaled)
  std::string why;       // why that tolerance
  int64_t elements = 0;  // the largest tensor it touches: what an emulated device is capped by
  std::function<Prepared(Stream&, Inputs)> prepare;
  // The inputs to check by finite differences (f32 cases of differentiable ops), or null.
  std::function<std::vector<Differentiable>()> differentiables;
  // f32 convolutions on a CUDA device: exact fp32 or tf32 tensor cores (the stream's math);
  // against tf32, the CPU multiplies the operands rounded to tf32.
  Fp32Math fp32_math = Fp32Math::exact;

  // The benchmark's view. bench: a row of bench_kernels (false: a variant only the harness
  // runs, such as views at an odd offset). dims: the shape as the PyTorch baseline's make(dims)
  // reads it. bytes: what one call must move at the least (memory-bound ops); flops: 2 * the
  // products (GEMMs).
  bool bench = true;
  std::vector<int64_t> dims;
  double bytes = 0;
  double flops = 0;
  // Its row's name: "<row_subject> <row_pass>", the dtype appended where the op's rows are per
  // dtype (BenchDtypes). --filter matches the subject, so that it keeps every pass of a layer
  // or none. An empty subject is the case's name, an empty pass none.
  std::string row_subject;
  std::string row_pass;
  // How many times one training step runs it (the layers of its shape): its weight in the
  // per-step total of its op's rows (OpDescription::step_total).
  int per_step = 0;

  bool is_gemm() const { return flops > 0; }
  // "relu_backward/f32/resnet18 layer1 [2, 8, 8, 64] relu_backward" ("tf32" for the dtype of a
  // tf32 case)
  std::string id() const;
};

}  // namespace engine::op_registry
