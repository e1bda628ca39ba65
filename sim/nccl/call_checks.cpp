#include "sim/nccl/call_checks.h"

#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "sim/cuda/allocations.h"
#include "sim/nccl/last_error.h"
#include "sim/nccl/registry.h"

namespace engine::sim_nccl {
namespace {

std::string where(const CheckedCall& c) {
  return std::string(c.site.call) + " on rank " + std::to_string(c.site.rank) + " of " +
         std::to_string(c.site.nranks);
}

std::string pointer_text(const void* data) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", data);
  return text;
}

}  // namespace

ncclResult_t check_comm(const char* call, ncclComm_t handle, CheckedCall& out) {
  if (handle == nullptr) return fail(ncclInvalidArgument, std::string(call) + ": comm is NULL");
  out.comm = find_comm(handle);
  if (!out.comm) {
    return fail(ncclInvalidArgument, std::string(call) + ": comm " + pointer_text(handle) +
                                         " is not a live communicator (destroyed?)");
  }
  out.site = out.comm->site(call);
  if (out.comm->aborted()) {
    return fail(ncclInvalidUsage, where(out) + ": the communicator was aborted (ncclCommAbort)");
  }
  return ncclSuccess;
}

ncclResult_t check_datatype(const CheckedCall& c, ncclDataType_t type, size_t& element_bytes) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      element_bytes = 1;
      return ncclSuccess;
    case ncclFloat16:
    case ncclBfloat16:
      element_bytes = 2;
      return ncclSuccess;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      element_bytes = 4;
      return ncclSuccess;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      element_bytes = 8;
      return ncclSuccess;
    default:
      return fail(ncclInvalidArgument,
                  where(c) + ": invalid datatype " + std::to_string(static_cast<int>(type)));
  }
}

ncclResult_t check_reducer(const CheckedCall& c, ncclDataType_t type, ncclRedOp_t op,
                           Reducer& reducer) {
  switch (op) {
    case ncclSum:
      reducer.op = ReduceOp::sum;
      break;
    case ncclAvg:
      reducer.op = ReduceOp::avg;
      break;
    case ncclMax:
      reducer.op = ReduceOp::max;
      break;
    case ncclMin:
      reducer.op = ReduceOp::min;
      break;
    case ncclProd:
      return fail(ncclInvalidArgument,
                  where(c) +
                      ": ncclProd is not reduced by the sim device's NCCL (sum, avg, "
                      "max and min are)");
    default:
      return fail(ncclInvalidArgument,
                  where(c) + ": invalid reduction op " + std::to_string(static_cast<int>(op)));
  }
  switch (type) {
    case ncclFloat32:
      reducer.dtype = DType::f32;
      return ncclSuccess;
    case ncclFloat64:
      reducer.dtype = DType::f64;
      return ncclSuccess;
    case ncclBfloat16:
      reducer.dtype = DType::bf16;
      return ncclSuccess;
    default: {
      size_t element_bytes = 0;
      if (const ncclResult_t status = check_datatype(c, type, element_bytes)) return status;
      return fail(ncclInvalidArgument,
                  where(c) + ": datatype " + std::to_string(static_cast<int>(type)) +
                      " is not reduced by the sim device's NCCL (ncclFloat32, ncclFloat64 and "
                      "ncclBfloat16 are)");
    }
  }
}

ncclResult_t check_size(const CheckedCall& c, size_t count, size_t element_bytes, size_t blocks,
                        size_t& bytes) {
  // Sizes are also byte offsets and int64 element counts downstream.
  const size_t limit = static_cast<size_t>(std::numeric_limits<int64_t>::max());
  if (count > limit / element_bytes / blocks) {
    return fail(ncclInvalidArgument, where(c) + ": count " + std::to_string(count) + " of " +
                                         std::to_string(element_bytes) + "-byte elements" +
                                         (blocks > 1 ? " per rank" : "") + " overflows");
  }
  bytes = count * element_bytes * blocks;
  return ncclSuccess;
}

ncclResult_t check_call(const char* call, ncclComm_t handle, ncclDataType_t type, size_t count,
                        CheckedCall& out, size_t& bytes, size_t* all_ranks_bytes) {
  size_t element_bytes = 0;
  if (const ncclResult_t status = check_comm(call, handle, out)) return status;
  if (const ncclResult_t status = check_datatype(out, type, element_bytes)) return status;
  if (const ncclResult_t status = check_size(out, count, element_bytes, 1, bytes)) return status;
  if (all_ranks_bytes == nullptr) return ncclSuccess;
  return check_size(out, count, element_bytes, out.site.nranks, *all_ranks_bytes);
}

ncclResult_t check_rank(const CheckedCall& c, const char* what, int rank) {
  if (rank >= 0 && rank < c.site.nranks) return ncclSuccess;
  return fail(ncclInvalidArgument, where(c) + ": " + what + " " + std::to_string(rank) +
                                       " is out of range (0.." + std::to_string(c.site.nranks - 1) +
                                       ")");
}

ncclResult_t check_buffer(const CheckedCall& c, const char* what, const void* data, size_t bytes) {
  if (bytes == 0) return ncclSuccess;
  const std::string buffer =
      std::string(what) + " " + pointer_text(data) + " (" + std::to_string(bytes) + " bytes)";
  if (data == nullptr) return fail(ncclInvalidArgument, where(c) + ": " + buffer + " is NULL");
  const std::optional<sim::Allocation> allocation = sim::find_allocation(data);
  if (!allocation || allocation->kind != sim::MemoryKind::kDevice) {
    return fail(ncclInvalidArgument, where(c) + ": " + buffer + " is not device memory");
  }
  if (allocation->device != c.comm->device()) {
    return fail(ncclInvalidArgument,
                where(c) + ": " + buffer + " is on cuda:" + std::to_string(allocation->device) +
                    ", the communicator on cuda:" + std::to_string(c.comm->device()));
  }
  const auto* begin = static_cast<const std::byte*>(data);
  if (begin + bytes > allocation->begin + allocation->bytes) {
    return fail(ncclInvalidArgument, where(c) + ": " + buffer + " runs past the end of its " +
                                         std::to_string(allocation->bytes) + "-byte allocation");
  }
  return ncclSuccess;
}

}  // namespace engine::sim_nccl
