// --trace FILE: a timeline of a few optimizer steps per rank, written as a Chrome / Perfetto
// trace (the Trace Event Format's JSON: complete "X" events, microseconds) that
// ui.perfetto.dev and chrome://tracing open. Three lanes per rank (pid = rank):
//
//   host     each step and its data waits (the host clock);
//   compute  forward, backward and the optimizer, each top-level layer's forward and backward
//            nested inside (conv1, bn1, maxpool, layer1.0, ..., fc), and at backward's end the
//            wait for the last all-reduces, what communication left exposed;
//   comm     each gradient bucket's all-reduce, with its bytes (DataParallel's CommTiming).
//
// The compute spans are timing events recorded on the stream (kernels/stream.h): on the CPU
// they read the host clock, on CUDA they are cudaEvents, read only once the steps are over
// (the trainer's report after them has waited for the device), so tracing never makes the
// host wait for the GPU inside a step; one synchronization before the first traced step puts
// the device's clock on the host's. Times are the host's steady clock (CLOCK_MONOTONIC, shared
// by the processes of a host), so the ranks of one host line up when their files are opened
// together. Each span is also an NVTX range (kernels/nvtx.h) for Nsight Systems users.
// Without --trace nothing is recorded: the layers see no observer.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "kernels/device.h"
#include "kernels/stream.h"
#include "nn/data_parallel.h"
#include "nn/layer.h"
#include "train/trace_steps.h"

namespace engine::train {

enum class TraceLane { host = 0, compute = 1, comm = 2 };

class StepTrace final : public nn::LayerObserver {
 public:
  using Clock = std::chrono::steady_clock;

  // Records nothing when `path` is empty. `path` is this rank's file (trace_path_for_rank).
  StepTrace(std::string path, TraceSteps steps, int rank, int world, Device device);

  bool enabled() const { return !path_.empty(); }
  // The host is about to ask for the first batch of optimizer step `step`: recording starts
  // when the step is in range (a step begun and never ended, as when the loader ran dry, is
  // dropped).
  void begin_step(int64_t step, Stream& stream);
  bool recording() const { return recording_; }
  // The host waiting for a batch (the loader's queue), around data.next_train_batch().
  void begin_data_wait();
  void end_data_wait();
  // A span of work queued on `stream` (on the compute lane); returns its handle for end_span.
  int begin_span(const std::string& name, Stream& stream, int64_t micro_batch = -1,
                 const std::string& category = "phase");
  void end_span(int handle, Stream& stream);
  // The span of the last begin_span("backward") is the one whose all-reduces these are.
  void mark_synced_backward(int handle) {
    if (recording_ && handle >= 0) steps_.back().synced_backward = handle;
  }
  // The step's optimizer work is queued.
  void end_step();
  // What the layers report to while recording; null otherwise (then nothing is called).
  nn::LayerObserver* layer_observer() { return recording_ ? this : nullptr; }

  // A reported step's all-reduce timing (the trainer's report after the step). Once the last
  // traced step's has arrived, every span is read and the file written.
  void add_comm_timing(int64_t step, const nn::CommTiming& timing);
  // Writes what was recorded when the run stops before the range's end (a signal). Does
  // nothing when written already or nothing was recorded.
  void write_partial();

  void layer_begin(const nn::Layer& layer, bool backward, Stream& stream) override;
  void layer_end(const nn::Layer& layer, bool backward, Stream& stream) override;

 private:
  struct DeviceSpan {
    std::string name, category;
    int64_t micro_batch;
    Event start, end;
    bool ended = false;
  };
  struct Step {
    int64_t number = 0;
    Clock::time_point host_start{}, host_end{};
    std::vector<std::pair<Clock::time_point, Clock::time_point>> data_waits;
    std::deque<DeviceSpan> spans;  // deque: handles stay valid, events are not moved
    int synced_backward = -1;
    bool ended = false;
    std::optional<nn::CommTiming> comm;
  };
  double host_us(Clock::time_point t) const;
  double device_us(const Event& event) const;
  void write();

  std::string path_;
  TraceSteps steps_range_;
  int rank_, world_;
  Device device_;
  bool recording_ = false;
  bool written_ = false;
  std::optional<Event> anchor_;  // recorded and waited for before the first traced step
  double anchor_us_ = 0;         // the host clock when it was reached
  Clock::time_point data_wait_start_{};
  std::vector<int> open_layer_spans_;
  int open_nvtx_ranges_ = 0;  // closed when a step is dropped, so that Nsight's stay nested
  std::deque<Step> steps_;    // deque: a Step holds events, which never move
};

}  // namespace engine::train
