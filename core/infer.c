/* infer.c — argument binding and type inference: for each statement, bind the written
 * arguments to the op's ATen schema, check each argument's kind, and compute the output type
 * (dtype with PyTorch's type promotion, sizes as sym expressions). One function per rule
 * family of ops.def; this file holds binding, the helpers the rules share (infer.h), the core
 * rules and the table of rules; the backward ops, sort and pairwise distances are in
 * infer_backward.c, the shape, padding, resampling, normalisation and pooling ops in
 * infer_shapes.c, the scatters in infer_scatter.c. Messages point at the argument at fault. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "coil/strbuf.h"
#include "infer.h"

int
ierr(ictx *c, const coil_lit *at, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int line = at && at->line ? at->line : c->n->line;
  int col = at && at->line ? at->col : c->n->col;
  return coil_diag_at(c->d, c->g->file, line, col, "%s: %s", c->n->op->name, msg);
}

/* ---- binding ---- */

static const char *
ptype_name(coil_ptype t)
{
  switch (t) {
  case COIL_P_TENSOR: return "a tensor";
  case COIL_P_TENSOR_LIST: return "a list of tensors";
  case COIL_P_OPT_TENSOR_LIST: return "a list of tensors or None";
  case COIL_P_SCALAR: return "a number";
  case COIL_P_INT: return "an integer";
  case COIL_P_INT_LIST: return "a list of integers";
  case COIL_P_FLOAT: return "a float";
  case COIL_P_BOOL: return "True or False";
  case COIL_P_STR: return "a string";
  case COIL_P_DTYPE: return "a dtype";
  case COIL_P_LAYOUT: return "a layout (strided)";
  case COIL_P_DEVICE: return "a device (cpu, cuda, cuda:N)";
  case COIL_P_MEMFMT: return "a memory format";
  case COIL_P_ANY: return "a value";
  case COIL_P_FLOAT_LIST: return "a list of numbers";
  }
  return "?";
}

static bool
is_tensor_value(const coil_lit *l)
{
  return l->kind == COIL_LIT_VALUE && l->v->type.kind == COIL_TYPE_TENSOR;
}

static bool
word_in(const coil_lit *l, const char *const *ws)
{
  if (l->kind != COIL_LIT_WORD)
    return false;
  for (; *ws; ws++)
    if (strcmp(l->s, *ws) == 0)
      return true;
  return false;
}

/* Check that l fits parameter prm; may rewrite l (int -> float, int -> [int, int]). */
static int
check_arg(ictx *c, const coil_param *prm, coil_lit *l)
{
  if (l->kind == COIL_LIT_NONE && prm->optional)
    return 0;
  if (l->kind == COIL_LIT_VALUE && l->v->type.kind == COIL_TYPE_NONE)
    return ierr(c, l, "%%%s holds no value (its op returns nothing)", l->v->name);
  static const char *const layouts[] = {"strided", NULL};
  static const char *const devices[] = {"cpu", "cuda", NULL};
  static const char *const formats[] = {"contiguous_format", "channels_last", "preserve_format", NULL};
  bool ok = false;
  switch (prm->type) {
  case COIL_P_TENSOR:
    ok = is_tensor_value(l) || is_scalar_lit(l);
    break;
  case COIL_P_TENSOR_LIST:
  case COIL_P_OPT_TENSOR_LIST:
    ok = l->kind == COIL_LIT_LIST;
    for (int i = 0; ok && i < l->n; i++)
      ok = is_tensor_value(&l->items[i]) ||
           (prm->type == COIL_P_OPT_TENSOR_LIST && l->items[i].kind == COIL_LIT_NONE);
    break;
  case COIL_P_SCALAR:
    ok = is_scalar_lit(l);
    break;
  case COIL_P_INT:
    ok = l->kind == COIL_LIT_INT;
    break;
  case COIL_P_INT_LIST:
    if (l->kind == COIL_LIT_INT && prm->fixed_len > 0) {
      coil_lit one = *l;
      l->kind = COIL_LIT_LIST;
      l->n = prm->fixed_len;
      l->items = COIL_ARENA_ARRAY(c->g->arena, coil_lit, prm->fixed_len);
      for (int i = 0; i < prm->fixed_len; i++)
        l->items[i] = one;
      return 0;
    }
    ok = l->kind == COIL_LIT_LIST;
    for (int i = 0; ok && i < l->n; i++) /* bool[3] output_mask: a list of True/False */
      ok = l->items[i].kind == COIL_LIT_INT || l->items[i].kind == COIL_LIT_BOOL;
    if (ok && l->n > 256)
      return ierr(c, l, "argument '%s' has too many items (%d)", prm->name, l->n);
    break;
  case COIL_P_FLOAT:
    if (l->kind == COIL_LIT_INT) {
      l->kind = COIL_LIT_FLOAT;
      l->f = (double)l->i;
    }
    ok = l->kind == COIL_LIT_FLOAT;
    break;
  case COIL_P_BOOL: ok = l->kind == COIL_LIT_BOOL; break;
  case COIL_P_STR: ok = l->kind == COIL_LIT_STR; break;
  case COIL_P_DTYPE: ok = l->kind == COIL_LIT_DTYPE; break;
  case COIL_P_LAYOUT: ok = word_in(l, layouts); break;
  case COIL_P_DEVICE: ok = word_in(l, devices); break;
  case COIL_P_MEMFMT: ok = word_in(l, formats); break;
  case COIL_P_ANY: ok = l->kind == COIL_LIT_VALUE; break;
  case COIL_P_FLOAT_LIST: /* ints in the list become floats (in a copy: the graph prints as written) */
    ok = l->kind == COIL_LIT_LIST;
    if (ok) {
      coil_lit *items = COIL_ARENA_ARRAY(c->g->arena, coil_lit, l->n + 1);
      memcpy(items, l->items, sizeof(coil_lit) * (size_t)l->n);
      l->items = items;
    }
    for (int i = 0; ok && i < l->n; i++) {
      coil_lit *it = &l->items[i];
      if (it->kind == COIL_LIT_INT) {
        it->kind = COIL_LIT_FLOAT;
        it->f = (double)it->i;
      }
      ok = it->kind == COIL_LIT_FLOAT;
    }
    break;
  }
  if (!ok)
    return ierr(c, l, "argument '%s' must be %s%s", prm->name, ptype_name(prm->type),
                prm->optional ? " or None" : "");
  return 0;
}

static int
bind(ictx *c)
{
  coil_node *n = c->n;
  if (coil_schema_parse(n->op, &c->s, c->d))
    return -1;
  n->bound = COIL_ARENA_ARRAY(c->g->arena, coil_lit, c->s.nparams);
  bool set[COIL_MAX_PARAMS] = {0};
  int pos = 0;
  bool seen_kw = false;
  for (int i = 0; i < n->nargs; i++) {
    coil_arg *a = &n->args[i];
    int k;
    if (!a->name) {
      if (seen_kw)
        return ierr(c, &a->lit, "positional argument after a keyword argument");
      if (pos >= c->s.nparams || c->s.params[pos].kwonly)
        return ierr(c, &a->lit, "too many positional arguments (at most %d)", pos);
      k = pos++;
    } else {
      seen_kw = true;
      k = coil_schema_find(&c->s, a->name);
      if (k < 0)
        return ierr(c, &a->lit, "no parameter named '%s' (schema: %s)", a->name, n->op->schema);
      if (set[k])
        return ierr(c, &a->lit, "argument '%s' given twice", a->name);
    }
    set[k] = true;
    n->bound[k] = a->lit;
  }
  for (int k = 0; k < c->s.nparams; k++) {
    coil_param *prm = &c->s.params[k];
    if (!set[k]) {
      if (!prm->has_default)
        return ierr(c, NULL, "missing argument '%s' (schema: %s)", prm->name, n->op->schema);
      coil_lit *l = &n->bound[k];
      *l = prm->def;
      if (l->kind == COIL_LIT_LIST) {
        l->items = COIL_ARENA_ARRAY(c->g->arena, coil_lit, l->n);
        memcpy(l->items, prm->def_items, sizeof(coil_lit) * (size_t)l->n);
      } else if (l->kind == COIL_LIT_STR) {
        l->s = coil_arena_strndup(c->g->arena, prm->def.s, (size_t)prm->def.n);
        l->n = 0;
      }
    }
    if (check_arg(c, prm, &n->bound[k]))
      return -1;
  }
  return 0;
}

/* ---- helpers ---- */

void
set_tensor(ictx *c, coil_dtype dt, int rank, const coil_sym *const *dims)
{
  coil_type *t = &c->n->out->type;
  memset(t, 0, sizeof *t);
  t->kind = COIL_TYPE_TENSOR;
  t->dtype = dt;
  t->rank = rank;
  for (int i = 0; i < rank; i++)
    t->dims[i] = dims[i];
}

coil_type *
set_tuple(ictx *c, int n)
{
  coil_type *t = &c->n->out->type;
  memset(t, 0, sizeof *t);
  t->kind = COIL_TYPE_TUPLE;
  t->nelems = n;
  t->elems = COIL_ARENA_ARRAY(c->g->arena, coil_type, n);
  for (int i = 0; i < n; i++)
    t->elems[i].kind = COIL_TYPE_TENSOR;
  return t->elems;
}

/* Normalise a possibly negative dimension index against rank (rank 0 accepts -1 and 0). */
int
wrap_dim(ictx *c, const coil_lit *at, int64_t dim, int rank, int *out)
{
  int64_t r = rank > 0 ? rank : 1;
  *out = 0;
  if (dim < -r || dim >= r)
    return ierr(c, at, "dimension %lld is out of range for a tensor of rank %d", (long long)dim,
                rank);
  *out = (int)(dim < 0 ? dim + r : dim);
  return 0;
}

int
broadcast(ictx *c, int *rank, const coil_sym **dims, const coil_type *t)
{
  if (!t)
    return 0;
  int r = t->rank > *rank ? t->rank : *rank;
  const coil_sym *out[COIL_MAX_RANK];
  for (int i = 0; i < r; i++) {
    int ia = i - (r - *rank), ib = i - (r - t->rank);
    const coil_sym *a = ia >= 0 ? dims[ia] : NULL, *b = ib >= 0 ? t->dims[ib] : NULL;
    if (!a || sym_is(a, 1))
      out[i] = b ? b : a;
    else if (!b || sym_is(b, 1) || sym_eq(a, b))
      out[i] = a;
    else
      return ierr(c, NULL, "sizes %s and %s cannot be broadcast together (dimension %d of the result)",
                  S(c, a), S(c, b), i);
  }
  *rank = r;
  memcpy(dims, out, sizeof(*out) * (size_t)r);
  return 0;
}

/* PyTorch's result_type: tensors with dimensions, zero-dim tensors and Python numbers are
 * three priority classes; a lower class only raises the category (bool < int < float). */
typedef struct {
  int dim, zero, wrapped; /* -1: none yet */
} promo;

static int
upd(int cur, coil_dtype t)
{
  return cur < 0 ? (int)t : (int)coil_dtype_promote((coil_dtype)cur, t);
}

static void
promo_add(promo *p, const coil_lit *l)
{
  if (l->kind == COIL_LIT_VALUE) {
    const coil_type *t = &l->v->type;
    if (t->rank > 0)
      p->dim = upd(p->dim, t->dtype);
    else
      p->zero = upd(p->zero, t->dtype);
  } else if (l->kind == COIL_LIT_FLOAT) {
    p->wrapped = upd(p->wrapped, COIL_F32); /* the default dtype */
  } else if (l->kind == COIL_LIT_INT) {
    p->wrapped = upd(p->wrapped, COIL_I64);
  } else if (l->kind == COIL_LIT_BOOL) {
    p->wrapped = upd(p->wrapped, COIL_BOOL);
  }
}

static int
category(int t)
{
  return t < 0 ? -1 : t == COIL_BOOL ? 0 : coil_dtype_is_float((coil_dtype)t) ? 2 : 1;
}

static int
combine(int higher, int lower)
{
  if (higher >= 0 && category(higher) == 2)
    return higher;
  if (higher == COIL_BOOL || (lower >= 0 && category(lower) == 2))
    return higher < 0 ? lower : lower < 0 ? higher : (int)coil_dtype_promote((coil_dtype)higher, (coil_dtype)lower);
  return higher >= 0 ? higher : lower;
}

static coil_dtype
promo_result(const promo *p)
{
  int t = combine(p->dim, combine(p->zero, p->wrapped));
  return t < 0 ? COIL_F32 : (coil_dtype)t;
}

coil_dtype
coil_infer_common_dtype(const coil_lit *const *lits, int n)
{
  promo p = {-1, -1, -1};
  for (int i = 0; i < n; i++)
    promo_add(&p, lits[i]);
  return promo_result(&p);
}

static coil_dtype
to_float(coil_dtype t)
{
  return coil_dtype_is_float(t) ? t : COIL_F32;
}

/* Evaluates a list of int literals; with_neg1 allows one -1 (view, expand). */
int
int_list(ictx *c, const coil_lit *l, int64_t *out, int *n, int cap)
{
  if (l->kind != COIL_LIT_LIST)
    return ierr(c, l, "expected a list of integers");
  if (l->n > cap)
    return ierr(c, l, "list has %d items, at most %d allowed", l->n, cap);
  for (int i = 0; i < l->n; i++)
    out[i] = l->items[i].i;
  *n = l->n;
  return 0;
}

/* t has exactly the rank and sizes given */
bool
has_dims(const coil_type *t, int rank, const coil_sym *const *dims)
{
  if (!t || t->rank != rank)
    return false;
  for (int i = 0; i < rank; i++)
    if (!sym_eq(t->dims[i], dims[i]))
      return false;
  return true;
}

const char *
dims_str(ictx *c, int rank, const coil_sym *const *dims)
{
  coil_strbuf b = {0};
  char *out;
  coil_strbuf_puts(&b, "[");
  for (int i = 0; i < rank; i++)
    coil_strbuf_printf(&b, "%s%s", i ? ", " : "", S(c, dims[i]));
  coil_strbuf_puts(&b, "]");
  out = coil_arena_strndup(c->g->arena, b.s, b.len);
  coil_strbuf_free(&b);
  return out;
}

/* ---- rules ---- */

static int
r_unary(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor, not a number");
  coil_dtype dt = t->dtype;
  switch (c->n->op->rule) {
  case COIL_RULE_UNARY_FLOAT: dt = to_float(dt); break;
  case COIL_RULE_UNARY_BOOL: dt = COIL_BOOL; break;
  default:
    if (c->n->op->sub == EW_BITNOT && coil_dtype_is_float(dt))
      return ierr(c, NULL, "bitwise_not needs an integer or bool tensor, not %s", coil_dtype_name(dt));
    if (dt == COIL_BOOL && (c->n->op->sub == EW_NEG || c->n->op->sub == EW_RELU ||
                            c->n->op->sub == EW_HARDTANH))
      return ierr(c, NULL, "not defined for bool tensors");
    if (c->n->op->sub == EW_ELU && !coil_dtype_is_float(dt))
      return ierr(c, NULL, "needs a floating-point tensor, not %s", coil_dtype_name(dt));
    break;
  }
  if (c->n->op->sub == EW_GELU) {
    const char *a = P(c, "approximate")->s;
    if (strcmp(a, "none") != 0 && strcmp(a, "tanh") != 0)
      return ierr(c, P(c, "approximate"), "approximate must be 'none' or 'tanh', not '%s'", a);
  }
  set_tensor(c, dt, t->rank, t->dims);
  return 0;
}

static int
r_binary(ictx *c)
{
  coil_lit *a = &c->n->bound[0], *b = &c->n->bound[1];
  promo p = {-1, -1, -1};
  promo_add(&p, a);
  promo_add(&p, b);
  coil_lit *alpha = P(c, "alpha");
  coil_dtype dt = promo_result(&p);
  if (!tensor_of(a) && !tensor_of(b))
    return ierr(c, a, "at least one argument must be a tensor");
  int rank = 0;
  const coil_sym *dims[COIL_MAX_RANK];
  if (broadcast(c, &rank, dims, tensor_of(a)) || broadcast(c, &rank, dims, tensor_of(b)))
    return -1;
  int sub = c->n->op->sub;
  if ((sub == EW_BITAND || sub == EW_BITOR || sub == EW_BITXOR) && coil_dtype_is_float(dt))
    return ierr(c, NULL, "needs integer or bool tensors, not %s", coil_dtype_name(dt));
  if ((sub == EW_FMOD || sub == EW_REMAINDER) && dt == COIL_BOOL)
    return ierr(c, NULL, "not defined for bool tensors");
  if (alpha && alpha->kind == COIL_LIT_FLOAT && !coil_dtype_is_float(dt))
    return ierr(c, alpha, "a float alpha needs a floating-point result, not %s", coil_dtype_name(dt));
  if ((sub == EW_SUB || sub == EW_RSUB) && dt == COIL_BOOL)
    return ierr(c, NULL, "subtraction is not defined for bool tensors");
  if (c->n->op->rule == COIL_RULE_BINARY_FLOAT)
    dt = to_float(dt);
  if (sub == EW_DIV_MODE) {
    coil_lit *m = P(c, "rounding_mode");
    if (m->kind == COIL_LIT_NONE)
      dt = to_float(dt);
    else if (strcmp(m->s, "trunc") != 0 && strcmp(m->s, "floor") != 0)
      return ierr(c, m, "rounding_mode must be 'trunc', 'floor' or None, not '%s'", m->s);
  }
  coil_lit *out = P(c, "out");
  if (out) { /* an out= overload: the result is a new value, which `out` must be able to hold */
    const coil_type *ot = tensor_of(out);
    if (!ot)
      return ierr(c, out, "argument 'out' must be a tensor");
    bool same = ot->dtype == dt && ot->rank == rank;
    for (int i = 0; same && i < rank; i++)
      same = sym_eq(ot->dims[i], dims[i]);
    if (!same) {
      coil_type want = {.kind = COIL_TYPE_TENSOR, .dtype = dt, .rank = rank};
      memcpy(want.dims, dims, sizeof(*dims) * (size_t)rank);
      coil_strbuf got_s = {0}, want_s = {0};
      coil_type_print(c->g, ot, &got_s);
      coil_type_print(c->g, &want, &want_s);
      ierr(c, out, "out is %s, expected the result's type %s (coil does not resize or cast out)",
           got_s.s, want_s.s);
      coil_strbuf_free(&got_s);
      coil_strbuf_free(&want_s);
      return -1;
    }
  }
  set_tensor(c, dt, rank, dims);
  return 0;
}

static int
r_compare(ictx *c)
{
  coil_lit *a = &c->n->bound[0], *b = &c->n->bound[1];
  if (!tensor_of(a))
    return ierr(c, a, "argument 'self' must be a tensor");
  int rank = 0;
  const coil_sym *dims[COIL_MAX_RANK];
  if (broadcast(c, &rank, dims, tensor_of(a)) || broadcast(c, &rank, dims, tensor_of(b)))
    return -1;
  set_tensor(c, COIL_BOOL, rank, dims);
  return 0;
}

static int
r_where(ictx *c)
{
  coil_lit *cond = P(c, "condition"), *a = P(c, "self"), *b = P(c, "other");
  const coil_type *ct = tensor_of(cond);
  if (!ct || (ct->dtype != COIL_BOOL && ct->dtype != COIL_U8))
    return ierr(c, cond, "condition must be a bool tensor");
  promo p = {-1, -1, -1};
  promo_add(&p, a);
  promo_add(&p, b);
  int rank = 0;
  const coil_sym *dims[COIL_MAX_RANK];
  if (broadcast(c, &rank, dims, ct) || broadcast(c, &rank, dims, tensor_of(a)) ||
      broadcast(c, &rank, dims, tensor_of(b)))
    return -1;
  set_tensor(c, promo_result(&p), rank, dims);
  return 0;
}

static int
r_clamp(ictx *c)
{
  coil_lit *x = P(c, "self"), *lo = P(c, "min"), *hi = P(c, "max");
  const coil_type *t = tensor_of(x);
  if (!t)
    return ierr(c, x, "argument 'self' must be a tensor");
  if (lo->kind == COIL_LIT_NONE && hi->kind == COIL_LIT_NONE)
    return ierr(c, NULL, "at least one of min and max must be given");
  promo p = {-1, -1, -1};
  promo_add(&p, x);
  promo_add(&p, lo);
  promo_add(&p, hi);
  int rank = 0;
  const coil_sym *dims[COIL_MAX_RANK];
  if (broadcast(c, &rank, dims, t) || broadcast(c, &rank, dims, tensor_of(lo)) ||
      broadcast(c, &rank, dims, tensor_of(hi)))
    return -1;
  set_tensor(c, promo_result(&p), rank, dims);
  return 0;
}

static int
r_to_copy(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  coil_lit *dt = P(c, "dtype");
  set_tensor(c, dt->kind == COIL_LIT_DTYPE ? dt->dtype : t->dtype, t->rank, t->dims);
  return 0;
}

static coil_dtype
scalar_dtype(const coil_lit *l)
{
  return l->kind == COIL_LIT_FLOAT ? COIL_F32 : l->kind == COIL_LIT_BOOL ? COIL_BOOL : COIL_I64;
}

static int
r_full(ictx *c)
{
  coil_lit *dt = P(c, "dtype");
  const coil_sym *dims[COIL_MAX_RANK];
  int rank = 0;
  coil_dtype t;
  if (c->n->op->sub == 1) { /* scalar_tensor: the default dtype */
    t = COIL_F32;
  } else {
    int64_t sz[COIL_MAX_RANK];
    if (int_list(c, P(c, "size"), sz, &rank, COIL_MAX_RANK))
      return -1;
    for (int i = 0; i < rank; i++) {
      if (sz[i] < 0)
        return ierr(c, P(c, "size"), "size %lld is negative", (long long)sz[i]);
      dims[i] = K(c, sz[i]);
    }
    t = scalar_dtype(P(c, "fill_value"));
  }
  set_tensor(c, dt->kind == COIL_LIT_DTYPE ? dt->dtype : t, rank, dims);
  return 0;
}

static int
r_full_like(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  coil_lit *dt = P(c, "dtype"); /* fill.Scalar has none: self's dtype */
  set_tensor(c, dt && dt->kind == COIL_LIT_DTYPE ? dt->dtype : t->dtype, t->rank, t->dims);
  return 0;
}

static double
num(const coil_lit *l)
{
  return l->kind == COIL_LIT_FLOAT ? l->f : (double)l->i;
}

static int
r_arange(ictx *c)
{
  coil_lit *start = P(c, "start"), *end = P(c, "end"), *step = P(c, "step");
  bool all_int = end->kind != COIL_LIT_FLOAT && (!start || start->kind != COIL_LIT_FLOAT) &&
                 (!step || step->kind != COIL_LIT_FLOAT);
  double s0 = start ? num(start) : 0, e = num(end), st = step ? num(step) : 1;
  coil_lit *dt = P(c, "dtype");
  coil_dtype out = dt->kind == COIL_LIT_DTYPE ? dt->dtype : all_int ? COIL_I64 : COIL_F32;
  if (isnan(s0) || isnan(e) || isnan(st) || isinf(s0) || isinf(e) || isinf(st))
    return ierr(c, NULL, "arange needs finite bounds and step");
  if (!coil_dtype_is_float(out)) { /* PyTorch truncates the arguments of an integer arange */
    s0 = trunc(s0), e = trunc(e), st = trunc(st);
  }
  if (st == 0)
    return ierr(c, NULL, "arange needs a non-zero step");
  double len = ceil((e - s0) / st);
  if (len < 0)
    return ierr(c, NULL, "arange: the step goes away from the end");
  if (len > 1e15)
    return ierr(c, NULL, "arange: too many elements");
  const coil_sym *dims[1] = {K(c, (int64_t)len)};
  set_tensor(c, out, 1, dims);
  return 0;
}

/* Which dimensions a reduction reduces: from an int, a list, None or [] (= all). */
static int
reduce_dims(ictx *c, const coil_lit *l, int rank, bool *red)
{
  memset(red, 0, sizeof(bool) * COIL_MAX_RANK);
  if (!l || l->kind == COIL_LIT_NONE || (l->kind == COIL_LIT_LIST && l->n == 0)) {
    for (int i = 0; i < rank; i++)
      red[i] = true;
    return 0;
  }
  int n = l->kind == COIL_LIT_LIST ? l->n : 1;
  for (int i = 0; i < n; i++) {
    const coil_lit *it = l->kind == COIL_LIT_LIST ? &l->items[i] : l;
    int d;
    if (wrap_dim(c, it, it->i, rank, &d))
      return -1;
    if (rank > 0 && red[d])
      return ierr(c, it, "dimension %lld appears twice", (long long)it->i);
    if (rank > 0)
      red[d] = true;
  }
  return 0;
}

static void
reduced_shape(const coil_type *t, const bool *red, bool keepdim, const coil_sym *one, int *rank,
              const coil_sym **dims)
{
  *rank = 0;
  for (int i = 0; i < t->rank; i++) {
    if (!red[i])
      dims[(*rank)++] = t->dims[i];
    else if (keepdim)
      dims[(*rank)++] = one;
  }
}

static bool
keepdim(ictx *c)
{
  coil_lit *k = P(c, "keepdim");
  return k && k->i;
}

static int
r_reduce(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  bool red[COIL_MAX_RANK];
  if (reduce_dims(c, P(c, "dim"), t->rank, red))
    return -1;
  int rank;
  const coil_sym *dims[COIL_MAX_RANK];
  reduced_shape(t, red, keepdim(c), K(c, 1), &rank, dims);
  coil_lit *dtl = P(c, "dtype");
  coil_dtype dt = t->dtype;
  int sub = c->n->op->sub;
  if (dtl && dtl->kind == COIL_LIT_DTYPE)
    dt = dtl->dtype;
  else if ((sub == RED_SUM || sub == RED_PROD) && !coil_dtype_is_float(dt))
    dt = COIL_I64;
  /* (VAR's sub numbers its variants, not reductions: var_mean is checked below) */
  if (sub == RED_MEAN && c->n->op->rule == COIL_RULE_REDUCE && !coil_dtype_is_float(dt))
    return ierr(c, NULL, "mean needs a floating-point tensor or dtype, not %s", coil_dtype_name(dt));
  if (sub == RED_ANY)
    dt = COIL_BOOL;
  if (c->n->op->rule == COIL_RULE_VAR) {
    if (!coil_dtype_is_float(t->dtype))
      return ierr(c, NULL, "var needs a floating-point tensor, not %s", coil_dtype_name(t->dtype));
    if (c->n->op->sub == 1) {
      coil_type *e = set_tuple(c, 2);
      for (int i = 0; i < 2; i++) {
        e[i].dtype = t->dtype;
        e[i].rank = rank;
        memcpy(e[i].dims, dims, sizeof(*dims) * (size_t)rank);
      }
      return 0;
    }
  }
  set_tensor(c, dt, rank, dims);
  return 0;
}

static int
r_arg(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  coil_lit *dim = P(c, "dim");
  bool red[COIL_MAX_RANK];
  if (reduce_dims(c, dim, t->rank, red))
    return -1;
  int rank;
  const coil_sym *dims[COIL_MAX_RANK];
  reduced_shape(t, red, keepdim(c), K(c, 1), &rank, dims);
  if (c->n->op->rule == COIL_RULE_MINMAX_DIM) {
    coil_type *e = set_tuple(c, 2);
    for (int i = 0; i < 2; i++) {
      e[i].dtype = i ? COIL_I64 : t->dtype;
      e[i].rank = rank;
      memcpy(e[i].dims, dims, sizeof(*dims) * (size_t)rank);
    }
    return 0;
  }
  set_tensor(c, COIL_I64, rank, dims);
  return 0;
}

static int
r_softmax(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  if (!coil_dtype_is_float(t->dtype))
    return ierr(c, NULL, "needs a floating-point tensor, not %s", coil_dtype_name(t->dtype));
  int d;
  if (wrap_dim(c, P(c, "dim"), P(c, "dim")->i, t->rank, &d))
    return -1;
  coil_dtype dt = t->dtype;
  if (P(c, "half_to_float")->i) {
    if (dt != COIL_F16 && dt != COIL_BF16)
      return ierr(c, P(c, "half_to_float"), "half_to_float=True needs an f16 or bf16 input");
    dt = COIL_F32;
  }
  set_tensor(c, dt, t->rank, t->dims);
  return 0;
}

int
check_vec(ictx *c, const char *name, const coil_sym *len)
{
  const coil_type *t = tensor_of(P(c, name));
  if (P(c, name)->kind == COIL_LIT_NONE)
    return 0;
  if (!t || t->rank != 1 || !sym_eq(t->dims[0], len))
    return ierr(c, P(c, name), "'%s' must be a 1-D tensor of size %s", name, S(c, len));
  return 0;
}

static int
r_layer_norm(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "input"));
  if (!t)
    return ierr(c, P(c, "input"), "argument 'input' must be a tensor");
  if (!coil_dtype_is_float(t->dtype))
    return ierr(c, NULL, "needs a floating-point tensor, not %s", coil_dtype_name(t->dtype));
  int64_t ns[COIL_MAX_RANK];
  int nn;
  if (int_list(c, P(c, "normalized_shape"), ns, &nn, COIL_MAX_RANK))
    return -1;
  if (nn < 1 || nn > t->rank)
    return ierr(c, P(c, "normalized_shape"), "normalized_shape must name 1 to %d trailing sizes", t->rank);
  for (int i = 0; i < nn; i++)
    if (!sym_is(t->dims[t->rank - nn + i], ns[i]))
      return ierr(c, P(c, "normalized_shape"), "normalized_shape does not match the input's trailing sizes");
  if (nn == 1 && (check_vec(c, "weight", t->dims[t->rank - 1]) || check_vec(c, "bias", t->dims[t->rank - 1])))
    return -1;
  for (int k = 0; k < 2 && nn > 1; k++) { /* weight and bias: the normalized shape, or None */
    coil_lit *l = P(c, k ? "bias" : "weight");
    if (l->kind != COIL_LIT_NONE && !has_dims(tensor_of(l), nn, &t->dims[t->rank - nn]))
      return ierr(c, l, "'%s' must have the normalized shape %s", k ? "bias" : "weight",
                  dims_str(c, nn, &t->dims[t->rank - nn]));
  }
  coil_type *e = set_tuple(c, 3);
  e[0].dtype = t->dtype;
  e[0].rank = t->rank;
  memcpy(e[0].dims, t->dims, sizeof(t->dims));
  /* mean and rstd: the input's dtype, as PyTorch's CPU kernels (and so CPU exports) return them */
  coil_dtype acc = t->dtype;
  for (int k = 1; k < 3; k++) {
    e[k].dtype = acc;
    e[k].rank = t->rank;
    for (int i = 0; i < t->rank; i++)
      e[k].dims[i] = i < t->rank - nn ? t->dims[i] : K(c, 1);
  }
  return 0;
}

static int
r_batch_norm(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "input"));
  if (!t || t->rank < 2)
    return ierr(c, P(c, "input"), "input must be a tensor of rank >= 2 (N, C, ...)");
  if (!coil_dtype_is_float(t->dtype))
    return ierr(c, NULL, "needs a floating-point tensor, not %s", coil_dtype_name(t->dtype));
  const coil_sym *ch = t->dims[1];
  if (check_vec(c, "weight", ch) || check_vec(c, "bias", ch) || check_vec(c, "running_mean", ch) ||
      check_vec(c, "running_var", ch))
    return -1;
  coil_type *e = set_tuple(c, 3);
  e[0].dtype = t->dtype;
  e[0].rank = t->rank;
  memcpy(e[0].dims, t->dims, sizeof(t->dims));
  for (int k = 1; k < 3; k++) {
    e[k].dtype = t->dtype == COIL_F64 ? COIL_F64 : COIL_F32;
    e[k].rank = 1;
    e[k].dims[0] = K(c, 0);
  }
  return 0;
}

const coil_sym *
numel(ictx *c, const coil_type *t)
{
  const coil_sym *n = K(c, 1);
  for (int i = 0; i < t->rank; i++)
    n = coil_sym_mul(c->sc, n, t->dims[i]);
  return n;
}

static int
r_reshape(ictx *c)
{
  const coil_type *t = tensor_of(&c->n->bound[0]);
  if (!t)
    return ierr(c, &c->n->bound[0], "argument 'self' must be a tensor");
  coil_lit *l = &c->n->bound[1];
  int64_t sz[COIL_MAX_RANK];
  int n;
  if (int_list(c, l, sz, &n, COIL_MAX_RANK))
    return -1;
  const coil_sym *dims[COIL_MAX_RANK], *known = K(c, 1);
  int infer_at = -1;
  for (int i = 0; i < n; i++) {
    if (sz[i] == -1) {
      if (infer_at >= 0)
        return ierr(c, l, "only one size may be -1");
      infer_at = i;
      continue;
    }
    if (sz[i] < 0)
      return ierr(c, l, "size %lld is invalid", (long long)sz[i]);
    dims[i] = K(c, sz[i]);
    known = coil_sym_mul(c->sc, known, dims[i]);
  }
  const coil_sym *total = numel(c, t);
  if (infer_at >= 0) {
    int64_t k;
    if (coil_sym_is_const(known, &k) && k == 0)
      return ierr(c, l, "cannot infer the -1 size of a shape with a zero size");
    dims[infer_at] = coil_sym_floordiv(c->sc, total, known);
    known = coil_sym_mul(c->sc, known, dims[infer_at]);
  }
  if (!sym_eq(known, total))
    return ierr(c, l, "shape of %s elements cannot view a tensor of %s elements", S(c, known),
                S(c, total));
  set_tensor(c, t->dtype, n, dims);
  return 0;
}

static int
r_permute(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  coil_lit *l = P(c, "dims");
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  if (l->n != t->rank)
    return ierr(c, l, "permutation has %d entries for a tensor of rank %d", l->n, t->rank);
  bool seen[COIL_MAX_RANK] = {0};
  const coil_sym *dims[COIL_MAX_RANK];
  for (int i = 0; i < l->n; i++) {
    int d;
    if (wrap_dim(c, &l->items[i], l->items[i].i, t->rank, &d))
      return -1;
    if (seen[d])
      return ierr(c, &l->items[i], "dimension %d appears twice in the permutation", d);
    seen[d] = true;
    dims[i] = t->dims[d];
  }
  set_tensor(c, t->dtype, t->rank, dims);
  return 0;
}

static int
r_transpose(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  int a = 0, b = t->rank > 1 ? 1 : 0;
  if (c->n->op->sub == 0) {
    if (t->rank > 2)
      return ierr(c, NULL, "t() needs a tensor of rank <= 2, not %d", t->rank);
  } else if (wrap_dim(c, P(c, "dim0"), P(c, "dim0")->i, t->rank, &a) ||
             wrap_dim(c, P(c, "dim1"), P(c, "dim1")->i, t->rank, &b)) {
    return -1;
  }
  const coil_sym *dims[COIL_MAX_RANK];
  memcpy(dims, t->dims, sizeof dims);
  if (t->rank > 0) {
    dims[a] = t->dims[b];
    dims[b] = t->dims[a];
  }
  set_tensor(c, t->dtype, t->rank, dims);
  return 0;
}

static int
r_expand(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  coil_lit *l = P(c, "size");
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  int64_t sz[COIL_MAX_RANK];
  int n;
  if (int_list(c, l, sz, &n, COIL_MAX_RANK))
    return -1;
  if (n < t->rank)
    return ierr(c, l, "expand to %d dimensions from %d: the number of sizes must not shrink", n, t->rank);
  const coil_sym *dims[COIL_MAX_RANK];
  for (int i = 0; i < n; i++) {
    int j = i - (n - t->rank);
    if (sz[i] == -1) {
      if (j < 0)
        return ierr(c, l, "-1 is not allowed for a new leading dimension");
      dims[i] = t->dims[j];
    } else if (sz[i] < 0) {
      return ierr(c, l, "size %lld is invalid", (long long)sz[i]);
    } else {
      dims[i] = K(c, sz[i]);
      if (j >= 0 && !sym_is(t->dims[j], 1) && !sym_eq(t->dims[j], dims[i]))
        return ierr(c, l, "cannot expand size %s to %lld in dimension %d", S(c, t->dims[j]),
                    (long long)sz[i], i);
    }
  }
  set_tensor(c, t->dtype, n, dims);
  return 0;
}

int
r_slice(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  if (t->rank == 0)
    return ierr(c, NULL, "cannot slice a 0-d tensor");
  int d;
  if (wrap_dim(c, P(c, "dim"), P(c, "dim")->i, t->rank, &d))
    return -1;
  coil_lit *ls = P(c, "start"), *le = P(c, "end"), *lst = P(c, "step");
  if (lst->i <= 0)
    return ierr(c, lst, "slice step must be positive");
  const coil_sym *size = t->dims[d], *zero = K(c, 0);
  /* start/end: negative counts from the end, then clamp to [0, size] as PyTorch does */
  const coil_sym *se[2];
  const coil_lit *lit[2] = {ls, le};
  for (int k = 0; k < 2; k++) {
    if (lit[k]->kind == COIL_LIT_NONE) {
      se[k] = k ? size : zero;
      continue;
    }
    int64_t v = lit[k]->i;
    const coil_sym *x = v < 0 ? coil_sym_add(c->sc, size, K(c, v)) : K(c, v);
    se[k] = coil_sym_min(c->sc, coil_sym_max(c->sc, x, zero), size);
  }
  const coil_sym *len = coil_sym_max(c->sc, coil_sym_sub(c->sc, se[1], se[0]), zero);
  len = coil_sym_floordiv(c->sc, coil_sym_add(c->sc, len, K(c, lst->i - 1)), K(c, lst->i));
  const coil_sym *dims[COIL_MAX_RANK];
  memcpy(dims, t->dims, sizeof dims);
  dims[d] = len;
  set_tensor(c, t->dtype, t->rank, dims);
  return 0;
}

int
r_select(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  if (t->rank == 0)
    return ierr(c, NULL, "cannot select from a 0-d tensor");
  int d;
  if (wrap_dim(c, P(c, "dim"), P(c, "dim")->i, t->rank, &d))
    return -1;
  int64_t idx = P(c, "index")->i, size;
  if (coil_sym_is_const(t->dims[d], &size) && (idx < -size || idx >= size))
    return ierr(c, P(c, "index"), "index %lld is out of range for size %lld", (long long)idx, (long long)size);
  const coil_sym *dims[COIL_MAX_RANK];
  int r = 0;
  for (int i = 0; i < t->rank; i++)
    if (i != d)
      dims[r++] = t->dims[i];
  set_tensor(c, t->dtype, r, dims);
  return 0;
}

static int
r_squeeze(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  bool which[COIL_MAX_RANK] = {0};
  if (c->n->op->sub == 0) {
    for (int i = 0; i < t->rank; i++)
      which[i] = true;
  } else if (reduce_dims(c, P(c, "dim"), t->rank, which)) {
    return -1;
  }
  const coil_sym *dims[COIL_MAX_RANK];
  int r = 0;
  for (int i = 0; i < t->rank; i++)
    if (!(which[i] && sym_is(t->dims[i], 1)))
      dims[r++] = t->dims[i];
  set_tensor(c, t->dtype, r, dims);
  return 0;
}

static int
r_unsqueeze(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  if (t->rank == COIL_MAX_RANK)
    return ierr(c, NULL, "result would have more than %d dimensions", COIL_MAX_RANK);
  int d;
  if (wrap_dim(c, P(c, "dim"), P(c, "dim")->i, t->rank + 1, &d))
    return -1;
  const coil_sym *dims[COIL_MAX_RANK];
  for (int i = 0, j = 0; i <= t->rank; i++)
    dims[i] = i == d ? K(c, 1) : t->dims[j++];
  set_tensor(c, t->dtype, t->rank + 1, dims);
  return 0;
}

static int
r_clone(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  set_tensor(c, t->dtype, t->rank, t->dims);
  return 0;
}

static int
r_copy(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self")), *s = tensor_of(P(c, "src"));
  if (!t || !s)
    return ierr(c, NULL, "self and src must be tensors");
  int rank = t->rank;
  const coil_sym *dims[COIL_MAX_RANK];
  memcpy(dims, t->dims, sizeof dims);
  if (broadcast(c, &rank, dims, s))
    return -1;
  if (rank != t->rank)
    return ierr(c, P(c, "src"), "src of rank %d cannot be copied into a tensor of rank %d", s->rank, t->rank);
  for (int i = 0; i < rank; i++)
    if (!sym_eq(dims[i], t->dims[i]))
      return ierr(c, P(c, "src"), "src does not broadcast to the shape of self");
  set_tensor(c, t->dtype, t->rank, t->dims);
  return 0;
}

static int
r_cat(ictx *c)
{
  coil_lit *l = P(c, "tensors");
  if (l->n == 0)
    return ierr(c, l, "needs at least one tensor");
  /* PyTorch skips legacy 1-D empty tensors when the others have another rank */
  const coil_type *ref = NULL;
  promo p = {-1, -1, -1};
  for (int i = 0; i < l->n; i++) {
    const coil_type *t = &l->items[i].v->type;
    p.dim = upd(p.dim, t->dtype);
    if (!ref && !(t->rank == 1 && sym_is(t->dims[0], 0)))
      ref = t;
  }
  if (!ref)
    ref = &l->items[0].v->type;
  if (ref->rank == 0)
    return ierr(c, l, "cannot concatenate 0-d tensors");
  int d;
  if (wrap_dim(c, P(c, "dim"), P(c, "dim")->i, ref->rank, &d))
    return -1;
  const coil_sym *dims[COIL_MAX_RANK];
  memcpy(dims, ref->dims, sizeof dims);
  dims[d] = K(c, 0);
  for (int i = 0; i < l->n; i++) {
    const coil_type *t = &l->items[i].v->type;
    if (t->rank == 1 && sym_is(t->dims[0], 0) && ref->rank != 1)
      continue;
    if (t->rank != ref->rank)
      return ierr(c, &l->items[i], "tensor %d has rank %d, expected %d", i, t->rank, ref->rank);
    for (int k = 0; k < t->rank; k++)
      if (k != d && !sym_eq(t->dims[k], ref->dims[k]))
        return ierr(c, &l->items[i], "tensor %d has size %s in dimension %d, expected %s", i,
                    S(c, t->dims[k]), k, S(c, ref->dims[k]));
    dims[d] = coil_sym_add(c->sc, dims[d], t->dims[d]);
  }
  set_tensor(c, promo_result(&p), ref->rank, dims);
  return 0;
}

static int
r_split(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  if (!t || t->rank == 0)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor of rank >= 1");
  int d;
  if (wrap_dim(c, P(c, "dim"), P(c, "dim")->i, t->rank, &d))
    return -1;
  int64_t sizes[256];
  int n = 0;
  if (c->n->op->sub == 0) {
    coil_lit *l = P(c, "split_sizes");
    if (l->n > 256)
      return ierr(c, l, "at most 256 pieces");
    const coil_sym *sum = K(c, 0);
    for (int i = 0; i < l->n; i++) {
      if (l->items[i].i < 0)
        return ierr(c, &l->items[i], "split size %lld is negative", (long long)l->items[i].i);
      sizes[n++] = l->items[i].i;
      sum = coil_sym_add(c->sc, sum, K(c, l->items[i].i));
    }
    if (!sym_eq(sum, t->dims[d]))
      return ierr(c, l, "split sizes add up to %s, but the dimension has size %s", S(c, sum), S(c, t->dims[d]));
  } else {
    int64_t total, k = P(c, "split_size")->i;
    if (!coil_sym_is_const(t->dims[d], &total))
      return ierr(c, NULL, "split of a symbolic size is not supported");
    if (k < 0 || (k == 0 && total > 0))
      return ierr(c, P(c, "split_size"), "split_size must be positive");
    for (int64_t at = 0; at < total || (total == 0 && n == 0); at += k) {
      if (n == 256)
        return ierr(c, NULL, "at most 256 pieces");
      sizes[n++] = total - at < k ? total - at : k;
      if (total - at <= k)
        break; /* the last piece: stop before at + k can overflow */
    }
  }
  coil_type *e = set_tuple(c, n);
  for (int i = 0; i < n; i++) {
    e[i].dtype = t->dtype;
    e[i].rank = t->rank;
    memcpy(e[i].dims, t->dims, sizeof t->dims);
    e[i].dims[d] = K(c, sizes[i]);
  }
  return 0;
}

static int
r_pad(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  coil_lit *l = P(c, "pad");
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  if (l->n % 2 || l->n / 2 > t->rank)
    return ierr(c, l, "pad needs an even number of entries, at most 2 per dimension");
  const coil_sym *dims[COIL_MAX_RANK];
  memcpy(dims, t->dims, sizeof dims);
  for (int i = 0; i < l->n / 2; i++) {
    int d = t->rank - 1 - i;
    int64_t v;
    if (__builtin_add_overflow(l->items[2 * i].i, l->items[2 * i + 1].i, &v))
      return ierr(c, l, "padding of dimension %d overflows", d);
    dims[d] = coil_sym_add(c->sc, dims[d], K(c, v));
    if (coil_sym_is_const(dims[d], &v) && v < 0)
      return ierr(c, l, "padding makes dimension %d negative", d);
  }
  set_tensor(c, t->dtype, t->rank, dims);
  return 0;
}

int
r_index(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  coil_lit *l = P(c, "indices");
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  if (l->n > t->rank)
    return ierr(c, l, "too many indices (%d) for a tensor of rank %d", l->n, t->rank);
  int brank = 0, first = -1, last = -1, nindexed = 0;
  const coil_sym *bdims[COIL_MAX_RANK];
  for (int i = 0; i < l->n; i++) {
    if (l->items[i].kind == COIL_LIT_NONE)
      continue;
    const coil_type *it = &l->items[i].v->type;
    if (it->dtype != COIL_I64 && it->dtype != COIL_I32)
      return ierr(c, &l->items[i], "index tensors must be i64 or i32 (boolean masks are not supported)");
    if (broadcast(c, &brank, bdims, it))
      return -1;
    if (first < 0)
      first = i;
    last = i;
    nindexed++;
  }
  if (first < 0)
    return ierr(c, l, "needs at least one index tensor");
  bool adjacent = true;
  for (int i = first; i <= last; i++)
    if (l->items[i].kind == COIL_LIT_NONE)
      adjacent = false;
  const coil_sym *dims[COIL_MAX_RANK];
  int r = 0;
  if (t->rank - nindexed + brank > COIL_MAX_RANK)
    return ierr(c, l, "result would have more than %d dimensions", COIL_MAX_RANK);
  if (!adjacent) {
    for (int i = 0; i < brank; i++)
      dims[r++] = bdims[i];
    for (int i = 0; i < t->rank; i++)
      if (i >= l->n || l->items[i].kind == COIL_LIT_NONE)
        dims[r++] = t->dims[i];
  } else {
    for (int i = 0; i < first; i++)
      dims[r++] = t->dims[i];
    for (int i = 0; i < brank; i++)
      dims[r++] = bdims[i];
    for (int i = last + 1; i < t->rank; i++)
      dims[r++] = t->dims[i];
  }
  set_tensor(c, t->dtype, r, dims);
  return 0;
}

static int
r_gather(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self")), *ix = tensor_of(P(c, "index"));
  if (!t || !ix)
    return ierr(c, NULL, "self and index must be tensors");
  if (ix->dtype != COIL_I64)
    return ierr(c, P(c, "index"), "index must be an i64 tensor");
  if (ix->rank != t->rank && !(t->rank == 0 && ix->rank <= 1))
    return ierr(c, P(c, "index"), "index must have the rank of self (%d)", t->rank);
  int d;
  if (wrap_dim(c, P(c, "dim"), P(c, "dim")->i, t->rank, &d))
    return -1;
  set_tensor(c, t->dtype, ix->rank, ix->dims);
  return 0;
}

static int
r_embedding(ictx *c)
{
  const coil_type *w = tensor_of(P(c, "weight")), *ix = tensor_of(P(c, "indices"));
  if (!w || w->rank != 2)
    return ierr(c, P(c, "weight"), "weight must be a 2-D tensor");
  if (!ix || !coil_dtype_is_int(ix->dtype))
    return ierr(c, P(c, "indices"), "indices must be an integer tensor");
  if (ix->rank + 1 > COIL_MAX_RANK)
    return ierr(c, P(c, "indices"), "too many dimensions");
  const coil_sym *dims[COIL_MAX_RANK];
  memcpy(dims, ix->dims, sizeof(*dims) * (size_t)ix->rank);
  dims[ix->rank] = w->dims[1];
  set_tensor(c, w->dtype, ix->rank + 1, dims);
  return 0;
}

static int
r_matmul(ictx *c)
{
  int sub = c->n->op->sub;
  const coil_type *a = tensor_of(P(c, sub == 2 ? "mat1" : "self"));
  const coil_type *b = tensor_of(P(c, sub == 2 ? "mat2" : "mat2"));
  int want = sub == 1 ? 3 : 2;
  if (!a || !b || a->rank != want || b->rank != want)
    return ierr(c, NULL, "needs two %d-D tensors", want);
  if (a->dtype != b->dtype)
    return ierr(c, NULL, "operands have different dtypes (%s and %s)", coil_dtype_name(a->dtype),
                coil_dtype_name(b->dtype));
  int k = want - 1;
  if (!sym_eq(a->dims[k], b->dims[k - 1]))
    return ierr(c, NULL, "inner sizes differ: %s and %s", S(c, a->dims[k]), S(c, b->dims[k - 1]));
  if (sub == 1 && !sym_eq(a->dims[0], b->dims[0]))
    return ierr(c, NULL, "batch sizes differ: %s and %s", S(c, a->dims[0]), S(c, b->dims[0]));
  const coil_sym *dims[3];
  int r = 0;
  if (sub == 1)
    dims[r++] = a->dims[0];
  dims[r++] = a->dims[k - 1];
  dims[r++] = b->dims[k];
  if (sub == 2) {
    const coil_type *bias = tensor_of(P(c, "self"));
    if (!bias || bias->dtype != a->dtype)
      return ierr(c, P(c, "self"), "bias must be a tensor of dtype %s", coil_dtype_name(a->dtype));
    int rank = 2;
    const coil_sym *bd[COIL_MAX_RANK] = {dims[0], dims[1]};
    if (broadcast(c, &rank, bd, bias))
      return -1;
    if (rank != 2 || !sym_eq(bd[0], dims[0]) || !sym_eq(bd[1], dims[1]))
      return ierr(c, P(c, "self"), "bias does not broadcast to the product's shape");
  }
  set_tensor(c, a->dtype, r, dims);
  return 0;
}

/* out = (in + 2p - d*(k-1) - 1) // s + 1, or with ceil_mode rounding up while the last window
 * starts inside the input or left padding. */
int
window_out(ictx *c, const coil_sym *in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode,
           const coil_sym **out)
{
  if (k <= 0 || s <= 0 || d <= 0 || p < 0)
    return ierr(c, NULL, "kernel, stride and dilation must be positive and padding non-negative");
  if (k > INT32_MAX || s > INT32_MAX || d > INT32_MAX || p > INT32_MAX)
    return ierr(c, NULL, "kernel, stride, dilation and padding must be below 2^31");
  const coil_sym *num = coil_sym_add(c->sc, in, K(c, 2 * p - d * (k - 1) - 1));
  if (!ceil_mode) {
    *out = coil_sym_add(c->sc, coil_sym_floordiv(c->sc, num, K(c, s)), K(c, 1));
  } else {
    int64_t n;
    if (!coil_sym_is_const(in, &n))
      return ierr(c, NULL, "ceil_mode with a symbolic size is not supported");
    if (n > INT64_MAX / 2)
      return ierr(c, NULL, "ceil_mode with a size of 2^62 or more is not supported");
    int64_t span = n + 2 * p - d * (k - 1) - 1, q = span + s - 1;
    int64_t o = (q >= 0 ? q / s : (q - s + 1) / s) + 1; /* floor division */
    if ((o - 1) * s >= n + p)
      o--;
    *out = K(c, o);
  }
  int64_t v;
  if (coil_sym_is_const(*out, &v) && v <= 0)
    return ierr(c, NULL, "the output would be empty (size %lld): input too small for the window", (long long)v);
  return 0;
}

/* The output sizes of a convolution of input by weight (convolution and convolution_backward
 * share the arguments); *cout: its channels. */
int
conv_dims(ictx *c, const coil_sym **dims, int64_t *cout_out)
{
  const coil_type *x = tensor_of(P(c, "input")), *w = tensor_of(P(c, "weight"));
  if (!x || !w || x->rank < 3 || x->rank > 5 || w->rank != x->rank)
    return ierr(c, NULL, "input and weight must be tensors of equal rank 3 to 5 (N, C, spatial...)");
  if (x->dtype != w->dtype)
    return ierr(c, NULL, "input and weight have different dtypes");
  int nsp = x->rank - 2;
  int64_t st[3], pd[3], dl[3], op[3];
  int n1, n2, n3, n4;
  if (int_list(c, P(c, "stride"), st, &n1, 3) || int_list(c, P(c, "padding"), pd, &n2, 3) ||
      int_list(c, P(c, "dilation"), dl, &n3, 3) || int_list(c, P(c, "output_padding"), op, &n4, 3))
    return -1;
  if (n1 != nsp || n2 != nsp || n3 != nsp || (P(c, "transposed")->i && n4 != nsp))
    return ierr(c, NULL, "stride, padding and dilation need %d entries each", nsp);
  int64_t groups = P(c, "groups")->i, cin, wc, oc;
  if (groups <= 0)
    return ierr(c, P(c, "groups"), "groups must be positive");
  if (!coil_sym_is_const(x->dims[1], &cin) || !coil_sym_is_const(w->dims[1], &wc) ||
      !coil_sym_is_const(w->dims[0], &oc))
    return ierr(c, NULL, "channel counts must be constant");
  bool tr = P(c, "transposed")->i;
  int64_t cout = oc; /* transposed: weight is (in, out/groups, kernel...) */
  if (tr && __builtin_mul_overflow(wc, groups, &cout))
    return ierr(c, P(c, "groups"), "transposed: too many output channels");
  if (!tr && (cin % groups || cin / groups != wc || oc % groups))
    return ierr(c, P(c, "weight"), "weight has %lld input channels per group; input has %lld channels in %lld groups",
                (long long)wc, (long long)cin, (long long)groups);
  if (tr && (cin != oc || cin % groups))
    return ierr(c, P(c, "weight"), "transposed: weight's first size must equal the input channels (%lld)", (long long)cin);
  *cout_out = cout;
  dims[0] = x->dims[0];
  dims[1] = K(c, cout);
  for (int i = 0; i < nsp; i++) {
    int64_t k;
    if (!coil_sym_is_const(w->dims[2 + i], &k))
      return ierr(c, NULL, "kernel sizes must be constant");
    if (!tr) {
      if (window_out(c, x->dims[2 + i], k, st[i], pd[i], dl[i], false, &dims[2 + i]))
        return -1;
    } else {
      /* (in - 1)*s - 2p + d*(k-1) + output_padding + 1, with every term below 2^31 */
      if (st[i] <= 0 || dl[i] <= 0 || k <= 0 || pd[i] < 0 || op[i] < 0 || st[i] > INT32_MAX ||
          dl[i] > INT32_MAX || k > INT32_MAX || pd[i] > INT32_MAX || op[i] > INT32_MAX)
        return ierr(c, NULL, "transposed: stride, dilation and kernel must be positive and padding "
                             "non-negative, all below 2^31");
      const coil_sym *v = coil_sym_mul(c->sc, coil_sym_add(c->sc, x->dims[2 + i], K(c, -1)), K(c, st[i]));
      dims[2 + i] = coil_sym_add(c->sc, v, K(c, -2 * pd[i] + dl[i] * (k - 1) + op[i] + 1));
    }
  }
  return 0;
}

/* max_pool{2,3}d_with_indices (sub 0, 2) and avg_pool{2,3}d (sub 1, 3) over the last 2 or 3
 * dims; a list given with one entry holds for every spatial dim. */
static int
r_conv(ictx *c)
{
  const coil_type *x = tensor_of(P(c, "input"));
  const coil_sym *dims[COIL_MAX_RANK];
  int64_t cout;
  if (conv_dims(c, dims, &cout))
    return -1;
  if (P(c, "bias")->kind != COIL_LIT_NONE && check_vec(c, "bias", K(c, cout)))
    return -1;
  set_tensor(c, x->dtype, x->rank, dims);
  return 0;
}

/* The output sizes of a pooling window over x (self): x's dims with the last two pooled. The
 * backward ops take the same arguments (no dilation for avg_pool2d). */
int
pool_dims(ictx *c, const coil_type *x, int nsp, const coil_sym **dims)
{
  if (!x || (x->rank != nsp + 1 && x->rank != nsp + 2))
    return ierr(c, P(c, "self"), "input must be a %d-D or %d-D tensor", nsp + 1, nsp + 2);
  int64_t ks[3], st[3], pd[3], dl[3] = {1, 1, 1};
  int nk, ns, np, nd = nsp;
  if (int_list(c, P(c, "kernel_size"), ks, &nk, nsp) || int_list(c, P(c, "stride"), st, &ns, nsp) ||
      int_list(c, P(c, "padding"), pd, &np, nsp))
    return -1;
  if (P(c, "dilation") && int_list(c, P(c, "dilation"), dl, &nd, nsp))
    return -1;
  if (nk == 0 || np == 0 || nd == 0 || (nk != 1 && nk != nsp) || (ns > 1 && ns != nsp) ||
      (np != 1 && np != nsp) || (nd != 1 && nd != nsp))
    return ierr(c, NULL, "kernel_size, padding and dilation need 1 or %d entries (stride also 0)", nsp);
  for (int i = 1; i < nsp; i++) {
    if (nk == 1) ks[i] = ks[0];
    if (np == 1) pd[i] = pd[0];
    if (nd == 1) dl[i] = dl[0];
  }
  for (int i = 0; i < nsp; i++)
    st[i] = ns == 0 ? ks[i] : ns == 1 ? st[0] : st[i];
  for (int i = 0; i < nsp; i++)
    if (pd[i] > ks[i] / 2)
      return ierr(c, P(c, "padding"), "padding must be at most half the kernel size");
  memcpy(dims, x->dims, sizeof(*dims) * (size_t)x->rank);
  bool ceil_mode = P(c, "ceil_mode")->i;
  for (int i = 0; i < nsp; i++)
    if (window_out(c, x->dims[x->rank - nsp + i], ks[i], st[i], pd[i], dl[i], ceil_mode,
                   &dims[x->rank - nsp + i]))
      return -1;
  coil_lit *div = P(c, "divisor_override");
  if (div && div->kind == COIL_LIT_INT && div->i == 0)
    return ierr(c, div, "divisor_override must not be zero");
  return 0;
}

/* max pools (sub 0: 2-d, 2: 3-d) give values and indices, avg pools (1, 3) values */
static int
r_pool(ictx *c)
{
  const coil_type *x = tensor_of(P(c, "self"));
  const coil_sym *dims[COIL_MAX_RANK];
  if (pool_dims(c, x, c->n->op->sub >= 2 ? 3 : 2, dims))
    return -1;
  if (c->n->op->sub % 2 == 0) {
    coil_type *e = set_tuple(c, 2);
    for (int k = 0; k < 2; k++) {
      e[k].dtype = k ? COIL_I64 : x->dtype;
      e[k].rank = x->rank;
      memcpy(e[k].dims, dims, sizeof(*dims) * (size_t)x->rank);
    }
    return 0;
  }
  set_tensor(c, x->dtype, x->rank, dims);
  return 0;
}

/* cumsum: self's shape; dtype as given, else integers and bools widen to i64 (as torch) */
static int
r_cumsum(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  int d;
  if (wrap_dim(c, P(c, "dim"), P(c, "dim")->i, t->rank, &d))
    return -1;
  coil_lit *dt = P(c, "dtype");
  set_tensor(c, dt->kind == COIL_LIT_DTYPE ? dt->dtype : coil_dtype_is_float(t->dtype) ? t->dtype : COIL_I64, t->rank,
             t->dims);
  return 0;
}

static int
r_topk(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  int d;
  if (wrap_dim(c, P(c, "dim"), P(c, "dim")->i, t->rank, &d))
    return -1;
  int64_t k = P(c, "k")->i, size;
  if (k < 0 || (t->rank > 0 && coil_sym_is_const(t->dims[d], &size) && k > size))
    return ierr(c, P(c, "k"), "k = %lld is out of range for the dimension", (long long)k);
  coil_type *e = set_tuple(c, 2);
  for (int i = 0; i < 2; i++) {
    e[i].dtype = i ? COIL_I64 : t->dtype;
    e[i].rank = t->rank;
    memcpy(e[i].dims, t->dims, sizeof t->dims);
    if (t->rank > 0)
      e[i].dims[d] = K(c, k);
  }
  return 0;
}

static int
r_assert_meta(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "a"));
  if (!t)
    return ierr(c, P(c, "a"), "argument 'a' must be a tensor");
  coil_lit *dt = P(c, "dtype"), *size = P(c, "size");
  if (dt->kind == COIL_LIT_DTYPE && dt->dtype != t->dtype)
    return ierr(c, dt, "%%%s has dtype %s, the graph asserts %s", P(c, "a")->v->name,
                coil_dtype_name(t->dtype), coil_dtype_name(dt->dtype));
  if (size->kind == COIL_LIT_LIST) {
    bool ok = size->n == t->rank;
    for (int i = 0; ok && i < t->rank; i++)
      ok = sym_is(t->dims[i], size->items[i].i);
    if (!ok)
      return ierr(c, size, "%%%s does not have the asserted size", P(c, "a")->v->name);
  }
  c->n->out->type.kind = COIL_TYPE_NONE;
  return 0;
}

static int
r_getitem(ictx *c)
{
  coil_lit *self = P(c, "self"), *idx = P(c, "index");
  const coil_type *t = &self->v->type;
  if (t->kind != COIL_TYPE_TUPLE)
    return ierr(c, self, "%%%s is not a tuple (getitem takes an element of a multi-output op)", self->v->name);
  if (idx->i < 0 || idx->i >= t->nelems)
    return ierr(c, idx, "index %lld is out of range for a tuple of %d", (long long)idx->i, t->nelems);
  c->n->out->type = t->elems[idx->i];
  return 0;
}

typedef int (*rule_fn)(ictx *);
static const rule_fn rules[COIL_RULE_COUNT] = {
    [COIL_RULE_UNARY_SAME] = r_unary, [COIL_RULE_UNARY_FLOAT] = r_unary,
    [COIL_RULE_UNARY_BOOL] = r_unary, [COIL_RULE_BINARY] = r_binary,
    [COIL_RULE_BINARY_FLOAT] = r_binary, [COIL_RULE_COMPARE] = r_compare,
    [COIL_RULE_WHERE] = r_where, [COIL_RULE_CLAMP] = r_clamp, [COIL_RULE_TO_COPY] = r_to_copy,
    [COIL_RULE_FULL] = r_full, [COIL_RULE_FULL_LIKE] = r_full_like, [COIL_RULE_ARANGE] = r_arange,
    [COIL_RULE_REDUCE] = r_reduce, [COIL_RULE_VAR] = r_reduce, [COIL_RULE_ARG] = r_arg,
    [COIL_RULE_MINMAX_DIM] = r_arg, [COIL_RULE_SOFTMAX] = r_softmax,
    [COIL_RULE_LAYER_NORM] = r_layer_norm, [COIL_RULE_BATCH_NORM] = r_batch_norm,
    [COIL_RULE_RESHAPE] = r_reshape, [COIL_RULE_PERMUTE] = r_permute,
    [COIL_RULE_TRANSPOSE] = r_transpose, [COIL_RULE_EXPAND] = r_expand,
    [COIL_RULE_SLICE] = r_slice, [COIL_RULE_SELECT] = r_select, [COIL_RULE_SQUEEZE] = r_squeeze,
    [COIL_RULE_UNSQUEEZE] = r_unsqueeze, [COIL_RULE_CLONE] = r_clone, [COIL_RULE_COPY] = r_copy,
    [COIL_RULE_CAT] = r_cat, [COIL_RULE_SPLIT] = r_split, [COIL_RULE_PAD] = r_pad,
    [COIL_RULE_INDEX] = r_index, [COIL_RULE_GATHER] = r_gather,
    [COIL_RULE_EMBEDDING] = r_embedding, [COIL_RULE_MATMUL] = r_matmul,
    [COIL_RULE_CONV] = r_conv, [COIL_RULE_POOL] = r_pool, [COIL_RULE_TOPK] = r_topk, [COIL_RULE_CUMSUM] = r_cumsum,
    [COIL_RULE_ASSERT_META] = r_assert_meta, [COIL_RULE_GETITEM] = r_getitem,
    [COIL_RULE_POOL_BWD] = r_pool_bwd, [COIL_RULE_NORM_BWD] = r_norm_bwd,
    [COIL_RULE_SORT] = r_sort, [COIL_RULE_CDIST] = r_cdist,
    [COIL_RULE_CONV_BWD] = r_conv_bwd, [COIL_RULE_COL2IM] = r_col2im,
    [COIL_RULE_GRID_SAMPLE] = r_grid_sample, [COIL_RULE_EMBEDDING_BAG] = r_embedding_bag,
    [COIL_RULE_FLIP] = r_flip, [COIL_RULE_REPEAT] = r_repeat, [COIL_RULE_INDEX_SELECT] = r_index_select,
    [COIL_RULE_DIAGONAL] = r_diagonal, [COIL_RULE_AS_STRIDED] = r_as_strided, [COIL_RULE_EMPTY] = r_empty,
    [COIL_RULE_MODE_PAD] = r_mode_pad, [COIL_RULE_UPSAMPLE] = r_upsample,
    [COIL_RULE_GROUP_NORM] = r_group_norm, [COIL_RULE_BATCH_NORM_STATS] = r_batch_norm_stats,
    [COIL_RULE_DROPOUT] = r_dropout, [COIL_RULE_ADAPTIVE_POOL] = r_adaptive_pool,
    [COIL_RULE_SYM_SIZE] = r_sym_size,
    [COIL_RULE_SCATTER] = r_scatter, [COIL_RULE_INDEX_PUT] = r_index_put,
    [COIL_RULE_EMBEDDING_BWD] = r_embedding_bwd, [COIL_RULE_SELECT_SCATTER] = r_view_scatter,
    [COIL_RULE_SLICE_SCATTER] = r_view_scatter, [COIL_RULE_MASKED_SCATTER] = r_masked_scatter,
};

int
coil_infer_node(coil_graph *g, coil_node *n, coil_diag *d)
{
  ictx c = {.g = g, .n = n, .d = d, .sc = g->sym};
  if (bind(&c))
    return -1;
  if (coil_op_is_inplace(n->op) && !is_tensor_value(&n->bound[0]))
    return ierr(&c, &n->bound[0], "the first argument is written in place: it must be a tensor value, not a number");
  return rules[n->op->rule](&c);
}
