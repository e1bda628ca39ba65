// nn/checkpoint.h: a round trip restores every byte of a trained model and its optimizer (and
// so the next step); mismatched files are refused with every difference named at once; the
// metadata round trips and its errors name the file and key; a GPU model round trips too.
// (A state_dict written by PyTorch: test_checkpoint_torchvision.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint_test_model.h"
#include "golden_weights.h"
#include "kernels/error.h"
#include "kernels/runtime.h"
#include "nn/adamw.h"
#include "nn/checkpoint.h"
#include "nn/lars.h"
#include "nn/safetensors.h"
#include "tests/error_text.h"

namespace engine::nn {
namespace {

using engine::testing::prepare;
using engine::testing::TempFolder;

// "(no error)" when body throws none.
template <typename Body>
std::string error_of(Body&& body) {
  return engine::testing::error_of(body, "(no error)");
}

using engine::testing::contains;

::testing::AssertionResult same_bits(const std::vector<float>& expected,
                                     const std::vector<float>& actual) {
  if (expected.size() != actual.size())
    return ::testing::AssertionFailure()
           << actual.size() << " values, expected " << expected.size();
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::memcmp(&expected[i], &actual[i], sizeof(float)) != 0) {
      return ::testing::AssertionFailure() << "element " << i << " is " << actual[i]
                                           << ", expected " << expected[i] << " (bit for bit)";
    }
  }
  return ::testing::AssertionSuccess();
}

std::vector<int64_t> counters_of(const ResNet& model) {
  std::vector<int64_t> values;
  for (const CounterInfo& c : model.params().counters())
    values.push_back(c.value);
  return values;
}

// A checkpoint's tensors held in memory, to edit and write back.
struct EditableTensor {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::vector<std::byte> data;
};
struct EditableFile {
  std::vector<EditableTensor> tensors;
  std::map<std::string, std::string> metadata;
  EditableTensor& at(const std::string& name) {
    for (EditableTensor& t : tensors)
      if (t.name == name) return t;
    throw std::runtime_error("no tensor " + name);
  }
  void erase(const std::string& name) {
    std::erase_if(tensors, [&](const EditableTensor& t) { return t.name == name; });
  }
};

EditableFile read_editable(const std::string& path) {
  const SafetensorsReader reader = SafetensorsReader::open(path);
  EditableFile file{{}, reader.metadata()};
  for (const SafetensorsEntry& e : reader.entries())
    file.tensors.push_back({e.name, e.dtype, e.shape, reader.read(e)});
  return file;
}

void write_editable(const std::string& path, const EditableFile& file) {
  std::vector<SafetensorsTensor> tensors;
  for (const EditableTensor& t : file.tensors)
    tensors.push_back({t.name, t.dtype, t.shape, t.data.data()});
  write_safetensors(path, tensors, file.metadata);
}

// Save a trained model and its optimizer, load both into fresh ones: every byte of the
// parameters, statistics, counters and momentum is back, the logits are bit-identical, and
// the next training step is too.
TEST(CheckpointRoundTrip, RestoresEveryByteAndTheNextStep) {
  const TempFolder folder;
  const std::string path = folder.file("trained.safetensors");
  Stream stream;
  const SgdConfig config = engine::testing::checkpoint_sgd_config();
  ResNet saved("resnet18", {.num_classes = engine::testing::kCheckpointClasses});
  prepare(saved, stream);
  engine::testing::set_golden_weights(saved, stream);
  Sgd saved_sgd(saved.params(), config, stream);
  engine::testing::train_step(saved, saved_sgd, stream);
  const CheckpointState state = engine::testing::sample_checkpoint_state();
  save_checkpoint(path, saved, saved_sgd, state, stream);

  ResNet loaded("resnet18", {.num_classes = engine::testing::kCheckpointClasses, .seed = 7});
  prepare(loaded, stream);
  Sgd loaded_sgd(loaded.params(), config, stream);
  ASSERT_FALSE(same_bits(saved.params().flat_values().to_floats(stream),
                         loaded.params().flat_values().to_floats(stream)));
  const LoadedCheckpoint checkpoint = load_checkpoint(path, loaded, stream);
  load_optimizer_state(checkpoint, loaded_sgd, stream);

  EXPECT_TRUE(same_bits(saved.params().flat_values().to_floats(stream),
                        loaded.params().flat_values().to_floats(stream)));
  EXPECT_TRUE(same_bits(saved.params().flat_buffers().to_floats(stream),
                        loaded.params().flat_buffers().to_floats(stream)));
  EXPECT_EQ(counters_of(saved), counters_of(loaded));
  EXPECT_EQ(counters_of(loaded), std::vector<int64_t>(loaded.params().counters().size(), 1));
  EXPECT_TRUE(loaded_sgd.started());
  EXPECT_TRUE(same_bits(saved_sgd.momentum_buffer().to_floats(stream),
                        loaded_sgd.momentum_buffer().to_floats(stream)));

  const CheckpointInfo& info = checkpoint.info;
  EXPECT_TRUE(info.engine_checkpoint);
  EXPECT_EQ(info.arch, "resnet18");
  EXPECT_EQ(info.num_classes, engine::testing::kCheckpointClasses);
  EXPECT_EQ(info.state, state);
  EXPECT_TRUE(info.has_momentum);
  EXPECT_TRUE(info.optimizer_started);
  ASSERT_TRUE(info.optimizer_config.has_value());
  EXPECT_EQ(info.optimizer_config->lr, config.lr);
  EXPECT_EQ(info.optimizer_config->momentum, config.momentum);
  EXPECT_EQ(info.optimizer_config->weight_decay, config.weight_decay);
  EXPECT_EQ(info.optimizer_config->decay_norm_and_bias, config.decay_norm_and_bias);
  EXPECT_EQ(info.metadata.at("format"), kCheckpointFormat);
  EXPECT_EQ(info.metadata.at("engine_version"), kEngineVersion);
  EXPECT_EQ(checkpoint_arch(path), "resnet18");

  const Tensor images = engine::testing::checkpoint_images();
  EXPECT_TRUE(same_bits(engine::testing::eval_logits(saved, images, stream),
                        engine::testing::eval_logits(loaded, images, stream)));
  engine::testing::train_step(saved, saved_sgd, stream);
  engine::testing::train_step(loaded, loaded_sgd, stream);
  EXPECT_TRUE(same_bits(saved.params().flat_values().to_floats(stream),
                        loaded.params().flat_values().to_floats(stream)))
      << "the step after the resume differs";
}

// AdamW's and LARS's state (their buffers as "optimizer.<state>.<name>", AdamW's step count)
// round trips, so the step after the resume is the same bits; a checkpoint of one optimizer
// does not load into another.
TEST(CheckpointRoundTrip, AdamWAndLarsResumeBitForBit) {
  const TempFolder folder;
  Stream stream;
  const auto round_trip = [&](auto make_optimizer, float lr, const std::string& name) {
    SCOPED_TRACE(name);
    const std::string path = folder.file(name + ".safetensors");
    ResNet saved("resnet18", {.num_classes = engine::testing::kCheckpointClasses});
    prepare(saved, stream);
    auto saved_opt = make_optimizer(saved);
    engine::testing::train_step(saved, *saved_opt, stream, lr);
    engine::testing::train_step(saved, *saved_opt, stream, lr);
    save_checkpoint(path, saved, *saved_opt, {}, stream);
    ResNet loaded("resnet18", {.num_classes = engine::testing::kCheckpointClasses, .seed = 7});
    prepare(loaded, stream);
    auto loaded_opt = make_optimizer(loaded);
    const LoadedCheckpoint checkpoint = load_checkpoint(path, loaded, stream);
    EXPECT_EQ(checkpoint.info.optimizer, name);
    load_optimizer_state(checkpoint, *loaded_opt, stream);
    EXPECT_TRUE(loaded_opt->started());
    engine::testing::train_step(saved, *saved_opt, stream, lr);
    engine::testing::train_step(loaded, *loaded_opt, stream, lr);
    EXPECT_TRUE(same_bits(saved.params().flat_values().to_floats(stream),
                          loaded.params().flat_values().to_floats(stream)))
        << "the step after the resume differs";
    Sgd sgd(loaded.params(), engine::testing::checkpoint_sgd_config(), stream);
    EXPECT_NE(error_of([&] {
                load_optimizer_state(checkpoint, sgd, stream);
              }).find("holds the state of optimizer " + name + ", this run's is sgd"),
              std::string::npos);
  };
  round_trip(
      [&](ResNet& model) {
        return std::make_unique<AdamW>(
            model.params(), AdamWConfig{.lr = 1e-3f, .decay_norm_and_bias = false}, stream);
      },
      1e-3f, "adamw");
  round_trip(
      [&](ResNet& model) {
        return std::make_unique<Lars>(model.params(), LarsConfig{.lr = 1.f}, stream);
      },
      1.f, "lars");
  const SafetensorsReader reader = SafetensorsReader::open(folder.file("adamw.safetensors"));
  EXPECT_NE(reader.find("optimizer.exp_avg_sq.fc.weight"), nullptr);
  EXPECT_EQ(reader.metadata().at("optimizer.steps"), "2");
}

// The file lists torchvision's state_dict in its order, with its shapes and dtypes.
TEST(CheckpointRoundTrip, WritesTorchvisionsNamesShapesAndDtypes) {
  const TempFolder folder;
  const std::string path = folder.file("model.safetensors");
  Stream stream;
  ResNet model("resnet18", {.num_classes = engine::testing::kCheckpointClasses});
  model.allocate(Device::cpu(), stream);
  save_checkpoint(path, model, {}, stream);
  const SafetensorsReader reader = SafetensorsReader::open(path);
  std::vector<std::string> first;
  for (size_t i = 0; i < 7; ++i)
    first.push_back(reader.entries()[i].name + " " + reader.entries()[i].dtype + " " +
                    shape_str(reader.entries()[i].shape));
  EXPECT_EQ(first,
            (std::vector<std::string>{"conv1.weight F32 [64, 3, 7, 7]", "bn1.weight F32 [64]",
                                      "bn1.bias F32 [64]", "bn1.running_mean F32 [64]",
                                      "bn1.running_var F32 [64]", "bn1.num_batches_tracked I64 []",
                                      "layer1.0.conv1.weight F32 [64, 64, 3, 3]"}));
  EXPECT_EQ(reader.entries().back().name, "fc.bias");
  EXPECT_EQ(reader.entries().size(), 122u);  // len(torchvision resnet18().state_dict())
  const CheckpointInfo info = read_checkpoint_info(path);
  EXPECT_FALSE(info.has_momentum);
  EXPECT_FALSE(info.optimizer_config.has_value());
  EXPECT_EQ(info.state, CheckpointState{});
}

TEST(CheckpointMismatch, TenClassesIntoAThousandNamesTheFcShapes) {
  const TempFolder folder;
  const std::string path = folder.file("ten.safetensors");
  Stream stream;
  ResNet ten("resnet18", {.num_classes = 10});
  ten.allocate(Device::cpu(), stream);
  save_checkpoint(path, ten, {}, stream);
  ResNet thousand("resnet18", {.num_classes = 1000});
  thousand.allocate(Device::cpu(), stream);
  const std::vector<float> before = thousand.params().flat_values().to_floats(stream);
  EXPECT_EQ(error_of([&] { load_checkpoint(path, thousand, stream); }),
            path +
                " does not fit resnet18 (1000 classes); it holds resnet18 (10 classes): "
                "fc.weight is F32 [10, 512], expected [1000, 512]; fc.bias is F32 [10], "
                "expected [1000]");
  EXPECT_TRUE(same_bits(before, thousand.params().flat_values().to_floats(stream)))
      << "a refused checkpoint changed the model";
}

// Fine-tuning (--pretrained): a 10-class checkpoint with its momentum into a 3-class model
// loads every tensor but the classifier, which keeps the model's own initial values; with the
// same class count the head loads too; without new_head the mismatch is refused as before.
TEST(CheckpointPretrained, AnotherClassCountKeepsTheModelsOwnHead) {
  const TempFolder folder;
  const std::string path = folder.file("ten.safetensors");
  Stream stream;
  ResNet ten("resnet18", {.num_classes = 10, .seed = 5});
  prepare(ten, stream);
  Sgd sgd(ten.params(), engine::testing::checkpoint_sgd_config(), stream);
  engine::testing::train_step(ten, sgd, stream);
  save_checkpoint(path, ten, sgd, {}, stream);
  ResNet three("resnet18", {.num_classes = 3, .seed = 9});
  three.allocate(Device::cpu(), stream);
  const std::vector<float> initial = three.params().flat_values().to_floats(stream);
  EXPECT_THROW(load_checkpoint(path, three, stream), Error);
  const LoadedCheckpoint loaded = load_checkpoint(path, three, stream, {.new_head = true});
  EXPECT_TRUE(loaded.new_head);
  const std::vector<float> trained = ten.params().flat_values().to_floats(stream);
  const std::vector<float> now = three.params().flat_values().to_floats(stream);
  int heads = 0, bodies = 0;
  for (const ParameterInfo& p : three.params().parameters()) {
    const bool head = p.name.starts_with("fc.");
    const float* expected = head ? initial.data() + p.offset : nullptr;
    if (!head) {
      const ParameterInfo* same = nullptr;
      for (const ParameterInfo& q : ten.params().parameters())
        if (q.name == p.name) same = &q;
      ASSERT_NE(same, nullptr) << p.name;
      expected = trained.data() + same->offset;
    }
    EXPECT_EQ(std::memcmp(now.data() + p.offset, expected, p.numel() * sizeof(float)), 0)
        << p.name << (head ? ": the model's own initial values" : ": the file's");
    (head ? heads : bodies) += 1;
  }
  EXPECT_EQ(heads, 2);
  EXPECT_EQ(bodies, 60);
  EXPECT_EQ(three.params().flat_buffers().to_floats(stream),
            ten.params().flat_buffers().to_floats(stream))
      << "BatchNorm's running statistics come from the file";
  ResNet ten_again("resnet18", {.num_classes = 10, .seed = 9});
  ten_again.allocate(Device::cpu(), stream);
  EXPECT_FALSE(load_checkpoint(path, ten_again, stream, {.new_head = true}).new_head);
  EXPECT_TRUE(same_bits(trained, ten_again.params().flat_values().to_floats(stream)));
}

TEST(CheckpointMismatch, ListsEveryDifferenceAtOnce) {
  const TempFolder folder;
  const std::string good = folder.file("good.safetensors"), bad = folder.file("bad.safetensors");
  Stream stream;
  ResNet model("resnet18", {.num_classes = 10});
  model.allocate(Device::cpu(), stream);
  Sgd sgd(model.params(), engine::testing::checkpoint_sgd_config(), stream);
  save_checkpoint(good, model, sgd, {}, stream);
  EditableFile file = read_editable(good);
  file.at("layer1.0.conv1.weight").name = "layer1.0.conv1.weights";
  file.erase("bn1.running_var");
  file.erase("optimizer.momentum_buffer.fc.bias");
  file.at("layer2.0.bn1.num_batches_tracked").dtype = "F64";
  file.at("conv1.weight").shape = {64, 7, 7, 3};
  file.tensors.push_back({"layer9.bias", "F32", {1}, std::vector<std::byte>(4)});
  write_editable(bad, file);
  EXPECT_EQ(error_of([&] { load_checkpoint(bad, model, stream); }),
            bad +
                " does not fit resnet18 (10 classes): conv1.weight is F32 [64, 7, 7, 3], "
                "expected [64, 3, 7, 7]; layer2.0.bn1.num_batches_tracked is F64 [], expected "
                "I64 []; missing (3): bn1.running_var, layer1.0.conv1.weight, "
                "optimizer.momentum_buffer.fc.bias; unexpected (2): 'layer1.0.conv1.weights', "
                "'layer9.bias'");
}

TEST(CheckpointMismatch, NamesAnotherArch) {
  const TempFolder folder;
  const std::string path = folder.file("resnet34.safetensors");
  Stream stream;
  ResNet resnet34("resnet34", {.num_classes = 10});
  resnet34.allocate(Device::cpu(), stream);
  save_checkpoint(path, resnet34, {}, stream);
  EXPECT_EQ(checkpoint_arch(path), "resnet34");
  ResNet resnet18("resnet18", {.num_classes = 10});
  resnet18.allocate(Device::cpu(), stream);
  const std::string error = error_of([&] { load_checkpoint(path, resnet18, stream); });
  EXPECT_TRUE(contains(error, path + " does not fit resnet18 (10 classes); it holds resnet34 "
                                     "(10 classes): unexpected (96): 'layer1.2.conv1.weight', "));
  // 8 blocks of 12 tensors more than resnet18; the first 64 names are listed.
  EXPECT_TRUE(contains(error, "'layer3.4.bn1.running_mean', ... (32 more)"));
}

// Metadata-only files: the header is all read_checkpoint_info looks at.
std::string info_error(const TempFolder& folder, std::map<std::string, std::string> metadata) {
  const std::string path = folder.file("meta.safetensors");
  write_safetensors(path, {}, metadata);
  return error_of([&] { read_checkpoint_info(path); });
}

TEST(CheckpointMetadata, ErrorsNameTheFileAndKey) {
  const TempFolder folder;
  const std::string path = folder.file("meta.safetensors");
  const std::map<std::string, std::string> good = {{"format", "resnet-engine-checkpoint"},
                                                   {"format_version", "1"},
                                                   {"arch", "resnet18"},
                                                   {"num_classes", "10"}};
  const auto with = [&](const std::string& key, const std::string& value) {
    auto m = good;
    m[key] = value;
    return m;
  };
  EXPECT_EQ(info_error(folder, good), "(no error)");
  EXPECT_EQ(info_error(folder, with("format", "other")),
            path +
                ": checkpoint metadata \"format\" is 'other', expected "
                "\"resnet-engine-checkpoint\"");
  EXPECT_EQ(info_error(folder, with("format_version", "2")),
            path + ": checkpoint format version 2 (engine ?); this engine reads versions 1 to 1");
  EXPECT_EQ(info_error(folder, with("epoch", "12x")),
            path + ": checkpoint metadata \"epoch\" is '12x', expected an integer");
  EXPECT_EQ(info_error(folder, with("classes", "[1]")),
            path + ": checkpoint metadata \"classes\" is '[1]', expected a JSON list of strings");
  EXPECT_TRUE(contains(info_error(folder, with("classes", "[\"a\"")),
                       path + ": checkpoint metadata \"classes\": bad JSON at byte 4"));
  EXPECT_EQ(info_error(folder, with("normalize_mean", "0.5,,0.2")),
            path +
                ": checkpoint metadata \"normalize_mean\" is '0.5,,0.2', expected a "
                "comma-separated list of numbers");
  auto sgd = with("optimizer", "sgd");
  sgd["optimizer.started"] = "yes";
  EXPECT_EQ(info_error(folder, sgd),
            path + ": checkpoint metadata \"optimizer.started\" is 'yes', expected true or false");
  auto no_arch = good;
  no_arch.erase("arch");
  EXPECT_EQ(info_error(folder, no_arch), path + ": checkpoint metadata lacks \"arch\"");
}

TEST(CheckpointMetadata, PlainStateDictsAndStrangers) {
  const TempFolder folder;
  const std::string text = folder.file("notes.txt");
  std::ofstream(text) << "not a checkpoint";
  EXPECT_TRUE(contains(error_of([&] { read_checkpoint_info(text); }), text + ": "));
  const std::string empty = folder.file("empty.safetensors");
  write_safetensors(empty, {});
  EXPECT_FALSE(read_checkpoint_info(empty).engine_checkpoint);
  EXPECT_EQ(read_checkpoint_info(empty).arch, "");
  EXPECT_TRUE(contains(error_of([&] { checkpoint_arch(empty); }),
                       empty + ": neither its metadata nor its tensor names identify a ResNet "
                               "(resnet18, resnet34, resnet50, resnet101, resnet152)"));
}

// A model on the GPU saves and loads through host memory: CPU -> file -> GPU -> file gives
// the same tensors.
TEST(CheckpointCuda, GpuModelRoundTripsThroughTheSameFile) {
  if (cuda_device_count() == 0)
    GTEST_SKIP() << "no usable CUDA device: " << cuda_unavailable_reason();
  const TempFolder folder;
  const std::string from_cpu = folder.file("cpu.safetensors"),
                    from_gpu = folder.file("gpu.safetensors");
  Stream host;
  ResNet cpu_model("resnet18", {.num_classes = 10});
  prepare(cpu_model, host);
  engine::testing::set_golden_weights(cpu_model, host);
  Sgd cpu_sgd(cpu_model.params(), engine::testing::checkpoint_sgd_config(), host);
  engine::testing::train_step(cpu_model, cpu_sgd, host);
  save_checkpoint(from_cpu, cpu_model, cpu_sgd, {}, host);

  Stream gpu(Device::cuda(0));
  ResNet gpu_model("resnet18", {.num_classes = 10, .seed = 3});
  gpu_model.allocate(Device::cuda(0), gpu);
  Sgd gpu_sgd(gpu_model.params(), engine::testing::checkpoint_sgd_config(), gpu);
  load_optimizer_state(load_checkpoint(from_cpu, gpu_model, gpu), gpu_sgd, gpu);
  EXPECT_EQ(counters_of(gpu_model), counters_of(cpu_model));
  save_checkpoint(from_gpu, gpu_model, gpu_sgd, {}, gpu);
  const SafetensorsReader a = SafetensorsReader::open(from_cpu),
                          b = SafetensorsReader::open(from_gpu);
  ASSERT_EQ(a.entries().size(), b.entries().size());
  for (const SafetensorsEntry& e : a.entries())
    EXPECT_TRUE(a.read(e) == b.read(b.at(e.name))) << e.name;
}

}  // namespace
}  // namespace engine::nn
