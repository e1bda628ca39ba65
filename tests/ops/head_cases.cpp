// The op harness's cases of the network's head: the fc layer, the loss and top-k, and the
// optimizer.
#include "case_helpers.h"

#include <algorithm>
#include <cmath>

#include "kernels/ops.h"

namespace engine::ops_harness {

using testing::normal_values;

void add_linear_case(std::vector<OpCase>& cases, const bench::OpCase& c, DType dtype) {
  const int64_t rows = c.dims[0], in = c.dims[1], out = c.dims[2];
  const auto x = HostTensor({rows, in}, dtype, 61);
  const auto w = HostTensor({out, in}, dtype, 62, 0, 1.0 / std::sqrt(static_cast<double>(in)));
  const auto bias = HostTensor({out}, DType::f32, 63);
  const auto dy = HostTensor({rows, out}, dtype, 64);
  const std::string which = c.op;
  const bool weight_pass = which == "linear_bwd_weight";
  const bool bf16_out = dtype == DType::bf16 && !weight_pass;
  OpCase op{
      c.op,       c.name,  dtype,  bf16_out ? kBf16 : kGemmF32, bf16_out ? kBf16Why : kGemmF32Why,
      rows * out, nullptr, nullptr};
  op.prepare = [=](Stream& stream) {
    const Device device = stream.device();
    auto tx = std::make_shared<Tensor>(on_device(*x, stream));
    auto tw = std::make_shared<Tensor>(on_device(*w, stream));
    auto tb = std::make_shared<Tensor>(on_device(*bias, stream));
    auto tdy = std::make_shared<Tensor>(on_device(*dy, stream));
    auto result = std::make_shared<std::vector<Tensor>>();
    if (which == "linear_fwd") {
      result->push_back(Tensor::empty({rows, out}, dtype, device));
    } else if (which == "linear_bwd_data") {
      result->push_back(Tensor::empty({rows, in}, dtype, device));
    } else {
      result->push_back(Tensor::empty({out, in}, DType::f32, device));
      result->push_back(Tensor::empty({out}, DType::f32, device));
      result->push_back(
          workspace(linear_backward_weight_workspace_numel(rows, in, out, device), stream));
    }
    return Prepared{[=, &stream] {
                      std::vector<Tensor>& r = *result;
                      if (which == "linear_fwd") {
                        linear_forward(*tx, *tw, *tb, r[0], stream);
                      } else if (which == "linear_bwd_data") {
                        linear_backward_data(*tdy, *tw, r[0], stream);
                      } else {
                        linear_backward_weight(*tx, *tdy, r[0], r[1], false, r[2], stream);
                      }
                    },
                    [=, &stream] {
                      std::vector<Output> outputs{{"out", host_values((*result)[0], stream)}};
                      if (result->size() > 1) {
                        outputs.push_back({"dbias", host_values((*result)[1], stream)});
                      }
                      return outputs;
                    }};
  };
  if (dtype == DType::f32 && which == "linear_fwd") {
    op.differentiables = [=] {
      Stream host;
      const std::vector<float> probe = dy->to_floats(host);
      auto loss = [=](Stream& stream, const Tensor& tx, const Tensor& tw, const Tensor& tb) {
        Tensor y = Tensor::empty({rows, out}, dtype, stream.device());
        linear_forward(on_device(tx, stream), on_device(tw, stream), on_device(tb, stream), y,
                       stream);
        return probed(y, probe, stream);
      };
      auto weight_grads = [=](Stream& stream) {
        const Device device = stream.device();
        Tensor dw = Tensor::empty({out, in}, DType::f32, device);
        Tensor db = Tensor::empty({out}, DType::f32, device);
        Tensor scratch =
            workspace(linear_backward_weight_workspace_numel(rows, in, out, device), stream);
        linear_backward_weight(on_device(*x, stream), on_device(*dy, stream), dw, db, false,
                               scratch, stream);
        return std::vector<std::vector<float>>{dw.to_floats(stream), db.to_floats(stream)};
      };
      return std::vector<Differentiable>{
          {"x", x->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             return loss(stream, Tensor::from_floats({rows, in}, point), *w, *bias);
           },
           [=](Stream& stream) {
             Tensor dx = Tensor::empty({rows, in}, dtype, stream.device());
             linear_backward_data(on_device(*dy, stream), on_device(*w, stream), dx, stream);
             return dx.to_floats(stream);
           }},
          {"w", w->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             return loss(stream, *x, Tensor::from_floats({out, in}, point), *bias);
           },
           [=](Stream& stream) { return weight_grads(stream)[0]; }},
          {"bias", bias->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             return loss(stream, *x, *w, Tensor::from_floats({out}, point));
           },
           [=](Stream& stream) { return weight_grads(stream)[1]; }}};
    };
  }
  cases.push_back(op);
}

namespace {

// Logits whose label of row i has about kRanks[i % 4] classes ahead of it: both sides of the
// top-1 and top-5 edges, which random logits over 1000 classes would almost never touch. The
// label takes the value of that rank's class and that class the label's (values tied with it
// may move the rank by one; both devices break ties alike).
Tensor ranked_logits(int64_t n, int64_t classes, DType dtype, const std::vector<int32_t>& labels) {
  static constexpr int64_t kRanks[] = {4, 5, 0, 1};
  std::vector<float> values = normal_values(n * classes, 72, dtype, 0, 3);
  for (int64_t i = 0; i < n; ++i) {
    float* row = values.data() + i * classes;
    const int64_t label = labels[static_cast<size_t>(i)];
    std::vector<int64_t> order(static_cast<size_t>(classes));
    for (int64_t j = 0; j < classes; ++j)
      order[static_cast<size_t>(j)] = j;
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return row[a] > row[b]; });
    order.erase(std::find(order.begin(), order.end(), label));
    std::swap(row[label], row[order[static_cast<size_t>(kRanks[i % 4])]]);
  }
  return Tensor::from_floats({n, classes}, values, dtype);
}

}  // namespace

void add_loss_case(std::vector<OpCase>& cases, const bench::OpCase& c, DType dtype) {
  const bool topk = c.op == "topk";
  // top-k: four rows at least, so that a label sits on each side of both edges.
  const int64_t n = topk ? std::max<int64_t>(c.dims[0], 4) : c.dims[0], classes = c.dims[1];
  std::vector<int32_t> label_values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    label_values[static_cast<size_t>(i)] = static_cast<int32_t>((i * 37 + 5) % classes);
  const auto logits = topk
                          ? std::make_shared<Tensor>(ranked_logits(n, classes, dtype, label_values))
                          : std::make_shared<Tensor>(*HostTensor({n, classes}, dtype, 71, 0, 3));
  const auto labels = std::make_shared<Tensor>(Tensor::from_ints({n}, label_values));
  constexpr float kSmoothing = 0.1f;
  OpCase op{
      c.op,
      topk ? c.name + " (" + std::to_string(n) + " rows: labels at ranks 4, 5, 0, 1)" : c.name,
      dtype,
      topk                   ? kExact
      : dtype == DType::bf16 ? kBf16
                             : kReduceF32,
      topk                   ? "counts of ranks: exact"
      : dtype == DType::bf16 ? kBf16Why
                             : "an fp32 log-sum-exp over the classes in another order",
      n * classes,
      nullptr,
      nullptr};
  op.prepare = [=](Stream& stream) {
    const Device device = stream.device();
    auto z = std::make_shared<Tensor>(on_device(*logits, stream));
    auto y = std::make_shared<Tensor>(on_device(*labels, stream));
    auto sample = std::make_shared<Tensor>(Tensor::empty({n}, DType::f32, device));
    auto loss = std::make_shared<Tensor>(Tensor::empty({1}, DType::f32, device));
    auto dz = std::make_shared<Tensor>(Tensor::empty({n, classes}, dtype, device));
    auto correct = std::make_shared<Tensor>(Tensor::empty({2}, DType::f32, device));
    return Prepared{[=, &stream] {
                      if (topk) {
                        topk_correct(*z, *y, *correct, stream);
                        return;
                      }
                      cross_entropy_forward(*z, *y, kSmoothing, *sample, *loss, stream);
                      cross_entropy_backward(*z, *y, kSmoothing, 1.f, *dz, stream);
                    },
                    [=, &stream] {
                      if (topk)
                        return std::vector<Output>{{"correct", host_values(*correct, stream)}};
                      return std::vector<Output>{{"sample_loss", host_values(*sample, stream)},
                                                 {"loss", host_values(*loss, stream)},
                                                 {"dlogits", host_values(*dz, stream)}};
                    }};
  };
  if (dtype == DType::f32 && !topk) {
    op.differentiables = [=] {
      Stream host;
      return std::vector<Differentiable>{
          {"logits", logits->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             const Device device = stream.device();
             Tensor sample = Tensor::empty({n}, DType::f32, device);
             Tensor loss = Tensor::empty({1}, DType::f32, device);
             cross_entropy_forward(on_device(Tensor::from_floats({n, classes}, point), stream),
                                   on_device(*labels, stream), kSmoothing, sample, loss, stream);
             return static_cast<double>(loss.to_floats(stream)[0]);
           },
           [=](Stream& stream) {
             Tensor dz = Tensor::empty({n, classes}, dtype, stream.device());
             cross_entropy_backward(on_device(*logits, stream), on_device(*labels, stream),
                                    kSmoothing, 1.f, dz, stream);
             return dz.to_floats(stream);
           }}};
    };
  }
  cases.push_back(op);
}

// resnet_train's SGD (momentum 0.9, weight decay 1e-4; --nesterov optional) over `shape`.
void add_sgd_case(std::vector<OpCase>& cases, const bench::OpCase& c, bool nesterov) {
  const Shape shape = c.dims;
  const auto params = HostTensor(shape, DType::f32, 81);
  const auto grads = HostTensor(shape, DType::f32, 82, 0, 1e-2);
  const SgdOptions options{
      .lr = 0.1f, .momentum = 0.9f, .weight_decay = 1e-4f, .nesterov = nesterov};
  OpCase op{c.op,
            c.name,
            DType::f32,
            1e-6,
            "fp32 multiply-adds that nvcc may fuse (one rounding fewer) where the CPU does not",
            shape_numel(shape),
            nullptr,
            nullptr};
  op.prepare = [=](Stream& stream) {
    auto p = std::make_shared<Tensor>(on_device(*params, stream));
    auto g = std::make_shared<Tensor>(on_device(*grads, stream));
    auto buffer =
        std::make_shared<Tensor>(Tensor::zeros(shape, DType::f32, stream.device(), stream));
    // The first step fills the momentum buffer (PyTorch's "buf is None"); the call is a
    // steady step after it, which reads the buffer too.
    sgd_step(options, *p, *g, *buffer, true, stream);
    return Prepared{[=, &stream] { sgd_step(options, *p, *g, *buffer, false, stream); },
                    [=, &stream] {
                      return std::vector<Output>{{"params", host_values(*p, stream)},
                                                 {"momentum_buffer", host_values(*buffer, stream)}};
                    }};
  };
  cases.push_back(op);
}

}  // namespace engine::ops_harness
