// What resnet_train checks before any work, so that a run that cannot succeed ends at once
// with one line naming the flag or the path: the dataset folders (train/ and val/, each an
// ImageFolder with images, the same classes in both), the checkpoint folder (created,
// writable, with room for two checkpoints), and the --resume file (exists, is a checkpoint of
// this arch and class count). Each check throws engine::Error; resnet_train runs them on every
// rank and agrees on the outcome (a rank that cannot see the data fails the run too).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "data/image_folder.h"
#include "train/train_options.h"

namespace engine::train {

struct Datasets {
  std::optional<data::ImageFolder> train;  // empty with --evaluate
  data::ImageFolder val;
  const std::vector<std::string>& classes() const;
};

// Scans DIR/train (unless evaluating) and DIR/val; with --dummy, random datasets instead.
Datasets scan_datasets(const TrainOptions& options);

// Creates the folder, writes and removes a probe file in it, and checks that the file system
// has room for two checkpoints of `checkpoint_bytes` (the temp file and the one it replaces).
void check_checkpoint_dir(const std::string& dir, int64_t checkpoint_bytes);

// Creates the folder of `flag` and writes and removes a probe file in it.
void check_writable_dir(const std::string& flag, const std::string& dir);

// The --resume file: present, a safetensors checkpoint, of options.arch with `num_classes`
// outputs, and (when it records them) of the same classes.
void check_resume_file(const TrainOptions& options, const std::vector<std::string>& classes);

// The --pretrained file: present, a safetensors state_dict or checkpoint of options.arch (any
// class count: another one gets a new classifier).
void check_pretrained_file(const TrainOptions& options);

}  // namespace engine::train
