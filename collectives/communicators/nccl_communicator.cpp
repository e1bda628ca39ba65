#include "collectives/communicators/nccl_communicator.h"

#include "collectives/core/check_nccl.h"
#include "collectives/execution/stream_work.h"
#include "kernels/error.h"
#include "kernels/memory.h"

namespace engine {
namespace {

// On a communicator of one rank, avg is sum: NCCL before 2.29.7 leaves the tail of a one-rank
// avg unwritten (NVIDIA/nccl#1950; NCCL 2.28.9 on an H200 skipped the last element of 65537
// f64, bench/results/gpu-check-h200-2026-12-04), while its one-rank sum is a plain copy.
ncclRedOp_t nccl_op(ReduceOp op, int ranks) {
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::avg:
      return ranks == 1 ? ncclSum : ncclAvg;
    case ReduceOp::max:
      return ncclMax;
    case ReduceOp::min:
      return ncclMin;
  }
  return ncclSum;
}

const std::byte* at(const void* base, int64_t elements, DType dtype) {
  return static_cast<const std::byte*>(base) + elements * dtype_size(dtype);
}

}  // namespace

NcclCommunicator::NcclCommunicator(std::shared_ptr<NcclComm> comm, CommInfo info,
                                   CommOptions options)
    : Communicator(std::move(info), std::move(options)),
      comm_(std::move(comm)),
      stream_(comm_->device()),
      barrier_word_(allocate_storage(sizeof(float), comm_->device())),
      watchdog_([comm = comm_] { comm->abort(); }, [comm = comm_] { return comm->async_error(); }) {
}

NcclCommunicator::~NcclCommunicator() = default;

Work NcclCommunicator::execute(const CollectiveRequest& request, const OpContext& context,
                               Stream& stream, bool blocking) {
  return queue_on_comm_stream(stream_, stream, context, watchdog_, blocking,
                              request.kind == CollectiveKind::barrier, [&] { enqueue(request); });
}

void NcclCommunicator::enqueue(const CollectiveRequest& request) {
  ncclComm_t comm = comm_->get();
  cudaStream_t stream = stream_.native();
  if (request.kind == CollectiveKind::barrier) {
    CHECK_NCCL(ncclAllReduce(barrier_word_.get(), barrier_word_.get(), 1, ncclFloat32, ncclSum,
                             comm, stream));
    return;
  }
  const Tensor& reference = request.reference();
  const DType dtype = reference.dtype();
  const ncclDataType_t type = nccl_datatype(dtype);
  void* output = request.output_data();
  const void* input = request.input_data();
  const size_t count = static_cast<size_t>(reference.numel());
  const int root = request.root;
  switch (request.kind) {
    case CollectiveKind::all_reduce:
      CHECK_NCCL(
          ncclAllReduce(output, output, count, type, nccl_op(request.op, size()), comm, stream));
      break;
    case CollectiveKind::broadcast:
      CHECK_NCCL(ncclBroadcast(output, output, count, type, root, comm, stream));
      break;
    case CollectiveKind::reduce:
      // Non-root ranks keep their data: NCCL writes recvbuff only on the root.
      CHECK_NCCL(
          ncclReduce(output, output, count, type, nccl_op(request.op, size()), root, comm, stream));
      break;
    case CollectiveKind::all_gather:
      CHECK_NCCL(ncclAllGather(input, output, request.input.numel(), type, comm, stream));
      break;
    case CollectiveKind::reduce_scatter:
      CHECK_NCCL(ncclReduceScatter(input, output, request.output.numel(), type,
                                   nccl_op(request.op, size()), comm, stream));
      break;
    case CollectiveKind::gather: {
      const int64_t block = request.input.numel();
      CHECK_NCCL(ncclGroupStart());
      if (rank() == root) {
        for (int peer = 0; peer < size(); ++peer) {
          CHECK_NCCL(ncclRecv(const_cast<std::byte*>(at(output, peer * block, dtype)), block, type,
                              peer, comm, stream));
        }
      }
      CHECK_NCCL(ncclSend(input, block, type, root, comm, stream));
      CHECK_NCCL(ncclGroupEnd());
      break;
    }
    case CollectiveKind::scatter: {
      const int64_t block = request.output.numel();
      CHECK_NCCL(ncclGroupStart());
      if (rank() == root) {
        for (int peer = 0; peer < size(); ++peer) {
          CHECK_NCCL(ncclSend(at(input, peer * block, dtype), block, type, peer, comm, stream));
        }
      }
      CHECK_NCCL(ncclRecv(output, block, type, root, comm, stream));
      CHECK_NCCL(ncclGroupEnd());
      break;
    }
    case CollectiveKind::barrier:
      break;
  }
}

}  // namespace engine
