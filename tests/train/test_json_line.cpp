// The metrics files' lines (train/json_line.h): their bytes, and strings escaped by nlohmann.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "train/json_line.h"

namespace engine::train {
namespace {

TEST(JsonLine, MetricsLineBytes) {
  const std::string line = JsonLine()
                               .add("epoch", 3)
                               .add("loss", 0.1)
                               .add("lr", 1e-05)
                               .add("val_loss", std::nan(""))
                               .add("step", int64_t{1} << 40)
                               .add("arch", "resnet18")
                               .str();
  EXPECT_EQ(line,
            R"({"epoch": 3, "loss": 0.1, "lr": 1e-05, "val_loss": null, "step": 1099511627776, )"
            R"("arch": "resnet18"})");
}

TEST(JsonLine, StringsAreEscaped) {
  EXPECT_EQ(json_quote("q\" b\\ \n\t \x01 \xc3\xa9"), "\"q\\\" b\\\\ \\n\\t \\u0001 \xc3\xa9\"");
  // Not UTF-8: U+FFFD, so that the line still reads as JSON.
  EXPECT_EQ(json_quote("bad \xff"), "\"bad \xef\xbf\xbd\"");
}

}  // namespace
}  // namespace engine::train
