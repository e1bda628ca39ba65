#include "train/trainer_model.h"

#include <algorithm>

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
  }
  nn::validate_lr_schedule(schedule);
  return schedule;
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
  nn::SgdConfig sgd_config;
  sgd_config.lr = static_cast<float>(o.lr);
  sgd_config.momentum = static_cast<float>(o.momentum);
  sgd_config.weight_decay = static_cast<float>(o.weight_decay);
  sgd_config.nesterov = o.nesterov;
  sgd_config.decay_norm_and_bias = o.norm_weight_decay;
  sgd_ = std::make_unique<nn::Sgd>(model_.params(), sgd_config, stream);
  ddp_ = std::make_unique<nn::DataParallel>(
      model_.params(), grad_comm,
      nn::DataParallelOptions{.bucket_cap_mb = o.bucket_cap_mb, .overlap = true});
}

void TrainerModel::set_schedule(int64_t steps_per_epoch) {
  schedule_ = make_schedule(options_, steps_per_epoch);
}

bool TrainerModel::start_ema(Stream& stream) {
  if (options_.ema_decay < 0 || options_.evaluate) return false;
  ema_ = std::make_unique<WeightEma>(model_.params(), options_.ema_decay, stream);
  return true;
}

void TrainerModel::ensure_setup(const Tensor& images, Stream& stream) {
  const Shape shape = {images.size(0), images.size(1), images.size(2), 3};
  const int64_t batch = shape[0];
  if (shape == model_shape_) return;
  model_.setup(shape, options_.precision.activations, stream);
  loss_.setup(batch, classes_, options_.precision.activations, device_);
  model_shape_ = shape;
}

void TrainerModel::backward(nn::Pass& pass, bool sync, float loss_scale, Stream& stream) {
  ddp_->begin_backward(pass, sync);
  model_.backward(loss_.backward(stream, loss_scale), pass);
  ddp_->end_backward(stream);
}

double TrainerModel::optimizer_step(Stream& stream) {
  const double lr = nn::learning_rate(schedule_, options_.lr, step_);
  sgd_->step(static_cast<float>(lr), stream);
  if (ema_) ema_->update(stream);
  ++step_;
  return lr;
}

}  // namespace engine::train
