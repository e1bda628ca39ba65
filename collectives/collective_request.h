// One collective call as data: what it is, its tensors, and the checks every implementation
// relies on. Checks run on the caller's thread before anything is sent, and their messages
// name the collective, the rank and the offending tensor.
#pragma once

#include <cstddef>
#include <string_view>

#include "collectives/core/reduce_op.h"
#include "kernels/tensor.h"

namespace engine {

enum class CollectiveKind {
  all_reduce,
  broadcast,
  reduce,
  all_gather,
  reduce_scatter,
  gather,
  scatter,
  barrier
};

std::string_view collective_name(CollectiveKind kind);

struct CollectiveRequest {
  CollectiveKind kind = CollectiveKind::barrier;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  // all_reduce, broadcast and reduce work in place: input and output are the same tensor.
  // gather's output and scatter's input matter only on the root (may be undefined elsewhere).
  Tensor input;
  Tensor output;

  bool in_place() const;
  // The tensor that decides dtype and device (always defined after validation).
  const Tensor& reference() const;
  // Bytes of the larger defined tensor (for messages and benchmarks).
  size_t bytes() const;
  // The tensors' data as the communicators pass it on; null for an undefined tensor. The
  // output is written through a const request: the tensors share their storage.
  const void* input_data() const { return input.raw_data(); }
  void* output_data() const { return const_cast<void*>(output.raw_data()); }
};

// Throws engine::Error when the tensors do not fit the collective on this rank.
void validate_request(const CollectiveRequest& request, int rank, int world);

}  // namespace engine
