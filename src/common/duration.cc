#include "common/duration.h"

#include <cmath>
#include <cstdlib>
#include <string>

namespace gpuwasm {

Result<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  std::string s(text);
  if (s.empty()) return Status::InvalidArgument("empty duration");
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(v) || v < 0) {
    return Status::InvalidArgument("invalid duration '" + s + "' (examples: 250ms, 5s, 2m)");
  }
  std::string unit(end);
  double ms;
  if (unit.empty() || unit == "s")
    ms = v * 1e3;
  else if (unit == "ms")
    ms = v;
  else if (unit == "us")
    ms = v / 1e3;
  else if (unit == "m")
    ms = v * 60e3;
  else if (unit == "h")
    ms = v * 3600e3;
  else
    return Status::InvalidArgument("invalid duration unit '" + unit + "' in '" + s + "' (use ms, s, m or h)");
  if (ms > 1e15) return Status::InvalidArgument("duration '" + s + "' is too long");
  const int64_t rounded = std::llround(ms);
  if (v > 0 && rounded == 0) {
    return Status::InvalidArgument("duration '" + s + "' is shorter than 1 ms, the resolution of deadlines");
  }
  return std::chrono::milliseconds(rounded);
}

Result<uint64_t> ParseSize(std::string_view text) {
  std::string s(text);
  if (s.empty()) return Status::InvalidArgument("empty size");
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(v) || v < 0 || s[0] == '-' || s[0] == '+') {
    return Status::InvalidArgument("invalid size '" + s + "' (examples: 4096, 64KiB, 16MiB, 1GiB)");
  }
  std::string unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  double scale;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "KiB")
    scale = 1024.0;
  else if (unit == "MiB")
    scale = 1024.0 * 1024;
  else if (unit == "GiB")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "TiB")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "kB" || unit == "KB")
    scale = 1e3;
  else if (unit == "MB")
    scale = 1e6;
  else if (unit == "GB")
    scale = 1e9;
  else if (unit == "TB")
    scale = 1e12;
  else
    return Status::InvalidArgument("invalid size unit '" + unit + "' in '" + s +
                                   "' (use B, KiB, MiB, GiB, TiB, kB, MB, GB, TB)");
  double bytes = v * scale;
  if (bytes >= 18446744073709551615.0) return Status::InvalidArgument("size '" + s + "' is too large");
  if (bytes != std::floor(bytes)) return Status::InvalidArgument("size '" + s + "' is not a whole number of bytes");
  return static_cast<uint64_t>(bytes);
}

}  // namespace gpuwasm
