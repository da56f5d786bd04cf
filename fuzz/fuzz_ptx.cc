// Fuzz target: the PTX lexer, parser and validator on arbitrary text, then the CPU device's
// decoder on every module the front end accepts, and the native-code translation of each of its
// kernels (a guest's PTX reaches all three). Any input must give a result or an error, never a
// crash, a hang or undefined behaviour. Every module the front end accepts also goes through
// print -> parse (the same tree again) and instrument -> print -> parse (the host's path): a
// difference or a refusal of the printed text aborts.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "device/cpu/native.h"
#include "device/cpu/program.h"
#include "ptx/instrument.h"
#include "ptx/parser.h"
#include "ptx/printer.h"

namespace {

// Whether an error of parsing printed text is only a limit the longer text ran into.
bool OverLimit(const gpuwasm::Status& s) {
  const std::string& m = s.message();
  return m.find("too many") != std::string::npos || m.find("exceeds the limit") != std::string::npos ||
         m.find("longer than") != std::string::npos;
}

void RoundTrips(const gpuwasm::ptx::Module& module) {
  using namespace gpuwasm::ptx;
  auto again = Parse(Print(module));
  if (!again.ok() ? !OverLimit(again.status()) : !Diff(module, *again).empty()) std::abort();
  auto instrumented = Instrument(module);
  if (!instrumented.ok()) return;  // refused instructions or reserved names: an error, as it should
  auto parsed = Parse(Print(*instrumented, {.keep_lines = true}));
  if (!parsed.ok() && !OverLimit(parsed.status())) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto module = gpuwasm::ptx::Parse(text);
  if (!module.ok()) {
    (void)module.status().message().size();
    return 0;
  }
  RoundTrips(*module);
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
