#include "train/trainer_comms.h"

#include <chrono>
#include <string>

#include "collectives/core/timeout.h"
#include "kernels/error.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine::train {

namespace {

// The gradient communicator and why, for the banner: --comm, or for auto our ring over NCCL
// on GPUs, else the host communicator that suits how the ranks are spread over hosts.
CommChoice gradient_comm(const TrainOptions& options, const MpiSession& session, Device device) {
  if (options.comm != "auto") return {options.comm, "--comm"};
  if (!device.is_cpu()) return {"ring-nccl", "auto: CUDA tensors"};
  CommChoice choice = choose_host_communicator(session.world());
  choice.why = "auto: " + choice.why;
  return choice;
}

}  // namespace

TrainerComms::TrainerComms(const TrainOptions& options, const MpiSession& session, Device device,
                           int compute_threads)
    : rank_(session.rank()), world_(session.size()) {
  CommOptions comm_options;
  comm_options.timeout =
      std::chrono::milliseconds(static_cast<int64_t>(options.comm_timeout_s * 1e3));
  // The gradients' all-reduce waits on a worker thread while backward computes on the CPU.
  const int spins =
      spin_iterations_for(session.world().local_size, device.is_cpu() ? compute_threads : 0);
  comm_options.shm.spin_iterations = spins;
  comm_options.mpi_transport.spin_iterations = spins;
  grad_choice_ = gradient_comm(options, session, device);
  const std::string& grad_name = grad_choice_.name;
  if (const std::string why = communicator_unavailable_reason(grad_name, session); !why.empty()) {
    fail("--comm " + grad_name + ": " + why);
  }
  grad_ = make_communicator(grad_name, session, comm_options, device.str());
  if (grad_->supports(Device::cpu())) {
    host_ = grad_.get();
  } else {
    host_owned_ =
        make_communicator(choose_host_communicator(session.world()).name, session, comm_options);
    host_ = host_owned_.get();
  }
}

void TrainerComms::sum_over_ranks(std::vector<float>& values) {
  if (world_ == 1) return;
  Tensor tensor = Tensor::from_floats({static_cast<int64_t>(values.size())}, values);
  Stream host;
  host_->all_reduce(tensor, ReduceOp::sum, host);
  values = tensor.to_floats(host);
}

}  // namespace engine::train
