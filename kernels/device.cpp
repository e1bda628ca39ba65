#include "kernels/device.h"

#include <charconv>

#include "kernels/error.h"

namespace engine {

std::string Device::str() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index);
}

Device parse_device(std::string_view text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda") return Device::cuda(0);
  constexpr std::string_view kCudaPrefix = "cuda:";
  if (text.starts_with(kCudaPrefix)) {
    const std::string_view digits = text.substr(kCudaPrefix.size());
    int index = -1;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (error == std::errc() && end == digits.data() + digits.size() && !digits.empty() &&
        index >= 0) {
      return Device::cuda(index);
    }
  }
  fail("unknown device '" + std::string(text) + "' (use cpu, cuda or cuda:N)");
}

}  // namespace engine
