#include "data/image_folder.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <thread>

#include <nlohmann/json.hpp>

#include "data/directory_walk.h"
#include "data/warnings.h"
#include "kernels/error.h"

namespace engine::data {

namespace {

// The image files of one class, in torchvision's order, as paths relative to the class folder.
std::vector<std::string> scan_class(const std::string& class_dir) {
  std::vector<DirectoryListing> listings = walk_directory(class_dir);
  // sorted(os.walk(...)) orders the directories by their full path string.
  std::sort(listings.begin(), listings.end(),
            [](const DirectoryListing& a, const DirectoryListing& b) {
              return a.relative_dir < b.relative_dir;
            });
  std::vector<std::string> files;
  for (DirectoryListing& listing : listings) {
    std::sort(listing.files.begin(), listing.files.end());
    for (const std::string& name : listing.files) {
      if (has_image_extension(name)) files.push_back(listing.relative_dir + "/" + name);
    }
  }
  return files;
}

// A class name as a JSON string. Folder names are bytes: one that is not UTF-8 gets U+FFFD,
// so the mapping stays valid JSON (the name itself is kept everywhere else).
std::string json_string(std::string_view text) {
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

bool has_image_extension(std::string_view file_name) {
  for (std::string_view extension : kImageExtensions) {
    if (file_name.size() < extension.size()) continue;
    const std::string_view tail = file_name.substr(file_name.size() - extension.size());
    const bool match = std::equal(tail.begin(), tail.end(), extension.begin(), [](char a, char b) {
      return std::tolower(static_cast<unsigned char>(a)) == b;
    });
    if (match) return true;
  }
  return false;
}

ImageFolder ImageFolder::scan(const std::string& root, const ImageFolderOptions& options) {
  ImageFolder folder;
  folder.root_ = root;
  std::string error;
  folder.classes_ = list_subdirectories(root, error);
  if (!error.empty()) fail("ImageFolder: cannot read the dataset folder " + root + ": " + error);
  if (folder.classes_.empty()) {
    fail("ImageFolder: no class folders in " + root + " (expected " + root + "/<class>/<image>)");
  }
  std::sort(folder.classes_.begin(), folder.classes_.end());

  const size_t class_count = folder.classes_.size();
  std::vector<std::vector<std::string>> files(class_count);
  std::atomic<size_t> next_class{0};
  auto scan_classes = [&] {
    for (size_t c = next_class++; c < class_count; c = next_class++) {
      files[c] = scan_class(root + "/" + folder.classes_[c]);
    }
  };
  const size_t thread_count =
      std::clamp<size_t>(static_cast<size_t>(std::max(options.scan_threads, 1)), 1, class_count);
  std::vector<std::jthread> threads;
  for (size_t t = 1; t < thread_count; ++t)
    threads.emplace_back(scan_classes);
  scan_classes();
  threads.clear();

  for (size_t c = 0; c < class_count; ++c) {
    const std::string& name = folder.classes_[c];
    if (files[c].empty()) {
      folder.empty_classes_.push_back(name);
      warn("ImageFolder: class folder " + root + "/" + name +
           " holds no image file; it keeps class index " + std::to_string(c));
    }
    for (const std::string& file : files[c]) {
      folder.path_bytes_ += name;
      folder.path_bytes_ += file;
      folder.path_ends_.push_back(folder.path_bytes_.size());
      folder.labels_.push_back(static_cast<int32_t>(c));
    }
    std::vector<std::string>().swap(files[c]);
  }
  if (folder.labels_.empty()) {
    fail("ImageFolder: no image files in any class folder of " + root +
         " (extensions .jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp, any case)");
  }
  return folder;
}

ImageFolder ImageFolder::synthetic(const std::string& name, int64_t images, int64_t classes) {
  ENGINE_REQUIRE(images >= 1 && classes >= 1,
                 "ImageFolder::synthetic: " + name + " needs at least one image and one class");
  ImageFolder folder;
  folder.root_ = name;
  folder.synthetic_ = true;
  for (int64_t c = 0; c < classes; ++c)
    folder.classes_.push_back(std::to_string(c));
  folder.labels_.resize(static_cast<size_t>(images));
  for (int64_t i = 0; i < images; ++i)
    folder.labels_[static_cast<size_t>(i)] = static_cast<int32_t>(i % classes);
  return folder;
}

ImageFolder ImageFolder::from_samples(std::string root, std::vector<std::string> classes,
                                      const std::vector<std::string>& relative_paths,
                                      std::vector<int32_t> labels,
                                      std::shared_ptr<const ShardIndex> shards) {
  ENGINE_REQUIRE(relative_paths.size() == labels.size(),
                 "ImageFolder::from_samples: " + root + " has a label per sample");
  ImageFolder folder;
  folder.root_ = std::move(root);
  folder.classes_ = std::move(classes);
  for (const std::string& path : relative_paths) {
    folder.path_bytes_ += path;
    folder.path_ends_.push_back(folder.path_bytes_.size());
  }
  folder.labels_ = std::move(labels);
  folder.shards_ = std::move(shards);
  return folder;
}

std::string_view ImageFolder::relative_path(size_t index) const {
  ENGINE_REQUIRE(index < labels_.size(), "ImageFolder: sample index " + std::to_string(index) +
                                             " out of range (" + std::to_string(size()) + ")");
  if (synthetic_) return {};
  const uint64_t begin = index == 0 ? 0 : path_ends_[index - 1];
  return std::string_view(path_bytes_).substr(begin, path_ends_[index] - begin);
}

std::string ImageFolder::path(size_t index) const {
  if (synthetic_) return root_ + "/" + std::to_string(index);
  std::string path = root_;
  path += '/';
  path += relative_path(index);
  return path;
}

std::string ImageFolder::class_to_index_json() const {
  std::string json = "{";
  for (size_t c = 0; c < classes_.size(); ++c) {
    if (c > 0) json += ", ";
    json += json_string(classes_[c]) + ": " + std::to_string(c);
  }
  return json + "}";
}

}  // namespace engine::data
