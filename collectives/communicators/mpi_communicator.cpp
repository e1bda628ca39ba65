#include "collectives/communicators/mpi_communicator.h"

#include <climits>

#include "collectives/core/check_mpi.h"
#include "collectives/cpu/reduce.h"
#include "kernels/error.h"

namespace engine {
namespace {

// MPI has no bf16: these user ops reduce 16-bit words as bf16 in fp32 (commutative).
template <ReduceOp kOp>
void bf16_reduce(void* in, void* inout, int* length, MPI_Datatype*) {
  cpu::reduce({DType::bf16, kOp, 1}, inout, in, inout, *length);
}

MPI_Op create_bf16_op(MPI_User_function* function) {
  MPI_Op op = MPI_OP_NULL;
  CHECK_MPI(MPI_Op_create(function, 1, &op));
  return op;
}

int checked_count(int64_t count, const char* what) {
  if (count > INT_MAX) {
    fail(std::string("MpiCommunicator: ") + what + " of " + std::to_string(count) +
         " elements is over MPI's int count limit");
  }
  return static_cast<int>(count);
}

}  // namespace

MPI_Datatype mpi_datatype(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::bf16:
      return MPI_UINT16_T;
    case DType::i32:
    case DType::u8:
      break;
  }
  fail("MpiCommunicator: no MPI datatype for " + std::string(dtype_name(dtype)));
}

MPI_Op mpi_reduce_op(DType dtype, ReduceOp op) {
  if (dtype == DType::f32 || dtype == DType::f64) {
    return op == ReduceOp::max ? MPI_MAX : op == ReduceOp::min ? MPI_MIN : MPI_SUM;
  }
  // Created once per process, after MPI_Init (the first bf16 reduction), never freed: MPI
  // frees them at MPI_Finalize.
  static const MPI_Op sum = create_bf16_op(bf16_reduce<ReduceOp::sum>);
  static const MPI_Op max = create_bf16_op(bf16_reduce<ReduceOp::max>);
  static const MPI_Op min = create_bf16_op(bf16_reduce<ReduceOp::min>);
  return op == ReduceOp::max ? max : op == ReduceOp::min ? min : sum;
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, CommInfo info, CommOptions options)
    : Communicator(std::move(info), std::move(options)), executor_(name()) {
  CHECK_MPI(MPI_Comm_dup(comm, &comm_));
  CHECK_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

Work MpiCommunicator::execute(const CollectiveRequest& request, const OpContext& context, Stream&,
                              bool blocking) {
  return executor_.execute(blocking, [this, request, context] {
    const Watchdog::Scope watched(watchdog_, context);
    run(request);
  });
}

void MpiCommunicator::run(const CollectiveRequest& request) {
  const Tensor& reference = request.reference();
  const DType dtype = reference.dtype();
  const MPI_Datatype type = mpi_datatype(dtype);
  const MPI_Op op = mpi_reduce_op(dtype, request.op);
  void* output = request.output_data();
  const void* input = request.input_data();
  const int count = checked_count(reference.numel(), "a tensor");
  const bool is_root = rank() == request.root;
  switch (request.kind) {
    case CollectiveKind::all_reduce:
      CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, output, count, type, op, comm_));
      if (request.op == ReduceOp::avg) cpu::divide(dtype, output, count, size());
      break;
    case CollectiveKind::broadcast:
      CHECK_MPI(MPI_Bcast(output, count, type, request.root, comm_));
      break;
    case CollectiveKind::reduce:
      CHECK_MPI(MPI_Reduce(is_root ? MPI_IN_PLACE : input, is_root ? output : nullptr, count, type,
                           op, request.root, comm_));
      if (is_root && request.op == ReduceOp::avg) cpu::divide(dtype, output, count, size());
      break;
    case CollectiveKind::all_gather: {
      const int block = checked_count(request.input.numel(), "a block");
      CHECK_MPI(MPI_Allgather(input, block, type, output, block, type, comm_));
      break;
    }
    case CollectiveKind::reduce_scatter: {
      const int block = checked_count(request.output.numel(), "a block");
      CHECK_MPI(MPI_Reduce_scatter_block(input, output, block, type, op, comm_));
      if (request.op == ReduceOp::avg) cpu::divide(dtype, output, block, size());
      break;
    }
    case CollectiveKind::gather: {
      const int block = checked_count(request.input.numel(), "a block");
      CHECK_MPI(MPI_Gather(input, block, type, output, block, type, request.root, comm_));
      break;
    }
    case CollectiveKind::scatter: {
      const int block = checked_count(request.output.numel(), "a block");
      CHECK_MPI(MPI_Scatter(input, block, type, output, block, type, request.root, comm_));
      break;
    }
    case CollectiveKind::barrier:
      CHECK_MPI(MPI_Barrier(comm_));
      break;
  }
}

}  // namespace engine
