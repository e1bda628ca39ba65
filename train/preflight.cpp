#include "train/preflight.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "data/shard_dataset.h"
#include "data/shard_pattern.h"
#include "kernels/error.h"
#include "nn/checkpoint.h"

namespace engine::train {

namespace {

namespace fs = std::filesystem;

std::string split_root(const TrainOptions& options, const char* split) {
  const fs::path root = fs::path(options.data) / split;
  std::error_code error;
  if (!fs::is_directory(root, error)) {
    fail("--data " + options.data + ": no " + split + "/ folder (expected " + root.string() +
         "/<class>/<image>)");
  }
  return root.string();
}

std::string join(const std::vector<std::string>& names, size_t limit = 5) {
  std::string text;
  for (size_t i = 0; i < names.size() && i < limit; ++i)
    text += (i ? ", " : "") + names[i];
  if (names.size() > limit) text += ", ...";
  return text;
}

// The validation split of --val-data: shards (named as the training split's classes when they
// have no classes.txt) or a folder.
data::ImageFolder scan_val_split(const TrainOptions& options,
                                 const std::vector<std::string>& train_classes) {
  if (data::is_shard_pattern(options.val_data)) {
    return data::scan_shards(options.val_data, {.classes = train_classes, .flag = "--val-data"});
  }
  std::error_code error;
  if (!fs::is_directory(options.val_data, error)) {
    fail("--val-data " + options.val_data + ": neither tar shards (PATTERN.tar) nor a folder");
  }
  return data::ImageFolder::scan(options.val_data);
}

Datasets scan_shard_datasets(const TrainOptions& options) {
  if (options.val_data.empty()) {
    fail("--data " + options.data +
         " names tar shards: give the validation split with "
         "--val-data (shards such as DIR/val-{000000..000009}.tar, or a folder)");
  }
  std::optional<data::ImageFolder> train;
  if (!options.evaluate) train.emplace(data::scan_shards(options.data));
  data::ImageFolder val =
      scan_val_split(options, train ? train->classes() : std::vector<std::string>{});
  if (train && train->classes() != val.classes()) {
    fail("--data " + options.data + " has " + std::to_string(train->classes().size()) +
         " classes (" + join(train->classes()) + ") but --val-data " + options.val_data + " has " +
         std::to_string(val.classes().size()) + " (" + join(val.classes()) +
         "): the labels would not match");
  }
  return {std::move(train), std::move(val)};
}

}  // namespace

const std::vector<std::string>& Datasets::classes() const {
  return train ? train->classes() : val.classes();
}

Datasets scan_datasets(const TrainOptions& options) {
  if (options.dummy) {
    std::optional<data::ImageFolder> train;
    if (!options.evaluate) {
      train.emplace(data::ImageFolder::synthetic("--dummy train", options.dummy_images[0],
                                                 options.dummy_classes));
    }
    return {std::move(train), data::ImageFolder::synthetic("--dummy val", options.dummy_images[1],
                                                           options.dummy_classes)};
  }
  if (data::is_shard_pattern(options.data)) return scan_shard_datasets(options);
  std::error_code error;
  if (!fs::is_directory(options.data, error)) {
    fail("--data " + options.data +
         ": not a folder (expected train/ and val/ in it) nor tar shards (PATTERN.tar)");
  }
  // Both folders exist before either is scanned (a scan can take seconds).
  const std::string train_root = options.evaluate ? "" : split_root(options, "train");
  const std::string val_root =
      options.val_data.empty() ? split_root(options, "val") : options.val_data;
  std::optional<data::ImageFolder> train;
  if (!options.evaluate) train.emplace(data::ImageFolder::scan(train_root));
  Datasets datasets{std::move(train), data::ImageFolder::scan(val_root)};
  if (datasets.train) {
    if (datasets.train->classes() != datasets.val.classes()) {
      fail("--data " + options.data + ": train/ has " +
           std::to_string(datasets.train->classes().size()) + " classes (" +
           join(datasets.train->classes()) + ") but val/ has " +
           std::to_string(datasets.val.classes().size()) + " (" + join(datasets.val.classes()) +
           "): the labels would not match");
    }
  }
  return datasets;
}

void check_writable_dir(const std::string& flag, const std::string& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error || !fs::is_directory(dir)) {
    fail(flag + " " + dir + ": cannot create the folder" +
         (error ? ": " + error.message() : std::string(" (a file is in the way)")));
  }
  const std::string probe = dir + "/.resnet_train_probe." + std::to_string(getpid());
  std::FILE* file = std::fopen(probe.c_str(), "w");
  const bool written = file && std::fputs("probe\n", file) >= 0;
  const int write_error = errno;
  if (file) std::fclose(file);
  std::remove(probe.c_str());
  if (!written) fail(flag + " " + dir + ": not writable (" + std::strerror(write_error) + ")");
}

void check_checkpoint_dir(const std::string& dir, int64_t checkpoint_bytes) {
  check_writable_dir("--checkpoint-dir", dir);
  struct statvfs space = {};
  if (statvfs(dir.c_str(), &space) == 0) {
    const auto free_bytes = static_cast<double>(space.f_bavail) * space.f_frsize;
    const double needed = 2.0 * static_cast<double>(checkpoint_bytes);
    if (free_bytes < needed) {
      char text[160];
      std::snprintf(text, sizeof text,
                    ": %.1f MB free, a checkpoint needs %.1f MB (twice that while it is replaced)",
                    free_bytes / 1e6, checkpoint_bytes / 1e6);
      fail("--checkpoint-dir " + dir + text);
    }
  }
}

void check_resume_file(const TrainOptions& options, const std::vector<std::string>& classes) {
  const std::string& path = options.resume;
  std::error_code error;
  if (!fs::is_regular_file(path, error)) fail("--resume " + path + ": no such file");
  const nn::CheckpointInfo info = nn::read_checkpoint_info(path);
  const std::string arch = nn::checkpoint_arch(path);
  if (arch != options.arch) {
    fail("--resume " + path + " holds " + arch + ", but --arch is " + options.arch);
  }
  const auto num_classes = static_cast<int64_t>(classes.size());
  if (info.num_classes != num_classes) {
    fail("--resume " + path + " has " + std::to_string(info.num_classes) +
         " classes, but the dataset " + options.data + " has " + std::to_string(num_classes) +
         " (to fine-tune its weights onto these classes: --pretrained " + path + ")");
  }
  if (!info.state.classes.empty() && info.state.classes != classes) {
    fail("--resume " + path + " was trained on classes (" + join(info.state.classes) +
         ") that differ from the dataset's (" + join(classes) + ")");
  }
}

void check_pretrained_file(const TrainOptions& options) {
  const std::string& path = options.pretrained;
  std::error_code error;
  if (!fs::is_regular_file(path, error)) fail("--pretrained " + path + ": no such file");
  const std::string arch = nn::checkpoint_arch(path);
  if (arch != options.arch) {
    fail("--pretrained " + path + " holds " + arch + ", but --arch is " + options.arch);
  }
}

}  // namespace engine::train
