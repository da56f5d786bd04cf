#include "common/unique_name.h"

#include <random>

namespace gpuwasm {

std::string UniqueSuffix() {
  std::random_device rd;  // getrandom: no seed shared with forked processes or other nodes
  uint64_t v = (uint64_t{rd()} << 32) | rd();
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (int i = 15; i >= 0; --i) s.push_back(hex[(v >> (i * 4)) & 0xf]);
  return s;
}

}  // namespace gpuwasm
