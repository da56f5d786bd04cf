#include "common/names.h"

#include <algorithm>

namespace gpuwasm {

std::string ListNames(std::vector<std::string> names, size_t shown) {
  std::sort(names.begin(), names.end());
  std::string out;
  for (size_t i = 0; i < names.size() && i < shown; ++i) out += (i == 0 ? "" : ", ") + names[i];
  if (names.size() > shown) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

}  // namespace gpuwasm
