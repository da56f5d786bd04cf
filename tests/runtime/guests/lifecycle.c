/* lifecycle: guest entry points that end badly in every way an invocation can, for the runtime's
 * lifecycle tests. Each leaves device buffers, modules and launches behind for the runtime to
 * release. It is a reactor without _start or run: deploying it without an entry point fails. */
#include <stdint.h>
#include <stdio.h>
#include <wasi/api.h>

#include "wasi_cuda.h"
#include "delay_ptx.h"
#include "oob_write_ptx.h"
#include "spin_ptx.h"

#define EXPORT(name) __attribute__((export_name(#name))) int32_t name(void)

static int32_t load(const unsigned char* ptx, unsigned len, const char* kernel) {
  int32_t m = wcu_module_load(ptx, (int32_t)len);
  return m < 0 ? m : wcu_function(m, kernel);
}

static int64_t input_u64(int64_t fallback) {
  int64_t v = 0;
  return gpuwasm_input_len() >= 8 && gpuwasm_input_read(&v, 8, 0) == 8 ? v : fallback;
}

/* A kernel writes out of bounds: the synchronize reports the device fault; exits 3. */
EXPORT(fault) {
  int32_t k = load(oob_write_ptx, oob_write_ptx_len, "oob_write");
  int32_t d = wcu_mem_alloc(256 * 4);
  if (k < 0 || d < 0) return 1;
  wcu_arg args[] = {wcu_arg_buffer(d, 0), wcu_arg_u32(256), wcu_arg_u32(1)};
  if (wcu_launch(k, 2, 1, 1, 128, 1, 1, 0, args, 3) != 0) return 2;
  return wcu_synchronize() == WCU_ERR_DEVICE ? 3 : 4;
}

/* A kernel stores 4 GiB past its buffer (a wild pointer): exits 3 when synchronize reports the
 * device fault, with the error text as its output. */
EXPORT(wild_store) {
  int32_t k = load(oob_write_ptx, oob_write_ptx_len, "oob_write");
  int32_t d = wcu_mem_alloc(256 * 4);
  if (k < 0 || d < 0) return 1;
  wcu_arg args[] = {wcu_arg_buffer(d, 0), wcu_arg_u32(1), wcu_arg_u32(1u << 30)};
  if (wcu_launch(k, 1, 1, 1, 32, 1, 1, 0, args, 3) != 0) return 2;
  if (wcu_synchronize() != WCU_ERR_DEVICE) return 4;
  char why[256];
  int32_t n = wcu_last_error(why, sizeof why);
  gpuwasm_output_write(why, n < (int32_t)sizeof why ? n : (int32_t)sizeof why);
  return 3;
}

/* Starts a 5 s kernel, then traps while it runs. */
EXPORT(trap_mid_launch) {
  int32_t k = load(delay_ptx, delay_ptx_len, "delay");
  int32_t d = wcu_mem_alloc(1 << 20);
  if (k < 0 || d < 0) return 1;
  wcu_arg slow[] = {wcu_arg_u64(5000ull * 1000 * 1000)};
  if (wcu_launch(k, 1, 1, 1, 1, 1, 1, 0, slow, 1) != 0) return 2;
  __builtin_trap();
}

/* Allocates `input` bytes (default 1 MiB), loads a module, then spins until the deadline. */
EXPORT(spin_holding) {
  int32_t k = load(delay_ptx, delay_ptx_len, "delay");
  int32_t d = wcu_mem_alloc(input_u64(1 << 20));
  if (k < 0 || d < 0) return 1;
  for (volatile int i = 0;; i++) {
  }
}

/* Allocates `input` bytes of device memory, fills them (so they are really used), then spins until
 * the deadline. */
EXPORT(fill_holding) {
  int64_t n = input_u64(1 << 20);
  int32_t d = wcu_mem_alloc(n);
  if (d < 0) return 1;
  if (wcu_memset_d8(d, 0, 0x5a, n) != 0 || wcu_synchronize() != 0) return 2;
  for (volatile int i = 0;; i++) {
  }
}

/* Allocates `input` bytes; exits 0, or with the negated error code (8: WCU_ERR_QUOTA). */
EXPORT(alloc) {
  int32_t d = wcu_mem_alloc(input_u64(1 << 20));
  return d < 0 ? -d : 0;
}

/* Prints two lines with stdio, then traps: both lines must reach the host (stdout is a terminal
 * to the guest, so its C library writes it line by line). */
EXPORT(print_then_trap) {
  printf("first line\n");
  printf("second line\n");
  __builtin_trap();
}

/* Launches a 300 ms kernel and returns without synchronizing: the launch is discarded, and the
 * invocation says so. */
EXPORT(forgets_synchronize) {
  int32_t k = load(delay_ptx, delay_ptx_len, "delay");
  if (k < 0) return 1;
  wcu_arg args[] = {wcu_arg_u64(300ull * 1000 * 1000)};
  return wcu_launch(k, 1, 1, 1, 1, 1, 1, 0, args, 1) == 0 ? 0 : 2;
}

/* Prints its argv and environment, one per line ("arg: ..." and "env: ..."), read with the WASI
 * calls (a reactor has no main to get them). */
static void print_strings(const char* what, int is_env) {
  static char* ptrs[256];
  static char buf[32768];
  __wasi_size_t count = 0, size = 0;
  if ((is_env ? __wasi_environ_sizes_get(&count, &size) : __wasi_args_sizes_get(&count, &size)) != 0 ||
      count > 256 || size > sizeof buf) {
    printf("%s: too many\n", what);
    return;
  }
  if ((is_env ? __wasi_environ_get((uint8_t**)ptrs, (uint8_t*)buf) : __wasi_args_get((uint8_t**)ptrs, (uint8_t*)buf)) != 0) return;
  for (__wasi_size_t i = 0; i < count; i++) printf("%s: %s\n", what, ptrs[i]);
}
EXPORT(print_args_env) {
  print_strings("arg", 0);
  print_strings("env", 1);
  return 0;
}

/* Writes its input back as its output. */
EXPORT(echo) {
  static char buf[65536];
  int32_t n = gpuwasm_input_len();
  if (n > (int32_t)sizeof buf) n = sizeof buf;
  gpuwasm_input_read(buf, n, 0);
  gpuwasm_output_write(buf, n);
  return 0;
}

/* Runs a kernel for `input` milliseconds (default 300) and waits for it: a slow, successful call. */
EXPORT(wait_kernel) {
  int32_t k = load(delay_ptx, delay_ptx_len, "delay");
  if (k < 0) return 1;
  wcu_arg args[] = {wcu_arg_u64((uint64_t)input_u64(300) * 1000 * 1000)};
  if (wcu_launch(k, 1, 1, 1, 1, 1, 1, 0, args, 1) != 0) return 2;
  return wcu_synchronize() == 0 ? 0 : 3;
}

/* A kernel that never ends (it spins while its flag is set) and a synchronize that waits for it:
 * the deadline must stop the kernel. Exits with the negated error code (10: WCU_ERR_DEADLINE), or 11
 * when the deadline passed before the launch (a deadline too short for a slow machine). */
EXPORT(never_ending_kernel) {
  int32_t k = load(spin_ptx, spin_ptx_len, "spin");
  int32_t flag = wcu_mem_alloc(4), out = wcu_mem_alloc(4 * 32);
  if (k < 0 || flag < 0 || out < 0) return 1;
  int32_t one = 1;
  if (wcu_memcpy_htod(flag, 0, &one, 4) != 0) return 2;
  wcu_arg args[] = {wcu_arg_buffer(flag, 0), wcu_arg_buffer(out, 0)};
  int32_t rc = wcu_launch(k, 1, 1, 1, 32, 1, 1, 0, args, 2);
  if (rc != 0) return rc == WCU_ERR_DEADLINE ? 11 : 3; /* 11: the deadline passed before the launch */
  return -wcu_synchronize();
}

/* Loads the PTX its input carries after a 24-byte header (grid x, y, z and block x, y, z as u32)
 * and launches its kernel "k" on a 256-byte buffer: whatever PTX and shape a hostile tenant sends.
 * Writes "load L launch N sync S" (0 or the negated WCU_ERR_* code of each step) and exits 0. */
EXPORT(launch_input) {
  static unsigned char ptx[1 << 20];
  uint32_t dims[6] = {1, 1, 1, 1, 1, 1};
  int32_t n = gpuwasm_input_len() - 24;
  if (n <= 0 || n > (int32_t)sizeof ptx) return 1;
  gpuwasm_input_read(dims, 24, 0);
  gpuwasm_input_read(ptx, n, 24);
  int32_t load_rc = 0, launch_rc = 0, sync_rc = 0;
  int32_t k = load(ptx, (unsigned)n, "k");
  int32_t d = wcu_mem_alloc(256);
  if (k < 0) {
    load_rc = k;
  } else {
    wcu_arg args[] = {wcu_arg_buffer(d, 0)};
    launch_rc = wcu_launch(k, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], 0, args, 1);
    sync_rc = wcu_synchronize();
  }
  char out[64];
  int len = 0;
  const char* parts[3] = {"load ", " launch ", " sync "};
  int32_t codes[3] = {load_rc, launch_rc, sync_rc};
  for (int i = 0; i < 3; ++i) {
    for (const char* p = parts[i]; *p; ++p) out[len++] = *p;
    int32_t v = codes[i] < 0 ? -codes[i] : codes[i];
    if (codes[i] < 0) out[len++] = '-';
    char digits[12];
    int nd = 0;
    do {
      digits[nd++] = (char)('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (nd > 0) out[len++] = digits[--nd];
  }
  gpuwasm_output_write(out, len);
  return 0;
}
