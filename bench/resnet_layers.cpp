#include "bench/resnet_layers.h"

#include "kernels/error.h"

namespace engine::bench {

namespace {
ConvLayer layer(std::string name, int64_t batch, int64_t size, int64_t in, int64_t out,
                int64_t kernel, int64_t stride, int count) {
  return {std::move(name), make_conv2d_shape(batch, size, in, out, kernel, stride, kernel / 2),
          count};
}
}  // namespace

std::vector<ConvLayer> resnet_conv_layers(const std::string& arch, int64_t batch,
                                          int64_t image_size) {
  const int64_t s1 = image_size / 4, s2 = s1 / 2, s3 = s2 / 2, s4 = s3 / 2;  // 56, 28, 14, 7
  std::vector<ConvLayer> layers = {layer("stem 7x7/2 3->64", batch, image_size, 3, 64, 7, 2, 1)};
  if (arch == "resnet18") {
    const std::vector<ConvLayer> body = {
        layer("layer1 3x3 64->64", batch, s1, 64, 64, 3, 1, 4),
        layer("layer2.0 3x3/2 64->128", batch, s1, 64, 128, 3, 2, 1),
        layer("layer2.0 down 1x1/2 64->128", batch, s1, 64, 128, 1, 2, 1),
        layer("layer2 3x3 128->128", batch, s2, 128, 128, 3, 1, 3),
        layer("layer3.0 3x3/2 128->256", batch, s2, 128, 256, 3, 2, 1),
        layer("layer3.0 down 1x1/2 128->256", batch, s2, 128, 256, 1, 2, 1),
        layer("layer3 3x3 256->256", batch, s3, 256, 256, 3, 1, 3),
        layer("layer4.0 3x3/2 256->512", batch, s3, 256, 512, 3, 2, 1),
        layer("layer4.0 down 1x1/2 256->512", batch, s3, 256, 512, 1, 2, 1),
        layer("layer4 3x3 512->512", batch, s4, 512, 512, 3, 1, 3),
    };
    layers.insert(layers.end(), body.begin(), body.end());
    return layers;
  }
  if (arch == "resnet50") {
    // Bottlenecks (v1.5: the stride sits on the 3x3). Block 0 of each stage reads the
    // previous stage's width; the others read 4x the stage's width.
    const std::vector<ConvLayer> body = {
        layer("layer1.0 1x1 64->64", batch, s1, 64, 64, 1, 1, 1),
        layer("layer1 1x1 256->64", batch, s1, 256, 64, 1, 1, 2),
        layer("layer1 3x3 64->64", batch, s1, 64, 64, 3, 1, 3),
        layer("layer1 1x1 64->256", batch, s1, 64, 256, 1, 1, 3),
        layer("layer1.0 down 1x1 64->256", batch, s1, 64, 256, 1, 1, 1),
        layer("layer2.0 1x1 256->128", batch, s1, 256, 128, 1, 1, 1),
        layer("layer2.0 3x3/2 128->128", batch, s1, 128, 128, 3, 2, 1),
        layer("layer2 1x1 512->128", batch, s2, 512, 128, 1, 1, 3),
        layer("layer2 3x3 128->128", batch, s2, 128, 128, 3, 1, 3),
        layer("layer2 1x1 128->512", batch, s2, 128, 512, 1, 1, 4),
        layer("layer2.0 down 1x1/2 256->512", batch, s1, 256, 512, 1, 2, 1),
        layer("layer3.0 1x1 512->256", batch, s2, 512, 256, 1, 1, 1),
        layer("layer3.0 3x3/2 256->256", batch, s2, 256, 256, 3, 2, 1),
        layer("layer3 1x1 1024->256", batch, s3, 1024, 256, 1, 1, 5),
        layer("layer3 3x3 256->256", batch, s3, 256, 256, 3, 1, 5),
        layer("layer3 1x1 256->1024", batch, s3, 256, 1024, 1, 1, 6),
        layer("layer3.0 down 1x1/2 512->1024", batch, s2, 512, 1024, 1, 2, 1),
        layer("layer4.0 1x1 1024->512", batch, s3, 1024, 512, 1, 1, 1),
        layer("layer4.0 3x3/2 512->512", batch, s3, 512, 512, 3, 2, 1),
        layer("layer4 1x1 2048->512", batch, s4, 2048, 512, 1, 1, 2),
        layer("layer4 3x3 512->512", batch, s4, 512, 512, 3, 1, 2),
        layer("layer4 1x1 512->2048", batch, s4, 512, 2048, 1, 1, 3),
        layer("layer4.0 down 1x1/2 1024->2048", batch, s3, 1024, 2048, 1, 2, 1),
    };
    layers.insert(layers.end(), body.begin(), body.end());
    return layers;
  }
  fail("bench: unknown --arch '" + arch + "' (use resnet18 or resnet50)");
}

}  // namespace engine::bench
