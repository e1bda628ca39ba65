// Warp collectives: shuffles with every width, votes, partial masks, reductions, match.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "sim/simt/simt.h"

namespace {

constexpr unsigned kFull = 0xffffffffu;

// Reference semantics from the CUDA programming guide, written independently of the emulator.
int expected_idx(int lane, int src, int width) {
  return src % width + lane / width * width;
}
int expected_up(int lane, int delta, int width) {
  return lane % width >= delta ? lane - delta : lane;
}
int expected_down(int lane, int delta, int width) {
  return lane % width + delta < width ? lane + delta : lane;
}
int expected_xor(int lane, int mask, int width) {
  const int source = lane ^ mask;
  return source / width > lane / width ? lane : source;  // later segments return var itself
}

constexpr int kShuffleKinds = 6;

template <typename T>
__global__ void shuffle_kernel(int width, T* out) {
  const int lane = static_cast<int>(threadIdx.x);
  // Through float: CUDA 11's __half and __nv_bfloat16 (Debian 12's nvidia-cuda-dev) have no
  // host constructor from int.
  const T v = static_cast<T>(static_cast<float>(lane * 10));
  out[0 * 32 + lane] = __shfl_sync(kFull, v, 3, width);
  out[1 * 32 + lane] = __shfl_sync(kFull, v, lane + 37, width);
  out[2 * 32 + lane] = __shfl_up_sync(kFull, v, 2, width);
  out[3 * 32 + lane] = __shfl_down_sync(kFull, v, 3, width);
  out[4 * 32 + lane] = __shfl_xor_sync(kFull, v, 1, width);
  out[5 * 32 + lane] = __shfl_xor_sync(kFull, v, 12, width);
}

template <typename T>
void check_shuffles(float (*to_float)(T)) {
  for (int width : {1, 2, 8, 16, 32}) {
    std::vector<T> out(kShuffleKinds * 32);
    simt::launch(shuffle_kernel<T>, dim3(1), dim3(32), 0, nullptr, width, out.data());
    for (int lane = 0; lane < 32; ++lane) {
      const int expected[kShuffleKinds] = {
          expected_idx(lane, 3, width), expected_idx(lane, lane + 37, width),
          expected_up(lane, 2, width),  expected_down(lane, 3, width),
          expected_xor(lane, 1, width), expected_xor(lane, 12, width)};
      for (int k = 0; k < kShuffleKinds; ++k) {
        EXPECT_EQ(to_float(out[k * 32 + lane]),
                  to_float(static_cast<T>(static_cast<float>(expected[k] * 10))))
            << "kind " << k << " width " << width << " lane " << lane;
      }
    }
  }
}

TEST(SimtWarp, ShufflesOfEveryTypeAndWidth) {
  check_shuffles<int>([](int v) { return static_cast<float>(v); });
  check_shuffles<unsigned>([](unsigned v) { return static_cast<float>(v); });
  check_shuffles<float>([](float v) { return v; });
  check_shuffles<double>([](double v) { return static_cast<float>(v); });
  check_shuffles<long long>([](long long v) { return static_cast<float>(v); });
  check_shuffles<__half>([](__half v) { return __half2float(v); });
  check_shuffles<__nv_bfloat16>([](__nv_bfloat16 v) { return __bfloat162float(v); });
}

__global__ void float4_shuffle_kernel(float4* out) {
  const float lane = static_cast<float>(threadIdx.x);
  const float4 v = make_float4(lane, lane + 0.25f, lane + 0.5f, lane + 0.75f);
  out[threadIdx.x] = __shfl_down_sync(kFull, v, 1);
}

TEST(SimtWarp, SixteenByteShuffle) {
  std::vector<float4> out(32);
  simt::launch(float4_shuffle_kernel, dim3(1), dim3(32), 0, nullptr, out.data());
  for (int lane = 0; lane < 32; ++lane) {
    const float source = static_cast<float>(lane == 31 ? 31 : lane + 1);
    EXPECT_EQ(out[lane].x, source);
    EXPECT_EQ(out[lane].w, source + 0.75f);
  }
}

__global__ void vote_kernel(unsigned* out) {
  const unsigned lane = threadIdx.x;
  const bool third = lane % 3 == 0;
  out[0 * 32 + lane] = __ballot_sync(kFull, third);
  out[1 * 32 + lane] = static_cast<unsigned>(__any_sync(kFull, lane == 7));
  out[2 * 32 + lane] = static_cast<unsigned>(__any_sync(kFull, 0));
  out[3 * 32 + lane] = static_cast<unsigned>(__all_sync(kFull, lane < 40));
  out[4 * 32 + lane] = static_cast<unsigned>(__all_sync(kFull, third));
  // Two disjoint groups at once: even lanes and odd lanes.
  const unsigned mask = lane % 2 == 1 ? 0xaaaaaaaau : 0x55555555u;
  out[5 * 32 + lane] = __ballot_sync(mask, lane < 16);
  out[6 * 32 + lane] = __shfl_sync(mask, lane * 10, static_cast<int>((lane + 2) % 32));
  out[7 * 32 + lane] = __activemask();
  __syncwarp(mask);
  out[8 * 32 + lane] = __reduce_add_sync(mask, lane);
  out[9 * 32 + lane] = __reduce_max_sync(kFull, lane * 7 % 32);
  out[10 * 32 + lane] = static_cast<unsigned>(__reduce_min_sync(kFull, static_cast<int>(lane) - 5));
  out[11 * 32 + lane] = __reduce_or_sync(kFull, 1u << lane);
  out[12 * 32 + lane] = __match_any_sync(kFull, lane / 8);
  int all_equal = -1;
  out[13 * 32 + lane] = __match_all_sync(kFull, 42.0f, &all_equal);
  out[14 * 32 + lane] = static_cast<unsigned>(all_equal);
}

TEST(SimtWarp, VotesReductionsAndPartialMasks) {
  std::vector<unsigned> out(15 * 32);
  simt::launch(vote_kernel, dim3(1), dim3(32), 0, nullptr, out.data());
  unsigned thirds = 0;
  for (unsigned l = 0; l < 32; l += 3)
    thirds |= 1u << l;
  for (unsigned lane = 0; lane < 32; ++lane) {
    const unsigned* o = &out[lane];
    const bool odd = lane % 2 == 1;
    EXPECT_EQ(o[0 * 32], thirds);
    EXPECT_EQ(o[1 * 32], 1u);
    EXPECT_EQ(o[2 * 32], 0u);
    EXPECT_EQ(o[3 * 32], 1u);
    EXPECT_EQ(o[4 * 32], 0u);
    EXPECT_EQ(o[5 * 32], odd ? 0x0000aaaau : 0x00005555u);
    EXPECT_EQ(o[6 * 32], (lane + 2) % 32 * 10);
    EXPECT_EQ(o[7 * 32], kFull);
    EXPECT_EQ(o[8 * 32], odd ? 256u : 240u);  // 1+3+...+31 and 0+2+...+30
    EXPECT_EQ(o[9 * 32], 31u);
    EXPECT_EQ(static_cast<int>(o[10 * 32]), -5);
    EXPECT_EQ(o[11 * 32], kFull);
    EXPECT_EQ(o[12 * 32], 0xffu << (lane / 8 * 8));
    EXPECT_EQ(o[13 * 32], kFull);
    EXPECT_EQ(o[14 * 32], 1u);
  }
}

// A block of 20 threads: the lanes 20-31 never existed and count as returned.
__global__ void partial_warp_kernel(unsigned* out) {
  const unsigned lane = threadIdx.x;
  out[lane] = __ballot_sync(kFull, 1);
  out[32 + lane] = __activemask();
  out[64 + lane] = __shfl_down_sync(kFull, lane, 4);
}

TEST(SimtWarp, PartialWarpHasOnlyItsLanes) {
  std::vector<unsigned> out(96, 7);
  simt::launch(partial_warp_kernel, dim3(1), dim3(20), 0, nullptr, out.data());
  for (unsigned lane = 0; lane < 20; ++lane) {
    EXPECT_EQ(out[lane], 0xfffffu);
    EXPECT_EQ(out[32 + lane], 0xfffffu);
    // Sources past lane 19 do not exist: CUDA leaves the value undefined, the emulator
    // returns 0xFF bytes so a kernel relying on it computes garbage visibly.
    EXPECT_EQ(out[64 + lane], lane + 4 < 20 ? lane + 4 : 0xffffffffu);
  }
}

// A source lane outside the mask is undefined too.
__global__ void source_outside_mask_kernel(int* out) {
  const int lane = static_cast<int>(threadIdx.x);
  if (lane < 16) out[lane] = __shfl_sync(0x0000ffffu, lane, 20);
}

TEST(SimtWarp, SourceOutsideTheMaskIsUndefined) {
  std::vector<int> out(16);
  simt::launch(source_outside_mask_kernel, dim3(1), dim3(32), 0, nullptr, out.data());
  for (int lane = 0; lane < 16; ++lane)
    EXPECT_EQ(out[lane], -1);
}

// Warp collectives in a multi-warp block: each warp synchronizes on its own.
__global__ void per_warp_kernel(int* out) {
  const int t = static_cast<int>(threadIdx.x);
  int v = t;
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(kFull, v, offset);
  out[t] = v;
}

TEST(SimtWarp, EachWarpReducesSeparately) {
  std::vector<int> out(128);
  simt::launch(per_warp_kernel, dim3(1), dim3(128), 0, nullptr, out.data());
  for (int t = 0; t < 128; ++t) {
    const int base = t / 32 * 32;
    EXPECT_EQ(out[t], 32 * base + 496) << t;
  }
}

}  // namespace
