#include "train/step_trace.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "kernels/error.h"
#include "kernels/nvtx.h"

namespace engine::train {

namespace {

using Json = nlohmann::ordered_json;

constexpr int lane_id(TraceLane lane) {
  return static_cast<int>(lane);
}

// Microseconds with nanosecond digits: enough for the viewers, short lines.
double rounded_us(double us) {
  return std::round(us * 1e3) / 1e3;
}

Json complete_event(const std::string& name, const std::string& category, int rank, TraceLane lane,
                    double start_us, double end_us, Json args) {
  Json event;
  event["name"] = name;
  event["cat"] = category;
  event["ph"] = "X";
  event["ts"] = rounded_us(start_us);
  event["dur"] = rounded_us(std::max(0.0, end_us - start_us));
  event["pid"] = rank;
  event["tid"] = lane_id(lane);
  event["args"] = std::move(args);
  return event;
}

Json metadata_event(const std::string& name, int rank, int tid, const std::string& value) {
  return Json{{"name", name}, {"ph", "M"},  {"ts", 0},
              {"pid", rank},  {"tid", tid}, {"args", {{"name", value}}}};
}

}  // namespace

StepTrace::StepTrace(std::string path, TraceSteps steps, int rank, int world, Device device)
    : path_(std::move(path)), steps_range_(steps), rank_(rank), world_(world), device_(device) {}

void StepTrace::begin_step(int64_t step, Stream& stream) {
  if (!enabled() || written_) return;
  if (recording_) {
    // The step before never ended (the loader ran dry mid-step): it made no optimizer step.
    steps_.pop_back();
    open_layer_spans_.clear();
    for (; open_nvtx_ranges_ > 0; --open_nvtx_ranges_)
      nvtx_pop();
  }
  recording_ = step >= steps_range_.first && step <= steps_range_.last;
  if (!recording_) return;
  if (!anchor_) {
    // The one wait of a traced run: from here on a device event's time is the host's.
    anchor_.emplace(device_, /*timing=*/true);
    anchor_->record(stream);
    anchor_->synchronize();
    anchor_us_ = host_us(Clock::now());
  }
  steps_.push_back({});
  steps_.back().number = step;
  steps_.back().host_start = Clock::now();
  nvtx_push("step " + std::to_string(step));
  ++open_nvtx_ranges_;
}

void StepTrace::begin_data_wait() {
  if (!recording_) return;
  data_wait_start_ = Clock::now();
  nvtx_push("data wait");
  ++open_nvtx_ranges_;
}

void StepTrace::end_data_wait() {
  if (!recording_) return;
  steps_.back().data_waits.emplace_back(data_wait_start_, Clock::now());
  nvtx_pop();
  --open_nvtx_ranges_;
}

int StepTrace::begin_span(const std::string& name, Stream& stream, int64_t micro_batch,
                          const std::string& category) {
  if (!recording_) return -1;
  std::deque<DeviceSpan>& spans = steps_.back().spans;
  spans.push_back({name, category, micro_batch, Event(device_, true), Event(device_, true)});
  spans.back().start.record(stream);
  nvtx_push(name);
  ++open_nvtx_ranges_;
  return static_cast<int>(spans.size()) - 1;
}

void StepTrace::end_span(int handle, Stream& stream) {
  if (!recording_ || handle < 0) return;
  DeviceSpan& span = steps_.back().spans.at(static_cast<size_t>(handle));
  span.end.record(stream);
  span.ended = true;
  nvtx_pop();
  --open_nvtx_ranges_;
}

void StepTrace::layer_begin(const nn::Layer& layer, bool backward, Stream& stream) {
  open_layer_spans_.push_back(
      begin_span(layer.name(), stream, -1, backward ? "layer backward" : "layer forward"));
}

void StepTrace::layer_end(const nn::Layer& layer, bool backward, Stream& stream) {
  (void)layer;
  (void)backward;
  if (open_layer_spans_.empty()) return;
  end_span(open_layer_spans_.back(), stream);
  open_layer_spans_.pop_back();
}

void StepTrace::end_step() {
  if (!recording_) return;
  steps_.back().host_end = Clock::now();
  steps_.back().ended = true;
  nvtx_pop();
  --open_nvtx_ranges_;
  recording_ = false;
}

void StepTrace::add_comm_timing(int64_t step, const nn::CommTiming& timing) {
  if (!enabled() || written_) return;
  for (Step& s : steps_)
    if (s.number == step) s.comm = timing;
  if (step >= steps_range_.last) write();
}

void StepTrace::write_partial() {
  if (!enabled() || written_ || steps_.empty()) return;
  if (recording_) steps_.pop_back();  // a step the stop cut short
  recording_ = false;
  write();
}

double StepTrace::host_us(Clock::time_point t) const {
  return std::chrono::duration<double, std::micro>(t.time_since_epoch()).count();
}

double StepTrace::device_us(const Event& event) const {
  return anchor_us_ + 1e3 * static_cast<double>(Event::elapsed_ms(*anchor_, event));
}

void StepTrace::write() {
  written_ = true;
  Json events = Json::array();
  events.push_back(metadata_event("process_name", rank_, 0, "rank " + std::to_string(rank_)));
  events.push_back(metadata_event("thread_name", rank_, lane_id(TraceLane::host), "host"));
  events.push_back(
      metadata_event("thread_name", rank_, lane_id(TraceLane::compute), "compute stream"));
  events.push_back(
      metadata_event("thread_name", rank_, lane_id(TraceLane::comm), "all-reduce (comm)"));
  for (const Step& step : steps_) {
    if (!step.ended) continue;
    // The device has finished these steps (the report before this waited for it); on the
    // CPU the events hold host times already.
    if (!step.spans.empty()) step.spans.back().end.synchronize();
    const Json step_arg = {{"step", step.number}};
    double step_end_us = host_us(step.host_end);
    std::vector<std::pair<double, double>> span_us;  // per span: start, end
    for (const DeviceSpan& span : step.spans) {
      const double start = device_us(span.start);
      const double end = span.ended ? std::max(start, device_us(span.end)) : start;
      span_us.emplace_back(start, end);
      step_end_us = std::max(step_end_us, end);
      Json args = step_arg;
      if (span.micro_batch >= 0) args["micro_batch"] = span.micro_batch;
      events.push_back(complete_event(span.name, span.category, rank_, TraceLane::compute, start,
                                      end, std::move(args)));
    }
    Json step_args = step_arg;
    if (step.comm) {
      step_args["buckets"] = step.comm->buckets;
      step_args["all_reduce_bytes"] = step.comm->bytes;
      step_args["comm_hidden_pct"] = 100 * step.comm->hidden_fraction;
    }
    events.push_back(complete_event("step " + std::to_string(step.number), "step", rank_,
                                    TraceLane::host, host_us(step.host_start), step_end_us,
                                    std::move(step_args)));
    for (const auto& [start, end] : step.data_waits) {
      events.push_back(complete_event("data wait", "data", rank_, TraceLane::host, host_us(start),
                                      host_us(end), step_arg));
    }
    if (!step.comm || step.comm->bucket_spans.empty() || step.synced_backward < 0) continue;
    // Bucket times count from the synced backward's start: the reducer's own begin event is
    // recorded at the same point of the stream (CPU: a few microseconds later).
    const auto [backward_start, backward_end] =
        span_us.at(static_cast<size_t>(step.synced_backward));
    const double compute_done =
        std::clamp(backward_start + 1e6 * step.comm->backward_s, backward_start, backward_end);
    if (backward_end > compute_done) {
      Json args = step_arg;
      args["exposed_us"] = rounded_us(1e6 * step.comm->exposed_s);
      events.push_back(complete_event("wait for all-reduce", "comm wait", rank_, TraceLane::compute,
                                      compute_done, backward_end, std::move(args)));
    }
    for (size_t b = 0; b < step.comm->bucket_spans.size(); ++b) {
      const nn::BucketSpan& bucket = step.comm->bucket_spans[b];
      Json args = step_arg;
      args["bucket"] = static_cast<int64_t>(b);
      args["bytes"] = bucket.bytes;
      events.push_back(complete_event("all-reduce bucket " + std::to_string(b), "all-reduce", rank_,
                                      TraceLane::comm, backward_start + 1e6 * bucket.start_s,
                                      backward_start + 1e6 * bucket.end_s, std::move(args)));
    }
  }
  steps_.clear();  // the events go back to the device

  std::ofstream file(path_, std::ios::trunc);
  file << "{\"traceEvents\":[\n";
  for (size_t i = 0; i < events.size(); ++i)
    file << events[i].dump() << (i + 1 < events.size() ? ",\n" : "\n");
  const Json other = {
      {"rank", rank_},
      {"world", world_},
      {"device", device_.str()},
      {"trace_steps", std::to_string(steps_range_.first) + "-" + std::to_string(steps_range_.last)},
      {"nvtx", nvtx_available()}};
  file << "],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":" << other.dump() << "}\n";
  file.close();
  if (!file) fail("--trace: could not write " + path_);
}

}  // namespace engine::train
