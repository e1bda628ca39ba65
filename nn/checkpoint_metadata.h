// A checkpoint's __metadata__ (nn/checkpoint.h): CheckpointState, the model's identity and the
// optimizer's flags as safetensors' string-to-string map, and back. Internal to nn/.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "nn/checkpoint.h"
#include "nn/optimizer.h"

namespace engine::nn {

// optimizer may be null (a checkpoint of the model alone).
std::map<std::string, std::string> encode_checkpoint_metadata(std::string_view arch,
                                                              int64_t num_classes,
                                                              const CheckpointState& state,
                                                              const Optimizer* optimizer);

// Fills info's engine_checkpoint, arch, num_classes, state, optimizer_started and
// optimizer_config from info.metadata. A map without "format" is a plain state_dict's and
// leaves them as they are. Throws engine::Error naming info.path and the key for a value
// that does not parse, another format or a newer format version.
void decode_checkpoint_metadata(CheckpointInfo& info);

}  // namespace engine::nn
