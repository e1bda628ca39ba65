#include "train/trainer_model.h"

#include <algorithm>

#include "nn/adamw.h"
#include "nn/lars.h"
#include "nn/sgd.h"
#include "nn/sync_batchnorm.h"

namespace engine::train {

namespace {

nn::LrSchedule make_schedule(const TrainOptions& o, int64_t steps_per_epoch) {
  nn::LrSchedule schedule;
  schedule.steps_per_epoch = steps_per_epoch;
  schedule.warmup = {o.warmup_epochs, o.warmup_start_factor};
  const int64_t main_epochs = std::max<int64_t>(1, o.epochs - o.warmup_epochs);
  switch (o.lr_schedule) {
    case ScheduleName::constant:
      schedule.kind = nn::ConstantLr{};
      break;
    case ScheduleName::step:
      schedule.kind = nn::StepLr{o.lr_step_size, o.lr_gamma};
      break;
    case ScheduleName::cosine:
      schedule.kind = nn::CosineLr{main_epochs, 0};
      break;
    case ScheduleName::onecycle:
      schedule.kind = nn::OneCycleLr{.max_lr = o.lr, .total_steps = o.epochs * steps_per_epoch};
      break;
    case ScheduleName::poly:
      // Its warmup is its own, per step (MLPerf's), in place of LinearLR's per epoch.
      schedule.warmup = {};
      schedule.kind = nn::PolyLr{.end_lr = o.min_lr,
                                 .warmup_steps = o.warmup_epochs * steps_per_epoch,
                                 .total_steps = o.epochs * steps_per_epoch};
      break;
  }
  nn::validate_lr_schedule(schedule);
  return schedule;
}

// --opt and its flags; the defaults are today's SGD, bit for bit.
std::unique_ptr<nn::Optimizer> make_optimizer(const TrainOptions& o, nn::ParameterSet& params,
                                              Stream& stream) {
  switch (o.opt) {
    case OptimizerName::adamw:
      return std::make_unique<nn::AdamW>(
          params,
          nn::AdamWConfig{.lr = static_cast<float>(o.lr),
                          .beta1 = static_cast<float>(o.opt_betas.value_or(kAdamBetas)[0]),
                          .beta2 = static_cast<float>(o.opt_betas.value_or(kAdamBetas)[1]),
                          .eps = static_cast<float>(o.opt_eps.value_or(kAdamEps)),
                          .weight_decay = static_cast<float>(o.weight_decay),
                          .decay_norm_and_bias = o.norm_weight_decay},
          stream);
    case OptimizerName::lars:
      return std::make_unique<nn::Lars>(
          params,
          nn::LarsConfig{.lr = static_cast<float>(o.lr),
                         .momentum = static_cast<float>(o.momentum),
                         .weight_decay = static_cast<float>(o.weight_decay),
                         .eta = static_cast<float>(o.lars_eta.value_or(kLarsEta)),
                         .epsilon = static_cast<float>(o.opt_eps.value_or(0)),
                         .exclude_norm_and_bias = !o.lars_adapt_all},
          stream);
    case OptimizerName::sgd:
      break;
  }
  nn::SgdConfig sgd_config;
  sgd_config.lr = static_cast<float>(o.lr);
  sgd_config.momentum = static_cast<float>(o.momentum);
  sgd_config.weight_decay = static_cast<float>(o.weight_decay);
  sgd_config.nesterov = o.nesterov;
  sgd_config.decay_norm_and_bias = o.norm_weight_decay;
  return std::make_unique<nn::Sgd>(params, sgd_config, stream);
}

}  // namespace

TrainerModel::TrainerModel(const TrainOptions& options, int64_t classes, Device device)
    : options_(options),
      classes_(classes),
      device_(device),
      model_(options.arch, {.num_classes = classes,
                            .zero_init_residual = options.zero_init_residual,
                            .seed = options.seed}),
      loss_(static_cast<float>(options.label_smoothing)) {}

void TrainerModel::build(Communicator& grad_comm, Stream& stream) {
  const TrainOptions& o = options_;
  model_.allocate(device_, stream);
  if (o.sync_bn) nn::convert_sync_batchnorm(model_.layers(), grad_comm);
  optimizer_ = make_optimizer(o, model_.params(), stream);
  // On the CPU, SGD writes the bf16 compute weights in its pass over the params, and the next
  // forward casts nothing (not on CUDA, where a captured step would have to keep the copy's
  // mark as its replays write it).
  if (auto* sgd = dynamic_cast<nn::Sgd*>(optimizer_.get()); sgd != nullptr && device_.is_cpu()) {
    sgd->write_compute_copy(&model_.weight_copy());
  }
  if (o.clip_grad > 0) {
    clip_ =
        std::make_unique<nn::GradClip>(model_.params(), static_cast<float>(o.clip_grad), stream);
  }
  ddp_ = std::make_unique<nn::DataParallel>(
      model_.params(), grad_comm,
      nn::DataParallelOptions{.bucket_cap_mb = o.bucket_cap_mb, .overlap = true});
  decide_cuda_graph(grad_comm);
}

void TrainerModel::decide_cuda_graph(const Communicator& grad_comm) {
  const bool wanted = cli::cuda_graph_enabled(options_.cuda_graph, device_);
  std::string why_not = options_.cuda_graph == cli::CudaGraphMode::off ? "--cuda-graph off" : "";
  if (why_not.empty() && !ddp_->capturable()) {
    why_not = "the gradients' communicator " + grad_comm.name() +
              " cannot be captured (nccl and ring-nccl can)";
  }
  if (why_not.empty() && !options_.trace.empty()) why_not = "--trace times each layer";
  if (wanted && why_not.empty()) {
    graphs_ = std::make_unique<MicroStepGraphs>(model_, loss_, *ddp_);
    graph_status_ = "micro-steps replayed as CUDA graphs, the optimizer step in the last";
  } else if (options_.cuda_graph == cli::CudaGraphMode::on) {
    fail("resnet_train: --cuda-graph on: " + why_not);
  } else if (device_.is_cuda()) {
    graph_status_ = "no CUDA graph (" + why_not + ")";
  }
}

void TrainerModel::set_schedule(int64_t steps_per_epoch) {
  schedule_ = make_schedule(options_, steps_per_epoch);
}

bool TrainerModel::start_ema(Stream& stream) {
  if (options_.ema_decay < 0 || options_.evaluate) return false;
  ema_ = std::make_unique<WeightEma>(model_.params(), options_.ema_decay, stream);
  return true;
}

std::vector<std::string> TrainerModel::choose_conv_plans(
    int64_t image_size, bool rank0, const std::function<void(std::vector<float>&)>& sum_over_ranks,
    Stream& stream) {
  if (device_.is_cpu()) return {};
  const std::vector<ConvProblem> problems =
      model_.conv_problems({options_.batch_size, image_size, image_size, 3},
                           options_.precision.activations, stream.fp32_math());
  std::vector<std::string> lines;
  ConvPlans chosen;
  if (rank0) {
    // The other ranks wait in the sum meanwhile: the timing stays well inside --comm-timeout.
    nn::ConvTuning tuning = options_.conv_tuning;
    tuning.seconds = std::min(tuning.seconds, options_.comm_timeout_s / 2);
    nn::ConvPlanChoice choice = nn::choose_conv_plans(tuning, problems, stream);
    for (const std::string& warning : choice.warnings)
      lines.push_back("warning: " + warning);
    if (!choice.summary.empty()) lines.push_back(choice.summary);
    chosen = std::move(choice.plans);
  }
  std::vector<float> values = nn::encode_conv_plans(chosen, problems);
  sum_over_ranks(values);
  conv_plans_ = nn::decode_conv_plans(values, problems);
  return lines;
}

void TrainerModel::ensure_setup(const Tensor& images, Stream& stream) {
  const Shape shape = {images.size(0), images.size(1), images.size(2), 3};
  const int64_t batch = shape[0];
  if (shape == model_shape_) return;
  model_.set_fusion(options_.fusion);
  if (graphs_) graphs_->clear();  // their buffers are about to be reallocated
  model_.setup(shape, options_.precision.activations, stream, &conv_plans_);
  loss_.setup(batch, classes_, options_.precision.activations, device_);
  model_shape_ = shape;
}

void TrainerModel::backward(nn::Pass& pass, bool sync, float loss_scale, Stream& stream) {
  ddp_->begin_backward(pass, sync);
  model_.backward(loss_.backward(stream, loss_scale), pass);
  ddp_->end_backward(stream);
}

double TrainerModel::optimizer_step(Stream& stream) {
  nn::require_gradients(model_.params(), optimizer_->name());  // before anything changes
  const double lr = stage_optimizer_step(stream);
  launch_optimizer_step(stream);
  ++step_;
  return lr;
}

double TrainerModel::stage_optimizer_step(Stream& stream) {
  const double lr = nn::learning_rate(schedule_, options_.lr, step_);
  optimizer_->stage_step(static_cast<float>(lr), stream);
  return lr;
}

void TrainerModel::launch_optimizer_step(Stream& stream) {
  if (clip_) clip_->clip(stream);
  optimizer_->launch_step(stream);
  if (ema_) ema_->update(stream);
}

MicroStepGraphs::Outputs TrainerModel::graphed_micro_step(const MicroStepGraphs::Batch& batch,
                                                          bool first, bool sync, float loss_scale,
                                                          Stream& stream) {
  if (!sync) return graphs_->run(batch, first, sync, loss_scale, stream);
  last_lr_ = stage_optimizer_step(stream);
  const MicroStepGraphs::Tail tail = [this](Stream& s) { launch_optimizer_step(s); };
  // SGD's first step starts its momentum, unlike the steps after it: launched on its own.
  const bool replayable = optimizer_->step_replayable();
  const MicroStepGraphs::Outputs out =
      graphs_->run(batch, first, sync, loss_scale, stream, replayable ? &tail : nullptr);
  if (!replayable) launch_optimizer_step(stream);
  ++step_;
  return out;
}

}  // namespace engine::train
