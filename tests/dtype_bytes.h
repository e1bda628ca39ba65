// Host bytes of float values stored as a tensor dtype (f32, bf16 rounded to nearest even, f64
// widened exactly, or i32 from integral values), and back (f64 rounded to float); doubles
// stored as f64 exactly, and back: how the test suites build "device" buffers for the
// emulator and the collectives; and the value a dtype stores for a float.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/dtype.h"
#include "kernels/error.h"

namespace engine::testing {

// The tensor dtypes every op and collective is tested in.
inline const std::vector<DType> kDTypes = {DType::f32, DType::bf16};

// value as the dtype stores it (bf16: rounded to nearest even).
inline float round_to(DType dtype, float value) {
  return dtype == DType::bf16 ? static_cast<float>(bf16(value)) : value;
}

inline std::vector<std::byte> encode(DType dtype, const std::vector<float>& values) {
  std::vector<std::byte> bytes(values.size() * dtype_size(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::f32) {
      std::memcpy(bytes.data() + 4 * i, &values[i], 4);
    } else if (dtype == DType::bf16) {
      const uint16_t bits = bf16::from_float(values[i]);
      std::memcpy(bytes.data() + 2 * i, &bits, 2);
    } else if (dtype == DType::f64) {
      const double wide = values[i];
      std::memcpy(bytes.data() + 8 * i, &wide, 8);
    } else {
      const auto integer = static_cast<int32_t>(values[i]);
      ENGINE_REQUIRE(static_cast<float>(integer) == values[i],
                     "encode: " + std::to_string(values[i]) + " is not an i32 value");
      std::memcpy(bytes.data() + 4 * i, &integer, 4);
    }
  }
  return bytes;
}

inline std::vector<float> decode(DType dtype, const void* data, int64_t count) {
  const auto* bytes = static_cast<const std::byte*>(data);
  std::vector<float> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    if (dtype == DType::f32) {
      std::memcpy(&values[i], bytes + 4 * i, 4);
    } else if (dtype == DType::bf16) {
      uint16_t bits = 0;
      std::memcpy(&bits, bytes + 2 * i, 2);
      values[i] = static_cast<float>(bf16::from_bits(bits));
    } else if (dtype == DType::f64) {
      double wide = 0;
      std::memcpy(&wide, bytes + 8 * i, 8);
      values[i] = static_cast<float>(wide);
    } else {
      int32_t integer = 0;
      std::memcpy(&integer, bytes + 4 * i, 4);
      values[i] = static_cast<float>(integer);
    }
  }
  return values;
}

inline std::vector<std::byte> encode_doubles(const std::vector<double>& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(double));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

inline std::vector<double> decode_doubles(const void* data, int64_t count) {
  std::vector<double> values(static_cast<size_t>(count));
  if (count > 0) std::memcpy(values.data(), data, values.size() * sizeof(double));
  return values;
}

}  // namespace engine::testing
