#include <stdio.h>

int main(int argc, char** argv) {
  (void)argv;
  long s = 0;
  for (int i = 1; i <= 100; i++) s += i * argc;
  printf("%ld\n", s);
  return 0;
}
