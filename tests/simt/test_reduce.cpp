// Block-level behaviour: reductions over every block shape, threads that return early,
// __syncthreads_count/and/or.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "sim/simt/simt.h"
#include "tests/simt/block_sum_kernel.h"

namespace {

struct Shape {
  dim3 grid;
  dim3 block;
};

std::string describe(const Shape& s) {
  return "grid (" + std::to_string(s.grid.x) + "," + std::to_string(s.grid.y) + "," +
         std::to_string(s.grid.z) + ") block (" + std::to_string(s.block.x) + "," +
         std::to_string(s.block.y) + "," + std::to_string(s.block.z) + ")";
}

TEST(SimtReduce, BlockSumIsExactForEveryBlockShape) {
  const Shape shapes[] = {
      {dim3(1), dim3(1)},        {dim3(1), dim3(31)},         {dim3(1), dim3(32)},
      {dim3(1), dim3(33)},       {dim3(2), dim3(100)},        {dim3(3), dim3(256)},
      {dim3(1), dim3(1024)},     {dim3(2, 2), dim3(8, 4)},    {dim3(2, 1, 2), dim3(7, 5, 3)},
      {dim3(1), dim3(16, 8, 8)}, {dim3(3, 2), dim3(3, 3, 3)},
  };
  for (const Shape& s : shapes) {
    const unsigned threads = s.block.x * s.block.y * s.block.z;
    const unsigned blocks = s.grid.x * s.grid.y * s.grid.z;
    const unsigned n = threads * blocks - (threads > 1 ? 1 : 0);  // exercises the bounds check
    std::vector<int> in(n);
    for (unsigned i = 0; i < n; ++i)
      in[i] = static_cast<int>(i * 7919 % 1000) - 500;
    unsigned long long total = 0;
    simt::launch(block_sum_kernel<false>, s.grid, s.block, 0, nullptr, in.data(), n, &total);
    EXPECT_EQ(static_cast<long long>(total), std::accumulate(in.begin(), in.end(), 0LL))
        << describe(s);
  }
}

// Threads past `keep` return before the barrier; the others must not wait for them.
__global__ void early_return_kernel(unsigned keep, int* out) {
  __shared__ int values[256];
  const unsigned t = threadIdx.x;
  if (t >= keep) return;
  values[t] = static_cast<int>(t) + 1;
  __syncthreads();
  if (t % 2 == 1) return;  // more threads leave between barriers
  __syncthreads();
  if (t == 0) {
    int sum = 0;
    for (unsigned i = 0; i < keep; ++i)
      sum += values[i];
    *out = sum;
  }
}

TEST(SimtReduce, ThreadsThatReturnEarlyLeaveTheBarriers) {
  for (unsigned keep : {1u, 5u, 32u, 77u, 256u}) {
    int out = 0;
    simt::launch(early_return_kernel, dim3(2), dim3(256), 0, nullptr, keep, &out);
    EXPECT_EQ(out, static_cast<int>(keep * (keep + 1) / 2)) << "keep " << keep;
  }
}

// Lanes 16-31 return while lanes 0-15 wait in a full-mask shuffle: the shuffle completes
// with the lanes that remain.
__global__ void half_warp_returns_kernel(int* out) {
  const int lane = static_cast<int>(threadIdx.x);
  if (lane >= 16) return;
  out[lane] = __shfl_xor_sync(0xffffffffu, lane, 1);
}

TEST(SimtReduce, LanesThatReturnLeaveWarpCollectives) {
  std::vector<int> out(16, -7);
  simt::launch(half_warp_returns_kernel, dim3(1), dim3(32), 0, nullptr, out.data());
  for (int lane = 0; lane < 16; ++lane)
    EXPECT_EQ(out[lane], lane ^ 1);
}

__global__ void barrier_reductions_kernel(int* out) {
  const int t = static_cast<int>(threadIdx.x);
  const int count = __syncthreads_count(t % 3 == 0);
  const int all = __syncthreads_and(t >= 0);
  const int none = __syncthreads_and(t != 5);
  const int any = __syncthreads_or(t == 70);
  const int nothing = __syncthreads_or(0);
  if (t == 0) {
    out[0] = count;
    out[1] = all;
    out[2] = none;
    out[3] = any;
    out[4] = nothing;
  }
}

TEST(SimtReduce, SyncthreadsCountAndOr) {
  int out[5] = {};
  simt::launch(barrier_reductions_kernel, dim3(1), dim3(100), 0, nullptr, out);
  EXPECT_EQ(out[0], 34);
  EXPECT_EQ(out[1], 1);
  EXPECT_EQ(out[2], 0);
  EXPECT_EQ(out[3], 1);
  EXPECT_EQ(out[4], 0);
}

// Built-in variables: every thread sees its own indices and the launch's dimensions.
__global__ void indices_kernel(unsigned* out) {
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  const unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned* o = out + 4 * (block * threads + tid);
  __syncthreads();  // indices survive switches
  o[0] = threadIdx.x + 100 * threadIdx.y + 10000 * threadIdx.z;
  o[1] = blockIdx.x + 100 * blockIdx.y + 10000 * blockIdx.z;
  o[2] = blockDim.x + 100 * blockDim.y + 10000 * blockDim.z + 1000000 * gridDim.z;
  o[3] = static_cast<unsigned>(warpSize);
}

TEST(SimtReduce, BuiltInVariables) {
  const dim3 grid(2, 3, 2), block(4, 3, 2);
  std::vector<unsigned> out(4 * 12 * 24);
  simt::launch(indices_kernel, grid, block, 0, nullptr, out.data());
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 3; ++by)
      for (unsigned bx = 0; bx < 2; ++bx)
        for (unsigned z = 0; z < 2; ++z)
          for (unsigned y = 0; y < 3; ++y)
            for (unsigned x = 0; x < 4; ++x) {
              const unsigned b = bx + 2 * (by + 3 * bz), t = x + 4 * (y + 3 * z);
              const unsigned* o = &out[4 * (b * 24 + t)];
              EXPECT_EQ(o[0], x + 100 * y + 10000 * z);
              EXPECT_EQ(o[1], bx + 100 * by + 10000 * bz);
              EXPECT_EQ(o[2], 4u + 300 + 20000 + 2000000);
              EXPECT_EQ(o[3], 32u);
            }
}

}  // namespace
