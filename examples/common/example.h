/* Small helpers shared by the example guests: checked wasi_cuda calls and the device banner. */
#ifndef GPUWASM_EXAMPLE_H_
#define GPUWASM_EXAMPLE_H_

#include <stdio.h>
#include <stdlib.h>

#include "wasi_cuda.h"

/* Evaluates a wasi_cuda call; on failure prints the call, its code and the host's reason, and
 * exits with status 2. Yields the call's (non-negative) result. */
#define CHECK(call)                                                                   \
  ({                                                                                  \
    int32_t r_ = (call);                                                              \
    if (r_ < 0) {                                                                     \
      char why_[256];                                                                 \
      fprintf(stderr, "%s failed with %d: %s\n", #call, r_, wcu_error_text(why_, sizeof why_)); \
      exit(2);                                                                        \
    }                                                                                 \
    r_;                                                                               \
  })

/* The name of the device the guest runs on. */
static inline const char* example_device_name(void) {
  static wcu_device_info_t info;
  CHECK(wcu_device_info(&info, sizeof info));
  info.name[sizeof info.name - 1] = 0;
  return info.name;
}

/* Loads the embedded PTX and returns the kernel handle for `name`. */
static inline int32_t example_kernel(const unsigned char* ptx, unsigned ptx_len, const char* name) {
  int32_t module = CHECK(wcu_module_load(ptx, (int32_t)ptx_len));
  return CHECK(wcu_function(module, name));
}

/* Deterministic pseudo-random floats in [-1, 1). */
static inline float example_random(unsigned* state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) / 8388608.0f - 1.0f;
}

#endif
