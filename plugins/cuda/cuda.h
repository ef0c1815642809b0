/* cuda.h — the cuda plugin's internals: code generation (cuda_codegen.c) and the run-time
 * wrapper (cuda_run.c), shared by the plugin's table (cuda_plugin.c). */
#ifndef COIL_CUDA_H
#define COIL_CUDA_H

#include <stdbool.h>

#include "coil/coil_plugin.h"
#include "coil/coil_sdk.h"
#include "coil/wir.h"
#include "cuda_api.h"

/* The CUDA C++ source of kernel k of p (prelude included), for NVRTC. */
void cuda_kernel_source(const coil_wir_program *p, int k, coil_strbuf *out);
/* All kernels after one prelude: kernels.cu, the artifact's readable source. */
void cuda_program_source(const coil_wir_program *p, coil_strbuf *out);

/* Threads per block the launcher uses for kernel k given its r elements (reductions) — a
 * multiple of 32 in 32..256 — and the block count for its x elements. */
unsigned cuda_block_threads(const coil_kernel *k, int64_t rnumel);
unsigned cuda_grid_blocks(const coil_kernel *k, int64_t xnumel, unsigned threads);

/* A loaded artifact: the program, one module per kernel, the stream it runs on. */
struct coil_artifact {
  coil_wir_program *program; /* owned */
  const cuda_driver *cu;
  CUdevice dev;
  CUcontext ctx;             /* the device's primary context (retained) */
  CUstream stream;
  int nkernels;
  CUmodule *modules;         /* per kernel */
  CUfunction *functions;     /* per kernel */
  const cuda_cublas *blas;   /* for programs with mm/bmm lines; else NULL */
  cublasHandle_t blas_handle;
};

/* Whether a library op of the program can run here: mm or bmm on floats, each operand with unit
 * stride in one of its two matrix dims (BLAS layouts). Otherwise why says what is missing. */
bool cuda_blas_line_ok(const coil_wir_program *p, const coil_line *l, char *why, size_t n);

/* Runs a loaded artifact (see coil_plugin_run_args): inputs on the host or on the device,
 * outputs written where they are. */
coil_error *cuda_run(coil_artifact *a, const coil_plugin_run_args *args);

#endif
