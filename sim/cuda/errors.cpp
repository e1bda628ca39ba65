// cudaGetLastError, cudaPeekAtLastError, cudaGetErrorName and cudaGetErrorString of the sim
// device, and its per-thread last error and sticky error.
#include "sim/cuda/errors.h"

#include <atomic>
#include <cstdio>
#include <utility>

namespace engine::sim {
namespace {

thread_local cudaError_t t_last_error = cudaSuccess;
// Relaxed: every call and every stream task reads it, and acquire loads would order each of
// them after the fault that set it, an edge CUDA does not have (happens_before.h).
std::atomic<cudaError_t> g_sticky_error{cudaSuccess};

struct ErrorText {
  cudaError_t status;
  const char* name;
  const char* text;  // as libcudart words it
};

// The codes the sim device returns, plus those the engine tests for by name.
constexpr ErrorText kErrorTexts[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
     "invalid configuration argument"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
     "invalid copy direction for memcpy"},
    {cudaErrorStubLibrary, "cudaErrorStubLibrary", "CUDA driver is a stub library"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorIllegalState, "cudaErrorIllegalState",
     "the operation cannot be performed in the present state"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
     "operation failed due to a previous error during capture"},
    {cudaErrorStreamCaptureUnmatched, "cudaErrorStreamCaptureUnmatched",
     "capture was not initiated in this stream"},
    {cudaErrorStreamCaptureUnjoined, "cudaErrorStreamCaptureUnjoined",
     "capturing stream has unjoined work"},
    {cudaErrorStreamCaptureIsolation, "cudaErrorStreamCaptureIsolation",
     "dependency created on uncaptured work in another stream"},
    {cudaErrorCapturedEvent, "cudaErrorCapturedEvent",
     "operation not permitted on an event last recorded in a capturing stream"},
    {cudaErrorStreamCaptureWrongThread, "cudaErrorStreamCaptureWrongThread",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const ErrorText* find_text(cudaError_t status) {
  for (const ErrorText& entry : kErrorTexts) {
    if (entry.status == status) return &entry;
  }
  return nullptr;
}

}  // namespace

cudaError_t result(cudaError_t status) {
  if (status != cudaSuccess) t_last_error = status;
  return status;
}

cudaError_t sticky_error() {
  return g_sticky_error.load(std::memory_order_relaxed);
}

void set_sticky_error(cudaError_t status, const std::string& why) {
  cudaError_t expected = cudaSuccess;
  if (g_sticky_error.compare_exchange_strong(expected, status, std::memory_order_relaxed)) {
    std::fprintf(stderr, "sim device: %s (the device is now in error %s, as after a GPU fault)\n",
                 why.c_str(), cudaGetErrorName(status));
  }
}

void explain(const std::string& why) {
  std::fprintf(stderr, "sim device: %s\n", why.c_str());
}

}  // namespace engine::sim

// A sticky error is returned forever; any other last error is returned once and cleared.
cudaError_t cudaGetLastError() {
  const cudaError_t sticky = engine::sim::sticky_error();
  if (sticky != cudaSuccess) return sticky;
  return std::exchange(engine::sim::t_last_error, cudaSuccess);
}

cudaError_t cudaPeekAtLastError() {
  const cudaError_t sticky = engine::sim::sticky_error();
  return sticky != cudaSuccess ? sticky : engine::sim::t_last_error;
}

const char* cudaGetErrorName(cudaError_t error) {
  const engine::sim::ErrorText* entry = engine::sim::find_text(error);
  return entry != nullptr ? entry->name : "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t error) {
  const engine::sim::ErrorText* entry = engine::sim::find_text(error);
  return entry != nullptr ? entry->text : "unrecognized error code";
}
