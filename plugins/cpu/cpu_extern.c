/* cpu_extern.c — the cpu plugin's library calls (cpu_extern.h): the op table and the checks every
 * call shares, matmuls through OpenBLAS gemm, convolution as im2col + gemm per group (transposed:
 * gemm + col2im). Pooling, topk and indexing live in cpu_extern_index.c.
 *
 * Float operands reach BLAS without a copy when their dtype is the compute dtype (f32, or f64
 * when an operand is f64) and one of their two matrix dims has stride 1 (a transposed view is
 * passed with CblasTrans); anything else (f16/bf16, stride-0 rows, two non-unit strides) is first
 * gathered into a dense array of the compute dtype. Results land in the output directly when its
 * dtype is the compute dtype, else in a dense array rounded once into the output.
 *
 * Errors inside parallel loops are not reported from the loop: each loop finds the first failing
 * element (a min reduction) and the message is written after it, so it is deterministic. */
#include <cblas.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_extern_int.h"

int
cpux_err(xcall *x, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return coil_diag_set(x->d, "cpu: %s: %s", x->op, msg);
}

/* ---- tensors ---- */

int64_t
cpux_numel(const cpu_tensor *t)
{
  int64_t n = 1;
  for (int d = 0; d < t->rank; d++)
    n *= t->sizes[d];
  return n;
}

/* Storage offset of the element with row-major index i over the first `rank` dims of t. */
int64_t
cpux_offset_of(const cpu_tensor *t, int rank, int64_t i)
{
  int64_t off = 0;
  for (int d = rank - 1; d >= 0; d--) {
    int64_t s = t->sizes[d];
    off += (s ? i % s : 0) * t->strides[d];
    i = s ? i / s : 0;
  }
  return off;
}

void
cpux_unravel(int64_t i, int rank, const int64_t *sizes, int64_t *idx)
{
  for (int d = rank - 1; d >= 0; d--) {
    idx[d] = sizes[d] ? i % sizes[d] : 0;
    i = sizes[d] ? i / sizes[d] : 0;
  }
}

static bool
is_contiguous(const cpu_tensor *t)
{
  int64_t st = 1;
  for (int d = t->rank - 1; d >= 0; d--) {
    if (t->sizes[d] != 1 && t->strides[d] != st)
      return false;
    st *= t->sizes[d];
  }
  return true;
}

static void *
xalloc(xcall *x, int64_t n, coil_dtype t)
{
  void *p = malloc((size_t)n * coil_dtype_size(t) + 1);
  if (!p)
    cpux_err(x, "out of memory");
  return p;
}

/* Copies t, in row-major order, into the dense array dst of dtype ct. */
static void
densify(const cpu_tensor *t, coil_dtype ct, void *dst)
{
  int64_t n = cpux_numel(t), last = t->rank ? t->sizes[t->rank - 1] : 1;
  int64_t ls = t->rank ? t->strides[t->rank - 1] : 0, rows = last ? n / last : 0;
  size_t es = coil_dtype_size(ct);
#pragma omp parallel for if (n > PAR_MIN)
  for (int64_t r = 0; r < rows; r++) {
    int64_t off = cpux_offset_of(t, t->rank - 1, r);
    if (t->dtype == ct && ls == 1) {
      memcpy((char *)dst + (size_t)(r * last) * es, (const char *)t->data + (size_t)off * es,
             (size_t)last * es);
    } else {
      for (int64_t j = 0; j < last; j++)
        convert(dst, ct, r * last + j, t->data, t->dtype, off + j * ls);
    }
  }
}

/* t's data when it is already dense in dtype ct, else a dense copy in *own (free it). */
static const void *
dense_view(xcall *x, const cpu_tensor *t, coil_dtype ct, void **own)
{
  *own = NULL;
  if (t->dtype == ct && is_contiguous(t))
    return t->data;
  if (!(*own = xalloc(x, cpux_numel(t), ct)))
    return NULL;
  densify(t, ct, *own);
  return *own;
}

/* Rounds the dense array src of dtype ct into the contiguous output out. */
static void
undensify(const void *src, coil_dtype ct, const cpu_tensor *out)
{
  int64_t n = cpux_numel(out);
#pragma omp parallel for if (n > PAR_MIN)
  for (int64_t i = 0; i < n; i++)
    convert(out->data, out->dtype, i, src, ct, i);
}

/* ---- checks and scalar parameters ---- */

static void
fmt_sizes(char *s, size_t n, int rank, const int64_t *sizes)
{
  size_t at = (size_t)snprintf(s, n, "[");
  for (int d = 0; d < rank && at < n; d++)
    at += (size_t)snprintf(s + at, n - at, "%s%" PRId64, d ? ", " : "", sizes[d]);
  if (at < n)
    snprintf(s + at, n - at, "]");
}

int
cpux_want_out(xcall *x, int k, int rank, const int64_t *sizes)
{
  const cpu_tensor *o = &x->out[k];
  bool same = o->rank == rank;
  for (int d = 0; same && d < rank; d++)
    same = o->sizes[d] == sizes[d];
  if (!same) {
    char want[200], have[200];
    fmt_sizes(want, sizeof want, rank, sizes);
    fmt_sizes(have, sizeof have, o->rank, o->sizes);
    return cpux_err(x, "output %d should have sizes %s, it has %s", k, want, have);
  }
  return 0;
}

int
cpux_want_nin(xcall *x, int lo, int hi)
{
  if (x->nin < lo || x->nin > hi)
    return cpux_err(x, "takes %d to %d tensor arguments, got %d", lo, hi, x->nin);
  return 0;
}

const coil_xparam *
cpux_param(const xcall *x, const char *name)
{
  for (int i = 0; i < x->nxp; i++)
    if (x->xp[i].name && strcmp(x->xp[i].name, name) == 0)
      return x->xp[i].kind == COIL_XP_NONE ? NULL : &x->xp[i];
  return NULL;
}

/* An integer (or bool) parameter; absent gives dflt, or an error when required. */
int
cpux_get_int(xcall *x, const char *name, bool required, int64_t dflt, int64_t *out)
{
  const coil_xparam *p = cpux_param(x, name);
  if (!p && required)
    return cpux_err(x, "missing parameter %s", name);
  if (p && p->kind != COIL_XP_INT && p->kind != COIL_XP_BOOL)
    return cpux_err(x, "parameter %s should be an integer", name);
  *out = p ? p->i : dflt;
  return 0;
}

int
cpux_get_num(xcall *x, const char *name, double dflt, double *out)
{
  const coil_xparam *p = cpux_param(x, name);
  if (p && p->kind != COIL_XP_INT && p->kind != COIL_XP_BOOL && p->kind != COIL_XP_FLOAT)
    return cpux_err(x, "parameter %s should be a number", name);
  *out = !p ? dflt : p->kind == COIL_XP_FLOAT ? p->f : (double)p->i;
  return 0;
}

/* n integers: a list of n, or of 1 (or one integer) repeated; absent or [] gives dflt each,
 * with *given false. */
int
cpux_get_ints(xcall *x, const char *name, int n, int64_t dflt, int64_t *out, bool *given)
{
  const coil_xparam *p = cpux_param(x, name);
  *given = p && !(p->kind == COIL_XP_INTS && p->n == 0);
  for (int i = 0; i < n; i++)
    out[i] = dflt;
  if (!*given)
    return 0;
  if (p->kind == COIL_XP_INT)
    for (int i = 0; i < n; i++)
      out[i] = p->i;
  else if (p->kind == COIL_XP_INTS && (p->n == 1 || p->n == n))
    for (int i = 0; i < n; i++)
      out[i] = p->ints[p->n == 1 ? 0 : i];
  else
    return cpux_err(x, "parameter %s should be %d integers", name, n);
  return 0;
}

int
cpux_wrap_dim(xcall *x, int64_t d, int rank, int *out)
{
  int r = rank > 0 ? rank : 1;
  if (d < -r || d >= r)
    return cpux_err(x, "dimension %" PRId64 " is out of range for rank %d", d, rank);
  *out = (int)(d < 0 ? d + r : d);
  return 0;
}

int
cpux_want_index_dtype(xcall *x, const cpu_tensor *t)
{
  if (!coil_dtype_is_int(t->dtype))
    return cpux_err(x, "indices must be an integer tensor, got %s%s", coil_dtype_name(t->dtype),
                    t->dtype == COIL_BOOL ? " (boolean masks are not supported)" : "");
  return 0;
}

/* ---- matmul: mm, bmm, addmm ---- */

/* One operand of gemm: a matrix (or a batch of them) as BLAS reads it. */
typedef struct mat {
  const void *p;   /* element [0, 0] of batch 0 */
  int64_t bstride; /* elements from one batch to the next (0: broadcast) */
  enum CBLAS_TRANSPOSE tr;
  int64_t ld;
  void *own; /* a dense copy of the operand, or NULL */
} mat;

/* Prepares t (rank 2, or 3 with the batch first) for gemm in dtype ct. */
static int
prep_mat(xcall *x, const cpu_tensor *t, coil_dtype ct, mat *m)
{
  int o = t->rank - 2;
  int64_t R = t->sizes[o], C = t->sizes[o + 1], sr = t->strides[o], sc = t->strides[o + 1];
  int64_t r1 = R > 1 ? R : 1, c1 = C > 1 ? C : 1;
  *m = (mat){.p = t->data, .bstride = o && t->sizes[0] > 1 ? t->strides[0] : 0};
  if (t->dtype == ct && (sc == 1 || C <= 1) && (R <= 1 || sr >= c1)) {
    m->tr = CblasNoTrans; /* rows of stride ld */
    m->ld = R <= 1 ? c1 : sr;
  } else if (t->dtype == ct && (sr == 1 || R <= 1) && (C <= 1 || sc >= r1)) {
    m->tr = CblasTrans; /* a transposed view: columns of stride ld */
    m->ld = C <= 1 ? r1 : sc;
  } else {
    if (!(m->own = xalloc(x, cpux_numel(t), ct)))
      return -1;
    densify(t, ct, m->own);
    *m = (mat){.p = m->own,
               .own = m->own,
               .tr = CblasNoTrans,
               .ld = c1,
               .bstride = o && t->sizes[0] > 1 ? R * C : 0};
  }
  if (m->ld > INT_MAX)
    return cpux_err(x, "a leading dimension of %" PRId64 " is too large for BLAS", m->ld);
  return 0;
}

/* ---- OpenBLAS, loaded on first use ----
 * The plugin does not link OpenBLAS: loading it starts a pool of threads that each map a large
 * buffer, and under a memory limit (ulimit -v) a worker retries that mapping for ever while
 * OpenBLAS's exit handler waits for it, so the process never exits. Loading it when the first
 * matmul or convolution runs keeps compiling (and graphs without them) free of it; under a
 * finite address-space limit it gets one thread unless the user set OPENBLAS_NUM_THREADS. */
typedef void (*sgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, int, int, int,
                         float, const float *, int, const float *, int, float, float *, int);
typedef void (*dgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, int, int, int,
                         double, const double *, int, const double *, int, double, double *, int);
static struct {
  pthread_once_t once;
  sgemm_fn sgemm;
  dgemm_fn dgemm;
  char error[512];
  atomic_bool ran;           /* a gemm has returned */
} blas = {PTHREAD_ONCE_INIT, NULL, NULL, {0}, false};

static void
load_blas(void)
{
  struct rlimit lim;
  if (!getenv("OPENBLAS_NUM_THREADS") && getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
    setenv("OPENBLAS_NUM_THREADS", "1", 0);
  static const char *const names[] = {"libopenblas.so.0", "libopenblas.so"};
  void *h = NULL;
  for (size_t i = 0; i < sizeof names / sizeof *names && !h; i++)
    h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(blas.error, sizeof blas.error, "cannot load OpenBLAS (libopenblas.so.0): %s", e ? e : "not found");
    return;
  }
  blas.sgemm = (sgemm_fn)dlsym(h, "cblas_sgemm");
  blas.dgemm = (dgemm_fn)dlsym(h, "cblas_dgemm");
  if (!blas.sgemm || !blas.dgemm)
    snprintf(blas.error, sizeof blas.error, "%s", "OpenBLAS has no cblas_sgemm or cblas_dgemm");
}

/* OpenBLAS maps a work buffer of up to 128 MiB per thread and, when that fails, retries for
 * ever; under a finite address-space limit, room for it is checked first. */
#define BLAS_BUFFER_BYTES ((size_t)129 << 20)

/* Loads OpenBLAS once; an error names what is missing or why it cannot run. */
static int
need_blas(xcall *x)
{
  pthread_once(&blas.once, load_blas);
  if (blas.error[0])
    return cpux_err(x, "%s", blas.error);
  struct rlimit lim; /* once a gemm has run, its one buffer is mapped and kept */
  if (!atomic_load(&blas.ran) && getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    void *probe = malloc(BLAS_BUFFER_BYTES);
    if (!probe)
      return cpux_err(x, "not enough memory for OpenBLAS's work buffer (%zu MiB) under the address-space "
                         "limit of %llu MiB (ulimit -v)",
                      BLAS_BUFFER_BYTES >> 20, (unsigned long long)(lim.rlim_cur >> 20));
    free(probe);
  }
  return 0;
}

/* C[M, N] (row stride ldc) = alpha * A B + beta * C, in dtype ct (f32 or f64). need_blas first. */
static void
gemm(coil_dtype ct, const void *a, enum CBLAS_TRANSPOSE ta, int64_t lda, const void *b,
     enum CBLAS_TRANSPOSE tb, int64_t ldb, void *c, int64_t ldc, int64_t M, int64_t N, int64_t K,
     double alpha, double beta)
{
  if (M == 0 || N == 0)
    return;
  if (K == 0) { /* BLAS may not scale C then */
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++)
        store_f(c, ct, i * ldc + j, beta == 0 ? 0 : beta * load_f(c, ct, i * ldc + j));
    return;
  }
  if (ct == COIL_F64)
    blas.dgemm(CblasRowMajor, ta, tb, (int)M, (int)N, (int)K, alpha, a, (int)lda, b, (int)ldb,
               beta, c, (int)ldc);
  else
    blas.sgemm(CblasRowMajor, ta, tb, (int)M, (int)N, (int)K, (float)alpha, a, (int)lda, b,
               (int)ldb, (float)beta, c, (int)ldc);
  atomic_store(&blas.ran, true);
}

static int
fits_blas(xcall *x, int64_t a, int64_t b, int64_t c)
{
  if (a > INT_MAX || b > INT_MAX || c > INT_MAX)
    return cpux_err(x, "sizes %" PRId64 ", %" PRId64 ", %" PRId64 " are too large for BLAS", a, b,
                    c);
  return 0;
}

enum { MM, BMM, ADDMM };

/* Integer matmul: exact int64 accumulation that wraps (as torch), then wrapped to the output. */
static int
matmul_int(xcall *x, const cpu_tensor *a, const cpu_tensor *b, const cpu_tensor *bias,
           const int64_t *bst, int64_t batch, int64_t M, int64_t K, int64_t N)
{
  double fa = 1, fb = 1;
  if (bias && (cpux_get_num(x, "alpha", 1, &fa) || cpux_get_num(x, "beta", 1, &fb)))
    return -1;
  if (fa != trunc(fa) || fb != trunc(fb))
    return cpux_err(x, "alpha and beta must be integers for integer tensors");
  uint64_t alpha = (uint64_t)(int64_t)fa, beta = (uint64_t)(int64_t)fb;
  const cpu_tensor *out = &x->out[0];
  int o = a->rank - 2;
  int64_t abs = o ? a->strides[0] : 0, bbs = o ? b->strides[0] : 0;
#pragma omp parallel for if (batch * M * N * K > PAR_MIN)
  for (int64_t r = 0; r < batch * M; r++) {
    int64_t p = r / M, i = r % M;
    for (int64_t j = 0; j < N; j++) {
      uint64_t s = 0;
      for (int64_t k = 0; k < K; k++)
        s += (uint64_t)load_i(a->data, a->dtype,
                              p * abs + i * a->strides[o] + k * a->strides[o + 1]) *
             (uint64_t)load_i(b->data, b->dtype,
                              p * bbs + k * b->strides[o] + j * b->strides[o + 1]);
      if (bias)
        s = alpha * s +
            (beta ? beta * (uint64_t)load_i(bias->data, bias->dtype, i * bst[0] + j * bst[1]) : 0);
      store_i(out->data, out->dtype, r * N + j, (int64_t)s);
    }
  }
  return 0;
}

static int
run_matmul(xcall *x, int kind)
{
  if (cpux_want_nin(x, kind == ADDMM ? 3 : 2, kind == ADDMM ? 3 : 2) || need_blas(x))
    return -1;
  const cpu_tensor *a = &x->in[kind == ADDMM], *b = &x->in[kind == ADDMM ? 2 : 1];
  const cpu_tensor *bias = kind == ADDMM ? &x->in[0] : NULL, *out = &x->out[0];
  int rk = kind == BMM ? 3 : 2, o = kind == BMM;
  if (a->rank != rk || b->rank != rk || a->sizes[o + 1] != b->sizes[o] ||
      (o && a->sizes[0] != b->sizes[0]))
    return cpux_err(x, "operands of rank %d and %d do not multiply", a->rank, b->rank);
  int64_t batch = o ? a->sizes[0] : 1, M = a->sizes[o], K = a->sizes[o + 1], N = b->sizes[o + 1];
  int64_t osz[3] = {batch, M, N}, bst[2] = {0, 0};
  if (cpux_want_out(x, 0, rk, osz + (o ? 0 : 1)))
    return -1;
  if (bias) {
    if (bias->rank > 2)
      return cpux_err(x, "the bias has rank %d", bias->rank);
    for (int j = bias->rank - 1; j >= 0; j--) { /* broadcast strides against [M, N] */
      int d = j + 2 - bias->rank;
      if (bias->sizes[j] != 1 && bias->sizes[j] != osz[1 + d])
        return cpux_err(x, "a bias of size %" PRId64 " does not broadcast to %" PRId64,
                        bias->sizes[j], osz[1 + d]);
      bst[d] = bias->sizes[j] == 1 ? 0 : bias->strides[j];
    }
  }
  bool fl = coil_dtype_is_float(a->dtype) && coil_dtype_is_float(b->dtype) &&
            coil_dtype_is_float(out->dtype) && (!bias || coil_dtype_is_float(bias->dtype));
  bool in = coil_dtype_is_int(a->dtype) && coil_dtype_is_int(b->dtype) &&
            coil_dtype_is_int(out->dtype) && (!bias || coil_dtype_is_int(bias->dtype));
  if (!fl && !in)
    return cpux_err(x, "unsupported dtypes %s @ %s -> %s", coil_dtype_name(a->dtype),
                    coil_dtype_name(b->dtype), coil_dtype_name(out->dtype));
  if (in)
    return matmul_int(x, a, b, bias, bst, batch, M, K, N);
  if (batch * M * N == 0) /* nothing to write (and an empty output has no data pointer) */
    return 0;
  if (fits_blas(x, M, N, K))
    return -1;
  double alpha = 1, beta = 1;
  if (bias && (cpux_get_num(x, "alpha", 1, &alpha) || cpux_get_num(x, "beta", 1, &beta)))
    return -1;
  coil_dtype ct =
      a->dtype == COIL_F64 || b->dtype == COIL_F64 || out->dtype == COIL_F64 ? COIL_F64 : COIL_F32;
  mat ma = {0}, mb = {0};
  void *tmp = NULL;
  int rc = -1;
  if (prep_mat(x, a, ct, &ma) || prep_mat(x, b, ct, &mb))
    goto done;
  void *c = out->dtype == ct ? out->data : (tmp = xalloc(x, batch * M * N, ct));
  if (!c)
    goto done;
  /* C starts as beta * bias (beta = 0 ignores the bias, NaN included, as torch documents) */
  int64_t n = batch * M * N;
#pragma omp parallel for if (n > PAR_MIN)
  for (int64_t i = 0; i < n; i++)
    store_f(c, ct, i,
            bias && beta != 0
                ? beta * load_f(bias->data, bias->dtype, (i / N % M) * bst[0] + i % N * bst[1])
                : 0.0);
  size_t es = coil_dtype_size(ct);
  for (int64_t p = 0; p < batch; p++)
    gemm(ct, (const char *)ma.p + (size_t)(p * ma.bstride) * es, ma.tr, ma.ld,
         (const char *)mb.p + (size_t)(p * mb.bstride) * es, mb.tr, mb.ld,
         (char *)c + (size_t)(p * M * N) * es, N, M, N, K, alpha, 1.0);
  if (tmp)
    undensify(tmp, ct, out);
  rc = 0;
done:
  free(ma.own);
  free(mb.own);
  free(tmp);
  return rc;
}

/* ---- convolution: im2col + gemm per group, 1 to 3 spatial dims ---- */

/* The spatial geometry, padded to 3 dims with leading 1s (stride 1, no padding). */
typedef struct geo {
  int64_t i[3], o[3], k[3]; /* input, output and kernel sizes */
  int64_t s[3], p[3], d[3]; /* stride, padding, dilation */
  int64_t isp, osp, ksz;    /* their products */
} geo;

static inline void
put(void *a, bool dbl, int64_t i, double v)
{
  if (dbl)
    ((double *)a)[i] = v;
  else
    ((float *)a)[i] = (float)v;
}

static inline double
get(const void *a, bool dbl, int64_t i)
{
  return dbl ? ((const double *)a)[i] : ((const float *)a)[i];
}

/* Row r = (c, k) of the column matrix: col[r, out position] = x[c, out * stride - pad +
 * k * dilation], 0 outside x. Inlined into callers that pass a constant dbl, so each dtype gets
 * its own loop. */
ALWAYS_INLINE static inline void
im2col_row(const void *xg, const geo *g, void *col, int64_t r, bool dbl)
{
  int64_t c = r / g->ksz, k = r % g->ksz, at = r * g->osp;
  int64_t kd = k / (g->k[1] * g->k[2]), kh = k / g->k[2] % g->k[1], kw = k % g->k[2];
  for (int64_t od = 0; od < g->o[0]; od++) {
    int64_t id = od * g->s[0] - g->p[0] + kd * g->d[0];
    for (int64_t oh = 0; oh < g->o[1]; oh++) {
      int64_t ih = oh * g->s[1] - g->p[1] + kh * g->d[1];
      bool ok = id >= 0 && id < g->i[0] && ih >= 0 && ih < g->i[1];
      int64_t row = c * g->isp + (id * g->i[1] + ih) * g->i[2];
      for (int64_t ow = 0; ow < g->o[2]; ow++, at++) {
        int64_t iw = ow * g->s[2] - g->p[2] + kw * g->d[2];
        put(col, dbl, at, ok && iw >= 0 && iw < g->i[2] ? get(xg, dbl, row + iw) : 0.0);
      }
    }
  }
}

static void
im2col(const void *xg, int64_t ch, const geo *g, void *col, bool dbl)
{
#pragma omp parallel for if (ch * g->ksz * g->osp > PAR_MIN)
  for (int64_t r = 0; r < ch * g->ksz; r++) {
    if (dbl)
      im2col_row(xg, g, col, r, true);
    else
      im2col_row(xg, g, col, r, false);
  }
}

/* Transposed, output channel oc: out[oc, in * stride - pad + k * dilation] += col[(oc, k), in
 * position]. */
ALWAYS_INLINE static inline void
col2im_channel(const void *col, const geo *g, void *og, int64_t oc, bool dbl)
{
  for (int64_t k = 0; k < g->ksz; k++) {
    int64_t kd = k / (g->k[1] * g->k[2]), kh = k / g->k[2] % g->k[1], kw = k % g->k[2];
    int64_t at = (oc * g->ksz + k) * g->isp;
    for (int64_t id = 0; id < g->i[0]; id++) {
      int64_t od = id * g->s[0] - g->p[0] + kd * g->d[0];
      for (int64_t ih = 0; ih < g->i[1]; ih++) {
        int64_t oh = ih * g->s[1] - g->p[1] + kh * g->d[1];
        bool ok = od >= 0 && od < g->o[0] && oh >= 0 && oh < g->o[1];
        int64_t row = oc * g->osp + (od * g->o[1] + oh) * g->o[2];
        for (int64_t iw = 0; iw < g->i[2]; iw++, at++) {
          int64_t ow = iw * g->s[2] - g->p[2] + kw * g->d[2];
          if (ok && ow >= 0 && ow < g->o[2])
            put(og, dbl, row + ow, get(og, dbl, row + ow) + get(col, dbl, at));
        }
      }
    }
  }
}

/* One thread per output channel, so no two threads write one element. */
static void
col2im(const void *col, int64_t ch, const geo *g, void *og, bool dbl)
{
#pragma omp parallel for if (ch * g->ksz * g->isp > PAR_MIN)
  for (int64_t oc = 0; oc < ch; oc++) {
    if (dbl)
      col2im_channel(col, g, og, oc, true);
    else
      col2im_channel(col, g, og, oc, false);
  }
}

static int
run_conv(xcall *x)
{
  if (cpux_want_nin(x, 2, 3) || need_blas(x))
    return -1;
  const cpu_tensor *in = &x->in[0], *w = &x->in[1], *bias = x->nin == 3 ? &x->in[2] : NULL;
  const cpu_tensor *out = &x->out[0];
  int nsp = in->rank - 2;
  if (nsp < 1 || nsp > 3 || w->rank != in->rank || out->rank != in->rank)
    return cpux_err(x, "input, weight and output have ranks %d, %d, %d", in->rank, w->rank,
                    out->rank);
  if (!coil_dtype_is_float(in->dtype) || !coil_dtype_is_float(w->dtype) ||
      !coil_dtype_is_float(out->dtype) || (bias && !coil_dtype_is_float(bias->dtype)))
    return cpux_err(x, "unsupported dtypes %s, %s -> %s (floating types only)",
                    coil_dtype_name(in->dtype), coil_dtype_name(w->dtype),
                    coil_dtype_name(out->dtype));
  int64_t stride[3], pad[3], dil[3], groups, tr;
  bool given;
  if (cpux_get_ints(x, "stride", nsp, 1, stride, &given) ||
      cpux_get_ints(x, "padding", nsp, 0, pad, &given) ||
      cpux_get_ints(x, "dilation", nsp, 1, dil, &given) ||
      cpux_get_int(x, "groups", false, 1, &groups) || cpux_get_int(x, "transposed", false, 0, &tr))
    return -1;
  int64_t N = in->sizes[0], C = in->sizes[1], O = out->sizes[1];
  if (groups < 1 || C % groups || O % groups)
    return cpux_err(
        x, "%" PRId64 " groups do not divide %" PRId64 " input and %" PRId64 " output channels",
        groups, C, O);
  int64_t cpg = C / groups, opg = O / groups; /* channels per group, in and out */
  bool wok = tr ? w->sizes[0] == C && w->sizes[1] == opg : w->sizes[0] == O && w->sizes[1] == cpg;
  if (!wok || out->sizes[0] != N)
    return cpux_err(x, "weight, input and output shapes disagree");
  if (bias && cpux_numel(bias) != O)
    return cpux_err(x, "a bias of %" PRId64 " elements for %" PRId64 " channels", cpux_numel(bias),
                    O);
  geo g = {.isp = 1, .osp = 1, .ksz = 1};
  for (int q = 0; q < 3; q++) {
    int sq = q - (3 - nsp); /* the spatial dim this is, or < 0 for a padding dim */
    g.i[q] = sq < 0 ? 1 : in->sizes[2 + sq];
    g.o[q] = sq < 0 ? 1 : out->sizes[2 + sq];
    g.k[q] = sq < 0 ? 1 : w->sizes[2 + sq];
    g.s[q] = sq < 0 ? 1 : stride[sq];
    g.p[q] = sq < 0 ? 0 : pad[sq];
    g.d[q] = sq < 0 ? 1 : dil[sq];
    if (g.s[q] < 1 || g.d[q] < 1 || g.p[q] < 0)
      return cpux_err(x, "stride and dilation must be positive and padding non-negative");
    g.isp *= g.i[q], g.osp *= g.o[q], g.ksz *= g.k[q];
  }
  coil_dtype ct =
      in->dtype == COIL_F64 || w->dtype == COIL_F64 || out->dtype == COIL_F64 ? COIL_F64 : COIL_F32;
  bool dbl = ct == COIL_F64;
  size_t es = coil_dtype_size(ct);
  int64_t rows = tr ? opg * g.ksz : cpg * g.ksz; /* of the column matrix */
  if (fits_blas(x, rows, tr ? g.isp : g.osp, tr ? cpg : opg))
    return -1;
  void *xown = NULL, *wown = NULL, *tmp = NULL, *col = NULL;
  int rc = -1;
  const void *xc = dense_view(x, in, ct, &xown), *wc = xc ? dense_view(x, w, ct, &wown) : NULL;
  void *acc = !wc ? NULL : out->dtype == ct ? out->data : (tmp = xalloc(x, cpux_numel(out), ct));
  if (!acc)
    goto done;
  int64_t n_out = cpux_numel(out);
#pragma omp parallel for if (n_out > PAR_MIN)
  for (int64_t i = 0; i < n_out; i++) /* the accumulator starts as the bias */
    put(acc, dbl, i,
        bias ? load_f(bias->data, bias->dtype, cpux_offset_of(bias, bias->rank, i / g.osp % O))
             : 0.0);
  /* a 1x1 convolution with stride 1 and no padding reads the input as its own column matrix */
  bool direct = !tr && g.ksz == 1 && g.isp == g.osp;
  for (int q = 0; q < 3; q++)
    direct = direct && g.s[q] == 1 && g.p[q] == 0 && g.i[q] == g.o[q];
  if (!direct && !(col = xalloc(x, rows * (tr ? g.isp : g.osp), ct)))
    goto done;
  for (int64_t n = 0; n < N; n++)
    for (int64_t gi = 0; gi < groups; gi++) {
      const char *xg = (const char *)xc + (size_t)((n * C + gi * cpg) * g.isp) * es;
      char *og = (char *)acc + (size_t)((n * O + gi * opg) * g.osp) * es;
      if (!tr) { /* out[opg, osp] += W_g[opg, cpg * ksz] @ col[cpg * ksz, osp] */
        if (!direct)
          im2col(xg, cpg, &g, col, dbl);
        gemm(ct, (const char *)wc + (size_t)(gi * opg * rows) * es, CblasNoTrans, rows,
             direct ? xg : col, CblasNoTrans, g.osp, og, g.osp, opg, g.osp, rows, 1.0, 1.0);
      } else { /* col[opg * ksz, isp] = W_g[cpg, opg * ksz]^T @ x_g[cpg, isp], then scatter */
        gemm(ct, (const char *)wc + (size_t)(gi * cpg * rows) * es, CblasTrans, rows, xg,
             CblasNoTrans, g.isp, col, g.isp, rows, g.isp, cpg, 1.0, 0.0);
        col2im(col, opg, &g, og, dbl);
      }
    }
  if (tmp)
    undensify(tmp, ct, out);
  rc = 0;
done:
  free(xown);
  free(wown);
  free(tmp);
  free(col);
  return rc;
}

/* ---- the table ---- */

typedef enum xop {
  X_MM,
  X_BMM,
  X_ADDMM,
  X_CONV,
  X_MAXPOOL,
  X_AVGPOOL,
  X_TOPK,
  X_GATHER,
  X_EMBEDDING,
  X_INDEX,
} xop;

static const struct {
  const char *name;
  xop op;
  int nouts;
} ops[] = {
    {"aten.mm.default", X_MM, 1},
    {"aten.bmm.default", X_BMM, 1},
    {"aten.addmm.default", X_ADDMM, 1},
    {"aten.convolution.default", X_CONV, 1},
    {"aten.max_pool2d_with_indices.default", X_MAXPOOL, 2},
    {"aten.avg_pool2d.default", X_AVGPOOL, 1},
    {"aten.topk.default", X_TOPK, 2},
    {"aten.gather.default", X_GATHER, 1},
    {"aten.embedding.default", X_EMBEDDING, 1},
    {"aten.index.Tensor", X_INDEX, 1},
};

static int
find_op(const char *op)
{
  for (size_t i = 0; op && i < sizeof ops / sizeof ops[0]; i++)
    if (strcmp(ops[i].name, op) == 0)
      return (int)i;
  return -1;
}

int
cpu_extern_nouts(const char *op)
{
  int i = find_op(op);
  return i < 0 ? 0 : ops[i].nouts;
}

static int
dispatch(xcall *x, xop op)
{
  switch (op) {
  case X_MM: return run_matmul(x, MM);
  case X_BMM: return run_matmul(x, BMM);
  case X_ADDMM: return run_matmul(x, ADDMM);
  case X_CONV: return run_conv(x);
  case X_MAXPOOL: return cpux_pool(x, true);
  case X_AVGPOOL: return cpux_pool(x, false);
  case X_TOPK: return cpux_topk(x);
  case X_GATHER: return cpux_gather(x);
  case X_EMBEDDING: return cpux_embedding(x);
  case X_INDEX: return cpux_index(x);
  }
  return cpux_err(x, "internal: no implementation");
}

/* Checks what every op shares: counts, ranks, dtypes and contiguous outputs. */
static int
check_call(xcall *x, int nouts)
{
  if (x->nout != nouts)
    return cpux_err(x, "has %d outputs, got %d", nouts, x->nout);
  if (x->nin < 0 || (x->nin && !x->in) || (x->nxp && !x->xp))
    return cpux_err(x, "NULL inputs or parameters");
  for (int i = 0; i < x->nin + x->nout; i++) {
    const cpu_tensor *t = i < x->nin ? &x->in[i] : &x->out[i - x->nin];
    const char *what = i < x->nin ? "input" : "output";
    int k = i < x->nin ? i : i - x->nin;
    if (t->rank < 0 || t->rank > COIL_MAX_RANK || (int)t->dtype < 0 || t->dtype >= COIL_DTYPE_COUNT)
      return cpux_err(x, "%s %d has rank %d and dtype %d", what, k, t->rank, (int)t->dtype);
    for (int d = 0; d < t->rank; d++)
      if (t->sizes[d] < 0)
        return cpux_err(x, "%s %d has a negative size", what, k);
    if (!t->data && cpux_numel(t))
      return cpux_err(x, "%s %d has no data", what, k);
    if (i >= x->nin && !is_contiguous(t))
      return cpux_err(x, "output %d is not contiguous", k);
  }
  return 0;
}

int
cpu_extern_run(const char *op, const cpu_tensor *ins, int nins, const cpu_tensor *outs, int nouts,
               const coil_xparam *xp, int nxp, coil_diag *d)
{
  xcall x = {.op = op ? op : "(null)",
             .in = ins,
             .out = outs,
             .nin = nins,
             .nout = nouts,
             .xp = xp,
             .nxp = nxp,
             .d = d};
  int i = find_op(op);
  if (i < 0)
    return cpux_err(&x, "extern op is not supported by the cpu plugin");
  if (nouts < 0 || (nouts && !outs))
    return cpux_err(&x, "NULL outputs");
  if (check_call(&x, ops[i].nouts))
    return -1;
  return dispatch(&x, ops[i].op);
}
