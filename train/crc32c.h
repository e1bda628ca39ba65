// CRC-32C (Castagnoli), the checksum of TFRecord framing (train/tensorboard_writer.h), and
// TFRecord's "masked" form of it, which keeps a CRC stored inside checksummed data from
// checksumming to a constant.
#pragma once

#include <cstdint>
#include <string_view>

namespace engine::train {

// The reflected CRC with polynomial 0x1EDC6F41 (0x82F63B78 reversed), initial and final XOR
// 0xFFFFFFFF: crc32c("123456789") == 0xE3069283.
uint32_t crc32c(std::string_view bytes);

// ((crc >> 15) | (crc << 17)) + 0xA282EAD8 (TensorFlow's crc32c::Mask).
uint32_t masked_crc32c(std::string_view bytes);

}  // namespace engine::train
