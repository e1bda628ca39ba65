// The arithmetic of the tensor-core instructions (warp_matrix.h has their fragment layouts),
// computed for the whole warp by the last lane to arrive: one warp barrier per instruction, and
// the products run here, in the library, instead of 32 times over in each lane's (sanitized)
// kernel code.
#pragma once

#include <array>

#include "sim/simt/runtime.h"

namespace simt::detail {

// Every lane's result of ldmatrix.x4 (.trans when `transpose`) from every lane's row.
void complete_ldmatrix(const std::array<WarpRequest*, 32>& lanes, bool transpose);

// Every lane's four elements of D = A B + C for kMmaBf16 or kMmaTf32, from every lane's
// MmaFragments.
void complete_mma(const std::array<WarpRequest*, 32>& lanes, WarpOp op);

}  // namespace simt::detail
