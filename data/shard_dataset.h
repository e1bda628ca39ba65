// A dataset of WebDataset tar shards (data/shard_pattern.h names them): members grouped into
// samples by their key, the path up to the first dot of the basename, as webdataset's
// group_by_keys does with consecutive members. A sample is its image (the first member whose
// extension is one of ImageFolder's, e.g. KEY.jpg, KEY.png, KEY.webp, KEY.tif) and its class
// (KEY.cls: the index as decimal text); other members (KEY.json, KEY.txt, ...) are ignored.
//
// Scanning reads each shard's headers and its .cls members only, one thread per shard at a
// time. The result is an ImageFolder whose samples are the shards' samples in pattern order
// then archive order, each named "<shard file>/<member>" below the shards' common folder, and
// that carries a ShardIndex: where each sample's image lies, for the loader's sequential reads
// (data/shard_reader.h). An ImageFolder written by tools/make_webdataset_shards.py in order
// keeps every sample's index, so the same seed augments it alike in either form.
//
// Class names come from classes.txt beside the first shard (one name per line, in index order,
// as the tool writes it); without one they are "0".."max", or the names given (the training
// split's, for validation shards). Damage is warned about once, naming the shard and member,
// and the rest is used: a truncated shard keeps its complete members; a sample without .cls, with
// a .cls that is not a number or names a class outside the count, or without an image we decode
// is left out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/image_folder.h"

namespace engine::data {

struct ShardIndex {
  struct Location {
    uint32_t shard = 0;
    uint64_t offset = 0;  // of the image member's bytes in the shard file
    uint64_t size = 0;
  };
  std::vector<std::string> shard_paths;
  std::vector<Location> samples;            // one per ImageFolder sample, in its order
  std::vector<int64_t> shard_first_sample;  // shard s holds [first[s], first[s + 1])
  int64_t shard_count() const { return static_cast<int64_t>(shard_paths.size()); }
};

struct ShardScanOptions {
  int scan_threads = 8;
  // When not empty: the class names (and count) to use when no classes.txt is found.
  std::vector<std::string> classes = {};
  std::string flag = "--data";  // the flag that named the pattern, for messages
};

// Throws engine::Error naming the pattern or shard when a shard cannot be opened or read, or
// when no sample is usable.
ImageFolder scan_shards(const std::string& pattern, const ShardScanOptions& options = {});

}  // namespace engine::data
