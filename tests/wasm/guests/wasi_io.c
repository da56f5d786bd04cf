/* wasi_io: exercises the WASI preview1 subset through wasi-libc: argv, environ, stdin, stdout,
 * stderr, clocks, random, and the exit status. argv[1] is the exit code to return. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

int main(int argc, char** argv) {
  printf("argc=%d", argc);
  for (int i = 1; i < argc; i++) printf(" [%s]", argv[i]);
  printf("\n");
  int envs = 0;
  for (char** e = environ; e && *e; e++) envs++;
  printf("environ=%d\n", envs);
  char buf[256];
  size_t n = fread(buf, 1, sizeof buf - 1, stdin);
  buf[n] = 0;
  printf("stdin=%zu:%s\n", n, buf);
  fprintf(stderr, "to stderr\n");
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  clock_gettime(CLOCK_MONOTONIC, &b);
  struct timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  printf("monotonic_ok=%d realtime_after_2020=%d\n",
         (b.tv_sec > a.tv_sec) || (b.tv_sec == a.tv_sec && b.tv_nsec >= a.tv_nsec), rt.tv_sec > 1577836800);
  unsigned char r1[16], r2[16];
  arc4random_buf(r1, sizeof r1);
  arc4random_buf(r2, sizeof r2);
  printf("random_differs=%d\n", memcmp(r1, r2, sizeof r1) != 0);
  fflush(stdout);
  return argc > 1 ? atoi(argv[1]) : 0;
}
