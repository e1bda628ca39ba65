// The run-time choices of the tensor-core GEMM engine (gemm_tiles.cuh), so that one GPU run can
// time every variant of a layer without a rebuild: how results are stored (the epilogue) and
// the block tile. `automatic` takes the environment's choice, else the default:
//   ENGINE_GEMM_EPILOGUE=direct|staged   staged (16-byte runs through shared memory) when unset
//   ENGINE_GEMM_TILE=auto|128x128|128x64|64x128|64x64   auto when unset: 64 wide where N <= 64
//     and 64 tall where M <= 64 (a 128 tile would be half empty: layer1's 64 output channels,
//     64-filter gradients), else 128
//   ENGINE_GATED_SUMS=staged|reread   staged when unset: how the input gradient's epilogue
//     with BatchNorm's backward sums (gemm_batchnorm_grad.cuh) gets each element's g' and x,
//     from the word its store left in the staged tile, or (reread, as until 2026-12-07) by
//     loading x, the stored output and the addend again and gating again
// Only the bf16 engine's 16-byte path has the smaller tiles; every other path is 128x128.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

namespace engine::cuda {

enum class GemmEpilogue { automatic, direct, staged };
enum class GemmTile { automatic, t128x128, t128x64, t64x128, t64x64 };
enum class GatedSums { automatic, staged, reread };

struct GemmChoice {
  GemmEpilogue epilogue = GemmEpilogue::automatic;
  GemmTile tile = GemmTile::automatic;
  GatedSums gated_sums = GatedSums::automatic;  // not a tuner's choice: plan tables omit it
};

// The value of environment variable `name` among `choices` (`unset` when it is not set); any
// other value throws, listing the choices.
template <typename Choice, size_t N>
Choice environment_choice(const char* name, const std::pair<const char*, Choice> (&choices)[N],
                          const char* unset) {
  const char* text = std::getenv(name);
  const std::string value = text == nullptr ? unset : text;
  std::string accepted;
  for (size_t i = 0; i < N; ++i) {
    if (value == choices[i].first) return choices[i].second;
    accepted += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + choices[i].first;
  }
  throw std::invalid_argument(std::string(name) + "='" + value + "': use " + accepted);
}

inline GemmEpilogue environment_gemm_epilogue() {
  static const GemmEpilogue chosen = environment_choice<GemmEpilogue>(
      "ENGINE_GEMM_EPILOGUE", {{"direct", GemmEpilogue::direct}, {"staged", GemmEpilogue::staged}},
      "staged");
  return chosen;
}

inline GemmTile environment_gemm_tile() {
  static const GemmTile chosen = environment_choice<GemmTile>("ENGINE_GEMM_TILE",
                                                              {{"auto", GemmTile::automatic},
                                                               {"128x128", GemmTile::t128x128},
                                                               {"128x64", GemmTile::t128x64},
                                                               {"64x128", GemmTile::t64x128},
                                                               {"64x64", GemmTile::t64x64}},
                                                              "auto");
  return chosen;
}

inline GatedSums environment_gated_sums() {
  static const GatedSums chosen = environment_choice<GatedSums>(
      "ENGINE_GATED_SUMS", {{"staged", GatedSums::staged}, {"reread", GatedSums::reread}},
      "staged");
  return chosen;
}

inline GatedSums resolve_gated_sums(GatedSums asked) {
  return asked == GatedSums::automatic ? environment_gated_sums() : asked;
}

inline GemmEpilogue resolve_epilogue(GemmEpilogue asked) {
  return asked == GemmEpilogue::automatic ? environment_gemm_epilogue() : asked;
}

// The tile for an m x n output: the caller's, else the environment's, else by M and N.
inline GemmTile resolve_tile(GemmTile asked, int64_t m, int64_t n) {
  if (asked == GemmTile::automatic) asked = environment_gemm_tile();
  if (asked != GemmTile::automatic) return asked;
  if (m <= 64) return n <= 64 ? GemmTile::t64x64 : GemmTile::t64x128;
  return n <= 64 ? GemmTile::t128x64 : GemmTile::t128x128;
}

}  // namespace engine::cuda
