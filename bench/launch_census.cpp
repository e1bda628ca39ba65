#include "bench/launch_census.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace engine::bench {
namespace {

// The position of the '(' that opens the parameter list: the last one at template depth 0.
size_t parameter_list_start(const std::string& name) {
  int depth = 0;
  size_t start = std::string::npos;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    if (name[i] == '>') --depth;
    if (name[i] == '(' && depth == 0) start = i;
  }
  return start;
}

std::string line(uint64_t launches, const std::string& name) {
  char count[32];
  std::snprintf(count, sizeof count, "%8llu  ", static_cast<unsigned long long>(launches));
  return count + name + "\n";
}

std::string kernel_display_name(const std::string& demangled) {
  std::string name = demangled;
  const size_t parameters = parameter_list_start(name);
  if (parameters != std::string::npos && name.back() == ')') name.resize(parameters);
  if (name.rfind("void ", 0) == 0) name.erase(0, 5);  // kernels return void
  return name;
}

std::string kernel_family(const std::string& display_name) {
  return display_name.substr(0, display_name.find('<'));
}

}  // namespace

std::string launch_census_table(const std::vector<std::pair<std::string, uint64_t>>& named) {
  uint64_t total = 0;
  std::map<std::string, uint64_t> families;
  std::string kernels;
  for (const auto& [name, launches] : named) {
    const std::string shown = kernel_display_name(name);
    kernels += line(launches, shown);
    families[kernel_family(shown)] += launches;
    total += launches;
  }
  std::vector<std::pair<std::string, uint64_t>> by_family(families.begin(), families.end());
  std::stable_sort(by_family.begin(), by_family.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text = "launches by kernel family (" + std::to_string(total) + " in all):\n";
  for (const auto& [family, launches] : by_family)
    text += line(launches, family);
  text += "launches by kernel (" + std::to_string(named.size()) + " kernels):\n" + kernels;
  return text;
}

}  // namespace engine::bench
