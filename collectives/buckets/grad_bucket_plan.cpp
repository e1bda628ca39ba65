#include "collectives/buckets/grad_bucket_plan.h"

#include "kernels/error.h"

namespace engine {

std::string grad_range_label(const std::vector<GradRange>& ranges, int index) {
  std::string label = "range " + std::to_string(index);
  if (index >= 0 && index < static_cast<int>(ranges.size()) && !ranges[index].name.empty()) {
    label += " (" + ranges[index].name + ")";
  }
  return label;
}

namespace {

void validate_ranges(const std::vector<GradRange>& ranges, int64_t total_elements) {
  int64_t previous_end = 0;
  for (int i = 0; i < static_cast<int>(ranges.size()); ++i) {
    const GradRange& r = ranges[i];
    const std::string where = "GradBuckets: " + grad_range_label(ranges, i) + " at offset " +
                              std::to_string(r.offset) + " with " + std::to_string(r.numel) +
                              " elements";
    if (r.numel <= 0) fail(where + " is empty");
    if (r.offset < previous_end) {
      fail(where + " starts before the previous range ends (" + std::to_string(previous_end) +
           "): ranges must be sorted by offset and must not overlap");
    }
    if (r.offset + r.numel > total_elements) {
      fail(where + " leaves the flat buffer of " + std::to_string(total_elements) + " elements");
    }
    previous_end = r.offset + r.numel;
  }
}

}  // namespace

std::vector<GradBucket> plan_grad_buckets(const std::vector<GradRange>& ranges,
                                          int64_t total_elements, size_t element_bytes,
                                          int64_t first_bucket_bytes, int64_t bucket_cap_bytes) {
  if (first_bucket_bytes <= 0 || bucket_cap_bytes <= 0) {
    fail("GradBuckets: bucket caps must be positive (first bucket " +
         std::to_string(first_bucket_bytes) + " bytes, others " + std::to_string(bucket_cap_bytes) +
         " bytes)");
  }
  validate_ranges(ranges, total_elements);
  const int count = static_cast<int>(ranges.size());
  // Where range i's share of the buffer ends: the next range's start, or the buffer's end.
  const auto span_end = [&](int i) {
    return i + 1 < count ? ranges[i + 1].offset : total_elements;
  };
  const auto element_bytes_i64 = static_cast<int64_t>(element_bytes);
  std::vector<GradBucket> buckets;
  int first = 0;
  while (first < count) {
    const int64_t cap = buckets.empty() ? first_bucket_bytes : bucket_cap_bytes;
    const int64_t start = buckets.empty() ? 0 : ranges[first].offset;
    int next = first + 1;  // a bucket always takes its first range, however large
    while (next < count && (span_end(next) - start) * element_bytes_i64 <= cap)
      ++next;
    buckets.push_back({start, span_end(next - 1) - start, first, next - first});
    first = next;
  }
  return buckets;
}

}  // namespace engine
