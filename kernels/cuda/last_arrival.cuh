// Reductions finished by the block that arrives last, in place of a second kernel launch: every
// block writes its partial result, takes a ticket from a counter, and the last one to arrive
// merges the partials, in an order fixed by the partials' indices, never by arrival, so the bits
// do not depend on scheduling. No float atomics. Used by batchnorm's reductions
// (batchnorm_reduce.cuh), the statistics in a GEMM's epilogue (gemm_column_stats.cuh) and the
// split-K sums (gemm_epilogue.cuh).
#pragma once

#include <cstdint>

namespace engine::cuda {

// Whether this block is the last of `members` blocks to arrive at `counter`, so that it merges
// what they wrote: every thread fences its writes, then one thread takes a ticket. atomicInc
// wraps the counter back to 0 at the last ticket, so every launch leaves it as it found it
// (zero: the workspace is zeroed once) and the kernel can be launched again or replayed from a
// graph. The last block fences again before it reads the other blocks' writes. `ticket` is the
// kernel's __shared__ word. Every thread of the block calls it (it has barriers).
__device__ __forceinline__ bool last_to_arrive(unsigned* counter, unsigned members,
                                               unsigned& ticket) {
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) ticket = atomicInc(counter, members - 1);
  __syncthreads();
  const bool last = ticket == members - 1;
  if (last) __threadfence();
  return last;
}

// Members a group of a two-level merge over `members` partials: about sqrt(members), so that
// both levels walk about as many; at least kMinMergeGroup, so that up to that many are merged
// in one level. `forced` (> 0) wins (tests).
constexpr int kMinMergeGroup = 8;
__host__ __device__ inline int64_t merge_group_size(int64_t members, int forced = 0) {
  if (forced > 0) return forced;
  int64_t group = kMinMergeGroup;
  while (group * group < members)
    ++group;
  return group;
}

// Groups of `group` members over `members`.
__host__ __device__ inline int64_t merge_groups(int64_t members, int64_t group) {
  return (members + group - 1) / group;
}

// A merge in two levels of last arrivals, so that no block walks all partials alone where
// they are many (one level over thousands leaves one block working while the GPU waits):
// `members` blocks in groups of `group`, this block member `member`. The last of group g to
// arrive calls first_level(g, first, last, groups) over members [first, last); with more than
// one group, the last group to finish then calls second_level(groups). counters: groups + 1,
// zero before and left zero (last_to_arrive). Every thread of the block calls it (barriers).
template <typename FirstLevel, typename SecondLevel>
__device__ void merge_by_last_arrivals(unsigned* counters, int member, int members, int group,
                                       unsigned& ticket, FirstLevel first_level,
                                       SecondLevel second_level) {
  const int groups = (members + group - 1) / group;
  const int g = member / group;
  const int first = g * group, last = first + group < members ? first + group : members;
  if (!last_to_arrive(counters + g, static_cast<unsigned>(last - first), ticket)) return;
  first_level(g, first, last, groups);
  if (groups == 1) return;
  if (!last_to_arrive(counters + groups, static_cast<unsigned>(groups), ticket)) return;
  second_level(groups);
}

}  // namespace engine::cuda
