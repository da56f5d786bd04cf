// Parsing durations written by people: "250ms", "5s", "2m", "1h", "1.5s"; a bare number is
// seconds. Used by command-line flags and configuration.
#pragma once

#include <chrono>
#include <string_view>

#include "common/status.h"

namespace gpuwasm {

Result<std::chrono::milliseconds> ParseDuration(std::string_view text);

}  // namespace gpuwasm
