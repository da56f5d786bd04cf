// Fuzz target: the PTX lexer, parser and validator on arbitrary text, then the CPU device's
// decoder on every module the front end accepts, and the native-code translation of each of its
// kernels (a guest's PTX reaches all three). Any input must give a result or an error, never a
// crash, a hang or undefined behaviour.
#include <cstdint>
#include <string_view>

#include "device/cpu/native.h"
#include "device/cpu/program.h"
#include "ptx/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto module = gpuwasm::ptx::Parse(text);
  if (!module.ok()) {
    (void)module.status().message().size();
    return 0;
  }
  auto program = gpuwasm::device::cpu::Decode(*module);
  if (!program.ok()) {
    (void)program.status().message().size();
    return 0;
  }
  for (const auto& kernel : program->kernels) {
    auto source = gpuwasm::device::cpu::TranslateKernel(*program, kernel);
    (void)(source.ok() ? source->c.size() : source.status().message().size());
  }
  return 0;
}
