// Checkpoints: a ResNet's state_dict in torchvision's names, shapes and layouts, as a
// safetensors file, so that a file written here loads into torchvision with strict=True and a
// torchvision state_dict saved as safetensors loads here. On top of the model's tensors a
// checkpoint holds what resuming a run needs:
//   - "<bn>.num_batches_tracked": I64 scalars (shape []), as torchvision keeps them
//   - "optimizer.<state>.<parameter name>": the optimizer's state buffers in the parameter's
//     torchvision shape and layout, <state> being torch's key (keyed by name not index):
//     "momentum_buffer" (SGD, LARS), "exp_avg" and "exp_avg_sq" (AdamW)
//   - __metadata__: "format" (kCheckpointFormat), "format_version", "engine_version", "arch",
//     "num_classes", the CheckpointState (epoch, step, sampler position, classes as a JSON
//     list, image_size, normalize_mean/std as comma lists, seed, "extra.<key>") and the
//     optimizer's name, flags, hyper-parameters and counters ("optimizer" = "sgd",
//     "optimizer.started", "optimizer.lr", ..., AdamW's "optimizer.steps")
//
// Conv filters are KRSC in the engine and OIHW in the file; every other tensor is stored as
// the engine holds it. Models on a GPU are staged through host memory both ways.
//
// Loading checks every tensor's name, dtype and shape against the model before it touches
// the model, and reports every mismatch in one engine::Error naming the file:
//   "ckpt.safetensors does not fit resnet18 (1000 classes); it holds resnet18 (10 classes):
//    fc.weight is F32 [10, 512], expected [1000, 512]; ...; missing (1): bn1.running_var;
//    unexpected (1): 'bn1.running_vra'"
// A file without the engine's metadata is read as a plain state_dict (torchvision's weights).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/stream.h"
#include "nn/optimizer.h"
#include "nn/resnet.h"
#include "nn/sgd.h"

namespace engine::nn {

inline constexpr std::string_view kCheckpointFormat = "resnet-engine-checkpoint";
// Bumped when a file written now would be misread by an older reader; a reader refuses
// files of a newer version.
inline constexpr int kCheckpointFormatVersion = 1;
// Recorded in every checkpoint (informational: format_version decides compatibility).
inline constexpr std::string_view kEngineVersion = "0.1.0";
inline constexpr std::string_view kMomentumPrefix = "optimizer.momentum_buffer.";
// Every optimizer state buffer a checkpoint may hold, by torch's state key.
inline constexpr std::string_view kOptimizerBuffers[] = {"momentum_buffer", "exp_avg",
                                                         "exp_avg_sq"};

// Where a resumed run's data loader starts: DistributedSampler::set_epoch's value, and how
// many samples of that epoch's order this rank had consumed.
struct SamplerPosition {
  int64_t epoch = 0;
  int64_t index = 0;
  friend bool operator==(const SamplerPosition&, const SamplerPosition&) = default;
};

// What a checkpoint records besides tensors. Every field has a default, so a trainer sets
// what it knows; a plain state_dict loads with these defaults.
struct CheckpointState {
  int64_t epoch = 0;  // epochs completed
  int64_t step = 0;   // optimizer steps taken
  SamplerPosition sampler;
  std::vector<std::string> classes;  // ImageFolder's class names, in label order
  int64_t image_size = 0;            // the training crop; 0: not recorded
  std::vector<float> normalize_mean, normalize_std;
  uint64_t seed = 0;
  // Anything else, as "extra.<key>" metadata (e.g. the LR schedule's description).
  std::map<std::string, std::string> extra;
  friend bool operator==(const CheckpointState&, const CheckpointState&) = default;
};

// torchvision's shape of a parameter (OIHW for a KRSC filter), and its `p.numel()` values,
// given in the engine's layout, in torchvision's.
Shape torch_shape(const ParameterInfo& p);
std::vector<float> to_torch_layout(const ParameterInfo& p, const float* values);

// Writes `path` atomically (nn/safetensors.h): the model's tensors, and with an optimizer its
// momentum buffer and flags. Waits for `stream`, the model's.
void save_checkpoint(const std::string& path, const ResNet& model, const CheckpointState& state,
                     Stream& stream);
void save_checkpoint(const std::string& path, const ResNet& model, const Optimizer& optimizer,
                     const CheckpointState& state, Stream& stream);

// What a checkpoint's header says, read without a model (tensor data is not read).
struct CheckpointInfo {
  std::string path;
  // false: no engine metadata, i.e. a plain state_dict; state then holds the defaults.
  bool engine_checkpoint = false;
  // From the metadata, or for a plain state_dict the zoo arch whose tensor names the file
  // holds exactly (empty when none does) and fc.weight's rows (0 without one).
  std::string arch;
  int64_t num_classes = 0;
  CheckpointState state;
  bool has_momentum = false;  // the file holds optimizer.momentum_buffer.* tensors
  // The kOptimizerBuffers whose tensors the file holds.
  std::vector<std::string> optimizer_buffers;
  std::string optimizer;  // "sgd", "adamw", "lars"; empty when saved without one
  bool optimizer_started = false;
  std::optional<SgdConfig> optimizer_config;    // when the file was saved with SGD
  std::map<std::string, std::string> metadata;  // __metadata__ as stored
};

// Throws engine::Error naming the file for a file that is not safetensors, or whose engine
// metadata is malformed, of another format or of a newer format version.
CheckpointInfo read_checkpoint_info(const std::string& path);
// The arch the checkpoint holds, for "the checkpoint is resnet50, --arch says resnet18";
// throws when neither the metadata nor the tensor names identify one.
std::string checkpoint_arch(const std::string& path);

struct LoadedCheckpoint {
  CheckpointInfo info;
  // The optimizer's buffers in the loaded model's flat parameter layout
  // (ParameterSet::flat_values), by torch's state key; empty when the file holds none.
  std::map<std::string, std::vector<float>> optimizer_buffers;
  // With LoadOptions::new_head: the file's classifier was left out (another class count) and
  // the model keeps its own, freshly initialized.
  bool new_head = false;
};

struct LoadOptions {
  // Fine-tuning onto other classes: when the file's class count differs from the model's,
  // its classifier (torchvision's "fc": weight, bias and their optimizer state) is neither
  // checked nor loaded, as torchvision users replace model.fc before training.
  bool new_head = false;
};

// Checks the file against `model` (every name, dtype and shape; all mismatches in one error)
// and then copies parameters, BN statistics and batch counters into it. On any failure the
// model is left as it was. `stream` is the model's; waits for it.
LoadedCheckpoint load_checkpoint(const std::string& path, ResNet& model, Stream& stream,
                                 const LoadOptions& options = {});

// The classifier's module in torchvision's ResNets.
inline constexpr std::string_view kHeadModule = "fc";

// Resumes `optimizer` (built over the same model) from a loaded checkpoint: its buffers,
// started flag and counters. A checkpoint without momentum (a plain state_dict, or a run with
// momentum 0) leaves SGD to start its momentum at the next step, as torch does. A checkpoint
// of another optimizer is an engine::Error naming both.
void load_optimizer_state(const LoadedCheckpoint& checkpoint, Optimizer& optimizer, Stream& stream);

}  // namespace engine::nn
