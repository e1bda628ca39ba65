#include "bench/ops/case_kit.h"

#include "bench/random_fill.h"
#include "kernels/ops/conv.h"

namespace engine::op_registry {

Tensor host_normal(const Shape& shape, DType dtype, uint32_t seed, double mean, double std) {
  return Tensor::from_floats(shape, normal_values(shape_numel(shape), seed, dtype, mean, std),
                             dtype);
}

Operand::Operand(Shape shape, DType dtype, uint32_t seed, double mean, double std)
    : state_(std::make_shared<State>(State{std::move(shape), dtype, seed, mean, std, false, {}})) {}

Operand::Operand(Tensor host)
    : state_(std::make_shared<State>(
          State{host.shape(), host.dtype(), 0, 0, 0, true, std::move(host)})) {}

const Tensor& Operand::operator*() const {
  State& s = *state_;
  if (!s.host.defined()) s.host = host_normal(s.shape, s.dtype, s.seed, s.mean, s.std);
  return s.host;
}

Tensor Operand::on(Stream& stream, Inputs inputs) const {
  const State& s = *state_;
  // Each operand of a case has its own seed: they differ in fast mode too.
  if (inputs == Inputs::fast && !s.fixed)
    return bench::random_tensor(s.shape, s.dtype, stream, s.seed);
  return on_device(**this, stream);
}

Tensor on_device(const Tensor& host, Stream& stream) {
  return host.to(stream.device(), stream);
}

Tensor workspace(int64_t numel, Stream& stream) {
  return numel > 0 ? Tensor::zeros({numel}, DType::f32, stream.device(), stream) : Tensor();
}

Tensor split_counters(const Conv2dShape& shape, ConvPass pass, Stream& stream) {
  const int64_t numel = conv2d_split_counters_numel(shape, pass, stream.device());
  return numel > 0 ? Tensor::zeros({numel}, DType::i32, stream.device(), stream) : Tensor();
}

std::vector<double> host_values(const Tensor& t, Stream& stream) {
  if (t.dtype() == DType::f64) return t.to_doubles(stream);
  const std::vector<float> values = t.to_floats(stream);
  return {values.begin(), values.end()};
}

double probed(const Tensor& out, const std::vector<float>& probe, Stream& stream) {
  const std::vector<float> values = out.to_floats(stream);
  double sum = 0;
  for (size_t i = 0; i < values.size(); ++i)
    sum += static_cast<double>(values[i]) * probe[i];
  return sum;
}

}  // namespace engine::op_registry
