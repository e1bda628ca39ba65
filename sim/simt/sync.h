// Block and warp synchronization intrinsics.
//
// __syncthreads waits for every thread of the block that has not returned; warp collectives
// wait for every lane named in `mask` that has not returned (lanes beyond the block size never
// existed and count as returned). A shuffle whose source lane does not take part (not in the
// mask, or returned) yields 0xFF bytes, CUDA's "undefined" made visible. Width and
// out-of-range rules follow PTX shfl.sync. Every barrier orders memory for ThreadSanitizer;
// nothing else does.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "sim/simt/runtime.h"

namespace simt::detail {

// Tensor-core emulations (wmma.h, warp_matrix.h) exchange operands through every lane: a warp
// missing lanes is an error in the kernel, named by its instruction.
inline void require_full_warp(const char* instruction) {
  if (warp_alive_mask() != 0xffffffffu) {
    throw std::logic_error(std::string(instruction) + " needs all 32 lanes of the warp");
  }
}

template <typename T>
T warp_exchange(WarpOp op, unsigned mask, const T& value, int lane_arg, int width) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 16,
                "warp shuffles take trivially copyable values of at most 16 bytes");
  WarpRequest request;
  request.op = op;
  request.mask = mask;
  request.lane_arg = lane_arg;
  request.width = width;
  request.size = sizeof(T);
  std::memcpy(request.value, &value, sizeof(T));
  sync_warp(request);
  std::array<std::byte, sizeof(T)> bytes;
  std::memcpy(bytes.data(), request.result, sizeof(T));
  return std::bit_cast<T>(bytes);
}

inline unsigned warp_vote(WarpOp op, unsigned mask, int predicate) {
  return warp_exchange<unsigned>(op, mask, predicate != 0 ? 1u : 0u, 0, 32);
}

}  // namespace simt::detail

inline void __syncthreads() {
  simt::detail::sync_block(simt::detail::BlockReduce::kNone, 0);
}
inline int __syncthreads_count(int predicate) {
  return simt::detail::sync_block(simt::detail::BlockReduce::kCount, predicate);
}
inline int __syncthreads_and(int predicate) {
  return simt::detail::sync_block(simt::detail::BlockReduce::kAnd, predicate);
}
inline int __syncthreads_or(int predicate) {
  return simt::detail::sync_block(simt::detail::BlockReduce::kOr, predicate);
}

inline void __syncwarp(unsigned mask = 0xffffffffu) {
  simt::detail::WarpRequest request;
  request.mask = mask;
  simt::detail::sync_warp(request);
}

template <typename T>
T __shfl_sync(unsigned mask, T var, int srcLane, int width = 32) {
  return simt::detail::warp_exchange(simt::detail::WarpOp::kShflIdx, mask, var, srcLane, width);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  return simt::detail::warp_exchange(simt::detail::WarpOp::kShflUp, mask, var,
                                     static_cast<int>(delta), width);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  return simt::detail::warp_exchange(simt::detail::WarpOp::kShflDown, mask, var,
                                     static_cast<int>(delta), width);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = 32) {
  return simt::detail::warp_exchange(simt::detail::WarpOp::kShflXor, mask, var, laneMask, width);
}

inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return simt::detail::warp_vote(simt::detail::WarpOp::kBallot, mask, predicate);
}
inline int __any_sync(unsigned mask, int predicate) {
  return static_cast<int>(simt::detail::warp_vote(simt::detail::WarpOp::kAny, mask, predicate));
}
inline int __all_sync(unsigned mask, int predicate) {
  return static_cast<int>(simt::detail::warp_vote(simt::detail::WarpOp::kAll, mask, predicate));
}
// The lanes that have not returned: the emulator has no divergence to report.
inline unsigned __activemask() {
  return simt::detail::warp_alive_mask();
}

// sm_80 warp reductions.
inline unsigned __reduce_add_sync(unsigned mask, unsigned value) {
  return simt::detail::warp_exchange(simt::detail::WarpOp::kReduceAdd, mask, value, 0, 32);
}
inline int __reduce_add_sync(unsigned mask, int value) {
  return simt::detail::warp_exchange(simt::detail::WarpOp::kReduceAdd, mask, value, 0, 32);
}
inline unsigned __reduce_min_sync(unsigned mask, unsigned value) {
  return simt::detail::warp_exchange(simt::detail::WarpOp::kReduceMinUnsigned, mask, value, 0, 32);
}
inline int __reduce_min_sync(unsigned mask, int value) {
  return simt::detail::warp_exchange(simt::detail::WarpOp::kReduceMinSigned, mask, value, 0, 32);
}
inline unsigned __reduce_max_sync(unsigned mask, unsigned value) {
  return simt::detail::warp_exchange(simt::detail::WarpOp::kReduceMaxUnsigned, mask, value, 0, 32);
}
inline int __reduce_max_sync(unsigned mask, int value) {
  return simt::detail::warp_exchange(simt::detail::WarpOp::kReduceMaxSigned, mask, value, 0, 32);
}
inline unsigned __reduce_and_sync(unsigned mask, unsigned value) {
  return simt::detail::warp_exchange(simt::detail::WarpOp::kReduceAnd, mask, value, 0, 32);
}
inline unsigned __reduce_or_sync(unsigned mask, unsigned value) {
  return simt::detail::warp_exchange(simt::detail::WarpOp::kReduceOr, mask, value, 0, 32);
}
inline unsigned __reduce_xor_sync(unsigned mask, unsigned value) {
  return simt::detail::warp_exchange(simt::detail::WarpOp::kReduceXor, mask, value, 0, 32);
}

// sm_70 match: lanes holding the same value (compared bit for bit).
template <typename T>
unsigned __match_any_sync(unsigned mask, T value) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "__match_any_sync takes 32- or 64-bit values");
  return simt::detail::warp_exchange<std::array<unsigned, 4>>(
      simt::detail::WarpOp::kMatchAny, mask,
      std::bit_cast<std::array<unsigned, 4>>(std::array<T, 16 / sizeof(T)>{value}), 0, 32)[0];
}
template <typename T>
unsigned __match_all_sync(unsigned mask, T value, int* pred) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "__match_all_sync takes 32- or 64-bit values");
  const auto result = simt::detail::warp_exchange<std::array<unsigned, 4>>(
      simt::detail::WarpOp::kMatchAll, mask,
      std::bit_cast<std::array<unsigned, 4>>(std::array<T, 16 / sizeof(T)>{value}), 0, 32);
  *pred = static_cast<int>(result[1]);
  return result[0];
}
