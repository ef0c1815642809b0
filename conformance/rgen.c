/* rgen.c — the random tier's generator (rgen.h): graphs built one statement at a time, each op
 * chosen only where the operands it is handed meet its rules (dtype, rank, sizes, value
 * domain), over pointwise math, broadcasts, dtype mixes, reductions, scans, views, indexing,
 * library ops and multi-output ops, with sizes that are multiples of s0 where a graph is
 * symbolic. */
#include "rgen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG 1e300
#define S0_MAX 6        /* the largest s0 a run binds: bounds sums and sizes */
#define NUMEL_MAX 2048  /* no value larger than this (at S0_MAX) */

/* ---- random numbers (xorshift64*) ---- */

static uint64_t
next(uint64_t *s)
{
  *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
  return *s * 0x2545f4914f6cdd1dull;
}

static int
rnd(rg_graph *g, int n)
{
  return n > 0 ? (int)(next(&g->rng) % (uint64_t)n) : 0;
}

static bool
chance(rg_graph *g, int percent)
{
  return rnd(g, 100) < percent;
}

/* ---- values ---- */

static bool
is_fl(coil_dtype t)
{
  return t == COIL_F32 || t == COIL_F16 || t == COIL_BF16;
}

static bool
is_int(coil_dtype t)
{
  return t == COIL_I64;
}

/* PyTorch's promotion of two tensors of the same class (both with dims, or both without). */
static coil_dtype
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
static bool
half_rounded(const rg_val *v)
{
  return (v->dt == COIL_F16 || v->dt == COIL_BF16) && !v->exact;
}

static double
fmax_elem(const rg_val *v)
{
  return fmax(fabs(v->lo), fabs(v->hi));
}

static int64_t
dim_max(rg_dim d)
{
  return d.m ? d.m * S0_MAX : d.c;
}

static int64_t
numel_max(const rg_val *v)
{
  int64_t n = 1;
  for (int k = 0; k < v->rank; k++)
    n *= dim_max(v->d[k]);
  return n;
}

static bool
dim_eq(rg_dim a, rg_dim b)
{
  return a.m == b.m && (a.m || a.c == b.c);
}

static bool
dim_one(rg_dim a)
{
  return !a.m && a.c == 1;
}

static void
dim_text(rg_dim d, char *out, size_t n)
{
  if (d.m == 1)
    snprintf(out, n, "s0");
  else if (d.m)
    snprintf(out, n, "%d*s0", d.m);
  else
    snprintf(out, n, "%lld", (long long)d.c);
}

static int
add_val(rg_graph *g, const rg_val *v)
{
  if (g->nv == g->capv) {
    g->capv = g->capv ? 2 * g->capv : 32;
    g->v = realloc(g->v, sizeof *g->v * (size_t)g->capv);
    if (!g->v)
      abort();
  }
  g->v[g->nv] = *v;
  return g->nv++;
}

static int
new_input(rg_graph *g, coil_dtype dt, int rank, const rg_dim *d, double lo, double hi)
{
  rg_val v = {.dt = dt, .rank = rank, .lo = lo, .hi = hi, .exact = true, .contig = true, .stmt = -1};
  memcpy(v.d, d, sizeof *d * (size_t)rank);
  if (dt == COIL_BOOL)
    v.lo = 0, v.hi = 1;
  v.seed = next(&g->rng) | 1;
  return add_val(g, &v);
}

/* A value of an op's result: operand-independent fields set. */
static rg_val
result(coil_dtype dt, int rank, const rg_dim *d, double lo, double hi, bool exact, bool contig)
{
  rg_val v = {.dt = dt, .rank = rank, .lo = lo, .hi = hi, .exact = exact, .contig = contig, .stmt = -1};
  if (rank)
    memcpy(v.d, d, sizeof *d * (size_t)rank);
  if (dt == COIL_BOOL)
    v.lo = 0, v.hi = 1;
  if (dt == COIL_I64) /* integer ranges are whole numbers */
    v.lo = floor(v.lo), v.hi = ceil(v.hi);
  if (!is_fl(dt) && !(v.lo > -1e15 && v.hi < 1e15))
    v.lo = -1e15, v.hi = 1e15; /* an integer that may have wrapped: no op that needs a bound takes it */
  return v;
}

/* Adds a statement whose results are res[0..nres-1]; returns the first result's index. */
static int
emit(rg_graph *g, const char *text, int nres, rg_val *res)
{
  if (g->ns == g->caps) {
    g->caps = g->caps ? 2 * g->caps : 32;
    g->s = realloc(g->s, sizeof *g->s * (size_t)g->caps);
    if (!g->s)
      abort();
  }
  rg_stmt *s = &g->s[g->ns];
  s->text = strdup(text);
  s->first = g->nv;
  s->nres = nres;
  s->dead = false;
  for (int i = 0; i < nres; i++) {
    res[i].stmt = g->ns;
    add_val(g, &res[i]);
  }
  g->ns++;
  return s->first;
}

static int
emit1(rg_graph *g, const char *text, rg_val r)
{
  return emit(g, text, 1, &r);
}

/* "[a, b, c]" of sizes (s0 multiples as -1 is the caller's business). */
static void
list_text(const int64_t *x, int n, char *out, size_t cap)
{
  size_t len = (size_t)snprintf(out, cap, "[");
  for (int i = 0; i < n && len < cap; i++)
    len += (size_t)snprintf(out + len, cap - len, "%s%lld", i ? ", " : "", (long long)x[i]);
  if (len < cap)
    snprintf(out + len, cap - len, "]");
}

/* A dim written as given or, half the time, negative. */
static int
dim_arg(rg_graph *g, int d, int rank)
{
  return chance(g, 30) ? d - rank : d;
}

/* ---- choosing operands ---- */

typedef bool (*val_pred)(const rg_val *v, const void *arg);

/* A value satisfying ok: the newest half the time (chains), else any. -1 if none. */
static int
pick(rg_graph *g, val_pred ok, const void *arg)
{
  int n = 0, last = -1;
  for (int i = 0; i < g->nv; i++)
    if ((g->v[i].stmt < 0 || !g->s[g->v[i].stmt].dead) && ok(&g->v[i], arg))
      n++, last = i;
  if (!n)
    return -1;
  if (chance(g, 50))
    return last;
  int k = rnd(g, n);
  for (int i = 0; i < g->nv; i++)
    if ((g->v[i].stmt < 0 || !g->s[g->v[i].stmt].dead) && ok(&g->v[i], arg) && k-- == 0)
      return i;
  return last;
}

typedef struct {
  unsigned dts;     /* bit per dtype: 1 f32, 2 f16, 4 bf16, 8 i64, 16 bool */
  int min_rank, max_rank;
  bool exact;       /* floats must be exact */
  bool concrete;    /* no s0 size */
} want;

enum { W_F32 = 1, W_F16 = 2, W_BF16 = 4, W_I64 = 8, W_BOOL = 16 };
#define W_FL (W_F32 | W_F16 | W_BF16)
#define W_NUM (W_FL | W_I64)
#define W_ALL (W_NUM | W_BOOL)

static unsigned
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

static bool
ok_want(const rg_val *v, const void *arg)
{
  const want *w = arg;
  if (!(dt_bit(v->dt) & w->dts) || v->rank < w->min_rank || v->rank > w->max_rank)
    return false;
  if (w->exact && is_fl(v->dt) && !v->exact)
    return false;
  for (int k = 0; w->concrete && k < v->rank; k++)
    if (v->d[k].m)
      return false;
  return true;
}

static coil_dtype
random_dtype(rg_graph *g, unsigned dts)
{
  static const coil_dtype all[] = {COIL_F32, COIL_F32, COIL_F32, COIL_F16, COIL_BF16, COIL_I64, COIL_I64, COIL_BOOL};
  for (;;) {
    coil_dtype t = all[rnd(g, 8)];
    if (dt_bit(t) & dts)
      return t;
  }
}

static void
input_range(coil_dtype t, double *lo, double *hi)
{
  if (is_fl(t))
    *lo = -4, *hi = 4; /* normals clamped */
  else
    *lo = -5, *hi = 5;
}

/* A fresh input of a random shape. */
static int
fresh(rg_graph *g, unsigned dts, int min_rank, int max_rank)
{
  coil_dtype t = random_dtype(g, dts);
  int rank = min_rank + rnd(g, max_rank - min_rank + 1);
  rg_dim d[RG_MAX_RANK];
  int symdim = g->sym && rank && chance(g, 70) ? rnd(g, rank) : -1;
  for (int k = 0; k < rank; k++)
    d[k] = k == symdim ? (rg_dim){0, 1} : (rg_dim){1 + rnd(g, 6), 0};
  double lo, hi;
  input_range(t, &lo, &hi);
  return new_input(g, t, rank, d, lo, hi);
}

static int
operand(rg_graph *g, const want *w)
{
  int v = chance(g, 85) ? pick(g, ok_want, w) : -1;
  if (v < 0)
    v = fresh(g, w->dts & ~(w->exact ? 0u : 0u), w->min_rank, w->max_rank < 4 ? w->max_rank : 3);
  return v;
}

/* Broadcast-compatible with a: aligned trailing dims equal or one of them 1. */
typedef struct {
  const rg_val *a;
  unsigned dts;
  bool exact;
} partner_arg;

static bool
broadcasts(const rg_val *a, const rg_val *b)
{
  for (int i = 1; i <= a->rank && i <= b->rank; i++) {
    rg_dim x = a->d[a->rank - i], y = b->d[b->rank - i];
    if (!dim_eq(x, y) && !dim_one(x) && !dim_one(y))
      return false;
  }
  return true;
}

static bool
ok_partner(const rg_val *v, const void *arg)
{
  const partner_arg *p = arg;
  if (!(dt_bit(v->dt) & p->dts) || (p->exact && is_fl(v->dt) && !v->exact))
    return false;
  if ((v->rank == 0) != (p->a->rank == 0) && v->dt != p->a->dt)
    return false; /* a zero-dim tensor promotes differently: keep the dtypes equal there */
  return broadcasts(p->a, v);
}

/* A value to combine with a elementwise: one already there or a new input of a shape that
 * broadcasts with a (trailing dims, some 1, some widening a's 1s). */
static int
partner(rg_graph *g, int a, unsigned dts, bool exact, bool same_dtype)
{
  partner_arg p = {&g->v[a], same_dtype ? dt_bit(g->v[a].dt) : dts, exact};
  int v = chance(g, 50) ? pick(g, ok_partner, &p) : -1;
  if (v >= 0)
    return v;
  const rg_val *x = &g->v[a];
  int rank = x->rank - rnd(g, x->rank < 2 ? x->rank + 1 : 3);
  if (rank < 0)
    rank = 0;
  rg_dim d[RG_MAX_RANK];
  for (int i = 0; i < rank; i++) {
    rg_dim ad = x->d[x->rank - rank + i];
    if (dim_one(ad))
      d[i] = (rg_dim){chance(g, 50) ? 1 : 2 + rnd(g, 3), 0};
    else
      d[i] = chance(g, 30) ? (rg_dim){1, 0} : ad;
  }
  coil_dtype t = same_dtype || chance(g, 70) ? x->dt : random_dtype(g, dts);
  if (!(dt_bit(t) & dts))
    t = x->dt;
  if ((rank == 0) != (x->rank == 0))
    t = x->dt;
  double lo, hi;
  input_range(t, &lo, &hi);
  return new_input(g, t, rank, d, lo, hi);
}

static int
bshape(const rg_val *a, const rg_val *b, rg_dim *out)
{
  int r = a->rank > b->rank ? a->rank : b->rank;
  for (int i = 1; i <= r; i++) {
    rg_dim x = i <= a->rank ? a->d[a->rank - i] : (rg_dim){1, 0};
    rg_dim y = i <= b->rank ? b->d[b->rank - i] : (rg_dim){1, 0};
    out[r - i] = dim_one(x) ? y : x;
  }
  return r;
}

/* ---- guards: statements that put a value into an op's domain ---- */

static int
guard_positive(rg_graph *g, int a)
{
  const rg_val *x = &g->v[a];
  if (x->lo > 0.1)
    return a;
  char t[128];
  snprintf(t, sizeof t, "aten.abs.default(@%d)", a);
  int b = emit1(g, t, result(x->dt, x->rank, x->d, 0, fmax_elem(x), x->exact, true));
  snprintf(t, sizeof t, "aten.add.Scalar(@%d, %s)", b, is_fl(x->dt) ? "0.5" : "1");
  const rg_val *y = &g->v[b];
  return emit1(g, t, result(y->dt, y->rank, y->d, y->lo + 0.5, y->hi + 1, false, true));
}

static int
guard_unit(rg_graph *g, int a) /* (-0.9, 0.9) */
{
  const rg_val *x = &g->v[a];
  if (x->lo > -0.9 && x->hi < 0.9)
    return a;
  char t[128];
  snprintf(t, sizeof t, "aten.tanh.default(@%d)", a);
  int b = emit1(g, t, result(x->dt, x->rank, x->d, -1, 1, false, true));
  snprintf(t, sizeof t, "aten.mul.Scalar(@%d, 0.9)", b);
  return emit1(g, t, result(x->dt, x->rank, x->d, -0.9, 0.9, false, true));
}

/* ---- pointwise ---- */

typedef enum { DOM_ANY, DOM_POS, DOM_UNIT, DOM_GE1, DOM_SMALL } domain;

typedef struct {
  const char *op;      /* with %s for the operand */
  unsigned dts;
  domain dom;
  int mono;            /* 1 increasing, -1 decreasing: the range maps through f; 0: [flo, fhi] */
  double (*f)(double);
  double flo, fhi;
  bool keeps_exact;    /* no rounding: the result is exact when the operand is */
  bool needs_exact;    /* not continuous: float operands must be exact */
  coil_dtype out;      /* COIL_BOOL for predicates, else the operand's dtype (0) */
} unary_op;

static double sigm(double x) { return 1 / (1 + exp(-x)); }
static double relu(double x) { return x > 0 ? x : 0; }
static double neg(double x) { return -x; }
static double ident(double x) { return x; }
static double rsq(double x) { return 1 / sqrt(x); }
static double rec(double x) { return 1 / x; }
static double leaky(double x) { return x > 0 ? x : 0.1 * x; }
static double sgn(double x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }

static const unary_op unary_ops[] = {
    {"aten.exp.default(%s)", W_FL, DOM_SMALL, 1, exp, 0, 0, false, false, 0},
    {"aten.expm1.default(%s)", W_FL, DOM_SMALL, 1, expm1, 0, 0, false, false, 0},
    {"aten.sinh.default(%s)", W_FL, DOM_SMALL, 1, sinh, 0, 0, false, false, 0},
    {"aten.cosh.default(%s)", W_FL, DOM_SMALL, 0, NULL, 1, 1500, false, false, 0},
    {"aten.sin.default(%s)", W_FL, DOM_ANY, 0, NULL, -1, 1, false, false, 0},
    {"aten.cos.default(%s)", W_FL, DOM_ANY, 0, NULL, -1, 1, false, false, 0},
    {"aten.tanh.default(%s)", W_FL, DOM_ANY, 1, tanh, 0, 0, false, false, 0},
    {"aten.sigmoid.default(%s)", W_FL, DOM_ANY, 1, sigm, 0, 0, false, false, 0},
    {"aten.erf.default(%s)", W_FL, DOM_ANY, 1, erf, 0, 0, false, false, 0},
    {"aten.atan.default(%s)", W_FL, DOM_ANY, 1, atan, 0, 0, false, false, 0},
    {"aten.asinh.default(%s)", W_FL, DOM_ANY, 1, asinh, 0, 0, false, false, 0},
    {"aten.gelu.default(%s)", W_FL, DOM_ANY, 0, NULL, -0.2, BIG, false, false, 0},
    {"aten.gelu.default(%s, approximate='tanh')", W_FL, DOM_ANY, 0, NULL, -0.2, BIG, false, false, 0},
    {"aten.silu.default(%s)", W_FL, DOM_ANY, 0, NULL, -0.3, BIG, false, false, 0},
    {"aten.elu.default(%s)", W_FL, DOM_ANY, 0, NULL, -1, BIG, false, false, 0},
    {"aten.leaky_relu.default(%s, 0.1)", W_FL, DOM_ANY, 1, leaky, 0, 0, false, false, 0},
    {"aten.log.default(%s)", W_FL, DOM_POS, 1, log, 0, 0, false, false, 0},
    {"aten.log2.default(%s)", W_FL, DOM_POS, 1, log2, 0, 0, false, false, 0},
    {"aten.log10.default(%s)", W_FL, DOM_POS, 1, log10, 0, 0, false, false, 0},
    {"aten.log1p.default(%s)", W_FL, DOM_POS, 1, log1p, 0, 0, false, false, 0},
    {"aten.sqrt.default(%s)", W_FL, DOM_POS, 1, sqrt, 0, 0, false, false, 0},
    {"aten.rsqrt.default(%s)", W_FL, DOM_POS, -1, rsq, 0, 0, false, false, 0},
    {"aten.reciprocal.default(%s)", W_FL, DOM_POS, -1, rec, 0, 0, false, false, 0},
    {"aten.asin.default(%s)", W_FL, DOM_UNIT, 1, asin, 0, 0, false, false, 0},
    {"aten.acos.default(%s)", W_FL, DOM_UNIT, -1, acos, 0, 0, false, false, 0},
    {"aten.atanh.default(%s)", W_FL, DOM_UNIT, 1, atanh, 0, 0, false, false, 0},
    {"aten.acosh.default(%s)", W_FL, DOM_GE1, 1, acosh, 0, 0, false, false, 0},
    {"aten.abs.default(%s)", W_NUM, DOM_ANY, 0, NULL, 0, -1, true, false, 0},
    {"aten.neg.default(%s)", W_NUM, DOM_ANY, -1, neg, 0, 0, true, false, 0},
    {"aten.relu.default(%s)", W_NUM, DOM_ANY, 1, relu, 0, 0, true, false, 0},
    {"aten.floor.default(%s)", W_NUM, DOM_ANY, 1, floor, 0, 0, true, true, 0},
    {"aten.ceil.default(%s)", W_NUM, DOM_ANY, 1, ceil, 0, 0, true, true, 0},
    {"aten.round.default(%s)", W_NUM, DOM_ANY, 1, round, 0, 0, true, true, 0},
    {"aten.trunc.default(%s)", W_NUM, DOM_ANY, 1, trunc, 0, 0, true, true, 0},
    {"aten.sign.default(%s)", W_ALL, DOM_ANY, 1, sgn, 0, 0, true, true, 0},
    {"aten.clamp.default(%s, -1, 1)", W_NUM, DOM_ANY, 0, NULL, -1, 1, true, false, 0},
    {"aten.hardtanh.default(%s)", W_NUM, DOM_ANY, 0, NULL, -1, 1, true, false, 0},
    {"aten.bitwise_not.default(%s)", W_I64 | W_BOOL, DOM_ANY, -1, neg, 0, 0, true, false, 0},
    {"aten.logical_not.default(%s)", W_ALL, DOM_ANY, 0, NULL, 0, 1, true, true, COIL_BOOL},
    {"aten.isnan.default(%s)", W_ALL, DOM_ANY, 0, NULL, 0, 1, true, false, COIL_BOOL},
    {"aten.isinf.default(%s)", W_ALL, DOM_ANY, 0, NULL, 0, 1, true, false, COIL_BOOL},
    {"aten.alias.default(%s)", W_ALL, DOM_ANY, 1, ident, 0, 0, true, false, 0},
    {"aten.clone.default(%s)", W_ALL, DOM_ANY, 1, ident, 0, 0, true, false, 0},
};

static int
gen_unary(rg_graph *g)
{
  const unary_op *u = &unary_ops[rnd(g, (int)(sizeof unary_ops / sizeof *unary_ops))];
  want w = {u->dts, 0, 4, u->needs_exact, false};
  int a = operand(g, &w);
  if (a < 0 || !(dt_bit(g->v[a].dt) & u->dts) || (u->needs_exact && is_fl(g->v[a].dt) && !g->v[a].exact))
    return -1;
  if (u->dom == DOM_POS)
    a = guard_positive(g, a);
  else if (u->dom == DOM_UNIT)
    a = guard_unit(g, a);
  else if (u->dom == DOM_GE1) {
    a = guard_positive(g, a);
    if (g->v[a].lo < 1) {
      char t[64];
      snprintf(t, sizeof t, "aten.add.Scalar(@%d, 1)", a);
      const rg_val *x = &g->v[a];
      a = emit1(g, t, result(x->dt, x->rank, x->d, x->lo + 1, x->hi + 1, false, true));
    }
  } else if (u->dom == DOM_SMALL && !(g->v[a].lo >= -7 && g->v[a].hi <= 7))
    return -1;
  const rg_val *x = &g->v[a];
  double lo = u->flo, hi = u->fhi;
  if (u->mono > 0)
    lo = u->f(x->lo), hi = u->f(x->hi);
  else if (u->mono < 0)
    lo = u->f(x->hi), hi = u->f(x->lo);
  else if (hi < lo) /* abs */
    lo = 0, hi = fmax_elem(x);
  if (x->dt == COIL_BOOL && strstr(u->op, "bitwise_not"))
    lo = 0, hi = 1;
  if (!(lo <= hi))
    lo = -BIG, hi = BIG;
  char op[128], t[160];
  snprintf(op, sizeof op, "@%d", a);
  snprintf(t, sizeof t, u->op, op);
  coil_dtype dt = u->out ? u->out : x->dt;
  if (strstr(u->op, "sign") && x->dt == COIL_BOOL)
    dt = COIL_BOOL;
  return emit1(g, t, result(dt, x->rank, x->d, lo, hi, u->keeps_exact && x->exact, true));
}

/* binary: add sub mul div maximum minimum atan2 pow, comparisons, logical, bitwise, where */
static int
gen_binary(rg_graph *g)
{
  static const char *const arith[] = {"aten.add.Tensor", "aten.sub.Tensor", "aten.mul.Tensor", "aten.rsub.Tensor",
                                      "aten.div.Tensor", "aten.maximum.default", "aten.minimum.default",
                                      "aten.atan2.default", "aten.pow.Tensor_Tensor", "aten.add.Tensor",
                                      "aten.fmod.Tensor", "aten.remainder.Tensor", "aten.div.Tensor_mode"};
  static const char *const cmp[] = {"aten.eq.Tensor", "aten.ne.Tensor", "aten.lt.Tensor",
                                    "aten.le.Tensor", "aten.gt.Tensor", "aten.ge.Tensor"};
  static const char *const logic[] = {"aten.logical_and.default", "aten.logical_or.default",
                                      "aten.logical_xor.default", "aten.bitwise_and.Tensor",
                                      "aten.bitwise_or.Tensor", "aten.bitwise_xor.Tensor"};
  int kind = rnd(g, 10);
  char t[256];
  if (kind < 6) {
    const char *op = arith[rnd(g, 13)];
    bool fl_only = strstr(op, "atan2") || strstr(op, "pow");
    bool divlike = strstr(op, "div") || strstr(op, "fmod") || strstr(op, "remainder");
    bool discont = strstr(op, "fmod") || strstr(op, "remainder") || strstr(op, "Tensor_mode");
    want w = {fl_only ? W_FL : W_NUM, 0, 4, discont, false};
    int a = operand(g, &w);
    if (a < 0)
      return -1;
    if (strstr(op, "remainder") && is_fl(g->v[a].dt))
      return -1; /* a - floor(a / b) * b rounds differently at f64 and f32 */
    if (strstr(op, "pow")) {
      if (g->v[a].hi > 4 || g->v[a].lo < -4)
        return -1;
      a = guard_positive(g, a);
    }
    int b = partner(g, a, w.dts, discont, fl_only && g->v[a].dt != COIL_F32);
    if (b < 0 || !(dt_bit(g->v[b].dt) & w.dts) || (discont && is_fl(g->v[b].dt) && !g->v[b].exact))
      return -1;
    if (strstr(op, "pow") && (g->v[b].lo < -3 || g->v[b].hi > 3))
      return -1;
    if (divlike && !(g->v[b].lo > 0 || g->v[b].hi < 0)) {
      if (discont && is_fl(g->v[b].dt))
        return -1; /* a guard would round */
      b = guard_positive(g, b);
    }
    const rg_val *x = &g->v[a], *y = &g->v[b];
    rg_dim d[RG_MAX_RANK];
    int r = bshape(x, y, d);
    coil_dtype dt = promote(x->dt, y->dt);
    double p[4] = {x->lo * y->lo, x->lo * y->hi, x->hi * y->lo, x->hi * y->hi};
    double lo = -BIG, hi = BIG;
    bool exact = false;
    if (strstr(op, "add") || strstr(op, "sub")) {
      double m = fmax_elem(x) + fmax_elem(y);
      lo = -m, hi = m;
    } else if (strstr(op, "mul")) {
      lo = fmin(fmin(p[0], p[1]), fmin(p[2], p[3])), hi = fmax(fmax(p[0], p[1]), fmax(p[2], p[3]));
    } else if (strstr(op, "maximum") || strstr(op, "minimum")) {
      lo = fmin(x->lo, y->lo), hi = fmax(x->hi, y->hi), exact = x->exact && y->exact && x->dt == y->dt;
    } else if (strstr(op, "atan2")) {
      lo = -3.2, hi = 3.2;
    } else if (strstr(op, "fmod") || strstr(op, "remainder")) {
      double m = fmax_elem(y);
      lo = -m, hi = m, exact = is_int(dt);
    } else if (strstr(op, "Tensor_mode") || strstr(op, "div")) {
      double m = fmax_elem(x) / fmin(fabs(y->lo), fabs(y->hi));
      lo = -m - 1, hi = m + 1;
    }
    if (strstr(op, "div.Tensor") && !strstr(op, "mode") && !is_fl(dt))
      dt = COIL_F32; /* true division of integers */
    if (dt == COIL_BOOL && !strstr(op, "maximum") && !strstr(op, "minimum") && !strstr(op, "mul"))
      return -1; /* bool arithmetic: sub refuses it, the rest promote */
    if (is_int(dt) && !(hi < 1e12 && lo > -1e12))
      return -1; /* may overflow */
    if (is_int(dt) && (strstr(op, "add") || strstr(op, "sub") || strstr(op, "mul")))
      exact = true;
    if (strstr(op, "Tensor_mode"))
      snprintf(t, sizeof t, "%s(@%d, @%d, rounding_mode='%s')", op, a, b, chance(g, 50) ? "floor" : "trunc");
    else if (strstr(op, "add") && chance(g, 30) && dt != COIL_BOOL)
      snprintf(t, sizeof t, "%s(@%d, @%d, alpha=2)", op, a, b), lo *= 2, hi *= 2;
    else
      snprintf(t, sizeof t, "%s(@%d, @%d)", op, a, b);
    if (strstr(op, "Tensor_mode") && is_fl(dt))
      exact = false;
    return emit1(g, t, result(dt, r, d, lo, hi, exact, true));
  }
  if (kind < 8) { /* comparison, logical, bitwise: exact operands */
    bool is_cmp = kind == 6;
    const char *op = is_cmp ? cmp[rnd(g, 6)] : logic[rnd(g, 6)];
    bool bitwise = strstr(op, "bitwise");
    want w = {bitwise ? W_I64 | W_BOOL : is_cmp ? W_NUM : W_ALL, 0, 4, true, false};
    if (is_cmp && chance(g, 30))
      w.dts = W_ALL & ~(unsigned)W_BOOL;
    int a = operand(g, &w);
    if (a < 0)
      return -1;
    int b = partner(g, a, w.dts, true, bitwise);
    if (b < 0 || !(dt_bit(g->v[b].dt) & w.dts) || (is_fl(g->v[b].dt) && !g->v[b].exact) ||
        (is_fl(g->v[a].dt) && !g->v[a].exact))
      return -1;
    const rg_val *x = &g->v[a], *y = &g->v[b];
    rg_dim d[RG_MAX_RANK];
    int r = bshape(x, y, d);
    coil_dtype dt = bitwise ? promote(x->dt, y->dt) : COIL_BOOL;
    double m = fmax(fmax_elem(x), fmax_elem(y));
    snprintf(t, sizeof t, "%s(@%d, @%d)", op, a, b);
    return emit1(g, t, result(dt, r, d, dt == COIL_BOOL ? 0 : -2 * m - 1, dt == COIL_BOOL ? 1 : 2 * m + 1, true, true));
  }
  /* where(cond, a, b) */
  want w = {W_ALL, 0, 4, false, false};
  int a = operand(g, &w);
  if (a < 0)
    return -1;
  int b = partner(g, a, W_ALL, false, chance(g, 60));
  if (b < 0)
    return -1;
  rg_dim d[RG_MAX_RANK];
  int r = bshape(&g->v[a], &g->v[b], d);
  rg_val ab = result(COIL_BOOL, r, d, 0, 1, true, true);
  int c = partner(g, a, W_BOOL, true, false);
  if (g->v[c].dt != COIL_BOOL || !broadcasts(&ab, &g->v[c])) {
    rg_dim cd[RG_MAX_RANK];
    int cr = r - rnd(g, r + 1);
    for (int k = 0; k < cr; k++)
      cd[k] = chance(g, 30) ? (rg_dim){1, 0} : d[r - cr + k];
    c = new_input(g, COIL_BOOL, cr, cd, 0, 1);
  }
  const rg_val *x = &g->v[a], *y = &g->v[b], *z = &g->v[c];
  rg_dim d2[RG_MAX_RANK];
  r = bshape(&ab, z, d2);
  snprintf(t, sizeof t, "aten.where.self(@%d, @%d, @%d)", c, a, b);
  return emit1(g, t, result(promote(x->dt, y->dt), r, d2, fmin(x->lo, y->lo), fmax(x->hi, y->hi),
                            x->exact && y->exact && x->dt == y->dt, true));
}

/* an op with a Python number */
static int
gen_scalar(rg_graph *g)
{
  static const char *const ops[] = {"aten.add.Scalar",  "aten.sub.Scalar",  "aten.mul.Scalar",     "aten.div.Scalar",
                                    "aten.rsub.Scalar", "aten.pow.Tensor_Scalar", "aten.eq.Scalar", "aten.gt.Scalar",
                                    "aten.le.Scalar",   "aten.ne.Scalar",   "aten.fmod.Scalar",    "aten.remainder.Scalar",
                                    "aten.full_like.default", "aten.zeros_like.default", "aten.ones_like.default",
                                    "aten.fill.Scalar", "aten.bitwise_and.Scalar", "aten.bitwise_xor.Scalar",
                                    "aten.mul.Tensor",  "aten.add.Tensor"};
  const char *op = ops[rnd(g, (int)(sizeof ops / sizeof *ops))];
  bool cmp = strstr(op, "eq.") || strstr(op, "gt.") || strstr(op, "le.") || strstr(op, "ne.");
  bool bit = strstr(op, "bitwise");
  bool fill = strstr(op, "like") || strstr(op, "fill");
  bool discont = cmp || strstr(op, "fmod") || strstr(op, "remainder");
  want w = {bit ? W_I64 | W_BOOL : fill ? W_ALL : W_NUM, 0, 4, discont, false};
  int a = operand(g, &w);
  if (a < 0)
    return -1;
  const rg_val *x = &g->v[a];
  if (!(dt_bit(x->dt) & w.dts) || (discont && is_fl(x->dt) && !x->exact))
    return -1;
  if (strstr(op, "remainder") && is_fl(x->dt))
    return -1;
  static const double fl[] = {2, -3, 0.5, 1.5, -0.25};
  static const int in[] = {2, -3, 1, 4, -1};
  int k = rnd(g, 5);
  double c = is_fl(x->dt) && !strstr(op, "fmod") ? fl[k] : in[k];
  if (bit)
    c = x->dt == COIL_BOOL ? 1 : in[k];
  char t[192], cs[32];
  if (bit && x->dt == COIL_BOOL)
    snprintf(cs, sizeof cs, "True");
  else if (c == floor(c))
    snprintf(cs, sizeof cs, "%d", (int)c);
  else
    snprintf(cs, sizeof cs, "%g", c);
  double m = fmax_elem(x), lo = -BIG, hi = BIG;
  bool exact = false;
  coil_dtype dt = x->dt;
  if (strstr(op, "pow")) {
    if (m > 8)
      return -1;
    if (chance(g, 50) || !is_fl(x->dt))
      snprintf(cs, sizeof cs, "2"), lo = 0, hi = m * m, exact = !is_fl(x->dt);
    else
      a = guard_positive(g, a), snprintf(cs, sizeof cs, "0.5"), lo = 0, hi = sqrt(g->v[a].hi);
  } else if (strstr(op, "div")) {
    if (c == 0)
      c = 2;
    lo = -m / fabs(c), hi = m / fabs(c);
    if (!is_fl(dt))
      dt = COIL_F32;
  } else if (strstr(op, "mul")) {
    lo = -m * fabs(c), hi = m * fabs(c), exact = is_int(dt);
  } else if (strstr(op, "add") || strstr(op, "sub")) {
    lo = -m - fabs(c), hi = m + fabs(c), exact = is_int(dt);
  } else if (strstr(op, "fmod") || strstr(op, "remainder")) {
    if (c == 0)
      c = 2, snprintf(cs, sizeof cs, "2");
    lo = -fabs(c), hi = fabs(c), exact = true;
  } else if (cmp) {
    dt = COIL_BOOL, exact = true;
  } else if (fill) {
    lo = hi = fabs(c), exact = true;
    if (dt == COIL_BOOL)
      snprintf(cs, sizeof cs, "True");
    if (is_int(dt))
      snprintf(cs, sizeof cs, "%d", in[k]), lo = hi = in[k];
  } else if (bit) {
    lo = -64, hi = 64, exact = true;
    if (x->dt == COIL_BOOL)
      lo = 0, hi = 1;
  }
  if (x->dt == COIL_BOOL && !fill && !bit && !cmp)
    return -1;
  if (is_int(dt) && !(hi < 1e12 && lo > -1e12))
    return -1;
  if (strstr(op, "zeros_like") || strstr(op, "ones_like"))
    snprintf(t, sizeof t, "%s(@%d)", op, a), lo = 0, hi = 1;
  else
    snprintf(t, sizeof t, "%s(@%d, %s)", op, a, cs);
  x = &g->v[a];
  return emit1(g, t, result(dt, x->rank, x->d, lo, hi, exact || (fill && true), true));
}

static int
gen_cast(rg_graph *g)
{
  want w = {W_ALL, 0, 4, false, false};
  int a = operand(g, &w);
  if (a < 0)
    return -1;
  const rg_val *x = &g->v[a];
  coil_dtype to = random_dtype(g, W_ALL);
  if (!is_fl(to) && is_fl(x->dt) && (!x->exact || fmax_elem(x) > 1e9))
    return -1; /* truncation of a rounded value */
  char t[128];
  snprintf(t, sizeof t, "aten._to_copy.default(@%d, dtype=%s)", a, coil_dtype_name(to));
  double lo = x->lo, hi = x->hi;
  if (to == COIL_I64)
    lo = trunc(lo), hi = trunc(hi);
  bool exact = x->exact && (!is_fl(x->dt) || !is_fl(to) || to == COIL_F32 || to == x->dt);
  return emit1(g, t, result(to, x->rank, x->d, lo, hi, exact, true));
}

/* ---- reductions and scans ---- */

static int
dims_of(rg_graph *g, const rg_val *x, bool *mask, char *list, size_t n)
{
  int cnt = 0;
  size_t len = (size_t)snprintf(list, n, "[");
  for (int k = 0; k < x->rank; k++) {
    mask[k] = chance(g, 45);
    if (mask[k])
      len += (size_t)snprintf(list + len, n - len, "%s%d", cnt++ ? ", " : "", dim_arg(g, k, x->rank));
  }
  if (!cnt && x->rank) {
    int k = rnd(g, x->rank);
    mask[k] = true, cnt = 1;
    len += (size_t)snprintf(list + len, n - len, "%d", dim_arg(g, k, x->rank));
  }
  snprintf(list + len, n - len, "]");
  return cnt;
}

static int
reduced(const rg_val *x, const bool *mask, bool keep, rg_dim *out, int64_t *count)
{
  int r = 0;
  *count = 1;
  for (int k = 0; k < x->rank; k++) {
    if (mask[k]) {
      *count *= dim_max(x->d[k]);
      if (keep)
        out[r++] = (rg_dim){1, 0};
    } else {
      out[r++] = x->d[k];
    }
  }
  return r;
}

static int
gen_reduce(rg_graph *g)
{
  static const char *const ops[] = {"aten.sum.dim_IntList", "aten.mean.dim",        "aten.amax.default",
                                    "aten.amin.default",    "aten.var.correction",  "aten.any.dims",
                                    "aten.sum.default",     "aten.prod.dim_int",    "aten.argmax.default",
                                    "aten.argmin.default",  "aten.any.dim",         "aten.sum.dim_IntList"};
  const char *op = ops[rnd(g, 12)];
  bool fl = strstr(op, "mean") || strstr(op, "var") || strstr(op, "arg");
  bool arg = strstr(op, "arg");
  bool any = strstr(op, "any");
  bool minmax = strstr(op, "amax") || strstr(op, "amin");
  want w = {fl ? W_FL : any ? W_ALL : minmax ? W_NUM : strstr(op, "prod") ? W_FL | W_I64 : W_ALL, 1, 4,
            arg || any, false};
  if (strstr(op, "sum.default"))
    w.min_rank = 0;
  int a = operand(g, &w);
  if (a < 0)
    return -1;
  const rg_val *x = &g->v[a];
  if (!ok_want(x, &w) || (half_rounded(x) && !minmax && !arg && !any))
    return -1;
  bool mask[RG_MAX_RANK] = {0};
  char list[64], t[192];
  rg_dim d[RG_MAX_RANK];
  int64_t cnt;
  bool keep = chance(g, 40);
  coil_dtype dt = x->dt;
  double m = fmax_elem(x), lo = x->lo, hi = x->hi;
  bool exact = x->exact;
  int r;
  if (strstr(op, "sum.default") || (arg && chance(g, 30))) {
    for (int k = 0; k < x->rank; k++)
      mask[k] = true;
    r = reduced(x, mask, false, d, &cnt);
    snprintf(t, sizeof t, "%s(@%d)", op, a);
  } else if (strstr(op, "prod") || arg || strcmp(op, "aten.any.dim") == 0) {
    int k = rnd(g, x->rank);
    mask[k] = true;
    r = reduced(x, mask, keep, d, &cnt);
    snprintf(t, sizeof t, "%s(@%d, %d%s)", op, a, dim_arg(g, k, x->rank), keep ? ", True" : "");
  } else {
    dims_of(g, x, mask, list, sizeof list);
    r = reduced(x, mask, keep, d, &cnt);
    if (strstr(op, "var"))
      snprintf(t, sizeof t, "%s(@%d, %s, correction=%d%s)", op, a, list, rnd(g, 2), keep ? ", keepdim=True" : "");
    else
      snprintf(t, sizeof t, "%s(@%d, %s%s)", op, a, list, keep ? ", True" : "");
  }
  if (strstr(op, "sum")) {
    lo = -m * (double)cnt, hi = m * (double)cnt, exact = !is_fl(dt);
    if (dt == COIL_BOOL)
      dt = COIL_I64, lo = 0;
  } else if (strstr(op, "mean")) {
    exact = false;
  } else if (strstr(op, "var")) {
    lo = 0, hi = 4 * m * m * (double)cnt, exact = false;
  } else if (strstr(op, "prod")) {
    if (m > 2 || cnt > 8)
      return -1;
    lo = -pow(m, (double)cnt), hi = -lo, exact = !is_fl(dt);
  } else if (arg) {
    dt = COIL_I64, lo = 0, hi = (double)cnt, exact = true;
  } else if (any) {
    dt = COIL_BOOL;
  }
  if (is_int(dt) && !(hi < 1e12 && lo > -1e12))
    return -1;
  return emit1(g, t, result(dt, r, d, lo, hi, exact, true));
}

static int
gen_scan_softmax(rg_graph *g)
{
  int kind = rnd(g, 5);
  want w = {kind < 2 ? W_ALL : W_FL, 1, 4, false, false};
  int a = operand(g, &w);
  if (a < 0 || !ok_want(&g->v[a], &w) || half_rounded(&g->v[a]))
    return -1;
  const rg_val *x = &g->v[a];
  int k = rnd(g, x->rank);
  char t[192];
  double m = fmax_elem(x);
  int64_t n = dim_max(x->d[k]);
  coil_dtype dt = x->dt == COIL_BOOL ? COIL_I64 : x->dt;
  if (kind == 0) {
    snprintf(t, sizeof t, "aten.cumsum.default(@%d, %d)", a, dim_arg(g, k, x->rank));
    return emit1(g, t, result(dt, x->rank, x->d, -m * (double)n, m * (double)n, !is_fl(dt), true));
  }
  if (kind == 1) {
    if (m > 2 || n > 8)
      return -1;
    snprintf(t, sizeof t, "aten.cumprod.default(@%d, %d)", a, dim_arg(g, k, x->rank));
    double b = pow(fmax(m, 1), (double)n);
    return emit1(g, t, result(dt, x->rank, x->d, -b, b, !is_fl(dt), true));
  }
  if (kind == 4) { /* layer norm over the last dims: mean and rstd too */
    int nd = 1 + rnd(g, x->rank < 2 ? 1 : 2);
    char shape[64];
    int64_t sz[RG_MAX_RANK];
    for (int i = 0; i < nd; i++) {
      if (x->d[x->rank - nd + i].m)
        return -1;
      sz[i] = x->d[x->rank - nd + i].c;
    }
    list_text(sz, nd, shape, sizeof shape);
    int wv = -1, bv = -1;
    if (chance(g, 60)) {
      wv = new_input(g, x->dt, nd, x->d + x->rank - nd, -4, 4);
      bv = new_input(g, x->dt, nd, x->d + x->rank - nd, -4, 4);
    }
    char ws[16] = "None", bs[16] = "None";
    if (wv >= 0)
      snprintf(ws, sizeof ws, "@%d", wv), snprintf(bs, sizeof bs, "@%d", bv);
    snprintf(t, sizeof t, "aten.native_layer_norm.default(@%d, %s, %s, %s, 1e-05)", a, shape, ws, bs);
    x = &g->v[a];
    rg_val res[3];
    res[0] = result(x->dt, x->rank, x->d, -BIG, BIG, false, true);
    rg_dim sd[RG_MAX_RANK];
    memcpy(sd, x->d, sizeof sd);
    for (int i = 0; i < nd; i++)
      sd[x->rank - nd + i] = (rg_dim){1, 0};
    res[1] = result(x->dt, x->rank, sd, -BIG, BIG, false, true);
    res[2] = result(x->dt, x->rank, sd, 0, BIG, false, true);
    return emit(g, t, 3, res);
  }
  snprintf(t, sizeof t, "aten.%s.default(@%d, %d, False)", kind == 2 ? "_softmax" : "_log_softmax", a,
           dim_arg(g, k, x->rank));
  return emit1(g, t, result(x->dt, x->rank, x->d, kind == 2 ? 0 : -BIG, kind == 2 ? 1 : 0, false, true));
}

/* multi-output: max.dim / min.dim / var_mean / sort / topk */
static int
gen_multi(rg_graph *g)
{
  int kind = rnd(g, 5);
  want w = {kind == 2 ? W_FL : kind >= 3 ? (kind == 3 ? W_ALL : W_NUM) : W_FL, 1, 4, kind != 2, false};
  int a = operand(g, &w);
  if (a < 0 || !ok_want(&g->v[a], &w))
    return -1;
  const rg_val *x = &g->v[a];
  int k = rnd(g, x->rank);
  bool keep = chance(g, 40);
  char t[192];
  rg_val res[2];
  rg_dim d[RG_MAX_RANK];
  bool mask[RG_MAX_RANK] = {0};
  int64_t cnt;
  mask[k] = true;
  int r = reduced(x, mask, keep, d, &cnt);
  int dk = dim_arg(g, k, x->rank);
  switch (kind) {
  case 0: case 1:
    snprintf(t, sizeof t, "aten.%s.dim(@%d, %d%s)", kind ? "min" : "max", a, dk, keep ? ", True" : "");
    res[0] = result(x->dt, r, d, x->lo, x->hi, x->exact, true);
    res[1] = result(COIL_I64, r, d, 0, (double)cnt, true, true);
    break;
  case 2:
    if (half_rounded(x))
      return -1;
    snprintf(t, sizeof t, "aten.var_mean.correction(@%d, [%d], correction=1%s)", a, dk, keep ? ", keepdim=True" : "");
    res[0] = result(x->dt, r, d, 0, BIG, false, true);
    res[1] = result(x->dt, r, d, x->lo, x->hi, false, true);
    break;
  case 3:
    if (x->d[k].m)
      return -1; /* known gap: the core does not sort along a symbolic dim */
    snprintf(t, sizeof t, "aten.sort.default(@%d, %d%s)", a, dk, chance(g, 50) ? ", True" : "");
    res[0] = result(x->dt, x->rank, x->d, x->lo, x->hi, x->exact, true);
    res[1] = result(COIL_I64, x->rank, x->d, 0, (double)cnt, true, true);
    break;
  default: {
    if (x->d[k].m)
      return -1;
    int64_t kk = 1 + rnd(g, (int)x->d[k].c);
    snprintf(t, sizeof t, "aten.topk.default(@%d, %lld, %d%s)", a, (long long)kk, dk, chance(g, 40) ? ", False" : "");
    memcpy(d, x->d, sizeof d);
    d[k] = (rg_dim){kk, 0};
    res[0] = result(x->dt, x->rank, d, x->lo, x->hi, x->exact, true);
    res[1] = result(COIL_I64, x->rank, d, 0, (double)cnt, true, true);
  }
  }
  return emit(g, t, 2, res);
}

/* ---- views and data movement ---- */

static int
gen_view(rg_graph *g)
{
  int kind = rnd(g, 14);
  want w = {W_ALL, 1, 4, false, false};
  int a = operand(g, &w);
  if (a < 0 || g->v[a].rank < 1)
    return -1;
  const rg_val *x = &g->v[a];
  rg_val r = *x;
  r.stmt = -1;
  char t[256], list[96];
  int k = rnd(g, x->rank);
  switch (kind) {
  case 0: case 1: { /* view / reshape / _unsafe_view */
    const char *op = kind == 0 && x->contig ? (chance(g, 80) ? "aten.view.default" : "aten._unsafe_view.default")
                                             : "aten.reshape.default";
    int64_t c = 1;
    int m = 0, nsym = 0;
    for (int i = 0; i < x->rank; i++) {
      if (x->d[i].m)
        m = x->d[i].m, nsym++;
      else
        c *= x->d[i].c;
    }
    if (nsym > 1)
      return -1;
    /* sizes whose product is c (and one -1 standing for the rest when symbolic) */
    int rk = 1 + rnd(g, 3), neg = m || chance(g, 40) ? rnd(g, rk) : -1;
    int64_t rest = c, sz[RG_MAX_RANK]; /* a -1 dim takes the rest: (c / product) * m * s0 */
    for (int i = 0; i < rk; i++) {
      if (i == neg)
        continue;
      int64_t f = 1;
      for (int tries = 0; tries < 6; tries++) {
        int64_t cand = 1 + rnd(g, 6);
        if (rest % cand == 0) {
          f = cand;
          break;
        }
      }
      if (neg < 0 && i == rk - 1)
        f = rest;
      sz[i] = f, rest /= f;
    }
    size_t len = (size_t)snprintf(list, sizeof list, "[");
    for (int i = 0; i < rk; i++) {
      r.d[i] = i == neg ? (m ? (rg_dim){0, (int)(rest * m)} : (rg_dim){rest, 0}) : (rg_dim){sz[i], 0};
      len += (size_t)snprintf(list + len, sizeof list - len, "%s%lld", i ? ", " : "", i == neg ? -1LL : (long long)sz[i]);
    }
    snprintf(list + len, sizeof list - len, "]");
    r.rank = rk;
    snprintf(t, sizeof t, "%s(@%d, %s)", op, a, list);
    r.contig = true;
    if (strcmp(op, "aten.reshape.default") == 0 && !x->contig)
      r.contig = true; /* a copy */
    break;
  }
  case 2: { /* permute */
    if (x->rank < 2)
      return -1;
    int p[RG_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
      p[i] = i;
    for (int i = x->rank - 1; i > 0; i--) {
      int j = rnd(g, i + 1), tmp = p[i];
      p[i] = p[j], p[j] = tmp;
    }
    size_t len = (size_t)snprintf(list, sizeof list, "[");
    for (int i = 0; i < x->rank; i++) {
      r.d[i] = x->d[p[i]];
      len += (size_t)snprintf(list + len, sizeof list - len, "%s%d", i ? ", " : "", dim_arg(g, p[i], x->rank));
    }
    snprintf(list + len, sizeof list - len, "]");
    snprintf(t, sizeof t, "aten.permute.default(@%d, %s)", a, list);
    r.contig = false;
    break;
  }
  case 3: { /* transpose / t */
    if (x->rank <= 2 && chance(g, 50)) {
      snprintf(t, sizeof t, "aten.t.default(@%d)", a);
      if (x->rank == 2)
        r.d[0] = x->d[1], r.d[1] = x->d[0];
    } else {
      int j = rnd(g, x->rank);
      snprintf(t, sizeof t, "aten.transpose.int(@%d, %d, %d)", a, dim_arg(g, k, x->rank), dim_arg(g, j, x->rank));
      r.d[k] = x->d[j], r.d[j] = x->d[k];
    }
    r.contig = false;
    break;
  }
  case 4: { /* unsqueeze */
    if (x->rank >= RG_MAX_RANK)
      return -1;
    int at = rnd(g, x->rank + 1);
    for (int i = x->rank; i > at; i--)
      r.d[i] = x->d[i - 1];
    r.d[at] = (rg_dim){1, 0};
    r.rank++;
    snprintf(t, sizeof t, "aten.unsqueeze.default(@%d, %d)", a, chance(g, 30) ? at - r.rank : at);
    break;
  }
  case 5: { /* squeeze */
    int ones = 0;
    for (int i = 0; i < x->rank; i++)
      ones += dim_one(x->d[i]);
    if (!ones)
      return -1;
    if (chance(g, 50)) {
      int j = 0;
      for (int i = 0; i < x->rank; i++)
        if (!dim_one(x->d[i]))
          r.d[j++] = x->d[i];
      r.rank = j;
      for (int i = 0; i < x->rank; i++)
        if (x->d[i].m)
          return -1; /* s0 may be 1 at run time: squeeze() would depend on it */
      snprintf(t, sizeof t, "aten.squeeze.default(@%d)", a);
    } else {
      int at = -1;
      for (int i = 0; i < x->rank; i++)
        if (dim_one(x->d[i]) && (at < 0 || chance(g, 50)))
          at = i;
      for (int i = at; i < x->rank - 1; i++)
        r.d[i] = x->d[i + 1];
      r.rank--;
      snprintf(t, sizeof t, "aten.squeeze.dim(@%d, %d)", a, dim_arg(g, at, x->rank));
    }
    break;
  }
  case 6: { /* expand */
    int extra = x->rank < RG_MAX_RANK && chance(g, 30) ? 1 : 0;
    size_t len = (size_t)snprintf(list, sizeof list, "[");
    r.rank = x->rank + extra;
    bool changed = extra;
    if (extra) {
      r.d[0] = (rg_dim){1 + rnd(g, 3), 0};
      len += (size_t)snprintf(list + len, sizeof list - len, "%lld, ", (long long)r.d[0].c);
    }
    for (int i = 0; i < x->rank; i++) {
      rg_dim dd = x->d[i];
      if (dim_one(dd) && chance(g, 70))
        dd = (rg_dim){2 + rnd(g, 3), 0}, changed = true;
      r.d[extra + i] = dd;
      bool minus = dd.m || (chance(g, 50) && dim_eq(dd, x->d[i]));
      len += (size_t)snprintf(list + len, sizeof list - len, "%s%lld", i ? ", " : "", minus ? -1LL : (long long)dd.c);
    }
    snprintf(list + len, sizeof list - len, "]");
    snprintf(t, sizeof t, "aten.expand.default(@%d, %s)", a, list);
    r.contig = x->contig && !changed;
    break;
  }
  case 7: { /* slice */
    if (x->d[k].m)
      return -1;
    int64_t n = x->d[k].c, start = rnd(g, (int)n), end = start + 1 + rnd(g, (int)(n - start) + 1), step = 1 + rnd(g, 3);
    int64_t size = ((end < n ? end : n) - start + step - 1) / step;
    long long s_arg = chance(g, 25) ? start - n : start;
    snprintf(t, sizeof t, "aten.slice.Tensor(@%d, %d, %lld, %lld, %lld)", a, dim_arg(g, k, x->rank), s_arg,
             (long long)end, (long long)step);
    r.d[k] = (rg_dim){size, 0};
    r.contig = false;
    break;
  }
  case 8: { /* select */
    if (x->d[k].m)
      return -1;
    int64_t n = x->d[k].c, idx = rnd(g, (int)(2 * n)) - n;
    snprintf(t, sizeof t, "aten.select.int(@%d, %d, %lld)", a, dim_arg(g, k, x->rank), (long long)idx);
    for (int i = k; i < x->rank - 1; i++)
      r.d[i] = x->d[i + 1];
    r.rank--;
    r.contig = false;
    break;
  }
  case 9: { /* flip */
    bool mask[RG_MAX_RANK];
    dims_of(g, x, mask, list, sizeof list);
    snprintf(t, sizeof t, "aten.flip.default(@%d, %s)", a, list);
    r.contig = true;
    break;
  }
  case 10: { /* repeat */
    int extra = x->rank < RG_MAX_RANK && chance(g, 30) ? 1 : 0;
    int64_t rep[RG_MAX_RANK];
    r.rank = x->rank + extra;
    for (int i = 0; i < r.rank; i++)
      rep[i] = chance(g, 60) ? 1 : 2 + rnd(g, 2);
    for (int i = 0; i < r.rank; i++) {
      rg_dim src = i < extra ? (rg_dim){1, 0} : x->d[i - extra];
      r.d[i] = src.m ? (rg_dim){0, src.m * (int)rep[i]} : (rg_dim){src.c * rep[i], 0};
    }
    list_text(rep, r.rank, list, sizeof list);
    snprintf(t, sizeof t, "aten.repeat.default(@%d, %s)", a, list);
    r.contig = true;
    break;
  }
  case 11: { /* cat with one or two more */
    if (x->d[k].m)
      return -1;
    int parts[3] = {a, -1, -1}, np = 2 + rnd(g, 2);
    int64_t total = x->d[k].c;
    for (int p = 1; p < np; p++) {
      rg_dim d[RG_MAX_RANK];
      memcpy(d, x->d, sizeof d);
      d[k] = (rg_dim){1 + rnd(g, 4), 0};
      total += d[k].c;
      double lo, hi;
      input_range(x->dt, &lo, &hi);
      parts[p] = new_input(g, x->dt, x->rank, d, lo, hi);
      x = &g->v[a];
    }
    if (np == 2)
      snprintf(t, sizeof t, "aten.cat.default([@%d, @%d], %d)", parts[0], parts[1], dim_arg(g, k, x->rank));
    else
      snprintf(t, sizeof t, "aten.cat.default([@%d, @%d, @%d], %d)", parts[0], parts[1], parts[2], dim_arg(g, k, x->rank));
    r = *x;
    r.stmt = -1;
    r.d[k] = (rg_dim){total, 0};
    r.lo = fmin(x->lo, -4), r.hi = fmax(x->hi, 4);
    if (!is_fl(x->dt))
      r.lo = fmin(x->lo, -5), r.hi = fmax(x->hi, 5);
    r.exact = x->exact;
    r.contig = true;
    break;
  }
  case 12: { /* constant_pad_nd on the last dims */
    if (x->dt == COIL_BOOL)
      return -1;
    int nd = 1 + rnd(g, x->rank < 2 ? 1 : 2);
    int64_t pads[4];
    for (int i = 0; i < nd; i++) {
      if (x->d[x->rank - 1 - i].m)
        return -1;
      pads[2 * i] = rnd(g, 3), pads[2 * i + 1] = rnd(g, 3);
      r.d[x->rank - 1 - i].c += pads[2 * i] + pads[2 * i + 1];
    }
    list_text(pads, 2 * nd, list, sizeof list);
    snprintf(t, sizeof t, "aten.constant_pad_nd.default(@%d, %s, %s)", a, list, is_fl(x->dt) ? "1.5" : "3");
    r.lo = fmin(x->lo, 1.5), r.hi = fmax(x->hi, 3);
    r.contig = true;
    break;
  }
  default: { /* diagonal */
    if (x->rank < 2)
      return -1;
    int j = rnd(g, x->rank);
    if (j == k || x->d[k].m || x->d[j].m)
      return -1;
    int64_t off = rnd(g, 2), n = x->d[j].c - off < x->d[k].c ? x->d[j].c - off : x->d[k].c;
    if (n < 0)
      n = 0;
    snprintf(t, sizeof t, "aten.diagonal.default(@%d, %lld, %d, %d)", a, (long long)off, k, j);
    int q = 0;
    for (int i = 0; i < x->rank; i++)
      if (i != k && i != j)
        r.d[q++] = x->d[i];
    r.d[q++] = (rg_dim){n, 0};
    r.rank = q;
    r.contig = false;
  }
  }
  if (numel_max(&r) > NUMEL_MAX)
    return -1;
  if (x->dt == COIL_BOOL)
    r.lo = 0, r.hi = 1;
  return emit1(g, t, r);
}

static int
gen_split(rg_graph *g)
{
  want w = {W_ALL, 1, 4, false, false};
  int a = operand(g, &w);
  if (a < 0 || g->v[a].rank < 1)
    return -1;
  const rg_val *x = &g->v[a];
  int k = rnd(g, x->rank);
  if (x->d[k].m || x->d[k].c < 2)
    return -1;
  int64_t n = x->d[k].c, sizes[4];
  int np = 0;
  char t[192], list[64];
  if (chance(g, 50)) {
    int64_t each = 1 + rnd(g, (int)n - 1);
    for (int64_t s = 0; s < n && np < 4; s += each)
      sizes[np++] = n - s < each ? n - s : each;
    if (np * each < n && (n - (np - 1) * each) > each)
      return -1; /* more than 4 pieces */
    if ((n + each - 1) / each > 4)
      return -1;
    snprintf(t, sizeof t, "aten.split.Tensor(@%d, %lld, %d)", a, (long long)each, dim_arg(g, k, x->rank));
  } else {
    int64_t left = n;
    while (left > 0 && np < 3) {
      int64_t s = 1 + rnd(g, (int)left);
      sizes[np++] = s, left -= s;
    }
    if (left)
      sizes[np++] = left;
    list_text(sizes, np, list, sizeof list);
    snprintf(t, sizeof t, "aten.split_with_sizes.default(@%d, %s, %d)", a, list, dim_arg(g, k, x->rank));
  }
  rg_val res[4];
  for (int p = 0; p < np; p++) {
    res[p] = *x;
    res[p].d[k] = (rg_dim){sizes[p], 0};
    res[p].contig = k == 0 && x->contig;
  }
  if (np < 2)
    return -1;
  return emit(g, t, np, res);
}

/* ---- indexing ---- */

static int
index_input(rg_graph *g, int rank, const rg_dim *d, int64_t lo, int64_t hi)
{
  return new_input(g, COIL_I64, rank, d, (double)lo, (double)(hi - 1));
}

static int
gen_index(rg_graph *g)
{
  int kind = rnd(g, 5);
  want w = {kind == 2 ? W_FL : kind == 0 || kind == 4 ? W_NUM : W_ALL, kind == 2 ? 2 : 1, kind == 2 ? 2 : 4, false, false};
  int a = operand(g, &w);
  if (a < 0 || !ok_want(&g->v[a], &w))
    return -1;
  const rg_val *x = &g->v[a];
  int k = rnd(g, x->rank);
  if (kind == 2)
    k = 0;
  if (x->d[k].m)
    return -1;
  int64_t n = x->d[k].c;
  if (n < 1)
    return -1;
  char t[192];
  rg_val r = *x;
  r.stmt = -1;
  r.contig = true;
  rg_dim id[RG_MAX_RANK];
  switch (kind) {
  case 0: { /* gather: index no larger than x in the other dims */
    for (int i = 0; i < x->rank; i++)
      id[i] = i == k ? (rg_dim){1 + rnd(g, 4), 0} : x->d[i].m || chance(g, 60) ? x->d[i] : (rg_dim){1 + rnd(g, (int)x->d[i].c), 0};
    int ix = index_input(g, x->rank, id, 0, n);
    x = &g->v[a];
    snprintf(t, sizeof t, "aten.gather.default(@%d, %d, @%d)", a, dim_arg(g, k, x->rank), ix);
    memcpy(r.d, id, sizeof id);
    break;
  }
  case 1: { /* index_select */
    rg_dim l = {1 + rnd(g, 5), 0};
    int ix = index_input(g, 1, &l, 0, n);
    x = &g->v[a];
    snprintf(t, sizeof t, "aten.index_select.default(@%d, %d, @%d)", a, dim_arg(g, k, x->rank), ix);
    r.d[k] = l;
    break;
  }
  case 2: { /* embedding */
    int ir = 1 + rnd(g, 2);
    rg_dim d[2] = {{1 + rnd(g, 4), 0}, {1 + rnd(g, 3), 0}};
    if (g->sym && chance(g, 50))
      d[0] = (rg_dim){0, 1};
    int ix = index_input(g, ir, d, 0, n);
    x = &g->v[a];
    snprintf(t, sizeof t, "aten.embedding.default(@%d, @%d)", a, ix);
    r.rank = ir + 1;
    memcpy(r.d, d, sizeof *d * (size_t)ir);
    r.d[ir] = x->d[1];
    break;
  }
  case 3: { /* index.Tensor on dim 0: negative indices wrap */
    k = 0;
    if (x->d[0].m)
      return -1;
    n = x->d[0].c;
    int ir = 1 + rnd(g, 2);
    if (x->rank + ir - 1 > RG_MAX_RANK)
      return -1;
    rg_dim d[2] = {{1 + rnd(g, 4), 0}, {1 + rnd(g, 3), 0}};
    int ix = index_input(g, ir, d, -n, n);
    x = &g->v[a];
    snprintf(t, sizeof t, "aten.index.Tensor(@%d, [@%d])", a, ix);
    r.rank = ir + x->rank - 1;
    memcpy(r.d, d, sizeof *d * (size_t)ir);
    for (int i = 1; i < x->rank; i++)
      r.d[ir + i - 1] = x->d[i];
    break;
  }
  default: { /* scatter_add: duplicates combine */
    for (int i = 0; i < x->rank; i++)
      id[i] = i == k ? (rg_dim){1 + rnd(g, 4), 0} : x->d[i].m || chance(g, 60) ? x->d[i] : (rg_dim){1 + rnd(g, (int)x->d[i].c), 0};
    int ix = index_input(g, x->rank, id, 0, n);
    double lo, hi;
    input_range(g->v[a].dt, &lo, &hi);
    int src = new_input(g, g->v[a].dt, g->v[a].rank, id, lo, hi);
    x = &g->v[a];
    snprintf(t, sizeof t, "aten.scatter_add.default(@%d, %d, @%d, @%d)", a, dim_arg(g, k, x->rank), ix, src);
    double m = fmax_elem(x) + 4 * 4 * (double)numel_max(&g->v[src]);
    r.lo = -m, r.hi = m;
    r.exact = !is_fl(x->dt);
  }
  }
  if (numel_max(&r) > NUMEL_MAX)
    return -1;
  return emit1(g, t, r);
}

/* ---- library ops and creation ---- */

static int
gen_matmul(rg_graph *g)
{
  int kind = rnd(g, 3);
  int rank = kind == 1 ? 3 : 2;
  want w = {W_FL, rank, rank, false, false};
  int a = operand(g, &w);
  if (a < 0 || !ok_want(&g->v[a], &w) || half_rounded(&g->v[a]))
    return -1;
  const rg_val *x = &g->v[a];
  rg_dim kd = x->d[rank - 1], nd = {1 + rnd(g, 5), 0}, bd[3];
  if (rank == 3)
    bd[0] = x->d[0];
  bd[rank - 2] = kd, bd[rank - 1] = nd;
  int b = new_input(g, x->dt, rank, bd, -4, 4);
  x = &g->v[a];
  char t[160];
  double m = fmax_elem(x) * 4 * (double)dim_max(kd);
  rg_dim rd[3];
  memcpy(rd, x->d, sizeof rd);
  rd[rank - 1] = nd;
  if (kind == 2) {
    int bias = new_input(g, x->dt, 1, &nd, -4, 4);
    snprintf(t, sizeof t, "aten.addmm.default(@%d, @%d, @%d)", bias, a, b);
    m += 4;
  } else {
    snprintf(t, sizeof t, "aten.%s.default(@%d, @%d)", rank == 3 ? "bmm" : "mm", a, b);
  }
  x = &g->v[a];
  return emit1(g, t, result(x->dt, rank, rd, -m, m, false, true));
}

static int
gen_create(rg_graph *g)
{
  char t[160], list[64];
  int kind = rnd(g, 3);
  coil_dtype dt = random_dtype(g, kind == 1 ? W_F32 | W_I64 : W_ALL);
  if (kind == 0) {
    int rank = rnd(g, 3);
    int64_t sz[RG_MAX_RANK];
    rg_dim d[RG_MAX_RANK];
    for (int i = 0; i < rank; i++)
      sz[i] = 1 + rnd(g, 5), d[i] = (rg_dim){sz[i], 0};
    list_text(sz, rank, list, sizeof list);
    int v = rnd(g, 5) - 2;
    snprintf(t, sizeof t, "aten.full.default(%s, %s, dtype=%s)", list, dt == COIL_BOOL ? "True" : v ? "2" : "0",
             coil_dtype_name(dt));
    return emit1(g, t, result(dt, rank, d, 0, 2, true, true));
  }
  if (kind == 1) {
    int64_t start = rnd(g, 5) - 2, n = 1 + rnd(g, 7), step = 1 + rnd(g, 2);
    rg_dim d = {(n + step - 1) / step, 0};
    snprintf(t, sizeof t, "aten.arange.start_step(%lld, %lld, %lld, dtype=%s)", (long long)start,
             (long long)(start + n), (long long)step, coil_dtype_name(dt));
    return emit1(g, t, result(dt, 1, &d, (double)start, (double)(start + n), true, true));
  }
  if (dt == COIL_BOOL)
    return -1;
  snprintf(t, sizeof t, "aten.scalar_tensor.default(%s, dtype=%s)", is_fl(dt) ? "-1.5" : "3", coil_dtype_name(dt));
  return emit1(g, t, result(dt, 0, NULL, -1.5, 3, true, true));
}

/* ---- the graph ---- */

void
rg_generate(rg_graph *g, uint64_t seed, int nstmts)
{
  memset(g, 0, sizeof *g);
  g->rng = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  if (!g->rng)
    g->rng = 1;
  g->sym = chance(g, 35);
  g->s0[0] = 1 + rnd(g, 6);
  g->s0[1] = 1 + (g->s0[0] + rnd(g, 5)) % 6;
  int first = fresh(g, W_ALL, 1, 3);
  if (g->sym) { /* the anchor: s0 alone in its first dim */
    g->v[first].d[0] = (rg_dim){0, 1};
    g->v[first].anchor = true;
  }
  if (chance(g, 50))
    fresh(g, W_ALL, 0, 3);
  for (int tries = 0; tries < 20 * nstmts && g->ns < nstmts; tries++) {
    int before = g->ns, nv = g->nv;
    int w = rnd(g, 100), rc;
    if (w < 20)
      rc = gen_unary(g);
    else if (w < 38)
      rc = gen_binary(g);
    else if (w < 48)
      rc = gen_scalar(g);
    else if (w < 53)
      rc = gen_cast(g);
    else if (w < 63)
      rc = gen_reduce(g);
    else if (w < 68)
      rc = gen_scan_softmax(g);
    else if (w < 72)
      rc = gen_multi(g);
    else if (w < 87)
      rc = gen_view(g);
    else if (w < 89)
      rc = gen_split(g);
    else if (w < 95)
      rc = gen_index(g);
    else if (w < 98)
      rc = gen_matmul(g);
    else
      rc = gen_create(g);
    if (rc < 0) { /* undo what the attempt added (guards, inputs) */
      for (int s = before; s < g->ns; s++)
        free(g->s[s].text);
      g->ns = before, g->nv = nv;
    }
  }
  /* outputs: the last value, and up to two others (an input, a view, a multi-output element) */
  int cand = g->nv - 1;
  g->outs[g->nouts++] = cand;
  int more = rnd(g, 3);
  for (int i = 0; i < more; i++)
    g->outs[g->nouts++] = rnd(g, g->nv);
}

void
rg_append(rg_graph *g, const rg_graph *h)
{
  int voff = g->nv, soff = g->ns;
  for (int i = 0; i < h->nv; i++) {
    rg_val v = h->v[i];
    if (v.stmt >= 0)
      v.stmt += soff;
    add_val(g, &v);
  }
  for (int s = 0; s < h->ns; s++) {
    coil_strbuf b = {0};
    for (const char *p = h->s[s].text; *p; p++) {
      if (*p != '@') {
        coil_strbuf_putn(&b, p, 1);
        continue;
      }
      coil_strbuf_printf(&b, "@%d", atoi(p + 1) + voff);
      while (p[1] >= '0' && p[1] <= '9')
        p++;
    }
    if (g->ns == g->caps) {
      g->caps = g->caps ? 2 * g->caps : 32;
      g->s = realloc(g->s, sizeof *g->s * (size_t)g->caps);
      if (!g->s)
        abort();
    }
    g->s[g->ns] = h->s[s];
    g->s[g->ns].text = coil_strbuf_take(&b);
    g->s[g->ns++].first += voff;
  }
  for (int k = 0; k < h->nouts && g->nouts < RG_MAX_OUTS; k++)
    g->outs[g->nouts++] = h->outs[k] + voff;
  if (h->sym && !g->sym) {
    g->sym = true;
    memcpy(g->s0, h->s0, sizeof g->s0);
  }
}

void
rg_free(rg_graph *g)
{
  for (int s = 0; s < g->ns; s++)
    free(g->s[s].text);
  free(g->s);
  free(g->v);
  memset(g, 0, sizeof *g);
}

void
rg_name(const rg_graph *g, int i, char *out, size_t n)
{
  snprintf(out, n, "%s%d", g->v[i].stmt < 0 ? "x" : "v", i);
}

/* Marks what the outputs need: used[v] for values, live statements through their operands. */
static void
mark_used(const rg_graph *g, bool *used)
{
  memset(used, 0, sizeof *used * (size_t)g->nv);
  for (int k = 0; k < g->nouts; k++)
    used[g->outs[k]] = true;
  for (int s = g->ns - 1; s >= 0; s--) {
    const rg_stmt *st = &g->s[s];
    bool live = false;
    for (int r = 0; r < st->nres; r++)
      live = live || used[st->first + r];
    if (!live || st->dead)
      continue;
    for (const char *p = strchr(st->text, '@'); p; p = strchr(p + 1, '@'))
      used[atoi(p + 1)] = true;
  }
}

void
rg_print(const rg_graph *g, coil_strbuf *b, bool with_ranges)
{
  bool *used = calloc((size_t)g->nv + 1, sizeof *used);
  mark_used(g, used);
  char name[32];
  if (with_ranges)
    for (int i = 0; i < g->nv; i++)
      if ((used[i] || g->v[i].anchor) && g->v[i].stmt < 0) {
        rg_name(g, i, name, sizeof name);
        coil_strbuf_printf(b, "# %%%s: values in [%g, %g]%s\n", name, g->v[i].lo, g->v[i].hi,
                           is_fl(g->v[i].dt) && g->v[i].lo <= -4 && g->v[i].hi >= 4 ? " (normal)" : "");
      }
  if (with_ranges && g->sym)
    coil_strbuf_printf(b, "# runs at s0 = %lld and s0 = %lld\n", (long long)g->s0[0], (long long)g->s0[1]);
  coil_strbuf_puts(b, "coil 1\ngraph random(");
  int n = 0;
  for (int i = 0; i < g->nv; i++) {
    const rg_val *v = &g->v[i];
    if (!(used[i] || v->anchor) || v->stmt >= 0)
      continue;
    rg_name(g, i, name, sizeof name);
    coil_strbuf_printf(b, "%s%%%s: %s[", n++ ? ", " : "", name, coil_dtype_name(v->dt));
    for (int k = 0; k < v->rank; k++) {
      char d[32];
      dim_text(v->d[k], d, sizeof d);
      coil_strbuf_printf(b, "%s%s", k ? ", " : "", d);
    }
    coil_strbuf_puts(b, "]");
  }
  coil_strbuf_puts(b, ") {\n");
  for (int s = 0; s < g->ns; s++) {
    const rg_stmt *st = &g->s[s];
    bool live = false;
    for (int r = 0; r < st->nres; r++)
      live = live || used[st->first + r];
    if (!live || st->dead)
      continue;
    if (st->nres > 1)
      coil_strbuf_printf(b, "  %%t%d = ", s);
    else
      coil_strbuf_printf(b, "  %%v%d = ", st->first);
    for (const char *p = st->text; *p; p++) {
      if (*p != '@') {
        coil_strbuf_putn(b, p, 1);
        continue;
      }
      int v = atoi(p + 1);
      while (p[1] >= '0' && p[1] <= '9')
        p++;
      rg_name(g, v, name, sizeof name);
      coil_strbuf_printf(b, "%%%s", name);
    }
    coil_strbuf_puts(b, "\n");
    for (int r = 0; st->nres > 1 && r < st->nres; r++)
      if (used[st->first + r])
        coil_strbuf_printf(b, "  %%v%d = getitem(%%t%d, %d)\n", st->first + r, s, r);
  }
  coil_strbuf_puts(b, "  return (");
  for (int k = 0; k < g->nouts; k++) {
    rg_name(g, g->outs[k], name, sizeof name);
    coil_strbuf_printf(b, "%s%%%s", k ? ", " : "", name);
  }
  coil_strbuf_puts(b, ")\n}\n");
  free(used);
}

bool
rg_stmt_live(const rg_graph *g, int s)
{
  bool *used = calloc((size_t)g->nv + 1, sizeof *used);
  mark_used(g, used);
  bool live = false;
  for (int r = 0; r < g->s[s].nres; r++)
    live = live || used[g->s[s].first + r];
  free(used);
  return live && !g->s[s].dead;
}

int
rg_live_stmts(const rg_graph *g)
{
  bool *used = calloc((size_t)g->nv + 1, sizeof *used);
  mark_used(g, used);
  int n = 0;
  for (int s = 0; s < g->ns; s++) {
    bool live = false;
    for (int r = 0; r < g->s[s].nres; r++)
      live = live || used[g->s[s].first + r];
    n += live && !g->s[s].dead;
  }
  free(used);
  return n;
}

void
rg_cut(rg_graph *g, int s)
{
  rg_stmt *st = &g->s[s];
  st->dead = true;
  for (int r = 0; r < st->nres; r++) {
    rg_val *v = &g->v[st->first + r];
    v->stmt = -1;
    v->seed = (uint64_t)(st->first + r) * 0x9e3779b97f4a7c15ull + 7;
    if (v->dt == COIL_BOOL)
      v->lo = 0, v->hi = 1;
    if (!(v->lo > -1e9))
      v->lo = is_fl(v->dt) ? -4 : -5;
    if (!(v->hi < 1e9))
      v->hi = is_fl(v->dt) ? 4 : 5;
  }
}

void
rg_replace(rg_graph *g, int from, int to)
{
  char pat[24], rep[24];
  snprintf(pat, sizeof pat, "@%d", from);
  snprintf(rep, sizeof rep, "@%d", to);
  for (int s = 0; s < g->ns; s++) {
    coil_strbuf b = {0};
    const char *p = g->s[s].text;
    for (const char *q; (q = strstr(p, pat));) {
      coil_strbuf_putn(&b, p, (size_t)(q - p));
      if (q[strlen(pat)] >= '0' && q[strlen(pat)] <= '9') /* @12 is not @1 */
        coil_strbuf_putn(&b, q, strlen(pat));
      else
        coil_strbuf_puts(&b, rep);
      p = q + strlen(pat);
    }
    coil_strbuf_puts(&b, p);
    free(g->s[s].text);
    g->s[s].text = coil_strbuf_take(&b);
  }
  for (int k = 0; k < g->nouts; k++)
    if (g->outs[k] == from)
      g->outs[k] = to;
}

bool
rg_same_type(const rg_graph *g, int a, int b)
{
  const rg_val *x = &g->v[a], *y = &g->v[b];
  if (x->dt != y->dt || x->rank != y->rank)
    return false;
  for (int k = 0; k < x->rank; k++)
    if (!dim_eq(x->d[k], y->d[k]))
      return false;
  return true;
}

void
rg_drop_output(rg_graph *g, int k)
{
  for (int i = k; i < g->nouts - 1; i++)
    g->outs[i] = g->outs[i + 1];
  g->nouts--;
}

/* Input values: floats normal (clamped to the range) when the range holds [-4, 4], else
 * uniform in it; integers uniform in [lo, hi]; bools fair. Seeded per value, so a value keeps
 * its numbers while the shrinker cuts around it. */
int
rg_input_fill(const rg_graph *g, int i, int64_t s0, coil_tensor *t, coil_diag *d)
{
  const rg_val *v = &g->v[i];
  int64_t shape[COIL_MAX_RANK];
  for (int k = 0; k < v->rank; k++)
    shape[k] = v->d[k].m ? v->d[k].m * s0 : v->d[k].c;
  if (coil_tensor_init(t, v->dt, v->rank, shape, d))
    return -1;
  uint64_t s = v->seed ? v->seed : 1;
  double lo = fmax(v->lo, -1e6), hi = fmin(v->hi, 1e6);
  if (hi < lo)
    hi = lo;
  bool normal = lo <= -4 && hi >= 4;
  int64_t n = coil_tensor_numel(t);
  for (int64_t e = 0; e < n; e++) {
    double u1 = ((double)(next(&s) >> 11) + 0.5) / 9007199254740992.0;
    double u2 = ((double)(next(&s) >> 11) + 0.5) / 9007199254740992.0;
    if (v->dt == COIL_BOOL)
      coil_tensor_set_i64(t, e, u1 < 0.5);
    else if (!is_fl(v->dt))
      coil_tensor_set_i64(t, e, (int64_t)ceil(lo) + (int64_t)(u1 * (floor(hi) - ceil(lo) + 1)));
    else if (normal)
      coil_tensor_set_f64(t, e, fmax(-4, fmin(4, sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2))));
    else
      coil_tensor_set_f64(t, e, lo + (hi - lo) * u1);
  }
  return 0;
}
