// cudaGetDeviceCount, cudaSetDevice and cudaGetDevice of the sim device.
#include "sim/cuda/devices.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "sim/cuda/errors.h"

namespace engine::sim {
namespace {

thread_local int t_current_device = 0;

// A positive integer from the environment, `fallback` when unset, -1 (and said) when invalid.
long long positive_from_environment(const char* name, long long fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (*end != '\0' || value <= 0) {
    explain(std::string(name) + "='" + text + "' is not a positive integer");
    return -1;
  }
  return value;
}

}  // namespace

namespace {

// The machine's devices (ENGINE_SIM_DEVICE_COUNT) that this process sees, as CUDA reads
// CUDA_VISIBLE_DEVICES: indices separated by commas, the list ending at the first one that
// is not a device (SLURM's --gpus-per-task=1 gives each rank one this way); unset: all.
// Empty when ENGINE_SIM_DEVICE_COUNT is invalid.
long long machine_devices() {
  static const long long count = positive_from_environment("ENGINE_SIM_DEVICE_COUNT", 1);
  return count;
}

const std::vector<int>& visible_devices() {
  static const std::vector<int> visible = [] {
    std::vector<int> devices;
    const long long machine = machine_devices();
    if (machine < 0) return devices;
    const char* text = std::getenv("CUDA_VISIBLE_DEVICES");
    if (text == nullptr) {
      for (int device = 0; device < machine; ++device)
        devices.push_back(device);
      return devices;
    }
    std::string list = text;
    for (size_t begin = 0; begin <= list.size();) {
      const size_t end = std::min(list.find(',', begin), list.size());
      const std::string item = list.substr(begin, end - begin);
      char* stop = nullptr;
      const long value = std::strtol(item.c_str(), &stop, 10);
      if (item.empty() || *stop != '\0' || value < 0 || value >= machine) break;
      devices.push_back(static_cast<int>(value));
      begin = end + 1;
    }
    return devices;
  }();
  return visible;
}

}  // namespace

int device_count() {
  return machine_devices() < 0 ? -1 : static_cast<int>(visible_devices().size());
}

int machine_device(int device) {
  return visible_devices().at(static_cast<size_t>(device));
}

std::size_t device_memory_bytes() {
  static const long long mib = positive_from_environment("ENGINE_SIM_DEVICE_MEMORY_MIB", 16384);
  return mib > 0 ? static_cast<std::size_t>(mib) << 20 : 0;
}

int current_device() {
  return t_current_device;
}

}  // namespace engine::sim

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return engine::sim::result(cudaErrorInvalidValue);
  const int configured = engine::sim::device_count();
  if (configured < 0) return engine::sim::result(cudaErrorInvalidValue);
  *count = configured;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (const cudaError_t sticky = engine::sim::sticky_error()) return sticky;
  if (device < 0 || device >= engine::sim::device_count()) {
    return engine::sim::result(cudaErrorInvalidDevice);
  }
  engine::sim::t_current_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return engine::sim::result(cudaErrorInvalidValue);
  *device = engine::sim::t_current_device;
  return cudaSuccess;
}
