#include "collectives/communicators/nccl_comm.h"

#include "collectives/core/check_mpi.h"
#include "collectives/core/check_nccl.h"
#include "kernels/cuda/cuda_runtime.h"
#include "kernels/error.h"

namespace engine {

NcclComm::NcclComm(MPI_Comm comm, Device device) : device_(device) {
  ENGINE_REQUIRE(device.is_cuda(), "NcclComm needs a CUDA device, not " + device.str());
  CHECK_MPI(MPI_Comm_rank(comm, &rank_));
  CHECK_MPI(MPI_Comm_size(comm, &size_));
  ncclUniqueId id{};
  if (rank_ == 0) CHECK_NCCL(ncclGetUniqueId(&id));
  CHECK_MPI(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm));
  cuda_runtime::set_device(device.index);
  CHECK_NCCL(ncclCommInitRank(&comm_, size_, id, rank_));
}

NcclComm::~NcclComm() {
  if (comm_ != nullptr && !aborted_.load()) ncclCommDestroy(comm_);
}

void NcclComm::abort() {
  if (comm_ != nullptr && !aborted_.exchange(true)) ncclCommAbort(comm_);
}

std::string NcclComm::async_error() const {
  if (comm_ == nullptr || aborted_.load()) return {};
  ncclResult_t result = ncclSuccess;
  if (ncclCommGetAsyncError(comm_, &result) != ncclSuccess) return {};
  if (result == ncclSuccess || result == ncclInProgress) return {};
  const char* last = ncclGetLastError(comm_);
  std::string text = std::string("NCCL reports ") + ncclGetErrorString(result);
  if (last != nullptr && *last != '\0') text.append(": ").append(last);
  return text;
}

ncclDataType_t nccl_datatype(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return ncclFloat32;
    case DType::f64:
      return ncclFloat64;
    case DType::bf16:
      return ncclBfloat16;
    case DType::i32:
    case DType::u8:
      break;
  }
  fail("NCCL: no datatype for " + std::string(dtype_name(dtype)));
}

}  // namespace engine
