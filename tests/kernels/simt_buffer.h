// "Device" buffers for the emulator suites: values stored as dtype in an allocation aligned
// like cudaMalloc's, optionally starting `offset` elements in so that the 16-byte vector paths
// are not taken, framed by guard zones that every simt::launch checks (simt/guarded_buffer.h):
// a kernel writing even one element outside the buffer fails the launch, naming the buffer by
// dtype, size, offset and the line that created it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <source_location>
#include <string>
#include <vector>

#include "kernels/dtype.h"
#include "sim/simt/guarded_buffer.h"
#include "tests/dtype_bytes.h"

namespace engine::testing {

class SimtBuffer {
 public:
  SimtBuffer(DType dtype, const std::vector<float>& values, int offset = 0,
             std::source_location created = std::source_location::current())
      : dtype_(dtype),
        n_(static_cast<int64_t>(values.size())),
        memory_(values.size() * dtype_size(dtype), offset * dtype_size(dtype),
                describe(dtype, values.size(), offset, created)) {
    const std::vector<std::byte> bytes = encode(dtype, values);
    std::copy(bytes.begin(), bytes.end(), memory_.data());
  }
  // An f64 buffer holding `values` exactly (SyncBN's sums).
  explicit SimtBuffer(const std::vector<double>& values, int offset = 0,
                      std::source_location created = std::source_location::current())
      : dtype_(DType::f64),
        n_(static_cast<int64_t>(values.size())),
        memory_(values.size() * sizeof(double), offset * sizeof(double),
                describe(DType::f64, values.size(), offset, created)) {
    if (!values.empty()) std::memcpy(memory_.data(), values.data(), values.size() * sizeof(double));
  }
  // An i32 buffer holding `values` (labels, argmax indices).
  explicit SimtBuffer(const std::vector<int32_t>& values,
                      std::source_location created = std::source_location::current())
      : dtype_(DType::i32),
        n_(static_cast<int64_t>(values.size())),
        memory_(values.size() * sizeof(int32_t), 0,
                describe(DType::i32, values.size(), 0, created)) {
    if (!values.empty())
      std::memcpy(memory_.data(), values.data(), values.size() * sizeof(int32_t));
  }
  // A u8 buffer holding `values` (the max-pool argmax's window positions), `offset` bytes
  // into its allocation (an offset of 1 to 7 keeps the argmax's 8-byte vector path away).
  explicit SimtBuffer(const std::vector<uint8_t>& values, int offset = 0,
                      std::source_location created = std::source_location::current())
      : dtype_(DType::u8),
        n_(static_cast<int64_t>(values.size())),
        memory_(values.size(), offset, describe(DType::u8, values.size(), offset, created)) {
    if (!values.empty()) std::memcpy(memory_.data(), values.data(), values.size());
  }
  // An f32 buffer of n elements, filled with NaN so unwritten outputs show.
  static SimtBuffer f32(size_t n, std::source_location created = std::source_location::current()) {
    return SimtBuffer(DType::f32, std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()), 0,
                      created);
  }
  // An f64 buffer of n elements, filled with NaN so unwritten outputs show.
  static SimtBuffer f64(size_t n, std::source_location created = std::source_location::current()) {
    return SimtBuffer(std::vector<double>(n, std::numeric_limits<double>::quiet_NaN()), 0, created);
  }
  // An i32 buffer of n elements, filled with INT32_MIN (no index or label) so unwritten
  // outputs show.
  static SimtBuffer i32(size_t n, std::source_location created = std::source_location::current()) {
    return SimtBuffer(std::vector<int32_t>(n, std::numeric_limits<int32_t>::min()), created);
  }

  // A u8 buffer of n elements, filled with 0xff (a position no window of under 256 has) so
  // unwritten outputs show.
  static SimtBuffer u8(size_t n, int offset = 0,
                       std::source_location created = std::source_location::current()) {
    return SimtBuffer(std::vector<uint8_t>(n, 0xff), offset, created);
  }

  void* data() { return memory_.data(); }
  // Typed views for the launchers: T is float, __nv_bfloat16, double or int32_t.
  template <typename T>
  T* as() {
    return static_cast<T*>(data());
  }
  float* floats() { return as<float>(); }
  double* doubles() { return as<double>(); }
  int32_t* ints() { return as<int32_t>(); }
  uint8_t* bytes() { return as<uint8_t>(); }
  std::vector<float> values() const { return decode(dtype_, memory_.data(), n_); }
  // The elements of an f64 buffer, exactly.
  std::vector<double> double_values() const { return decode_doubles(memory_.data(), n_); }
  // The elements of an i32 buffer, exactly.
  std::vector<int32_t> int_values() const {
    std::vector<int32_t> out(static_cast<size_t>(n_));
    if (n_ > 0) std::memcpy(out.data(), memory_.data(), out.size() * sizeof(int32_t));
    return out;
  }
  // The elements of a u8 buffer, exactly.
  std::vector<uint8_t> byte_values() const {
    std::vector<uint8_t> out(static_cast<size_t>(n_));
    if (n_ > 0) std::memcpy(out.data(), memory_.data(), out.size());
    return out;
  }

 private:
  // "bf16[1000] offset 1, created at test_pool_simt.cpp:88:21".
  static std::string describe(DType dtype, size_t n, int offset, const std::source_location& at) {
    std::string file = at.file_name();
    file = file.substr(file.find_last_of('/') + 1);
    std::string text = std::string(dtype_name(dtype)) + "[" + std::to_string(n) + "]";
    if (offset != 0) text += " offset " + std::to_string(offset);
    return text + ", created at " + file + ":" + std::to_string(at.line()) + ":" +
           std::to_string(at.column());
  }

  DType dtype_;
  int64_t n_;
  simt::GuardedBuffer memory_;
};

}  // namespace engine::testing
