#include "bench/ops/descriptions/loss_kit.h"

namespace engine::op_registry {

void set_loss_calls(OpCase& c, const Operand& logits, const Operand& target, int64_t n,
                    int64_t classes, const LossCalls& calls) {
  const DType dtype = c.dtype;
  c.prepare = [=](Stream& stream, Inputs inputs) {
    const Device device = stream.device();
    const Held z = hold(logits.on(stream, inputs));
    const Held y = hold(target.on(stream, inputs));
    const Held sample = hold(Tensor::empty({n}, DType::f32, device));
    const Held loss = hold(Tensor::empty({1}, DType::f32, device));
    const Held dz = hold(Tensor::empty({n, classes}, dtype, device));
    return Prepared{[=, &stream] {
                      calls.forward(*z, *y, *sample, *loss, stream);
                      calls.backward(*z, *y, *dz, stream);
                    },
                    [=, &stream] {
                      return std::vector<Output>{{"sample_loss", host_values(*sample, stream)},
                                                 {"loss", host_values(*loss, stream)},
                                                 {"dlogits", host_values(*dz, stream)}};
                    }};
  };
  if (dtype != DType::f32) return;
  c.differentiables = [=] {
    Stream host;
    return std::vector<Differentiable>{
        {"logits", logits->to_floats(host),
         [=](Stream& stream, const std::vector<float>& point) {
           const Device device = stream.device();
           Tensor sample = Tensor::empty({n}, DType::f32, device);
           Tensor loss = Tensor::empty({1}, DType::f32, device);
           calls.forward(on_device(Tensor::from_floats({n, classes}, point), stream),
                         on_device(*target, stream), sample, loss, stream);
           return static_cast<double>(loss.to_floats(stream)[0]);
         },
         [=](Stream& stream) {
           Tensor dz = Tensor::empty({n, classes}, dtype, stream.device());
           calls.backward(on_device(*logits, stream), on_device(*target, stream), dz, stream);
           return dz.to_floats(stream);
         }}};
  };
}

}  // namespace engine::op_registry
