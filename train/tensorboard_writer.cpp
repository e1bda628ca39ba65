#include "train/tensorboard_writer.h"

#include <unistd.h>

#include <bit>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "kernels/error.h"
#include "train/crc32c.h"

namespace engine::train {

namespace {

// Protocol buffers' wire format, the four encodings an Event needs.
enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void put_key(std::string& out, uint32_t field, WireType type) {
  put_varint(out, (uint64_t{field} << 3) | type);
}

template <typename T>
void put_little_endian(std::string& out, T value) {
  static_assert(std::endian::native == std::endian::little, "event files are little-endian");
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}

// event.proto's Event: wall_time = 1 (double), step = 2 (int64), file_version = 3 (string),
// summary = 5 (Summary); summary.proto's Summary: value = 1 (repeated Value); Value: tag = 1
// (string), simple_value = 2 (float).
std::string event_header(double wall_time, int64_t step) {
  std::string event;
  put_key(event, 1, kFixed64);
  put_little_endian(event, wall_time);
  if (step != 0) {
    put_key(event, 2, kVarint);
    put_varint(event, static_cast<uint64_t>(step));
  }
  return event;
}

double seconds_since_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

}  // namespace

std::string tfrecord(std::string_view data) {
  std::string record;
  const uint64_t length = data.size();
  put_little_endian(record, length);
  put_little_endian(record, masked_crc32c(record));
  record.append(data);
  put_little_endian(record, masked_crc32c(data));
  return record;
}

std::string file_version_event(double wall_time) {
  std::string event = event_header(wall_time, 0);
  put_bytes(event, 3, "brain.Event:2");
  return event;
}

std::string scalar_event(double wall_time, int64_t step, std::string_view tag, float value) {
  std::string summary_value;
  put_bytes(summary_value, 1, tag);
  put_key(summary_value, 2, kFixed32);
  put_little_endian(summary_value, value);
  std::string summary;
  put_bytes(summary, 1, summary_value);
  std::string event = event_header(wall_time, step);
  put_bytes(event, 5, summary);
  return event;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (!std::filesystem::is_directory(dir)) {
    fail("--tensorboard " + dir + ": cannot create the folder" +
         (error ? " (" + error.message() + ")" : std::string(" (a file is in the way)")));
  }
  const double now = seconds_since_epoch();
  path_ = dir + "/events.out.tfevents." + std::to_string(static_cast<int64_t>(now)) + "." +
          host_name() + "." + std::to_string(getpid());
  file_ = std::fopen(path_.c_str(), "wb");
  if (!file_)
    fail("--tensorboard " + dir + ": cannot write " + path_ + ": " + std::strerror(errno));
  const std::string record = tfrecord(file_version_event(now));
  std::fwrite(record.data(), 1, record.size(), file_);
  flush();
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_) std::fclose(file_);
}

void TensorBoardWriter::scalar(std::string_view tag, int64_t step, double value) {
  if (!std::isfinite(value)) return;
  const std::string record =
      tfrecord(scalar_event(seconds_since_epoch(), step, tag, static_cast<float>(value)));
  std::fwrite(record.data(), 1, record.size(), file_);
}

void TensorBoardWriter::flush() {
  if (std::fflush(file_) != 0 || std::ferror(file_)) {
    fail("--tensorboard: cannot write " + path_ + ": " + std::strerror(errno));
  }
}

}  // namespace engine::train
