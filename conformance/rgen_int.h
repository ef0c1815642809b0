/* rgen_int.h — what the random tier's generator files share (private to rgen*.c; rgen.h is the
 * public side): the generator's random numbers, facts about a value (dtype class, sizes at the
 * largest s0), the statement builders (rgen.c) and the op-family generators that rg_generate()
 * chooses between (rgen_math.c: pointwise, reductions, scans, multi-output; rgen_shape.c: views,
 * splits, indexing, matmul, creation). An op generator returns its result's value index, or -1
 * when it gave up (rg_generate() then undoes what the attempt added). */
#ifndef COIL_RGEN_INT_H
#define COIL_RGEN_INT_H

#include "rgen.h"

#include <math.h>

#define BIG 1e300
#define S0_MAX 6        /* the largest s0 a run binds: bounds sums and sizes */
#define NUMEL_MAX 2048  /* no value larger than this (at S0_MAX) */

/* ---- random numbers (xorshift64*) ---- */

static inline uint64_t
next(uint64_t *s)
{
  *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
  return *s * 0x2545f4914f6cdd1dull;
}

static inline int
rnd(rg_graph *g, int n)
{
  return n > 0 ? (int)(next(&g->rng) % (uint64_t)n) : 0;
}

static inline bool
chance(rg_graph *g, int percent)
{
  return rnd(g, 100) < percent;
}

/* ---- values ---- */

static inline bool
is_fl(coil_dtype t)
{
  return t == COIL_F32 || t == COIL_F16 || t == COIL_BF16;
}

static inline bool
is_int(coil_dtype t)
{
  return t == COIL_I64;
}

/* PyTorch's promotion of two tensors of the same class (both with dims, or both without). */
static inline coil_dtype
promote(coil_dtype a, coil_dtype b)
{
  if (a == b)
    return a;
  if (is_fl(a) && is_fl(b))
    return COIL_F32; /* f16 with bf16, or either with f32 */
  if (is_fl(a))
    return a;
  if (is_fl(b))
    return b;
  return COIL_I64; /* bool with i64 */
}

/* A half-precision value rounded upstream: sums of such values cancel to a few ulps that f64
 * (ref) and f32 (a plugin) round differently, past the f16/bf16 NMSE bound; reductions and
 * matmuls take exact half-precision operands only. */
static inline bool
half_rounded(const rg_val *v)
{
  return (v->dt == COIL_F16 || v->dt == COIL_BF16) && !v->exact;
}

static inline double
fmax_elem(const rg_val *v)
{
  return fmax(fabs(v->lo), fabs(v->hi));
}

static inline int64_t
dim_max(rg_dim d)
{
  return d.m ? d.m * S0_MAX : d.c;
}

static inline int64_t
numel_max(const rg_val *v)
{
  int64_t n = 1;
  for (int k = 0; k < v->rank; k++)
    n *= dim_max(v->d[k]);
  return n;
}

static inline bool
dim_eq(rg_dim a, rg_dim b)
{
  return a.m == b.m && (a.m || a.c == b.c);
}

static inline bool
dim_one(rg_dim a)
{
  return !a.m && a.c == 1;
}

/* ---- what an op asks of an operand ---- */

typedef struct {
  unsigned dts;     /* bit per dtype: 1 f32, 2 f16, 4 bf16, 8 i64, 16 bool */
  int min_rank, max_rank;
  bool exact;       /* floats must be exact */
  bool concrete;    /* no s0 size */
} rg_want;

enum { W_F32 = 1, W_F16 = 2, W_BF16 = 4, W_I64 = 8, W_BOOL = 16 };
#define W_FL (W_F32 | W_F16 | W_BF16)
#define W_NUM (W_FL | W_I64)
#define W_ALL (W_NUM | W_BOOL)

static inline unsigned
dt_bit(coil_dtype t)
{
  switch (t) {
  case COIL_F32: return W_F32;
  case COIL_F16: return W_F16;
  case COIL_BF16: return W_BF16;
  case COIL_I64: return W_I64;
  case COIL_BOOL: return W_BOOL;
  default: return 0;
  }
}

/* ---- building statements (rgen.c) ---- */

int rg_new_input(rg_graph *g, coil_dtype dt, int rank, const rg_dim *d, double lo, double hi);
/* A value of an op's result: operand-independent fields set. */
rg_val rg_result(coil_dtype dt, int rank, const rg_dim *d, double lo, double hi, bool exact, bool contig);
/* Adds a statement whose results are res[0..nres-1]; returns the first result's index. */
int rg_emit(rg_graph *g, const char *text, int nres, rg_val *res);
int rg_emit1(rg_graph *g, const char *text, rg_val r);
/* "[a, b, c]" of sizes (s0 multiples as -1 is the caller's business). */
void rg_list_text(const int64_t *x, int n, char *out, size_t cap);
/* A dim written as given or, half the time, negative. */
int rg_dim_arg(rg_graph *g, int d, int rank);

/* ---- choosing operands (rgen.c) ---- */

bool rg_ok_want(const rg_val *v, const void *arg);
coil_dtype rg_random_dtype(rg_graph *g, unsigned dts);
/* The range of a fresh input's values: floats normals clamped to [-4, 4], integers [-5, 5]. */
void rg_input_range(coil_dtype t, double *lo, double *hi);
/* An operand as w asks: mostly a value already there, else a fresh input. -1 if none. */
int rg_operand(rg_graph *g, const rg_want *w);
/* Broadcast-compatible: aligned trailing dims equal or one of them 1. */
bool rg_broadcasts(const rg_val *a, const rg_val *b);
/* A value to combine with a elementwise: one already there or a new input of a shape that
 * broadcasts with a (trailing dims, some 1, some widening a's 1s). */
int rg_partner(rg_graph *g, int a, unsigned dts, bool exact, bool same_dtype);
/* The broadcast shape of a and b into out; returns its rank. */
int rg_bshape(const rg_val *a, const rg_val *b, rg_dim *out);
/* Some of x's dims chosen (at least one where x has any): mask[k] set, list the "[d, ...]"
 * text; returns how many. */
int rg_dims_of(rg_graph *g, const rg_val *x, bool *mask, char *list, size_t n);
/* Guards: statements that put value a into an op's domain (> 0.1; (-0.9, 0.9)); return the
 * guarded value (a itself when it is already there). */
int rg_guard_positive(rg_graph *g, int a);
int rg_guard_unit(rg_graph *g, int a);

/* ---- op families ---- */

/* rgen_math.c */
int rg_gen_unary(rg_graph *g);
int rg_gen_binary(rg_graph *g);
int rg_gen_scalar(rg_graph *g);
int rg_gen_cast(rg_graph *g);
int rg_gen_reduce(rg_graph *g);
int rg_gen_scan_softmax(rg_graph *g);
int rg_gen_multi(rg_graph *g);
/* rgen_shape.c */
int rg_gen_view(rg_graph *g);
int rg_gen_split(rg_graph *g);
int rg_gen_index(rg_graph *g);
int rg_gen_matmul(rg_graph *g);
int rg_gen_create(rg_graph *g);

#endif
