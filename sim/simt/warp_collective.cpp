#include "sim/simt/warp_collective.h"

#include <bit>
#include <cstring>
#include <limits>

#include "sim/simt/format.h"
#include "sim/simt/warp_matrix_collective.h"

namespace simt::detail {
namespace {

template <typename T>
T value_of(const WarpRequest& r) {
  T v;
  std::memcpy(&v, r.value, sizeof v);
  return v;
}

template <typename T>
void set_result(WarpRequest& r, T v) {
  std::memcpy(r.result, &v, sizeof v);
}

template <typename Visit>
void for_each_lane(unsigned lanes, Visit visit) {
  for (; lanes != 0; lanes &= lanes - 1)
    visit(std::countr_zero(lanes));
}

// A reduction over the participants' 32-bit values, given to every participant.
template <typename T, typename Combine>
void reduce(const std::array<WarpRequest*, 32>& lanes, unsigned participants, T identity,
            Combine combine) {
  T total = identity;
  for_each_lane(participants, [&](int l) { total = combine(total, value_of<T>(*lanes[l])); });
  for_each_lane(participants, [&](int l) { set_result(*lanes[l], total); });
}

void shuffle(const std::array<WarpRequest*, 32>& lanes, unsigned participants) {
  for_each_lane(participants, [&](int l) {
    WarpRequest& r = *lanes[l];
    const int source = shuffle_source_lane(r.op, l, r.lane_arg, r.width);
    if (source >= 0 && source < 32 && ((participants >> source) & 1u) != 0) {
      std::memcpy(r.result, lanes[source]->value, r.size);
    } else {
      std::memset(r.result, 0xFF, r.size);  // CUDA: undefined
    }
  });
}

void vote(const std::array<WarpRequest*, 32>& lanes, unsigned participants, WarpOp op) {
  unsigned ballot = 0;
  for_each_lane(participants, [&](int l) {
    if (value_of<unsigned>(*lanes[l]) != 0) ballot |= 1u << l;
  });
  const unsigned result = op == WarpOp::kBallot ? ballot
                          : op == WarpOp::kAny  ? (ballot != 0 ? 1u : 0u)
                                                : (ballot == participants ? 1u : 0u);
  for_each_lane(participants, [&](int l) { set_result(*lanes[l], result); });
}

void match(const std::array<WarpRequest*, 32>& lanes, unsigned participants, WarpOp op) {
  const auto same = [&](int a, int b) {
    return std::memcmp(lanes[a]->value, lanes[b]->value, lanes[a]->size) == 0;
  };
  const int first = std::countr_zero(participants);
  bool all_same = true;
  for_each_lane(participants, [&](int l) { all_same = all_same && same(first, l); });
  for_each_lane(participants, [&](int l) {
    unsigned matching = 0;
    if (op == WarpOp::kMatchAny) {
      for_each_lane(participants, [&](int m) {
        if (same(l, m)) matching |= 1u << m;
      });
      set_result(*lanes[l], std::array<unsigned, 2>{matching, 0u});
    } else {
      set_result(*lanes[l],
                 std::array<unsigned, 2>{all_same ? participants : 0u, all_same ? 1u : 0u});
    }
  });
}

}  // namespace

bool is_shuffle(WarpOp op) {
  return op == WarpOp::kShflIdx || op == WarpOp::kShflUp || op == WarpOp::kShflDown ||
         op == WarpOp::kShflXor;
}

int shuffle_source_lane(WarpOp op, int lane, int lane_arg, int width) {
  const int first = lane & ~(width - 1);                     // PTX minLane
  const int last = first + width - 1;                        // PTX maxLane
  const long long offset = static_cast<unsigned>(lane_arg);  // up/down take unsigned deltas
  switch (op) {
    case WarpOp::kShflIdx:
      return first | (lane_arg & (width - 1));
    case WarpOp::kShflUp:
      return lane - offset >= first ? static_cast<int>(lane - offset) : lane;
    case WarpOp::kShflDown:
      return lane + offset <= last ? static_cast<int>(lane + offset) : lane;
    case WarpOp::kShflXor: {
      const int source = lane ^ (lane_arg & 31);  // PTX uses the low five bits
      return source <= last ? source : lane;      // later segments are out of reach
    }
    default:
      return lane;
  }
}

const char* warp_op_name(WarpOp op) {
  switch (op) {
    case WarpOp::kSync:
      return "__syncwarp";
    case WarpOp::kShflIdx:
      return "__shfl_sync";
    case WarpOp::kShflUp:
      return "__shfl_up_sync";
    case WarpOp::kShflDown:
      return "__shfl_down_sync";
    case WarpOp::kShflXor:
      return "__shfl_xor_sync";
    case WarpOp::kBallot:
      return "__ballot_sync";
    case WarpOp::kAny:
      return "__any_sync";
    case WarpOp::kAll:
      return "__all_sync";
    case WarpOp::kReduceAdd:
      return "__reduce_add_sync";
    case WarpOp::kReduceMinSigned:
    case WarpOp::kReduceMinUnsigned:
      return "__reduce_min_sync";
    case WarpOp::kReduceMaxSigned:
    case WarpOp::kReduceMaxUnsigned:
      return "__reduce_max_sync";
    case WarpOp::kReduceAnd:
      return "__reduce_and_sync";
    case WarpOp::kReduceOr:
      return "__reduce_or_sync";
    case WarpOp::kReduceXor:
      return "__reduce_xor_sync";
    case WarpOp::kMatchAny:
      return "__match_any_sync";
    case WarpOp::kMatchAll:
      return "__match_all_sync";
    case WarpOp::kLdmatrix:
      return "ldmatrix";
    case WarpOp::kLdmatrixTrans:
      return "ldmatrix.trans";
    case WarpOp::kMmaBf16:
      return "mma.sync m16n8k16 bf16";
    case WarpOp::kMmaTf32:
      return "mma.sync m16n8k8 tf32";
    case WarpOp::kLdmatrixBatch:
      return "ldmatrix (batched)";
    case WarpOp::kLdmatrixTransBatch:
      return "ldmatrix.trans (batched)";
    case WarpOp::kMmaBf16Batch:
      return "mma.sync m16n8k16 bf16 (batched)";
    case WarpOp::kMmaTf32Batch:
      return "mma.sync m16n8k8 tf32 (batched)";
  }
  return "warp collective";
}

std::string complete_warp_collective(const std::array<WarpRequest*, 32>& lanes,
                                     unsigned participants) {
  const int first = std::countr_zero(participants);
  const WarpRequest& model = *lanes[first];
  std::string mismatch;
  for_each_lane(participants, [&](int l) {
    const WarpRequest& r = *lanes[l];
    if (mismatch.empty() && (r.op != model.op || r.size != model.size || r.shape != model.shape)) {
      mismatch = format(
          "lanes %d and %d of mask 0x%08x met in different warp collectives (%s "
          "of %u bytes, shape 0x%x; %s of %u bytes, shape 0x%x)",
          first, l, model.mask, warp_op_name(model.op), model.size, model.shape, warp_op_name(r.op),
          r.size, r.shape);
    }
  });
  if (!mismatch.empty()) return mismatch;
  const bool matrix = model.op >= WarpOp::kLdmatrix;  // the tensor-core ops come last
  if (matrix && participants != 0xffffffffu) {
    return format("%s needs all 32 lanes of the warp (mask 0x%08x, lanes 0x%08x)",
                  warp_op_name(model.op), model.mask, participants);
  }

  using I = int;
  using U = unsigned;
  switch (model.op) {
    case WarpOp::kSync:
      break;
    case WarpOp::kShflIdx:
    case WarpOp::kShflUp:
    case WarpOp::kShflDown:
    case WarpOp::kShflXor:
      shuffle(lanes, participants);
      break;
    case WarpOp::kBallot:
    case WarpOp::kAny:
    case WarpOp::kAll:
      vote(lanes, participants, model.op);
      break;
    case WarpOp::kReduceAdd:
      reduce<U>(lanes, participants, 0u, [](U a, U b) { return a + b; });
      break;
    case WarpOp::kReduceMinSigned:
      reduce<I>(lanes, participants, std::numeric_limits<I>::max(),
                [](I a, I b) { return b < a ? b : a; });
      break;
    case WarpOp::kReduceMaxSigned:
      reduce<I>(lanes, participants, std::numeric_limits<I>::min(),
                [](I a, I b) { return b > a ? b : a; });
      break;
    case WarpOp::kReduceMinUnsigned:
      reduce<U>(lanes, participants, ~0u, [](U a, U b) { return b < a ? b : a; });
      break;
    case WarpOp::kReduceMaxUnsigned:
      reduce<U>(lanes, participants, 0u, [](U a, U b) { return b > a ? b : a; });
      break;
    case WarpOp::kReduceAnd:
      reduce<U>(lanes, participants, ~0u, [](U a, U b) { return a & b; });
      break;
    case WarpOp::kReduceOr:
      reduce<U>(lanes, participants, 0u, [](U a, U b) { return a | b; });
      break;
    case WarpOp::kReduceXor:
      reduce<U>(lanes, participants, 0u, [](U a, U b) { return a ^ b; });
      break;
    case WarpOp::kMatchAny:
    case WarpOp::kMatchAll:
      match(lanes, participants, model.op);
      break;
    case WarpOp::kLdmatrix:
    case WarpOp::kLdmatrixTrans:
      complete_ldmatrix(lanes, model.op == WarpOp::kLdmatrixTrans);
      break;
    case WarpOp::kMmaBf16:
    case WarpOp::kMmaTf32:
      complete_mma(lanes, model.op);
      break;
    case WarpOp::kLdmatrixBatch:
    case WarpOp::kLdmatrixTransBatch:
      complete_ldmatrix_batch(lanes, model.op == WarpOp::kLdmatrixTransBatch, model.shape);
      break;
    case WarpOp::kMmaBf16Batch:
    case WarpOp::kMmaTf32Batch:
      complete_mma_batch(lanes, model.op, model.shape >> 8, model.shape & 0xffu);
      break;
  }
  return {};
}

}  // namespace simt::detail
