#include "nn/conv_plan_file.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernels/error.h"
#include "kernels/runtime.h"
#include "nn/conv_plan_build.h"

namespace engine::nn {

namespace {

std::string slug(const std::string& name) {
  std::string out;
  for (const char c : name) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    const bool upper = c >= 'A' && c <= 'Z';
    out.push_back(alnum ? c : upper ? static_cast<char>(c - 'A' + 'a') : '-');
  }
  return out;
}

std::string cache_folder() {
  if (const char* dir = std::getenv("RESNET_ENGINE_CACHE"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  if (const char* dir = std::getenv("XDG_CACHE_HOME"); dir != nullptr && *dir != '\0') {
    return std::string(dir) + "/resnet-engine";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && *home != '\0' ? home : ".") + "/.cache/resnet-engine";
}

// Why a table written for `found` cannot stand for `expected` ("" when it can).
std::string mismatch(const ConvPlanOrigin& found, const ConvPlanOrigin& expected) {
  if (found.gpu != expected.gpu) {
    return "it was timed on a " + found.gpu + ", this is a " + expected.gpu;
  }
  if (found.cuda != expected.cuda) {
    return "it was timed with CUDA " + found.cuda + ", this is CUDA " + expected.cuda;
  }
  if (found.kernels != expected.kernels) {
    return "it was timed with other CUDA kernels (kernel set " + found.kernels + ", this build's " +
           expected.kernels + ")";
  }
  return "";
}

}  // namespace

ConvPlanOrigin conv_plan_origin(int cuda_device_index) {
  return {cuda_device_name(cuda_device_index), cuda_versions(), build::kKernelSetHash};
}

std::string default_conv_plan_path(const ConvPlanOrigin& origin) {
  return cache_folder() + "/conv-plans-" + slug(origin.gpu) + ".tsv";
}

ConvPlans read_conv_plan_file(const std::string& path, const ConvPlanOrigin& expected,
                              std::string* warning) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  const auto ignore = [&](const std::string& why) {
    if (warning != nullptr) {
      *warning = "ignoring the convolution plans in " + path + ": " + why +
                 "; timing the convolutions again";
    }
    return ConvPlans{};
  };
  try {
    ParsedConvPlans parsed = parse_conv_plans(text.str(), path);
    const std::string why = mismatch(parsed.origin, expected);
    if (!why.empty()) return ignore(why);
    return std::move(parsed.plans);
  } catch (const Error& e) {
    return ignore(e.what());
  }
}

void write_conv_plan_file(const std::string& path, const ConvPlans& plans,
                          const ConvPlanOrigin& origin) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code error;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), error);
  if (error) fail("cannot make the folder of " + path + ": " + error.message());
  // A name no other process writing the same cache uses, then an atomic rename: a reader sees
  // the old file or the new one, never a part.
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << conv_plans_text(plans, origin);
    out.close();
    if (!out) {
      fs::remove(temporary, error);
      fail("cannot write the convolution plans to " + temporary);
    }
  }
  fs::rename(temporary, target, error);
  if (error) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    fail("cannot rename " + temporary + " to " + path + ": " + error.message());
  }
}

ConvPlans default_conv_plans(const ConvPlanOrigin& origin) {
  for (size_t i = 0; i < build::kDefaultTableCount; ++i) {
    const build::EmbeddedTable& table = build::kDefaultTables[i];
    ParsedConvPlans parsed =
        parse_conv_plans(table.text, std::string("nn/conv_plans/") + table.file_name);
    if (parsed.origin.gpu == origin.gpu) return std::move(parsed.plans);
  }
  return {};
}

}  // namespace engine::nn
