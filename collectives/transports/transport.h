// A transport moves the ring's messages between ranks. Every message of every ring algorithm
// is one Transfer: receive one message and/or send one message, with the received data
// copied or reduced on the way (NCCL's primitives send, recv, recvReduceSend,
// recvReduceCopySend, recvCopySend, written as one description). Transports: shared memory
// (ShmTransport) and MPI point-to-point (MpiTransport) for host buffers, NCCL for device
// buffers (NcclTransport).
//
// Sends are buffered: a transport keeps at least two messages per destination in flight
// before a send waits, which is what makes "receive, then forward" around a ring
// deadlock-free. Messages between two ranks arrive in the order they were sent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "collectives/core/reduce_op.h"
#include "collectives/core/timeout.h"
#include "kernels/device.h"

namespace engine {

class Stream;

struct Transfer {
  int from = -1;              // receive one message from this rank (-1: receive nothing)
  int to = -1;                // send one message to this rank (-1: send nothing)
  const void* src = nullptr;  // sent as is when nothing is received, else the local operand
  void* dst = nullptr;        // receives the (reduced) data; null: it is only forwarded
  int64_t count = 0;          // elements in the message
  DType dtype = DType::f32;
  // Set: what arrives is combined as dst = op(src, received). Unset: copied.
  std::optional<Reduction> reduction;

  size_t bytes() const { return static_cast<size_t>(count) * dtype_size(dtype); }

  // The shapes a ring uses, named after NCCL's primitives.
  static Transfer send(int to, const void* src, int64_t count, DType dtype) {
    return make(-1, to, src, nullptr, count, dtype, std::nullopt);
  }
  static Transfer recv(int from, void* dst, int64_t count, DType dtype) {
    return make(from, -1, nullptr, dst, count, dtype, std::nullopt);
  }
  // Receive, keep a copy in dst (unless null) and forward.
  static Transfer recv_copy_send(int from, int to, void* dst, int64_t count, DType dtype) {
    return make(from, to, nullptr, dst, count, dtype, std::nullopt);
  }
  // dst = op(src, received).
  static Transfer recv_reduce(int from, const void* src, void* dst, int64_t count,
                              const Reduction& reduction) {
    return make(from, -1, src, dst, count, reduction.dtype, reduction);
  }
  // op(src, received) is forwarded, and kept in dst unless dst is null.
  static Transfer recv_reduce_send(int from, int to, const void* src, void* dst, int64_t count,
                                   const Reduction& reduction) {
    return make(from, to, src, dst, count, reduction.dtype, reduction);
  }

 private:
  static Transfer make(int from, int to, const void* src, void* dst, int64_t count, DType dtype,
                       std::optional<Reduction> reduction) {
    Transfer t;
    t.from = from;
    t.to = to;
    t.src = src;
    t.dst = dst;
    t.count = count;
    t.dtype = dtype;
    t.reduction = reduction;
    return t;
  }
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual std::string_view name() const = 0;  // "shm", "mpi", "nccl"
  virtual DeviceKind memory() const = 0;      // where src/dst pointers live
  virtual int rank() const = 0;
  virtual int world() const = 0;
  // The largest message; the ring cuts buffers into messages of this size.
  virtual size_t max_message_bytes() const = 0;
  // All-reduces of at most this / (world - 1) bytes take the latency-optimal direct exchange.
  virtual size_t small_message_bytes() const = 0;

  // Called before the first transfer of each collective; waits use its timeout and name it.
  virtual void begin(const OpContext& context) = 0;
  // One message in and/or out (see Transfer). count must be at most max_message_bytes.
  virtual void transfer(const Transfer& transfer) = 0;
  // Completes every send of the collective (the buffers they came from may then change).
  virtual void finish() = 0;

  // Device transports: the stream their work is queued on (transfers and local operations
  // then return before the work is done). Host transports: nullptr, and work is done on return.
  virtual Stream* stream() { return nullptr; }
  // Device transports: cancels queued communication (NCCL: ncclCommAbort) before a timed
  // out job ends, from another thread.
  virtual void abort() {}
  // Device transports: a failure the library reports asynchronously ("" while none).
  virtual std::string async_error() { return {}; }

  // Local operations on this transport's memory, ordered with the transfers.
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void reduce(const Reduction& reduction, void* dst, const void* a, const void* b,
                      int64_t count) = 0;
};

}  // namespace engine
