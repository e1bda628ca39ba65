#include "op_cases.h"

#include <cstdlib>

#include "case_helpers.h"

namespace engine::ops_harness {

std::string OpCase::id() const {
  return op + "/" + (fp32_math == Fp32Math::tf32 ? "tf32" : dtype_suffix(dtype)) + "/" + name;
}

CaseConfig case_config_from_env() {
  CaseConfig config;
  if (const char* arch = std::getenv("ENGINE_OPS_ARCH")) config.arch = arch;
  if (const char* size = std::getenv("ENGINE_OPS_IMAGE_SIZE")) config.image_size = std::atoll(size);
  if (const char* batch = std::getenv("ENGINE_OPS_BATCH")) config.batch = std::atoll(batch);
  return config;
}

std::vector<OpCase> all_op_cases(const CaseConfig& config) {
  std::vector<OpCase> cases;
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (const bench::ConvLayer& layer :
         bench::resnet_conv_layers(config.arch, config.batch, config.image_size)) {
      add_conv_cases(cases, layer, dtype);
      if (dtype == DType::f32) add_conv_cases(cases, layer, dtype, Fp32Math::tf32);
      add_cast_case(cases, layer, dtype);
    }
    for (const bench::OpCase& c :
         bench::resnet_op_cases(config.arch, config.batch, config.image_size)) {
      if (c.op == "bn_forward" || c.op == "bn_backward") {
        add_batchnorm_cases(cases, c, dtype);
        // The stem's BatchNorm also far from zero (its input's mean moves with the data).
        if (c.name.find(" stem out ") != std::string::npos)
          add_batchnorm_cases(cases, c, dtype, 1e3);
        if (c.op == "bn_forward" && dtype == DType::f32) {
          for (double mean : {0.5, 1e3, 1e4})
            add_bn_sums_case(cases, c.name.substr(0, c.name.rfind(' ')), c.dims[3], mean);
        }
      } else if (c.op == "relu" || c.op == "relu_backward" || c.op == "add_relu") {
        add_activation_case(cases, c, dtype);
        if (c.op == "add_relu") {
          // The residual block's gradient join (a plain add), and the fill that zeroes or
          // initializes buffers, on the same activation.
          for (const char* other : {"add", "fill"}) {
            bench::OpCase sibling = c;
            sibling.op = other;
            sibling.name = c.name.substr(0, c.name.rfind(' ') + 1) + other;
            add_activation_case(cases, sibling, dtype);
          }
        }
        if (c.op != "relu_backward") add_activation_case(cases, c, dtype, 1);
      } else if (c.op == "maxpool" || c.op == "maxpool_backward") {
        add_maxpool_case(cases, c, dtype);
      } else if (c.op == "avgpool" || c.op == "avgpool_backward") {
        add_avgpool_case(cases, c, dtype);
      } else if (c.op.starts_with("linear_")) {
        add_linear_case(cases, c, dtype);
      } else if (c.op == "cross_entropy" || c.op == "topk") {
        add_loss_case(cases, c, dtype);
      } else if (c.op == "sgd" && dtype == DType::f32) {
        // Master weights: f32 only. The whole flat buffer (too large for the sim device), and
        // the stem's filters, as the view of it that each layer reads, with and without
        // Nesterov momentum.
        add_sgd_case(cases, c, false);
        const Conv2dShape stem =
            bench::resnet_conv_layers(config.arch, config.batch, config.image_size)[0].shape;
        for (bool nesterov : {false, true}) {
          const Shape filters = stem.filter_shape();
          const bench::OpCase slice{config.arch + " sgd step over conv1.weight " +
                                        shape_str(filters) + (nesterov ? " (nesterov)" : ""),
                                    "sgd", filters, 0, 0};
          add_sgd_case(cases, slice, nesterov);
        }
      }
    }
  }
  return cases;
}

}  // namespace engine::ops_harness
