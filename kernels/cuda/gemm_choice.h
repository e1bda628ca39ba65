// The run-time choices of the tensor-core GEMM engine (gemm_tiles.cuh), so that one GPU run can
// time every variant of a layer without a rebuild: how results are stored (the epilogue) and
// the block tile. `automatic` takes the environment's choice, else the default:
//   ENGINE_GEMM_EPILOGUE=direct|staged   staged (16-byte runs through shared memory) when unset
//   ENGINE_GEMM_TILE=auto|128x128|128x64|64x128|64x64   auto when unset: 64 wide where N <= 64
//     and 64 tall where M <= 64 (a 128 tile would be half empty: layer1's 64 output channels,
//     64-filter gradients), else 128
// Only the bf16 engine's 16-byte path has the smaller tiles; every other path is 128x128.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace engine::cuda {

enum class GemmEpilogue { automatic, direct, staged };
enum class GemmTile { automatic, t128x128, t128x64, t64x128, t64x64 };

struct GemmChoice {
  GemmEpilogue epilogue = GemmEpilogue::automatic;
  GemmTile tile = GemmTile::automatic;
};

inline GemmEpilogue environment_gemm_epilogue() {
  static const GemmEpilogue chosen = [] {
    const char* text = std::getenv("ENGINE_GEMM_EPILOGUE");
    const std::string value = text == nullptr ? "staged" : text;
    if (value == "staged") return GemmEpilogue::staged;
    if (value == "direct") return GemmEpilogue::direct;
    throw std::invalid_argument("ENGINE_GEMM_EPILOGUE='" + value + "': use direct or staged");
  }();
  return chosen;
}

inline GemmTile environment_gemm_tile() {
  static const GemmTile chosen = [] {
    const char* text = std::getenv("ENGINE_GEMM_TILE");
    const std::string value = text == nullptr ? "auto" : text;
    if (value == "auto") return GemmTile::automatic;
    if (value == "128x128") return GemmTile::t128x128;
    if (value == "128x64") return GemmTile::t128x64;
    if (value == "64x128") return GemmTile::t64x128;
    if (value == "64x64") return GemmTile::t64x64;
    throw std::invalid_argument("ENGINE_GEMM_TILE='" + value +
                                "': use auto, 128x128, 128x64, 64x128 or 64x64");
  }();
  return chosen;
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
