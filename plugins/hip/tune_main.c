/* tune_main.c — coil-hip-tune, the hip plugin's autotuning worker (mode max-autotune): coil-sdk's
 * worker (coil/coil_gpu_tune.h: the spec, the timing loop, what it prints) over the plugin's HIP
 * runtime table, on the platform the candidates' code object is for (an AMDGPU ELF: amd; a cubin:
 * HIP's NVIDIA platform).
 *
 *   coil-hip-tune SPEC FIRST */
#include <stdlib.h>
#include <string.h>

#include "coil/coil_gpu_tune.h"
#include "coil/coil_sdk.h"
#include "hip_api.h"

static const hip_runtime *rt;
static hipModule_t mod;
static hipEvent_t e0, e1;
static void *flush_buf;                         /* written before each timed launch */
#define FLUSH_BYTES ((size_t)256 << 20) /* as triton's do_bench: more than any GPU's L2 */

static const char *
init(const char *path)
{
  size_t n = 0;
  char *code = coil_sdk_read_file(path, 512u << 20, &n);
  int pf = code ? hip_code_platform(code, n) : -1;
  const char *why = "the candidates' code object is unreadable or of no known platform";
  if (pf >= 0 && !(rt = hip_runtime_get((hip_platform)pf, &why)))
    pf = -1;
  if (pf >= 0 && (rt->SetDevice(0) || rt->ModuleLoadData(&mod, code) || rt->EventCreate(&e0) || rt->EventCreate(&e1))) {
    why = "cannot set up the GPU or load the candidates";
    pf = -1;
  }
  free(code);
  return pf >= 0 ? NULL : why;
}

static int
function(const char *name, void **fn)
{
  return rt->ModuleGetFunction((hipFunction_t *)fn, mod, name);
}

static int
alloc_fill(size_t bytes, unsigned char byte, uint64_t *ptr)
{
  unsigned char *h = malloc(bytes);
  void *p = NULL;
  int r = !h || rt->Malloc(&p, bytes);
  if (!r) {
    memset(h, byte, bytes);
    r = rt->MemcpyHtoDAsync(p, h, bytes, NULL) || rt->StreamSynchronize(NULL);
  }
  free(h);
  *ptr = (uint64_t)(uintptr_t)p;
  return r;
}

static int
launch(void *fn, unsigned grid, unsigned block, void **params)
{
  return rt->ModuleLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL);
}

static int
sync(void)
{
  return rt->StreamSynchronize(NULL);
}

static int
time_launches(void *fn, unsigned grid, unsigned block, void **params, int launches, float *ms)
{
  int r = rt->EventRecord(e0, NULL);
  for (int i = 0; i < launches && !r; i++)
    r = launch(fn, grid, block, params);
  if (!r)
    r = rt->EventRecord(e1, NULL);
  if (!r)
    r = rt->EventSynchronize(e1);
  return r ? r : rt->EventElapsedTime(ms, e0, e1);
}

/* The cache flush before a timed launch, on the null stream the launches take; its buffer is
 * allocated on first use. A different byte each time, so no write can be elided. */
static int
flush(void)
{
  static unsigned char byte;
  int r = flush_buf ? 0 : rt->Malloc(&flush_buf, FLUSH_BYTES);
  return r ? r : rt->MemsetD8Async(flush_buf, byte++, FLUSH_BYTES, NULL);
}

int
main(int argc, char **argv)
{
  static const coil_gpu_tune_runtime trt = {.name = "coil-hip-tune", .init = init, .function = function,
                                            .alloc_fill = alloc_fill, .launch = launch, .sync = sync,
                                            .time = time_launches, .flush = flush};
  return coil_gpu_tune_worker_main(argc, argv, &trt);
}
