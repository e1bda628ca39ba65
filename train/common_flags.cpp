#include "train/common_flags.h"

#include <algorithm>

#include "nn/resnet.h"

namespace engine::cli {

namespace {

std::string arch_choices(std::string_view separator) {
  std::string names;
  for (const std::string& name : nn::resnet_arch_names()) {
    if (!names.empty()) names += separator;
    names += name;
  }
  return names;
}

// "... must be >= 2 (BatchNorm needs two values)".
void require_at_least(const std::string& flag, int64_t value, int64_t minimum,
                      std::string_view why) {
  if (value >= minimum) return;
  std::string message = flag + " must be >= " + std::to_string(minimum);
  if (!why.empty()) message += " (" + std::string(why) + ")";
  throw UsageError(message);
}

}  // namespace

void add_arch(Command& command, std::string& arch, Shown shown) {
  command.option("-a,--arch", "NAME", arch_choices("|"), shown.value_or(arch),
                 [&arch](const std::string& flag, const std::string& text) {
                   const auto& names = nn::resnet_arch_names();
                   if (std::find(names.begin(), names.end(), text) == names.end()) {
                     throw UsageError(flag + ": unknown architecture '" + text + "' (choose from " +
                                      arch_choices(", ") + ")");
                   }
                   arch = text;
                 });
}

void add_image_size(Command& command, int64_t& size, std::string_view help, int64_t minimum,
                    std::string_view why) {
  command.option(
      "--image-size", "S", help, std::to_string(size),
      [&size, minimum, why = std::string(why)](const std::string& flag, const std::string& text) {
        size = integer_value(flag, text);
        require_at_least(flag, size, minimum, why);
      });
}

void add_device(Command& command, std::string& device, Shown shown) {
  command.option(
      "--device", "D", "auto|cpu|cuda|cuda:N (auto: the GPU of the local rank if any)",
      shown.value_or(device), [&device](const std::string& flag, const std::string& text) {
        if (text != "auto") {
          try {
            (void)parse_device(text);
          } catch (const Error&) {
            throw UsageError(flag + " takes auto, cpu, cuda or cuda:N, got '" + text + "'");
          }
        }
        device = text;
      });
}

void add_conv_tuning(Command& command, nn::ConvTuning& tuning) {
  command.option("--conv-tuning", "M",
                 "auto|on|off: time each convolution's candidate CUDA kernels once and run the "
                 "fastest (auto: on a GPU, not on the sim device; off: the heuristic's)",
                 "auto", [&tuning](const std::string& flag, const std::string& text) {
                   const auto mode = nn::parse_conv_tuning_mode(text);
                   if (!mode) throw UsageError(flag + " takes auto, on or off, got '" + text + "'");
                   tuning.mode = *mode;
                 });
  command.text("--conv-tuning-file", tuning.file, "FILE", "the tuning cache (none: no cache)",
               "~/.cache/resnet-engine/conv-plans-<gpu>.tsv");
  command.option("--conv-tuning-seconds", "S",
                 "cap on the timing; convolutions left over keep the heuristic's kernels", "60",
                 [&tuning](const std::string& flag, const std::string& text) {
                   tuning.seconds = number_value(flag, text);
                   if (!(tuning.seconds >= 0)) throw UsageError(flag + " must be >= 0");
                 });
}

void add_fusion(Command& command, nn::BatchNormFusion& fusion) {
  command.option(
      "--fusion", "F",
      "how much of each BatchNorm the CUDA convolutions do: none, stats (its training "
      "statistics in the epilogue of the convolution before it), apply (also its "
      "normalize and ReLU in the loads of the convolution after it, inside a block), block "
      "(also its backward sums in that convolution's input gradient) or full (also a "
      "block's last BatchNorm's in the next block's input gradient)",
      std::string(nn::batchnorm_fusion_name(fusion)),
      [&fusion](const std::string& flag, const std::string& text) {
        const auto parsed = nn::batchnorm_fusion_from_name(text);
        if (!parsed) {
          throw UsageError(flag + " must be none, stats, apply, block or full, got '" + text + "'");
        }
        fusion = *parsed;
      });
  command.flag(
      "--no-fusion", [&fusion] { fusion = nn::BatchNormFusion::none; }, "--fusion none");
}

void add_cuda_graph(Command& command, CudaGraphMode& mode, std::string_view help) {
  command.option("--cuda-graph", "M", std::string(help), "auto",
                 [&mode](const std::string& flag, const std::string& text) {
                   if (text == "auto") {
                     mode = CudaGraphMode::automatic;
                   } else if (text == "on") {
                     mode = CudaGraphMode::on;
                   } else if (text == "off") {
                     mode = CudaGraphMode::off;
                   } else {
                     throw UsageError(flag + " takes auto, on or off, got '" + text + "'");
                   }
                 });
}

bool cuda_graph_enabled(CudaGraphMode mode, const Device& device) {
  if (mode == CudaGraphMode::on && !device.is_cuda()) {
    throw UsageError("--cuda-graph on needs a CUDA device, and --device is " + device.str());
  }
  return mode != CudaGraphMode::off && device.is_cuda();
}

void add_precision(Command& command, nn::Precision& precision) {
  command.option("--precision", "P",
                 "fp32, tf32 (fp32 with convolutions and linear layers on TF32 tensor cores, "
                 "CUDA only) or bf16 (bf16 activations, fp32 master weights)",
                 std::string(nn::precision_name(precision)),
                 [&precision](const std::string& flag, const std::string& text) {
                   const auto parsed = nn::precision_from_name(text);
                   if (!parsed)
                     throw UsageError(flag + " takes fp32, tf32 or bf16, got '" + text + "'");
                   precision = *parsed;
                 });
}

void check_precision_device(const nn::Precision& precision, const Device& device) {
  if (precision.fp32_math == Fp32Math::tf32 && !device.is_cuda()) {
    throw UsageError(
        "--precision tf32 needs --device cuda (the CPU computes fp32 exactly; this "
        "runs on " +
        device.str() + ")");
  }
}

void add_batch_size(Command& command, int64_t& batch, std::string_view help, int64_t minimum,
                    std::string_view why, Shown shown) {
  command.option(
      "-b,--batch-size", "N", help, shown.value_or(std::to_string(batch)),
      [&batch, minimum, why = std::string(why)](const std::string& flag, const std::string& text) {
        batch = integer_value(flag, text);
        require_at_least(flag, batch, minimum, why);
      });
  command.renamed("--batch", "-b/--batch-size");
  command.renamed("--batches", "-b/--batch-size");
}

void add_batch_sizes(Command& command, std::vector<int64_t>& batches, std::string_view help,
                     int64_t minimum, std::string_view why) {
  std::string shown;
  for (int64_t batch : batches) {
    if (!shown.empty()) shown += ',';
    shown += std::to_string(batch);
  }
  command.option("-b,--batch-size", "A,B,...", help, shown,
                 [&batches, minimum, why = std::string(why)](const std::string& flag,
                                                             const std::string& text) {
                   batches = integer_list(flag, text);
                   for (int64_t batch : batches)
                     require_at_least(flag, batch, minimum, why);
                 });
  command.renamed("--batch", "-b/--batch-size");
  command.renamed("--batches", "-b/--batch-size");
}

void add_json(Command& command, bool& json) {
  command.flag("--json", json, "one JSON object per result row on stdout instead of the table");
}

}  // namespace engine::cli
