// Packs a kernel's arguments at the offsets of its .param list (the benchmarks' launches).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "device/device.h"

namespace gpuwasm::bench {

// The parameter buffer with `args` in the kernel's first parameters, in order (the rest zero).
template <class... A>
std::vector<uint8_t> Pack(const device::KernelSignature& sig, A... args) {
  std::vector<uint8_t> b(sig.param_bytes);
  size_t i = 0;
  auto put = [&](auto v) {
    std::memcpy(b.data() + sig.params[i].offset, &v, sizeof v);
    ++i;
  };
  (put(args), ...);
  return b;
}

}  // namespace gpuwasm::bench
