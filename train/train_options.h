// resnet_train's command line: pytorch/examples imagenet/main.py's flag names where it has
// them, the engine's own otherwise. Parsing (train_command) only reads argv and checks each
// value on its own; check_train_options then checks the combinations, and the preflight the
// paths, before any work, so that a bad run ends with one clear line naming the flag or path.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "data/auto_augment.h"
#include "data/batch_mixing.h"
#include "kernels/dtype.h"
#include "nn/batchnorm_fusion.h"
#include "nn/conv_tuning.h"
#include "nn/precision.h"
#include "train/cli_command.h"
#include "train/common_flags.h"
#include "train/trace_steps.h"

namespace engine::train {

enum class ScheduleName { constant, step, cosine, onecycle, poly };
enum class OptimizerName { sgd, adamw, lars };

// The optimizers' own defaults where --opt-betas, --opt-eps and --lars-eta are not given:
// torch.optim.AdamW's betas and eps, and MLPerf ResNet-50's LARS eta (its epsilon is 0).
inline constexpr std::array<double, 2> kAdamBetas = {0.9, 0.999};
inline constexpr double kAdamEps = 1e-8;
inline constexpr double kLarsEta = 1e-3;

struct TrainOptions {
  std::string data;  // DIR with train/ and val/, or a pattern of WebDataset tar shards
  // The validation split: shards or an ImageFolder root; required with shards, else DIR/val.
  std::string val_data;
  int64_t shuffle_buffer = 1000;  // samples, with shards (data/shard_sampler.h)
  // --dummy: random images instead of a folder (pytorch/examples' flag, torchvision's
  // FakeData sizes by default: ImageNet's 1,281,167 + 50,000 images in 1000 classes).
  bool dummy = false;
  int64_t dummy_classes = 1000;
  std::array<int64_t, 2> dummy_images = {1281167, 50000};  // train, val
  std::string arch = "resnet18";
  int64_t epochs = 90;
  int64_t batch_size = 64;  // per rank
  int64_t accum_steps = 1;  // batches per optimizer step (gradient accumulation)
  double lr = 0.1;
  double momentum = 0.9;
  bool momentum_given = false;  // --momentum was on the command line (AdamW refuses it)
  double weight_decay = 1e-4;
  bool nesterov = false;
  bool norm_weight_decay = true;           // false: no decay on BatchNorm weights/biases and biases
  OptimizerName opt = OptimizerName::sgd;  // --opt (timm's name)
  std::optional<double> opt_eps;           // AdamW's eps, LARS's trust-ratio epsilon
  std::optional<std::array<double, 2>> opt_betas;  // AdamW's betas
  std::optional<double> lars_eta;                  // LARS's trust coefficient
  bool lars_adapt_all = false;  // LARS: trust ratio and decay on norm and bias parameters too
  double clip_grad = 0;         // > 0: clip the gradients' global L2 norm to this; 0: off
  ScheduleName lr_schedule = ScheduleName::step;
  int64_t lr_step_size = 30;  // StepLR's, in epochs
  double lr_gamma = 0.1;
  int64_t warmup_epochs = 0;
  double warmup_start_factor = 0.01;
  double min_lr = 0;  // poly: the rate it decays to
  double label_smoothing = 0;
  // --mixup, --cutmix and their settings (timm's flags). Its label_smoothing stays 0 here: the
  // trainer folds --label-smoothing into the mixed targets.
  data::MixConfig mix;
  int workers = 0;     // 0: the cores this rank has, at most 8
  int threads = 0;     // compute threads per rank; 0: the host's cores / ranks on the host
  std::string resume;  // a checkpoint, "" for none, or kResumeAuto before resolve_resume_auto
  // Fine-tuning: a new run starts from this file's weights (a torchvision state_dict as
  // safetensors, or a checkpoint), its classifier replaced when the class count differs.
  std::string pretrained;
  bool evaluate = false;
  uint64_t seed = 0;
  int64_t print_freq = 10;
  bool sync_bn = false;
  bool zero_init_residual = false;
  std::string device = "auto";
  nn::Precision precision;     // fp32
  nn::ConvTuning conv_tuning;  // --conv-tuning, --conv-tuning-file, --conv-tuning-seconds
  nn::BatchNormFusion fusion = nn::BatchNormFusion::full;         // --fusion
  cli::CudaGraphMode cuda_graph = cli::CudaGraphMode::automatic;  // --cuda-graph
  int64_t image_size = 224;
  std::array<double, 2> crop_scale = {0.08, 1.0};  // RandomResizedCrop's scale range
  // torchvision's classification reference (references/classification/train.py) flags:
  // --auto-augment ra|ta_wide after the flip, --random-erase P after Normalize.
  data::AutoAugmentPolicy auto_augment = data::AutoAugmentPolicy::none;
  int64_t ra_magnitude = 9;
  int64_t ra_num_ops = 2;
  double random_erase = 0;
  bool random_erase_normal = false;  // --random-erase-value random: N(0, 1) values, else 0
  double bucket_cap_mb = 25;
  std::string checkpoint_dir = "checkpoints";
  std::string metrics;       // "": <checkpoint_dir>/metrics.jsonl
  std::string step_metrics;  // "": none; else one JSON line per optimizer step
  std::string tensorboard;   // "": none; else TensorBoard event files in this folder (rank 0)
  std::string trace;         // "": none; else a timeline of trace_steps per rank (step_trace.h)
  TraceSteps trace_steps;
  double comm_timeout_s = 300;
  std::string comm = "auto";  // the gradient all-reduce's communicator (comm_factory names)
  std::array<float, 3> normalize_mean = {0.485f, 0.456f, 0.406f};
  std::array<float, 3> normalize_std = {0.229f, 0.224f, 0.225f};
  std::string dump_batches;  // "": none; else every step's batch, per rank (train/batch_dump.h)
  int64_t max_steps = 0;     // stop (saving `last`) after this many optimizer steps; 0: no limit
  int64_t save_every_steps = 0;  // also save `last` every N steps inside an epoch; 0: never
  double ema_decay = -1;  // >= 0: a moving average of the weights (train/weight_ema.h); < 0: none
  int64_t val_image_size = 0;  // validation's center crop; 0: image_size
  // Progressive resizing (FFCV's ImageNet recipe): the training crop is min px through epoch
  // first (1-based), grows linearly to image_size at epoch last, then stays; min 0: off.
  struct ProgressiveResize {
    int64_t min = 0, first = 0, last = 0;
  } progressive;
};

// The training crop of `epoch` (0-based): image_size, or with progressive resizing the size
// its ramp gives that epoch, rounded down to a multiple of 8 px.
int64_t train_image_size(const TrainOptions& options, int64_t epoch);
// Validation's center crop: val_image_size, else image_size.
int64_t val_image_size(const TrainOptions& options);

// resnet_train's command line, parsing into `options` (which must outlive it); its usage lists
// every flag with its default. Each value is checked as it is parsed; check_train_options then
// checks what depends on more than one flag.
cli::Command train_command(TrainOptions& options);

// Throws cli::UsageError naming the flags when the parsed options cannot be run together.
void check_train_options(const TrainOptions& options);

std::string_view schedule_name(ScheduleName name);
std::string_view optimizer_name(OptimizerName name);

// --resume's value that picks <checkpoint-dir>/last.safetensors when it exists.
inline constexpr std::string_view kResumeAuto = "auto";

// <checkpoint-dir>/<name>.safetensors: `last` (what --resume auto continues from) or `best`.
std::string checkpoint_path(const TrainOptions& options, std::string_view name);

// The metrics file the options give.
std::string metrics_path(const TrainOptions& options);

}  // namespace engine::train
