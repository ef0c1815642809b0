/* interp_kernel.c — runs one kernel_call by interpreting the kernel's loop IR, and the element
 * conversions every part of the engine shares.
 *
 * For each point of the x ranges (row-major, the last x variable fastest) the body runs in
 * order. A value is per r element when it is a load or index whose expression mentions an r
 * variable, or has a per-r operand; a per-r instruction runs for every point of the r ranges
 * (its values held as an array over the flattened r space) before the next instruction, a
 * reduce folds such an array into one value, and per-x operands broadcast over r.
 *
 * Numerics follow core/ref.c: floating values are held as double and each op's result is
 * rounded once to its dtype (f32, f16, bf16: so f16 math happens in f32 precision or better and
 * rounds per op); integers are exact 64-bit and wrap to their dtype through unsigned arithmetic;
 * reductions accumulate in double (or wrapping int64) and round once; max and min propagate
 * NaN; argmax and argmin give the first flat r index of the extreme, NaN counting as extreme.
 *
 * Index expressions that are affine in the loop variables (the usual case) are reduced once per
 * call to a constant and one coefficient per loop variable; the others are evaluated with
 * coil_sym_eval at every point. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp_int.h"

/* ---- element conversions ---- */

ival
interp_load(const char *p, coil_dtype t)
{
  ival v = {.i = 0};
  switch (t) {
  case COIL_F64: memcpy(&v.f, p, 8); break;
  case COIL_F32: { float f; memcpy(&f, p, 4); v.f = f; break; }
  case COIL_F16: { uint16_t h; memcpy(&h, p, 2); v.f = coil_f16_to_f32(h); break; }
  case COIL_BF16: { uint16_t h; memcpy(&h, p, 2); v.f = coil_bf16_to_f32(h); break; }
  case COIL_I64: memcpy(&v.i, p, 8); break;
  case COIL_I32: { int32_t x; memcpy(&x, p, 4); v.i = x; break; }
  case COIL_I16: { int16_t x; memcpy(&x, p, 2); v.i = x; break; }
  case COIL_I8: { int8_t x; memcpy(&x, p, 1); v.i = x; break; }
  case COIL_U8: v.i = (unsigned char)*p; break;
  case COIL_BOOL: v.i = *p != 0; break;
  default: break;
  }
  return v;
}

void
interp_store(char *p, coil_dtype t, ival v)
{
  switch (t) {
  case COIL_F64: memcpy(p, &v.f, 8); break;
  case COIL_F32: { float f = (float)v.f; memcpy(p, &f, 4); break; }
  case COIL_F16: { uint16_t h = coil_f32_to_f16((float)v.f); memcpy(p, &h, 2); break; }
  case COIL_BF16: { uint16_t h = coil_f32_to_bf16((float)v.f); memcpy(p, &h, 2); break; }
  case COIL_I64: memcpy(p, &v.i, 8); break;
  case COIL_I32: { int32_t x = (int32_t)(uint32_t)v.i; memcpy(p, &x, 4); break; }
  case COIL_I16: { int16_t x = (int16_t)(uint16_t)v.i; memcpy(p, &x, 2); break; }
  case COIL_I8: case COIL_U8: *p = (char)(unsigned char)v.i; break;
  case COIL_BOOL: *p = v.i != 0; break;
  default: break;
  }
}

double
interp_round(coil_dtype t, double v)
{
  switch (t) {
  case COIL_F32: return (float)v;
  case COIL_F16: return coil_f16_to_f32(coil_f32_to_f16((float)v));
  case COIL_BF16: return coil_bf16_to_f32(coil_f32_to_bf16((float)v));
  default: return v;
  }
}

int64_t
interp_wrap(coil_dtype t, int64_t v)
{
  switch (t) {
  case COIL_I32: return (int32_t)(uint32_t)v;
  case COIL_I16: return (int16_t)(uint16_t)v;
  case COIL_I8: return (int8_t)(uint8_t)v;
  case COIL_U8: return (uint8_t)v;
  case COIL_BOOL: return v != 0;
  default: return v;
  }
}

/* Float to integer: truncation toward zero, NaN to 0, saturating at the int64 range first (as
 * core/tensor.c, so the engine and the reference agree where C leaves it undefined). */
static int64_t
trunc_to_i64(double v)
{
  if (isnan(v))
    return 0;
  if (v >= 9.2233720368547758e18)
    return INT64_MAX;
  if (v <= -9.2233720368547758e18)
    return INT64_MIN;
  return (int64_t)v;
}

ival
interp_convert(ival v, coil_dtype from, coil_dtype to)
{
  ival r;
  if (coil_dtype_is_float(from)) {
    if (coil_dtype_is_float(to))
      r.f = interp_round(to, v.f);
    else if (to == COIL_BOOL)
      r.i = v.f != 0; /* NaN is true */
    else
      r.i = interp_wrap(to, trunc_to_i64(v.f));
  } else if (coil_dtype_is_float(to)) {
    /* int64 -> f32 rounds once, as a C cast (never through double) */
    r.f = to == COIL_F64 ? (double)v.i : interp_round(to, (double)(float)v.i);
  } else {
    r.i = interp_wrap(to, v.i);
  }
  return r;
}

double
interp_as_f64(ival v, coil_dtype t)
{
  return coil_dtype_is_float(t) ? v.f : (double)v.i;
}

ival
interp_from_f64(double v, coil_dtype t)
{
  return interp_convert((ival){.f = v}, COIL_F64, t);
}

/* ---- the ops ---- */

static double
unary_f(coil_kop op, double x)
{
  switch (op) {
  case COIL_KOP_NEG: return -x;
  case COIL_KOP_ABS: return fabs(x);
  case COIL_KOP_RELU: return isnan(x) ? x : x > 0 ? x : 0.0;
  case COIL_KOP_FLOOR: return floor(x);
  case COIL_KOP_CEIL: return ceil(x);
  case COIL_KOP_ROUND: return nearbyint(x); /* ties to even, as torch.round */
  case COIL_KOP_TRUNC: return trunc(x);
  case COIL_KOP_EXP: return exp(x);
  case COIL_KOP_LOG: return log(x);
  case COIL_KOP_LOG1P: return log1p(x);
  case COIL_KOP_SQRT: return sqrt(x);
  case COIL_KOP_RSQRT: return 1.0 / sqrt(x);
  case COIL_KOP_RECIP: return 1.0 / x;
  case COIL_KOP_SIN: return sin(x);
  case COIL_KOP_COS: return cos(x);
  case COIL_KOP_TANH: return tanh(x);
  case COIL_KOP_SIGMOID: return 1.0 / (1.0 + exp(-x));
  case COIL_KOP_ERF: return erf(x);
  case COIL_KOP_TAN: return tan(x);
  case COIL_KOP_SINH: return sinh(x);
  case COIL_KOP_COSH: return cosh(x);
  case COIL_KOP_ASIN: return asin(x);
  case COIL_KOP_ACOS: return acos(x);
  case COIL_KOP_ATAN: return atan(x);
  case COIL_KOP_ASINH: return asinh(x);
  case COIL_KOP_ACOSH: return acosh(x);
  case COIL_KOP_ATANH: return atanh(x);
  case COIL_KOP_EXPM1: return expm1(x);
  case COIL_KOP_LOG2: return log2(x);
  case COIL_KOP_LOG10: return log10(x);
  default: return NAN;
  }
}

/* Unary ops that only have a floating form: on an integer operand they compute in double. */
static bool
float_only(coil_kop op)
{
  return (op >= COIL_KOP_EXP && op <= COIL_KOP_ERF) || (op >= COIL_KOP_TAN && op <= COIL_KOP_LOG10);
}

static int64_t
unary_i(coil_kop op, int64_t x)
{
  switch (op) {
  case COIL_KOP_NEG: return (int64_t)(0 - (uint64_t)x);
  case COIL_KOP_ABS: return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
  case COIL_KOP_RELU: return x > 0 ? x : 0;
  case COIL_KOP_BITNOT: return ~x;
  case COIL_KOP_NOT: return !x;
  default: return x; /* floor, ceil, round, trunc of an integer */
  }
}

/* Floor division of floats as torch's div_floor_floating (see core/ref.c). b is not 0. */
static double
div_floor(double a, double b)
{
  double mod = fmod(a, b), div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0))
    div -= 1;
  if (div == 0)
    return copysign(0.0, a / b);
  double fl = floor(div);
  return div - fl > 0.5 ? fl + 1 : fl;
}

static double
binary_f(coil_kop op, double a, double b)
{
  switch (op) {
  case COIL_KOP_ADD: return a + b;
  case COIL_KOP_SUB: return a - b;
  case COIL_KOP_MUL: return a * b;
  case COIL_KOP_DIV: return a / b;
  case COIL_KOP_FLOORDIV: return b != 0 ? div_floor(a, b) : a / b;
  case COIL_KOP_TRUNCDIV: return trunc(a / b);
  case COIL_KOP_POW: return pow(a, b);
  case COIL_KOP_ATAN2: return atan2(a, b);
  case COIL_KOP_FMOD: return fmod(a, b);
  case COIL_KOP_MAX: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
  case COIL_KOP_MIN: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
  case COIL_KOP_EQ: return a == b;
  case COIL_KOP_NE: return a != b;
  case COIL_KOP_LT: return a < b;
  case COIL_KOP_LE: return a <= b;
  case COIL_KOP_GT: return a > b;
  case COIL_KOP_GE: return a >= b;
  case COIL_KOP_AND: return a != 0 && b != 0;
  case COIL_KOP_OR: return a != 0 || b != 0;
  default: return NAN;
  }
}

static int64_t
ipow(int64_t base, int64_t e)
{
  uint64_t result = 1, b = (uint64_t)base;
  while (e > 0) {
    if (e & 1)
      result *= b;
    b *= b;
    e >>= 1;
  }
  return (int64_t)result;
}

/* Integer ops wrap through unsigned arithmetic. Returns false on division by zero. */
static bool
binary_i(coil_kop op, int64_t a, int64_t b, int64_t *out)
{
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (op) {
  case COIL_KOP_ADD: *out = (int64_t)(ua + ub); return true;
  case COIL_KOP_SUB: *out = (int64_t)(ua - ub); return true;
  case COIL_KOP_MUL: *out = (int64_t)(ua * ub); return true;
  case COIL_KOP_FLOORDIV: case COIL_KOP_TRUNCDIV:
    if (b == 0)
      return false;
    if (a == INT64_MIN && b == -1) {
      *out = INT64_MIN;
      return true;
    }
    *out = a / b;
    if (op == COIL_KOP_FLOORDIV && a % b != 0 && (a < 0) != (b < 0))
      (*out)--;
    return true;
  case COIL_KOP_FMOD: /* the sign of a, as C's %; INT64_MIN % -1 (which traps) is 0 */
    if (b == 0)
      return false;
    *out = b == -1 ? 0 : a % b;
    return true;
  case COIL_KOP_POW: /* 1 and -1 to a negative power stay +-1, anything else becomes 0 */
    *out = b >= 0 ? ipow(a, b) : a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
    return true;
  case COIL_KOP_MAX: *out = a > b ? a : b; return true;
  case COIL_KOP_MIN: *out = a < b ? a : b; return true;
  case COIL_KOP_BITAND: *out = a & b; return true;
  case COIL_KOP_BITOR: *out = a | b; return true;
  case COIL_KOP_BITXOR: *out = a ^ b; return true;
  case COIL_KOP_EQ: *out = a == b; return true;
  case COIL_KOP_NE: *out = a != b; return true;
  case COIL_KOP_LT: *out = a < b; return true;
  case COIL_KOP_LE: *out = a <= b; return true;
  case COIL_KOP_GT: *out = a > b; return true;
  case COIL_KOP_GE: *out = a >= b; return true;
  case COIL_KOP_AND: *out = a && b; return true;
  case COIL_KOP_OR: *out = a || b; return true;
  default: *out = 0; return true;
  }
}

/* ---- one kernel call ---- */

/* How an index expression becomes an element offset: c0 + sum cx[d]*x_d + sum cr[d]*r_d when
 * it is affine in the loop variables, coil_sym_eval at each point otherwise. */
typedef struct iplan {
  bool affine;
  int64_t c0, cx[COIL_MAX_LOOP_DIMS], cr[COIL_MAX_LOOP_DIMS];
} iplan;

typedef struct krun {
  ictx *c;
  const coil_kernel *k;
  const coil_line *l;              /* the kernel_call */
  rtbuf **args;                    /* per kernel param */
  int64_t xs[COIL_MAX_LOOP_DIMS], rs[COIL_MAX_LOOP_DIMS], X, R; /* extents and point counts */
  int64_t xi[COIL_MAX_LOOP_DIMS], ri[COIL_MAX_LOOP_DIMS];       /* the current point */
  int64_t *vals;                   /* the symbol binding with the loop variables set */
  bool *is_loop, *is_r;            /* per variable */
  bool *per_r;                     /* per instruction */
  iplan *plan;                     /* per instruction (loads, stores, index) */
  ival **v;                        /* per instruction: 1 value, or R when per r */
  ival *pool;
  int *ind;                        /* per variable: the indirect instruction it is (iN), or -1 */
  bool *is_ind, *ind_r;            /* per variable: an indirect one; one whose value is per r */
  bool any_ind;
  int64_t rf;                      /* the r point being run (flat) */
} krun;

static bool
mentions(const coil_sym *s, const bool *mask, int nvars)
{
  if (s->kind == COIL_SYM_VAR)
    return s->var < nvars && mask[s->var];
  for (int i = 0; i < s->nargs; i++)
    if (mentions(s->args[i], mask, nvars))
      return true;
  return false;
}

/* Affine in the loop variables, with coefficients free of them. */
static bool
affine(const coil_sym *s, const bool *is_loop, int nvars)
{
  switch (s->kind) {
  case COIL_SYM_CONST: case COIL_SYM_VAR: return true;
  case COIL_SYM_ADD:
    for (int i = 0; i < s->nargs; i++)
      if (!affine(s->args[i], is_loop, nvars))
        return false;
    return true;
  case COIL_SYM_MUL: {
    int with_loop = 0;
    for (int i = 0; i < s->nargs; i++)
      if (mentions(s->args[i], is_loop, nvars)) {
        if (++with_loop > 1 || !affine(s->args[i], is_loop, nvars))
          return false;
      }
    return true;
  }
  default: return !mentions(s, is_loop, nvars);
  }
}

static void
fmt_point(const krun *kr, char *out, size_t n)
{
  size_t at = 0;
  at += (size_t)snprintf(out + at, n - at, "x = (");
  for (int d = 0; d < kr->k->nx && at < n; d++)
    at += (size_t)snprintf(out + at, n - at, "%s%" PRId64, d ? ", " : "", kr->xi[d]);
  if (kr->k->nr && at < n) {
    at += (size_t)snprintf(out + at, n - at, "), r = (");
    for (int d = 0; d < kr->k->nr && at < n; d++)
      at += (size_t)snprintf(out + at, n - at, "%s%" PRId64, d ? ", " : "", kr->ri[d]);
  }
  if (at < n)
    snprintf(out + at, n - at, ")");
}

static int
inst_err(krun *kr, int i, const char *what)
{
  char pt[256];
  fmt_point(kr, pt, sizeof pt);
  return interp_err(kr->c, "%%%d = %s: %s at %s", i, coil_kop_name(kr->k->insts[i].op), what, pt);
}

static int
offset_at(krun *kr, int i, int64_t *off)
{
  const iplan *pl = &kr->plan[i];
  if (pl->affine) {
    uint64_t o = (uint64_t)pl->c0; /* wraps instead of overflowing; bounds checks catch it */
    for (int d = 0; d < kr->k->nx; d++)
      o += (uint64_t)pl->cx[d] * (uint64_t)kr->xi[d];
    for (int d = 0; d < kr->k->nr; d++)
      o += (uint64_t)pl->cr[d] * (uint64_t)kr->ri[d];
    *off = (int64_t)o;
    return 0;
  }
  coil_diag tmp = {{0}};
  for (int v = 0; kr->any_ind && v < kr->c->nvars; v++) /* indirect values at this point */
    if (kr->ind[v] >= 0)
      kr->vals[v] = kr->v[kr->ind[v]][kr->per_r[kr->ind[v]] ? kr->rf : 0].i;
  if (coil_sym_eval(kr->c->p->sym, kr->k->insts[i].index, kr->vals, kr->c->nvars, off, &tmp))
    return inst_err(kr, i, tmp.msg);
  return 0;
}

/* A combining store (1.3): the element's old value `a` folded with the stored `v`, in the
 * storage dtype's arithmetic (integers wrap; max and min propagate NaN, as torch.maximum). The
 * interpreter runs points one after another, so nothing needs to be atomic. */
static ival
combine(coil_store_mode m, coil_dtype t, ival a, ival v)
{
  if (coil_dtype_is_float(t)) {
    double x = a.f, y = v.f, r;
    switch (m) {
    case COIL_STORE_ADD: r = x + y; break;
    case COIL_STORE_MUL: r = x * y; break;
    case COIL_STORE_MAX: r = x != x || y != y ? x + y : x > y ? x : y; break;
    case COIL_STORE_MIN: r = x != x || y != y ? x + y : x < y ? x : y; break;
    default: r = y; break;
    }
    return (ival){.f = interp_round(t, r)};
  }
  uint64_t x = (uint64_t)a.i, y = (uint64_t)v.i;
  int64_t r;
  switch (m) {
  case COIL_STORE_ADD: r = (int64_t)(x + y); break;
  case COIL_STORE_MUL: r = (int64_t)(x * y); break;
  case COIL_STORE_MAX: r = a.i > v.i ? a.i : v.i; break;
  case COIL_STORE_MIN: r = a.i < v.i ? a.i : v.i; break;
  default: r = v.i; break;
  }
  return (ival){.i = interp_wrap(t, r)};
}

/* The element an instruction loads or stores, or NULL after an error. */
static char *
element(krun *kr, int i)
{
  const coil_kinst *in = &kr->k->insts[i];
  int64_t off;
  if (offset_at(kr, i, &off))
    return NULL;
  const rtbuf *b = kr->args[in->param];
  char *p = interp_elem(kr->c, b, off);
  if (!p) {
    coil_strbuf sb = {0};
    coil_sym_print(kr->c->p->sym, in->index, COIL_SYM_PY_SYNTAX, &sb);
    char what[512];
    snprintf(what, sizeof what, "element %" PRId64 " of %s (%s[%s]) is outside its storage", off,
             kr->k->params[in->param].name, kr->c->p->buffers[kr->l->args[in->param]].name,
             sb.s ? sb.s : "");
    coil_strbuf_free(&sb);
    inst_err(kr, i, what);
  }
  return p;
}

static ival
opnd(const krun *kr, int a, int64_t rf)
{
  return kr->per_r[a] ? kr->v[a][rf] : kr->v[a][0];
}

static coil_dtype
dt(const krun *kr, int a)
{
  return kr->k->insts[a].dtype;
}

static int
exec_reduce(krun *kr, int i)
{
  const coil_kinst *in = &kr->k->insts[i];
  int a = in->args[0];
  coil_dtype t = dt(kr, a);
  coil_reduction red = in->red;
  bool arg = red == COIL_REDUCE_ARGMAX || red == COIL_REDUCE_ARGMIN;
  bool is_max = red == COIL_REDUCE_MAX || red == COIL_REDUCE_ARGMAX;
  if (kr->R == 0 && (arg || red == COIL_REDUCE_MAX || red == COIL_REDUCE_MIN))
    return inst_err(kr, i, "max, min, argmax and argmin of an empty r range have no value");
  ival *out = &kr->v[i][0];
  int64_t pos = 0;
  if (red == COIL_REDUCE_WELFORD_MEAN || red == COIL_REDUCE_WELFORD_M2) {
    if (!coil_dtype_is_float(t))
      return inst_err(kr, i, "a welford reduction of a non-float value");
    double mean = 0, m2 = 0; /* Welford's update, in f64 */
    for (int64_t rf = 0; rf < kr->R; rf++) {
      double x = opnd(kr, a, rf).f, delta = x - mean;
      mean += delta / (double)(rf + 1);
      m2 += delta * (x - mean);
    }
    double v = red == COIL_REDUCE_WELFORD_M2 ? m2 : kr->R ? mean : NAN;
    *out = interp_convert((ival){.f = v}, COIL_F64, in->dtype);
    return 0;
  }
  if (coil_dtype_is_float(t)) {
    double acc = red == COIL_REDUCE_PROD ? 1.0 : 0.0;
    for (int64_t rf = 0; rf < kr->R; rf++) {
      double x = opnd(kr, a, rf).f;
      switch (red) {
      case COIL_REDUCE_SUM: acc += x; break;
      case COIL_REDUCE_PROD: acc *= x; break;
      case COIL_REDUCE_ANY: acc = acc != 0 || x != 0; break;
      default: /* max, min and their args: NaN wins and then stays */
        if (rf == 0 || (!isnan(acc) && (isnan(x) || (is_max ? x > acc : x < acc)))) {
          acc = x;
          pos = rf;
        }
      }
    }
    if (arg)
      *out = interp_convert((ival){.i = pos}, COIL_I64, in->dtype);
    else if (red == COIL_REDUCE_ANY)
      *out = interp_convert((ival){.i = acc != 0}, COIL_BOOL, in->dtype);
    else
      *out = interp_convert((ival){.f = acc}, COIL_F64, in->dtype);
    return 0;
  }
  uint64_t acc = red == COIL_REDUCE_PROD ? 1 : 0;
  for (int64_t rf = 0; rf < kr->R; rf++) {
    int64_t x = opnd(kr, a, rf).i;
    switch (red) {
    case COIL_REDUCE_SUM: acc += (uint64_t)x; break;
    case COIL_REDUCE_PROD: acc *= (uint64_t)x; break;
    case COIL_REDUCE_ANY: acc = acc || x; break;
    default:
      if (rf == 0 || (is_max ? x > (int64_t)acc : x < (int64_t)acc)) {
        acc = (uint64_t)x;
        pos = rf;
      }
    }
  }
  if (arg)
    *out = interp_convert((ival){.i = pos}, COIL_I64, in->dtype);
  else if (red == COIL_REDUCE_ANY)
    *out = interp_convert((ival){.i = acc != 0}, COIL_BOOL, in->dtype);
  else /* sums and products wrap in int64 and then to the result dtype */
    *out = interp_convert((ival){.i = (int64_t)acc},
                          red == COIL_REDUCE_SUM || red == COIL_REDUCE_PROD ? COIL_I64 : t, in->dtype);
  return 0;
}

static int
exec_math(krun *kr, int i, ival *out, int64_t rf)
{
  const coil_kinst *in = &kr->k->insts[i];
  coil_kop_class cls = coil_kop_class_of(in->op);
  coil_dtype t = dt(kr, in->args[0]);
  ival a = opnd(kr, in->args[0], rf);
  if (cls == COIL_KCLASS_UNARY) {
    if (in->op == COIL_KOP_NOT)
      *out = (ival){.i = coil_dtype_is_float(t) ? a.f == 0 : !a.i};
    else if (coil_dtype_is_float(t))
      *out = interp_convert((ival){.f = unary_f(in->op, a.f)}, COIL_F64, in->dtype);
    else if (float_only(in->op))
      *out = interp_convert((ival){.f = unary_f(in->op, (double)a.i)}, COIL_F64, in->dtype);
    else /* ~ of a bool is logical not (~1 = -2 would read as True) */
      *out = interp_convert((ival){.i = unary_i(in->op == COIL_KOP_BITNOT && t == COIL_BOOL
                                                    ? COIL_KOP_NOT : in->op, a.i)},
                            COIL_I64, in->dtype);
    return 0;
  }
  /* binary and compare: operands have one dtype (the first's; lowering inserts casts) */
  ival b = interp_convert(opnd(kr, in->args[1], rf), dt(kr, in->args[1]), t);
  if (coil_dtype_is_float(t)) {
    double r = binary_f(in->op, a.f, b.f);
    *out = cls == COIL_KCLASS_CMP ? (ival){.i = r != 0}
                                  : interp_convert((ival){.f = r}, COIL_F64, in->dtype);
    return 0;
  }
  int64_t r;
  if (!binary_i(in->op, a.i, b.i, &r))
    return inst_err(kr, i, "integer division by zero");
  *out = cls == COIL_KCLASS_CMP ? (ival){.i = r != 0} : interp_convert((ival){.i = r}, COIL_I64, in->dtype);
  return 0;
}

/* Runs instruction i at flat r point rf (0 for per-x instructions). */
static int
exec(krun *kr, int i, int64_t rf)
{
  const coil_kinst *in = &kr->k->insts[i];
  ival *out = &kr->v[i][kr->per_r[i] ? rf : 0];
  kr->rf = rf;
  switch (in->op) {
  case COIL_KOP_LOAD: {
    const rtbuf *b = kr->args[in->param];
    const char *p = element(kr, i);
    if (!p)
      return -1;
    *out = interp_convert(interp_load(p, b->dtype), b->dtype, in->dtype);
    return 0;
  }
  case COIL_KOP_STORE: {
    const rtbuf *b = kr->args[in->param];
    char *p = element(kr, i);
    if (!p)
      return -1;
    ival v = interp_convert(opnd(kr, in->args[0], rf), dt(kr, in->args[0]), b->dtype);
    if (in->mode != COIL_STORE_PLAIN)
      v = combine(in->mode, b->dtype, interp_load(p, b->dtype), v);
    interp_store(p, b->dtype, v);
    return 0;
  }
  case COIL_KOP_CONST:
    *out = coil_dtype_is_float(in->dtype) ? (ival){.f = interp_round(in->dtype, in->f)}
                                          : (ival){.i = interp_wrap(in->dtype, in->i)};
    return 0;
  case COIL_KOP_INDEX: {
    int64_t off;
    if (offset_at(kr, i, &off))
      return -1;
    *out = interp_convert((ival){.i = off}, COIL_I64, in->dtype);
    return 0;
  }
  case COIL_KOP_INDIRECT: { /* the value as an index: in [0, bound), else the run fails */
    int64_t v = opnd(kr, in->args[0], rf).i, bound;
    coil_diag tmp = {{0}};
    if (coil_sym_eval(kr->c->p->sym, in->index, kr->vals, kr->c->nvars, &bound, &tmp))
      return inst_err(kr, i, tmp.msg);
    if (v < 0 || v >= bound) {
      char what[160];
      snprintf(what, sizeof what, "index %" PRId64 " is out of range [0, %" PRId64 ") (%s)", v, bound,
               kr->k->source_ops ? kr->k->source_ops : "indirect");
      return inst_err(kr, i, what);
    }
    out->i = v;
    return 0;
  }
  case COIL_KOP_CAST:
    *out = interp_convert(opnd(kr, in->args[0], rf), dt(kr, in->args[0]), in->dtype);
    return 0;
  case COIL_KOP_WHERE: {
    ival cnd = opnd(kr, in->args[0], rf);
    bool yes = coil_dtype_is_float(dt(kr, in->args[0])) ? cnd.f != 0 : cnd.i != 0;
    int pick = in->args[yes ? 1 : 2];
    *out = interp_convert(opnd(kr, pick, rf), dt(kr, pick), in->dtype);
    return 0;
  }
  case COIL_KOP_REDUCE:
    return exec_reduce(kr, i);
  case COIL_KOP_SCAN: { /* run_points visits the r points in order: the prefix so far is at rf - 1 */
    ival a = interp_convert(opnd(kr, in->args[0], rf), dt(kr, in->args[0]), in->dtype);
    static const coil_store_mode as_store[COIL_REDUCE_COUNT] = {
        [COIL_REDUCE_SUM] = COIL_STORE_ADD, [COIL_REDUCE_PROD] = COIL_STORE_MUL,
        [COIL_REDUCE_MAX] = COIL_STORE_MAX, [COIL_REDUCE_MIN] = COIL_STORE_MIN};
    *out = rf == 0 ? a : combine(as_store[in->red], in->dtype, kr->v[i][rf - 1], a);
    return 0;
  }
  default:
    return exec_math(kr, i, out, rf);
  }
}

/* Checks one instruction before anything runs: operands, params, dtypes. */
static int
check_inst(krun *kr, int i)
{
  const coil_kernel *k = kr->k;
  const coil_kinst *in = &k->insts[i];
  char what[160];
  if ((unsigned)in->op >= COIL_KOP_COUNT || (unsigned)in->dtype >= COIL_DTYPE_COUNT)
    return interp_err(kr->c, "%%%d has an unknown op or dtype", i);
  for (int a = 0; a < coil_kop_arity(in->op); a++) {
    int x = in->args[a];
    if (x < 0 || x >= i || k->insts[x].op == COIL_KOP_STORE)
      return interp_err(kr->c, "%%%d = %s: operand %d is %%%d, not an earlier value", i,
                        coil_kop_name(in->op), a, x);
  }
  coil_kop_class cls = coil_kop_class_of(in->op);
  if (in->op == COIL_KOP_LOAD || in->op == COIL_KOP_STORE) {
    if (in->param < 0 || in->param >= k->nparams)
      return interp_err(kr->c, "%%%d = %s: param %d does not exist", i, coil_kop_name(in->op), in->param);
    if (in->op == COIL_KOP_STORE && !k->params[in->param].is_output)
      return interp_err(kr->c, "%%%d = store: %s is not an output param", i, k->params[in->param].name);
  }
  if (cls == COIL_KCLASS_MEM || in->op == COIL_KOP_INDEX || in->op == COIL_KOP_INDIRECT) {
    if (!in->index)
      return interp_err(kr->c, "%%%d = %s has no index expression", i, coil_kop_name(in->op));
    snprintf(what, sizeof what, "the index of %%%d in kernel %s", i, k->name);
    if (interp_check_vars(kr->c, in->index, kr->is_loop, what))
      return -1;
  }
  if (in->op == COIL_KOP_REDUCE && (unsigned)in->red >= COIL_REDUCE_COUNT)
    return interp_err(kr->c, "%%%d = reduce of unknown kind %d", i, (int)in->red);
  if (in->op == COIL_KOP_SCAN && in->red != COIL_REDUCE_SUM && in->red != COIL_REDUCE_PROD &&
      in->red != COIL_REDUCE_MAX && in->red != COIL_REDUCE_MIN)
    return interp_err(kr->c, "%%%d = scan of unknown kind %d", i, (int)in->red);
  if (cls == COIL_KCLASS_BINARY || cls == COIL_KCLASS_UNARY || cls == COIL_KCLASS_CMP) {
    bool fl = coil_dtype_is_float(dt(kr, in->args[0]));
    if (in->op == COIL_KOP_DIV && !fl)
      return interp_err(kr->c, "%%%d = div needs floating operands, got %s (cast them first)", i,
                        coil_dtype_name(dt(kr, in->args[0])));
    if (fl && (in->op == COIL_KOP_BITAND || in->op == COIL_KOP_BITOR || in->op == COIL_KOP_BITXOR ||
               in->op == COIL_KOP_BITNOT))
      return interp_err(kr->c, "%%%d = %s of floating operands", i, coil_kop_name(in->op));
    if (!fl && in->op == COIL_KOP_ATAN2)
      return interp_err(kr->c, "%%%d = atan2 needs floating operands, got %s (cast them first)", i,
                        coil_dtype_name(dt(kr, in->args[0])));
  }
  return 0;
}

/* Everything a call needs before the first point: arguments, extents, per-r flags, index
 * plans, value storage. */
static int
prepare(krun *kr, const coil_line *l)
{
  ictx *c = kr->c;
  const coil_kernel *k = kr->k;
  char what[160];
  if (k->nx < 0 || k->nx > COIL_MAX_LOOP_DIMS || k->nr < 0 || k->nr > COIL_MAX_LOOP_DIMS)
    return interp_err(c, "kernel %s has %d x and %d r dimensions", k->name, k->nx, k->nr);
  if (l->nargs != k->nparams)
    return interp_err(c, "kernel %s takes %d buffers, the call passes %d", k->name, k->nparams, l->nargs);
  for (int j = 0; j < k->nparams; j++) {
    if (!(kr->args[j] = interp_use(c, l->args[j])))
      return -1;
    if (kr->args[j]->dtype != k->params[j].dtype)
      return interp_err(c, "param %s of %s is %s, the call passes %s of %s", k->params[j].name,
                        k->name, coil_dtype_name(k->params[j].dtype), c->p->buffers[l->args[j]].name,
                        coil_dtype_name(kr->args[j]->dtype));
  }
  for (int j = 0; j < k->nsyms; j++) {
    int64_t ignored;
    snprintf(what, sizeof what, "symbol argument %d of kernel %s", j, k->name);
    if (interp_eval(c, k->syms[j], what, &ignored))
      return -1;
  }
  kr->X = 1;
  kr->R = 1;
  for (int d = 0; d < k->nx + k->nr; d++) {
    bool r = d >= k->nx;
    int e = r ? d - k->nx : d;
    const coil_sym *var = r ? k->rvars[e] : k->xvars[e];
    int64_t *ext = r ? &kr->rs[e] : &kr->xs[e];
    snprintf(what, sizeof what, "the extent of %s%d in kernel %s", r ? "r" : "x", e, k->name);
    if (!var || var->kind != COIL_SYM_VAR || var->var >= c->nvars)
      return interp_err(c, "loop variable %s%d of kernel %s is not a variable", r ? "r" : "x", e, k->name);
    if (interp_eval(c, r ? k->rsize[e] : k->xsize[e], what, ext))
      return -1;
    if (*ext < 0)
      return interp_err(c, "%s is negative (%" PRId64 ")", what, *ext);
    kr->is_loop[var->var] = true;
    kr->is_r[var->var] = r;
    if (r)
      kr->R *= *ext;
    else
      kr->X *= *ext;
  }
  memcpy(kr->vals, c->bind, sizeof(int64_t) * (size_t)c->nvars);
  for (int v = 0; v < c->nvars; v++) { /* iN: the value of indirect instruction N */
    int m = coil_wir_indirect_of(c->p->sym, v);
    kr->ind[v] = m >= 0 && m < k->ninsts && k->insts[m].op == COIL_KOP_INDIRECT ? m : -1;
    kr->is_ind[v] = kr->ind[v] >= 0;
    kr->is_loop[v] = kr->is_loop[v] || kr->is_ind[v]; /* set per point, as loop variables are */
    kr->any_ind = kr->any_ind || kr->is_ind[v];
  }
  size_t slots = 0;
  for (int i = 0; i < k->ninsts; i++) {
    const coil_kinst *in = &k->insts[i];
    if (check_inst(kr, i))
      return -1;
    if (in->op == COIL_KOP_LOAD || in->op == COIL_KOP_INDEX)
      kr->per_r[i] = mentions(in->index, kr->is_r, c->nvars) || mentions(in->index, kr->ind_r, c->nvars);
    else if (in->op == COIL_KOP_STORE)
      kr->per_r[i] = mentions(in->index, kr->is_r, c->nvars) || mentions(in->index, kr->ind_r, c->nvars) ||
                     kr->per_r[in->args[0]];
    else if (in->op == COIL_KOP_SCAN)
      kr->per_r[i] = true;
    else if (in->op != COIL_KOP_REDUCE)
      for (int a = 0; a < coil_kop_arity(in->op); a++)
        kr->per_r[i] = kr->per_r[i] || kr->per_r[in->args[a]];
    slots += kr->per_r[i] ? (size_t)kr->R : 1;
    for (int v = 0; in->op == COIL_KOP_INDIRECT && v < c->nvars; v++)
      if (kr->ind[v] == i)
        kr->ind_r[v] = kr->per_r[i];
    if (in->index && (coil_kop_class_of(in->op) == COIL_KCLASS_MEM || in->op == COIL_KOP_INDEX)) {
      iplan *pl = &kr->plan[i];
      pl->affine = affine(in->index, kr->is_loop, c->nvars) && !mentions(in->index, kr->is_ind, c->nvars);
      if (!pl->affine)
        continue;
      coil_diag tmp = {{0}};
      int64_t v;
      for (int d = -1; d < k->nx + k->nr; d++) { /* d = -1: the constant term */
        int var = d < 0 ? -1 : d < k->nx ? k->xvars[d]->var : k->rvars[d - k->nx]->var;
        if (var >= 0)
          kr->vals[var] = 1;
        int rc = coil_sym_eval(c->p->sym, in->index, kr->vals, c->nvars, &v, &tmp);
        if (var >= 0)
          kr->vals[var] = 0;
        if (rc)
          return interp_err(c, "%%%d = %s: cannot evaluate its index: %s", i, coil_kop_name(in->op), tmp.msg);
        if (d < 0)
          pl->c0 = v;
        else if (d < k->nx)
          pl->cx[d] = v - pl->c0;
        else
          pl->cr[d - k->nx] = v - pl->c0;
      }
    }
  }
  kr->pool = calloc(slots + 1, sizeof(ival));
  if (!kr->pool)
    return interp_err(c, "out of memory: %zu values for one kernel call", slots);
  ival *at = kr->pool;
  for (int i = 0; i < k->ninsts; i++) {
    kr->v[i] = at;
    at += kr->per_r[i] ? kr->R : 1;
  }
  return 0;
}

/* Sets the loop variables of the current point into the binding. */
static void
set_point(krun *kr, bool r)
{
  int n = r ? kr->k->nr : kr->k->nx;
  for (int d = 0; d < n; d++)
    kr->vals[(r ? kr->k->rvars[d] : kr->k->xvars[d])->var] = r ? kr->ri[d] : kr->xi[d];
}

/* Advances a row-major multi-index; the last dimension moves fastest. */
static void
advance(int64_t *idx, const int64_t *ext, int n)
{
  for (int d = n - 1; d >= 0; d--) {
    if (++idx[d] < ext[d])
      return;
    idx[d] = 0;
  }
}

static int
run_points(krun *kr)
{
  const coil_kernel *k = kr->k;
  memset(kr->xi, 0, sizeof kr->xi);
  for (int64_t xf = 0; xf < kr->X; xf++, advance(kr->xi, kr->xs, k->nx)) {
    set_point(kr, false);
    for (int i = 0; i < k->ninsts; i++) {
      if (!kr->per_r[i]) {
        if (exec(kr, i, 0))
          return -1;
        continue;
      }
      memset(kr->ri, 0, sizeof kr->ri);
      for (int64_t rf = 0; rf < kr->R; rf++, advance(kr->ri, kr->rs, k->nr)) {
        set_point(kr, true);
        if (exec(kr, i, rf))
          return -1;
      }
    }
  }
  return 0;
}

int
interp_kernel_call(ictx *c, const coil_line *l)
{
  if (l->kernel < 0 || l->kernel >= c->p->nkernels)
    return interp_err(c, "kernel index %d is out of range", l->kernel);
  const coil_kernel *k = &c->p->kernels[l->kernel];
  size_t nv = (size_t)c->nvars + 1, ni = (size_t)k->ninsts + 1;
  krun kr = {.c = c, .k = k, .l = l};
  kr.args = calloc((size_t)k->nparams + 1, sizeof *kr.args);
  kr.vals = calloc(nv, sizeof *kr.vals);
  kr.is_loop = calloc(nv, sizeof *kr.is_loop);
  kr.is_r = calloc(nv, sizeof *kr.is_r);
  kr.per_r = calloc(ni, sizeof *kr.per_r);
  kr.plan = calloc(ni, sizeof *kr.plan);
  kr.v = calloc(ni, sizeof *kr.v);
  kr.ind = calloc(nv, sizeof *kr.ind);
  kr.is_ind = calloc(nv, sizeof *kr.is_ind);
  kr.ind_r = calloc(nv, sizeof *kr.ind_r);
  int rc;
  if (!kr.args || !kr.vals || !kr.is_loop || !kr.is_r || !kr.per_r || !kr.plan || !kr.v || !kr.ind ||
      !kr.is_ind || !kr.ind_r)
    rc = interp_err(c, "out of memory");
  else
    rc = prepare(&kr, l) ? -1 : run_points(&kr);
  free(kr.args);
  free(kr.vals);
  free(kr.is_loop);
  free(kr.is_r);
  free(kr.per_r);
  free(kr.plan);
  free(kr.v);
  free(kr.ind);
  free(kr.is_ind);
  free(kr.ind_r);
  free(kr.pool);
  return rc;
}
