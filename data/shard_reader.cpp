#include "data/shard_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "data/decode.h"
#include "data/tar_listing.h"

namespace engine::data {

namespace {

std::string read_failure(const ShardIndex::Location& where) {
  if (errno != 0) return std::string("read error: ") + std::strerror(errno);
  return "the shard ends before this member's " + std::to_string(where.size) +
         " bytes (truncated after it was indexed?)";
}

}  // namespace

ShardReader::ShardReader(const ImageFolder& dataset)
    : dataset_(dataset), index_(*dataset.shards()) {}

ShardReader::~ShardReader() {
  if (open_fd_ >= 0) close(open_fd_);
}

void ShardReader::begin_epoch(std::span<const int64_t> wanted) {
  std::lock_guard lock(mutex_);
  // Each shard is read when its first sample is wanted, front to back.
  std::unordered_map<uint32_t, size_t> first_wanted;
  uses_.clear();
  for (size_t position = 0; position < wanted.size(); ++position) {
    const int64_t sample = wanted[position];
    first_wanted.try_emplace(index_.samples[static_cast<size_t>(sample)].shard, position);
    ++uses_[sample];
  }
  read_order_.clear();
  for (const auto& [sample, uses] : uses_)
    read_order_.push_back(sample);
  auto key = [&](int64_t sample) {
    return std::pair(first_wanted.at(index_.samples[static_cast<size_t>(sample)].shard), sample);
  };
  std::sort(read_order_.begin(), read_order_.end(),
            [&](int64_t a, int64_t b) { return key(a) < key(b); });
  read_position_.clear();
  for (size_t position = 0; position < read_order_.size(); ++position)
    read_position_[read_order_[position]] = position;
  held_.clear();
  cursor_ = 0;
}

void ShardReader::read(int64_t index, std::vector<uint8_t>& bytes) {
  std::unique_lock lock(mutex_);
  while (true) {
    if (auto held = held_.find(index); held != held_.end()) {
      Held& sample = held->second;
      const std::string error = sample.error;
      if (--sample.uses == 0) {
        // The caller's old buffer is kept for a later read: no allocation or zero-filling
        // of a fresh one per sample.
        bytes.swap(sample.bytes);
        if (spare_buffers_.size() < kMaxSpareBuffers)
          spare_buffers_.push_back(std::move(sample.bytes));
        held_.erase(held);
      } else {
        bytes = sample.bytes;
      }
      if (!error.empty()) throw BadImageError(error, dataset_.path(static_cast<size_t>(index)));
      return;
    }
    const auto position = read_position_.find(index);
    if (position == read_position_.end() || position->second < cursor_) {
      ++unplanned_reads_;
      lock.unlock();
      read_alone(index, bytes);
      return;
    }
    if (reading_) {
      progress_.wait(lock);
      continue;
    }
    reading_ = true;
    const int64_t next = read_order_[cursor_++];
    Held sample;
    if (!spare_buffers_.empty()) {
      sample.bytes = std::move(spare_buffers_.back());
      spare_buffers_.pop_back();
    }
    lock.unlock();
    try {
      read_in_sequence(next, sample);
    } catch (const std::exception& error) {  // out of memory, say: the others read on
      sample.error = std::string("cannot read the member: ") + error.what();
    }
    lock.lock();
    reading_ = false;
    sample.uses = uses_[next];
    held_.emplace(next, std::move(sample));
    progress_.notify_all();
  }
}

int64_t ShardReader::unplanned_reads() const {
  std::lock_guard lock(mutex_);
  return unplanned_reads_;
}

void ShardReader::read_in_sequence(int64_t index, Held& sample) {
  const ShardIndex::Location& where = index_.samples[static_cast<size_t>(index)];
  if (open_shard_ != where.shard) {
    if (open_fd_ >= 0) close(open_fd_);
    open_shard_ = where.shard;
    open_fd_ = open(index_.shard_paths[where.shard].c_str(), O_RDONLY | O_CLOEXEC);
    if (open_fd_ >= 0) posix_fadvise(open_fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  if (open_fd_ < 0) {
    sample.error = std::string("cannot open the shard: ") + std::strerror(errno);
    open_shard_ = -1;
  } else if (!read_exactly(open_fd_, where.offset, where.size, sample.bytes)) {
    sample.error = read_failure(where);
  }
}

void ShardReader::read_alone(int64_t index, std::vector<uint8_t>& bytes) const {
  const ShardIndex::Location& where = index_.samples[static_cast<size_t>(index)];
  const std::string path = dataset_.path(static_cast<size_t>(index));
  const int fd = open(index_.shard_paths[where.shard].c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw BadImageError(std::string("cannot open the shard: ") + std::strerror(errno), path);
  const bool read = read_exactly(fd, where.offset, where.size, bytes);
  const std::string failure = read ? "" : read_failure(where);
  close(fd);
  if (!read) throw BadImageError(failure, path);
}

}  // namespace engine::data
