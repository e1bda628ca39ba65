// Reading and writing the safetensors format (github.com/huggingface/safetensors), the one
// torch, JAX and Hugging Face checkpoints share:
//   8 bytes   N, a little-endian u64: the header's length
//   N bytes   UTF-8 JSON: {"<name>": {"dtype": "F32", "shape": [10, 5],
//                                     "data_offsets": [begin, end]}, ...,
//                          "__metadata__": {"<key>": "<value>", ...}}   (optional, strings)
//             padded with trailing spaces
//   the rest  the data section: each tensor's little-endian bytes, C order, at [begin, end)
//             relative to the section's start
//
// The reader enforces the reference implementation's rules and a few stricter ones, on input
// that may be hostile: N <= 100'000'000 and within the file; the tensors' ranges, sorted,
// tile the data section exactly (no gap, no overlap, nothing after the last one); each range
// holds numel * dtype size bytes (computed without overflow); names are unique; metadata
// values are strings. Claimed sizes are checked against the real file size before anything
// is allocated. Every failure is an engine::Error naming the file (or "<memory>") and, where
// there is one, the tensor: "m.safetensors: tensor 'fc.weight': data_offsets [0, 100] but
// F32 [10, 5] needs 200 bytes".
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace engine::nn {

// The header length the reference implementation accepts at most.
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

// Bytes per element of a safetensors dtype ("F32" -> 4), or 0 for a name that is not one.
// Known: BOOL U8 I8 F8_E5M2 F8_E4M3 I16 U16 F16 BF16 I32 U32 F32 F64 I64 U64.
size_t safetensors_dtype_size(std::string_view dtype);

struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // one of those safetensors_dtype_size knows
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // data_offsets, relative to the data section
  uint64_t end = 0;
  uint64_t bytes() const { return end - begin; }
};

struct SafetensorsFile;  // an open file, shared by copies of a reader

class SafetensorsReader {
 public:
  // Opens `path` and reads and checks its header; tensor data is read on demand. The file
  // stays open (and so stays the file that was checked) while any copy of the reader lives.
  static SafetensorsReader open(const std::string& path);
  // The same checks over a whole file held in memory; `file` must outlive the reader.
  // `source` names it in messages.
  static SafetensorsReader parse(std::span<const std::byte> file, std::string source = "<memory>");

  // In the order the header lists them (not necessarily the order of their data).
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  // nullptr when there is no tensor of that name.
  const SafetensorsEntry* find(std::string_view name) const;
  // The entry, or an engine::Error naming the file and the missing tensor.
  const SafetensorsEntry& at(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& source() const { return source_; }
  uint64_t data_section_bytes() const { return data_section_bytes_; }

  // Copies the tensor's bytes to `destination`, which must be exactly entry.bytes() long.
  // `entry` must be one of entries().
  void read(const SafetensorsEntry& entry, std::span<std::byte> destination) const;
  std::vector<std::byte> read(const SafetensorsEntry& entry) const;

 private:
  SafetensorsReader() = default;
  // Parses and validates the header text; `data_section_bytes` is what the file holds after it.
  void parse_header(std::string_view header, uint64_t data_section_bytes);

  std::string source_;
  std::vector<SafetensorsEntry> entries_;
  std::unordered_map<std::string, size_t> index_by_name_;
  std::map<std::string, std::string> metadata_;
  uint64_t data_section_bytes_ = 0;
  uint64_t data_section_start_ = 0;              // file offset of the data section
  std::shared_ptr<const SafetensorsFile> file_;  // set by open()
  std::span<const std::byte> memory_data_;       // set by parse(): the data section
};

// One tensor to write: its bytes are numel(shape) * safetensors_dtype_size(dtype) long, at
// `data` (which may be null when that is 0).
struct SafetensorsTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  const void* data = nullptr;
};

// The whole file in memory, tensors in the order given, data contiguous in that order, the
// header padded with spaces so the data section starts at a multiple of 8 bytes. Throws for
// a duplicate or reserved name ("__metadata__"), an unknown dtype, a negative dimension,
// invalid UTF-8 or a size that overflows; `source` names the file in those messages.
std::vector<std::byte> encode_safetensors(std::span<const SafetensorsTensor> tensors,
                                          const std::map<std::string, std::string>& metadata = {},
                                          const std::string& source = "<memory>");

// Writes the same bytes to `path` atomically: into a new file in the same folder, fsync'ed,
// renamed over `path`, then the folder fsync'ed. A failure (no folder, no permission, disk
// full) leaves any existing `path` untouched and no temporary file behind, and its message
// names the path and the system's reason.
void write_safetensors(const std::string& path, std::span<const SafetensorsTensor> tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace engine::nn
