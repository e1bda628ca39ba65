// What the op descriptions (descriptions/) share: tolerances with their reasons, seeded
// values, operands that are seeded or fast (op_case.h's Inputs), and the small moves between
// host and device that every case makes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/ops/op_case.h"
#include "bench/ops/seeded_values.h"
#include "kernels/conv_algo.h"
#include "kernels/conv_shape.h"
#include "kernels/tensor.h"

namespace engine::op_registry {

// Tolerances, each with the reason a case states.
inline constexpr double kExact = 0;
inline constexpr char kExactWhy[] =
    "one rounding per element of the same fp32 expression on both sides";
inline constexpr double kBf16 = kBf16Ulp;
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

// An input of a case. Seeded: normal values from a seed, made on the host on first use (the
// case table is built whenever a test binary starts, even to list its tests, and most runs
// need a few of its cases: SGD's alone holds 25M values). Fast: uniform in [-1, 1) on the
// device, whatever the mean and std. Copies share the host values.
class Operand {
 public:
  Operand(Shape shape, DType dtype, uint32_t seed, double mean = 0, double std = 1);
  // Given values, the same for both kinds of inputs.
  explicit Operand(Tensor host);

  // The seeded values on the host.
  const Tensor& operator*() const;
  const Tensor* operator->() const { return &**this; }
  // The input on the stream's device.
  Tensor on(Stream& stream, Inputs inputs) const;

 private:
  struct State {
    Shape shape;
    DType dtype;
    uint32_t seed;
    double mean, std;
    bool fixed;
    Tensor host;
  };
  std::shared_ptr<State> state_;
};

Tensor on_device(const Tensor& host, Stream& stream);

// A CUDA workspace of `numel` f32 on the stream's device, zeroed (BatchNorm's keeps counters
// that must start at zero), or undefined when none is needed.
Tensor workspace(int64_t numel, Stream& stream);
// The zeroed i32 counters with which a convolution pass sums its split-K partials in the GEMM's
// own launch, as the layers run it (conv2d_split_counters_numel), or undefined where it does
// not split.
Tensor split_counters(const Conv2dShape& shape, ConvPass pass, Stream& stream);

// A tensor's values on the host: f64 exactly, the rest widened from float.
std::vector<double> host_values(const Tensor& t, Stream& stream);

// <values of `out`, probe>: the scalar a finite-difference check differentiates.
double probed(const Tensor& out, const std::vector<float>& probe, Stream& stream);

// A tensor kept alive by a case's closures (Prepared's call and outputs share it).
using Held = std::shared_ptr<Tensor>;
inline Held hold(Tensor t) {
  return std::make_shared<Tensor>(std::move(t));
}

// The bytes of `numel` elements of dtype: a memory-bound case's traffic.
inline double bytes_of(double numel, DType dtype) {
  return numel * static_cast<double>(dtype_size(dtype));
}

}  // namespace engine::op_registry
