// The sim device's streams: each a worker thread running its queue in order (kernel launches,
// copies, event records, waits on events), as a CUDA stream runs on the GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

namespace engine::sim {

// Work for a stream's worker. It runs after everything enqueued on the stream before it.
using StreamTask = std::function<void()>;

// Queues `task` on `stream`: cudaErrorInvalidResourceHandle for a stream that is not live,
// cudaErrorNotSupported (said on stderr) for the legacy and per-thread default streams, which
// the engine never uses (every engine::Stream on CUDA is a stream of its own).
cudaError_t enqueue(cudaStream_t stream, StreamTask task);

// cudaSuccess for a live stream of ours; cudaErrorInvalidResourceHandle for one that is not,
// cudaErrorNotSupported (said on stderr) for the legacy and per-thread default streams.
cudaError_t check_stream(cudaStream_t stream);

// Blocks until everything queued on `stream` so far has run; the same errors as enqueue.
cudaError_t synchronize(cudaStream_t stream);

// Blocks until every live stream of `device` (every device: -1) has run what is queued: what
// cudaFree and cudaFreeHost do before they free, as CUDA's implicitly synchronize.
void synchronize_streams(int device);

}  // namespace engine::sim
