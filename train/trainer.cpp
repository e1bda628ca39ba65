#include "train/trainer.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <thread>

#include "collectives/comm_factory.h"
#include "data/loader.h"
#include "data/sampler.h"
#include "kernels/error.h"
#include "kernels/runtime.h"
#include "nn/checkpoint.h"
#include "nn/cross_entropy.h"
#include "nn/data_parallel.h"
#include "nn/lr_schedule.h"
#include "nn/resnet.h"
#include "nn/sgd.h"
#include "nn/sync_batchnorm.h"
#include "train/batch_dump.h"
#include "train/json_line.h"
#include "train/metric_rows.h"
#include "train/progress.h"
#include "train/stop_signal.h"
#include "train/weight_ema.h"

namespace engine::train {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The gradient communicator and why, for the banner: --comm, or for auto our ring over NCCL
// on GPUs, else the host communicator that suits how the ranks are spread over hosts.
CommChoice gradient_comm(const TrainOptions& options, const MpiSession& session, Device device) {
  if (options.comm != "auto") return {options.comm, "--comm"};
  if (!device.is_cpu()) return {"ring-nccl", "auto: CUDA tensors"};
  CommChoice choice = choose_host_communicator(session.world());
  choice.why = "auto: " + choice.why;
  return choice;
}

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

// Batches whose figures wait on the device at most (a trainer drains them at every print
// point and whenever they fill up).
constexpr int64_t kMetricRows = 64;

// A training step whose loss and counts are still on the device (metric_rows): what the host
// knows of it.
struct PendingStep {
  int64_t index = 0, step = 0;  // within the epoch; the optimizer step it made
  int64_t samples = 0;          // this rank's batch (all its --accum-steps micro-batches)
  double lr = 0;
};

int default_threads(const MpiSession& session) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, session.world().local_size));
}

}  // namespace

// An epoch's training figures so far, summed over ranks.
struct EpochTotals {
  StepTotals steps;
  double comm_busy = 0, comm_exposed = 0;
};

struct Trainer::State {
  State(const TrainOptions& o, MpiSession& s, Datasets d)
      : options(o),
        session(s),
        datasets(std::move(d)),
        device(s.device(o.device)),
        stream(device),
        model(o.arch, {.num_classes = static_cast<int64_t>(datasets.classes().size()),
                       .zero_init_residual = o.zero_init_residual,
                       .seed = o.seed}),
        loss(static_cast<float>(o.label_smoothing)),
        progress(s.rank() == 0, o.print_freq) {
    // The CPU has no TF32 math: running exact fp32 under the name tf32 would mislead.
    if (o.precision.fp32_math == Fp32Math::tf32 && !device.is_cuda()) {
      throw Error("--precision tf32 needs a CUDA device (the CPU computes fp32 exactly); rank " +
                  std::to_string(s.rank()) + " runs on " + device.str());
    }
    stream.set_fp32_math(o.precision.fp32_math);
  }

  const TrainOptions& options;
  MpiSession& session;
  Datasets datasets;
  Device device;
  Stream stream;
  nn::ResNet model;
  nn::CrossEntropyLoss loss;
  Progress progress;

  std::unique_ptr<Communicator> grad_comm, host_comm_owned;
  Communicator* host_comm = nullptr;
  CommChoice grad_comm_choice;
  std::unique_ptr<nn::DataParallel> ddp;
  std::unique_ptr<nn::Sgd> sgd;
  std::unique_ptr<WeightEma> ema;  // --ema
  nn::LrSchedule schedule;
  std::unique_ptr<data::Loader> train_loader, val_loader;
  int64_t steps_per_epoch = 0;

  Shape model_shape;                        // the shape setup() last saw
  std::unique_ptr<MetricRows> metric_rows;  // the batches' figures not yet on the host
  int64_t step = 0;                         // optimizer steps taken
  int64_t first_epoch = 0, first_batch = 0;
  double best_top1 = -1;
  int64_t evaluated_epochs = 0;  // --evaluate: the epochs the checkpoint had trained

  bool rank0() const { return session.rank() == 0; }
  int world() const { return session.size(); }

  void build();
  void resume();
  // --ema: the average starts from the (resumed) weights, or from the ema.safetensors saved
  // beside the resumed checkpoint at its step.
  void start_ema();
  int run(const std::function<void()>& set_up);
  // Returns the signal that stopped the epoch (0: it ran to its end).
  int train_epoch(int64_t epoch, EpochFigures& figures);
  // Brings the pending steps' figures to the host, sums them over ranks with every rank's
  // stop request, and reports them (totals, progress, --step-metrics). Returns the signal a
  // rank was stopped by (0: none) and empties `pending`.
  int report_steps(std::vector<PendingStep>& pending, int64_t epoch, EpochTotals& totals);
  void evaluate(EpochFigures& figures);
  // Sets the model up for a batch of these images' shape (NHWC), when it changes.
  void ensure_setup(const Tensor& images);
  // Sums values over ranks in place (CPU, f32) through the host communicator.
  void sum_over_ranks(std::vector<float>& values);
  void save(const std::string& name, int64_t epochs_done, int64_t sampler_epoch,
            int64_t sampler_batches);
  void write_epoch_metrics(const EpochFigures& figures, bool trained);
};

namespace {
// A crop of `size` px; validation first resizes the shorter side to size / 0.875, as
// torchvision's references (224 from 256).
void set_image_size(data::LoaderConfig& config, int64_t size) {
  config.transform.output_size = static_cast<int>(size);
  config.transform.resize_size = static_cast<int>(std::lround(static_cast<double>(size) / 0.875));
}
}  // namespace

void Trainer::State::build() {
  const TrainOptions& o = options;
  omp_set_num_threads(o.threads > 0 ? o.threads : default_threads(session));
  CommOptions comm_options;
  comm_options.timeout = std::chrono::milliseconds(static_cast<int64_t>(o.comm_timeout_s * 1e3));
  grad_comm_choice = gradient_comm(o, session, device);
  const std::string& grad_name = grad_comm_choice.name;
  if (const std::string why = communicator_unavailable_reason(grad_name, session); !why.empty()) {
    fail("--comm " + grad_name + ": " + why);
  }
  grad_comm = make_communicator(grad_name, session, comm_options, device.str());
  if (grad_comm->supports(Device::cpu())) {
    host_comm = grad_comm.get();
  } else {
    // The per-step figures' communicator (CPU tensors whatever the device).
    host_comm_owned =
        make_communicator(choose_host_communicator(session.world()).name, session, comm_options);
    host_comm = host_comm_owned.get();
  }

  model.allocate(device, stream);
  if (o.sync_bn) nn::convert_sync_batchnorm(model.layers(), *grad_comm);
  nn::SgdConfig sgd_config;
  sgd_config.lr = static_cast<float>(o.lr);
  sgd_config.momentum = static_cast<float>(o.momentum);
  sgd_config.weight_decay = static_cast<float>(o.weight_decay);
  sgd_config.nesterov = o.nesterov;
  sgd_config.decay_norm_and_bias = o.norm_weight_decay;
  sgd = std::make_unique<nn::Sgd>(model.params(), sgd_config, stream);
  ddp = std::make_unique<nn::DataParallel>(
      model.params(), *grad_comm,
      nn::DataParallelOptions{.bucket_cap_mb = o.bucket_cap_mb, .overlap = true});
  metric_rows = std::make_unique<MetricRows>(kMetricRows, device);

  const int cores = std::max(1, default_threads(session));
  data::LoaderConfig loader;
  loader.batch_size = static_cast<int>(o.batch_size);
  loader.workers = o.workers > 0 ? o.workers : std::min(cores, 8);
  loader.dtype = o.precision.activations;
  loader.device = device;
  loader.seed = o.seed;
  loader.transform.mean = o.normalize_mean;
  loader.transform.std = o.normalize_std;
  set_image_size(loader, train_image_size(o, 0));
  loader.transform.crop.scale_min = o.crop_scale[0];
  loader.transform.crop.scale_max = o.crop_scale[1];
  loader.bad_files = std::make_shared<data::BadFileLog>();
  if (datasets.train) {
    data::LoaderConfig train = loader;
    train.transform.augmentation = data::Augmentation::train;
    train.drop_last = true;  // every step has the full batch (and BatchNorm at least 2 values)
    train.refill_skipped = true;
    train_loader = std::make_unique<data::Loader>(*datasets.train, train);
    const data::DistributedSampler sampler(static_cast<int64_t>(datasets.train->size()), world(),
                                           session.rank(), true, o.seed);
    // Optimizer steps: --accum-steps batches each; an epoch's last batches that make no whole
    // step are left out, as drop_last leaves out a partial batch.
    steps_per_epoch = sampler.num_samples() / (o.batch_size * o.accum_steps);
    if (steps_per_epoch == 0) {
      fail("--batch-size " + std::to_string(o.batch_size) + " x --accum-steps " +
           std::to_string(o.accum_steps) + ": each of the " + std::to_string(world()) +
           " ranks gets " + std::to_string(sampler.num_samples()) + " of the " +
           std::to_string(datasets.train->size()) +
           " training images per epoch, less than one optimizer step");
    }
    schedule = make_schedule(o, steps_per_epoch);
  }
  data::LoaderConfig val = loader;
  val.transform.augmentation = data::Augmentation::eval;
  set_image_size(val, val_image_size(o));
  val_loader = std::make_unique<data::Loader>(datasets.val, val);
}

void Trainer::State::resume() {
  if (options.resume.empty()) {
    ddp->broadcast_from_rank0(stream);
    return;
  }
  const nn::LoadedCheckpoint checkpoint = nn::load_checkpoint(options.resume, model, stream);
  const nn::CheckpointState& saved = checkpoint.info.state;
  evaluated_epochs = saved.epoch;
  if (checkpoint.info.engine_checkpoint && !options.evaluate) {
    nn::load_optimizer_state(checkpoint, *sgd, stream);
    step = saved.step;
    first_epoch = saved.sampler.epoch;
    const auto extra = [&](const char* key) -> std::optional<std::string> {
      const auto found = saved.extra.find(key);
      if (found == saved.extra.end()) return std::nullopt;
      return found->second;
    };
    if (saved.sampler.index > 0) {
      // Mid-epoch: the same world size and batch give the same sample order onward.
      const std::string here = std::to_string(world()) + " ranks x batch " +
                               std::to_string(options.batch_size) + " x " +
                               std::to_string(options.accum_steps) + " accumulated";
      const std::string then = extra("world_size").value_or("?") + " ranks x batch " +
                               extra("batch_size").value_or("?") + " x " +
                               extra("accum_steps").value_or("1") + " accumulated";
      if (here != then) {
        fail("--resume " + options.resume + " stopped mid-epoch with " + then +
             "; continuing it exactly needs the same, this run has " + here);
      }
      first_batch = saved.sampler.index / options.batch_size;
    }
    // A percent since 2026-12-04 (best_val_top1_pct); earlier checkpoints saved a fraction.
    if (const auto best = extra("best_val_top1_pct")) {
      best_top1 = std::stod(*best) / 100;
    } else if (const auto fraction = extra("best_val_top1")) {
      best_top1 = std::stod(*fraction);
    }
  }
  // Every rank read the same file; rank 0's copy is the one all keep (and a state_dict's
  // BatchNorm buffers reach every rank).
  ddp->broadcast_from_rank0(stream);
  if (rank0()) {
    progress.line("resumed from " + options.resume + " (" +
                  (checkpoint.info.engine_checkpoint ? "epoch " + std::to_string(first_epoch + 1) +
                                                           ", step " + std::to_string(step)
                                                     : std::string("a plain state_dict")) +
                  ")");
  }
}

void Trainer::State::start_ema() {
  if (options.ema_decay < 0 || options.evaluate) return;
  ema = std::make_unique<WeightEma>(model.params(), options.ema_decay, stream);
  if (options.resume.empty()) return;
  const std::string saved =
      (std::filesystem::path(options.resume).parent_path() / "ema.safetensors").string();
  std::string what;
  if (!std::filesystem::exists(saved)) {
    what = "no " + saved + ": the weight average starts from the resumed weights";
  } else if (const int64_t at = nn::read_checkpoint_info(saved).state.step; at != step) {
    what = saved + " is at step " + std::to_string(at) + ", the checkpoint at step " +
           std::to_string(step) + ": the weight average starts again from the resumed weights";
  } else {
    // Loaded through the model: its weights are the average's while the two are swapped.
    ema->swap(stream);
    nn::load_checkpoint(saved, model, stream);
    ema->swap(stream);
    what = "resumed the weight average from " + saved;
  }
  if (rank0()) progress.line(what);
}

void Trainer::State::ensure_setup(const Tensor& images) {
  const Shape shape = {images.size(0), images.size(1), images.size(2), 3};
  const int64_t batch = shape[0];
  if (shape == model_shape) return;
  model.setup(shape, options.precision.activations, stream);
  loss.setup(batch, static_cast<int64_t>(datasets.classes().size()), options.precision.activations,
             device);
  model_shape = shape;
}

void Trainer::State::sum_over_ranks(std::vector<float>& values) {
  if (world() == 1) return;
  Tensor tensor = Tensor::from_floats({static_cast<int64_t>(values.size())}, values);
  Stream host;
  host_comm->all_reduce(tensor, ReduceOp::sum, host);
  values = tensor.to_floats(host);
}

int Trainer::State::report_steps(std::vector<PendingStep>& pending, int64_t epoch,
                                 EpochTotals& totals) {
  if (pending.empty()) return 0;
  const std::vector<MetricRow> rows = metric_rows->drain(stream);   // the steps have finished
  const std::vector<nn::CommTiming> timings = ddp->take_timings();  // so has their comm
  if (timings.size() != pending.size()) {
    fail("resnet_train: " + std::to_string(pending.size()) + " steps to report but " +
         std::to_string(timings.size()) + " communication timings");
  }
  // A step's figures sum its micro-batches' rows (equal batches: drop_last and refills keep
  // every training batch full). Rows past the last step are of a step never taken.
  std::vector<float> sums;
  size_t row = 0;
  for (const PendingStep& p : pending) {
    const auto micro_samples = static_cast<float>(p.samples / options.accum_steps);
    float loss_sum = 0, correct1 = 0, correct5 = 0;
    for (int64_t m = 0; m < options.accum_steps; ++m, ++row) {
      if (row >= rows.size()) fail("resnet_train: fewer metric rows than micro-batches");
      loss_sum += rows[row].mean_loss * micro_samples;
      correct1 += rows[row].correct1;
      correct5 += rows[row].correct5;
    }
    sums.insert(sums.end(), {loss_sum, correct1, correct5, static_cast<float>(p.samples)});
  }
  sums.push_back(static_cast<float>(stop_signal() != 0));
  sums.push_back(static_cast<float>(stop_signal()));
  sum_over_ranks(sums);
  for (size_t i = 0; i < pending.size(); ++i) {
    const PendingStep& p = pending[i];
    const nn::CommTiming& timing = timings[i];
    const StepTotals step_totals{sums[4 * i], sums[4 * i + 1], sums[4 * i + 2], sums[4 * i + 3]};
    totals.steps.add(step_totals);
    totals.comm_busy += timing.comm_busy_s;
    totals.comm_exposed += timing.exposed_s;
    progress.step(p.index, step_totals, p.lr);
    if (rank0() && !options.step_metrics.empty()) {
      append_line(options.step_metrics, JsonLine()
                                            .add("step", p.step)
                                            .add("epoch", epoch)
                                            .add("loss", step_totals.loss_sum / step_totals.samples)
                                            .add("lr", p.lr)
                                            .add("comm_hidden_pct", 100 * timing.hidden_fraction)
                                            .str());
    }
  }
  pending.clear();
  const float stopping = sums[sums.size() - 2], signal_sum = sums.back();
  // The signal the stopping ranks got (their mean: the same one, as a rule).
  return stopping > 0 ? static_cast<int>(std::lround(signal_sum / stopping)) : 0;
}

int Trainer::State::train_epoch(int64_t epoch, EpochFigures& figures) {
  data::DistributedSampler sampler(static_cast<int64_t>(datasets.train->size()), world(),
                                   session.rank(), true, options.seed);
  sampler.set_epoch(epoch);
  const int64_t accum = options.accum_steps;
  const int64_t start_batch = epoch == first_epoch ? first_batch : 0;  // loader batches
  if (const int64_t size = train_image_size(options, epoch);
      size != train_loader->config().transform.output_size) {
    // Progressive resizing: the epoch's crop (the loader's workers hold their transform).
    data::LoaderConfig config = train_loader->config();
    set_image_size(config, size);
    train_loader.reset();
    train_loader = std::make_unique<data::Loader>(*datasets.train, config);
  }
  if (rank0() && options.progressive.min > 0) {
    progress.line("epoch " + std::to_string(epoch + 1) + ": training crop " +
                  std::to_string(train_loader->config().transform.output_size) + " px");
  }
  train_loader->start_epoch(epoch, sampler.indices(), start_batch);
  progress.start_epoch(epoch, options.epochs, steps_per_epoch, start_batch / accum);
  const Clock::time_point started = Clock::now();
  EpochTotals totals;
  std::vector<PendingStep> pending;
  double lr = 0;
  int stopped_by = 0;
  // No step waits for the device: the figures are fetched (and the ranks' stop requests
  // exchanged) at the print points, at the epoch's end, at --max-steps and when metric_rows
  // fills up, the same steps on every rank.
  // With --accum-steps N each optimizer step takes N loader batches: the gradients of the
  // first N - 1 accumulate locally (no_sync), the N-th's backward all-reduces the sum, each
  // batch's loss scaled by 1/N, so the step is that of one N times larger batch (BatchNorm
  // aside: it normalizes each batch on its own, as in PyTorch).
  int64_t step_samples = 0;
  for (int64_t batch_index = start_batch; std::optional<data::Batch> batch = train_loader->next();
       ++batch_index) {
    const int64_t index = batch_index / accum;  // the optimizer step within the epoch
    if (index >= steps_per_epoch) break;        // batches that make no whole step
    const int64_t micro = batch_index % accum;
    if (batch->ready) stream.wait(*batch->ready);
    const int64_t n = batch->images.size(0);
    ensure_setup(batch->images);
    if (!options.dump_batches.empty()) {
      dump_batch(options.dump_batches, *batch, {step + 1, epoch, session.rank(), world()}, stream);
    }
    const Tensor labels = Tensor::from_ints({n}, batch->labels).to(device, stream);
    nn::Pass pass{stream, true, false, {}};
    if (micro == 0) model.params().zero_grad();
    const Tensor& logits = model.forward(batch->images, pass);
    metric_rows->push(logits, labels, loss.forward(logits, labels, stream), stream);
    ddp->begin_backward(pass, micro == accum - 1);
    model.backward(loss.backward(stream, 1.f / static_cast<float>(accum)), pass);
    ddp->end_backward(stream);
    step_samples += n;
    if (micro != accum - 1) continue;
    lr = nn::learning_rate(schedule, options.lr, step);
    sgd->step(static_cast<float>(lr), stream);
    if (ema) ema->update(stream);
    ++step;
    pending.push_back({.index = index, .step = step, .samples = step_samples, .lr = lr});
    progress.tick(index, static_cast<double>(step_samples * world()), lr);
    step_samples = 0;
    const bool at_max_steps = options.max_steps > 0 && step >= options.max_steps;
    // Inside the epoch only: its end saves `last` after the evaluation.
    const bool save_point = options.save_every_steps > 0 && step % options.save_every_steps == 0 &&
                            index + 1 < steps_per_epoch;
    // metric_rows must have room for the next step's micro-batches.
    if ((index + 1) % options.print_freq == 0 || index + 1 == steps_per_epoch || at_max_steps ||
        save_point || metric_rows->size() + accum > kMetricRows) {
      stopped_by = report_steps(pending, epoch, totals);
      if (stopped_by != 0 || at_max_steps) {
        if (stopped_by == 0) stopped_by = -1;
        save("last", epoch, epoch, batch_index + 1);
        break;
      }
      if (save_point) {
        save("last", epoch, epoch, batch_index + 1);
        if (rank0()) {
          progress.line("saved " + checkpoint_path(options, "last") + " at step " +
                        std::to_string(step));
        }
      }
    }
  }
  report_steps(pending, epoch, totals);  // a loader that ended early (every rank alike)
  const double elapsed = seconds_since(started);
  figures.train_loss = totals.steps.loss_sum / std::max(1.0, totals.steps.samples);
  figures.train_top1 = totals.steps.correct1 / std::max(1.0, totals.steps.samples);
  figures.lr = lr;
  figures.images_per_s = totals.steps.samples / std::max(1e-9, elapsed);
  figures.comm_hidden =
      totals.comm_busy > 0 ? std::clamp(1 - totals.comm_exposed / totals.comm_busy, 0.0, 1.0) : 1.0;
  std::vector<float> skipped = {static_cast<float>(train_loader->summary().skipped)};
  sum_over_ranks(skipped);
  figures.skipped_files = static_cast<int64_t>(skipped[0]);
  return stopped_by;
}

void Trainer::State::evaluate(EpochFigures& figures) {
  // BatchNorm running statistics differ between ranks with local BN; evaluate rank 0's, as
  // PyTorch's DDP does (broadcast_buffers) and as the checkpoint keeps them.
  Tensor& buffers = model.params().flat_buffers();
  if (world() > 1 && buffers.defined() && buffers.numel() > 0) {
    grad_comm->broadcast(buffers, 0, stream);
  }
  const data::EvaluationSampler sampler(static_cast<int64_t>(datasets.val.size()), world(),
                                        session.rank());
  val_loader->start_epoch(0, sampler.indices());
  double loss_sum = 0, correct1 = 0, correct5 = 0, samples = 0;
  std::vector<int64_t> batch_sizes;  // of the batches in metric_rows
  const auto add_pending = [&] {
    const std::vector<MetricRow> rows = metric_rows->drain(stream);
    for (size_t i = 0; i < rows.size(); ++i) {
      loss_sum += rows[i].mean_loss * static_cast<double>(batch_sizes[i]);
      correct1 += rows[i].correct1;
      correct5 += rows[i].correct5;
      samples += static_cast<double>(batch_sizes[i]);
    }
    batch_sizes.clear();
  };
  while (std::optional<data::Batch> batch = val_loader->next()) {
    if (batch->ready) stream.wait(*batch->ready);
    const int64_t n = batch->images.size(0);
    if (n == 0) continue;
    ensure_setup(batch->images);
    const Tensor labels = Tensor::from_ints({n}, batch->labels).to(device, stream);
    nn::Pass pass{stream, false, false, {}};
    const Tensor& logits = model.forward(batch->images, pass);
    metric_rows->push(logits, labels, loss.forward(logits, labels, stream), stream);
    batch_sizes.push_back(n);
    if (metric_rows->full()) add_pending();
  }
  add_pending();
  std::vector<float> sums = {static_cast<float>(loss_sum), static_cast<float>(correct1),
                             static_cast<float>(correct5), static_cast<float>(samples),
                             static_cast<float>(val_loader->summary().skipped)};
  sum_over_ranks(sums);
  const double total = std::max(1.0f, sums[3]);
  figures.val_loss = sums[0] / total;
  figures.val_top1 = sums[1] / total;
  figures.val_top5 = sums[2] / total;
  figures.skipped_files += static_cast<int64_t>(sums[4]);
}

void Trainer::State::save(const std::string& name, int64_t epochs_done, int64_t sampler_epoch,
                          int64_t sampler_batches) {
  if (!rank0()) return;
  nn::CheckpointState state;
  state.epoch = epochs_done;
  state.step = step;
  state.sampler = {sampler_epoch, sampler_batches * options.batch_size};
  state.classes = datasets.classes();
  state.image_size = options.image_size;
  state.normalize_mean.assign(options.normalize_mean.begin(), options.normalize_mean.end());
  state.normalize_std.assign(options.normalize_std.begin(), options.normalize_std.end());
  state.seed = options.seed;
  state.extra["world_size"] = std::to_string(world());
  state.extra["batch_size"] = std::to_string(options.batch_size);
  state.extra["accum_steps"] = std::to_string(options.accum_steps);
  state.extra["lr_schedule"] = std::string(schedule_name(options.lr_schedule));
  if (best_top1 >= 0) state.extra["best_val_top1_pct"] = json_number(100 * best_top1);
  if (ema && name == "last") {
    // Written before `last`: a run killed between the two finds an average of a later step
    // than `last`, which --resume names and starts again rather than mixing them.
    ema->swap(stream);
    nn::save_checkpoint(checkpoint_path(options, "ema"), model, state, stream);
    ema->swap(stream);
  }
  nn::save_checkpoint(checkpoint_path(options, name), model, *sgd, state, stream);
}

void Trainer::State::write_epoch_metrics(const EpochFigures& f, bool trained) {
  if (!rank0()) return;
  JsonLine line;
  line.add("epoch", f.epoch + 1);
  const double none = std::nan("");
  // Accuracies and shares in percents, as the progress lines print them (--help says so).
  line.add("train_loss", trained ? f.train_loss : none)
      .add("train_top1_pct", trained ? 100 * f.train_top1 : none)
      .add("val_loss", f.val_loss)
      .add("val_top1_pct", 100 * f.val_top1)
      .add("val_top5_pct", 100 * f.val_top5)
      .add("lr", trained ? f.lr : none)
      .add("images_per_s", trained ? f.images_per_s : none)
      .add("epoch_s", f.epoch_s)
      .add("skipped_files", f.skipped_files)
      .add("comm_hidden_pct", trained ? 100 * f.comm_hidden : none)
      .add("step", step)
      .add("world_size", world())
      .add("arch", options.arch);
  if (f.has_ema) {
    line.add("ema_val_loss", f.ema_val_loss)
        .add("ema_val_top1_pct", 100 * f.ema_val_top1)
        .add("ema_val_top5_pct", 100 * f.ema_val_top5);
  }
  append_line(metrics_path(options), line.str());
}

int Trainer::State::run(const std::function<void()>& set_up) {
  build();
  resume();
  start_ema();
  if (set_up) set_up();
  if (rank0()) {
    progress.line(
        "resnet_train: " + options.arch + ", " + std::to_string(datasets.classes().size()) +
        " classes, " + std::to_string(world()) + " rank(s) on " + device.str() + " (" +
        grad_comm->name() + ", " + grad_comm_choice.why + "), batch " +
        std::to_string(options.batch_size) + " per rank" +
        (options.accum_steps > 1 ? " x " + std::to_string(options.accum_steps) + " accumulated"
                                 : std::string()) +
        " = " + std::to_string(options.batch_size * options.accum_steps * world()) + " global, " +
        std::string(nn::precision_name(options.precision)) + (options.sync_bn ? ", SyncBN" : ""));
    if (session.world().hosts > 1) progress.line("hosts: " + session.peers().placement());
  }
  if (options.evaluate) {
    const Clock::time_point started = Clock::now();
    EpochFigures figures;
    figures.epoch = evaluated_epochs - 1;  // the metrics line's "epoch" is the checkpoint's
    evaluate(figures);
    figures.epoch_s = seconds_since(started);
    char text[200];
    std::snprintf(text, sizeof text, "evaluate: val loss %.4f top1 %.2f%% top5 %.2f%% (%zu images)",
                  figures.val_loss, 100 * figures.val_top1, 100 * figures.val_top5,
                  datasets.val.size());
    progress.line(text);
    write_epoch_metrics(figures, false);
    return 0;
  }
  for (int64_t epoch = first_epoch; epoch < options.epochs; ++epoch) {
    const Clock::time_point started = Clock::now();
    EpochFigures figures;
    figures.epoch = epoch;
    figures.epochs = options.epochs;
    const int stopped_by = train_epoch(epoch, figures);
    if (stopped_by != 0) {
      if (rank0()) {
        progress.line(
            std::string("resnet_train: ") +
            (stopped_by > 0 ? "stopped by " + signal_name(stopped_by) : "reached --max-steps") +
            " at step " + std::to_string(step) + "; saved " + checkpoint_path(options, "last") +
            " (continue with --resume)");
      }
      // Rank 0 may still be writing: nobody leaves before it has (mpirun would end it).
      host_comm->barrier();
      return stopped_by > 0 ? 128 + stopped_by : 0;
    }
    evaluate(figures);
    if (ema) {
      EpochFigures averaged;
      ema->swap(stream);
      evaluate(averaged);
      ema->swap(stream);
      figures.has_ema = true;
      figures.ema_val_loss = averaged.val_loss;
      figures.ema_val_top1 = averaged.val_top1;
      figures.ema_val_top5 = averaged.val_top5;
    }
    figures.epoch_s = seconds_since(started);
    figures.best = figures.val_top1 > best_top1;
    if (figures.best) best_top1 = figures.val_top1;
    save("last", epoch + 1, epoch + 1, 0);
    if (figures.best) save("best", epoch + 1, epoch + 1, 0);
    write_epoch_metrics(figures, true);
    progress.epoch_summary(figures);
  }
  host_comm->barrier();
  return 0;
}

Trainer::Trainer(const TrainOptions& options, MpiSession& session, Datasets datasets)
    : state_(std::make_unique<State>(options, session, std::move(datasets))) {}

Trainer::~Trainer() = default;

int Trainer::run(const std::function<void()>& set_up) {
  return state_->run(set_up);
}

}  // namespace engine::train
