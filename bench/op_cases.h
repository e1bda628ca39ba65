// The non-convolution ops of a ResNet training step as benchmark cases: which op runs on
// which shape of the chosen network. This list is the one place that decides it, so our rows
// and the PyTorch baseline's request (tools/bench_torch_ops.py) always name the same cases.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace engine::bench {

struct OpCase {
  std::string name;  // the row's case text, e.g. "resnet18 layer1 [8, 56, 56, 64] relu_backward"
  std::string op;    // the op name tools/bench_torch_ops.py knows
  // The shape, in the order bench_torch_ops.py reads it: activation ops n h w c (NHWC here);
  // linear_*: rows in out; cross_entropy and topk: n classes; sgd: numel.
  std::vector<int64_t> dims;
  double bytes = 0;  // memory-bound ops: the bytes one call must move at the least (f32)
  double flops = 0;  // the fc layer's GEMMs: 2 * rows * in * out

  bool is_gemm() const { return flops > 0; }
};

// resnet18 or resnet50: BatchNorm train fwd/bwd, ReLU fwd/bwd and add+ReLU on the stem and
// each stage's output; max-pool fwd/bwd on the stem output; global average pool fwd/bwd on
// the last activation; the fc layer's three GEMMs; softmax cross-entropy and top-1/5 on the
// logits; the SGD step over all parameters. image_size sets the activations' sizes (224:
// 112, 56, 28, 14, 7).
std::vector<OpCase> resnet_op_cases(const std::string& arch, int64_t batch,
                                    int64_t image_size = 224);

// The case as a tab-separated stdin line of tools/bench_torch_ops.py: name op dims...
std::string torch_request_line(const OpCase& c);

}  // namespace engine::bench
