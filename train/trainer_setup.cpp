// Setting up a rank's training run: communicators, the model, SGD and DDP, the figures' rows
// and the data (trainer_state.h).
#include "train/trainer_state.h"

#include <omp.h>

#include <algorithm>
#include <thread>

namespace engine::train {

namespace {

int default_threads(const MpiSession& session) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, session.world().local_size));
}

}  // namespace

void Trainer::State::build() {
  const TrainOptions& o = options;
  omp_set_num_threads(o.threads > 0 ? o.threads : default_threads(session));
  comms.emplace(o, session, device);

  model->build(comms->grad(), stream);
  metrics.emplace(options, rank0(), world(), device);

  data.emplace(o, session.rank(), world(), std::move(datasets), device,
               std::max(1, default_threads(session)));
  if (data->has_train()) model->set_schedule(data->steps_per_epoch());
}

}  // namespace engine::train
