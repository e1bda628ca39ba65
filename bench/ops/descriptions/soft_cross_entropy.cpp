// Cross-entropy against soft targets (mixup and CutMix's loss), forward and backward, on the
// logits [batch, classes], with targets blended as mixup blends them.
#include <random>

#include "bench/ops/case_kit.h"
#include "bench/ops/descriptions/loss_kit.h"
#include "bench/ops/op_description.h"
#include "kernels/ops.h"

namespace engine::op_registry {

namespace {

// Each row lam * q(a) + (1 - lam) * q(b): two smoothed (0.1) one-hot targets blended.
Tensor mixed_targets(int64_t n, int64_t classes) {
  std::mt19937 rng(73);
  std::uniform_int_distribution<int64_t> pick(0, classes - 1);
  std::uniform_real_distribution<float> mix(0.f, 1.f);
  const float floor = 0.1f / static_cast<float>(classes);
  std::vector<float> t(static_cast<size_t>(n * classes), floor);
  for (int64_t i = 0; i < n; ++i) {
    const float lam = mix(rng);
    t[static_cast<size_t>(i * classes + pick(rng))] += 0.9f * lam;
    t[static_cast<size_t>(i * classes + pick(rng))] += 0.9f * (1.f - lam);
  }
  return Tensor::from_floats({n, classes}, t);
}

std::vector<OpCase> soft_cross_entropy_cases(const ModelShapes& model, DType dtype) {
  if (dtype != DType::f32 && dtype != DType::bf16) return {};
  const int64_t n = model.batch, classes = model.classes;
  const Operand logits({n, classes}, dtype, 74, 0, 3);
  const Operand targets(mixed_targets(n, classes));
  OpCase c;
  c.op = OpId::soft_cross_entropy;
  c.name =
      model.arch + " logits " + shape_str({n, classes}) + " soft_cross_entropy fwd+bwd (mixed)";
  c.dtype = dtype;
  // f32: the gradient scales each softmax value by the targets' mass, an fp32 sum over the
  // classes that the two sides add in other orders (~1e-7 apart): 1.2e-5 of the RMS measured.
  c.tolerance = dtype == DType::bf16 ? kBf16 : 5e-5;
  c.why = dtype == DType::bf16 ? kBf16Why
                               : "fp32 sums over the classes in another order: the log-sum-exp, "
                                 "and the targets' mass that scales every softmax value";
  c.elements = n * classes;
  c.dims = {n, classes};
  // Forward reads logits and targets; backward reads them again and writes dlogits.
  c.bytes = bytes_of(3.0 * n * classes, dtype) + bytes_of(2.0 * n * classes + n + 1, DType::f32);
  set_loss_calls(
      c, logits, targets, n, classes,
      {.forward =
           [](const Tensor& z, const Tensor& t, Tensor& sample, Tensor& loss, Stream& stream) {
             soft_cross_entropy_forward(
                 {.logits = z, .targets = t, .sample_loss = sample, .loss = loss}, stream);
           },
       .backward =
           [](const Tensor& z, const Tensor& t, Tensor& dz, Stream& stream) {
             soft_cross_entropy_backward(
                 {.logits = z, .targets = t, .dlogits = dz, .grad_loss = 1.f}, stream);
           }});
  return {c};
}

}  // namespace

// F.cross_entropy with class probabilities as targets, forward and backward through autograd.
const OpDescription& describe_soft_cross_entropy() {
  static const OpDescription d{
      .id = OpId::soft_cross_entropy, .cases = soft_cross_entropy_cases, .torch = R"(
def make(dims):
    n, classes = dims
    logits = torch.randn(n, classes, requires_grad=True)
    targets = torch.softmax(torch.randn(n, classes), 1)
    def forward_backward():
        with torch.enable_grad():
            loss = F.cross_entropy(logits, targets)
            return torch.autograd.grad(loss, logits)
    return forward_backward
)"};
  return d;
}

}  // namespace engine::op_registry
