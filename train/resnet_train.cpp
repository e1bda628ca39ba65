// resnet_train: data-parallel ResNet training on an ImageFolder dataset.
//
//   mpirun -np 4 ./resnet_train --data /imagenet --arch resnet50
//
// Exit status: 0 done, 1 a failure (its message names the flag, path or rank), 2 a bad
// command line, 128 + N stopped by signal N (the last checkpoint is kept).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "collectives/bootstrap.h"
#include "collectives/core/timeout.h"
#include "collectives/execution/watchdog.h"
#include "collectives/launch_environment.h"
#include "kernels/error.h"
#include "nn/resnet.h"
#include "train/batch_dump.h"
#include "train/cli_command.h"
#include "train/dataset_agreement.h"
#include "train/preflight.h"
#include "train/stop_signal.h"
#include "train/trace_steps.h"
#include "train/train_options.h"
#include "train/trainer.h"

namespace engine::train {
namespace {

// Bytes of a checkpoint of the model: values, momentum and BN buffers, in f32.
int64_t checkpoint_bytes(const TrainOptions& options, int64_t classes) {
  const nn::ResNet model(options.arch, {.num_classes = classes});
  int64_t buffers = 0;
  for (const nn::BufferInfo& info : model.params().buffers())
    buffers += shape_numel(info.shape);
  return 4 * (2 * model.params().parameter_count() + buffers) + (1 << 20);
}

// Runs the checks on every rank; returns true when all passed. Otherwise rank 0 has printed
// its error (or each failing rank its own, when rank 0 passed) and every rank returns false.
bool checks_pass_on_every_rank(const MpiSession& session, const std::function<void()>& checks) {
  std::string error;
  try {
    checks();
  } catch (const std::exception& e) {
    error = e.what();
  }
  int failed[2] = {session.rank() == 0 && !error.empty(), !error.empty()};
  MPI_Allreduce(MPI_IN_PLACE, failed, 2, MPI_INT, MPI_MAX, session.comm());
  if (!error.empty() && (session.rank() == 0 || !failed[0])) {
    // Across hosts a path can exist on one host and not on another: say where it failed.
    const std::string where = session.rank() != 0 && session.world().hosts > 1
                                  ? " (on host " + session.peers().host(session.rank()) + ")"
                                  : "";
    std::fprintf(stderr, "resnet_train: %s%s\n", error.c_str(), where.c_str());
  }
  return !failed[1];
}

// --resume auto: rank 0 looks for <checkpoint-dir>/last.safetensors (the file it writes) and
// tells every rank, so that all resume or all start fresh; each rank then reads the file as
// with --resume FILE, and one that cannot fails the preflight naming it.
void resolve_resume_auto(TrainOptions& options, const MpiSession& session) {
  if (options.resume != kResumeAuto) return;
  const std::string path = checkpoint_path(options, "last");
  int found = 0;
  if (session.rank() == 0) {
    std::error_code error;
    found = std::filesystem::is_regular_file(path, error) ? 1 : 0;
  }
  MPI_Bcast(&found, 1, MPI_INT, 0, session.comm());
  options.resume = found ? path : "";
  if (session.rank() == 0 && !found && !options.evaluate) {
    std::printf("resnet_train: --resume auto: no %s yet, starting from %s\n", path.c_str(),
                options.pretrained.empty() ? "scratch" : options.pretrained.c_str());
    std::fflush(stdout);
  }
}

int train_main(TrainOptions& options, MpiSession& session) {
  // Everything collective before the first step (the preflight's agreements, the
  // communicators, the weights' broadcast, NCCL's setup) has --comm-timeout too: a rank
  // stalled on another host would otherwise keep every rank waiting forever.
  Watchdog startup_watchdog;
  OpContext startup;
  startup.op = "startup";
  startup.impl = "resnet_train: the preflight checks and setup";
  startup.rank = session.rank();
  startup.timeout = std::chrono::milliseconds(static_cast<int64_t>(options.comm_timeout_s * 1e3));
  std::optional<Watchdog::Scope> setting_up;
  if (session.size() > 1) setting_up.emplace(startup_watchdog, startup);
  resolve_resume_auto(options, session);
  install_stop_handlers();
  std::optional<Datasets> datasets;
  const bool ready = checks_pass_on_every_rank(session, [&] {
    if (options.evaluate && options.resume.empty()) {
      throw Error("--evaluate --resume auto: there is no " + checkpoint_path(options, "last") +
                  " to evaluate");
    }
    (void)session.device(options.device);
    datasets.emplace(scan_datasets(options));
    const auto classes = static_cast<int64_t>(datasets->classes().size());
    if (!options.resume.empty()) check_resume_file(options, datasets->classes());
    if (options.resume.empty() && !options.pretrained.empty()) check_pretrained_file(options);
    if (session.rank() == 0 && !options.evaluate) {
      check_checkpoint_dir(options.checkpoint_dir, checkpoint_bytes(options, classes));
      if (!options.tensorboard.empty()) check_writable_dir("--tensorboard", options.tensorboard);
    }
    // Every rank writes its own timeline.
    if (!options.trace.empty())
      check_trace_file(trace_path_for_rank(options.trace, session.rank(), session.size()));
    // Every rank writes its own batches, perhaps to a disk of its own host.
    if (!options.dump_batches.empty()) prepare_batch_dump_dir(options.dump_batches);
  });
  if (!ready) return 1;
  if (const std::string why = dataset_disagreement(session, *datasets, options.data);
      !why.empty()) {
    if (session.rank() == 0) std::fprintf(stderr, "resnet_train: %s\n", why.c_str());
    return 1;
  }
  try {
    Trainer trainer(options, session, std::move(*datasets));
    return trainer.run([&] { setting_up.reset(); });
  } catch (const std::exception& e) {
    // One rank failed mid-run: the others would wait in a collective until its timeout.
    std::fprintf(stderr, "resnet_train: %s\n", e.what());
    std::fflush(stderr);
    if (session.size() > 1) abort_mpi_job(1);
    return 1;
  }
}

}  // namespace
}  // namespace engine::train

int main(int argc, char** argv) {
  using namespace engine::train;
  // Before MPI_Init, which would abort with Open MPI's page: one line, from the first task.
  if (const std::string why = engine::srun_without_pmix(); !why.empty()) {
    if (engine::launcher_rank().value_or(0) == 0)
      std::fprintf(stderr, "resnet_train: %s\n", why.c_str());
    return 1;
  }
  engine::MpiSession session(&argc, &argv);
  const int status = engine::cli::run_program<TrainOptions>(
      argc, argv, train_command, check_train_options,
      [&](TrainOptions& options) { return train_main(options, session); });
  // Stopped by a signal (every rank at the same step, past the barrier after rank 0 saved
  // last): leave without MPI_Finalize. mpirun ends the job at the first rank's exit of
  // 128 + N, and ranks still inside MPI_Finalize's fence then wait until it kills them (seen
  // in a SLURM allocation: for its odls_base_sigkill_timeout, their last output lost).
  if (status > 128 && session.size() > 1) {
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(status);
  }
  return status;
}
