#include "train/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace engine::train {

std::string format_duration(double seconds) {
  const auto total = static_cast<int64_t>(std::max(0.0, std::round(seconds)));
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", static_cast<long long>(total / 3600),
                  static_cast<long long>(total / 60 % 60), static_cast<long long>(total % 60));
  } else {
    std::snprintf(text, sizeof text, "%lld:%02lld", static_cast<long long>(total / 60),
                  static_cast<long long>(total % 60));
  }
  return text;
}

Progress::Progress(bool enabled, int64_t print_freq)
    : enabled_(enabled),
      // Open MPI hands every rank a pseudo-terminal even when mpirun's own output goes to a
      // file, so under mpirun isatty() cannot tell: the bar is only drawn without it.
      terminal_(enabled && isatty(STDOUT_FILENO) && std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr),
      print_freq_(print_freq) {}

void Progress::start_epoch(int64_t epoch, int64_t epochs, int64_t steps, int64_t first_step) {
  epoch_ = epoch;
  epochs_ = epochs;
  steps_ = steps;
  first_step_ = first_step;
  epoch_totals_ = {};
  ticked_samples_ = 0;
  started_ = last_draw_ = Clock::now();
}

std::string Progress::status(int64_t index, double lr) const {
  const double elapsed = std::chrono::duration<double>(Clock::now() - started_).count();
  const double done = static_cast<double>(index + 1 - first_step_);
  const double eta = done > 0 ? elapsed / done * static_cast<double>(steps_ - index - 1) : 0;
  const double samples = std::max(1.0, epoch_totals_.samples);
  char text[256];
  std::snprintf(text, sizeof text,
                "epoch %lld/%lld [%*lld/%lld] loss %.4f (avg %.4f) top1 %5.2f%% lr %.4g "
                "%.0f img/s ETA %s",
                static_cast<long long>(epoch_ + 1), static_cast<long long>(epochs_),
                static_cast<int>(std::to_string(steps_).size()), static_cast<long long>(index + 1),
                static_cast<long long>(steps_), last_loss_, epoch_totals_.loss_sum / samples,
                100 * epoch_totals_.correct1 / samples, lr,
                elapsed > 0 ? ticked_samples_ / elapsed : 0.0, format_duration(eta).c_str());
  return text;
}

void Progress::tick(int64_t index, double samples, double lr) {
  ticked_samples_ += samples;
  if (!terminal_) return;
  const Clock::time_point now = Clock::now();
  if (now - last_draw_ > std::chrono::milliseconds(200)) {
    std::printf("\r%s\033[K", status(index, lr).c_str());
    std::fflush(stdout);
    last_draw_ = now;
    bar_shown_ = true;
  }
}

void Progress::step(int64_t index, const StepTotals& totals, double lr) {
  epoch_totals_.add(totals);
  last_loss_ = totals.samples > 0 ? totals.loss_sum / totals.samples : 0;
  if (enabled_ && ((index + 1) % print_freq_ == 0 || index + 1 == steps_)) line(status(index, lr));
}

void Progress::line(const std::string& text) {
  if (!enabled_) return;
  if (bar_shown_) std::printf("\r\033[K");
  bar_shown_ = false;
  std::printf("%s\n", text.c_str());
  std::fflush(stdout);
}

void Progress::epoch_summary(const EpochFigures& f) {
  char hidden[64];
  if (std::isnan(f.comm_hidden)) {
    std::snprintf(hidden, sizeof hidden, "communication inside CUDA graphs");
  } else {
    std::snprintf(hidden, sizeof hidden, "%.0f%% of communication hidden", 100 * f.comm_hidden);
  }
  char text[512];
  std::snprintf(text, sizeof text,
                "epoch %lld/%lld done in %s: train loss %.4f top1 %.2f%% | val loss %.4f top1 "
                "%.2f%% top5 %.2f%%%s | %.0f img/s, %lld skipped files, %s",
                static_cast<long long>(f.epoch + 1), static_cast<long long>(f.epochs),
                format_duration(f.epoch_s).c_str(), f.train_loss, 100 * f.train_top1, f.val_loss,
                100 * f.val_top1, 100 * f.val_top5, f.best ? " (best)" : "", f.images_per_s,
                static_cast<long long>(f.skipped_files), hidden);
  if (f.has_ema) {
    const size_t used = std::strlen(text);
    std::snprintf(text + used, sizeof text - used, " | ema val loss %.4f top1 %.2f%% top5 %.2f%%",
                  f.ema_val_loss, 100 * f.ema_val_top1, 100 * f.ema_val_top5);
  }
  line(text);
}

}  // namespace engine::train
