// A training run's communication (trainer.h): the gradients' communicator (the DDP buckets,
// SyncBN, validation's BatchNorm buffers) and the host one that sums the steps' figures and
// the ranks' stop requests, CPU tensors whatever the device: the gradients' own when it takes
// CPU tensors, else one of its own.
#pragma once

#include <memory>
#include <vector>

#include "collectives/bootstrap.h"
#include "collectives/comm_factory.h"
#include "collectives/communicator.h"
#include "kernels/device.h"
#include "train/train_options.h"

namespace engine::train {

class TrainerComms {
 public:
  // Creates both communicators (collective); fails naming --comm when the choice cannot run.
  // `compute_threads` is the rank's OpenMP threads: on the CPU, where they fill the host's
  // cores, the collectives' waits yield at once instead of spinning.
  TrainerComms(const TrainOptions& options, const MpiSession& session, Device device,
               int compute_threads);

  int rank() const { return rank_; }
  int world() const { return world_; }
  bool rank0() const { return rank_ == 0; }

  Communicator& grad() { return *grad_; }
  const Communicator& grad() const { return *grad_; }
  // Which gradient communicator and why (--comm, or what auto saw), for the banner.
  const CommChoice& grad_choice() const { return grad_choice_; }

  // Sums values over ranks in place (CPU, f32) through the host communicator.
  void sum_over_ranks(std::vector<float>& values);
  void barrier() { host_->barrier(); }

 private:
  int rank_, world_;
  CommChoice grad_choice_;
  std::unique_ptr<Communicator> grad_, host_owned_;
  Communicator* host_ = nullptr;
};

}  // namespace engine::train
