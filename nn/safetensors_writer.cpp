// The safetensors writer: one header builder, a memory encoder and an atomic file writer.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <unordered_set>
#include <utility>

#include "kernels/error.h"
#include "nn/json.h"
#include "nn/safetensors.h"
#include "nn/safetensors_internal.h"

namespace engine::nn {
namespace {

std::string errno_text(int error) {
  return std::generic_category().message(error);
}

void check_utf8(std::string_view text, const std::string& what, const std::string& source) {
  const size_t bad = find_invalid_utf8(text);
  if (bad != std::string_view::npos) {
    fail(source + ": " + what + " is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  }
}

// The file's first bytes (length field and padded header) after checking every tensor;
// `sizes` receives each tensor's byte count, in order.
std::string encode_prefix(std::span<const SafetensorsTensor> tensors,
                          const std::map<std::string, std::string>& metadata,
                          const std::string& source, std::vector<uint64_t>& sizes) {
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
      check_utf8(key, "metadata key " + quoted_for_message(key), source);
      check_utf8(value, "metadata value of " + quoted_for_message(key), source);
      if (!first) header += ',';
      first = false;
      append_json_string(header, key);
      header += ':';
      append_json_string(header, value);
    }
    header += '}';
  }
  std::unordered_set<std::string_view> names;
  uint64_t offset = 0;
  sizes.clear();
  for (const SafetensorsTensor& tensor : tensors) {
    const std::string what = "tensor " + quoted_for_message(tensor.name);
    if (tensor.name == "__metadata__") {
      fail(source + ": the tensor name \"__metadata__\" is reserved for the metadata");
    }
    check_utf8(tensor.name, "the name of " + what, source);
    if (!names.insert(tensor.name).second) {
      fail(source + ": duplicate tensor name " + quoted_for_message(tensor.name));
    }
    if (safetensors_dtype_size(tensor.dtype) == 0) {
      fail(source + ": " + what + ": unknown dtype " + quoted_for_message(tensor.dtype));
    }
    if (std::any_of(tensor.shape.begin(), tensor.shape.end(), [](int64_t d) { return d < 0; })) {
      fail(source + ": " + what + ": negative dimension in shape " + format_shape(tensor.shape));
    }
    const std::optional<uint64_t> bytes = tensor_bytes(tensor.dtype, tensor.shape);
    if (!bytes || offset + *bytes < offset) {
      fail(source + ": " + what + ": the file's size would overflow 64 bits");
    }
    if (*bytes > 0 && tensor.data == nullptr) {
      fail(source + ": " + what + ": no data for its " + std::to_string(*bytes) + " bytes");
    }
    if (header.size() > 1) header += ',';
    append_json_string(header, tensor.name);
    header += ":{\"dtype\":\"" + tensor.dtype + "\",\"shape\":[";
    for (size_t i = 0; i < tensor.shape.size(); ++i) {
      if (i > 0) header += ',';
      header += std::to_string(tensor.shape[i]);
    }
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + *bytes) + "]}";
    offset += *bytes;
    sizes.push_back(*bytes);
  }
  header += '}';
  // Spaces up to a multiple of 8, so that mapped data is 8-byte aligned (as the reference
  // writer does).
  header.append((8 - header.size() % 8) % 8, ' ');
  if (header.size() > kSafetensorsMaxHeaderBytes) {
    fail(source + ": the header would be " + std::to_string(header.size()) +
         " bytes, more than the format's limit of " + std::to_string(kSafetensorsMaxHeaderBytes));
  }
  std::string prefix(8, '\0');
  for (int i = 0; i < 8; ++i)
    prefix[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return prefix + header;
}

// A new file next to the destination, removed again unless it was renamed into place.
class TemporaryFile {
 public:
  TemporaryFile(const std::string& directory, const std::string& base,
                const std::string& destination)
      : destination_(destination) {
    static std::atomic<uint64_t> counter{0};
    for (int attempt = 0; attempt < 100; ++attempt) {
      path_ = directory + "/." + base + ".tmp-" + std::to_string(::getpid()) + "-" +
              std::to_string(counter.fetch_add(1));
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ >= 0 || errno != EEXIST) break;
    }
    if (fd_ < 0) {
      fail(destination_ + ": cannot create the temporary file " + path_ + ": " + errno_text(errno));
    }
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  ~TemporaryFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!renamed_) ::unlink(path_.c_str());
  }

  void write_all(const void* data, uint64_t count) {
    const auto* bytes = static_cast<const char*>(data);
    while (count > 0) {
      const size_t chunk = static_cast<size_t>(std::min<uint64_t>(count, uint64_t{1} << 30));
      const ssize_t written = ::write(fd_, bytes, chunk);
      if (written < 0 && errno == EINTR) continue;
      if (written < 0) fail_with_errno("cannot write the temporary file " + path_);
      bytes += written;
      count -= static_cast<uint64_t>(written);
    }
  }

  // fsync, close and rename over the destination: after this the file at the destination
  // is either the old one or the complete new one.
  void commit() {
    if (::fsync(fd_) != 0) fail_with_errno("cannot fsync the temporary file " + path_);
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) fail_with_errno("cannot close the temporary file " + path_);
    if (::rename(path_.c_str(), destination_.c_str()) != 0) {
      fail_with_errno("cannot rename the temporary file " + path_ + " to it");
    }
    renamed_ = true;
  }

 private:
  [[noreturn]] void fail_with_errno(const std::string& what) const {
    fail(destination_ + ": " + what + ": " + errno_text(errno));
  }

  std::string destination_;
  std::string path_;
  int fd_ = -1;
  bool renamed_ = false;
};

// The rename is durable only once the folder's entry is on disk too.
void fsync_directory(const std::string& directory, const std::string& destination) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail(destination + ": cannot open its folder to fsync it: " + errno_text(errno));
  const int result = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (result != 0) fail(destination + ": cannot fsync its folder: " + errno_text(error));
}

}  // namespace

std::vector<std::byte> encode_safetensors(std::span<const SafetensorsTensor> tensors,
                                          const std::map<std::string, std::string>& metadata,
                                          const std::string& source) {
  std::vector<uint64_t> sizes;
  const std::string prefix = encode_prefix(tensors, metadata, source, sizes);
  std::vector<std::byte> file(reinterpret_cast<const std::byte*>(prefix.data()),
                              reinterpret_cast<const std::byte*>(prefix.data()) + prefix.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto* data = static_cast<const std::byte*>(tensors[i].data);
    if (sizes[i] > 0) file.insert(file.end(), data, data + sizes[i]);
  }
  return file;
}

void write_safetensors(const std::string& path, std::span<const SafetensorsTensor> tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<uint64_t> sizes;
  const std::string prefix = encode_prefix(tensors, metadata, path, sizes);
  const size_t slash = path.rfind('/');
  const std::string directory =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty()) fail(path + ": not a file name (it ends with '/')");

  TemporaryFile temporary(directory, base, path);
  temporary.write_all(prefix.data(), prefix.size());
  for (size_t i = 0; i < tensors.size(); ++i)
    temporary.write_all(tensors[i].data, sizes[i]);
  temporary.commit();
  fsync_directory(directory, path);
}

}  // namespace engine::nn
