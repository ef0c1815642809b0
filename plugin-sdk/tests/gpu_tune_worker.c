/* gpu_tune_worker.c — sdk_gpu_tune_worker: coil_gpu_tune_worker_main (coil/coil_gpu_tune.h) over a
 * fake runtime, no GPU. With a flush, every timed launch must come alone right after one, as
 * do_bench times (a kernel whose buffers fit in L2 otherwise reads them from L2), and the result
 * is the median of those launches, so one slow launch does not move it; without a flush, the
 * median of batches of 10 per launch. The worker prints to stdout: the test reads its lines
 * back from a temporary file. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coil/coil_gpu_tune.h"

static int fails;
#define CHECK(c, ...)                                                                                                 \
  do {                                                                                                                \
    if (!(c)) {                                                                                                       \
      fprintf(stderr, "gpu_tune_worker.c:%d: ", __LINE__);                                                            \
      fprintf(stderr, __VA_ARGS__);                                                                                   \
      fputc('\n', stderr);                                                                                            \
      fails++;                                                                                                        \
    }                                                                                                                 \
  } while (0)

/* what the fake GPU saw */
static struct {
  bool flushed;      /* the last call was a flush */
  int flushes, timed, alone_after_flush, batched, k[2];
} seen;

static const char *
fake_init(const char *path)
{
  (void)path;
  return NULL;
}

static int
fake_function(const char *name, void **fn)
{
  *fn = (void *)(uintptr_t)(strcmp(name, "k_a") == 0 ? 1 : strcmp(name, "k_b") == 0 ? 2 : 0);
  return *fn ? 0 : 1;
}

static int
fake_alloc_fill(size_t bytes, unsigned char byte, uint64_t *ptr)
{
  (void)byte;
  *ptr = 0x1000 + bytes;
  return 0;
}

static int
fake_launch(void *fn, unsigned grid, unsigned block, void **params)
{
  (void)fn, (void)grid, (void)block, (void)params;
  seen.flushed = false;
  return 0;
}

static int
fake_sync(void)
{
  return 0;
}

static int
fake_flush(void)
{
  seen.flushed = true;
  seen.flushes++;
  return 0;
}

/* k_a takes 2 ms a launch from memory and 0.5 from L2, k_b 1 and 0.25; the 5th timed launch of
 * each candidate takes 10 ms more */
static int
fake_time(void *fn, unsigned grid, unsigned block, void **params, int launches, float *ms)
{
  (void)grid, (void)block, (void)params;
  int c = (int)(uintptr_t)fn - 1;
  seen.timed++;
  if (seen.flushed && launches == 1)
    seen.alone_after_flush++;
  if (!seen.flushed && launches == 10)
    seen.batched++;
  *ms = (float)((seen.flushed ? 2.0 : 0.5) / (c + 1) * launches + (++seen.k[c] == 5 ? 10.0 : 0.0));
  seen.flushed = false;
  return 0;
}

/* Runs the worker on spec with runtime rt; its stdout's result lines in ms[2] (-1: none). */
static void
run_worker(const char *spec, const coil_gpu_tune_runtime *rt, double ms[2])
{
  char out[] = "/tmp/coil-tune-worker-XXXXXX";
  int fd = mkstemp(out), saved = dup(1);
  if (fd < 0 || saved < 0) {
    perror("gpu_tune_worker: temporary file");
    exit(1);
  }
  fflush(stdout);
  dup2(fd, 1);
  char *argv[] = {"coil-fake-tune", (char *)spec, "0", NULL};
  int rc = coil_gpu_tune_worker_main(3, argv, rt);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  CHECK(rc == 0, "the worker exited %d", rc);
  ms[0] = ms[1] = -1;
  FILE *f = fdopen(fd, "r");
  rewind(f);
  char line[256];
  int i;
  double v;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "result %d %lf", &i, &v) == 2 && i >= 0 && i < 2)
      ms[i] = v;
    else
      CHECK(0, "unexpected worker output: %s", line);
  fclose(f);
  unlink(out);
}

int
main(void)
{
  char spec[] = "/tmp/coil-tune-spec-XXXXXX";
  int fd = mkstemp(spec);
  FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
  if (!f) {
    perror("gpu_tune_worker: spec");
    return 1;
  }
  fputs("module /nonexistent.cubin\nparam 4096 f\nparam 64 i\ncand k_a 4 128\ncand k_b 8 256\n", f);
  fclose(f);

  coil_gpu_tune_runtime rt = {.name = "coil-fake-tune", .init = fake_init, .function = fake_function,
                              .alloc_fill = fake_alloc_fill, .launch = fake_launch, .sync = fake_sync,
                              .time = fake_time, .flush = fake_flush};
  double ms[2];
  run_worker(spec, &rt, ms);
  CHECK(ms[0] == 2.0 && ms[1] == 1.0, "flushed: results %g and %g ms, expected 2 and 1 (the medians of the cold launches)",
        ms[0], ms[1]);
  CHECK(seen.timed == 42 && seen.flushes == 42, "flushed: %d timed calls, %d flushes; expected 21 of each a candidate",
        seen.timed, seen.flushes);
  CHECK(seen.alone_after_flush == seen.timed, "flushed: %d of %d timed calls were one launch right after a flush",
        seen.alone_after_flush, seen.timed);

  memset(&seen, 0, sizeof seen);
  rt.flush = NULL; /* a runtime without one: batches of 10 back to back */
  run_worker(spec, &rt, ms);
  CHECK(ms[0] == 0.5 && ms[1] == 0.25, "unflushed: results %g and %g ms, expected 0.5 and 0.25 a launch", ms[0], ms[1]);
  CHECK(seen.timed == 10 && seen.batched == 10, "unflushed: %d timed calls, %d of 10 launches; expected 5 a candidate",
        seen.timed, seen.batched);
  unlink(spec);
  if (fails)
    fprintf(stderr, "sdk_gpu_tune_worker: %d checks failed\n", fails);
  else
    printf("sdk_gpu_tune_worker: the worker's flushed and batched timing, 2 candidates each: ok\n");
  return fails != 0;
}
