/* io_module: the `gpuwasm` invocation I/O module: input_len, input_read, output_write, including
 * their error paths (a pointer outside memory gives WCU_ERR_BAD_POINTER = -2). Entry: run(). */
#include <stdint.h>

__attribute__((import_module("gpuwasm"), import_name("input_len"))) int32_t input_len(void);
__attribute__((import_module("gpuwasm"), import_name("input_read"))) int32_t input_read(void* dst, int32_t len, int32_t offset);
__attribute__((import_module("gpuwasm"), import_name("output_write"))) int32_t output_write(const void* src, int32_t len);

static char buf[64];

__attribute__((export_name("run"))) int32_t run(void) {
  int32_t n = input_len();
  int32_t got = input_read(buf, sizeof buf, 2);        /* skip the first two bytes */
  for (int i = 0; i < got; i++) if (buf[i] >= 'a' && buf[i] <= 'z') buf[i] -= 32;
  if (output_write(buf, got) != got) return 100;
  if (input_read((void*)0x7ffffff0, 64, 0) != -2) return 101;  /* outside linear memory */
  if (output_write((const void*)0xfffffff0, 32) != -2) return 102;
  if (input_read(buf, 8, 1000) != 0) return 103;           /* offset past the end */
  return n;
}
