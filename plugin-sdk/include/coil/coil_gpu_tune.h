/* coil_gpu_tune.h — max-autotune for GPU plugins on coil-sdk's emitter: each kernel's candidate
 * plans (coil_gpu_plan_candidates: block sizes, elements per thread) compiled into one code
 * object and timed by a worker process of the plugin's, under a deadline; the fastest is kept.
 *
 * The plugin's compile never touches the GPU itself (a host may fork after compiling, and GPU
 * runtimes do not survive fork): the parent side (coil_gpu_tune_kernel) writes a spec and runs
 * the worker with a deadline, restarting it after a crash or a hang (the candidate it was timing
 * is discarded). The worker is a small program of the plugin's whose main calls
 * coil_gpu_tune_worker_main with its runtime. Tuning needs constant sizes (buffers are
 * allocated at their real sizes) and a GPU; otherwise the kernel keeps its default plan and the
 * log says why.
 *
 * The spec, one item a line:
 *   module PATH                the candidates' code object
 *   param BYTES f|i            one per kernel param, in order: a device buffer of BYTES filled
 *                              with a nonzero float pattern (f) or zeros (i: indices in range)
 *   cand NAME GRID BLOCK       one per candidate
 * The worker prints, from candidate FIRST on, `result I MS`, `failed I WHY`, or `nogpu WHY`. MS is
 * measured as triton's do_bench and coil bench measure: after 3 warm-up launches, the median of
 * 21 launches, each after the runtime's cache flush and alone between two events; a runtime with
 * no flush gets the median per launch of 5 batches of 10 back to back, which reads a kernel whose
 * buffers fit in L2 from L2 and can rank plans otherwise than a flushed run does. */
#ifndef COIL_GPU_TUNE_H
#define COIL_GPU_TUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coil/coil_gpu.h"
#include "coil/coil_sdk.h"

typedef struct coil_gpu_tuner {
  const char *name;   /* the plugin, for the temporary directory's name: "cuda" */
  const char *worker; /* the worker's path, run as WORKER SPEC FIRST */
  /* compiles src (the candidates) into the code object at path (what, dir: for messages) */
  coil_error *(*compile)(void *user, const char *src, const char *what, const char *dir, const char *path);
  void *user;
} coil_gpu_tuner;

/* Kernel k's plan: the default, or the fastest candidate on this GPU when tuning could time
 * them (another candidate must be at least 2 % faster than the default). Appends what it did
 * to log. For testing, $COIL_GPU_TUNE_CANDIDATE=I takes candidate I (the last where there are
 * fewer) without timing anything: a conformance run under it checks the plans tuning can pick,
 * which a timed run picks by chance. I@K does so for kernel K (its index) alone; the other
 * kernels keep their default plans, untimed. */
void coil_gpu_tune_kernel(const coil_gpu_dialect *dl, const coil_wir_program *p, int k, const coil_gpu_tuner *t,
                          coil_gpu_plan *best, coil_strbuf *log);

/* Runs WORKER SPEC FIRST until each of the spec's n candidates was timed or failed, restarting
 * it (from the next candidate) after a crash or a hang: ms[i] the time of candidate i, or -1.
 * For plugins that time things of their own with a worker of this protocol (cuda: whole
 * artifacts, to choose its generated GEMMs); each run of the worker has 20 s plus 2 s a
 * candidate left to it. */
void coil_gpu_tune_run(const char *worker, const char *spec, int n, double *ms, coil_strbuf *log);

/* The worker NAME in the directory of the shared object holding symbol (a plugin's worker is
 * installed beside it); false when it is not there. */
bool coil_gpu_tune_worker_beside(const void *symbol, const char *name, char *out, size_t n);

/* ---- the worker's side ---- */
typedef struct coil_gpu_tune_runtime {
  const char *name; /* in messages: "coil-cuda-tune" */
  /* starts the GPU and loads the code object at path; NULL, or why not */
  const char *(*init)(const char *path);
  /* 0 or an error code for each */
  int (*function)(const char *name, void **fn);
  int (*alloc_fill)(size_t bytes, unsigned char byte, uint64_t *ptr);
  int (*launch)(void *fn, unsigned grid, unsigned block, void **params);
  int (*sync)(void);
  /* milliseconds for `launches` back-to-back launches, between two events */
  int (*time)(void *fn, unsigned grid, unsigned block, void **params, int launches, float *ms);
  /* optional: queues a write of more memory than the GPU's caches hold (256 MiB, as do_bench) on
   * the stream the launches take, so that the next launch reads its buffers from memory; NULL:
   * no flush, launches timed in batches */
  int (*flush)(void);
} coil_gpu_tune_runtime;

/* The worker's main: coil-X-tune SPEC FIRST. Exit status 0 when every candidate from FIRST on
 * was timed or failed cleanly; 1 after a failed launch (the context may be poisoned: the parent
 * restarts the worker) or without a GPU; 2 on bad arguments. */
int coil_gpu_tune_worker_main(int argc, char **argv, const coil_gpu_tune_runtime *rt);

#endif
