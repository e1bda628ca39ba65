// The op harness's element-wise and pooling cases.
#include "case_helpers.h"

#include <cmath>

#include "kernels/ops.h"

namespace engine::ops_harness {

// offset > 0: every tensor is a view that many elements into a buffer, as the flat parameter
// and gradient buffers hand out views: no 16-byte alignment, so the kernels' scalar paths.
void add_activation_case(std::vector<OpCase>& cases, const bench::OpCase& c, DType dtype,
                         int64_t offset) {
  const Shape shape = c.dims;
  const auto a = HostTensor(shape, dtype, 31);
  const auto b = HostTensor(shape, dtype, 32);
  // relu_backward reads the forward's output: a ReLU's, with its exact zeros (where the
  // gradient must stop), rather than normal values that are never zero.
  const std::string which = c.op;
  auto placed = [=](Stream& stream) {
    if (offset == 0) return Tensor::empty(shape, dtype, stream.device());
    return Tensor::empty({shape_numel(shape) + offset}, dtype, stream.device()).view(offset, shape);
  };
  auto placed_copy = [=](const Tensor& host, Stream& stream) {
    Tensor t = placed(stream);
    copy(on_device(host, stream), t, stream);
    return t;
  };
  auto first_input = [=](Stream& stream) {
    Tensor in = placed_copy(*a, stream);
    if (which == "relu_backward") relu_forward(in, in, stream);
    return in;
  };
  const std::string name =
      offset == 0 ? c.name : c.name + " (views " + std::to_string(offset) + " element in)";
  OpCase op{c.op, name, dtype, kExact, kExactWhy, shape_numel(shape) + offset, nullptr, nullptr};
  op.prepare = [=](Stream& stream) {
    auto in = std::make_shared<Tensor>(first_input(stream));
    auto other = std::make_shared<Tensor>(placed_copy(*b, stream));
    auto out = std::make_shared<Tensor>(placed(stream));
    return Prepared{[=, &stream] {
                      if (which == "relu") {
                        relu_forward(*in, *out, stream);
                      } else if (which == "relu_backward") {
                        relu_backward(*in, *other, *out, stream);  // in plays y, other dy
                      } else if (which == "add") {
                        add(*in, *other, *out, stream);
                      } else if (which == "fill") {
                        fill(*out, 1.00390625f, stream);  // not a bf16 value: rounded once
                      } else {
                        add_relu_forward(*in, *other, *out, stream);
                      }
                    },
                    [=, &stream] {
                      return std::vector<Output>{{"out", host_values(*out, stream)}};
                    }};
  };
  cases.push_back(op);
}

void add_maxpool_case(std::vector<OpCase>& cases, const bench::OpCase& c, DType dtype) {
  const Shape shape = c.dims;
  const MaxPool2dParams pool;
  const Shape pooled = {shape[0], pool.output_size(shape[1]), pool.output_size(shape[2]), shape[3]};
  const auto x = HostTensor(shape, dtype, 41);
  const auto dy = HostTensor(pooled, dtype, 42);
  const bool backward = c.op == "maxpool_backward";
  OpCase op{c.op,
            c.name,
            dtype,
            kExact,
            "a maximum is exact, and the backward sums each input's gradients in the same "
            "row-major order on both sides",
            shape_numel(shape),
            nullptr,
            nullptr};
  op.prepare = [=](Stream& stream) {
    const Device device = stream.device();
    auto in = std::make_shared<Tensor>(on_device(*x, stream));
    auto y = std::make_shared<Tensor>(Tensor::empty(pooled, dtype, device));
    auto argmax = std::make_shared<Tensor>(Tensor::empty(pooled, DType::u8, device));
    auto grad = std::make_shared<Tensor>(on_device(*dy, stream));
    auto dx = std::make_shared<Tensor>(Tensor::empty(shape, dtype, device));
    if (backward) maxpool2d_forward(pool, *in, *y, *argmax, stream);
    return Prepared{[=, &stream] {
                      if (backward) {
                        maxpool2d_backward(pool, *grad, *argmax, *dx, stream);
                      } else {
                        maxpool2d_forward(pool, *in, *y, *argmax, stream);
                      }
                    },
                    [=, &stream] {
                      if (backward) return std::vector<Output>{{"dx", host_values(*dx, stream)}};
                      return std::vector<Output>{{"y", host_values(*y, stream)},
                                                 {"argmax", host_values(*argmax, stream)}};
                    }};
  };
  cases.push_back(op);
}

void add_avgpool_case(std::vector<OpCase>& cases, const bench::OpCase& c, DType dtype) {
  const Shape shape = c.dims;
  const Shape pooled = {shape[0], shape[3]};
  const auto x = HostTensor(shape, dtype, 51);
  const auto dy = HostTensor(pooled, dtype, 52);
  const bool backward = c.op == "avgpool_backward";
  OpCase op{c.op,
            c.name,
            dtype,
            dtype == DType::bf16 ? kBf16 : 1e-6,
            dtype == DType::bf16
                ? kBf16Why
                : "an fp32 mean over H * W (at most 49 values here) in another order",
            shape_numel(shape),
            nullptr,
            nullptr};
  op.prepare = [=](Stream& stream) {
    auto in = std::make_shared<Tensor>(on_device(backward ? *dy : *x, stream));
    auto out =
        std::make_shared<Tensor>(Tensor::empty(backward ? shape : pooled, dtype, stream.device()));
    return Prepared{[=, &stream] {
                      if (backward) {
                        global_avgpool_backward(*in, *out, stream);
                      } else {
                        global_avgpool_forward(*in, *out, stream);
                      }
                    },
                    [=, &stream] {
                      return std::vector<Output>{{"out", host_values(*out, stream)}};
                    }};
  };
  if (dtype == DType::f32 && !backward) {
    op.differentiables = [=] {
      Stream host;
      const std::vector<float> probe = dy->to_floats(host);
      return std::vector<Differentiable>{
          {"x", x->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             Tensor y = Tensor::empty(pooled, dtype, stream.device());
             global_avgpool_forward(on_device(Tensor::from_floats(shape, point), stream), y,
                                    stream);
             return probed(y, probe, stream);
           },
           [=](Stream& stream) {
             Tensor dx = Tensor::empty(shape, dtype, stream.device());
             global_avgpool_backward(on_device(*dy, stream), dx, stream);
             return dx.to_floats(stream);
           }}};
    };
  }
  cases.push_back(op);
}

}  // namespace engine::ops_harness
