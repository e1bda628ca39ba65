// What rank 0 prints while training: a line every --print-freq steps (images/s, ETA, loss,
// LR), redrawn in place as a live bar between those lines when stdout is a terminal (and the
// run is not under mpirun, which gives ranks a terminal whatever mpirun writes to), and an
// epoch summary. Every other rank prints nothing here (its errors carry its rank). The steps'
// losses and counts arrive in batches, when the trainer has brought them to the host (at
// least at every print point): the bar shows the step count and speed live, the loss as of
// the last batch of figures.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace engine::train {

// Global figures of one optimizer step, summed over ranks.
struct StepTotals {
  double loss_sum = 0;  // sum of per-sample losses
  double correct1 = 0, correct5 = 0;
  double samples = 0;
  void add(const StepTotals& other) {
    loss_sum += other.loss_sum;
    correct1 += other.correct1;
    correct5 += other.correct5;
    samples += other.samples;
  }
};

struct EpochFigures {
  int64_t epoch = 0, epochs = 0;
  double train_loss = 0, train_top1 = 0;
  double val_loss = 0, val_top1 = 0, val_top5 = 0;
  bool has_ema = false;  // --ema: the weight average's validation too
  double ema_val_loss = 0, ema_val_top1 = 0, ema_val_top5 = 0;
  double lr = 0;
  double images_per_s = 0, epoch_s = 0;
  int64_t skipped_files = 0;
  double comm_hidden = 1;
  bool best = false;
};

class Progress {
 public:
  Progress(bool enabled, int64_t print_freq);

  void start_epoch(int64_t epoch, int64_t epochs, int64_t steps, int64_t first_step);
  // After each step (index within the epoch) with its global sample count and the rate used.
  void tick(int64_t index, double samples, double lr);
  // Each step's totals, in step order, once they are on the host; prints at the print points.
  void step(int64_t index, const StepTotals& totals, double lr);
  void epoch_summary(const EpochFigures& figures);
  // A line of its own (clears a live bar first).
  void line(const std::string& text);

 private:
  using Clock = std::chrono::steady_clock;
  std::string status(int64_t index, double lr) const;

  bool enabled_;
  bool terminal_;
  int64_t print_freq_;
  int64_t epoch_ = 0, epochs_ = 0, steps_ = 0, first_step_ = 0;
  StepTotals epoch_totals_;
  double ticked_samples_ = 0;  // samples of the steps ticked this epoch (for images/s)
  double last_loss_ = 0;
  Clock::time_point started_, last_draw_;
  bool bar_shown_ = false;
};

// "1:02:03" / "2:03".
std::string format_duration(double seconds);

}  // namespace engine::train
