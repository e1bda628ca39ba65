// Randomness for mixing a batch (data/batch_mixing.h): the three numpy draws timm's Mixup
// makes, behind an interface so that tests replay the draws timm made.
#pragma once

#include <cstdint>

#include "data/random.h"

namespace engine::data {

class MixRandom {
 public:
  virtual ~MixRandom() = default;
  // np.random.rand(): a double in [0, 1).
  virtual double uniform() = 0;
  // np.random.beta(alpha, alpha): a double in [0, 1], symmetric about 1/2.
  virtual double beta(double alpha) = 0;
  // np.random.randint(low, high): an integer in [low, high).
  virtual int64_t randint(int64_t low, int64_t high) = 0;
};

// data/random.h's SplitMix64 keyed by (seed, rank, epoch, batch): one stream per rank's batch, so a
// batch is mixed the same way whichever worker builds it and when a resumed epoch reaches it, and
// each rank draws its own parameters, as timm's per-process numpy generators do under DDP.
class BatchMixRandom final : public MixRandom {
 public:
  BatchMixRandom(uint64_t seed, uint64_t rank, uint64_t epoch, uint64_t batch);

  double uniform() override;
  // X / (X + Y) for X, Y ~ Gamma(alpha), Marsaglia and Tsang's method (2000), in log space so
  // that the small alphas of mixup recipes (0.1-0.4) cannot underflow both to zero.
  double beta(double alpha) override;
  int64_t randint(int64_t low, int64_t high) override { return bits_.randint(low, high); }

 private:
  double normal();
  double log_gamma_variate(double alpha);

  SampleRandom bits_;
};

}  // namespace engine::data
