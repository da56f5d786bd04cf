// References of tests/conformance/atomics_ext.cu from the PTX ISA: each vector element is its own
// atomic, so the results are the max/min/sum of every thread's element with memory's initial
// zero; min and max order -0 below +0; the sums are exact (small multiples of 0.25, integers).
#include <bit>
#include <cmath>

#include "reference.h"

namespace gpuwasm::conformance {
namespace {

double HalfValue(uint16_t h) { return static_cast<double>(std::bit_cast<_Float16>(h)); }
double Bf16Value(uint16_t h) { return std::bit_cast<float>(uint32_t{h} << 16); }
uint16_t HalfBits(double v) { return std::bit_cast<uint16_t>(static_cast<_Float16>(v)); }

// The larger (max) or smaller of two non-NaN halves, -0 below +0.
uint16_t Pick(uint16_t a, uint16_t b, bool bf, bool max) {
  const double x = bf ? Bf16Value(a) : HalfValue(a), y = bf ? Bf16Value(b) : HalfValue(b);
  const bool a_smaller = x < y || (x == y && std::signbit(x) && !std::signbit(y));
  return (a_smaller != max) ? a : b;
}

REFERENCE(atomics_ext, vector_and_wide_atomics) {
  uint16_t mx[8] = {}, mn[8] = {};
  double add_h[4] = {}, add_b[4] = {};
  uint64_t count = 0, sum = 0;
  for (unsigned t = 0; t < 128; ++t) {
    const uint32_t* x = &in[t * 4];
    for (int k = 0; k < 8; ++k) {
      mx[k] = Pick(mx[k], static_cast<uint16_t>((k & 1 ? x[k / 2] >> 16 : x[k / 2]) & 0xfbff), false, true);
      mn[k] = Pick(mn[k], static_cast<uint16_t>((k & 1 ? x[k / 2] >> 16 : x[k / 2]) & 0xff7f), true, false);
    }
    add_h[0] += (x[0] & 7) * 0.25;  // __floats2half2_rn(a, b): a in the lower half
    add_h[1] += (x[1] & 7) * 0.25;
    add_h[2] += (x[2] & 7) * 0.25;
    add_h[3] -= (x[3] & 7) * 0.25;
    for (int k = 0; k < 4; ++k) add_b[k] += x[k] >> 31;
    ++count;
    sum += t;
  }
  for (int k = 0; k < 4; ++k) {
    out[k] = mx[2 * k] | uint32_t{mx[2 * k + 1]} << 16;
    out[4 + k] = mn[2 * k] | uint32_t{mn[2 * k + 1]} << 16;
  }
  out[8] = HalfBits(add_h[0]) | uint32_t{HalfBits(add_h[1])} << 16;
  out[9] = HalfBits(add_h[2]) | uint32_t{HalfBits(add_h[3])} << 16;
  auto bf = [](double v) { return std::bit_cast<uint32_t>(static_cast<float>(v)) >> 16; };  // exact integers
  out[10] = bf(add_b[0]) | bf(add_b[1]) << 16;
  out[11] = bf(add_b[2]) | bf(add_b[3]) << 16;
  out[12] = static_cast<uint32_t>(count);
  out[13] = static_cast<uint32_t>(count >> 32);
  out[14] = static_cast<uint32_t>(sum);
  out[15] = static_cast<uint32_t>(sum >> 32);
  for (unsigned t = 0; t < 128; ++t) {
    const uint32_t* x = &in[t * 4];
    const uint64_t vlo = uint64_t{x[0]} << 32 | x[1], vhi = uint64_t{x[2]} << 32 | x[3];
    const uint64_t wlo = vhi ^ 0x5555, whi = vlo + 7;
    uint32_t* slot = &out[16 + 4 * t];  // memory ends holding w
    slot[0] = static_cast<uint32_t>(wlo);
    slot[1] = static_cast<uint32_t>(wlo >> 32);
    slot[2] = static_cast<uint32_t>(whi);
    slot[3] = static_cast<uint32_t>(whi >> 32);
    uint32_t* res = &out[16 + 4 * 128 + 4 * t];
    res[0] = 0;                                                              // the first CAS found zeros
    res[1] = static_cast<uint32_t>(vlo) ^ static_cast<uint32_t>(vhi >> 32);  // the failing CAS and the exchange saw v
    res[2] = static_cast<uint32_t>(vlo >> 32) ^ static_cast<uint32_t>(vhi);
    res[3] = static_cast<uint32_t>(vlo) ^ static_cast<uint32_t>(vhi >> 7);
  }
}

}  // namespace
}  // namespace gpuwasm::conformance
