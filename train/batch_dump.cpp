#include "train/batch_dump.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <system_error>
#include <vector>

#include "kernels/error.h"
#include "nn/safetensors.h"
#include "train/nchw_layout.h"

namespace engine::train {

std::string batch_dump_path(const std::string& dir, int64_t step, int rank) {
  char name[64];
  std::snprintf(name, sizeof name, "step-%07lld-rank-%d.safetensors", static_cast<long long>(step),
                rank);
  return dir + "/" + name;
}

void prepare_batch_dump_dir(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  // Only the outcome counts: another rank may have created the folder at the same moment.
  if (!std::filesystem::is_directory(dir)) {
    fail("--dump-batches " + dir + ": cannot create the folder" +
         (error ? " (" + error.message() + ")" : std::string(" (a file is in the way)")));
  }
}

void dump_batch(const std::string& dir, const data::Batch& batch, const BatchDumpPlace& place,
                Stream& stream) {
  const Tensor& images = batch.images;
  const int64_t n = images.size(0), height = images.size(1), width = images.size(2),
                channels = images.size(3);
  const std::vector<float> nchw =
      nhwc_to_nchw(images.to_floats(stream), n, height, width, channels);
  const std::vector<int64_t> labels(batch.labels.begin(), batch.labels.end());
  const std::vector<nn::SafetensorsTensor> tensors = {
      {"images", "F32", {n, channels, height, width}, nchw.data()},
      {"labels", "I64", {n}, labels.data()},
      {"indices", "I64", {static_cast<int64_t>(batch.indices.size())}, batch.indices.data()},
  };
  const std::map<std::string, std::string> metadata = {
      {"step", std::to_string(place.step)},
      {"epoch", std::to_string(place.epoch)},
      {"batch_index", std::to_string(batch.batch_index)},
      {"rank", std::to_string(place.rank)},
      {"world_size", std::to_string(place.world_size)},
  };
  nn::write_safetensors(batch_dump_path(dir, place.step, place.rank), tensors, metadata);
}

}  // namespace engine::train
