#include "kernels/stream.h"

#include <utility>

#include "kernels/error.h"
#include "kernels/runtime.h"

namespace engine {

namespace {
void require_usable(Device device) {
  if (device.is_cuda()) resolve_device(device.str());  // throws with the reason if unusable
}
}  // namespace

Stream::Stream(Device device) : device_(device) {
  if (device.is_cuda()) {
    require_usable(device);
    native_ = cuda_runtime::stream_create(device.index);
  }
}

Stream::~Stream() {
  if (native_ != nullptr) {
    try {
      cuda_runtime::stream_destroy(native_);
    } catch (...) {
      // Destroying a stream only fails when the runtime is already gone.
    }
  }
}

Stream::Stream(Stream&& other) noexcept
    : device_(other.device_),
      native_(std::exchange(other.native_, nullptr)),
      fp32_math_(other.fp32_math_) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Stream dying(std::move(*this));
    device_ = other.device_;
    native_ = std::exchange(other.native_, nullptr);
    fp32_math_ = other.fp32_math_;
  }
  return *this;
}

void Stream::synchronize() const {
  if (device_.is_cuda()) cuda_runtime::stream_synchronize(native_);
}

bool Stream::capturing() const {
  return device_.is_cuda() && cuda_runtime::stream_is_capturing(native_);
}

void Stream::wait(const Event& event) const {
  if (device_.is_cpu() || event.device().is_cpu()) {
    event.synchronize();  // CPU work is already done; a CUDA event is waited for on the host
    return;
  }
  cuda_runtime::stream_wait_event(native_, event.native());
}

Event::Event(Device device, bool timing) : device_(device) {
  if (device.is_cuda()) {
    require_usable(device);
    native_ = cuda_runtime::event_create(device.index, timing);
  }
}

Event::~Event() {
  if (native_ != nullptr) {
    try {
      cuda_runtime::event_destroy(native_);
    } catch (...) {
      // As for streams: only fails at teardown.
    }
  }
}

Event::Event(Event&& other) noexcept
    : device_(other.device_),
      native_(std::exchange(other.native_, nullptr)),
      cpu_time_(other.cpu_time_) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    Event dying(std::move(*this));
    device_ = other.device_;
    native_ = std::exchange(other.native_, nullptr);
    cpu_time_ = other.cpu_time_;
  }
  return *this;
}

void Event::record(const Stream& stream) {
  if (stream.device() != device_) {
    fail("Event on " + device_.str() + " recorded on a stream of " + stream.device().str());
  }
  if (device_.is_cuda()) {
    cuda_runtime::event_record(native_, stream.native());
  } else {
    cpu_time_ = std::chrono::steady_clock::now();
  }
}

void Event::synchronize() const {
  if (device_.is_cuda()) cuda_runtime::event_synchronize(native_);
}

bool Event::done() const {
  return device_.is_cpu() || cuda_runtime::event_query(native_);
}

float Event::elapsed_ms(const Event& start, const Event& end) {
  if (start.device_ != end.device_) fail("Event::elapsed_ms between events of different devices");
  if (start.device_.is_cuda()) return cuda_runtime::event_elapsed_ms(start.native_, end.native_);
  return std::chrono::duration<float, std::milli>(end.cpu_time_ - start.cpu_time_).count();
}

}  // namespace engine
