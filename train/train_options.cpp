#include "train/train_options.h"

#include <cmath>
#include <optional>
#include <vector>

#include "train/cli_usage.h"
#include "train/common_flags.h"

namespace engine::train {

namespace {

using cli::UsageError;

// "a,b,c" -> N numbers.
template <size_t N, typename T>
std::array<T, N> fixed_list(const std::string& flag, const std::string& text) {
  const std::vector<std::string> parts = cli::split(text, ',');
  if (parts.size() != N) {
    throw UsageError(flag + " takes " + std::to_string(N) + " comma-separated numbers, got '" +
                     text + "'");
  }
  std::array<T, N> values{};
  for (size_t i = 0; i < N; ++i)
    values[i] = static_cast<T>(cli::number_value(flag, parts[i]));
  return values;
}

ScheduleName parse_schedule(const std::string& text) {
  for (ScheduleName name : {ScheduleName::constant, ScheduleName::step, ScheduleName::cosine,
                            ScheduleName::onecycle, ScheduleName::poly}) {
    if (text == schedule_name(name)) return name;
  }
  throw UsageError("--lr-schedule takes step, cosine, onecycle, poly or constant, got '" + text +
                   "'");
}

OptimizerName parse_optimizer(const std::string& text) {
  for (OptimizerName name : {OptimizerName::sgd, OptimizerName::adamw, OptimizerName::lars}) {
    if (text == optimizer_name(name)) return name;
  }
  throw UsageError("--opt takes sgd, adamw or lars, got '" + text + "'");
}

// A flag's number that must be finite and > 0 (or >= 0 with zero_ok).
double positive_value(const std::string& flag, const std::string& text, bool zero_ok,
                      const std::string& what) {
  const double value = cli::number_value(flag, text);
  if (!std::isfinite(value) || value < 0 || (value == 0 && !zero_ok)) {
    throw UsageError(flag + " must be a finite number " + (zero_ok ? ">= 0" : "> 0") + " (" + what +
                     "), got '" + text + "'");
  }
  return value;
}

data::AutoAugmentPolicy parse_auto_augment(const std::string& text) {
  if (text == "none") return data::AutoAugmentPolicy::none;
  if (text == "ra") return data::AutoAugmentPolicy::rand_augment;
  if (text == "ta_wide") return data::AutoAugmentPolicy::trivial_augment_wide;
  throw UsageError(
      "--auto-augment takes none, ra (RandAugment) or ta_wide (TrivialAugmentWide), got '" + text +
      "'");
}

void require(bool ok, const std::string& message) {
  if (!ok) throw UsageError(message);
}

// --mixup, --cutmix and their settings.
void check_mixing(const TrainOptions& o) {
  const data::MixConfig& m = o.mix;
  require(m.mixup_alpha >= 0, "--mixup ALPHA must be >= 0 (0: off)");
  require(m.cutmix_alpha >= 0, "--cutmix ALPHA must be >= 0 (0: off)");
  if (m.cutmix_minmax) {
    const auto [low, high] = *m.cutmix_minmax;
    require(low > 0 && low < high && high <= 1, "--cutmix-minmax MIN,MAX needs 0 < MIN < MAX <= 1");
  }
  require(m.prob >= 0 && m.prob <= 1, "--mixup-prob must be in [0, 1]");
  require(m.switch_prob >= 0 && m.switch_prob <= 1, "--mixup-switch-prob must be in [0, 1]");
  require(m.off_epoch >= 0, "--mixup-off-epoch must be >= 0 (0: never)");
  if (!m.enabled()) return;
  // timm asserts an even batch: image i is mixed with image n-1-i of each rank's batch.
  require(o.batch_size % 2 == 0,
          "--mixup/--cutmix mix image i with image n-1-i of each rank's "
          "batch: --batch-size must be even");
  require(o.dump_batches.empty(),
          "--dump-batches records hard labels for a replay in PyTorch: it "
          "does not apply with --mixup/--cutmix");
}

// What the parse's own checks cannot see: flags that need or exclude others, and the ranges
// of values the shared flags (train/common_flags.h) do not own.
void check_values(const TrainOptions& o) {
  require(!o.data.empty() || o.dummy, "--data DIR is required (or --dummy for random images)");
  require(o.data.empty() || !o.dummy, "--dummy trains on random images: drop --data or --dummy");
  require(o.dummy_classes >= 1, "--dummy-classes must be >= 1");
  require(o.dummy_images[0] >= 1 && o.dummy_images[1] >= 1,
          "--dummy-images TRAIN,VAL needs at least one image in each");
  require(o.epochs >= 1, "--epochs must be >= 1");
  require(o.val_data.empty() || !o.dummy, "--dummy has its own validation images: drop --val-data");
  require(o.shuffle_buffer >= 0, "--shuffle-buffer must be >= 0");
  require(o.accum_steps >= 1 && o.accum_steps <= 64, "--accum-steps must be in 1..64");
  require(o.accum_steps == 1 || o.dump_batches.empty(),
          "--dump-batches writes one batch per step: it does not apply with --accum-steps");
  require(o.lr >= 0, "--lr must be >= 0");
  require(o.momentum >= 0 && o.momentum < 1, "--momentum must be in [0, 1)");
  require(!o.nesterov || o.momentum > 0, "--nesterov needs --momentum > 0");
  require(o.weight_decay >= 0, "--wd must be >= 0");
  const bool sgd = o.opt == OptimizerName::sgd, lars = o.opt == OptimizerName::lars;
  require(!o.nesterov || sgd, "--nesterov applies to --opt sgd only");
  require(!o.momentum_given || o.opt != OptimizerName::adamw,
          "--momentum applies to --opt sgd and lars (AdamW's moments: --opt-betas)");
  require(!o.opt_betas || o.opt == OptimizerName::adamw, "--opt-betas applies to --opt adamw only");
  require(!o.opt_eps || !sgd, "--opt-eps applies to --opt adamw or lars, not sgd");
  require(!o.lars_eta || lars, "--lars-eta applies to --opt lars only");
  require(!o.lars_adapt_all || lars, "--lars-adapt-all applies to --opt lars only");
  require(!o.lars_adapt_all || o.norm_weight_decay,
          "--lars-adapt-all decays BatchNorm parameters and biases: drop --no-norm-weight-decay");
  require(o.lr_step_size >= 1, "--lr-step-size must be >= 1");
  require(o.lr_gamma > 0, "--lr-gamma must be > 0");
  require(o.warmup_epochs >= 0, "--warmup-epochs must be >= 0");
  require(o.warmup_epochs == 0 || o.lr_schedule != ScheduleName::onecycle,
          "--warmup-epochs does not apply to --lr-schedule onecycle (it has its own warmup)");
  require(o.min_lr >= 0 && std::isfinite(o.min_lr), "--min-lr must be >= 0");
  require(o.min_lr == 0 || o.lr_schedule == ScheduleName::poly,
          "--min-lr applies to --lr-schedule poly only");
  require(o.lr_schedule != ScheduleName::poly || o.warmup_epochs < o.epochs,
          "--lr-schedule poly needs --warmup-epochs < --epochs (it decays after the warmup)");
  require(o.warmup_start_factor > 0 && o.warmup_start_factor <= 1,
          "--warmup-start-factor must be in (0, 1]");
  require(o.label_smoothing >= 0 && o.label_smoothing < 1, "--label-smoothing must be in [0, 1)");
  check_mixing(o);
  require(o.workers >= 0, "--workers must be >= 0");
  require(o.threads >= 0, "--threads must be >= 0");
  require(o.print_freq >= 1, "--print-freq must be >= 1");
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
  require(o.ra_magnitude >= 0 && o.ra_magnitude <= 30,
          "--ra-magnitude must be in 0..30 (RandAugment's 31 magnitude bins)");
  require(o.ra_num_ops >= 1, "--ra-num-ops must be >= 1");
  require(o.random_erase >= 0 && o.random_erase <= 1,
          "--random-erase must be a probability in [0, 1]");
  require(o.bucket_cap_mb > 0, "--bucket-cap-mb must be > 0");
  require(!o.checkpoint_dir.empty(), "--checkpoint-dir must not be empty");
  require(o.comm_timeout_s > 0, "--comm-timeout must be > 0 seconds");
  for (float s : o.normalize_std)
    require(s > 0, "--normalize: every std must be > 0");
  require(o.max_steps >= 0, "--max-steps must be >= 0");
  require(o.save_every_steps >= 0, "--save-every-steps must be >= 0");
  require(!o.evaluate || o.dump_batches.empty(), "--dump-batches does not apply to --evaluate");
  require(!o.evaluate || o.trace.empty(), "--trace records training steps: not with --evaluate");
  require(o.cuda_graph != cli::CudaGraphMode::on || o.trace.empty(),
          "--cuda-graph on replays whole micro-steps: --trace, which times each layer, needs "
          "--cuda-graph off (auto turns it off)");
  require(!o.evaluate || !o.resume.empty(),
          "--evaluate needs --resume FILE (the checkpoint to evaluate)");
  require(o.pretrained.empty() || !o.evaluate,
          "--evaluate evaluates --resume FILE: --pretrained does not apply");
  require(o.pretrained.empty() || o.resume.empty() || o.resume == kResumeAuto,
          "--pretrained starts a new run, --resume FILE continues one: give one of them "
          "(--resume auto with --pretrained continues a run when it has a last checkpoint)");
}

// The data and the model: what is trained on what.
void add_data_flags(cli::Command& c, TrainOptions& o) {
  c.text("--data", o.data, "DIR|SHARDS",
         "dataset root with train/ and val/, or WebDataset tar shards such as "
         "'DIR/train-{000000..000099}.tar' (required)");
  c.text("--val-data", o.val_data, "DIR|SHARDS",
         "the validation split: shards or an ImageFolder root (required with shards; default "
         "DIR/val)");
  c.integer("--shuffle-buffer", o.shuffle_buffer,
            "with shards: samples in each rank's shuffle buffer (shards are shuffled whole)");
  c.flag("--dummy", o.dummy,
         "random images instead of --data: uniform [0, 1), no transform, --image-size square "
         "(a first run on a node)");
  c.integer("--dummy-classes", o.dummy_classes, "--dummy's classes");
  c.option("--dummy-images", "T,V", "--dummy's training and validation images", "1281167,50000",
           [&o](const std::string& flag, const std::string& text) {
             const std::array<double, 2> counts = fixed_list<2, double>(flag, text);
             for (double count : counts) {
               if (count != std::floor(count) || count > 1e15) {
                 throw UsageError(flag + " takes two whole numbers TRAIN,VAL, got '" + text + "'");
               }
             }
             o.dummy_images = {static_cast<int64_t>(counts[0]), static_cast<int64_t>(counts[1])};
           });
  cli::add_arch(c, o.arch);
  c.integer("--epochs", o.epochs, "total epochs");
  cli::add_batch_size(c, o.batch_size, "images per rank per step; the global batch is printed", 1,
                      "it is per rank");
  c.integer("--accum-steps", o.accum_steps,
            "accumulate N batches' gradients per optimizer step, all-reduced once: an N times "
            "larger batch");
}

// The optimizer and its schedule.
void add_optimizer_flags(cli::Command& c, TrainOptions& o) {
  c.number("--lr", o.lr, "base learning rate; onecycle's maximum");
  c.option("--opt", "NAME",
           "optimizer: sgd|adamw|lars (torch.optim.SGD, torch.optim.AdamW, MLPerf's LARS)", "sgd",
           [&o](const std::string&, const std::string& text) { o.opt = parse_optimizer(text); });
  c.option("--momentum", "X", "SGD and LARS momentum", "0.9",
           [&o](const std::string& flag, const std::string& text) {
             o.momentum = cli::number_value(flag, text);
             o.momentum_given = true;
           });
  c.number("--wd,--weight-decay", o.weight_decay, "weight decay", "1e-4");
  c.flag("--nesterov", o.nesterov, "Nesterov momentum");
  c.flag(
      "--no-norm-weight-decay", [&o] { o.norm_weight_decay = false; },
      "no weight decay on BatchNorm parameters and biases");
  c.option("--opt-eps", "X", "adamw: eps; lars: the trust ratio's epsilon", "1e-8, lars 0",
           [&o](const std::string& flag, const std::string& text) {
             o.opt_eps = positive_value(flag, text, true, "added to a denominator");
           });
  c.option("--opt-betas", "B1,B2", "adamw: the moments' decay rates", "0.9,0.999",
           [&o](const std::string& flag, const std::string& text) {
             const auto betas = fixed_list<2, double>(flag, text);
             for (double beta : betas) {
               if (!(beta >= 0 && beta < 1)) {
                 throw UsageError(flag + " takes two numbers in [0, 1), got '" + text + "'");
               }
             }
             o.opt_betas = betas;
           });
  c.option("--lars-eta", "X", "lars: the trust coefficient", "1e-3",
           [&o](const std::string& flag, const std::string& text) {
             o.lars_eta = positive_value(flag, text, false, "the trust coefficient");
           });
  c.flag("--lars-adapt-all", o.lars_adapt_all,
         "lars: trust ratio and weight decay on BatchNorm parameters and biases too (MLPerf "
         "excludes them)");
  c.option("--clip-grad", "NORM", "clip the all-reduced gradients' global L2 norm to NORM", "off",
           [&o](const std::string& flag, const std::string& text) {
             o.clip_grad = positive_value(flag, text, false, "the max gradient norm");
           });
  c.option("--lr-schedule", "S",
           "step|cosine|onecycle|constant|poly (MLPerf's: power 2 to --min-lr, its warmup per step "
           "from --lr / warmup steps)",
           "step", [&o](const std::string&, const std::string& text) {
             o.lr_schedule = parse_schedule(text);
           });
  c.integer("--lr-step-size", o.lr_step_size, "step: epochs between decays");
  c.number("--min-lr", o.min_lr, "poly: the final rate");
  c.number("--lr-gamma", o.lr_gamma, "step: decay factor");
  c.integer("--warmup-epochs", o.warmup_epochs,
            "linear warmup epochs before step/cosine/constant (poly: per step)");
  c.number("--warmup-start-factor", o.warmup_start_factor,
           "warmup's first rate as a fraction of --lr");
  c.number("--label-smoothing", o.label_smoothing, "CrossEntropyLoss label smoothing");
}

// Where and how it runs.
void add_run_flags(cli::Command& c, TrainOptions& o) {
  c.integer("-j,--workers", o.workers, "data loading threads per rank (0: the rank's cores, <= 8)",
            "");
  c.integer("--threads", o.threads, "compute threads per rank (0: cores / ranks on the host)", "");
  c.text("--resume", o.resume, "FILE",
         "continue from a checkpoint (or start from a torchvision state_dict saved as "
         "safetensors); auto: from <checkpoint-dir>/last.safetensors if it exists, else from "
         "scratch (for a scheduler's restarts; ./auto for a file named auto)");
  c.text("--pretrained", o.pretrained, "FILE",
         "start a new run from FILE's weights (a torchvision state_dict saved as safetensors, "
         "tools/safetensors_torch.py; or a checkpoint): not its optimizer, schedule or epoch; "
         "with another class count its fc is replaced by a new one, initialized as torchvision "
         "does (fine-tuning). With --resume auto: only when there is no last checkpoint yet",
         "none");
  c.flag("-e,--evaluate", o.evaluate, "validate --resume FILE on DIR/val and exit");
  c.option("--seed", "N", "weights, sampler order and augmentation", "0",
           [&o](const std::string& flag, const std::string& text) {
             const int64_t seed = cli::integer_value(flag, text);
             if (seed < 0) throw UsageError(flag + " must be >= 0");
             o.seed = static_cast<uint64_t>(seed);
           });
  c.integer("-p,--print-freq", o.print_freq, "progress line every N steps");
  c.flag("--sync-bn", o.sync_bn, "SyncBatchNorm: batch statistics over all ranks");
  c.flag("--zero-init-residual", o.zero_init_residual,
         "zero-init each block's last BatchNorm weight");
  cli::add_device(c, o.device);
  cli::add_precision(c, o.precision);
  cli::add_conv_tuning(c, o.conv_tuning);
  cli::add_fusion(c, o.fusion);
  cli::add_cuda_graph(
      c, o.cuda_graph,
      "auto|on|off: replay each kind of micro-step (forward, loss, backward) as a "
      "CUDA graph, captured the second time it runs: one launch instead of "
      "hundreds, the gradients' all-reduces (and SyncBN's) inside it; the optimizer "
      "runs outside (auto: on a CUDA device without --trace, with one rank or a "
      "--comm of nccl or ring-nccl; on: an error where auto would not; off: kernel "
      "by kernel, the only way --step-metrics measures the share of communication "
      "hidden with several ranks)");
}

// The images: sizes, crops and normalization.
void add_image_flags(cli::Command& c, TrainOptions& o) {
  cli::add_image_size(c, o.image_size, "training crop; validation resizes to S/0.875");
  c.integer("--val-image-size", o.val_image_size,
            "validation's center crop, resized to N/0.875 first", "--image-size");
  c.option("--progressive-resize", "MIN,FIRST,LAST",
           "training crop MIN px through epoch FIRST, growing to --image-size at epoch LAST, in "
           "steps of 8 px",
           "off", [&o](const std::string& flag, const std::string& text) {
             const auto v = fixed_list<3, double>(flag, text);
             for (double x : v) {
               if (!(x > 0 && x == std::floor(x)))
                 throw UsageError(flag + " takes three whole numbers > 0");
             }
             o.progressive = {static_cast<int64_t>(v[0]), static_cast<int64_t>(v[1]),
                              static_cast<int64_t>(v[2])};
           });
  c.option("--crop-scale", "MIN,MAX", "RandomResizedCrop's area range", "0.08,1",
           [&o](const std::string& flag, const std::string& text) {
             o.crop_scale = fixed_list<2, double>(flag, text);
           });
  // Names and defaults of pytorch/vision's references/classification/train.py; semantics of
  // torchvision 0.14's transforms on PIL images (data/auto_augment.h, data/random_erasing.h).
  c.option("--auto-augment", "P",
           "none|ra|ta_wide: RandAugment or TrivialAugmentWide on the 8-bit crop after the flip "
           "(torchvision 0.14 on PIL, 31 magnitude bins, NEAREST, fill 0; vision's "
           "references/classification --auto-augment)",
           "none", [&o](const std::string&, const std::string& text) {
             o.auto_augment = parse_auto_augment(text);
           });
  c.integer("--ra-magnitude", o.ra_magnitude,
            "RandAugment's magnitude bin, 0..30 (vision's reference --ra-magnitude; timm's "
            "rand-mN)");
  c.integer("--ra-num-ops", o.ra_num_ops,
            "RandAugment's ops per image (torchvision's num_ops; timm's rand-nN)");
  c.number("--random-erase", o.random_erase,
           "RandomErasing's probability after Normalize, scale 0.02-0.33, ratio 0.3-3.3 "
           "(vision's reference --random-erase; timm's --reprob)");
  c.option("--random-erase-value", "V",
           "zero|random: erase with 0 or per-value N(0, 1) noise (torchvision's value=0 or "
           "'random'; timm's --remode const|pixel)",
           "zero", [&o](const std::string& flag, const std::string& text) {
             if (text != "zero" && text != "random")
               throw UsageError(flag + " takes zero or random, got '" + text + "'");
             o.random_erase_normal = text == "random";
           });
  c.option("--normalize", "M,M,M/S,S,S", "Normalize mean/std", "ImageNet's",
           [&o](const std::string& flag, const std::string& text) {
             const std::vector<std::string> halves = cli::split(text, '/');
             if (halves.size() != 2) {
               throw UsageError(flag + " takes MEAN,MEAN,MEAN/STD,STD,STD, got '" + text + "'");
             }
             o.normalize_mean = fixed_list<3, float>(flag, halves[0]);
             o.normalize_std = fixed_list<3, float>(flag, halves[1]);
           });
}

// MixUp and CutMix, with timm's train.py flags and defaults (data/batch_mixing.h).
void add_mixing_flags(cli::Command& c, TrainOptions& o) {
  data::MixConfig& m = o.mix;
  c.number("--mixup", m.mixup_alpha,
           "MixUp as timm's --mixup (its Mixup class): blend each image with its partner (image "
           "n-1-i of the rank's batch) by lambda "
           "~ Beta(X, X), targets likewise (0: off). With --mixup or --cutmix the loss "
           "takes soft targets (--label-smoothing folded in) and training top-1 counts each "
           "image's own label, the one weighted lambda: it reads lower than without mixing; "
           "validation is unmixed",
           "");
  c.number("--cutmix", m.cutmix_alpha,
           "CutMix as timm's --cutmix: paste a box of the partner of area 1 - lambda, lambda ~ "
           "Beta(X, X), lambda "
           "then the area kept (0: off)",
           "");
  c.option("--cutmix-minmax", "MIN,MAX",
           "timm's --cutmix-minmax: CutMix boxes with sides a random fraction in [MIN, MAX) of the "
           "image's instead "
           "(turns CutMix on, alpha 1)",
           "off", [&m](const std::string& flag, const std::string& text) {
             m.cutmix_minmax = fixed_list<2, double>(flag, text);
           });
  c.number("--mixup-prob", m.prob, "probability of mixing a batch, pair or element", "1");
  c.number("--mixup-switch-prob", m.switch_prob,
           "with both on: probability of CutMix rather than MixUp", "0.5");
  c.option("--mixup-mode", "M", "batch|pair|elem: one lambda per batch, pair or image", "batch",
           [&m](const std::string& flag, const std::string& text) {
             const std::optional<data::MixMode> mode = data::parse_mix_mode(text);
             if (!mode) throw UsageError(flag + " takes batch, pair or elem, got '" + text + "'");
             m.mode = *mode;
           });
  c.integer("--mixup-off-epoch", m.off_epoch,
            "stop mixing from this epoch on (0-based, as timm; 0: never)", "");
}

// Communication, checkpoints, metrics and the run's limits.
void add_output_flags(cli::Command& c, TrainOptions& o) {
  c.number("--bucket-cap-mb", o.bucket_cap_mb, "gradient bucket size for the all-reduce");
  c.text("--checkpoint-dir", o.checkpoint_dir, "DIR", "last.safetensors, best.safetensors");
  c.text("--metrics", o.metrics, "FILE", "one JSON line per epoch",
         "<checkpoint-dir>/metrics.jsonl");
  c.text("--step-metrics", o.step_metrics, "FILE",
         "one JSON line per optimizer step (none)\nAccuracies and shares are percents (0-100) "
         "everywhere: printed, in the JSON (keys ending _pct) and in the checkpoint "
         "(best_val_top1_pct)");
  c.text("--tensorboard", o.tensorboard, "DIR",
         "also write the step and epoch figures as TensorBoard event files in DIR (rank 0; "
         "tensorboard --logdir DIR shows them)",
         "none");
  c.text("--trace", o.trace, "FILE",
         "write a timeline of the --trace-steps (data wait, each layer's forward and backward, "
         "each gradient bucket's all-reduce, the optimizer) as a Chrome/Perfetto trace; with N "
         "ranks each writes its own, FILE with .rankR before the extension",
         "none");
  c.option("--trace-steps", "A-B", "the optimizer steps --trace records (1-based, inclusive)",
           "3-5", [&o](const std::string& flag, const std::string& text) {
             o.trace_steps = parse_trace_steps(flag, text);
           });
  c.number("--comm-timeout", o.comm_timeout_s, "a collective waiting longer ends the job");
  c.text("--comm", o.comm, "NAME",
         "gradient communicator: auto|ring-shm|ring-mpi|ring-hier|mpi|nccl|ring-nccl (auto: "
         "ring-shm on one host; across hosts ring-hier (shared memory within each host, rings "
         "across), or ring-mpi with one rank per host or uneven hosts; ring-nccl (our ring over "
         "NCCL) on GPUs)");
  c.integer("--max-steps", o.max_steps, "stop after N optimizer steps, saving last (0: no limit)",
            "");
  c.integer("--save-every-steps", o.save_every_steps,
            "also save last every N optimizer steps inside an epoch, for long epochs (0: at each "
            "epoch's end only)",
            "");
  c.option("--ema", "DECAY",
           "also keep an exponential moving average of the weights and BatchNorm statistics "
           "(e.g. 0.9998), updated every optimizer step, evaluated beside them each epoch and "
           "saved as ema.safetensors with last",
           "off", [&o](const std::string& flag, const std::string& text) {
             o.ema_decay = cli::number_value(flag, text);
             if (!(o.ema_decay >= 0 && o.ema_decay < 1))
               throw UsageError(flag + " must be in [0, 1)");
           });
  c.text("--dump-batches", o.dump_batches, "DIR",
         "each step's batch of each rank, for replaying the run in PyTorch "
         "(tools/replay_in_torch.py)",
         "none");
}

}  // namespace

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
    case ScheduleName::poly:
      return "poly";
  }
  return "?";
}

std::string_view optimizer_name(OptimizerName name) {
  switch (name) {
    case OptimizerName::sgd:
      return "sgd";
    case OptimizerName::adamw:
      return "adamw";
    case OptimizerName::lars:
      return "lars";
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

cli::Command train_command(TrainOptions& o) {
  cli::Command command(
      "resnet_train", "--data DIR [flags]        (mpirun -np N resnet_train ... for N ranks)",
      "Trains a torchvision ResNet data-parallel on an ImageFolder tree DIR/train, DIR/val, or on "
      "WebDataset tar shards.");
  add_data_flags(command, o);
  add_optimizer_flags(command, o);
  add_run_flags(command, o);
  add_image_flags(command, o);
  add_mixing_flags(command, o);
  add_output_flags(command, o);
  return command;
}

void check_train_options(const TrainOptions& options) {
  check_values(options);
}

}  // namespace engine::train
