// The sim device's ncclSend, ncclRecv, ncclAllReduce, ncclBroadcast, ncclReduce,
// ncclAllGather and ncclReduceScatter, as nccl.h declares them: arguments checked at the call
// (call_checks.h), then the call's operation (collective_plans.h) joins the current group.
#include <nccl.h>

#include "sim/nccl/call_checks.h"
#include "sim/nccl/collective_plans.h"
#include "sim/nccl/group.h"

using namespace engine::sim_nccl;

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  CheckedCall c;
  size_t bytes = 0;
  if (ncclResult_t s = check_call("ncclSend", comm, datatype, count, c, bytes)) return s;
  if (ncclResult_t s = check_rank(c, "peer", peer)) return s;
  if (ncclResult_t s = check_buffer(c, "sendbuff", sendbuff, bytes)) return s;
  return add_to_group(c.comm, stream, send_operation(c.site, sendbuff, bytes, peer));
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  CheckedCall c;
  size_t bytes = 0;
  if (ncclResult_t s = check_call("ncclRecv", comm, datatype, count, c, bytes)) return s;
  if (ncclResult_t s = check_rank(c, "peer", peer)) return s;
  if (ncclResult_t s = check_buffer(c, "recvbuff", recvbuff, bytes)) return s;
  return add_to_group(c.comm, stream, recv_operation(c.site, recvbuff, bytes, peer));
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  CheckedCall c;
  Reducer reducer;
  size_t bytes = 0;
  if (ncclResult_t s = check_call("ncclAllReduce", comm, datatype, count, c, bytes)) return s;
  if (ncclResult_t s = check_reducer(c, datatype, op, reducer)) return s;
  if (ncclResult_t s = check_buffer(c, "sendbuff", sendbuff, bytes)) return s;
  if (ncclResult_t s = check_buffer(c, "recvbuff", recvbuff, bytes)) return s;
  return add_to_group(
      c.comm, stream,
      all_reduce_operation(c.site, sendbuff, recvbuff, static_cast<int64_t>(count), reducer));
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  CheckedCall c;
  size_t bytes = 0;
  if (ncclResult_t s = check_call("ncclBroadcast", comm, datatype, count, c, bytes)) return s;
  if (ncclResult_t s = check_rank(c, "root", root)) return s;
  // As in NCCL, only the root's sendbuff is read.
  if (c.site.rank == root) {
    if (ncclResult_t s = check_buffer(c, "sendbuff", sendbuff, bytes)) return s;
  }
  if (ncclResult_t s = check_buffer(c, "recvbuff", recvbuff, bytes)) return s;
  return add_to_group(c.comm, stream, broadcast_operation(c.site, sendbuff, recvbuff, bytes, root));
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  CheckedCall c;
  Reducer reducer;
  size_t bytes = 0;
  if (ncclResult_t s = check_call("ncclReduce", comm, datatype, count, c, bytes)) return s;
  if (ncclResult_t s = check_reducer(c, datatype, op, reducer)) return s;
  if (ncclResult_t s = check_rank(c, "root", root)) return s;
  if (ncclResult_t s = check_buffer(c, "sendbuff", sendbuff, bytes)) return s;
  // As in NCCL, only the root's recvbuff is written.
  if (c.site.rank == root) {
    if (ncclResult_t s = check_buffer(c, "recvbuff", recvbuff, bytes)) return s;
  }
  return add_to_group(
      c.comm, stream,
      reduce_operation(c.site, sendbuff, recvbuff, static_cast<int64_t>(count), reducer, root));
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  CheckedCall c;
  size_t bytes = 0, all_bytes = 0;
  if (ncclResult_t s =
          check_call("ncclAllGather", comm, datatype, sendcount, c, bytes, &all_bytes)) {
    return s;
  }
  if (ncclResult_t s = check_buffer(c, "sendbuff", sendbuff, bytes)) return s;
  if (ncclResult_t s = check_buffer(c, "recvbuff", recvbuff, all_bytes)) return s;
  return add_to_group(c.comm, stream, all_gather_operation(c.site, sendbuff, recvbuff, bytes));
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  CheckedCall c;
  Reducer reducer;
  size_t bytes = 0, all_bytes = 0;
  if (ncclResult_t s =
          check_call("ncclReduceScatter", comm, datatype, recvcount, c, bytes, &all_bytes)) {
    return s;
  }
  if (ncclResult_t s = check_reducer(c, datatype, op, reducer)) return s;
  if (ncclResult_t s = check_buffer(c, "sendbuff", sendbuff, all_bytes)) return s;
  if (ncclResult_t s = check_buffer(c, "recvbuff", recvbuff, bytes)) return s;
  return add_to_group(c.comm, stream,
                      reduce_scatter_operation(c.site, sendbuff, recvbuff,
                                               static_cast<int64_t>(recvcount), reducer));
}
