/* tune_main.c — coil-cuda-tune, the cuda plugin's autotuning worker (mode max-autotune).
 *
 * The plugin's compile never touches the GPU itself (a host may fork after compiling, and CUDA
 * does not survive fork): it writes a spec and runs this program, installed beside
 * libcoil_cuda.so, with a deadline. A crash or hang costs the candidate being timed, not the
 * compile (cuda_tune.c restarts the worker after it).
 *
 *   coil-cuda-tune SPEC FIRST
 *
 * SPEC is text, one item a line:
 *   cubin PATH                  the candidates' module
 *   param BYTES f|i             one per kernel param, in order: a device buffer of BYTES,
 *                               filled with a fixed nonzero float pattern (f) or zeros (i: index
 *                               tensors must stay in range)
 *   cand NAME GRID BLOCK        one per candidate
 * For each candidate from index FIRST on it prints `result I MS` (median milliseconds per launch
 * over 5 batches of 10, after 3 warm-up launches) and flushes, or `failed I WHY` when a CUDA call
 * fails, or `nogpu WHY` when it cannot start at all; exit status 0 when every candidate was
 * timed or failed cleanly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api.h"

#define MAXP 64
#define MAXC 64

static int
cmp_float(const void *a, const void *b)
{
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
  if (argc != 3) {
    fprintf(stderr, "usage: coil-cuda-tune SPEC FIRST\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "r");
  if (!f) {
    fprintf(stderr, "coil-cuda-tune: cannot open %s\n", argv[1]);
    return 2;
  }
  char cubin[4096] = "", line[4096];
  size_t bytes[MAXP];
  char kinds[MAXP];
  int np = 0, nc = 0;
  char names[MAXC][512];
  unsigned grid[MAXC], block[MAXC];
  while (fgets(line, sizeof line, f)) {
    char kind;
    unsigned long long b;
    if (sscanf(line, "cubin %4095s", cubin) == 1)
      continue;
    if (sscanf(line, "param %llu %c", &b, &kind) == 2 && np < MAXP) {
      bytes[np] = (size_t)b, kinds[np++] = kind;
      continue;
    }
    if (nc < MAXC && sscanf(line, "cand %511s %u %u", names[nc], &grid[nc], &block[nc]) == 3) {
      nc++;
      continue;
    }
    fprintf(stderr, "coil-cuda-tune: %s: cannot read line: %s", argv[1], line);
    return 2;
  }
  fclose(f);
  int first = atoi(argv[2]);
  const char *why = NULL;
  const cuda_driver *cu = cuda_driver_get(&why);
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  if (!cu) {
    printf("nogpu %s\n", why);
    return 1;
  }
  if (cu->DeviceGet(&dev, 0) || cu->DevicePrimaryCtxRetain(&ctx, dev) || cu->CtxSetCurrent(ctx) ||
      cu->ModuleLoad(&mod, cubin)) {
    printf("nogpu cannot set up the GPU or load %s\n", cubin);
    return 1;
  }
  CUdeviceptr ptr[MAXP];
  void *params[MAXP];
  for (int i = 0; i < np; i++) {
    size_t n = bytes[i] ? bytes[i] : 16;
    unsigned char *h = malloc(n);
    if (!h || cu->MemAlloc(&ptr[i], n)) {
      printf("nogpu cannot allocate %zu bytes\n", n);
      return 1;
    }
    memset(h, kinds[i] == 'i' ? 0 : 0x3e, n); /* f32 0.186, f16 1.56, bf16 0.186: finite, nonzero */
    cu->MemcpyHtoDAsync(ptr[i], h, n, NULL);
    cu->StreamSynchronize(NULL);
    free(h);
    params[i] = &ptr[i];
  }
  CUevent e0, e1;
  cu->EventCreate(&e0, 0);
  cu->EventCreate(&e1, 0);
  for (int c = first; c < nc; c++) {
    CUfunction fn;
    if (cu->ModuleGetFunction(&fn, mod, names[c])) {
      printf("failed %d no function %s\n", c, names[c]);
      fflush(stdout);
      continue;
    }
    CUresult r = 0;
    for (int w = 0; w < 3 && !r; w++)
      r = cu->LaunchKernel(fn, grid[c], 1, 1, block[c], 1, 1, 0, NULL, params, NULL);
    if (!r)
      r = cu->StreamSynchronize(NULL);
    float t[5];
    for (int k = 0; k < 5 && !r; k++) {
      cu->EventRecord(e0, NULL);
      for (int i = 0; i < 10 && !r; i++)
        r = cu->LaunchKernel(fn, grid[c], 1, 1, block[c], 1, 1, 0, NULL, params, NULL);
      cu->EventRecord(e1, NULL);
      if (!r)
        r = cu->EventSynchronize(e1);
      if (!r)
        r = cu->EventElapsedTime(&t[k], e0, e1);
      t[k] /= 10;
    }
    if (r) { /* a failed launch poisons the context: report and stop; the parent restarts us */
      printf("failed %d CUDA error %d\n", c, r);
      return 1;
    }
    qsort(t, 5, sizeof *t, cmp_float);
    printf("result %d %.6f\n", c, t[2]);
    fflush(stdout);
  }
  return 0;
}
