/* cuda.h — the cuda plugin's internals: its dialect of the SDK's GPU emitter (cuda_codegen.c), the
 * run-time wrapper (cuda_run.c) and coil.attention (cuda_attention.c), shared by the plugin's
 * table (cuda_plugin.c). */
#ifndef COIL_CUDA_H
#define COIL_CUDA_H

#include <pthread.h>
#include <stdbool.h>

#include "coil/coil_gpu.h"
#include "coil/coil_gpu_run.h"
#include "coil/coil_plugin.h"
#include "coil/coil_sdk.h"
#include "coil/wir.h"
#include "cuda_api.h"


/* The CUDA dialect of the SDK's GPU emitter (cuda_codegen.c): kernels, launch plans
 * (coil_gpu_plan) and sources come from coil/coil_gpu.h with it. */
extern const coil_gpu_dialect cuda_dialect;

/* max-autotune: times kernel k's candidate plans in coil-cuda-tune (a separate process with a
 * deadline) and sets *best to the fastest (the default when it cannot tune: symbolic sizes, no
 * GPU, no worker); appends what it did to log. */
void cuda_tune_kernel(const coil_wir_program *p, int k, const char *arch, coil_gpu_plan *best, coil_strbuf *log);
/* NVRTC: src compiled for arch into the cubin at path (what and dir: for messages). */
coil_error *cuda_nvrtc_compile(const char *src, const char *arch, const char *what, const char *dir, const char *path);

/* A GEMM line's cuBLASLt setup, reused while its operands keep their layout and alignment. */
typedef struct cuda_attn_loaded cuda_attn_loaded;
typedef struct cuda_gemm_loaded cuda_gemm_loaded;

typedef struct {
  bool valid;
  int64_t key[19];
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulAlgo_t algo;
} cuda_lt_plan;

/* A convolution line's cuDNN descriptors and algorithm, for the sizes and strides in key. The
 * convolution runs on x, w and y as described (dense NCHW, or dense NHWC when `nhwc`); an
 * operand whose own layout differs is copied first (xsrc, wsrc: the input's and weight's own
 * layouts, wdense: the weight's layout as a tensor) and the output copied back after (yout: y's
 * own layout). The layout and algorithm are the fastest cuDNN measures on the first run outside
 * a graph capture, else NCHW and its heuristics' first (timed: false). */
typedef struct {
  bool valid, timed, nhwc;
  int64_t key[64];
  cudnnTensorDescriptor_t x, y, bias, xsrc, wsrc, wdense, yout;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  int algo;
  float ms; /* the measured time of algo (timed plans) */
} cuda_dnn_plan;

/* The options ([plugin.cuda] and the host's coil.* keys). */
typedef struct {
  char arch[16];     /* sm_XY; "" = the GPU's (decided on first need) */
  bool sync;         /* sync = false: runs whose tensors are all on the GPU return once queued */
  bool graphs;       /* coil.graph_capture (mode reduce-overhead): capture once, replay */
  bool autotune;     /* coil.autotune (mode max-autotune): time candidate plans, keep the best */
  bool attn_simt;    /* attention_kernel = simt: coil.attention never on the tensor cores */
  bool attn_mma;     /* attention_kernel = mma: never on wgmma (the mma.sync kernel on sm_90 too) */
  int attn_tile[5];  /* attention_tile = BRxBCxWMxST[xMINB]: the tensor-core kernel's tile for every
                        head dim (cuda_attention.c); all 0: its default per head dim */
  int gemm;          /* gemm = auto|library|generated: CUDA_GEMM_* (cuda_gemm.c) */
} cuda_options;

enum { CUDA_GEMM_AUTO, CUDA_GEMM_LIBRARY, CUDA_GEMM_GENERATED };

#define CUDA_BLAS_WORKSPACE ((size_t)32 << 20)

/* max-autotune with gemm = auto (cuda_tune.c): each mm line the generated GEMM could take
 * (cuda_gemm_choices), timed in coil-cuda-tune as the whole program with that line alone
 * generated against the program with none; *force (per line: 1 generated, 0 the library)
 * where a time decided, NULL where nothing could be timed (the cost rule then decides). */
void cuda_tune_gemm(coil_plugin *self, const coil_wir_program *p, const cuda_options *opt, signed char **force,
                    coil_strbuf *log);
/* A compile of p into dir with options opt, the generated GEMMs as force says (NULL: as
 * opt->gemm says); tuned: what tuning logged before (tuning.log's head), or NULL. */
coil_error *cuda_build(coil_plugin *self, const coil_wir_program *p, const cuda_options *opt, const signed char *force,
                       const char *dir, const char *tuned);


/* A loaded artifact: the program, one module per kernel, the stream it runs on. */
struct coil_artifact {
  const coil_host_api *host; /* for the log (may be NULL) */
  cuda_options opt;
  pthread_mutex_t lock;      /* one run at a time replays or captures */
  coil_gpu_graph *graph;     /* the capture for the last size binding; NULL before the first */
  char graph_refused[512];   /* why runs no longer capture (logged once); "" while they do */
  coil_wir_program *program; /* owned */
  const cuda_driver *cu;
  CUdevice dev;
  CUcontext ctx;             /* the device's primary context (retained) */
  CUstream stream;           /* what a run queues on: own_stream, or during a run given a
                                caller's stream (ABI 1.2) that stream */
  CUstream own_stream;       /* created at load; captures always run on it */
  CUstream run_stream;       /* during a capture: the stream the run was given */
  CUstream last_stream;      /* the stream the previous run queued on (a run on another stream
                                first waits for it: they share the workspace and the pool) */
  CUstream handles_stream;   /* the stream the cuBLAS and cuDNN handles are set to */
  CUevent switch_event;      /* recorded on last_stream when the stream changes */
  bool caller_streams;       /* a run was queued on a caller's stream: free synchronizes the
                                context, not only own_stream */
  CUmemoryPool pool;         /* intermediates: a pool of its own that keeps its memory between
                                runs (the default pool returns it to the driver at every
                                synchronize, and mapping it again costs milliseconds) */
  bool capturing;            /* a graph capture is running: allocations become graph nodes */
  int nkernels;
  CUmodule *modules;         /* per kernel */
  CUfunction *functions;     /* per kernel (the vectorised variant where there is one) */
  CUfunction *unaligned;     /* per kernel: the scalar variant of a vectorised kernel, or NULL */
  coil_gpu_plan *plans;      /* per kernel */
  const cuda_cublas *blas;   /* for programs with mm/bmm lines; else NULL */
  cublasHandle_t blas_handle;
  CUdeviceptr blas_workspace; /* CUDA_BLAS_WORKSPACE bytes given to cuBLAS up front (cuDNN uses
                                 it too), so a captured GEMM allocates nothing */
  const cuda_cublaslt *lt;    /* NULL: GEMMs through cublasGemmStridedBatchedEx, no epilogues */
  cublasLtHandle_t lt_handle;
  cuda_lt_plan *lt_plans;     /* per line */
  coil_gpu_epilogue *epi;     /* per line: cuBLASLt epilogues (coil/coil_gpu_run.h) */
  const cuda_cudnn *dnn;      /* for programs with convolution lines; else NULL */
  cudnnHandle_t dnn_handle;
  cuda_dnn_plan *dnn_plans;   /* per line */
  cuda_attn_loaded *attn;     /* programs with coil.attention lines: their kernels; else NULL */
  cuda_gemm_loaded *gemm;     /* programs with generated GEMMs (gemm.txt): their kernels; else NULL */
  CUdeviceptr oob;            /* programs with indirect loads: 2 long longs, [0] = 1 and [1] = the
                                 value when a kernel found an index out of range; 0 otherwise.
                                 Zeroed at load and after a synchronous run reports it, never
                                 per run: a run with sync = false leaves it to the next
                                 synchronous run to report */
};

/* Releases the capture of a (graph, static buffers), and its cuBLASLt plans. */
void cuda_graph_free(coil_artifact *a);
void cuda_lt_plans_free(coil_artifact *a);
void cuda_dnn_plans_free(coil_artifact *a);

/* Whether a library op of the program can run here: mm or bmm on floats, each operand with unit
 * stride in one of its two matrix dims (BLAS layouts), convolution with cuDNN, coil.attention
 * (cuda_attention_line_ok). Otherwise why says what is missing. */
bool cuda_blas_line_ok(const coil_wir_program *p, const coil_line *l, char *why, size_t n);

/* Runs a loaded artifact (see coil_plugin_run_args): inputs on the host or on the device,
 * outputs written where they are. */
coil_error *cuda_run(coil_artifact *a, const coil_plugin_run_args *args);

/* ---- coil.attention (cuda_attention.c, kernels in cuda_attention.cu) ---- */

#define CUDA_ATTN_MAX_BATCH 6

/* The kernels' parameter, laid out as cuda_attention.cu's coil_attn_params (element strides). */
typedef struct {
  uint64_t q, k, v, mask, out;   /* device addresses of element 0 (mask: 0 when none) */
  int64_t L, S, E, Ev;
  int64_t q_l, q_e, k_s, k_e, v_s, v_e, m_l, m_s, o_l, o_e; /* the last two dims (0: size 1) */
  int64_t nb;                    /* batch dims after merging (0 to CUDA_ATTN_MAX_BATCH) */
  int64_t bsize[CUDA_ATTN_MAX_BATCH];
  int64_t q_b[CUDA_ATTN_MAX_BATCH], k_b[CUDA_ATTN_MAX_BATCH], v_b[CUDA_ATTN_MAX_BATCH], m_b[CUDA_ATTN_MAX_BATCH],
      o_b[CUDA_ATTN_MAX_BATCH];  /* 0: broadcast */
  int64_t q_tiles;               /* blocks over L; blockIdx.x = tile + q_tiles * batch index */
  int64_t masked_nan;            /* a row of all -inf scores gives NaN (1) or 0 */
  double scale;
  float scale_log2, pad_;        /* scale * log2(e), in f32: the tensor-core kernels read it as an
                                    operand, not into a register */
} cuda_attn_params;

/* One kernel of cuda_attention.cu: attn_simt of a dtype, or attn_tc (or attn_wg) of a dtype, head
 * dim, mask or not and tile. */
typedef struct {
  coil_dtype dtype;
  bool tc;
  bool wg;                          /* attn_wg (tc too): wgmma, sm_90a; br = 64 warpgroups, bc = keys
                                       a step, minb; wm and stages unused */
  bool mask;
  int hd, br, bc, wm, stages, minb; /* attn_tc: head dim, query rows a block, keys a step, m16
                                       tiles a warp, shared-memory stages, blocks an SM */
  int sm;                           /* cuda_attention.c's tile table: the least target (0: any) */
} cuda_attn_kernel;

/* Its symbol (coil_attn_simt_f16, coil_attn_tc_f16_d64_128x64x1x2x2), block size and dynamic
 * shared memory; its NVRTC source (cuda_attention.cu and the line instantiating it), or that
 * line alone. */
void cuda_attention_kernel_name(const cuda_attn_kernel *k, char *buf, size_t n);
/* The arch NVRTC compiles it for: the target's, or sm_90a for attn_wg. */
const char *cuda_attention_arch(const cuda_attn_kernel *k, const char *arch);
unsigned cuda_attention_threads(const cuda_attn_kernel *k);
unsigned cuda_attention_smem(const cuda_attn_kernel *k);
void cuda_attention_module_source(const cuda_attn_kernel *k, coil_strbuf *src);
void cuda_attention_instance(const cuda_attn_kernel *k, coil_strbuf *src);

/* Whether coil.attention line l can run here (arity, dtypes, ranks, parameters); else why. */
bool cuda_attention_line_ok(const coil_wir_program *p, const coil_line *l, char *why, size_t n);

/* The attention kernels of a program (at compile): *out NULL when it has no coil.attention line.
 * Kernel i is compiled into aI.cubin; cuda_attention_write writes attention.txt (the plan load
 * reads) and attention.cu (every kernel's source, readable). */
typedef struct cuda_attn_build cuda_attn_build;
/* The statement query's answer for a coil.attention call (cuda_plugin.c supports_stmt): whether
 * the tensor-core kernel runs it on sm (f16/bf16, a head dim it has a tile for, unit last
 * strides). */
bool cuda_attention_fast(const coil_plugin_stmt *st, const cuda_options *opt, int sm);
coil_error *cuda_attention_plan(const coil_wir_program *p, const cuda_options *opt, const char *arch,
                                cuda_attn_build **out);
int cuda_attention_nkernels(const cuda_attn_build *b);
const cuda_attn_kernel *cuda_attention_kernel(const cuda_attn_build *b, int i);
coil_error *cuda_attention_write(const cuda_attn_build *b, const char *dir);
void cuda_attention_build_free(cuda_attn_build *b);

/* Load: a->attn from attention.txt and the aI.cubin (nothing for a program without attention). */
coil_error *cuda_attention_load(coil_artifact *a, const char *dir);
void cuda_attention_unload(coil_artifact *a);

/* A launch of a coil.attention line: nothing (no rows, columns or batch), the SIMT kernel or the
 * tensor-core one, its grid, block and dynamic shared memory. */
typedef enum { CUDA_ATTN_NOTHING, CUDA_ATTN_SIMT, CUDA_ATTN_TC } cuda_attn_path;
typedef struct {
  cuda_attn_path path;
  cuda_attn_params prm;
  unsigned grid_x, grid_y, threads, smem;
} cuda_attn_launch;

/* The launch of coil.attention on the bound buffers ops (q, k, v, the mask or NULL) and out:
 * the tensor-core kernel tc (NULL: none) where the operands allow it, else the SIMT kernel.
 * Returns NULL, or what is wrong (static text or why). */
const char *cuda_attention_prepare(const coil_gpu_buf *const ops[4], const coil_gpu_buf *out, double scale,
                                   bool masked_nan, const cuda_attn_kernel *tc, cuda_attn_launch *L, char *why, size_t n);
/* Runs line l (the executor's extern call): one launch on the artifact's stream, no allocation
 * or synchronization (graph capture records it). */
coil_error *cuda_attention_run(coil_gpu_run *c, const coil_line *l);

/* ---- the generated GEMM (cuda_gemm.c, its kernel text cuda_gemm.cu) ----
 * mm lines on sm_90 through a wgmma GEMM of this plugin's own, with the pointwise kernel after
 * it (coil_gpu_find_gemm_epilogues) folded into its epilogue. Option gemm: auto (the cost rule,
 * cuda_gemm.c), generated (wherever its checks pass) or library (never). */

/* The generated GEMMs of a program (at compile): *out NULL when no line takes one. Kernel i is
 * compiled for CUDA_GEMM_ARCH into gI.cubin; cuda_gemm_write writes gemm.txt (the plan load
 * reads, without the kernels failed[i] marks as refused by NVRTC: their lines keep the library)
 * and gemm.cu (every kernel's source, readable). */
#define CUDA_GEMM_ARCH "sm_90a"
typedef struct cuda_gemm_build cuda_gemm_build;
/* force: NULL (option gemm decides), or per line 1 (generated where the checks pass) or 0 (the
 * library): max-autotune's choice (cuda_tune_gemm). */
coil_error *cuda_gemm_plan(const coil_wir_program *p, const cuda_options *opt, const char *arch, const signed char *force,
                           cuda_gemm_build **out);
/* The mm lines the generated GEMM could take on arch (its checks pass), up to max: for
 * max-autotune, which times each against the library. */
typedef struct {
  int line;
  bool rule;      /* the cost rule (gemm = auto) takes it */
  char what[640]; /* "MxNxK f16[, B transposed][, epilogue KERNEL]", for the log */
} cuda_gemm_choice;
int cuda_gemm_choices(const coil_wir_program *p, const char *arch, cuda_gemm_choice *out, int max);
int cuda_gemm_nkernels(const cuda_gemm_build *b);
const char *cuda_gemm_kernel_name(const cuda_gemm_build *b, int i);
/* kernel i's NVRTC source: the prelude, the fused kernel's body, the template filled in */
void cuda_gemm_source(const coil_wir_program *p, const cuda_gemm_build *b, int i, coil_strbuf *src);
/* gemm.txt's text (failed: NULL, or per kernel whether to leave it out) */
void cuda_gemm_plan_text(const cuda_gemm_build *b, const bool *failed, coil_strbuf *t);
coil_error *cuda_gemm_write(const cuda_gemm_build *b, const coil_wir_program *p, const bool *failed, const char *dir);
void cuda_gemm_build_free(cuda_gemm_build *b);

/* Load: a->gemm from gemm.txt and the gI.cubin (nothing when there is no gemm.txt). A kernel the
 * GPU cannot run (its shared memory, no cuTensorMapEncodeTiled) leaves its lines to cuBLAS. */
coil_error *cuda_gemm_load(coil_artifact *a, const char *dir);
void cuda_gemm_unload(coil_artifact *a);
/* mm line l through its generated GEMM where it has one and the bound operands pass the checks
 * (layouts, 16-byte alignment, the epilogue's buffers live): one launch on the artifact's stream,
 * capture-safe; *done then, and c->skip_line is the folded kernel's line. Otherwise *done is
 * false and the caller runs the library. */
coil_error *cuda_gemm_run(coil_gpu_run *c, const coil_line *l, bool *done);

#endif
