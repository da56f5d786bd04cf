// backtrace: traps at a known depth, for the wasm backtrace tests (backtrace_test.cc). Each
// export reaches its trap through named functions the C compiler keeps as frames (called from
// two places, or recursive), one of them in a C++ namespace (its name-section name is mangled).
#include <stdint.h>

namespace demo {

volatile uint32_t g_far = 0xfffffff0u;  // past any linear memory
volatile uint32_t g_sink = 0;

__attribute__((noinline)) uint32_t load_past_the_end(uint32_t k) {
  uint32_t sum = 0;
  for (uint32_t i = 0; i < k; ++i) sum += *reinterpret_cast<volatile uint32_t*>(g_far + i * 4);
  return sum;
}

}  // namespace demo

extern "C" {

__attribute__((noinline)) uint32_t walk_table(uint32_t k) {
  uint32_t a = demo::load_past_the_end(k);
  uint32_t b = demo::load_past_the_end(k + 1);
  return a ^ b;
}

// A store after the call, so no tail call; no local in memory, so the native stack runs out, not
// the guest's.
__attribute__((noinline)) uint32_t recurse(uint32_t depth) {
  if (depth == demo::g_far) return 0;  // never: the stack runs out first
  uint32_t below = recurse(depth + 1);
  demo::g_sink = below;
  return below;
}

__attribute__((noinline)) void spin_forever(uint32_t k) {
  for (;;) demo::g_sink = demo::g_sink + k;
}

__attribute__((noinline)) void divide(uint32_t k) { demo::g_sink = 100u / (demo::g_sink & k); }

__attribute__((export_name("oob"))) uint32_t oob(void) { return walk_table(demo::g_sink + 3) + walk_table(5); }
__attribute__((export_name("deep"))) uint32_t deep(void) { return recurse(demo::g_sink); }
__attribute__((export_name("spin"))) void spin(void) {
  spin_forever(demo::g_sink + 1);
  spin_forever(2);
}
__attribute__((export_name("div_zero"))) void div_zero(void) {
  divide(0);
  divide(demo::g_sink);
}

}  // extern "C"
