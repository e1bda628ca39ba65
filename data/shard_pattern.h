// WebDataset's shard lists: "DIR/train-{000000..000099}.tar" names 100 shards, with the
// braceexpand rules webdataset uses: {A..B} counts from A to B (zero-padded to A's width when A
// has a leading zero), {a,b,c} lists alternatives, several groups multiply, left to right.
#pragma once

#include <string>
#include <vector>

namespace engine::data {

// Whether a --data value names tar shards rather than a folder: it ends in ".tar" (after any
// brace group), e.g. "DIR/train-{000000..000009}.tar" or "DIR/one.tar".
bool is_shard_pattern(const std::string& text);

// The shard paths, in order. Throws engine::Error naming the pattern for an unbalanced or
// empty group, a range whose ends are not numbers, or more than 10 million names.
std::vector<std::string> expand_shard_pattern(const std::string& pattern);

}  // namespace engine::data
