// An NCCL communicator over the ranks of an MPI communicator: the unique id is made on
// rank 0 and broadcast over MPI, then every rank joins with ncclCommInitRank on its device.
// Move-free RAII owner; shared by the NCCL transport or communicator that uses it.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <atomic>
#include <string>

#include "kernels/device.h"
#include "kernels/dtype.h"

namespace engine {

class NcclComm {
 public:
  // Collective over `comm`; `device` is this rank's GPU.
  NcclComm(MPI_Comm comm, Device device);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const { return comm_; }
  Device device() const { return device_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // ncclCommAbort: queued NCCL work stops; callable from another thread (timeouts).
  void abort();
  // What ncclCommGetAsyncError reports, with ncclGetLastError's words ("" while nothing failed,
  // and after our own abort); callable from another thread (the watchdog).
  std::string async_error() const;

 private:
  ncclComm_t comm_ = nullptr;
  Device device_;
  int rank_ = 0;
  int size_ = 1;
  std::atomic<bool> aborted_{false};
};

ncclDataType_t nccl_datatype(DType dtype);

}  // namespace engine
