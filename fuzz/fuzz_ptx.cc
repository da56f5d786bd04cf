// Fuzz target: the PTX lexer, parser and validator on arbitrary text. Any input must give a
// module or an error, never a crash, a hang or undefined behaviour.
#include <cstdint>
#include <string_view>

#include "ptx/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto module = gpuwasm::ptx::Parse(text);
  if (!module.ok()) (void)module.status().message().size();
  return 0;
}
