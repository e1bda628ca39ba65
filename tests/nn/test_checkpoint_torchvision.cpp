// A torchvision state_dict written by PyTorch loads: tools/make_checkpoint_golden.py records
// the header and SHA-256 digests of the safetensors file it wrote from torchvision's
// resnet18().state_dict() (tests/nn/golden/torchvision_resnet18_state_dict.safetensors, 17 KB
// for a 44.7 MB file); the data is the golden generator's, so the test rebuilds that file byte
// for byte, proves it by the digests, loads it, compares the logits with torchvision's, and
// checks that the engine writes the same bytes back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "checkpoint_test_model.h"
#include "golden_weights.h"
#include "nn/checkpoint.h"
#include "nn/safetensors.h"
#include "sha256.h"

#ifndef ENGINE_NN_GOLDEN_DIR
#error "ENGINE_NN_GOLDEN_DIR must name tests/nn/golden"
#endif

namespace engine::nn {
namespace {

using engine::testing::TempFolder;

TEST(Sha256, KnownAnswers) {
  const auto digest = [](const std::string& text) {
    return engine::testing::Sha256::hex(engine::testing::Sha256::of(
        {reinterpret_cast<const std::byte*>(text.data()), text.size()}));
  };
  EXPECT_EQ(digest(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}
// tools/make_checkpoint_golden.py records the header and SHA-256 digests of the safetensors
// file it wrote from torchvision's resnet18().state_dict(); the data is the golden generator's,
// so the test rebuilds the file byte for byte, proves it by the digests, and loads it.

constexpr int kCheckpointGoldenVersion = 1;
constexpr double kLogitsRelative = 1e-4;
constexpr double kTorchFactor = 4.0;

// make_checkpoint_golden.py's values of one state_dict tensor, in PyTorch's layout.
std::vector<std::byte> golden_state_bytes(const SafetensorsEntry& e, int64_t fc_in_features) {
  const int64_t n = shape_numel(e.shape);
  std::vector<std::byte> bytes(e.bytes());
  if (e.dtype == "I64") {
    const auto value = static_cast<int64_t>(engine::testing::fnv1a64(e.name) % 1000);
    std::memcpy(bytes.data(), &value, sizeof(value));
    return bytes;
  }
  double scale = 0.25, shift = 0.0;
  if (e.name.ends_with("running_mean")) {
    scale = 0.1;
  } else if (e.name.ends_with("running_var")) {
    shift = 1.0;
  } else if (e.shape.size() == 4) {
    scale = std::sqrt(6.0 / static_cast<double>(e.shape[0] * e.shape[2] * e.shape[3]));
  } else if (e.name.starts_with("fc.")) {
    scale = 1.0 / std::sqrt(static_cast<double>(fc_in_features));
  } else if (e.name.ends_with(".weight")) {
    shift = 1.0;
  }
  const std::vector<float> values = engine::testing::golden_values(e.name, n, scale, shift);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

class TorchvisionGolden {
 public:
  TorchvisionGolden()
      : path_(std::string(ENGINE_NN_GOLDEN_DIR) + "/torchvision_resnet18_state_dict.safetensors"),
        reader_(SafetensorsReader::open(path_)) {
    if (meta("magic") != "ENGINE-CHECKPOINT-GOLDEN" ||
        meta("version") != std::to_string(kCheckpointGoldenVersion)) {
      throw std::runtime_error(path_ + " is not an ENGINE-CHECKPOINT-GOLDEN v" +
                               std::to_string(kCheckpointGoldenVersion) +
                               " file; regenerate it: " + meta("regenerate"));
    }
  }
  std::string meta(const std::string& key) const {
    const auto found = reader_.metadata().find(key);
    return found == reader_.metadata().end() ? "?" : found->second;
  }
  std::vector<std::byte> tensor(const std::string& name) const {
    return reader_.read(reader_.at(name));
  }
  std::vector<double> f64(const std::string& name) const {
    const std::vector<std::byte> bytes = tensor(name);
    std::vector<double> values(bytes.size() / sizeof(double));
    std::memcpy(values.data(), bytes.data(), bytes.size());
    return values;
  }

 private:
  std::string path_;
  SafetensorsReader reader_;
};

// The state_dict file PyTorch wrote, rebuilt; fails the test when a byte differs.
std::vector<std::byte> rebuild_torch_state_dict(const TorchvisionGolden& golden) {
  const std::string header = golden.meta("state_dict_header");
  const auto total = static_cast<size_t>(std::stoull(golden.meta("state_dict_bytes")));
  std::vector<std::byte> file(total);
  for (int i = 0; i < 8; ++i)
    file[static_cast<size_t>(i)] = static_cast<std::byte>((header.size() >> (8 * i)) & 0xFF);
  std::memcpy(file.data() + 8, header.data(), header.size());
  const SafetensorsReader layout = SafetensorsReader::parse(file, "the rebuilt state_dict");
  const SafetensorsEntry& fc = layout.at("fc.weight");
  const std::vector<std::byte> digests = golden.tensor("tensor_sha256");
  EXPECT_EQ(digests.size(), layout.entries().size() * 32);
  for (size_t i = 0; i < layout.entries().size() && (i + 1) * 32 <= digests.size(); ++i) {
    const SafetensorsEntry& e = layout.entries()[i];
    const std::vector<std::byte> bytes = golden_state_bytes(e, fc.shape[1]);
    std::memcpy(file.data() + 8 + header.size() + e.begin, bytes.data(), bytes.size());
    engine::testing::Sha256::Digest recorded;
    std::memcpy(recorded.data(), digests.data() + 32 * i, 32);
    EXPECT_EQ(engine::testing::Sha256::hex(engine::testing::Sha256::of(bytes)),
              engine::testing::Sha256::hex(recorded))
        << e.name << ": the generator's bytes differ from those PyTorch wrote";
  }
  EXPECT_EQ(engine::testing::Sha256::hex(engine::testing::Sha256::of(file)),
            golden.meta("state_dict_sha256"));
  return file;
}

TEST(TorchvisionStateDict, LoadsTheFilePyTorchWroteAndWritesItBack) {
  const TorchvisionGolden golden;
  SCOPED_TRACE("torch " + golden.meta("torch") + ", torchvision " + golden.meta("torchvision"));
  const std::vector<std::byte> torch_file = rebuild_torch_state_dict(golden);
  ASSERT_FALSE(::testing::Test::HasFailure());
  const TempFolder folder;
  const std::string path = folder.file("torchvision_resnet18.safetensors");
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(torch_file.data()),
             static_cast<std::streamsize>(torch_file.size()));

  const CheckpointInfo info = read_checkpoint_info(path);
  EXPECT_FALSE(info.engine_checkpoint);
  EXPECT_EQ(info.arch, "resnet18");
  EXPECT_EQ(info.num_classes, 10);
  EXPECT_FALSE(info.has_momentum);
  EXPECT_EQ(checkpoint_arch(path), "resnet18");

  Stream stream;
  ResNet model("resnet18", {.num_classes = 10, .seed = 5});
  model.allocate(Device::cpu(), stream);
  const LoadedCheckpoint loaded = load_checkpoint(path, model, stream);
  EXPECT_TRUE(loaded.optimizer_buffers.empty());
  Sgd sgd(model.params(), engine::testing::checkpoint_sgd_config(), stream);
  load_optimizer_state(loaded, sgd, stream);
  EXPECT_FALSE(sgd.started());

  const int64_t batch = std::stoll(golden.meta("batch")),
                size = std::stoll(golden.meta("image_size"));
  model.setup({batch, size, size, 3}, DType::f32, stream);
  const std::vector<float> logits =
      engine::testing::eval_logits(model, engine::testing::golden_images(batch, size), stream);
  const std::vector<double> expected = golden.f64("eval_logits");
  ASSERT_EQ(logits.size(), expected.size());
  double sumsq = 0, worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    sumsq += expected[i] * expected[i];
    worst = std::max(worst, std::abs(logits[i] - expected[i]));
  }
  const double tolerance = std::max(kLogitsRelative * std::sqrt(sumsq / expected.size()),
                                    kTorchFactor * golden.f64("eval_logits:torch_f32_error")[0]);
  EXPECT_LE(worst, tolerance) << "the logits of the loaded state_dict differ from torchvision's";

  // Saved back, every tensor PyTorch wrote has the same bytes (and nothing else is there).
  const std::string again = folder.file("again.safetensors");
  save_checkpoint(again, model, {}, stream);
  const SafetensorsReader ours = SafetensorsReader::open(again);
  const SafetensorsReader theirs = SafetensorsReader::parse(torch_file, "PyTorch's state_dict");
  EXPECT_EQ(ours.entries().size(), theirs.entries().size());
  for (const SafetensorsEntry& e : theirs.entries()) {
    const SafetensorsEntry* mine = ours.find(e.name);
    ASSERT_NE(mine, nullptr) << e.name;
    EXPECT_EQ(mine->dtype + shape_str(mine->shape), e.dtype + shape_str(e.shape)) << e.name;
    EXPECT_TRUE(ours.read(*mine) == theirs.read(e)) << e.name << ": bytes differ from PyTorch's";
  }
}

}  // namespace
}  // namespace engine::nn
