// Every collective written as messages over a Transport, following the ring schedule
// (ring_schedule.h): all-reduce = reduce-scatter then all-gather, pipelined piece by piece
// (one message per chunk per step); small all-reduces take a direct exchange instead (one
// step of latency rather than 2(n-1)); broadcast and reduce flow along a pipelined chain;
// gather and scatter talk to the root directly; the barrier is a dissemination barrier.
//
// Pointers live in the transport's memory. The caller brackets each collective with
// transport.begin(context) and transport.finish(). Every rank gets bit-identical results:
// each element is reduced in one place and then copied, and the direct path reduces in
// rank order on every rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "collectives/core/reduce_op.h"
#include "collectives/transports/transport.h"
#include "kernels/device.h"

namespace engine {

class RingAlgorithms {
 public:
  // scratch_device: where the direct path's scratch buffers are allocated (the transport's
  // memory: the CPU, or the CUDA device of an NCCL transport).
  RingAlgorithms(Transport& transport, Device scratch_device);

  // data (count elements) becomes op over every rank's data. avg divides by avg_divisor
  // when it is set (a stage of a larger all-reduce), else by the number of ranks.
  void all_reduce(void* data, int64_t count, DType dtype, ReduceOp op, int avg_divisor = 0);
  // output (block elements) becomes block `rank` of op over every rank's input (n blocks).
  void reduce_scatter(const void* input, void* output, int64_t block, DType dtype, ReduceOp op);
  // output (n blocks) becomes every rank's input (one block each), in rank order.
  void all_gather(const void* input, void* output, int64_t block, DType dtype);
  // data of every rank becomes root's data.
  void broadcast(void* data, int64_t count, DType dtype, int root);
  // root's data becomes op over every rank's data; other ranks' data is unchanged.
  void reduce(void* data, int64_t count, DType dtype, ReduceOp op, int root);
  // On root, output (n blocks) becomes every rank's input; output is unused elsewhere.
  void gather(const void* input, void* output, int64_t block, DType dtype, int root);
  // output (block elements) becomes block `rank` of root's input; input is unused elsewhere.
  void scatter(const void* input, void* output, int64_t block, DType dtype, int root);
  void barrier();

 private:
  void all_reduce_ring(void* data, int64_t count, DType dtype, ReduceOp op, int divisor);
  void all_reduce_direct(void* data, int64_t count, DType dtype, ReduceOp op, int divisor);
  int64_t message_elements(DType dtype) const;
  void* scratch(size_t bytes);

  Transport& transport_;
  Device scratch_device_;
  std::shared_ptr<std::byte> scratch_;
  size_t scratch_bytes_ = 0;
  std::vector<std::shared_ptr<std::byte>> retired_scratch_;  // outgrown; see scratch()
  int rank_;
  int world_;
};

}  // namespace engine
