// What the op harness's case families share (op_cases.h's cases are made in one file per
// family: conv_cases.cpp, batchnorm_cases.cpp, elementwise_cases.cpp, head_cases.cpp): the
// tolerances with their reasons, host tensors from seeds, and the families' makers, which
// all_op_cases (op_cases.cpp) calls for each layer and op of the model.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/op_cases.h"
#include "bench/resnet_layers.h"
#include "close_values.h"
#include "kernels/tensor.h"
#include "op_cases.h"

namespace engine::ops_harness {

// Tolerances, each with the reason a case states.
inline constexpr double kExact = 0;
inline constexpr char kExactWhy[] =
    "one rounding per element of the same fp32 expression on both sides";
inline constexpr double kBf16 = testing::kBf16Ulp;
inline constexpr char kBf16Why[] =
    "bf16 results: each side rounds its fp32 value once, and values a summation order apart "
    "may round to neighbouring bf16 numbers (one ulp, 2^-7 relative)";
inline constexpr double kGemmF32 = 3e-5;
inline constexpr char kGemmF32Why[] =
    "fp32 sums over K (up to 4608 terms) in another order: about sqrt(K) * 2^-24 of the RMS, "
    "with room for the worst element";
inline constexpr double kTf32 = 5e-5;
inline constexpr char kTf32Why[] =
    "operands rounded to tf32 on both sides (their products are exact in fp32); the tensor "
    "cores accumulate truncating where fp32 rounds: an H200 parted by 1.27e-5 at K = 4608 "
    "(bench/results/gpu-check-h200-2026-12-04)";
inline constexpr double kReduceF32 = 1e-5;
inline constexpr char kReduceF32Why[] =
    "per-channel or per-row fp32 reductions in another order (partials merged in a fixed order "
    "on the device, fp64 chunks on the CPU)";

// A host tensor of normal values from a seed, exactly representable in dtype.
Tensor host_normal(const Shape& shape, DType dtype, uint32_t seed, double mean = 0, double std = 1);

// A host tensor made on first use: the case table is built whenever the test binary starts
// (even to list its tests), and most runs need a few of its cases (SGD's alone holds 11.7M
// values). *t and t-> give the tensor, as a shared_ptr would.
class HostTensor {
 public:
  HostTensor(Shape shape, DType dtype, uint32_t seed, double mean = 0, double std = 1)
      : state_(std::make_shared<State>(State{std::move(shape), dtype, seed, mean, std, {}})) {}
  const Tensor& operator*() const {
    State& s = *state_;
    if (!s.tensor.defined()) s.tensor = host_normal(s.shape, s.dtype, s.seed, s.mean, s.std);
    return s.tensor;
  }
  const Tensor* operator->() const { return &**this; }

 private:
  struct State {
    Shape shape;
    DType dtype;
    uint32_t seed;
    double mean, std;
    Tensor tensor;
  };
  std::shared_ptr<State> state_;
};

Tensor on_device(const Tensor& host, Stream& stream);

// A CUDA workspace of `numel` f32 on the stream's device, or undefined when none is needed.
Tensor workspace(int64_t numel, Stream& stream);

// A tensor's values on the host: f64 exactly, the rest widened from float.
std::vector<double> host_values(const Tensor& t, Stream& stream);

// <values of `out` after run(), probe>: the scalar a finite-difference check differentiates.
double probed(const Tensor& out, const std::vector<float>& probe, Stream& stream);

std::string dtype_suffix(DType dtype);

// The families' makers: each appends its op's cases for one layer or op of the model.
// conv_cases.cpp: a convolution's three passes (f32 with `math`: exact or tf32), and its
// filters' cast.
void add_conv_cases(std::vector<OpCase>& cases, const bench::ConvLayer& layer, DType dtype,
                    Fp32Math math = Fp32Math::exact);
void add_cast_case(std::vector<OpCase>& cases, const bench::ConvLayer& layer, DType dtype);
// batchnorm_cases.cpp: a BatchNorm's phases with inputs of mean `mean`, and SyncBN's fp64 sums.
void add_batchnorm_cases(std::vector<OpCase>& cases, const bench::OpCase& c, DType dtype,
                         double mean = 0.5);
void add_bn_sums_case(std::vector<OpCase>& cases, const std::string& prefix, int64_t channels,
                      double mean);
// elementwise_cases.cpp: ReLU, add, add+ReLU and fill (views `offset` elements into a buffer
// when offset > 0), and the pools.
void add_activation_case(std::vector<OpCase>& cases, const bench::OpCase& c, DType dtype,
                         int64_t offset = 0);
void add_maxpool_case(std::vector<OpCase>& cases, const bench::OpCase& c, DType dtype);
void add_avgpool_case(std::vector<OpCase>& cases, const bench::OpCase& c, DType dtype);
// head_cases.cpp: the fc layer's GEMMs, the loss and top-k, and an SGD step.
void add_linear_case(std::vector<OpCase>& cases, const bench::OpCase& c, DType dtype);
void add_loss_case(std::vector<OpCase>& cases, const bench::OpCase& c, DType dtype);
void add_sgd_case(std::vector<OpCase>& cases, const bench::OpCase& c, bool nesterov);

}  // namespace engine::ops_harness
