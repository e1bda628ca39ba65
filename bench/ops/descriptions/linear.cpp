// The fc layer's three GEMMs on [batch, features] -> [batch, classes]: y = x w^T + b, the input
// gradient dx = dy w, and the weight and bias gradients (f32 master copies in every dtype).
#include <cmath>

#include "bench/ops/case_kit.h"
#include "bench/ops/gpu_baselines.h"
#include "bench/ops/op_description.h"
#include "kernels/ops.h"

namespace engine::op_registry {

namespace {

enum class Pass { forward, backward_data, backward_weight };

std::vector<OpCase> linear_cases(const ModelShapes& model, DType dtype, Pass pass) {
  if (dtype != DType::f32 && dtype != DType::bf16) return {};
  const int64_t rows = model.batch, in = model.features, out = model.classes;
  const Operand x({rows, in}, dtype, 61);
  const Operand w({out, in}, dtype, 62, 0, 1.0 / std::sqrt(static_cast<double>(in)));
  const Operand bias({out}, DType::f32, 63);
  const Operand dy({rows, out}, dtype, 64);
  const bool bf16_out = dtype == DType::bf16 && pass != Pass::backward_weight;
  static constexpr const char* kSuffix[] = {"fwd", "bwd_data", "bwd_weight+bias"};
  static constexpr OpId kOp[] = {OpId::linear_fwd, OpId::linear_bwd_data, OpId::linear_bwd_weight};
  OpCase c;
  c.op = kOp[static_cast<int>(pass)];
  c.name = model.arch + " fc " + shape_str({rows, in}) + " -> " + shape_str({rows, out}) + " " +
           kSuffix[static_cast<int>(pass)];
  c.dtype = dtype;
  c.tolerance = bf16_out ? kBf16 : kGemmF32;
  c.why = bf16_out ? kBf16Why : kGemmF32Why;
  c.elements = rows * out;
  c.dims = {rows, in, out};
  c.flops = 2.0 * rows * in * out;
  c.prepare = [=](Stream& stream, Inputs inputs) {
    const Device device = stream.device();
    const Held tx = hold(x.on(stream, inputs));
    const Held tw = hold(w.on(stream, inputs));
    const Held tb = hold(bias.on(stream, inputs));
    const Held tdy = hold(dy.on(stream, inputs));
    auto result = std::make_shared<std::vector<Tensor>>();
    if (pass == Pass::forward) {
      result->push_back(Tensor::empty({rows, out}, dtype, device));
    } else if (pass == Pass::backward_data) {
      result->push_back(Tensor::empty({rows, in}, dtype, device));
    } else {
      result->push_back(Tensor::empty({out, in}, DType::f32, device));
      result->push_back(Tensor::empty({out}, DType::f32, device));
      result->push_back(
          workspace(linear_backward_weight_workspace_numel(
                        {.rows = rows, .in_features = in, .out_features = out}, device),
                    stream));
    }
    return Prepared{[=, &stream] {
                      std::vector<Tensor>& r = *result;
                      if (pass == Pass::forward) {
                        linear_forward({.x = *tx, .w = *tw, .bias = *tb, .y = r[0]}, stream);
                      } else if (pass == Pass::backward_data) {
                        linear_backward_data({.dy = *tdy, .w = *tw, .dx = r[0]}, stream);
                      } else {
                        linear_backward_weight({.x = *tx,
                                                .dy = *tdy,
                                                .dw = r[0],
                                                .dbias = r[1],
                                                .workspace = r[2],
                                                .write = GradWrite::overwrite},
                                               stream);
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
  if (dtype == DType::f32 && pass == Pass::forward) {
    c.differentiables = [=] {
      Stream host;
      const std::vector<float> probe = dy->to_floats(host);
      auto loss = [=](Stream& stream, const Tensor& tx, const Tensor& tw, const Tensor& tb) {
        Tensor y = Tensor::empty({rows, out}, dtype, stream.device());
        linear_forward({.x = on_device(tx, stream),
                        .w = on_device(tw, stream),
                        .bias = on_device(tb, stream),
                        .y = y},
                       stream);
        return probed(y, probe, stream);
      };
      auto weight_grads = [=](Stream& stream) {
        const Device device = stream.device();
        Tensor dw = Tensor::empty({out, in}, DType::f32, device);
        Tensor db = Tensor::empty({out}, DType::f32, device);
        Tensor scratch =
            workspace(linear_backward_weight_workspace_numel(
                          {.rows = rows, .in_features = in, .out_features = out}, device),
                      stream);
        linear_backward_weight({.x = on_device(*x, stream),
                                .dy = on_device(*dy, stream),
                                .dw = dw,
                                .dbias = db,
                                .workspace = scratch,
                                .write = GradWrite::overwrite},
                               stream);
        return std::vector<std::vector<float>>{dw.to_floats(stream), db.to_floats(stream)};
      };
      return std::vector<Differentiable>{
          {"x", x->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             return loss(stream, Tensor::from_floats({rows, in}, point), *w, *bias);
           },
           [=](Stream& stream) {
             Tensor dx = Tensor::empty({rows, in}, dtype, stream.device());
             linear_backward_data(
                 {.dy = on_device(*dy, stream), .w = on_device(*w, stream), .dx = dx}, stream);
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
  return {c};
}

// The PyTorch baselines' operands: dims are rows, in, out.
#define ENGINE_LINEAR_OPERANDS                                               \
  "    rows, features, classes = dims\n"                                     \
  "    x, w = torch.randn(rows, features), torch.randn(classes, features)\n" \
  "    b, dy = torch.randn(classes), torch.randn(rows, classes)\n"

}  // namespace

const OpDescription& describe_linear_fwd() {
  static const OpDescription d{
      .id = OpId::linear_fwd,
      .cases = [](const ModelShapes& model,
                  DType dtype) { return linear_cases(model, dtype, Pass::forward); },
      .torch = "def make(dims):\n" ENGINE_LINEAR_OPERANDS "    return lambda: F.linear(x, w, b)\n",
      .gpu_baseline = kCublasLinearForward,
      .bench_dtypes = BenchDtypes::each_on_gpu};
  return d;
}

const OpDescription& describe_linear_bwd_data() {
  static const OpDescription d{
      .id = OpId::linear_bwd_data,
      .cases = [](const ModelShapes& model,
                  DType dtype) { return linear_cases(model, dtype, Pass::backward_data); },
      .torch = "def make(dims):\n" ENGINE_LINEAR_OPERANDS "    return lambda: dy @ w\n",
      .gpu_baseline = kCublasLinearBackwardData,
      .bench_dtypes = BenchDtypes::each_on_gpu};
  return d;
}

const OpDescription& describe_linear_bwd_weight() {
  static const OpDescription d{
      .id = OpId::linear_bwd_weight,
      .cases = [](const ModelShapes& model,
                  DType dtype) { return linear_cases(model, dtype, Pass::backward_weight); },
      .torch =
          "def make(dims):\n" ENGINE_LINEAR_OPERANDS "    return lambda: (dy.t() @ x, dy.sum(0))\n",
      .gpu_baseline = kCublasLinearBackwardWeight,
      .bench_dtypes = BenchDtypes::each_on_gpu};
  return d;
}

}  // namespace engine::op_registry
