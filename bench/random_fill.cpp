#include "bench/random_fill.h"

#include <algorithm>
#include <random>
#include <vector>

#include "kernels/ops.h"

namespace engine::bench {

void fill_random(Tensor& t, Stream& stream, uint32_t seed) {
  const int64_t n = t.numel();
  if (n == 0) return;
  const int64_t block = std::min<int64_t>(n, int64_t{1} << 20);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<float> values(static_cast<size_t>(block));
  for (float& v : values)
    v = uniform(rng);
  const Tensor source = Tensor::from_floats({block}, values, t.dtype()).to(t.device(), stream);
  const Tensor flat = t.view(0, {n});
  for (int64_t offset = 0; offset < n; offset += block) {
    const int64_t count = std::min(block, n - offset);
    Tensor destination = flat.view(offset, {count});
    copy(source.view(0, {count}), destination, stream);
  }
}

Tensor random_tensor(const Shape& shape, DType dtype, Stream& stream, uint32_t seed) {
  Tensor t = Tensor::empty(shape, dtype, stream.device());
  fill_random(t, stream, seed);
  return t;
}

}  // namespace engine::bench
