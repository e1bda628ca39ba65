// The flags that resnet_train, probe_step and the benchmarks share, registered here once each:
// one name, one meaning and one check for every binary that takes them. A binary picks the
// ones it needs (and says what its default is where that differs, as bench_kernels' batch
// does between the CPU and a GPU); the old spellings each replaced are refused with a hint.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/device.h"
#include "nn/batchnorm_fusion.h"
#include "nn/conv_tuning.h"
#include "nn/precision.h"
#include "train/cli_command.h"

namespace engine::cli {

// -a/--arch NAME: one of nn::resnet_arch_names().
void add_arch(Command& command, std::string& arch, Shown shown = {});

// --image-size S: a square image's side in pixels, at least `minimum` (32 by default: a
// ResNet's stem and four stages halve it five times). `help` says which image (the training
// crop, a benchmark's input).
void add_image_size(Command& command, int64_t& size, std::string_view help, int64_t minimum = 32,
                    std::string_view why = "a ResNet's stem and four stages halve it five times");

// --device D: auto, cpu, cuda or cuda:N (resolve_device picks the GPU).
void add_device(Command& command, std::string& device, Shown shown = {});

// --precision P: fp32, tf32 (CUDA only: check_precision_device) or bf16.
void add_precision(Command& command, nn::Precision& precision);
// The one "tf32 needs CUDA" check: the CPU has no TF32 math, and running exact fp32 under the
// name tf32 would mislead. A UsageError naming --precision and --device.
void check_precision_device(const nn::Precision& precision, const Device& device);

// --conv-tuning auto|on|off, --conv-tuning-file FILE, --conv-tuning-seconds S: how the CUDA
// convolutions' algorithms are chosen (nn/conv_tuning.h).
void add_conv_tuning(Command& command, nn::ConvTuning& tuning);

// --fusion none|stats|apply|block|full (and --no-fusion, none): how much of each training BatchNorm
// the CUDA convolutions do (nn/batchnorm_fusion.h), so that runs can be compared with and without.
void add_fusion(Command& command, nn::BatchNormFusion& fusion);

// --cuda-graph auto|on|off: capture the training step once as a CUDA graph and replay it;
// `help` says what is captured and when auto turns it on.
enum class CudaGraphMode { automatic, on, off };
void add_cuda_graph(Command& command, CudaGraphMode& mode, std::string_view help);
// Whether the step on `device` is captured: auto and on on a CUDA device; on with a CPU device
// is a UsageError naming both flags.
bool cuda_graph_enabled(CudaGraphMode mode, const Device& device);

// -b/--batch-size N: images per rank per step, at least `minimum` (`why` says why, if > 1).
void add_batch_size(Command& command, int64_t& batch, std::string_view help, int64_t minimum = 1,
                    std::string_view why = "", Shown shown = {});
// -b/--batch-size A,B,...: the per-rank batches a benchmark sweeps, each at least `minimum`.
void add_batch_sizes(Command& command, std::vector<int64_t>& batches, std::string_view help,
                     int64_t minimum = 1, std::string_view why = "");

// --json: one JSON object per result row on stdout instead of the table.
void add_json(Command& command, bool& json);

}  // namespace engine::cli
