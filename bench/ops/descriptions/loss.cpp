// The head's loss on the logits [batch, classes]: softmax cross-entropy with label smoothing
// 0.1 (forward and backward), and the top-1 and top-5 correct counts.
#include <algorithm>

#include "bench/ops/case_kit.h"
#include "bench/ops/descriptions/loss_kit.h"
#include "bench/ops/op_description.h"
#include "kernels/ops.h"

namespace engine::op_registry {

namespace {

constexpr float kSmoothing = 0.1f;

std::vector<int32_t> labels_for(int64_t n, int64_t classes) {
  std::vector<int32_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    labels[static_cast<size_t>(i)] = static_cast<int32_t>((i * 37 + 5) % classes);
  return labels;
}

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

std::string logits_prefix(const ModelShapes& model) {
  return model.arch + " logits " + shape_str({model.batch, model.classes}) + " ";
}

std::vector<OpCase> cross_entropy_cases(const ModelShapes& model, DType dtype) {
  if (dtype != DType::f32 && dtype != DType::bf16) return {};
  const int64_t n = model.batch, classes = model.classes;
  const Operand logits({n, classes}, dtype, 71, 0, 3);
  const Operand labels(Tensor::from_ints({n}, labels_for(n, classes)));
  OpCase c;
  c.op = OpId::cross_entropy;
  c.name = logits_prefix(model) + "cross_entropy fwd+bwd (smoothing 0.1)";
  c.dtype = dtype;
  c.tolerance = dtype == DType::bf16 ? kBf16 : kReduceF32;
  c.why = dtype == DType::bf16 ? kBf16Why : "an fp32 log-sum-exp over the classes in another order";
  c.elements = n * classes;
  c.dims = {n, classes};
  // Forward reads logits and labels, writes the per-sample and mean loss; backward reads
  // logits and labels again and writes dlogits.
  c.bytes = bytes_of(3.0 * n * classes, dtype) + bytes_of(3.0 * n + 1, DType::f32);
  set_loss_calls(
      c, logits, labels, n, classes,
      {.forward =
           [](const Tensor& z, const Tensor& y, Tensor& sample, Tensor& loss, Stream& stream) {
             cross_entropy_forward({.logits = z,
                                    .labels = y,
                                    .sample_loss = sample,
                                    .loss = loss,
                                    .label_smoothing = kSmoothing},
                                   stream);
           },
       .backward =
           [](const Tensor& z, const Tensor& y, Tensor& dz, Stream& stream) {
             cross_entropy_backward({.logits = z,
                                     .labels = y,
                                     .dlogits = dz,
                                     .label_smoothing = kSmoothing,
                                     .grad_loss = 1.f},
                                    stream);
           }});
  return {c};
}

std::vector<OpCase> topk_cases(const ModelShapes& model, DType dtype) {
  if (dtype != DType::f32 && dtype != DType::bf16) return {};
  // Four rows at least, so that a label sits on each side of both edges.
  const int64_t n = std::max<int64_t>(model.batch, 4), classes = model.classes;
  const std::vector<int32_t> label_values = labels_for(n, classes);
  const Operand logits(ranked_logits(n, classes, dtype, label_values));
  const Operand labels(Tensor::from_ints({n}, label_values));
  OpCase c;
  c.op = OpId::topk;
  c.name = logits_prefix(model) + "top1+top5 correct";
  if (n != model.batch) c.name += " (" + std::to_string(n) + " rows)";
  c.dtype = dtype;
  c.tolerance = kExact;
  c.why = "counts of ranks (labels at ranks 4, 5, 0, 1 of each four rows): exact";
  c.elements = n * classes;
  c.dims = {n, classes};
  c.bytes = bytes_of(static_cast<double>(n * classes), dtype) + bytes_of(n + 2.0, DType::f32);
  c.prepare = [=](Stream& stream, Inputs inputs) {
    const Held z = hold(logits.on(stream, inputs));
    const Held y = hold(labels.on(stream, inputs));
    const Held correct = hold(Tensor::empty({2}, DType::f32, stream.device()));
    return Prepared{
        [=, &stream] { topk_correct({.logits = *z, .labels = *y, .correct = *correct}, stream); },
        [=, &stream] {
          return std::vector<Output>{{"correct", host_values(*correct, stream)}};
        }};
  };
  return {c};
}

}  // namespace

// F.cross_entropy forward and backward through autograd.
const OpDescription& describe_cross_entropy() {
  static const OpDescription d{.id = OpId::cross_entropy, .cases = cross_entropy_cases, .torch = R"(
def make(dims):
    n, classes = dims
    logits = torch.randn(n, classes, requires_grad=True)
    labels = torch.randint(classes, (n,))
    def forward_backward():
        with torch.enable_grad():
            loss = F.cross_entropy(logits, labels, label_smoothing=0.1)
            return torch.autograd.grad(loss, logits)
    return forward_backward
)"};
  return d;
}

// The top-1 and top-5 correct counts as the ImageNet reference script computes them.
const OpDescription& describe_topk() {
  static const OpDescription d{.id = OpId::topk, .cases = topk_cases, .torch = R"(
def make(dims):
    n, classes = dims
    logits, labels = torch.randn(n, classes), torch.randint(classes, (n,))
    def topk():
        correct = logits.topk(5, 1).indices.eq(labels[:, None])
        return correct[:, :1].sum(), correct.sum()
    return topk
)"};
  return d;
}

}  // namespace engine::op_registry
