// The loader: batches independent of the worker count, equal to the single-sample pipeline,
// resumable mid-epoch, bad files skipped with one warning and counted; the CUDA path when a
// GPU is present.
#include <gtest/gtest.h>

#if ENGINE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/check_cuda.h"
#endif

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <future>
#include <map>
#include <string>
#include <tuple>

#include "data/batch_keeper.h"
#include "data/file_io.h"
#include "data/loader.h"
#include "data/sample_processor.h"
#include "data/warnings.h"
#include "kernels/ops/copy.h"
#include "kernels/runtime.h"
#include "tests/data/test_images.h"

namespace engine::data {
namespace {

namespace fs = std::filesystem;

struct Collected {
  std::vector<std::vector<float>> images;  // per batch
  std::vector<std::vector<int32_t>> labels;
  std::vector<std::vector<int64_t>> indices;
  std::vector<std::vector<float>> targets;
  EpochSummary summary;
};

// 3 classes, 18 good images in five formats and sizes, and 2 bad files.
class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* classes[] = {"ant", "bee", "cat"};
    for (int c = 0; c < 3; ++c) {
      const fs::path dir = root_.path() / classes[c];
      for (int i = 0; i < 6; ++i) {
        const RgbImage picture = testing::make_test_picture(40 + 13 * i, 90 - 7 * i, c * 6 + i);
        const std::string stem = dir / ("img" + std::to_string(i));
        switch (i % 5) {
          case 0:
            testing::write_file(stem + ".jpg", testing::encode_jpeg(picture));
            break;
          case 1:
            testing::write_file(stem + ".png", testing::encode_png(picture));
            break;
          case 2:
            testing::write_file(stem + ".bmp", testing::encode_bmp(picture));
            break;
          case 3:
            testing::write_file(stem + ".webp", testing::encode_webp(picture, false));
            break;
          default:
            testing::write_file(stem + ".tif", testing::encode_tiff(picture, stem + ".tif"));
        }
      }
    }
    testing::write_file(root_.path() / "bee" / "empty.jpg", {});
    testing::write_file(root_.path() / "cat" / "text.png", {'n', 'o', 'p', 'e'});
    dataset_.emplace(ImageFolder::scan(root_.path().string()));
    config_.batch_size = 4;
    config_.transform.output_size = 24;
    config_.seed = 11;
    warnings_.emplace();
  }
  void TearDown() override { warnings_.reset(); }

  std::vector<int64_t> epoch_indices(int64_t epoch) const {
    DistributedSampler sampler(static_cast<int64_t>(dataset_->size()), 1, 0, true, config_.seed);
    sampler.set_epoch(epoch);
    return sampler.indices();
  }

  Collected run_epoch(Loader& loader, int64_t epoch, int64_t first_batch = 0) const {
    loader.start_epoch(epoch, epoch_indices(epoch), first_batch);
    Collected out;
    Stream stream;
    while (std::optional<Batch> batch = loader.next()) {
      EXPECT_EQ(batch->images.dim(), 4);
      EXPECT_EQ(batch->images.size(0), static_cast<int64_t>(batch->labels.size()));
      out.images.push_back(batch->images.to_floats(stream));
      out.labels.push_back(batch->labels);
      out.indices.push_back(batch->indices);
      out.targets.push_back(batch->targets);
    }
    out.summary = loader.summary();
    return out;
  }

  testing::TempDir root_;
  std::optional<ImageFolder> dataset_;
  LoaderConfig config_;
  std::optional<testing::CapturedWarnings> warnings_;  // from the end of SetUp
};

TEST_F(LoaderTest, BatchesDoNotDependOnTheWorkerCount) {
  config_.workers = 1;
  Loader one(*dataset_, config_);
  config_.workers = 3;
  config_.prefetch_batches = 1;
  Loader three(*dataset_, config_);
  for (int64_t epoch : {0, 1}) {
    const Collected a = run_epoch(one, epoch);
    const Collected b = run_epoch(three, epoch);
    ASSERT_EQ(a.images.size(), 5u) << "20 files in batches of 4";
    EXPECT_EQ(a.images, b.images);
    EXPECT_EQ(a.labels, b.labels);
    EXPECT_EQ(a.indices, b.indices);
  }
}

TEST_F(LoaderTest, EverySampleEqualsTheSinglePipelineWithItsOwnRandomStream) {
  config_.workers = 2;
  Loader loader(*dataset_, config_);
  const Collected epoch0 = run_epoch(loader, 0);
  SampleProcessor processor(config_.transform, config_.limits);
  const size_t values = static_cast<size_t>(processor.values_per_sample());
  std::vector<float> expected(values);
  std::vector<uint8_t> bytes;
  for (size_t b = 0; b < epoch0.indices.size(); ++b) {
    for (size_t s = 0; s < epoch0.indices[b].size(); ++s) {
      const int64_t index = epoch0.indices[b][s];
      EXPECT_EQ(epoch0.labels[b][s], dataset_->label(static_cast<size_t>(index)));
      read_file(dataset_->path(static_cast<size_t>(index)), bytes);
      SampleRandom random(config_.seed, 0, static_cast<uint64_t>(index));
      processor.process(bytes, random, DType::f32, expected.data());
      ASSERT_EQ(std::memcmp(&epoch0.images[b][s * values], expected.data(), values * 4), 0)
          << "batch " << b << " sample " << s;
    }
  }
  const Collected epoch1 = run_epoch(loader, 1);
  EXPECT_NE(epoch0.images, epoch1.images) << "a new epoch reshuffles and re-augments";
}

TEST_F(LoaderTest, BadFilesAreSkippedWithOneWarningEachAndCounted) {
  Loader loader(*dataset_, config_);
  for (int64_t epoch : {0, 1}) {
    const Collected collected = run_epoch(loader, epoch);
    EXPECT_EQ(collected.summary.samples, 18);
    EXPECT_EQ(collected.summary.skipped, 2);
    EXPECT_EQ(collected.summary.batches, 5);
  }
  std::vector<std::string>& warnings = warnings_->lines;
  ASSERT_EQ(warnings.size(), 2u) << "once per file, not once per epoch";
  std::sort(warnings.begin(), warnings.end());
  EXPECT_NE(warnings[0].find("bee/empty.jpg: empty file"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("cat/text.png: not a recognised image format"), std::string::npos)
      << warnings[1];
}

TEST_F(LoaderTest, TrainingRefillsSkippedFilesWithTheNextSamplesOfTheEpoch) {
  config_.refill_skipped = true;
  config_.workers = 2;
  Loader loader(*dataset_, config_);
  const Collected collected = run_epoch(loader, 0);
  EXPECT_EQ(collected.summary.skipped, 2);
  EXPECT_EQ(collected.summary.samples, 20) << "every batch keeps its size";
  const std::vector<int64_t> order = epoch_indices(0);
  for (size_t b = 0; b < collected.indices.size(); ++b) {
    ASSERT_EQ(collected.indices[b].size(), 4u) << "batch " << b;
    // The readable samples of the batch in order, then the first readable ones after it.
    std::vector<int64_t> expected;
    for (size_t k = 0; expected.size() < 4; ++k) {
      const int64_t index = order[(4 * b + k) % order.size()];
      const std::string name = dataset_->path(static_cast<size_t>(index));
      if (name.ends_with("empty.jpg") || name.ends_with("text.png")) continue;
      expected.push_back(index);
    }
    EXPECT_EQ(collected.indices[b], expected) << "batch " << b;
    for (size_t s = 0; s < expected.size(); ++s)
      EXPECT_EQ(collected.labels[b][s], dataset_->label(static_cast<size_t>(expected[s])));
  }
  config_.workers = 1;
  Loader one(*dataset_, config_);
  EXPECT_EQ(run_epoch(one, 0).images, collected.images) << "refills do not depend on workers";
}

TEST_F(LoaderTest, LoadersSharingABadFileLogNameEachFileOnceBetweenThem) {
  config_.bad_files = std::make_shared<BadFileLog>();
  Loader first(*dataset_, config_);
  Loader second(*dataset_, config_);
  EXPECT_EQ(run_epoch(first, 0).summary.skipped, 2);
  EXPECT_EQ(run_epoch(second, 0).summary.skipped, 2) << "each loader still counts its skips";
  EXPECT_EQ(config_.bad_files->files(), 2u);
  EXPECT_EQ(warnings_->lines.size(), 2u) << "the second loader found both files already named";
}

TEST_F(LoaderTest, ResumesMidEpochExactlyWhereItStopped) {
  config_.workers = 2;
  Loader loader(*dataset_, config_);
  const Collected full = run_epoch(loader, 3);
  loader.start_epoch(3, epoch_indices(3), 0);
  ASSERT_TRUE(loader.next().has_value());
  ASSERT_TRUE(loader.next().has_value());
  EXPECT_EQ(loader.position(), 2) << "the sampler position a checkpoint stores";
  Loader resumed(*dataset_, config_);
  const Collected tail = run_epoch(resumed, 3, /*first_batch=*/2);
  ASSERT_EQ(tail.images.size(), full.images.size() - 2);
  for (size_t b = 0; b < tail.images.size(); ++b) {
    EXPECT_EQ(tail.images[b], full.images[b + 2]);
    EXPECT_EQ(tail.indices[b], full.indices[b + 2]);
  }
  EXPECT_THROW(resumed.start_epoch(3, epoch_indices(3), 6), Error);
}

TEST_F(LoaderTest, Bf16BatchesAreTheF32BatchesRounded) {
  Loader f32_loader(*dataset_, config_);
  config_.dtype = DType::bf16;
  Loader bf16_loader(*dataset_, config_);
  const Collected f32 = run_epoch(f32_loader, 0);
  const Collected bf16_batches = run_epoch(bf16_loader, 0);
  ASSERT_EQ(f32.images.size(), bf16_batches.images.size());
  for (size_t b = 0; b < f32.images.size(); ++b) {
    ASSERT_EQ(f32.images[b].size(), bf16_batches.images[b].size());
    for (size_t i = 0; i < f32.images[b].size(); ++i) {
      ASSERT_EQ(static_cast<float>(bf16(f32.images[b][i])), bf16_batches.images[b][i]);
    }
  }
}

// MixUp and CutMix (data/batch_mixing.h) in the loader: each batch is the unmixed loader's
// batch mixed by the plan of BatchMixRandom(seed, rank, epoch, batch), with its soft targets,
// the same for any worker count and from a resumed position; other ranks mix differently.
TEST_F(LoaderTest, MixedBatchesAreThePlannedMixOfTheUnmixedOnes) {
  Loader plain(*dataset_, config_);
  config_.mix.mixup_alpha = 0.8;
  config_.mix.cutmix_alpha = 1.0;
  config_.mix.mode = MixMode::elem;
  config_.mix.label_smoothing = 0.1;
  config_.mix_rank = 1;
  config_.workers = 1;
  Loader one(*dataset_, config_);
  config_.workers = 3;
  Loader three(*dataset_, config_);
  const Collected unmixed = run_epoch(plain, 2);
  const Collected mixed = run_epoch(one, 2);
  EXPECT_TRUE(unmixed.targets.front().empty()) << "no targets without mixing";
  const int size = config_.transform.output_size;
  std::vector<std::byte> scratch;
  int changed = 0;
  for (size_t b = 0; b < mixed.images.size(); ++b) {
    BatchMixRandom random(config_.seed, 1, 2, b);
    const auto n = static_cast<int64_t>(unmixed.labels[b].size());
    const MixPlan plan = plan_mix(config_.mix, n, size, size, true, random);
    std::vector<float> expected = unmixed.images[b];
    apply_mix(plan, expected.data(), DType::f32, size, size, scratch);
    EXPECT_EQ(mixed.images[b], expected) << "batch " << b;
    EXPECT_EQ(mixed.labels[b], unmixed.labels[b]) << "labels stay each image's own";
    EXPECT_EQ(mixed.targets[b], mixed_targets(plan, unmixed.labels[b], 3, 0.1));
    changed += mixed.images[b] != unmixed.images[b];
  }
  EXPECT_GT(changed, 0);
  const Collected mixed_by_three = run_epoch(three, 2);
  EXPECT_EQ(mixed.images, mixed_by_three.images);
  EXPECT_EQ(mixed.targets, mixed_by_three.targets);
  Loader resumed(*dataset_, config_);
  const Collected tail = run_epoch(resumed, 2, /*first_batch=*/3);
  ASSERT_EQ(tail.images.size(), mixed.images.size() - 3);
  EXPECT_EQ(tail.images.front(), mixed.images[3]);
  EXPECT_EQ(tail.targets.front(), mixed.targets[3]);
  config_.mix_rank = 0;
  Loader rank0(*dataset_, config_);
  EXPECT_NE(run_epoch(rank0, 2).targets, mixed.targets) << "each rank draws its own mixing";
  config_.mix.off_epoch = 2;
  Loader switched_off(*dataset_, config_);
  const Collected off = run_epoch(switched_off, 2);
  EXPECT_EQ(off.images, unmixed.images) << "--mixup-off-epoch 2 stops mixing in epoch 2";
  EXPECT_EQ(off.targets.front()[static_cast<size_t>(unmixed.labels[0][0])], 1.f - 0.1f + 0.1f / 3);
  config_.mix.mixup_alpha = -1;
  EXPECT_THROW(Loader(*dataset_, config_), Error);
}

// --dummy's dataset: no files; each image uniform [0, 1) values from (seed, index), the same
// in every epoch and for any worker count, its label index % classes; bf16 batches are the
// f32 ones rounded.
TEST(LoaderSynthetic, ImagesComeFromTheSeedAndIndexAlone) {
  const ImageFolder dataset = ImageFolder::synthetic("--dummy train", 22, 3);
  ASSERT_TRUE(dataset.is_synthetic());
  ASSERT_EQ(dataset.size(), 22u);
  EXPECT_EQ(dataset.classes(), (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(dataset.path(5), "--dummy train/5");
  LoaderConfig config;
  config.batch_size = 4;
  config.transform.output_size = 8;
  config.seed = 3;
  Stream stream;
  // image index -> its values, from every batch of every run.
  std::map<int64_t, std::vector<float>> seen;
  int64_t images = 0;
  for (const auto& [workers, dtype, epoch] :
       {std::tuple{1, DType::f32, int64_t{0}}, std::tuple{3, DType::f32, int64_t{1}},
        std::tuple{2, DType::bf16, int64_t{0}}}) {
    config.workers = workers;
    config.dtype = dtype;
    Loader loader(dataset, config);
    DistributedSampler sampler(22, 1, 0, true, config.seed);
    sampler.set_epoch(epoch);
    loader.start_epoch(epoch, sampler.indices());
    while (std::optional<Batch> batch = loader.next()) {
      ASSERT_EQ(batch->images.size(0), static_cast<int64_t>(batch->indices.size()));
      const std::vector<float> values = batch->images.to_floats(stream);
      for (size_t i = 0; i < batch->indices.size(); ++i) {
        const int64_t index = batch->indices[i];
        EXPECT_EQ(batch->labels[i], index % 3);
        const std::vector<float> image(values.begin() + static_cast<int64_t>(i) * 192,
                                       values.begin() + static_cast<int64_t>(i + 1) * 192);
        for (float v : image)
          ASSERT_TRUE(v >= 0.f && v <= 1.f) << v;
        ++images;
        const auto [known, inserted] = seen.emplace(index, image);
        if (inserted) continue;
        if (dtype == DType::f32) {
          EXPECT_EQ(known->second, image) << "image " << index;
        } else {
          for (size_t v = 0; v < image.size(); ++v)
            EXPECT_EQ(static_cast<float>(bf16(known->second[v])), image[v]) << "image " << index;
        }
      }
    }
  }
  EXPECT_EQ(images, 3 * 22);
  EXPECT_EQ(seen.size(), 22u);
  // Different images differ.
  EXPECT_NE(seen[0], seen[1]);
}

TEST_F(LoaderTest, MisuseIsAClearError) {
  Loader loader(*dataset_, config_);
  EXPECT_THROW(loader.next(), Error);
  config_.workers = 0;
  EXPECT_THROW(Loader(*dataset_, config_), Error);
  // Images are f32 or bf16: an i32 batch would be written as bf16 into 4-byte slots.
  config_.workers = 1;
  config_.dtype = DType::i32;
  try {
    Loader integers(*dataset_, config_);
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("Loader: --dtype must be f32 or bf16, got i32"),
              std::string::npos)
        << error.what();
  }
}

TEST_F(LoaderTest, CudaBatchesArriveOnTheDeviceAfterTheirEvent) {
  config_.device = Device::cuda(0);
  if (cuda_device_count() == 0) {
    EXPECT_THROW(Loader(*dataset_, config_), Error) << "a CUDA loader needs a CUDA device";
    GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  }
  Loader gpu(*dataset_, config_);
  config_.device = Device::cpu();
  Loader cpu(*dataset_, config_);
  gpu.start_epoch(0, epoch_indices(0));
  const Collected expected = run_epoch(cpu, 0);
  Stream compute(Device::cuda(0));
  for (size_t b = 0; std::optional<Batch> batch = gpu.next(); ++b) {
    ASSERT_TRUE(batch->images.device().is_cuda());
    ASSERT_NE(batch->ready, nullptr);
    compute.wait(*batch->ready);
    EXPECT_EQ(batch->images.to_floats(compute), expected.images[b]);
    // The labels travel with the images, from pinned memory.
    ASSERT_TRUE(batch->device_labels.defined());
    EXPECT_EQ(batch->device_labels.to_ints(compute), expected.labels[b]);
    EXPECT_FALSE(batch->device_targets.defined()) << "no soft targets without mixing";
  }
  // With mixing the soft targets too.
  config_.device = Device::cuda(0);
  config_.mix.mixup_alpha = 0.8;
  Loader mixing(*dataset_, config_);
  mixing.start_epoch(0, epoch_indices(0));
  std::optional<Batch> mixed = mixing.next();
  ASSERT_TRUE(mixed && mixed->device_targets.defined());
  compute.wait(*mixed->ready);
  EXPECT_EQ(mixed->device_targets.to_floats(compute), mixed->targets);
  EXPECT_EQ(mixed->device_targets.shape(), (Shape{4, 3}));
}

// The hazard BatchKeeper guards against, and the guard: the compute stream, held back by a host
// function, is to read batch 0's images while the loader copies batch 1 on its own stream. Batch
// 0 dropped, its freed block is batch 1's, and the compute stream reads batch 1's images; kept,
// batch 1 lands elsewhere and the compute stream reads batch 0's.
TEST_F(LoaderTest, CudaBatchesKeptUntilReadAreNotOverwrittenByTheNextCopy) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
#if ENGINE_HAVE_CUDA
  config_.device = Device::cuda(0);
  for (const bool keep : {false, true}) {
    Loader loader(*dataset_, config_);
    loader.start_epoch(0, epoch_indices(0));
    Stream compute(config_.device), reader(config_.device);
    BatchKeeper keeper;
    std::optional<Batch> first = loader.next();
    reader.wait(*first->ready);
    const std::vector<float> first_images = first->images.to_floats(reader);
    Tensor seen = Tensor::empty(first->images.shape(), first->images.dtype(), config_.device);
    std::promise<void> open;
    std::shared_future<void> gate = open.get_future().share();
    CHECK_CUDA(cudaLaunchHostFunc(
        compute.native(), [](void* g) { static_cast<std::shared_future<void>*>(g)->wait(); },
        &gate));
    compute.wait(*first->ready);
    copy(first->images, seen, compute);  // held behind the gate
    const void* first_block = first->images.raw_data();
    if (keep) {
      keeper.keep(std::move(*first), compute);
    } else {
      first.reset();
    }
    std::optional<Batch> second = loader.next();
    reader.wait(*second->ready);
    reader.synchronize();  // batch 1 has landed
    open.set_value();
    const std::vector<float> read = seen.to_floats(compute);
    if (keep) {
      EXPECT_EQ(keeper.held(), 1u);
      EXPECT_NE(second->images.raw_data(), first_block);
      EXPECT_EQ(read, first_images) << "a kept batch was overwritten before it was read";
    } else {
      ASSERT_EQ(second->images.raw_data(), first_block)
          << "the hazard's premise: the caching allocator hands the freed block on";
      EXPECT_NE(read, first_images) << "the next batch's copy landed first";
    }
  }
#endif
}

}  // namespace
}  // namespace engine::data
