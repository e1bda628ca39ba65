// Stream capture on the sim device, with the real runtime's rules, so that a captured training
// step is checked on the CPU before a GPU replays it (graphs.cpp instantiates and launches what
// is captured).
//
// While a stream captures, the work queued on it (kernels, async copies and memsets, host
// functions, NCCL operations) is recorded as the nodes of a graph instead of running. An event
// recorded on a capturing stream and waited for on another stream pulls that stream into the
// same capture (a fork); every forked stream must be waited for again by the origin stream
// before cudaStreamEndCapture (a join), or the capture fails with cudaErrorStreamCaptureUnjoined.
// What the runtime refuses during a capture is refused here, and invalidates the capture
// (cudaStreamEndCapture then returns cudaErrorStreamCaptureInvalidated and no graph):
//   - on a capturing stream: cudaStreamSynchronize, cudaStreamQuery, a cudaMemcpyAsync to or
//     from pageable host memory (synchronous), a wait on an event recorded outside the capture
//     (cudaErrorStreamCaptureIsolation);
//   - while a capture in cudaStreamCaptureModeGlobal runs on any thread, or one in
//     cudaStreamCaptureModeThreadLocal on the calling thread: the "potentially unsafe" calls
//     cudaMalloc, cudaFree, cudaHostAlloc, cudaMallocHost, cudaFreeHost, cudaMemcpy, cudaMemset
//     and cudaDeviceSynchronize (cudaErrorStreamCaptureUnsupported);
//   - cudaEventQuery, cudaEventSynchronize and cudaEventElapsedTime on an event whose latest
//     record was captured (cudaErrorCapturedEvent).
// Limits: the nodes keep their order of capture and replay one after another on the launching
// stream (a valid order of the graph's dependencies, which are checked only for the join), so a
// race between two forked branches is not seen in a replay: the same work run uncaptured shows
// it to ThreadSanitizer. cudaMallocAsync/cudaFreeAsync and graph launches inside a capture (memory
// and child-graph nodes) are not emulated: refused with cudaErrorNotSupported.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "sim/cuda/streams.h"

namespace engine::sim {

// What makes a task at the moment it is issued: work whose place in an order is taken by the
// host call that queues it, not when it runs (an NCCL call's turn on its communicator).
using IssueTask = std::function<StreamTask()>;

// A node of a captured graph: its task, or, for work captured with capture_issued_task, what
// makes its task; a launch of the graph issues such a node anew (real NCCL enqueues a captured
// call's work at each cudaGraphLaunch, in the launching thread's order of calls).
struct CapturedNode {
  StreamTask task;
  IssueTask issue;
};

// The captured work, in the order of capture: what a graph replays.
using CapturedTasks = std::vector<CapturedNode>;

// Whether `stream` is capturing now (invalidated or not).
bool is_capturing(cudaStream_t stream);

// Called by enqueue: when `stream` captures, records `task` as a node (true; an invalidated
// capture refuses it in `status`); false when it does not capture.
bool capture_task(cudaStream_t stream, StreamTask& task, cudaError_t& status);

// As capture_task, for work issued at each launch (IssueTask above): when `stream` captures,
// records `issue` as a node and returns true (the status as capture_task's); false, and
// nothing done, when it does not (the caller then issues and enqueues the task itself).
bool capture_issued_task(cudaStream_t stream, IssueTask issue, cudaError_t& status);

// cudaErrorStreamCaptureUnsupported, said and invalidating the capture, when `stream` captures;
// else cudaSuccess. For the calls that may not be made on a capturing stream.
cudaError_t refuse_on_capturing_stream(cudaStream_t stream, const char* call);

// cudaErrorStreamCaptureUnsupported, said and invalidating the captures concerned, when a
// capture forbids the calling thread "potentially unsafe" calls (see above); else cudaSuccess.
cudaError_t refuse_unsafe_call(const char* call);

// cudaEventRecord's half: true when `stream` captures (the record marks the event with the
// stream's place in the capture, and queues nothing); false otherwise (the event is no longer
// a captured one).
bool capture_event_record(cudaEvent_t event, cudaStream_t stream, cudaError_t& status);

// cudaStreamWaitEvent's half: nullopt for an ordinary wait (neither side captured); else the
// call's result (a fork or a join of the capture, or the error).
std::optional<cudaError_t> capture_event_wait(cudaStream_t stream, cudaEvent_t event);

// cudaErrorCapturedEvent when the latest record of `event` was captured; else cudaSuccess.
cudaError_t refuse_captured_event(cudaEvent_t event, const char* call);

// cudaEventDestroy and cudaStreamDestroy: forget their capture state (a capturing stream's
// capture is invalidated).
void forget_event(cudaEvent_t event);
void forget_stream(cudaStream_t stream);

}  // namespace engine::sim
