// MpiCommunicator: MPI's own collectives (MPI_Allreduce, MPI_Bcast, ...) on CPU tensors, on
// a duplicate of the given communicator. It is the baseline our ring is measured against
// and a dependable fallback. f32 and f64 reduce with MPI's own ops (MPI_FLOAT, MPI_DOUBLE);
// bf16 through user-defined MPI ops that accumulate in fp32; avg is a sum divided once by the
// world size. Blocking library calls cannot poll a
// deadline, so a watchdog thread ends the job when one overruns the timeout.
#pragma once

#include <mpi.h>

#include "collectives/communicator.h"
#include "collectives/execution/host_executor.h"
#include "collectives/execution/watchdog.h"

namespace engine {

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, CommInfo info, CommOptions options);
  ~MpiCommunicator() override;

  bool supports(Device device) const override { return device.is_cpu(); }

 protected:
  Work execute(const CollectiveRequest& request, const OpContext& context, Stream& stream,
               bool blocking) override;

 private:
  void run(const CollectiveRequest& request);

  MPI_Comm comm_ = MPI_COMM_NULL;
  Watchdog watchdog_;
  HostExecutor executor_;  // last: its jobs use the members above
};

// The MPI datatype and op that reduce `dtype` with `op` (avg: the sum; divide afterwards).
MPI_Datatype mpi_datatype(DType dtype);
MPI_Op mpi_reduce_op(DType dtype, ReduceOp op);

}  // namespace engine
