// Warnings of the data layer go to stderr, one line each, with the rank prefix; a sink can be
// installed (tests capture the lines, a trainer may route them to its log).
#pragma once

#include <functional>
#include <string>

namespace engine::data {

using WarningSink = std::function<void(const std::string& line)>;

// Prints "[rank r] warning: <message>" (through the sink when one is installed). Thread-safe.
void warn(const std::string& message);

// Installs `sink` (an empty function restores stderr) and returns the previous one.
WarningSink set_warning_sink(WarningSink sink);

}  // namespace engine::data
