// The arithmetic of the tensor-core instructions (warp_matrix.h has their fragment layouts),
// computed for the whole warp by the last lane to arrive: one warp barrier per instruction (or
// per batch of them), and the products run here, in the library, instead of 32 times over in
// each lane's (sanitized) kernel code.
#pragma once

#include <array>

#include "sim/simt/runtime.h"

namespace simt::detail {

// Every lane's result of ldmatrix.x4 (.trans when `transpose`) from every lane's row.
void complete_ldmatrix(const std::array<WarpRequest*, 32>& lanes, bool transpose);

// Every lane's four elements of D = A B + C for kMmaBf16 or kMmaTf32, from every lane's
// MmaFragments.
void complete_mma(const std::array<WarpRequest*, 32>& lanes, WarpOp op);

// The batched forms: `count` ldmatrix .x4 from every lane's LdmatrixBatch; tiles_a x tiles_b mma
// (kMmaBf16Batch or kMmaTf32Batch) from every lane's MmaBatch, in the order i, then j, each
// exactly as the single instruction.
void complete_ldmatrix_batch(const std::array<WarpRequest*, 32>& lanes, bool transpose,
                             unsigned count);
void complete_mma_batch(const std::array<WarpRequest*, 32>& lanes, WarpOp op, unsigned tiles_a,
                        unsigned tiles_b);

}  // namespace simt::detail
