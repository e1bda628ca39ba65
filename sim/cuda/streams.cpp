// cudaStreamCreate(WithFlags), cudaStreamDestroy, cudaStreamSynchronize, cudaStreamQuery,
// cudaDeviceSynchronize and cudaLaunchHostFunc of the sim device. A stream is a worker thread with
// a queue: the host only enqueues, the worker runs the tasks in order, so host and streams overlap
// as they do with a GPU.
#include "sim/cuda/streams.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "sim/cuda/capture.h"
#include "sim/cuda/devices.h"
#include "sim/cuda/errors.h"
#include "sim/cuda/happens_before.h"

// CUDA's headers declare cudaStream_t as a pointer to this; the runtime defines it. Its
// happens-before edges for TSan (enqueue -> task, task -> synchronize) are happens_before.h's.
struct CUstream_st {
  explicit CUstream_st(int device_index) : device(device_index) {
    worker = std::thread([this] { run(); });
  }
  // Runs what is queued, then stops (cudaStreamDestroy lets queued work finish, as CUDA does).
  ~CUstream_st() {
    {
      const engine::sim::BookkeepingLock lock(mutex);
      stopping = true;
    }
    queued.notify_all();
    // Unobserved: CUDA's cudaStreamDestroy returns at once, so it orders nothing.
    const engine::sim::Unobserved quiet;
    worker.join();
  }
  CUstream_st(const CUstream_st&) = delete;
  CUstream_st& operator=(const CUstream_st&) = delete;

  void enqueue(engine::sim::StreamTask task) {
    {
      const engine::sim::BookkeepingLock lock(mutex);
      tasks.push_back(Queued{std::move(task), {}});
      tasks.back().enqueued.release();
      ++enqueued;
    }
    queued.notify_one();
  }

  void synchronize() {
    {
      engine::sim::BookkeepingLock lock(mutex);
      const std::uint64_t target = enqueued;
      lock.wait(ran_task, [&] { return completed >= target; });
    }
    ran.acquire();
  }

  bool idle() {
    bool done = false;
    {
      const engine::sim::BookkeepingLock lock(mutex);
      done = completed == enqueued;
    }
    if (done) ran.acquire();  // a cudaStreamQuery that says "done" orders like a synchronize
    return done;
  }

  const int device;

 private:
  struct Queued {
    engine::sim::StreamTask task;
    engine::sim::SyncPoint enqueued;  // stays put: a deque moves no element on push or pop
  };

  void run() {
    for (;;) {
      engine::sim::StreamTask task;
      {
        engine::sim::BookkeepingLock lock(mutex);
        lock.wait(queued, [&] { return stopping || !tasks.empty(); });
        if (tasks.empty()) return;  // stopping, and the queue has drained
        tasks.front().enqueued.acquire();
        task = std::move(tasks.front().task);
        tasks.pop_front();
      }
      task();  // tasks catch their own failures (they make the device's error sticky)
      {
        const engine::sim::Unobserved quiet;
        task = nullptr;  // its captures go here, unobserved (happens_before.h)
      }
      ran.release();
      {
        const engine::sim::BookkeepingLock lock(mutex);
        ++completed;
      }
      // Unobserved: TSan records a notify as a read of the condition variable, which the host
      // destroys later with nothing ordering the two.
      const engine::sim::Unobserved quiet;
      ran_task.notify_all();
    }
  }

  std::mutex mutex;
  std::condition_variable queued;    // a task was queued, or the stream is stopping
  std::condition_variable ran_task;  // a task has run
  std::deque<Queued> tasks;
  std::uint64_t enqueued = 0, completed = 0;
  bool stopping = false;
  engine::sim::SyncPoint ran;  // released after each task: what synchronizing acquires
  std::thread worker;
};

namespace engine::sim {
namespace {

struct Registry {
  std::mutex mutex;
  std::set<cudaStream_t> live;
};

Registry& registry() {
  static Registry instance;
  return instance;
}

}  // namespace

cudaError_t check_stream(cudaStream_t stream) {
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
    explain(
        "the default stream is not emulated: the engine runs all device work on streams it "
        "creates (engine::Stream); a null, legacy or per-thread stream here is a bug");
    return cudaErrorNotSupported;
  }
  Registry& r = registry();
  const BookkeepingLock lock(r.mutex);
  return r.live.contains(stream) ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

cudaError_t enqueue(cudaStream_t stream, StreamTask task) {
  if (const cudaError_t status = check_stream(stream)) return result(status);
  cudaError_t captured = cudaSuccess;
  if (capture_task(stream, task, captured)) return result(captured);
  stream->enqueue(std::move(task));
  return cudaSuccess;
}

cudaError_t synchronize(cudaStream_t stream) {
  if (const cudaError_t status = check_stream(stream)) return result(status);
  stream->synchronize();
  return result(sticky_error());
}

void synchronize_streams(int device) {
  std::vector<cudaStream_t> streams;
  {
    Registry& r = registry();
    const BookkeepingLock lock(r.mutex);
    for (cudaStream_t stream : r.live) {
      if (device < 0 || stream->device == device) streams.push_back(stream);
    }
  }
  for (cudaStream_t stream : streams)
    stream->synchronize();
}

}  // namespace engine::sim

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  (void)flags;  // non-blocking or not: without a legacy default stream there is no difference
  if (const cudaError_t sticky = engine::sim::sticky_error()) return sticky;
  if (pStream == nullptr) return engine::sim::result(cudaErrorInvalidValue);
  auto* stream = new CUstream_st(engine::sim::current_device());
  {
    engine::sim::Registry& r = engine::sim::registry();
    const engine::sim::BookkeepingLock lock(r.mutex);
    r.live.insert(stream);
  }
  *pStream = stream;
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  return cudaStreamCreateWithFlags(pStream, cudaStreamDefault);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (const cudaError_t status = engine::sim::check_stream(stream)) {
    return engine::sim::result(status);
  }
  {
    engine::sim::Registry& r = engine::sim::registry();
    const engine::sim::BookkeepingLock lock(r.mutex);
    r.live.erase(stream);
  }
  engine::sim::forget_stream(stream);
  delete stream;  // joins the worker once the queued work has run
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (const cudaError_t status =
          engine::sim::refuse_on_capturing_stream(stream, "cudaStreamSynchronize")) {
    return engine::sim::result(status);
  }
  return engine::sim::synchronize(stream);
}

cudaError_t cudaDeviceSynchronize() {
  if (const cudaError_t status = engine::sim::refuse_unsafe_call("cudaDeviceSynchronize")) {
    return engine::sim::result(status);
  }
  engine::sim::synchronize_streams(engine::sim::current_device());
  return engine::sim::result(engine::sim::sticky_error());
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  if (const cudaError_t status = engine::sim::check_stream(stream)) {
    return engine::sim::result(status);
  }
  if (const cudaError_t sticky = engine::sim::sticky_error()) return sticky;
  if (const cudaError_t status =
          engine::sim::refuse_on_capturing_stream(stream, "cudaStreamQuery")) {
    return engine::sim::result(status);
  }
  return stream->idle() ? cudaSuccess : cudaErrorNotReady;
}

// As on a GPU: `fn` runs on the host once everything queued before it on `stream` has, and
// work queued after it waits for it to return.
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  if (const cudaError_t sticky = engine::sim::sticky_error()) return sticky;
  if (fn == nullptr) return engine::sim::result(cudaErrorInvalidValue);
  return engine::sim::enqueue(stream, [fn, userData] { fn(userData); });
}
