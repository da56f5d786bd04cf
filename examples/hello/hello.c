/* hello: the smallest gpuwasm guest. Reads its input (the request body, on stdin), and prints a
 * greeting with the input's size and a checksum of its bytes, so a run shows input reached the
 * guest and output came back. */
#include <stdint.h>
#include <stdio.h>

int main(void) {
  unsigned char buf[4096];
  size_t n, total = 0;
  uint32_t sum = 0;
  while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) {
    for (size_t i = 0; i < n; i++) sum = sum * 31u + buf[i];
    total += n;
  }
  printf("hello from a gpuwasm guest: %zu input bytes, checksum %08x\n", total, (unsigned)sum);
  return 0;
}
