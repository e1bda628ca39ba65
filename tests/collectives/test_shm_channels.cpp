// The shared-memory FIFOs: messages arrive whole and in order through few slots (the sender
// waits for free ones), the inline/payload boundary, zero-byte messages, a sender running
// ahead by `slots` messages without waiting, and the timeout naming the silent peer.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "shm_ranks.h"

namespace engine {
namespace {

using testing::make_segment;
using testing::shm_options;
using testing::test_context;

std::vector<std::byte> pattern(size_t bytes, int seed) {
  std::vector<std::byte> data(bytes);
  for (size_t i = 0; i < bytes; ++i)
    data[i] = static_cast<std::byte>((i * 31 + seed * 7) & 0xff);
  return data;
}

TEST(ShmChannels, ManyMessagesArriveWholeAndInOrderThroughTwoSlots) {
  const ShmOptions options = shm_options(2, 4096);
  const ShmLayout layout = ShmTransport::layout_for(2, options);
  auto segment = make_segment(2, options);
  const size_t sizes[] = {0, 1, 47, 48, 49, 64, 1000, 4096};
  constexpr int kMessages = 2000;
  std::thread sender([&] {
    ShmChannels channels(segment->data(), layout, 0, 0);
    channels.set_context(test_context("send", 0));
    for (int m = 0; m < kMessages; ++m) {
      const size_t bytes = sizes[m % std::size(sizes)];
      const auto data = pattern(bytes, m);
      std::memcpy(channels.begin_send(1, bytes), data.data(), bytes);
      channels.end_send(1, bytes);
    }
  });
  ShmChannels channels(segment->data(), layout, 1, 0);
  channels.set_context(test_context("recv", 1));
  int wrong = 0;
  for (int m = 0; m < kMessages; ++m) {
    const size_t bytes = sizes[m % std::size(sizes)];
    const ShmChannels::Message message = channels.begin_recv(0);
    const auto expected = pattern(bytes, m);
    if (message.bytes != bytes || std::memcmp(message.data, expected.data(), bytes) != 0) ++wrong;
    channels.end_recv(0);
  }
  sender.join();
  EXPECT_EQ(wrong, 0);
}

TEST(ShmChannels, SenderRunsAheadBySlotsWithoutWaiting) {
  const ShmOptions options = shm_options(4, 256);
  auto segment = make_segment(2, options);
  ShmChannels sender(segment->data(), ShmTransport::layout_for(2, options), 0, 0);
  // No receiver runs: four sends must complete, the fifth would wait (and time out).
  sender.set_context(test_context("all_reduce", 0, std::chrono::milliseconds(200)));
  for (int m = 0; m < 4; ++m) {
    sender.begin_send(1, 100);
    sender.end_send(1, 100);
  }
  try {
    sender.begin_send(1, 100);
    FAIL() << "the fifth send should have waited for a free slot";
  } catch (const CollectiveTimeout& e) {
    EXPECT_NE(
        std::string(e.what()).find("rank 0 waited for a free slot at rank 1, which never answered"),
        std::string::npos)
        << e.what();
  }
}

TEST(ShmChannels, TimeoutNamesTheOperationTheRankAndThePeer) {
  const ShmOptions options = shm_options(2, 256);
  auto segment = make_segment(3, options);
  ShmChannels receiver(segment->data(), ShmTransport::layout_for(3, options), 1, 0);
  OpContext context = test_context("all_reduce", 1, std::chrono::milliseconds(150));
  context.sequence = 12;
  context.bytes = 4096;
  receiver.set_context(context);
  try {
    receiver.begin_recv(2);
    FAIL() << "nobody sent: the receive must time out";
  } catch (const CollectiveTimeout& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("all_reduce #12 (ring-shm, 4096 bytes) timed out"), std::string::npos)
        << message;
    EXPECT_NE(message.find("rank 1 waited for data from rank 2, which never answered"),
              std::string::npos)
        << message;
  }
}

TEST(ShmChannels, SegmentOfAnotherShapeIsRejected) {
  const ShmOptions options = shm_options(2, 256);
  auto segment = make_segment(2, options);
  ShmLayout other = ShmTransport::layout_for(2, options);
  other.slot_bytes = 512;
  EXPECT_THROW(ShmChannels(segment->data(), other, 0, 0), Error);
}

}  // namespace
}  // namespace engine
