// Writes the seed corpus of nn_fuzz_safetensors: valid files of every dtype and layout the
// reader accepts (from our writer, and one spaced and ordered as Python's json.dumps does).
//
//   nn_write_safetensors_seeds DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nn/safetensors.h"
#include "train/cli_command.h"

namespace {

using engine::nn::SafetensorsTensor;

void write_file(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) engine::fail(path.string() + ": cannot write the seed");
}

int write_seeds(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::vector<std::byte> data(64);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<std::byte>(i * 37);
  const std::byte* p = data.data();
  using engine::nn::encode_safetensors;
  write_file(dir / "empty.safetensors", encode_safetensors({}));
  write_file(dir / "metadata_only.safetensors",
             encode_safetensors({}, {{"format", "pt"}, {"escapes", "\"\\\n\x01 \xc3\xa9"}}));
  const std::vector<SafetensorsTensor> every_dtype = {
      {"f32", "F32", {2, 2}, p},   {"f16", "F16", {3}, p},    {"bf16", "BF16", {1, 1}, p},
      {"f64", "F64", {1}, p},      {"i64", "I64", {}, p},     {"i32", "I32", {2}, p},
      {"i16", "I16", {2}, p},      {"i8", "I8", {3}, p},      {"u8", "U8", {0}, nullptr},
      {"bool", "BOOL", {2, 1}, p}, {"u16", "U16", {1}, p},    {"u32", "U32", {1}, p},
      {"u64", "U64", {1}, p},      {"f8", "F8_E4M3", {2}, p}, {"f8b", "F8_E5M2", {1}, p},
  };
  write_file(dir / "every_dtype.safetensors", encode_safetensors(every_dtype, {{"k", "v"}}));
  const std::vector<SafetensorsTensor> names = {
      {"layer1.0.conv1.weight", "F32", {1, 1, 1, 4}, p},
      {"caf\xc3\xa9 \"q\" \\ \xf0\x9f\x98\x80", "U8", {5}, p},
      {"empty", "F32", {0, 1000000}, nullptr},
  };
  write_file(dir / "names.safetensors", encode_safetensors(names));

  const std::string header =
      "{\"__metadata__\": {\"format\": \"pt\"}, "
      "\"b\": {\"dtype\": \"BF16\", \"shape\": [2], \"data_offsets\": [8, 12]}, "
      "\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8], "
      "\"extra\": [1, {\"x\": \"\\u00e9\\ud83d\\ude00\"}]}}   ";
  std::vector<std::byte> python_style(8);
  for (int i = 0; i < 8; ++i)
    python_style[i] = static_cast<std::byte>((header.size() >> (8 * i)) & 0xFF);
  for (const char c : header)
    python_style.push_back(static_cast<std::byte>(c));
  python_style.insert(python_style.end(), data.begin(), data.begin() + 12);
  write_file(dir / "python_style.safetensors", python_style);
  std::printf("wrote 5 seed files to %s\n", dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return engine::cli::run_single_argument(
      argc, argv, "nn_write_safetensors_seeds", "DIR",
      "Writes the seed corpus of nn_fuzz_safetensors (small valid safetensors files) to DIR.",
      [](const std::string& dir) { return write_seeds(dir); });
}
