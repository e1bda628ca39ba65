// Parameter initialization as torchvision's ResNet does it, from a seed. The values come
// from a counter-based generator on the host (splitmix64 + Box-Muller), so a seed gives the
// same weights on every machine, device and world size; then they are copied to the device.
// (They are not PyTorch's values for the same seed: goldens load PyTorch's weights instead.)
#pragma once

#include <cstdint>

#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine::nn {

// A stream of numbers determined by (seed, stream_id): stream_id keeps parameters
// independent of each other and of their order.
class InitRandom {
 public:
  InitRandom(uint64_t seed, uint64_t stream_id);
  double uniform();  // [0, 1)
  double normal();   // standard normal
 private:
  uint64_t state_;
};

// torch.nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu") for a KRSC filter:
// N(0, 2 / (K * R * S)).
void kaiming_normal_fan_out(Tensor& filter, uint64_t seed, uint64_t stream_id, Stream& stream);
// U(-bound, bound): nn.Linear's default, bound = 1 / sqrt(in_features), for weight and bias.
void uniform_fill(Tensor& t, double bound, uint64_t seed, uint64_t stream_id, Stream& stream);

}  // namespace engine::nn
