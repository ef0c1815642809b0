/* coil_gpu.h — the GPU kernel emitter of coil-sdk: launch plans and CUDA-like C++ source for the
 * kernels of a Wrapper IR program, in any language of the CUDA family described by a dialect.
 *
 * The emitter owns what does not depend on the language: how a kernel is laid out on the GPU
 * (coil_gpu_plan: pointwise with vectorised variants, transposing copies through shared-memory
 * tiles, persistent reductions with the row in registers, looped reductions, two-pass Welford,
 * block scans), max-autotune's candidate plans, the launch geometry, and the kernel bodies. A
 * dialect (coil_gpu_dialect) says how its language spells what the kernels use: thread and block
 * indices, barriers, shared memory, warp shuffles and the warp's width (32 or 64), the launch-
 * bound attribute, f16/bf16 conversions, math function names, and the prelude's head. The cuda
 * plugin's dialect is the first (plugins/cuda/cuda_codegen.c); a vendor with a CUDA-like language
 * writes a dialect, not an emitter (docs/plugin-guide.md).
 *
 * The generated source is C++ (templates for the reductions, coil_vec<T, V> for vector
 * accesses): every kernel is `KERNEL_DECL void LAUNCH_BOUNDS NAME(params, int64 size symbols[,
 * long long *coil_oob])`, launched with coil_gpu_block_threads and coil_gpu_grid_blocks. */
#ifndef COIL_GPU_H
#define COIL_GPU_H

#include <stdbool.h>
#include <stdint.h>

#include "coil/coil_sdk.h"

/* How a language of the CUDA family spells what the emitted kernels use. Strings are copied
 * into the source as they are; numbers shape the code. */
typedef struct coil_gpu_dialect {
  const char *name;          /* the plugin, in the source's first comment: "cuda" */
  const char *compiler;      /* what compiles each kernel, in that comment: "NVRTC" */
  int warp_size;             /* threads that run in lockstep and shuffle: 32 or 64 (a power of 2) */
  int vector_bytes;          /* the widest vector access (16: float4); vectorised variants need
                                params aligned to it */
  const char *kernel_decl;   /* before `void`: "extern \"C\" __global__" */
  const char *launch_bounds; /* printf format of the block size (%u), after `void`:
                                "__launch_bounds__(%u)"; NULL when the language has none */
  const char *restrict_kw;   /* on pointer params: "__restrict__" */
  const char *thread_idx;    /* the thread's index in its block: "threadIdx.x" */
  const char *block_idx;     /* "blockIdx.x" */
  const char *block_dim;     /* threads per block: "blockDim.x" */
  const char *grid_dim;      /* blocks in the grid: "gridDim.x" */
  const char *barrier;       /* a block-wide barrier: "__syncthreads()" */
  const char *warp_barrier;  /* a warp's barrier and memory fence: "__syncwarp()" */
  const char *shared;        /* the shared-memory qualifier: "__shared__" */
  const char *align;         /* an alignment attribute taking bytes in parentheses: "__align__" */
  const char *device;        /* a device function: "__device__" */
  const char *forceinline;   /* inlined always: "__forceinline__" */
  /* Warp shuffles as call prefixes, completed by "value, lane-or-offset)" (32-bit and 64-bit
   * values; narrower ones are widened to int): "__shfl_down_sync(0xffffffffu, " */
  const char *shfl_down, *shfl_up, *shfl_idx;
  /* The condition under which a thread is the first to record an out-of-range index in
   * `long long *coil_oob` ([0]: the flag, then [1] gets the value): an atomic compare-and-swap. */
  const char *oob_first;
  /* The prelude: head (integer types, limits, INFINITY and NAN for a compiler without system
   * headers), half (coil_h2f, coil_f2h, coil_b2f and coil_f2b as device functions: the hardware's
   * conversions, round to nearest even), helpers (device functions the dialect's math names call,
   * after the vector type); NULL: none. The SDK adds the C helpers, combining stores,
   * reductions, scans. */
  const char *head, *half, *helpers;
  coil_c_dialect c; /* math function names (NULL math_fn: libm's) */
  /* A call prefix, completed by "pointer)", that loads one vector (4, 8 or 16 bytes) and asks the
   * cache to keep its line before others (an evict_last policy), defined in helpers. The
   * vectorised PERSISTENT kernels of one row a block load their rows with it; NULL: plain loads. */
  const char *load_keep;
} coil_gpu_dialect;

/* How a kernel is laid out on the GPU, decided from the Wrapper IR alone (so compile and load
 * agree without recording it):
 *   POINTWISE   a block takes a tile of threads * per_thread consecutive x elements; each thread
 *               per_thread of them, threads apart (coalesced), unrolled, so its loads are all in
 *               flight before the first use; blocks stride over the tiles, or, where the grid
 *               covers them and every index provably fits in 32 bits, take one each with 32-bit
 *               indices (a kernel of at most COIL_GPU_SMALL_X points takes one a thread, 128
 *               threads a block: it is latency-bound; a vectorised one of at least
 *               COIL_GPU_TWO_VEC_X two vectors a thread);
 *   PERSISTENT  a reduction whose r extent is a constant of at most COIL_GPU_PERSISTENT_MAX: one
 *               block per x point keeps the whole row in registers (per_thread elements per
 *               thread), so each r value is loaded and computed once; with rows > 1, a block
 *               takes `rows` x points at once, one warp each (threads = warp * rows), and reduces
 *               with warp shuffles alone: short rows (GPT-2's 768) skip the block-wide
 *               barriers; or one thread each (threads = rows), which reduces alone: tiny rows
 *               (a 3x3 pooling window) no longer leave most of a block idle;
 *   LOOPED      any other reduction: one block per x point, every reduce re-reading its cone in
 *               a strided loop (threads decided at launch from the r extent);
 *   TRANSPOSE   a pointwise kernel whose stores run along the innermost x variable but some load
 *               runs along another one (x variable tvar): 32 x 32 tiles of the two, those loads
 *               read coalesced into shared memory first, then the body runs with coalesced
 *               stores. */
enum { COIL_GPU_POINTWISE, COIL_GPU_PERSISTENT, COIL_GPU_LOOPED, COIL_GPU_TRANSPOSE };
#define COIL_GPU_PERSISTENT_MAX 8192
#define COIL_GPU_THREAD_ROW_MAX 32    /* in kernels of at least COIL_GPU_WARP_ROWS_MIN_X x points, */
#define COIL_GPU_WARP_ROW_MAX 1024    /* rows up to the first take a thread each (rows = threads = */
#define COIL_GPU_WARP_ROWS_MIN_X 2048 /* 128), up to the second a warp each (rows = 4) */
#define COIL_GPU_SMALL_X 16384       /* pointwise kernels of at most this many x points: one a thread */
#define COIL_GPU_TWO_VEC_X (1 << 23) /* vectorised pointwise kernels of at least this many: two vectors */
typedef struct coil_gpu_plan {
  int kind;
  unsigned threads;  /* block size: fixed by the code for POINTWISE and PERSISTENT; 0 for LOOPED */
  int per_thread;    /* x elements (POINTWISE) or r elements (PERSISTENT) per thread */
  int vec;           /* POINTWISE: > 1 when the kernel has a vectorised variant (under the Wrapper
                        IR name) taking vec consecutive elements per access, vec_per_thread
                        accesses per thread, for params all vector_bytes aligned; the scalar kernel
                        is then NAME__unaligned. 1: only the scalar kernel, under NAME */
  int vec_per_thread;
  int tvar;          /* TRANSPOSE: the index in the kernel's x variables of the loads' unit dim */
  int rows;          /* PERSISTENT: x points per block (> 1), a warp each (threads = warp * rows)
                        or a thread each (threads = rows); 0: one per block */
} coil_gpu_plan;
#define COIL_GPU_UNALIGNED_SUFFIX "__unaligned"

/* Kernel k's default plan. */
void coil_gpu_plan_kernel(const coil_gpu_dialect *dl, const coil_wir_program *p, const coil_kernel *k,
                          coil_gpu_plan *out);
/* max-autotune's configurations for kernel k: the default first, then other block sizes and
 * elements per thread (at most max). LOOPED kernels get a fixed block size (threads > 0). */
int coil_gpu_plan_candidates(const coil_gpu_dialect *dl, const coil_wir_program *p, const coil_kernel *k,
                             coil_gpu_plan *out, int max);
/* Whether pl is a plan kernel k can run with (a plan read back from an artifact is checked). */
bool coil_gpu_plan_valid(const coil_gpu_dialect *dl, const coil_wir_program *p, const coil_kernel *k,
                         const coil_gpu_plan *pl);
/* A plan as an artifact records it: the line "k<K> kind threads per_thread vec vec_per_thread
 * tvar rows", appended to out; and kernel k's plan read back from such lines (false: none). */
void coil_gpu_plan_print(int k, const coil_gpu_plan *pl, coil_strbuf *out);
bool coil_gpu_plan_read(const char *text, int k, coil_gpu_plan *out);
/* Threads per block and the block count to launch kernel k with plan pl, given its x and r
 * element counts (LOOPED: a multiple of the warp in warp..256 covering the row); vec: the
 * vectorised variant is launched. */
unsigned coil_gpu_block_threads(const coil_gpu_dialect *dl, const coil_gpu_plan *pl, int64_t rnumel);
unsigned coil_gpu_grid_blocks(const coil_gpu_plan *pl, bool vec, int64_t xnumel, unsigned threads);

/* sin, cos and tan carry a large argument-reduction slow path: a dialect of the CUDA family
 * (__device__, __noinline__) can call them out of line, one copy per kernel rather than one per
 * unrolled use, which keeps its compiler's time down: coil_gpu_ool_math as its math names and
 * COIL_GPU_OOL_HELPERS in its helpers (cuda and hip do). */
const char *coil_gpu_ool_math(coil_kop op, coil_dtype t);
#define COIL_GPU_OOL_HELPERS                                                                                   \
  "static __device__ __noinline__ float coil_sinf_ool(float x) { return sinf(x); }\n"                         \
  "static __device__ __noinline__ float coil_cosf_ool(float x) { return cosf(x); }\n"                         \
  "static __device__ __noinline__ double coil_sin_ool(double x) { return sin(x); }\n"                         \
  "static __device__ __noinline__ double coil_cos_ool(double x) { return cos(x); }\n"                         \
  "static __device__ __noinline__ float coil_tanf_ool(float x) { return tanf(x); }\n"                         \
  "static __device__ __noinline__ double coil_tan_ool(double x) { return tan(x); }\n"

/* The prelude every kernel source starts with (the dialect's head and conversions, the SDK's C
 * helpers as device functions, combining stores, block and warp reductions, scans). */
void coil_gpu_prelude(const coil_gpu_dialect *dl, coil_strbuf *out);
/* The source of kernel k of p with plan pl (NULL: the default), prelude included. */
void coil_gpu_kernel_source(const coil_gpu_dialect *dl, const coil_wir_program *p, int k, const coil_gpu_plan *pl,
                            coil_strbuf *out);
/* Kernel k once per candidate plan, as NAME__cand<i> (and their unaligned variants). */
void coil_gpu_candidates_source(const coil_gpu_dialect *dl, const coil_wir_program *p, int k,
                                const coil_gpu_plan *cands, int n, coil_strbuf *out);
/* All kernels after one prelude (plans: per kernel, NULL: defaults): an artifact's readable
 * source. */
void coil_gpu_program_source(const coil_gpu_dialect *dl, const coil_wir_program *p, const coil_gpu_plan *plans,
                             coil_strbuf *out);

/* ---- A generated GEMM (gpu_gemm.c) ----
 * C[b] = A[b] x B[b] (M x K times K x N, b < batch) for f16, bf16, f32 and f64, accumulated in
 * float (double for f64), for aten.mm / aten.bmm extern lines where no vendor BLAS is at hand.
 * Operands may have any element strides (a transposed or expanded operand needs no copy); a
 * slice of a transposed operand is read along its unit stride. The kernel NAME is
 *
 *   KERNEL_DECL void LAUNCH_BOUNDS NAME(const T *A, const T *B, T *C, long long M, long long N,
 *       long long K, long long batch, long long sab, long long sam, long long sak, long long sbb,
 *       long long sbk, long long sbn, long long scb, long long scm, long long scn,
 *       const T *bias, int relu)
 *
 * (each pointer with the dialect's restrict_kw) where T is the stored type (uint16_t for f16 and
 * bf16), A[b][m][k] is A[b * sab + m * sam + k * sak], and likewise B[b][k][n] with
 * sbb, sbk, sbn and C[b][m][n] with scb, scm, scn. The epilogue (coil_gpu_epilogue's work) is
 * applied as C is stored, in the accumulation type before the one rounding to T: bias (NULL:
 * none) adds bias[n] to every row, then relu (non-zero) takes max(x, 0) with NaN kept. C must
 * not overlap A or B. It is launched on a
 * one-dimensional grid of coil_gpu_gemm_blocks blocks (blocks, 1, 1) of pl->threads threads;
 * blocks stride over the bm x bn tiles of every C[b] (tile t: n tile t % tiles_n, m tile
 * t / tiles_n % tiles_m, batch t / (tiles_n * tiles_m)), so any grid is correct. Every element
 * of C is written (K = 0: zeros), nothing outside it; sizes need not be multiples of the tiles;
 * all indexing is 64-bit. The kernel uses the dialect's thread and block indices, grid size,
 * barrier and shared memory, no warp shuffles, and nothing depends on the warp's width. */
typedef struct coil_gpu_gemm_plan {
  unsigned threads; /* block size, 1..1024 */
  int bm, bn;       /* the block's tile of C: bm rows by bn columns */
  int bk;           /* K is taken in slices of bk, staged in shared memory */
} coil_gpu_gemm_plan;
#define COIL_GPU_GEMM_SMEM_MAX 49152 /* bytes of the two staged slices (CUDA's static shared memory) */
#define COIL_GPU_GEMM_TILE_MAX 64    /* accumulators per thread (registers) */

/* The plan for dtype t (f16, bf16, f32, f64): 256 threads on 64 x 64 tiles, 4 x 4 per thread, K in
 * slices of 16 (8 for f64: the same 8.3 KB of shared memory). */
void coil_gpu_gemm_plan_for(const coil_gpu_dialect *dl, coil_dtype t, coil_gpu_gemm_plan *out);
/* The plan for small products (coil_gpu_gemm_is_small): 128 threads on 16 x 16 tiles, 1 x 2 per
 * thread, K in slices of 32: 16 times the default plan's blocks for the same C and 4 warps each
 * (a product of a few tiles is bound by latency, not by its multiply-adds). On an H100, a chain
 * of eight 64 x 64 x 64 f32 products, each with a relu folded in, took 6.6 us a product this
 * way, against 11.2 with the default plan (one block; 164 registers a thread) and 11.3 with 64
 * threads on 16 x 16 x 64 (docs/hip.md). */
void coil_gpu_gemm_plan_small(const coil_gpu_dialect *dl, coil_dtype t, coil_gpu_gemm_plan *out);
/* Whether an M x N x batch product takes the small plan: dflt (the default plan) gives it fewer
 * than 8 tiles, too few to occupy a GPU's compute units. */
bool coil_gpu_gemm_is_small(const coil_gpu_gemm_plan *dflt, int64_t M, int64_t N, int64_t batch);
/* Whether the kernel can be generated for t and pl: a supported dtype; the threads split into
 * rx along a tile row and threads / rx along a column dividing bn and bm, each thread holding at
 * most COIL_GPU_GEMM_TILE_MAX accumulators; the two slices (bk x (bm + 1) and bk x (bn + 1)
 * accumulation-type elements) within COIL_GPU_GEMM_SMEM_MAX. */
bool coil_gpu_gemm_plan_valid(coil_dtype t, const coil_gpu_gemm_plan *pl);
/* The source of kernel NAME for dtype t with plan pl, WITHOUT the prelude (append it after
 * coil_gpu_prelude; several GEMMs may follow one prelude). false, writing nothing, when the
 * plan is not valid for t. */
bool coil_gpu_gemm_source(const coil_gpu_dialect *dl, coil_dtype t, const coil_gpu_gemm_plan *pl, const char *name,
                          coil_strbuf *out);
/* Blocks to launch for an M x N x batch product with plan pl: one per tile, capped so that blocks
 * x threads fits 32 bits (the kernel's blocks stride over the rest); 0 when M, N or batch is 0
 * (nothing to launch; with K = 0 and M, N, batch > 0 the kernel must still run, to write zeros). */
unsigned coil_gpu_gemm_blocks(const coil_gpu_gemm_plan *pl, int64_t M, int64_t N, int64_t batch);

/* ---- GEMM epilogues in general (gpu_epilogue.c finds them, gpu_emit.c writes them) ----
 * coil_gpu_find_epilogues (coil/coil_gpu_run.h) finds the kernels a library's fixed epilogues do
 * (relu, bias). A generated GEMM can run any elementwise body, so this matcher takes more: an
 * aten.mm.default line (2-D, f32, f16 or bf16, constant sizes [M, N]) whose next kernel line (past
 * comments, allocations and frees of other buffers, as there) is a pointwise kernel over exactly
 * x[M, N] (x0 the row, x1 the column) with no size symbols that
 *   - loads the product (the mm's output) only at the row-major index x0 * N + x1;
 *   - loads its other params, all inputs, only at the row-major index (a residual), at x1 (a
 *     vector over the columns: a bias), at x0 (over the rows) or at a constant (a 0-d tensor);
 *   - computes with elementwise ops alone (no reduce, scan or indirect index);
 *   - stores exactly once, plainly, at the row-major index, a float value to an output of the
 *     product's dtype shaped [M, N];
 * and nothing else reads the product where the kernel writes another buffer (the product is then
 * never written). A GEMM that applies the kernel's body to each element of the product as it
 * stores it (coil_gpu_gemm_epilogue_source) does the kernel's work; the executor skips its line. */
#define COIL_GPU_EPILOGUE_MAX_INPUTS 8
typedef struct coil_gpu_gemm_epilogue {
  int kernel_line; /* -1: nothing to fold */
  int product;     /* the mm's output buffer */
  int out_arg;     /* the kernel call's argument stored */
  int ninputs;     /* the params the body loads besides the product, in param order, */
  int inputs[COIL_GPU_EPILOGUE_MAX_INPUTS]; /* as indices among the kernel's params (and call args) */
} coil_gpu_gemm_epilogue;

/* The general epilogue of every line of p (epi: p->nlines entries; kernel_line -1 where none). */
void coil_gpu_find_gemm_epilogues(const coil_wir_program *p, coil_gpu_gemm_epilogue *epi);
/* The body of e's kernel as the device function
 *   static DEVICE FORCEINLINE float NAME(float coil_mm, int64_t X0, int64_t X1, const T *RESTRICT P, ...)
 * (X0, X1 and each P the kernel's own names; a pointer per e->inputs, in that order), which
 * returns the value the kernel stores at element (X0, X1) when it loads coil_mm there from the
 * product (the element's value in float, as the kernel's load gives it). Every instruction is the
 * kernel's own, written by the emitter that writes the kernel, so a GEMM that calls it with the
 * product as stored computes what the kernel computes. The dialect's prelude must come first. */
void coil_gpu_gemm_epilogue_source(const coil_gpu_dialect *dl, const coil_wir_program *p,
                                   const coil_gpu_gemm_epilogue *e, const char *name, coil_strbuf *out);

#endif
