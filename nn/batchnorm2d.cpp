#include "nn/batchnorm2d.h"

#include "kernels/ops/batchnorm.h"
#include "kernels/ops/copy.h"
#include "nn/gradient_arena.h"
#include "nn/shape_checks.h"

namespace engine::nn {

BatchNorm2d::BatchNorm2d(ParameterSet& params, std::string name, const BatchNormOptions& options)
    : Layer(std::move(name)), params_(params), options_(options) {
  if (options.channels < 1 || !(options.eps > 0.f) ||
      !(options.momentum >= 0.f && options.momentum <= 1.f)) {
    fail_in(*this, "channels must be >= 1, eps > 0 and momentum in [0, 1]");
  }
  const Shape per_channel = {options.channels};
  weight_id_ = params.add_parameter(child_name(this->name(), "weight"), per_channel,
                                    ParameterKind::norm_weight);
  bias_id_ =
      params.add_parameter(child_name(this->name(), "bias"), per_channel, ParameterKind::norm_bias);
  mean_id_ = params.add_buffer(child_name(this->name(), "running_mean"), per_channel);
  var_id_ = params.add_buffer(child_name(this->name(), "running_var"), per_channel);
  batches_id_ = params.add_counter(child_name(this->name(), "num_batches_tracked"));
}

Tensor BatchNorm2d::running_mean() const {
  return params_.buffer(mean_id_);
}
Tensor BatchNorm2d::running_var() const {
  return params_.buffer(var_id_);
}
int64_t BatchNorm2d::batches_tracked() const {
  return params_.counter(batches_id_);
}

void BatchNorm2d::reset_state(Stream& stream) {
  Tensor var = running_var(), weight = params_.value(weight_id_);
  fill(var, 1.f, stream);
  fill(weight, 1.f, stream);
}

Shape BatchNorm2d::setup(const Shape& input, const SetupContext& context) {
  require_nhwc(*this, input, options_.channels);
  input_shape_ = input;
  setup_gradient_buffer(dx_, context, input, context.input_grad);
  setup_gradient_buffer(relu_grad_, context, input, keeps_relu_grad(context));
  if (!context.allocate) return input;
  const Device device = context.device;
  const int64_t c = options_.channels;
  weight_ = params_.value(weight_id_);
  bias_ = params_.value(bias_id_);
  weight_grad_ = params_.grad(weight_id_);
  bias_grad_ = params_.grad(bias_id_);
  running_mean_ = running_mean();
  running_var_ = running_var();
  y_ = Tensor::empty(input, context.dtype, device);
  stats_ = Tensor::empty({batchnorm_stats_numel(c)}, DType::f32, device);
  sums_ = Tensor::empty({batchnorm_stats_numel(c)}, DType::f64, device);
  batch_stats_ = Tensor::empty({batchnorm_stats_numel(c)}, DType::f32, device);
  grad_sums_ = Tensor::empty({2 * c}, DType::f32, device);
  workspace_ = Tensor::zeros({batchnorm_workspace_numel(y_)}, DType::f32, device, context.stream);
  return input;
}

bool BatchNorm2d::keeps_relu_grad(const SetupContext& context) const {
  const bool next_conv_reduces =
      read_by_next_block_ &&
      batchnorm_fusion_crosses_blocks(context.fusion, context.device.is_cpu());
  return options_.relu && options_.residual && !next_conv_reduces;
}

Conv2dForwardFusion BatchNorm2d::stats_fusion() {
  stats_given_ = true;
  Conv2dForwardFusion fusion{.stats = stats_, .batchnorm = {.sums = sums_}};
  if (!sync_) {
    fusion.batchnorm.batch_stats = batch_stats_;
    fusion.batchnorm.running_mean = running_mean_;
    fusion.batchnorm.running_var = running_var_;
    fusion.batchnorm.constants = {.momentum = options_.momentum, .eps = options_.eps};
    fusion.batchnorm.conv_input = next_conv_input();
  }
  return fusion;
}

BatchNormConvInput BatchNorm2d::next_conv_input() const {
  if (!defer_apply_) return {};
  return {.weight = weight_, .bias = bias_, .scale = input_scale_, .shift = input_shift_};
}

void BatchNorm2d::defer_apply(bool on, const SetupContext& context) {
  if (on && !options_.relu) fail_in(*this, "defer_apply needs the ReLU");
  defer_apply_ = on;
  input_scale_ = input_shift_ = Tensor();
  if (!context.allocate) return;
  if (!on) {
    // Back to writing the output (and the ReLU's gradient for a residual's branch).
    if (!y_.defined()) y_ = Tensor::empty(input_shape_, context.dtype, context.device);
    if (!relu_grad_.defined() && options_.residual)
      relu_grad_ = Tensor::empty(input_shape_, context.dtype, context.device);
    return;
  }
  input_scale_ = Tensor::empty({options_.channels}, DType::f32, context.device);
  input_shift_ = Tensor::empty({options_.channels}, DType::f32, context.device);
  // Never written now (every forward defers, a forward with a residual is refused): one
  // activation less held through the step.
  y_ = relu_grad_ = Tensor();
}

void BatchNorm2d::reduce_in_next_conv(bool on, const SetupContext& context) {
  if (on && !options_.relu) fail_in(*this, "reduce_in_next_conv needs the ReLU");
  reduce_in_next_conv_ = on;
  if (!context.allocate) return;
  if (on) {
    relu_grad_ = Tensor();
  } else if (!relu_grad_.defined() && !defer_apply_ && options_.residual) {
    relu_grad_ = Tensor::empty(input_shape_, context.dtype, context.device);
  }
}

Conv2dBackwardDataFusion BatchNorm2d::backward_fusion(const Pass& pass) {
  if (!trained_forward_ || !(defer_apply_ || (reduce_in_next_conv_ && residual_forward_)))
    fail_in(*this,
            "backward_fusion needs a deferred training forward, or one with a residual "
            "whose gradient the next convolution reduces (reduce_in_next_conv)");
  reduce_given_ = true;
  Conv2dBackwardDataFusion fusion{.x = x_,
                                  .batch_stats = batch_stats_,
                                  .grad_sums = grad_sums_,
                                  .bias_grad = bias_grad_,
                                  .weight_grad = weight_grad_,
                                  .write = pass.grad_write()};
  if (defer_apply_) {
    fusion.input = deferred_input();
  } else {
    fusion.relu_output = y_;
  }
  return fusion;
}

const Tensor& BatchNorm2d::forward(const Tensor& x, Pass& pass) {
  return run_forward(x, Tensor(), pass);
}

const Tensor& BatchNorm2d::forward(const Tensor& x, const Tensor& residual, Pass& pass) {
  return run_forward(x, residual, pass);
}

void BatchNorm2d::fail_single_value(double count) const {
  // PyTorch's wording, with its NCHW size; under SyncBN also the global count.
  const Shape& s = input_shape_;
  std::string what = "Expected more than 1 value per channel when training, got input size [" +
                     std::to_string(s[0]) + ", " + std::to_string(s[3]) + ", " +
                     std::to_string(s[1]) + ", " + std::to_string(s[2]) + "] (N, C, H, W)";
  if (sync_) {
    what += " on rank " + std::to_string(sync_->rank()) + " of " + std::to_string(sync_->size()) +
            ", " + std::to_string(static_cast<int64_t>(count)) +
            " value(s) per channel over all ranks";
  }
  fail_in(*this, what);
}

const Tensor& BatchNorm2d::run_forward(const Tensor& x, const Tensor& residual, Pass& pass) {
  const BatchNormEpilogue epilogue{residual, options_.relu};
  if (defer_apply_ && residual.defined())
    fail_in(*this, "takes no residual while the next convolution applies it (defer_apply)");
  if (residual.defined() && !options_.residual)
    fail_in(*this, "takes a residual only when made with BatchNormOptions::residual");
  trained_forward_ = pass.training;
  residual_forward_ = residual.defined();
  if (!pass.training) {
    if (defer_apply_) {
      // The next convolution reads x through the running statistics' transform.
      x_ = x;
      conv_input_from_running_stats({.running_mean = running_mean_,
                                     .running_var = running_var_,
                                     .weight = weight_,
                                     .bias = bias_,
                                     .scale = input_scale_,
                                     .shift = input_shift_,
                                     .eps = options_.eps},
                                    pass.stream);
      return x_;
    }
    batchnorm_eval_forward({.x = x,
                            .running_mean = running_mean_,
                            .running_var = running_var_,
                            .weight = weight_,
                            .bias = bias_,
                            .y = y_,
                            .eps = options_.eps},
                           pass.stream, epilogue);
    return y_;
  }
  const Shape& s = input_shape_;
  const int64_t local_count = s[0] * s[1] * s[2];
  if (!sync_ && local_count <= 1) fail_single_value(static_cast<double>(local_count));
  x_ = x;
  // The same fp64 path with or without ranks, so SyncBN on one rank is BatchNorm2d bit for bit.
  // The statistics' launch also writes the sums and, without ranks to all-reduce them with,
  // finalizes them: on CUDA 1 launch where the separate phases took 4.
  const BatchNormConstants constants{.momentum = options_.momentum, .eps = options_.eps};
  BatchNormStatsFusion fused{.sums = sums_};
  if (!sync_) {
    fused.batch_stats = batch_stats_;
    fused.running_mean = running_mean_;
    fused.running_var = running_var_;
    fused.constants = constants;
    fused.conv_input = next_conv_input();
  }
  // The convolution before may have written all of it already (stats_fusion).
  if (!stats_given_)
    batchnorm_stats({.x = x, .stats = stats_, .workspace = workspace_}, pass.stream, fused);
  stats_given_ = false;
  if (sync_) {
    sync_sum_(sums_, pass.stream);
    // Only a rank with a single row can see a global count of 1; it alone reads the count
    // back (a device read waits for the stream), the others know it exceeds 1.
    if (local_count <= 1) {
      const double count = sums_.view(2 * options_.channels, {1}).to_doubles(pass.stream)[0];
      if (count <= 1.0) fail_single_value(count);
    }
    batchnorm_finalize_sums({.sums = sums_,
                             .running_mean = running_mean_,
                             .running_var = running_var_,
                             .batch_stats = batch_stats_,
                             .constants = constants,
                             .conv_input = next_conv_input()},
                            pass.stream);
  }
  ++params_.counter(batches_id_);
  // The next convolution reads x as act(x * scale + shift), whose coefficients the finalize
  // wrote (next_conv_input): no launch here, where the normalize read x and wrote y.
  if (defer_apply_) return x_;
  batchnorm_normalize(
      {.x = x, .batch_stats = batch_stats_, .weight = weight_, .bias = bias_, .y = y_}, pass.stream,
      epilogue);
  return y_;
}

const Tensor& BatchNorm2d::backward(const Tensor& dy, Pass& pass) {
  if (!trained_forward_) {
    fail_in(*this, "backward after an evaluation forward (it uses running statistics)");
  }
  // ReLU's backward is folded into both passes: they take dy where the ReLU's output y > 0,
  // reading y, or after a deferred forward (y never written) recomputing it from x as the
  // next convolution did. After a forward with a residual, the reduce also writes that
  // gradient to relu_grad_ (the residual's branch continues with it), and the element-wise
  // pass reads it as its dy.
  BatchNormReluGate relu;
  if (defer_apply_) {
    relu = {.scale = input_scale_, .shift = input_shift_};
  } else if (options_.relu) {
    relu = {.output = y_};
  }
  const bool feeds_residual = options_.relu && residual_forward_;
  // grad_sums = (sum dy, sum dy * xhat) over this rank's rows, which the reduce also writes to
  // the bias and the weight gradient. Under SyncBN too (as PyTorch): the data-parallel average
  // of the ranks' sums is the global batch's gradient, so the reduced sums must not go there.
  // The convolution after may have done all of it already, dy then gated (backward_fusion):
  // it is then also the residual's gradient.
  const bool reduced = reduce_given_;
  reduce_given_ = false;
  if (feeds_residual && !reduced && !relu_grad_.defined())
    fail_in(*this,
            "backward without the reduction that the next convolution was to do "
            "(reduce_in_next_conv)");
  pre_activation_grad_ = feeds_residual  ? (reduced ? dy : relu_grad_)
                         : options_.relu ? Tensor()
                                         : dy;
  if (reduced) {
    relu = {};
  } else {
    batchnorm_backward_reduce({.dy = dy,
                               .x = x_,
                               .batch_stats = batch_stats_,
                               .grad_sums = grad_sums_,
                               .workspace = workspace_},
                              pass.stream,
                              {.relu = relu,
                               .relu_grad = feeds_residual ? relu_grad_ : Tensor(),
                               .bias_grad = bias_grad_,
                               .weight_grad = weight_grad_,
                               .write = pass.grad_write()});
  }
  // dx needs the sums over the global batch. Reduced before the gradients are reported, so
  // that on a communicator shared with the gradient buckets these 8C bytes do not queue behind
  // the bucket that this layer's gradients may complete.
  if (sync_ && dx_.defined()) sync_sum_(grad_sums_, pass.stream);
  pass.grad_ready(bias_id_);
  pass.grad_ready(weight_id_);
  if (dx_.defined()) {
    if (feeds_residual) {
      batchnorm_backward_elementwise({.dy = pre_activation_grad_,
                                      .x = x_,
                                      .batch_stats = batch_stats_,
                                      .weight = weight_,
                                      .grad_sums = grad_sums_,
                                      .dx = dx_},
                                     pass.stream);
    } else {
      batchnorm_backward_elementwise({.dy = dy,
                                      .x = x_,
                                      .batch_stats = batch_stats_,
                                      .weight = weight_,
                                      .grad_sums = grad_sums_,
                                      .dx = dx_},
                                     pass.stream, relu);
    }
  }
  return dx_;
}

}  // namespace engine::nn
