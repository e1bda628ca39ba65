#include "bench/op_runners.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "bench/random_fill.h"
#include "kernels/error.h"
#include "kernels/ops.h"

namespace engine::bench {

namespace {

Tensor filled(const Shape& shape, DType dtype, float value, Stream& stream) {
  Tensor t = Tensor::zeros(shape, dtype, stream.device(), stream);
  fill(t, value, stream);
  return t;
}

// A host tensor on the stream's device, for the cases whose speed depends on the values (the
// ranking in top-k). The synchronize lets the host copy go before the device has read it
// (setup only).
Tensor to_stream_device(const Tensor& host, Stream& stream) {
  Tensor t = host.to(stream.device(), stream);
  stream.synchronize();
  return t;
}

std::function<void()> batchnorm_op(const OpCase& c, Stream& stream) {
  const int64_t channels = c.dims[3];
  const Device device = stream.device();
  Tensor x = filled(c.dims, DType::f32, 0.5f, stream);
  Tensor y = Tensor::empty(c.dims, DType::f32, device);
  Tensor ones = filled({channels}, DType::f32, 1.f, stream);
  Tensor zeros = Tensor::zeros({channels}, DType::f32, device, stream);
  Tensor running_mean = Tensor::zeros({channels}, DType::f32, device, stream);
  Tensor running_var = Tensor::zeros({channels}, DType::f32, device, stream);
  Tensor stats = Tensor::empty({batchnorm_stats_numel(channels)}, DType::f32, device);
  Tensor sums = Tensor::empty({batchnorm_stats_numel(channels)}, DType::f64, device);
  Tensor batch_stats = Tensor::empty({batchnorm_stats_numel(channels)}, DType::f32, device);
  Tensor workspace =
      Tensor::empty({std::max<int64_t>(batchnorm_workspace_numel(x), 1)}, DType::f32, device);
  auto forward = [=, &stream]() mutable {
    batchnorm_stats(x, stats, workspace, stream);
    batchnorm_stats_to_sums(stats, sums, stream);
    batchnorm_finalize_sums(sums, running_mean, running_var, 0.1f, 1e-5f, batch_stats, stream);
    batchnorm_normalize(x, batch_stats, ones, zeros, y, stream);
  };
  if (c.op == "bn_forward") return forward;
  forward();  // the batch statistics the backward reads
  Tensor dx = Tensor::empty(c.dims, DType::f32, device);
  Tensor grad_sums = Tensor::empty({2 * channels}, DType::f32, device);
  // dy = y: any values do; the backward reads dy and x twice each and writes dx.
  return [=, &stream]() mutable {
    batchnorm_backward_reduce(y, x, batch_stats, grad_sums, workspace, stream);
    batchnorm_backward_elementwise(y, x, batch_stats, ones, grad_sums, dx, stream);
  };
}

std::function<void()> activation_op(const OpCase& c, Stream& stream) {
  Tensor x = filled(c.dims, DType::f32, 0.5f, stream);
  Tensor other = filled(c.dims, DType::f32, -0.25f, stream);
  Tensor out = Tensor::empty(c.dims, DType::f32, stream.device());
  if (c.op == "relu") return [=, &stream]() mutable { relu_forward(x, out, stream); };
  // relu_backward(y, dy, dx): x plays the forward output y, other the incoming gradient.
  if (c.op == "relu_backward") {
    return [=, &stream]() mutable { relu_backward(x, other, out, stream); };
  }
  return [=, &stream]() mutable { add_relu_forward(x, other, out, stream); };
}

std::function<void()> maxpool_op(const OpCase& c, Stream& stream) {
  const MaxPool2dParams pool;
  const Shape pooled_shape = {c.dims[0], pool.output_size(c.dims[1]), pool.output_size(c.dims[2]),
                              c.dims[3]};
  const Device device = stream.device();
  Tensor x = filled(c.dims, DType::f32, 0.5f, stream);
  Tensor y = Tensor::empty(pooled_shape, DType::f32, device);
  Tensor argmax = Tensor::empty(pooled_shape, DType::u8, device);
  if (c.op == "maxpool") {
    return [=, &stream]() mutable { maxpool2d_forward(pool, x, y, argmax, stream); };
  }
  maxpool2d_forward(pool, x, y, argmax, stream);  // the argmax the backward gathers by
  Tensor dx = Tensor::empty(c.dims, DType::f32, device);
  return [=, &stream]() mutable { maxpool2d_backward(pool, y, argmax, dx, stream); };
}

std::function<void()> avgpool_op(const OpCase& c, Stream& stream) {
  Tensor x = filled(c.dims, DType::f32, 0.5f, stream);
  Tensor pooled = filled({c.dims[0], c.dims[3]}, DType::f32, 0.5f, stream);
  if (c.op == "avgpool") {
    return [=, &stream]() mutable { global_avgpool_forward(x, pooled, stream); };
  }
  return [=, &stream]() mutable { global_avgpool_backward(pooled, x, stream); };
}

std::function<void()> linear_op(const OpCase& c, DType dtype, Stream& stream) {
  const int64_t rows = c.dims[0], in = c.dims[1], out = c.dims[2];
  // Random operands, as cuBLAS's baseline gets (bench/random_fill.h says why).
  Tensor x = random_tensor({rows, in}, dtype, stream, 1);
  Tensor w = random_tensor({out, in}, dtype, stream, 2);
  Tensor y = random_tensor({rows, out}, dtype, stream, 3);
  if (c.op == "linear_fwd") {
    Tensor bias = filled({out}, DType::f32, 0.5f, stream);
    return [=, &stream]() mutable { linear_forward(x, w, bias, y, stream); };
  }
  if (c.op == "linear_bwd_data") {
    return [=, &stream]() mutable { linear_backward_data(y, w, x, stream); };
  }
  Tensor dw = Tensor::empty({out, in}, DType::f32, stream.device());
  Tensor dbias = Tensor::empty({out}, DType::f32, stream.device());
  Tensor workspace =
      Tensor::empty({linear_backward_weight_workspace_numel(rows, in, out, stream.device())},
                    DType::f32, stream.device());
  return
      [=, &stream]() mutable { linear_backward_weight(x, y, dw, dbias, false, workspace, stream); };
}

std::function<void()> loss_op(const OpCase& c, Stream& stream) {
  const int64_t n = c.dims[0], classes = c.dims[1];
  std::vector<float> logit_values(static_cast<size_t>(n * classes));
  for (size_t i = 0; i < logit_values.size(); ++i)
    logit_values[i] = std::sin(0.37f * static_cast<float>(i));  // distinct ranks, no ties
  std::vector<int32_t> label_values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    label_values[static_cast<size_t>(i)] = static_cast<int32_t>((i * 37) % classes);
  Tensor logits = to_stream_device(Tensor::from_floats({n, classes}, logit_values), stream);
  Tensor labels = to_stream_device(Tensor::from_ints({n}, label_values), stream);
  const Device device = stream.device();
  if (c.op == "topk") {
    Tensor correct = Tensor::empty({2}, DType::f32, device);
    return [=, &stream]() mutable { topk_correct(logits, labels, correct, stream); };
  }
  Tensor sample_loss = Tensor::empty({n}, DType::f32, device);
  Tensor loss = Tensor::empty({1}, DType::f32, device);
  Tensor dlogits = Tensor::empty({n, classes}, DType::f32, device);
  return [=, &stream]() mutable {
    cross_entropy_forward(logits, labels, 0.1f, sample_loss, loss, stream);
    cross_entropy_backward(logits, labels, 0.1f, 1.f, dlogits, stream);
  };
}

std::function<void()> sgd_op(const OpCase& c, Stream& stream) {
  SgdOptions options;
  options.lr = 0.1f;
  options.momentum = 0.9f;
  options.weight_decay = 1e-4f;
  Tensor params = filled(c.dims, DType::f32, 0.5f, stream);
  Tensor grads = filled(c.dims, DType::f32, 1e-3f, stream);  // set once, as the baseline's
  Tensor buffer = Tensor::zeros(c.dims, DType::f32, stream.device(), stream);
  sgd_step(options, params, grads, buffer, true, stream);  // fills the momentum buffer
  return [=, &stream]() mutable { sgd_step(options, params, grads, buffer, false, stream); };
}

}  // namespace

std::function<void()> make_native_op(const OpCase& c, DType dtype, Stream& stream) {
  const std::string& op = c.op;
  if (op == "bn_forward" || op == "bn_backward") return batchnorm_op(c, stream);
  if (op == "relu" || op == "relu_backward" || op == "add_relu") return activation_op(c, stream);
  if (op == "maxpool" || op == "maxpool_backward") return maxpool_op(c, stream);
  if (op == "avgpool" || op == "avgpool_backward") return avgpool_op(c, stream);
  if (op.starts_with("linear_")) return linear_op(c, dtype, stream);
  if (op == "cross_entropy" || op == "topk") return loss_op(c, stream);
  if (op == "sgd") return sgd_op(c, stream);
  fail("bench: no native implementation for op '" + op + "'");
}

}  // namespace engine::bench
