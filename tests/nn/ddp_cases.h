// Shared pieces of the data-parallel suite (nn_data_parallel_test, under mpirun): the
// communicator every case uses (--comm=NAME, default ring-shm), deterministic per-rank
// batches built from (seed, rank, index) so each rank can compute every rank's batch, and a
// small resnet18 step.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "collectives/comm_factory.h"
#include "nn/cross_entropy.h"
#include "nn/data_parallel.h"
#include "nn/resnet.h"
#include "tests/collectives/collective_cases.h"
#include "tests/collectives/mpi_main.h"

namespace engine::testing {

// Which communicator the suite runs on (main sets it from --comm=NAME).
inline std::string& ddp_comm_name() {
  static std::string name = "ring-shm";
  return name;
}

// One communicator for the whole run, created by the first case that needs it (creating one
// is collective, and every rank runs the cases in the same order).
inline std::unique_ptr<Communicator>& ddp_comm_slot() {
  static std::unique_ptr<Communicator> comm;
  return comm;
}
inline Communicator& ddp_comm() {
  std::unique_ptr<Communicator>& comm = ddp_comm_slot();
  if (!comm) {
    CommOptions options;
    options.timeout = std::chrono::seconds(60);  // a hang ends the job, never the CI
    comm = make_communicator(ddp_comm_name(), *session(), options);
  }
  return *comm;
}

constexpr int64_t kImageSize = 32;
constexpr int64_t kClasses = 10;

// Rank `rank`'s batch `micro` of `batch` images: pixels in [-2, 2), labels in [0, 10).
struct Batch {
  Tensor images, labels;
};
inline Batch make_batch(uint64_t seed, int rank, int micro, int64_t batch) {
  const int64_t pixels = batch * kImageSize * kImageSize * 3;
  std::vector<float> values(static_cast<size_t>(pixels));
  for (int64_t i = 0; i < pixels; ++i)
    values[i] = static_cast<float>(rank_hash(seed + micro * 7919, rank, i) >> 40) / (1 << 22) - 2.f;
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i)
    labels[i] = static_cast<int32_t>(rank_hash(seed + micro * 7919 + 1, rank, i) % kClasses);
  return {Tensor::from_floats({batch, kImageSize, kImageSize, 3}, values),
          Tensor::from_ints({batch}, labels)};
}

// resnet18 (10 classes) on 32x32 CPU batches, with its loss.
struct SmallModel {
  Stream stream;
  nn::ResNet model;
  nn::CrossEntropyLoss loss;
  SmallModel(uint64_t seed, int64_t batch)
      : model("resnet18", {.num_classes = kClasses, .seed = seed}) {
    model.allocate(Device::cpu(), stream);
    model.setup({batch, kImageSize, kImageSize, 3}, DType::f32, stream);
    loss.setup(batch, kClasses, DType::f32, Device::cpu());
  }
  nn::ParameterSet& params() { return model.params(); }
  // forward + backward of one batch; ddp (may be null) wraps the backward.
  void step(const Batch& batch, nn::DataParallel* ddp = nullptr, bool sync = true) {
    nn::Pass pass{stream, true, false, {}};
    loss.forward(model.forward(batch.images, pass), batch.labels, stream);
    if (ddp) ddp->begin_backward(pass, sync);
    model.backward(loss.backward(stream), pass);
    if (ddp) ddp->end_backward(stream);
  }
  std::vector<float> grads() { return params().flat_grads().to_floats(stream); }
  std::vector<float> values() { return params().flat_values().to_floats(stream); }
};

// FNV-1a over the bytes of a float vector.
inline uint64_t hash_bytes(const std::vector<float>& values) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (size_t i = 0; i < values.size() * sizeof(float); ++i) {
    h ^= bytes[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

// Every rank's `value`, in rank order, through the communicator (16-bit pieces: exact floats).
inline std::vector<uint64_t> all_gather_u64(Communicator& comm, uint64_t value) {
  std::vector<float> pieces;
  for (int p = 0; p < 4; ++p)
    pieces.push_back(static_cast<float>((value >> (16 * p)) & 0xFFFF));
  Tensor input = Tensor::from_floats({4}, pieces);
  Tensor output = Tensor::empty({comm.size() * 4}, DType::f32);
  Stream stream;
  comm.all_gather(input, output, stream);
  const std::vector<float> gathered = output.to_floats(stream);
  std::vector<uint64_t> values(static_cast<size_t>(comm.size()), 0);
  for (int r = 0; r < comm.size(); ++r)
    for (int p = 0; p < 4; ++p)
      values[r] |= static_cast<uint64_t>(gathered[r * 4 + p]) << (16 * p);
  return values;
}

}  // namespace engine::testing
