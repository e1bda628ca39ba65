#include "nn/layer.h"

#include <atomic>

namespace engine::nn {

uint64_t next_pass_id() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

std::string child_name(std::string_view parent, std::string_view child) {
  if (parent.empty()) return std::string(child);
  return std::string(parent) + "." + std::string(child);
}

void Layer::for_each_child(const std::function<void(const Layer&)>& fn) const {
  // Visiting changes nothing; one overload serves both constnesses.
  const_cast<Layer*>(this)->for_each_child([&](Layer& child) { fn(child); });
}

void walk(Layer& root, const std::function<void(Layer&)>& fn) {
  fn(root);
  root.for_each_child([&](Layer& child) { walk(child, fn); });
}

void walk(const Layer& root, const std::function<void(const Layer&)>& fn) {
  fn(root);
  root.for_each_child([&](const Layer& child) { walk(child, fn); });
}

}  // namespace engine::nn
