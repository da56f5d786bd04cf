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
  if (unit.empty() || unit == "s") ms = v * 1e3;
  else if (unit == "ms") ms = v;
  else if (unit == "us") ms = v / 1e3;
  else if (unit == "m") ms = v * 60e3;
  else if (unit == "h") ms = v * 3600e3;
  else return Status::InvalidArgument("invalid duration unit '" + unit + "' in '" + s + "' (use ms, s, m or h)");
  if (ms > 1e15) return Status::InvalidArgument("duration '" + s + "' is too long");
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(ms)));
}

}  // namespace gpuwasm
