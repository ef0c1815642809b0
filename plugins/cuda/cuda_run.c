/* cuda_run.c — the cuda plugin's wrapper: runs a program's lines on the device, in C, in order:
 * binds size symbols from the inputs, checks the guards, allocates from the driver's
 * stream-ordered pool (cuMemAllocAsync), launches kernels, frees after last use, copies the
 * outputs out. Inputs may be on the host (copied in first) or already on the device. Everything
 * is queued on the artifact's stream; the run synchronizes once at the end. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"

typedef struct {
  coil_dtype dtype;
  int rank;
  int64_t sizes[COIL_MAX_RANK], strides[COIL_MAX_RANK];
  CUdeviceptr ptr;   /* element 0 */
  CUdeviceptr start; /* the storage this buffer lives in (alloc, reuse, an input's copy) */
  bool owned;        /* start was allocated by this run and is freed by it */
  bool live;
} dbuf;

typedef struct {
  coil_artifact *a;
  const coil_wir_program *p;
  const cuda_driver *cu;
  int64_t *vals;
  bool *bound;
  int nvars;
  dbuf *bufs;
  int line;
  int skip_line;  /* a kernel line whose work an epilogue already did, or -1 */
  char msg[1024];
} rctx;

static coil_error *
fail(rctx *c, coil_error_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static coil_error *
fail(rctx *c, coil_error_code code, const char *fmt, ...)
{
  char what[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return coil_sdk_error(code, "cuda: %s, line %d: %s", c->p->name, c->line + 1, what);
}

static coil_error *
cufail(rctx *c, CUresult r, const char *call)
{
  const char *s = NULL;
  c->cu->GetErrorString(r, &s);
  return fail(c, COIL_ERR_RUNTIME, "%s failed: %s (%d)", call, s ? s : "unknown error", r);
}

static const char *
bufname(const rctx *c, int b)
{
  return b >= 0 && b < c->p->nbuffers ? c->p->buffers[b].name : "?";
}

static coil_error *
eval(rctx *c, const coil_sym *e, int64_t *out)
{
  coil_diag d = {0};
  if (coil_sym_eval(c->p->sym, e, c->vals, c->nvars, out, &d))
    return fail(c, COIL_ERR_INVALID_ARGUMENT, "%s", d.msg);
  return NULL;
}

/* Offsets of the lowest and highest element (hi < lo: no elements). */
static void
extent(const dbuf *b, int64_t *lo, int64_t *hi)
{
  *lo = 0, *hi = 0;
  for (int d = 0; d < b->rank; d++) {
    if (b->sizes[d] == 0) {
      *lo = 0, *hi = -1;
      return;
    }
    int64_t span = (b->sizes[d] - 1) * b->strides[d];
    if (span < 0)
      *lo += span;
    else
      *hi += span;
  }
}

static size_t
bytes_of(const dbuf *b)
{
  int64_t lo, hi;
  extent(b, &lo, &hi);
  return hi < lo ? 0 : (size_t)(hi + 1) * coil_dtype_size(b->dtype);
}

static bool
contiguous(const dbuf *b)
{
  int64_t s = 1;
  for (int d = b->rank - 1; d >= 0; d--) {
    if (b->sizes[d] != 1 && b->strides[d] != s)
      return false;
    s *= b->sizes[d];
  }
  return true;
}

static int64_t
numel(const dbuf *b)
{
  int64_t n = 1;
  for (int d = 0; d < b->rank; d++)
    n *= b->sizes[d];
  return n;
}

/* The buffer's sizes and strides from the program, symbols bound. */
static coil_error *
layout(rctx *c, int bi)
{
  const coil_buffer *cb = &c->p->buffers[bi];
  dbuf *b = &c->bufs[bi];
  coil_error *e;
  b->dtype = cb->dtype;
  b->rank = cb->rank;
  for (int d = 0; d < cb->rank; d++)
    if ((e = eval(c, cb->sizes[d], &b->sizes[d])) || (e = eval(c, cb->strides[d], &b->strides[d])))
      return e;
  return NULL;
}

static coil_error *
device_alloc(rctx *c, size_t bytes, CUdeviceptr *out)
{
  *out = 0;
  if (!bytes)
    return NULL;
  CUresult r = c->a->capturing || !c->a->pool ? c->cu->MemAllocAsync(out, bytes, c->a->stream)
                                               : c->cu->MemAllocFromPoolAsync(out, bytes, c->a->pool, c->a->stream);
  return r ? cufail(c, r, "cuMemAllocAsync") : NULL;
}

static bool
reused_later(const rctx *c, int buffer)
{
  for (int i = c->line + 1; i < c->p->nlines; i++)
    if (c->p->lines[i].kind == COIL_LINE_REUSE && c->p->buffers[c->p->lines[i].buffer].base == buffer)
      return true;
  return false;
}

static coil_error *
run_symbol(rctx *c, const coil_line *l)
{
  const dbuf *b = &c->bufs[l->buffer];
  if (l->dim < 0 || l->dim >= b->rank)
    return fail(c, COIL_ERR_INVALID_ARGUMENT, "dimension %d of %s", l->dim, bufname(c, l->buffer));
  int64_t v = l->is_stride ? b->strides[l->dim] : b->sizes[l->dim];
  if (l->sym->kind == COIL_SYM_VAR && l->sym->var < c->nvars && !c->bound[l->sym->var]) {
    c->vals[l->sym->var] = v;
    c->bound[l->sym->var] = true;
    return NULL;
  }
  int64_t have;
  coil_error *e = eval(c, l->sym, &have);
  if (!e && have != v)
    e = fail(c, COIL_ERR_INVALID_ARGUMENT, "a size symbol is %" PRId64 ", but %s.%s(%d) is %" PRId64, have,
             bufname(c, l->buffer), l->is_stride ? "stride" : "size", l->dim, v);
  return e;
}

static coil_error *
run_assert(rctx *c, const coil_line *l)
{
  const dbuf *b = &c->bufs[l->buffer];
  if (l->assert_kind == COIL_ASSERT_ALIGNED)
    return b->ptr % (CUdeviceptr)(l->align > 0 ? l->align : 1)
               ? fail(c, COIL_ERR_INVALID_ARGUMENT, "%s is not aligned to %" PRId64 " bytes", bufname(c, l->buffer), l->align)
               : NULL;
  if (l->dim < 0 || l->dim >= b->rank)
    return fail(c, COIL_ERR_INVALID_ARGUMENT, "dimension %d of %s", l->dim, bufname(c, l->buffer));
  bool stride = l->assert_kind == COIL_ASSERT_STRIDE;
  int64_t want, have = stride ? b->strides[l->dim] : b->sizes[l->dim];
  coil_error *e = eval(c, l->value, &want);
  if (!e && want != have)
    e = fail(c, COIL_ERR_INVALID_ARGUMENT, "assert failed: %s.%s(%d) == %" PRId64 ", but it is %" PRId64,
             bufname(c, l->buffer), stride ? "stride" : "size", l->dim, want, have);
  return e;
}

static coil_error *
run_kernel(rctx *c, const coil_line *l)
{
  const coil_kernel *k = &c->p->kernels[l->kernel];
  int64_t xnumel = 1, rnumel = 1;
  coil_error *e;
  for (int i = 0; i < k->nx; i++) {
    int64_t v;
    if ((e = eval(c, k->xsize[i], &v)))
      return e;
    xnumel *= v;
  }
  for (int i = 0; i < k->nr; i++) {
    int64_t v;
    if ((e = eval(c, k->rsize[i], &v)))
      return e;
    rnumel *= v;
  }
  if (xnumel <= 0)
    return NULL;
  if (l->nargs != k->nparams)
    return fail(c, COIL_ERR_INTERNAL, "kernel %s takes %d params, the call passes %d", k->name, k->nparams, l->nargs);
  if (k->nparams > 256 || k->nsyms > 256) /* the core's fusion keeps kernels far below this */
    return fail(c, COIL_ERR_UNSUPPORTED, "kernel %s has %d params and %d sizes (at most 256 each)", k->name,
                k->nparams, k->nsyms);
  CUdeviceptr ptrs[256];
  int64_t syms[256];
  void *params[513];
  for (int i = 0; i < k->nparams; i++) {
    if (!c->bufs[l->args[i]].live)
      return fail(c, COIL_ERR_INTERNAL, "%s is not live", bufname(c, l->args[i]));
    ptrs[i] = c->bufs[l->args[i]].ptr;
    params[i] = &ptrs[i];
  }
  for (int i = 0; i < k->nsyms; i++) {
    if ((e = eval(c, k->syms[i], &syms[i])))
      return e;
    params[k->nparams + i] = &syms[i];
  }
  CUdeviceptr oob = c->a->oob;
  if (coil_kernel_has_indirect(k)) {
    if (!oob)
      return fail(c, COIL_ERR_INTERNAL, "kernel %s has indirect loads but no index check", k->name);
    params[k->nparams + k->nsyms] = &oob;
  }
  const coil_gpu_plan *pl = &c->a->plans[l->kernel];
  CUfunction f = c->a->functions[l->kernel];
  bool vec = pl->vec > 1;
  for (int i = 0; i < k->nparams && vec; i++)
    vec = ptrs[i] % 16 == 0;
  if (pl->vec > 1 && !vec)
    f = c->a->unaligned[l->kernel]; /* the scalar variant */
  unsigned threads = coil_gpu_block_threads(&cuda_dialect, pl, rnumel), blocks = coil_gpu_grid_blocks(pl, vec, xnumel, threads);
  CUresult r = c->cu->LaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, c->a->stream, params, NULL);
  return r ? cufail(c, r, "cuLaunchKernel") : NULL;
}

/* ---- library ops: mm and bmm through cuBLAS ---- */

/* How cuBLAS (column-major) reads the row-major matrix X[R, C] (dims o, o+1) transposed: op N
 * on rows of stride ld, or op T on a column-major (transposed) view. -1: neither layout. */
static int
blas_operand(const dbuf *x, int o, int *op, int64_t *ld)
{
  int64_t R = x->sizes[o], C = x->sizes[o + 1], sr = x->strides[o], sc = x->strides[o + 1];
  if ((sc == 1 || C <= 1) && (R <= 1 || sr >= C)) {
    *op = CUBLAS_OP_N;
    *ld = R <= 1 ? (C > 1 ? C : 1) : sr;
  } else if ((sr == 1 || R <= 1) && (C <= 1 || sc >= R)) {
    *op = CUBLAS_OP_T;
    *ld = C <= 1 ? (R > 1 ? R : 1) : sc;
  } else {
    return -1;
  }
  return *ld > 2147483647 ? -1 : 0;
}

/* ---- cuBLASLt ---- */

static uint32_t
alignment(CUdeviceptr p)
{
  uint32_t a = 256;
  while (a > 1 && p % a)
    a /= 2;
  return a;
}

static void
lt_plan_drop(const coil_artifact *a, cuda_lt_plan *pl)
{
  if (pl->desc)
    a->lt->DescDestroy(pl->desc);
  if (pl->la)
    a->lt->LayoutDestroy(pl->la);
  if (pl->lb)
    a->lt->LayoutDestroy(pl->lb);
  if (pl->lc)
    a->lt->LayoutDestroy(pl->lc);
  memset(pl, 0, sizeof *pl);
}

void
cuda_lt_plans_free(coil_artifact *a)
{
  for (int i = 0; a->lt && a->lt_plans && i < a->program->nlines; i++)
    lt_plan_drop(a, &a->lt_plans[i]);
}

static cublasLtMatrixLayout_t
lt_layout(const cuda_cublaslt *lt, int t, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride, bool *ok)
{
  cublasLtMatrixLayout_t l = NULL;
  int32_t nb = (int32_t)batch;
  if (lt->LayoutCreate(&l, t, (uint64_t)rows, (uint64_t)cols, ld) ||
      (batch > 1 && (lt->LayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &nb, sizeof nb) ||
                     lt->LayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride))))
    *ok = false;
  return l;
}

/* The GEMM of run_matmul through cuBLASLt with epilogue epi (CUBLASLT_EPILOGUE_*) and bias (0:
 * none), writing D. Returns 1 when cuBLASLt has no algorithm for it (the caller falls back). */
static int
lt_matmul(rctx *c, int opa, int opb, int64_t M, int64_t N, int64_t K, int64_t batch, int64_t lda, int64_t ldb,
          int64_t sa, int64_t sb, int t, int compute, CUdeviceptr A, CUdeviceptr B, CUdeviceptr D, uint32_t epi,
          CUdeviceptr bias, const void *alpha, const void *beta, coil_error **err)
{
  coil_artifact *a = c->a;
  const cuda_cublaslt *lt = a->lt;
  cuda_lt_plan *pl = &a->lt_plans[c->line];
  int64_t key[18] = {M, N, K, batch, lda, ldb, sa, sb, opa, opb, t, compute, alignment(A), alignment(B), alignment(D),
                     epi, bias ? alignment(bias) : 0, 1};
  if (!pl->valid || memcmp(pl->key, key, sizeof key) != 0) {
    lt_plan_drop(a, pl);
    bool ok = true;
    int32_t ta = opb, tb = opa; /* cuBLASLt's A is our B (column-major view of row-major data) */
    int scale = compute == CUBLAS_COMPUTE_64F ? CUDA_R_64F : CUDA_R_32F;
    ok = !lt->DescCreate(&pl->desc, compute, scale) &&
         !lt->DescSetAttribute(pl->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) &&
         !lt->DescSetAttribute(pl->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb) &&
         !lt->DescSetAttribute(pl->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
    if (ok && bias)
      ok = !lt->DescSetAttribute(pl->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    if (ok) {
      pl->la = opb == CUBLAS_OP_N ? lt_layout(lt, t, N, K, ldb, batch, sb, &ok) : lt_layout(lt, t, K, N, ldb, batch, sb, &ok);
      pl->lb = opa == CUBLAS_OP_N ? lt_layout(lt, t, K, M, lda, batch, sa, &ok) : lt_layout(lt, t, M, K, lda, batch, sa, &ok);
      pl->lc = lt_layout(lt, t, N, M, N, batch, M * N, &ok);
    }
    cublasLtMatmulPreference_t pref = NULL;
    uint64_t ws = CUDA_BLAS_WORKSPACE;
    uint32_t al[4] = {alignment(B), alignment(A), alignment(D), alignment(D)};
    int found = 0;
    cublasLtMatmulHeuristicResult_t h;
    memset(&h, 0, sizeof h);
    if (ok)
      ok = !lt->PrefCreate(&pref) && !lt->PrefSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws) &&
           !lt->PrefSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al[0], 4) &&
           !lt->PrefSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al[1], 4) &&
           !lt->PrefSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al[2], 4) &&
           !lt->PrefSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al[3], 4) &&
           !lt->AlgoGetHeuristic(a->lt_handle, pl->desc, pl->la, pl->lb, pl->lc, pl->lc, pref, 1, &h, &found) &&
           found > 0 && h.state == 0;
    if (pref)
      lt->PrefDestroy(pref);
    if (!ok) {
      lt_plan_drop(a, pl);
      return 1;
    }
    pl->algo = h.algo;
    memcpy(pl->key, key, sizeof key);
    pl->valid = true;
  } else if (bias && lt->DescSetAttribute(pl->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias)) {
    *err = fail(c, COIL_ERR_RUNTIME, "cublasLtMatmulDescSetAttribute (bias) failed");
    return 0;
  }
  cublasStatus_t st = lt->Matmul(a->lt_handle, pl->desc, alpha, (const void *)(uintptr_t)B, pl->la,
                                 (const void *)(uintptr_t)A, pl->lb, beta, (const void *)(uintptr_t)D, pl->lc,
                                 (void *)(uintptr_t)D, pl->lc, &pl->algo, (void *)(uintptr_t)a->blas_workspace, CUDA_BLAS_WORKSPACE,
                                 a->stream);
  if (st)
    *err = fail(c, COIL_ERR_RUNTIME, "cublasLtMatmul failed with status %d", st);
  return 0;
}

/* ---- epilogues: mm, then a kernel computing out = [relu](mm + [bias over the columns]) ---- */

/* Whether index e is the row-major element (x0, x1) of an m x n matrix (n, m constant). */
static bool
rowmajor_index(const coil_wir_program *p, const coil_sym *e, const coil_kernel *k, int64_t m, int64_t n)
{
  int nv = coil_sym_nvars(p->sym);
  int64_t *vals = calloc((size_t)nv + 1, sizeof *vals);
  int x0 = k->xvars[0]->var, x1 = k->xvars[1]->var;
  static const int64_t pts[4][2] = {{0, 0}, {0, 1}, {1, 0}, {-1, -1}};
  bool ok = vals != NULL && e->kind == COIL_SYM_ADD;
  for (int i = 0; ok && i < e->nargs; i++) /* linear: a sum of x1 and a constant times x0 */
    ok = e->args[i]->kind == COIL_SYM_VAR || e->args[i]->kind == COIL_SYM_MUL;
  for (int i = 0; ok && i < 4; i++) {
    int64_t a = pts[i][0] < 0 ? m - 1 : pts[i][0], b = pts[i][1] < 0 ? n - 1 : pts[i][1], v;
    vals[x0] = a, vals[x1] = b;
    coil_diag d = {0};
    ok = coil_sym_eval(p->sym, e, vals, nv, &v, &d) == 0 && v == a * n + b;
  }
  free(vals);
  return ok;
}

/* Whether line j (not the kernel line kl) reads buffer b or storage shared with it. */
static bool
line_reads(const coil_wir_program *p, const coil_line *l, int b)
{
  for (int i = 0; i < l->nargs; i++)
    if (l->args[i] == b)
      return true;
  if ((l->kind == COIL_LINE_VIEW || l->kind == COIL_LINE_REUSE) && p->buffers[l->buffer].base == b)
    return true;
  return (l->kind == COIL_LINE_COPY_BACK || l->kind == COIL_LINE_MULTI_OUTPUT) && l->source == b;
}

static void
match_epilogue(const coil_wir_program *p, int li, cuda_epilogue *e)
{
  const coil_line *l = &p->lines[li];
  e->kernel_line = -1;
  if (l->kind != COIL_LINE_EXTERN_CALL || !l->op || strcmp(l->op, "aten.mm.default") != 0 || l->nouts != 1)
    return;
  int B = l->outs[0];
  const coil_buffer *bb = &p->buffers[B];
  int64_t m, n;
  if (bb->rank != 2 || !coil_sym_is_const(bb->sizes[0], &m) || !coil_sym_is_const(bb->sizes[1], &n) ||
      (bb->dtype != COIL_F32 && bb->dtype != COIL_F16 && bb->dtype != COIL_BF16))
    return;
  int kl = li + 1;
  while (kl < p->nlines && (p->lines[kl].kind == COIL_LINE_COMMENT || p->lines[kl].kind == COIL_LINE_ALLOC ||
                            (p->lines[kl].kind == COIL_LINE_FREE && p->lines[kl].buffer != B)))
    kl++;
  if (kl >= p->nlines || p->lines[kl].kind != COIL_LINE_KERNEL_CALL)
    return;
  const coil_line *kc = &p->lines[kl];
  const coil_kernel *k = &p->kernels[kc->kernel];
  int64_t xm, xn;
  if (k->nr || k->nx != 2 || !coil_sym_is_const(k->xsize[0], &xm) || !coil_sym_is_const(k->xsize[1], &xn) || xm != m ||
      xn != n || kc->nargs != k->nparams)
    return;
  enum { NONE, MM, BIAS, SUM, RELU_MM, RELU_SUM };
  int *tag = calloc((size_t)k->ninsts + 1, sizeof *tag);
  int bias_arg = -1, out_arg = -1, stored = NONE, nstores = 0;
  bool ok = tag != NULL;
  for (int i = 0; ok && i < k->ninsts; i++) {
    const coil_kinst *in = &k->insts[i];
    switch (in->op) {
    case COIL_KOP_LOAD:
      if (kc->args[in->param] == B && !k->params[in->param].is_output && rowmajor_index(p, in->index, k, m, n))
        tag[i] = MM;
      else if (bias_arg < 0 && in->index->kind == COIL_SYM_VAR && in->index->var == k->xvars[1]->var &&
               p->buffers[kc->args[in->param]].dtype == bb->dtype)
        tag[i] = BIAS, bias_arg = in->param;
      else
        ok = false;
      break;
    case COIL_KOP_CAST: /* between the floats: values pass through (the epilogue rounds once) */
      ok = coil_dtype_is_float(in->dtype) && in->dtype != COIL_F64 && coil_dtype_is_float(k->insts[in->args[0]].dtype);
      tag[i] = tag[in->args[0]];
      break;
    case COIL_KOP_ADD: {
      int x = tag[in->args[0]], y = tag[in->args[1]];
      ok = (x == MM && y == BIAS) || (x == BIAS && y == MM);
      tag[i] = SUM;
      break;
    }
    case COIL_KOP_RELU:
      ok = tag[in->args[0]] == MM || tag[in->args[0]] == SUM;
      tag[i] = tag[in->args[0]] == MM ? RELU_MM : RELU_SUM;
      break;
    case COIL_KOP_STORE:
      nstores++;
      ok = k->params[in->param].is_output && rowmajor_index(p, in->index, k, m, n) &&
           p->buffers[kc->args[in->param]].dtype == bb->dtype && tag[in->args[0]] != BIAS && tag[in->args[0]] != NONE;
      stored = tag[in->args[0]], out_arg = in->param;
      break;
    default:
      ok = false;
    }
  }
  free(tag);
  if (!ok || nstores != 1 || (stored == MM && bias_arg >= 0))
    return;
  int out = kc->args[out_arg];
  const coil_buffer *ob = &p->buffers[out];
  if (ob->rank != 2 || coil_sym_cmp(ob->sizes[0], bb->sizes[0]) || coil_sym_cmp(ob->sizes[1], bb->sizes[1]))
    return;
  if (out != B) /* the raw product is never written: nothing else may read it */
    for (int j = li + 1; j < p->nlines; j++)
      if (j != kl && line_reads(p, &p->lines[j], B))
        return;
  *e = (cuda_epilogue){kl, bias_arg, out_arg, stored == RELU_MM || stored == RELU_SUM};
}

void
cuda_find_epilogues(const coil_wir_program *p, cuda_epilogue *epi)
{
  for (int i = 0; i < p->nlines; i++)
    match_epilogue(p, i, &epi[i]);
}

/* C[M, N] = A[M, K] B[K, N] (per batch) in row-major terms is C^T = B^T A^T column-major: cuBLAS
 * gets B first, m = N, n = M, and writes C with ldc = N. */
static coil_error *
run_matmul(rctx *c, const coil_line *l)
{
  if (!c->a->blas)
    return fail(c, COIL_ERR_INTERNAL, "no cuBLAS handle for %s", l->op);
  bool bmm = strcmp(l->op, "aten.bmm.default") == 0;
  int o = bmm;
  const dbuf *A = &c->bufs[l->args[0]], *B = &c->bufs[l->args[1]], *C = &c->bufs[l->outs[0]];
  if (A->rank != 2 + o || B->rank != 2 + o || C->rank != 2 + o)
    return fail(c, COIL_ERR_INVALID_ARGUMENT, "%s of ranks %d and %d", l->op, A->rank, B->rank);
  int64_t M = A->sizes[o], K = A->sizes[o + 1], N = B->sizes[o + 1], batch = bmm ? A->sizes[0] : 1;
  if (!M || !N || !batch)
    return NULL;
  size_t es = coil_dtype_size(C->dtype);
  if (C->strides[o + 1] != 1 || C->strides[o] != N || (bmm && batch > 1 && C->strides[0] != M * N))
    return fail(c, COIL_ERR_INTERNAL, "the output of %s is not contiguous", l->op);
  if (!K) { /* an empty sum: zeros */
    CUresult r = c->cu->MemsetD8Async(C->ptr, 0, (size_t)(batch * M * N) * es, c->a->stream);
    return r ? cufail(c, r, "cuMemsetD8Async") : NULL;
  }
  int opa, opb;
  int64_t lda, ldb;
  if (blas_operand(A, o, &opa, &lda) || blas_operand(B, o, &opb, &ldb))
    return fail(c, COIL_ERR_UNSUPPORTED, "%s: an operand is strided in both matrix dims", l->op);
  if (M > 2147483647 || N > 2147483647 || K > 2147483647 || batch > 2147483647)
    return fail(c, COIL_ERR_UNSUPPORTED, "%s: sizes beyond cuBLAS's int", l->op);
  int t, compute = CUBLAS_COMPUTE_32F;
  switch (C->dtype) {
  case COIL_F32: t = CUDA_R_32F; break;
  case COIL_F16: t = CUDA_R_16F; break;
  case COIL_BF16: t = CUDA_R_16BF; break;
  case COIL_F64: t = CUDA_R_64F, compute = CUBLAS_COMPUTE_64F; break;
  default: return fail(c, COIL_ERR_UNSUPPORTED, "%s on %s", l->op, coil_dtype_name(C->dtype));
  }
  float af = 1, bf = 0;
  double ad = 1, bd = 0;
  const void *alpha = compute == CUBLAS_COMPUTE_64F ? (const void *)&ad : (const void *)&af;
  const void *beta = compute == CUBLAS_COMPUTE_64F ? (const void *)&bd : (const void *)&bf;
  long long sa = bmm && batch > 1 ? A->strides[0] : 0, sb = bmm && batch > 1 ? B->strides[0] : 0;
  if (c->a->lt) {
    /* the kernel after it folded in as an epilogue, when its output and bias are at hand */
    const cuda_epilogue *ep = &c->a->epi[c->line];
    CUdeviceptr D = C->ptr, bias = 0;
    uint32_t epi = CUBLASLT_EPILOGUE_DEFAULT;
    bool fused = false;
    if (ep->kernel_line >= 0) {
      const coil_line *kc = &c->p->lines[ep->kernel_line];
      const dbuf *out = &c->bufs[kc->args[ep->out_arg]], *bb = ep->bias_arg >= 0 ? &c->bufs[kc->args[ep->bias_arg]] : NULL;
      if (out->live && (!bb || bb->live)) {
        fused = true;
        D = out->ptr, bias = bb ? bb->ptr : 0;
        epi = ep->relu ? (bb ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU)
                       : (bb ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);
      }
    }
    coil_error *err = NULL;
    if (lt_matmul(c, opa, opb, M, N, K, batch, lda, ldb, sa, sb, t, compute, A->ptr, B->ptr, D, epi, bias, alpha, beta,
                  &err) == 0) {
      if (!err && fused)
        c->skip_line = ep->kernel_line; /* its work is done */
      return err;
    }
  }
  cublasStatus_t s = c->a->blas->GemmStridedBatchedEx(
      c->a->blas_handle, opb, opa, (int)N, (int)M, (int)K, alpha, (const void *)(uintptr_t)B->ptr, t, (int)ldb, sb,
      (const void *)(uintptr_t)A->ptr, t, (int)lda, sa, beta, (void *)(uintptr_t)C->ptr, t, (int)N, (long long)(M * N),
      (int)batch, compute, CUBLAS_GEMM_DEFAULT);
  return s ? fail(c, COIL_ERR_RUNTIME, "cublasGemmStridedBatchedEx failed with status %d", s) : NULL;
}

/* ---- convolution through cuDNN ---- */

static void
dnn_plan_drop(const coil_artifact *a, cuda_dnn_plan *pl)
{
  const cuda_cudnn *d = a->dnn;
  cudnnTensorDescriptor_t *t[] = {&pl->x, &pl->y, &pl->bias, &pl->xsrc, &pl->wsrc, &pl->wdense, &pl->yout};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    if (*t[i])
      d->DestroyTensorDescriptor(*t[i]);
  if (pl->w)
    d->DestroyFilterDescriptor(pl->w);
  if (pl->conv)
    d->DestroyConvolutionDescriptor(pl->conv);
  memset(pl, 0, sizeof *pl);
}

void
cuda_dnn_plans_free(coil_artifact *a)
{
  for (int i = 0; a->dnn && a->dnn_plans && i < a->program->nlines; i++)
    dnn_plan_drop(a, &a->dnn_plans[i]);
}

static const coil_xparam *
xparam(const coil_line *l, const char *name)
{
  for (int i = 0; i < l->nxparams; i++)
    if (l->xparams[i].name && strcmp(l->xparams[i].name, name) == 0)
      return l->xparams[i].kind == COIL_XP_NONE ? NULL : &l->xparams[i];
  return NULL;
}

/* n spatial values of an int-list parameter (one value stands for all), dflt when absent. */
static bool
xints(const coil_line *l, const char *name, int n, int64_t dflt, int64_t *out)
{
  const coil_xparam *x = xparam(l, name);
  for (int i = 0; i < n; i++)
    out[i] = dflt;
  if (!x || (x->kind == COIL_XP_INTS && x->n == 0))
    return true;
  if (x->kind == COIL_XP_INT) {
    for (int i = 0; i < n; i++)
      out[i] = x->i;
    return true;
  }
  if (x->kind != COIL_XP_INTS || (x->n != 1 && x->n != n))
    return false;
  for (int i = 0; i < n; i++)
    out[i] = x->ints[x->n == 1 ? 0 : i];
  return true;
}

static int
dnn_type(coil_dtype t)
{
  switch (t) {
  case COIL_F32: return CUDNN_DATA_FLOAT;
  case COIL_F16: return CUDNN_DATA_HALF;
  case COIL_BF16: return CUDNN_DATA_BFLOAT16;
  case COIL_F64: return CUDNN_DATA_DOUBLE;
  default: return -1;
  }
}

enum { OWN, NCHW, NHWC }; /* a tensor's layout for cuDNN: its own strides, or dense in either order */

/* A tensor of rank 3 to 5 as cuDNN's 4 or 5 dims (a 1-d convolution's [N, C, L] becomes
 * [N, C, 1, L]) with the strides of layout. */
static void
dnn_dims(const dbuf *b, int nd, int layout, int *dims, int *strides)
{
  int o = nd - b->rank; /* 1 for the 1-d case */
  for (int d = 0, s = 0; d < nd; d++) {
    bool inserted = o && d == 2;
    dims[d] = inserted ? 1 : (int)b->sizes[s];
    strides[d] = inserted ? 0 : (int)b->strides[s];
    if (!inserted)
      s++;
  }
  int order[5] = {0, 1, 2, 3, 4}; /* outermost first */
  if (layout == NHWC) /* channels innermost: N, spatial..., C */
    for (int d = 1; d < nd; d++)
      order[d] = d + 1 < nd ? d + 1 : 1;
  for (int i = nd - 1; i >= 0; i--) {
    int d = order[i];
    if (layout != OWN || (o && d == 2))
      strides[d] = i == nd - 1 ? 1 : strides[order[i + 1]] * (dims[order[i + 1]] > 1 ? dims[order[i + 1]] : 1);
  }
}

static bool
dnn_same(const dbuf *b, int nd, int layout)
{
  int dims[5], own[5], want[5];
  dnn_dims(b, nd, OWN, dims, own);
  dnn_dims(b, nd, layout, dims, want);
  for (int d = 0; d < nd; d++)
    if (dims[d] > 1 && own[d] != want[d])
      return false;
  return true;
}

static bool
dnn_tensor(const cuda_cudnn *dnn, cudnnTensorDescriptor_t *d, int t, const dbuf *b, int nd, int layout)
{
  int dims[5], strides[5];
  dnn_dims(b, nd, layout, dims, strides);
  return !dnn->CreateTensorDescriptor(d) && !dnn->SetTensorNdDescriptor(*d, t, nd, dims, strides);
}

/* The descriptors of a convolution line in layout NCHW or NHWC (no algorithm yet); false when
 * cuDNN refuses one. */
static bool
dnn_describe(const cuda_cudnn *dnn, cuda_dnn_plan *pl, int layout, int t, const dbuf *x, const dbuf *w, const dbuf *y,
             bool bias, int nsp, const int64_t *stride, const int64_t *pad, const int64_t *dil, int64_t groups)
{
  int nd = nsp == 1 ? 4 : x->rank, o = nd - x->rank, cp[3] = {0, 0, 0}, cs[3] = {1, 1, 1}, cd[3] = {1, 1, 1};
  for (int i = 0; i < nsp; i++)
    cp[o + i] = (int)pad[i], cs[o + i] = (int)stride[i], cd[o + i] = (int)dil[i];
  int wdims[5], wstr[5], bdims[5] = {1, 1, 1, 1, 1}, bstr[5] = {1, 1, 1, 1, 1};
  dnn_dims(w, nd, NCHW, wdims, wstr);
  bdims[1] = (int)y->sizes[1], bstr[0] = bdims[1];
  pl->nhwc = layout == NHWC;
  bool ok = dnn_tensor(dnn, &pl->x, t, x, nd, layout) && dnn_tensor(dnn, &pl->y, t, y, nd, layout) &&
            (dnn_same(x, nd, layout) || dnn_tensor(dnn, &pl->xsrc, t, x, nd, OWN)) &&
            (dnn_same(y, nd, layout) || dnn_tensor(dnn, &pl->yout, t, y, nd, OWN)) &&
            (dnn_same(w, nd, layout) ||
             (dnn_tensor(dnn, &pl->wsrc, t, w, nd, OWN) && dnn_tensor(dnn, &pl->wdense, t, w, nd, layout)));
  ok = ok && !dnn->CreateFilterDescriptor(&pl->w) &&
       !dnn->SetFilterNdDescriptor(pl->w, t, layout == NHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, nd, wdims);
  ok = ok && (!bias || (!dnn->CreateTensorDescriptor(&pl->bias) && !dnn->SetTensorNdDescriptor(pl->bias, t, nd, bdims, bstr)));
  ok = ok && !dnn->CreateConvolutionDescriptor(&pl->conv) &&
       !dnn->SetConvolutionNdDescriptor(pl->conv, nd - 2, cp, cs, cd, CUDNN_CROSS_CORRELATION,
                                        y->dtype == COIL_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT);
  ok = ok && !dnn->SetConvolutionGroupCount(pl->conv, (int)groups);
  /* as PyTorch with allow_tf32 off: FMA math for f32 (no TF32), tensor cores for f16/bf16 */
  ok = ok && !dnn->SetConvolutionMathType(pl->conv, y->dtype == COIL_F32 || y->dtype == COIL_F64 ? CUDNN_FMA_MATH
                                                                                                : CUDNN_TENSOR_OP_MATH);
  return ok;
}

/* The operands of one convolution call in the plan's layout: x and w copied where their own
 * layout differs, the output's temporary where y's does. */
typedef struct {
  const void *x, *w;
  void *y;
  CUdeviceptr tmp[3];
} dnn_operands;

static cudnnStatus_t
dnn_prepare(rctx *c, const cuda_dnn_plan *pl, const dbuf *x, const dbuf *w, const dbuf *y, const void *one,
            const void *zero, dnn_operands *op, coil_error **e)
{
  const cuda_cudnn *dnn = c->a->dnn;
  size_t es = coil_dtype_size(y->dtype);
  cudnnStatus_t st = 0;
  memset(op, 0, sizeof *op); /* nothing to release until allocated */
  op->x = (const void *)(uintptr_t)x->ptr, op->w = (const void *)(uintptr_t)w->ptr, op->y = (void *)(uintptr_t)y->ptr;
  if (pl->xsrc && !(*e = device_alloc(c, (size_t)numel(x) * es, &op->tmp[0]))) {
    st = dnn->TransformTensor(c->a->dnn_handle, one, pl->xsrc, op->x, zero, pl->x, (void *)(uintptr_t)op->tmp[0]);
    op->x = (const void *)(uintptr_t)op->tmp[0];
  }
  if (!*e && !st && pl->wsrc && !(*e = device_alloc(c, (size_t)numel(w) * es, &op->tmp[1]))) {
    st = dnn->TransformTensor(c->a->dnn_handle, one, pl->wsrc, op->w, zero, pl->wdense, (void *)(uintptr_t)op->tmp[1]);
    op->w = (const void *)(uintptr_t)op->tmp[1];
  }
  if (!*e && !st && pl->yout && !(*e = device_alloc(c, (size_t)numel(y) * es, &op->tmp[2])))
    op->y = (void *)(uintptr_t)op->tmp[2];
  return st;
}

static void
dnn_release(rctx *c, dnn_operands *op)
{
  for (int i = 0; i < 3; i++)
    if (op->tmp[i])
      c->cu->MemFreeAsync(op->tmp[i], c->a->stream);
  memset(op->tmp, 0, sizeof op->tmp);
}

/* The fastest algorithm cuDNN measures for pl on these operands (not under a graph capture: it
 * synchronizes), else the first of its heuristics; within the workspace cuBLAS shares. */
static cudnnStatus_t
dnn_choose(rctx *c, cuda_dnn_plan *pl, bool tr, const dnn_operands *op, bool timed, int *found)
{
  const cuda_cudnn *dnn = c->a->dnn;
  cudnnHandle_t h = c->a->dnn_handle;
  void *ws = (void *)(uintptr_t)c->a->blas_workspace;
  cudnn_algo_perf perf[16];
  int n = 0;
  cudnnStatus_t fs =
      timed ? (tr ? dnn->FindConvolutionBackwardDataAlgorithmEx(h, pl->w, op->w, pl->x, op->x, pl->conv, pl->y, op->y, 16,
                                                                &n, perf, ws, CUDA_BLAS_WORKSPACE)
                  : dnn->FindConvolutionForwardAlgorithmEx(h, pl->x, op->x, pl->w, op->w, pl->conv, pl->y, op->y, 16, &n,
                                                           perf, ws, CUDA_BLAS_WORKSPACE))
            : (tr ? dnn->GetConvolutionBackwardDataAlgorithm_v7(h, pl->w, pl->x, pl->conv, pl->y, 16, &n, perf)
                  : dnn->GetConvolutionForwardAlgorithm_v7(h, pl->x, pl->w, pl->conv, pl->y, 16, &n, perf));
  *found = n;
  pl->algo = -1;
  for (int i = 0; !fs && i < n; i++)
    if (!perf[i].status && perf[i].memory <= CUDA_BLAS_WORKSPACE) {
      pl->algo = perf[i].algo, pl->timed = timed, pl->ms = perf[i].time;
      break;
    }
  return fs;
}

static void
dnn_log(rctx *c, const coil_line *l, const cuda_dnn_plan *pl, const cuda_dnn_plan *other)
{
  const coil_host_api *host = c->a->host;
  if (!host || !COIL_STRUCT_HAS(host, coil_host_api, log) || !host->log)
    return;
  char line[400];
  int n = snprintf(line, sizeof line, "%s, line %d: %s: cuDNN algorithm %d, %s", c->p->name, c->line + 1, l->op,
                   pl->algo, pl->nhwc ? "NHWC" : "NCHW");
  if (pl->timed)
    n += snprintf(line + n, sizeof line - (size_t)n, ", %.3f ms measured", (double)pl->ms);
  if (other && other->algo >= 0 && n > 0 && (size_t)n < sizeof line)
    snprintf(line + n, sizeof line - (size_t)n, " (%s: %.3f ms)", other->nhwc ? "NHWC" : "NCHW", (double)other->ms);
  host->log(host, COIL_LOG_INFO, line);
}

/* aten.convolution.default(input, weight[, bias]) -> out, as cudnnConvolutionForward (transposed:
 * cudnnConvolutionBackwardData, the gradient of the forward convolution that maps out to input),
 * then the bias added by cudnnAddTensor. Operands not in the chosen layout are copied by
 * cudnnTransformTensor through pool memory. */
static coil_error *
run_conv(rctx *c, const coil_line *l)
{
  const cuda_cudnn *dnn = c->a->dnn;
  if (!dnn || l->nouts != 1 || l->nargs < 2 || l->nargs > 3)
    return fail(c, COIL_ERR_INTERNAL, "%s: no cuDNN handle, or not 2 or 3 operands and 1 output", l->op);
  const dbuf *x = &c->bufs[l->args[0]], *w = &c->bufs[l->args[1]], *y = &c->bufs[l->outs[0]];
  const dbuf *bias = l->nargs == 3 ? &c->bufs[l->args[2]] : NULL;
  int nsp = x->rank - 2, t = dnn_type(y->dtype), nd = nsp == 1 ? 4 : x->rank;
  if (nsp < 1 || nsp > 3 || w->rank != x->rank || y->rank != x->rank || t < 0 || x->dtype != y->dtype ||
      w->dtype != y->dtype || (bias && bias->dtype != y->dtype))
    return fail(c, COIL_ERR_UNSUPPORTED, "%s: ranks %d, %d -> %d or dtypes cuDNN does not take", l->op, x->rank, w->rank,
                y->rank);
  int64_t stride[3], pad[3], dil[3], groups = 1, tr = 0;
  const coil_xparam *g = xparam(l, "groups"), *tp = xparam(l, "transposed");
  if (g)
    groups = g->i;
  if (tp)
    tr = tp->i;
  if (!xints(l, "stride", nsp, 1, stride) || !xints(l, "padding", nsp, 0, pad) || !xints(l, "dilation", nsp, 1, dil) ||
      groups < 1)
    return fail(c, COIL_ERR_INVALID_ARGUMENT, "%s: stride, padding, dilation or groups malformed", l->op);
  for (int d = 0; d < x->rank; d++)
    if (x->sizes[d] > INT32_MAX / 2 || w->sizes[d] > INT32_MAX / 2 || y->sizes[d] > INT32_MAX / 2 ||
        numel(x) > INT32_MAX || numel(y) > INT32_MAX || numel(w) > INT32_MAX)
      return fail(c, COIL_ERR_UNSUPPORTED, "%s: sizes beyond cuDNN's int", l->op);
  if (!numel(y))
    return NULL;
  size_t es = coil_dtype_size(y->dtype);
  float f1 = 1, f0 = 0;
  double d1 = 1, d0 = 0;
  const void *one = y->dtype == COIL_F64 ? (const void *)&d1 : (const void *)&f1;
  const void *zero = y->dtype == COIL_F64 ? (const void *)&d0 : (const void *)&f0;
  cudnnHandle_t h = c->a->dnn_handle;
  cudnnStatus_t st = 0;
  if (!numel(x) || !numel(w)) { /* an empty sum: zeros, then the bias */
    CUresult r = c->cu->MemsetD8Async(y->ptr, 0, (size_t)numel(y) * es, c->a->stream);
    if (r)
      return cufail(c, r, "cuMemsetD8Async");
    if (bias) {
      cudnnTensorDescriptor_t bd = NULL, yd = NULL;
      int bdims[5] = {1, 1, 1, 1, 1}, bstr[5] = {1, 1, 1, 1, 1};
      bdims[1] = (int)y->sizes[1], bstr[0] = bdims[1];
      if (!dnn->CreateTensorDescriptor(&bd) && !dnn->SetTensorNdDescriptor(bd, t, nd, bdims, bstr) &&
          dnn_tensor(dnn, &yd, t, y, nd, OWN))
        st = dnn->AddTensor(h, one, bd, (const void *)(uintptr_t)bias->ptr, one, yd, (void *)(uintptr_t)y->ptr);
      else
        st = 1;
      if (bd)
        dnn->DestroyTensorDescriptor(bd);
      if (yd)
        dnn->DestroyTensorDescriptor(yd);
    }
    return st ? fail(c, COIL_ERR_RUNTIME, "%s: cuDNN failed adding the bias", l->op) : NULL;
  }
  cuda_dnn_plan *pl = &c->a->dnn_plans[c->line];
  int64_t key[64] = {0}, *k = key;
  *k++ = y->dtype, *k++ = x->rank, *k++ = bias != NULL;
  for (int d = 0; d < x->rank; d++)
    *k++ = x->sizes[d], *k++ = x->strides[d], *k++ = w->sizes[d], *k++ = w->strides[d], *k++ = y->sizes[d],
    *k++ = y->strides[d];
  if (!pl->valid || memcmp(pl->key, key, sizeof key)) {
    dnn_plan_drop(c->a, pl);
    if (!dnn_describe(dnn, pl, NCHW, t, x, w, y, bias != NULL, nsp, stride, pad, dil, groups)) {
      dnn_plan_drop(c->a, pl);
      return fail(c, COIL_ERR_UNSUPPORTED, "%s: cuDNN refuses these sizes, strides or parameters", l->op);
    }
    memcpy(pl->key, key, sizeof key);
    pl->valid = true, pl->algo = -1;
  }
  coil_error *e = NULL;
  dnn_operands op;
  if (pl->algo < 0 || (!pl->timed && !c->a->capturing)) {
    bool timed = !c->a->capturing;
    int n = 0;
    st = dnn_prepare(c, pl, x, w, y, one, zero, &op, &e);
    cudnnStatus_t fs = e || st ? 0 : dnn_choose(c, pl, tr, &op, timed, &n);
    dnn_release(c, &op);
    if (!e && !st && pl->algo < 0)
      return fail(c, COIL_ERR_UNSUPPORTED, "%s: cuDNN has no algorithm for it (%s)", l->op,
                  fs ? dnn->GetErrorString(fs) : n ? "none runs within the 32 MiB workspace" : "none");
    /* a 2-d forward convolution of f32/f16/bf16 is measured in NHWC too; the copies in and out
     * of that layout are charged at 1 TB/s */
    cuda_dnn_plan alt = {0};
    if (!e && !st && timed && !tr && nsp == 2 && groups == 1 && y->dtype != COIL_F64 &&
        !dnn_describe(dnn, &alt, NHWC, t, x, w, y, bias != NULL, nsp, stride, pad, dil, groups))
      dnn_plan_drop(c->a, &alt); /* cuDNN refuses NHWC here: NCHW it is */
    else if (alt.conv) {
      memcpy(alt.key, key, sizeof key);
      alt.valid = true;
      st = dnn_prepare(c, &alt, x, w, y, one, zero, &op, &e);
      if (!e && !st)
        dnn_choose(c, &alt, false, &op, true, &n);
      dnn_release(c, &op);
      double moved = (double)es * (double)((alt.xsrc ? 2 * numel(x) : 0) + (alt.yout ? 2 * numel(y) : 0) +
                                           (alt.wsrc ? 2 * numel(w) : 0));
      double base = (double)es * (double)((pl->xsrc ? 2 * numel(x) : 0) + (pl->yout ? 2 * numel(y) : 0) +
                                          (pl->wsrc ? 2 * numel(w) : 0));
      if (!e && !st && alt.algo >= 0 && alt.ms + moved / 1e9 < pl->ms + base / 1e9) {
        cuda_dnn_plan old = *pl;
        *pl = alt, alt = old;
      }
    }
    if (!e && !st)
      dnn_log(c, l, pl, alt.valid ? &alt : NULL);
    if (alt.valid)
      dnn_plan_drop(c->a, &alt);
  }
  if (!e && !st)
    st = dnn_prepare(c, pl, x, w, y, one, zero, &op, &e);
  void *ws = (void *)(uintptr_t)c->a->blas_workspace;
  if (!e && !st)
    st = tr ? dnn->ConvolutionBackwardData(h, one, pl->w, op.w, pl->x, op.x, pl->conv, pl->algo, ws, CUDA_BLAS_WORKSPACE,
                                           zero, pl->y, op.y)
            : dnn->ConvolutionForward(h, one, pl->x, op.x, pl->w, op.w, pl->conv, pl->algo, ws, CUDA_BLAS_WORKSPACE, zero,
                                      pl->y, op.y);
  if (!e && !st && pl->yout) /* back to y's own layout */
    st = dnn->TransformTensor(h, one, pl->y, op.y, zero, pl->yout, (void *)(uintptr_t)y->ptr);
  if (!e && !st && bias)
    st = dnn->AddTensor(h, one, pl->bias, (const void *)(uintptr_t)bias->ptr, one, pl->yout ? pl->yout : pl->y,
                        (void *)(uintptr_t)y->ptr);
  if (!e)
    dnn_release(c, &op);
  if (e)
    return e;
  return st ? fail(c, COIL_ERR_RUNTIME, "%s: cuDNN failed: %s", l->op, dnn->GetErrorString(st)) : NULL;
}

/* Copies device buffer src to the caller's tensor t (host or device), through its strides. */
static coil_error *
copy_out(rctx *c, const dbuf *src, const coil_plugin_tensor *t)
{
  size_t es = coil_dtype_size(src->dtype), bytes = (size_t)numel(src) * es;
  if (!bytes)
    return NULL;
  dbuf dst = {.dtype = src->dtype, .rank = t->rank};
  for (int d = 0; d < t->rank; d++)
    dst.sizes[d] = t->sizes[d], dst.strides[d] = t->strides[d];
  CUresult r;
  if (t->device_type == COIL_DEVICE_CUDA) {
    if (src->ptr == (CUdeviceptr)(uintptr_t)t->data)
      return NULL; /* written in place */
    if (!contiguous(src) || !contiguous(&dst))
      return fail(c, COIL_ERR_UNSUPPORTED, "a strided output on the device");
    r = c->cu->MemcpyDtoDAsync((CUdeviceptr)(uintptr_t)t->data, src->ptr, bytes, c->a->stream);
    return r ? cufail(c, r, "cuMemcpyDtoDAsync") : NULL;
  }
  if (contiguous(src) && contiguous(&dst)) {
    r = c->cu->MemcpyDtoHAsync(t->data, src->ptr, bytes, c->a->stream);
    return r ? cufail(c, r, "cuMemcpyDtoHAsync") : NULL;
  }
  /* strided: the source's extent to the host, then element by element */
  int64_t lo, hi;
  extent(src, &lo, &hi);
  char *stage = malloc((size_t)(hi - lo + 1) * es);
  if (!stage)
    return coil_sdk_out_of_memory();
  r = c->cu->MemcpyDtoHAsync(stage, src->ptr + (CUdeviceptr)(lo * (int64_t)es), (size_t)(hi - lo + 1) * es, c->a->stream);
  if (!r)
    r = c->cu->StreamSynchronize(c->a->stream);
  if (r) {
    free(stage);
    return cufail(c, r, "cuMemcpyDtoHAsync");
  }
  int64_t n = numel(src), idx[COIL_MAX_RANK] = {0};
  for (int64_t i = 0; i < n; i++) {
    int64_t so = -lo, dof = 0;
    for (int d = 0; d < src->rank; d++)
      so += idx[d] * src->strides[d], dof += idx[d] * dst.strides[d];
    memcpy((char *)t->data + dof * (int64_t)es, stage + so * (int64_t)es, es);
    for (int d = src->rank - 1; d >= 0 && ++idx[d] == src->sizes[d]; d--)
      idx[d] = 0;
  }
  free(stage);
  return NULL;
}

/* The caller's tensor for an output buffer the program allocates, when it is on the device with
 * exactly the buffer's layout, or when the output is a view that covers the whole buffer from
 * offset 0 (a reshape: Wrapper IR 1.2) and the tensor is dense: the kernels then write it in
 * place and copy_out has nothing to do. NULL otherwise (the buffer is allocated and copied out). */
static const coil_plugin_tensor *
in_place_output(const rctx *c, int buffer, const coil_plugin_run_args *args)
{
  const coil_line *ol = &c->p->lines[c->p->nlines - 1];
  const dbuf *b = &c->bufs[buffer];
  if (ol->kind != COIL_LINE_OUTPUT || (size_t)ol->nargs != args->noutputs)
    return NULL;
  for (int i = 0; i < ol->nargs; i++) {
    const coil_plugin_tensor *t = args->outputs[i];
    if (ol->args[i] != buffer || !t || t->device_type != COIL_DEVICE_CUDA || t->rank != b->rank ||
        t->dtype != (int32_t)b->dtype || !t->data)
      continue;
    bool same = true;
    for (int d = 0; d < b->rank; d++)
      same = same && t->sizes[d] == b->sizes[d] && (b->sizes[d] <= 1 || t->strides[d] == b->strides[d]);
    if (same)
      return t;
  }
  for (int i = 0; i < ol->nargs; i++) {
    const coil_plugin_tensor *t = args->outputs[i];
    const coil_buffer *w = &c->p->buffers[ol->args[i]];
    int64_t off;
    coil_diag why = {0};
    if (w->kind != COIL_BUF_VIEW || w->base != buffer || !t || t->device_type != COIL_DEVICE_CUDA ||
        t->dtype != (int32_t)b->dtype || !t->data ||
        coil_sym_eval(c->p->sym, w->offset, c->vals, c->nvars, &off, &why) || off != 0)
      continue;
    dbuf view = {.dtype = b->dtype, .rank = t->rank};
    for (int d = 0; d < t->rank; d++)
      view.sizes[d] = t->sizes[d], view.strides[d] = t->strides[d];
    if (contiguous(&view) && numel(&view) == numel(b))
      return t;
  }
  return NULL;
}

static coil_error *
run_line(rctx *c, const coil_line *l, const coil_plugin_run_args *args)
{
  coil_error *e;
  dbuf *b = l->buffer >= 0 && l->buffer < c->p->nbuffers ? &c->bufs[l->buffer] : NULL;
  switch (l->kind) {
  case COIL_LINE_COMMENT: return NULL;
  case COIL_LINE_SYMBOL: return run_symbol(c, l);
  case COIL_LINE_ASSERT: return run_assert(c, l);
  case COIL_LINE_ALLOC: {
    if ((e = layout(c, l->buffer)))
      return e;
    const coil_plugin_tensor *t = in_place_output(c, l->buffer, args);
    if (t) { /* the kernels write the caller's device tensor directly */
      b->start = b->ptr = (CUdeviceptr)(uintptr_t)t->data;
      b->live = true;
      return NULL;
    }
    if ((e = device_alloc(c, bytes_of(b), &b->start)))
      return e;
    b->ptr = b->start;
    b->owned = b->live = true;
    return NULL;
  }
  case COIL_LINE_FREE:
    b->live = false;
    if (b->owned && !reused_later(c, l->buffer) && b->start) {
      CUresult r = c->cu->MemFreeAsync(b->start, c->a->stream);
      b->owned = false;
      if (r)
        return cufail(c, r, "cuMemFreeAsync");
    }
    return NULL;
  case COIL_LINE_REUSE: {
    dbuf *base = &c->bufs[c->p->buffers[l->buffer].base];
    if ((e = layout(c, l->buffer)))
      return e;
    b->start = b->ptr = base->start;
    b->owned = base->owned;
    base->owned = false;
    b->live = true;
    return NULL;
  }
  case COIL_LINE_VIEW: {
    const dbuf *base = &c->bufs[c->p->buffers[l->buffer].base];
    int64_t off;
    if ((e = layout(c, l->buffer)) || (e = eval(c, c->p->buffers[l->buffer].offset, &off)))
      return e;
    b->start = base->start;
    b->ptr = base->start + (CUdeviceptr)(off * (int64_t)coil_dtype_size(b->dtype));
    b->live = true;
    return NULL;
  }
  case COIL_LINE_KERNEL_CALL: return run_kernel(c, l);
  case COIL_LINE_EXTERN_CALL:
    if (l->op && (strcmp(l->op, "aten.mm.default") == 0 || strcmp(l->op, "aten.bmm.default") == 0) &&
        l->nargs == 2 && l->nouts == 1)
      return run_matmul(c, l);
    if (l->op && strcmp(l->op, "aten.convolution.default") == 0)
      return run_conv(c, l);
    return fail(c, COIL_ERR_UNSUPPORTED, "library op %s is not supported by the cuda plugin yet", l->op);
  case COIL_LINE_MULTI_OUTPUT: return NULL;
  case COIL_LINE_COPY_BACK: {
    int in = -1;
    for (int i = 0; i < c->p->ninputs; i++)
      if (c->p->inputs[i].buffer == l->buffer)
        in = i;
    if (in < 0)
      return fail(c, COIL_ERR_INTERNAL, "copy_back into %s, which is not an input", bufname(c, l->buffer));
    return copy_out(c, &c->bufs[l->source], args->inputs[in]);
  }
  case COIL_LINE_OUTPUT:
    if ((size_t)l->nargs != args->noutputs)
      return fail(c, COIL_ERR_INVALID_ARGUMENT, "%zu outputs given, the program has %d", args->noutputs, l->nargs);
    for (int i = 0; i < l->nargs; i++)
      if ((e = copy_out(c, &c->bufs[l->args[i]], args->outputs[i])))
        return e;
    return NULL;
  }
  return fail(c, COIL_ERR_INTERNAL, "unknown line kind %d", (int)l->kind);
}

/* Inputs: checked against the program, host ones copied to the device. */
static coil_error *
bind_inputs(rctx *c, const coil_plugin_run_args *args)
{
  const coil_wir_program *p = c->p;
  if (args->ninputs != (size_t)p->ninputs)
    return fail(c, COIL_ERR_INVALID_ARGUMENT, "%zu inputs given, the program takes %d", args->ninputs, p->ninputs);
  for (int i = 0; i < p->ninputs; i++) {
    const coil_plugin_tensor *t = args->inputs[i];
    const coil_buffer *cb = &p->buffers[p->inputs[i].buffer];
    dbuf *b = &c->bufs[p->inputs[i].buffer];
    if (!t || t->dtype != (int32_t)cb->dtype || t->rank != cb->rank ||
        (t->device_type != COIL_DEVICE_CPU && t->device_type != COIL_DEVICE_CUDA))
      return fail(c, COIL_ERR_INVALID_ARGUMENT, "input %d ('%s') is not a %s tensor of rank %d on the host or the GPU", i,
                  p->inputs[i].label, coil_dtype_name(cb->dtype), cb->rank);
    b->dtype = cb->dtype;
    b->rank = cb->rank;
    for (int d = 0; d < cb->rank; d++) {
      if (t->sizes[d] < 0 || t->strides[d] < 0)
        return fail(c, COIL_ERR_INVALID_ARGUMENT, "input %d has a negative size or stride", i);
      b->sizes[d] = t->sizes[d], b->strides[d] = t->strides[d];
    }
    b->live = true;
    size_t bytes = bytes_of(b);
    if (t->device_type == COIL_DEVICE_CUDA) {
      b->start = b->ptr = (CUdeviceptr)(uintptr_t)t->data;
      continue;
    }
    coil_error *e = device_alloc(c, bytes, &b->start);
    if (e)
      return e;
    b->ptr = b->start;
    b->owned = true;
    if (bytes) {
      CUresult r = c->cu->MemcpyHtoDAsync(b->start, t->data, bytes, c->a->stream);
      if (r)
        return cufail(c, r, "cuMemcpyHtoDAsync");
    }
  }
  return NULL;
}

/* Queues the program's lines on the artifact's stream (capturing or not); no synchronize. */
static coil_error *
run_lines(coil_artifact *a, const coil_plugin_run_args *args)
{
  const coil_wir_program *p = a->program;
  rctx c = {.a = a, .p = p, .cu = a->cu, .nvars = coil_sym_nvars(p->sym), .line = -1};
  c.vals = calloc((size_t)c.nvars + 1, sizeof *c.vals);
  c.bound = calloc((size_t)c.nvars + 1, sizeof *c.bound);
  c.bufs = calloc((size_t)p->nbuffers + 1, sizeof *c.bufs);
  if (!c.vals || !c.bound || !c.bufs) {
    free(c.vals), free(c.bound), free(c.bufs);
    return coil_sdk_out_of_memory();
  }
  c.skip_line = -1;
  coil_error *e = bind_inputs(&c, args);
  for (c.line = 0; !e && c.line < p->nlines; c.line++)
    if (c.line != c.skip_line)
      e = run_line(&c, &p->lines[c.line], args);
  for (int i = 0; i < p->nbuffers; i++) /* whatever is still held, error or not */
    if (c.bufs[i].owned && c.bufs[i].start)
      a->cu->MemFreeAsync(c.bufs[i].start, a->stream);
  free(c.vals), free(c.bound), free(c.bufs);
  return e;
}

/* ---- reduce-overhead: the run captured into a CUDA graph, replayed ----
 *
 * The first run of a size binding (dtype, sizes, strides and place of every input and output)
 * is captured: device tensors are used where they are, host tensors through static device
 * buffers. A later run with the same binding replays the graph; a device tensor found at
 * another address than at capture becomes static too (one more capture), and from then on is
 * copied into (inputs, and back out if the program mutates it) or out of (outputs) its static
 * buffer around each replay. Another binding drops the graph and captures anew. A program the
 * driver cannot capture is refused once, with the reason logged, and runs uncaptured. */

typedef struct {
  int32_t dtype, rank, device_type;
  int64_t sizes[COIL_MAX_RANK], strides[COIL_MAX_RANK];
  void *addr;        /* the caller's data at capture */
  bool is_static;    /* the graph uses buf; copies around each replay */
  bool mutated;      /* an input the program writes (copy_back) */
  CUdeviceptr buf;
  size_t bytes;      /* the tensor's extent */
  coil_plugin_tensor proxy;
} gslot;

struct cuda_graph {
  size_t nin, n;
  gslot *slots;
  CUgraph graph;
  CUgraphExec exec;
};

static size_t
tensor_bytes(const coil_plugin_tensor *t)
{
  int64_t hi = 0;
  for (int d = 0; d < t->rank; d++) {
    if (t->sizes[d] == 0)
      return 0;
    hi += (t->sizes[d] - 1) * t->strides[d];
  }
  return (size_t)(hi + 1) * coil_dtype_size((coil_dtype)t->dtype);
}

static const coil_plugin_tensor *
slot_tensor(const coil_plugin_run_args *args, size_t i)
{
  return i < args->ninputs ? args->inputs[i] : args->outputs[i - args->ninputs];
}

void
cuda_graph_free(coil_artifact *a)
{
  cuda_graph *g = a->graph;
  if (!g)
    return;
  if (g->exec)
    a->cu->GraphExecDestroy(g->exec);
  if (g->graph)
    a->cu->GraphDestroy(g->graph);
  for (size_t i = 0; i < g->n; i++)
    if (g->slots[i].buf)
      a->cu->MemFree(g->slots[i].buf);
  free(g->slots);
  free(g);
  a->graph = NULL;
}

static bool
same_binding(const cuda_graph *g, const coil_plugin_run_args *args)
{
  if (g->nin != args->ninputs || g->n != args->ninputs + args->noutputs)
    return false;
  for (size_t i = 0; i < g->n; i++) {
    const coil_plugin_tensor *t = slot_tensor(args, i);
    const gslot *s = &g->slots[i];
    if (!t || t->dtype != s->dtype || t->rank != s->rank || t->device_type != s->device_type ||
        t->rank < 0 || t->rank > COIL_MAX_RANK)
      return false;
    for (int d = 0; d < t->rank; d++)
      if (t->sizes[d] != s->sizes[d] || t->strides[d] != s->strides[d])
        return false;
  }
  return true;
}

static coil_error *
graph_fail(coil_artifact *a, CUresult r, const char *call)
{
  const char *s = NULL;
  a->cu->GetErrorString(r, &s);
  return coil_sdk_error(COIL_ERR_RUNTIME, "cuda: %s: %s failed: %s (%d)", a->program->name, call, s ? s : "?", r);
}

/* Copies between a caller's tensor and its static buffer (the whole extent, gaps included). */
static CUresult
slot_copy(coil_artifact *a, const gslot *s, const coil_plugin_tensor *t, bool in)
{
  if (!s->bytes)
    return 0;
  if (t->device_type == COIL_DEVICE_CUDA)
    return in ? a->cu->MemcpyDtoDAsync(s->buf, (CUdeviceptr)(uintptr_t)t->data, s->bytes, a->stream)
              : a->cu->MemcpyDtoDAsync((CUdeviceptr)(uintptr_t)t->data, s->buf, s->bytes, a->stream);
  return in ? a->cu->MemcpyHtoDAsync(s->buf, t->data, s->bytes, a->stream)
            : a->cu->MemcpyDtoHAsync(t->data, s->buf, s->bytes, a->stream);
}

/* Points the cuBLAS and cuDNN handles at s (they queue on their handle's stream). */
static coil_error *
handles_on(coil_artifact *a, CUstream s)
{
  if (s == a->handles_stream)
    return NULL;
  if ((a->blas_handle && a->blas->SetStream(a->blas_handle, s)) || (a->dnn_handle && a->dnn->SetStream(a->dnn_handle, s)))
    return coil_sdk_error(COIL_ERR_RUNTIME, "cuda: %s: cannot set the cuBLAS/cuDNN stream", a->program->name);
  a->handles_stream = s;
  return NULL;
}

/* Makes s the stream this run queues on. A run on another stream than the previous run's waits
 * for that one first: both use the cuBLAS workspace and the pool's blocks. */
static coil_error *
use_stream(coil_artifact *a, CUstream s)
{
  if (s != a->last_stream) {
    CUresult r = a->cu->EventRecord(a->switch_event, a->last_stream);
    if (!r)
      r = a->cu->StreamWaitEvent(s, a->switch_event, 0);
    else /* the previous stream is gone (a caller destroyed it): wait for everything */
      r = a->cu->CtxSynchronize();
    if (r)
      return graph_fail(a, r, "ordering the run after the previous one (cuStreamWaitEvent)");
    a->last_stream = s;
  }
  a->stream = s;
  return handles_on(a, s);
}

/* Captures the run with the slots' proxies. On failure *refuse says whether graphs should be
 * given up for this artifact (the driver could not capture) rather than the run being wrong. */
static coil_error *
capture(coil_artifact *a, cuda_graph *g, bool *refuse)
{
  *refuse = false;
  const coil_plugin_tensor **ptrs = calloc(g->n + 1, sizeof *ptrs);
  if (!ptrs)
    return coil_sdk_out_of_memory();
  for (size_t i = 0; i < g->n; i++) {
    gslot *s = &g->slots[i];
    if (s->is_static && !s->buf && s->bytes) {
      CUresult r = a->cu->MemAlloc(&s->buf, s->bytes);
      if (r) {
        free(ptrs);
        return graph_fail(a, r, "cuMemAlloc (a static buffer)");
      }
    }
    s->proxy = (coil_plugin_tensor){.struct_size = sizeof s->proxy, .data = s->is_static ? (void *)(uintptr_t)s->buf : s->addr,
                                    .dtype = s->dtype, .rank = s->rank, .sizes = s->sizes, .strides = s->strides,
                                    .device_type = COIL_DEVICE_CUDA};
    ptrs[i] = &s->proxy;
  }
  coil_plugin_run_args pa = {.struct_size = sizeof pa, .ninputs = g->nin, .inputs = ptrs, .noutputs = g->n - g->nin,
                             .outputs = ptrs + g->nin};
  /* captured on the artifact's own stream whatever the run's (a caller's may be the legacy
   * default stream, which cannot capture); the graph is launched on the run's */
  CUstream run_stream = a->stream;
  a->stream = a->own_stream;
  coil_error *e = handles_on(a, a->stream);
  CUresult r = e ? 0 : a->cu->StreamBeginCapture(a->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  if (e || r) {
    free(ptrs);
    a->stream = run_stream;
    *refuse = true;
    return e ? e : graph_fail(a, r, "cuStreamBeginCapture");
  }
  a->capturing = true;
  e = run_lines(a, &pa);
  a->capturing = false;
  free(ptrs);
  CUgraph graph = NULL;
  r = a->cu->StreamEndCapture(a->stream, &graph);
  a->stream = run_stream;
  if (!e)
    e = handles_on(a, run_stream);
  if (e) {
    if (graph)
      a->cu->GraphDestroy(graph);
    *refuse = coil_sdk_error_code(e) != COIL_ERR_INVALID_ARGUMENT; /* bad input is the caller's */
    return e;
  }
  if (r) {
    *refuse = true;
    return graph_fail(a, r, "cuStreamEndCapture");
  }
  g->graph = graph;
  if ((r = a->cu->GraphInstantiate(&g->exec, graph, 0))) {
    g->exec = NULL;
    *refuse = true;
    return graph_fail(a, r, "cuGraphInstantiateWithFlags");
  }
  return NULL;
}

static coil_error *
run_graph(coil_artifact *a, const coil_plugin_run_args *args, bool *refuse)
{
  *refuse = false;
  size_t n = args->ninputs + args->noutputs;
  for (size_t i = 0; i < n; i++) {
    const coil_plugin_tensor *t = slot_tensor(args, i);
    if (!t || t->rank < 0 || t->rank > COIL_MAX_RANK || (t->device_type != COIL_DEVICE_CPU && t->device_type != COIL_DEVICE_CUDA))
      return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cuda: %s: %s %zu is not a tensor on the host or the GPU",
                            a->program->name, i < args->ninputs ? "input" : "output",
                            i < args->ninputs ? i : i - args->ninputs);
    for (int d = 0; d < t->rank; d++)
      if (t->sizes[d] < 0 || t->strides[d] < 0)
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cuda: %s: a negative size or stride", a->program->name);
  }
  cuda_graph *g = a->graph;
  bool again = false;
  if (g && !same_binding(g, args))
    cuda_graph_free(a), g = NULL;
  if (!g) {
    g = calloc(1, sizeof *g);
    if (!g || !(g->slots = calloc(n + 1, sizeof *g->slots))) {
      free(g);
      return coil_sdk_out_of_memory();
    }
    g->nin = args->ninputs, g->n = n;
    for (size_t i = 0; i < n; i++) {
      const coil_plugin_tensor *t = slot_tensor(args, i);
      gslot *s = &g->slots[i];
      s->dtype = t->dtype, s->rank = t->rank, s->device_type = t->device_type;
      for (int d = 0; d < t->rank; d++)
        s->sizes[d] = t->sizes[d], s->strides[d] = t->strides[d];
      s->addr = t->data;
      s->is_static = t->device_type != COIL_DEVICE_CUDA;
      s->bytes = tensor_bytes(t);
    }
    const coil_wir_program *p = a->program;
    for (int l = 0; l < p->nlines; l++)
      if (p->lines[l].kind == COIL_LINE_COPY_BACK)
        for (int i = 0; i < p->ninputs && (size_t)i < n; i++)
          if (p->inputs[i].buffer == p->lines[l].buffer)
            g->slots[i].mutated = true;
    a->graph = g;
    again = true;
  }
  for (size_t i = 0; i < n; i++) {
    gslot *s = &g->slots[i];
    if (!s->is_static && slot_tensor(args, i)->data != s->addr)
      s->is_static = again = true; /* moved since capture: through a static buffer from now on */
  }
  if (again) {
    if (g->exec)
      a->cu->GraphExecDestroy(g->exec), g->exec = NULL;
    if (g->graph)
      a->cu->GraphDestroy(g->graph), g->graph = NULL;
    coil_error *e = capture(a, g, refuse);
    if (e) {
      cuda_graph_free(a);
      return e;
    }
  }
  CUresult r = 0;
  for (size_t i = 0; i < g->nin && !r; i++)
    if (g->slots[i].is_static)
      r = slot_copy(a, &g->slots[i], args->inputs[i], true);
  if (!r)
    r = a->cu->GraphLaunch(g->exec, a->stream);
  for (size_t i = 0; i < n && !r; i++)
    if (g->slots[i].is_static && (i >= g->nin || g->slots[i].mutated))
      r = slot_copy(a, &g->slots[i], slot_tensor(args, i), false);
  return r ? graph_fail(a, r, "a replay (copy or cuGraphLaunch)") : NULL;
}

coil_error *
cuda_run(coil_artifact *a, const coil_plugin_run_args *args)
{
  CUresult r = a->cu->CtxSetCurrent(a->ctx);
  if (r)
    return graph_fail(a, r, "cuCtxSetCurrent");
  pthread_mutex_lock(&a->lock);
  bool caller = COIL_STRUCT_HAS(args, coil_plugin_run_args, stream) && args->has_stream;
  coil_error *e = use_stream(a, caller ? (CUstream)args->stream : a->own_stream);
  if (e) {
    a->stream = a->own_stream;
    pthread_mutex_unlock(&a->lock);
    return e;
  }
  a->caller_streams = a->caller_streams || caller;
  bool plain = !a->opt.graphs || a->graph_refused[0];
  if (!plain) {
    bool refuse = false;
    e = run_graph(a, args, &refuse);
    if (e && refuse) { /* give graphs up for this artifact, say why once, run as usual */
      snprintf(a->graph_refused, sizeof a->graph_refused, "%s", coil_sdk_error_message(e));
      coil_sdk_error_free(e);
      e = NULL;
      if (a->host && COIL_STRUCT_HAS(a->host, coil_host_api, log) && a->host->log) {
        char line[700];
        snprintf(line, sizeof line, "graph capture refused for %s, running uncaptured: %s", a->program->name,
                 a->graph_refused);
        a->host->log(a->host, COIL_LOG_WARN, line);
      }
      plain = true;
    }
  }
  if (plain)
    e = run_lines(a, args);
  bool all_device = true;
  for (size_t i = 0; i < args->ninputs + args->noutputs; i++) {
    const coil_plugin_tensor *t = slot_tensor(args, i);
    all_device = all_device && t && t->device_type == COIL_DEVICE_CUDA;
  }
  /* the outputs are the caller's when this returns, unless they are on the device and the
   * caller gave a stream (they are ready in its order) or said sync = false */
  if (e || !all_device || (a->opt.sync && !caller)) {
    r = a->cu->StreamSynchronize(a->stream);
    if (!e && r)
      e = graph_fail(a, r, "cuStreamSynchronize (a kernel failed)");
    long long oob[2] = {0, 0};
    if (!e && a->oob && !(r = a->cu->MemcpyDtoHAsync(oob, a->oob, sizeof oob, a->stream)))
      r = a->cu->StreamSynchronize(a->stream);
    if (!e && r)
      e = graph_fail(a, r, "reading the index check");
    if (!e && oob[0]) { /* the outputs hold garbage where the index was: the run failed */
      e = coil_sdk_error(COIL_ERR_RUNTIME, "cuda: index %lld is out of range in program %s (an indirect load: "
                         "embedding, gather or index%s)", oob[1], a->program->name,
                         a->opt.sync && !a->caller_streams ? "" : "; in this run or an earlier one that returned unsynchronized");
      /* cleared only here, so a run that finds every index in range costs no memset */
      if (!a->cu->MemsetD8Async(a->oob, 0, sizeof oob, a->stream))
        a->cu->StreamSynchronize(a->stream);
    }
  }
  a->stream = a->own_stream; /* a caller's stream is used during its run only */
  pthread_mutex_unlock(&a->lock);
  return e;
}

/* A matrix operand's layout from the program: unit stride (a constant 1) in one of its two
 * matrix dims, or a size-1 dim there. */
static bool
blas_layout(const coil_buffer *b, int o)
{
  int64_t v;
  for (int d = o; d < o + 2; d++)
    if ((coil_sym_is_const(b->strides[d], &v) && v == 1) || (coil_sym_is_const(b->sizes[d], &v) && v <= 1))
      return true;
  return false;
}

bool
cuda_blas_line_ok(const coil_wir_program *p, const coil_line *l, char *why, size_t n)
{
  if (l->op && strcmp(l->op, "aten.convolution.default") == 0 && l->nouts == 1 && (l->nargs == 2 || l->nargs == 3)) {
    coil_dtype t = p->buffers[l->outs[0]].dtype;
    if (!cuda_cudnn_get(NULL) || dnn_type(t) < 0) {
      snprintf(why, n, "%s on %s needs cuDNN 9 and a floating dtype", l->op, coil_dtype_name(t));
      return false;
    }
    return true;
  }
  bool bmm = l->op && strcmp(l->op, "aten.bmm.default") == 0;
  if (!l->op || (!bmm && strcmp(l->op, "aten.mm.default") != 0) || l->nargs != 2 || l->nouts != 1) {
    snprintf(why, n, "library op %s is not supported yet", l->op ? l->op : "(none)");
    return false;
  }
  coil_dtype t = p->buffers[l->outs[0]].dtype;
  if (t != COIL_F32 && t != COIL_F16 && t != COIL_BF16 && t != COIL_F64) {
    snprintf(why, n, "%s on %s (cuBLAS does floats)", l->op, coil_dtype_name(t));
    return false;
  }
  for (int i = 0; i < 2; i++)
    if (p->buffers[l->args[i]].rank != 2 + bmm || !blas_layout(&p->buffers[l->args[i]], bmm)) {
      snprintf(why, n, "%s: operand %s is strided in both matrix dims", l->op, p->buffers[l->args[i]].name);
      return false;
    }
  return true;
}
