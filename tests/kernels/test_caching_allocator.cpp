// The caching allocator's logic on a fake backend that counts calls and can run out of
// memory, so what runs on a GPU is tested here.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "kernels/caching_allocator.h"
#include "kernels/error.h"

namespace engine {
namespace {

struct FakeBackend {
  size_t capacity = size_t{1} << 30;
  size_t used = 0;
  int allocations = 0;
  int releases = 0;
  std::map<void*, size_t> live;  // block -> bytes

  CachingAllocator make() {
    return CachingAllocator(
        "fake",
        [this](size_t bytes) -> void* {
          if (used + bytes > capacity) throw OutOfMemoryError("fake device out of memory");
          used += bytes;
          ++allocations;
          void* p = std::malloc(bytes);
          live.emplace(p, bytes);
          return p;
        },
        [this](void* p) {
          ++releases;
          used -= live.at(p);
          live.erase(p);
          std::free(p);
        });
  }
};

TEST(CachingAllocator, RoundsSizesIntoFewBins) {
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::round_size(1 << 20), size_t{1} << 20);
  EXPECT_EQ(CachingAllocator::round_size((1 << 20) + 1), size_t{5} << 18);  // 1.25 MiB
  EXPECT_EQ(CachingAllocator::round_size(size_t{3} << 20), size_t{3} << 20);
  for (size_t bytes = 1; bytes < (size_t{1} << 28); bytes = bytes * 3 + 7) {
    const size_t rounded = CachingAllocator::round_size(bytes);
    EXPECT_GE(rounded, bytes);
    EXPECT_LE(rounded, std::max<size_t>(bytes + 511, bytes + bytes / 4 + 1)) << bytes;
  }
}

TEST(CachingAllocator, ReusesFreedBlocksWithoutSystemCalls) {
  FakeBackend backend;
  CachingAllocator allocator = backend.make();
  for (int step = 0; step < 10; ++step) {  // a training loop allocating the same sizes
    void* a = allocator.allocate(1000);
    void* b = allocator.allocate(3 << 20);
    allocator.deallocate(a);
    allocator.deallocate(b);
  }
  EXPECT_EQ(backend.allocations, 2);
  const auto stats = allocator.stats();
  EXPECT_EQ(stats.cache_hits, 18u);
  EXPECT_EQ(stats.bytes_in_use, 0u);
  EXPECT_EQ(stats.bytes_cached, 1024u + (3u << 20));
  EXPECT_EQ(stats.peak_bytes_in_use, 1024u + (3u << 20));
  allocator.release_cached();
  EXPECT_EQ(backend.releases, 2);
  EXPECT_TRUE(backend.live.empty());
}

TEST(CachingAllocator, ZeroBytesIsNullAndNullIsIgnored) {
  FakeBackend backend;
  CachingAllocator allocator = backend.make();
  EXPECT_EQ(allocator.allocate(0), nullptr);
  allocator.deallocate(nullptr);
  EXPECT_EQ(backend.allocations, 0);
}

TEST(CachingAllocator, ReleasesTheCacheAndRetriesWhenOutOfMemory) {
  FakeBackend backend;
  backend.capacity = 4 << 20;
  CachingAllocator allocator = backend.make();
  allocator.deallocate(allocator.allocate(3 << 20));  // 3 MiB cached
  void* p = allocator.allocate(2 << 20);              // does not fit beside the cache
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(backend.releases, 1);
  try {
    allocator.allocate(3 << 20);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& error) {
    EXPECT_NE(std::string(error.what()).find("fake: 2.0 MiB in use"), std::string::npos)
        << error.what();
  }
  allocator.deallocate(p);
}

TEST(CachingAllocator, DoubleFreeIsAnError) {
  FakeBackend backend;
  CachingAllocator allocator = backend.make();
  void* p = allocator.allocate(64);
  allocator.deallocate(p);
  EXPECT_THROW(allocator.deallocate(p), Error);
}

}  // namespace
}  // namespace engine
