/* hip_run.c — the hip plugin's wrapper over the HIP runtime (hip_api.h: libamdhip64 on AMD, the
 * CUDA driver on HIP's NVIDIA platform): loads an artifact's code objects as modules, and runs
 * programs with the SDK's GPU executor (coil/coil_gpu_run.h) on a stream of its own or the
 * caller's, allocating from the device's stream-ordered pool (hipMallocAsync; the pool keeps its
 * memory between runs). A run synchronizes once at the end, unless it was queued on a caller's
 * stream with every tensor on the device. mm and bmm lines call the platform's BLAS where it
 * loads and the operands have a BLAS layout (cuBLAS on the NVIDIA platform: option gemm), else
 * launch the SDK's generated GEMM.
 * reduce-overhead captures the run into a hipGraph (the SDK's coil_gpu_graph_run). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hip.h"

struct coil_artifact {
  const hip_runtime *rt;
  coil_gpu_runtime grt;      /* the executor's view of rt */
  char arch[16];
  pthread_mutex_t lock;      /* one run at a time */
  coil_wir_program *program; /* owned */
  hipStream_t own_stream;
  hipStream_t stream;        /* what the run in progress queues on */
  bool caller_streams;       /* a run was queued on a caller's stream, or one returned unsynchronized */
  bool async;                /* option sync = false */
  bool graphs;               /* coil.graph_capture */
  const coil_host_api *host;
  coil_gpu_graph *graph;     /* the capture for the last binding; NULL before the first */
  char graph_refused[512];   /* why runs no longer capture (logged once); "" while they do */
  hipStream_t run_stream;    /* during a capture: the stream the run was given */
  int nkernels;
  hipModule_t *modules;      /* per kernel */
  hipFunction_t *functions;  /* per kernel (the vectorised variant where there is one) */
  hipFunction_t *unaligned;  /* per kernel: the scalar variant of a vectorised kernel, or NULL */
  coil_gpu_plan *plans;      /* per kernel */
  hipModule_t gemm_modules[COIL_DTYPE_COUNT]; /* the generated GEMM of each dtype mm lines use */
  hipFunction_t gemms[COIL_DTYPE_COUNT];
  hipFunction_t small_gemms[COIL_DTYPE_COUNT]; /* the same with the small plan */
  coil_gpu_gemm_plan gemm_plans[COIL_DTYPE_COUNT], small_plans[COIL_DTYPE_COUNT];
  coil_gpu_epilogue *epi;    /* per line: a kernel the generated GEMM folds in as its epilogue */
  int gemm;                  /* option gemm (HIP_GEMM_*) */
  const hip_blas *blas;      /* mm and bmm through the platform's BLAS (option gemm), or NULL */
  hipblasHandle_t blas_handle;
  hipStream_t blas_stream;   /* the stream the handle is set to */
  void *blas_workspace;      /* given up front, so a captured GEMM allocates nothing */
  void *oob;                 /* the index check (programs with indirect loads), or NULL */
};

#define PTR(p) ((void *)(uintptr_t)(p))

static coil_artifact *
art(const coil_gpu_run *r)
{
  return r->user;
}

static int
rt_alloc(coil_gpu_run *r, size_t bytes, coil_gpu_ptr *out)
{
  void *p = NULL;
  int e = art(r)->rt->MallocAsync(&p, bytes, art(r)->stream);
  *out = (coil_gpu_ptr)(uintptr_t)p;
  return e;
}

static int
rt_release(coil_gpu_run *r, coil_gpu_ptr p)
{
  return art(r)->rt->FreeAsync(PTR(p), art(r)->stream);
}

static int
rt_copy(coil_gpu_run *r, coil_gpu_copy_kind kind, uintptr_t dst, uintptr_t src, size_t bytes)
{
  const hip_runtime *rt = art(r)->rt;
  hipStream_t s = art(r)->stream;
  switch (kind) {
  case COIL_GPU_TO_DEVICE: return rt->MemcpyHtoDAsync(PTR(dst), PTR(src), bytes, s);
  case COIL_GPU_TO_HOST: return rt->MemcpyDtoHAsync(PTR(dst), PTR(src), bytes, s);
  case COIL_GPU_ON_DEVICE: return rt->MemcpyDtoDAsync(PTR(dst), PTR(src), bytes, s);
  }
  return 1; /* hipErrorInvalidValue */
}

static int
rt_zero(coil_gpu_run *r, coil_gpu_ptr p, size_t bytes)
{
  return art(r)->rt->MemsetD8Async(PTR(p), 0, bytes, art(r)->stream);
}

static int
rt_sync(coil_gpu_run *r)
{
  return art(r)->rt->StreamSynchronize(art(r)->stream);
}

static int
rt_launch(coil_gpu_run *r, int k, bool vec, unsigned blocks, unsigned threads, void **params)
{
  coil_artifact *a = art(r);
  hipFunction_t f = vec || !a->unaligned[k] ? a->functions[k] : a->unaligned[k];
  return a->rt->ModuleLaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, a->stream, params, NULL);
}

static const char *
rt_error_string(coil_gpu_run *r, int code)
{
  return art(r)->rt->GetErrorString(code);
}

#define HIP_BLAS_WORKSPACE ((size_t)32 << 20)

/* C[M, N] = A[M, K] B[K, N] (per batch) in row-major terms is C^T = B^T A^T column-major: the
 * BLAS gets B first, m = N, n = M, and writes C with ldc = N. 1: the operands do not fit a BLAS
 * call (the generated GEMM runs instead). */
static int
blas_gemm(coil_gpu_run *r, coil_dtype t, int o, const coil_gpu_buf *A, const coil_gpu_buf *B, const coil_gpu_buf *C,
          coil_error **err)
{
  coil_artifact *a = art(r);
  const hip_blas *bl = a->blas;
  int64_t M = A->sizes[o], K = A->sizes[o + 1], N = B->sizes[o + 1], batch = o ? A->sizes[0] : 1, lda, ldb;
  bool ta, tb;
  if (!K || !coil_gpu_blas_layout(A, o, &ta, &lda) || !coil_gpu_blas_layout(B, o, &tb, &ldb) ||
      C->strides[o + 1] != 1 || C->strides[o] != N || (o && batch > 1 && C->strides[0] != M * N) || M > 2147483647 ||
      N > 2147483647 || K > 2147483647 || batch > 2147483647)
    return 1;
  int dt = t == COIL_F16 ? bl->r16f : t == COIL_BF16 ? bl->r16bf : t == COIL_F32 ? bl->r32f : bl->r64f;
  int compute = t == COIL_F64 ? bl->compute64f : bl->compute32f;
  float af = 1, bf = 0;
  double ad = 1, bd = 0;
  const void *alpha = t == COIL_F64 ? (const void *)&ad : (const void *)&af;
  const void *beta = t == COIL_F64 ? (const void *)&bd : (const void *)&bf;
  long long sa = o && batch > 1 ? A->strides[0] : 0, sb = o && batch > 1 ? B->strides[0] : 0;
  if (a->blas_stream != a->stream) {
    if (bl->SetStream(a->blas_handle, a->stream)) {
      *err = coil_gpu_run_fail(r, COIL_ERR_RUNTIME, "cannot set the BLAS handle's stream");
      return 0;
    }
    a->blas_stream = a->stream;
  }
  int s = bl->GemmStridedBatchedEx(a->blas_handle, tb ? bl->op_t : bl->op_n, ta ? bl->op_t : bl->op_n, (int)N, (int)M,
                                   (int)K, alpha, PTR(B->ptr), dt, (int)ldb, sb, PTR(A->ptr), dt, (int)lda, sa, beta,
                                   PTR(C->ptr), dt, (int)N, (long long)(M * N), (int)batch, compute, bl->algo_default);
  *err = s ? coil_gpu_run_fail(r, COIL_ERR_RUNTIME, "the BLAS's GemmStridedBatchedEx failed with status %d", s) : NULL;
  return 0;
}

/* Whether the BLAS computes small products right: f32 with B as is and transposed, f16 and f64,
 * each exact in every dtype. For hipBLAS on AMD, dlopen'd with enum values that no header vouched
 * for at build time and that no AMD GPU here has run. Once per process and platform; NULL when
 * right, else why not. */
static const char *
blas_check(coil_artifact *a, const hip_blas *bl, hip_platform pf)
{
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static int state[2];          /* 0: not checked, 1: right, -1: wrong */
  static char why[2][160];
  pthread_mutex_lock(&mu);
  if (state[pf]) {
    pthread_mutex_unlock(&mu);
    return state[pf] > 0 ? NULL : why[pf];
  }
  /* C[2][2] = A[2][3] B[3][2] = {-1, 2, 2, 2}; Bt = B stored transposed */
  static const double A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {1, -1, 2, 0, -2, 1}, Bt[6] = {1, 2, -2, -1, 0, 1};
  static const double want[4] = {-1, 2, 2, 2};
  static const struct { coil_dtype t; bool tb; } cases[] = {{COIL_F32, false}, {COIL_F32, true}, {COIL_F16, false}, {COIL_F64, false}};
  void *dev = NULL;
  hipError_t e = a->rt->Malloc(&dev, 3 * 6 * 8);
  snprintf(why[pf], sizeof why[pf], "its check could not run (hipMalloc failed)");
  bool ok = !e;
  for (size_t c = 0; ok && c < sizeof cases / sizeof *cases; c++) {
    const coil_dtype t = cases[c].t;
    const size_t es = coil_dtype_size(t);
    unsigned char host[3][6 * 8];
    const double *src[2] = {A, cases[c].tb ? Bt : B};
    for (int m = 0; m < 2; m++)
      for (int i = 0; i < 6; i++) {
        void *at = host[m] + (size_t)i * es;
        if (t == COIL_F64)
          *(double *)at = src[m][i];
        else if (t == COIL_F32)
          *(float *)at = (float)src[m][i];
        else
          *(uint16_t *)at = coil_f32_to_f16((float)src[m][i]);
      }
    memset(host[2], 0xff, sizeof host[2]);
    char *d = dev;
    const int dt = t == COIL_F16 ? bl->r16f : t == COIL_F32 ? bl->r32f : bl->r64f;
    const float af = 1, bf = 0;
    const double ad = 1, bd = 0;
    const void *alpha = t == COIL_F64 ? (const void *)&ad : (const void *)&af;
    const void *beta = t == COIL_F64 ? (const void *)&bd : (const void *)&bf;
    int st = 0;
    e = a->rt->MemcpyHtoDAsync(d, host[0], 6 * es, a->own_stream);
    e = e ? e : a->rt->MemcpyHtoDAsync(d + 48, host[1], 6 * es, a->own_stream);
    e = e ? e : a->rt->MemcpyHtoDAsync(d + 96, host[2], 4 * es, a->own_stream);
    if (!e) /* column-major C^T = B^T A^T: B as is is N x K (ld 2), stored transposed K x N (ld 3, op T) */
      st = bl->GemmStridedBatchedEx(a->blas_handle, cases[c].tb ? bl->op_t : bl->op_n, bl->op_n, 2, 2, 3, alpha, d + 48,
                                    dt, cases[c].tb ? 3 : 2, 0, d, dt, 3, 0, beta, d + 96, dt, 2, 0, 1,
                                    t == COIL_F64 ? bl->compute64f : bl->compute32f, bl->algo_default);
    e = e ? e : a->rt->MemcpyDtoHAsync(host[2], d + 96, 4 * es, a->own_stream);
    e = e ? e : a->rt->StreamSynchronize(a->own_stream);
    if (e || st) {
      snprintf(why[pf], sizeof why[pf], "its check failed: a %s GEMM returned %s %d", coil_dtype_name(t),
               st ? "status" : "HIP error", st ? st : (int)e);
      ok = false;
    }
    for (int i = 0; ok && i < 4; i++) {
      const void *at = host[2] + (size_t)i * es;
      double got = t == COIL_F64 ? *(const double *)at : t == COIL_F32 ? *(const float *)at
                                                                       : coil_f16_to_f32(*(const uint16_t *)at);
      if (got != want[i]) {
        snprintf(why[pf], sizeof why[pf], "its check failed: a %s%s GEMM gave %g for %g (unexpected enum values?)",
                 coil_dtype_name(t), cases[c].tb ? " transposed" : "", got, want[i]);
        ok = false;
      }
    }
  }
  if (dev)
    a->rt->Free(dev);
  state[pf] = ok ? 1 : -1;
  pthread_mutex_unlock(&mu);
  return ok ? NULL : why[pf];
}

/* mm and bmm: C[b] = A[b] B[b] through the BLAS, or with the generated GEMM (any strides; the
 * small plan for a product of few tiles). An mm whose next kernel is a foldable epilogue
 * (coil_gpu_find_epilogues: + bias, relu) runs as the generated GEMM storing that kernel's
 * output, and the kernel line is skipped: always without a BLAS, and with gemm = auto for a
 * small product, where one kernel fewer outweighs the BLAS's speed (on an H100, eight 64^3
 * products with relus take 0.053 ms so against 0.091 as cuBLAS calls and relu kernels). */
static coil_error *
rt_extern_call(coil_gpu_run *r, const coil_line *l)
{
  coil_artifact *a = art(r);
  coil_dtype t;
  if (!hip_gemm_line(r->p, l, &t) || !a->gemms[t])
    return coil_gpu_run_fail(r, COIL_ERR_UNSUPPORTED, "library op %s is not supported by the hip plugin", l->op);
  int o = strcmp(l->op, "aten.bmm.default") == 0;
  const coil_gpu_buf *A = &r->bufs[l->args[0]], *B = &r->bufs[l->args[1]], *C = &r->bufs[l->outs[0]];
  if (A->rank != 2 + o || B->rank != 2 + o || C->rank != 2 + o || A->dtype != t || B->dtype != t)
    return coil_gpu_run_fail(r, COIL_ERR_INVALID_ARGUMENT, "%s of ranks %d and %d", l->op, A->rank, B->rank);
  long long M = A->sizes[o], K = A->sizes[o + 1], N = B->sizes[o + 1], batch = o ? A->sizes[0] : 1;
  const bool small = coil_gpu_gemm_is_small(&a->gemm_plans[t], M, N, batch);
  /* the epilogue's output (and bias) in place of C, where they are live */
  const coil_gpu_epilogue *ep = &a->epi[r->line];
  const coil_gpu_buf *out = C, *bias = NULL;
  bool fused = false;
  if (ep->kernel_line >= 0 && (!a->blas || (small && a->gemm == HIP_GEMM_AUTO))) {
    const coil_line *kc = &r->p->lines[ep->kernel_line];
    const coil_gpu_buf *eo = &r->bufs[kc->args[ep->out_arg]];
    const coil_gpu_buf *eb = ep->bias_arg >= 0 ? &r->bufs[kc->args[ep->bias_arg]] : NULL;
    if (eo->live && (!eb || eb->live))
      out = eo, bias = eb, fused = true;
  }
  coil_error *err = NULL;
  if (!fused && a->blas && M && N && batch && blas_gemm(r, t, o, A, B, C, &err) == 0)
    return err;
  long long sab = o ? A->strides[0] : 0, sbb = o ? B->strides[0] : 0, scb = o ? C->strides[0] : 0;
  long long sam = A->strides[o], sak = A->strides[o + 1], sbk = B->strides[o], sbn = B->strides[o + 1];
  long long scm = C->strides[o], scn = C->strides[o + 1];
  if (fused) /* the epilogue's store is row-major [M, N] (coil_gpu_epilogue) */
    scb = 0, scm = N, scn = 1;
  const coil_gpu_gemm_plan *pl = small ? &a->small_plans[t] : &a->gemm_plans[t];
  unsigned blocks = coil_gpu_gemm_blocks(pl, M, N, batch);
  if (fused)
    r->skip_line = ep->kernel_line; /* its work is done below (or there is none: an empty C) */
  if (!blocks)
    return NULL;
  coil_gpu_ptr pa = A->ptr, pb = B->ptr, pc = out->ptr, pbias = bias ? bias->ptr : 0;
  int relu = fused && ep->relu;
  void *params[] = {&pa, &pb, &pc, &M, &N, &K, &batch, &sab, &sam, &sak, &sbb, &sbk, &sbn, &scb, &scm, &scn, &pbias, &relu};
  int e = a->rt->ModuleLaunchKernel(small ? a->small_gemms[t] : a->gemms[t], blocks, 1, 1, pl->threads, 1, 1, 0,
                                    a->stream, params, NULL);
  return e ? coil_gpu_run_rtfail(r, e, "launching the generated GEMM") : NULL;
}

/* ---- reduce-overhead: hipGraph (coil/coil_gpu_run.h's capture) ---- */

static int
cap_static_alloc(void *user, size_t bytes, coil_gpu_ptr *out)
{
  void *p = NULL;
  int e = ((coil_artifact *)user)->rt->Malloc(&p, bytes);
  *out = (coil_gpu_ptr)(uintptr_t)p;
  return e;
}

static void
cap_static_free(void *user, coil_gpu_ptr p)
{
  ((coil_artifact *)user)->rt->Free(PTR(p));
}

static int
cap_copy(void *user, coil_gpu_copy_kind kind, uintptr_t dst, uintptr_t src, size_t bytes)
{
  coil_gpu_run r = {.user = user};
  return rt_copy(&r, kind, dst, src, bytes);
}

static coil_error *
cap_fail(coil_artifact *a, hipError_t e, const char *call)
{
  return coil_sdk_error(COIL_ERR_RUNTIME, "hip: %s: %s failed: %s (%d)", a->program->name, call, a->rt->GetErrorString(e), e);
}

/* Captured on the artifact's own stream whatever the run's (a caller's may be the legacy
 * default stream, which cannot capture); the graph is launched on the run's. */
static coil_error *
cap_begin(void *user)
{
  coil_artifact *a = user;
  a->run_stream = a->stream;
  a->stream = a->own_stream;
  hipError_t e = a->rt->StreamBeginCapture(a->stream, hipStreamCaptureModeThreadLocal);
  if (e) {
    a->stream = a->run_stream;
    return cap_fail(a, e, "hipStreamBeginCapture");
  }
  return NULL;
}

static coil_error *
cap_run(void *user, const coil_plugin_run_args *args)
{
  coil_artifact *a = user;
  return coil_gpu_run_program(&a->grt, a, a->program, a->plans, (coil_gpu_ptr)(uintptr_t)a->oob, args);
}

static coil_error *
cap_end(void *user, void **exec)
{
  coil_artifact *a = user;
  hipGraph_t graph = NULL;
  hipError_t e = a->rt->StreamEndCapture(a->stream, &graph);
  a->stream = a->run_stream;
  coil_error *err = e ? cap_fail(a, e, "hipStreamEndCapture") : NULL;
  hipGraphExec_t x = NULL;
  char log[256];
  if (!err && exec && (e = a->rt->GraphInstantiate(&x, graph, NULL, log, sizeof log)))
    err = cap_fail(a, e, "hipGraphInstantiate");
  if (graph)
    a->rt->GraphDestroy(graph); /* an instantiated graph stands alone */
  if (exec)
    *exec = err ? NULL : x;
  return err;
}

static int
cap_launch(void *user, void *exec)
{
  coil_artifact *a = user;
  return a->rt->GraphLaunch(exec, a->stream);
}

static void
cap_destroy(void *user, void *exec)
{
  ((coil_artifact *)user)->rt->GraphExecDestroy(exec);
}

static const char *
cap_error_string(void *user, int code)
{
  return ((coil_artifact *)user)->rt->GetErrorString(code);
}

static const coil_gpu_capture capture_amd = {
    .name = "hip", .device_type = COIL_DEVICE_ROCM, .static_alloc = cap_static_alloc, .static_free = cap_static_free,
    .copy = cap_copy, .begin = cap_begin, .run = cap_run, .end = cap_end, .launch = cap_launch,
    .destroy = cap_destroy, .error_string = cap_error_string,
};
static const coil_gpu_capture capture_nvidia = {
    .name = "hip", .device_type = COIL_DEVICE_CUDA, .static_alloc = cap_static_alloc, .static_free = cap_static_free,
    .copy = cap_copy, .begin = cap_begin, .run = cap_run, .end = cap_end, .launch = cap_launch,
    .destroy = cap_destroy, .error_string = cap_error_string,
};

static const coil_gpu_capture *
capture_of(const coil_artifact *a)
{
  return a->rt->platform == HIP_NVIDIA ? &capture_nvidia : &capture_amd;
}

/* Runs through the graph; a program the runtime cannot capture is refused once, with the reason
 * logged, and runs uncaptured from then on (*plain). */
static coil_error *
run_graph(coil_artifact *a, const coil_plugin_run_args *args, bool *plain)
{
  bool refuse = false;
  coil_error *e = coil_gpu_graph_run(capture_of(a), a, a->program, &a->graph, args, &refuse);
  if (!e || !refuse)
    return e;
  snprintf(a->graph_refused, sizeof a->graph_refused, "%s", coil_sdk_error_message(e));
  coil_sdk_error_free(e);
  if (a->host && COIL_STRUCT_HAS(a->host, coil_host_api, log) && a->host->log) {
    char line[700];
    snprintf(line, sizeof line, "graph capture refused for %s, running uncaptured: %s", a->program->name, a->graph_refused);
    a->host->log(a->host, COIL_LOG_WARN, line);
  }
  *plain = true;
  return NULL;
}

void
hip_artifact_free(coil_artifact *a)
{
  if (!a)
    return;
  if (a->rt) {
    if (a->caller_streams)
      a->rt->DeviceSynchronize(); /* runs queued on a caller's stream may be in flight */
    else if (a->own_stream)
      a->rt->StreamSynchronize(a->own_stream);
    if (a->graph)
      coil_gpu_graph_free(capture_of(a), a, &a->graph);
    if (a->oob)
      a->rt->Free(a->oob);
    for (int k = 0; k < a->nkernels; k++)
      if (a->modules[k])
        a->rt->ModuleUnload(a->modules[k]);
    for (int t = 0; t < COIL_DTYPE_COUNT; t++)
      if (a->gemm_modules[t])
        a->rt->ModuleUnload(a->gemm_modules[t]);
    if (a->blas_handle)
      a->blas->Destroy(a->blas_handle);
    if (a->blas_workspace)
      a->rt->Free(a->blas_workspace);
    if (a->own_stream)
      a->rt->StreamDestroy(a->own_stream);
  }
  free(a->modules);
  free(a->functions);
  free(a->unaligned);
  free(a->plans);
  free(a->epi);
  coil_wir_free(a->program);
  pthread_mutex_destroy(&a->lock);
  free(a);
}

static coil_error *
load_fail(coil_artifact *a, const char *call, hipError_t e)
{
  coil_error *err = coil_sdk_error(COIL_ERR_RUNTIME, "hip: %s failed: %s (%d)", call, a->rt->GetErrorString(e), e);
  hip_artifact_free(a);
  return err;
}

/* The module of the code object at path and its function name. */
static coil_error *
load_module(coil_artifact *a, const char *path, const char *name, hipModule_t *m, hipFunction_t *f)
{
  size_t len = 0;
  char *code = coil_sdk_read_file(path, 512u << 20, &len);
  if (!code)
    return coil_sdk_error(COIL_ERR_IO, "hip: cannot read %s", path);
  hipError_t e = a->rt->ModuleLoadData(m, code);
  free(code);
  if (e)
    return coil_sdk_error(COIL_ERR_RUNTIME, "hip: hipModuleLoadData(%s) failed: %s (%d)", path, a->rt->GetErrorString(e), e);
  if (a->rt->ModuleGetFunction(f, *m, name))
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "hip: %s has no kernel %s", path, name);
  return NULL;
}

/* Kernel k's module and functions, from its code object for a->arch. */
static coil_error *
load_kernel(coil_artifact *a, const char *dir, int k)
{
  char path[4200], name[600];
  snprintf(path, sizeof path, "%s/" HIP_CODE_OBJECT, dir, k, a->arch);
  const char *kn = a->program->kernels[k].name;
  coil_error *e = load_module(a, path, kn, &a->modules[k], &a->functions[k]);
  if (!e && a->plans[k].vec > 1) {
    snprintf(name, sizeof name, "%s" COIL_GPU_UNALIGNED_SUFFIX, kn);
    if (a->rt->ModuleGetFunction(&a->unaligned[k], a->modules[k], name))
      return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "hip: %s has no kernel %s", path, name);
  }
  return e;
}

coil_error *
hip_load(hip_platform pf, const char *arch, const hip_load_options *o, const char *dir, coil_artifact **out)
{
  const char *why = NULL;
  const hip_runtime *rt = hip_runtime_get(pf, &why);
  if (!rt)
    return coil_sdk_error(COIL_ERR_RUNTIME, "hip: %s", why);
  char path[4096];
  size_t len = 0;
  coil_wir_program *p;
  coil_error *pe = coil_sdk_read_program("hip", dir, &p);
  if (pe)
    return pe;
  coil_artifact *a = calloc(1, sizeof *a);
  if (!a) {
    coil_wir_free(p);
    return coil_sdk_out_of_memory();
  }
  pthread_mutex_init(&a->lock, NULL);
  a->program = p;
  a->nkernels = p->nkernels;
  snprintf(a->arch, sizeof a->arch, "%s", arch);
  a->async = o->async;
  a->graphs = o->graphs;
  a->host = o->host;
  int wave = pf == HIP_NVIDIA ? 32 : hip_arch_wave(arch);
  a->grt = (coil_gpu_runtime){
      .name = "hip", .device_type = pf == HIP_NVIDIA ? COIL_DEVICE_CUDA : COIL_DEVICE_ROCM,
      .dialect = hip_dialect(wave), .alloc = rt_alloc, .release = rt_release, .copy = rt_copy, .zero = rt_zero,
      .sync = rt_sync, .launch = rt_launch, .error_string = rt_error_string, .extern_call = rt_extern_call,
  };
  a->modules = calloc((size_t)p->nkernels + 1, sizeof *a->modules);
  a->functions = calloc((size_t)p->nkernels + 1, sizeof *a->functions);
  a->unaligned = calloc((size_t)p->nkernels + 1, sizeof *a->unaligned);
  a->plans = calloc((size_t)p->nkernels + 1, sizeof *a->plans);
  a->epi = calloc((size_t)p->nlines + 1, sizeof *a->epi);
  if (!a->modules || !a->functions || !a->unaligned || !a->plans || !a->epi) {
    hip_artifact_free(a);
    return coil_sdk_out_of_memory();
  }
  a->rt = rt;
  hipError_t e;
  if ((e = rt->SetDevice(0)))
    return load_fail(a, "hipSetDevice", e);
  /* a blocking stream: ordered after work on the legacy default stream, where callers such as
   * PyTorch produce device inputs */
  if ((e = rt->StreamCreateWithFlags(&a->own_stream, 0)))
    return load_fail(a, "hipStreamCreateWithFlags", e);
  a->stream = a->own_stream;
  /* the default pool keeps what runs free (its threshold would hand it back at every
   * synchronize, and mapping it again costs milliseconds) */
  hipMemPool_t pool;
  unsigned long long keep = ~0ull;
  if ((e = rt->DeviceGetDefaultMemPool(&pool, 0)) || (e = rt->MemPoolSetAttribute(pool, hipMemPoolAttrReleaseThreshold, &keep)))
    return load_fail(a, "setting up the memory pool (hipDeviceGetDefaultMemPool)", e);
  bool indirect = false;
  for (int k = 0; k < p->nkernels; k++)
    indirect = indirect || coil_kernel_has_indirect(&p->kernels[k]);
  if (indirect && ((e = rt->Malloc(&a->oob, 2 * sizeof(long long))) ||
                   (e = rt->MemsetD8Async(a->oob, 0, 2 * sizeof(long long), a->stream)) ||
                   (e = rt->StreamSynchronize(a->stream))))
    return load_fail(a, "allocating the index check", e);
  snprintf(path, sizeof path, "%s/plans-wave%d.txt", dir, wave);
  char *plans = p->nkernels ? coil_sdk_read_file(path, 16u << 20, &len) : NULL;
  if (!plans && p->nkernels) {
    hip_artifact_free(a);
    return coil_sdk_error(COIL_ERR_IO, "hip: cannot read %s (was the artifact compiled for %s?)", path, arch);
  }
  for (int k = 0; k < p->nkernels; k++) {
    coil_error *err = NULL;
    if (!coil_gpu_plan_read(plans, k, &a->plans[k]) || !coil_gpu_plan_valid(a->grt.dialect, p, &p->kernels[k], &a->plans[k]))
      err = coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "hip: %s: no valid launch plan for kernel k%d (%s)", path, k,
                           p->kernels[k].name);
    if (!err)
      err = load_kernel(a, dir, k);
    if (err) {
      free(plans);
      hip_artifact_free(a);
      return err;
    }
  }
  free(plans);
  for (int l = 0; l < p->nlines; l++) {
    coil_dtype t;
    if (!hip_gemm_line(p, &p->lines[l], &t) || a->gemms[t])
      continue;
    char name[64];
    snprintf(path, sizeof path, "%s/" HIP_GEMM_OBJECT, dir, coil_dtype_name(t), arch);
    snprintf(name, sizeof name, HIP_GEMM_KERNEL, coil_dtype_name(t));
    coil_gpu_gemm_plan_for(a->grt.dialect, t, &a->gemm_plans[t]);
    coil_gpu_gemm_plan_small(a->grt.dialect, t, &a->small_plans[t]);
    coil_error *err = load_module(a, path, name, &a->gemm_modules[t], &a->gemms[t]);
    snprintf(name, sizeof name, HIP_GEMM_KERNEL HIP_GEMM_SMALL, coil_dtype_name(t));
    if (!err && rt->ModuleGetFunction(&a->small_gemms[t], a->gemm_modules[t], name))
      err = coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "hip: %s has no kernel %s", path, name);
    if (!err && o->gemm != HIP_GEMM_GENERATED && !a->blas) { /* the BLAS, once, for every GEMM line */
      const char *bwhy = NULL;
      const hip_blas *bl = hip_blas_get(pf, &bwhy);
      if (bl && (bl->Create(&a->blas_handle) || bl->SetStream(a->blas_handle, a->own_stream) ||
                 rt->Malloc(&a->blas_workspace, HIP_BLAS_WORKSPACE) ||
                 bl->SetWorkspace(a->blas_handle, a->blas_workspace, HIP_BLAS_WORKSPACE)))
        bwhy = "setup (create, stream, workspace) failed";
      else if (bl && pf == HIP_AMD) /* cuBLAS's values are the conformance runs' on the NVIDIA platform */
        bwhy = blas_check(a, bl, pf);
      if (bl && bwhy) { /* the generated GEMM instead */
        if (a->blas_handle)
          bl->Destroy(a->blas_handle);
        if (a->blas_workspace)
          rt->Free(a->blas_workspace);
        a->blas_handle = NULL, a->blas_workspace = NULL, bl = NULL;
        if (o->gemm == HIP_GEMM_AUTO && a->host && COIL_STRUCT_HAS(a->host, coil_host_api, log) && a->host->log) {
          char line[300];
          snprintf(line, sizeof line, "hip: the generated GEMM runs mm and bmm: the BLAS's %s", bwhy);
          a->host->log(a->host, COIL_LOG_WARN, line);
        }
      }
      a->blas = bl;
      a->blas_stream = a->own_stream;
      if (!bl && o->gemm == HIP_GEMM_LIBRARY)
        err = coil_sdk_error(COIL_ERR_RUNTIME, "hip: gemm = library, but the BLAS: %s", bwhy);
    }
    if (err) {
      hip_artifact_free(a);
      return err;
    }
  }
  coil_gpu_find_epilogues(p, a->epi);
  a->gemm = o->gemm;
  *out = a;
  return NULL;
}

coil_error *
hip_run(coil_artifact *a, const coil_plugin_run_args *args)
{
  hipError_t e = a->rt->SetDevice(0);
  if (e)
    return coil_sdk_error(COIL_ERR_RUNTIME, "hip: hipSetDevice failed: %s (%d)", a->rt->GetErrorString(e), e);
  pthread_mutex_lock(&a->lock);
  bool caller = COIL_STRUCT_HAS(args, coil_plugin_run_args, stream) && args->has_stream;
  a->stream = caller ? (hipStream_t)args->stream : a->own_stream;
  a->caller_streams = a->caller_streams || caller;
  bool plain = !a->graphs || a->graph_refused[0];
  coil_error *err = plain ? NULL : run_graph(a, args, &plain);
  if (plain && !err)
    err = coil_gpu_run_program(&a->grt, a, a->program, a->plans, (coil_gpu_ptr)(uintptr_t)a->oob, args);
  bool all_device = true;
  for (size_t i = 0; i < args->ninputs + args->noutputs; i++) {
    const coil_plugin_tensor *t = i < args->ninputs ? args->inputs[i] : args->outputs[i - args->ninputs];
    all_device = all_device && t && t->device_type == a->grt.device_type;
  }
  a->caller_streams = a->caller_streams || (all_device && a->async);
  if (err || !all_device || (!caller && !a->async)) {
    e = a->rt->StreamSynchronize(a->stream);
    if (!err && e)
      err = coil_sdk_error(COIL_ERR_RUNTIME, "hip: %s: hipStreamSynchronize failed (a kernel failed): %s (%d)",
                           a->program->name, a->rt->GetErrorString(e), e);
    long long oob[2] = {0, 0};
    if (!err && a->oob && !(e = a->rt->MemcpyDtoHAsync(oob, a->oob, sizeof oob, a->stream)))
      e = a->rt->StreamSynchronize(a->stream);
    if (!err && e)
      err = coil_sdk_error(COIL_ERR_RUNTIME, "hip: %s: reading the index check failed: %s", a->program->name,
                           a->rt->GetErrorString(e));
    if (!err && oob[0]) {
      err = coil_sdk_error(COIL_ERR_RUNTIME, "hip: index %lld is out of range in program %s (an indirect load: "
                           "embedding, gather or index%s)", oob[1], a->program->name,
                           a->caller_streams ? "; in this run or an earlier one that returned unsynchronized" : "");
      if (!a->rt->MemsetD8Async(a->oob, 0, sizeof oob, a->stream))
        a->rt->StreamSynchronize(a->stream);
    }
  }
  a->stream = a->own_stream;
  pthread_mutex_unlock(&a->lock);
  return err;
}
