#include "case_helpers.h"

namespace engine::ops_harness {

using testing::normal_values;

// A host tensor of normal values from a seed, exactly representable in dtype.
Tensor host_normal(const Shape& shape, DType dtype, uint32_t seed, double mean, double std) {
  return Tensor::from_floats(shape, normal_values(shape_numel(shape), seed, dtype, mean, std),
                             dtype);
}

Tensor on_device(const Tensor& host, Stream& stream) {
  return host.to(stream.device(), stream);
}

// A CUDA workspace of `numel` f32 on the stream's device, or undefined when none is needed.
Tensor workspace(int64_t numel, Stream& stream) {
  return numel > 0 ? Tensor::empty({numel}, DType::f32, stream.device()) : Tensor();
}

// A tensor's values on the host: f64 exactly, the rest widened from float.
std::vector<double> host_values(const Tensor& t, Stream& stream) {
  if (t.dtype() == DType::f64) return t.to_doubles(stream);
  const std::vector<float> values = t.to_floats(stream);
  return {values.begin(), values.end()};
}

namespace {

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i)
    sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

}  // namespace

// <values of `out` after run(), probe>: the scalar a finite-difference check differentiates.
double probed(const Tensor& out, const std::vector<float>& probe, Stream& stream) {
  return dot(out.to_floats(stream), probe);
}

std::string dtype_suffix(DType dtype) {
  return std::string(dtype_name(dtype));
}

}  // namespace engine::ops_harness
