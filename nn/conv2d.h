// torch.nn.Conv2d (groups 1, dilation 1) on NHWC activations with a KRSC filter.
#pragma once

#include "kernels/conv_algo.h"
#include "kernels/conv_shape.h"
#include "nn/batchnorm2d.h"
#include "nn/compute_weight.h"
#include "nn/layer.h"

namespace engine::nn {

struct Conv2dOptions {
  int64_t in_channels = 1;
  int64_t out_channels = 1;
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t padding = 0;
  bool bias = false;  // torchvision's ResNets have none
};

class Conv2d final : public Layer {
 public:
  Conv2d(ParameterSet& params, std::string name, const Conv2dOptions& options);
  std::string_view type() const override { return "Conv2d"; }

  Shape setup(const Shape& input, const SetupContext& context) override;
  const Tensor& forward(const Tensor& x, Pass& pass) override;
  const Tensor& backward(const Tensor& dy, Pass& pass) override;
  // backward with `add` (like the input) added to the input gradient, as an add op after it
  // would (a residual block's identity branch): in the input gradient's epilogue where it can.
  const Tensor& backward_adding(const Tensor& dy, const Tensor& add, Pass& pass);

  const Conv2dOptions& options() const { return options_; }
  // The geometry of the last setup (batch included).
  const Conv2dShape& shape() const { return shape_; }
  // Whether the last setup asked for the input gradient (not for the network's first layer).
  bool input_grad() const { return input_grad_; }
  // The passes' problems for the last setup's shape in `dtype` and `math`, fused as the last
  // wiring left them (a setup that allocates nothing decides the wiring too).
  std::vector<ConvProblem> problems(DType dtype, Fp32Math math) const;
  ParameterId weight_id() const { return weight_id_; }
  // Training forwards then also compute `bn`'s statistics (the BatchNorm that takes this
  // layer's output; kernels/ops/conv.h's Conv2dForwardFusion), which it then does not compute
  // itself. Only on CUDA (on the CPU the pass is the same either way) and with
  // context.fusion stats or full; after setup, with its context. null: not (again).
  void feed_batchnorm_stats(BatchNorm2d* bn, const SetupContext& context);
  // Where this layer alone reads `bn`'s output (bn with a ReLU and no residual, inside a
  // residual block): on CUDA with context.fusion apply or full, forwards then read bn's input
  // through bn's normalize and ReLU (BatchNorm2d::defer_apply: bn never writes its output), and
  // the filter gradient reads it the same way; with full, the input gradient also does bn's
  // backward reduction (BatchNorm2d::backward_fusion). Only with fp32 filter gradients (master
  // weights). After setup, with its context; null: not (again).
  void read_input_through(BatchNorm2d* bn, const SetupContext& context);
  // Where this layer reads `bn`'s output as it is and the gradient at that output is this
  // layer's input gradient plus the `add` of backward_adding (bn: the last BatchNorm of the
  // residual block before, with its ReLU; this: the next block's first convolution, `add` its
  // identity branch's gradient): on CUDA with context.fusion full, the input gradient then
  // adds, gates itself by bn's stored output and does bn's backward reduction
  // (BatchNorm2d::reduce_in_next_conv). Not with read_input_through. After setup, with its
  // context; null: not (again).
  void gate_input_grad_by(BatchNorm2d* bn, const SetupContext& context);

 private:
  // What `pass` computes besides the convolution, as wired now.
  ConvFusion fusion_of(ConvPass pass) const;
  // The input gradient's fusion as read_input_through and gate_input_grad_by left it: its
  // algorithm and its workspace.
  void wire_data_grad(const SetupContext& context);
  // Each pass's algorithm (the tuner's for the pass as fused now, else the heuristic's) and
  // the shared scratch they need.
  void choose_algos(const SetupContext& context);

  ParameterSet& params_;
  Conv2dOptions options_;
  ParameterId weight_id_ = -1, bias_id_ = -1;
  Conv2dShape shape_;
  bool input_grad_ = true;
  ConvAlgo forward_algo_, backward_data_algo_, backward_filter_algo_;
  ComputeWeight weight_;  // the fp32 master, or its bf16 copy for bf16 activations
  Tensor weight_grad_, bias_, bias_grad_;
  Tensor x_, y_, dx_;
  LayerScratch workspace_;  // for all three passes, which run one after another
  // Their split-K counters (zeroed, left zero by each pass, so the three share them): each
  // split pass sums its partials in its own launch. This layer's own: a shared scratch is not
  // zeroed.
  Tensor split_counters_;
  BatchNorm2d* stats_for_ = nullptr;
  BatchNorm2d* input_from_ = nullptr;
  BatchNorm2d* gate_from_ = nullptr;  // gate_input_grad_by's
  // The BatchNorm whose backward reduction the input gradient does (input_from_ or
  // gate_from_; BatchNormFusion::block, full), or null.
  BatchNorm2d* data_grad_reduces_ = nullptr;
  ConvInputAffine input_;       // how the last forward read x (none: as it is)
  Tensor data_grad_workspace_;  // the input gradient's with data_grad_reduces_'s reduction
  Tensor stats_workspace_;      // the forward's with statistics: zeroed, this layer's own
};

}  // namespace engine::nn
