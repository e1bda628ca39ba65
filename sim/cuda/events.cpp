// cudaEventCreate(WithFlags), cudaEventRecord, cudaEventQuery, cudaEventSynchronize,
// cudaEventElapsedTime, cudaEventDestroy and cudaStreamWaitEvent of the sim device.
//
// An event counts its records. cudaEventRecord numbers the record and queues a task that marks
// that number complete when the stream reaches it; query, synchronize and cudaStreamWaitEvent
// use the latest record at the time of the call, as CUDA does, so a later record does not
// change what an earlier wait waits for. A wait is a task that blocks the waiting stream's
// worker until the record completes: a real cross-stream dependency.
#include <cuda_runtime_api.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "sim/cuda/capture.h"
#include "sim/cuda/errors.h"
#include "sim/cuda/happens_before.h"
#include "sim/cuda/streams.h"

namespace engine::sim {
namespace {

using Clock = std::chrono::steady_clock;

// Shared by the handle and the tasks queued for it: cudaEventDestroy may come before the
// stream has reached a record or a wait, and the record must still complete. Each record has
// its own SyncPoint, released when the stream reaches it (happens_before.h, edge 3).
struct EventState {
  mutable std::mutex mutex;
  std::condition_variable completed_changed;
  std::uint64_t recorded = 0;   // records made (the latest one's number)
  std::uint64_t completed = 0;  // the highest record number its stream has reached
  Clock::time_point completed_at{};
  std::shared_ptr<SyncPoint> latest;  // the latest record's point (null: never recorded)

  void complete(std::uint64_t record) {
    {
      const BookkeepingLock lock(mutex);
      if (record > completed) {
        completed = record;
        completed_at = Clock::now();
      }
    }
    const Unobserved quiet;  // a notify is a read of the condition variable for TSan
    completed_changed.notify_all();
  }
  struct Snapshot {
    std::uint64_t recorded = 0, completed = 0;
    Clock::time_point completed_at{};
    std::shared_ptr<SyncPoint> latest;
  };
  Snapshot snapshot() const {
    const BookkeepingLock lock(mutex);
    return {recorded, completed, completed_at, latest};
  }
  void wait_for(std::uint64_t record) {
    BookkeepingLock lock(mutex);
    lock.wait(completed_changed, [&] { return completed >= record; });
  }
};

}  // namespace
}  // namespace engine::sim

struct CUevent_st {
  bool timing = true;
  std::shared_ptr<engine::sim::EventState> state = std::make_shared<engine::sim::EventState>();
};

namespace engine::sim {
namespace {

struct Registry {
  std::mutex mutex;
  std::set<cudaEvent_t> live;
};

Registry& registry() {
  static Registry instance;
  return instance;
}

bool is_live(cudaEvent_t event) {
  Registry& r = registry();
  const BookkeepingLock lock(r.mutex);
  return r.live.contains(event);
}

}  // namespace
}  // namespace engine::sim

using engine::sim::result;
using engine::sim::sticky_error;

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (event == nullptr) return result(cudaErrorInvalidValue);
  auto* created = new CUevent_st;
  created->timing = (flags & cudaEventDisableTiming) == 0;
  {
    engine::sim::Registry& r = engine::sim::registry();
    const engine::sim::BookkeepingLock lock(r.mutex);
    r.live.insert(created);
  }
  *event = created;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  {
    engine::sim::Registry& r = engine::sim::registry();
    const engine::sim::BookkeepingLock lock(r.mutex);
    if (r.live.erase(event) == 0) return result(cudaErrorInvalidResourceHandle);
  }
  engine::sim::forget_event(event);
  // Queued records and waits keep the state alive; unobserved, as the workers drop their
  // references to it unobserved (happens_before.h).
  const engine::sim::Unobserved quiet;
  delete event;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (!engine::sim::is_live(event)) return result(cudaErrorInvalidResourceHandle);
  if (const cudaError_t status = engine::sim::check_stream(stream)) return result(status);
  cudaError_t captured = cudaSuccess;
  if (engine::sim::capture_event_record(event, stream, captured)) return result(captured);
  std::shared_ptr<engine::sim::EventState> state = event->state;
  auto point = std::make_shared<engine::sim::SyncPoint>();
  std::uint64_t record = 0;
  std::shared_ptr<engine::sim::SyncPoint> previous;
  {
    const engine::sim::BookkeepingLock lock(state->mutex);
    record = ++state->recorded;
    previous = std::exchange(state->latest, point);
  }
  const cudaError_t status = engine::sim::enqueue(stream, [state, record, point] {
    point->release();  // before the record completes: whoever sees it complete may acquire
    state->complete(record);
  });
  if (status != cudaSuccess) {
    const engine::sim::BookkeepingLock lock(state->mutex);
    if (state->recorded == record) {  // no record was made: none to wait for
      --state->recorded;
      state->latest = std::move(previous);
    }
  }
  return status;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (!engine::sim::is_live(event)) return result(cudaErrorInvalidResourceHandle);
  if (const cudaError_t status = engine::sim::refuse_captured_event(event, "cudaEventQuery")) {
    return result(status);
  }
  const engine::sim::EventState::Snapshot state = event->state->snapshot();
  // Never recorded: complete, as in CUDA (and nothing to order after).
  if (state.completed < state.recorded) return cudaErrorNotReady;
  if (state.latest) state.latest->acquire();
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (!engine::sim::is_live(event)) return result(cudaErrorInvalidResourceHandle);
  if (const cudaError_t status =
          engine::sim::refuse_captured_event(event, "cudaEventSynchronize")) {
    return result(status);
  }
  engine::sim::EventState& state = *event->state;
  const engine::sim::EventState::Snapshot latest = state.snapshot();
  state.wait_for(latest.recorded);
  if (latest.latest) latest.latest->acquire();
  return result(sticky_error());
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (ms == nullptr) return result(cudaErrorInvalidValue);
  if (!engine::sim::is_live(start) || !engine::sim::is_live(end)) {
    return result(cudaErrorInvalidResourceHandle);
  }
  if (!start->timing || !end->timing) return result(cudaErrorInvalidResourceHandle);
  for (cudaEvent_t event : {start, end}) {
    if (const cudaError_t status =
            engine::sim::refuse_captured_event(event, "cudaEventElapsedTime")) {
      return result(status);
    }
  }
  const engine::sim::EventState::Snapshot a = start->state->snapshot();
  const engine::sim::EventState::Snapshot b = end->state->snapshot();
  if (a.recorded == 0 || b.recorded == 0) return result(cudaErrorInvalidResourceHandle);
  if (a.completed < a.recorded || b.completed < b.recorded) return result(cudaErrorNotReady);
  *ms = std::chrono::duration<float, std::milli>(b.completed_at - a.completed_at).count();
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (flags != cudaEventWaitDefault) return result(cudaErrorInvalidValue);
  if (!engine::sim::is_live(event)) return result(cudaErrorInvalidResourceHandle);
  if (const cudaError_t status = engine::sim::check_stream(stream)) return result(status);
  if (const std::optional<cudaError_t> captured = engine::sim::capture_event_wait(stream, event)) {
    return result(*captured);
  }
  std::shared_ptr<engine::sim::EventState> state = event->state;
  const engine::sim::EventState::Snapshot latest = state->snapshot();
  if (latest.recorded == 0) return engine::sim::enqueue(stream, [] {});  // never recorded
  return engine::sim::enqueue(stream, [state, record = latest.recorded, point = latest.latest] {
    state->wait_for(record);
    point->acquire();  // the waiting stream's later work comes after the recorded work
  });
}
