/* cuda_tune.c — max-autotune for cuda: coil-sdk's tuner (coil/coil_gpu_tune.h) with NVRTC for the
 * candidates and coil-cuda-tune (tune_main.c), installed beside libcoil_cuda.so, to time them.
 * The fastest plan is compiled into the artifact and recorded in plans.txt (with every time in
 * tuning.log), so the compile cache keeps the winner with the cubins. */
#include "coil/coil_gpu_tune.h"
#include "cuda.h"

static coil_error *
compile(void *user, const char *src, const char *what, const char *dir, const char *path)
{
  return cuda_nvrtc_compile(src, user, what, dir, path);
}

void
cuda_tune_kernel(const coil_wir_program *p, int k, const char *arch, coil_gpu_plan *best, coil_strbuf *log)
{
  char worker[4096];
  bool there = coil_gpu_tune_worker_beside((const void *)cuda_tune_kernel, "coil-cuda-tune", worker, sizeof worker);
  coil_gpu_tuner t = {.name = "cuda", .worker = there ? worker : NULL, .compile = compile, .user = (void *)arch};
  coil_gpu_tune_kernel(&cuda_dialect, p, k, &t, best, log);
}
