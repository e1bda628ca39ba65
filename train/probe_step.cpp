// probe_step: one training step's forward and backward of a checkpoint's model on one batch,
// with every layer's output and output gradient and every parameter gradient written out,
// so that tools/compare_step_with_torch.py can say which layer first leaves PyTorch's
// answer (and whether a ReLU that landed on the other side of zero explains it).
//
//   probe_step --checkpoint ck/last.safetensors
//              --batch-file dumps/step-0000675-rank-0.safetensors --out probe.safetensors
//
// The batch is a resnet_train --dump-batches file; the step is train mode (batch statistics;
// the running statistics are updated but not written), with no optimizer step. The output
// file, in PyTorch's layouts (NCHW activations, OIHW filters):
//   logits [n, classes], loss [] (the mean cross-entropy)
//   <layer>.output, <layer>.output_grad   for each of the model's top-level layers (conv1,
//                                         bn1 (with its ReLU), maxpool, layer1.0, ..., fc)
//   grad.<parameter>                      torchvision's names
//   __metadata__: arch, num_classes, layers (the layer names in order), checkpoint, batch,
//                 label_smoothing, device, precision
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "kernels/runtime.h"
#include "kernels/stream.h"
#include "nn/checkpoint.h"
#include "nn/cross_entropy.h"
#include "nn/resnet.h"
#include "nn/safetensors.h"
#include "train/common_flags.h"
#include "train/nchw_layout.h"

namespace engine::train {
namespace {

struct ProbeOptions {
  std::string checkpoint, batch_file, out, device = "cpu";
  nn::Precision precision;
  double label_smoothing = 0;
};

// The batch comes from the file, so there is no -b/--batch-size; its file was --batch before,
// which the benchmarks' batch size was called too.
cli::Command probe_command(ProbeOptions& o) {
  cli::Command command(
      "probe_step", "--checkpoint FILE --batch-file FILE --out FILE [flags]",
      "One training step's forward and backward of the checkpoint's model on a resnet_train "
      "--dump-batches file; writes every layer's output and output gradient and every parameter "
      "gradient (PyTorch's layouts) for tools/compare_step_with_torch.py.");
  command.text("--checkpoint", o.checkpoint, "FILE",
               "a resnet_train checkpoint or a torchvision state_dict");
  command.text("--batch-file", o.batch_file, "FILE",
               "a --dump-batches file (step-<step>-rank-<rank>.safetensors)");
  command.renamed("--batch", "--batch-file");
  command.text("--out", o.out, "FILE", "the safetensors file to write");
  command.number("--label-smoothing", o.label_smoothing, "CrossEntropyLoss label smoothing");
  cli::add_device(command, o.device);
  cli::add_precision(command, o.precision);
  return command;
}

void check(const ProbeOptions& o) {
  for (const auto& [flag, value] :
       {std::pair{"--checkpoint", &o.checkpoint}, std::pair{"--batch-file", &o.batch_file},
        std::pair{"--out", &o.out}}) {
    if (value->empty()) throw cli::UsageError(std::string(flag) + " FILE is required");
  }
  if (!(o.label_smoothing >= 0 && o.label_smoothing < 1)) {
    throw cli::UsageError("--label-smoothing must be in [0, 1)");
  }
}

// A dumped batch: NCHW images and labels, as the file holds them.
struct ProbeBatch {
  int64_t n = 0, channels = 0, height = 0, width = 0;
  std::vector<float> nhwc;
  std::vector<int32_t> labels;
};

ProbeBatch read_batch(const std::string& path) {
  const nn::SafetensorsReader reader = nn::SafetensorsReader::open(path);
  const nn::SafetensorsEntry& images = reader.at("images");
  const nn::SafetensorsEntry& labels = reader.at("labels");
  if (images.dtype != "F32" || images.shape.size() != 4 || labels.dtype != "I64" ||
      labels.shape.size() != 1 || labels.shape[0] != images.shape[0]) {
    fail(path + ": expected images F32 [n, 3, S, S] and labels I64 [n] (a --dump-batches file)");
  }
  ProbeBatch b;
  b.n = images.shape[0], b.channels = images.shape[1], b.height = images.shape[2],
  b.width = images.shape[3];
  std::vector<float> nchw(static_cast<size_t>(b.n * b.channels * b.height * b.width));
  reader.read(images, std::as_writable_bytes(std::span(nchw)));
  b.nhwc = nchw_to_nhwc(nchw, b.n, b.channels, b.height, b.width);
  std::vector<int64_t> wide(static_cast<size_t>(b.n));
  reader.read(labels, std::as_writable_bytes(std::span(wide)));
  b.labels.assign(wide.begin(), wide.end());
  return b;
}

// What is written: names, shapes and values, kept alive until the file is.
struct ProbeTensors {
  std::vector<std::string> names;
  std::vector<Shape> shapes;
  std::vector<std::vector<float>> values;

  void add(std::string name, Shape shape, std::vector<float> data) {
    names.push_back(std::move(name));
    shapes.push_back(std::move(shape));
    values.push_back(std::move(data));
  }
  // An activation in PyTorch's layout: NHWC [n, h, w, c] becomes NCHW; [n, f] stays.
  void add_activation(std::string name, const Tensor& t, Stream& stream) {
    std::vector<float> data = t.to_floats(stream);
    Shape shape = t.shape();
    if (shape.size() == 4) {
      data = nhwc_to_nchw(data, shape[0], shape[1], shape[2], shape[3]);
      shape = {shape[0], shape[3], shape[1], shape[2]};
    }
    add(std::move(name), std::move(shape), std::move(data));
  }
  std::vector<nn::SafetensorsTensor> entries() const {
    std::vector<nn::SafetensorsTensor> list;
    for (size_t i = 0; i < names.size(); ++i)
      list.push_back({names[i], "F32", shapes[i], values[i].data()});
    return list;
  }
};

int probe_main(const ProbeOptions& o) {
  const Device device = resolve_device(o.device);
  const DType dtype = o.precision.activations;
  cli::check_precision_device(o.precision, device);
  Stream stream(device);
  stream.set_fp32_math(o.precision.fp32_math);
  const std::string arch = nn::checkpoint_arch(o.checkpoint);
  const nn::CheckpointInfo info = nn::read_checkpoint_info(o.checkpoint);
  nn::ResNet model(arch, {.num_classes = info.num_classes});
  // Each top-level layer's output gradient as PyTorch has it: the fusions inside the blocks,
  // not full's across them, where a block passes back a gradient gated by the ReLU of the
  // block before (nn/batchnorm_fusion.h).
  model.set_fusion(nn::BatchNormFusion::block);
  model.allocate(device, stream);
  nn::load_checkpoint(o.checkpoint, model, stream);

  const ProbeBatch batch = read_batch(o.batch_file);
  model.setup({batch.n, batch.height, batch.width, batch.channels}, dtype, stream);
  nn::CrossEntropyLoss loss(static_cast<float>(o.label_smoothing));
  loss.setup(batch.n, info.num_classes, dtype, device);
  const Tensor images =
      Tensor::from_floats({batch.n, batch.height, batch.width, batch.channels}, batch.nhwc, dtype)
          .to(device, stream);
  const Tensor labels = Tensor::from_ints({batch.n}, batch.labels).to(device, stream);

  // The top-level layers one by one, as ResNet::forward and backward chain them, keeping
  // each one's output and the gradient it is given.
  std::vector<nn::Layer*> layers;
  model.layers().for_each_child([&](nn::Layer& layer) { layers.push_back(&layer); });
  ProbeTensors out;
  nn::Pass pass{stream, true, false, {}};
  model.params().zero_grad();
  const Tensor* h = &images;
  std::string layer_names;
  for (nn::Layer* layer : layers) {
    h = &layer->forward(*h, pass);
    out.add_activation(std::string(layer->name()) + ".output", *h, stream);
    if (!layer_names.empty()) layer_names += ',';
    layer_names += layer->name();
  }
  out.add_activation("logits", *h, stream);
  const float loss_value = loss.forward(*h, labels, stream).to_floats(stream)[0];
  out.add("loss", {}, {loss_value});
  const Tensor* grad = &loss.backward(stream);
  for (size_t i = layers.size(); i-- > 0;) {
    out.add_activation(std::string(layers[i]->name()) + ".output_grad", *grad, stream);
    grad = &layers[i]->backward(*grad, pass);
  }
  const std::vector<float> grads = model.params().flat_grads().to_floats(stream);
  for (const nn::ParameterInfo& p : model.params().parameters()) {
    out.add("grad." + p.name, nn::torch_shape(p), nn::to_torch_layout(p, grads.data() + p.offset));
  }
  const std::map<std::string, std::string> metadata = {
      {"arch", arch},           {"num_classes", std::to_string(info.num_classes)},
      {"layers", layer_names},  {"checkpoint", o.checkpoint},
      {"batch", o.batch_file},  {"label_smoothing", std::to_string(o.label_smoothing)},
      {"device", device.str()}, {"precision", std::string(nn::precision_name(o.precision))},
  };
  nn::write_safetensors(o.out, out.entries(), metadata);
  std::printf("probe_step: %s, batch of %lld, loss %.7g; wrote %s\n", arch.c_str(),
              static_cast<long long>(batch.n), static_cast<double>(loss_value), o.out.c_str());
  return 0;
}

}  // namespace
}  // namespace engine::train

int main(int argc, char** argv) {
  using namespace engine::train;
  return engine::cli::run_program<ProbeOptions>(argc, argv, probe_command, check, probe_main);
}
