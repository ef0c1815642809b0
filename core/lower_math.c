/* lower_math.c — the lowering of ops.def's pointwise math section, for lower_ops.c's unary and
 * binary drivers (which cast the operands to the computation dtype and the result to the
 * output's). The libm functions are one kernel op each (Wrapper IR 1.3): written through exp or
 * log they would lose accuracy where PyTorch keeps it (sinh and expm1 near 0, tan near its
 * poles, asin near ±1). Everything else is an exact composition of existing ops. */
#include <math.h>

#include "lower.h"

static const lexpr *
konst(lowering *L, coil_dtype dt, double v)
{
  return lx_const(L, dt, v, coil_f64_to_i64(v));
}

static const lexpr *
op2(lowering *L, coil_kop op, coil_dtype dt, const lexpr *a, const lexpr *b)
{
  return lx_op(L, op, dt, a, b, NULL);
}

static double
num(const coil_lit *l)
{
  return l->kind == COIL_LIT_FLOAT ? l->f : (double)l->i;
}

/* x * k, leaving out a multiplication by 1 (exact either way). */
static const lexpr *
scaled(lowering *L, const lexpr *x, double k, coil_dtype dt)
{
  return k == 1.0 ? x : op2(L, COIL_KOP_MUL, dt, x, konst(L, dt, k));
}

/* sign: (0 < x) - (x < 0), as torch.sign: 0 for NaN; a bool is itself. */
static const lexpr *
sign(lowering *L, const lexpr *x, coil_dtype dt)
{
  if (dt == COIL_BOOL)
    return x;
  const lexpr *zero = konst(L, dt, 0);
  const lexpr *neg = lx_op(L, COIL_KOP_WHERE, dt, op2(L, COIL_KOP_LT, COIL_BOOL, x, zero), konst(L, dt, -1), zero);
  return lx_op(L, COIL_KOP_WHERE, dt, op2(L, COIL_KOP_GT, COIL_BOOL, x, zero), konst(L, dt, 1), neg);
}

/* elu: x > 0 ? scale * x : scale * alpha * expm1(input_scale * x), as PyTorch's kernel (NaN
 * takes the second branch and stays NaN). */
static const lexpr *
elu(lowering *L, const lexpr *x, coil_dtype dt, const coil_node *n)
{
  double alpha = num(op_lit(n, "alpha")), scale = num(op_lit(n, "scale"));
  double input_scale = num(op_lit(n, "input_scale"));
  const lexpr *pos = scaled(L, x, scale, dt);
  const lexpr *neg = scaled(L, lx_op(L, COIL_KOP_EXPM1, dt, scaled(L, x, input_scale, dt), NULL, NULL),
                            alpha * scale, dt);
  return lx_op(L, COIL_KOP_WHERE, dt, op2(L, COIL_KOP_GT, COIL_BOOL, x, konst(L, dt, 0)), pos, neg);
}

/* hardtanh: clamp(x, min_val, max_val), NaN-propagating; an integer tensor takes the bounds
 * truncated to integers and keeps its dtype (torch's hardtanh does not promote). */
static const lexpr *
hardtanh(lowering *L, const lexpr *x, coil_dtype dt, const coil_node *n)
{
  const coil_lit *lo = op_lit(n, "min_val"), *hi = op_lit(n, "max_val");
  const lexpr *l, *h;
  if (coil_dtype_is_float(dt)) {
    l = konst(L, dt, num(lo));
    h = konst(L, dt, num(hi));
  } else {
    l = lx_cast(L, lx_const(L, COIL_I64, 0, lo->kind == COIL_LIT_FLOAT ? coil_f64_to_i64(lo->f) : lo->i), dt);
    h = lx_cast(L, lx_const(L, COIL_I64, 0, hi->kind == COIL_LIT_FLOAT ? coil_f64_to_i64(hi->f) : hi->i), dt);
  }
  return op2(L, COIL_KOP_MIN, dt, op2(L, COIL_KOP_MAX, dt, x, l), h);
}

const lexpr *
coil_lower_math_unary(lowering *L, int ew, const lexpr *x, coil_dtype dt, const coil_node *n)
{
  static const coil_kop libm[] = {
      [EW_TAN] = COIL_KOP_TAN,     [EW_SINH] = COIL_KOP_SINH,   [EW_COSH] = COIL_KOP_COSH,
      [EW_ASIN] = COIL_KOP_ASIN,   [EW_ACOS] = COIL_KOP_ACOS,   [EW_ATAN] = COIL_KOP_ATAN,
      [EW_ASINH] = COIL_KOP_ASINH, [EW_ACOSH] = COIL_KOP_ACOSH, [EW_ATANH] = COIL_KOP_ATANH,
      [EW_EXPM1] = COIL_KOP_EXPM1, [EW_LOG2] = COIL_KOP_LOG2,   [EW_LOG10] = COIL_KOP_LOG10,
  };
  switch (ew) {
  case EW_TAN: case EW_SINH: case EW_COSH: case EW_ASIN: case EW_ACOS: case EW_ATAN:
  case EW_ASINH: case EW_ACOSH: case EW_ATANH: case EW_EXPM1: case EW_LOG2: case EW_LOG10:
    return lx_op(L, libm[ew], dt, x, NULL, NULL);
  case EW_SIGN: return sign(L, x, dt);
  case EW_ISNAN: /* x != x; integers never are */
    if (!coil_dtype_is_float(dt))
      return lx_const(L, COIL_BOOL, 0, 0);
    return op2(L, COIL_KOP_NE, COIL_BOOL, x, x);
  case EW_ISINF: /* |x| == inf */
    if (!coil_dtype_is_float(dt))
      return lx_const(L, COIL_BOOL, 0, 0);
    return op2(L, COIL_KOP_EQ, COIL_BOOL, lx_op(L, COIL_KOP_ABS, dt, x, NULL, NULL), konst(L, dt, INFINITY));
  case EW_ELU: return elu(L, x, dt, n);
  case EW_HARDTANH: return hardtanh(L, x, dt, n);
  }
  return NULL;
}

/* remainder (Python's %, the sign of b) from fmod (the sign of a), as PyTorch computes it:
 * m = fmod(a, b); m != 0 and its sign differs from b's ? m + b : m. */
const lexpr *
coil_lower_remainder(lowering *L, const lexpr *a, const lexpr *b, coil_dtype dt)
{
  const lexpr *m = op2(L, COIL_KOP_FMOD, dt, a, b), *zero = konst(L, dt, 0);
  const lexpr *differ = op2(L, COIL_KOP_NE, COIL_BOOL, op2(L, COIL_KOP_LT, COIL_BOOL, m, zero),
                            op2(L, COIL_KOP_LT, COIL_BOOL, b, zero));
  const lexpr *adjust = op2(L, COIL_KOP_AND, COIL_BOOL, op2(L, COIL_KOP_NE, COIL_BOOL, m, zero), differ);
  return lx_op(L, COIL_KOP_WHERE, dt, adjust, op2(L, COIL_KOP_ADD, dt, m, b), m);
}
