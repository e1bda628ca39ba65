// WebDataset tar shards: brace patterns, tar headers in their three naming forms, samples
// grouped by key with their .cls, the bad-shard cases (each named, the rest used), the shard
// sampler's once-per-epoch guarantee, and the loader giving the same batches from shards as
// from the folder they were written from, resumed mid-epoch, with bad members skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "data/file_io.h"
#include "data/loader.h"
#include "data/sampler.h"
#include "data/shard_dataset.h"
#include "data/shard_pattern.h"
#include "data/shard_reader.h"
#include "data/shard_sampler.h"
#include "data/tar_listing.h"
#include "kernels/error.h"
#include "kernels/runtime.h"
#include "tests/data/tar_writer.h"
#include "tests/data/test_images.h"

namespace engine::data {
namespace {

namespace fs = std::filesystem;
using testing::TarWriter;

std::vector<uint8_t> bytes_of(const std::string& text) {
  return {text.begin(), text.end()};
}

bool any_line_has(const std::vector<std::string>& lines, const std::vector<std::string>& parts) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) {
    return std::all_of(parts.begin(), parts.end(),
                       [&](const std::string& part) { return line.find(part) != line.npos; });
  });
}

TEST(ShardPattern, ExpandsRangesAndListsAsBraceexpandDoes) {
  EXPECT_EQ(expand_shard_pattern("d/a-{008..011}.tar"),
            (std::vector<std::string>{"d/a-008.tar", "d/a-009.tar", "d/a-010.tar", "d/a-011.tar"}));
  EXPECT_EQ(expand_shard_pattern("{x,y}-{1..2}.tar"),
            (std::vector<std::string>{"x-1.tar", "x-2.tar", "y-1.tar", "y-2.tar"}));
  EXPECT_EQ(expand_shard_pattern("one.tar"), std::vector<std::string>{"one.tar"});
  EXPECT_TRUE(is_shard_pattern("d/train-{0..9}.tar"));
  EXPECT_FALSE(is_shard_pattern("d/imagenet"));
  for (const char* bad : {"a-{1..x}.tar", "a-{1..2.tar", "a-}.tar", "a-{}.tar"}) {
    try {
      expand_shard_pattern(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find(bad), std::string::npos) << error.what();
    }
  }
}

TEST(TarListing, ReadsUstarPrefixesGnuLongNamesAndPaxPaths) {
  testing::TempDir dir;
  TarWriter tar;
  const std::string long_name = std::string(120, 'n') + ".png";
  tar.add_directory("folder/");
  tar.add("plain.cls", "3");
  tar.add_with_prefix("some/prefix", "k.jpg", bytes_of("jpeg bytes"));
  tar.add(long_name, bytes_of(std::string(700, 'L')));
  tar.add_with_pax_path("pax/named.webp", bytes_of("webp"));
  tar.finish();
  const fs::path path = dir.path() / "a.tar";
  testing::write_file(path, tar.bytes());

  const TarListing listing = list_tar_members(path.string());
  EXPECT_EQ(listing.damage, "");
  ASSERT_EQ(listing.members.size(), 4u);
  EXPECT_EQ(listing.members[0].name, "plain.cls");
  EXPECT_EQ(listing.members[1].name, "some/prefix/k.jpg");
  EXPECT_EQ(listing.members[2].name, long_name);
  EXPECT_EQ(listing.members[2].size, 700u);
  EXPECT_EQ(listing.members[3].name, "pax/named.webp");
  // The offsets point at the members' bytes.
  const std::vector<uint8_t>& bytes = tar.bytes();
  EXPECT_EQ(bytes[listing.members[0].data_offset], '3');
  EXPECT_EQ(std::string(bytes.begin() + listing.members[3].data_offset,
                        bytes.begin() + listing.members[3].data_offset + 4),
            "webp");

  // Cut inside the long member: the members before it stay, the damage names it.
  std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + listing.members[2].data_offset + 100);
  testing::write_file(path, cut);
  const TarListing truncated = list_tar_members(path.string());
  ASSERT_EQ(truncated.members.size(), 2u);
  EXPECT_NE(truncated.damage.find("truncated: member " + long_name), std::string::npos)
      << truncated.damage;
  EXPECT_NE(truncated.damage.find("after member some/prefix/k.jpg"), std::string::npos);
}

class ShardFiles : public ::testing::Test {
 protected:
  std::vector<uint8_t> image(int variant) {
    return testing::encode_png(testing::make_test_picture(30 + variant, 26 + 2 * variant, variant));
  }
  testing::TempDir dir_;
  testing::CapturedWarnings warnings_;
};

TEST_F(ShardFiles, BadSamplesAreNamedAndTheRestUsed) {
  std::ofstream(dir_.path() / "classes.txt") << "ant\nbee\ncat\n";
  TarWriter first;
  first.add("k0.png", image(0));
  first.add("k0.cls", "2\n");
  first.add("k1.png", image(1));  // no k1.cls
  first.add("k2.png", image(2));
  first.add("k2.cls", "7");  // outside the 3 classes
  first.add("k3.png", image(3));
  first.add("k3.cls", "two");
  first.add("k4.gif", bytes_of("GIF89a"));
  first.add("k4.cls", "0");
  first.add("k5.json", "{}");
  first.add("k5.png", image(5));
  first.add("k5.cls", "1");
  first.finish();
  testing::write_file(dir_.path() / "s-0.tar", first.bytes());
  TarWriter second;
  second.add("k6.png", image(6));
  second.add("k6.cls", "0");
  second.add("k7.png", image(7));
  second.add("k7.cls", "0");
  std::vector<uint8_t> cut = second.bytes();
  cut.resize(cut.size() - 3 * 512 + 10);  // inside the last block of k7.png
  testing::write_file(dir_.path() / "s-1.tar", cut);

  const std::string root = dir_.path().string();
  const ImageFolder shards = scan_shards(root + "/s-{0..1}.tar");
  ASSERT_EQ(shards.size(), 3u);
  EXPECT_EQ(shards.classes(), (std::vector<std::string>{"ant", "bee", "cat"}));
  EXPECT_EQ(shards.relative_path(0), "s-0.tar/k0.png");
  EXPECT_EQ(shards.path(1), root + "/s-0.tar/k5.png");
  EXPECT_EQ(shards.relative_path(2), "s-1.tar/k6.png");
  EXPECT_EQ(shards.label(0), 2);
  EXPECT_EQ(shards.label(1), 1);
  EXPECT_EQ(shards.label(2), 0);
  const std::vector<std::string>& lines = warnings_.lines;
  EXPECT_TRUE(any_line_has(lines, {root + "/s-0.tar/k1.png", "no k1.cls"}));
  EXPECT_TRUE(any_line_has(lines, {root + "/s-0.tar/k2.png", "k2.cls holds \"7\"", "3 classes"}));
  EXPECT_TRUE(any_line_has(lines, {root + "/s-0.tar/k3.png", "\"two\", not a class index"}));
  EXPECT_TRUE(any_line_has(lines, {root + "/s-0.tar/k4.gif", "not a format we decode"}));
  EXPECT_TRUE(any_line_has(lines, {root + "/s-1.tar is damaged", "member k7.png"}));
  EXPECT_EQ(lines.size(), 5u) << ::testing::PrintToString(lines);

  // Nothing usable, or a shard missing: one error naming the pattern and the shard.
  try {
    scan_shards(root + "/s-{0..2}.tar");
    ADD_FAILURE() << "a missing shard was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(root + "/s-2.tar"), std::string::npos);
  }
  TarWriter none;
  none.add("k.png", image(0));
  none.finish();
  testing::write_file(dir_.path() / "none.tar", none.bytes());
  EXPECT_THROW(scan_shards(root + "/none.tar"), Error);
}

ShardIndex index_of_shard_sizes(const std::vector<int64_t>& sizes) {
  ShardIndex index;
  for (size_t s = 0; s < sizes.size(); ++s) {
    index.shard_paths.push_back("s" + std::to_string(s));
    index.shard_first_sample.push_back(static_cast<int64_t>(index.samples.size()));
    for (int64_t i = 0; i < sizes[s]; ++i)
      index.samples.push_back({static_cast<uint32_t>(s), static_cast<uint64_t>(i), 1});
  }
  index.shard_first_sample.push_back(static_cast<int64_t>(index.samples.size()));
  return index;
}

TEST(ShardSampler, EverySampleOncePerEpochAcrossRanksInWholeShardRuns) {
  const ShardIndex index = index_of_shard_sizes({5, 9, 1, 7, 0, 8, 6});  // 36 samples
  const auto total = static_cast<int64_t>(index.samples.size());
  for (int world : {1, 2, 3, 5}) {
    for (int64_t buffer : {0, 4, 1000}) {
      std::multiset<int64_t> seen;
      for (int rank = 0; rank < world; ++rank) {
        ShardSampler sampler(index, world, rank, true, 42, buffer);
        sampler.set_epoch(3);
        const std::vector<int64_t> mine = sampler.indices();
        EXPECT_EQ(static_cast<int64_t>(mine.size()), (total + world - 1) / world);
        EXPECT_EQ(mine, sampler.indices()) << "the same seed and epoch, the same order";
        seen.insert(mine.begin(), mine.end());
        if (buffer == 0) {
          // Unbuffered, a rank's samples run through each shard in archive order.
          for (size_t i = 1; i < mine.size(); ++i) {
            const bool same_shard =
                index.samples[mine[i]].shard == index.samples[mine[i - 1]].shard;
            if (same_shard) {
              EXPECT_EQ(mine[i], mine[i - 1] + 1);
            }
          }
        }
      }
      // Each sample once; the padding repeats the epoch stream's first samples.
      std::set<int64_t> distinct(seen.begin(), seen.end());
      EXPECT_EQ(static_cast<int64_t>(distinct.size()), total) << world << " ranks";
      EXPECT_EQ(static_cast<int64_t>(seen.size()), (total + world - 1) / world * world);
    }
  }
  ShardSampler a(index, 2, 0, true, 42, 8), b(index, 2, 0, true, 43, 8);
  std::vector<int64_t> epoch0 = a.indices();
  a.set_epoch(1);
  EXPECT_NE(epoch0, a.indices()) << "a new epoch reshuffles";
  EXPECT_NE(epoch0, b.indices()) << "another seed reshuffles";
  EXPECT_EQ(shard_evaluation_indices(7, 3, 0), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(shard_evaluation_indices(7, 3, 2), (std::vector<int64_t>{5, 6}));
}

// A folder of 3 classes and the same images as two shards, written in the folder's order.
class ShardLoader : public ShardFiles {
 protected:
  void SetUp() override {
    const char* classes[] = {"ant", "bee", "cat"};
    for (int c = 0; c < 3; ++c) {
      for (int i = 0; i < 5; ++i) {
        const RgbImage picture = testing::make_test_picture(36 + 7 * i, 50 - 3 * i, c * 5 + i);
        const std::string name = "img" + std::to_string(i) + (i % 2 ? ".png" : ".jpg");
        testing::write_file(dir_.path() / "folder" / classes[c] / name,
                            i % 2 ? testing::encode_png(picture) : testing::encode_jpeg(picture));
      }
    }
    folder_.emplace(ImageFolder::scan((dir_.path() / "folder").string()));
    fs::create_directories(dir_.path() / "shards");
    std::ofstream(dir_.path() / "shards" / "classes.txt") << "ant\nbee\ncat\n";
    for (size_t shard = 0; shard < 2; ++shard) {
      TarWriter tar;
      for (size_t i = shard * 8; i < std::min<size_t>(folder_->size(), shard * 8 + 8); ++i) {
        std::vector<uint8_t> bytes;
        read_file(folder_->path(i), bytes);
        const std::string key = "sample" + std::to_string(i);
        const std::string path = folder_->path(i);
        tar.add(key + path.substr(path.rfind('.')), bytes);
        tar.add(key + ".cls", std::to_string(folder_->label(i)));
      }
      tar.finish();
      testing::write_file(shard_path(shard), tar.bytes());
    }
    shards_.emplace(scan_shards((dir_.path() / "shards" / "part-{0..1}.tar").string()));
    config_.batch_size = 4;
    config_.workers = 2;
    config_.transform.output_size = 20;
    config_.seed = 5;
  }
  fs::path shard_path(size_t shard) const {
    return dir_.path() / "shards" / ("part-" + std::to_string(shard) + ".tar");
  }

  struct Epoch {
    std::vector<std::vector<float>> images;
    std::vector<std::vector<int64_t>> indices;
    std::vector<std::vector<int32_t>> labels;
  };
  Epoch run(const ImageFolder& dataset, std::vector<int64_t> order, int64_t first_batch = 0) {
    Loader loader(dataset, config_);
    loader.start_epoch(1, std::move(order), first_batch);
    Epoch out;
    Stream stream;
    while (std::optional<Batch> batch = loader.next()) {
      out.images.push_back(batch->images.to_floats(stream));
      out.indices.push_back(batch->indices);
      out.labels.push_back(batch->labels);
    }
    return out;
  }

  std::optional<ImageFolder> folder_, shards_;
  LoaderConfig config_;
};

TEST_F(ShardLoader, ShardsGiveTheFoldersBatchesAndResumeExactly) {
  ASSERT_EQ(shards_->size(), folder_->size());
  EXPECT_EQ(shards_->classes(), folder_->classes());
  for (size_t i = 0; i < folder_->size(); ++i)
    EXPECT_EQ(shards_->label(i), folder_->label(i));
  // Any order the loader is given: the same indices make the same batches, bit for bit.
  DistributedSampler shuffled(static_cast<int64_t>(folder_->size()), 1, 0, true, 9);
  const Epoch from_folder = run(*folder_, shuffled.indices());
  const Epoch from_shards = run(*shards_, shuffled.indices());
  ASSERT_EQ(from_folder.images.size(), 4u);
  EXPECT_EQ(from_folder.images, from_shards.images);
  EXPECT_EQ(from_folder.indices, from_shards.indices);
  EXPECT_EQ(from_folder.labels, from_shards.labels);

  // The shard sampler's order (shuffle buffer of 3), resumed at batch 2 == the whole epoch's tail.
  ShardSampler sampler(*shards_->shards(), 1, 0, true, 5, 3);
  sampler.set_epoch(1);
  const Epoch whole = run(*shards_, sampler.indices());
  const Epoch resumed = run(*shards_, sampler.indices(), 2);
  ASSERT_EQ(resumed.images.size(), 2u);
  EXPECT_EQ(resumed.images[0], whole.images[2]);
  EXPECT_EQ(resumed.images[1], whole.images[3]);
  EXPECT_EQ(resumed.indices[1], whole.indices[3]);
  std::multiset<int64_t> seen;
  for (const auto& batch : whole.indices)
    seen.insert(batch.begin(), batch.end());
  EXPECT_EQ(seen.size(), folder_->size());
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), folder_->size());
}

TEST_F(ShardLoader, TheReaderReadsEachShardInSequence) {
  ShardReader reader(*shards_);
  ShardSampler sampler(*shards_->shards(), 1, 0, true, 5, 4);
  const std::vector<int64_t> order = sampler.indices();
  reader.begin_epoch(order);
  std::vector<uint8_t> from_reader, from_file;
  for (const int64_t index : order) {
    reader.read(index, from_reader);
    const ShardIndex::Location& where = shards_->shards()->samples[static_cast<size_t>(index)];
    std::vector<uint8_t> shard;
    read_file(shards_->shards()->shard_paths[where.shard], shard);
    from_file.assign(shard.begin() + where.offset, shard.begin() + where.offset + where.size);
    ASSERT_EQ(from_reader, from_file) << "sample " << index;
  }
  EXPECT_EQ(reader.unplanned_reads(), 0);
  reader.read(order[0], from_reader);  // asked for again: read on its own
  EXPECT_EQ(reader.unplanned_reads(), 1);
}

TEST_F(ShardLoader, CorruptAndCutMembersAreSkippedByName) {
  // Overwrite sample 1's image with text, then cut the second shard inside its last image after
  // the scan (a shard rewritten under the job): both are named and skipped, the epoch ends.
  std::vector<uint8_t> first;
  read_file(shard_path(0).string(), first);
  const ShardIndex::Location& one = shards_->shards()->samples[1];
  std::fill(first.begin() + one.offset, first.begin() + one.offset + one.size, 'x');
  testing::write_file(shard_path(0), first);
  const ShardIndex::Location& last = shards_->shards()->samples.back();
  fs::resize_file(shard_path(1), last.offset + 10);

  std::vector<int64_t> order(folder_->size());
  std::iota(order.begin(), order.end(), 0);
  const Epoch epoch = run(*shards_, order);
  size_t delivered = 0;
  for (const auto& batch : epoch.indices)
    delivered += batch.size();
  EXPECT_EQ(delivered, folder_->size() - 2);
  const std::string shards = (dir_.path() / "shards").string();
  EXPECT_TRUE(any_line_has(warnings_.lines, {"skipping " + shards + "/part-0.tar/sample1.png"}));
  EXPECT_TRUE(any_line_has(warnings_.lines,
                           {"skipping " + shards + "/part-1.tar/sample14.jpg", "shard ends"}));
}

}  // namespace
}  // namespace engine::data
