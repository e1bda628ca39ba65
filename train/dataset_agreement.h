// Every rank must train on the same dataset: ranks on hosts with different copies of --data
// (a class missing, files added on one host) would number labels differently or disagree on
// the steps per epoch and deadlock. Each rank hashes what it scanned; rank 0 compares.
#pragma once

#include <cstdint>
#include <string>

#include "collectives/bootstrap.h"
#include "data/image_folder.h"
#include "train/preflight.h"

namespace engine::train {

// What ranks must agree on about one split: its classes and its files in label order.
struct DatasetFingerprint {
  int64_t classes = 0;
  int64_t images = 0;
  uint64_t hash = 0;  // FNV-1a over class names, relative paths and labels
};
DatasetFingerprint fingerprint(const data::ImageFolder& folder);

// Collective: "" when every rank scanned the same train/ and val/, else one sentence naming
// the first rank (and its host) that differs from rank 0, for rank 0 to print.
std::string dataset_disagreement(const MpiSession& session, const Datasets& datasets,
                                 const std::string& data_flag);

}  // namespace engine::train
