#include "sim/nccl/collective_plans.h"

#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "collectives/cpu/reduce.h"

namespace engine::sim_nccl {
namespace {

std::byte* bytes_of(const void* data) {
  // Transfers carry one pointer type; sends only ever read through it.
  return static_cast<std::byte*>(const_cast<void*>(data));
}

bool overlaps(const std::byte* a, const std::byte* b, size_t bytes) {
  return bytes != 0 && a < b + bytes && b < a + bytes;
}

std::shared_ptr<std::byte[]> scratch_of(size_t bytes) {
  return std::shared_ptr<std::byte[]>(new std::byte[bytes == 0 ? 1 : bytes]);
}

// Receives every peer's block into scratch; returns the inputs by rank, this rank's being
// `own`.
std::vector<const std::byte*> receive_from_every_peer(const CallSite& site, Operation& op,
                                                      const std::byte* own, size_t bytes) {
  std::vector<const std::byte*> inputs(site.nranks, own);
  for (int peer = 0; peer < site.nranks; ++peer) {
    if (peer == site.rank) continue;
    op.scratch.push_back(scratch_of(bytes));
    op.recvs.push_back({peer, op.scratch.back().get(), bytes});
    inputs[peer] = op.scratch.back().get();
  }
  return inputs;
}

// dst = inputs[0] op inputs[1] op ... op inputs[n-1], left to right, avg dividing on the last
// step. Only the first step may read an input that dst aliases, so an own input at a later
// position that dst overlaps is copied first.
void reduce_in_rank_order(std::vector<const std::byte*> inputs, int self, std::byte* dst,
                          int64_t count, const Reducer& reducer) {
  const int nranks = static_cast<int>(inputs.size());
  const size_t bytes = static_cast<size_t>(count) * dtype_size(reducer.dtype);
  if (nranks == 1) {
    if (dst != inputs[0]) std::memmove(dst, inputs[0], bytes);
    return;
  }
  std::unique_ptr<std::byte[]> staged;
  if (self >= 2 && overlaps(inputs[self], dst, bytes)) {
    staged.reset(new std::byte[bytes]);
    std::memcpy(staged.get(), inputs[self], bytes);
    inputs[self] = staged.get();
  }
  for (int r = 1; r < nranks; ++r) {
    const bool last = r == nranks - 1;
    const Reduction step{reducer.dtype, reducer.op,
                         last && reducer.op == ReduceOp::avg ? nranks : 1};
    cpu::reduce(step, dst, r == 1 ? inputs[0] : dst, inputs[r], count);
  }
}

void send_to_every_peer(const CallSite& site, Operation& op, const void* data, size_t bytes) {
  for (int peer = 0; peer < site.nranks; ++peer) {
    if (peer != site.rank) op.sends.push_back({peer, bytes_of(data), bytes});
  }
}

}  // namespace

Operation send_operation(const CallSite& site, const void* data, size_t bytes, int peer) {
  Operation op;
  op.call = site.call;
  op.sends.push_back({peer, bytes_of(data), bytes});
  return op;
}

Operation recv_operation(const CallSite& site, void* data, size_t bytes, int peer) {
  Operation op;
  op.call = site.call;
  op.recvs.push_back({peer, static_cast<std::byte*>(data), bytes});
  return op;
}

Operation all_reduce_operation(const CallSite& site, const void* send, void* recv, int64_t count,
                               const Reducer& reducer) {
  const size_t bytes = static_cast<size_t>(count) * dtype_size(reducer.dtype);
  Operation op;
  op.call = site.call;
  send_to_every_peer(site, op, send, bytes);
  std::vector<const std::byte*> inputs = receive_from_every_peer(site, op, bytes_of(send), bytes);
  op.finish = [inputs = std::move(inputs), self = site.rank, dst = bytes_of(recv), count, reducer] {
    reduce_in_rank_order(inputs, self, dst, count, reducer);
  };
  return op;
}

Operation broadcast_operation(const CallSite& site, const void* send, void* recv, size_t bytes,
                              int root) {
  Operation op;
  op.call = site.call;
  if (site.rank != root) {
    op.recvs.push_back({root, bytes_of(recv), bytes});
    return op;
  }
  send_to_every_peer(site, op, send, bytes);
  op.finish = [src = bytes_of(send), dst = bytes_of(recv), bytes] {
    if (dst != src) std::memmove(dst, src, bytes);
  };
  return op;
}

Operation reduce_operation(const CallSite& site, const void* send, void* recv, int64_t count,
                           const Reducer& reducer, int root) {
  const size_t bytes = static_cast<size_t>(count) * dtype_size(reducer.dtype);
  Operation op;
  op.call = site.call;
  if (site.rank != root) {
    op.sends.push_back({root, bytes_of(send), bytes});
    return op;
  }
  std::vector<const std::byte*> inputs = receive_from_every_peer(site, op, bytes_of(send), bytes);
  op.finish = [inputs = std::move(inputs), self = site.rank, dst = bytes_of(recv), count, reducer] {
    reduce_in_rank_order(inputs, self, dst, count, reducer);
  };
  return op;
}

Operation all_gather_operation(const CallSite& site, const void* send, void* recv, size_t bytes) {
  Operation op;
  op.call = site.call;
  send_to_every_peer(site, op, send, bytes);
  std::byte* all = bytes_of(recv);
  for (int peer = 0; peer < site.nranks; ++peer) {
    if (peer != site.rank) op.recvs.push_back({peer, all + peer * bytes, bytes});
  }
  op.finish = [src = bytes_of(send), dst = all + site.rank * bytes, bytes] {
    if (dst != src) std::memmove(dst, src, bytes);
  };
  return op;
}

Operation reduce_scatter_operation(const CallSite& site, const void* send, void* recv,
                                   int64_t count, const Reducer& reducer) {
  const size_t bytes = static_cast<size_t>(count) * dtype_size(reducer.dtype);
  const std::byte* blocks = bytes_of(send);
  Operation op;
  op.call = site.call;
  for (int peer = 0; peer < site.nranks; ++peer) {
    if (peer != site.rank) op.sends.push_back({peer, bytes_of(blocks + peer * bytes), bytes});
  }
  std::vector<const std::byte*> inputs =
      receive_from_every_peer(site, op, blocks + site.rank * bytes, bytes);
  op.finish = [inputs = std::move(inputs), self = site.rank, dst = bytes_of(recv), count, reducer] {
    reduce_in_rank_order(inputs, self, dst, count, reducer);
  };
  return op;
}

}  // namespace engine::sim_nccl
