/* lower_ops.c — one lowering per rule family of ops.def: pointwise ops and views build lazy
 * expressions, reductions make reduction nodes, composites decompose into both (softmax is a
 * max reduction, a sum reduction over exp(x - max), and a division), library ops become
 * extern nodes over realized buffers or strided views. Numerics follow PyTorch: operands are
 * cast to the computation dtype (f16 and bf16 compute in f32) and results to the output dtype. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lower.h"
#include "attention.h"


static const coil_sym *
K(lowering *L, int64_t v)
{
  return coil_sym_const(L->sym, v);
}

static int
slot_of(const lowering *L, const coil_value *v)
{
  return v->kind == COIL_VAL_NODE ? L->g->ninputs + v->index : v->index;
}

/* The lazy tensor of a bound argument (NULL for None or a number). */
lazy *
op_arg(lowering *L, const coil_node *n, int i)
{
  const coil_lit *l = &n->bound[i];
  return l->kind == COIL_LIT_VALUE ? L->values[slot_of(L, l->v)] : NULL;
}

const coil_lit *
op_lit(const coil_node *n, const char *name)
{
  coil_schema s;
  if (coil_schema_parse(n->op, &s, NULL))
    return NULL;
  int i = coil_schema_find(&s, name);
  return i >= 0 ? &n->bound[i] : NULL;
}

static int
param_index(const coil_node *n, const char *name)
{
  coil_schema s;
  coil_schema_parse(n->op, &s, NULL);
  return coil_schema_find(&s, name);
}

/* The result lazy of n, shaped as its inferred type (or element k of a tuple type). */
lazy *
op_result(lowering *L, const coil_node *n, int k)
{
  const coil_type *t = &n->out->type;
  if (t->kind == COIL_TYPE_TUPLE)
    t = &t->elems[k];
  const coil_sym *sizes[COIL_MAX_RANK];
  coil_lower_sizes(L, t, sizes);
  return lz_new(L, t->dtype, t->rank, sizes);
}

/* The result of a pointwise op: op_result, taking the dimension variables of its first tensor
 * operand when that operand has the same sizes. Reading the operand at the result's index is then
 * the operand's own expression (lz_at's identity case), so a chain of N pointwise statements
 * builds each expression from the last in constant time instead of copying it: compile time and
 * memory stay linear in N. */
static lazy *
pointwise_result(lowering *L, const coil_node *n)
{
  lazy *out = op_result(L, n, 0);
  for (int k = 0; k < n->nargs && k < 3; k++) {
    const lazy *x = op_arg(L, n, k);
    if (!x)
      continue;
    if (x->rank == out->rank) {
      bool same = true;
      for (int i = 0; i < x->rank && same; i++)
        same = coil_sym_cmp(x->sizes[i], out->sizes[i]) == 0;
      if (same)
        memcpy(out->dvars, x->dvars, sizeof out->dvars);
    }
    break;
  }
  return out;
}

void
op_set_value(lowering *L, const coil_node *n, lazy *z)
{
  L->values[slot_of(L, n->out)] = z;
}

void
op_set_tuple(lowering *L, const coil_node *n, lazy **elems)
{
  int k = n->out->type.nelems;
  lazy **t = COIL_ARENA_ARRAY(L->arena, lazy *, k);
  memcpy(t, elems, sizeof(lazy *) * (size_t)k);
  L->tuples[slot_of(L, n->out)] = t;
}

static int
wrap_dim(int64_t d, int rank)
{
  int r = rank > 0 ? rank : 1;
  return (int)(d < 0 ? d + r : d);
}

coil_dtype
opmath_dtype(coil_dtype t)
{
  return t == COIL_F16 || t == COIL_BF16 ? COIL_F32 : t;
}

static double
num(const coil_lit *l)
{
  return l->kind == COIL_LIT_FLOAT ? l->f : (double)l->i;
}

/* The element of operand lit/z broadcast into `out`, cast to dtype dt. */
static const lexpr *
operand(lowering *L, const coil_lit *l, const lazy *z, const lazy *out, coil_dtype dt)
{
  if (!z) {
    if (l->kind == COIL_LIT_FLOAT)
      return lx_const(L, dt, l->f, coil_f64_to_i64(l->f));
    return lx_cast(L, lx_const(L, l->kind == COIL_LIT_BOOL ? COIL_BOOL : COIL_I64, (double)l->i, l->i), dt);
  }
  const coil_sym *idx[COIL_MAX_RANK];
  for (int j = 0; j < z->rank; j++) {
    int k = j + out->rank - z->rank;
    int64_t zs, os;
    bool bcast = coil_sym_is_const(z->sizes[j], &zs) && zs == 1 &&
                 !(coil_sym_is_const(out->sizes[k], &os) && os == 1);
    idx[j] = bcast ? K(L, 0) : out->dvars[k];
  }
  return lx_cast(L, lz_at(L, z, idx), dt);
}

/* ---- pointwise ---- */

static const lexpr *
unary(lowering *L, int ew, const lexpr *x, coil_dtype dt, const coil_node *n)
{
  switch (ew) {
  case EW_ABS: return lx_op(L, COIL_KOP_ABS, dt, x, NULL, NULL);
  case EW_NEG: return lx_op(L, COIL_KOP_NEG, dt, x, NULL, NULL);
  case EW_RELU: return lx_op(L, COIL_KOP_RELU, dt, x, NULL, NULL);
  case EW_FLOOR: return lx_op(L, COIL_KOP_FLOOR, dt, x, NULL, NULL);
  case EW_CEIL: return lx_op(L, COIL_KOP_CEIL, dt, x, NULL, NULL);
  case EW_ROUND: return lx_op(L, COIL_KOP_ROUND, dt, x, NULL, NULL);
  case EW_TRUNC: return lx_op(L, COIL_KOP_TRUNC, dt, x, NULL, NULL);
  case EW_BITNOT:
    return lx_op(L, dt == COIL_BOOL ? COIL_KOP_NOT : COIL_KOP_BITNOT, dt, x, NULL, NULL);
  case EW_LEAKY_RELU: {
    const lexpr *slope = lx_const(L, dt, num(op_lit(n, "negative_slope")), 0);
    const lexpr *pos = lx_op(L, COIL_KOP_GT, COIL_BOOL, x, lx_const(L, dt, 0, 0), NULL);
    return lx_op(L, COIL_KOP_WHERE, dt, pos, x, lx_op(L, COIL_KOP_MUL, dt, x, slope, NULL));
  }
  case EW_EXP: return lx_op(L, COIL_KOP_EXP, dt, x, NULL, NULL);
  case EW_LOG: return lx_op(L, COIL_KOP_LOG, dt, x, NULL, NULL);
  case EW_LOG1P: return lx_op(L, COIL_KOP_LOG1P, dt, x, NULL, NULL);
  case EW_SQRT: return lx_op(L, COIL_KOP_SQRT, dt, x, NULL, NULL);
  case EW_RSQRT: return lx_op(L, COIL_KOP_RSQRT, dt, x, NULL, NULL);
  case EW_RECIPROCAL: return lx_op(L, COIL_KOP_RECIP, dt, x, NULL, NULL);
  case EW_SIN: return lx_op(L, COIL_KOP_SIN, dt, x, NULL, NULL);
  case EW_COS: return lx_op(L, COIL_KOP_COS, dt, x, NULL, NULL);
  case EW_TANH: return lx_op(L, COIL_KOP_TANH, dt, x, NULL, NULL);
  case EW_SIGMOID: return lx_op(L, COIL_KOP_SIGMOID, dt, x, NULL, NULL);
  case EW_ERF: return lx_op(L, COIL_KOP_ERF, dt, x, NULL, NULL);
  case EW_SILU: /* x * sigmoid(x) */
    return lx_op(L, COIL_KOP_MUL, dt, x, lx_op(L, COIL_KOP_SIGMOID, dt, x, NULL, NULL), NULL);
  case EW_GELU: {
    const lexpr *half = lx_const(L, dt, 0.5, 0), *one = lx_const(L, dt, 1.0, 0), *inner;
    if (strcmp(op_lit(n, "approximate")->s, "tanh") == 0) { /* tanh(sqrt(2/pi)*(x + 0.044715 x^3)) */
      const lexpr *x3 = lx_op(L, COIL_KOP_MUL, dt, x, lx_op(L, COIL_KOP_MUL, dt, x, x, NULL), NULL);
      const lexpr *t = lx_op(L, COIL_KOP_ADD, dt, x,
                             lx_op(L, COIL_KOP_MUL, dt, lx_const(L, dt, 0.044715, 0), x3, NULL), NULL);
      t = lx_op(L, COIL_KOP_MUL, dt, lx_const(L, dt, 0.7978845608028654, 0), t, NULL);
      inner = lx_op(L, COIL_KOP_TANH, dt, t, NULL, NULL);
    } else { /* erf(x / sqrt(2)) */
      inner = lx_op(L, COIL_KOP_ERF, dt,
                    lx_op(L, COIL_KOP_MUL, dt, x, lx_const(L, dt, 0.7071067811865476, 0), NULL),
                    NULL, NULL);
    }
    return lx_op(L, COIL_KOP_MUL, dt, lx_op(L, COIL_KOP_MUL, dt, half, x, NULL),
                 lx_op(L, COIL_KOP_ADD, dt, one, inner, NULL), NULL);
  }
  case EW_LOGICAL_NOT:
    if (x->dtype == COIL_BOOL)
      return lx_op(L, COIL_KOP_NOT, COIL_BOOL, x, NULL, NULL);
    return lx_op(L, COIL_KOP_EQ, COIL_BOOL, x, lx_const(L, x->dtype, 0, 0), NULL);
  }
  return coil_lower_math_unary(L, ew, x, dt, n);
}

static int
lower_unary(lowering *L, const coil_node *n)
{
  lazy *out = pointwise_result(L, n), *x = op_arg(L, n, 0);
  int ew = n->op->sub;
  bool of_input = ew == EW_LOGICAL_NOT || ew == EW_ISNAN || ew == EW_ISINF; /* bool results */
  coil_dtype dt = of_input ? opmath_dtype(x->dtype) : opmath_dtype(out->dtype);
  if (ew == EW_BITNOT)
    dt = out->dtype;
  const lexpr *v = unary(L, ew, operand(L, &n->bound[0], x, out, dt), dt, n);
  out->expr = lx_cast(L, v, out->dtype);
  op_set_value(L, n, out);
  return 0;
}

static const coil_kop binary_kops[] = {
    [EW_ADD] = COIL_KOP_ADD, [EW_SUB] = COIL_KOP_SUB, [EW_MUL] = COIL_KOP_MUL,
    [EW_DIV] = COIL_KOP_DIV, [EW_POW] = COIL_KOP_POW, [EW_MAXIMUM] = COIL_KOP_MAX,
    [EW_MINIMUM] = COIL_KOP_MIN, [EW_BITAND] = COIL_KOP_BITAND, [EW_BITOR] = COIL_KOP_BITOR,
    [EW_LOGICAL_AND] = COIL_KOP_AND, [EW_LOGICAL_OR] = COIL_KOP_OR, [EW_EQ] = COIL_KOP_EQ,
    [EW_NE] = COIL_KOP_NE, [EW_LT] = COIL_KOP_LT, [EW_LE] = COIL_KOP_LE, [EW_GT] = COIL_KOP_GT,
    [EW_GE] = COIL_KOP_GE, [EW_ATAN2] = COIL_KOP_ATAN2, [EW_FMOD] = COIL_KOP_FMOD,
    [EW_BITXOR] = COIL_KOP_BITXOR, [EW_LOGICAL_XOR] = COIL_KOP_NE, /* of the operands as bools */
};

static int
lower_binary(lowering *L, const coil_node *n)
{
  lazy *out = pointwise_result(L, n);
  const coil_lit *la = &n->bound[0], *lb = &n->bound[1];
  int ew = n->op->sub;
  const coil_lit *lits[2] = {la, lb};
  coil_dtype common = coil_infer_common_dtype(lits, 2);
  const coil_lit *mode = op_lit(n, "rounding_mode");
  bool true_div = ew == EW_DIV || (ew == EW_DIV_MODE && mode->kind == COIL_LIT_NONE);
  bool to_float = true_div || n->op->rule == COIL_RULE_BINARY_FLOAT; /* div, atan2 */
  coil_dtype dt = opmath_dtype(to_float && !coil_dtype_is_float(common) ? COIL_F32 : common);
  bool logical = ew == EW_LOGICAL_AND || ew == EW_LOGICAL_OR || ew == EW_LOGICAL_XOR;
  if (logical)
    dt = COIL_BOOL;
  const lexpr *a = operand(L, la, op_arg(L, n, 0), out, dt);
  const lexpr *b = operand(L, lb, op_arg(L, n, 1), out, dt);
  if (logical) { /* operands: nonzero */
    a = operand(L, la, op_arg(L, n, 0), out, opmath_dtype(common));
    b = operand(L, lb, op_arg(L, n, 1), out, opmath_dtype(common));
    a = lx_op(L, COIL_KOP_NE, COIL_BOOL, a, lx_const(L, a->dtype, 0, 0), NULL);
    b = lx_op(L, COIL_KOP_NE, COIL_BOOL, b, lx_const(L, b->dtype, 0, 0), NULL);
  }
  const coil_lit *al = op_lit(n, "alpha");
  if (al && !(al->kind == COIL_LIT_INT && al->i == 1)) {
    const lexpr *alpha = al->kind == COIL_LIT_FLOAT ? lx_const(L, dt, al->f, 0)
                                                    : lx_cast(L, lx_const(L, COIL_I64, 0, al->i), dt);
    if (ew == EW_RSUB)
      a = lx_op(L, COIL_KOP_MUL, dt, a, alpha, NULL);
    else
      b = lx_op(L, COIL_KOP_MUL, dt, b, alpha, NULL);
  }
  const lexpr *v;
  if (ew == EW_RSUB)
    v = lx_op(L, COIL_KOP_SUB, dt, b, a, NULL);
  else if (ew == EW_DIV_MODE)
    v = lx_op(L, true_div ? COIL_KOP_DIV : strcmp(mode->s, "trunc") == 0 ? COIL_KOP_TRUNCDIV : COIL_KOP_FLOORDIV,
              dt, a, b, NULL);
  else if (ew == EW_REMAINDER)
    v = coil_lower_remainder(L, a, b, dt);
  else if (n->op->rule == COIL_RULE_COMPARE)
    v = lx_op(L, binary_kops[ew], COIL_BOOL, a, b, NULL);
  else if (ew == EW_POW && coil_dtype_is_float(dt) && ((lb->kind == COIL_LIT_INT && lb->i == 2) ||
                                                       (lb->kind == COIL_LIT_FLOAT && lb->f == 2.0)))
    v = lx_op(L, COIL_KOP_MUL, dt, a, a, NULL); /* x ** 2 = x * x, exactly (one rounding either way) */
  else
    v = lx_op(L, binary_kops[ew], dt, a, b, NULL);
  out->expr = lx_cast(L, v, out->dtype);
  op_set_value(L, n, out);
  return 0;
}

static int
lower_where(lowering *L, const coil_node *n)
{
  lazy *out = pointwise_result(L, n);
  coil_dtype dt = out->dtype;
  const lexpr *c = operand(L, &n->bound[0], op_arg(L, n, 0), out, COIL_BOOL);
  const lexpr *a = operand(L, &n->bound[1], op_arg(L, n, 1), out, dt);
  const lexpr *b = operand(L, &n->bound[2], op_arg(L, n, 2), out, dt);
  out->expr = lx_op(L, COIL_KOP_WHERE, dt, c, a, b);
  op_set_value(L, n, out);
  return 0;
}

/* clamp(x, lo, hi) = min(max(x, lo), hi), NaN-propagating as torch.clamp. */
static int
lower_clamp(lowering *L, const coil_node *n)
{
  lazy *out = pointwise_result(L, n);
  coil_dtype dt = opmath_dtype(out->dtype);
  const lexpr *v = operand(L, &n->bound[0], op_arg(L, n, 0), out, dt);
  if (n->bound[1].kind != COIL_LIT_NONE)
    v = lx_op(L, COIL_KOP_MAX, dt, v, operand(L, &n->bound[1], op_arg(L, n, 1), out, dt), NULL);
  if (n->bound[2].kind != COIL_LIT_NONE)
    v = lx_op(L, COIL_KOP_MIN, dt, v, operand(L, &n->bound[2], op_arg(L, n, 2), out, dt), NULL);
  out->expr = lx_cast(L, v, out->dtype);
  op_set_value(L, n, out);
  return 0;
}

static int
lower_to_copy(lowering *L, const coil_node *n)
{
  lazy *out = pointwise_result(L, n);
  out->expr = operand(L, &n->bound[0], op_arg(L, n, 0), out, out->dtype);
  op_set_value(L, n, out);
  return 0;
}

static int
lower_creation(lowering *L, const coil_node *n)
{
  lazy *out = op_result(L, n, 0);
  const coil_op *op = n->op;
  if (op->rule == COIL_RULE_ARANGE) { /* start + d0 * step */
    const coil_lit *s = op_lit(n, "start"), *st = op_lit(n, "step");
    double start = s ? num(s) : 0, step = st ? num(st) : 1;
    coil_dtype dt = coil_dtype_is_float(out->dtype) ? COIL_F64 : COIL_I64;
    if (dt == COIL_I64) {
      start = trunc(start);
      step = trunc(step);
    }
    const lexpr *i = lx_cast(L, lx_index(L, out->dvars[0]), dt);
    const lexpr *v = lx_op(L, COIL_KOP_ADD, dt, lx_const(L, dt, start, coil_f64_to_i64(start)),
                           lx_op(L, COIL_KOP_MUL, dt, i, lx_const(L, dt, step, coil_f64_to_i64(step)), NULL), NULL);
    out->expr = lx_cast(L, v, out->dtype);
  } else {
    const coil_lit *v = op->rule == COIL_RULE_FULL ? op_lit(n, op->sub ? "s" : "fill_value")
                        : op->sub == 0             ? op_lit(n, "fill_value")
                        : op->sub == 3             ? op_lit(n, "value") /* fill.Scalar */
                                                   : NULL;
    double f = v ? num(v) : op->sub == 2;
    int64_t i = v ? (v->kind == COIL_LIT_FLOAT ? coil_f64_to_i64(v->f) : v->i) : op->sub == 2;
    coil_dtype src = v && v->kind == COIL_LIT_FLOAT ? COIL_F64 : COIL_I64;
    out->expr = lx_cast(L, lx_const(L, src, f, i), out->dtype);
  }
  op_set_value(L, n, out);
  return 0;
}

/* ---- reductions ---- */

static void
reduce_mask(const coil_lit *dim, int rank, bool *red)
{
  memset(red, 0, sizeof(bool) * COIL_MAX_RANK);
  if (!dim || dim->kind == COIL_LIT_NONE || (dim->kind == COIL_LIT_LIST && dim->n == 0)) {
    for (int i = 0; i < rank; i++)
      red[i] = true;
    return;
  }
  int cnt = dim->kind == COIL_LIT_LIST ? dim->n : 1;
  for (int i = 0; i < cnt && rank > 0; i++)
    red[wrap_dim(dim->kind == COIL_LIT_LIST ? dim->items[i].i : dim->i, rank)] = true;
}

static const coil_sym *
reduced_count(lowering *L, const lazy *x, const bool *red)
{
  const coil_sym *c = K(L, 1);
  for (int i = 0; i < x->rank; i++)
    if (red[i])
      c = coil_sym_mul(L->sym, c, x->sizes[i]);
  return c;
}

/* x with its expression cast to dt (a new lazy over the same dims). */
static lazy *
cast_view(lowering *L, const lazy *x, coil_dtype dt)
{
  lazy *z = lz_new(L, dt, x->rank, x->sizes);
  z->expr = lx_cast(L, lz_at(L, x, z->dvars), dt);
  return z;
}

/* A lazy computed elementwise from a reduced lazy r (broadcast back over x's dims). */
static const lexpr *
broadcast_back(lowering *L, const lazy *r, const lazy *x, const bool *red, const lazy *onto)
{
  const coil_sym *idx[COIL_MAX_RANK];
  int k = 0;
  for (int i = 0; i < x->rank; i++) {
    if (!red[i])
      idx[k++] = onto->dvars[i];
    else if (r->rank == x->rank)
      idx[k++] = K(L, 0);
  }
  return lz_at(L, r, idx);
}

static int
lower_reduce(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *out = op_result(L, n, 0);
  bool red[COIL_MAX_RANK];
  reduce_mask(op_lit(n, "dim"), x->rank, red);
  const coil_lit *kd = op_lit(n, "keepdim");
  bool keep = kd && kd->i;
  int sub = n->op->sub;
  coil_dtype acc = opmath_dtype(out->dtype);
  static const coil_reduction kinds[] = {[RED_SUM] = COIL_REDUCE_SUM, [RED_MEAN] = COIL_REDUCE_SUM,
                                         [RED_PROD] = COIL_REDUCE_PROD, [RED_MAX] = COIL_REDUCE_MAX,
                                         [RED_MIN] = COIL_REDUCE_MIN, [RED_ANY] = COIL_REDUCE_ANY};
  lazy *body;
  if (sub == RED_ANY) {
    body = lz_new(L, COIL_BOOL, x->rank, x->sizes);
    const lexpr *e = lz_at(L, x, body->dvars);
    body->expr = e->dtype == COIL_BOOL ? e : lx_op(L, COIL_KOP_NE, COIL_BOOL, e, lx_const(L, e->dtype, 0, 0), NULL);
    acc = COIL_BOOL;
  } else {
    body = cast_view(L, x, acc);
  }
  lazy *r = lz_reduce(L, body, red, keep, kinds[sub], acc);
  if (sub == RED_MEAN) {
    lazy *m = lz_new(L, acc, r->rank, r->sizes);
    const lexpr *cnt = lx_cast(L, lx_index(L, reduced_count(L, x, red)), acc);
    m->expr = lx_op(L, COIL_KOP_DIV, acc, lz_at(L, r, m->dvars), cnt, NULL);
    r = m;
  }
  out->expr = lx_cast(L, lz_at(L, r, out->dvars), out->dtype);
  op_set_value(L, n, out);
  return 0;
}

/* var = m2 / (n - correction), mean and m2 from one Welford pass (two reductions of one operand,
 * fused later into one kernel; a code generator computes them together). */
static int
lower_var(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0);
  bool red[COIL_MAX_RANK];
  reduce_mask(op_lit(n, "dim"), x->rank, red);
  const coil_lit *cl = op_lit(n, "correction"), *ub = op_lit(n, "unbiased");
  double corr = ub ? (double)ub->i : cl->kind == COIL_LIT_NONE ? 1.0 : num(cl); /* var.dim: unbiased */
  coil_dtype acc = opmath_dtype(x->dtype);
  lazy *xf = cast_view(L, x, acc);
  lazy *mean = lz_reduce(L, xf, red, true, COIL_REDUCE_WELFORD_MEAN, acc);
  lazy *m2 = lz_reduce(L, xf, red, true, COIL_REDUCE_WELFORD_M2, acc);
  const lexpr *cnt = lx_cast(L, lx_index(L, reduced_count(L, x, red)), acc);
  lazy *outs[2];
  int nout = n->op->sub == 1 ? 2 : 1;
  for (int k = 0; k < nout; k++) {
    lazy *o = outs[k] = op_result(L, n, k);
    const coil_sym *idx[COIL_MAX_RANK];
    int j = 0;
    const coil_lit *kd = op_lit(n, "keepdim");
    for (int i = 0; i < x->rank; i++)
      idx[i] = red[i] ? K(L, 0) : o->dvars[kd->i ? i : j++];
    if (kd->i)
      for (int i = 0; i < x->rank; i++)
        idx[i] = red[i] ? K(L, 0) : o->dvars[i];
    const lexpr *v = lz_at(L, k == 0 ? m2 : mean, idx);
    if (k == 0) /* var = m2 / max(n - correction, 0) */
      v = lx_op(L, COIL_KOP_DIV, acc, v,
                lx_op(L, COIL_KOP_MAX, acc, lx_op(L, COIL_KOP_SUB, acc, cnt, lx_const(L, acc, corr, 0), NULL),
                      lx_const(L, acc, 0, 0), NULL), NULL);
    o->expr = lx_cast(L, v, o->dtype);
  }
  if (nout == 2)
    op_set_tuple(L, n, outs);
  else
    op_set_value(L, n, outs[0]);
  return 0;
}

static int
lower_arg(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0);
  bool red[COIL_MAX_RANK];
  reduce_mask(op_lit(n, "dim"), x->rank, red);
  bool keep = op_lit(n, "keepdim")->i;
  bool is_max = n->op->sub == RED_MAX;
  coil_dtype acc = opmath_dtype(x->dtype);
  lazy *xf = cast_view(L, x, acc);
  lazy *idx = lz_reduce(L, xf, red, keep, is_max ? COIL_REDUCE_ARGMAX : COIL_REDUCE_ARGMIN, COIL_I64);
  if (n->op->rule == COIL_RULE_ARG) {
    lazy *out = op_result(L, n, 0);
    out->expr = lz_at(L, idx, out->dvars);
    op_set_value(L, n, out);
    return 0;
  }
  lazy *val = lz_reduce(L, xf, red, keep, is_max ? COIL_REDUCE_MAX : COIL_REDUCE_MIN, acc);
  lazy *outs[2] = {op_result(L, n, 0), op_result(L, n, 1)};
  outs[0]->expr = lx_cast(L, lz_at(L, val, outs[0]->dvars), outs[0]->dtype);
  outs[1]->expr = lz_at(L, idx, outs[1]->dvars);
  op_set_tuple(L, n, outs);
  return 0;
}

/* softmax = exp(x - max) / sum(exp(x - max)); log_softmax = (x - max) - log(sum(...)). */
static int
lower_softmax(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *out = op_result(L, n, 0);
  bool red[COIL_MAX_RANK] = {0};
  if (x->rank > 0)
    red[wrap_dim(op_lit(n, "dim")->i, x->rank)] = true;
  coil_dtype acc = opmath_dtype(out->dtype);
  lazy *xf = cast_view(L, x, acc);
  lazy *mx = lz_reduce(L, xf, red, true, COIL_REDUCE_MAX, acc);
  lazy *sh = lz_new(L, acc, x->rank, x->sizes);
  sh->expr = lx_op(L, COIL_KOP_SUB, acc, lz_at(L, xf, sh->dvars), broadcast_back(L, mx, x, red, sh), NULL);
  lazy *ex = lz_new(L, acc, x->rank, x->sizes);
  ex->expr = lx_op(L, COIL_KOP_EXP, acc, lz_at(L, sh, ex->dvars), NULL, NULL);
  lazy *sum = lz_reduce(L, ex, red, true, COIL_REDUCE_SUM, acc);
  const lexpr *s = broadcast_back(L, sum, x, red, out);
  const lexpr *v = n->op->sub == 0
                       ? lx_op(L, COIL_KOP_DIV, acc, lz_at(L, ex, out->dvars), s, NULL)
                       : lx_op(L, COIL_KOP_SUB, acc, lz_at(L, sh, out->dvars),
                               lx_op(L, COIL_KOP_LOG, acc, s, NULL, NULL), NULL);
  out->expr = lx_cast(L, v, out->dtype);
  op_set_value(L, n, out);
  return 0;
}

static const lexpr *
vec_at(lowering *L, lazy *v, const coil_sym *i, coil_dtype dt)
{
  return lx_cast(L, lz_at(L, v, &i), dt);
}

static int
lower_layer_norm(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *w = op_arg(L, n, param_index(n, "weight")), *b = op_arg(L, n, param_index(n, "bias"));
  int nn = op_lit(n, "normalized_shape")->n;
  double eps = op_lit(n, "eps")->f;
  bool red[COIL_MAX_RANK] = {0};
  for (int i = x->rank - nn; i < x->rank; i++)
    red[i] = true;
  coil_dtype acc = opmath_dtype(x->dtype);
  lazy *xf = cast_view(L, x, acc);
  const lexpr *cnt = lx_cast(L, lx_index(L, reduced_count(L, x, red)), acc);
  lazy *mean = lz_reduce(L, xf, red, true, COIL_REDUCE_WELFORD_MEAN, acc);
  lazy *m2 = lz_reduce(L, xf, red, true, COIL_REDUCE_WELFORD_M2, acc);
  lazy *outs[3] = {op_result(L, n, 0), op_result(L, n, 1), op_result(L, n, 2)};
  /* out = (x - mean) * rstd * w + b, over x's dims */
  lazy *o = outs[0];
  const lexpr *mu = broadcast_back(L, mean, x, red, o);
  const lexpr *rstd = lx_op(L, COIL_KOP_RSQRT, acc,
                            lx_op(L, COIL_KOP_ADD, acc, lx_op(L, COIL_KOP_DIV, acc, broadcast_back(L, m2, x, red, o), cnt, NULL),
                                  lx_const(L, acc, eps, 0), NULL), NULL, NULL);
  const lexpr *v = lx_op(L, COIL_KOP_MUL, acc, lx_op(L, COIL_KOP_SUB, acc, lz_at(L, xf, o->dvars), mu, NULL), rstd, NULL);
  const coil_sym *const *trailing = &o->dvars[x->rank - nn]; /* weight and bias: the normalized shape */
  if (w)
    v = lx_op(L, COIL_KOP_MUL, acc, v, lx_cast(L, lz_at(L, w, trailing), acc), NULL);
  if (b)
    v = lx_op(L, COIL_KOP_ADD, acc, v, lx_cast(L, lz_at(L, b, trailing), acc), NULL);
  o->expr = lx_cast(L, v, o->dtype);
  /* mean and rstd, shaped like x with the normalised dims of size 1 */
  for (int k = 1; k < 3; k++) {
    lazy *s = outs[k];
    const coil_sym *idx[COIL_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
      idx[i] = red[i] ? K(L, 0) : s->dvars[i];
    const lexpr *mk = k == 1 ? lz_at(L, mean, idx) : lx_op(L, COIL_KOP_DIV, acc, lz_at(L, m2, idx), cnt, NULL);
    if (k == 2)
      mk = lx_op(L, COIL_KOP_RSQRT, acc, lx_op(L, COIL_KOP_ADD, acc, mk, lx_const(L, acc, eps, 0), NULL), NULL, NULL);
    s->expr = lx_cast(L, mk, s->dtype);
  }
  op_set_tuple(L, n, outs);
  return 0;
}

static int
lower_batch_norm(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0);
  lazy *w = op_arg(L, n, 1), *b = op_arg(L, n, 2), *rm = op_arg(L, n, 3), *rv = op_arg(L, n, 4);
  double eps = op_lit(n, "eps")->f;
  lazy *outs[3] = {op_result(L, n, 0), op_result(L, n, 1), op_result(L, n, 2)};
  lazy *o = outs[0];
  coil_dtype acc = opmath_dtype(x->dtype);
  const coil_sym *c = o->dvars[1];
  const lexpr *v = lx_op(L, COIL_KOP_SUB, acc, lx_cast(L, lz_at(L, x, o->dvars), acc), vec_at(L, rm, c, acc), NULL);
  v = lx_op(L, COIL_KOP_MUL, acc, v,
            lx_op(L, COIL_KOP_RSQRT, acc, lx_op(L, COIL_KOP_ADD, acc, vec_at(L, rv, c, acc), lx_const(L, acc, eps, 0), NULL), NULL, NULL), NULL);
  if (w)
    v = lx_op(L, COIL_KOP_MUL, acc, v, vec_at(L, w, c, acc), NULL);
  if (b)
    v = lx_op(L, COIL_KOP_ADD, acc, v, vec_at(L, b, c, acc), NULL);
  o->expr = lx_cast(L, v, o->dtype);
  for (int k = 1; k < 3; k++) /* empty: nothing to compute */
    outs[k]->expr = lx_const(L, outs[k]->dtype, 0, 0);
  op_set_tuple(L, n, outs);
  return 0;
}

/* ---- views and data movement ---- */

static int
lower_view(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *out = op_result(L, n, 0);
  const coil_sym *idx[COIL_MAX_RANK];
  switch (n->op->rule) {
  case COIL_RULE_RESHAPE: { /* flat offset in out, unravelled over x's sizes */
    const coil_sym *flat = K(L, 0), *stride = K(L, 1);
    for (int i = out->rank - 1; i >= 0; i--) {
      flat = coil_sym_add(L->sym, flat, coil_sym_mul(L->sym, out->dvars[i], stride));
      stride = coil_sym_mul(L->sym, stride, out->sizes[i]);
    }
    if (lz_is_buffer(L, x) >= 0) { /* a contiguous buffer: the same flat offset (a ReinterpretView) */
      out->expr = lx_load(L, x->realized, flat);
      op_set_value(L, n, out);
      return 0;
    }
    stride = K(L, 1);
    for (int j = x->rank - 1; j >= 0; j--) {
      idx[j] = coil_sym_mod(L->sym, coil_sym_floordiv(L->sym, flat, stride), x->sizes[j]);
      stride = coil_sym_mul(L->sym, stride, x->sizes[j]);
    }
    break;
  }
  case COIL_RULE_PERMUTE: {
    const coil_lit *p = op_lit(n, "dims");
    for (int i = 0; i < out->rank; i++)
      idx[wrap_dim(p->items[i].i, x->rank)] = out->dvars[i];
    break;
  }
  case COIL_RULE_TRANSPOSE: {
    for (int i = 0; i < x->rank; i++)
      idx[i] = out->dvars[i];
    if (x->rank >= 2) {
      int a = 0, b = 1;
      if (n->op->sub == 1) {
        a = wrap_dim(op_lit(n, "dim0")->i, x->rank);
        b = wrap_dim(op_lit(n, "dim1")->i, x->rank);
      }
      idx[a] = out->dvars[b];
      idx[b] = out->dvars[a];
    }
    break;
  }
  case COIL_RULE_EXPAND:
    for (int j = 0; j < x->rank; j++) {
      int k = j + out->rank - x->rank;
      int64_t s;
      idx[j] = coil_sym_is_const(x->sizes[j], &s) && s == 1 ? K(L, 0) : out->dvars[k];
    }
    break;
  case COIL_RULE_SLICE: {
    int d = wrap_dim(op_lit(n, "dim")->i, x->rank);
    const coil_lit *ls = op_lit(n, "start");
    const coil_sym *size = x->sizes[d], *start = K(L, 0);
    if (ls->kind != COIL_LIT_NONE) {
      start = ls->i < 0 ? coil_sym_add(L->sym, size, K(L, ls->i)) : K(L, ls->i);
      start = coil_sym_min(L->sym, coil_sym_max(L->sym, start, K(L, 0)), size);
    }
    for (int i = 0; i < x->rank; i++)
      idx[i] = out->dvars[i];
    idx[d] = coil_sym_add(L->sym, start, coil_sym_mul(L->sym, out->dvars[d], K(L, op_lit(n, "step")->i)));
    break;
  }
  case COIL_RULE_SELECT: {
    int d = wrap_dim(op_lit(n, "dim")->i, x->rank);
    int64_t i0 = op_lit(n, "index")->i;
    for (int i = 0, j = 0; i < x->rank; i++)
      idx[i] = i == d ? (i0 < 0 ? coil_sym_add(L->sym, x->sizes[d], K(L, i0)) : K(L, i0)) : out->dvars[j++];
    break;
  }
  case COIL_RULE_UNSQUEEZE: {
    int d = wrap_dim(op_lit(n, "dim")->i, x->rank + 1);
    for (int i = 0; i < x->rank; i++)
      idx[i] = out->dvars[i < d ? i : i + 1];
    break;
  }
  case COIL_RULE_SQUEEZE: { /* the dims removed: those named (or all) whose size is 1 */
    bool named[COIL_MAX_RANK];
    reduce_mask(n->op->sub == 0 ? NULL : op_lit(n, "dim"), x->rank, named);
    for (int i = 0, j = 0; i < x->rank; i++) {
      int64_t s;
      bool gone = named[i] && coil_sym_is_const(x->sizes[i], &s) && s == 1;
      idx[i] = gone ? K(L, 0) : out->dvars[j++];
    }
    break;
  }
  default: /* clone, alias: the same element */
    for (int i = 0; i < x->rank; i++)
      idx[i] = out->dvars[i];
    break;
  }
  out->expr = lz_at(L, x, idx);
  op_set_value(L, n, out);
  return 0;
}

static int
lower_copy(lowering *L, const coil_node *n)
{
  lazy *out = op_result(L, n, 0);
  out->expr = operand(L, &n->bound[1], op_arg(L, n, 1), out, out->dtype);
  op_set_value(L, n, out);
  return 0;
}

const lexpr *
lx_in_range(lowering *L, const coil_sym *i, const coil_sym *lo, const coil_sym *hi)
{
  const lexpr *v = lx_index(L, i);
  const lexpr *a = lx_op(L, COIL_KOP_GE, COIL_BOOL, v, lx_index(L, lo), NULL);
  const lexpr *b = lx_op(L, COIL_KOP_LT, COIL_BOOL, v, lx_index(L, hi), NULL);
  return lx_op(L, COIL_KOP_AND, COIL_BOOL, a, b, NULL);
}

/* An index clamped into [0, size - 1]: loads stay in bounds where a select discards them. */
const coil_sym *
clamped_index(lowering *L, const coil_sym *i, const coil_sym *size)
{
  return coil_sym_min(L->sym, coil_sym_max(L->sym, i, K(L, 0)), coil_sym_add(L->sym, size, K(L, -1)));
}

/* cat: a chain of selects on the concatenated dim, each input read at a clamped index. */
static int
lower_cat(lowering *L, const coil_node *n)
{
  lazy *out = op_result(L, n, 0);
  const coil_lit *l = op_lit(n, "tensors");
  int d = wrap_dim(op_lit(n, "dim")->i, out->rank);
  const lexpr *v = NULL;
  const coil_sym *at[256 + 1];
  lazy *parts[256];
  int np = 0;
  at[0] = K(L, 0);
  for (int k = 0; k < l->n; k++) {
    lazy *x = L->values[slot_of(L, l->items[k].v)];
    int64_t s;
    if (x->rank != out->rank || (coil_sym_is_const(x->sizes[d], &s) && s == 0))
      continue; /* legacy empty 1-D tensors and empty pieces contribute nothing */
    parts[np] = x;
    at[np + 1] = coil_sym_add(L->sym, at[np], x->sizes[d]);
    np++;
  }
  for (int k = np - 1; k >= 0; k--) {
    const coil_sym *idx[COIL_MAX_RANK];
    for (int i = 0; i < out->rank; i++)
      idx[i] = out->dvars[i];
    idx[d] = np == 1 ? coil_sym_sub(L->sym, out->dvars[d], at[k])
                     : clamped_index(L, coil_sym_sub(L->sym, out->dvars[d], at[k]), parts[k]->sizes[d]);
    const lexpr *e = lx_cast(L, lz_at(L, parts[k], idx), out->dtype);
    if (!v) {
      v = e;
    } else {
      const lexpr *before = lx_op(L, COIL_KOP_LT, COIL_BOOL, lx_index(L, out->dvars[d]), lx_index(L, at[k + 1]), NULL);
      v = lx_op(L, COIL_KOP_WHERE, out->dtype, before, e, v);
    }
  }
  out->expr = v ? v : lx_const(L, out->dtype, 0, 0);
  op_set_value(L, n, out);
  return 0;
}

static int
lower_split(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0);
  int d = wrap_dim(op_lit(n, "dim")->i, x->rank);
  int k = n->out->type.nelems;
  lazy **outs = COIL_ARENA_ARRAY(L->arena, lazy *, k);
  const coil_sym *at = K(L, 0);
  for (int e = 0; e < k; e++) {
    lazy *o = outs[e] = op_result(L, n, e);
    const coil_sym *idx[COIL_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
      idx[i] = o->dvars[i];
    idx[d] = coil_sym_add(L->sym, at, o->dvars[d]);
    o->expr = lz_at(L, x, idx);
    at = coil_sym_add(L->sym, at, o->sizes[d]);
  }
  op_set_tuple(L, n, outs);
  return 0;
}

static int
lower_pad(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *out = op_result(L, n, 0);
  const coil_lit *pad = op_lit(n, "pad"), *val = op_lit(n, "value");
  const coil_sym *idx[COIL_MAX_RANK];
  const lexpr *inside = NULL;
  for (int i = 0; i < x->rank; i++)
    idx[i] = out->dvars[i];
  for (int p = 0; p < pad->n / 2; p++) {
    int i = x->rank - 1 - p;
    const coil_sym *src = coil_sym_sub(L->sym, out->dvars[i], K(L, pad->items[2 * p].i));
    const lexpr *ok = lx_in_range(L, src, K(L, 0), x->sizes[i]);
    inside = inside ? lx_op(L, COIL_KOP_AND, COIL_BOOL, inside, ok, NULL) : ok;
    idx[i] = clamped_index(L, src, x->sizes[i]);
  }
  const lexpr *fill = val->kind == COIL_LIT_FLOAT ? lx_const(L, out->dtype, val->f, coil_f64_to_i64(val->f))
                                                  : lx_cast(L, lx_const(L, COIL_I64, 0, val->i), out->dtype);
  const lexpr *e = lz_at(L, x, idx);
  out->expr = inside ? lx_op(L, COIL_KOP_WHERE, out->dtype, inside, e, fill) : e;
  op_set_value(L, n, out);
  return 0;
}

/* ---- library ops ---- */

static bool
is_scalar(const coil_lit *l)
{
  return l->kind == COIL_LIT_INT || l->kind == COIL_LIT_FLOAT || l->kind == COIL_LIT_BOOL;
}

static coil_xparam
xparam_of(lowering *L, const char *name, const coil_lit *l)
{
  coil_xparam x = {.name = name};
  switch (l->kind) {
  case COIL_LIT_INT: x.kind = COIL_XP_INT; x.i = l->i; break;
  case COIL_LIT_BOOL: x.kind = COIL_XP_BOOL; x.i = l->i; break;
  case COIL_LIT_FLOAT: x.kind = COIL_XP_FLOAT; x.f = l->f; break;
  case COIL_LIT_STR: x.kind = COIL_XP_STR; x.s = l->s; break;
  case COIL_LIT_LIST: {
    x.kind = COIL_XP_INTS;
    x.n = l->n;
    int64_t *v = COIL_ARENA_ARRAY(L->arena, int64_t, l->n);
    for (int i = 0; i < l->n; i++)
      v[i] = l->items[i].i;
    x.ints = v;
    break;
  }
  default: x.kind = COIL_XP_NONE; break;
  }
  return x;
}

/* An extern node for n: tensor arguments in schema order become inputs (strided views where
 * possible; a None optional tensor is left out and becomes the parameter NAME=None), the others
 * scalar params. Lists of optional tensors (index.Tensor) give their tensors as inputs and the
 * parameter none_mask, the positions that are None. Outputs: new buffers shaped as n's type. */
static int
lower_extern(lowering *L, const coil_node *n, const char *op)
{
  coil_schema s;
  coil_schema_parse(n->op, &s, NULL);
  int ins[64], nins = 0, nx = 0;
  coil_xparam xp[COIL_MAX_PARAMS];
  for (int i = 0; i < s.nparams; i++) {
    const coil_param *p = &s.params[i];
    const coil_lit *l = &n->bound[i];
    if (p->type == COIL_P_TENSOR && l->kind == COIL_LIT_VALUE) {
      lazy *z = L->values[slot_of(L, l->v)];
      ins[nins++] = n->op->rule == COIL_RULE_MATMUL ? lz_as_matrix_view(L, z) : lz_as_view(L, z);
    } else if (p->type == COIL_P_OPT_TENSOR_LIST || p->type == COIL_P_TENSOR_LIST) {
      /* the list's tensors are inputs; none_mask lists the positions that are None */
      coil_xparam x = {.name = "none_mask", .kind = COIL_XP_INTS};
      int64_t *nones = COIL_ARENA_ARRAY(L->arena, int64_t, l->n);
      for (int k = 0; k < l->n && nins < 64; k++) {
        if (l->items[k].kind == COIL_LIT_VALUE)
          ins[nins++] = lz_as_view(L, L->values[slot_of(L, l->items[k].v)]);
        else
          nones[x.n++] = k;
      }
      x.ints = nones;
      xp[nx++] = x;
    } else if (p->type == COIL_P_TENSOR && is_scalar(l)) {
      return coil_diag_at(L->d, L->g->file, n->line, n->col, "%s: a number where a tensor is expected is not supported here", n->op->name);
    } else {
      xp[nx++] = xparam_of(L, coil_arena_strdup(L->arena, p->name), l); /* s is on the stack */
    }
  }
  const coil_type *t = &n->out->type;
  int nout = t->kind == COIL_TYPE_TUPLE ? t->nelems : 1;
  lazy *outs[8];
  int node = lnode_new(L, LN_EXTERN, -1);
  lnode *e = &L->nodes[node];
  e->op = op;
  e->nins = nins;
  e->ins = COIL_ARENA_ARRAY(L->arena, int, nins);
  memcpy(e->ins, ins, sizeof(int) * (size_t)nins);
  e->nxparams = nx;
  e->xparams = COIL_ARENA_ARRAY(L->arena, coil_xparam, nx);
  memcpy(e->xparams, xp, sizeof(coil_xparam) * (size_t)nx);
  e->nouts = nout;
  e->outs = COIL_ARENA_ARRAY(L->arena, int, nout);
  for (int k = 0; k < nout; k++) {
    outs[k] = op_result(L, n, k);
    int b = lbuf_new(L, outs[k]->dtype, outs[k]->rank, outs[k]->sizes);
    L->bufs[b].node = node;
    e->outs[k] = b;
    lazy *loaded = outs[k];
    /* a contiguous load of b */
    const coil_sym *off = K(L, 0), *stride = K(L, 1);
    for (int i = loaded->rank - 1; i >= 0; i--) {
      off = coil_sym_add(L->sym, off, coil_sym_mul(L->sym, loaded->dvars[i], stride));
      stride = coil_sym_mul(L->sym, stride, loaded->sizes[i]);
    }
    loaded->expr = lx_load(L, b, off);
    loaded->realized = b;
  }
  e = &L->nodes[node];
  e->out = e->outs[0];
  if (t->kind == COIL_TYPE_TUPLE)
    op_set_tuple(L, n, outs);
  else
    op_set_value(L, n, outs[0]);
  return 0;
}

/* addmm(bias, a, b) = beta*bias + alpha*(a @ b): the product is a library call, the rest a
 * pointwise epilogue that fuses with what follows (bias + relu in one kernel). */
/* A lazy of rank r holding z (rank <= r) with size-1 dims added in front; with swap, its last
 * two dims exchanged (k from kᵀ). */
static lazy *
lz_attention_operand(lowering *L, lazy *z, int r, bool swap)
{
  const coil_sym *sizes[COIL_MAX_RANK];
  int pad = r - z->rank;
  for (int d = 0; d < r; d++)
    sizes[d] = d < pad ? K(L, 1) : z->sizes[d - pad];
  if (swap) {
    const coil_sym *t = sizes[r - 1];
    sizes[r - 1] = sizes[r - 2];
    sizes[r - 2] = t;
  }
  lazy *y = lz_new(L, z->dtype, r, sizes);
  const coil_sym *idx[COIL_MAX_RANK];
  for (int d = pad; d < r; d++)
    idx[d - pad] = y->dvars[d];
  if (swap) {
    idx[z->rank - 1] = y->dvars[r - 2];
    idx[z->rank - 2] = y->dvars[r - 1];
  }
  y->expr = lz_at(L, z, idx);
  return y;
}

/* The second bmm of an attention chain (attention.c) as one call: extern_call coil.attention
 * (q, k, v[, mask]) -> out [*B, L, Ev], out then read as the bmm's [N, L, Ev]. The chain's
 * other nodes are read by nothing and die. */
static int
lower_attention(lowering *L, const coil_node *n, const coil_attention_match *m)
{
  int r = m->scores->type.rank;
  lazy *q = L->values[slot_of(L, m->q)], *kt = L->values[slot_of(L, m->kt)], *v = L->values[slot_of(L, m->v)];
  lazy *mask = m->mask ? L->values[slot_of(L, m->mask)] : NULL;
  if (!q || !kt || !v || (m->mask && !mask))
    return coil_diag_at(L->d, L->g->file, n->line, n->col, "internal error: an attention operand has no value");
  int ins[4] = {lz_as_view(L, lz_attention_operand(L, q, r, false)), lz_as_view(L, lz_attention_operand(L, kt, r, true)),
                lz_as_view(L, lz_attention_operand(L, v, r, false)), mask ? lz_as_view(L, lz_attention_operand(L, mask, r, false)) : 0};
  const coil_sym *osz[COIL_MAX_RANK];
  coil_lower_sizes(L, &m->scores->type, osz);
  osz[r - 1] = v->sizes[v->rank - 1];
  int b = lbuf_new(L, q->dtype, r, osz);
  int node = lnode_new(L, LN_EXTERN, b);
  lnode *e = &L->nodes[node];
  e->op = "coil.attention";
  e->nins = mask ? 4 : 3;
  e->ins = COIL_ARENA_ARRAY(L->arena, int, 4);
  memcpy(e->ins, ins, sizeof ins);
  e->nouts = 1;
  e->outs = COIL_ARENA_ARRAY(L->arena, int, 1);
  e->outs[0] = b;
  e->nxparams = 2;
  e->xparams = COIL_ARENA_ARRAY(L->arena, coil_xparam, 2);
  e->xparams[0] = (coil_xparam){.name = "scale", .kind = COIL_XP_FLOAT, .f = m->scale};
  e->xparams[1] = (coil_xparam){.name = "masked_rows", .kind = COIL_XP_STR, .s = m->zero_rows ? "zero" : "nan"};
  L->bufs[b].node = node;
  lazy *out = op_result(L, n, 0); /* [N, L, Ev], the same elements in the same order */
  out->expr = lx_load(L, b, coil_lower_row_major(L, out->rank, out->sizes, out->dvars));
  out->realized = b;
  op_set_value(L, n, out);
  return 0;
}

/* An extern node of op reading the two buffers or views a and b and writing buffer out. */
static lnode *
extern2(lowering *L, const char *op, int a, int b, int out)
{
  int node = lnode_new(L, LN_EXTERN, out); /* may move L->nodes */
  lnode *e = &L->nodes[node];
  e->op = op;
  e->nins = 2;
  e->ins = COIL_ARENA_ARRAY(L->arena, int, 2);
  e->ins[0] = a;
  e->ins[1] = b;
  e->nouts = 1;
  e->outs = COIL_ARENA_ARRAY(L->arena, int, 1);
  e->outs[0] = out;
  return e;
}

/* Decompose-K (coil_compile_options.decompose_k): how many slices of K the product of a [M, K]
 * and b [K, N] is split into, or 0 for one product. Only where the target claims aten.bmm.dtype
 * (the partial products in f32) for the operands' dtype and the sizes are known, and only when
 * the setting names a count that divides K. Auto splits nothing: measured on an H100
 * (docs/benchmarks.md, Decompose-K), cuBLASLt's own choice for one product (it splits K itself)
 * beat every slice count on the shapes decompose-K is for. */
static int
decompose_k_splits(lowering *L, const lazy *a, const lazy *b, coil_dtype dt)
{
  int setting = L->opts ? L->opts->decompose_k : 0;
  int64_t M, K, N;
  if (setting < 2 || a->rank != 2 || b->rank != 2 || (dt != COIL_F16 && dt != COIL_BF16 && dt != COIL_F32) ||
      a->dtype != dt || b->dtype != dt || !coil_lower_is_library(L, "aten.bmm.dtype", dt) ||
      !coil_sym_is_const(a->sizes[0], &M) || !coil_sym_is_const(a->sizes[1], &K) ||
      !coil_sym_is_const(b->sizes[1], &N) || M < 1 || N < 1 || K < 2)
    return 0;
  return K % setting == 0 ? setting : 0;
}

/* a [M, K] @ b [K, N] as decompose-K: a viewed as [ks, M, K/ks] (slice s of K is batch s), b as
 * [ks, K/ks, N], extern_call aten.bmm.dtype into f32 partials [ks, M, N], and their sum over the
 * slices as a reduction the epilogue fuses into. Returns the sum, [M, N] f32. */
static lazy *
mm_decomposed(lowering *L, lazy *a, lazy *b, int ks)
{
  int64_t k = 0;
  coil_sym_is_const(a->sizes[1], &k);
  const coil_sym *kc = K(L, k / ks), *nks = K(L, ks);
  const coil_sym *sa[3] = {nks, a->sizes[0], kc}, *sb[3] = {nks, kc, b->sizes[1]};
  lazy *a3 = lz_new(L, a->dtype, 3, sa), *b3 = lz_new(L, b->dtype, 3, sb);
  const coil_sym *ia[2] = {a3->dvars[1], coil_sym_add(L->sym, coil_sym_mul(L->sym, a3->dvars[0], kc), a3->dvars[2])};
  const coil_sym *ib[2] = {coil_sym_add(L->sym, coil_sym_mul(L->sym, b3->dvars[0], kc), b3->dvars[1]), b3->dvars[2]};
  a3->expr = lz_at(L, a, ia);
  b3->expr = lz_at(L, b, ib);
  int va = lz_as_matrix_view(L, a3), vb = lz_as_matrix_view(L, b3);
  const coil_sym *sp[3] = {nks, a->sizes[0], b->sizes[1]};
  int pb = lbuf_new(L, COIL_F32, 3, sp);
  lnode *e = extern2(L, "aten.bmm.dtype", va, vb, pb);
  e->nxparams = 1;
  e->xparams = COIL_ARENA_ARRAY(L->arena, coil_xparam, 1);
  e->xparams[0] = (coil_xparam){.name = "out_dtype", .kind = COIL_XP_STR, .s = "f32"};
  lazy *part = lz_new(L, COIL_F32, 3, sp);
  part->expr = lx_load(L, pb, coil_lower_row_major(L, 3, sp, part->dvars));
  part->realized = pb;
  const bool red[COIL_MAX_RANK] = {true}; /* lz_reduce reads COIL_MAX_RANK flags */
  return lz_reduce(L, part, red, false, COIL_REDUCE_SUM, COIL_F32);
}

/* a [.., M, K] @ b [.., K, N] as the core's own loop nest, for a target that does not claim the
 * library op ([coil] matmul = generated, or a plugin without a GEMM): the products over
 * [.., M, N, K] in acc and their sum over K, a reduction kernel like any other. Returns the sum,
 * [.., M, N] in acc. */
static lazy *
mm_generated(lowering *L, lazy *a, lazy *b, coil_dtype acc)
{
  int r = a->rank; /* 2 (mm) or 3 (bmm) */
  const coil_sym *sizes[4];
  for (int i = 0; i < r - 1; i++)
    sizes[i] = a->sizes[i];
  sizes[r - 1] = b->sizes[r - 1];
  sizes[r] = a->sizes[r - 1];
  lazy *e = lz_new(L, acc, r + 1, sizes);
  const coil_sym *ia[3], *ib[3];
  for (int i = 0; i < r - 2; i++)
    ia[i] = ib[i] = e->dvars[i];
  ia[r - 2] = e->dvars[r - 2], ia[r - 1] = e->dvars[r];     /* a[.., m, k] */
  ib[r - 2] = e->dvars[r], ib[r - 1] = e->dvars[r - 1];     /* b[.., k, n] */
  e->expr = lx_op(L, COIL_KOP_MUL, acc, lx_cast(L, lz_at(L, a, ia), acc), lx_cast(L, lz_at(L, b, ib), acc), NULL);
  bool red[COIL_MAX_RANK] = {false};
  red[r] = true;
  return lz_reduce(L, e, red, false, COIL_REDUCE_SUM, acc);
}

static int
lower_matmul(lowering *L, const coil_node *n)
{
  for (int i = 0; i < L->nattention; i++)
    if (&L->g->nodes[L->attention[i].node] == n && coil_lower_is_library(L, "coil.attention", n->out->type.dtype))
      return lower_attention(L, n, &L->attention[i]);
  int sub = n->op->sub; /* 0 mm, 1 bmm, 2 addmm */
  lazy *ma = op_arg(L, n, sub == 2 ? 1 : 0), *mb = op_arg(L, n, sub == 2 ? 2 : 1);
  int ks = sub != 1 ? decompose_k_splits(L, ma, mb, n->out->type.dtype) : 0;
  /* the library op where the target claims it for the output's dtype, else the loop nest */
  const char *lib = sub == 1 ? "aten.bmm.default" : "aten.mm.default";
  bool generated = !ks && L->opts && L->opts->matmul_generated && !coil_lower_is_library(L, lib, n->out->type.dtype);
  if (sub != 2 && !ks && !generated)
    return lower_extern(L, n, lib);
  lazy *bias = sub == 2 ? op_arg(L, n, 0) : NULL, *out = op_result(L, n, 0);
  coil_dtype acc = opmath_dtype(out->dtype);
  const lexpr *mm;
  if (generated || ks) { /* a sum in acc (decompose-K: over the slices' f32 partials) */
    mm = lz_at(L, generated ? mm_generated(L, ma, mb, acc) : mm_decomposed(L, ma, mb, ks), out->dvars);
    if (sub != 2) {
      out->expr = lx_cast(L, mm, out->dtype);
      op_set_value(L, n, out);
      return 0;
    }
  } else {
    int a = lz_as_view(L, ma), b = lz_as_view(L, mb);
    int mmb = lbuf_new(L, out->dtype, 2, out->sizes);
    extern2(L, "aten.mm.default", a, b, mmb);
    const coil_sym *const *idx = out->dvars;
    mm = lx_cast(L, lx_load(L, mmb, coil_sym_add(L->sym, coil_sym_mul(L->sym, idx[0], out->sizes[1]), idx[1])), acc);
  }
  double alpha = num(op_lit(n, "alpha")), beta = num(op_lit(n, "beta"));
  if (alpha != 1)
    mm = lx_op(L, COIL_KOP_MUL, acc, mm, lx_const(L, acc, alpha, 0), NULL);
  const lexpr *v = mm;
  if (beta != 0) {
    const lexpr *bv = operand(L, &n->bound[0], bias, out, acc);
    if (beta != 1)
      bv = lx_op(L, COIL_KOP_MUL, acc, bv, lx_const(L, acc, beta, 0), NULL);
    v = lx_op(L, COIL_KOP_ADD, acc, bv, mm, NULL);
  }
  out->expr = lx_cast(L, v, out->dtype);
  op_set_value(L, n, out);
  return 0;
}

int
coil_lower_node(lowering *L, const coil_node *n)
{
  switch (n->op->rule) {
  case COIL_RULE_UNARY_SAME: case COIL_RULE_UNARY_FLOAT: case COIL_RULE_UNARY_BOOL:
    return lower_unary(L, n);
  case COIL_RULE_BINARY: case COIL_RULE_BINARY_FLOAT: case COIL_RULE_COMPARE:
    return lower_binary(L, n);
  case COIL_RULE_WHERE: return lower_where(L, n);
  case COIL_RULE_CLAMP: return lower_clamp(L, n);
  case COIL_RULE_TO_COPY: return lower_to_copy(L, n);
  case COIL_RULE_FULL: case COIL_RULE_FULL_LIKE: case COIL_RULE_ARANGE:
    return lower_creation(L, n);
  case COIL_RULE_REDUCE: return lower_reduce(L, n);
  case COIL_RULE_VAR: return lower_var(L, n);
  case COIL_RULE_ARG: case COIL_RULE_MINMAX_DIM: return lower_arg(L, n);
  case COIL_RULE_SOFTMAX: return lower_softmax(L, n);
  case COIL_RULE_LAYER_NORM: return lower_layer_norm(L, n);
  case COIL_RULE_BATCH_NORM: return lower_batch_norm(L, n);
  case COIL_RULE_RESHAPE: case COIL_RULE_PERMUTE: case COIL_RULE_TRANSPOSE: case COIL_RULE_EXPAND:
  case COIL_RULE_SLICE: case COIL_RULE_SELECT: case COIL_RULE_SQUEEZE: case COIL_RULE_UNSQUEEZE:
  case COIL_RULE_CLONE:
    return lower_view(L, n);
  case COIL_RULE_COPY: return lower_copy(L, n);
  case COIL_RULE_CAT: return lower_cat(L, n);
  case COIL_RULE_SPLIT: return lower_split(L, n);
  case COIL_RULE_PAD: return lower_pad(L, n);
  case COIL_RULE_MATMUL: return lower_matmul(L, n);
  case COIL_RULE_POOL: case COIL_RULE_ADAPTIVE_POOL: return coil_lower_pool(L, n);
  case COIL_RULE_FLIP: case COIL_RULE_REPEAT: case COIL_RULE_INDEX_SELECT: case COIL_RULE_DIAGONAL:
  case COIL_RULE_AS_STRIDED: case COIL_RULE_EMPTY: case COIL_RULE_MODE_PAD: case COIL_RULE_UPSAMPLE:
  case COIL_RULE_GROUP_NORM: case COIL_RULE_BATCH_NORM_STATS: case COIL_RULE_DROPOUT: case COIL_RULE_SYM_SIZE:
    return coil_lower_shapes(L, n);
  case COIL_RULE_CONV: /* a library call where the target claims it, else a generated kernel */
    if (!coil_lower_is_library(L, n->op->name, n->out->type.dtype))
      return coil_lower_conv(L, n);
    return lower_extern(L, n, n->op->name);
  case COIL_RULE_INDEX: case COIL_RULE_GATHER: case COIL_RULE_EMBEDDING: {
    int rc = coil_lower_index(L, n); /* 1: not as indirect loads (a bool mask) */
    if (rc != 1)
      return rc;
    return lower_extern(L, n, n->op->name);
  }
  case COIL_RULE_CUMSUM: {
    int rc = coil_lower_cumsum(L, n); /* 1: the plugin claims it */
    if (rc != 1)
      return rc;
    return lower_extern(L, n, n->op->name);
  }
  case COIL_RULE_SCATTER: case COIL_RULE_INDEX_PUT: case COIL_RULE_EMBEDDING_BWD:
  case COIL_RULE_SELECT_SCATTER: case COIL_RULE_SLICE_SCATTER: case COIL_RULE_MASKED_SCATTER:
    return coil_lower_scatter(L, n);
  case COIL_RULE_TOPK: { /* generated as sort is, where the plugin does not claim it */
    int rc = coil_lower_is_library(L, n->op->name, n->bound[0].v->type.dtype) ? 1 : coil_lower_pairwise(L, n);
    if (rc != 1)
      return rc;
    return lower_extern(L, n, n->op->name);
  }
  case COIL_RULE_POOL_BWD: case COIL_RULE_NORM_BWD: case COIL_RULE_CONV_BWD:
  case COIL_RULE_COL2IM:
    return coil_lower_backward(L, n);
  case COIL_RULE_SORT: case COIL_RULE_CDIST: return coil_lower_pairwise(L, n);
  case COIL_RULE_GRID_SAMPLE: case COIL_RULE_EMBEDDING_BAG: return coil_lower_sample(L, n);
  case COIL_RULE_ASSERT_META:
    return 0;
  case COIL_RULE_GETITEM: {
    const coil_value *t = n->bound[0].v;
    L->values[slot_of(L, n->out)] = L->tuples[slot_of(L, t)][n->bound[1].i];
    return 0;
  }
  case COIL_RULE_COUNT:
    break;
  }
  return coil_diag_at(L->d, L->g->file, n->line, n->col, "%s: no lowering", n->op->name);
}
