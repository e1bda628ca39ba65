// Where a tensor lives and where an op runs: the CPU, or CUDA device i.
#pragma once

#include <string>
#include <string_view>

namespace engine {

enum class DeviceKind { cpu, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;  // the CUDA ordinal; 0 for the CPU

  static Device cpu() { return {DeviceKind::cpu, 0}; }
  static Device cuda(int index) { return {DeviceKind::cuda, index}; }
  bool is_cpu() const { return kind == DeviceKind::cpu; }
  bool is_cuda() const { return kind == DeviceKind::cuda; }
  // "cpu" or "cuda:1"
  std::string str() const;
  friend bool operator==(const Device&, const Device&) = default;
};

// Parses "cpu", "cuda" (= cuda:0) or "cuda:N" without checking that the device exists
// (resolve_device in kernels/runtime.h does that). Throws engine::Error on other text.
Device parse_device(std::string_view text);

}  // namespace engine
