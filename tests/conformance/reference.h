// How a conformance case's C++ reference is written and registered (reference.cc runs them).
#pragma once

#include <bit>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cases.h"

namespace gpuwasm::conformance {

// Fills `out` (zeroed, out_words long) as the kernel would, from `in` (Input()).
using Reference = void (*)(const Case& c, const std::vector<uint32_t>& in, std::vector<uint32_t>& out);

std::map<std::string, Reference>& References();

struct Register {
  Register(const char* key, Reference r) { References()[key] = r; }
};

// REFERENCE(file, kernel) { ... } defines the reference of kernel `kernel` in <file>.cu.
#define GPUWASM_REF_CAT2(a, b) a##b
#define GPUWASM_REF_CAT(a, b) GPUWASM_REF_CAT2(a, b)
#define REFERENCE(file, kernel)                                                                           \
  static void kernel##_ref(const ::gpuwasm::conformance::Case& c, const std::vector<uint32_t>& in,        \
                           std::vector<uint32_t>& out);                                                   \
  static ::gpuwasm::conformance::Register GPUWASM_REF_CAT(reg_, kernel)(#file "/" #kernel, kernel##_ref); \
  static void kernel##_ref([[maybe_unused]] const ::gpuwasm::conformance::Case& c,                        \
                           [[maybe_unused]] const std::vector<uint32_t>& in, std::vector<uint32_t>& out)

// One warp's shuffles as the PTX ISA defines them (a lane whose source is out of range keeps its
// own value).
inline std::vector<uint32_t> ShflDown(const std::vector<uint32_t>& v, unsigned off) {
  std::vector<uint32_t> r(32);
  for (unsigned l = 0; l < 32; ++l) r[l] = l + off < 32 ? v[l + off] : v[l];
  return r;
}
inline std::vector<uint32_t> ShflXor(const std::vector<uint32_t>& v, unsigned mask) {
  std::vector<uint32_t> r(32);
  for (unsigned l = 0; l < 32; ++l) r[l] = v[l ^ mask];
  return r;
}

// spread.cuh's Spread: a random sign and mantissa, the exponent in [lo, lo + 7]; threads 0-3
// take inf, -inf, NaN and -0.
inline float Spread(uint32_t bits, int lo, unsigned t) {
  if (t < 4)
    return std::bit_cast<float>(t == 0 ? 0x7f800000u : t == 1 ? 0xff800000u : t == 2 ? 0x7fc00000u : 0x80000000u);
  return std::bit_cast<float>((bits & 0x807fffffu) | static_cast<uint32_t>(127 + lo + static_cast<int>(bits >> 23 & 7))
                                                         << 23);
}

}  // namespace gpuwasm::conformance
