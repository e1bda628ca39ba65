// The two torchvision pipelines of ImageNet training, as one configuration:
//   train: RandomResizedCrop(output_size, scale, ratio) -> RandomHorizontalFlip(p)
//          [-> RandAugment | TrivialAugmentWide] (data/auto_augment.h)
//   eval:  Resize(resize_size) -> CenterCrop(output_size)
// both followed by ToTensor + Normalize(mean, std) into an NHWC slot of a batch, and in
// training [-> RandomErasing] (data/random_erasing.h): torchvision's classification reference
// order (presets.ClassificationPresetTrain).
//
// plan_sample decides everything from the header and the random draws before a pixel is
// decoded, so a JPEG decoder can skip what the crop does not need (region decoding, always
// exact), and a large JPEG can be decoded at 1/2, 1/4 or 1/8 size through the scaled IDCT
// (jpeg_dct_downscale). Without downscaling the output equals torchvision's bit for bit; with
// it, it is a close antialiased approximation (only taken when the source region is at least
// twice the size it is resized to).
#pragma once

#include "data/auto_augment.h"
#include "data/crop_geometry.h"
#include "data/decode.h"
#include "data/normalize.h"
#include "data/random.h"
#include "data/random_erasing.h"
#include "data/resample.h"

namespace engine::data {

enum class Augmentation { train, eval };

struct TransformConfig {
  Augmentation augmentation = Augmentation::train;
  int output_size = 224;  // RandomResizedCrop / CenterCrop size (square)
  int resize_size = 256;  // eval: Resize's short side
  RandomResizedCropOptions crop;
  double flip_probability = 0.5;
  ChannelValues mean = kImageNetMean;
  ChannelValues std = kImageNetStd;
  bool jpeg_dct_downscale = true;
  // Training only; off by default, and then no draws and the same bits as without them.
  AutoAugmentOptions auto_augment;
  RandomErasingOptions random_erasing;
};

// The torchvision-level description of one sample, then how it is computed.
struct SamplePlan {
  CropBox crop;           // train: RandomResizedCrop's box in full-size pixels; eval: CenterCrop's
  ImageSize resized;      // eval: Resize's output size; train: output_size x output_size
  bool flip = false;      // RandomHorizontalFlip fired
  int scale_eighths = 8;  // decode at this many eighths of full size
  DecodeRegion decode_region;  // the decoded pixels the resize reads (scaled coordinates)
  CropBox source_window;       // the part of the decoded image the resize reads
  ResizeRequest resize;        // relative to source_window
};

// Draw order (train): RandomResizedCrop's draws, then one uniform for the flip, as torchvision
// draws them in Compose order. The augmentation's and erasing's draws follow, in
// SampleProcessor::process.
SamplePlan plan_sample(const ImageHeader& header, const TransformConfig& config,
                       RandomSource& random);

}  // namespace engine::data
