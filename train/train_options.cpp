#include "train/train_options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

#include "nn/resnet.h"
#include "train/cli_usage.h"

namespace engine::train {

namespace {

using cli::split;
using cli::UsageError;

double parse_double(const std::string& flag, const std::string& text) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end || !std::isfinite(value)) {
    throw UsageError(flag + " takes numbers, got '" + text + "'");
  }
  return value;
}

// "a,b,c" -> three numbers.
template <size_t N, typename T>
std::array<T, N> parse_list(const std::string& flag, const std::string& text) {
  const std::vector<std::string> parts = split(text, ',');
  if (parts.size() != N) {
    throw UsageError(flag + " takes " + std::to_string(N) + " comma-separated numbers, got '" +
                     text + "'");
  }
  std::array<T, N> values{};
  for (size_t i = 0; i < N; ++i)
    values[i] = static_cast<T>(parse_double(flag, parts[i]));
  return values;
}

ScheduleName parse_schedule(const std::string& text) {
  for (ScheduleName name :
       {ScheduleName::constant, ScheduleName::step, ScheduleName::cosine, ScheduleName::onecycle}) {
    if (text == schedule_name(name)) return name;
  }
  throw UsageError("--lr-schedule takes step, cosine, onecycle or constant, got '" + text + "'");
}

std::string join_arch_names() {
  std::string names;
  for (const std::string& name : nn::resnet_arch_names()) {
    if (!names.empty()) names += ", ";
    names += name;
  }
  return names;
}

void require(bool ok, const std::string& message) {
  if (!ok) throw UsageError(message);
}

// Values that are wrong whatever else is given.
void check_values(const TrainOptions& o) {
  const auto& archs = nn::resnet_arch_names();
  require(std::find(archs.begin(), archs.end(), o.arch) != archs.end(),
          "--arch: unknown architecture '" + o.arch + "' (choose from " + join_arch_names() + ")");
  require(!o.data.empty() || o.dummy, "--data DIR is required (or --dummy for random images)");
  require(o.data.empty() || !o.dummy, "--dummy trains on random images: drop --data or --dummy");
  require(o.dummy_classes >= 1, "--dummy-classes must be >= 1");
  require(o.dummy_images[0] >= 1 && o.dummy_images[1] >= 1,
          "--dummy-images TRAIN,VAL needs at least one image in each");
  require(o.epochs >= 1, "--epochs must be >= 1");
  require(o.batch_size >= 1, "--batch-size must be >= 1 (it is per rank)");
  require(o.accum_steps >= 1 && o.accum_steps <= 64, "--accum-steps must be in 1..64");
  require(o.accum_steps == 1 || o.dump_batches.empty(),
          "--dump-batches writes one batch per step: it does not apply with --accum-steps");
  require(o.lr >= 0, "--lr must be >= 0");
  require(o.momentum >= 0 && o.momentum < 1, "--momentum must be in [0, 1)");
  require(!o.nesterov || o.momentum > 0, "--nesterov needs --momentum > 0");
  require(o.weight_decay >= 0, "--wd must be >= 0");
  require(o.lr_step_size >= 1, "--lr-step-size must be >= 1");
  require(o.lr_gamma > 0, "--lr-gamma must be > 0");
  require(o.warmup_epochs >= 0, "--warmup-epochs must be >= 0");
  require(o.warmup_epochs == 0 || o.lr_schedule != ScheduleName::onecycle,
          "--warmup-epochs does not apply to --lr-schedule onecycle (it has its own warmup)");
  require(o.warmup_start_factor > 0 && o.warmup_start_factor <= 1,
          "--warmup-start-factor must be in (0, 1]");
  require(o.label_smoothing >= 0 && o.label_smoothing < 1, "--label-smoothing must be in [0, 1)");
  require(o.workers >= 0, "--workers must be >= 0");
  require(o.threads >= 0, "--threads must be >= 0");
  require(o.print_freq >= 1, "--print-freq must be >= 1");
  require(o.image_size >= 32, "--image-size must be >= 32 (the ResNet's five downsamplings)");
  require(o.val_image_size == 0 || o.val_image_size >= 32,
          "--val-image-size must be >= 32 (the ResNet's five downsamplings)");
  if (o.progressive.min > 0) {
    require(o.progressive.min >= 32 && o.progressive.min <= o.image_size,
            "--progressive-resize MIN,FIRST,LAST needs 32 <= MIN <= --image-size");
    require(o.progressive.first >= 1 && o.progressive.first < o.progressive.last,
            "--progressive-resize MIN,FIRST,LAST needs 1 <= FIRST < LAST (epochs)");
  }
  require(o.crop_scale[0] > 0 && o.crop_scale[0] <= o.crop_scale[1] && o.crop_scale[1] <= 1,
          "--crop-scale MIN,MAX needs 0 < MIN <= MAX <= 1");
  require(o.bucket_cap_mb > 0, "--bucket-cap-mb must be > 0");
  require(!o.checkpoint_dir.empty(), "--checkpoint-dir must not be empty");
  require(o.comm_timeout_s > 0, "--comm-timeout must be > 0 seconds");
  for (float s : o.normalize_std)
    require(s > 0, "--normalize: every std must be > 0");
  require(o.max_steps >= 0, "--max-steps must be >= 0");
  require(o.save_every_steps >= 0, "--save-every-steps must be >= 0");
  require(!o.evaluate || o.dump_batches.empty(), "--dump-batches does not apply to --evaluate");
  require(!o.evaluate || !o.resume.empty(),
          "--evaluate needs --resume FILE (the checkpoint to evaluate)");
}

}  // namespace

nn::Precision parse_precision(const std::string& text) {
  if (const auto precision = nn::precision_from_name(text)) return *precision;
  throw UsageError("--precision takes fp32, tf32 or bf16, got '" + text + "'");
}

std::string_view schedule_name(ScheduleName name) {
  switch (name) {
    case ScheduleName::constant:
      return "constant";
    case ScheduleName::step:
      return "step";
    case ScheduleName::cosine:
      return "cosine";
    case ScheduleName::onecycle:
      return "onecycle";
  }
  return "?";
}

int64_t train_image_size(const TrainOptions& options, int64_t epoch) {
  const TrainOptions::ProgressiveResize& p = options.progressive;
  if (p.min <= 0) return options.image_size;
  const int64_t number = epoch + 1;
  if (number <= p.first) return p.min;
  if (number >= p.last) return options.image_size;
  const double grown =
      static_cast<double>(p.min) + static_cast<double>(options.image_size - p.min) *
                                       static_cast<double>(number - p.first) /
                                       static_cast<double>(p.last - p.first);
  return std::max(p.min, static_cast<int64_t>(grown) / 8 * 8);
}

int64_t val_image_size(const TrainOptions& options) {
  return options.val_image_size > 0 ? options.val_image_size : options.image_size;
}

std::string checkpoint_path(const TrainOptions& options, std::string_view name) {
  return options.checkpoint_dir + "/" + std::string(name) + ".safetensors";
}

std::string metrics_path(const TrainOptions& options) {
  return options.metrics.empty() ? options.checkpoint_dir + "/metrics.jsonl" : options.metrics;
}

std::string train_usage() {
  return "usage: resnet_train --data DIR [flags]        (mpirun -np N resnet_train ... for N "
         "ranks)\n"
         "Trains a torchvision ResNet data-parallel on an ImageFolder tree DIR/train, DIR/val.\n"
         "  --data DIR               dataset root with train/ and val/ (required)\n"
         "  --dummy                  random images instead of --data: uniform [0, 1), no\n"
         "                           transform, --image-size square (a first run on a node)\n"
         "  --dummy-classes N        --dummy's classes (1000)\n"
         "  --dummy-images T,V       --dummy's training and validation images (1281167,50000)\n"
         "  -a, --arch NAME          resnet18|resnet34|resnet50|resnet101|resnet152 (resnet18)\n"
         "  --epochs N               total epochs (90)\n"
         "  -b, --batch-size N       images per rank per step (64); the global batch is printed\n"
         "  --accum-steps N          accumulate N batches' gradients per optimizer step,\n"
         "                           all-reduced once: an N times larger batch (1)\n"
         "  --lr LR                  base learning rate; onecycle's maximum (0.1)\n"
         "  --momentum M             SGD momentum (0.9)\n"
         "  --wd, --weight-decay W   weight decay (1e-4)\n"
         "  --nesterov               Nesterov momentum (off)\n"
         "  --no-norm-weight-decay   no weight decay on BatchNorm parameters and biases (off)\n"
         "  --lr-schedule S          step|cosine|onecycle|constant (step)\n"
         "  --lr-step-size N         step: epochs between decays (30)\n"
         "  --lr-gamma G             step: decay factor (0.1)\n"
         "  --warmup-epochs N        linear warmup epochs before step/cosine/constant (0)\n"
         "  --warmup-start-factor F  warmup's first rate as a fraction of --lr (0.01)\n"
         "  --label-smoothing S      CrossEntropyLoss label smoothing (0)\n"
         "  -j, --workers N          data loading threads per rank (0: the rank's cores, <= 8)\n"
         "  --threads N              compute threads per rank (0: cores / ranks on the host)\n"
         "  --resume FILE            continue from a checkpoint (or start from a torchvision\n"
         "                           state_dict saved as safetensors); auto: from\n"
         "                           <checkpoint-dir>/last.safetensors if it exists, else\n"
         "                           from scratch (for a scheduler's restarts; ./auto for a\n"
         "                           file named auto)\n"
         "  -e, --evaluate           validate --resume FILE on DIR/val and exit\n"
         "  --seed N                 weights, sampler order and augmentation (0)\n"
         "  -p, --print-freq N       progress line every N steps (10)\n"
         "  --sync-bn                SyncBatchNorm: batch statistics over all ranks (off)\n"
         "  --zero-init-residual     zero-init each block's last BatchNorm weight (off)\n"
         "  --device D               auto|cpu|cuda (auto: the GPU of the local rank if any)\n"
         "  --precision P            fp32, tf32 (fp32 with convolutions and linear layers on\n"
         "                           TF32 tensor cores, CUDA only) or bf16 (bf16 activations,\n"
         "                           fp32 master weights) (fp32)\n"
         "  --image-size S           training crop; validation resizes to S/0.875 (224)\n"
         "  --val-image-size V       validation's center crop, resized to V/0.875 first\n"
         "                           (--image-size)\n"
         "  --progressive-resize MIN,FIRST,LAST\n"
         "                           training crop MIN px through epoch FIRST, growing to\n"
         "                           --image-size at epoch LAST, in steps of 8 px (off)\n"
         "  --crop-scale MIN,MAX     RandomResizedCrop's area range (0.08,1)\n"
         "  --bucket-cap-mb MB       gradient bucket size for the all-reduce (25)\n"
         "  --checkpoint-dir DIR     last.safetensors, best.safetensors (checkpoints)\n"
         "  --metrics FILE           one JSON line per epoch (<checkpoint-dir>/metrics.jsonl)\n"
         "  --step-metrics FILE      one JSON line per optimizer step (none)\n"
         "                           Accuracies and shares are percents (0-100) everywhere:\n"
         "                           printed, in the JSON (keys ending _pct) and in the\n"
         "                           checkpoint (best_val_top1_pct)\n"
         "  --comm-timeout S         a collective waiting longer ends the job (300)\n"
         "  --comm NAME              gradient communicator: auto|ring-shm|ring-mpi|ring-hier|\n"
         "                           mpi|nccl|ring-nccl (auto: ring-shm on one host; across\n"
         "                           hosts ring-hier (shared memory within each host, rings\n"
         "                           across), or ring-mpi with one rank per host or uneven\n"
         "                           hosts; ring-nccl (our ring over NCCL) on GPUs)\n"
         "  --normalize M,M,M/S,S,S  Normalize mean/std (ImageNet's)\n"
         "  --max-steps N            stop after N optimizer steps, saving last (0: no limit)\n"
         "  --save-every-steps N     also save last every N optimizer steps inside an epoch,\n"
         "                           for long epochs (0: at each epoch's end only)\n"
         "  --ema DECAY              also keep an exponential moving average of the weights\n"
         "                           and BatchNorm statistics (e.g. 0.9998), updated every\n"
         "                           optimizer step, evaluated beside them each epoch and\n"
         "                           saved as ema.safetensors with last (off)\n"
         "  --dump-batches DIR       each step's batch of each rank, for replaying the run\n"
         "                           in PyTorch (tools/replay_in_torch.py) (none)\n"
         "  -h, --help               this text\n";
}

TrainOptions parse_train_options(int argc, char** argv) {
  TrainOptions o;
  for (cli::Arguments args(argc, argv); args.next();) {
    const auto whole = [&] { return args.integer(); };
    if (args.is("--data")) {
      o.data = args.value();
    } else if (args.is("--dummy")) {
      o.dummy = true;
    } else if (args.is("--dummy-classes")) {
      o.dummy_classes = whole();
    } else if (args.is("--dummy-images")) {
      const std::string text = args.value();
      const std::array<double, 2> counts = parse_list<2, double>("--dummy-images", text);
      for (double count : counts) {
        if (count != std::floor(count) || count > 1e15) {
          throw UsageError("--dummy-images takes two whole numbers TRAIN,VAL, got '" + text + "'");
        }
      }
      o.dummy_images = {static_cast<int64_t>(counts[0]), static_cast<int64_t>(counts[1])};
    } else if (args.is("-a") || args.is("--arch")) {
      o.arch = args.value();
    } else if (args.is("--epochs")) {
      o.epochs = whole();
    } else if (args.is("-b") || args.is("--batch-size")) {
      o.batch_size = whole();
    } else if (args.is("--accum-steps")) {
      o.accum_steps = whole();
    } else if (args.is("--lr")) {
      o.lr = args.number();
    } else if (args.is("--momentum")) {
      o.momentum = args.number();
    } else if (args.is("--wd") || args.is("--weight-decay")) {
      o.weight_decay = args.number();
    } else if (args.is("--nesterov")) {
      o.nesterov = true;
    } else if (args.is("--no-norm-weight-decay")) {
      o.norm_weight_decay = false;
    } else if (args.is("--lr-schedule")) {
      o.lr_schedule = parse_schedule(args.value());
    } else if (args.is("--lr-step-size")) {
      o.lr_step_size = whole();
    } else if (args.is("--lr-gamma")) {
      o.lr_gamma = args.number();
    } else if (args.is("--warmup-epochs")) {
      o.warmup_epochs = whole();
    } else if (args.is("--warmup-start-factor")) {
      o.warmup_start_factor = args.number();
    } else if (args.is("--label-smoothing")) {
      o.label_smoothing = args.number();
    } else if (args.is("-j") || args.is("--workers")) {
      o.workers = static_cast<int>(whole());
    } else if (args.is("--threads")) {
      o.threads = static_cast<int>(whole());
    } else if (args.is("--resume")) {
      o.resume = args.value();
    } else if (args.is("-e") || args.is("--evaluate")) {
      o.evaluate = true;
    } else if (args.is("--seed")) {
      const int64_t seed = whole();
      if (seed < 0) throw UsageError("--seed must be >= 0");
      o.seed = static_cast<uint64_t>(seed);
    } else if (args.is("-p") || args.is("--print-freq")) {
      o.print_freq = whole();
    } else if (args.is("--sync-bn")) {
      o.sync_bn = true;
    } else if (args.is("--zero-init-residual")) {
      o.zero_init_residual = true;
    } else if (args.is("--device")) {
      o.device = args.value();
    } else if (args.is("--precision")) {
      o.precision = parse_precision(args.value());
    } else if (args.is("--image-size")) {
      o.image_size = whole();
    } else if (args.is("--crop-scale")) {
      o.crop_scale = parse_list<2, double>("--crop-scale", args.value());
    } else if (args.is("--bucket-cap-mb")) {
      o.bucket_cap_mb = args.number();
    } else if (args.is("--checkpoint-dir")) {
      o.checkpoint_dir = args.value();
    } else if (args.is("--metrics")) {
      o.metrics = args.value();
    } else if (args.is("--step-metrics")) {
      o.step_metrics = args.value();
    } else if (args.is("--comm-timeout")) {
      o.comm_timeout_s = args.number();
    } else if (args.is("--comm")) {
      o.comm = args.value();
    } else if (args.is("--normalize")) {
      const std::string text = args.value();
      const std::vector<std::string> halves = split(text, '/');
      if (halves.size() != 2) {
        throw UsageError("--normalize takes MEAN,MEAN,MEAN/STD,STD,STD, got '" + text + "'");
      }
      o.normalize_mean = parse_list<3, float>("--normalize", halves[0]);
      o.normalize_std = parse_list<3, float>("--normalize", halves[1]);
    } else if (args.is("--dump-batches")) {
      o.dump_batches = args.value();
    } else if (args.is("--max-steps")) {
      o.max_steps = whole();
    } else if (args.is("--save-every-steps")) {
      o.save_every_steps = whole();
    } else if (args.is("--val-image-size")) {
      o.val_image_size = whole();
    } else if (args.is("--progressive-resize")) {
      const auto v = parse_list<3, double>("--progressive-resize", args.value());
      for (double x : v) {
        require(x > 0 && x == std::floor(x), "--progressive-resize takes three whole numbers > 0");
      }
      o.progressive = {static_cast<int64_t>(v[0]), static_cast<int64_t>(v[1]),
                       static_cast<int64_t>(v[2])};
    } else if (args.is("--ema")) {
      o.ema_decay = args.number();
      require(o.ema_decay >= 0 && o.ema_decay < 1, "--ema must be in [0, 1)");
    } else {
      args.reject();
    }
  }
  check_values(o);
  return o;
}

}  // namespace engine::train
