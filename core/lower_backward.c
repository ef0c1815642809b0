/* lower_backward.c — backward ops as gather-style reductions: each element of a gradient sums
 * the elements of grad_output that depend on it, read where they lie, so a kernel writes each
 * element once (no scatter, no atomics) and every plugin runs it as a plain reduction.
 *
 * Pooling: input element (.., h, w) receives from the windows that cover it. Along one dim, a
 * window o covers h when h = o*s - p + k*d for a kernel offset k; the lowering reduces over the
 * few candidates o (one per kernel offset, or per multiple of the stride) with a mask that says
 * whether o exists and covers h, reading grad_output at a clamped o:
 *   max_pool2d_with_indices_backward  over (kh, kw): o = (h + p - kh*d) / s where s divides it,
 *                                     counted where indices[o] is h*W + w (PyTorch's argmax)
 *   avg_pool2d_backward               over j < ceil(k/s): o = floor((h + p)/s) - j, where
 *                                     h < o*s - p + k; grad_output[o] / the forward's divisor
 *   _adaptive_avg_pool2d_backward     over j: o = floor(h*OH/H) + j, where h lies in
 *                                     [floor(o*H/OH), ceil((o+1)*H/OH)); / the window's area
 * Convolution backward (1-D to 3-D, groups, transposed): grad_input[n, ci, i] sums grad_output
 * times weight over (output channel of ci's group, kernel offset k), at the output position
 * whose term k reads i (o = (i + p - k*d) / s where s divides it; transposed, o = i*s - p + k*d);
 * grad_weight sums grad_output times input over (batch, positions) the term k links; grad_bias
 * sums grad_output over all but the channels. Where the loop IR has no room for the reduced dims
 * (3-D) they are one dim of their product, indexed by division and modulo.
 * Normalisation backward (layer, group): reductions of grad_out and x̂ = (x - mean) * rstd over
 * each normalised row or (sample, group), then a pointwise grad_input; grad_weight and
 * grad_bias reduce over the other dims. All three outputs are computed as tensors whatever
 * output_mask says (coil has no None value; an output nobody reads is dead code). */
#include "lower.h"

static const coil_sym *
K(lowering *L, int64_t v)
{
  return coil_sym_const(L->sym, v);
}

static const lexpr *
both(lowering *L, const lexpr *a, const lexpr *b)
{
  return a ? lx_op(L, COIL_KOP_AND, COIL_BOOL, a, b, NULL) : b;
}

static int64_t
item(const coil_lit *l, int i, int64_t dflt)
{
  return l && l->n ? l->items[l->n > i ? i : 0].i : dflt;
}

/* A lazy over out's dims and two more (the candidates along rows and columns, c0 and c1). */
static lazy *
candidates(lowering *L, const lazy *out, coil_dtype dt, const coil_sym *c0, const coil_sym *c1, bool *red)
{
  const coil_sym *sizes[COIL_MAX_RANK];
  for (int i = 0; i < out->rank; i++)
    sizes[i] = out->sizes[i];
  sizes[out->rank] = c0;
  sizes[out->rank + 1] = c1;
  for (int i = 0; i < COIL_MAX_RANK; i++)
    red[i] = i >= out->rank && i < out->rank + 2;
  return lz_new(L, dt, out->rank + 2, sizes);
}

/* grad_output's element at window (o0, o1) of e's leading dims (o clamped into grad_output) */
static const coil_sym **
window_index(lowering *L, const lazy *e, const lazy *g, const coil_sym *const *o, const coil_sym **idx)
{
  int r = g->rank;
  for (int i = 0; i < r - 2; i++)
    idx[i] = e->dvars[i];
  for (int i = 0; i < 2; i++)
    idx[r - 2 + i] = clamped_index(L, o[i], g->sizes[r - 2 + i]);
  return idx;
}

static int
lower_max_pool_bwd(lowering *L, const coil_node *n)
{
  lazy *g = op_arg(L, n, 0), *ix = op_arg(L, n, 7), *out = op_result(L, n, 0);
  const coil_lit *lk = op_lit(n, "kernel_size"), *ls = op_lit(n, "stride"), *lp = op_lit(n, "padding"),
                 *ld = op_lit(n, "dilation");
  coil_dtype acc = opmath_dtype(out->dtype);
  int r = out->rank;
  int64_t k[2] = {item(lk, 0, 1), item(lk, 1, 1)};
  bool red[COIL_MAX_RANK];
  lazy *e = candidates(L, out, acc, K(L, k[0]), K(L, k[1]), red);
  const coil_sym *o[2], *idx[COIL_MAX_RANK];
  const lexpr *ok = NULL;
  for (int i = 0; i < 2; i++) {
    int64_t s = item(ls, i, k[i]), p = item(lp, i, 0), d = item(ld, i, 1);
    const coil_sym *t = coil_sym_sub(L->sym, coil_sym_add(L->sym, e->dvars[r - 2 + i], K(L, p)),
                                     coil_sym_mul(L->sym, e->dvars[r + i], K(L, d)));
    o[i] = s == 1 ? t : coil_sym_floordiv(L->sym, t, K(L, s));
    if (s != 1)
      ok = both(L, ok, lx_op(L, COIL_KOP_EQ, COIL_BOOL, lx_index(L, coil_sym_mod(L->sym, t, K(L, s))),
                             lx_const(L, COIL_I64, 0, 0), NULL));
    ok = both(L, ok, lx_in_range(L, o[i], K(L, 0), g->sizes[r - 2 + i]));
  }
  window_index(L, e, g, o, idx);
  const coil_sym *plane = coil_sym_add(L->sym, coil_sym_mul(L->sym, e->dvars[r - 2], out->sizes[r - 1]), e->dvars[r - 1]);
  ok = both(L, ok, lx_op(L, COIL_KOP_EQ, COIL_BOOL, lx_cast(L, lz_at(L, ix, idx), COIL_I64), lx_index(L, plane), NULL));
  e->expr = lx_op(L, COIL_KOP_WHERE, acc, ok, lx_cast(L, lz_at(L, g, idx), acc), lx_const(L, acc, 0, 0));
  lazy *sum = lz_reduce(L, e, red, false, COIL_REDUCE_SUM, acc);
  out->expr = lx_cast(L, lz_at(L, sum, out->dvars), out->dtype);
  op_set_value(L, n, out);
  return 0;
}

static int
lower_avg_pool_bwd(lowering *L, const coil_node *n)
{
  lazy *g = op_arg(L, n, 0), *out = op_result(L, n, 0);
  const coil_lit *lk = op_lit(n, "kernel_size"), *ls = op_lit(n, "stride"), *lp = op_lit(n, "padding");
  const coil_lit *over = op_lit(n, "divisor_override");
  bool include_pad = op_lit(n, "count_include_pad")->i;
  coil_dtype acc = opmath_dtype(out->dtype);
  int r = out->rank;
  int64_t k[2], s[2], p[2];
  for (int i = 0; i < 2; i++) {
    k[i] = item(lk, i, 1);
    s[i] = item(ls, i, k[i]);
    p[i] = item(lp, i, 0);
  }
  bool red[COIL_MAX_RANK];
  lazy *e = candidates(L, out, acc, K(L, (k[0] + s[0] - 1) / s[0]), K(L, (k[1] + s[1] - 1) / s[1]), red);
  const coil_sym *o[2], *idx[COIL_MAX_RANK], *div = K(L, 1);
  const lexpr *ok = NULL;
  for (int i = 0; i < 2; i++) {
    const coil_sym *h = e->dvars[r - 2 + i], *size = out->sizes[r - 2 + i];
    o[i] = coil_sym_sub(L->sym, coil_sym_floordiv(L->sym, coil_sym_add(L->sym, h, K(L, p[i])), K(L, s[i])), e->dvars[r + i]);
    ok = both(L, ok, lx_in_range(L, o[i], K(L, 0), g->sizes[r - 2 + i]));
    const coil_sym *oc = clamped_index(L, o[i], g->sizes[r - 2 + i]);
    const coil_sym *start = coil_sym_sub(L->sym, coil_sym_mul(L->sym, oc, K(L, s[i])), K(L, p[i]));
    const coil_sym *win_end = coil_sym_add(L->sym, start, K(L, k[i]));
    ok = both(L, ok, lx_op(L, COIL_KOP_LT, COIL_BOOL, lx_index(L, h), lx_index(L, win_end), NULL));
    /* the forward's divisor for window oc (as lower_pool.c) */
    const coil_sym *end = coil_sym_min(L->sym, win_end, coil_sym_add(L->sym, size, K(L, p[i])));
    if (!include_pad) {
      start = coil_sym_max(L->sym, start, K(L, 0));
      end = coil_sym_min(L->sym, end, size);
    }
    div = coil_sym_mul(L->sym, div, coil_sym_sub(L->sym, end, start));
  }
  if (over->kind == COIL_LIT_INT)
    div = K(L, over->i);
  window_index(L, e, g, o, idx);
  const lexpr *v = lx_op(L, COIL_KOP_DIV, acc, lx_cast(L, lz_at(L, g, idx), acc), lx_cast(L, lx_index(L, div), acc), NULL);
  e->expr = lx_op(L, COIL_KOP_WHERE, acc, ok, v, lx_const(L, acc, 0, 0));
  lazy *sum = lz_reduce(L, e, red, false, COIL_REDUCE_SUM, acc);
  out->expr = lx_cast(L, lz_at(L, sum, out->dvars), out->dtype);
  op_set_value(L, n, out);
  return 0;
}

/* [floor(o*in/out), ceil((o+1)*in/out)): the rows adaptive window o averages */
static void
adaptive_window(lowering *L, const coil_sym *o, const coil_sym *in, const coil_sym *osize, const coil_sym **start,
                const coil_sym **end)
{
  *start = coil_sym_floordiv(L->sym, coil_sym_mul(L->sym, o, in), osize);
  *end = coil_sym_floordiv(L->sym, coil_sym_add(L->sym, coil_sym_mul(L->sym, coil_sym_add(L->sym, o, K(L, 1)), in),
                                                coil_sym_sub(L->sym, osize, K(L, 1))), osize);
}

static int
lower_adaptive_bwd(lowering *L, const coil_node *n)
{
  lazy *g = op_arg(L, n, 0), *out = op_result(L, n, 0);
  coil_dtype acc = opmath_dtype(out->dtype);
  int r = out->rank;
  const coil_sym *cand[2];
  for (int i = 0; i < 2; i++) { /* at most ceil(OH/H) + 1 windows cover a row */
    int64_t in, os;
    const coil_sym *osize = g->sizes[r - 2 + i];
    if (coil_sym_is_const(out->sizes[r - 2 + i], &in) && coil_sym_is_const(osize, &os) && in > 0)
      cand[i] = K(L, (os + in - 1) / in + 1 < os ? (os + in - 1) / in + 1 : os);
    else
      cand[i] = osize;
  }
  bool red[COIL_MAX_RANK];
  lazy *e = candidates(L, out, acc, cand[0], cand[1], red);
  const coil_sym *o[2], *idx[COIL_MAX_RANK], *area = K(L, 1);
  const lexpr *ok = NULL;
  for (int i = 0; i < 2; i++) {
    const coil_sym *h = e->dvars[r - 2 + i], *in = out->sizes[r - 2 + i], *osize = g->sizes[r - 2 + i];
    o[i] = coil_sym_add(L->sym, coil_sym_floordiv(L->sym, coil_sym_mul(L->sym, h, osize), in), e->dvars[r + i]);
    const coil_sym *oc = clamped_index(L, o[i], osize), *start, *end;
    adaptive_window(L, oc, in, osize, &start, &end);
    ok = both(L, ok, lx_op(L, COIL_KOP_LT, COIL_BOOL, lx_index(L, o[i]), lx_index(L, osize), NULL));
    ok = both(L, ok, lx_in_range(L, h, start, end));
    area = coil_sym_mul(L->sym, area, coil_sym_sub(L->sym, end, start));
  }
  window_index(L, e, g, o, idx);
  const lexpr *v = lx_op(L, COIL_KOP_DIV, acc, lx_cast(L, lz_at(L, g, idx), acc), lx_cast(L, lx_index(L, area), acc), NULL);
  e->expr = lx_op(L, COIL_KOP_WHERE, acc, ok, v, lx_const(L, acc, 0, 0));
  lazy *sum = lz_reduce(L, e, red, false, COIL_REDUCE_SUM, acc);
  out->expr = lx_cast(L, lz_at(L, sum, out->dvars), out->dtype);
  op_set_value(L, n, out);
  return 0;
}

/* ---- normalisation ---- */

static const lexpr *
num(lowering *L, const lazy *z, const coil_sym *const *idx, coil_dtype dt)
{
  return lx_cast(L, lz_at(L, z, idx), dt);
}

static const lexpr *
op2(lowering *L, coil_kop op, coil_dtype dt, const lexpr *a, const lexpr *b)
{
  return lx_op(L, op, dt, a, b, NULL);
}

/* z reduced (sum) over red, or z itself where nothing is reduced */
static lazy *
sum_over(lowering *L, lazy *z, const bool *red, bool keepdim)
{
  bool any = false;
  for (int i = 0; i < z->rank; i++)
    any |= red[i];
  return any ? lz_reduce(L, z, red, keepdim, COIL_REDUCE_SUM, z->dtype) : z;
}

/* Normalised rows are x's dims from `first` on (layer norm), or for group norm a view of x as
 * [N, G, C/G, spatial...] whose rows are dims 2 on. The helpers below index x, grad_out and
 * weight from a position in that row view. */
typedef struct norm {
  lazy *x, *g, *mean, *rstd, *w;
  bool group;
  int64_t per_group;         /* group: C/G */
  int first;                 /* layer: the first normalised dim */
  coil_dtype acc;
} norm;

/* x's index (in x's dims) of position v in the row view */
static void
x_index(lowering *L, const norm *nm, const coil_sym *const *v, const coil_sym **xi)
{
  if (!nm->group) {
    for (int i = 0; i < nm->x->rank; i++)
      xi[i] = v[i];
    return;
  }
  xi[0] = v[0];
  xi[1] = coil_sym_add(L->sym, coil_sym_mul(L->sym, v[1], K(L, nm->per_group)), v[2]);
  for (int i = 2; i < nm->x->rank; i++)
    xi[i] = v[i + 1];
}

/* mean/rstd's index for x's index xi */
static void
stat_index(lowering *L, const norm *nm, const coil_sym *const *xi, const coil_sym **si)
{
  if (nm->group) {
    si[0] = xi[0];
    si[1] = coil_sym_floordiv(L->sym, xi[1], K(L, nm->per_group));
    return;
  }
  for (int i = 0; i < nm->x->rank; i++)
    si[i] = i < nm->first ? xi[i] : K(L, 0);
}

/* x̂ and dy = grad * weight at x's index xi */
static void
xhat_dy(lowering *L, const norm *nm, const coil_sym *const *xi, const lexpr **xhat, const lexpr **dy, const lexpr **gv)
{
  const coil_sym *si[COIL_MAX_RANK];
  stat_index(L, nm, xi, si);
  coil_dtype a = nm->acc;
  *xhat = op2(L, COIL_KOP_MUL, a, op2(L, COIL_KOP_SUB, a, num(L, nm->x, xi, a), num(L, nm->mean, si, a)),
              num(L, nm->rstd, si, a));
  *gv = num(L, nm->g, xi, a);
  *dy = *gv;
  if (nm->w)
    *dy = op2(L, COIL_KOP_MUL, a, *dy, num(L, nm->w, nm->group ? &xi[1] : &xi[nm->first], a));
}

static int
lower_norm_bwd(lowering *L, const coil_node *n)
{
  norm nm = {.g = op_arg(L, n, 0), .x = op_arg(L, n, 1), .group = n->op->sub == 1};
  nm.mean = op_arg(L, n, nm.group ? 2 : 3);
  nm.rstd = op_arg(L, n, nm.group ? 3 : 4);
  nm.w = op_arg(L, n, nm.group ? 4 : 5);
  nm.acc = opmath_dtype(nm.x->dtype);
  lazy *x = nm.x;
  lazy *outs[3] = {op_result(L, n, 0), op_result(L, n, 1), op_result(L, n, 2)};
  coil_dtype a = nm.acc;

  /* the row view and its row dims */
  const coil_sym *vs[COIL_MAX_RANK];
  int vr = x->rank;
  bool row[COIL_MAX_RANK] = {0};
  if (nm.group) {
    int64_t groups = op_lit(n, "group")->i, ch = op_lit(n, "C")->i;
    nm.per_group = ch / groups;
    vs[0] = x->sizes[0];
    vs[1] = K(L, groups);
    vs[2] = K(L, nm.per_group);
    for (int i = 2; i < x->rank; i++)
      vs[i + 1] = x->sizes[i];
    vr = x->rank + 1;
    for (int i = 2; i < vr; i++)
      row[i] = true;
  } else {
    nm.first = x->rank - op_lit(n, "normalized_shape")->n;
    for (int i = 0; i < x->rank; i++) {
      vs[i] = x->sizes[i];
      row[i] = i >= nm.first;
    }
  }
  const coil_sym *count = K(L, 1);
  for (int i = 0; i < vr; i++)
    if (row[i])
      count = coil_sym_mul(L->sym, count, vs[i]);

  /* per row: Σ dy and Σ dy·x̂ (kept dims of size 1) */
  lazy *sdy = lz_new(L, a, vr, vs), *sdyx = lz_new(L, a, vr, vs);
  const coil_sym *xi[COIL_MAX_RANK];
  const lexpr *xh, *dy, *gv;
  x_index(L, &nm, sdy->dvars, xi);
  xhat_dy(L, &nm, xi, &xh, &dy, &gv);
  sdy->expr = dy;
  x_index(L, &nm, sdyx->dvars, xi);
  xhat_dy(L, &nm, xi, &xh, &dy, &gv);
  sdyx->expr = op2(L, COIL_KOP_MUL, a, dy, xh);
  lazy *ra = lz_reduce(L, sdy, row, true, COIL_REDUCE_SUM, a), *rb = lz_reduce(L, sdyx, row, true, COIL_REDUCE_SUM, a);

  /* grad_input = rstd * (dy - Σdy/n - x̂ · Σ(dy·x̂)/n) */
  lazy *gi = outs[0];
  xhat_dy(L, &nm, gi->dvars, &xh, &dy, &gv);
  const coil_sym *ri[COIL_MAX_RANK], *si[COIL_MAX_RANK];
  if (nm.group) {
    ri[0] = gi->dvars[0];
    ri[1] = coil_sym_floordiv(L->sym, gi->dvars[1], K(L, nm.per_group));
    for (int i = 2; i < vr; i++)
      ri[i] = K(L, 0);
  } else {
    for (int i = 0; i < vr; i++)
      ri[i] = row[i] ? K(L, 0) : gi->dvars[i];
  }
  stat_index(L, &nm, gi->dvars, si);
  const lexpr *cnt = lx_cast(L, lx_index(L, count), a);
  const lexpr *v = op2(L, COIL_KOP_SUB, a, dy, op2(L, COIL_KOP_DIV, a, lz_at(L, ra, ri), cnt));
  v = op2(L, COIL_KOP_SUB, a, v, op2(L, COIL_KOP_MUL, a, xh, op2(L, COIL_KOP_DIV, a, lz_at(L, rb, ri), cnt)));
  gi->expr = lx_cast(L, op2(L, COIL_KOP_MUL, a, num(L, nm.rstd, si, a), v), gi->dtype);

  /* grad_weight = Σ grad · x̂ and grad_bias = Σ grad over the dims weight does not have */
  bool other[COIL_MAX_RANK] = {0};
  for (int i = 0; i < x->rank; i++)
    other[i] = nm.group ? i != 1 : i < nm.first;
  for (int k = 1; k < 3; k++) {
    lazy *z = lz_new(L, a, x->rank, x->sizes);
    xhat_dy(L, &nm, z->dvars, &xh, &dy, &gv);
    z->expr = k == 1 ? op2(L, COIL_KOP_MUL, a, gv, xh) : gv;
    lazy *s = sum_over(L, z, other, false);
    outs[k]->expr = lx_cast(L, lz_at(L, s, outs[k]->dvars), outs[k]->dtype);
  }
  op_set_tuple(L, n, outs);
  return 0;
}

/* ---- convolution ---- */

/* A lazy over base's dims followed by n dims of the given sizes, to be reduced: one loop dim
 * each where the loop IR has room, else one dim of their product, indexed by division and
 * modulo. idx[j]: the index along extra dim j. */
static lazy *
with_reduced(lowering *L, const lazy *base, coil_dtype dt, int n, const coil_sym *const *sizes, const coil_sym **idx,
             bool *red)
{
  int r = base->rank;
  bool flat = r + n > COIL_MAX_RANK;
  const coil_sym *all[COIL_MAX_RANK];
  for (int i = 0; i < r; i++)
    all[i] = base->sizes[i];
  const coil_sym *prod = K(L, 1);
  for (int j = 0; j < n; j++) {
    if (!flat)
      all[r + j] = sizes[j];
    prod = coil_sym_mul(L->sym, prod, sizes[j]);
  }
  if (flat)
    all[r] = prod;
  int rank = flat ? r + 1 : r + n;
  lazy *e = lz_new(L, dt, rank, all);
  for (int i = 0; i < COIL_MAX_RANK; i++)
    red[i] = i >= r && i < rank;
  if (!flat) {
    for (int j = 0; j < n; j++)
      idx[j] = e->dvars[r + j];
    return e;
  }
  const coil_sym *rest = e->dvars[r];
  for (int j = n - 1; j > 0; j--) {
    idx[j] = coil_sym_mod(L->sym, rest, sizes[j]);
    rest = coil_sym_floordiv(L->sym, rest, sizes[j]);
  }
  idx[0] = rest;
  return e;
}

static lazy *
in_memory(lowering *L, lazy *z)
{
  if (z->expr->kind != LX_LOAD)
    lz_realize(L, z);
  return z;
}

/* The convolution's geometry: per spatial dim q, stride, padding, dilation. */
typedef struct conv {
  int nsp;
  int64_t s[3], p[3], d[3];
  int64_t groups, cpg, opg;  /* groups, input and output channels per group */
  bool transposed;
  lazy *gy, *x, *w;
} conv;

/* Where the term of kernel offset k links position `from` (along dim q) to the other side:
 * to = from*s - p + k*d, masked where it leaves [0, size) (only where it can) */
static const coil_sym *
forward_pos(lowering *L, const conv *cv, int q, const coil_sym *from, const coil_sym *k, const coil_sym *size,
            bool can_leave, const lexpr **ok)
{
  const coil_sym *to = coil_sym_add(L->sym, coil_sym_sub(L->sym, coil_sym_mul(L->sym, from, K(L, cv->s[q])), K(L, cv->p[q])),
                                    coil_sym_mul(L->sym, k, K(L, cv->d[q])));
  if (!can_leave)
    return to;
  *ok = both(L, *ok, lx_in_range(L, to, K(L, 0), size));
  return clamped_index(L, to, size);
}

/* The inverse: from = (to + p - k*d) / s where s divides it and it lies in [0, size) */
static const coil_sym *
backward_pos(lowering *L, const conv *cv, int q, const coil_sym *to, const coil_sym *k, const coil_sym *size,
             const lexpr **ok)
{
  const coil_sym *t = coil_sym_sub(L->sym, coil_sym_add(L->sym, to, K(L, cv->p[q])), coil_sym_mul(L->sym, k, K(L, cv->d[q])));
  const coil_sym *from = t;
  if (cv->s[q] != 1) {
    from = coil_sym_floordiv(L->sym, t, K(L, cv->s[q]));
    *ok = both(L, *ok, lx_op(L, COIL_KOP_EQ, COIL_BOOL, lx_index(L, coil_sym_mod(L->sym, t, K(L, cv->s[q]))),
                             lx_const(L, COIL_I64, 0, 0), NULL));
  }
  *ok = both(L, *ok, lx_in_range(L, from, K(L, 0), size));
  return clamped_index(L, from, size);
}

/* grad_input[n, ci, i] = Σ_{j < Co/G, k} grad_output[n, g*Co/G + j, o] * w[..], g = ci / (C/G),
 * o the output position whose term k reads i */
static void
conv_grad_input(lowering *L, const conv *cv, lazy *gi)
{
  coil_dtype acc = opmath_dtype(gi->dtype);
  const coil_sym *sizes[4], *idx[4];
  sizes[0] = K(L, cv->opg);
  for (int q = 0; q < cv->nsp; q++)
    sizes[1 + q] = cv->w->sizes[2 + q];
  bool red[COIL_MAX_RANK];
  lazy *e = with_reduced(L, gi, acc, 1 + cv->nsp, sizes, idx, red);
  const coil_sym *ci = e->dvars[1], *g = coil_sym_floordiv(L->sym, ci, K(L, cv->cpg));
  const coil_sym *co = coil_sym_add(L->sym, coil_sym_mul(L->sym, g, K(L, cv->opg)), idx[0]);
  const coil_sym *yi[COIL_MAX_RANK], *wi[COIL_MAX_RANK];
  const lexpr *ok = NULL;
  yi[0] = e->dvars[0];
  yi[1] = co;
  wi[0] = cv->transposed ? ci : co;
  wi[1] = cv->transposed ? idx[0] : coil_sym_mod(L->sym, ci, K(L, cv->cpg));
  for (int q = 0; q < cv->nsp; q++) {
    const coil_sym *i = e->dvars[2 + q], *k = idx[1 + q], *osize = cv->gy->sizes[2 + q];
    yi[2 + q] = cv->transposed ? forward_pos(L, cv, q, i, k, osize, true, &ok) : backward_pos(L, cv, q, i, k, osize, &ok);
    wi[2 + q] = k;
  }
  const lexpr *v = lx_op(L, COIL_KOP_MUL, acc, lx_cast(L, lz_at(L, cv->gy, yi), acc), lx_cast(L, lz_at(L, cv->w, wi), acc), NULL);
  e->expr = ok ? lx_op(L, COIL_KOP_WHERE, acc, ok, v, lx_const(L, acc, 0, 0)) : v;
  lazy *sum = lz_reduce(L, e, red, false, COIL_REDUCE_SUM, acc);
  gi->expr = lx_cast(L, lz_at(L, sum, gi->dvars), gi->dtype);
}

/* grad_weight[a, b, k] = Σ_{n, positions} grad_output * input over the pairs term k links:
 * not transposed, w[co, c, k] sums over output positions o (input at o*s - p + k*d); transposed,
 * w[ci, j, k] sums over input positions i (output at i*s - p + k*d) */
static void
conv_grad_weight(lowering *L, const conv *cv, lazy *gw)
{
  coil_dtype acc = opmath_dtype(gw->dtype);
  const lazy *from = cv->transposed ? cv->x : cv->gy, *to = cv->transposed ? cv->gy : cv->x;
  const coil_sym *sizes[4], *idx[4];
  sizes[0] = from->sizes[0];
  for (int q = 0; q < cv->nsp; q++)
    sizes[1 + q] = from->sizes[2 + q];
  bool red[COIL_MAX_RANK];
  lazy *e = with_reduced(L, gw, acc, 1 + cv->nsp, sizes, idx, red);
  const coil_sym *a = e->dvars[0], *b = e->dvars[1], *ci, *co;
  if (cv->transposed) { /* w[ci, j, k] */
    ci = a;
    co = coil_sym_add(L->sym, coil_sym_mul(L->sym, coil_sym_floordiv(L->sym, a, K(L, cv->cpg)), K(L, cv->opg)), b);
  } else { /* w[co, c, k] */
    co = a;
    ci = coil_sym_add(L->sym, coil_sym_mul(L->sym, coil_sym_floordiv(L->sym, a, K(L, cv->opg)), K(L, cv->cpg)), b);
  }
  const coil_sym *fi[COIL_MAX_RANK], *ti[COIL_MAX_RANK];
  const lexpr *ok = NULL;
  fi[0] = ti[0] = idx[0];
  fi[1] = cv->transposed ? ci : co;
  ti[1] = cv->transposed ? co : ci;
  for (int q = 0; q < cv->nsp; q++) {
    fi[2 + q] = idx[1 + q];
    /* without padding a forward term never leaves the input (the output-size formula) */
    bool can_leave = cv->transposed || cv->p[q] > 0;
    ti[2 + q] = forward_pos(L, cv, q, idx[1 + q], e->dvars[2 + q], to->sizes[2 + q], can_leave, &ok);
  }
  const lexpr *v = lx_op(L, COIL_KOP_MUL, acc, lx_cast(L, lz_at(L, from, fi), acc), lx_cast(L, lz_at(L, to, ti), acc), NULL);
  e->expr = ok ? lx_op(L, COIL_KOP_WHERE, acc, ok, v, lx_const(L, acc, 0, 0)) : v;
  lazy *sum = lz_reduce(L, e, red, false, COIL_REDUCE_SUM, acc);
  gw->expr = lx_cast(L, lz_at(L, sum, gw->dvars), gw->dtype);
}

static int
lower_conv_bwd(lowering *L, const coil_node *n)
{
  conv cv = {.gy = op_arg(L, n, 0), .x = op_arg(L, n, 1), .w = op_arg(L, n, 2)};
  const coil_lit *ls = op_lit(n, "stride"), *lp = op_lit(n, "padding"), *ld = op_lit(n, "dilation");
  cv.nsp = cv.x->rank - 2;
  for (int q = 0; q < cv.nsp; q++) {
    cv.s[q] = ls->items[q].i;
    cv.p[q] = lp->items[q].i;
    cv.d[q] = ld->items[q].i;
  }
  cv.transposed = op_lit(n, "transposed")->i;
  cv.groups = op_lit(n, "groups")->i;
  int64_t cin = 0, cout = 0;
  coil_sym_is_const(cv.x->sizes[1], &cin); /* constant: inference checks channel counts */
  coil_sym_is_const(cv.gy->sizes[1], &cout);
  cv.cpg = cin / cv.groups;
  cv.opg = cout / cv.groups;
  in_memory(L, cv.gy); /* each element is read by many terms */
  in_memory(L, cv.x);
  in_memory(L, cv.w);
  lazy *outs[3] = {op_result(L, n, 0), op_result(L, n, 1), op_result(L, n, 2)};
  conv_grad_input(L, &cv, outs[0]);
  conv_grad_weight(L, &cv, outs[1]);
  /* grad_bias: grad_output summed over all but the channels */
  coil_dtype acc = opmath_dtype(outs[2]->dtype);
  bool red[COIL_MAX_RANK] = {0};
  for (int i = 0; i < cv.gy->rank; i++)
    red[i] = i != 1;
  lazy *gyf = lz_new(L, acc, cv.gy->rank, cv.gy->sizes);
  gyf->expr = lx_cast(L, lz_at(L, cv.gy, gyf->dvars), acc);
  lazy *sum = lz_reduce(L, gyf, red, false, COIL_REDUCE_SUM, acc);
  outs[2]->expr = lx_cast(L, lz_at(L, sum, outs[2]->dvars), outs[2]->dtype);
  op_set_tuple(L, n, outs);
  return 0;
}

/* col2im: out[n, c, h, w] = Σ_{kh, kw} self[n, (c*KH + kh)*KW + kw, bh*NBW + bw] over the
 * blocks (bh, bw) whose kernel offset (kh, kw) lands on (h, w) */
static int
lower_col2im(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *out = op_result(L, n, 0);
  const coil_lit *lk = op_lit(n, "kernel_size"), *ld = op_lit(n, "dilation"), *lp = op_lit(n, "padding"),
                 *ls = op_lit(n, "stride");
  coil_dtype acc = opmath_dtype(out->dtype);
  int r = out->rank;
  conv cv = {.nsp = 2};
  const coil_sym *ksz[2], *nb[2];
  for (int q = 0; q < 2; q++) {
    cv.s[q] = item(ls, q, 1);
    cv.p[q] = item(lp, q, 0);
    cv.d[q] = item(ld, q, 1);
    ksz[q] = K(L, item(lk, q, 1));
    int64_t size = 0;
    coil_sym_is_const(out->sizes[r - 2 + q], &size); /* output_size: constants */
    nb[q] = K(L, (size + 2 * cv.p[q] - cv.d[q] * (item(lk, q, 1) - 1) - 1) / cv.s[q] + 1);
  }
  in_memory(L, x); /* each element is read by several pixels' sums where blocks overlap */
  const coil_sym *idx[2];
  bool red[COIL_MAX_RANK];
  lazy *e = with_reduced(L, out, acc, 2, ksz, idx, red);
  const lexpr *ok = NULL;
  const coil_sym *b[2], *xi[3];
  for (int q = 0; q < 2; q++)
    b[q] = backward_pos(L, &cv, q, e->dvars[r - 2 + q], idx[q], nb[q], &ok);
  int at = 0;
  if (r == 4)
    xi[at++] = e->dvars[0];
  const coil_sym *col = coil_sym_add(L->sym, coil_sym_mul(L->sym, coil_sym_add(L->sym, coil_sym_mul(L->sym, e->dvars[r - 3], ksz[0]), idx[0]), ksz[1]), idx[1]);
  xi[at++] = col;
  xi[at] = coil_sym_add(L->sym, coil_sym_mul(L->sym, b[0], nb[1]), b[1]);
  e->expr = lx_op(L, COIL_KOP_WHERE, acc, ok, lx_cast(L, lz_at(L, x, xi), acc), lx_const(L, acc, 0, 0));
  lazy *sum = lz_reduce(L, e, red, false, COIL_REDUCE_SUM, acc);
  out->expr = lx_cast(L, lz_at(L, sum, out->dvars), out->dtype);
  op_set_value(L, n, out);
  return 0;
}

int
coil_lower_backward(lowering *L, const coil_node *n)
{
  if (n->op->rule == COIL_RULE_COL2IM)
    return lower_col2im(L, n);
  if (n->op->rule == COIL_RULE_NORM_BWD)
    return lower_norm_bwd(L, n);
  if (n->op->rule == COIL_RULE_CONV_BWD)
    return lower_conv_bwd(L, n);
  switch (n->op->sub) {
  case 0: return lower_max_pool_bwd(L, n);
  case 1: return lower_avg_pool_bwd(L, n);
  default: return lower_adaptive_bwd(L, n);
  }
}
