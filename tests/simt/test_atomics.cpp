// Atomics from many threads of several blocks.
#include <gtest/gtest.h>

#include <vector>

#include "sim/simt/simt.h"

namespace {

struct Counters {
  int add_int = 0;
  unsigned add_unsigned = 0;
  unsigned long long add_ull = 0;
  float add_float = 0.0f;
  double add_double = 0.0;
  int sub_int = 0;
  int max_int = -1000;
  int min_int = 1000;
  float max_float = -1.0f;
  float min_float = 1.0e9f;
  unsigned long long max_ull = 0;
  unsigned inc_wrap = 0;
  unsigned dec_wrap = 0;
  unsigned and_bits = ~0u;
  unsigned or_bits = 0;
  unsigned xor_bits = 0;
  int cas_sum = 0;
  int exchanged = -1;
  __half add_half = __float2half(0.0f);
  __nv_bfloat16 add_bf16 = __float2bfloat16(0.0f);
};

__global__ void atomics_kernel(Counters* c) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;  // 0..511
  atomicAdd(&c->add_int, 1);
  atomicAdd(&c->add_unsigned, 2u);
  atomicAdd(&c->add_ull, 3ull);
  atomicAdd(&c->add_float, 0.5f);
  atomicAdd(&c->add_double, 0.25);
  atomicSub(&c->sub_int, 2);
  atomicMax(&c->max_int, static_cast<int>(t % 97));
  atomicMin(&c->min_int, static_cast<int>(t % 89) - 3);
  atomicMax(&c->max_float, static_cast<float>(t) * 0.5f);
  atomicMin(&c->min_float, static_cast<float>(t) + 2.0f);
  atomicMax(&c->max_ull, static_cast<unsigned long long>(t) << 33);
  atomicInc(&c->inc_wrap, 99u);  // counts 0..99 then wraps
  atomicDec(&c->dec_wrap, 9u);   // from 0: wraps to 9, then counts down
  atomicAnd(&c->and_bits, ~(1u << (t % 32)) | (t % 64 < 32 ? 0u : ~0u));
  atomicOr(&c->or_bits, 1u << (t % 20));
  atomicXor(&c->xor_bits, 1u << (t % 32));
  int old = 0;  // a CAS loop, as kernels write them (a plain first read would race)
  for (;;) {
    const int seen = atomicCAS(&c->cas_sum, old, old + 2);
    if (seen == old) break;
    old = seen;
  }
  __syncthreads();
  if (threadIdx.x == 0) atomicExch(&c->exchanged, static_cast<int>(blockIdx.x));
  if (t < 64) {
    atomicAdd(&c->add_half, __float2half(1.0f));
    atomicAdd(&c->add_bf16, __float2bfloat16(1.0f));
  }
  __threadfence();
}

TEST(SimtAtomics, AllOperationsFromManyThreads) {
  Counters c;
  simt::launch(atomics_kernel, dim3(4), dim3(128), 0, nullptr, &c);
  EXPECT_EQ(c.add_int, 512);
  EXPECT_EQ(c.add_unsigned, 1024u);
  EXPECT_EQ(c.add_ull, 1536u);
  EXPECT_EQ(c.add_float, 256.0f);
  EXPECT_EQ(c.add_double, 128.0);
  EXPECT_EQ(c.sub_int, -1024);
  EXPECT_EQ(c.max_int, 96);
  EXPECT_EQ(c.min_int, -3);
  EXPECT_EQ(c.max_float, 255.5f);
  EXPECT_EQ(c.min_float, 2.0f);
  EXPECT_EQ(c.max_ull, 511ull << 33);
  EXPECT_EQ(c.inc_wrap, 512u % 100u);
  EXPECT_EQ(c.dec_wrap, 9u - (512u - 1u) % 10u);
  EXPECT_EQ(c.and_bits, 0u);
  EXPECT_EQ(c.or_bits, (1u << 20) - 1);
  EXPECT_EQ(c.xor_bits, 0u);  // every bit flipped 16 times
  EXPECT_EQ(c.cas_sum, 1024);
  EXPECT_EQ(c.exchanged, 3);
  EXPECT_EQ(__half2float(c.add_half), 64.0f);
  EXPECT_EQ(__bfloat162float(c.add_bf16), 64.0f);
}

}  // namespace
