// The pieces of TensorBoard's event files: CRC-32C against its published check values
// (RFC 3720 B.4 and the "123456789" check), TFRecord framing, and the Event bytes of a
// scalar laid out field by field as protobuf's wire format puts them.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "train/crc32c.h"
#include "train/tensorboard_writer.h"

namespace engine::train {
namespace {

TEST(Crc32c, MatchesPublishedCheckValues) {
  EXPECT_EQ(crc32c(""), 0u);
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);    // RFC 3720 B.4: 32 zeros
  EXPECT_EQ(crc32c(std::string(32, '\xFF')), 0x62A8AB43u);  // 32 bytes of 0xFF
  std::string ascending(32, '\0');
  for (int i = 0; i < 32; ++i)
    ascending[i] = static_cast<char>(i);
  EXPECT_EQ(crc32c(ascending), 0x46DD794Eu);  // 0x00..0x1F
  const uint32_t crc = crc32c("123456789");
  EXPECT_EQ(masked_crc32c("123456789"), ((crc >> 15) | (crc << 17)) + 0xA282EAD8u);
}

uint32_t u32_at(const std::string& bytes, size_t at) {
  uint32_t value = 0;
  std::memcpy(&value, bytes.data() + at, 4);
  return value;
}

TEST(TensorBoardWriter, FramesEachRecordWithItsLengthAndChecksums) {
  const std::string data = "event bytes";
  const std::string record = tfrecord(data);
  ASSERT_EQ(record.size(), 8 + 4 + data.size() + 4);
  uint64_t length = 0;
  std::memcpy(&length, record.data(), 8);
  EXPECT_EQ(length, data.size());
  EXPECT_EQ(u32_at(record, 8), masked_crc32c(record.substr(0, 8)));
  EXPECT_EQ(record.substr(12, data.size()), data);
  EXPECT_EQ(u32_at(record, 12 + data.size()), masked_crc32c(data));
}

TEST(TensorBoardWriter, WritesTheEventFieldsOfAScalar) {
  const float value = 0.25f;
  const std::string event = scalar_event(1.5, 300, "epoch/val_loss", value);
  std::string expected;
  expected += '\x09';  // field 1 (wall_time), fixed64
  const double wall_time = 1.5;
  expected.append(reinterpret_cast<const char*>(&wall_time), 8);
  expected += "\x10\xAC\x02";  // field 2 (step), varint 300
  // field 5 (summary): Summary{value (1): Value{tag (1), simple_value (2, fixed32)}}
  const std::string tag = "epoch/val_loss";
  std::string summary_value = "\x0A" + std::string(1, static_cast<char>(tag.size())) + tag + "\x15";
  summary_value.append(reinterpret_cast<const char*>(&value), 4);
  const std::string summary =
      "\x0A" + std::string(1, static_cast<char>(summary_value.size())) + summary_value;
  expected += "\x2A" + std::string(1, static_cast<char>(summary.size())) + summary;
  EXPECT_EQ(event, expected);
  EXPECT_EQ(file_version_event(2.0).substr(9), std::string("\x1A\x0D") + "brain.Event:2");
}

}  // namespace
}  // namespace engine::train
