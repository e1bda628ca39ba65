// Reads tests/nn/golden/optimizers.golden (tools/make_optim_goldens.py): torch.optim.AdamW
// steps and clip_grad_norm_ calls, each tensor flat and keyed by parameter name.
#pragma once

#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace engine::nn::testing {

inline constexpr const char* kOptimGoldenMagic = "ENGINE-NN-OPTIM-GOLDEN 1";
inline constexpr const char* kOptimGoldenRegenerate =
    "/usr/bin/python3 tools/make_optim_goldens.py tests/nn/golden";

struct OptimGoldenCase {
  std::string kind, name;       // "adamw" or "clip"
  std::vector<double> numbers;  // the header's numbers after the name
  // kind of tensor ("init", "grad0", ..., "final", "exp_avg", "clipped") -> parameter -> values
  std::map<std::string, std::map<std::string, std::vector<double>>> tensors;
};

inline std::vector<OptimGoldenCase> read_optim_golden() {
  const std::string path = std::string(ENGINE_NN_GOLDEN_DIR) + "/optimizers.golden";
  std::ifstream file(path);
  if (!file) {
    throw std::runtime_error("cannot read " + path + "; regenerate: " + kOptimGoldenRegenerate);
  }
  std::string line;
  std::getline(file, line);
  if (line != kOptimGoldenMagic) {
    throw std::runtime_error(path + " starts with '" + line + "', expected '" + kOptimGoldenMagic +
                             "'; regenerate: " + kOptimGoldenRegenerate);
  }
  std::vector<OptimGoldenCase> cases;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string first, second;
    fields >> first >> second;
    std::vector<double> numbers;
    for (std::string number; fields >> number;)
      numbers.push_back(std::stod(number));  // strtod: the double Python's repr names
    if (first == "adamw" || first == "clip") {
      cases.push_back({first, second, numbers, {}});
    } else if (cases.empty()) {
      throw std::runtime_error(path + ": a tensor before any case: " + line.substr(0, 40));
    } else {
      cases.back().tensors[first][second] = numbers;
    }
  }
  return cases;
}

}  // namespace engine::nn::testing
