// cudaFuncSetAttribute of the sim device: a kernel's opt-in to more than 48 KiB of dynamic
// shared memory (cudaFuncAttributeMaxDynamicSharedMemorySize), kept per device and function as
// CUDA keeps it, and held against each launch (launch.cpp); the shared-memory carveout, a hint
// the emulator has no use for, is checked and accepted. Other attributes are refused by name.
// cudaFuncGetName gives a kernel's name from the binary's symbols, demangled (the runtime gives
// it mangled), kept for the life of the process as the runtime keeps its own.
#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "sim/cuda/devices.h"
#include "sim/cuda/errors.h"
#include "sim/cuda/launch.h"
#include "sim/simt/runtime.h"
#include "sim/simt/self_image.h"

namespace engine::sim {
namespace {

struct Allowances {
  std::mutex mutex;
  std::map<std::pair<int, const void*>, std::size_t> bytes;  // (device, kernel) -> opt-in
};

Allowances& allowances() {
  static Allowances table;
  return table;
}

struct Names {
  std::mutex mutex;
  std::map<const void*, std::string> by_function;  // never erased: callers keep the pointers
};

Names& names() {
  static Names table;
  return table;
}

}  // namespace

std::size_t max_dynamic_shared_bytes(const void* kernel) {
  Allowances& table = allowances();
  const std::lock_guard<std::mutex> lock(table.mutex);
  const auto found = table.bytes.find({current_device(), kernel});
  return found == table.bytes.end() ? kDefaultDynamicSharedBytes : found->second;
}

}  // namespace engine::sim

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  using namespace engine::sim;
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (func == nullptr) {
    explain("cudaFuncSetAttribute: a null function");
    return result(cudaErrorInvalidDeviceFunction);
  }
  switch (attr) {
    case cudaFuncAttributeMaxDynamicSharedMemorySize: {
      constexpr std::size_t kLimit = simt::detail::kMaxDynamicSharedBytes;
      if (value < 0 || static_cast<std::size_t>(value) > kLimit) {
        explain("cudaFuncSetAttribute: cudaFuncAttributeMaxDynamicSharedMemorySize " +
                std::to_string(value) + " is outside 0.." + std::to_string(kLimit) +
                " (sharedMemPerBlockOptin)");
        return result(cudaErrorInvalidValue);
      }
      Allowances& table = allowances();
      const std::lock_guard<std::mutex> lock(table.mutex);
      table.bytes[{current_device(), func}] = static_cast<std::size_t>(value);
      return cudaSuccess;
    }
    case cudaFuncAttributePreferredSharedMemoryCarveout:
      if (value < -1 || value > 100) {
        explain("cudaFuncSetAttribute: a shared-memory carveout of " + std::to_string(value) +
                " (-1 or a percentage 0..100)");
        return result(cudaErrorInvalidValue);
      }
      return cudaSuccess;
    default:
      explain("cudaFuncSetAttribute: attribute " + std::to_string(static_cast<int>(attr)) +
              " is not emulated (only the dynamic shared memory size and the carveout are)");
      return result(cudaErrorInvalidValue);
  }
}

cudaError_t cudaFuncGetName(const char** name, const void* func) {
  using namespace engine::sim;
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (name == nullptr || func == nullptr) {
    explain("cudaFuncGetName: a null name or function");
    return result(name == nullptr ? cudaErrorInvalidValue : cudaErrorInvalidDeviceFunction);
  }
  Names& table = names();
  const std::lock_guard<std::mutex> lock(table.mutex);
  auto found = table.by_function.find(func);
  if (found == table.by_function.end()) {
    found = table.by_function.emplace(func, simt::detail::function_name(func)).first;
  }
  *name = found->second.c_str();
  return cudaSuccess;
}
