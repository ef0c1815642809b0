/* lower_shapes.c — lowering of the shape, padding, resampling and normalisation ops of the
 * Core ATen opset (their section of ops.def; the 3-D pools are in lower_pool.c).
 *
 * Every op here is an index function of its input, so each builds a lazy expression that fuses
 * into its producer and consumer like a view: flip, repeat, diagonal, as_strided and the
 * reflection / replication pads read their input at an index expression (as_strided over the
 * input's dense row-major buffer, so overlapping strides are just a gather); index_select and
 * the upsamplings read it at computed indices (indirect loads, checked at run time).
 * Upsampling computes its source index in the kernel's float arithmetic, as PyTorch's CPU
 * kernels do, so the same pixels are picked (nearest uses the integer floor(dst*in/out)
 * instead where that gives the same index for every dst); bilinear is one pointwise kernel with
 * four loads.
 * group_norm and the training batch norm are Welford reductions and a pointwise epilogue, as
 * native_layer_norm in lower_ops.c; native_dropout without randomness is a copy and a
 * constant mask (type inference refuses the random cases). */
#include <math.h>
#include <string.h>

#include "lower.h"

static const coil_sym *
K(lowering *L, int64_t v)
{
  return coil_sym_const(L->sym, v);
}

static int
wrap_dim(int64_t d, int rank)
{
  int r = rank > 0 ? rank : 1;
  return (int)(d < 0 ? d + r : d);
}

static int
param_of(const coil_node *n, const char *name)
{
  coil_schema s;
  coil_schema_parse(n->op, &s, NULL);
  return coil_schema_find(&s, name);
}

static int
finish(lowering *L, const coil_node *n, lazy *out, const coil_sym *const *idx, lazy *x)
{
  out->expr = lz_at(L, x, idx);
  op_set_value(L, n, out);
  return 0;
}

/* ---- index functions ---- */

static int
lower_flip(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *out = op_result(L, n, 0);
  const coil_lit *dims = op_lit(n, "dims");
  const coil_sym *idx[COIL_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    idx[i] = out->dvars[i];
  for (int k = 0; k < dims->n && x->rank > 0; k++) {
    int d = wrap_dim(dims->items[k].i, x->rank);
    idx[d] = coil_sym_sub(L->sym, coil_sym_add(L->sym, x->sizes[d], K(L, -1)), out->dvars[d]);
  }
  return finish(L, n, out, idx, x);
}

static int
lower_repeat(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *out = op_result(L, n, 0);
  const coil_lit *rep = op_lit(n, "repeats");
  const coil_sym *idx[COIL_MAX_RANK];
  int lead = out->rank - x->rank;
  for (int j = 0; j < x->rank; j++) {
    int64_t s;
    const coil_sym *v = out->dvars[lead + j];
    if (coil_sym_is_const(x->sizes[j], &s) && s == 1)
      idx[j] = K(L, 0);
    else if (rep->items[lead + j].i == 1)
      idx[j] = v;
    else
      idx[j] = coil_sym_mod(L->sym, v, x->sizes[j]);
  }
  return finish(L, n, out, idx, x);
}

static int
lower_diagonal(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *out = op_result(L, n, 0);
  int a = wrap_dim(op_lit(n, "dim1")->i, x->rank), b = wrap_dim(op_lit(n, "dim2")->i, x->rank);
  int64_t off = op_lit(n, "offset")->i;
  const coil_sym *k = out->dvars[out->rank - 1], *idx[COIL_MAX_RANK];
  for (int d = 0, j = 0; d < x->rank; d++) {
    if (d == a)
      idx[d] = coil_sym_add(L->sym, k, K(L, off < 0 ? -off : 0));
    else if (d == b)
      idx[d] = coil_sym_add(L->sym, k, K(L, off > 0 ? off : 0));
    else
      idx[d] = out->dvars[j++];
  }
  return finish(L, n, out, idx, x);
}

/* as_strided: element idx is storage[offset + sum idx[d]*stride[d]] of x's dense buffer (type
 * inference checked that it stays inside). A load at an affine index: no copy is made unless
 * a consumer needs one, and overlapping strides read the same element twice. */
static int
lower_as_strided(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *out = op_result(L, n, 0);
  const coil_lit *st = op_lit(n, "stride"), *lo = op_lit(n, "storage_offset");
  const coil_sym *flat = K(L, lo->kind == COIL_LIT_INT ? lo->i : 0);
  for (int d = 0; d < out->rank; d++)
    flat = coil_sym_add(L->sym, flat, coil_sym_mul(L->sym, out->dvars[d], K(L, st->items[d].i)));
  out->expr = lx_load(L, coil_lower_buffer_of(L, x), flat);
  op_set_value(L, n, out);
  return 0;
}

/* reflection (sub 0): s = j - left read at (n-1) - |(n-1) - |s||, which is -s left of the
 * input and 2(n-1) - s right of it (padding < n, so one reflection suffices); replication
 * (sub 1): s clamped into [0, n-1]. */
static int
lower_mode_pad(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *out = op_result(L, n, 0);
  const coil_lit *pad = op_lit(n, "padding");
  bool reflect = n->op->sub == 0;
  const coil_sym *idx[COIL_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    idx[i] = out->dvars[i];
  for (int p = 0; p < pad->n / 2; p++) {
    int d = x->rank - 1 - p;
    const coil_sym *s = coil_sym_sub(L->sym, out->dvars[d], K(L, pad->items[2 * p].i));
    if (!reflect) {
      idx[d] = clamped_index(L, s, x->sizes[d]);
      continue;
    }
    const coil_sym *last = coil_sym_add(L->sym, x->sizes[d], K(L, -1));
    const coil_sym *abs_s = coil_sym_max(L->sym, s, coil_sym_neg(L->sym, s));
    const coil_sym *t = coil_sym_sub(L->sym, last, abs_s);
    idx[d] = coil_sym_sub(L->sym, last, coil_sym_max(L->sym, t, coil_sym_neg(L->sym, t)));
  }
  return finish(L, n, out, idx, x);
}

static int
lower_index_select(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *ix = op_arg(L, n, param_of(n, "index")), *out = op_result(L, n, 0);
  int d = wrap_dim(op_lit(n, "dim")->i, x->rank);
  int b = coil_lower_buffer_of(L, x);
  const coil_sym *zero = K(L, 0);
  const lexpr *v = lx_cast(L, lz_at(L, ix, ix->rank ? &out->dvars[d] : &zero), COIL_I64);
  const lexpr *q = lx_indirect(L, v, x->sizes[d]);
  const coil_sym *at[COIL_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    at[i] = i == d ? q->index : out->dvars[i];
  out->expr = lx_load_at(L, b, coil_lower_row_major(L, x->rank, x->sizes, at), 1, &q);
  op_set_value(L, n, out);
  return 0;
}

static int
lower_empty(lowering *L, const coil_node *n)
{
  lazy *out = op_result(L, n, 0);
  out->expr = lx_const(L, out->dtype, 0, 0); /* zeros: coil's value for uninitialised memory */
  op_set_value(L, n, out);
  return 0;
}

/* ---- upsampling ---- */

/* A number as the kernel's opmath type holds it: f32 unless f64. */
static double
opm(coil_dtype acc, double v)
{
  return acc == COIL_F64 ? v : (double)(float)v;
}

/* PyTorch's compute_scales_value: 1/scale_factor when one was given, else in/out. */
static double
scales_value(coil_dtype acc, const coil_lit *sf, int i, int64_t in, int64_t out)
{
  if (sf->kind == COIL_LIT_LIST && sf->items[i].f > 0)
    return opm(acc, 1.0 / sf->items[i].f);
  return opm(acc, opm(acc, (double)in) / opm(acc, (double)out));
}

static const lexpr *
fconst(lowering *L, coil_dtype acc, double v)
{
  return lx_const(L, acc, v, 0);
}

/* One source coordinate of an upsampling: an index expression where it is exact in integers,
 * else an indirect value computed in float. */
typedef struct src {
  const coil_sym *at[2];    /* index in the input: the lower and upper neighbour */
  const lexpr *q[2];        /* their indirect values, or NULL */
  const lexpr *w[2];        /* weights (bilinear) */
} src;

static const lexpr *
dst_as(lowering *L, const coil_sym *dvar, coil_dtype acc)
{
  return lx_cast(L, lx_index(L, dvar), acc);
}

/* nearest: out == in copies, out == 2*in halves, else min(floor(dst * scale), in - 1) with the
 * product in f32 (PyTorch's nearest_idx). */
static void
nearest_src(lowering *L, const coil_sym *dvar, int64_t in, int64_t on, double scale, src *s)
{
  memset(s, 0, sizeof *s);
  if (on == in) {
    s->at[0] = dvar;
    return;
  }
  if (on == 2 * in) {
    s->at[0] = coil_sym_floordiv(L->sym, dvar, K(L, 2));
    return;
  }
  /* where the f32 formula gives floor(dst * in / out) for every dst (as it usually does when
   * the scale is in/out), that integer index expression, which needs no float arithmetic; the
   * check runs the kernel's own f32 operations here */
  bool exact = true;
  for (int64_t d = 0; d < on && exact; d++) {
    float f = (float)d * (float)scale;
    int64_t v = (int64_t)floorf(f);
    exact = (v < in - 1 ? v : in - 1) == d * in / on;
  }
  if (exact) {
    s->at[0] = coil_sym_floordiv(L->sym, coil_sym_mul(L->sym, dvar, K(L, in)), K(L, on));
    return;
  }
  const lexpr *f = lx_op(L, COIL_KOP_MUL, COIL_F32, dst_as(L, dvar, COIL_F32), fconst(L, COIL_F32, scale), NULL);
  const lexpr *i = lx_cast(L, lx_op(L, COIL_KOP_FLOOR, COIL_F32, f, NULL, NULL), COIL_I64);
  i = lx_op(L, COIL_KOP_MIN, COIL_I64, i, lx_const(L, COIL_I64, 0, in - 1), NULL);
  s->q[0] = lx_indirect(L, i, K(L, in));
  s->at[0] = s->q[0]->index;
}

/* bilinear (PyTorch's compute_source_index_and_lambda): out == in copies; else the source
 * coordinate real = ratio*dst (align_corners) or max(ratio*(dst + 0.5) - 0.5, 0), the lower
 * neighbour i0 = min(floor(real), in - 1), the upper one i0 + 1 (i0 at the last row), and the
 * weights 1 - l, l with l = clamp(real - i0, 0, 1); all in the opmath type. */
static void
linear_src(lowering *L, const coil_sym *dvar, int64_t in, int64_t on, bool align, double scale, coil_dtype acc,
           src *s)
{
  memset(s, 0, sizeof *s);
  if (on == in) {
    s->at[0] = s->at[1] = dvar;
    s->w[0] = fconst(L, acc, 1);
    s->w[1] = fconst(L, acc, 0);
    return;
  }
  double ratio = align ? (on > 1 ? opm(acc, opm(acc, (double)(in - 1)) / opm(acc, (double)(on - 1))) : 0.0) : scale;
  const lexpr *real;
  if (align) {
    real = lx_op(L, COIL_KOP_MUL, acc, fconst(L, acc, ratio), dst_as(L, dvar, acc), NULL);
  } else {
    const lexpr *c = lx_op(L, COIL_KOP_ADD, acc, dst_as(L, dvar, acc), fconst(L, acc, 0.5), NULL);
    real = lx_op(L, COIL_KOP_SUB, acc, lx_op(L, COIL_KOP_MUL, acc, fconst(L, acc, ratio), c, NULL),
                 fconst(L, acc, 0.5), NULL);
    real = lx_op(L, COIL_KOP_MAX, acc, real, fconst(L, acc, 0), NULL);
  }
  const lexpr *last = lx_const(L, COIL_I64, 0, in - 1);
  const lexpr *i0 = lx_op(L, COIL_KOP_MIN, COIL_I64,
                          lx_cast(L, lx_op(L, COIL_KOP_FLOOR, acc, real, NULL, NULL), COIL_I64), last, NULL);
  const lexpr *i1 = lx_op(L, COIL_KOP_MIN, COIL_I64, lx_op(L, COIL_KOP_ADD, COIL_I64, i0, lx_const(L, COIL_I64, 0, 1), NULL),
                          last, NULL);
  const lexpr *l = lx_op(L, COIL_KOP_SUB, acc, real, lx_cast(L, i0, acc), NULL);
  l = lx_op(L, COIL_KOP_MIN, acc, lx_op(L, COIL_KOP_MAX, acc, l, fconst(L, acc, 0), NULL), fconst(L, acc, 1), NULL);
  s->w[1] = l;
  s->w[0] = lx_op(L, COIL_KOP_SUB, acc, fconst(L, acc, 1), l, NULL);
  for (int k = 0; k < 2; k++) {
    s->q[k] = lx_indirect(L, k ? i1 : i0, K(L, in));
    s->at[k] = s->q[k]->index;
  }
}

/* x's element at (n, c, h.at[a], w.at[b]) in dtype dt */
static const lexpr *
pixel(lowering *L, int buf, const lazy *x, const lazy *out, const src *h, int a, const src *w, int b, coil_dtype dt)
{
  const coil_sym *at[4] = {out->dvars[0], out->dvars[1], h->at[a], w->at[b]};
  const lexpr *qs[2];
  int nq = 0;
  if (h->q[a])
    qs[nq++] = h->q[a];
  if (w->q[b])
    qs[nq++] = w->q[b];
  return lx_cast(L, lx_load_at(L, buf, coil_lower_row_major(L, 4, x->sizes, at), nq, qs), dt);
}

static int
lower_upsample(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *out = op_result(L, n, 0);
  const coil_lit *sf = op_lit(n, "scale_factors");
  bool bilinear = n->op->sub == 1;
  int64_t in[2], on[2];
  for (int i = 0; i < 2; i++) {
    coil_sym_is_const(x->sizes[2 + i], &in[i]);
    coil_sym_is_const(out->sizes[2 + i], &on[i]);
  }
  int buf = coil_lower_buffer_of(L, x);
  src s[2];
  if (!bilinear) {
    for (int i = 0; i < 2; i++)
      nearest_src(L, out->dvars[2 + i], in[i], on[i], scales_value(COIL_F32, sf, i, in[i], on[i]), &s[i]);
    out->expr = pixel(L, buf, x, out, &s[0], 0, &s[1], 0, out->dtype);
    op_set_value(L, n, out);
    return 0;
  }
  coil_dtype acc = opmath_dtype(out->dtype);
  bool align = op_lit(n, "align_corners")->i;
  for (int i = 0; i < 2; i++)
    linear_src(L, out->dvars[2 + i], in[i], on[i], align, scales_value(acc, sf, i, in[i], on[i]), acc, &s[i]);
  const lexpr *rows[2];
  for (int a = 0; a < 2; a++) /* w0 * x[h_a, w0] + w1 * x[h_a, w1] */
    rows[a] = lx_op(L, COIL_KOP_ADD, acc,
                    lx_op(L, COIL_KOP_MUL, acc, s[1].w[0], pixel(L, buf, x, out, &s[0], a, &s[1], 0, acc), NULL),
                    lx_op(L, COIL_KOP_MUL, acc, s[1].w[1], pixel(L, buf, x, out, &s[0], a, &s[1], 1, acc), NULL), NULL);
  const lexpr *v = lx_op(L, COIL_KOP_ADD, acc, lx_op(L, COIL_KOP_MUL, acc, s[0].w[0], rows[0], NULL),
                         lx_op(L, COIL_KOP_MUL, acc, s[0].w[1], rows[1], NULL), NULL);
  out->expr = lx_cast(L, v, out->dtype);
  op_set_value(L, n, out);
  return 0;
}

/* ---- normalisation ---- */

static lazy *
as_acc(lowering *L, const lazy *x, coil_dtype acc)
{
  lazy *z = lz_new(L, acc, x->rank, x->sizes);
  z->expr = lx_cast(L, lz_at(L, x, z->dvars), acc);
  return z;
}

static const lexpr *
vec_at(lowering *L, lazy *v, const coil_sym *i, coil_dtype dt)
{
  return lx_cast(L, lz_at(L, v, &i), dt);
}

/* (x - mean) * rstd, then * w[c] + b[c] where given */
static const lexpr *
normalised(lowering *L, const lexpr *x, const lexpr *mean, const lexpr *rstd, lazy *w, lazy *b, const coil_sym *c,
           coil_dtype acc)
{
  const lexpr *v = lx_op(L, COIL_KOP_MUL, acc, lx_op(L, COIL_KOP_SUB, acc, x, mean, NULL), rstd, NULL);
  if (w)
    v = lx_op(L, COIL_KOP_MUL, acc, v, vec_at(L, w, c, acc), NULL);
  if (b)
    v = lx_op(L, COIL_KOP_ADD, acc, v, vec_at(L, b, c, acc), NULL);
  return v;
}

/* rsqrt(m2 / count + eps) */
static const lexpr *
rstd_of(lowering *L, const lexpr *m2, const lexpr *cnt, double eps, coil_dtype acc)
{
  return lx_op(L, COIL_KOP_RSQRT, acc,
               lx_op(L, COIL_KOP_ADD, acc, lx_op(L, COIL_KOP_DIV, acc, m2, cnt, NULL), fconst(L, acc, eps), NULL),
               NULL, NULL);
}

/* group_norm: x viewed as [N, G, C/G * HxW] (row-major), Welford mean and m2 over the last dim. */
static int
lower_group_norm(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *w = op_arg(L, n, 1), *b = op_arg(L, n, 2);
  int64_t G = op_lit(n, "group")->i, C;
  double eps = op_lit(n, "eps")->f;
  coil_sym_is_const(x->sizes[1], &C);
  coil_dtype acc = opmath_dtype(x->dtype);
  const coil_sym *hw = K(L, 1);
  for (int i = 2; i < x->rank; i++)
    hw = coil_sym_mul(L->sym, hw, x->sizes[i]);
  const coil_sym *per = coil_sym_mul(L->sym, K(L, C / G), hw);
  const coil_sym *gs[3] = {x->sizes[0], K(L, G), per};
  lazy *y = lz_new(L, acc, 3, gs);
  { /* y[n, g, k] = x[n, g*C/G + k / HxW, the position k % HxW unravelled] */
    const coil_sym *idx[COIL_MAX_RANK], *k = y->dvars[2];
    idx[0] = y->dvars[0];
    idx[1] = coil_sym_add(L->sym, coil_sym_mul(L->sym, y->dvars[1], K(L, C / G)), coil_sym_floordiv(L->sym, k, hw));
    const coil_sym *pos = coil_sym_mod(L->sym, k, hw), *stride = K(L, 1);
    for (int i = x->rank - 1; i >= 2; i--) {
      idx[i] = coil_sym_mod(L->sym, coil_sym_floordiv(L->sym, pos, stride), x->sizes[i]);
      stride = coil_sym_mul(L->sym, stride, x->sizes[i]);
    }
    y->expr = lx_cast(L, lz_at(L, x, idx), acc);
  }
  bool red[COIL_MAX_RANK] = {false, false, true};
  lazy *mean = lz_reduce(L, y, red, true, COIL_REDUCE_WELFORD_MEAN, acc);
  lazy *m2 = lz_reduce(L, y, red, true, COIL_REDUCE_WELFORD_M2, acc);
  const lexpr *cnt = lx_cast(L, lx_index(L, per), acc);
  lazy *outs[3] = {op_result(L, n, 0), op_result(L, n, 1), op_result(L, n, 2)};
  lazy *o = outs[0];
  const coil_sym *at[3] = {o->dvars[0], coil_sym_floordiv(L->sym, o->dvars[1], K(L, C / G)), K(L, 0)};
  const lexpr *v = normalised(L, lx_cast(L, lz_at(L, x, o->dvars), acc), lz_at(L, mean, at),
                              rstd_of(L, lz_at(L, m2, at), cnt, eps, acc), w, b, o->dvars[1], acc);
  o->expr = lx_cast(L, v, o->dtype);
  for (int k = 1; k < 3; k++) {
    const coil_sym *si[3] = {outs[k]->dvars[0], outs[k]->dvars[1], K(L, 0)};
    const lexpr *e = k == 1 ? lz_at(L, mean, si) : rstd_of(L, lz_at(L, m2, si), cnt, eps, acc);
    outs[k]->expr = lx_cast(L, e, outs[k]->dtype);
  }
  op_set_tuple(L, n, outs);
  return 0;
}

/* _native_batch_norm_legit: training, the batch's statistics per channel (Welford over every
 * dim but 1); evaluation, the running ones. The running statistics are only read. */
static int
lower_batch_norm_stats(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *w = op_arg(L, n, 1), *b = op_arg(L, n, 2);
  bool training = op_lit(n, "training")->i;
  double eps = op_lit(n, "eps")->f;
  coil_dtype acc = opmath_dtype(x->dtype);
  lazy *outs[3] = {op_result(L, n, 0), op_result(L, n, 1), op_result(L, n, 2)};
  lazy *o = outs[0];
  const coil_sym *c = o->dvars[1];
  const lexpr *xv = lx_cast(L, lz_at(L, x, o->dvars), acc);
  if (!training) {
    lazy *rm = op_arg(L, n, 3), *rv = op_arg(L, n, 4);
    const lexpr *rstd = lx_op(L, COIL_KOP_RSQRT, acc,
                              lx_op(L, COIL_KOP_ADD, acc, vec_at(L, rv, c, acc), fconst(L, acc, eps), NULL), NULL, NULL);
    o->expr = lx_cast(L, normalised(L, xv, vec_at(L, rm, c, acc), rstd, w, b, c, acc), o->dtype);
    for (int k = 1; k < 3; k++) /* empty */
      outs[k]->expr = lx_const(L, outs[k]->dtype, 0, 0);
    op_set_tuple(L, n, outs);
    return 0;
  }
  bool red[COIL_MAX_RANK];
  const coil_sym *count = K(L, 1);
  for (int i = 0; i < COIL_MAX_RANK; i++)
    red[i] = i < x->rank && i != 1;
  for (int i = 0; i < x->rank; i++)
    if (i != 1)
      count = coil_sym_mul(L->sym, count, x->sizes[i]);
  lazy *xf = as_acc(L, x, acc);
  lazy *mean = lz_reduce(L, xf, red, true, COIL_REDUCE_WELFORD_MEAN, acc);
  lazy *m2 = lz_reduce(L, xf, red, true, COIL_REDUCE_WELFORD_M2, acc);
  const lexpr *cnt = lx_cast(L, lx_index(L, count), acc);
  const coil_sym *at[COIL_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    at[i] = i == 1 ? c : K(L, 0);
  o->expr = lx_cast(L, normalised(L, xv, lz_at(L, mean, at), rstd_of(L, lz_at(L, m2, at), cnt, eps, acc), w, b, c, acc),
                    o->dtype);
  for (int k = 1; k < 3; k++) {
    for (int i = 0; i < x->rank; i++)
      at[i] = i == 1 ? outs[k]->dvars[0] : K(L, 0);
    const lexpr *e = k == 1 ? lz_at(L, mean, at) : rstd_of(L, lz_at(L, m2, at), cnt, eps, acc);
    outs[k]->expr = lx_cast(L, e, outs[k]->dtype);
  }
  op_set_tuple(L, n, outs);
  return 0;
}

/* native_dropout as type inference lets it through: keep all (evaluation, p = 0) or, training
 * with p = 1, x * 0 * 0 (NaN where x is inf or NaN, as PyTorch) with a mask of false. */
static int
lower_dropout(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0);
  lazy *outs[2] = {op_result(L, n, 0), op_result(L, n, 1)};
  const coil_lit *tr = op_lit(n, "train");
  bool drop_all = (tr->kind == COIL_LIT_NONE || tr->i) && op_lit(n, "p")->f == 1.0;
  const lexpr *v = lz_at(L, x, outs[0]->dvars);
  if (drop_all) {
    coil_dtype acc = opmath_dtype(x->dtype);
    const lexpr *zero = fconst(L, acc, 0);
    v = lx_cast(L, lx_op(L, COIL_KOP_MUL, acc, lx_op(L, COIL_KOP_MUL, acc, lx_cast(L, v, acc), zero, NULL), zero, NULL),
                outs[0]->dtype);
  }
  outs[0]->expr = v;
  outs[1]->expr = lx_const(L, COIL_BOOL, 0, !drop_all);
  op_set_tuple(L, n, outs);
  return 0;
}

/* sym_size.int, sym_numel: the size (an index expression of the program's size symbols) */
static int
lower_sym_size(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *out = op_result(L, n, 0);
  const coil_sym *v = K(L, 1);
  if (n->op->sub == 0)
    v = x->sizes[wrap_dim(op_lit(n, "dim")->i, x->rank)];
  else
    for (int i = 0; i < x->rank; i++)
      v = coil_sym_mul(L->sym, v, x->sizes[i]);
  out->expr = lx_index(L, v);
  op_set_value(L, n, out);
  return 0;
}

int
coil_lower_shapes(lowering *L, const coil_node *n)
{
  switch (n->op->rule) {
  case COIL_RULE_FLIP: return lower_flip(L, n);
  case COIL_RULE_REPEAT: return lower_repeat(L, n);
  case COIL_RULE_INDEX_SELECT: return lower_index_select(L, n);
  case COIL_RULE_DIAGONAL: return lower_diagonal(L, n);
  case COIL_RULE_AS_STRIDED: return lower_as_strided(L, n);
  case COIL_RULE_EMPTY: return lower_empty(L, n);
  case COIL_RULE_MODE_PAD: return lower_mode_pad(L, n);
  case COIL_RULE_UPSAMPLE: return lower_upsample(L, n);
  case COIL_RULE_GROUP_NORM: return lower_group_norm(L, n);
  case COIL_RULE_BATCH_NORM_STATS: return lower_batch_norm_stats(L, n);
  case COIL_RULE_DROPOUT: return lower_dropout(L, n);
  case COIL_RULE_SYM_SIZE: return lower_sym_size(L, n);
  default: return coil_diag_at(L->d, L->g->file, n->line, n->col, "%s: not an op of lower_shapes.c", n->op->name);
  }
}
