// The safetensors reader: header checks, then reads of one tensor at a time.
#include "nn/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <numeric>
#include <system_error>
#include <utility>

#include "kernels/error.h"
#include "nn/json.h"
#include "nn/safetensors_internal.h"

namespace engine::nn {

struct SafetensorsFile {
  int fd = -1;
  std::string path;
  SafetensorsFile(int fd_, std::string path_) : fd(fd_), path(std::move(path_)) {}
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile() { ::close(fd); }
};

namespace {

constexpr uint64_t kLengthFieldBytes = 8;

std::string errno_text(int error) {
  return std::generic_category().message(error);
}

uint64_t load_le64(const std::byte* p) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i)
    value = (value << 8) | std::to_integer<uint64_t>(p[i]);
  return value;
}

// Both entry points check the length field the same way, before the header is read.
void check_header_length(uint64_t header_bytes, uint64_t file_bytes, const std::string& source) {
  if (file_bytes < kLengthFieldBytes) {
    fail(source + ": the file has " + std::to_string(file_bytes) +
         " bytes, too short for the 8-byte header length of a safetensors file");
  }
  if (header_bytes > file_bytes - kLengthFieldBytes) {
    fail(source + ": header length " + std::to_string(header_bytes) + " exceeds the file's " +
         std::to_string(file_bytes) + " bytes");
  }
  if (header_bytes > kSafetensorsMaxHeaderBytes) {
    fail(source + ": header length " + std::to_string(header_bytes) + " exceeds the limit of " +
         std::to_string(kSafetensorsMaxHeaderBytes) + " bytes");
  }
}

// Reads exactly `count` bytes at `offset`; the file may have shrunk since it was checked.
void pread_exact(const SafetensorsFile& file, void* destination, uint64_t count, uint64_t offset,
                 const std::string& what) {
  auto* out = static_cast<char*>(destination);
  while (count > 0) {
    const ssize_t got = ::pread(file.fd, out, count, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(file.path + ": cannot read " + what + ": " + errno_text(errno));
    if (got == 0) {
      fail(file.path + ": the file ends at byte " + std::to_string(offset) + " while reading " +
           what + " (was it truncated while open?)");
    }
    out += got;
    count -= static_cast<uint64_t>(got);
    offset += static_cast<uint64_t>(got);
  }
}

class HeaderParser {
 public:
  HeaderParser(std::string_view header, const std::string& source)
      : json_(header, source + ": header: ", kLengthFieldBytes), source_(source) {}

  JsonReader& json() { return json_; }

  [[noreturn]] void fail_tensor(const std::string& name, const std::string& what) const {
    fail(source_ + ": tensor " + quoted_for_message(name) + ": " + what);
  }

  void read_metadata(std::map<std::string, std::string>& metadata) {
    if (json_.peek() != JsonKind::object) {
      fail(source_ + ": \"__metadata__\" must be an object of strings");
    }
    json_.begin_object();
    std::string key;
    while (json_.next_key(key)) {
      if (json_.peek() != JsonKind::string) {
        fail(source_ + ": metadata " + quoted_for_message(key) + ": value must be a string");
      }
      std::string value = json_.read_string();
      if (!metadata.emplace(key, std::move(value)).second) {
        fail(source_ + ": duplicate metadata key " + quoted_for_message(key));
      }
    }
  }

  SafetensorsEntry read_entry(std::string name) {
    SafetensorsEntry entry;
    entry.name = std::move(name);
    if (json_.peek() != JsonKind::object) {
      fail_tensor(entry.name, "expected an object {\"dtype\", \"shape\", \"data_offsets\"}");
    }
    json_.begin_object();
    bool have_dtype = false, have_shape = false, have_offsets = false;
    std::string key;
    while (json_.next_key(key)) {
      if (key == "dtype") {
        mark_once(entry.name, key, have_dtype);
        if (json_.peek() != JsonKind::string) fail_tensor(entry.name, "\"dtype\" must be a string");
        entry.dtype = json_.read_string();
        if (safetensors_dtype_size(entry.dtype) == 0) {
          fail_tensor(entry.name, "unknown dtype " + quoted_for_message(entry.dtype));
        }
      } else if (key == "shape") {
        mark_once(entry.name, key, have_shape);
        read_shape(entry);
      } else if (key == "data_offsets") {
        mark_once(entry.name, key, have_offsets);
        read_offsets(entry);
      } else {
        json_.skip_value();  // the reference implementation ignores unknown fields too
      }
    }
    if (!have_dtype) fail_tensor(entry.name, "missing \"dtype\"");
    if (!have_shape) fail_tensor(entry.name, "missing \"shape\"");
    if (!have_offsets) fail_tensor(entry.name, "missing \"data_offsets\"");
    return entry;
  }

 private:
  void mark_once(const std::string& name, const std::string& key, bool& seen) const {
    if (seen) fail_tensor(name, "duplicate key \"" + key + "\"");
    seen = true;
  }

  void read_shape(SafetensorsEntry& entry) {
    const std::string expected = "\"shape\" must be an array of non-negative integers";
    if (json_.peek() != JsonKind::array) fail_tensor(entry.name, expected);
    json_.begin_array();
    while (json_.next_element()) {
      if (json_.peek() != JsonKind::integer) fail_tensor(entry.name, expected);
      const uint64_t dim = json_.read_integer();
      if (dim > static_cast<uint64_t>(INT64_MAX)) {
        fail_tensor(entry.name, "dimension " + std::to_string(entry.shape.size()) + " is " +
                                    std::to_string(dim) + ", more than 2^63-1");
      }
      entry.shape.push_back(static_cast<int64_t>(dim));
    }
  }

  void read_offsets(SafetensorsEntry& entry) {
    const std::string expected = "\"data_offsets\" must be [begin, end], two integers";
    if (json_.peek() != JsonKind::array) fail_tensor(entry.name, expected);
    json_.begin_array();
    std::array<uint64_t, 2> offsets{};
    size_t count = 0;
    while (json_.next_element()) {
      if (count == 2 || json_.peek() != JsonKind::integer) fail_tensor(entry.name, expected);
      offsets[count++] = json_.read_integer();
    }
    if (count != 2) fail_tensor(entry.name, expected);
    entry.begin = offsets[0];
    entry.end = offsets[1];
  }

  JsonReader json_;
  const std::string& source_;
};

}  // namespace

size_t safetensors_dtype_size(std::string_view dtype) {
  static constexpr std::array<std::pair<std::string_view, size_t>, 15> kSizes{{
      {"BOOL", 1},
      {"U8", 1},
      {"I8", 1},
      {"F8_E5M2", 1},
      {"F8_E4M3", 1},
      {"I16", 2},
      {"U16", 2},
      {"F16", 2},
      {"BF16", 2},
      {"I32", 4},
      {"U32", 4},
      {"F32", 4},
      {"F64", 8},
      {"I64", 8},
      {"U64", 8},
  }};
  for (const auto& [name, size] : kSizes) {
    if (name == dtype) return size;
  }
  return 0;
}

SafetensorsReader SafetensorsReader::parse(std::span<const std::byte> file, std::string source) {
  SafetensorsReader reader;
  reader.source_ = std::move(source);
  check_header_length(file.size() < kLengthFieldBytes ? 0 : load_le64(file.data()), file.size(),
                      reader.source_);
  const uint64_t header_bytes = load_le64(file.data());
  const std::string_view header(reinterpret_cast<const char*>(file.data()) + kLengthFieldBytes,
                                header_bytes);
  reader.parse_header(header, file.size() - kLengthFieldBytes - header_bytes);
  reader.data_section_start_ = kLengthFieldBytes + header_bytes;
  reader.memory_data_ = file.subspan(reader.data_section_start_);
  return reader;
}

SafetensorsReader SafetensorsReader::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path + ": cannot open: " + errno_text(errno));
  auto file = std::make_shared<const SafetensorsFile>(fd, path);
  struct stat info {};
  if (::fstat(fd, &info) != 0) fail(path + ": cannot stat: " + errno_text(errno));
  if (!S_ISREG(info.st_mode)) fail(path + ": not a regular file");
  const auto file_bytes = static_cast<uint64_t>(info.st_size);

  std::array<std::byte, kLengthFieldBytes> length_field{};
  if (file_bytes >= kLengthFieldBytes) {
    pread_exact(*file, length_field.data(), kLengthFieldBytes, 0, "the header length");
  }
  const uint64_t header_bytes = load_le64(length_field.data());
  check_header_length(header_bytes, file_bytes, path);
  std::string header(header_bytes, '\0');  // bounded by the file's size and the 100 MB limit
  pread_exact(*file, header.data(), header_bytes, kLengthFieldBytes, "the header");

  SafetensorsReader reader;
  reader.source_ = path;
  reader.parse_header(header, file_bytes - kLengthFieldBytes - header_bytes);
  reader.data_section_start_ = kLengthFieldBytes + header_bytes;
  reader.file_ = std::move(file);
  return reader;
}

void SafetensorsReader::parse_header(std::string_view header, uint64_t data_section_bytes) {
  data_section_bytes_ = data_section_bytes;
  HeaderParser parser(header, source_);
  JsonReader& json = parser.json();
  if (json.peek() != JsonKind::object) json.fail("the header must be a JSON object");
  json.begin_object();
  bool have_metadata = false;
  std::string key;
  while (json.next_key(key)) {
    if (key == "__metadata__") {
      if (have_metadata) fail(source_ + ": duplicate \"__metadata__\"");
      have_metadata = true;
      parser.read_metadata(metadata_);
      continue;
    }
    if (index_by_name_.contains(key)) {
      fail(source_ + ": duplicate tensor name " + quoted_for_message(key));
    }
    index_by_name_.emplace(key, entries_.size());
    entries_.push_back(parser.read_entry(key));
  }
  json.expect_end();

  for (const SafetensorsEntry& entry : entries_) {
    const std::optional<uint64_t> checked_needed = tensor_bytes(entry.dtype, entry.shape);
    if (!checked_needed) {
      parser.fail_tensor(entry.name, entry.dtype + " " + format_shape(entry.shape) +
                                         " needs more than 2^64-1 bytes");
    }
    const uint64_t needed = *checked_needed;
    const std::string offsets =
        "data_offsets [" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) + "]";
    if (entry.end < entry.begin) parser.fail_tensor(entry.name, offsets + " end before they begin");
    if (entry.end - entry.begin != needed) {
      parser.fail_tensor(entry.name, offsets + " but " + entry.dtype + " " +
                                         format_shape(entry.shape) + " needs " +
                                         std::to_string(needed) + " bytes");
    }
    if (entry.end > data_section_bytes) {
      parser.fail_tensor(entry.name, offsets + " run past the end of the data section (" +
                                         std::to_string(data_section_bytes) +
                                         " bytes: is the file truncated?)");
    }
  }

  // Sorted by position, the ranges must follow each other with neither gap nor overlap.
  std::vector<size_t> order(entries_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(entries_[a].begin, entries_[a].end) <
           std::pair(entries_[b].begin, entries_[b].end);
  });
  uint64_t covered = 0;
  const SafetensorsEntry* previous = nullptr;
  for (const size_t index : order) {
    const SafetensorsEntry& entry = entries_[index];
    if (entry.begin > covered) {
      fail(source_ + ": bytes [" + std::to_string(covered) + ", " + std::to_string(entry.begin) +
           ") of the data section belong to no tensor (a gap before tensor " +
           quoted_for_message(entry.name) + ")");
    }
    if (entry.begin < covered) {
      fail(source_ + ": tensor " + quoted_for_message(entry.name) + " at [" +
           std::to_string(entry.begin) + ", " + std::to_string(entry.end) + ") overlaps tensor " +
           quoted_for_message(previous->name) + " at [" + std::to_string(previous->begin) + ", " +
           std::to_string(previous->end) + ")");
    }
    covered = entry.end;
    previous = &entry;
  }
  if (covered != data_section_bytes) {
    fail(source_ + ": the data section has " + std::to_string(data_section_bytes) +
         " bytes but the tensors end at byte " + std::to_string(covered) + " (" +
         std::to_string(data_section_bytes - covered) + " trailing bytes)");
  }
}

const SafetensorsEntry* SafetensorsReader::find(std::string_view name) const {
  const auto it = index_by_name_.find(std::string(name));
  return it == index_by_name_.end() ? nullptr : &entries_[it->second];
}

const SafetensorsEntry& SafetensorsReader::at(std::string_view name) const {
  const SafetensorsEntry* entry = find(name);
  if (entry == nullptr) fail(source_ + ": no tensor named " + quoted_for_message(name));
  return *entry;
}

void SafetensorsReader::read(const SafetensorsEntry& entry,
                             std::span<std::byte> destination) const {
  const std::string what = "tensor " + quoted_for_message(entry.name);
  if (entry.begin > entry.end || entry.end > data_section_bytes_) {
    fail(source_ + ": " + what + " is not in this file's data section");
  }
  if (destination.size() != entry.bytes()) {
    fail(source_ + ": " + what + " has " + std::to_string(entry.bytes()) +
         " bytes but the destination holds " + std::to_string(destination.size()));
  }
  if (entry.bytes() == 0) return;
  if (file_) {
    pread_exact(*file_, destination.data(), entry.bytes(), data_section_start_ + entry.begin, what);
  } else {
    std::memcpy(destination.data(), memory_data_.data() + entry.begin, entry.bytes());
  }
}

std::vector<std::byte> SafetensorsReader::read(const SafetensorsEntry& entry) const {
  // The size was checked against the real file, so this allocation is one the file backs.
  if (entry.begin > entry.end || entry.end > data_section_bytes_) {
    fail(source_ + ": tensor " + quoted_for_message(entry.name) +
         " is not in this file's data section");
  }
  std::vector<std::byte> bytes(entry.bytes());
  read(entry, bytes);
  return bytes;
}

}  // namespace engine::nn
