// kernels/cuda/cuda_runtime.h for builds without CUDA: no devices, and a clear error if
// anything asks for one anyway.
#include "kernels/cuda/cuda_runtime.h"

#include "kernels/error.h"

namespace engine::cuda_runtime {
namespace {
[[noreturn]] void no_cuda(const char* what) {
  fail(std::string(what) +
       ": this build has no CUDA backend (configured with ENGINE_CUDA=OFF or without nvcc)");
}
}  // namespace

DeviceQuery query_devices() {
  return {0, "this build has no CUDA backend (configured with ENGINE_CUDA=OFF or without nvcc)"};
}
void set_device(int) {
  no_cuda("set_device");
}
std::string device_uuid(int) {
  no_cuda("device_uuid");
}
std::string device_name(int) {
  no_cuda("device_name");
}
std::string versions() {
  no_cuda("versions");
}
std::string kernel_function_name(const void*) {
  no_cuda("kernel_function_name");
}
void* device_malloc(size_t, int) {
  no_cuda("device_malloc");
}
void device_free(void*, int) {
  no_cuda("device_free");
}
void* pinned_host_malloc(size_t) {
  no_cuda("pinned_host_malloc");
}
void pinned_host_free(void*) {
  no_cuda("pinned_host_free");
}
void memcpy_async(void*, const void*, size_t, cudaStream_t) {
  no_cuda("memcpy_async");
}
void memset_async(void*, int, size_t, cudaStream_t) {
  no_cuda("memset_async");
}
cudaStream_t stream_create(int) {
  no_cuda("stream_create");
}
void stream_destroy(cudaStream_t) {
  no_cuda("stream_destroy");
}
void stream_synchronize(cudaStream_t) {
  no_cuda("stream_synchronize");
}
void stream_wait_event(cudaStream_t, cudaEvent_t) {
  no_cuda("stream_wait_event");
}
cudaEvent_t event_create(int, bool) {
  no_cuda("event_create");
}
void event_destroy(cudaEvent_t) {
  no_cuda("event_destroy");
}
void event_record(cudaEvent_t, cudaStream_t) {
  no_cuda("event_record");
}
void event_synchronize(cudaEvent_t) {
  no_cuda("event_synchronize");
}
bool event_query(cudaEvent_t) {
  no_cuda("event_query");
}
float event_elapsed_ms(cudaEvent_t, cudaEvent_t) {
  no_cuda("event_elapsed_ms");
}
void stream_begin_capture(cudaStream_t) {
  no_cuda("stream_begin_capture");
}
bool stream_is_capturing(cudaStream_t) {
  return false;
}
CapturedGraph stream_end_capture(cudaStream_t) {
  no_cuda("stream_end_capture");
}
void stream_abandon_capture(cudaStream_t) noexcept {}
void graph_launch(cudaGraphExec_t, cudaStream_t) {
  no_cuda("graph_launch");
}
void graph_destroy(cudaGraphExec_t) {
  no_cuda("graph_destroy");
}

}  // namespace engine::cuda_runtime
