// torch.nn.BatchNorm2d on NHWC activations, with the fusions a ResNet needs: an optional
// ReLU after it and an optional residual added before that ReLU (y = relu(bn(x) + residual)).
//
// Training uses the batch statistics and updates the running ones as PyTorch does
// (momentum 0.1, unbiased variance); evaluation uses the running statistics. Parameters:
// "<name>.weight", "<name>.bias"; buffers "<name>.running_mean", "<name>.running_var"
// (running_var starts at 1) and the counter "<name>.num_batches_tracked".
//
// With a sync group (set_sync_group, or convert_sync_batchnorm in nn/sync_batchnorm.h) the
// layer is torch.nn.SyncBatchNorm: training statistics are those of the global batch, every
// rank of the communicator together (ONE all-reduce of 2C+1 fp64 sums in forward, one of 2C
// f32 sums in backward). The result equals BatchNorm2d on the concatenated batch; the weight
// and bias gradients stay this rank's own sums, as in PyTorch, so that the data-parallel
// average makes them the global batch's. Evaluation communicates nothing. A sync group is an
// attachment rather than a separate class so that a converted model keeps its layers, their
// parameter ids and the flat buffers' layout, and the residual blocks' fused
// forward(x, residual) unchanged.
#pragma once

#include <functional>

#include "collectives/communicator.h"
#include "kernels/ops/conv.h"
#include "nn/layer.h"

namespace engine::nn {

struct BatchNormOptions {
  int64_t channels = 1;
  float eps = 1e-5f;
  float momentum = 0.1f;
  bool relu = false;  // max(., 0) after the (optional) residual add
  // Forwards add a residual before the ReLU (forward(x, residual)): a residual block's last
  // BatchNorm. Only such a layer holds the ReLU's gradient, which the identity's branch reads.
  bool residual = false;
};

class BatchNorm2d final : public Layer {
 public:
  BatchNorm2d(ParameterSet& params, std::string name, const BatchNormOptions& options);
  std::string_view type() const override { return sync_ ? "SyncBatchNorm" : "BatchNorm2d"; }

  // SyncBN over every rank of comm (nullptr: this process's batch only, plain BatchNorm2d).
  // Every rank must train the same layers in the same order, since each training forward and
  // backward is a collective. The communicator must outlive the layer's use and support the
  // activations' device. Give SyncBN its own communicator where the gradient buckets use one
  // asynchronously: a blocking all-reduce otherwise queues behind the buckets in flight.
  // Defined in nn/sync_batchnorm.cpp, built only where engine_collectives is.
  void set_sync_group(Communicator* comm);
  Communicator* sync_group() const { return sync_; }

  Shape setup(const Shape& input, const SetupContext& context) override;
  const Tensor& forward(const Tensor& x, Pass& pass) override;
  // y = act(bn(x) + residual); residual has x's shape.
  const Tensor& forward(const Tensor& x, const Tensor& residual, Pass& pass);
  const Tensor& backward(const Tensor& dy, Pass& pass) override;
  // After backward: the gradient at the residual input (dy through the ReLU), which the
  // residual's branch continues with. It is the layer's tensor (or dy itself without ReLU);
  // undefined after a forward with ReLU and no residual (the backward then never writes it).
  const Tensor& residual_grad() const { return pre_activation_grad_; }

  const BatchNormOptions& options() const { return options_; }
  // The NHWC input shape of the last setup (a shapes-only one too): bench_syncbn's layer table.
  const Shape& input_shape() const { return input_shape_; }
  ParameterId weight_id() const { return weight_id_; }
  ParameterId bias_id() const { return bias_id_; }
  // Once allocated: the running statistics and PyTorch's num_batches_tracked.
  Tensor running_mean() const;
  Tensor running_var() const;
  int64_t batches_tracked() const;
  // Called by the model right after allocate(): running_var = 1, weight = 1 (bias = 0).
  void reset_state(Stream& stream);
  // For the convolution whose output this layer takes (Conv2d::feed_batchnorm_stats), in a
  // training forward: what it is to write besides its output (this layer's statistics, their
  // sums and, without SyncBN, the finalize), so that this layer's next training forward skips
  // its statistics pass. Asked at each forward, so that set_sync_group after setup holds.
  Conv2dForwardFusion stats_fusion();
  // For the convolution that alone reads this layer's output (Conv2d::read_input_through):
  // forwards then leave the normalize and the ReLU to its operand loads, so that the output is
  // never written (nor held: on, the layer drops it): they compute the coefficients
  // (deferred_input(): from the batch's statistics in training, written by the statistics'
  // finalize; the running ones in evaluation) and return x itself; backward recomputes the ReLU's
  // mask from x. Needs the ReLU; a forward with a residual is then refused. After setup, with its
  // context.
  void defer_apply(bool on, const SetupContext& context);
  // For the convolution that alone takes the gradient at this layer's output where forwards
  // add a residual (the next residual block's first convolution, whose input gradient the
  // identity branch's joins: Conv2d::gate_input_grad_by): backward_fusion then gives it this
  // layer's output, stored, to gate by. The ReLU's gradient, which that convolution then
  // writes, is not held here (on: dropped). Needs the ReLU. After setup, with its context.
  void reduce_in_next_conv(bool on, const SetupContext& context);
  // Before setup: whether a residual block's first convolution reads this layer's output (the
  // model's every block's last BatchNorm but the last block's), so that where the fusion
  // crosses blocks (batchnorm_fusion_crosses_blocks) it will do reduce_in_next_conv, and setup
  // takes no buffer for the ReLU's gradient.
  void set_read_by_next_block(bool on) { read_by_next_block_ = on; }
  // Whether setup in `context` takes a buffer for the ReLU's gradient: with a residual, unless
  // the next block's convolution will write it (set_read_by_next_block).
  bool keeps_relu_grad(const SetupContext& context) const;
  // For that convolution's input gradient (of either kind), after a training forward
  // (BatchNormFusion::block, full): what it is to compute besides dx (this layer's backward
  // reduction: kernels/ops/conv.h's Conv2dBackwardDataFusion, gated by the ReLU recomputed from x
  // where forwards defer, else by the stored output), so that this layer's next backward is its
  // element-wise pass, reading that dx as its dy (and as residual_grad()).
  Conv2dBackwardDataFusion backward_fusion(const Pass& pass);
  // Whether forwards defer: their output is x, to be read through deferred_input().
  bool deferred() const { return defer_apply_; }
  ConvInputAffine deferred_input() const {
    return {.scale = input_scale_, .shift = input_shift_, .relu = true};
  }

 private:
  const Tensor& run_forward(const Tensor& x, const Tensor& residual, Pass& pass);
  // What a training forward's finalize writes besides batch_stats where forwards defer: the
  // coefficients of deferred_input(), so that no launch of their own computes them.
  BatchNormConvInput next_conv_input() const;
  // PyTorch's error for a training batch of one value per channel (count: the global count).
  [[noreturn]] void fail_single_value(double count) const;

  ParameterSet& params_;
  BatchNormOptions options_;
  ParameterId weight_id_ = -1, bias_id_ = -1;
  BufferId mean_id_ = -1, var_id_ = -1;
  CounterId batches_id_ = -1;
  Shape input_shape_;
  Tensor weight_, bias_, weight_grad_, bias_grad_, running_mean_, running_var_;
  Tensor stats_, sums_, batch_stats_, grad_sums_, workspace_;
  Communicator* sync_ = nullptr;
  // sync_->all_reduce(tensor, sum, stream), bound by set_sync_group: this file then needs no
  // collectives symbol, and engine_nn links without MPI (plain BatchNorm2d only).
  std::function<void(Tensor&, Stream&)> sync_sum_;
  Tensor x_, y_, dx_, relu_grad_, pre_activation_grad_;
  bool trained_forward_ = false;      // the last forward used batch statistics
  bool residual_forward_ = false;     // the last forward added a residual
  bool stats_given_ = false;          // stats_fusion() since the last training forward
  bool reduce_given_ = false;         // backward_fusion() since the last backward
  bool defer_apply_ = false;          // defer_apply(true)
  bool reduce_in_next_conv_ = false;  // reduce_in_next_conv(true)
  bool read_by_next_block_ = false;   // set_read_by_next_block(true)
  Tensor input_scale_, input_shift_;  // deferred_input()'s: f32[C]
};

}  // namespace engine::nn
