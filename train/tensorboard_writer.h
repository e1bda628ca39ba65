// TensorBoard event files (--tensorboard DIR), written natively: no TensorFlow, no protobuf
// library. An event file is a sequence of TFRecords (length, its masked CRC-32C, the bytes,
// their masked CRC-32C); each record is a serialized tensorflow.Event (event.proto): first one
// holding file_version "brain.Event:2", then one per scalar, whose Summary holds one Value
// {tag, simple_value}. TensorBoard reads every file named *tfevents* in the folder; each run
// (a resumed one too) starts its own file, whose steps continue the run's.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace engine::train {

class TensorBoardWriter {
 public:
  // Creates `dir` if needed and in it events.out.tfevents.<seconds>.<host>.<pid>; throws
  // engine::Error naming --tensorboard DIR when it cannot.
  explicit TensorBoardWriter(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // One scalar at `step` (TensorBoard's x axis), stored as float32 as TensorBoard's
  // simple_value; non-finite values are left out (a diverged loss ends its curve).
  void scalar(std::string_view tag, int64_t step, double value);
  // Makes what was written visible to TensorBoard (called at each print point and epoch).
  void flush();

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

// The pieces, for the tests: a TFRecord around `data`, and the serialized Events.
std::string tfrecord(std::string_view data);
std::string file_version_event(double wall_time);
std::string scalar_event(double wall_time, int64_t step, std::string_view tag, float value);

}  // namespace engine::train
