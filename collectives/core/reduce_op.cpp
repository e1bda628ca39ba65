#include "collectives/core/reduce_op.h"

#include <string>

#include "kernels/error.h"

namespace engine {

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::avg:
      return "avg";
    case ReduceOp::max:
      return "max";
    case ReduceOp::min:
      return "min";
  }
  return "?";
}

ReduceOp parse_reduce_op(std::string_view text) {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
    if (text == reduce_op_name(op)) return op;
  }
  fail("unknown reduce op '" + std::string(text) + "' (use sum, avg, max or min)");
}

}  // namespace engine
