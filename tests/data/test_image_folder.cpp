// ImageFolder scanning against torchvision's rules, on a tree of edge cases described in the
// golden file (hidden files and classes, mixed-case extensions, nested folders, symlinks), and
// the clear errors for unusable dataset folders.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "data/image_folder.h"
#include "data/warnings.h"
#include "kernels/error.h"
#include "tests/data/golden.h"
#include "tests/data/test_images.h"

namespace engine::data {
namespace {

namespace fs = std::filesystem;

void touch(const fs::path& path) {
  std::ofstream(path) << "x";
}

void expect_error(const std::string& root, const std::string& message) {
  try {
    ImageFolder::scan(root);
    ADD_FAILURE() << "scan of " << root << " succeeded; expected: " << message;
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(message), std::string::npos) << error.what();
  }
}

TEST(ImageFolderGolden, ClassesAndSamplesEqualTorchvision) {
  const auto records = testing::read_golden("image_folder");
  testing::TempDir dir;
  for (const auto& entry : testing::golden_records(records, "entry")) {
    const fs::path path = dir.path() / entry.fields.at(1);
    if (entry.fields[0] == "dir") fs::create_directories(path);
    if (entry.fields[0] == "file") touch(path);
    if (entry.fields[0] == "link") fs::create_symlink(entry.fields.at(2), path);
  }
  const ImageFolder folder = ImageFolder::scan(dir.path().string(), {.scan_threads = 3});
  const auto classes = testing::golden_records(records, "classes").at(0);
  EXPECT_EQ(folder.classes(),
            std::vector<std::string>(classes.fields.begin() + 1, classes.fields.end()));
  const auto samples = testing::golden_records(records, "sample");
  ASSERT_EQ(folder.size(), samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    EXPECT_EQ(folder.relative_path(i), samples[i].fields.at(0)) << "sample " << i;
    EXPECT_EQ(folder.label(i), std::stoi(samples[i].fields.at(1))) << "sample " << i;
  }
  EXPECT_EQ(folder.path(0), dir.path().string() + "/" + samples[0].fields[0]);
}

TEST(ImageFolder, ExtensionsMatchCaseInsensitivelyAtTheEndOnly) {
  for (const char* name : {"a.jpg", "A.JPEG", "b.Png", "c.ppm", "d.bmp", "e.pgm", "f.tif", "g.TIFF",
                           "h.webp", ".jpg"}) {
    EXPECT_TRUE(has_image_extension(name)) << name;
  }
  for (const char* name : {"a.jpg.txt", "jpg", "a.gif", "a.jp", "", "a.jpgx"}) {
    EXPECT_FALSE(has_image_extension(name)) << name;
  }
}

TEST(ImageFolder, EmptyClassKeepsItsIndexWithOneWarning) {
  testing::TempDir dir;
  fs::create_directories(dir.path() / "a");
  fs::create_directories(dir.path() / "b_empty");
  fs::create_directories(dir.path() / "c");
  touch(dir.path() / "a" / "1.jpg");
  touch(dir.path() / "b_empty" / "notes.txt");
  touch(dir.path() / "c" / "1.png");
  testing::CapturedWarnings warnings;
  const ImageFolder folder = ImageFolder::scan(dir.path().string());
  EXPECT_EQ(folder.classes(), (std::vector<std::string>{"a", "b_empty", "c"}));
  EXPECT_EQ(folder.empty_classes(), std::vector<std::string>{"b_empty"});
  ASSERT_EQ(folder.size(), 2u);
  EXPECT_EQ(folder.label(1), 2);
  ASSERT_EQ(warnings.lines.size(), 1u);
  EXPECT_NE(warnings.lines[0].find("b_empty holds no image file; it keeps class index 1"),
            std::string::npos)
      << warnings.lines[0];
  EXPECT_EQ(folder.class_to_index_json(), R"({"a": 0, "b_empty": 1, "c": 2})");
}

TEST(ImageFolder, UnusableFoldersAreClearErrors) {
  testing::TempDir dir;
  expect_error((dir.path() / "missing").string(), "cannot read the dataset folder");
  expect_error(dir.path().string(), "no class folders in");
  fs::create_directories(dir.path() / "cls");
  touch(dir.path() / "cls" / "readme.txt");
  testing::CapturedWarnings warnings;
  expect_error(dir.path().string(), "no image files in any class folder");
}

TEST(ImageFolder, ScansManyClassesInParallelInOrder) {
  testing::TempDir dir;
  for (int c = 0; c < 40; ++c) {
    const fs::path class_dir = dir.path() / ("class" + std::to_string(1000 + c));
    fs::create_directories(class_dir);
    for (int i = 0; i < 25; ++i)
      touch(class_dir / ("img" + std::to_string(100 + i) + ".jpg"));
  }
  const ImageFolder serial = ImageFolder::scan(dir.path().string(), {.scan_threads = 1});
  const ImageFolder parallel = ImageFolder::scan(dir.path().string(), {.scan_threads = 8});
  ASSERT_EQ(serial.size(), 1000u);
  ASSERT_EQ(parallel.size(), 1000u);
  for (size_t i = 0; i < serial.size(); ++i) {
    ASSERT_EQ(serial.relative_path(i), parallel.relative_path(i));
    ASSERT_EQ(parallel.label(i), static_cast<int>(i / 25));
  }
  EXPECT_EQ(parallel.relative_path(26), "class1001/img101.jpg");
}

}  // namespace
}  // namespace engine::data
