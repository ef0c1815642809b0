/* tune_main.c — coil-cuda-tune, the cuda plugin's autotuning worker (mode max-autotune): coil-sdk's
 * worker (coil/coil_gpu_tune.h: the spec, the timing loop, what it prints) over the CUDA driver.
 *
 *   coil-cuda-tune SPEC FIRST */
#include <stdlib.h>
#include <string.h>

#include "coil/coil_gpu_tune.h"
#include "cuda_api.h"

static const cuda_driver *cu;
static CUmodule mod;
static CUevent e0, e1;

static const char *
init(const char *path)
{
  const char *why = NULL;
  CUdevice dev;
  CUcontext ctx;
  if (!(cu = cuda_driver_get(&why)))
    return why;
  if (cu->DeviceGet(&dev, 0) || cu->DevicePrimaryCtxRetain(&ctx, dev) || cu->CtxSetCurrent(ctx) ||
      cu->ModuleLoad(&mod, path) || cu->EventCreate(&e0, 0) || cu->EventCreate(&e1, 0))
    return "cannot set up the GPU or load the candidates";
  return NULL;
}

static int
function(const char *name, void **fn)
{
  return cu->ModuleGetFunction((CUfunction *)fn, mod, name);
}

static int
alloc_fill(size_t bytes, unsigned char byte, uint64_t *ptr)
{
  unsigned char *h = malloc(bytes);
  CUdeviceptr p = 0;
  int r = !h || cu->MemAlloc(&p, bytes);
  if (!r) {
    memset(h, byte, bytes);
    r = cu->MemcpyHtoDAsync(p, h, bytes, NULL) || cu->StreamSynchronize(NULL);
  }
  free(h);
  *ptr = p;
  return r;
}

static int
launch(void *fn, unsigned grid, unsigned block, void **params)
{
  return cu->LaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL);
}

static int
sync(void)
{
  return cu->StreamSynchronize(NULL);
}

static int
time_launches(void *fn, unsigned grid, unsigned block, void **params, int launches, float *ms)
{
  int r = cu->EventRecord(e0, NULL);
  for (int i = 0; i < launches && !r; i++)
    r = launch(fn, grid, block, params);
  if (!r)
    r = cu->EventRecord(e1, NULL);
  if (!r)
    r = cu->EventSynchronize(e1);
  return r ? r : cu->EventElapsedTime(ms, e0, e1);
}

int
main(int argc, char **argv)
{
  static const coil_gpu_tune_runtime rt = {.name = "coil-cuda-tune", .init = init, .function = function,
                                           .alloc_fill = alloc_fill, .launch = launch, .sync = sync,
                                           .time = time_launches};
  return coil_gpu_tune_worker_main(argc, argv, &rt);
}
