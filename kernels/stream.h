// Ordered queues of work. A CUDA Stream owns a non-blocking cudaStream_t on its device; a
// CPU Stream runs each op immediately on the calling thread, so work is in order by
// construction. Events mark points in a stream: other streams wait on them, and two timing
// events measure the time between them.
#pragma once

#include "kernels/cuda/cuda_runtime.h"
#include "kernels/device.h"
#include "kernels/fp32_math.h"

#include <chrono>

namespace engine {

class Event;

class Stream {
 public:
  // The CPU stream.
  Stream() = default;
  // A new stream on `device` (for the CPU, the same as Stream()).
  explicit Stream(Device device);
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Device device() const { return device_; }
  // The cudaStream_t for kernel launches; nullptr for a CPU stream.
  cudaStream_t native() const { return native_; }
  // Blocks until all work queued so far is done.
  void synchronize() const;
  // Work queued on this stream after this call starts after `event` has completed.
  void wait(const Event& event) const;
  // Whether the work queued now is recorded into a CUDA graph (kernels/cuda_graph.h) rather
  // than run: nothing queued may then be waited for on the host. Always false on the CPU.
  bool capturing() const;

  // How f32 convolutions and linear layers queued on this stream multiply (kernels/fp32_math.h):
  // exact unless set; tf32 takes a CUDA device's tensor cores, the CPU stays exact.
  Fp32Math fp32_math() const { return fp32_math_; }
  void set_fp32_math(Fp32Math math) { fp32_math_ = math; }

 private:
  Device device_ = Device::cpu();
  cudaStream_t native_ = nullptr;
  Fp32Math fp32_math_ = Fp32Math::exact;
};

class Event {
 public:
  // timing: the event can be used with elapsed_ms (CUDA events without it are cheaper).
  explicit Event(Device device, bool timing = false);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(const Stream& stream);
  void synchronize() const;
  // True when the work before the record has completed.
  bool done() const;
  cudaEvent_t native() const { return native_; }
  Device device() const { return device_; }

  // Milliseconds between two recorded timing events on the same device.
  static float elapsed_ms(const Event& start, const Event& end);

 private:
  Device device_;
  cudaEvent_t native_ = nullptr;
  std::chrono::steady_clock::time_point cpu_time_{};
};

}  // namespace engine
