// resnet18 and resnet50 against torchvision (tests/nn/golden/*.safetensors, written by
// tools/make_nn_goldens.py): with the same weights and images, one training step's logits,
// every parameter gradient, every BN running statistic and batch counter; then the losses,
// parameters and statistics after three SGD steps (momentum, nesterov, weight decay).
// Tensors are compared in torchvision's order and the first that diverges is named.
//
// The reference is torchvision run in float64, the exact answer for these weights. Our fp32
// result must be within a relative tolerance of the tensor's RMS, or within kTorchFactor
// times the error of PyTorch's own fp32 (stored per tensor: the largest of three runs that
// differ only in how they round, NCHW on 2 and 1 threads and channels_last) when that is
// larger: a network whose BatchNorms see few values per channel amplifies fp32 rounding,
// PyTorch's included, and the test holds the engine to the standard PyTorch meets. One run
// is one sample of that error: resnet50's layer4 gradients here miss float64 by 0.2% of
// their RMS in one PyTorch run and by up to 157% in another, as a ReLU near its kink flips or
// not. Held to one run, the engine's portable CPU paths (no AVX-512: OpenBLAS) put resnet50
// at 2.85 of its tolerance; held to three, 0.32 (and the AVX-512 paths lower). A label
// smoothing 1% off still fails both nets at 12-38x their tolerance.
//
// The first step's tensors are held to kStepRelative (1e-4). After the SGD steps the
// parameters have moved by fp32 rounding, and a ReLU or max-pool decision that sat within
// that distance of its kink may flip: the gradient then jumps by one pixel's contribution
// (measured: a 1.2e-7 change of conv1's weights moved its gradient by 2.8% of its RMS, in
// float64; after the third step conv1's gradient differed by 13% of its RMS). So the test
// compares no gradients after the first step, and holds the parameters and statistics after
// the steps to 1e-2 of their RMS: far below what a wrong momentum or nesterov rule gives
// (tens of percent of the update), while the losses stay within 1e-4. (Weight decay,
// 1e-5 of a weight per step here, is below what this test can see: the optimizer's own
// tests check it against a reference.) The first step can flip one too when our rounding
// changes: a 2026-12-01 draft of the padding-tap skip, which cut the forward's K passes
// differently, put resnet50 at 5.95 of its tolerance in layer4's BN gradients (0.54 before,
// and again once the skip kept every bit).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "golden_weights.h"
#include "nn/batchnorm2d.h"
#include "nn/cross_entropy.h"
#include "nn/resnet.h"
#include "nn/safetensors.h"
#include "nn/sgd.h"

#ifndef ENGINE_NN_GOLDEN_DIR
#error "ENGINE_NN_GOLDEN_DIR must name tests/nn/golden"
#endif

namespace engine::nn {
namespace {

constexpr int kGoldenVersion = 1;
constexpr double kStepRelative = 1e-4;
constexpr double kTrajectoryRelative = 1e-2;
constexpr double kTorchFactor = 4.0;

class Golden {
 public:
  explicit Golden(const std::string& file)
      : path_(std::string(ENGINE_NN_GOLDEN_DIR) + "/" + file),
        reader_(SafetensorsReader::open(path_)) {
    const auto& meta = reader_.metadata();
    const auto magic = meta.find("magic"), version = meta.find("version");
    if (magic == meta.end() || magic->second != "ENGINE-NN-GOLDEN" || version == meta.end() ||
        version->second != std::to_string(kGoldenVersion)) {
      throw std::runtime_error(path_ + " is not an ENGINE-NN-GOLDEN v" +
                               std::to_string(kGoldenVersion) +
                               " file; regenerate it: " + meta_value("regenerate"));
    }
  }
  std::string meta_value(const std::string& key) const {
    const auto found = reader_.metadata().find(key);
    return found == reader_.metadata().end() ? "?" : found->second;
  }
  bool has(const std::string& name) const { return reader_.find(name) != nullptr; }
  // Any F32 / F64 / I64 tensor, as doubles.
  std::vector<double> values(const std::string& name) const {
    const SafetensorsEntry& e = reader_.at(name);
    const std::vector<std::byte> bytes = reader_.read(e);
    std::vector<double> out;
    const auto decode = [&]<typename T>() {
      out.resize(bytes.size() / sizeof(T));
      for (size_t i = 0; i < out.size(); ++i) {
        T v;
        std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
        out[i] = static_cast<double>(v);
      }
    };
    if (e.dtype == "F32")
      decode.template operator()<float>();
    else if (e.dtype == "F64")
      decode.template operator()<double>();
    else if (e.dtype == "I64")
      decode.template operator()<int64_t>();
    else
      throw std::runtime_error(path_ + ": unexpected dtype " + e.dtype + " of " + name);
    return out;
  }
  const SafetensorsReader& reader() const { return reader_; }

 private:
  std::string path_;
  SafetensorsReader reader_;
};

// Collects the tensors that diverge, in comparison order; the first one names the failure.
class Divergences {
 public:
  // |actual_i - expected_i| <= tolerance for every i.
  void check_close(const std::string& name, const std::vector<double>& expected,
                   const std::vector<double>& actual, double tolerance) {
    ++checked_;
    if (expected.size() != actual.size()) {
      add(name, "size " + std::to_string(actual.size()) + ", expected " +
                    std::to_string(expected.size()));
      return;
    }
    double worst = 0;
    size_t worst_at = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      const double error = std::abs(actual[i] - expected[i]);
      if (!(error <= worst)) {
        worst = error;
        worst_at = i;
      }
    }
    if (!(worst <= tolerance)) {
      add(name, "element " + std::to_string(worst_at) + " is " + std::to_string(actual[worst_at]) +
                    ", expected " + std::to_string(expected[worst_at]) + " (error " +
                    std::to_string(worst) + ", tolerance " + std::to_string(tolerance) + ")");
    }
    worst_ratio_ = std::max(worst_ratio_, tolerance > 0 ? worst / tolerance : 0.0);
  }
  void report() const {
    std::printf("  %d checks, the worst at %.2f of its tolerance\n", checked_, worst_ratio_);
    if (!first_.empty()) {
      ADD_FAILURE() << failures_ << " of " << checked_ << " checks diverge; the first is "
                    << first_;
    }
  }

 private:
  void add(const std::string& name, const std::string& what) {
    if (failures_++ == 0) first_ = name + ": " + what;
  }
  int checked_ = 0, failures_ = 0;
  double worst_ratio_ = 0;
  std::string first_;
};

// The tolerance of a recorded tensor whose RMS is `rms` (see the header comment).
double tolerance_for(const Golden& golden, const std::string& key, double rms) {
  const std::string error_key = key + ":torch_f32_error";
  const double torch_error = golden.has(error_key) ? golden.values(error_key)[0] : 0.0;
  const double relative =
      key.starts_with("sgd.") && key != "sgd.losses" ? kTrajectoryRelative : kStepRelative;
  return std::max(relative * rms, kTorchFactor * torch_error);
}

// Our values (flat, engine layout `shape`) against a golden tensor: whole, or a digest
// (sums and sampled elements at PyTorch-order indices) for the large ones.
void check_tensor(const Golden& golden, const std::string& key, const Shape& shape,
                  const std::vector<float>& ours, Divergences& out) {
  if (!golden.has(key + ":sums")) {
    const std::vector<double> expected = golden.values(key);
    double sumsq = 0;
    for (double v : expected)
      sumsq += v * v;
    const double rms = expected.empty() ? 0 : std::sqrt(sumsq / expected.size());
    out.check_close(key, expected, {ours.begin(), ours.end()}, tolerance_for(golden, key, rms));
    return;
  }
  const std::vector<double> sums = golden.values(key + ":sums");
  const std::vector<double> index = golden.values(key + ":index");
  const std::vector<double> sample = golden.values(key + ":sample");
  double sum = 0, sumsq = 0;
  for (float v : ours) {
    sum += v;
    sumsq += double{v} * v;
  }
  const double n = static_cast<double>(ours.size());
  const double rms = std::sqrt(sums[1] / n);
  const double tolerance = tolerance_for(golden, key, rms);
  std::vector<double> picked;
  for (double j : index) {
    const auto t = static_cast<int64_t>(j);
    picked.push_back(
        ours[static_cast<size_t>(shape.size() == 4 ? testing::krsc_index_of_oihw(shape, t) : t)]);
  }
  out.check_close(key + " (sampled elements)", sample, picked, tolerance);
  // Errors of at most `tolerance` per element bound the sums' errors.
  out.check_close(key + " (sum)", {sums[0]}, {sum}, tolerance * n);
  out.check_close(key + " (sum of squares)", {sums[1]}, {sumsq},
                  tolerance * (2 * std::sqrt(sums[1] * n) + tolerance * n));
}

void check_state(const Golden& golden, ResNet& model, const std::string& prefix, bool grads,
                 Divergences& out, Stream& stream) {
  const ParameterSet& params = model.params();
  for (size_t id = 0; id < params.parameters().size(); ++id) {
    const ParameterInfo& p = params.parameters()[id];
    const auto pid = static_cast<ParameterId>(id);
    const Tensor t = grads ? params.grad(pid) : params.value(pid);
    check_tensor(golden, prefix + (grads ? "grad." : "param.") + p.name, p.shape,
                 t.to_floats(stream), out);
  }
  for (size_t id = 0; id < params.buffers().size(); ++id) {
    const BufferInfo& b = params.buffers()[id];
    check_tensor(golden, prefix + b.name, b.shape,
                 params.buffer(static_cast<BufferId>(id)).to_floats(stream), out);
  }
  for (const CounterInfo& c : params.counters()) {
    out.check_close(prefix + c.name, golden.values(prefix + c.name), {static_cast<double>(c.value)},
                    0);
  }
}

void expect_matches_torchvision(const std::string& file) {
  const Golden golden(file);
  const std::string arch = golden.meta_value("arch");
  const int64_t size = std::stoll(golden.meta_value("image_size"));
  const int64_t batch = std::stoll(golden.meta_value("batch"));
  const int64_t classes = std::stoll(golden.meta_value("classes"));
  SCOPED_TRACE(file + " (" + arch + ", " + std::to_string(size) + "px; torch " +
               golden.meta_value("torch") + ")");
  Stream stream;
  ResNet model(arch, {.num_classes = classes});
  model.allocate(Device::cpu(), stream);
  testing::set_golden_weights(model, stream);
  model.setup({batch, size, size, 3}, DType::f32, stream);
  const Tensor images = testing::golden_images(batch, size);
  std::vector<int32_t> label_values;
  for (double l : golden.values("labels"))
    label_values.push_back(static_cast<int32_t>(l));
  const Tensor labels = Tensor::from_ints({batch}, label_values);
  CrossEntropyLoss loss(std::stof(golden.meta_value("label_smoothing")));
  loss.setup(batch, classes, DType::f32, Device::cpu());

  Divergences out;
  std::vector<double> losses;
  ASSERT_EQ(golden.meta_value("sgd"),
            R"({"lr": 0.01, "momentum": 0.9, "nesterov": true, "weight_decay": 0.001})");
  SgdConfig config;
  config.lr = 0.01f;
  config.momentum = 0.9f;
  config.nesterov = true;
  config.weight_decay = 1e-3f;
  Sgd optimizer(model.params(), config, stream);
  for (int step = 0; step < 3; ++step) {
    Pass pass{stream, true, false, {}};
    model.params().zero_grad();
    const Tensor& logits = model.forward(images, pass);
    losses.push_back(loss.forward(logits, labels, stream).to_floats(stream)[0]);
    model.backward(loss.backward(stream), pass);
    if (step == 0) {
      check_tensor(golden, "step0.logits", logits.shape(), logits.to_floats(stream), out);
      check_state(golden, model, "step0.", true, out, stream);
    }
    optimizer.step(config.lr, stream);
  }
  const std::vector<double> expected_losses = golden.values("sgd.losses");
  out.check_close("sgd.losses", expected_losses, losses,
                  tolerance_for(golden, "sgd.losses", expected_losses[0]));
  check_state(golden, model, "sgd.", false, out, stream);
  out.report();
}

TEST(ResNetGolden, Resnet18MatchesTorchvision) {
  expect_matches_torchvision("resnet18_64px.safetensors");
}

TEST(ResNetGolden, Resnet50MatchesTorchvision) {
  expect_matches_torchvision("resnet50_64px.safetensors");
}

}  // namespace
}  // namespace engine::nn
