// A loader's reads from tar shards (data/shard_dataset.h), kept sequential: at the start of an
// epoch the loader says which samples it will ask for, in its order; the reader then reads
// them shard by shard, each shard front to back (shards in the order their first sample is
// wanted), one read at a time, and holds each sample's bytes until a worker takes them. A
// worker asking for a sample further on reads forward to it, keeping what it passes; with the
// ShardSampler's order (a shuffle buffer over contiguous shards) what is held stays about a
// shuffle buffer's worth. A sample asked for outside that plan (a replacement for a skipped
// one) is read on its own.
//
// Read failures are BadImageError naming "<shard>/<member>", so the loader skips the sample as
// it skips a bad file.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/image_folder.h"
#include "data/shard_dataset.h"

namespace engine::data {

class ShardReader {
 public:
  // `dataset` (with shards()) must outlive the reader.
  explicit ShardReader(const ImageFolder& dataset);
  ~ShardReader();
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;

  // The samples the loader will ask for, in its order (a sample may appear more than once).
  // Not while a read() is running.
  void begin_epoch(std::span<const int64_t> wanted);
  // Replaces `bytes` with sample `index`'s image member. Thread-safe.
  void read(int64_t index, std::vector<uint8_t>& bytes);

  // Samples read on their own rather than in sequence, since construction (for tests and
  // bench_data: the plan should keep this at the replacements' count).
  int64_t unplanned_reads() const;

 private:
  struct Held {
    std::vector<uint8_t> bytes;
    std::string error;  // the reason, when the read failed
    int64_t uses = 0;
  };
  // Reads sample `index` from the open shard (opening it when it is not the current one) into
  // `sample`.
  void read_in_sequence(int64_t index, Held& sample);
  void read_alone(int64_t index, std::vector<uint8_t>& bytes) const;

  const ImageFolder& dataset_;
  const ShardIndex& index_;

  mutable std::mutex mutex_;
  std::condition_variable progress_;
  std::vector<int64_t> read_order_;
  std::unordered_map<int64_t, size_t> read_position_;
  std::unordered_map<int64_t, int64_t> uses_;
  std::unordered_map<int64_t, Held> held_;
  static constexpr size_t kMaxSpareBuffers = 64;
  std::vector<std::vector<uint8_t>> spare_buffers_;
  size_t cursor_ = 0;
  bool reading_ = false;
  int64_t unplanned_reads_ = 0;
  // Only the thread that set reading_ touches these.
  int64_t open_shard_ = -1;
  int open_fd_ = -1;
};

}  // namespace engine::data
