// libFuzzer target: arbitrary bytes through SafetensorsReader::parse. A crash, a sanitizer
// report, a hang, an allocation over -malloc_limit_mb or any exception other than
// engine::Error is a bug. What the reader accepts must read in full, and writing it again
// must give a file that reads back the same.
//
//   nn_fuzz_safetensors -max_total_time=20 <work corpus dir> <seed dir>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <vector>

#include "kernels/error.h"
#include "nn/safetensors.h"

namespace {

using engine::nn::SafetensorsEntry;
using engine::nn::SafetensorsReader;
using engine::nn::SafetensorsTensor;

void require(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "nn_fuzz_safetensors: invariant broken: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data), size);
  std::optional<SafetensorsReader> reader;
  try {
    reader.emplace(SafetensorsReader::parse(file));
  } catch (const engine::Error&) {
    return 0;
  }
  std::vector<std::vector<std::byte>> contents;
  std::vector<SafetensorsTensor> tensors;
  uint64_t total = 0;
  for (const SafetensorsEntry& entry : reader->entries()) {
    require(reader->find(entry.name) == &entry, "find() returns the entry of that name");
    contents.push_back(reader->read(entry));
    total += entry.bytes();
  }
  require(total == reader->data_section_bytes(), "the tensors cover the data section");
  for (size_t i = 0; i < contents.size(); ++i) {
    const SafetensorsEntry& entry = reader->entries()[i];
    tensors.push_back({entry.name, entry.dtype, entry.shape, contents[i].data()});
  }
  const std::vector<std::byte> again = engine::nn::encode_safetensors(tensors, reader->metadata());
  const SafetensorsReader reread = SafetensorsReader::parse(again);
  require(reread.metadata() == reader->metadata(), "metadata survives a rewrite");
  require(reread.entries().size() == tensors.size(), "every tensor survives a rewrite");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const SafetensorsEntry& entry = reread.entries()[i];
    require(entry.name == tensors[i].name && entry.dtype == tensors[i].dtype &&
                entry.shape == tensors[i].shape,
            "name, dtype and shape survive a rewrite");
    require(reread.read(entry) == contents[i], "the bytes survive a rewrite");
  }
  return 0;
}
