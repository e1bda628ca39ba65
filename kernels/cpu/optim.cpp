#include "kernels/cpu/optim.h"

#include "kernels/cpu/parallel.h"

namespace engine::cpu {

void sgd_step(float* params, const float* grads, float* momentum_buffer, int64_t n, float lr,
              float momentum, float dampening, float weight_decay, bool nesterov, float grad_scale,
              bool first_step) {
  parallel_for(n, [&](int64_t i) {
    float g = grads[i] * grad_scale;
    if (weight_decay != 0.f) g += weight_decay * params[i];
    if (momentum != 0.f) {
      const float buf = first_step ? g : momentum * momentum_buffer[i] + (1.f - dampening) * g;
      momentum_buffer[i] = buf;
      g = nesterov ? g + momentum * buf : buf;
    }
    params[i] -= lr * g;
  });
}

}  // namespace engine::cpu
