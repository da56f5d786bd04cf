/* Guest side of the host-call benchmark: the same loop with and without a call to a trivial
 * host function (gpuwasm.input_len); the difference per iteration is the call's cost. */
#include <stdint.h>

__attribute__((import_module("gpuwasm"), import_name("input_len"))) int32_t input_len(void);

#define ITERS 10000000
static volatile int32_t sink;

__attribute__((export_name("with_calls"))) int32_t with_calls(void) {
  int32_t acc = 0;
  for (int32_t i = 0; i < ITERS; i++) acc += input_len() ^ i;
  return acc;
}

__attribute__((export_name("without_calls"))) int32_t without_calls(void) {
  int32_t acc = 0;
  for (int32_t i = 0; i < ITERS; i++) acc += sink ^ i;
  return acc;
}
