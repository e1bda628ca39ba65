// cudaStreamBeginCapture, cudaStreamEndCapture and cudaStreamIsCapturing of the sim device, and
// the capture bookkeeping that the stream, event, copy and allocation calls consult
// (capture.h says which rules hold).
#include "sim/cuda/capture.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "sim/cuda/errors.h"
#include "sim/cuda/graphs.h"
#include "sim/cuda/happens_before.h"

namespace engine::sim {
namespace {

using NodeIds = std::vector<std::size_t>;

// One capture sequence, from cudaStreamBeginCapture to cudaStreamEndCapture.
struct Capture {
  cudaStream_t origin = nullptr;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;
  bool invalidated = false;
  bool ended = false;
  CapturedTasks tasks;
  std::vector<NodeIds> dependencies;     // per node, the nodes it follows
  std::map<cudaStream_t, NodeIds> tail;  // per stream in the capture: what its next node follows

  void invalidate(const std::string& why) {
    if (!invalidated) explain(why + "; the capture is invalidated");
    invalidated = true;
  }
  // Whether every stream forked from the origin was waited for again by it.
  bool joined() const {
    std::vector<bool> reached(tasks.size(), false);
    NodeIds pending = tail.at(origin);
    while (!pending.empty()) {
      const std::size_t node = pending.back();
      pending.pop_back();
      if (reached[node]) continue;
      reached[node] = true;
      pending.insert(pending.end(), dependencies[node].begin(), dependencies[node].end());
    }
    for (const auto& [stream, nodes] : tail) {
      for (const std::size_t node : nodes) {
        if (!reached[node]) return false;
      }
    }
    return true;
  }
};

// Where an event was recorded in a capture: the capture and what waiting on it follows.
struct CapturedRecord {
  std::weak_ptr<Capture> capture;
  NodeIds nodes;
};

struct Registry {
  std::mutex mutex;
  std::map<cudaStream_t, std::shared_ptr<Capture>> streams;  // the streams capturing now
  std::map<cudaEvent_t, CapturedRecord> events;              // events last recorded in a capture
};

Registry& registry() {
  static Registry instance;
  return instance;
}

Capture* capture_of(Registry& r, cudaStream_t stream) {
  const auto found = r.streams.find(stream);
  return found == r.streams.end() ? nullptr : found->second.get();
}

std::string stream_text(cudaStream_t stream) {
  char text[48];
  std::snprintf(text, sizeof text, "stream %p", static_cast<void*>(stream));
  return text;
}

}  // namespace

bool is_capturing(cudaStream_t stream) {
  Registry& r = registry();
  const BookkeepingLock lock(r.mutex);
  return capture_of(r, stream) != nullptr;
}

namespace {

// Moves `node` into the capture when `stream` captures (true); else leaves it alone.
bool capture_node(cudaStream_t stream, CapturedNode& node, cudaError_t& status) {
  Registry& r = registry();
  const BookkeepingLock lock(r.mutex);
  Capture* capture = capture_of(r, stream);
  if (capture == nullptr) return false;
  if (capture->invalidated) {
    status = cudaErrorStreamCaptureInvalidated;
    return true;
  }
  NodeIds& tail = capture->tail[stream];
  capture->dependencies.push_back(std::exchange(tail, {capture->tasks.size()}));
  capture->tasks.push_back(std::move(node));
  status = cudaSuccess;
  return true;
}

}  // namespace

bool capture_task(cudaStream_t stream, StreamTask& task, cudaError_t& status) {
  CapturedNode node{std::move(task), {}};
  if (capture_node(stream, node, status)) return true;
  task = std::move(node.task);  // not captured: the caller enqueues it
  return false;
}

bool capture_issued_task(cudaStream_t stream, IssueTask issue, cudaError_t& status) {
  CapturedNode node{{}, std::move(issue)};
  return capture_node(stream, node, status);
}

cudaError_t refuse_on_capturing_stream(cudaStream_t stream, const char* call) {
  Registry& r = registry();
  const BookkeepingLock lock(r.mutex);
  Capture* capture = capture_of(r, stream);
  if (capture == nullptr) return cudaSuccess;
  capture->invalidate(std::string(call) + " on a capturing " + stream_text(stream) +
                      ": not permitted (it would wait for work that is only being recorded)");
  return cudaErrorStreamCaptureUnsupported;
}

cudaError_t refuse_unsafe_call(const char* call) {
  Registry& r = registry();
  const BookkeepingLock lock(r.mutex);
  const std::thread::id self = std::this_thread::get_id();
  bool refused = false;
  for (auto& [stream, capture] : r.streams) {
    if (capture->mode == cudaStreamCaptureModeGlobal ||
        (capture->mode == cudaStreamCaptureModeThreadLocal && capture->thread == self)) {
      capture->invalidate(std::string(call) + " while a stream captures (" +
                          (capture->mode == cudaStreamCaptureModeGlobal
                               ? "cudaStreamCaptureModeGlobal"
                               : "cudaStreamCaptureModeThreadLocal, this thread") +
                          "): a potentially unsafe call");
      refused = true;
    }
  }
  return refused ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

bool capture_event_record(cudaEvent_t event, cudaStream_t stream, cudaError_t& status) {
  Registry& r = registry();
  const BookkeepingLock lock(r.mutex);
  const auto found = r.streams.find(stream);
  if (found == r.streams.end()) {
    r.events.erase(event);
    return false;
  }
  Capture& capture = *found->second;
  status = capture.invalidated ? cudaErrorStreamCaptureInvalidated : cudaSuccess;
  if (!capture.invalidated) r.events[event] = {found->second, capture.tail[stream]};
  return true;
}

std::optional<cudaError_t> capture_event_wait(cudaStream_t stream, cudaEvent_t event) {
  Registry& r = registry();
  const BookkeepingLock lock(r.mutex);
  const auto record = r.events.find(event);
  Capture* waiting = capture_of(r, stream);
  if (record == r.events.end()) {
    if (waiting == nullptr) return std::nullopt;
    waiting->invalidate("cudaStreamWaitEvent: a capturing " + stream_text(stream) +
                        " waits for an event not recorded in its capture");
    return cudaErrorStreamCaptureIsolation;
  }
  const std::shared_ptr<Capture> recorded = record->second.capture.lock();
  if (!recorded || recorded->ended) {
    explain("cudaStreamWaitEvent: the event was last recorded in a capture that has ended");
    return cudaErrorCapturedEvent;
  }
  if (waiting != nullptr && waiting != recorded.get()) {
    waiting->invalidate("cudaStreamWaitEvent would merge two captures");
    return cudaErrorStreamCaptureMerge;
  }
  if (recorded->invalidated) return cudaErrorStreamCaptureInvalidated;
  NodeIds& tail = recorded->tail[stream];  // a stream not yet capturing is forked into it here
  if (waiting == nullptr) r.streams[stream] = recorded;
  for (const std::size_t node : record->second.nodes) {
    if (std::find(tail.begin(), tail.end(), node) == tail.end()) tail.push_back(node);
  }
  return cudaSuccess;
}

cudaError_t refuse_captured_event(cudaEvent_t event, const char* call) {
  Registry& r = registry();
  const BookkeepingLock lock(r.mutex);
  if (!r.events.contains(event)) return cudaSuccess;
  explain(std::string(call) +
          " on an event whose latest record was captured (it never runs "
          "as such: record it again outside the capture)");
  return cudaErrorCapturedEvent;
}

void forget_event(cudaEvent_t event) {
  Registry& r = registry();
  const BookkeepingLock lock(r.mutex);
  r.events.erase(event);
}

void forget_stream(cudaStream_t stream) {
  Registry& r = registry();
  const BookkeepingLock lock(r.mutex);
  const auto found = r.streams.find(stream);
  if (found == r.streams.end()) return;
  found->second->invalidate("cudaStreamDestroy of a capturing " + stream_text(stream));
  found->second->tail.erase(stream);
  r.streams.erase(found);
}

}  // namespace engine::sim

using engine::sim::result;
using engine::sim::sticky_error;

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  using namespace engine::sim;
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (const cudaError_t status = check_stream(stream)) return result(status);
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed) {
    return result(cudaErrorInvalidValue);
  }
  Registry& r = registry();
  const BookkeepingLock lock(r.mutex);
  if (r.streams.contains(stream)) {
    explain("cudaStreamBeginCapture: " + stream_text(stream) + " is already capturing");
    return result(cudaErrorIllegalState);
  }
  auto capture = std::make_shared<Capture>();
  capture->origin = stream;
  capture->mode = mode;
  capture->thread = std::this_thread::get_id();
  capture->tail[stream] = {};
  r.streams[stream] = std::move(capture);
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  using namespace engine::sim;
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (pGraph == nullptr) return result(cudaErrorInvalidValue);
  if (const cudaError_t status = check_stream(stream)) return result(status);
  *pGraph = nullptr;
  Registry& r = registry();
  const BookkeepingLock lock(r.mutex);
  const auto found = r.streams.find(stream);
  if (found == r.streams.end()) {
    explain("cudaStreamEndCapture: " + stream_text(stream) + " is not capturing");
    return result(cudaErrorIllegalState);
  }
  const std::shared_ptr<Capture> capture = found->second;
  if (capture->origin != stream) {
    explain("cudaStreamEndCapture on a forked " + stream_text(stream) +
            ": a capture ends on the stream that began it");
    return result(cudaErrorStreamCaptureUnmatched);
  }
  if (capture->mode != cudaStreamCaptureModeRelaxed &&
      capture->thread != std::this_thread::get_id()) {
    return result(cudaErrorStreamCaptureWrongThread);
  }
  std::erase_if(r.streams, [&](const auto& entry) { return entry.second == capture; });
  capture->ended = true;
  if (capture->invalidated) return result(cudaErrorStreamCaptureInvalidated);
  if (!capture->joined()) {
    explain(
        "cudaStreamEndCapture: a stream forked into the capture was not waited for again "
        "by the origin " +
        stream_text(stream));
    return result(cudaErrorStreamCaptureUnjoined);
  }
  *pGraph = new_graph(std::make_shared<const CapturedTasks>(std::move(capture->tasks)));
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* pCaptureStatus) {
  using namespace engine::sim;
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (pCaptureStatus == nullptr) return result(cudaErrorInvalidValue);
  if (const cudaError_t status = check_stream(stream)) return result(status);
  Registry& r = registry();
  const BookkeepingLock lock(r.mutex);
  const Capture* capture = capture_of(r, stream);
  *pCaptureStatus = capture == nullptr     ? cudaStreamCaptureStatusNone
                    : capture->invalidated ? cudaStreamCaptureStatusInvalidated
                                           : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}
