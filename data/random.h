// Randomness for augmentations. Each sample draws from its own stream keyed by (seed, epoch,
// dataset index), so its crop and flip do not depend on which worker decodes it, on how many
// workers there are, or on where a resumed epoch starts.
#pragma once

#include <cstdint>

namespace engine::data {

// Where transforms take their random numbers. SampleRandom in production; tests replay draws
// recorded from torchvision through the same interface.
class RandomSource {
 public:
  virtual ~RandomSource() = default;
  // A float32 in [low, high), as torch.empty(1).uniform_(low, high) produces.
  virtual float uniform(double low, double high) = 0;
  // An integer in [low, high), as torch.randint(low, high, (1,)) produces.
  virtual int64_t randint(int64_t low, int64_t high) = 0;
  // A standard normal float32 (RandomErasing's value='random'). Not torch's algorithm: only
  // its distribution matters, and tests replay torch's values. By default Box-Muller on two
  // uniform() draws.
  virtual float normal();
};

// SplitMix64 (Steele, Lea, Flood 2014) started from a hash of the key: cheap to create per
// sample, and distinct keys give independent-looking streams.
class SampleRandom final : public RandomSource {
 public:
  SampleRandom(uint64_t seed, uint64_t epoch, uint64_t index);

  float uniform(double low, double high) override;
  int64_t randint(int64_t low, int64_t high) override;
  uint64_t next_u64();

 private:
  uint64_t state_;
};

}  // namespace engine::data
