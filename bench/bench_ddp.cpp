// bench_ddp: data-parallel training steps (forward, cross-entropy, backward with the gradient
// buckets all-reduced by nn::DataParallel, SGD) under mpirun, in images/s per rank, against
// the same step on one rank alone (world 1, measured in this run while the other ranks wait,
// or given with --world1-images-per-s). ratio = per-rank images/s / world-1 images/s: the
// scaling efficiency. Each case also reports how much of the all-reduce time backward hid.
//
//   mpirun -np 2 bench_ddp [-a resnet18] [--image-size 32] [-b 8] [--threads 1]
//                          [--comm ring-shm] [--steps 8] [--bucket-cap-mb 1,25] [--json]
//
// Cases: for each bucket cap, with overlap (buckets start during backward) and without (all
// after backward: the baseline overlap is measured against), plus "local": every rank running
// the step at once with no communication, which shows what the ranks' sharing of the machine
// costs apart from communication.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "bench/mpi_bench_main.h"
#include "bench/timing.h"
#include "collectives/comm_factory.h"
#include "collectives/core/timeout.h"
#include "kernels/runtime.h"
#include "nn/cross_entropy.h"
#include "nn/data_parallel.h"
#include "nn/resnet.h"
#include "nn/sgd.h"
#include "train/common_flags.h"

namespace engine::bench {
namespace {

struct Options {
  std::string arch = "resnet18";
  int64_t image_size = 32;
  int64_t batch = 8;
  int threads = 1;
  int64_t classes = 10;
  std::string device = "cpu";
  std::string comm = "ring-shm";
  int steps = 8;
  std::vector<double> bucket_caps_mb = {1, 25};
  std::optional<double> world1_images_per_s;
  bool json = false;
};

cli::Command make_command(Options& o) {
  cli::Command command(
      "bench_ddp", "[flags]        (under mpirun -np W)",
      "Times data-parallel training steps (nn::DataParallel: gradient buckets all-reduced during "
      "backward, ReduceOp::avg) per rank, with and without overlap, for each bucket cap, against "
      "the step on one rank alone (world 1, measured here unless --world1-images-per-s is "
      "given): ratio = scaling efficiency. Also prints the hidden fraction of the all-reduce "
      "time. Times are the median of --steps steps, the slowest rank's.");
  cli::add_arch(command, o.arch);
  cli::add_image_size(command, o.image_size, "input images' side");
  cli::add_batch_size(command, o.batch, "images per rank per step", 2,
                      "BatchNorm needs two values");
  command.integer("--threads", o.threads, "OpenMP threads per rank");
  command.integer("--classes", o.classes, "the fc layer's outputs");
  cli::add_device(command, o.device);
  command.text("--comm", o.comm, "NAME",
               "ring-shm|ring-mpi|mpi|nccl|ring-nccl (cuda needs nccl or ring-nccl)");
  command.integer("--steps", o.steps, "timed steps per case");
  command.numbers("--bucket-cap-mb", o.bucket_caps_mb, "bucket caps in MiB, a case each");
  command.option("--world1-images-per-s", "X", "world 1's images/s, instead of measuring it", "",
                 [&o](const std::string& flag, const std::string& text) {
                   o.world1_images_per_s = cli::number_value(flag, text);
                 });
  cli::add_json(command, o.json);
  return command;
}

void check(const Options& o) {
  if (o.threads < 1 || o.classes < 1 || o.steps < 1 ||
      (o.world1_images_per_s && !(*o.world1_images_per_s > 0))) {
    throw cli::UsageError(
        "--threads, --classes and --steps must be >= 1, --world1-images-per-s > 0");
  }
  for (const double cap : o.bucket_caps_mb) {
    if (!(cap > 0)) throw cli::UsageError("--bucket-cap-mb: caps must be > 0");
  }
}

// One rank's model, batch and optimizer; step() is one training step, with or without DDP.
class Trainer {
 public:
  Trainer(const Options& o, int rank, Device device)
      : stream_(device), model_(o.arch, {.num_classes = o.classes, .seed = 1}) {
    model_.allocate(device, stream_);
    model_.setup({o.batch, o.image_size, o.image_size, 3}, DType::f32, stream_);
    std::mt19937 rng(static_cast<uint32_t>(7 + rank));
    std::normal_distribution<float> normal;
    std::vector<float> pixels(static_cast<size_t>(o.batch * o.image_size * o.image_size * 3));
    for (float& v : pixels)
      v = normal(rng);
    std::vector<int32_t> labels(static_cast<size_t>(o.batch));
    for (int32_t& l : labels)
      l = static_cast<int32_t>(rng() % o.classes);
    images_ =
        Tensor::from_floats({o.batch, o.image_size, o.image_size, 3}, pixels).to(device, stream_);
    labels_ = Tensor::from_ints({o.batch}, labels).to(device, stream_);
    loss_.setup(o.batch, o.classes, DType::f32, device);
    nn::SgdConfig config;
    config.lr = 0.01f;
    config.momentum = 0.9f;
    config.weight_decay = 1e-4f;
    sgd_ = std::make_unique<nn::Sgd>(model_.params(), config, stream_);
  }

  void step(nn::DataParallel* ddp) {
    nn::Pass pass{stream_, true, false, {}};
    model_.params().zero_grad();
    loss_.forward(model_.forward(images_, pass), labels_, stream_);
    if (ddp) ddp->begin_backward(pass);
    model_.backward(loss_.backward(stream_), pass);
    if (ddp) ddp->end_backward(stream_);
    sgd_->step(0.01f, stream_);
    stream_.synchronize();  // a GPU step is timed to its end
  }
  nn::ParameterSet& params() { return model_.params(); }
  Stream& stream() { return stream_; }

 private:
  Stream stream_;
  nn::ResNet model_;
  nn::CrossEntropyLoss loss_;
  std::unique_ptr<nn::Sgd> sgd_;
  Tensor images_, labels_;
};

// Median step time in us over `steps` steps after one warm-up, the slowest rank's.
template <typename Step>
double step_time_us(const MpiSession& session, int steps, Step&& step) {
  TimingOptions timing{0.0, steps};
  const double local = median_time_us(
      step, [] {}, timing);
  return max_over_ranks(session, local);
}

struct HiddenSummary {
  double hidden = 0, exposed_ms = 0, busy_ms = 0, backward_ms = 0;
};

class Bench {
 public:
  Bench(const MpiSession& session, const Options& o)
      : o_(o), session_(session), device_(resolve_device(o.device, session.local_rank())) {
    comm_ = make_bench_communicator(session, o.comm, device_);
    trainer_ = std::make_unique<Trainer>(o, comm_->rank(), device_);
  }

  void run() {
    Communicator& comm = *comm_;
    const int world = comm.size();
    const std::string shape = o_.arch + " " + std::to_string(o_.image_size) + "x" +
                              std::to_string(o_.image_size) + " b" + std::to_string(o_.batch);
    // World 1: rank 0 alone, the others waiting at a barrier.
    double world1_us = 0;
    std::string baseline = "world1";
    if (o_.world1_images_per_s) {
      world1_us = static_cast<double>(o_.batch) / *o_.world1_images_per_s * 1e6;
      baseline = "world1 (given)";
    } else {
      if (comm.rank() == 0) {
        world1_us =
            median_time_us([&] { trainer_->step(nullptr); }, [] {}, TimingOptions{0.0, o_.steps});
      }
      comm.barrier();  // the communicator's wait, which lets rank 0 have the cores
      world1_us = broadcast_from_rank0(session_, world1_us);
    }
    std::vector<Row> rows;
    const auto add = [&](const std::string& impl, const std::string& what, double us,
                         const std::string& note) {
      Row row("ddp", impl, shape + " world " + std::to_string(world) + " " + what, us);
      row.images_per_s = static_cast<double>(o_.batch) / (us * 1e-6);  // per rank
      row.baseline = baseline;
      row.baseline_time_us = world1_us;
      row.note = note;
      rows.push_back(row);
    };
    add("local", "no communication",
        step_time_us(session_, o_.steps, [&] { trainer_->step(nullptr); }),
        "every rank computing at once");
    for (double cap : o_.bucket_caps_mb) {
      for (bool overlap : {true, false}) {
        nn::DataParallel ddp(trainer_->params(), comm, {std::min(1.0, cap), cap, overlap});
        ddp.broadcast_from_rank0(trainer_->stream());
        std::vector<nn::CommTiming> timings;
        const double us = step_time_us(session_, o_.steps, [&] {
          trainer_->step(&ddp);
          timings.push_back(ddp.last_timing());
        });
        const nn::CommTiming t = median_timing(timings);
        char note[200];
        std::snprintf(note, sizeof note,
                      "%d buckets, hidden %.2f, exposed %.1f ms, comm busy %.1f ms, backward "
                      "%.1f ms (rank 0, median step)",
                      ddp.bucket_count(), t.hidden_fraction, t.exposed_s * 1e3, t.comm_busy_s * 1e3,
                      t.backward_s * 1e3);
        char what[80];
        std::snprintf(what, sizeof what, "bucket %g MiB %s", cap,
                      overlap ? "overlap" : "no overlap");
        add(comm.name(), what, us, note);
      }
    }
    if (comm.rank() != 0) return;
    if (o_.json) {
      for (const Row& row : rows)
        std::printf("%s\n", to_json(row).c_str());
      return;
    }
    std::printf(
        "bench_ddp: %s on %s, world %d (%s), %d OpenMP threads per rank, median of %d steps\n",
        shape.c_str(), device_.str().c_str(), world, comm.name().c_str(), o_.threads, o_.steps);
    std::printf("%-52s %-9s %9s %10s %9s %7s  %s\n", "case", "impl", "step_ms", "img/s/rank",
                "img/s", "scaling", "note");
    for (const Row& row : rows) {
      std::printf("%-52s %-9s %9.1f %10.1f %9.1f %7.2f  %s\n", row.case_name.c_str(),
                  row.impl.c_str(), row.time_us / 1e3, *row.images_per_s, *row.images_per_s * world,
                  row.ratio().value_or(0), row.note.c_str());
    }
    std::printf("world 1 (%s): %.1f ms per step, %.1f img/s\n", baseline.c_str(), world1_us / 1e3,
                static_cast<double>(o_.batch) / (world1_us * 1e-6));
  }

 private:
  // The step whose hidden fraction is the median (the timings of rank 0).
  static nn::CommTiming median_timing(std::vector<nn::CommTiming> timings) {
    std::sort(timings.begin(), timings.end(),
              [](const auto& a, const auto& b) { return a.hidden_fraction < b.hidden_fraction; });
    return timings[timings.size() / 2];
  }

  Options o_;
  const MpiSession& session_;
  Device device_;
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<Trainer> trainer_;
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
