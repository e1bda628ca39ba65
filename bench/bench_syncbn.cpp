// bench_syncbn: SyncBatchNorm (forward: one all-reduce of 2C+1 fp64 sums; backward: one of 2C
// floats) against local BatchNorm2d, forward + backward of each distinct BN layer shape of a
// ResNet and summed over the network (each shape weighed by how often it occurs), for several
// per-rank batches, under mpirun -np W. ratio = local time / SyncBN time (1: SyncBN is free).
// Both sides run on every rank at once, so they share the machine alike; times are medians
// of --reps steps, the slowest rank's. Also the bytes each design sends per BN layer and step,
// computed: ours 8(2C+1) forward + 4*2C backward at any W, against PyTorch 1.13's
// SyncBatchNorm, which all-gathers every rank's (mean[C], invstd[C], count) in fp32,
// W*(2C+1)*4 bytes forward (torch/nn/modules/_functions.py), at W = 8, 64 and 1024.
//
//   mpirun -np 2 bench_syncbn [-a resnet50] [--image-size 64] [-b 1,8,32]
//                             [--reps 5] [--threads 1] [--comm ring-shm] [--json]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "bench/bench_report.h"
#include "bench/mpi_bench_main.h"
#include "bench/timing.h"
#include "collectives/comm_factory.h"
#include "collectives/core/timeout.h"
#include "kernels/runtime.h"
#include "nn/batchnorm2d.h"
#include "nn/resnet.h"
#include "train/common_flags.h"

namespace engine::bench {
namespace {

struct Options {
  std::string arch = "resnet50";
  int64_t image_size = 64;
  std::vector<int64_t> batches = {1, 8, 32};
  int reps = 5;
  int threads = 1;
  std::string device = "cpu";
  std::string comm = "ring-shm";
  bool json = false;
};

cli::Command make_command(Options& o) {
  cli::Command command(
      "bench_syncbn", "[flags]        (under mpirun -np W, 1-4 on one host)",
      "Times SyncBatchNorm forward + backward (one fp64 all-reduce of 2C+1 sums, one f32 "
      "all-reduce of 2C) against local BatchNorm2d for every distinct BN layer shape of the "
      "ResNet and summed over the network, for each per-rank batch; ratio = local / SyncBN "
      "time. Then the bytes per layer and step, computed: ours 8(2C+1) + 4*2C at any world size "
      "against PyTorch's all-gather, W*(2C+1)*4, at W = 8, 64, 1024. Times are the median of "
      "--reps steps, the slowest rank's.");
  cli::add_arch(command, o.arch);
  // layer4's maps are image/32 wide: at 64 px a batch of 1 still has 4 values per channel,
  // which local BatchNorm2d needs (more than 1).
  cli::add_image_size(command, o.image_size, "input images' side", 64,
                      "local BatchNorm2d needs more than one value per channel at a batch of 1");
  cli::add_batch_sizes(command, o.batches, "per-rank batches, a case each");
  command.integer("--reps", o.reps, "timed steps per case");
  command.integer("--threads", o.threads, "OpenMP threads per rank");
  cli::add_device(command, o.device);
  command.text("--comm", o.comm, "NAME",
               "ring-shm|ring-mpi|mpi|nccl|ring-nccl (cuda needs nccl or ring-nccl)");
  cli::add_json(command, o.json);
  return command;
}

void check(const Options& o) {
  if (o.reps < 1 || o.threads < 1) throw cli::UsageError("--reps and --threads must be >= 1");
}

// A distinct BN input shape of the network, named after its first layer, and how often it
// occurs.
struct BnLayer {
  std::string name;
  int64_t h, w, c;
  int count = 1;
};

std::vector<BnLayer> resnet_bn_layers(const std::string& arch, int64_t image_size) {
  nn::ResNet model(arch, {});
  model.plan({1, image_size, image_size, 3});
  std::vector<BnLayer> layers;
  std::map<std::tuple<int64_t, int64_t, int64_t>, size_t> index;
  nn::walk(model.layers(), [&](const nn::Layer& layer) {
    const auto* bn = dynamic_cast<const nn::BatchNorm2d*>(&layer);
    if (bn == nullptr) return;
    const Shape& s = bn->input_shape();
    const auto key = std::make_tuple(s[1], s[2], s[3]);
    const auto found = index.find(key);
    if (found != index.end()) {
      ++layers[found->second].count;
      return;
    }
    index[key] = layers.size();
    layers.push_back({bn->name(), s[1], s[2], s[3], 1});
  });
  return layers;
}

// Bytes per BN layer and training step.
int64_t ours_forward_bytes(int64_t c) {
  return 8 * (2 * c + 1);
}
int64_t backward_bytes(int64_t c) {
  return 4 * 2 * c;
}
int64_t allgather_forward_bytes(int64_t c, int64_t world) {
  return world * (2 * c + 1) * 4;
}

// One BatchNorm2d with its own parameters, set up for [batch, h, w, c], with random x and dy.
class BnCase {
 public:
  BnCase(const BnLayer& layer, int64_t batch, Communicator* sync, uint32_t seed, Device device)
      : stream_(device), bn_(params_, layer.name, {layer.c, 1e-5f, 0.1f, false}) {
    params_.allocate(device, stream_);
    bn_.reset_state(stream_);
    bn_.set_sync_group(sync);
    const Shape shape = {batch, layer.h, layer.w, layer.c};
    bn_.setup(shape, {device, DType::f32, stream_, true, true});
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    std::vector<float> values(static_cast<size_t>(shape_numel(shape)));
    for (float& v : values)
      v = normal(rng);
    x_ = Tensor::from_floats(shape, values).to(device, stream_);
    for (float& v : values)
      v = normal(rng);
    dy_ = Tensor::from_floats(shape, values).to(device, stream_);
  }

  // Synchronized, so that a GPU step is timed to its end.
  void step() {
    nn::Pass pass{stream_, true, false, {}};
    bn_.forward(x_, pass);
    bn_.backward(dy_, pass);
    stream_.synchronize();
  }

 private:
  Stream stream_;
  nn::ParameterSet params_;
  nn::BatchNorm2d bn_;
  Tensor x_, dy_;
};

class Bench {
 public:
  Bench(const MpiSession& session, const Options& o)
      : o_(o), session_(session), device_(resolve_device(o.device, session.local_rank())) {
    comm_ = make_bench_communicator(session, o.comm, device_);
    layers_ = resnet_bn_layers(o.arch, o.image_size);
  }

  void run() {
    Communicator& comm = *comm_;
    const std::string world = " world " + std::to_string(comm.size());
    std::vector<Row> rows;
    int bn_count = 0;
    for (const BnLayer& layer : layers_)
      bn_count += layer.count;
    for (int64_t batch : o_.batches) {
      double sync_total = 0, local_total = 0;
      int64_t bytes_total = 0;
      for (const BnLayer& layer : layers_) {
        const uint32_t seed = static_cast<uint32_t>(comm.rank() * 1000 + layer.c);
        // Exactly reps + 1 steps on every rank: SyncBN steps are collectives.
        const TimingOptions timing{0.0, o_.reps};
        double local_us = 0, sync_us = 0;
        {
          BnCase local(layer, batch, nullptr, seed, device_);
          local_us = max_over_ranks(session_, median_time_us([&] { local.step(); }, [] {}, timing));
        }
        {
          BnCase synced(layer, batch, &comm, seed, device_);
          sync_us = max_over_ranks(session_, median_time_us([&] { synced.step(); }, [] {}, timing));
        }
        const int64_t bytes = ours_forward_bytes(layer.c) + backward_bytes(layer.c);
        Row row("syncbn", comm.name(),
                o_.arch + " " + layer.name + " " + std::to_string(layer.h) + "x" +
                    std::to_string(layer.w) + "x" + std::to_string(layer.c) + " b" +
                    std::to_string(batch) + world,
                sync_us);
        row.baseline = "local";
        row.baseline_time_us = local_us;
        row.bytes = bytes;
        row.note = "x" + std::to_string(layer.count);
        rows.push_back(row);
        sync_total += layer.count * sync_us;
        local_total += layer.count * local_us;
        bytes_total += layer.count * bytes;
      }
      Row total("syncbn", comm.name(),
                o_.arch + " network (" + std::to_string(bn_count) + " BN) b" +
                    std::to_string(batch) + world,
                sync_total);
      total.baseline = "local";
      total.baseline_time_us = local_total;
      total.bytes = bytes_total;
      total.images_per_s = static_cast<double>(batch) / (sync_total * 1e-6);  // per rank
      total.note = "BN layers only";
      rows.push_back(total);
    }
    if (comm.rank() != 0) return;
    if (o_.json) {
      for (const Row& row : rows)
        std::printf("%s\n", to_json(row).c_str());
      for (const Row& row : byte_rows())
        std::printf("%s\n", to_json(row).c_str());
      return;
    }
    std::printf(
        "bench_syncbn: %s %lldpx on %s, world %d (%s), %d OpenMP thread(s) per rank, median of "
        "%d steps, forward + backward\n",
        o_.arch.c_str(), static_cast<long long>(o_.image_size), device_.str().c_str(), comm.size(),
        comm.name().c_str(), o_.threads, o_.reps);
    print_table(rows);
    print_bytes();
  }

 private:
  // The computed bytes per layer and step, as rows (time 0): ours, and the all-gather's.
  std::vector<Row> byte_rows() const {
    std::vector<Row> rows;
    for (const BnLayer& layer : layers_) {
      const std::string c = "C=" + std::to_string(layer.c);
      Row ours("syncbn_bytes", "ours", c + " forward+backward any W", 0);
      ours.bytes = ours_forward_bytes(layer.c) + backward_bytes(layer.c);
      ours.note = "computed";
      rows.push_back(ours);
      for (int64_t w : {8, 64, 1024}) {
        Row gather("syncbn_bytes", "allgather", c + " forward+backward W=" + std::to_string(w), 0);
        gather.bytes = allgather_forward_bytes(layer.c, w) + backward_bytes(layer.c);
        gather.note = "computed";
        rows.push_back(gather);
      }
    }
    return rows;
  }

  void print_bytes() const {
    std::printf("\nbytes per BN layer and step (computed; backward 4*2C in both designs)\n");
    std::printf("%-24s %6s %5s %12s %14s %14s %14s\n", "layer", "C", "count", "ours(any W)",
                "allgather W=8", "W=64", "W=1024");
    int64_t ours_total = 0, gather_total[3] = {0, 0, 0};
    const int64_t worlds[3] = {8, 64, 1024};
    for (const BnLayer& layer : layers_) {
      const int64_t ours = ours_forward_bytes(layer.c) + backward_bytes(layer.c);
      int64_t gather[3];
      for (int i = 0; i < 3; ++i) {
        gather[i] = allgather_forward_bytes(layer.c, worlds[i]) + backward_bytes(layer.c);
        gather_total[i] += layer.count * gather[i];
      }
      ours_total += layer.count * ours;
      std::printf("%-24s %6lld %5d %12lld %14lld %14lld %14lld\n", layer.name.c_str(),
                  static_cast<long long>(layer.c), layer.count, static_cast<long long>(ours),
                  static_cast<long long>(gather[0]), static_cast<long long>(gather[1]),
                  static_cast<long long>(gather[2]));
    }
    std::printf("%-24s %6s %5s %12lld %14lld %14lld %14lld\n", "network per step", "", "",
                static_cast<long long>(ours_total), static_cast<long long>(gather_total[0]),
                static_cast<long long>(gather_total[1]), static_cast<long long>(gather_total[2]));
  }

  Options o_;
  const MpiSession& session_;
  Device device_;
  std::unique_ptr<Communicator> comm_;
  std::vector<BnLayer> layers_;
};

}  // namespace
}  // namespace engine::bench

int main(int argc, char** argv) {
  using namespace engine::bench;
  return run_mpi_bench<Options>(argc, argv, make_command, check,
                                [](engine::MpiSession& session, const Options& options) {
                                  omp_set_num_threads(options.threads);
                                  wait_for_startup_threads_to_sleep();
                                  Bench(session, options).run();
                                });
}
