#include "train/dataset_agreement.h"

#include <mpi.h>

#include <array>
#include <vector>

#include "collectives/core/check_mpi.h"
#include "data/shard_dataset.h"

namespace engine::train {
namespace {

constexpr uint64_t kFnvOffset = 14695981039346656037ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

void mix(uint64_t& hash, std::string_view bytes) {
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= kFnvPrime;
  }
  hash ^= 0xff;  // a separator no name contains, so "ab"+"c" != "a"+"bc"
  hash *= kFnvPrime;
}

std::string describe(const DatasetFingerprint& print) {
  return std::to_string(print.classes) + " classes and " + std::to_string(print.images) + " images";
}

}  // namespace

DatasetFingerprint fingerprint(const data::ImageFolder& folder) {
  DatasetFingerprint print;
  print.classes = static_cast<int64_t>(folder.classes().size());
  print.images = static_cast<int64_t>(folder.size());
  print.hash = kFnvOffset;
  for (const std::string& name : folder.classes())
    mix(print.hash, name);
  for (size_t i = 0; i < folder.size(); ++i) {
    mix(print.hash, folder.relative_path(i));
    mix(print.hash, std::to_string(folder.label(i)));
  }
  // Shards: where each image lies too, so that hosts whose shards hold other bytes under the
  // same member names disagree.
  if (const data::ShardIndex* shards = folder.shards()) {
    for (const data::ShardIndex::Location& where : shards->samples)
      mix(print.hash, std::to_string(where.offset) + ":" + std::to_string(where.size));
  }
  return print;
}

std::string dataset_disagreement(const MpiSession& session, const Datasets& datasets,
                                 const std::string& data_flag) {
  // train/ (zeros with --evaluate, on every rank alike) and val/.
  const DatasetFingerprint mine[2] = {
      datasets.train ? fingerprint(*datasets.train) : DatasetFingerprint{},
      fingerprint(datasets.val)};
  static_assert(sizeof(DatasetFingerprint) == 3 * sizeof(int64_t));
  std::vector<DatasetFingerprint> all(2 * static_cast<size_t>(session.size()));
  CHECK_MPI(MPI_Allgather(mine, sizeof(mine), MPI_BYTE, all.data(), sizeof(mine), MPI_BYTE,
                          session.comm()));
  const PeerNames& peers = session.peers();
  for (int rank = 1; rank < session.size(); ++rank) {
    for (int split = 0; split < 2; ++split) {
      const DatasetFingerprint& first = all[split];
      const DatasetFingerprint& other = all[2 * static_cast<size_t>(rank) + split];
      if (first.classes == other.classes && first.images == other.images &&
          first.hash == other.hash) {
        continue;
      }
      const data::ImageFolder& scanned = split == 0 ? *datasets.train : datasets.val;
      // The folder as scanned (--val-data's when given), or the shards' common folder.
      const std::string folder = scanned.shards() ? "the shards in " + scanned.root()
                                 : split == 0     ? data_flag + "/train"
                                                  : scanned.root();
      const bool counts_differ = first.classes != other.classes || first.images != other.images;
      return "--data: the ranks see different datasets: " + folder + " on host " +
             peers.host(rank) + " (rank " + std::to_string(rank) + ") has " + describe(other) +
             (counts_differ      ? ""
              : scanned.shards() ? " but other class or member names, or member sizes"
                                 : " but other class or file names") +
             ", on host " + peers.host(0) + " (rank 0) " + describe(first) +
             "; every host needs the same copy (labels and epochs would not match)";
    }
  }
  return "";
}

}  // namespace engine::train
