#include "common/names.h"

#include <algorithm>
#include <cstdio>

namespace gpuwasm {

std::string ListNames(std::vector<std::string> names, size_t shown) {
  std::sort(names.begin(), names.end());
  std::string out;
  for (size_t i = 0; i < names.size() && i < shown; ++i) out += (i == 0 ? "" : ", ") + names[i];
  if (names.size() > shown) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

std::string Hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace gpuwasm
