"""A generic C ``main`` for an ahead-of-time object: raw files in, raw files out.

``driver_source(name)`` is a C program for ``name.h``/``name.o``::

    ./driver IN_0 ... IN_{n-1} OUT_0 ... OUT_{m-1} [--repeat N] [--null-arg K]
             [--misalign-arg K]

It reads each argument's bytes from a file (the sizes must match ``name_arg_bytes``),
runs ``name_run`` (``--repeat N`` times, printing the mean wall-clock and CPU
nanoseconds per call -- the CPU time of every thread of the process -- to stdout;
N >= 1), writes each result's bytes to a file and exits with status 0. A failing
``name_run`` prints its code and message to stderr and exits with status 3;
``--null-arg``/``--misalign-arg`` pass a null or an odd pointer for argument K to check
that ``name_run`` refuses it. The tests and ``examples/aot`` use it.
"""
from __future__ import annotations

_TEMPLATE = r"""
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "@NAME@.h"

static void* aligned(size_t n) {
  void* p = NULL;
  if (posix_memalign(&p, 64, n ? n : 64) != 0) { perror("posix_memalign"); exit(2); }
  memset(p, 0, n ? n : 64);
  return p;
}

int main(int argc, char** argv) {
  int nargs = @UP@_NUM_ARGS, nres = @UP@_NUM_RESULTS;
  long repeat = 1;
  int timed = 0;
  int null_arg = -1, odd_arg = -1;
  int files = 0;
  const char* paths[@UP@_NUM_ARGS + @UP@_NUM_RESULTS + 1];
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--repeat") && i + 1 < argc) { repeat = atol(argv[++i]); timed = 1; }
    else if (!strcmp(argv[i], "--null-arg") && i + 1 < argc) null_arg = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--misalign-arg") && i + 1 < argc) odd_arg = atoi(argv[++i]);
    else if (files < nargs + nres) paths[files++] = argv[i];
    else { fprintf(stderr, "too many file names\n"); return 2; }
  }
  if (files != nargs + nres) {
    fprintf(stderr, "usage: %s IN*%d OUT*%d [--repeat N]\n", argv[0], nargs, nres);
    return 2;
  }
  const void* args[@UP@_NUM_ARGS + 1];
  void* results[@UP@_NUM_RESULTS + 1];
  for (int k = 0; k < nargs; ++k) {
    char* buf = aligned(@NAME@_arg_bytes[k] + 64);
    FILE* f = fopen(paths[k], "rb");
    if (!f) { perror(paths[k]); return 2; }
    size_t got = fread(buf, 1, @NAME@_arg_bytes[k], f);
    int extra = fgetc(f) != EOF;
    fclose(f);
    if (got != @NAME@_arg_bytes[k] || extra) {
      fprintf(stderr, "%s: expected %zu bytes\n", paths[k], @NAME@_arg_bytes[k]);
      return 2;
    }
    args[k] = buf;
    if (k == odd_arg) { memmove(buf + 1, buf, @NAME@_arg_bytes[k]); args[k] = buf + 1; }
    if (k == null_arg) args[k] = NULL;
  }
  for (int k = 0; k < nres; ++k) results[k] = aligned(@NAME@_result_bytes[k]);
  void* temp = @NAME@_temp_bytes ? aligned(@NAME@_temp_bytes) : NULL;
  struct timespec t0, t1, c0, c1;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long r = 0; r < repeat; ++r) {
    int code = @NAME@_run(args, results, temp);
    if (code != 0) {
      fprintf(stderr, "error %d: %s\n", code, @NAME@_error_message(code));
      return 3;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
  if (timed && repeat > 0) {
    double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
    double cpu = (c1.tv_sec - c0.tv_sec) * 1e9 + (c1.tv_nsec - c0.tv_nsec);
    printf("%.1f ns per call, %.1f ns of CPU time\n", ns / repeat, cpu / repeat);
  }
  for (int k = 0; k < nres; ++k) {
    FILE* f = fopen(paths[nargs + k], "wb");
    if (!f || fwrite(results[k], 1, @NAME@_result_bytes[k], f) != @NAME@_result_bytes[k]) {
      perror(paths[nargs + k]);
      return 2;
    }
    fclose(f);
  }
  return 0;
}
"""


def driver_source(name: str) -> str:
    """The C source of the generic driver for the object ``name`` (module docstring)."""
    return _TEMPLATE.replace("@NAME@", name).replace("@UP@", name.upper())


__all__ = ["driver_source"]
