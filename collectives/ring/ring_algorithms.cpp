#include "collectives/ring/ring_algorithms.h"

#include <algorithm>

#include "collectives/ring/ring_schedule.h"
#include "kernels/error.h"
#include "kernels/memory.h"
#include "kernels/stream.h"

namespace engine {
namespace {

template <typename Pointer>
Pointer offset(Pointer base, int64_t elements, DType dtype) {
  using Byte = std::conditional_t<std::is_const_v<std::remove_pointer_t<Pointer>>, const std::byte,
                                  std::byte>;
  return static_cast<Pointer>(static_cast<Byte*>(base) + elements * dtype_size(dtype));
}

Reduction reduction_of(DType dtype, ReduceOp op, int divisor) {
  return {dtype, op, op == ReduceOp::avg ? divisor : 1};
}

// Calls body(begin, count) for consecutive slices of at most `slice` elements.
template <typename Body>
void for_each_slice(int64_t count, int64_t slice, Body&& body) {
  for (int64_t begin = 0; begin < count; begin += slice)
    body(begin, std::min(slice, count - begin));
}

}  // namespace

RingAlgorithms::RingAlgorithms(Transport& transport, Device scratch_device)
    : transport_(transport),
      scratch_device_(scratch_device),
      rank_(transport.rank()),
      world_(transport.world()) {}

int64_t RingAlgorithms::message_elements(DType dtype) const {
  return std::max<int64_t>(1, transport_.max_message_bytes() / dtype_size(dtype));
}

void* RingAlgorithms::scratch(size_t bytes) {
  if (bytes > scratch_bytes_) {
    // The old buffer is kept, not freed: queued device work may still read it, and so may
    // every later launch of a CUDA graph that captured a collective using it.
    if (scratch_) retired_scratch_.push_back(std::move(scratch_));
    scratch_ = allocate_storage(bytes, scratch_device_);
    scratch_bytes_ = bytes;
  }
  return scratch_.get();
}

void RingAlgorithms::all_reduce(void* data, int64_t count, DType dtype, ReduceOp op,
                                int avg_divisor) {
  const int divisor = avg_divisor > 0 ? avg_divisor : world_;
  ENGINE_REQUIRE(
      world_ > 1 || op != ReduceOp::avg || divisor == 1,
      "RingAlgorithms: an avg over one rank cannot divide by " + std::to_string(divisor));
  if (world_ == 1 || count == 0) return;  // avg over one rank divides by 1
  const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
  // The direct exchange sends the whole buffer to each of the n-1 peers: worth it while the
  // latency of 2(n-1) ring steps costs more than the extra bytes.
  const size_t direct_limit = transport_.small_message_bytes() / (world_ - 1);
  if (bytes <= direct_limit && bytes <= transport_.max_message_bytes()) {
    all_reduce_direct(data, count, dtype, op, divisor);
  } else {
    all_reduce_ring(data, count, dtype, op, divisor);
  }
}

void RingAlgorithms::all_reduce_ring(void* data, int64_t count, DType dtype, ReduceOp op,
                                     int divisor) {
  const int n = world_, right = ring_right(rank_, n), left = ring_left(rank_, n);
  const int64_t piece_elements = message_elements(dtype) * n;
  for (int64_t piece = 0; piece < piece_count(count, piece_elements); ++piece) {
    const ElementRange range = piece_range(count, piece_elements, piece);
    auto chunk = [&](int index) {
      ElementRange part = split_range(range.count, n, index);
      part.begin += range.begin;
      return part;
    };
    // Reduce-scatter: send, then (n-1) x receive-reduce-forward; the last one keeps the fully
    // reduced chunk and forwards it as the all-gather's first message. Empty chunks (fewer
    // elements than ranks) are skipped by sender and receiver alike.
    const ElementRange first = chunk(ring_step(RingPhase::reduce_scatter, rank_, n, 0).send_chunk);
    if (first.count > 0) {
      transport_.transfer(
          Transfer::send(right, offset(data, first.begin, dtype), first.count, dtype));
    }
    for (int step = 0; step < n - 1; ++step) {
      const ElementRange part =
          chunk(ring_step(RingPhase::reduce_scatter, rank_, n, step).recv_chunk);
      if (part.count == 0) continue;
      const bool last = step == n - 2;
      void* at = offset(data, part.begin, dtype);
      transport_.transfer(Transfer::recv_reduce_send(left, right, at, last ? at : nullptr,
                                                     part.count,
                                                     reduction_of(dtype, op, last ? divisor : 1)));
    }
    // All-gather: (n-2) x receive-copy-forward, then receive.
    for (int step = 0; step < n - 1; ++step) {
      const ElementRange part = chunk(ring_step(RingPhase::all_gather, rank_, n, step).recv_chunk);
      if (part.count == 0) continue;
      void* at = offset(data, part.begin, dtype);
      if (step == n - 2) {
        transport_.transfer(Transfer::recv(left, at, part.count, dtype));
      } else {
        transport_.transfer(Transfer::recv_copy_send(left, right, at, part.count, dtype));
      }
    }
  }
}

void RingAlgorithms::all_reduce_direct(void* data, int64_t count, DType dtype, ReduceOp op,
                                       int divisor) {
  const int n = world_;
  const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
  if (n == 2) {
    // op(a, b) == op(b, a) for every op in fp32, so both ranks get the same bits.
    const int peer = 1 - rank_;
    transport_.transfer(Transfer::send(peer, data, count, dtype));
    transport_.transfer(
        Transfer::recv_reduce(peer, data, data, count, reduction_of(dtype, op, divisor)));
    return;
  }
  // Everyone's data side by side, then reduced in rank order so every rank gets the same bits.
  auto* all = static_cast<std::byte*>(scratch(bytes * n));
  transport_.copy(all + rank_ * bytes, data, bytes);
  for (int distance = 1; distance < n; ++distance) {
    const int to = (rank_ + distance) % n, from = (rank_ + n - distance) % n;
    transport_.transfer(Transfer::send(to, data, count, dtype));
    transport_.transfer(Transfer::recv(from, all + from * bytes, count, dtype));
  }
  for (int r = 1; r < n; ++r) {
    const Reduction reduction = reduction_of(dtype, op, r == n - 1 ? divisor : 1);
    transport_.reduce(reduction, data, r == 1 ? all : data, all + r * bytes, count);
  }
}

void RingAlgorithms::reduce_scatter(const void* input, void* output, int64_t block, DType dtype,
                                    ReduceOp op) {
  const int n = world_, right = ring_right(rank_, n), left = ring_left(rank_, n);
  if (n == 1) {
    if (block > 0 && input != output) transport_.copy(output, input, block * dtype_size(dtype));
    return;
  }
  for_each_slice(block, message_elements(dtype), [&](int64_t begin, int64_t count) {
    auto in = [&](int chunk) { return offset(input, chunk * block + begin, dtype); };
    const int first = ring_step(RingPhase::reduce_scatter, rank_, n, 0).send_chunk;
    transport_.transfer(Transfer::send(right, in(first), count, dtype));
    for (int step = 0; step < n - 1; ++step) {
      const int chunk = ring_step(RingPhase::reduce_scatter, rank_, n, step).recv_chunk;
      if (step < n - 2) {
        transport_.transfer(Transfer::recv_reduce_send(left, right, in(chunk), nullptr, count,
                                                       reduction_of(dtype, op, 1)));
      } else {  // the last step reduces this rank's own block: chunk == rank_
        transport_.transfer(Transfer::recv_reduce(left, in(chunk), offset(output, begin, dtype),
                                                  count, reduction_of(dtype, op, n)));
      }
    }
  });
}

void RingAlgorithms::all_gather(const void* input, void* output, int64_t block, DType dtype) {
  const int n = world_, right = ring_right(rank_, n), left = ring_left(rank_, n);
  void* own = offset(output, rank_ * block, dtype);
  if (block > 0 && own != input) transport_.copy(own, input, block * dtype_size(dtype));
  if (n == 1) return;
  for_each_slice(block, message_elements(dtype), [&](int64_t begin, int64_t count) {
    auto out = [&](int chunk) { return offset(output, chunk * block + begin, dtype); };
    const int first = ring_step(RingPhase::all_gather, rank_, n, 0).send_chunk;
    transport_.transfer(Transfer::send(right, out(first), count, dtype));
    for (int step = 0; step < n - 1; ++step) {
      void* at = out(ring_step(RingPhase::all_gather, rank_, n, step).recv_chunk);
      if (step == n - 2) {
        transport_.transfer(Transfer::recv(left, at, count, dtype));
      } else {
        transport_.transfer(Transfer::recv_copy_send(left, right, at, count, dtype));
      }
    }
  });
}

void RingAlgorithms::broadcast(void* data, int64_t count, DType dtype, int root) {
  const int n = world_;
  if (n == 1) return;
  const int position = (rank_ - root + n) % n;  // the root is first in the chain
  const int right = ring_right(rank_, n), left = ring_left(rank_, n);
  for_each_slice(count, message_elements(dtype), [&](int64_t begin, int64_t slice) {
    void* part = offset(data, begin, dtype);
    if (position == 0) {
      transport_.transfer(Transfer::send(right, part, slice, dtype));
    } else if (position == n - 1) {
      transport_.transfer(Transfer::recv(left, part, slice, dtype));
    } else {
      transport_.transfer(Transfer::recv_copy_send(left, right, part, slice, dtype));
    }
  });
}

void RingAlgorithms::reduce(void* data, int64_t count, DType dtype, ReduceOp op, int root) {
  const int n = world_;
  if (n == 1) return;
  const int position = (rank_ - root - 1 + 2 * n) % n;  // the chain ends at the root
  const int right = ring_right(rank_, n), left = ring_left(rank_, n);
  for_each_slice(count, message_elements(dtype), [&](int64_t begin, int64_t slice) {
    void* part = offset(data, begin, dtype);
    if (position == 0) {
      transport_.transfer(Transfer::send(right, part, slice, dtype));
    } else if (position < n - 1) {  // partial results pass through; this rank's data stays
      transport_.transfer(Transfer::recv_reduce_send(left, right, part, nullptr, slice,
                                                     reduction_of(dtype, op, 1)));
    } else {
      transport_.transfer(
          Transfer::recv_reduce(left, part, part, slice, reduction_of(dtype, op, n)));
    }
  });
}

void RingAlgorithms::gather(const void* input, void* output, int64_t block, DType dtype, int root) {
  const int64_t slice = message_elements(dtype);
  if (rank_ != root) {
    for_each_slice(block, slice, [&](int64_t begin, int64_t count) {
      transport_.transfer(Transfer::send(root, offset(input, begin, dtype), count, dtype));
    });
    return;
  }
  void* own = offset(output, root * block, dtype);
  if (block > 0 && own != input) transport_.copy(own, input, block * dtype_size(dtype));
  for (int distance = 1; distance < world_; ++distance) {
    const int peer = (root + distance) % world_;
    for_each_slice(block, slice, [&](int64_t begin, int64_t count) {
      transport_.transfer(
          Transfer::recv(peer, offset(output, peer * block + begin, dtype), count, dtype));
    });
  }
}

void RingAlgorithms::scatter(const void* input, void* output, int64_t block, DType dtype,
                             int root) {
  const int64_t slice = message_elements(dtype);
  if (rank_ != root) {
    for_each_slice(block, slice, [&](int64_t begin, int64_t count) {
      transport_.transfer(Transfer::recv(root, offset(output, begin, dtype), count, dtype));
    });
    return;
  }
  for (int distance = 1; distance < world_; ++distance) {
    const int peer = (root + distance) % world_;
    for_each_slice(block, slice, [&](int64_t begin, int64_t count) {
      transport_.transfer(
          Transfer::send(peer, offset(input, peer * block + begin, dtype), count, dtype));
    });
  }
  const void* own = offset(input, root * block, dtype);
  if (block > 0 && own != output) transport_.copy(output, own, block * dtype_size(dtype));
}

void RingAlgorithms::barrier() {
  // Dissemination: after round k every rank has heard, directly or not, from 2^k ranks. The
  // token's value does not matter; it is a float only because messages count elements.
  float host_tokens[2] = {0.f, 0.f};
  auto* tokens = transport_.memory() == DeviceKind::cpu
                     ? host_tokens
                     : static_cast<float*>(scratch(sizeof(host_tokens)));
  for (int distance = 1; distance < world_; distance *= 2) {
    const int to = (rank_ + distance) % world_, from = (rank_ + world_ - distance) % world_;
    transport_.transfer(Transfer::send(to, &tokens[0], 1, DType::f32));
    transport_.transfer(Transfer::recv(from, &tokens[1], 1, DType::f32));
  }
}

}  // namespace engine
