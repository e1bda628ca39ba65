#include "kernels/cuda/cuda_runtime.h"

#include <cuda_runtime_api.h>
#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>

#include "kernels/cuda/check_cuda.h"

namespace engine::cuda_runtime {

DeviceQuery query_devices() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorStubLibrary || status == cudaErrorInsufficientDriver ||
      status == cudaErrorNoDevice) {
    cudaGetLastError();  // clear the sticky error so later calls do not report it
    return {0, std::string("cudaGetDeviceCount returned ") + cudaGetErrorName(status) + " (" +
                   cudaGetErrorString(status) + ")"};
  }
  CHECK_CUDA(status);
  return {count, count == 0 ? "cudaGetDeviceCount found no device" : ""};
}

void set_device(int device) {
  CHECK_CUDA(cudaSetDevice(device));
}

std::string device_uuid(int device) {
  cudaDeviceProp properties{};
  CHECK_CUDA(cudaGetDeviceProperties(&properties, device));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  for (const char byte : properties.uuid.bytes) {
    const auto value = static_cast<unsigned char>(byte);
    text.push_back(kHex[value >> 4]);
    text.push_back(kHex[value & 15]);
  }
  return text;
}

std::string device_name(int device) {
  cudaDeviceProp properties{};
  CHECK_CUDA(cudaGetDeviceProperties(&properties, device));
  return properties.name;
}

std::string versions() {
  int runtime = 0, driver = 0;
  CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
  CHECK_CUDA(cudaDriverGetVersion(&driver));
  return "runtime " + std::to_string(runtime) + " driver " + std::to_string(driver);
}

std::string kernel_function_name(const void* kernel) {
  const char* name = nullptr;
  if (cudaFuncGetName(&name, kernel) != cudaSuccess || name == nullptr) {
    cudaGetLastError();  // not sticky: only this lookup failed
    char text[32];
    std::snprintf(text, sizeof text, "%p", kernel);
    return text;
  }
  // The runtime gives the mangled name (the sim device an already demangled one, which
  // __cxa_demangle refuses and is kept).
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string text = status == 0 && demangled != nullptr ? demangled : name;
  std::free(demangled);
  return text;
}

namespace {
// " (N MiB free of M MiB)" for the current device, or "" when CUDA cannot say.
std::string free_memory_note() {
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  return " (" + std::to_string(free >> 20) + " MiB free of " + std::to_string(total >> 20) +
         " MiB)";
}
}  // namespace

void* device_malloc(size_t bytes, int device) {
  CHECK_CUDA(cudaSetDevice(device));
  void* ptr = nullptr;
  const cudaError_t status = cudaMalloc(&ptr, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw OutOfMemoryError(rank_prefix() + "CUDA out of memory on cuda:" + std::to_string(device) +
                           " allocating " + std::to_string(bytes) + " bytes" + free_memory_note());
  }
  CHECK_CUDA(status);
  return ptr;
}

void device_free(void* ptr, int device) {
  CHECK_CUDA(cudaSetDevice(device));
  CHECK_CUDA(cudaFree(ptr));
}

void* pinned_host_malloc(size_t bytes) {
  void* ptr = nullptr;
  const cudaError_t status = cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw OutOfMemoryError(rank_prefix() + "out of pinned host memory allocating " +
                           std::to_string(bytes) + " bytes");
  }
  CHECK_CUDA(status);
  return ptr;
}

void pinned_host_free(void* ptr) {
  CHECK_CUDA(cudaFreeHost(ptr));
}

void memcpy_async(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
}

void memset_async(void* dst, int value, size_t bytes, cudaStream_t stream) {
  CHECK_CUDA(cudaMemsetAsync(dst, value, bytes, stream));
}

cudaStream_t stream_create(int device) {
  CHECK_CUDA(cudaSetDevice(device));
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return stream;
}

void stream_destroy(cudaStream_t stream) {
  CHECK_CUDA(cudaStreamDestroy(stream));
}
void stream_synchronize(cudaStream_t stream) {
  CHECK_CUDA(cudaStreamSynchronize(stream));
}
void stream_wait_event(cudaStream_t stream, cudaEvent_t event) {
  CHECK_CUDA(cudaStreamWaitEvent(stream, event, 0));
}

cudaEvent_t event_create(int device, bool timing) {
  CHECK_CUDA(cudaSetDevice(device));
  cudaEvent_t event = nullptr;
  CHECK_CUDA(cudaEventCreateWithFlags(&event, timing ? cudaEventDefault : cudaEventDisableTiming));
  return event;
}

void event_destroy(cudaEvent_t event) {
  CHECK_CUDA(cudaEventDestroy(event));
}
void event_record(cudaEvent_t event, cudaStream_t stream) {
  CHECK_CUDA(cudaEventRecord(event, stream));
}
void event_synchronize(cudaEvent_t event) {
  CHECK_CUDA(cudaEventSynchronize(event));
}

bool event_query(cudaEvent_t event) {
  const cudaError_t status = cudaEventQuery(event);
  if (status == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  CHECK_CUDA(status);
  return true;
}

float event_elapsed_ms(cudaEvent_t start, cudaEvent_t end) {
  float ms = 0.f;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, end));
  return ms;
}

void stream_begin_capture(cudaStream_t stream) {
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
}

bool stream_is_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CHECK_CUDA(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

CapturedGraph stream_end_capture(cudaStream_t stream) {
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  CapturedGraph captured;
  try {
    CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &captured.nodes));
    CHECK_CUDA(cudaGraphInstantiate(&captured.executable, graph, 0));
  } catch (...) {
    cudaGraphDestroy(graph);
    throw;
  }
  CHECK_CUDA(cudaGraphDestroy(graph));  // the executable keeps what it needs
  return captured;
}

void stream_abandon_capture(cudaStream_t stream) noexcept {
  cudaGraph_t graph = nullptr;
  if (cudaStreamEndCapture(stream, &graph) == cudaSuccess && graph != nullptr) {
    cudaGraphDestroy(graph);
  }
  cudaGetLastError();  // the failure that made us abandon it is what gets reported
}

void graph_launch(cudaGraphExec_t executable, cudaStream_t stream) {
  CHECK_CUDA(cudaGraphLaunch(executable, stream));
}

void graph_destroy(cudaGraphExec_t executable) {
  CHECK_CUDA(cudaGraphExecDestroy(executable));
}

}  // namespace engine::cuda_runtime
