// Building small wasm modules byte by byte in tests: LEB128 numbers and sections.
#pragma once

#include <cstdint>
#include <string>

namespace gpuwasm::testing {

inline std::string Leb(uint64_t n) {
  std::string out;
  do {
    uint8_t b = n & 0x7f;
    n >>= 7;
    out.push_back(static_cast<char>(n != 0 ? b | 0x80 : b));
  } while (n != 0);
  return out;
}

inline std::string Section(int id, const std::string& body) {
  return std::string(1, static_cast<char>(id)) + Leb(body.size()) + body;
}

}  // namespace gpuwasm::testing
