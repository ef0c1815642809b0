/* cuda_run.c — the cuda plugin's wrapper: the SDK's GPU executor (coil/coil_gpu_run.h) walks a
 * program's lines through the CUDA driver given here: allocations from the artifact's stream-
 * ordered pool (cuMemAllocAsync), kernel launches, copies; library ops (mm and bmm through
 * cuBLASLt or cuBLAS, convolution through cuDNN) are this file's, coil.attention is
 * cuda_attention.c's, and the mm lines compile gave the generated GEMM are cuda_gemm.c's
 * (cuBLASLt where a run's operands fail its checks). Inputs may be on the host
 * (copied in first) or already on the device. Everything is queued on the artifact's stream; the
 * run synchronizes once at the end. reduce-overhead captures the run into a CUDA graph. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/coil_gpu_run.h"
#include "cuda.h"

typedef coil_gpu_buf dbuf;
typedef coil_gpu_run rctx;

static coil_artifact *
art(const rctx *c)
{
  return c->user;
}

static coil_error *
cufail(rctx *c, CUresult r, const char *call)
{
  return coil_gpu_run_rtfail(c, (int)r, call);
}

static int
rt_alloc(rctx *c, size_t bytes, coil_gpu_ptr *out)
{
  coil_artifact *a = art(c);
  CUdeviceptr p = 0;
  CUresult r = a->capturing || !a->pool ? a->cu->MemAllocAsync(&p, bytes, a->stream)
                                         : a->cu->MemAllocFromPoolAsync(&p, bytes, a->pool, a->stream);
  *out = p;
  return (int)r;
}

/* tmp buffers of library calls (tmp: 0 for no bytes) */
static coil_error *
device_alloc(rctx *c, size_t bytes, CUdeviceptr *out)
{
  coil_gpu_ptr p = 0;
  int r = bytes ? rt_alloc(c, bytes, &p) : 0;
  *out = p;
  return r ? cufail(c, (CUresult)r, "cuMemAllocAsync") : NULL;
}

static int64_t
numel(const dbuf *b)
{
  return coil_gpu_buf_numel(b);
}

/* How cuBLAS (column-major) reads the row-major matrix X[R, C] (dims o, o+1): op N on rows of
 * stride ld, or op T on a column-major (transposed) view. -1: neither layout. */
static int
blas_operand(const dbuf *x, int o, int *op, int64_t *ld)
{
  bool t;
  if (!coil_gpu_blas_layout(x, o, &t, ld))
    return -1;
  *op = t ? CUBLAS_OP_T : CUBLAS_OP_N;
  return 0;
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
          int64_t sa, int64_t sb, int t, int tc, int compute, CUdeviceptr A, CUdeviceptr B, CUdeviceptr D, uint32_t epi,
          CUdeviceptr bias, const void *alpha, const void *beta, coil_error **err)
{
  coil_artifact *a = art(c);
  const cuda_cublaslt *lt = a->lt;
  cuda_lt_plan *pl = &a->lt_plans[c->line];
  int64_t key[19] = {M, N, K, batch, lda, ldb, sa, sb, opa, opb, t, tc, compute, alignment(A), alignment(B), alignment(D),
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
      pl->lc = lt_layout(lt, tc, N, M, N, batch, M * N, &ok);
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
    *err = coil_gpu_run_fail(c, COIL_ERR_RUNTIME, "cublasLtMatmulDescSetAttribute (bias) failed");
    return 0;
  }
  cublasStatus_t st = lt->Matmul(a->lt_handle, pl->desc, alpha, (const void *)(uintptr_t)B, pl->la,
                                 (const void *)(uintptr_t)A, pl->lb, beta, (const void *)(uintptr_t)D, pl->lc,
                                 (void *)(uintptr_t)D, pl->lc, &pl->algo, (void *)(uintptr_t)a->blas_workspace, CUDA_BLAS_WORKSPACE,
                                 a->stream);
  if (st)
    *err = coil_gpu_run_fail(c, COIL_ERR_RUNTIME, "cublasLtMatmul failed with status %d", st);
  return 0;
}

/* C[M, N] = A[M, K] B[K, N] (per batch) in row-major terms is C^T = B^T A^T column-major: cuBLAS
 * gets B first, m = N, n = M, and writes C with ldc = N. */
static coil_error *
run_matmul(rctx *c, const coil_line *l)
{
  if (!art(c)->blas)
    return coil_gpu_run_fail(c, COIL_ERR_INTERNAL, "no cuBLAS handle for %s", l->op);
  bool widen = strcmp(l->op, "aten.bmm.dtype") == 0; /* decompose-K: f32 partials */
  bool bmm = widen || strcmp(l->op, "aten.bmm.default") == 0;
  int o = bmm;
  const dbuf *A = &c->bufs[l->args[0]], *B = &c->bufs[l->args[1]], *C = &c->bufs[l->outs[0]];
  if (A->rank != 2 + o || B->rank != 2 + o || C->rank != 2 + o)
    return coil_gpu_run_fail(c, COIL_ERR_INVALID_ARGUMENT, "%s of ranks %d and %d", l->op, A->rank, B->rank);
  int64_t M = A->sizes[o], K = A->sizes[o + 1], N = B->sizes[o + 1], batch = bmm ? A->sizes[0] : 1;
  if (!M || !N || !batch)
    return NULL;
  size_t es = coil_dtype_size(C->dtype);
  if (C->strides[o + 1] != 1 || C->strides[o] != N || (bmm && batch > 1 && C->strides[0] != M * N))
    return coil_gpu_run_fail(c, COIL_ERR_INTERNAL, "the output of %s is not contiguous", l->op);
  if (!K) { /* an empty sum: zeros */
    CUresult r = art(c)->cu->MemsetD8Async(C->ptr, 0, (size_t)(batch * M * N) * es, art(c)->stream);
    return r ? cufail(c, r, "cuMemsetD8Async") : NULL;
  }
  int opa, opb;
  int64_t lda, ldb;
  if (blas_operand(A, o, &opa, &lda) || blas_operand(B, o, &opb, &ldb))
    return coil_gpu_run_fail(c, COIL_ERR_UNSUPPORTED, "%s: an operand is strided in both matrix dims", l->op);
  if (M > 2147483647 || N > 2147483647 || K > 2147483647 || batch > 2147483647)
    return coil_gpu_run_fail(c, COIL_ERR_UNSUPPORTED, "%s: sizes beyond cuBLAS's int", l->op);
  int t, compute = CUBLAS_COMPUTE_32F;
  switch (A->dtype) { /* the operands' (the output's too but for bmm.dtype's f32) */
  case COIL_F32: t = CUDA_R_32F; break;
  case COIL_F16: t = CUDA_R_16F; break;
  case COIL_BF16: t = CUDA_R_16BF; break;
  case COIL_F64: t = CUDA_R_64F, compute = CUBLAS_COMPUTE_64F; break;
  default: return coil_gpu_run_fail(c, COIL_ERR_UNSUPPORTED, "%s on %s", l->op, coil_dtype_name(A->dtype));
  }
  int tc = widen ? CUDA_R_32F : t;
  if (B->dtype != A->dtype || (widen ? C->dtype != COIL_F32 : C->dtype != A->dtype))
    return coil_gpu_run_fail(c, COIL_ERR_INVALID_ARGUMENT, "%s: operands of %s and %s to %s", l->op,
                             coil_dtype_name(A->dtype), coil_dtype_name(B->dtype), coil_dtype_name(C->dtype));
  float af = 1, bf = 0;
  double ad = 1, bd = 0;
  const void *alpha = compute == CUBLAS_COMPUTE_64F ? (const void *)&ad : (const void *)&af;
  const void *beta = compute == CUBLAS_COMPUTE_64F ? (const void *)&bd : (const void *)&bf;
  long long sa = bmm && batch > 1 ? A->strides[0] : 0, sb = bmm && batch > 1 ? B->strides[0] : 0;
  if (!bmm && art(c)->gemm) { /* the generated GEMM where compile chose it and the operands pass its checks */
    bool done = false;
    coil_error *err = cuda_gemm_run(c, l, &done);
    if (err || done)
      return err;
  }
  if (art(c)->lt) {
    /* the kernel after it folded in as an epilogue, when its output and bias are at hand */
    const coil_gpu_epilogue *ep = &art(c)->epi[c->line];
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
    if (lt_matmul(c, opa, opb, M, N, K, batch, lda, ldb, sa, sb, t, tc, compute, A->ptr, B->ptr, D, epi, bias, alpha,
                  beta, &err) == 0) {
      if (!err && fused)
        c->skip_line = ep->kernel_line; /* its work is done */
      return err;
    }
  }
  cublasStatus_t s = art(c)->blas->GemmStridedBatchedEx(
      art(c)->blas_handle, opb, opa, (int)N, (int)M, (int)K, alpha, (const void *)(uintptr_t)B->ptr, t, (int)ldb, sb,
      (const void *)(uintptr_t)A->ptr, t, (int)lda, sa, beta, (void *)(uintptr_t)C->ptr, tc, (int)N, (long long)(M * N),
      (int)batch, compute, CUBLAS_GEMM_DEFAULT);
  return s ? coil_gpu_run_fail(c, COIL_ERR_RUNTIME, "cublasGemmStridedBatchedEx failed with status %d", s) : NULL;
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
  const cuda_cudnn *dnn = art(c)->dnn;
  size_t es = coil_dtype_size(y->dtype);
  cudnnStatus_t st = 0;
  memset(op, 0, sizeof *op); /* nothing to release until allocated */
  op->x = (const void *)(uintptr_t)x->ptr, op->w = (const void *)(uintptr_t)w->ptr, op->y = (void *)(uintptr_t)y->ptr;
  if (pl->xsrc && !(*e = device_alloc(c, (size_t)numel(x) * es, &op->tmp[0]))) {
    st = dnn->TransformTensor(art(c)->dnn_handle, one, pl->xsrc, op->x, zero, pl->x, (void *)(uintptr_t)op->tmp[0]);
    op->x = (const void *)(uintptr_t)op->tmp[0];
  }
  if (!*e && !st && pl->wsrc && !(*e = device_alloc(c, (size_t)numel(w) * es, &op->tmp[1]))) {
    st = dnn->TransformTensor(art(c)->dnn_handle, one, pl->wsrc, op->w, zero, pl->wdense, (void *)(uintptr_t)op->tmp[1]);
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
      art(c)->cu->MemFreeAsync(op->tmp[i], art(c)->stream);
  memset(op->tmp, 0, sizeof op->tmp);
}

/* The fastest algorithm cuDNN measures for pl on these operands (not under a graph capture: it
 * synchronizes), else the first of its heuristics; within the workspace cuBLAS shares. */
static cudnnStatus_t
dnn_choose(rctx *c, cuda_dnn_plan *pl, bool tr, const dnn_operands *op, bool timed, int *found)
{
  const cuda_cudnn *dnn = art(c)->dnn;
  cudnnHandle_t h = art(c)->dnn_handle;
  void *ws = (void *)(uintptr_t)art(c)->blas_workspace;
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
  const coil_host_api *host = art(c)->host;
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
  const cuda_cudnn *dnn = art(c)->dnn;
  if (!dnn || l->nouts != 1 || l->nargs < 2 || l->nargs > 3)
    return coil_gpu_run_fail(c, COIL_ERR_INTERNAL, "%s: no cuDNN handle, or not 2 or 3 operands and 1 output", l->op);
  const dbuf *x = &c->bufs[l->args[0]], *w = &c->bufs[l->args[1]], *y = &c->bufs[l->outs[0]];
  const dbuf *bias = l->nargs == 3 ? &c->bufs[l->args[2]] : NULL;
  int nsp = x->rank - 2, t = dnn_type(y->dtype), nd = nsp == 1 ? 4 : x->rank;
  if (nsp < 1 || nsp > 3 || w->rank != x->rank || y->rank != x->rank || t < 0 || x->dtype != y->dtype ||
      w->dtype != y->dtype || (bias && bias->dtype != y->dtype))
    return coil_gpu_run_fail(c, COIL_ERR_UNSUPPORTED, "%s: ranks %d, %d -> %d or dtypes cuDNN does not take", l->op, x->rank, w->rank,
                y->rank);
  int64_t stride[3], pad[3], dil[3], groups = 1, tr = 0;
  const coil_xparam *g = xparam(l, "groups"), *tp = xparam(l, "transposed");
  if (g)
    groups = g->i;
  if (tp)
    tr = tp->i;
  if (!xints(l, "stride", nsp, 1, stride) || !xints(l, "padding", nsp, 0, pad) || !xints(l, "dilation", nsp, 1, dil) ||
      groups < 1)
    return coil_gpu_run_fail(c, COIL_ERR_INVALID_ARGUMENT, "%s: stride, padding, dilation or groups malformed", l->op);
  for (int d = 0; d < x->rank; d++)
    if (x->sizes[d] > INT32_MAX / 2 || w->sizes[d] > INT32_MAX / 2 || y->sizes[d] > INT32_MAX / 2 ||
        numel(x) > INT32_MAX || numel(y) > INT32_MAX || numel(w) > INT32_MAX)
      return coil_gpu_run_fail(c, COIL_ERR_UNSUPPORTED, "%s: sizes beyond cuDNN's int", l->op);
  if (!numel(y))
    return NULL;
  size_t es = coil_dtype_size(y->dtype);
  float f1 = 1, f0 = 0;
  double d1 = 1, d0 = 0;
  const void *one = y->dtype == COIL_F64 ? (const void *)&d1 : (const void *)&f1;
  const void *zero = y->dtype == COIL_F64 ? (const void *)&d0 : (const void *)&f0;
  cudnnHandle_t h = art(c)->dnn_handle;
  cudnnStatus_t st = 0;
  if (!numel(x) || !numel(w)) { /* an empty sum: zeros, then the bias */
    CUresult r = art(c)->cu->MemsetD8Async(y->ptr, 0, (size_t)numel(y) * es, art(c)->stream);
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
    return st ? coil_gpu_run_fail(c, COIL_ERR_RUNTIME, "%s: cuDNN failed adding the bias", l->op) : NULL;
  }
  cuda_dnn_plan *pl = &art(c)->dnn_plans[c->line];
  int64_t key[64] = {0}, *k = key;
  *k++ = y->dtype, *k++ = x->rank, *k++ = bias != NULL;
  for (int d = 0; d < x->rank; d++)
    *k++ = x->sizes[d], *k++ = x->strides[d], *k++ = w->sizes[d], *k++ = w->strides[d], *k++ = y->sizes[d],
    *k++ = y->strides[d];
  if (!pl->valid || memcmp(pl->key, key, sizeof key)) {
    dnn_plan_drop(art(c), pl);
    if (!dnn_describe(dnn, pl, NCHW, t, x, w, y, bias != NULL, nsp, stride, pad, dil, groups)) {
      dnn_plan_drop(art(c), pl);
      return coil_gpu_run_fail(c, COIL_ERR_UNSUPPORTED, "%s: cuDNN refuses these sizes, strides or parameters", l->op);
    }
    memcpy(pl->key, key, sizeof key);
    pl->valid = true, pl->algo = -1;
  }
  coil_error *e = NULL;
  dnn_operands op;
  if (pl->algo < 0 || (!pl->timed && !art(c)->capturing)) {
    bool timed = !art(c)->capturing;
    int n = 0;
    st = dnn_prepare(c, pl, x, w, y, one, zero, &op, &e);
    cudnnStatus_t fs = e || st ? 0 : dnn_choose(c, pl, tr, &op, timed, &n);
    dnn_release(c, &op);
    if (!e && !st && pl->algo < 0)
      return coil_gpu_run_fail(c, COIL_ERR_UNSUPPORTED, "%s: cuDNN has no algorithm for it (%s)", l->op,
                  fs ? dnn->GetErrorString(fs) : n ? "none runs within the 32 MiB workspace" : "none");
    /* a 2-d forward convolution of f32/f16/bf16 is measured in NHWC too; the copies in and out
     * of that layout are charged at 1 TB/s */
    cuda_dnn_plan alt = {0};
    if (!e && !st && timed && !tr && nsp == 2 && groups == 1 && y->dtype != COIL_F64 &&
        !dnn_describe(dnn, &alt, NHWC, t, x, w, y, bias != NULL, nsp, stride, pad, dil, groups))
      dnn_plan_drop(art(c), &alt); /* cuDNN refuses NHWC here: NCHW it is */
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
      dnn_plan_drop(art(c), &alt);
  }
  if (!e && !st)
    st = dnn_prepare(c, pl, x, w, y, one, zero, &op, &e);
  void *ws = (void *)(uintptr_t)art(c)->blas_workspace;
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
  return st ? coil_gpu_run_fail(c, COIL_ERR_RUNTIME, "%s: cuDNN failed: %s", l->op, dnn->GetErrorString(st)) : NULL;
}

/* ---- the runtime the SDK's executor (coil/coil_gpu_run.h) runs the lines through ---- */

static int
rt_release(rctx *c, coil_gpu_ptr p)
{
  return (int)art(c)->cu->MemFreeAsync(p, art(c)->stream);
}

static int
rt_copy(rctx *c, coil_gpu_copy_kind kind, uintptr_t dst, uintptr_t src, size_t bytes)
{
  coil_artifact *a = art(c);
  switch (kind) {
  case COIL_GPU_TO_DEVICE: return (int)a->cu->MemcpyHtoDAsync(dst, (const void *)src, bytes, a->stream);
  case COIL_GPU_TO_HOST: return (int)a->cu->MemcpyDtoHAsync((void *)dst, src, bytes, a->stream);
  case COIL_GPU_ON_DEVICE: return (int)a->cu->MemcpyDtoDAsync(dst, src, bytes, a->stream);
  }
  return 1; /* CUDA_ERROR_INVALID_VALUE */
}

static int
rt_zero(rctx *c, coil_gpu_ptr p, size_t bytes)
{
  return (int)art(c)->cu->MemsetD8Async(p, 0, bytes, art(c)->stream);
}

static int
rt_sync(rctx *c)
{
  return (int)art(c)->cu->StreamSynchronize(art(c)->stream);
}

static int
rt_launch(rctx *c, int k, bool vec, unsigned blocks, unsigned threads, void **params)
{
  coil_artifact *a = art(c);
  CUfunction f = vec || !a->unaligned[k] ? a->functions[k] : a->unaligned[k];
  return (int)a->cu->LaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, a->stream, params, NULL);
}

static const char *
rt_error_string(rctx *c, int code)
{
  const char *s = NULL;
  art(c)->cu->GetErrorString((CUresult)code, &s);
  return s;
}

static coil_error *
rt_extern_call(rctx *c, const coil_line *l)
{
  if (l->op && (strcmp(l->op, "aten.mm.default") == 0 || strcmp(l->op, "aten.bmm.default") == 0 ||
                strcmp(l->op, "aten.bmm.dtype") == 0) && l->nargs == 2 && l->nouts == 1)
    return run_matmul(c, l);
  if (l->op && strcmp(l->op, "aten.convolution.default") == 0)
    return run_conv(c, l);
  if (l->op && strcmp(l->op, "coil.attention") == 0)
    return cuda_attention_run(c, l);
  return coil_gpu_run_fail(c, COIL_ERR_UNSUPPORTED, "library op %s is not supported by the cuda plugin yet", l->op);
}

static const coil_gpu_runtime cuda_runtime = {
    .name = "cuda", .device_type = COIL_DEVICE_CUDA, .dialect = &cuda_dialect, .alloc = rt_alloc,
    .release = rt_release, .copy = rt_copy, .zero = rt_zero, .sync = rt_sync, .launch = rt_launch,
    .error_string = rt_error_string, .extern_call = rt_extern_call,
};

/* Queues the program's lines on the artifact's stream (capturing or not); no synchronize. */
static coil_error *
run_lines(coil_artifact *a, const coil_plugin_run_args *args)
{
  return coil_gpu_run_program(&cuda_runtime, a, a->program, a->plans, a->oob, args);
}


/* ---- reduce-overhead: the run captured into a CUDA graph (coil/coil_gpu_run.h) ---- */

static coil_error *
graph_fail(coil_artifact *a, CUresult r, const char *call)
{
  const char *s = NULL;
  a->cu->GetErrorString(r, &s);
  return coil_sdk_error(COIL_ERR_RUNTIME, "cuda: %s: %s failed: %s (%d)", a->program->name, call, s ? s : "?", r);
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

static int
cap_static_alloc(void *user, size_t bytes, coil_gpu_ptr *out)
{
  CUdeviceptr p = 0;
  int r = (int)((coil_artifact *)user)->cu->MemAlloc(&p, bytes);
  *out = p;
  return r;
}

static void
cap_static_free(void *user, coil_gpu_ptr p)
{
  ((coil_artifact *)user)->cu->MemFree(p);
}

static int
cap_copy(void *user, coil_gpu_copy_kind kind, uintptr_t dst, uintptr_t src, size_t bytes)
{
  coil_gpu_run r = {.user = user};
  return rt_copy(&r, kind, dst, src, bytes);
}

/* Captured on the artifact's own stream whatever the run's (a caller's may be the legacy
 * default stream, which cannot capture); the graph is launched on the run's. */
static coil_error *
cap_begin(void *user)
{
  coil_artifact *a = user;
  a->run_stream = a->stream;
  a->stream = a->own_stream;
  coil_error *e = handles_on(a, a->stream);
  CUresult r = e ? 0 : a->cu->StreamBeginCapture(a->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  if (e || r) {
    a->stream = a->run_stream;
    return e ? e : graph_fail(a, r, "cuStreamBeginCapture");
  }
  a->capturing = true;
  return NULL;
}

static coil_error *
cap_run(void *user, const coil_plugin_run_args *args)
{
  return run_lines(user, args);
}

static coil_error *
cap_end(void *user, void **exec)
{
  coil_artifact *a = user;
  a->capturing = false;
  CUgraph graph = NULL;
  CUresult r = a->cu->StreamEndCapture(a->stream, &graph);
  a->stream = a->run_stream;
  coil_error *e = handles_on(a, a->stream);
  if (!e && r)
    e = graph_fail(a, r, "cuStreamEndCapture");
  CUgraphExec x = NULL;
  if (!e && exec && (r = a->cu->GraphInstantiate(&x, graph, 0)))
    e = graph_fail(a, r, "cuGraphInstantiateWithFlags");
  if (graph)
    a->cu->GraphDestroy(graph); /* an instantiated graph stands alone */
  if (exec)
    *exec = e ? NULL : x;
  return e;
}

static int
cap_launch(void *user, void *exec)
{
  coil_artifact *a = user;
  return (int)a->cu->GraphLaunch(exec, a->stream);
}

static void
cap_destroy(void *user, void *exec)
{
  ((coil_artifact *)user)->cu->GraphExecDestroy(exec);
}

static const char *
cap_error_string(void *user, int code)
{
  const char *s = NULL;
  ((coil_artifact *)user)->cu->GetErrorString((CUresult)code, &s);
  return s;
}

static const coil_gpu_capture cuda_capture = {
    .name = "cuda", .device_type = COIL_DEVICE_CUDA, .static_alloc = cap_static_alloc, .static_free = cap_static_free,
    .copy = cap_copy, .begin = cap_begin, .run = cap_run, .end = cap_end, .launch = cap_launch,
    .destroy = cap_destroy, .error_string = cap_error_string,
};

void
cuda_graph_free(coil_artifact *a)
{
  coil_gpu_graph_free(&cuda_capture, a, &a->graph);
}

static coil_error *
run_graph(coil_artifact *a, const coil_plugin_run_args *args, bool *refuse)
{
  return coil_gpu_graph_run(&cuda_capture, a, a->program, &a->graph, args, refuse);
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
    const coil_plugin_tensor *t = i < args->ninputs ? args->inputs[i] : args->outputs[i - args->ninputs];
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
  if (l->op && strcmp(l->op, "coil.attention") == 0)
    return cuda_attention_line_ok(p, l, why, n);
  if (l->op && strcmp(l->op, "aten.convolution.default") == 0 && l->nouts == 1 && (l->nargs == 2 || l->nargs == 3)) {
    coil_dtype t = p->buffers[l->outs[0]].dtype;
    if (!cuda_cudnn_get(NULL) || dnn_type(t) < 0) {
      snprintf(why, n, "%s on %s needs cuDNN 9 and a floating dtype", l->op, coil_dtype_name(t));
      return false;
    }
    return true;
  }
  bool widen = l->op && strcmp(l->op, "aten.bmm.dtype") == 0; /* f32 out of f16, bf16 or f32 operands */
  bool bmm = widen || (l->op && strcmp(l->op, "aten.bmm.default") == 0);
  if (!l->op || (!bmm && strcmp(l->op, "aten.mm.default") != 0) || l->nargs != 2 || l->nouts != 1) {
    snprintf(why, n, "library op %s is not supported yet", l->op ? l->op : "(none)");
    return false;
  }
  coil_dtype t = p->buffers[l->outs[0]].dtype, ta = p->buffers[l->args[0]].dtype;
  if (widen ? t != COIL_F32 || (ta != COIL_F32 && ta != COIL_F16 && ta != COIL_BF16)
            : t != COIL_F32 && t != COIL_F16 && t != COIL_BF16 && t != COIL_F64) {
    snprintf(why, n, "%s on %s (cuBLAS does floats)", l->op, coil_dtype_name(t));
    return false;
  }
  if (p->buffers[l->args[1]].dtype != ta || (!widen && ta != t)) {
    snprintf(why, n, "%s: operands of %s and %s to %s", l->op, coil_dtype_name(ta),
             coil_dtype_name(p->buffers[l->args[1]].dtype), coil_dtype_name(t));
    return false;
  }
  for (int i = 0; i < 2; i++)
    if (p->buffers[l->args[i]].rank != 2 + bmm || !blas_layout(&p->buffers[l->args[i]], bmm)) {
      snprintf(why, n, "%s: operand %s is strided in both matrix dims", l->op, p->buffers[l->args[i]].name);
      return false;
    }
  return true;
}
