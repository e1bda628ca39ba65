// The arithmetic of warp collectives, separate from the scheduling: given the requests of
// every participating lane, compute each participant's result.
#pragma once

#include <array>
#include <string>

#include "sim/simt/runtime.h"

namespace simt::detail {

// Fills `result` of every lane in `participants` (bit i = lane i; lanes[i] non-null for
// those). Returns an error message, without computing anything, when the lanes disagree on the
// operation or value size.
std::string complete_warp_collective(const std::array<WarpRequest*, 32>& lanes,
                                     unsigned participants);

// The lane a shuffle reads for `lane`, following PTX shfl.sync (segments of `width` lanes;
// out-of-range sources read the caller's own value).
int shuffle_source_lane(WarpOp op, int lane, int lane_arg, int width);

bool is_shuffle(WarpOp op);
const char* warp_op_name(WarpOp op);

}  // namespace simt::detail
