/* files: an ordinary program that links the file system and more (fopen, opendir, open, fstat,
 * lseek, sleep, isatty) although gpuwasm has none of it: it deploys, and each call fails cleanly
 * (WASI preview1 beyond the subset, src/host/imports.cc); stdout is a terminal, stdin is not. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void) {
  errno = 0;
  FILE* f = fopen("data.txt", "r");
  printf("fopen=%s errno=%d\n", f ? "opened" : "null", f ? 0 : errno);
  errno = 0;
  DIR* d = opendir(".");
  printf("opendir=%s errno=%d\n", d ? "opened" : "null", d ? 0 : errno);
  errno = 0;
  int fd = open("/tmp/out", O_WRONLY | O_CREAT, 0644);
  printf("open=%d errno=%d\n", fd, fd >= 0 ? 0 : errno);
  struct stat st;
  errno = 0;
  int r = fstat(3, &st);
  printf("fstat3=%d errno=%d\n", r, r == 0 ? 0 : errno);
  errno = 0;
  long at = (long)lseek(1, 0, SEEK_CUR);
  printf("lseek1=%ld errno=%d\n", at, at >= 0 ? 0 : errno);
  printf("isatty0=%d isatty1=%d isatty2=%d\n", isatty(0), isatty(1), isatty(2));
  return 0;
}
