#include "train/preflight.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

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
  std::error_code error;
  if (!fs::is_directory(options.data, error)) {
    fail("--data " + options.data + ": not a folder (expected train/ and val/ in it)");
  }
  // Both folders exist before either is scanned (a scan can take seconds).
  const std::string train_root = options.evaluate ? "" : split_root(options, "train");
  const std::string val_root = split_root(options, "val");
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
