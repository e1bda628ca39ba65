#include "nn/optimizer.h"

#include <charconv>

#include "kernels/error.h"

namespace engine::nn {

std::string float_metadata(float value) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof(text), value);
  return {text, result.ptr};
}

Tensor state_buffer(const OptimizerState& state, const std::string& name, int64_t numel,
                    std::string_view optimizer) {
  const auto found = state.buffers.find(name);
  if (found == state.buffers.end()) {
    fail("nn::" + std::string(optimizer) + "::load_state: the state has no " + name +
         " buffer (a checkpoint of another optimizer?)");
  }
  if (static_cast<int64_t>(found->second.size()) != numel) {
    fail("nn::" + std::string(optimizer) + "::load_state: the " + name + " buffer has " +
         std::to_string(found->second.size()) + " elements, expected " + std::to_string(numel) +
         " (the flat parameter layout)");
  }
  return Tensor::from_floats({numel}, found->second);
}

}  // namespace engine::nn
