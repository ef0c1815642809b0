/* attention_host.c — cuda_attention_host: coil.attention's kernels (cuda_attention.cu, the text the
 * plugin hands NVRTC) run on the CPU, launched as the plugin launches them. The kernels and the
 * host's "GPU" (tests/attention_host.hpp: fibers for threads, the warp-level instructions
 * emulated as PTX defines them) go into a .cpp that the system's C++ compiler (`c++` on PATH;
 * none: skipped) builds as a shared object; the cases bind host buffers as the executor binds
 * device ones (coil_gpu_buf), and cuda_attention_prepare picks the kernel and fills its
 * parameters as on the GPU. Every element is compared with a double reference, the output
 * poisoned with NaN before each launch.
 *
 * Cases: f16, bf16, f32, f64; rank 3 and 4 (and 5, merged batch dims); odd L and S, S = 0 and
 * L = 0; E and Ev over the SIMT kernel's chunks; head dims 32, 64, 128 on the tensor-core
 * kernel (default tiles and others: 64 to 128 rows, 32 to 128 keys, 1 and 2 m tiles a warp, 2
 * to 4 stages), and the wgmma kernel (its default tiles and one-warpgroup ones, wgmma emulated
 * from its descriptors); additive masks full, causal [1, 1, L, S], padding [B, 1, 1, S], per row
 * [B, H, L, 1], with fully masked rows under masked_rows 'zero' and 'nan'; q as a permuted view
 * of [B, L, H, E], k and v broadcast over heads (size 1 and stride 0), transposed k, unaligned
 * and odd-strided operands, rows 2^24 elements apart for the wgmma kernel (the tensor-core
 * kernel refused, the SIMT kernel run), a negative scale. The tensor-core cases run again with
 * the fibers scheduled backward and shuffled: a missing barrier or cp.async wait changes the
 * result.
 * Usage: cuda-attention-host [CASE-SUBSTRING] (exit 77: no C++ compiler) */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../cuda.h"

extern char **environ;
extern const char cuda_attention_cu[];

#ifndef ATTN_HOST_HPP
#error "ATTN_HOST_HPP: the path of tests/attention_host.hpp"
#endif

typedef int (*launch_fn)(void (*)(const void *), unsigned, unsigned, unsigned, unsigned, const void *, unsigned);
static launch_fn host_launch;
static void *so_handle;

/* ---- dtypes ---- */

static uint16_t
f2h(float f)
{
  uint32_t u;
  memcpy(&u, &f, 4);
  const uint16_t s = (uint16_t)((u >> 16) & 0x8000);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u)
    return (uint16_t)(s | 0x7e00);
  if (a >= 0x477ff000u)
    return (uint16_t)(s | 0x7c00);
  if (a < 0x38800000u)
    return (uint16_t)(s | (uint16_t)nearbyint((double)fabsf(f) * 16777216.0));
  return (uint16_t)(s | (uint16_t)((a + 0xfffu + ((a >> 13) & 1) - 0x38000000u) >> 13));
}

static double
h2d(uint16_t h)
{
  const int e = (h >> 10) & 31, m = h & 1023;
  const double s = h & 0x8000 ? -1 : 1;
  if (e == 31)
    return m ? NAN : s * INFINITY;
  return s * (e ? ldexp(1024 + m, e - 25) : ldexp(m, -24));
}

static uint16_t
d2b(double d)
{
  float f = (float)d;
  uint32_t u;
  memcpy(&u, &f, 4);
  if (f != f)
    return (uint16_t)((u >> 16) | 0x40);
  return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

static double
b2d(uint16_t b)
{
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* element i of storage s as a double, and x stored (rounded to nearest even) */
static double
get(coil_dtype t, const void *s, int64_t i)
{
  switch (t) {
  case COIL_F16: return h2d(((const uint16_t *)s)[i]);
  case COIL_BF16: return b2d(((const uint16_t *)s)[i]);
  case COIL_F32: return ((const float *)s)[i];
  default: return ((const double *)s)[i];
  }
}

static void
put(coil_dtype t, void *s, int64_t i, double x)
{
  switch (t) {
  case COIL_F16: ((uint16_t *)s)[i] = f2h((float)x); break;
  case COIL_BF16: ((uint16_t *)s)[i] = d2b(x); break;
  case COIL_F32: ((float *)s)[i] = (float)x; break;
  default: ((double *)s)[i] = x; break;
  }
}

static uint64_t rng = 0x2545f4914f6cdd1dull;

static double
uniform(double lo, double hi)
{
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

/* ---- the cases ---- */

enum { M_NONE, M_FULL, M_CAUSAL, M_PAD, M_ROW };                       /* mask kinds */
enum { L_DENSE, L_PERMUTED, L_KVBCAST, L_KT, L_UNALIGNED, L_ODDROW, L_HUGEROW, L_R5 }; /* layouts */

typedef struct {
  const char *name;
  coil_dtype dt;
  int B, H;              /* batch dims [B, H] (H 0: rank 3, [B]) */
  int64_t Lq, S, E, Ev;
  int mask, layout;
  bool nan_rows;         /* masked_rows = 'nan' */
  double scale;          /* 0: 1 / sqrt(E) */
  int tc;                /* the tensor-core kernel expected: index into tc_kernels + 1; 0: SIMT;
                            -(index + 1): that kernel refuses the operands (SIMT runs) */
} acase;

/* the tensor-core kernels under test: the plugin's default tiles and others */
typedef struct {
  coil_dtype dt;
  int hd, br, bc, wm, st, minb;
  bool mask;
  bool wg; /* attn_wg (wgmma): br = 64 warpgroups, bc = keys a step */
} tck;
static const tck tc_kernels[] = {
    {COIL_F16, 64, 128, 64, 1, 2, 2, false, false},  /* 1: the defaults for hd 64 */
    {COIL_F16, 64, 128, 32, 1, 3, 2, true, false},   /* 2 */
    {COIL_BF16, 64, 128, 64, 1, 2, 2, false, false}, /* 3 */
    {COIL_BF16, 64, 128, 32, 1, 3, 2, true, false},  /* 4 */
    {COIL_F16, 32, 128, 64, 1, 2, 2, false, false},  /* 5: for hd 32 */
    {COIL_BF16, 32, 128, 64, 1, 2, 2, true, false},  /* 6 */
    {COIL_F16, 128, 128, 32, 1, 2, 1, false, false}, /* 7: for hd 128 */
    {COIL_BF16, 128, 128, 32, 1, 2, 1, true, false}, /* 8 */
    {COIL_F16, 64, 128, 32, 1, 3, 2, false, false},  /* 9: other tiles */
    {COIL_F16, 64, 64, 128, 1, 4, 2, false, false},  /* 10 */
    {COIL_F16, 64, 128, 64, 2, 2, 1, true, false},   /* 11: two m tiles a warp */
    {COIL_BF16, 128, 64, 64, 1, 3, 1, false, false}, /* 12 */
    {COIL_F16, 32, 64, 16, 2, 2, 1, false, false},   /* 13 */
    {COIL_F16, 64, 128, 128, 0, 2, 2, false, true},   /* 14: wgmma, the defaults for hd 64 */
    {COIL_BF16, 64, 128, 128, 0, 2, 2, true, true},   /* 15 */
    {COIL_F16, 128, 128, 64, 0, 2, 2, false, true},   /* 16: for hd 128 */
    {COIL_BF16, 128, 128, 64, 0, 2, 2, true, true},   /* 17 */
    {COIL_F16, 64, 64, 64, 0, 2, 1, true, true},      /* 18: one warpgroup, 64 keys a step */
    {COIL_BF16, 128, 64, 128, 0, 2, 1, false, true},  /* 19 */
};
#define NTC (int)(sizeof tc_kernels / sizeof *tc_kernels)

static const acase cases[] = {
    /* the SIMT kernel, every dtype */
    {"simt f32 base", COIL_F32, 2, 3, 37, 45, 40, 24, M_NONE, L_DENSE, false, 0, 0},
    {"simt f64 base", COIL_F64, 2, 2, 19, 70, 33, 65, M_NONE, L_DENSE, false, 0, 0},
    {"simt f16 odd", COIL_F16, 1, 2, 17, 33, 9, 7, M_NONE, L_DENSE, false, 0, 0},
    {"simt bf16 odd", COIL_BF16, 3, 0, 5, 100, 3, 130, M_NONE, L_DENSE, false, 0, 0},
    {"simt f32 one", COIL_F32, 1, 0, 1, 1, 1, 1, M_NONE, L_DENSE, false, 0, 0},
    {"simt f32 E 100 Ev 1", COIL_F32, 2, 0, 16, 32, 100, 1, M_NONE, L_DENSE, false, 0, 0},
    {"simt f32 peaky", COIL_F32, 1, 2, 33, 200, 16, 16, M_NONE, L_DENSE, false, 4.0, 0},
    {"simt f32 S 0", COIL_F32, 2, 2, 9, 0, 8, 8, M_NONE, L_DENSE, true, 0, 0},
    {"simt f32 L 0", COIL_F32, 2, 2, 0, 9, 8, 8, M_NONE, L_DENSE, true, 0, 0},
    {"simt f32 full mask zero", COIL_F32, 2, 2, 20, 40, 16, 16, M_FULL, L_DENSE, false, 0, 0},
    {"simt f64 full mask nan", COIL_F64, 2, 2, 20, 40, 16, 16, M_FULL, L_DENSE, true, 0, 0},
    {"simt f32 causal", COIL_F32, 2, 2, 30, 30, 8, 8, M_CAUSAL, L_DENSE, false, 0, 0},
    {"simt f32 causal L<S", COIL_F32, 1, 2, 13, 40, 8, 12, M_CAUSAL, L_DENSE, true, 0, 0},
    {"simt f16 padding", COIL_F16, 3, 2, 21, 50, 16, 16, M_PAD, L_DENSE, false, 0, 0},
    {"simt f32 row mask nan", COIL_F32, 2, 2, 25, 20, 8, 8, M_ROW, L_DENSE, true, 0, 0},
    {"simt f32 row mask zero", COIL_F32, 2, 2, 25, 20, 8, 8, M_ROW, L_DENSE, false, 0, 0},
    {"simt f32 permuted", COIL_F32, 2, 3, 20, 20, 12, 12, M_NONE, L_PERMUTED, false, 0, 0},
    {"simt f32 kv broadcast", COIL_F32, 2, 3, 20, 25, 12, 12, M_FULL, L_KVBCAST, false, 0, 0},
    {"simt f64 k transposed", COIL_F64, 2, 2, 20, 25, 12, 10, M_NONE, L_KT, false, 0, 0},
    {"simt f32 rank 5", COIL_F32, 2, 3, 9, 17, 8, 8, M_FULL, L_R5, false, 0, 0},
    /* the tensor-core kernel */
    {"tc f16 d64", COIL_F16, 1, 2, 130, 100, 64, 64, M_NONE, L_DENSE, false, 0, 1},
    {"tc f16 d64 peaky", COIL_F16, 1, 1, 64, 300, 64, 64, M_NONE, L_DENSE, false, 1.0, 1},
    {"tc f16 d64 one", COIL_F16, 1, 1, 1, 1, 64, 64, M_NONE, L_DENSE, true, 0, 1},
    {"tc f16 d64 permuted", COIL_F16, 2, 2, 40, 70, 64, 64, M_NONE, L_PERMUTED, false, 0, 1},
    {"tc f16 d64 kv broadcast", COIL_F16, 2, 2, 33, 65, 64, 64, M_NONE, L_KVBCAST, false, 0, 1},
    {"tc f16 d64 full mask zero", COIL_F16, 1, 2, 70, 90, 64, 64, M_FULL, L_DENSE, false, 0, 2},
    {"tc f16 d64 causal nan", COIL_F16, 1, 1, 100, 100, 64, 64, M_CAUSAL, L_DENSE, true, 0, 2},
    {"tc bf16 d64", COIL_BF16, 1, 2, 50, 129, 64, 64, M_NONE, L_DENSE, false, 0, 3},
    {"tc bf16 d64 padding", COIL_BF16, 2, 1, 30, 77, 64, 64, M_PAD, L_DENSE, false, 0, 4},
    {"tc bf16 d64 row mask nan", COIL_BF16, 1, 2, 40, 40, 64, 64, M_ROW, L_DENSE, true, 0, 4},
    {"tc f16 d32", COIL_F16, 1, 2, 150, 140, 32, 32, M_NONE, L_DENSE, false, 0, 5},
    {"tc bf16 d32 causal", COIL_BF16, 1, 1, 60, 90, 32, 32, M_CAUSAL, L_DENSE, false, 0, 6},
    {"tc f16 d128", COIL_F16, 1, 1, 70, 100, 128, 128, M_NONE, L_DENSE, false, 0, 7},
    {"tc bf16 d128 full", COIL_BF16, 1, 1, 40, 50, 128, 128, M_FULL, L_DENSE, true, 0, 8},
    {"tc f16 d64 128x32x1x3", COIL_F16, 1, 1, 130, 150, 64, 64, M_NONE, L_DENSE, false, 0, 9},
    {"tc f16 d64 64x128x1x4", COIL_F16, 1, 1, 70, 300, 64, 64, M_NONE, L_DENSE, false, 0, 10},
    {"tc f16 d64 128x64x2x2 mask", COIL_F16, 1, 1, 100, 100, 64, 64, M_CAUSAL, L_DENSE, false, 0, 11},
    {"tc bf16 d128 64x64x1x3", COIL_BF16, 1, 1, 65, 200, 128, 128, M_NONE, L_DENSE, false, 0, 12},
    {"tc f16 d32 64x16x2x2", COIL_F16, 1, 1, 40, 50, 32, 32, M_NONE, L_DENSE, false, 0, 13},
    /* refused by the tensor-core kernel: the SIMT one runs */
    /* the wgmma kernel (partial tiles of rows and keys, masks, views, both head dims) */
    {"wg f16 d64", COIL_F16, 1, 2, 130, 300, 64, 64, M_NONE, L_DENSE, false, 0, 14},
    {"wg f16 d64 one", COIL_F16, 1, 1, 1, 1, 64, 64, M_NONE, L_DENSE, true, 0, 14},
    {"wg f16 d64 peaky", COIL_F16, 1, 1, 64, 300, 64, 64, M_NONE, L_DENSE, false, 1.0, 14},
    {"wg f16 d64 permuted", COIL_F16, 2, 2, 40, 70, 64, 64, M_NONE, L_PERMUTED, false, 0, 14},
    {"wg f16 d64 kv broadcast", COIL_F16, 2, 2, 33, 65, 64, 64, M_NONE, L_KVBCAST, false, 0, 14},
    {"wg bf16 d64 causal nan", COIL_BF16, 1, 1, 100, 200, 64, 64, M_CAUSAL, L_DENSE, true, 0, 15},
    {"wg bf16 d64 padding", COIL_BF16, 2, 1, 30, 77, 64, 64, M_PAD, L_DENSE, false, 0, 15},
    {"wg f16 d128", COIL_F16, 1, 1, 70, 150, 128, 128, M_NONE, L_DENSE, false, 0, 16},
    {"wg bf16 d128 full mask nan", COIL_BF16, 1, 1, 40, 150, 128, 128, M_FULL, L_DENSE, true, 0, 17},
    {"wg f16 d64 64x64 row mask zero", COIL_F16, 1, 2, 70, 100, 64, 64, M_ROW, L_DENSE, false, 0, 18},
    {"wg bf16 d128 64x128", COIL_BF16, 2, 1, 65, 200, 128, 128, M_NONE, L_DENSE, false, 0, 19},
    {"wg->simt huge row stride", COIL_F16, 1, 1, 3, 2, 64, 64, M_NONE, L_HUGEROW, false, 0, -14},
    {"tc->simt unaligned", COIL_F16, 1, 2, 20, 30, 64, 64, M_NONE, L_UNALIGNED, false, 0, -1},
    {"tc->simt odd row stride", COIL_F16, 1, 2, 20, 30, 64, 64, M_NONE, L_ODDROW, false, 0, -1},
    {"tc->simt k transposed", COIL_F16, 1, 2, 20, 30, 64, 64, M_NONE, L_KT, false, 0, -1},
    {"tc->simt negative scale", COIL_F16, 1, 2, 20, 30, 64, 64, M_NONE, L_DENSE, false, -0.3, -1},
    {"tc->simt no mask kernel", COIL_F16, 1, 2, 20, 30, 64, 64, M_FULL, L_DENSE, false, 0, -1},
};

/* One operand: its storage (with room around it) and its view. */
typedef struct {
  void *store;
  coil_gpu_buf b;
} operand;

static void
view(operand *o, coil_dtype t, int rank, const int64_t *sizes, const int64_t *strides, int64_t offset, int64_t span)
{
  size_t es = coil_dtype_size(t);
  o->store = calloc((size_t)(span + offset + 16), es);
  o->b = (coil_gpu_buf){.dtype = t, .rank = rank, .live = true};
  memcpy(o->b.sizes, sizes, sizeof(int64_t) * (size_t)rank);
  memcpy(o->b.strides, strides, sizeof(int64_t) * (size_t)rank);
  o->b.start = (uintptr_t)o->store;
  o->b.ptr = o->b.start + (uint64_t)offset * es;
}

static int64_t
offset_of(const coil_gpu_buf *b, const int64_t *idx)
{
  int64_t o = 0;
  for (int d = 0; d < b->rank; d++)
    o += (b->sizes[d] == 1 ? 0 : idx[d]) * b->strides[d];
  return o;
}

static double
at(const coil_gpu_buf *b, const int64_t *idx)
{
  return get(b->dtype, (const void *)(uintptr_t)b->ptr, offset_of(b, idx));
}

/* fills every element of the view (through its strides) with values from f */
static void
fill(operand *o, double (*f)(const int64_t *idx, void *u), void *u)
{
  const coil_gpu_buf *b = &o->b;
  int64_t n = coil_gpu_buf_numel(b), idx[COIL_MAX_RANK] = {0};
  for (int64_t i = 0; i < n; i++) {
    put(b->dtype, (void *)(uintptr_t)b->ptr, offset_of(b, idx), f(idx, u));
    for (int d = b->rank - 1; d >= 0 && ++idx[d] == b->sizes[d]; d--)
      idx[d] = 0;
  }
}

static double
rand_value(const int64_t *idx, void *u)
{
  (void)idx;
  const double *r = u;
  return uniform(-r[0], r[0]);
}

typedef struct {
  int kind, r;
  int64_t Lq, S;
} mask_fill;

static double
mask_value(const int64_t *idx, void *u)
{
  const mask_fill *m = u;
  int64_t i = idx[m->r - 2], j = idx[m->r - 1];
  switch (m->kind) {
  case M_FULL: /* random, a fifth -inf, and rows 3 and 7 (of every batch) all -inf */
    return i == 3 || i == 7 || uniform(0, 1) < 0.2 ? -INFINITY : uniform(-3, 3);
  case M_CAUSAL: return j > i ? -INFINITY : 0;                 /* top-left aligned, as torch's is_causal */
  case M_PAD: return j >= m->S - 5 - idx[0] ? -INFINITY : 0;        /* the last 5 + b keys of batch b */
  default: return i % 4 == 1 ? -INFINITY : uniform(-2, 2);          /* M_ROW: a value per row */
  }
}

/* The contiguous strides of sizes. */
static void
contiguous(int rank, const int64_t *sizes, int64_t *strides)
{
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--)
    strides[d] = s, s *= sizes[d] > 0 ? sizes[d] : 1;
}

static int64_t
span_of(int rank, const int64_t *sizes, const int64_t *strides)
{
  int64_t hi = 0;
  for (int d = 0; d < rank; d++)
    if (sizes[d] > 0)
      hi += (sizes[d] - 1) * strides[d];
  return hi + 1;
}

/* the reference: the double softmax of the stored values, masked rows as the line says */
static void
reference(const acase *c, const coil_gpu_buf *const ops[4], const coil_gpu_buf *out, double scale, double *ref)
{
  const int r = out->rank, nb = r - 2;
  int64_t n = 1, idx[COIL_MAX_RANK] = {0};
  for (int d = 0; d < nb; d++)
    n *= out->sizes[d];
  double *p = malloc(sizeof(double) * (size_t)(c->S + 1));
  for (int64_t b = 0; b < n; b++) {
    for (int64_t i = 0; i < c->Lq; i++) {
      double mx = -INFINITY;
      for (int64_t j = 0; j < c->S; j++) {
        double s = 0;
        for (int64_t e = 0; e < c->E; e++) {
          idx[nb] = i, idx[nb + 1] = e;
          double qv = at(ops[0], idx);
          idx[nb] = j;
          s += qv * at(ops[1], idx);
        }
        s *= scale;
        if (ops[3])
          idx[nb] = i, idx[nb + 1] = j, s += at(ops[3], idx);
        p[j] = s;
        mx = s > mx ? s : mx;
      }
      double sum = 0;
      for (int64_t j = 0; j < c->S; j++)
        sum += p[j] = mx == -INFINITY ? 0 : exp(p[j] - mx);
      for (int64_t e = 0; e < c->Ev; e++) {
        double o = 0;
        for (int64_t j = 0; j < c->S; j++) {
          idx[nb] = j, idx[nb + 1] = e;
          o += p[j] * at(ops[2], idx);
        }
        ref[(b * c->Lq + i) * c->Ev + e] = c->S == 0 ? 0 : mx == -INFINITY ? (c->nan_rows ? NAN : 0) : o / sum;
      }
    }
    for (int d = nb - 1; d >= 0 && ++idx[d] == out->sizes[d]; d--)
      idx[d] = 0;
  }
  free(p);
}

static void *
kernel_fn(const cuda_attn_kernel *k)
{
  char name[96];
  cuda_attention_kernel_name(k, name, sizeof name);
  void *f = dlsym(so_handle, name);
  if (!f)
    fprintf(stderr, "FAIL: the host object has no %s\n", name);
  return f;
}

static cuda_attn_kernel
tc_desc(const tck *t)
{
  return (cuda_attn_kernel){.dtype = t->dt, .tc = true, .wg = t->wg, .mask = t->mask, .hd = t->hd, .br = t->br,
                            .bc = t->bc, .wm = t->wm, .stages = t->st, .minb = t->minb};
}

/* Runs case c (scheduled by order); returns the number of failures. */
static int
run_case(const acase *c, unsigned order)
{
  const coil_dtype t = c->dt;
  const bool r3 = c->H == 0, r5 = c->layout == L_R5;
  const int r = r5 ? 5 : r3 ? 3 : 4, nb = r - 2;
  int64_t bsz[3] = {c->B, c->H, 1};
  if (r5) /* [B, H, 1, L, E] with q [B, H, 1] and k, v [B, 1, 1] over a merged [B*H] */
    bsz[2] = 1;
  int64_t qs[5], ks[5], vs[5], os[5], ms[5], qst[5], kst[5], vst[5], ost[5], mst[5];
  for (int d = 0; d < nb; d++)
    qs[d] = ks[d] = vs[d] = os[d] = ms[d] = bsz[d];
  qs[nb] = c->Lq, qs[nb + 1] = c->E, ks[nb] = c->S, ks[nb + 1] = c->E, vs[nb] = c->S, vs[nb + 1] = c->Ev;
  os[nb] = c->Lq, os[nb + 1] = c->Ev, ms[nb] = c->Lq, ms[nb + 1] = c->S;
  if (c->layout == L_KVBCAST || r5)
    ks[1] = vs[1] = 1; /* k and v broadcast over heads */
  if (c->mask == M_CAUSAL)
    for (int d = 0; d < nb; d++)
      ms[d] = 1;
  if (c->mask == M_PAD)
    ms[1] = 1, ms[nb] = 1;
  if (c->mask == M_ROW)
    ms[nb + 1] = 1;
  contiguous(r, qs, qst), contiguous(r, ks, kst), contiguous(r, vs, vst), contiguous(r, os, ost), contiguous(r, ms, mst);
  int64_t qoff = 0, koff = 0, voff = 0;
  if (c->layout == L_PERMUTED) /* q and out: [B, H, L, E] views of [B, L, H, E] */
    for (int pass = 0; pass < 2; pass++) {
      int64_t *s = pass ? ost : qst, last = pass ? c->Ev : c->E;
      s[3] = 1, s[1] = last, s[2] = (int64_t)c->H * last, s[0] = c->Lq * s[2];
    }
  if (c->layout == L_KVBCAST) /* and stride 0 where the size is 1 */
    kst[1] = vst[1] = 0;
  if (c->layout == L_KT) { /* k as the transposed view of [.., E, S] */
    kst[nb] = 1, kst[nb + 1] = c->S;
  }
  if (c->layout == L_UNALIGNED)
    qoff = 1, koff = 3, voff = 5;
  if (c->layout == L_HUGEROW) { /* k's rows 2^24 elements apart (attn_wg's offsets are 32-bit) */
    kst[nb] = (int64_t)1 << 24;
    for (int d = nb - 1; d >= 0; d--)
      kst[d] = kst[d + 1] * ks[d + 1];
  }
  if (c->layout == L_ODDROW) { /* k's rows E + 2 elements apart */
    kst[nb] = c->E + 2;
    for (int d = nb - 1; d >= 0; d--)
      kst[d] = kst[d + 1] * ks[d + 1];
  }
  operand q, k, v, m = {0}, o;
  view(&q, t, r, qs, qst, qoff, span_of(r, qs, qst));
  view(&k, t, r, ks, kst, koff, span_of(r, ks, kst));
  view(&v, t, r, vs, vst, voff, span_of(r, vs, vst));
  view(&o, t, r, os, ost, 0, span_of(r, os, ost));
  if (c->mask != M_NONE)
    view(&m, t, r, ms, mst, 0, span_of(r, ms, mst));
  double range = 2;
  fill(&q, rand_value, &range);
  fill(&k, rand_value, &range);
  fill(&v, rand_value, &range);
  mask_fill mf = {c->mask, r, c->Lq, c->S};
  if (c->mask != M_NONE)
    fill(&m, mask_value, &mf);
  const double scale = c->scale ? c->scale : 1 / sqrt((double)(c->E ? c->E : 1));
  const coil_gpu_buf *ops[4] = {&q.b, &k.b, &v.b, c->mask != M_NONE ? &m.b : NULL};

  cuda_attn_kernel tcd = {0};
  const cuda_attn_kernel *tc = NULL;
  if (c->tc > 0)
    tcd = tc_desc(&tc_kernels[c->tc - 1]), tc = &tcd;
  else if (c->tc < 0) /* a tensor-core kernel that must refuse: tc_kernels[-tc - 1] */
    tcd = tc_desc(&tc_kernels[-c->tc - 1]), tc = &tcd;
  cuda_attn_launch L;
  char why[400];
  int fails = 0;
  const char *err = cuda_attention_prepare(ops, &o.b, scale, c->nan_rows, tc, &L, why, sizeof why);
  if (err) {
    printf("FAIL %s: prepare: %s\n", c->name, err);
    fails++;
    goto done;
  }
  const cuda_attn_path want = c->Lq == 0 ? CUDA_ATTN_NOTHING : c->tc > 0 ? CUDA_ATTN_TC : CUDA_ATTN_SIMT;
  if (L.path != want) {
    printf("FAIL %s: path %d, expected %d\n", c->name, L.path, want);
    fails++;
    goto done;
  }
  int64_t n = coil_gpu_buf_numel(&o.b);
  for (int64_t i = 0; i < n; i++) /* poison */
    put(t, o.store, i, NAN);
  if (L.path != CUDA_ATTN_NOTHING) {
    cuda_attn_kernel simt = {.dtype = t};
    void *fn = kernel_fn(L.path == CUDA_ATTN_TC ? tc : &simt);
    if (!fn || host_launch((void (*)(const void *))fn, L.grid_x, L.grid_y, L.threads, L.smem, &L.prm, order) != 0) {
      printf("FAIL %s: launch\n", c->name);
      fails++;
      goto done;
    }
  }
  double *ref = malloc(sizeof(double) * (size_t)(n + 1)), vmax = 0;
  reference(c, ops, &o.b, scale, ref);
  for (int64_t i = 0; i < coil_gpu_buf_numel(&v.b); i++) {
    int64_t idx[COIL_MAX_RANK], rem = i;
    for (int d = r - 1; d >= 0; d--)
      idx[d] = rem % v.b.sizes[d], rem /= v.b.sizes[d];
    vmax = fmax(vmax, fabs(at(&v.b, idx)));
  }
  /* P rounded to f16/bf16 on the tensor cores, the output rounded once */
  const double tol = t == COIL_F64 ? 1e-12 : t == COIL_F32 ? 3e-5 : t == COIL_F16 ? 2.5e-3 : 2e-2;
  int64_t bad = 0, idx[COIL_MAX_RANK] = {0};
  double worst = 0;
  if (L.path != CUDA_ATTN_NOTHING)
    for (int64_t i = 0; i < n; i++) {
      double got = at(&o.b, idx), want_v = ref[i], err_v = fabs(got - want_v);
      bool ok = isnan(want_v) ? isnan(got) : err_v <= tol * (vmax + fabs(want_v));
      if (!ok && bad++ < 4)
        printf("  %s: element %lld: got %.9g, expected %.9g\n", c->name, (long long)i, got, want_v);
      if (!isnan(want_v) && err_v > worst)
        worst = err_v;
      for (int d = r - 1; d >= 0 && ++idx[d] == o.b.sizes[d]; d--)
        idx[d] = 0;
    }
  free(ref);
  if (bad) {
    printf("FAIL %s (order %u): %lld of %lld elements wrong\n", c->name, order, (long long)bad, (long long)n);
    fails++;
  } else
    printf("ok   %-32s %-5s %s grid %ux%u, worst error %.3g\n", c->name, order ? (order == 1 ? "back" : "shuf") : "",
           L.path == CUDA_ATTN_TC ? (tc->wg ? "wg  " : "tc  ") : L.path == CUDA_ATTN_SIMT ? "simt" : "none", L.grid_x,
           L.grid_y, worst);
done:
  free(q.store), free(k.store), free(v.store), free(o.store), free(m.store);
  return fails;
}

/* c++ builds src into so; false (its messages on stderr) if it fails */
static bool
compile(const char *src, const char *so)
{
  char *argv[] = {"c++", "-std=c++17", "-O1", "-fPIC", "-shared", "-fno-strict-aliasing", "-Wno-unknown-pragmas", "-o",
                  (char *)so, (char *)src, NULL};
  pid_t pid;
  int st;
  if (posix_spawnp(&pid, "c++", NULL, NULL, argv, environ) != 0 || waitpid(pid, &st, 0) != pid)
    return false;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static bool
on_path(const char *exe)
{
  const char *path = getenv("PATH");
  for (const char *s = path ? path : ""; *s;) {
    const char *e = strchr(s, ':');
    if (!e)
      e = s + strlen(s);
    char dir[1024];
    snprintf(dir, sizeof dir, "%.*s/%s", (int)(e - s), e == s ? "." : s, exe);
    if (access(dir, X_OK) == 0)
      return true;
    s = *e ? e + 1 : e;
  }
  return false;
}

int
main(int argc, char **argv)
{
  const char *only = argc > 1 ? argv[1] : NULL;
  if (!on_path("c++")) {
    printf("SKIP: no c++ on PATH to build the host kernels\n");
    return 77;
  }
  /* the kernels: SIMT per dtype, the tensor-core ones under test; the text is the plugin's */
  coil_strbuf src = {0};
  coil_strbuf_puts(&src, "#include \"" ATTN_HOST_HPP "\"\n");
  coil_strbuf_puts(&src, cuda_attention_cu);
  const coil_dtype dts[] = {COIL_F16, COIL_BF16, COIL_F32, COIL_F64};
  for (int i = 0; i < 4; i++)
    cuda_attention_instance(&(cuda_attn_kernel){.dtype = dts[i]}, &src);
  for (int i = 0; i < NTC; i++) {
    cuda_attn_kernel k = tc_desc(&tc_kernels[i]);
    cuda_attention_instance(&k, &src);
  }
  const char *tmp = getenv("TMPDIR");
  char dir[512], cpp[600], so[600];
  snprintf(dir, sizeof dir, "%s/coil-attn-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    fprintf(stderr, "FAIL: mkdtemp %s: %s\n", dir, strerror(errno));
    return 1;
  }
  snprintf(cpp, sizeof cpp, "%s/attention.cpp", dir);
  snprintf(so, sizeof so, "%s/attention.so", dir);
  FILE *f = fopen(cpp, "w");
  if (!f || fputs(src.s, f) < 0 || fclose(f) != 0) {
    fprintf(stderr, "FAIL: cannot write %s\n", cpp);
    return 1;
  }
  coil_strbuf_free(&src);
  if (!compile(cpp, so)) {
    fprintf(stderr, "FAIL: c++ could not build %s\n", cpp);
    return 1;
  }
  so_handle = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!so_handle || !(*(void **)&host_launch = dlsym(so_handle, "attn_host_launch"))) {
    fprintf(stderr, "FAIL: cannot load %s: %s\n", so, dlerror());
    return 1;
  }
  unlink(cpp), unlink(so), rmdir(dir);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int fails = 0, ran = 0;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    if (only && !strstr(cases[i].name, only))
      continue;
    fails += run_case(&cases[i], 0);
    ran++;
    if (cases[i].tc > 0 && (cases[i].layout == L_DENSE || cases[i].layout == L_PERMUTED) && cases[i].S > 64) {
      fails += run_case(&cases[i], 1); /* races between warps: other schedules */
      fails += run_case(&cases[i], 7 + (unsigned)i);
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("%d cases, %d failures (%.1f s)\n", ran, fails, (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
  return fails ? 1 : 0;
}
