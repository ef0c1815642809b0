/* test_cpu_extern.c — the cpu plugin's library calls (cpu_extern.h): every op against
 * hand-computed values on tiny inputs, then randomized comparisons against naive f64 loops
 * written here (matmuls, convolution) on contiguous, transposed, strided and broadcast views,
 * f16/bf16 operands, groups, dilation and transposed convolution; pooling with padding, dilation
 * and ceil_mode; topk order with ties and NaN; indexing with None positions; strided inputs giving
 * the same results as contiguous ones; two threads at once; and the error messages. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_extern.h"

#define MAXBUF 4096

static void *bufs[MAXBUF];
static int nbufs;
static coil_diag diag;
static uint64_t rng;

static void
setup(void)
{
  nbufs = 0;
  rng = 0x9e3779b97f4a7c15ull;
  memset(&diag, 0, sizeof diag);
}

static void
teardown(void)
{
  for (int i = 0; i < nbufs; i++)
    free(bufs[i]);
}

TestSuite(cpu, .init = setup, .fini = teardown);

/* ---- tensors ---- */

static void *
mem(size_t n)
{
  cr_assert(nbufs < MAXBUF);
  return bufs[nbufs++] = calloc(n + 1, 1);
}

/* A contiguous tensor of the given sizes (rank = number of sizes). */
static cpu_tensor
T(coil_dtype t, int rank, ...)
{
  cpu_tensor x = {.dtype = t, .rank = rank};
  va_list ap;
  va_start(ap, rank);
  int64_t n = 1;
  for (int d = 0; d < rank; d++)
    n *= x.sizes[d] = va_arg(ap, int);
  va_end(ap);
  for (int d = rank - 1, st = 1; d >= 0; d--) {
    x.strides[d] = st;
    st *= (int)x.sizes[d];
  }
  x.data = mem((size_t)n * coil_dtype_size(t));
  return x;
}

static int64_t
numel(const cpu_tensor *t)
{
  int64_t n = 1;
  for (int d = 0; d < t->rank; d++)
    n *= t->sizes[d];
  return n;
}

/* Storage offset of row-major element i. */
static int64_t
off(const cpu_tensor *t, int64_t i)
{
  int64_t o = 0;
  for (int d = t->rank - 1; d >= 0; d--) {
    o += (i % t->sizes[d]) * t->strides[d];
    i /= t->sizes[d];
  }
  return o;
}

static double
get(const cpu_tensor *t, int64_t i)
{
  int64_t o = off(t, i);
  switch (t->dtype) {
  case COIL_F64: return ((double *)t->data)[o];
  case COIL_F32: return ((float *)t->data)[o];
  case COIL_F16: return coil_f16_to_f32(((uint16_t *)t->data)[o]);
  case COIL_BF16: return coil_bf16_to_f32(((uint16_t *)t->data)[o]);
  case COIL_I64: return (double)((int64_t *)t->data)[o];
  case COIL_I32: return ((int32_t *)t->data)[o];
  default: return ((uint8_t *)t->data)[o];
  }
}

static void
set(const cpu_tensor *t, int64_t i, double v)
{
  int64_t o = off(t, i);
  switch (t->dtype) {
  case COIL_F64: ((double *)t->data)[o] = v; break;
  case COIL_F32: ((float *)t->data)[o] = (float)v; break;
  case COIL_F16: ((uint16_t *)t->data)[o] = coil_f32_to_f16((float)v); break;
  case COIL_BF16: ((uint16_t *)t->data)[o] = coil_f32_to_bf16((float)v); break;
  case COIL_I64: ((int64_t *)t->data)[o] = (int64_t)v; break;
  case COIL_I32: ((int32_t *)t->data)[o] = (int32_t)v; break;
  default: ((uint8_t *)t->data)[o] = (uint8_t)v; break;
  }
}

/* dst's element i = src's element i, bit for bit (same dtype). */
static void
copy_elem(const cpu_tensor *dst, const cpu_tensor *src, int64_t i)
{
  size_t es = coil_dtype_size(src->dtype);
  memcpy((char *)dst->data + (size_t)off(dst, i) * es,
         (const char *)src->data + (size_t)off(src, i) * es, es);
}

static void
fill(const cpu_tensor *t, const double *v)
{
  for (int64_t i = 0; i < numel(t); i++)
    set(t, i, v[i]);
}

static void
iota(const cpu_tensor *t)
{
  for (int64_t i = 0; i < numel(t); i++)
    set(t, i, (double)i);
}

static double
urand(void)
{
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0 * 2 - 1;
}

static void
randomize(const cpu_tensor *t)
{
  for (int64_t i = 0; i < numel(t); i++)
    set(t, i, urand());
}

/* The same sizes as t, but each dim's stride doubled inside a storage twice as large per dim
 * (a strided view that BLAS cannot read). Copies t's values. */
static cpu_tensor
spread(const cpu_tensor *t)
{
  cpu_tensor v = *t;
  int64_t n = 1;
  for (int d = v.rank - 1; d >= 0; d--) {
    v.strides[d] = 2 * n;
    n *= 2 * v.sizes[d];
  }
  v.data = mem((size_t)n * coil_dtype_size(t->dtype));
  for (int64_t i = 0; i < numel(t); i++)
    copy_elem(&v, t, i);
  return v;
}

/* t's values in a storage laid out with dims a and b swapped: a view with t's sizes whose
 * strides of a and b are swapped (stride pattern [1, ld] for a matrix). */
static cpu_tensor
transposed(const cpu_tensor *t, int a, int b)
{
  int64_t sizes[COIL_MAX_RANK], st[COIL_MAX_RANK], n = 1;
  memcpy(sizes, t->sizes, sizeof sizes);
  sizes[a] = t->sizes[b], sizes[b] = t->sizes[a];
  for (int d = t->rank - 1; d >= 0; d--) {
    st[d] = n;
    n *= sizes[d];
  }
  cpu_tensor v = *t;
  for (int d = 0; d < t->rank; d++)
    v.strides[d] = st[d == a ? b : d == b ? a : d];
  v.data = mem((size_t)n * coil_dtype_size(t->dtype));
  for (int64_t i = 0; i < numel(t); i++)
    copy_elem(&v, t, i);
  return v;
}

static coil_xparam
XI(const char *name, int64_t v)
{
  return (coil_xparam){.name = name, .kind = COIL_XP_INT, .i = v};
}

static coil_xparam
XF(const char *name, double v)
{
  return (coil_xparam){.name = name, .kind = COIL_XP_FLOAT, .f = v};
}

static coil_xparam
XL(const char *name, int n, const int64_t *v)
{
  return (coil_xparam){.name = name, .kind = COIL_XP_INTS, .n = n, .ints = v};
}

static int
run(const char *op, const cpu_tensor *ins, int nins, const cpu_tensor *outs, int nouts,
    const coil_xparam *xp, int nxp)
{
  memset(&diag, 0, sizeof diag);
  return cpu_extern_run(op, ins, nins, outs, nouts, xp, nxp, &diag);
}

#define RUN_OK(...) cr_assert_eq(run(__VA_ARGS__), 0, "%s", diag.msg)

static void
expect(const cpu_tensor *t, const double *want, double tol)
{
  for (int64_t i = 0; i < numel(t); i++) {
    double g = get(t, i), w = want[i];
    if (isnan(w))
      cr_assert(isnan(g), "element %ld: got %g, want NaN", (long)i, g);
    else
      cr_assert(fabs(g - w) <= tol * (1 + fabs(w)), "element %ld: got %.9g, want %.9g", (long)i, g,
                w);
  }
}

/* Rounds want to dtype t (what a result of dtype t holds). */
static double
rounded(coil_dtype t, double v)
{
  switch (t) {
  case COIL_F32: return (float)v;
  case COIL_F16: return coil_f16_to_f32(coil_f32_to_f16((float)v));
  case COIL_BF16: return coil_bf16_to_f32(coil_f32_to_bf16((float)v));
  default: return v;
  }
}

static void
expect_error(const char *fragment)
{
  cr_assert(strstr(diag.msg, fragment), "message `%s` lacks `%s`", diag.msg, fragment);
  cr_assert(strncmp(diag.msg, "cpu: ", 5) == 0, "message `%s`", diag.msg);
}

/* ---- matmul ---- */

/* Naive f64 (b)mm / addmm through strides: a [B,] M x K, b [B,] K x N, bias broadcast. */
static double *
ref_mm(const cpu_tensor *a, const cpu_tensor *b, const cpu_tensor *bias, double alpha, double beta)
{
  int o = a->rank - 2;
  int64_t B = o ? a->sizes[0] : 1, M = a->sizes[o], K = a->sizes[o + 1], N = b->sizes[o + 1];
  double *r = mem(sizeof(double) * (size_t)(B * M * N));
  for (int64_t p = 0; p < B; p++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double s = 0;
        for (int64_t k = 0; k < K; k++)
          s += get(a, (p * M + i) * K + k) * get(b, (p * K + k) * N + j);
        if (bias) {
          int64_t bi = 0, bm = bias->rank == 2 && bias->sizes[0] > 1 ? i : 0;
          int64_t bn = bias->rank >= 1 && bias->sizes[bias->rank - 1] > 1 ? j : 0;
          bi = bias->rank == 2 ? bm * bias->sizes[1] + bn : bn;
          s = alpha * s + (beta == 0 ? 0 : beta * get(bias, bi));
        }
        r[(p * M + i) * N + j] = s;
      }
  return r;
}

Test(cpu, mm_hand)
{
  cpu_tensor a = T(COIL_F32, 2, 2, 3), b = T(COIL_F32, 2, 3, 2), c = T(COIL_F32, 2, 2, 2);
  fill(&a, (double[]){1, 2, 3, 4, 5, 6});
  fill(&b, (double[]){7, 8, 9, 10, 11, 12});
  cpu_tensor in[] = {a, b};
  RUN_OK("aten.mm.default", in, 2, &c, 1, NULL, 0);
  expect(&c, (double[]){58, 64, 139, 154}, 0);
  /* the same through transposed views (CblasTrans) and f64 */
  cpu_tensor at = transposed(&a, 0, 1), bt = transposed(&b, 0, 1);
  cr_assert_eq(at.strides[0], 1);
  cpu_tensor in2[] = {at, bt};
  RUN_OK("aten.mm.default", in2, 2, &c, 1, NULL, 0);
  expect(&c, (double[]){58, 64, 139, 154}, 0);
  cpu_tensor a64 = T(COIL_F64, 2, 2, 3), b64 = T(COIL_F64, 2, 3, 2), c64 = T(COIL_F64, 2, 2, 2);
  fill(&a64, (double[]){1, 2, 3, 4, 5, 6});
  fill(&b64, (double[]){7, 8, 9, 10, 11, 12});
  cpu_tensor in3[] = {transposed(&a64, 0, 1), spread(&b64)};
  RUN_OK("aten.mm.default", in3, 2, &c64, 1, NULL, 0);
  expect(&c64, (double[]){58, 64, 139, 154}, 0);
}

/* Every view kind of a, times every view kind of b, f32 and f64, several shapes. */
Test(cpu, mm_views_random)
{
  static const int shapes[][3] = {{5, 7, 3}, {1, 9, 4},   {6, 1, 5},
                                  {4, 6, 1}, {17, 33, 9}, {1, 1, 1}};
  coil_dtype dts[] = {COIL_F32, COIL_F64};
  for (int di = 0; di < 2; di++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      int M = shapes[s][0], K = shapes[s][1], N = shapes[s][2];
      coil_dtype t = dts[di];
      cpu_tensor a = T(t, 2, M, K), b = T(t, 2, K, N), c = T(t, 2, M, N);
      randomize(&a);
      randomize(&b);
      cpu_tensor row = T(t, 1, K); /* a broadcast row: a view [M, K] with strides [0, 1] */
      randomize(&row);
      cpu_tensor bc = row;
      bc.rank = 2, bc.sizes[0] = M, bc.sizes[1] = K, bc.strides[0] = 0, bc.strides[1] = 1;
      cpu_tensor as[] = {a, transposed(&a, 0, 1), spread(&a), bc};
      cpu_tensor bs[] = {b, transposed(&b, 0, 1), spread(&b)};
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) {
          cpu_tensor in[] = {as[i], bs[j]};
          RUN_OK("aten.mm.default", in, 2, &c, 1, NULL, 0);
          expect(&c, ref_mm(&as[i], &bs[j], NULL, 1, 1), t == COIL_F64 ? 1e-12 : 1e-5);
        }
    }
}

Test(cpu, mm_half)
{
  coil_dtype dts[] = {COIL_F16, COIL_BF16};
  for (int di = 0; di < 2; di++) {
    coil_dtype t = dts[di];
    cpu_tensor a = T(t, 2, 9, 20), b = T(t, 2, 20, 7), c = T(t, 2, 9, 7);
    randomize(&a);
    randomize(&b);
    cpu_tensor in[] = {transposed(&a, 0, 1), b};
    RUN_OK("aten.mm.default", in, 2, &c, 1, NULL, 0);
    double *want = ref_mm(&a, &b, NULL, 1, 1);
    for (int i = 0; i < 63; i++)
      want[i] = rounded(t, want[i]);
    /* one rounding of an f32 sum: at most one unit in the last place of the dtype apart */
    expect(&c, want, t == COIL_F16 ? 1.0 / 1024 : 1.0 / 128);
  }
}

Test(cpu, mm_int)
{
  cpu_tensor a = T(COIL_I64, 2, 2, 2), b = T(COIL_I64, 2, 2, 1), c = T(COIL_I64, 2, 2, 1);
  int64_t *pa = a.data, *pb = b.data, *pc = c.data;
  pa[0] = (int64_t)1 << 53, pa[1] = 1, pa[2] = -3, pa[3] = 4;
  pb[0] = 1, pb[1] = 1;
  cpu_tensor in[] = {a, b};
  RUN_OK("aten.mm.default", in, 2, &c, 1, NULL, 0);
  cr_assert_eq(pc[0], ((int64_t)1 << 53) + 1); /* exact, beyond what a double holds */
  cr_assert_eq(pc[1], 1);
  cpu_tensor a32 = T(COIL_I32, 2, 2, 3), b32 = T(COIL_I32, 2, 3, 2), c32 = T(COIL_I32, 2, 2, 2);
  fill(&a32, (double[]){1, 2, 3, 4, 5, 6});
  fill(&b32, (double[]){7, 8, 9, 10, 11, 12});
  cpu_tensor in2[] = {transposed(&a32, 0, 1), b32}, bias = T(COIL_I32, 1, 2);
  fill(&bias, (double[]){1, -1});
  RUN_OK("aten.mm.default", in2, 2, &c32, 1, NULL, 0);
  expect(&c32, (double[]){58, 64, 139, 154}, 0);
  cpu_tensor in3[] = {bias, a32, b32};
  coil_xparam xp[] = {XI("alpha", 2), XI("beta", 3)};
  RUN_OK("aten.addmm.default", in3, 3, &c32, 1, xp, 2);
  expect(&c32, (double[]){119, 125, 281, 305}, 0);
  /* bmm of i32 batches, the second operand's batches read through a view */
  cpu_tensor ba = T(COIL_I32, 3, 2, 1, 2), bb = T(COIL_I32, 3, 2, 2, 1),
             bc = T(COIL_I32, 3, 2, 1, 1);
  fill(&ba, (double[]){1, 2, 3, 4});
  fill(&bb, (double[]){5, 6, 7, -8});
  cpu_tensor in4[] = {ba, transposed(&bb, 0, 1)};
  RUN_OK("aten.bmm.default", in4, 2, &bc, 1, NULL, 0);
  expect(&bc, (double[]){17, -11}, 0);
}

Test(cpu, bmm_broadcast_batch)
{
  int B = 3, M = 4, K = 5, N = 6;
  coil_dtype dts[] = {COIL_F32, COIL_F64, COIL_BF16};
  for (int di = 0; di < 3; di++) {
    coil_dtype t = dts[di];
    cpu_tensor a1 = T(t, 2, M, K), b = T(t, 3, B, K, N), c = T(t, 3, B, M, N);
    randomize(&a1);
    randomize(&b);
    cpu_tensor a = a1; /* [B, M, K] with batch stride 0 */
    a.rank = 3;
    a.sizes[0] = B, a.sizes[1] = M, a.sizes[2] = K;
    a.strides[0] = 0, a.strides[1] = K, a.strides[2] = 1;
    cpu_tensor bs[] = {b, transposed(&b, 1, 2), spread(&b)};
    for (int j = 0; j < 3; j++) {
      cpu_tensor in[] = {a, bs[j]};
      RUN_OK("aten.bmm.default", in, 2, &c, 1, NULL, 0);
      double *want = ref_mm(&a, &bs[j], NULL, 1, 1);
      for (int i = 0; i < B * M * N; i++)
        want[i] = rounded(t, want[i]);
      expect(&c, want, t == COIL_BF16 ? 1.0 / 128 : 1e-5);
    }
  }
}

Test(cpu, addmm_bias_shapes)
{
  int M = 5, K = 8, N = 3;
  cpu_tensor a = T(COIL_F32, 2, M, K), b = T(COIL_F32, 2, K, N), c = T(COIL_F32, 2, M, N);
  randomize(&a);
  randomize(&b);
  cpu_tensor biases[] = {T(COIL_F32, 1, N),    T(COIL_F32, 2, 1, N), T(COIL_F32, 2, M, 1),
                         T(COIL_F32, 2, M, N), T(COIL_F32, 0),       T(COIL_F32, 1, 1)};
  coil_xparam xp[] = {XF("alpha", 2.0), XF("beta", 0.5)};
  for (int i = 0; i < 6; i++) {
    randomize(&biases[i]);
    cpu_tensor in[] = {biases[i], a, transposed(&b, 0, 1)};
    RUN_OK("aten.addmm.default", in, 3, &c, 1, xp, 2);
    expect(&c, ref_mm(&a, &b, &biases[i], 2.0, 0.5), 1e-5);
  }
  /* defaults alpha = beta = 1, by hand */
  cpu_tensor a2 = T(COIL_F32, 2, 1, 2), b2 = T(COIL_F32, 2, 2, 2), bias = T(COIL_F32, 1, 2);
  cpu_tensor c2 = T(COIL_F32, 2, 1, 2);
  fill(&a2, (double[]){1, 2});
  fill(&b2, (double[]){1, 0, 0, 1});
  fill(&bias, (double[]){10, NAN});
  cpu_tensor in[] = {bias, a2, b2};
  RUN_OK("aten.addmm.default", in, 3, &c2, 1, NULL, 0);
  expect(&c2, (double[]){11, NAN}, 0);
  coil_xparam beta0[] = {XI("beta", 0), XI("alpha", 3)}; /* beta = 0 ignores a NaN bias */
  RUN_OK("aten.addmm.default", in, 3, &c2, 1, beta0, 2);
  expect(&c2, (double[]){3, 6}, 0);
}

Test(cpu, mm_empty_k)
{
  cpu_tensor a = T(COIL_F32, 2, 2, 0), b = T(COIL_F32, 2, 0, 3), c = T(COIL_F32, 2, 2, 3);
  fill(&c, (double[]){9, 9, 9, 9, 9, 9});
  cpu_tensor in[] = {a, b};
  RUN_OK("aten.mm.default", in, 2, &c, 1, NULL, 0);
  expect(&c, (double[]){0, 0, 0, 0, 0, 0}, 0);
  cpu_tensor bias = T(COIL_F32, 1, 3);
  fill(&bias, (double[]){1, 2, 3});
  cpu_tensor in2[] = {bias, a, b};
  coil_xparam xp[] = {XI("beta", 2)};
  RUN_OK("aten.addmm.default", in2, 3, &c, 1, xp, 1);
  expect(&c, (double[]){2, 4, 6, 2, 4, 6}, 0);
}

/* ---- convolution ---- */

typedef struct conv_case {
  int nsp, N, C, O, groups, tr, bias;
  int i[3], k[3], s[3], p[3], d[3], op[3]; /* op: output padding (transposed) */
} conv_case;

/* Naive f64 convolution, the loops of core/ref_ops.c. */
static double *
ref_conv(const conv_case *cc, const cpu_tensor *x, const cpu_tensor *w, const cpu_tensor *bias,
         const cpu_tensor *out)
{
  int nsp = cc->nsp;
  int64_t N = cc->N, C = cc->C, O = cc->O, cpg = C / cc->groups, opg = O / cc->groups;
  int64_t ksz = 1, isp = 1, osp = 1;
  for (int q = 0; q < nsp; q++)
    ksz *= cc->k[q], isp *= cc->i[q], osp *= out->sizes[2 + q];
  double *acc = mem(sizeof(double) * (size_t)(N * O * osp));
  for (int64_t n = 0; n < N; n++)
    for (int64_t g = 0; g < cc->groups; g++)
      for (int64_t oc = 0; oc < opg; oc++)
        for (int64_t ic = 0; ic < cpg; ic++)
          for (int64_t k = 0; k < ksz; k++) {
            int64_t kp[3], rem = k;
            for (int q = nsp - 1; q >= 0; q--)
              kp[q] = rem % cc->k[q], rem /= cc->k[q];
            double wv = get(w, cc->tr ? ((g * cpg + ic) * opg + oc) * ksz + k
                                      : ((g * opg + oc) * cpg + ic) * ksz + k);
            for (int64_t s = 0; s < (cc->tr ? isp : osp); s++) {
              int64_t pos[3], r2 = s, fi = 0, fo = 0;
              bool ok = true;
              const int64_t *from =
                  cc->tr ? (int64_t[]){cc->i[0], cc->i[1], cc->i[2]} : out->sizes + 2;
              for (int q = nsp - 1; q >= 0; q--)
                pos[q] = r2 % from[q], r2 /= from[q];
              for (int q = 0; q < nsp; q++) {
                int64_t other = pos[q] * cc->s[q] - cc->p[q] + kp[q] * cc->d[q];
                int64_t lim = cc->tr ? out->sizes[2 + q] : cc->i[q];
                ok = ok && other >= 0 && other < lim;
                if (cc->tr)
                  fi = fi * cc->i[q] + pos[q], fo = fo * lim + other;
                else
                  fo = fo * out->sizes[2 + q] + pos[q], fi = fi * lim + other;
              }
              if (ok)
                acc[(n * O + g * opg + oc) * osp + fo] +=
                    wv * get(x, (n * C + g * cpg + ic) * isp + fi);
            }
          }
  for (int64_t i = 0; i < N * O * osp; i++)
    acc[i] += bias ? get(bias, i / osp % O) : 0;
  return acc;
}

/* Runs case cc in dtype t with input view kind `view` (0 contiguous, 1 spread, 2 channels
 * last) and compares with ref_conv. */
static void
check_conv(const conv_case *cc, coil_dtype t, int view)
{
  int64_t os[3];
  cpu_tensor x = T(t, 0), w = T(t, 0), out = T(t, 0), bias = T(t, 1, cc->O);
  x.rank = w.rank = out.rank = cc->nsp + 2;
  int cpg = cc->C / cc->groups, opg = cc->O / cc->groups;
  int64_t xs[5] = {cc->N, cc->C}, ws[5] = {cc->tr ? cc->C : cc->O, cc->tr ? opg : cpg},
          osz[5] = {cc->N, cc->O};
  for (int q = 0; q < cc->nsp; q++) {
    os[q] = cc->tr
                ? (int64_t)(cc->i[q] - 1) * cc->s[q] - 2 * cc->p[q] + cc->d[q] * (cc->k[q] - 1) +
                      1 + cc->op[q]
                : (int64_t)(cc->i[q] + 2 * cc->p[q] - cc->d[q] * (cc->k[q] - 1) - 1) / cc->s[q] + 1;
    xs[2 + q] = cc->i[q], ws[2 + q] = cc->k[q], osz[2 + q] = os[q];
  }
  cpu_tensor *ts[] = {&x, &w, &out};
  int64_t *szs[] = {xs, ws, osz};
  for (int j = 0; j < 3; j++) {
    int64_t n = 1;
    for (int d = ts[j]->rank - 1; d >= 0; d--) {
      ts[j]->sizes[d] = szs[j][d];
      ts[j]->strides[d] = n;
      n *= szs[j][d];
    }
    ts[j]->data = mem((size_t)n * coil_dtype_size(t));
  }
  randomize(&x);
  randomize(&w);
  randomize(&bias);
  cpu_tensor xv = x;
  if (view == 1)
    xv = spread(&x);
  if (view == 2) /* channels last: a storage [N, spatial..., C] viewed as [N, C, spatial...] */
    xv = transposed(&x, 1, x.rank - 1); /* C has the innermost stride */
  coil_xparam xp[] = {XL("stride", cc->nsp, (int64_t[]){cc->s[0], cc->s[1], cc->s[2]}),
                      XL("padding", cc->nsp, (int64_t[]){cc->p[0], cc->p[1], cc->p[2]}),
                      XL("dilation", cc->nsp, (int64_t[]){cc->d[0], cc->d[1], cc->d[2]}),
                      XI("transposed", cc->tr),
                      XI("groups", cc->groups),
                      XL("output_padding", cc->nsp, (int64_t[]){cc->op[0], cc->op[1], cc->op[2]})};
  cpu_tensor in[] = {xv, w, bias};
  RUN_OK("aten.convolution.default", in, cc->bias ? 3 : 2, &out, 1, xp, 6);
  double *want = ref_conv(cc, &x, &w, cc->bias ? &bias : NULL, &out);
  int64_t n = numel(&out);
  for (int64_t i = 0; i < n; i++)
    want[i] = rounded(t, want[i]);
  double tol = t == COIL_F64 ? 1e-12 : t == COIL_F32 ? 1e-5 : t == COIL_F16 ? 1.0 / 512 : 1.0 / 64;
  expect(&out, want, tol);
}

static const conv_case conv_cases[] = {
    /* nsp N C O groups tr bias  i        k        s        p        d        op */
    {1, 2, 3, 4, 1, 0, 1, {9}, {3}, {1}, {1}, {1}, {0}},
    {1, 1, 4, 6, 2, 0, 0, {10}, {3}, {2}, {2}, {2}, {0}},
    {2, 2, 3, 5, 1, 0, 1, {6, 7}, {3, 2}, {1, 2}, {1, 0}, {1, 1}, {0}},
    {2, 1, 6, 6, 6, 0, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {2, 1}, {0}}, /* depthwise, dilated */
    {2, 2, 4, 8, 4, 0, 1, {4, 4}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0}}, /* 1x1: no im2col */
    {2, 1, 3, 2, 1, 0, 0, {5, 5}, {1, 1}, {2, 2}, {0, 0}, {1, 1}, {0}}, /* 1x1, stride 2 */
    {3, 1, 2, 4, 2, 0, 1, {4, 5, 3}, {2, 3, 1}, {1, 2, 1}, {1, 1, 0}, {1, 1, 1}, {0}},
    {1, 2, 2, 3, 1, 1, 1, {5}, {3}, {2}, {1}, {1}, {1}}, /* transposed */
    {2, 1, 4, 6, 2, 1, 1, {3, 4}, {3, 2}, {2, 1}, {1, 0}, {1, 2}, {1, 0}},
    {2, 2, 3, 3, 3, 1, 0, {4, 4}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, {0, 1}},
    {3, 1, 2, 2, 1, 1, 1, {2, 3, 2}, {2, 2, 2}, {2, 1, 2}, {0, 1, 0}, {1, 1, 2}, {1, 0, 0}},
    {2, 3, 8, 16, 1, 0, 1, {12, 12}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0}}, /* larger */
};

Test(cpu, conv_hand)
{
  /* 1-D, padding 1: out[o] = x[o-1] - x[o+1] + 10 */
  cpu_tensor x = T(COIL_F32, 3, 1, 1, 5), w = T(COIL_F32, 3, 1, 1, 3), b = T(COIL_F32, 1, 1);
  cpu_tensor out = T(COIL_F32, 3, 1, 1, 5);
  fill(&x, (double[]){1, 2, 3, 4, 5});
  fill(&w, (double[]){1, 0, -1});
  fill(&b, (double[]){10});
  coil_xparam xp[] = {XL("padding", 1, (int64_t[]){1})};
  cpu_tensor in[] = {x, w, b};
  RUN_OK("aten.convolution.default", in, 3, &out, 1, xp, 1);
  expect(&out, (double[]){8, 8, 8, 8, 14}, 0);
  /* 2-D, 2x2 ones over 1..9 */
  cpu_tensor x2 = T(COIL_F64, 4, 1, 1, 3, 3), w2 = T(COIL_F64, 4, 1, 1, 2, 2),
             o2 = T(COIL_F64, 4, 1, 1, 2, 2);
  fill(&x2, (double[]){1, 2, 3, 4, 5, 6, 7, 8, 9});
  fill(&w2, (double[]){1, 1, 1, 1});
  cpu_tensor in2[] = {x2, w2};
  RUN_OK("aten.convolution.default", in2, 2, &o2, 1, NULL, 0);
  expect(&o2, (double[]){12, 16, 24, 28}, 0);
  /* transposed 1-D, stride 2: [1, 2] spread by [1, 1, 1] */
  cpu_tensor x3 = T(COIL_F32, 3, 1, 1, 2), w3 = T(COIL_F32, 3, 1, 1, 3),
             o3 = T(COIL_F32, 3, 1, 1, 5);
  fill(&x3, (double[]){1, 2});
  fill(&w3, (double[]){1, 1, 1});
  coil_xparam xp3[] = {XI("transposed", 1), XL("stride", 1, (int64_t[]){2})};
  cpu_tensor in3[] = {x3, w3};
  RUN_OK("aten.convolution.default", in3, 2, &o3, 1, xp3, 2);
  expect(&o3, (double[]){1, 1, 3, 2, 2}, 0);
}

Test(cpu, conv_random)
{
  for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++) {
    check_conv(&conv_cases[i], COIL_F32, 0);
    check_conv(&conv_cases[i], COIL_F64, 0);
    check_conv(&conv_cases[i], COIL_F32, 1);
    check_conv(&conv_cases[i], COIL_F32, 2);
  }
}

Test(cpu, conv_half)
{
  for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++) {
    check_conv(&conv_cases[i], COIL_F16, 0);
    check_conv(&conv_cases[i], COIL_BF16, 2);
  }
}

/* ---- pooling ---- */

Test(cpu, maxpool_hand)
{
  cpu_tensor x = T(COIL_F32, 4, 1, 1, 4, 4), v = T(COIL_F32, 4, 1, 1, 2, 2),
             ix = T(COIL_I64, 4, 1, 1, 2, 2);
  iota(&x);
  coil_xparam xp[] = {XL("kernel_size", 2, (int64_t[]){2, 2})}; /* stride defaults to the kernel */
  cpu_tensor outs[] = {v, ix};
  RUN_OK("aten.max_pool2d_with_indices.default", &x, 1, outs, 2, xp, 1);
  expect(&v, (double[]){5, 7, 13, 15}, 0);
  expect(&ix, (double[]){5, 7, 13, 15}, 0);
  /* padding 1, kernel 3, stride 2, ceil_mode: a 3x3 result whose last window starts at row 3 */
  cpu_tensor v3 = T(COIL_F32, 3, 1, 3, 3), i3 = T(COIL_I64, 3, 1, 3, 3),
             x3 = T(COIL_F32, 3, 1, 4, 4);
  iota(&x3);
  coil_xparam xp3[] = {XL("kernel_size", 1, (int64_t[]){3}), XL("stride", 1, (int64_t[]){2}),
                       XL("padding", 1, (int64_t[]){1}), XI("ceil_mode", 1)};
  cpu_tensor outs3[] = {v3, i3};
  RUN_OK("aten.max_pool2d_with_indices.default", &x3, 1, outs3, 2, xp3, 4);
  double want[] = {5, 7, 7, 13, 15, 15, 13, 15, 15};
  expect(&v3, want, 0);
  expect(&i3, want, 0);
  /* dilation 2: the window's far corner wins; a NaN takes over, the last NaN's index wins */
  cpu_tensor x5 = T(COIL_F64, 4, 1, 1, 5, 5), v5 = T(COIL_F64, 4, 1, 1, 3, 3),
             i5 = T(COIL_I64, 4, 1, 1, 3, 3);
  iota(&x5);
  set(&x5, 0, NAN);
  set(&x5, 2, NAN);
  coil_xparam xp5[] = {XL("kernel_size", 1, (int64_t[]){2}), XL("stride", 1, (int64_t[]){1}),
                       XL("dilation", 1, (int64_t[]){2})};
  cpu_tensor outs5[] = {v5, i5};
  RUN_OK("aten.max_pool2d_with_indices.default", &x5, 1, outs5, 2, xp5, 3);
  expect(&v5, (double[]){NAN, 13, NAN, 17, 18, 19, 22, 23, 24}, 0);
  expect(&i5, (double[]){2, 13, 2, 17, 18, 19, 22, 23, 24}, 0);
}

Test(cpu, avgpool_hand)
{
  cpu_tensor x = T(COIL_F32, 4, 1, 1, 4, 4), v = T(COIL_F32, 4, 1, 1, 2, 2);
  iota(&x);
  coil_xparam xp[] = {XL("kernel_size", 1, (int64_t[]){2})};
  RUN_OK("aten.avg_pool2d.default", &x, 1, &v, 1, xp, 1);
  expect(&v, (double[]){2.5, 4.5, 10.5, 12.5}, 0);
  /* kernel 3, stride 2, padding 1, ceil_mode over 0..15: window sums by hand */
  static const double sums[] = {10, 24, 10, 51, 90, 33, 25, 42, 15};
  static const double ext[] = {9, 9, 6, 9, 9, 6, 6, 6, 4}; /* window sizes, padding included */
  static const double cnt[] = {4, 6, 2, 6, 9, 3, 2, 3, 1}; /* elements inside the input */
  cpu_tensor o = T(COIL_F64, 4, 1, 1, 3, 3);
  double want[9];
  for (int mode = 0; mode < 3; mode++) {
    coil_xparam xp3[] = {
        XL("kernel_size", 2, (int64_t[]){3, 3}), XL("stride", 2, (int64_t[]){2, 2}),
        XL("padding", 2, (int64_t[]){1, 1}),     XI("ceil_mode", 1),
        XI("count_include_pad", mode != 1),      XI("divisor_override", 2)};
    RUN_OK("aten.avg_pool2d.default", &x, 1, &o, 1, xp3, mode == 2 ? 6 : 5);
    for (int i = 0; i < 9; i++)
      want[i] = sums[i] / (mode == 0 ? ext[i] : mode == 1 ? cnt[i] : 2);
    expect(&o, want, 1e-15);
  }
}

/* Pooling a channels-last view gives what pooling a contiguous copy gives, bit for bit. */
Test(cpu, pool_strided_views)
{
  cpu_tensor x = T(COIL_BF16, 4, 2, 3, 7, 6);
  randomize(&x);
  cpu_tensor views[] = {transposed(&x, 1, 3), spread(&x)};
  coil_xparam xp[] = {XL("kernel_size", 2, (int64_t[]){3, 2}), XL("stride", 2, (int64_t[]){2, 1}),
                      XL("padding", 2, (int64_t[]){1, 1}), XI("ceil_mode", 1)};
  for (int is_max = 0; is_max < 2; is_max++) {
    const char *op = is_max ? "aten.max_pool2d_with_indices.default" : "aten.avg_pool2d.default";
    cpu_tensor a[] = {T(COIL_BF16, 4, 2, 3, 4, 7), T(COIL_I64, 4, 2, 3, 4, 7)};
    cpu_tensor b[] = {T(COIL_BF16, 4, 2, 3, 4, 7), T(COIL_I64, 4, 2, 3, 4, 7)};
    RUN_OK(op, &x, 1, a, 1 + is_max, xp, 4);
    for (int v = 0; v < 2; v++) {
      RUN_OK(op, &views[v], 1, b, 1 + is_max, xp, 4);
      cr_assert(memcmp(a[0].data, b[0].data, 2 * 2 * 3 * 4 * 7) == 0);
      cr_assert(!is_max || memcmp(a[1].data, b[1].data, 8 * 2 * 3 * 4 * 7) == 0);
    }
    cr_assert(get(&a[0], 0) != 0 || get(&a[0], 1) != 0); /* something was written */
  }
}

/* ---- topk ---- */

Test(cpu, topk_hand)
{
  cpu_tensor x = T(COIL_F32, 1, 8), v = T(COIL_F32, 1, 3), ix = T(COIL_I64, 1, 3);
  fill(&x, (double[]){3, 1, 4, 1, 5, 9, 2, 6});
  cpu_tensor outs[] = {v, ix};
  coil_xparam xp[] = {XI("k", 3)};
  RUN_OK("aten.topk.default", &x, 1, outs, 2, xp, 1);
  expect(&v, (double[]){9, 6, 5}, 0);
  expect(&ix, (double[]){5, 7, 4}, 0);
  coil_xparam small[] = {XI("k", 3), XI("largest", 0)}; /* ties: lower index first */
  RUN_OK("aten.topk.default", &x, 1, outs, 2, small, 2);
  expect(&v, (double[]){1, 1, 2}, 0);
  expect(&ix, (double[]){1, 3, 6}, 0);
  /* NaN is the largest */
  cpu_tensor y = T(COIL_F64, 1, 3), v2 = T(COIL_F64, 1, 2), i2 = T(COIL_I64, 1, 2);
  fill(&y, (double[]){1, NAN, 3});
  cpu_tensor outs2[] = {v2, i2};
  coil_xparam k2[] = {XI("k", 2), XI("dim", 0)};
  RUN_OK("aten.topk.default", &y, 1, outs2, 2, k2, 2);
  expect(&v2, (double[]){NAN, 3}, 0);
  expect(&i2, (double[]){1, 2}, 0);
  coil_xparam k2s[] = {XI("k", 2), XI("largest", 0)};
  RUN_OK("aten.topk.default", &y, 1, outs2, 2, k2s, 2);
  expect(&v2, (double[]){1, 3}, 0);
  expect(&i2, (double[]){0, 2}, 0);
}

Test(cpu, topk_middle_dim_strided)
{
  /* [2, 3, 2] over dim 1, read through a transposed view; int64 values compared exactly */
  cpu_tensor x = T(COIL_I64, 3, 2, 3, 2), v = T(COIL_I64, 3, 2, 2, 2), ix = T(COIL_I64, 3, 2, 2, 2);
  int64_t big = (int64_t)1 << 53;
  int64_t vals[] = {big, 7, big + 1, 7, big, 8, /* second batch */ -1, 0, -2, 0, -3, 0};
  memcpy(x.data, vals, sizeof vals);
  cpu_tensor xv = transposed(&x, 0, 2);
  cr_assert_neq(xv.strides[2], 1);
  cpu_tensor outs[] = {v, ix};
  coil_xparam xp[] = {XI("k", 2), XI("dim", 1)};
  RUN_OK("aten.topk.default", &xv, 1, outs, 2, xp, 2);
  int64_t *pv = v.data;
  int64_t want_v[] = {big + 1, 8, big, 7, -1, 0, -2, 0};
  double want_i[] = {1, 2, 0, 0, 0, 0, 1, 1};
  for (int i = 0; i < 8; i++)
    cr_assert_eq(pv[i], want_v[i], "value %d", i);
  expect(&ix, want_i, 0);
}

/* ---- gather, embedding, index ---- */

Test(cpu, gather_hand)
{
  cpu_tensor x = T(COIL_F32, 2, 2, 2), ix = T(COIL_I64, 2, 2, 2), o = T(COIL_F32, 2, 2, 2);
  fill(&x, (double[]){1, 2, 3, 4});
  fill(&ix, (double[]){0, 0, 1, 0});
  cpu_tensor in[] = {x, ix};
  coil_xparam d1[] = {XI("dim", 1)}, d0[] = {XI("dim", -2)};
  RUN_OK("aten.gather.default", in, 2, &o, 1, d1, 1);
  expect(&o, (double[]){1, 1, 4, 3}, 0);
  RUN_OK("aten.gather.default", in, 2, &o, 1, d0, 1);
  expect(&o, (double[]){1, 2, 3, 2}, 0);
  cpu_tensor in2[] = {transposed(&x, 0, 1), transposed(&ix, 0, 1)}; /* the same, as views */
  RUN_OK("aten.gather.default", in2, 2, &o, 1, d1, 1);
  expect(&o, (double[]){1, 1, 4, 3}, 0);
  set(&ix, 3, -1); /* gather takes no negative indices */
  cr_assert_eq(run("aten.gather.default", in, 2, &o, 1, d1, 1), -1);
  expect_error("index -1 is out of bounds for size 2");
  set(&ix, 3, 2);
  cr_assert_eq(run("aten.gather.default", in, 2, &o, 1, d1, 1), -1);
  expect_error("index 2 is out of bounds for size 2");
}

Test(cpu, embedding_hand)
{
  cpu_tensor w = T(COIL_F32, 2, 3, 2), ix = T(COIL_I32, 2, 1, 2), o = T(COIL_F32, 3, 1, 2, 2);
  fill(&w, (double[]){1, 2, 3, 4, 5, 6});
  fill(&ix, (double[]){2, 0});
  cpu_tensor in[] = {w, ix};
  RUN_OK("aten.embedding.default", in, 2, &o, 1, NULL, 0);
  expect(&o, (double[]){5, 6, 1, 2}, 0);
  cpu_tensor wt = transposed(&w, 0, 1);
  cpu_tensor in2[] = {wt, ix};
  RUN_OK("aten.embedding.default", in2, 2, &o, 1, NULL, 0);
  expect(&o, (double[]){5, 6, 1, 2}, 0);
  set(&ix, 1, 3);
  cr_assert_eq(run("aten.embedding.default", in, 2, &o, 1, NULL, 0), -1);
  expect_error("index 3 is out of range for 3 embeddings");
}

Test(cpu, index_hand)
{
  cpu_tensor x = T(COIL_F32, 2, 3, 4), i0 = T(COIL_I64, 1, 2), o = T(COIL_F32, 2, 2, 4);
  iota(&x);
  fill(&i0, (double[]){2, -3});
  cpu_tensor in[] = {x, i0};
  RUN_OK("aten.index.Tensor", in, 2, &o, 1, NULL, 0);
  expect(&o, (double[]){8, 9, 10, 11, 0, 1, 2, 3}, 0);
  /* x[:, [1, 3]] */
  cpu_tensor i1 = T(COIL_I32, 1, 2), o1 = T(COIL_F32, 2, 3, 2);
  fill(&i1, (double[]){1, 3});
  cpu_tensor in1[] = {x, i1};
  coil_xparam none0[] = {XL("none_mask", 1, (int64_t[]){0})};
  RUN_OK("aten.index.Tensor", in1, 2, &o1, 1, none0, 1);
  expect(&o1, (double[]){1, 3, 5, 7, 9, 11}, 0);
  /* x[[[0], [2]], [1, 3]]: broadcast to [2, 2] */
  cpu_tensor a = T(COIL_I64, 2, 2, 1), o2 = T(COIL_F32, 2, 2, 2);
  fill(&a, (double[]){0, 2});
  cpu_tensor in2[] = {x, a, i1};
  RUN_OK("aten.index.Tensor", in2, 3, &o2, 1, NULL, 0);
  expect(&o2, (double[]){1, 3, 9, 11}, 0);
  /* y[[1, 0], :, [3, 1]] on [2, 3, 4]: the index dims go first */
  cpu_tensor y = T(COIL_F64, 3, 2, 3, 4), j0 = T(COIL_I64, 1, 2), j2 = T(COIL_I64, 1, 2);
  cpu_tensor o3 = T(COIL_F64, 2, 2, 3);
  iota(&y);
  fill(&j0, (double[]){1, 0});
  fill(&j2, (double[]){3, 1});
  cpu_tensor in3[] = {y, j0, j2}; /* contiguous first, then the same through a view */
  coil_xparam none1[] = {XL("none_mask", 1, (int64_t[]){1})};
  RUN_OK("aten.index.Tensor", in3, 3, &o3, 1, none1, 1);
  expect(&o3, (double[]){15, 19, 23, 1, 5, 9}, 0);
  in3[0] = spread(&y);
  RUN_OK("aten.index.Tensor", in3, 3, &o3, 1, none1, 1);
  expect(&o3, (double[]){15, 19, 23, 1, 5, 9}, 0);
  /* errors */
  set(&i0, 1, 3);
  cr_assert_eq(run("aten.index.Tensor", in, 2, &o, 1, NULL, 0), -1);
  expect_error("index 3 is out of bounds for size 3");
  cpu_tensor mask = T(COIL_BOOL, 1, 3);
  cpu_tensor in4[] = {x, mask};
  cr_assert_eq(run("aten.index.Tensor", in4, 2, &o, 1, NULL, 0), -1);
  expect_error("boolean masks are not supported");
}

/* ---- errors and threads ---- */

Test(cpu, errors)
{
  cpu_tensor a = T(COIL_F32, 2, 2, 3), b = T(COIL_F32, 2, 3, 2), c = T(COIL_F32, 2, 2, 2);
  cpu_tensor in[] = {a, b};
  cr_assert_eq(run("aten.nope.default", in, 2, &c, 1, NULL, 0), -1);
  expect_error("aten.nope.default: extern op is not supported");
  cr_assert_eq(cpu_extern_nouts("aten.topk.default"), 2);
  cr_assert_eq(cpu_extern_nouts("aten.nope.default"), 0);
  cpu_tensor bad[] = {a, a};
  cr_assert_eq(run("aten.mm.default", bad, 2, &c, 1, NULL, 0), -1);
  expect_error("aten.mm.default: operands of rank 2 and 2 do not multiply");
  cpu_tensor c3 = T(COIL_F32, 2, 3, 3);
  cr_assert_eq(run("aten.mm.default", in, 2, &c3, 1, NULL, 0), -1);
  expect_error("output 0 should have sizes [2, 2], it has [3, 3]");
  cpu_tensor ab = T(COIL_BOOL, 2, 2, 3), bb = T(COIL_BOOL, 2, 3, 2), cb = T(COIL_BOOL, 2, 2, 2);
  cpu_tensor inb[] = {ab, bb};
  cr_assert_eq(run("aten.mm.default", inb, 2, &cb, 1, NULL, 0), -1);
  expect_error("unsupported dtypes bool @ bool -> bool");
  cpu_tensor ct = transposed(&c, 0, 1);
  cr_assert_eq(run("aten.mm.default", in, 2, &ct, 1, NULL, 0), -1);
  expect_error("output 0 is not contiguous");
  cpu_tensor outs2[] = {c, c};
  cr_assert_eq(run("aten.mm.default", in, 2, outs2, 2, NULL, 0), -1);
  expect_error("has 1 outputs, got 2");
  /* topk k too large, missing kernel_size, groups that do not divide */
  cpu_tensor x = T(COIL_F32, 1, 3), v = T(COIL_F32, 1, 4), ix = T(COIL_I64, 1, 4);
  cpu_tensor touts[] = {v, ix};
  coil_xparam k4[] = {XI("k", 4)};
  cr_assert_eq(run("aten.topk.default", &x, 1, touts, 2, k4, 1), -1);
  expect_error("k = 4 is out of range for a dimension of size 3");
  cpu_tensor p = T(COIL_F32, 3, 1, 4, 4), po = T(COIL_F32, 3, 1, 2, 2);
  cr_assert_eq(run("aten.avg_pool2d.default", &p, 1, &po, 1, NULL, 0), -1);
  expect_error("missing parameter kernel_size");
  cpu_tensor cx = T(COIL_F32, 3, 1, 3, 4), cw = T(COIL_F32, 3, 4, 1, 1),
             co = T(COIL_F32, 3, 1, 4, 4);
  cpu_tensor cin[] = {cx, cw};
  coil_xparam g2[] = {XI("groups", 2)};
  cr_assert_eq(run("aten.convolution.default", cin, 2, &co, 1, g2, 1), -1);
  expect_error("2 groups do not divide 3 input and 4 output channels");
  cpu_tensor ci = T(COIL_I32, 3, 1, 3, 4), cwi = T(COIL_I32, 3, 4, 3, 1),
             coi = T(COIL_I32, 3, 1, 4, 4);
  cpu_tensor cini[] = {ci, cwi};
  cr_assert_eq(run("aten.convolution.default", cini, 2, &coi, 1, NULL, 0), -1);
  expect_error("floating types only");
  coil_xparam wrong[] = {XF("dim", 1.5)};
  cpu_tensor gin[] = {a, T(COIL_I64, 2, 2, 3)};
  cr_assert_eq(run("aten.gather.default", gin, 2, &a, 1, wrong, 1), -1);
  expect_error("parameter dim should be an integer");
}

typedef struct job {
  cpu_tensor in[3], out;
  coil_xparam xp[2];
  int rc;
  coil_diag d;
} job;

static void *
conv_thread(void *p)
{
  job *j = p;
  for (int r = 0; r < 20 && !j->rc; r++)
    j->rc = cpu_extern_run("aten.convolution.default", j->in, 3, &j->out, 1, j->xp, 2, &j->d);
  return NULL;
}

/* Two threads running convolutions at once get what one thread gets. */
Test(cpu, two_threads)
{
  static const int64_t one_pad[] = {1};
  job jobs[2];
  cpu_tensor x = T(COIL_F32, 4, 2, 8, 16, 16), w = T(COIL_F32, 4, 8, 4, 3, 3),
             b = T(COIL_F32, 1, 8);
  randomize(&x);
  randomize(&w);
  randomize(&b);
  for (int i = 0; i < 2; i++) {
    memset(&jobs[i], 0, sizeof jobs[i]);
    jobs[i].in[0] = x, jobs[i].in[1] = w, jobs[i].in[2] = b;
    jobs[i].out = T(COIL_F32, 4, 2, 8, 16, 16);
    jobs[i].xp[0] = XL("padding", 1, one_pad);
    jobs[i].xp[1] = XI("groups", 2);
  }
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    cr_assert_eq(pthread_create(&th[i], NULL, conv_thread, &jobs[i]), 0);
  for (int i = 0; i < 2; i++)
    pthread_join(th[i], NULL);
  cpu_tensor one = T(COIL_F32, 4, 2, 8, 16, 16);
  RUN_OK("aten.convolution.default", jobs[0].in, 3, &one, 1, jobs[0].xp, 2);
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(jobs[i].rc, 0, "%s", jobs[i].d.msg);
    cr_assert(memcmp(jobs[i].out.data, one.data, sizeof(float) * 2 * 8 * 16 * 16) == 0);
  }
  cr_assert(get(&one, 100) != 0);
}
