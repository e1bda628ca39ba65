// Communicator: the collectives of a group of ranks, on CPU or CUDA tensors.
//
// Every rank must call the same collectives in the same order with matching tensors.
// Blocking calls: CPU tensors are done when the call returns; CUDA tensors are ordered on
// `stream` (work queued on it before the call produces the inputs, work queued after sees
// the results), without blocking the host, as every CUDA op in kernels/ops.h. *_async calls
// return a Work (work.h); the tensors must stay untouched until it completes.
//
// Implementations: RingCommunicator (ours, over ShmTransport / MpiTransport / NcclTransport)
// and MpiCommunicator / NcclCommunicator (the libraries' collectives). make_communicator
// (comm_factory.h) builds one by name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "collectives/collective_request.h"
#include "collectives/comm_options.h"
#include "collectives/work.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine {

class Watchdog;

struct CommInfo {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  std::string name;  // "ring-shm", "mpi", ...
};

class Communicator {
 public:
  Communicator(CommInfo info, CommOptions options);
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return info_.rank; }
  int size() const { return info_.size; }
  int local_rank() const { return info_.local_rank; }
  const std::string& name() const { return info_.name; }
  const CommOptions& options() const { return options_; }
  // Whether tensors on `device` can be used (ring-shm: CPU; nccl: CUDA; ...).
  virtual bool supports(Device device) const = 0;

  // tensor becomes op over every rank's tensor.
  void all_reduce(Tensor& tensor, ReduceOp op, Stream& stream);
  Work all_reduce_async(Tensor& tensor, ReduceOp op, Stream& stream);
  // tensor becomes root's tensor.
  void broadcast(Tensor& tensor, int root, Stream& stream);
  Work broadcast_async(Tensor& tensor, int root, Stream& stream);
  // root's tensor becomes op over every rank's tensor; the others' tensors are unchanged.
  void reduce(Tensor& tensor, int root, ReduceOp op, Stream& stream);
  Work reduce_async(Tensor& tensor, int root, ReduceOp op, Stream& stream);
  // output (size() x input.numel()) becomes every rank's input, in rank order.
  void all_gather(const Tensor& input, Tensor& output, Stream& stream);
  Work all_gather_async(const Tensor& input, Tensor& output, Stream& stream);
  // output becomes block rank() of op over every rank's input (size() x output.numel()).
  void reduce_scatter(const Tensor& input, Tensor& output, ReduceOp op, Stream& stream);
  Work reduce_scatter_async(const Tensor& input, Tensor& output, ReduceOp op, Stream& stream);
  // On root, output (size() x input.numel()) becomes every rank's input; elsewhere output
  // is not used and may be undefined.
  void gather(const Tensor& input, Tensor& output, int root, Stream& stream);
  Work gather_async(const Tensor& input, Tensor& output, int root, Stream& stream);
  // output becomes block rank() of root's input (size() x output.numel()); input is used
  // only on root.
  void scatter(const Tensor& input, Tensor& output, int root, Stream& stream);
  Work scatter_async(const Tensor& input, Tensor& output, int root, Stream& stream);
  // Returns once every rank has entered the barrier.
  void barrier();
  Work barrier_async();

  // Whether collectives on CUDA tensors may be queued while their stream captures a CUDA graph
  // (kernels/cuda_graph.h): each launch of the graph then runs them again, in the graph's
  // order, on every rank alike. NCCL's and our ring over NCCL: yes; host communicators: no.
  virtual bool capturable() const { return false; }
  // Work queued on `stream` that runs collectives captured from this communicator (a launch of
  // the graph): watched against the timeout as one collective named `what` (a literal), so
  // that a peer that never comes ends the job after --comm-timeout instead of hanging it, as
  // with the collectives issued here. Nothing for communicators that cannot capture.
  void watch_queued(Stream& stream, const char* what);

 protected:
  // Runs a validated request. blocking: CPU work is done on return, CUDA work is ordered
  // on `stream`. The returned Work is ignored for blocking calls.
  virtual Work execute(const CollectiveRequest& request, const OpContext& context, Stream& stream,
                       bool blocking) = 0;
  // What watches this communicator's work on CUDA streams; nullptr when it queues none.
  virtual Watchdog* device_watchdog() { return nullptr; }

 private:
  Work start(CollectiveRequest request, Stream& stream, bool blocking);
  // The context of an operation named `op` (a literal): this communicator, rank and timeout;
  // no sequence number or size.
  OpContext op_context(std::string_view op) const;

  CommInfo info_;
  CommOptions options_;
  uint64_t sequence_ = 0;
};

}  // namespace engine
