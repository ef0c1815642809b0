/* ref.c — the reference interpreter ("ref"): runs a graph op by op on host tensors, the oracle
 * every later stage is checked against. Written for obvious correctness, not speed.
 *
 * Numerics: each op reads its operands, rounds them to the dtype PyTorch computes in (the common
 * dtype of type promotion, so a Python float meeting an f32 tensor becomes an f32), computes in
 * f64 (floating) or exact 64-bit integers (integer and bool), and rounds once to the output
 * dtype. Sizes: symbols bind from the actual input sizes; every node's output shape is its type
 * evaluated under that binding. This file has the driver, pointwise ops, reductions and
 * normalisations; ref_ops.c has views, data movement and library-class ops. */
#include "ref.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
coil_ref_err(rctx *r, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (r->n)
    return coil_diag_at(r->d, r->g->file, r->n->line, r->n->col, "%s (%%%s): %s", r->n->op->name,
                        r->n->out->name, msg);
  return coil_diag_at(r->d, r->g->file, 0, 0, "%s", msg);
}

static int
value_slot(const rctx *r, const coil_value *v)
{
  return v->kind == COIL_VAL_NODE ? r->g->ninputs + v->index : v->index;
}

const coil_tensor *
coil_ref_arg(rctx *r, int i)
{
  const coil_lit *l = &r->n->bound[i];
  if (l->kind != COIL_LIT_VALUE)
    return NULL;
  return r->vals[value_slot(r, l->v)];
}

const coil_lit *
coil_ref_lit(rctx *r, const char *name)
{
  coil_schema s;
  if (coil_schema_parse(r->n->op, &s, NULL))
    return NULL;
  int i = coil_schema_find(&s, name);
  return i >= 0 ? &r->n->bound[i] : NULL;
}

const coil_tensor *
coil_ref_param(rctx *r, const char *name)
{
  const coil_lit *l = coil_ref_lit(r, name);
  return l ? coil_ref_arg(r, (int)(l - r->n->bound)) : NULL;
}

int64_t
coil_ref_stride(const coil_tensor *t, int dim)
{
  int64_t s = 1;
  for (int i = dim + 1; i < t->rank; i++)
    s *= t->shape[i];
  return s;
}

void
coil_ref_bstrides(const coil_tensor *t, int out_rank, const int64_t *out_shape, int64_t *st)
{
  for (int d = 0; d < out_rank; d++) {
    int j = d - (out_rank - t->rank);
    st[d] = j < 0 || (t->shape[j] == 1 && out_shape[d] != 1) ? 0 : coil_ref_stride(t, j);
  }
}

void
coil_ref_unravel(int64_t i, int rank, const int64_t *shape, int64_t *idx)
{
  for (int d = rank - 1; d >= 0; d--) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
}

static int64_t
offset_of(const int64_t *idx, const int64_t *st, int rank)
{
  int64_t o = 0;
  for (int d = 0; d < rank; d++)
    o += idx[d] * st[d];
  return o;
}

void
coil_ref_strided_copy(const coil_tensor *in, coil_tensor *out, const int64_t *strides, int64_t offset)
{
  size_t es = coil_dtype_size(in->dtype);
  int64_t n = coil_tensor_numel(out), idx[COIL_MAX_RANK];
  for (int64_t i = 0; i < n; i++) {
    coil_ref_unravel(i, out->rank, out->shape, idx);
    int64_t o = offset + offset_of(idx, strides, out->rank);
    memcpy((char *)out->data + (size_t)i * es, (const char *)in->data + (size_t)o * es, es);
  }
}

void
coil_ref_convert(const coil_tensor *src, int64_t si, coil_tensor *dst, int64_t di)
{
  if (coil_dtype_is_float(src->dtype))
    coil_tensor_set_f64(dst, di, coil_tensor_get_f64(src, si));
  else
    coil_tensor_set_i64(dst, di, coil_tensor_get_i64(src, si));
}

/* ---- pointwise ---- */

/* v rounded to what dtype t can hold (the value an op computing in t starts from). */
static double
round_to(coil_dtype t, double v)
{
  switch (t) {
  case COIL_F32: return (float)v;
  case COIL_F16: return coil_f16_to_f32(coil_f32_to_f16((float)v));
  case COIL_BF16: return coil_bf16_to_f32(coil_f32_to_bf16((float)v));
  default: return v;
  }
}

static double
scalar_of(const coil_lit *l)
{
  return l->kind == COIL_LIT_FLOAT ? l->f : (double)l->i;
}

/* An operand of a pointwise op: a tensor read with broadcast strides, or a number. */
typedef struct {
  const coil_tensor *t;
  const coil_lit *lit;
  int64_t st[COIL_MAX_RANK];
} operand;

static void
operand_init(rctx *r, operand *o, int param, const coil_tensor *out)
{
  memset(o, 0, sizeof *o);
  o->lit = &r->n->bound[param];
  o->t = coil_ref_arg(r, param);
  if (o->t)
    coil_ref_bstrides(o->t, out->rank, out->shape, o->st);
}

static double
get_f(const operand *o, const int64_t *idx, int rank, coil_dtype compute)
{
  if (!o->t)
    return round_to(compute, o->lit->kind == COIL_LIT_FLOAT ? o->lit->f : (double)o->lit->i);
  int64_t off = offset_of(idx, o->st, rank);
  if (coil_dtype_is_float(o->t->dtype))
    return round_to(compute, coil_tensor_get_f64(o->t, off));
  return round_to(compute, (double)coil_tensor_get_i64(o->t, off));
}

static int64_t
get_i(const operand *o, const int64_t *idx, int rank)
{
  if (!o->t)
    return o->lit->kind == COIL_LIT_FLOAT ? coil_f64_to_i64(o->lit->f) : o->lit->i;
  return coil_tensor_get_i64(o->t, offset_of(idx, o->st, rank));
}

typedef struct {
  double slope;      /* leaky_relu */
  bool tanh_approx;  /* gelu */
  double alpha, scale, input_scale; /* elu */
  double lo, hi;     /* hardtanh */
} unary_params;

static double
unary_f(int ew, double x, const unary_params *p)
{
  switch (ew) {
  case EW_ABS: return fabs(x);
  case EW_NEG: return -x;
  case EW_RELU: return isnan(x) ? x : x > 0 ? x : 0.0;
  case EW_FLOOR: return floor(x);
  case EW_CEIL: return ceil(x);
  case EW_ROUND: return nearbyint(x); /* ties to even, as torch.round */
  case EW_TRUNC: return trunc(x);
  case EW_LEAKY_RELU: return x > 0 ? x : x * p->slope;
  /* elu: scale * x above 0, else scale * alpha * (exp(input_scale * x) - 1); NaN stays */
  case EW_ELU: return x > 0 || isnan(x) ? p->scale * x : p->scale * p->alpha * expm1(p->input_scale * x);
  case EW_HARDTANH: return isnan(x) ? x : x < p->lo ? p->lo : x > p->hi ? p->hi : x; /* clamp */
  case EW_EXP: return exp(x);
  case EW_LOG: return log(x);
  case EW_LOG1P: return log1p(x);
  case EW_SQRT: return sqrt(x);
  case EW_RSQRT: return 1.0 / sqrt(x);
  case EW_RECIPROCAL: return 1.0 / x;
  case EW_SIN: return sin(x);
  case EW_COS: return cos(x);
  case EW_TANH: return tanh(x);
  case EW_SIGMOID: return 1.0 / (1.0 + exp(-x));
  case EW_ERF: return erf(x);
  case EW_SILU: return x / (1.0 + exp(-x));
  case EW_GELU:
    if (p->tanh_approx)
      return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
  }
  return coil_ref_math_f(ew, x);
}

static int64_t
unary_i(int ew, int64_t x)
{
  switch (ew) {
  case EW_ABS: return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
  case EW_NEG: return (int64_t)(0 - (uint64_t)x);
  case EW_RELU: return x > 0 ? x : 0;
  case EW_BITNOT: return ~x;
  case EW_LOGICAL_NOT: return !x;
  case EW_SIGN: case EW_ISNAN: case EW_ISINF: return coil_ref_math_i(ew, x);
  default: return x; /* floor, ceil, round, trunc of an integer */
  }
}

static int
run_unary(rctx *r, coil_tensor *out)
{
  int ew = r->n->op->sub;
  operand a;
  operand_init(r, &a, 0, out);
  coil_dtype in = a.t->dtype;
  bool float_math = ew == EW_LOGICAL_NOT ? false
                    : r->n->op->rule == COIL_RULE_UNARY_FLOAT || coil_dtype_is_float(in);
  int64_t ilo = 0, ihi = 0; /* hardtanh of integers: the bounds truncated, as torch does */
  if (ew == EW_LOGICAL_NOT && coil_dtype_is_float(in))
    float_math = true;
  coil_dtype compute = coil_dtype_is_float(in) ? in : COIL_F32;
  unary_params prm = {.slope = 0.0};
  if (ew == EW_LEAKY_RELU) /* torch keeps the slope in f32 for f16 and bf16 (their opmath type) */
    prm.slope = round_to(compute == COIL_F64 ? COIL_F64 : COIL_F32,
                         scalar_of(coil_ref_lit(r, "negative_slope")));
  if (ew == EW_GELU)
    prm.tanh_approx = strcmp(coil_ref_lit(r, "approximate")->s, "tanh") == 0;
  if (ew == EW_ELU) { /* the coefficients in the opmath type, as the slope above */
    coil_dtype op = compute == COIL_F64 ? COIL_F64 : COIL_F32;
    prm.alpha = round_to(op, scalar_of(coil_ref_lit(r, "alpha")));
    prm.scale = round_to(op, scalar_of(coil_ref_lit(r, "scale")));
    prm.input_scale = round_to(op, scalar_of(coil_ref_lit(r, "input_scale")));
  }
  if (ew == EW_HARDTANH) { /* clamp with the bounds in self's dtype */
    const coil_lit *lo = coil_ref_lit(r, "min_val"), *hi = coil_ref_lit(r, "max_val");
    prm.lo = round_to(compute, scalar_of(lo));
    prm.hi = round_to(compute, scalar_of(hi));
    ilo = lo->kind == COIL_LIT_FLOAT ? coil_f64_to_i64(lo->f) : lo->i;
    ihi = hi->kind == COIL_LIT_FLOAT ? coil_f64_to_i64(hi->f) : hi->i;
  }
  int64_t n = coil_tensor_numel(out), idx[COIL_MAX_RANK];
  for (int64_t i = 0; i < n; i++) {
    coil_ref_unravel(i, out->rank, out->shape, idx);
    if (ew == EW_LOGICAL_NOT && float_math)
      coil_tensor_set_i64(out, i, get_f(&a, idx, out->rank, compute) == 0);
    else if (float_math)
      coil_tensor_set_f64(out, i, unary_f(ew, get_f(&a, idx, out->rank, compute), &prm));
    else if (ew == EW_HARDTANH) {
      int64_t x = get_i(&a, idx, out->rank);
      coil_tensor_set_i64(out, i, x < ilo ? ilo : x > ihi ? ihi : x);
    } else /* ~ of a bool is logical not (~1 = -2 would store as True) */
      coil_tensor_set_i64(out, i, unary_i(ew == EW_BITNOT && in == COIL_BOOL ? EW_LOGICAL_NOT : ew,
                                          get_i(&a, idx, out->rank)));
  }
  return 0;
}

/* Floor division of floats as torch's div_floor_floating (and Python's //): through fmod, so
 * inf // 2 is nan and -1 // inf is -1, where floor(a / b) gives inf and -0. b is not 0. */
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

static bool
binary_f(int ew, double a, double b, double alpha, const char *mode, double *out)
{
  switch (ew) {
  case EW_ADD: *out = a + alpha * b; return true;
  case EW_SUB: *out = a - alpha * b; return true;
  case EW_RSUB: *out = b - alpha * a; return true;
  case EW_MUL: *out = a * b; return true;
  case EW_DIV: *out = a / b; return true;
  case EW_DIV_MODE:
    *out = a / b;
    if (mode && strcmp(mode, "trunc") == 0)
      *out = trunc(*out);
    else if (mode && b != 0)
      *out = div_floor(a, b);
    return true;
  case EW_POW: *out = pow(a, b); return true;
  case EW_MAXIMUM: *out = isnan(a) || isnan(b) ? NAN : a > b ? a : b; return true;
  case EW_MINIMUM: *out = isnan(a) || isnan(b) ? NAN : a < b ? a : b; return true;
  case EW_EQ: *out = a == b; return true;
  case EW_NE: *out = a != b; return true;
  case EW_LT: *out = a < b; return true;
  case EW_LE: *out = a <= b; return true;
  case EW_GT: *out = a > b; return true;
  case EW_GE: *out = a >= b; return true;
  case EW_LOGICAL_AND: *out = a != 0 && b != 0; return true;
  case EW_LOGICAL_OR: *out = a != 0 || b != 0; return true;
  }
  return coil_ref_math_binary_f(ew, a, b, out);
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

/* v cast to the integer dtype t: torch casts every operand to the common dtype first, so a
 * u8 tensor compared with -1 meets 255. */
static int64_t
wrap_to(coil_dtype t, int64_t v)
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

/* Integer arithmetic wraps like the hardware (through unsigned, to stay defined in C). */
static int
binary_i(rctx *r, int ew, int64_t a, int64_t b, int64_t alpha, const char *mode, int64_t *out)
{
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (ew) {
  case EW_ADD: *out = (int64_t)(ua + (uint64_t)alpha * ub); return 0;
  case EW_SUB: *out = (int64_t)(ua - (uint64_t)alpha * ub); return 0;
  case EW_RSUB: *out = (int64_t)(ub - (uint64_t)alpha * ua); return 0;
  case EW_MUL: *out = (int64_t)(ua * ub); return 0;
  case EW_DIV_MODE:
    if (b == 0)
      return coil_ref_err(r, "integer division by zero");
    if (a == INT64_MIN && b == -1) {
      *out = INT64_MIN;
      return 0;
    }
    *out = a / b;
    if (strcmp(mode, "floor") == 0 && (a % b != 0) && ((a < 0) != (b < 0)))
      (*out)--;
    return 0;
  case EW_POW:
    /* torch refuses only a negative Python-number exponent; a tensor of exponents follows
     * integer rules: 1 and -1 to a negative power stay +-1, anything else becomes 0 */
    if (b < 0 && r->n->op->id == COIL_OP_POW_TS)
      return coil_ref_err(r, "integers to negative integer powers are not allowed");
    if (b < 0)
      *out = a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
    else
      *out = ipow(a, b);
    return 0;
  case EW_MAXIMUM: *out = a > b ? a : b; return 0;
  case EW_MINIMUM: *out = a < b ? a : b; return 0;
  case EW_BITAND: *out = a & b; return 0;
  case EW_BITOR: *out = a | b; return 0;
  case EW_EQ: *out = a == b; return 0;
  case EW_NE: *out = a != b; return 0;
  case EW_LT: *out = a < b; return 0;
  case EW_LE: *out = a <= b; return 0;
  case EW_GT: *out = a > b; return 0;
  case EW_GE: *out = a >= b; return 0;
  case EW_LOGICAL_AND: *out = a && b; return 0;
  case EW_LOGICAL_OR: *out = a || b; return 0;
  }
  int rc = coil_ref_math_binary_i(ew, a, b, out);
  if (rc < 0)
    return coil_ref_err(r, "integer division by zero (ZeroDivisionError)");
  if (rc == 0)
    return 0;
  return coil_ref_err(r, "internal: no integer form of this op");
}

static int
run_binary(rctx *r, coil_tensor *out)
{
  int ew = r->n->op->sub;
  operand a, b;
  operand_init(r, &a, 0, out);
  operand_init(r, &b, 1, out);
  const coil_lit *lits[2] = {a.lit, b.lit};
  coil_dtype compute = coil_infer_common_dtype(lits, 2);
  const coil_lit *al = coil_ref_lit(r, "alpha"), *ml = coil_ref_lit(r, "rounding_mode");
  const char *mode = ml && ml->kind == COIL_LIT_STR ? ml->s : NULL;
  bool float_math = coil_dtype_is_float(compute) || r->n->op->rule == COIL_RULE_BINARY_FLOAT ||
                    (ew == EW_DIV_MODE && !mode);
  if (float_math && !coil_dtype_is_float(compute))
    compute = COIL_F32; /* true division of integers */
  /* f16/bf16 times or over a Python number: torch keeps the number in f32 (the opmath type),
   * on CPU and CUDA alike (add and sub round it to the tensor's dtype on CPU, not on CUDA) */
  coil_dtype bcompute = compute;
  if ((ew == EW_MUL || ew == EW_DIV) && !b.t && (compute == COIL_F16 || compute == COIL_BF16))
    bcompute = COIL_F32;
  int64_t n = coil_tensor_numel(out), idx[COIL_MAX_RANK];
  for (int64_t i = 0; i < n; i++) {
    coil_ref_unravel(i, out->rank, out->shape, idx);
    if (float_math) {
      double v = 0;
      double alpha = al ? round_to(compute, scalar_of(al)) : 1.0;
      binary_f(ew, get_f(&a, idx, out->rank, compute), get_f(&b, idx, out->rank, bcompute), alpha,
               mode, &v);
      coil_tensor_set_f64(out, i, v);
    } else {
      int64_t v = 0, alpha = al ? al->i : 1;
      if (binary_i(r, ew, wrap_to(compute, get_i(&a, idx, out->rank)),
                   wrap_to(compute, get_i(&b, idx, out->rank)), alpha, mode, &v))
        return -1;
      coil_tensor_set_i64(out, i, v);
    }
  }
  return 0;
}

static int
run_where(rctx *r, coil_tensor *out)
{
  operand c, a, b;
  operand_init(r, &c, 0, out);
  operand_init(r, &a, 1, out);
  operand_init(r, &b, 2, out);
  bool fl = coil_dtype_is_float(out->dtype);
  int64_t n = coil_tensor_numel(out), idx[COIL_MAX_RANK];
  for (int64_t i = 0; i < n; i++) {
    coil_ref_unravel(i, out->rank, out->shape, idx);
    const operand *pick = get_i(&c, idx, out->rank) ? &a : &b;
    if (fl)
      coil_tensor_set_f64(out, i, get_f(pick, idx, out->rank, out->dtype));
    else
      coil_tensor_set_i64(out, i, get_i(pick, idx, out->rank));
  }
  return 0;
}

static int
run_clamp(rctx *r, coil_tensor *out)
{
  operand x, lo, hi;
  operand_init(r, &x, 0, out);
  operand_init(r, &lo, 1, out);
  operand_init(r, &hi, 2, out);
  bool has_lo = lo.lit->kind != COIL_LIT_NONE, has_hi = hi.lit->kind != COIL_LIT_NONE;
  bool fl = coil_dtype_is_float(out->dtype);
  int64_t n = coil_tensor_numel(out), idx[COIL_MAX_RANK];
  for (int64_t i = 0; i < n; i++) {
    coil_ref_unravel(i, out->rank, out->shape, idx);
    if (fl) {
      double v = get_f(&x, idx, out->rank, out->dtype);
      if (has_lo) {
        double l = get_f(&lo, idx, out->rank, out->dtype);
        v = isnan(l) ? l : v < l ? l : v;
      }
      if (has_hi) {
        double h = get_f(&hi, idx, out->rank, out->dtype);
        v = isnan(h) ? h : v > h ? h : v;
      }
      coil_tensor_set_f64(out, i, v);
    } else {
      /* the bounds are cast to the result dtype first, as torch does: clamp(u8 5, -1) is 255 */
      int64_t v = get_i(&x, idx, out->rank);
      int64_t l = wrap_to(out->dtype, get_i(&lo, idx, out->rank));
      int64_t h = wrap_to(out->dtype, get_i(&hi, idx, out->rank));
      if (has_lo && v < l)
        v = l;
      if (has_hi && v > h)
        v = h;
      coil_tensor_set_i64(out, i, v);
    }
  }
  return 0;
}

static void
fill(coil_tensor *out, const coil_lit *v)
{
  int64_t n = coil_tensor_numel(out);
  for (int64_t i = 0; i < n; i++) {
    if (v->kind == COIL_LIT_FLOAT)
      coil_tensor_set_f64(out, i, v->f);
    else
      coil_tensor_set_i64(out, i, v->i);
  }
}

static int
run_creation(rctx *r, coil_tensor *out)
{
  const coil_op *op = r->n->op;
  if (op->rule == COIL_RULE_FULL) {
    fill(out, coil_ref_lit(r, op->sub ? "s" : "fill_value"));
  } else if (op->rule == COIL_RULE_FULL_LIKE) {
    coil_lit k = {.kind = COIL_LIT_INT, .i = op->sub == 2};
    fill(out, op->sub == 0 ? coil_ref_lit(r, "fill_value") : op->sub == 3 ? coil_ref_lit(r, "value") : &k);
  } else { /* arange: start + i*step, computed in f64 (or exactly for integers) */
    const coil_lit *s = coil_ref_lit(r, "start"), *st = coil_ref_lit(r, "step");
    double start = s ? scalar_of(s) : 0, step = st ? scalar_of(st) : 1;
    for (int64_t i = 0; i < out->shape[0]; i++) {
      if (coil_dtype_is_float(out->dtype))
        coil_tensor_set_f64(out, i, start + (double)i * step);
      else
        coil_tensor_set_i64(out, i, (int64_t)start + i * (int64_t)step);
    }
  }
  return 0;
}

static int
run_to_copy(rctx *r, coil_tensor *out)
{
  const coil_tensor *in = coil_ref_arg(r, 0);
  int64_t n = coil_tensor_numel(out);
  for (int64_t i = 0; i < n; i++)
    coil_ref_convert(in, i, out, i);
  return 0;
}

/* ---- reductions ---- */

/* Maps each input element to its output element: the flat index with reduced dims dropped. */
typedef struct {
  const coil_tensor *in;
  bool red[COIL_MAX_RANK];
  int64_t nout, count; /* output elements; input elements per output */
} reduction;

static void
reduction_init(rctx *r, reduction *rd, const coil_tensor *in, const coil_lit *dim)
{
  rd->in = in;
  memset(rd->red, 0, sizeof rd->red);
  if (!dim || dim->kind == COIL_LIT_NONE || (dim->kind == COIL_LIT_LIST && dim->n == 0)) {
    for (int i = 0; i < in->rank; i++)
      rd->red[i] = true;
  } else {
    int n = dim->kind == COIL_LIT_LIST ? dim->n : 1;
    for (int i = 0; i < n && in->rank > 0; i++) {
      int64_t d = dim->kind == COIL_LIT_LIST ? dim->items[i].i : dim->i;
      rd->red[d < 0 ? d + in->rank : d] = true;
    }
  }
  rd->nout = rd->count = 1;
  for (int i = 0; i < in->rank; i++) {
    if (rd->red[i])
      rd->count *= in->shape[i];
    else
      rd->nout *= in->shape[i];
  }
  (void)r;
}

static int64_t
reduction_out(const reduction *rd, int64_t i)
{
  int64_t idx[COIL_MAX_RANK], o = 0;
  coil_ref_unravel(i, rd->in->rank, rd->in->shape, idx);
  for (int d = 0; d < rd->in->rank; d++)
    if (!rd->red[d])
      o = o * rd->in->shape[d] + idx[d];
  return o;
}

static int
run_reduce(rctx *r, coil_tensor *out)
{
  const coil_tensor *in = coil_ref_arg(r, 0);
  reduction rd;
  reduction_init(r, &rd, in, coil_ref_lit(r, "dim"));
  int sub = r->n->op->sub;
  /* any of a float tensor tests x != 0 in floating point: 0.5 and NaN are true */
  bool fl = coil_dtype_is_float(out->dtype) || sub == RED_MEAN ||
            (sub == RED_ANY && coil_dtype_is_float(in->dtype));
  if ((sub == RED_MAX || sub == RED_MIN) && rd.count == 0)
    return coil_ref_err(r, "max/min of an empty dimension has no identity");
  double *acc = calloc((size_t)rd.nout + 1, sizeof(double));
  int64_t *iacc = calloc((size_t)rd.nout + 1, sizeof(int64_t));
  bool *seen = calloc((size_t)rd.nout + 1, sizeof(bool));
  if (!acc || !iacc || !seen) {
    free(acc), free(iacc), free(seen);
    return coil_ref_err(r, "out of memory");
  }
  for (int64_t o = 0; o < rd.nout; o++) {
    acc[o] = sub == RED_PROD ? 1.0 : 0.0;
    iacc[o] = sub == RED_PROD ? 1 : 0;
  }
  coil_dtype compute = coil_dtype_is_float(out->dtype) ? out->dtype : COIL_F64;
  int64_t n = coil_tensor_numel(in);
  for (int64_t i = 0; i < n; i++) {
    int64_t o = reduction_out(&rd, i);
    if (fl) {
      double v = round_to(compute, coil_dtype_is_float(in->dtype) ? coil_tensor_get_f64(in, i)
                                                                  : (double)coil_tensor_get_i64(in, i));
      switch (sub) {
      case RED_SUM: case RED_MEAN: acc[o] += v; break;
      case RED_PROD: acc[o] *= v; break;
      /* NaN propagates: once the accumulator is NaN it stays NaN */
      case RED_MAX: if (!seen[o] || (!isnan(acc[o]) && (isnan(v) || v > acc[o]))) acc[o] = v; break;
      case RED_MIN: if (!seen[o] || (!isnan(acc[o]) && (isnan(v) || v < acc[o]))) acc[o] = v; break;
      case RED_ANY: acc[o] = acc[o] != 0 || v != 0; break;
      }
    } else {
      int64_t v = coil_tensor_get_i64(in, i);
      switch (sub) {
      case RED_SUM: iacc[o] = (int64_t)((uint64_t)iacc[o] + (uint64_t)v); break;
      case RED_PROD: iacc[o] = (int64_t)((uint64_t)iacc[o] * (uint64_t)v); break;
      case RED_MAX: iacc[o] = !seen[o] || v > iacc[o] ? v : iacc[o]; break;
      case RED_MIN: iacc[o] = !seen[o] || v < iacc[o] ? v : iacc[o]; break;
      case RED_ANY: iacc[o] = iacc[o] || v; break;
      }
    }
    seen[o] = true;
  }
  for (int64_t o = 0; o < rd.nout; o++) {
    if (sub == RED_MEAN)
      acc[o] /= (double)rd.count;
    if (fl)
      coil_tensor_set_f64(out, o, acc[o]);
    else
      coil_tensor_set_i64(out, o, iacc[o]);
  }
  free(acc), free(iacc), free(seen);
  return 0;
}

/* var and var_mean: two passes (mean, then squared deviations), divided by n - correction. */
static int
run_var(rctx *r, coil_tensor *outs)
{
  const coil_tensor *in = coil_ref_arg(r, 0);
  reduction rd;
  reduction_init(r, &rd, in, coil_ref_lit(r, "dim"));
  const coil_lit *cl = coil_ref_lit(r, "correction"), *ub = coil_ref_lit(r, "unbiased");
  double corr = ub ? (double)ub->i : cl->kind == COIL_LIT_NONE ? 1.0 : scalar_of(cl); /* var.dim: unbiased */
  double *mean = calloc((size_t)rd.nout + 1, sizeof(double));
  double *m2 = calloc((size_t)rd.nout + 1, sizeof(double));
  if (!mean || !m2) {
    free(mean), free(m2);
    return coil_ref_err(r, "out of memory");
  }
  int64_t n = coil_tensor_numel(in);
  for (int64_t i = 0; i < n; i++)
    mean[reduction_out(&rd, i)] += coil_tensor_get_f64(in, i);
  for (int64_t o = 0; o < rd.nout; o++)
    mean[o] /= (double)rd.count;
  for (int64_t i = 0; i < n; i++) {
    int64_t o = reduction_out(&rd, i);
    double dv = coil_tensor_get_f64(in, i) - mean[o];
    m2[o] += dv * dv;
  }
  double denom = (double)rd.count - corr;
  for (int64_t o = 0; o < rd.nout; o++) {
    coil_tensor_set_f64(&outs[0], o, m2[o] / (denom > 0 ? denom : 0.0));
    if (r->n->op->sub == 1)
      coil_tensor_set_f64(&outs[1], o, mean[o]);
  }
  free(mean), free(m2);
  return 0;
}

/* argmax/argmin (first occurrence; NaN counts as the extreme) and max.dim/min.dim. */
static int
run_arg(rctx *r, coil_tensor *outs)
{
  const coil_tensor *in = coil_ref_arg(r, 0);
  reduction rd;
  reduction_init(r, &rd, in, coil_ref_lit(r, "dim"));
  if (rd.count == 0)
    return coil_ref_err(r, "cannot take the arg-extreme of an empty dimension");
  bool is_max = r->n->op->sub == RED_MAX, tuple = r->n->op->rule == COIL_RULE_MINMAX_DIM;
  double *best = calloc((size_t)rd.nout + 1, sizeof(double));
  int64_t *pos = calloc((size_t)rd.nout + 1, sizeof(int64_t)), *cnt = calloc((size_t)rd.nout + 1, sizeof(int64_t));
  if (!best || !pos || !cnt) {
    free(best), free(pos), free(cnt);
    return coil_ref_err(r, "out of memory");
  }
  int64_t n = coil_tensor_numel(in);
  for (int64_t i = 0; i < n; i++) {
    int64_t o = reduction_out(&rd, i);
    double v = coil_tensor_get_f64(in, i);
    bool better = cnt[o] == 0 ||
                  (!isnan(best[o]) && (isnan(v) || (is_max ? v > best[o] : v < best[o])));
    if (better) {
      best[o] = v;
      pos[o] = cnt[o];
    }
    cnt[o]++;
  }
  for (int64_t o = 0; o < rd.nout; o++) {
    if (tuple) {
      coil_tensor_set_f64(&outs[0], o, best[o]);
      coil_tensor_set_i64(&outs[1], o, pos[o]);
    } else {
      coil_tensor_set_i64(&outs[0], o, pos[o]);
    }
  }
  free(best), free(pos), free(cnt);
  return 0;
}

/* ---- normalisations ---- */

static int
run_softmax(rctx *r, coil_tensor *out)
{
  const coil_tensor *in = coil_ref_arg(r, 0);
  int64_t d = coil_ref_lit(r, "dim")->i;
  int dim = in->rank == 0 ? 0 : (int)(d < 0 ? d + in->rank : d);
  int64_t size = in->rank ? in->shape[dim] : 1, inner = in->rank ? coil_ref_stride(in, dim) : 1;
  int64_t outer = size && inner ? coil_tensor_numel(in) / (size * inner) : 0;
  bool log_form = r->n->op->sub == 1;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t k = 0; k < inner; k++) {
      int64_t base = o * size * inner + k;
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < size; j++) {
        double v = coil_tensor_get_f64(in, base + j * inner);
        if (v > mx || isnan(v))
          mx = isnan(mx) ? mx : v;
      }
      if (isinf(mx) && mx < 0)
        mx = 0; /* an all -inf row: exp(-inf - 0) = 0, so softmax gives nan like torch */
      for (int64_t j = 0; j < size; j++)
        sum += exp(coil_tensor_get_f64(in, base + j * inner) - mx);
      for (int64_t j = 0; j < size; j++) {
        double x = coil_tensor_get_f64(in, base + j * inner) - mx;
        coil_tensor_set_f64(out, base + j * inner, log_form ? x - log(sum) : exp(x) / sum);
      }
    }
  return 0;
}

static double
opt_elem(const coil_tensor *t, int64_t i, double dflt)
{
  return t ? coil_tensor_get_f64(t, i) : dflt;
}

static int
run_layer_norm(rctx *r, coil_tensor *outs)
{
  const coil_tensor *in = coil_ref_param(r, "input");
  const coil_tensor *w = coil_ref_param(r, "weight"), *b = coil_ref_param(r, "bias");
  double eps = coil_ref_lit(r, "eps")->f;
  int nn = coil_ref_lit(r, "normalized_shape")->n;
  int64_t inner = 1;
  for (int i = in->rank - nn; i < in->rank; i++)
    inner *= in->shape[i];
  int64_t outer = inner ? coil_tensor_numel(in) / inner : 0;
  for (int64_t o = 0; o < outer; o++) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < inner; j++)
      mean += coil_tensor_get_f64(in, o * inner + j);
    mean /= (double)inner;
    for (int64_t j = 0; j < inner; j++) {
      double dv = coil_tensor_get_f64(in, o * inner + j) - mean;
      var += dv * dv;
    }
    var /= (double)inner;
    double rstd = 1.0 / sqrt(var + eps);
    for (int64_t j = 0; j < inner; j++) {
      double x = (coil_tensor_get_f64(in, o * inner + j) - mean) * rstd;
      coil_tensor_set_f64(&outs[0], o * inner + j, x * opt_elem(w, j, 1.0) + opt_elem(b, j, 0.0));
    }
    coil_tensor_set_f64(&outs[1], o, mean);
    coil_tensor_set_f64(&outs[2], o, rstd);
  }
  return 0;
}

static int
run_batch_norm(rctx *r, coil_tensor *outs)
{
  const coil_tensor *in = coil_ref_param(r, "input");
  const coil_tensor *w = coil_ref_param(r, "weight"), *b = coil_ref_param(r, "bias");
  const coil_tensor *rm = coil_ref_param(r, "running_mean"), *rv = coil_ref_param(r, "running_var");
  double eps = coil_ref_lit(r, "eps")->f;
  int64_t c = in->shape[1], inner = coil_ref_stride(in, 1), n = coil_tensor_numel(in);
  for (int64_t i = 0; i < n; i++) {
    int64_t ch = inner ? (i / inner) % c : 0;
    double x = (coil_tensor_get_f64(in, i) - coil_tensor_get_f64(rm, ch)) /
               sqrt(coil_tensor_get_f64(rv, ch) + eps);
    coil_tensor_set_f64(&outs[0], i, x * opt_elem(w, ch, 1.0) + opt_elem(b, ch, 0.0));
  }
  return 0;
}

/* ---- the driver ---- */

static int
run_node(rctx *r, coil_tensor *outs)
{
  switch (r->n->op->rule) {
  case COIL_RULE_UNARY_SAME: case COIL_RULE_UNARY_FLOAT: case COIL_RULE_UNARY_BOOL:
    return run_unary(r, outs);
  case COIL_RULE_BINARY: case COIL_RULE_BINARY_FLOAT: case COIL_RULE_COMPARE:
    return run_binary(r, outs);
  case COIL_RULE_WHERE: return run_where(r, outs);
  case COIL_RULE_CLAMP: return run_clamp(r, outs);
  case COIL_RULE_TO_COPY: return run_to_copy(r, outs);
  case COIL_RULE_FULL: case COIL_RULE_FULL_LIKE: case COIL_RULE_ARANGE:
    return run_creation(r, outs);
  case COIL_RULE_REDUCE: return run_reduce(r, outs);
  case COIL_RULE_VAR: return run_var(r, outs);
  case COIL_RULE_ARG: case COIL_RULE_MINMAX_DIM: return run_arg(r, outs);
  case COIL_RULE_SOFTMAX: return run_softmax(r, outs);
  case COIL_RULE_LAYER_NORM: return run_layer_norm(r, outs);
  case COIL_RULE_BATCH_NORM: return run_batch_norm(r, outs);
  case COIL_RULE_FLIP: case COIL_RULE_REPEAT: case COIL_RULE_INDEX_SELECT: case COIL_RULE_DIAGONAL:
  case COIL_RULE_AS_STRIDED: case COIL_RULE_EMPTY: case COIL_RULE_MODE_PAD: case COIL_RULE_UPSAMPLE:
  case COIL_RULE_GROUP_NORM: case COIL_RULE_BATCH_NORM_STATS: case COIL_RULE_DROPOUT:
  case COIL_RULE_ADAPTIVE_POOL: case COIL_RULE_SYM_SIZE:
    return coil_ref_run_shapes(r, outs);
  case COIL_RULE_POOL:
    if (r->n->op->sub >= 2) /* the 3-D forms */
      return coil_ref_run_shapes(r, outs);
    return coil_ref_run_extern(r, outs);
  case COIL_RULE_MATMUL: case COIL_RULE_CONV: case COIL_RULE_TOPK:
  case COIL_RULE_INDEX: case COIL_RULE_GATHER: case COIL_RULE_EMBEDDING: case COIL_RULE_CUMSUM:
    return coil_ref_run_extern(r, outs);
  case COIL_RULE_POOL_BWD: case COIL_RULE_NORM_BWD: case COIL_RULE_SORT: case COIL_RULE_CDIST:
  case COIL_RULE_CONV_BWD: case COIL_RULE_COL2IM: case COIL_RULE_GRID_SAMPLE:
  case COIL_RULE_EMBEDDING_BAG:
    return coil_ref_run_backward(r, outs);
  case COIL_RULE_SCATTER: case COIL_RULE_INDEX_PUT: case COIL_RULE_EMBEDDING_BWD:
  case COIL_RULE_SELECT_SCATTER: case COIL_RULE_SLICE_SCATTER: case COIL_RULE_MASKED_SCATTER:
    return coil_ref_run_scatter(r, outs);
  default:
    return coil_ref_run_move(r, outs);
  }
}

/* Bind the graph's size symbols from the actual inputs and check every input's dtype and size. */
static int
bind_inputs(rctx *r, const coil_tensor_list *inputs)
{
  const coil_graph *g = r->g;
  int nsym = coil_sym_nvars(g->sym);
  bool *bound = calloc((size_t)nsym + 1, sizeof(bool));
  if (!bound)
    return coil_ref_err(r, "out of memory");
  int rc = 0;
  for (int pass = 0; pass < 2 && !rc; pass++)
    for (int i = 0; i < g->ninputs && !rc; i++) {
      const coil_value *v = g->inputs[i];
      const coil_tensor *t = coil_tensor_list_find(inputs, v->name);
      if (!t) {
        rc = coil_ref_err(r, "no tensor given for %s %%%s",
                          v->kind == COIL_VAL_INPUT ? "input" : "parameter", v->name);
        break;
      }
      if (t->dtype != v->type.dtype || t->rank != v->type.rank) {
        rc = coil_ref_err(r, "%%%s: expected %s of rank %d, got %s of rank %d", v->name,
                          coil_dtype_name(v->type.dtype), v->type.rank, coil_dtype_name(t->dtype),
                          t->rank);
        break;
      }
      r->vals[i] = t;
      r->nvals[i] = 1;
      for (int k = 0; k < t->rank && !rc; k++) {
        const coil_sym *s = v->type.dims[k];
        if (pass == 0 && s->kind == COIL_SYM_VAR && !bound[s->var]) {
          bound[s->var] = true;
          r->bind[s->var] = t->shape[k];
          continue;
        }
        int64_t want;
        if (pass == 1 && (coil_sym_eval(g->sym, s, r->bind, nsym, &want, NULL) || want != t->shape[k]))
          rc = coil_ref_err(r, "%%%s: size %lld in dimension %d does not match %s", v->name,
                            (long long)t->shape[k], k, coil_sym_str(g->sym, s, COIL_SYM_PY_SYNTAX));
      }
    }
  free(bound);
  return rc;
}

static int
alloc_outputs(rctx *r, const coil_type *t, coil_tensor *outs, int *nouts)
{
  int n = t->kind == COIL_TYPE_TUPLE ? t->nelems : t->kind == COIL_TYPE_TENSOR ? 1 : 0;
  *nouts = n;
  for (int k = 0; k < n; k++) {
    const coil_type *e = t->kind == COIL_TYPE_TUPLE ? &t->elems[k] : t;
    int64_t shape[COIL_MAX_RANK];
    for (int i = 0; i < e->rank; i++) {
      if (coil_sym_eval(r->g->sym, e->dims[i], r->bind, coil_sym_nvars(r->g->sym), &shape[i], r->d))
        return coil_ref_err(r, "cannot evaluate the output size");
      if (shape[i] < 0)
        return coil_ref_err(r, "output size %lld is negative", (long long)shape[i]);
    }
    if (coil_tensor_init(&outs[k], e->dtype, e->rank, shape, r->d))
      return -1;
  }
  return 0;
}

int
coil_ref_run(const coil_graph *g, const coil_tensor_list *inputs, coil_tensor_list *outputs,
             coil_diag *d)
{
  int nv = g->ninputs + g->nnodes;
  rctx r = {.g = g, .d = d};
  r.vals = calloc((size_t)nv + 1, sizeof *r.vals);
  r.nvals = calloc((size_t)nv + 1, sizeof *r.nvals);
  r.bind = calloc((size_t)coil_sym_nvars(g->sym) + 1, sizeof *r.bind);
  coil_tensor **owned = calloc((size_t)g->nnodes + 1, sizeof *owned);
  coil_tensor_list *based = calloc((size_t)g->nnodes + 1, sizeof *based); /* bases written through views */
  int rc = -1;
  if (!r.vals || !r.nvals || !r.bind || !owned || !based) {
    coil_diag_set(d, "out of memory");
    goto done;
  }
  if (bind_inputs(&r, inputs))
    goto done;
  for (int i = 0; i < g->nnodes; i++) {
    const coil_node *n = &g->nodes[i];
    r.n = n;
    int slot = g->ninputs + i, nouts = 0;
    if (n->op->rule == COIL_RULE_GETITEM) {
      const coil_value *tup = n->bound[0].v;
      int from = tup->kind == COIL_VAL_NODE ? g->ninputs + tup->index : tup->index;
      r.vals[slot] = r.vals[from] + n->bound[1].i; /* shares the tuple's element */
      r.nvals[slot] = 1;
      continue;
    }
    if (n->op->rule == COIL_RULE_ASSERT_META)
      continue;
    int cap = n->out->type.kind == COIL_TYPE_TUPLE ? n->out->type.nelems : 1;
    owned[i] = calloc((size_t)cap, sizeof(coil_tensor));
    if (!owned[i]) {
      coil_diag_set(d, "out of memory");
      goto done;
    }
    if (alloc_outputs(&r, &n->out->type, owned[i], &nouts) || run_node(&r, owned[i]))
      goto done;
    r.vals[slot] = owned[i];
    r.nvals[slot] = nouts;
    if (coil_op_is_inplace(n->op) && coil_ref_mutate(&r, n, owned[i], &based[i]))
      goto done;
  }
  r.n = NULL;
  memset(outputs, 0, sizeof *outputs);
  for (int i = 0; i < g->noutputs; i++) {
    const coil_value *v = g->outputs[i];
    const coil_tensor *src = r.vals[v->kind == COIL_VAL_NODE ? g->ninputs + v->index : v->index];
    coil_tensor t;
    if (coil_tensor_init(&t, src->dtype, src->rank, src->shape, d)) {
      coil_tensor_list_free(outputs);
      goto done;
    }
    memcpy(t.data, src->data, coil_tensor_nbytes(src));
    char name[32];
    snprintf(name, sizeof name, "out%d", i);
    coil_tensor_list_add(outputs, name, &t);
  }
  rc = 0;
done:
  for (int i = 0; i < g->nnodes && owned; i++) {
    if (!owned[i])
      continue;
    int cap = g->nodes[i].out->type.kind == COIL_TYPE_TUPLE ? g->nodes[i].out->type.nelems : 1;
    for (int k = 0; k < cap; k++)
      coil_tensor_free(&owned[i][k]);
    free(owned[i]);
  }
  free(owned);
  for (int i = 0; i < g->nnodes && based; i++)
    coil_tensor_list_free(&based[i]);
  free(based);
  free(r.vals);
  free(r.nvals);
  free(r.bind);
  return rc;
}
