/* rgen_math.c — the random tier's op families that compute values (rgen_int.h): pointwise
 * unary ops with their domains and the ranges their results take, binary ops with broadcasts and
 * dtype mixes, ops with a Python number, casts, reductions, scans and softmax, and multi-output
 * ops (max.dim, var_mean, sort, topk, native_layer_norm). */
#include "rgen_int.h"

#include <stdio.h>
#include <string.h>

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

int
rg_gen_unary(rg_graph *g)
{
  const unary_op *u = &unary_ops[rnd(g, (int)(sizeof unary_ops / sizeof *unary_ops))];
  rg_want w = {u->dts, 0, 4, u->needs_exact, false};
  int a = rg_operand(g, &w);
  if (a < 0 || !(dt_bit(g->v[a].dt) & u->dts) || (u->needs_exact && is_fl(g->v[a].dt) && !g->v[a].exact))
    return -1;
  if (u->dom == DOM_POS)
    a = rg_guard_positive(g, a);
  else if (u->dom == DOM_UNIT)
    a = rg_guard_unit(g, a);
  else if (u->dom == DOM_GE1) {
    a = rg_guard_positive(g, a);
    if (g->v[a].lo < 1) {
      char t[64];
      snprintf(t, sizeof t, "aten.add.Scalar(@%d, 1)", a);
      const rg_val *x = &g->v[a];
      a = rg_emit1(g, t, rg_result(x->dt, x->rank, x->d, x->lo + 1, x->hi + 1, false, true));
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
  return rg_emit1(g, t, rg_result(dt, x->rank, x->d, lo, hi, u->keeps_exact && x->exact, true));
}

/* binary: add sub mul div maximum minimum atan2 pow, comparisons, logical, bitwise, where */
int
rg_gen_binary(rg_graph *g)
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
    rg_want w = {fl_only ? W_FL : W_NUM, 0, 4, discont, false};
    int a = rg_operand(g, &w);
    if (a < 0)
      return -1;
    if (strstr(op, "remainder") && is_fl(g->v[a].dt))
      return -1; /* a - floor(a / b) * b rounds differently at f64 and f32 */
    if (strstr(op, "pow")) {
      if (g->v[a].hi > 4 || g->v[a].lo < -4)
        return -1;
      a = rg_guard_positive(g, a);
    }
    int b = rg_partner(g, a, w.dts, discont, fl_only && g->v[a].dt != COIL_F32);
    if (b < 0 || !(dt_bit(g->v[b].dt) & w.dts) || (discont && is_fl(g->v[b].dt) && !g->v[b].exact))
      return -1;
    if (strstr(op, "pow") && (g->v[b].lo < -3 || g->v[b].hi > 3))
      return -1;
    if (divlike && !(g->v[b].lo > 0 || g->v[b].hi < 0)) {
      if (discont && is_fl(g->v[b].dt))
        return -1; /* a guard would round */
      b = rg_guard_positive(g, b);
    }
    const rg_val *x = &g->v[a], *y = &g->v[b];
    rg_dim d[RG_MAX_RANK];
    int r = rg_bshape(x, y, d);
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
    return rg_emit1(g, t, rg_result(dt, r, d, lo, hi, exact, true));
  }
  if (kind < 8) { /* comparison, logical, bitwise: exact operands */
    bool is_cmp = kind == 6;
    const char *op = is_cmp ? cmp[rnd(g, 6)] : logic[rnd(g, 6)];
    bool bitwise = strstr(op, "bitwise");
    rg_want w = {bitwise ? W_I64 | W_BOOL : is_cmp ? W_NUM : W_ALL, 0, 4, true, false};
    if (is_cmp && chance(g, 30))
      w.dts = W_ALL & ~(unsigned)W_BOOL;
    int a = rg_operand(g, &w);
    if (a < 0)
      return -1;
    int b = rg_partner(g, a, w.dts, true, bitwise);
    if (b < 0 || !(dt_bit(g->v[b].dt) & w.dts) || (is_fl(g->v[b].dt) && !g->v[b].exact) ||
        (is_fl(g->v[a].dt) && !g->v[a].exact))
      return -1;
    const rg_val *x = &g->v[a], *y = &g->v[b];
    rg_dim d[RG_MAX_RANK];
    int r = rg_bshape(x, y, d);
    coil_dtype dt = bitwise ? promote(x->dt, y->dt) : COIL_BOOL;
    double m = fmax(fmax_elem(x), fmax_elem(y));
    snprintf(t, sizeof t, "%s(@%d, @%d)", op, a, b);
    return rg_emit1(g, t, rg_result(dt, r, d, dt == COIL_BOOL ? 0 : -2 * m - 1, dt == COIL_BOOL ? 1 : 2 * m + 1, true, true));
  }
  /* where(cond, a, b) */
  rg_want w = {W_ALL, 0, 4, false, false};
  int a = rg_operand(g, &w);
  if (a < 0)
    return -1;
  int b = rg_partner(g, a, W_ALL, false, chance(g, 60));
  if (b < 0)
    return -1;
  rg_dim d[RG_MAX_RANK];
  int r = rg_bshape(&g->v[a], &g->v[b], d);
  rg_val ab = rg_result(COIL_BOOL, r, d, 0, 1, true, true);
  int c = rg_partner(g, a, W_BOOL, true, false);
  if (g->v[c].dt != COIL_BOOL || !rg_broadcasts(&ab, &g->v[c])) {
    rg_dim cd[RG_MAX_RANK];
    int cr = r - rnd(g, r + 1);
    for (int k = 0; k < cr; k++)
      cd[k] = chance(g, 30) ? (rg_dim){1, 0} : d[r - cr + k];
    c = rg_new_input(g, COIL_BOOL, cr, cd, 0, 1);
  }
  const rg_val *x = &g->v[a], *y = &g->v[b], *z = &g->v[c];
  rg_dim d2[RG_MAX_RANK];
  r = rg_bshape(&ab, z, d2);
  snprintf(t, sizeof t, "aten.where.self(@%d, @%d, @%d)", c, a, b);
  return rg_emit1(g, t, rg_result(promote(x->dt, y->dt), r, d2, fmin(x->lo, y->lo), fmax(x->hi, y->hi),
                            x->exact && y->exact && x->dt == y->dt, true));
}

/* an op with a Python number */
int
rg_gen_scalar(rg_graph *g)
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
  rg_want w = {bit ? W_I64 | W_BOOL : fill ? W_ALL : W_NUM, 0, 4, discont, false};
  int a = rg_operand(g, &w);
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
      a = rg_guard_positive(g, a), snprintf(cs, sizeof cs, "0.5"), lo = 0, hi = sqrt(g->v[a].hi);
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
  return rg_emit1(g, t, rg_result(dt, x->rank, x->d, lo, hi, exact || (fill && true), true));
}

int
rg_gen_cast(rg_graph *g)
{
  rg_want w = {W_ALL, 0, 4, false, false};
  int a = rg_operand(g, &w);
  if (a < 0)
    return -1;
  const rg_val *x = &g->v[a];
  coil_dtype to = rg_random_dtype(g, W_ALL);
  if (!is_fl(to) && is_fl(x->dt) && (!x->exact || fmax_elem(x) > 1e9))
    return -1; /* truncation of a rounded value */
  char t[128];
  snprintf(t, sizeof t, "aten._to_copy.default(@%d, dtype=%s)", a, coil_dtype_name(to));
  double lo = x->lo, hi = x->hi;
  if (to == COIL_I64)
    lo = trunc(lo), hi = trunc(hi);
  bool exact = x->exact && (!is_fl(x->dt) || !is_fl(to) || to == COIL_F32 || to == x->dt);
  return rg_emit1(g, t, rg_result(to, x->rank, x->d, lo, hi, exact, true));
}

/* ---- reductions and scans ---- */

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

int
rg_gen_reduce(rg_graph *g)
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
  rg_want w = {fl ? W_FL : any ? W_ALL : minmax ? W_NUM : strstr(op, "prod") ? W_FL | W_I64 : W_ALL, 1, 4,
            arg || any, false};
  if (strstr(op, "sum.default"))
    w.min_rank = 0;
  int a = rg_operand(g, &w);
  if (a < 0)
    return -1;
  const rg_val *x = &g->v[a];
  if (!rg_ok_want(x, &w) || (half_rounded(x) && !minmax && !arg && !any))
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
    snprintf(t, sizeof t, "%s(@%d, %d%s)", op, a, rg_dim_arg(g, k, x->rank), keep ? ", True" : "");
  } else {
    rg_dims_of(g, x, mask, list, sizeof list);
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
  return rg_emit1(g, t, rg_result(dt, r, d, lo, hi, exact, true));
}

int
rg_gen_scan_softmax(rg_graph *g)
{
  int kind = rnd(g, 5);
  rg_want w = {kind < 2 ? W_ALL : W_FL, 1, 4, false, false};
  int a = rg_operand(g, &w);
  if (a < 0 || !rg_ok_want(&g->v[a], &w) || half_rounded(&g->v[a]))
    return -1;
  const rg_val *x = &g->v[a];
  int k = rnd(g, x->rank);
  char t[192];
  double m = fmax_elem(x);
  int64_t n = dim_max(x->d[k]);
  coil_dtype dt = x->dt == COIL_BOOL ? COIL_I64 : x->dt;
  if (kind == 0) {
    snprintf(t, sizeof t, "aten.cumsum.default(@%d, %d)", a, rg_dim_arg(g, k, x->rank));
    return rg_emit1(g, t, rg_result(dt, x->rank, x->d, -m * (double)n, m * (double)n, !is_fl(dt), true));
  }
  if (kind == 1) {
    if (m > 2 || n > 8)
      return -1;
    snprintf(t, sizeof t, "aten.cumprod.default(@%d, %d)", a, rg_dim_arg(g, k, x->rank));
    double b = pow(fmax(m, 1), (double)n);
    return rg_emit1(g, t, rg_result(dt, x->rank, x->d, -b, b, !is_fl(dt), true));
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
    rg_list_text(sz, nd, shape, sizeof shape);
    int wv = -1, bv = -1;
    if (chance(g, 60)) {
      wv = rg_new_input(g, x->dt, nd, x->d + x->rank - nd, -4, 4);
      bv = rg_new_input(g, x->dt, nd, x->d + x->rank - nd, -4, 4);
    }
    char ws[16] = "None", bs[16] = "None";
    if (wv >= 0)
      snprintf(ws, sizeof ws, "@%d", wv), snprintf(bs, sizeof bs, "@%d", bv);
    snprintf(t, sizeof t, "aten.native_layer_norm.default(@%d, %s, %s, %s, 1e-05)", a, shape, ws, bs);
    x = &g->v[a];
    rg_val res[3];
    res[0] = rg_result(x->dt, x->rank, x->d, -BIG, BIG, false, true);
    rg_dim sd[RG_MAX_RANK];
    memcpy(sd, x->d, sizeof sd);
    for (int i = 0; i < nd; i++)
      sd[x->rank - nd + i] = (rg_dim){1, 0};
    res[1] = rg_result(x->dt, x->rank, sd, -BIG, BIG, false, true);
    res[2] = rg_result(x->dt, x->rank, sd, 0, BIG, false, true);
    return rg_emit(g, t, 3, res);
  }
  snprintf(t, sizeof t, "aten.%s.default(@%d, %d, False)", kind == 2 ? "_softmax" : "_log_softmax", a,
           rg_dim_arg(g, k, x->rank));
  return rg_emit1(g, t, rg_result(x->dt, x->rank, x->d, kind == 2 ? 0 : -BIG, kind == 2 ? 1 : 0, false, true));
}

/* multi-output: max.dim / min.dim / var_mean / sort / topk */
int
rg_gen_multi(rg_graph *g)
{
  int kind = rnd(g, 5);
  rg_want w = {kind == 2 ? W_FL : kind >= 3 ? (kind == 3 ? W_ALL : W_NUM) : W_FL, 1, 4, kind != 2, false};
  int a = rg_operand(g, &w);
  if (a < 0 || !rg_ok_want(&g->v[a], &w))
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
  int dk = rg_dim_arg(g, k, x->rank);
  switch (kind) {
  case 0: case 1:
    snprintf(t, sizeof t, "aten.%s.dim(@%d, %d%s)", kind ? "min" : "max", a, dk, keep ? ", True" : "");
    res[0] = rg_result(x->dt, r, d, x->lo, x->hi, x->exact, true);
    res[1] = rg_result(COIL_I64, r, d, 0, (double)cnt, true, true);
    break;
  case 2:
    if (half_rounded(x))
      return -1;
    snprintf(t, sizeof t, "aten.var_mean.correction(@%d, [%d], correction=1%s)", a, dk, keep ? ", keepdim=True" : "");
    res[0] = rg_result(x->dt, r, d, 0, BIG, false, true);
    res[1] = rg_result(x->dt, r, d, x->lo, x->hi, false, true);
    break;
  case 3:
    if (x->d[k].m)
      return -1; /* known gap: the core does not sort along a symbolic dim */
    snprintf(t, sizeof t, "aten.sort.default(@%d, %d%s)", a, dk, chance(g, 50) ? ", True" : "");
    res[0] = rg_result(x->dt, x->rank, x->d, x->lo, x->hi, x->exact, true);
    res[1] = rg_result(COIL_I64, x->rank, x->d, 0, (double)cnt, true, true);
    break;
  default: {
    if (x->d[k].m)
      return -1;
    int64_t kk = 1 + rnd(g, (int)x->d[k].c);
    snprintf(t, sizeof t, "aten.topk.default(@%d, %lld, %d%s)", a, (long long)kk, dk, chance(g, 40) ? ", False" : "");
    memcpy(d, x->d, sizeof d);
    d[k] = (rg_dim){kk, 0};
    res[0] = rg_result(x->dt, x->rank, d, x->lo, x->hi, x->exact, true);
    res[1] = rg_result(COIL_I64, x->rank, d, 0, (double)cnt, true, true);
  }
  }
  return rg_emit(g, t, 2, res);
}
