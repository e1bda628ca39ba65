// Shared memory: one object per block, NaN-filled before every block, static and dynamic.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "sim/simt/simt.h"

namespace {

// Each block reads before writing (must see the NaN fill, not the previous block's values),
// then every thread writes one element and reads a neighbour's after the barrier.
__global__ void static_shared_kernel(float* first_float, int* first_int, int* neighbour) {
  __shared__ float floats[64];
  __shared__ int ints[64];
  const unsigned t = threadIdx.x, b = blockIdx.x;
  first_float[b * 64 + t] = floats[t];
  first_int[b * 64 + t] = ints[t];
  __syncthreads();
  ints[t] = static_cast<int>(b * 1000 + t);
  floats[t] = 1.0f;
  __syncthreads();
  neighbour[b * 64 + t] = ints[(t + 1) % 64];
}

TEST(SimtSharedMemory, StaticSharedIsPerBlockAndNaNFilled) {
  for (int launch = 0; launch < 2; ++launch) {  // the second launch is refilled as well
    std::vector<float> first_float(3 * 64);
    std::vector<int> first_int(3 * 64), neighbour(3 * 64);
    simt::launch(static_shared_kernel, dim3(3), dim3(64), 0, nullptr, first_float.data(),
                 first_int.data(), neighbour.data());
    for (unsigned i = 0; i < 3 * 64; ++i) {
      EXPECT_TRUE(std::isnan(first_float[i])) << i;
      EXPECT_EQ(first_int[i], -1) << i;
      EXPECT_EQ(neighbour[i], static_cast<int>(i / 64 * 1000 + (i % 64 + 1) % 64)) << i;
    }
  }
}

// Templates and device helpers: g++ 12 ignores section attributes on template statics, the
// marker scheme must still find these.
template <int N>
__global__ void template_shared_kernel(float* out) {
  __shared__ float values[N];
  out[threadIdx.x] = values[threadIdx.x];
  values[threadIdx.x] = 0.0f;
}

__device__ float* helper_scratch() {
  __shared__ float scratch[32];
  return scratch;
}

template <typename T>
struct HelperWithShared {
  __device__ static T* buffer() {
    __shared__ T storage[32];
    return storage;
  }
};

__global__ void helper_shared_kernel(float* out, double* out_double) {
  float* scratch = helper_scratch();
  double* storage = HelperWithShared<double>::buffer();
  out[threadIdx.x] = scratch[threadIdx.x];
  out_double[threadIdx.x] = storage[threadIdx.x];
  __syncthreads();
  scratch[threadIdx.x] = 2.0f;
  storage[threadIdx.x] = 3.0;
}

TEST(SimtSharedMemory, TemplateAndHelperSharedVariablesAreFilled) {
  for (int launch = 0; launch < 2; ++launch) {
    std::vector<float> a(16), b(32);
    std::vector<double> c(32);
    simt::launch(template_shared_kernel<16>, dim3(2), dim3(16), 0, nullptr, a.data());
    simt::launch(helper_shared_kernel, dim3(2), dim3(32), 0, nullptr, b.data(), c.data());
    for (float v : a)
      EXPECT_TRUE(std::isnan(v));
    for (float v : b)
      EXPECT_TRUE(std::isnan(v));
    for (double v : c)
      EXPECT_TRUE(std::isnan(v));
  }
}

__global__ void dynamic_shared_kernel(unsigned n, float* before, std::uintptr_t* address) {
  DYNAMIC_SHARED_MEMORY(float, values);
  const unsigned t = threadIdx.x;
  address[blockIdx.x * blockDim.x + t] = reinterpret_cast<std::uintptr_t>(values);
  for (unsigned i = t; i < n; i += blockDim.x)
    before[blockIdx.x * n + i] = values[i];
  __syncthreads();
  for (unsigned i = t; i < n; i += blockDim.x)
    values[i] = static_cast<float>(i);
  __syncthreads();
  // Every thread sees what the others wrote: one buffer per block.
  for (unsigned i = 0; i < n; ++i) {
    if (values[i] != static_cast<float>(i)) __trap();
  }
}

TEST(SimtSharedMemory, DynamicSharedIsOneNaNFilledBufferPerBlock) {
  const unsigned n = 1000;
  std::vector<float> before(2 * n);
  std::vector<std::uintptr_t> address(2 * 64);
  simt::launch(dynamic_shared_kernel, dim3(2), dim3(64), n * sizeof(float), nullptr, n,
               before.data(), address.data());
  for (float v : before)
    EXPECT_TRUE(std::isnan(v));
  for (std::uintptr_t a : address) {
    EXPECT_EQ(a, address[0]);
    EXPECT_EQ(a % 16, 0u);
  }
}

}  // namespace
