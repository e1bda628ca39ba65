#include "collectives/collective_request.h"

#include <algorithm>
#include <string>

#include "kernels/error.h"

namespace engine {

std::string_view collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_reduce:
      return "all_reduce";
    case CollectiveKind::broadcast:
      return "broadcast";
    case CollectiveKind::reduce:
      return "reduce";
    case CollectiveKind::all_gather:
      return "all_gather";
    case CollectiveKind::reduce_scatter:
      return "reduce_scatter";
    case CollectiveKind::gather:
      return "gather";
    case CollectiveKind::scatter:
      return "scatter";
    case CollectiveKind::barrier:
      return "barrier";
  }
  return "collective";
}

bool CollectiveRequest::in_place() const {
  return kind == CollectiveKind::all_reduce || kind == CollectiveKind::broadcast ||
         kind == CollectiveKind::reduce;
}

const Tensor& CollectiveRequest::reference() const {
  return input.defined() ? input : output;
}

size_t CollectiveRequest::bytes() const {
  return std::max(input.defined() ? input.nbytes() : 0, output.defined() ? output.nbytes() : 0);
}

namespace {

class Checker {
 public:
  Checker(const CollectiveRequest& request, int rank, int world)
      : request_(request), rank_(rank), world_(world) {}

  void require(bool condition, const std::string& what) const {
    if (!condition) {
      fail(std::string(collective_name(request_.kind)) + " on rank " + std::to_string(rank_) +
           " (world " + std::to_string(world_) + "): " + what);
    }
  }
  void defined(const Tensor& tensor, const char* name) const {
    require(tensor.defined(), std::string(name) + " is undefined");
  }
  void root() const {
    require(request_.root >= 0 && request_.root < world_,
            "root " + std::to_string(request_.root) + " is not a rank");
  }
  void same_kind(const Tensor& a, const Tensor& b) const {
    require(a.dtype() == b.dtype() && a.device() == b.device(),
            "input " + a.describe() + " and output " + b.describe() + " differ in dtype or device");
  }
  // big.numel() == world * small.numel(), for the gathered/scattered side.
  void world_times(const Tensor& big, const char* big_name, const Tensor& small,
                   const char* small_name) const {
    require(big.numel() == world_ * small.numel(),
            std::string(big_name) + " " + big.describe() + " must hold world size " +
                std::to_string(world_) + " x " + small_name + "'s " +
                std::to_string(small.numel()) + " elements");
  }

 private:
  const CollectiveRequest& request_;
  int rank_;
  int world_;
};

}  // namespace

void validate_request(const CollectiveRequest& request, int rank, int world) {
  const Checker check(request, rank, world);
  const Tensor& in = request.input;
  const Tensor& out = request.output;
  // The transports, the reductions and the MPI/NCCL datatypes know f32, bf16 and f64 only.
  if (request.kind != CollectiveKind::barrier && request.reference().defined()) {
    const DType dtype = request.reference().dtype();
    check.require(is_float_dtype(dtype) || dtype == DType::f64,
                  request.reference().describe() + " is not a float tensor (f32, bf16 or f64)");
  }
  switch (request.kind) {
    case CollectiveKind::barrier:
      return;
    case CollectiveKind::all_reduce:
    case CollectiveKind::broadcast:
    case CollectiveKind::reduce:
      check.defined(in, "tensor");
      if (request.kind != CollectiveKind::all_reduce) check.root();
      return;
    case CollectiveKind::all_gather:
      check.defined(in, "input");
      check.defined(out, "output");
      check.same_kind(in, out);
      check.world_times(out, "output", in, "input");
      return;
    case CollectiveKind::reduce_scatter:
      check.defined(in, "input");
      check.defined(out, "output");
      check.same_kind(in, out);
      check.world_times(in, "input", out, "output");
      return;
    case CollectiveKind::gather:
      check.root();
      check.defined(in, "input");
      if (rank == request.root) {
        check.defined(out, "output (on the root)");
        check.same_kind(in, out);
        check.world_times(out, "output", in, "input");
      }
      return;
    case CollectiveKind::scatter:
      check.root();
      check.defined(out, "output");
      if (rank == request.root) {
        check.defined(in, "input (on the root)");
        check.same_kind(in, out);
        check.world_times(in, "input", out, "output");
      }
      return;
  }
}

}  // namespace engine
