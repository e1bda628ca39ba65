// cudaGetDeviceCount, cudaSetDevice and cudaGetDevice of the sim device.
#include "kernels/sim/devices.h"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <string>

#include "kernels/sim/errors.h"

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

int device_count() {
  static const int count =
      static_cast<int>(positive_from_environment("ENGINE_SIM_DEVICE_COUNT", 1));
  return count;
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
