// torchvision's ImageFolder: root/<class>/**/<file>. Classes are the subdirectories of root
// (links to directories included, hidden ones too), sorted by name; a class's index is its
// position. Files are those whose lower-cased name ends with one of torchvision's extensions,
// taken directory by directory in the order sorted(os.walk(class_dir, followlinks=True)) gives,
// names sorted within each directory.
//
// One difference, on purpose: a class folder without images keeps its index and gets one
// warning (torchvision's allow_empty=True behaviour; its default raises).
//
// The scan reads directories only (no per-file open or stat), one class per thread at a time,
// so an ImageNet-sized tree of 1.28M files takes seconds.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace engine::data {

struct ShardIndex;

inline constexpr std::array<std::string_view, 9> kImageExtensions = {
    ".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"};

// has_file_allowed_extension(name, IMG_EXTENSIONS): case-insensitive suffix match.
bool has_image_extension(std::string_view file_name);

struct ImageFolderOptions {
  int scan_threads = 8;  // directory listing is I/O bound: more threads than cores can help
};

class ImageFolder {
 public:
  // Throws engine::Error naming `root` when it cannot be read, has no class folder, or no
  // class folder holds an image file.
  static ImageFolder scan(const std::string& root, const ImageFolderOptions& options = {});
  // A dataset of `images` random images in `classes` classes (named "0", "1", ...), image i
  // of class i % classes, with no files: the loader fills each with uniform [0, 1) values
  // from the seed and its index (torchvision's FakeData, pytorch/examples' --dummy). `name`
  // stands for the root in messages.
  static ImageFolder synthetic(const std::string& name, int64_t images, int64_t classes);

  // A dataset of samples listed by someone else (tar shards, data/shard_dataset.h): the sample
  // names below `root` with their labels, and where the samples' bytes lie.
  static ImageFolder from_samples(std::string root, std::vector<std::string> classes,
                                  const std::vector<std::string>& relative_paths,
                                  std::vector<int32_t> labels,
                                  std::shared_ptr<const ShardIndex> shards);

  // Whether the images are synthetic (no files to read).
  bool is_synthetic() const { return synthetic_; }

  // Where a shard dataset's samples lie; null for a folder.
  const ShardIndex* shards() const { return shards_.get(); }

  const std::string& root() const { return root_; }
  const std::vector<std::string>& classes() const { return classes_; }
  // Classes without any image file (they keep their index).
  const std::vector<std::string>& empty_classes() const { return empty_classes_; }
  size_t size() const { return labels_.size(); }

  // root + "/" + class + "/" + ... + name, as torchvision's os.path.join builds it (synthetic:
  // name + "/" + index).
  std::string path(size_t index) const;
  // The path below root: "<class>/.../<name>" (synthetic: empty).
  std::string_view relative_path(size_t index) const;
  int label(size_t index) const { return labels_[index]; }

  // {"class": index, ...} in class order: what checkpoints store so that a model's outputs keep
  // their meaning.
  std::string class_to_index_json() const;

 private:
  std::string root_;
  std::vector<std::string> classes_;
  std::vector<std::string> empty_classes_;
  // All relative paths back to back (1.28M std::strings would cost twice the memory).
  std::string path_bytes_;
  std::vector<uint64_t> path_ends_;
  std::vector<int32_t> labels_;
  bool synthetic_ = false;
  std::shared_ptr<const ShardIndex> shards_;
};

}  // namespace engine::data
