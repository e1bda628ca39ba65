#include "sim/nccl/group.h"

#include <utility>
#include <vector>

#include "sim/cuda/capture.h"
#include "sim/cuda/streams.h"
#include "sim/nccl/last_error.h"
#include "sim/nccl/progress.h"

namespace engine::sim_nccl {
namespace {

struct Queued {
  std::shared_ptr<CommState> comm;
  cudaStream_t stream;
  Operation op;
};

struct Group {
  int depth = 0;
  ncclResult_t error = ncclSuccess;
  std::vector<Queued> queued;
};

thread_local Group t_group;

// One task per (communicator, stream), in the order each pair first appears.
ncclResult_t submit(std::vector<Queued> queued) {
  std::vector<bool> taken(queued.size(), false);
  for (size_t first = 0; first < queued.size(); ++first) {
    if (taken[first]) continue;
    const std::shared_ptr<CommState> comm = queued[first].comm;
    const cudaStream_t stream = queued[first].stream;
    auto ops = std::make_shared<std::vector<Operation>>();
    for (size_t i = first; i < queued.size(); ++i) {
      if (taken[i] || queued[i].comm != comm || queued[i].stream != stream) continue;
      taken[i] = true;
      ops->push_back(std::move(queued[i].op));
    }
    const char* call = ops->front().call;
    cudaError_t status = cudaSuccess;
    // Captured into a CUDA graph: every launch of the graph takes a turn of its own (a replay
    // runs the same operations again, on the same buffers).
    const bool captured = sim::capture_issued_task(
        stream,
        [comm, ops]() -> sim::StreamTask {
          uint64_t turn = 0;
          comm->issue([&](uint64_t ticket) {
            turn = ticket;
            return true;
          });
          return [comm, turn, ops] { run_operations(comm, turn, *ops); };
        },
        status);
    if (!captured) {
      comm->issue([&](uint64_t ticket) {
        status = sim::enqueue(stream, [comm, ticket, ops] { run_operations(comm, ticket, *ops); });
        return status == cudaSuccess;
      });
    }
    if (status != cudaSuccess) {
      return fail(ncclUnhandledCudaError,
                  std::string(call) + " on rank " + std::to_string(comm->rank()) + " of " +
                      std::to_string(comm->nranks()) + ": its stream cannot take work (" +
                      cudaGetErrorName(status) + ")");
    }
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t group_start() {
  ++t_group.depth;
  return ncclSuccess;
}

ncclResult_t group_end() {
  if (t_group.depth == 0) {
    return fail(ncclInvalidUsage, "ncclGroupEnd: no ncclGroupStart to end on this thread");
  }
  if (--t_group.depth > 0) return ncclSuccess;
  std::vector<Queued> queued = std::move(t_group.queued);
  t_group.queued.clear();
  const ncclResult_t error = std::exchange(t_group.error, ncclSuccess);
  if (error != ncclSuccess) return error;  // last_error() still says which call failed
  return submit(std::move(queued));
}

ncclResult_t add_to_group(const std::shared_ptr<CommState>& comm, cudaStream_t stream,
                          Operation op) {
  if (t_group.depth == 0) {
    std::vector<Queued> one;
    one.push_back({comm, stream, std::move(op)});
    return submit(std::move(one));
  }
  t_group.queued.push_back({comm, stream, std::move(op)});
  return ncclSuccess;
}

void note_group_error(ncclResult_t status) {
  if (t_group.depth > 0 && t_group.error == ncclSuccess) t_group.error = status;
}

}  // namespace engine::sim_nccl
