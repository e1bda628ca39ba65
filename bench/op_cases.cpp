#include "bench/op_cases.h"

#include "kernels/error.h"
#include "kernels/ops/pool.h"
#include "kernels/tensor.h"

namespace engine::bench {

namespace {

constexpr int64_t kClasses = 1000;  // ImageNet: the fc layer's outputs and the logits' width
constexpr double kF32 = 4;          // bytes per element; every memory-bound case is f32

// What differs between the two networks outside their convolutions.
struct Arch {
  int64_t stage_widths[4];  // channels of each stage's output (the residual sums)
  int64_t parameters;       // torchvision's parameter count: the SGD step's length
};

Arch arch_info(const std::string& arch) {
  if (arch == "resnet18") return {{64, 128, 256, 512}, 11'689'512};
  if (arch == "resnet50") return {{256, 512, 1024, 2048}, 25'557'032};
  fail("bench: unknown --arch '" + arch + "' (use resnet18 or resnet50)");
}

// The element-wise and BatchNorm ops of every activation, with the bytes each must move at
// the least. add+ReLU, the residual join, never runs on the stem's shape; it is timed there
// too so that every activation size has the same rows.
void add_activation_cases(std::vector<OpCase>& cases, const std::string& prefix,
                          const std::vector<int64_t>& nhwc) {
  const double size = kF32 * shape_numel(nhwc);
  auto add = [&](const std::string& op, double bytes) {
    cases.push_back({prefix + " " + op, op, nhwc, bytes, 0});
  };
  add("bn_forward", 3 * size);   // statistics pass reads x; normalize reads x, writes y
  add("bn_backward", 5 * size);  // reduce reads dy, x; elementwise reads dy, x, writes dx
  add("relu", 2 * size);
  add("relu_backward", 3 * size);  // reads y, dy; writes dx
  add("add_relu", 3 * size);       // reads both summands; writes y
}

}  // namespace

std::vector<OpCase> resnet_op_cases(const std::string& arch, int64_t batch, int64_t image_size) {
  const Arch info = arch_info(arch);
  struct Activation {
    std::string name;
    int64_t size, channels;
  };
  // The stem's 7x7/2 conv (pad 3) and each later stage's stride 2 halve the size rounding up,
  // as does the stem's max-pool (3, 2, 1) before layer1.
  auto halved = [](int64_t size) { return (size + 1) / 2; };
  const int64_t stem = halved(image_size);
  const int64_t layer1 = MaxPool2dParams{}.output_size(stem);
  const std::vector<Activation> activations = {
      {"stem out", stem, 64},
      {"layer1", layer1, info.stage_widths[0]},
      {"layer2", halved(layer1), info.stage_widths[1]},
      {"layer3", halved(halved(layer1)), info.stage_widths[2]},
      {"layer4", halved(halved(halved(layer1))), info.stage_widths[3]}};
  std::vector<OpCase> cases;
  for (size_t i = 0; i < activations.size(); ++i) {
    const Activation& a = activations[i];
    const std::vector<int64_t> nhwc = {batch, a.size, a.size, a.channels};
    const std::string prefix = arch + " " + a.name + " " + shape_str(nhwc);
    add_activation_cases(cases, prefix, nhwc);
    const double size = kF32 * shape_numel(nhwc);
    if (i == 0) {
      // The stem's max-pool: reads x, writes y and its argmax (a byte an element); backward
      // reads dy and the argmax, writes dx.
      const MaxPool2dParams pool;
      const double outputs = static_cast<double>(batch) * pool.output_size(a.size) *
                             pool.output_size(a.size) * a.channels;
      const double pooled = kF32 * outputs + outputs;
      cases.push_back({prefix + " maxpool", "maxpool", nhwc, size + pooled, 0});
      cases.push_back({prefix + " maxpool_backward", "maxpool_backward", nhwc, pooled + size, 0});
    }
    if (i + 1 == activations.size()) {
      // The head's global average pool: [n, h, w, c] <-> [n, c].
      const double pooled = kF32 * batch * a.channels;
      cases.push_back({prefix + " avgpool", "avgpool", nhwc, size + pooled, 0});
      cases.push_back({prefix + " avgpool_backward", "avgpool_backward", nhwc, pooled + size, 0});
    }
  }

  const int64_t features = info.stage_widths[3];
  const std::vector<int64_t> fc = {batch, features, kClasses};
  const std::string fc_prefix =
      arch + " fc " + shape_str({batch, features}) + " -> " + shape_str({batch, kClasses}) + " ";
  const double gemm_flops = 2.0 * batch * features * kClasses;
  cases.push_back({fc_prefix + "fwd", "linear_fwd", fc, 0, gemm_flops});
  cases.push_back({fc_prefix + "bwd_data", "linear_bwd_data", fc, 0, gemm_flops});
  cases.push_back({fc_prefix + "bwd_weight+bias", "linear_bwd_weight", fc, 0, gemm_flops});

  const std::vector<int64_t> logits = {batch, kClasses};
  const std::string logits_prefix = arch + " logits " + shape_str(logits) + " ";
  const double logits_numel = static_cast<double>(batch) * kClasses;
  // Forward reads logits and labels, writes the per-sample and mean loss; backward reads
  // logits and labels again and writes dlogits.
  cases.push_back({logits_prefix + "cross_entropy fwd+bwd (smoothing 0.1)", "cross_entropy", logits,
                   kF32 * (3 * logits_numel + 3 * batch + 1), 0});
  cases.push_back(
      {logits_prefix + "top1+top5 correct", "topk", logits, kF32 * (logits_numel + batch + 2), 0});

  // One step reads params, grads and the momentum buffer, and writes params and the buffer.
  const int64_t parameters = info.parameters;
  cases.push_back({arch + " sgd step " + shape_str({parameters}) + " (momentum 0.9, wd 1e-4)",
                   "sgd",
                   {parameters},
                   5 * kF32 * parameters,
                   0});
  return cases;
}

std::string torch_request_line(const OpCase& c) {
  std::string line = c.name + "\t" + c.op;
  for (int64_t d : c.dims) {
    line += '\t';  // appended apart: g++ 12 warns falsely (-Wrestrict) on "\t" + string
    line += std::to_string(d);
  }
  return line;
}

}  // namespace engine::bench
