// The thin layer over the CUDA runtime that the rest of the engine calls (plain C++, no CUDA
// headers needed). kernels/cuda/cuda_runtime.cpp implements it with cudart;
// kernels/cuda_absent.cpp implements it for builds without CUDA (no devices, and a clear
// error if anything asks for one).
#pragma once

#include <cstddef>
#include <string>

struct CUstream_st;
struct CUevent_st;
struct CUgraphExec_st;
using cudaStream_t = CUstream_st*;
using cudaEvent_t = CUevent_st*;
using cudaGraphExec_t = CUgraphExec_st*;

namespace engine::cuda_runtime {

struct DeviceQuery {
  int device_count = 0;
  std::string why_none;  // set when device_count == 0
};

// Asks cudaGetDeviceCount. "No driver", "insufficient driver" and "no device" (34, 35, 100)
// give 0 devices and the reason; any other failure throws engine::Error.
DeviceQuery query_devices();

void set_device(int device);
// The device's UUID in hex: the same for every process that sees the same GPU.
std::string device_uuid(int device);
// The device's name (cudaDeviceProp::name).
std::string device_name(int device);
// "runtime 13000 driver 13000": cudaRuntimeGetVersion's and cudaDriverGetVersion's figures.
std::string versions();
// A kernel's name (cudaFuncGetName, demangled) from its host-side address, for a launch census
// (kernels/kernel_launches.h); its address in hex where the runtime knows no name.
std::string kernel_function_name(const void* kernel);
// Throws engine::OutOfMemoryError when the device is out of memory.
void* device_malloc(size_t bytes, int device);
void device_free(void* ptr, int device);
void* pinned_host_malloc(size_t bytes);
void pinned_host_free(void* ptr);

// Copies between any host/device pointers (unified addressing), ordered on stream.
void memcpy_async(void* dst, const void* src, size_t bytes, cudaStream_t stream);
// Sets `bytes` bytes of device (or pinned host) memory to `value`, ordered on stream.
void memset_async(void* dst, int value, size_t bytes, cudaStream_t stream);

cudaStream_t stream_create(int device);
void stream_destroy(cudaStream_t stream);
void stream_synchronize(cudaStream_t stream);
void stream_wait_event(cudaStream_t stream, cudaEvent_t event);

cudaEvent_t event_create(int device, bool timing);
void event_destroy(cudaEvent_t event);
void event_record(cudaEvent_t event, cudaStream_t stream);
void event_synchronize(cudaEvent_t event);
bool event_query(cudaEvent_t event);
float event_elapsed_ms(cudaEvent_t start, cudaEvent_t end);

// Stream capture in cudaStreamCaptureModeThreadLocal: other host threads (the data loader's)
// may still allocate and copy while this one captures.
void stream_begin_capture(cudaStream_t stream);
// Whether `stream` is capturing now (its work is being recorded into a graph, not run).
bool stream_is_capturing(cudaStream_t stream);
struct CapturedGraph {
  cudaGraphExec_t executable = nullptr;
  size_t nodes = 0;
};
// Ends the capture and instantiates the graph; throws engine::Error with the runtime's code
// when the capture failed (invalidated by a refused call, or a fork left unjoined).
CapturedGraph stream_end_capture(cudaStream_t stream);
// Ends a capture whose work failed part way, dropping what it recorded; never throws.
void stream_abandon_capture(cudaStream_t stream) noexcept;
void graph_launch(cudaGraphExec_t executable, cudaStream_t stream);
void graph_destroy(cudaGraphExec_t executable);

}  // namespace engine::cuda_runtime
