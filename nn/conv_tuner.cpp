#include "nn/conv_tuner.h"

#include <algorithm>
#include <chrono>

#include "kernels/error.h"
#include "kernels/ops/conv.h"
#include "kernels/ops/copy.h"

namespace engine::nn {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool reads_input_through_affine(ConvFusion fusion) {
  return fusion == ConvFusion::input_affine || fusion == ConvFusion::input_affine_output_stats ||
         fusion == ConvFusion::batchnorm_backward;
}
bool has_output_stats(ConvFusion fusion) {
  return fusion == ConvFusion::output_stats || fusion == ConvFusion::input_affine_output_stats;
}
bool reduces_batchnorm_backward(ConvFusion fusion) {
  return fusion == ConvFusion::batchnorm_backward ||
         fusion == ConvFusion::residual_batchnorm_backward;
}

// The operands of every pass of one problem, on the stream's device, and those of its fusion:
// the BatchNorm + ReLU the input is read through (scale 1, shift 0), the statistics of the
// output, the BatchNorm whose backward the input gradient reduces. Their values do not change
// which kernels run or how long they take to within the tuner's resolution, so they are
// constant: no random generator needed on the device.
struct ConvOperands {
  ConvOperands(const ConvProblem& problem, Stream& stream) {
    const Conv2dShape& s = problem.shape;
    const Device device = stream.device();
    x = Tensor::empty(s.input_shape(), problem.dtype, device);
    w = Tensor::empty(s.filter_shape(), problem.dtype, device);
    y = Tensor::empty(s.output_shape(), problem.dtype, device);
    dx = Tensor::empty(s.input_shape(), problem.dtype, device);
    dw = Tensor::empty(s.filter_shape(), DType::f32, device);
    fill(x, 0.5f, stream);
    fill(w, 0.25f, stream);
    fill(y, 0.125f, stream);
    // The fusion's small vectors copied from the host: no kernel launched but the pass's.
    const auto constant = [&](int64_t n, float value) {
      return Tensor::from_floats({n}, std::vector<float>(static_cast<size_t>(n), value))
          .to(device, stream);
    };
    if (reads_input_through_affine(problem.fusion))
      input = {constant(s.in_channels, 1.f), constant(s.in_channels, 0.f), true};
    if (has_output_stats(problem.fusion))
      stats = Tensor::empty({batchnorm_stats_numel(s.out_channels)}, DType::f32, device);
    if (reduces_batchnorm_backward(problem.fusion)) {
      batch_stats = constant(batchnorm_stats_numel(s.in_channels), 0.5f);
      grad_sums = Tensor::empty({2 * s.in_channels}, DType::f32, device);
    }
    if (problem.fusion == ConvFusion::residual_batchnorm_backward) {
      // The block's output (all positive: every element passes the mask) and its identity
      // branch's gradient, each a tensor of its own as in the step.
      relu_output = Tensor::empty(s.input_shape(), problem.dtype, device);
      identity_grad = Tensor::empty(s.input_shape(), problem.dtype, device);
      fill(relu_output, 0.5f, stream);
      fill(identity_grad, 0.25f, stream);
    }
  }
  Tensor x, w, y, dx, dw, bias, dbias, workspace, split_counters, relu_output, identity_grad;
  ConvInputAffine input;
  Tensor stats, batch_stats, grad_sums;
};

int64_t workspace_numel(const ConvProblem& problem, Device device, const ConvAlgo& algo) {
  switch (problem.pass) {
    case ConvPass::backward_data:
      return reduces_batchnorm_backward(problem.fusion)
                 ? conv2d_backward_data_bn_workspace_numel(problem.shape, device, algo)
                 : conv2d_backward_data_workspace_numel(problem.shape, device, algo);
    case ConvPass::backward_filter:
      return conv2d_backward_filter_workspace_numel(problem.shape, device, algo);
    case ConvPass::forward:
      break;
  }
  return has_output_stats(problem.fusion)
             ? conv2d_forward_stats_workspace_numel(problem.shape, device, algo)
             : conv2d_forward_workspace_numel(problem.shape, device, algo);
}

// The pass as the layer runs it, fused as the problem says.
void run(const ConvProblem& problem, ConvOperands& o, const ConvAlgo& algo, Stream& stream) {
  const Conv2dShape& s = problem.shape;
  switch (problem.pass) {
    case ConvPass::forward:
      conv2d_forward(s,
                     {.x = o.x,
                      .w = o.w,
                      .bias = o.bias,
                      .y = o.y,
                      .workspace = o.workspace,
                      .split_counters = o.split_counters},
                     stream, algo, {.stats = o.stats, .input = o.input});
      return;
    case ConvPass::backward_data: {
      Conv2dBackwardDataFusion fusion;
      if (reduces_batchnorm_backward(problem.fusion)) {
        fusion = {.x = o.x,
                  .batch_stats = o.batch_stats,
                  .input = o.input,
                  .relu_output = o.relu_output,
                  .grad_sums = o.grad_sums,
                  .bias_grad = {},
                  .weight_grad = {}};
      }
      conv2d_backward_data(s,
                           {.dy = o.y,
                            .w = o.w,
                            .dx = o.dx,
                            .workspace = o.workspace,
                            .split_counters = o.split_counters,
                            .add = o.identity_grad},
                           stream, algo, fusion);
      return;
    }
    case ConvPass::backward_filter:
      conv2d_backward_filter(s,
                             {.x = o.x,
                              .dy = o.y,
                              .dw = o.dw,
                              .dbias = o.dbias,
                              .workspace = o.workspace,
                              .split_counters = o.split_counters,
                              .write = GradWrite::overwrite},
                             stream, algo, o.input);
      return;
  }
}

// Microseconds per call: the median of `samples` samples of back-to-back calls, after one
// warm-up call (which also sizes a sample).
double time_algo(const ConvProblem& problem, ConvOperands& operands, const ConvAlgo& algo,
                 Stream& stream, const ConvTunerOptions& options) {
  Event start(stream.device(), /*timing=*/true), end(stream.device(), /*timing=*/true);
  run(problem, operands, algo, stream);
  start.record(stream);
  run(problem, operands, algo, stream);
  end.record(stream);
  end.synchronize();
  const double first_us = std::max(1e3 * Event::elapsed_ms(start, end), 1.0);
  const int calls = std::clamp(static_cast<int>(options.sample_microseconds / first_us), 1, 64);
  std::vector<double> times;
  for (int sample = 0; sample < options.samples; ++sample) {
    start.record(stream);
    for (int call = 0; call < calls; ++call)
      run(problem, operands, algo, stream);
    end.record(stream);
    end.synchronize();
    times.push_back(1e3 * Event::elapsed_ms(start, end) / calls);
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

}  // namespace

std::vector<ConvCandidateTime> time_conv_candidates(const ConvProblem& problem, Stream& stream,
                                                    const ConvTunerOptions& options) {
  if (stream.fp32_math() != problem.math) {
    fail("tune_convolutions: " + problem.str() + " on a stream that multiplies f32 as " +
         std::string(fp32_math_name(stream.fp32_math())));
  }
  const std::vector<ConvAlgo> algos = conv2d_algo_candidates(problem, stream.device());
  if (algos.empty()) return {};
  ConvOperands operands(problem, stream);
  std::vector<ConvCandidateTime> times;
  for (const ConvAlgo& algo : algos) {
    // A split's partials may not fit beside the model: that candidate is not one.
    // Zeroed: a fused pass's workspace holds counters that every call leaves at zero, as do
    // the split-K counters (timed as the layers run them: the sum in the GEMM's launch).
    try {
      operands.workspace =
          Tensor::zeros({std::max<int64_t>(workspace_numel(problem, stream.device(), algo), 1)},
                        DType::f32, stream.device(), stream);
      operands.split_counters = Tensor::zeros(
          {std::max<int64_t>(
              conv2d_split_counters_numel(problem.shape, problem.pass, stream.device(), algo), 1)},
          DType::i32, stream.device(), stream);
    } catch (const OutOfMemoryError&) {
      continue;
    }
    times.push_back({algo, time_algo(problem, operands, algo, stream, options)});
    operands.workspace = Tensor();
    operands.split_counters = Tensor();
  }
  return times;
}

ConvTuneReport tune_convolutions(const std::vector<ConvProblem>& problems, ConvPlans& plans,
                                 Stream& stream, const ConvTunerOptions& options) {
  ConvTuneReport report;
  if (stream.device().is_cpu()) return report;
  const Clock::time_point start = Clock::now();
  const Fp32Math stream_math = stream.fp32_math();
  for (const ConvProblem& problem : problems) {
    if (plans.find(problem) != nullptr) continue;
    if (seconds_since(start) >= options.budget_seconds) {
      ++report.problems_skipped;
      continue;
    }
    stream.set_fp32_math(problem.math);
    const std::vector<ConvCandidateTime> times = time_conv_candidates(problem, stream, options);
    stream.set_fp32_math(stream_math);
    if (times.empty()) continue;
    // The first (the heuristic's) unless another is strictly faster.
    const auto best = std::min_element(times.begin(), times.end(),
                                       [](const ConvCandidateTime& a, const ConvCandidateTime& b) {
                                         return a.microseconds < b.microseconds;
                                       });
    plans.set(problem, {best->algo, best->microseconds});
    ++report.problems_tuned;
    report.candidates_timed += static_cast<int>(times.size());
  }
  stream.synchronize();
  report.seconds = seconds_since(start);
  return report;
}

}  // namespace engine::nn
