// A launch census as text (bench_step --launch-census): each kernel with its launches, then the
// launches per kernel family (the name without its template arguments), the most first.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace engine::bench {

// `census` (kernels/kernel_launches.h: addresses and launches) as two tables, names from
// `name_of` (on a GPU and the sim device: cudaFuncGetName).
template <typename NameOf>
std::string launch_census_table(const std::vector<std::pair<const void*, uint64_t>>& census,
                                NameOf&& name_of);

// The same, with the names already resolved (demangled: each shown without its return type and
// parameter list, "void ns::k<int>(int*)" as "ns::k<int>", its family as "ns::k").
std::string launch_census_table(const std::vector<std::pair<std::string, uint64_t>>& named);

template <typename NameOf>
std::string launch_census_table(const std::vector<std::pair<const void*, uint64_t>>& census,
                                NameOf&& name_of) {
  std::vector<std::pair<std::string, uint64_t>> named;
  named.reserve(census.size());
  for (const auto& [kernel, launches] : census)
    named.emplace_back(name_of(kernel), launches);
  return launch_census_table(named);
}

}  // namespace engine::bench
