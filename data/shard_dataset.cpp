#include "data/shard_dataset.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include "data/shard_pattern.h"
#include "data/tar_listing.h"
#include "data/warnings.h"
#include "kernels/error.h"

namespace engine::data {

namespace {

// Extensions that name an image we do not decode: a sample with only one of these is named as
// such rather than as "no image".
constexpr std::array<std::string_view, 6> kUndecodedImageExtensions = {".gif", ".avif", ".heic",
                                                                       ".jxl", ".jp2",  ".svg"};

struct ShardSample {
  std::string image_member;
  uint64_t offset = 0, size = 0;
  int32_t label = 0;
};

struct ShardContents {
  std::vector<ShardSample> samples;
  std::vector<std::string> problems;  // one line each, naming the shard and member
  int64_t largest_label = -1;
};

// webdataset's base_plus_ext: the key is the path up to the first dot of the basename.
std::pair<std::string_view, std::string_view> split_key(std::string_view name) {
  const size_t slash = name.rfind('/');
  const size_t dot = name.find('.', slash == std::string_view::npos ? 0 : slash + 1);
  if (dot == std::string_view::npos) return {name, {}};
  return {name.substr(0, dot), name.substr(dot)};  // the extension keeps its dot
}

bool has_extension(std::string_view name, std::string_view extension) {
  if (name.size() < extension.size()) return false;
  return std::equal(
      extension.begin(), extension.end(), name.end() - extension.size(),
      [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); });
}

std::optional<int64_t> parse_class(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string printable(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 20))
    out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  return text.size() > 20 ? out + "..." : out;
}

ShardContents read_shard(const std::string& path, int64_t class_count) {
  const TarListing listing = list_tar_members(path);
  ShardContents contents;
  if (!listing.damage.empty())
    contents.problems.push_back("shard " + path + " is damaged: " + listing.damage);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open the shard " + path + ": " + std::strerror(errno));
  const std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* f) {
    close(*f);
    delete f;
  });
  std::vector<uint8_t> bytes;
  const auto& members = listing.members;
  for (size_t first = 0; first < members.size();) {
    const std::string_view key = split_key(members[first].name).first;
    size_t end = first + 1;
    while (end < members.size() && split_key(members[end].name).first == key)
      ++end;
    const TarMember* image = nullptr;
    const TarMember* label = nullptr;
    const TarMember* undecoded = nullptr;
    for (size_t m = first; m < end; ++m) {
      const std::string_view extension = split_key(members[m].name).second;
      if (!image && has_image_extension(extension)) image = &members[m];
      if (!label && has_extension(extension, ".cls")) label = &members[m];
      for (std::string_view other : kUndecodedImageExtensions)
        if (!undecoded && has_extension(extension, other)) undecoded = &members[m];
    }
    const std::string sample = path + "/" + std::string(key);
    first = end;
    if (!image) {
      contents.problems.push_back(
          undecoded
              ? "skipping " + path + "/" + undecoded->name +
                    ": not a format we decode (.jpg .jpeg .png .webp .tif .tiff .ppm .pgm "
                    ".bmp)"
              : "skipping sample " + sample + ": no image member (KEY.jpg, .png, .webp, ...)");
      continue;
    }
    if (!label) {
      contents.problems.push_back("skipping " + path + "/" + image->name + ": no " +
                                  std::string(key) + ".cls member with its class");
      continue;
    }
    if (label->size > 64 || !read_exactly(fd, label->data_offset, label->size, bytes)) {
      contents.problems.push_back("skipping " + path + "/" + image->name + ": " + label->name +
                                  " is unreadable or longer than a class index");
      continue;
    }
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    const std::optional<int64_t> value = parse_class(text);
    if (!value || *value < 0 || (class_count > 0 && *value >= class_count)) {
      contents.problems.push_back("skipping " + path + "/" + image->name + ": " + label->name +
                                  " holds \"" + printable(text) + "\", " +
                                  (value
                                       ? "outside the " + std::to_string(class_count) +
                                             " classes (0.." + std::to_string(class_count - 1) + ")"
                                       : std::string("not a class index")));
      continue;
    }
    contents.largest_label = std::max(contents.largest_label, *value);
    contents.samples.push_back(
        {image->name, image->data_offset, image->size, static_cast<int32_t>(*value)});
  }
  return contents;
}

std::vector<std::string> read_class_names(const std::string& path) {
  std::ifstream file(path);
  std::vector<std::string> names;
  if (!file) return names;
  for (std::string line; std::getline(file, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

// The longest folder every shard is in ("." for relative names without one).
std::string common_folder(const std::vector<std::string>& paths) {
  std::string folder = directory_of(paths.front());
  for (const std::string& path : paths) {
    while (folder != "." && folder != "/" &&
           !(path.size() > folder.size() && path.compare(0, folder.size(), folder) == 0 &&
             path[folder.size()] == '/')) {
      folder = directory_of(folder);
    }
  }
  return folder;
}

}  // namespace

ImageFolder scan_shards(const std::string& pattern, const ShardScanOptions& options) {
  const std::vector<std::string> paths = expand_shard_pattern(pattern);
  std::vector<std::string> classes = read_class_names(directory_of(paths.front()) + "/classes.txt");
  if (classes.empty()) classes = options.classes;
  const auto class_count = static_cast<int64_t>(classes.size());

  std::vector<ShardContents> shards(paths.size());
  std::vector<std::string> errors(paths.size());
  std::atomic<size_t> next{0};
  auto scan = [&] {
    for (size_t s = next++; s < paths.size(); s = next++) {
      try {
        shards[s] = read_shard(paths[s], class_count);
      } catch (const Error& error) {
        errors[s] = error.what();
      }
    }
  };
  std::vector<std::jthread> threads;
  const size_t thread_count =
      std::clamp<size_t>(static_cast<size_t>(std::max(options.scan_threads, 1)), 1, paths.size());
  for (size_t t = 1; t < thread_count; ++t)
    threads.emplace_back(scan);
  scan();
  threads.clear();
  for (const std::string& error : errors)
    if (!error.empty()) fail(options.flag + " " + pattern + ": " + error);

  auto index = std::make_shared<ShardIndex>();
  index->shard_paths = paths;
  const std::string root = common_folder(paths);
  const size_t root_length = root == "." ? 0 : root.size() + 1;
  std::vector<std::string> names;
  std::vector<int32_t> labels;
  int64_t largest_label = -1;
  for (size_t s = 0; s < paths.size(); ++s) {
    for (const std::string& problem : shards[s].problems)
      warn(problem);
    index->shard_first_sample.push_back(static_cast<int64_t>(labels.size()));
    const std::string shard_name = paths[s].substr(root_length);
    for (const ShardSample& sample : shards[s].samples) {
      names.push_back(shard_name + "/" + sample.image_member);
      labels.push_back(sample.label);
      index->samples.push_back({static_cast<uint32_t>(s), sample.offset, sample.size});
    }
    largest_label = std::max(largest_label, shards[s].largest_label);
    if (shards[s].samples.empty()) warn("shard " + paths[s] + " holds no usable sample");
    std::vector<ShardSample>().swap(shards[s].samples);
  }
  index->shard_first_sample.push_back(static_cast<int64_t>(labels.size()));
  if (labels.empty()) {
    fail(options.flag + " " + pattern + ": no usable sample in its " +
         std::to_string(paths.size()) + " shards (each needs KEY.jpg/.png/.webp/... and KEY.cls)");
  }
  if (classes.empty()) {
    for (int64_t c = 0; c <= largest_label; ++c)
      classes.push_back(std::to_string(c));
  }
  return ImageFolder::from_samples(root, std::move(classes), names, std::move(labels),
                                   std::move(index));
}

}  // namespace engine::data
