/* lower_pool.c — pooling as window reductions, generated like any other kernel (as Inductor
 * lowers it), so no plugin has to implement pooling itself.
 *
 * Output element (.., c, oh, ow) of max_pool2d_with_indices and avg_pool2d reduces a window of
 * the input: rows h = oh*sh - ph + kh*dh and columns w = ow*sw - pw + kw*dw for kh < KH,
 * kw < KW. The lowering builds a lazy tensor over [.., C, OH, OW, KH, KW] whose element is that
 * input element (loaded at a clamped index and replaced by a fill where (h, w) lies in the
 * padding or past the end, as ceil_mode allows) and reduces it over the two window dims. The
 * input's expression is inlined into the window, so a pointwise producer (relu) becomes the
 * prologue of the pooling kernel. Output sizes are those type inference gave the node; the
 * semantics (NaN, ties, divisors) are those of core/ref_ops.c, checked against PyTorch. */
#include <math.h>
#include <stdint.h>

#include "lower.h"

typedef struct window {
  int nsp;                        /* spatial dims: 2, or 3 for the 3-D pools */
  int64_t k[3], s[3], p[3], d[3]; /* kernel, stride, padding, dilation: (depth,) rows, columns */
  bool ceil_mode;
} window;

static const coil_sym *
K(lowering *L, int64_t v)
{
  return coil_sym_const(L->sym, v);
}

/* A list argument given once for both dims or per dim; an empty stride means the kernel. */
static void
window_of(const coil_node *n, window *w)
{
  const coil_lit *lk = op_lit(n, "kernel_size"), *ls = op_lit(n, "stride"),
                 *lp = op_lit(n, "padding"), *ld = op_lit(n, "dilation"); /* avg_pool2d: none */
  w->nsp = n->op->sub >= 2 ? 3 : 2;
  for (int i = 0; i < w->nsp; i++) {
    w->k[i] = lk->items[lk->n > 1 ? i : 0].i;
    w->s[i] = ls->n ? ls->items[ls->n > 1 ? i : 0].i : w->k[i];
    w->p[i] = lp->items[lp->n > 1 ? i : 0].i;
    w->d[i] = ld ? ld->items[ld->n > 1 ? i : 0].i : 1;
  }
  w->ceil_mode = op_lit(n, "ceil_mode")->i;
}

/* Where window element dv = (.., oh, ow, kh, kw) reads the input x (3-D: (.., od, oh, ow,
 * kd, kh, kw)). */
typedef struct tap {
  const coil_sym *at[COIL_MAX_RANK]; /* x's index, clamped into x where it may leave it */
  const coil_sym *pos[3];            /* (d,) h and w, unclamped */
  const lexpr *inside;               /* whether the position lies in x; NULL where it always does */
} tap;

/* Whether position pos of dim i always lies in [0, size): the sizes and index ranges say so,
 * or the window never leaves the input (no padding, and floor mode sizes the output so that
 * the last window ends inside). */
static bool
always_inside(lowering *L, const coil_sym *pos, const coil_sym *size, const window *w, int i)
{
  int64_t lo, hi, n;
  coil_sym_bounds(L->sym, pos, &lo, &hi);
  if (lo >= 0 && coil_sym_is_const(size, &n) && hi < n)
    return true;
  return w->p[i] == 0 && !w->ceil_mode;
}

static void
tap_of(lowering *L, const lazy *x, const window *w, const coil_sym *const *dv, tap *t)
{
  int r = x->rank, ns = w->nsp; /* dv: x's leading dims, then the output's spatial, then the window's */
  for (int i = 0; i < r - ns; i++)
    t->at[i] = dv[i];
  t->inside = NULL;
  for (int i = 0; i < ns; i++) {
    const coil_sym *size = x->sizes[r - ns + i];
    const coil_sym *pos = coil_sym_add(L->sym, coil_sym_mul(L->sym, dv[r - ns + i], K(L, w->s[i])),
                                       coil_sym_add(L->sym, K(L, -w->p[i]),
                                                    coil_sym_mul(L->sym, dv[r + i], K(L, w->d[i]))));
    t->pos[i] = pos;
    t->at[r - ns + i] = pos;
    if (always_inside(L, pos, size, w, i))
      continue;
    const lexpr *ok = lx_in_range(L, pos, K(L, 0), size);
    t->inside = t->inside ? lx_op(L, COIL_KOP_AND, COIL_BOOL, t->inside, ok, NULL) : ok;
    t->at[r - ns + i] = clamped_index(L, pos, size);
  }
}

/* x's element at tap t in dtype dt, or fill outside x. */
static const lexpr *
tap_value(lowering *L, const lazy *x, const tap *t, coil_dtype dt, const lexpr *fill)
{
  const lexpr *v = lx_cast(L, lz_at(L, x, t->at), dt);
  return t->inside ? lx_op(L, COIL_KOP_WHERE, dt, t->inside, v, fill) : v;
}

/* A lazy over [out's dims, KH, KW] (3-D: [.., KD, KH, KW]; its expression left to the
 * caller), and the dims to reduce: the window's. */
static lazy *
window_lazy(lowering *L, const lazy *out, const window *w, coil_dtype dt, bool *red)
{
  const coil_sym *sizes[COIL_MAX_RANK];
  for (int i = 0; i < out->rank; i++)
    sizes[i] = out->sizes[i];
  for (int i = 0; i < w->nsp; i++)
    sizes[out->rank + i] = K(L, w->k[i]);
  for (int i = 0; i < COIL_MAX_RANK; i++)
    red[i] = i >= out->rank && i < out->rank + w->nsp;
  return lz_new(L, dt, out->rank + w->nsp, sizes);
}

static int
count_loads(const lexpr *e)
{
  int n = e->kind == LX_LOAD;
  for (int i = 0; i < e->nargs; i++)
    n += count_loads(e->args[i]);
  return n;
}

/* The pooled input, inlined into the window: every element is computed again by each window
 * it falls in (KH*KW / (sh*sw) times on average). Where windows overlap, an expression over
 * several buffers (cat, a sum of two tensors, batch norm) is computed once into a buffer first,
 * as Inductor's realize_hint does; a function of one buffer (relu) stays inline, and so does
 * everything when windows do not overlap (2x2, stride 2). */
static lazy *
pool_input(lowering *L, lazy *x, const window *w)
{
  int64_t kv = 1, sv = 1;
  for (int i = 0; i < w->nsp; i++)
    kv *= w->k[i], sv *= w->s[i];
  bool overlap = kv > sv;
  if (overlap && x->realized < 0 && count_loads(x->expr) > 1)
    lz_realize(L, x);
  return x;
}

/* The smallest value of dt: what max over nothing starts from (-inf for floats). */
static const lexpr *
lowest(lowering *L, coil_dtype dt)
{
  switch (dt) {
  case COIL_I64: return lx_const(L, dt, 0, INT64_MIN);
  case COIL_I32: return lx_const(L, dt, 0, INT32_MIN);
  case COIL_I16: return lx_const(L, dt, 0, INT16_MIN);
  case COIL_I8: return lx_const(L, dt, 0, INT8_MIN);
  case COIL_U8: case COIL_BOOL: return lx_const(L, dt, 0, 0);
  default: return lx_const(L, dt, -INFINITY, 0);
  }
}

/* max_pool2d_with_indices, as PyTorch's kernels: over the window's elements inside the input,
 * the max (NaN if any is NaN) and the index h*W + w of the first max in window order, or of
 * the last NaN. The index is a second reduction, of a key that orders the candidates:
 *   2P + (h*W + w)        for a NaN            (the last NaN is the largest key)
 *   2P - 1 - (h*W + w)    for an element = max (the first of them is the largest)
 *   -1                    for the rest and the padding
 * with P = H*W; a max reduction of the key and its inverse give the index (-1 for a window
 * with nothing inside, as the reference). The argmax reduction cannot do it alone: it takes
 * the first NaN. The key reads the max, so both reductions fuse into one kernel; when only
 * the values are used the key's node is dead and never computed. */
static int
lower_max_pool(lowering *L, const coil_node *n, const window *w)
{
  lazy *x = pool_input(L, op_arg(L, n, 0), w);
  lazy *outs[2] = {op_result(L, n, 0), op_result(L, n, 1)};
  coil_dtype acc = opmath_dtype(x->dtype);
  bool red[COIL_MAX_RANK];
  tap t;
  lazy *win = window_lazy(L, outs[0], w, acc, red);
  tap_of(L, x, w, win->dvars, &t);
  win->expr = tap_value(L, x, &t, acc, lowest(L, acc));
  lazy *mx = lz_reduce(L, win, red, false, COIL_REDUCE_MAX, acc);
  if (acc == outs[0]->dtype) /* the reduction's buffer itself, so views of it stay views */
    outs[0] = mx;
  else
    outs[0]->expr = lx_cast(L, lz_at(L, mx, outs[0]->dvars), outs[0]->dtype);

  lazy *key = window_lazy(L, outs[0], w, COIL_I64, red);
  tap_of(L, x, w, key->dvars, &t);
  int r = x->rank;
  const coil_sym *area = K(L, 1), *plane = K(L, 0); /* plane: (d*H + h)*W + w */
  for (int i = 0; i < w->nsp; i++) {
    area = coil_sym_mul(L->sym, area, x->sizes[r - w->nsp + i]);
    plane = coil_sym_add(L->sym, coil_sym_mul(L->sym, plane, x->sizes[r - w->nsp + i]), t.pos[i]);
  }
  const coil_sym *two_p = coil_sym_mul(L->sym, K(L, 2), area), *last_max = coil_sym_add(L->sym, two_p, K(L, -1));
  const lexpr *v = lx_cast(L, lz_at(L, x, t.at), acc);
  const lexpr *is_max = lx_op(L, COIL_KOP_EQ, COIL_BOOL, v, lz_at(L, mx, key->dvars), NULL);
  if (t.inside)
    is_max = lx_op(L, COIL_KOP_AND, COIL_BOOL, t.inside, is_max, NULL);
  key->expr = lx_op(L, COIL_KOP_WHERE, COIL_I64, is_max, lx_index(L, coil_sym_sub(L->sym, last_max, plane)),
                    lx_const(L, COIL_I64, 0, -1));
  if (coil_dtype_is_float(acc)) {
    const lexpr *is_nan = lx_op(L, COIL_KOP_NE, COIL_BOOL, v, v, NULL);
    if (t.inside)
      is_nan = lx_op(L, COIL_KOP_AND, COIL_BOOL, t.inside, is_nan, NULL);
    key->expr = lx_op(L, COIL_KOP_WHERE, COIL_I64, is_nan, lx_index(L, coil_sym_add(L->sym, two_p, plane)), key->expr);
  }
  lazy *best = lz_reduce(L, key, red, false, COIL_REDUCE_MAX, COIL_I64);
  /* the index from the key: key - 2P for a NaN's, 2P - 1 - key for a max's, -1 stays */
  const lexpr *b = lz_at(L, best, outs[1]->dvars), *p2 = lx_index(L, two_p);
  const lexpr *of_max = lx_op(L, COIL_KOP_WHERE, COIL_I64, lx_op(L, COIL_KOP_GE, COIL_BOOL, b, lx_index(L, area), NULL),
                              lx_op(L, COIL_KOP_SUB, COIL_I64, lx_index(L, last_max), b, NULL), b);
  outs[1]->expr = lx_op(L, COIL_KOP_WHERE, COIL_I64, lx_op(L, COIL_KOP_GE, COIL_BOOL, b, p2, NULL),
                        lx_op(L, COIL_KOP_SUB, COIL_I64, b, p2, NULL), of_max);
  op_set_tuple(L, n, outs);
  return 0;
}

/* avg_pool2d: the sum over the window's elements inside the input, divided as PyTorch does:
 * by divisor_override if given; else by the window's size clipped to the padded input
 * (count_include_pad, the default) or by the number of elements inside the input. The window
 * of a ceil_mode output may run past the padded end; that part never counts. Integers divide
 * rounding toward zero (as PyTorch's integer kernels). */
static int
lower_avg_pool(lowering *L, const coil_node *n, const window *w)
{
  lazy *x = pool_input(L, op_arg(L, n, 0), w), *out = op_result(L, n, 0);
  bool is_float = coil_dtype_is_float(out->dtype);
  coil_dtype acc = is_float ? opmath_dtype(out->dtype) : COIL_I64;
  bool red[COIL_MAX_RANK];
  tap t;
  lazy *win = window_lazy(L, out, w, acc, red);
  tap_of(L, x, w, win->dvars, &t);
  win->expr = tap_value(L, x, &t, acc, lx_const(L, acc, 0, 0));
  lazy *sum = lz_reduce(L, win, red, false, COIL_REDUCE_SUM, acc);

  const coil_lit *over = op_lit(n, "divisor_override");
  bool include_pad = op_lit(n, "count_include_pad")->i;
  const coil_sym *div = K(L, 1);
  for (int i = 0; i < w->nsp; i++) {
    const coil_sym *size = x->sizes[x->rank - w->nsp + i];
    const coil_sym *start = coil_sym_add(L->sym, coil_sym_mul(L->sym, out->dvars[out->rank - w->nsp + i], K(L, w->s[i])),
                                         K(L, -w->p[i]));
    const coil_sym *end = coil_sym_min(L->sym, coil_sym_add(L->sym, start, K(L, w->k[i])),
                                       coil_sym_add(L->sym, size, K(L, w->p[i])));
    if (!include_pad) { /* the part inside the input */
      start = coil_sym_max(L->sym, start, K(L, 0));
      end = coil_sym_min(L->sym, end, size);
    }
    div = coil_sym_mul(L->sym, div, coil_sym_sub(L->sym, end, start));
  }
  if (over->kind == COIL_LIT_INT)
    div = K(L, over->i);
  const lexpr *s = lz_at(L, sum, out->dvars), *dv = lx_cast(L, lx_index(L, div), acc);
  const lexpr *v = lx_op(L, is_float ? COIL_KOP_DIV : COIL_KOP_TRUNCDIV, acc, s, dv, NULL);
  out->expr = lx_cast(L, v, out->dtype);
  op_set_value(L, n, out);
  return 0;
}

/* _adaptive_avg_pool{2,3}d: output position o of a dim of in -> out averages the input range
 * [floor(o*in/out), ceil((o+1)*in/out)), at most kmax long (computed here: sizes are constant).
 * A window lazy over [out's dims, kmax...] reads x at start + k where that is before the end
 * (clamped into x, 0 elsewhere); its sum is divided by the range's size. */
static int
lower_adaptive_pool(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *out = op_result(L, n, 0);
  int ns = n->op->sub, r = x->rank;
  coil_dtype acc = opmath_dtype(out->dtype);
  const coil_sym *sizes[COIL_MAX_RANK], *start[3], *end[3];
  int64_t in[3], on[3];
  for (int i = 0; i < out->rank; i++)
    sizes[i] = out->sizes[i];
  for (int i = 0; i < ns; i++) {
    coil_sym_is_const(x->sizes[r - ns + i], &in[i]);
    coil_sym_is_const(out->sizes[r - ns + i], &on[i]);
    int64_t kmax = 1;
    for (int64_t o = 0; o < on[i]; o++) {
      int64_t len = ((o + 1) * in[i] + on[i] - 1) / on[i] - o * in[i] / on[i];
      kmax = len > kmax ? len : kmax;
    }
    sizes[out->rank + i] = K(L, kmax);
  }
  bool red[COIL_MAX_RANK];
  for (int i = 0; i < COIL_MAX_RANK; i++)
    red[i] = i >= out->rank && i < out->rank + ns;
  lazy *win = lz_new(L, acc, out->rank + ns, sizes);
  const coil_sym *at[COIL_MAX_RANK];
  const lexpr *inside = NULL;
  for (int i = 0; i < r - ns; i++)
    at[i] = win->dvars[i];
  for (int i = 0; i < ns; i++) {
    const coil_sym *o = win->dvars[r - ns + i];
    start[i] = coil_sym_floordiv(L->sym, coil_sym_mul(L->sym, o, K(L, in[i])), K(L, on[i]));
    end[i] = coil_sym_floordiv(L->sym, coil_sym_add(L->sym, coil_sym_mul(L->sym, o, K(L, in[i])), K(L, in[i] + on[i] - 1)),
                               K(L, on[i]));
    const coil_sym *pos = coil_sym_add(L->sym, start[i], win->dvars[r + i]);
    const lexpr *ok = lx_op(L, COIL_KOP_LT, COIL_BOOL, lx_index(L, pos), lx_index(L, end[i]), NULL);
    inside = inside ? lx_op(L, COIL_KOP_AND, COIL_BOOL, inside, ok, NULL) : ok;
    at[r - ns + i] = clamped_index(L, pos, x->sizes[r - ns + i]);
  }
  win->expr = lx_op(L, COIL_KOP_WHERE, acc, inside, lx_cast(L, lz_at(L, x, at), acc), lx_const(L, acc, 0, 0));
  lazy *sum = lz_reduce(L, win, red, false, COIL_REDUCE_SUM, acc);
  const coil_sym *cnt = K(L, 1);
  for (int i = 0; i < ns; i++) { /* the range's size, over out's dvars */
    const coil_sym *o = out->dvars[r - ns + i];
    const coil_sym *s0 = coil_sym_floordiv(L->sym, coil_sym_mul(L->sym, o, K(L, in[i])), K(L, on[i]));
    const coil_sym *e0 = coil_sym_floordiv(L->sym, coil_sym_add(L->sym, coil_sym_mul(L->sym, o, K(L, in[i])),
                                                                K(L, in[i] + on[i] - 1)), K(L, on[i]));
    cnt = coil_sym_mul(L->sym, cnt, coil_sym_sub(L->sym, e0, s0));
  }
  const lexpr *v = lx_op(L, COIL_KOP_DIV, acc, lz_at(L, sum, out->dvars), lx_cast(L, lx_index(L, cnt), acc), NULL);
  out->expr = lx_cast(L, v, out->dtype);
  op_set_value(L, n, out);
  return 0;
}

int
coil_lower_pool(lowering *L, const coil_node *n)
{
  if (n->op->rule == COIL_RULE_ADAPTIVE_POOL)
    return lower_adaptive_pool(L, n);
  window w;
  window_of(n, &w);
  return n->op->sub % 2 == 0 ? lower_max_pool(L, n, &w) : lower_avg_pool(L, n, &w);
}
