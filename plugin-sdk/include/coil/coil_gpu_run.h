/* coil_gpu_run.h — the GPU executor of coil-sdk: runs a Wrapper IR program's lines on a device in
 * C, in order, through a plugin's runtime (coil_gpu_runtime: allocate, free, copy, launch). It
 * binds the size symbols from the inputs, checks the guards, copies host inputs in, allocates
 * and frees as the memory plan says (reuse, views), launches the kernels compiled from
 * coil/coil_gpu.h with their plans, hands library ops (extern lines) to the plugin, and copies
 * the outputs out, through their strides. An output the program allocates is written in place
 * when the caller's tensor is on the device with the buffer's layout.
 *
 * The cuda and hip plugins run this way: what differs between them is the runtime (the CUDA
 * driver, HIP) and the library ops, not the walk over the lines. Nothing here synchronizes
 * except a strided copy to the host: the caller decides when to wait. */
#ifndef COIL_GPU_RUN_H
#define COIL_GPU_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "coil/coil_gpu.h"
#include "coil/coil_plugin.h"
#include "coil/coil_sdk.h"
#include "coil/wir.h"

typedef uint64_t coil_gpu_ptr; /* a device address (CUdeviceptr, hipDeviceptr_t) */

/* A buffer of the program during a run: its layout with the symbols bound, and where it is. */
typedef struct coil_gpu_buf {
  coil_dtype dtype;
  int rank;
  int64_t sizes[COIL_MAX_RANK], strides[COIL_MAX_RANK];
  coil_gpu_ptr ptr;   /* element 0 */
  coil_gpu_ptr start; /* the storage it lives in (an allocation, a reused one, an input) */
  bool owned;         /* start was allocated by this run and is freed by it */
  bool live;
} coil_gpu_buf;

typedef enum { COIL_GPU_TO_DEVICE, COIL_GPU_TO_HOST, COIL_GPU_ON_DEVICE } coil_gpu_copy_kind;

typedef struct coil_gpu_run coil_gpu_run;

/* A plugin's runtime. Every function returns 0 or the runtime's error code, which error_string
 * names; they queue work (on the plugin's stream) rather than wait, except sync. */
typedef struct coil_gpu_runtime {
  const char *name;    /* the plugin, at the start of messages: "cuda" */
  int32_t device_type; /* tensors of this DLPack device type are on the device: used in place */
  const coil_gpu_dialect *dialect; /* the kernels' (for their launch geometry) */
  int (*alloc)(coil_gpu_run *r, size_t bytes, coil_gpu_ptr *out);
  int (*release)(coil_gpu_run *r, coil_gpu_ptr p);
  /* dst and src are device addresses or host pointers as kind says (uintptr_t of a host one) */
  int (*copy)(coil_gpu_run *r, coil_gpu_copy_kind kind, uintptr_t dst, uintptr_t src, size_t bytes);
  int (*zero)(coil_gpu_run *r, coil_gpu_ptr p, size_t bytes);
  int (*sync)(coil_gpu_run *r);
  /* kernel k of the program, the vectorised variant or not (plans[k].vec > 1), with params as
   * cuLaunchKernel takes them */
  int (*launch)(coil_gpu_run *r, int k, bool vec, unsigned blocks, unsigned threads, void **params);
  const char *(*error_string)(coil_gpu_run *r, int code);
  /* A library op (an extern line); NULL: the plugin has none. */
  coil_error *(*extern_call)(coil_gpu_run *r, const coil_line *l);
} coil_gpu_runtime;

/* A run in progress, as the runtime's functions and extern_call see it. */
struct coil_gpu_run {
  const coil_gpu_runtime *rt;
  void *user;                 /* the plugin's (its loaded artifact) */
  const coil_wir_program *p;
  const coil_gpu_plan *plans; /* per kernel */
  coil_gpu_ptr oob;           /* the index check of programs with indirect loads (2 long longs) */
  int64_t *vals;              /* the size symbols, bound as the lines run */
  bool *bound;
  int nvars;
  coil_gpu_buf *bufs;         /* per buffer of p */
  int line;                   /* the line running (0-based) */
  int skip_line;              /* a kernel line an extern call already did the work of, or -1 */
};

/* Runs p's lines with the tensors of args (inputs on the host or the device; outputs written
 * where they are). Buffers still held at the end are released, error or not. */
coil_error *coil_gpu_run_program(const coil_gpu_runtime *rt, void *user, const coil_wir_program *p,
                                 const coil_gpu_plan *plans, coil_gpu_ptr oob, const coil_plugin_run_args *args);

/* An error naming the plugin, the program and the line running. */
coil_error *coil_gpu_run_fail(coil_gpu_run *r, coil_error_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A runtime call that returned code: "CALL failed: <error_string> (code)". */
coil_error *coil_gpu_run_rtfail(coil_gpu_run *r, int code, const char *call);
/* e evaluated with the symbols bound so far. */
coil_error *coil_gpu_run_eval(coil_gpu_run *r, const coil_sym *e, int64_t *out);

/* How a column-major BLAS reads the row-major matrix X[R, C] held in dims o and o + 1 of b:
 * as is (*transposed false: rows of stride *ld) or transposed (a column-major view); false when
 * neither layout fits (strided in both dims) or ld exceeds an int. */
bool coil_gpu_blas_layout(const coil_gpu_buf *b, int o, bool *transposed, int64_t *ld);

/* ---- GEMM epilogues (gpu_epilogue.c) ----
 * An mm line (2-D, f32, f16 or bf16, constant sizes) whose next kernel line (past comments,
 * allocations and frees of other buffers) reads its product and only computes
 *   out = [relu]([cast] mm [+ bias over the columns]) element for element
 * storing to a row-major [M, N] out of the product's dtype, with nothing else reading the product
 * where out is another buffer: a GEMM that adds the bias and applies the relu as it stores C to
 * out does that kernel's work, and the executor skips the line (coil_gpu_run's skip_line). */
typedef struct coil_gpu_epilogue {
  int kernel_line; /* -1: nothing to fold */
  int bias_arg;    /* the kernel call's argument holding the bias (bias[n], unit stride), or -1 */
  int out_arg;     /* the kernel call's argument written */
  bool relu;       /* relu after the bias (NaN stays NaN) */
} coil_gpu_epilogue;

/* The foldable epilogue of every line of p (epi: p->nlines entries; kernel_line -1 where none). */
void coil_gpu_find_epilogues(const coil_wir_program *p, coil_gpu_epilogue *epi);

int64_t coil_gpu_buf_numel(const coil_gpu_buf *b);
bool coil_gpu_buf_contiguous(const coil_gpu_buf *b);
/* Offsets of the lowest and highest element (hi < lo: no elements). */
void coil_gpu_buf_extent(const coil_gpu_buf *b, int64_t *lo, int64_t *hi);

/* ---- reduce-overhead: a run captured into a graph and replayed (gpu_graph.c) ----
 *
 * The first run of a size binding (dtype, sizes, strides and place of every input and output)
 * is captured: device tensors are used where they are, host tensors through static device
 * buffers. A later run with the same binding replays the graph; a device tensor found at
 * another address than at capture becomes static too (one more capture), and from then on is
 * copied into (inputs, and back out if the program mutates it) or out of (outputs) its static
 * buffer around each replay. Another binding drops the graph and captures anew. What the
 * runtime does is the plugin's (coil_gpu_capture): CUDA graphs, hipGraph. */
typedef struct coil_gpu_capture {
  const char *name;    /* the plugin, in messages */
  int32_t device_type; /* tensors of this DLPack device type are on the device */
  /* a static buffer, outside any capture, and its release; 0 or an error code */
  int (*static_alloc)(void *user, size_t bytes, coil_gpu_ptr *out);
  void (*static_free)(void *user, coil_gpu_ptr p);
  /* a copy queued on the run's stream (outside the capture) */
  int (*copy)(void *user, coil_gpu_copy_kind kind, uintptr_t dst, uintptr_t src, size_t bytes);
  /* begin a capture; queue the program's lines with args (captured); end it and instantiate
   * the graph into *exec (NULL on error), or with exec NULL end it and discard the graph (the
   * lines failed) */
  coil_error *(*begin)(void *user);
  coil_error *(*run)(void *user, const coil_plugin_run_args *args);
  coil_error *(*end)(void *user, void **exec);
  int (*launch)(void *user, void *exec); /* on the run's stream */
  void (*destroy)(void *user, void *exec);
  const char *(*error_string)(void *user, int code);
} coil_gpu_capture;

typedef struct coil_gpu_graph coil_gpu_graph; /* a capture and its binding */

/* Runs p with args through the graph in *g (captured first where the binding is new or moved).
 * On failure *refuse says whether graphs should be given up for this artifact (the runtime
 * could not capture) rather than the run being wrong; *g is then freed. */
coil_error *coil_gpu_graph_run(const coil_gpu_capture *c, void *user, const coil_wir_program *p, coil_gpu_graph **g,
                               const coil_plugin_run_args *args, bool *refuse);
void coil_gpu_graph_free(const coil_gpu_capture *c, void *user, coil_gpu_graph **g);

#endif
