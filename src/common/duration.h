// Parsing quantities written by people, for command-line flags and configuration:
// durations "250ms", "5s", "2m", "1h", "1.5s" (a bare number is seconds) and byte sizes
// "4096", "64KiB", "16MiB", "1GiB", "1.5GB" (a bare number is bytes; KiB/MiB/GiB/TiB are powers
// of 1024, kB/KB/MB/GB/TB powers of 1000).
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace gpuwasm {

Result<std::chrono::milliseconds> ParseDuration(std::string_view text);
Result<uint64_t> ParseSize(std::string_view text);

}  // namespace gpuwasm
