/* lower_pairwise.c — ops whose every output element reduces over pairs of input elements,
 * generated as reductions of the loop IR: sort, cdist and pdist.
 *
 * sort, along a line of n elements, in two reductions (O(n²) work per line, so only up to
 * SORT_MAX elements; a longer line is an error until the Wrapper IR has a sort kernel):
 *   rank[i] = Σ_j before(j, i)     before(j, i) = x[j] < x[i] or (x[j] == x[i] and j < i)
 *   indices[k] = Σ_i (rank[i] == k) · i,   values[k] = x[indices[k]] (an indirect load)
 * with < ordering NaN above every number (> and NaN first for descending): the stable order,
 * which is what PyTorch's CPU sort gives. Ranks are a permutation, so exactly one i has rank k.
 * topk (for a plugin that does not claim it) is the same with largest as descending and only
 * the first k positions computed; a longer line with k <= SORT_MAX/2 goes by chunks of SORT_MAX
 * (each chunk's top k, then the top k of the candidates), else it stays a library call.
 *
 * cdist: out[.., i, j] reduces |x1[.., i, m] - x2[.., j, m]| over m (batch dims broadcast):
 * a count of non-zeros (p = 0), a sum (p = 1), a sum of squares then sqrt (p = 2, exact
 * differences whatever compute_mode asks: PyTorch's matmul form for large inputs is an
 * approximation of the same value), a max (p = inf), else Σ|d|^p then ^(1/p).
 * pdist: pair k is (i, j), i < j, in row-major order; i = #{t in 1..N-1 : start(t) <= k} with
 * start(t) = t*N - t(t+1)/2 the pairs before row t (a reduction), j = k - start(i) + i + 1, and
 * rows i and j are read by indirect loads. */
#include <math.h>

#include "lower.h"

#define SORT_MAX 1024

static const coil_sym *
K(lowering *L, int64_t v)
{
  return coil_sym_const(L->sym, v);
}

static const lexpr *
op2(lowering *L, coil_kop op, coil_dtype dt, const lexpr *a, const lexpr *b)
{
  return lx_op(L, op, dt, a, b, NULL);
}

static int
node_err(lowering *L, const coil_node *n, const char *msg)
{
  return coil_diag_at(L->d, L->g->file, n->line, n->col, "%s: %s", n->op->name, msg);
}

/* Whether a comes strictly before b in the order: a < b (descending: a > b), NaN the largest. */
static const lexpr *
strictly_before(lowering *L, const lexpr *a, const lexpr *b, bool descending, bool is_float)
{
  const lexpr *c = op2(L, descending ? COIL_KOP_GT : COIL_KOP_LT, COIL_BOOL, a, b);
  if (!is_float)
    return c;
  const lexpr *an = op2(L, COIL_KOP_NE, COIL_BOOL, a, a), *bn = op2(L, COIL_KOP_NE, COIL_BOOL, b, b);
  const lexpr *nan_order = descending ? op2(L, COIL_KOP_AND, COIL_BOOL, an, lx_op(L, COIL_KOP_NOT, COIL_BOOL, bn, NULL, NULL))
                                      : op2(L, COIL_KOP_AND, COIL_BOOL, bn, lx_op(L, COIL_KOP_NOT, COIL_BOOL, an, NULL, NULL));
  return op2(L, COIL_KOP_OR, COIL_BOOL, c, nan_order);
}

static const lexpr *
same(lowering *L, const lexpr *a, const lexpr *b, bool is_float)
{
  const lexpr *c = op2(L, COIL_KOP_EQ, COIL_BOOL, a, b);
  if (!is_float)
    return c;
  const lexpr *an = op2(L, COIL_KOP_NE, COIL_BOOL, a, a), *bn = op2(L, COIL_KOP_NE, COIL_BOOL, b, b);
  return op2(L, COIL_KOP_OR, COIL_BOOL, c, op2(L, COIL_KOP_AND, COIL_BOOL, an, bn));
}

/* A lazy over x's dims and one more, of size len */
static lazy *
with_pair_dim(lowering *L, const lazy *x, const coil_sym *len, coil_dtype dt)
{
  const coil_sym *sizes[COIL_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    sizes[i] = x->sizes[i];
  sizes[x->rank] = len;
  return lz_new(L, dt, x->rank + 1, sizes);
}

/* The first positions of x's order along dim (len elements, a constant >= 2) into the lazies vo
 * (values, x's dtype) and io (indices, i64), which have x's dims with dim of size k <= len. */
static void
sort_along(lowering *L, lazy *x, int dim, bool descending, lazy *vo, lazy *io)
{
  int r = x->rank;
  bool is_float = coil_dtype_is_float(x->dtype);
  coil_dtype cmp = is_float ? opmath_dtype(x->dtype) : COIL_I64;
  bool red[COIL_MAX_RANK] = {0};
  red[r] = true;

  /* rank[i] = Σ_j before(j, i), j the extra dim */
  lazy *e = with_pair_dim(L, x, x->sizes[dim], COIL_I64);
  const coil_sym *at[COIL_MAX_RANK];
  for (int i = 0; i < r; i++)
    at[i] = i == dim ? e->dvars[r] : e->dvars[i];
  const lexpr *xi = lx_cast(L, lz_at(L, x, e->dvars), cmp), *xj = lx_cast(L, lz_at(L, x, at), cmp);
  const lexpr *earlier = op2(L, COIL_KOP_LT, COIL_BOOL, lx_index(L, e->dvars[r]), lx_index(L, e->dvars[dim]));
  const lexpr *before = op2(L, COIL_KOP_OR, COIL_BOOL, strictly_before(L, xj, xi, descending, is_float),
                            op2(L, COIL_KOP_AND, COIL_BOOL, same(L, xj, xi, is_float), earlier));
  e->expr = lx_op(L, COIL_KOP_WHERE, COIL_I64, before, lx_const(L, COIL_I64, 0, 1), lx_const(L, COIL_I64, 0, 0));
  lazy *rank = lz_reduce(L, e, red, false, COIL_REDUCE_SUM, COIL_I64);

  /* indices[k] = Σ_i (rank[i] == k) · i, i the extra dim; k over the output's positions */
  lazy *f = with_pair_dim(L, io, x->sizes[dim], COIL_I64);
  for (int i = 0; i < r; i++)
    at[i] = i == dim ? f->dvars[r] : f->dvars[i];
  const lexpr *hit = op2(L, COIL_KOP_EQ, COIL_BOOL, lz_at(L, rank, at), lx_index(L, f->dvars[dim]));
  f->expr = lx_op(L, COIL_KOP_WHERE, COIL_I64, hit, lx_index(L, f->dvars[r]), lx_const(L, COIL_I64, 0, 0));
  lazy *idx = lz_reduce(L, f, red, false, COIL_REDUCE_SUM, COIL_I64);
  io->expr = lz_at(L, idx, io->dvars);

  /* values[k] = x[indices[k]] */
  int b = coil_lower_buffer_of(L, x);
  const lexpr *q = lx_indirect(L, lz_at(L, idx, vo->dvars), x->sizes[dim]);
  for (int i = 0; i < r; i++)
    at[i] = i == dim ? q->index : vo->dvars[i];
  vo->expr = lx_load_at(L, b, coil_lower_row_major(L, r, x->sizes, at), 1, &q);
}

/* x's dims with dim of size n */
static lazy *
resized(lowering *L, const lazy *x, int dim, int64_t n, coil_dtype dt)
{
  const coil_sym *sizes[COIL_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    sizes[i] = i == dim ? K(L, n) : x->sizes[i];
  return lz_new(L, dt, x->rank, sizes);
}

/* topk of a line longer than SORT_MAX: the line in chunks of SORT_MAX (the last padded with the
 * order's last value: -inf for largest, NaN for smallest, which loses every tie, being later), each chunk's top k
 * by sort_along, the C*k candidates (chunk by chunk: their order keeps ties by lower index) again
 * until they fit one chunk. vo, io: the op's results; x's line has len elements. */
static void
topk_chunked(lowering *L, lazy *x, int dim, int64_t len, int64_t k, bool largest, lazy *vo, lazy *io)
{
  int r = x->rank;
  int64_t chunks = (len + SORT_MAX - 1) / SORT_MAX;
  bool is_float = coil_dtype_is_float(x->dtype);
  coil_dtype cmp = is_float ? opmath_dtype(x->dtype) : COIL_I64;
  /* y[.., c, .., t] (t a last dim of SORT_MAX) = x[.., c*SORT_MAX + t, ..], or the sentinel */
  const coil_sym *sizes[COIL_MAX_RANK], *at[COIL_MAX_RANK];
  for (int i = 0; i < r; i++)
    sizes[i] = i == dim ? K(L, chunks) : x->sizes[i];
  sizes[r] = K(L, SORT_MAX);
  lazy *y = lz_new(L, cmp, r + 1, sizes);
  const coil_sym *pos = coil_sym_add(L->sym, coil_sym_mul(L->sym, y->dvars[dim], K(L, SORT_MAX)), y->dvars[r]);
  for (int i = 0; i < r; i++)
    at[i] = i == dim ? coil_sym_min(L->sym, pos, K(L, len - 1)) : y->dvars[i];
  /* the order's last value (NaN is the largest): padding then loses every tie, being later */
  const lexpr *sentinel = is_float ? lx_const(L, cmp, largest ? -INFINITY : NAN, 0)
                                   : lx_const(L, cmp, 0, largest ? INT64_MIN : INT64_MAX);
  y->expr = lx_op(L, COIL_KOP_WHERE, cmp, op2(L, COIL_KOP_LT, COIL_BOOL, lx_index(L, pos), lx_index(L, K(L, len))),
                  lx_cast(L, lz_at(L, x, at), cmp), sentinel);
  for (int i = 0; i < r; i++)
    sizes[i] = y->sizes[i];
  sizes[r] = K(L, k);
  lazy *cv = lz_new(L, cmp, r + 1, sizes), *ci = lz_new(L, COIL_I64, r + 1, sizes);
  sort_along(L, y, r, largest, cv, ci);
  /* the candidates along dim: m = c*k + j, value cv[.., c, .., j], index c*SORT_MAX + ci[..] */
  int64_t m = chunks * k;
  lazy *zv = resized(L, x, dim, m, cmp), *zi = resized(L, x, dim, m, COIL_I64);
  for (int i = 0; i < r; i++)
    at[i] = i == dim ? coil_sym_floordiv(L->sym, zv->dvars[dim], K(L, k)) : zv->dvars[i];
  at[r] = coil_sym_mod(L->sym, zv->dvars[dim], K(L, k));
  zv->expr = lz_at(L, cv, at);
  lz_realize(L, zv);
  for (int i = 0; i < r; i++)
    at[i] = i == dim ? coil_sym_floordiv(L->sym, zi->dvars[dim], K(L, k)) : zi->dvars[i];
  at[r] = coil_sym_mod(L->sym, zi->dvars[dim], K(L, k));
  zi->expr = op2(L, COIL_KOP_ADD, COIL_I64, lz_at(L, ci, at),
                 lx_index(L, coil_sym_mul(L->sym, coil_sym_floordiv(L->sym, zi->dvars[dim], K(L, k)), K(L, SORT_MAX))));
  lz_realize(L, zi);
  /* the top k of the candidates: their positions p, then the index and value at p */
  lazy *pv = resized(L, x, dim, k, cmp), *pi = resized(L, x, dim, k, COIL_I64);
  if (m > SORT_MAX)
    topk_chunked(L, zv, dim, m, k, largest, pv, pi);
  else
    sort_along(L, zv, dim, largest, pv, pi);
  lz_realize(L, pi);
  int b = coil_lower_buffer_of(L, zi);
  const lexpr *q = lx_indirect(L, lz_at(L, pi, io->dvars), K(L, m));
  for (int i = 0; i < r; i++)
    at[i] = i == dim ? q->index : io->dvars[i];
  io->expr = lx_load_at(L, b, coil_lower_row_major(L, r, zi->sizes, at), 1, &q);
  vo->expr = lx_cast(L, lz_at(L, pv, vo->dvars), vo->dtype);
}

/* sort, or topk (its first k positions): 1 when a topk is better left to a library call */
static int
lower_sort(lowering *L, const coil_node *n)
{
  bool topk = n->op->rule == COIL_RULE_TOPK;
  lazy *x = op_arg(L, n, 0);
  lazy *outs[2] = {op_result(L, n, 0), op_result(L, n, 1)};
  int r = x->rank, dim = r ? (int)op_lit(n, "dim")->i : 0;
  dim += dim < 0 ? r : 0;
  int64_t len = 1, k = topk ? op_lit(n, "k")->i : 0;
  /* a long topk of few positions goes by chunks (two more dims: the chunk's and the pairs') */
  bool chunked = topk && r && coil_sym_is_const(x->sizes[dim], &len) && len > SORT_MAX && k >= 1 &&
                 k <= SORT_MAX / 2 && r + 2 <= COIL_MAX_RANK;
  if (topk && !chunked && ((r && !coil_sym_is_const(x->sizes[dim], &len)) || len > SORT_MAX || r + 1 > COIL_MAX_RANK))
    return 1;
  if (r && !coil_sym_is_const(x->sizes[dim], &len))
    return node_err(L, n, "sorting along a dimension of symbolic size is not supported");
  if (len > SORT_MAX && !chunked)
    return node_err(L, n, "sorting more than 1024 elements along a dimension is not supported (generated as an "
                          "O(n^2) rank computation)");
  if (r + 1 > COIL_MAX_RANK)
    return node_err(L, n, "sort supports tensors of rank up to 7");
  if (len <= 1) { /* nothing moves (topk's k is then 0 or 1) */
    outs[0]->expr = lz_at(L, x, outs[0]->dvars);
    outs[1]->expr = lx_const(L, COIL_I64, 0, 0);
    op_set_tuple(L, n, outs);
    return 0;
  }
  bool descending = op_lit(n, topk ? "largest" : "descending")->i;
  if (chunked)
    topk_chunked(L, x, dim, len, k, descending, outs[0], outs[1]);
  else
    sort_along(L, x, dim, descending, outs[0], outs[1]);
  op_set_tuple(L, n, outs);
  return 0;
}

/* |a - b| summed into the p-norm's reduction, and the reduction's kind */
static const lexpr *
norm_term(lowering *L, const lexpr *a, const lexpr *b, double p, coil_dtype acc, coil_reduction *kind)
{
  const lexpr *d = lx_op(L, COIL_KOP_ABS, acc, op2(L, COIL_KOP_SUB, acc, a, b), NULL, NULL);
  *kind = isinf(p) ? COIL_REDUCE_MAX : COIL_REDUCE_SUM;
  if (p == 0)
    return lx_cast(L, op2(L, COIL_KOP_NE, COIL_BOOL, d, lx_const(L, acc, 0, 0)), acc);
  if (p == 1 || isinf(p))
    return d;
  if (p == 2)
    return op2(L, COIL_KOP_MUL, acc, d, d);
  return op2(L, COIL_KOP_POW, acc, d, lx_const(L, acc, p, 0));
}

static const lexpr *
norm_finish(lowering *L, const lexpr *s, double p, coil_dtype acc)
{
  if (p == 2)
    return lx_op(L, COIL_KOP_SQRT, acc, s, NULL, NULL);
  if (p == 0 || p == 1 || isinf(p))
    return s;
  return op2(L, COIL_KOP_POW, acc, s, lx_const(L, acc, 1.0 / p, 0));
}

static int
lower_cdist(lowering *L, const coil_node *n)
{
  lazy *x1 = op_arg(L, n, 0), *x2 = op_arg(L, n, 1), *out = op_result(L, n, 0);
  double p = op_lit(n, "p")->f;
  coil_dtype acc = opmath_dtype(out->dtype);
  int br = out->rank - 2;
  if (out->rank + 1 > COIL_MAX_RANK)
    return node_err(L, n, "too many batch dimensions");
  lazy *e = with_pair_dim(L, out, x1->sizes[x1->rank - 1], acc);
  const coil_sym *m = e->dvars[out->rank];
  const coil_sym *i1[COIL_MAX_RANK], *i2[COIL_MAX_RANK];
  lazy *xs[2] = {x1, x2};
  const coil_sym **is[2] = {i1, i2};
  for (int t = 0; t < 2; t++) {
    lazy *z = xs[t];
    int zb = z->rank - 2;
    for (int q = 0; q < zb; q++) { /* right-aligned batch dims; size 1 broadcasts */
      int64_t one;
      bool bcast = coil_sym_is_const(z->sizes[q], &one) && one == 1;
      is[t][q] = bcast ? K(L, 0) : e->dvars[br - zb + q];
    }
    is[t][zb] = e->dvars[br + t];
    is[t][zb + 1] = m;
  }
  coil_reduction kind;
  e->expr = norm_term(L, lx_cast(L, lz_at(L, x1, i1), acc), lx_cast(L, lz_at(L, x2, i2), acc), p, acc, &kind);
  bool red[COIL_MAX_RANK] = {0};
  red[out->rank] = true;
  lazy *s = lz_reduce(L, e, red, false, kind, acc);
  out->expr = lx_cast(L, norm_finish(L, lz_at(L, s, out->dvars), p, acc), out->dtype);
  op_set_value(L, n, out);
  return 0;
}

static int
lower_pdist(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *out = op_result(L, n, 0);
  double p = op_lit(n, "p")->f;
  coil_dtype acc = opmath_dtype(out->dtype);
  const coil_sym *N = x->sizes[0];
  /* i[k] = #{t in 1..N-1 : start(t) <= k}, start(t) = t*N - t(t+1)/2, t over [0, N) */
  lazy *c = with_pair_dim(L, out, N, COIL_I64);
  const coil_sym *t = c->dvars[1], *k = c->dvars[0];
  const coil_sym *start = coil_sym_sub(L->sym, coil_sym_mul(L->sym, t, N),
                                       coil_sym_floordiv(L->sym, coil_sym_mul(L->sym, t, coil_sym_add(L->sym, t, K(L, 1))), K(L, 2)));
  const lexpr *counts = op2(L, COIL_KOP_AND, COIL_BOOL, op2(L, COIL_KOP_GE, COIL_BOOL, lx_index(L, t), lx_const(L, COIL_I64, 0, 1)),
                            op2(L, COIL_KOP_LE, COIL_BOOL, lx_index(L, start), lx_index(L, k)));
  c->expr = lx_op(L, COIL_KOP_WHERE, COIL_I64, counts, lx_const(L, COIL_I64, 0, 1), lx_const(L, COIL_I64, 0, 0));
  bool red[COIL_MAX_RANK] = {false, true};
  lazy *rows = lz_reduce(L, c, red, false, COIL_REDUCE_SUM, COIL_I64);

  /* the distance of rows i and j, over the features m */
  lazy *e = with_pair_dim(L, out, x->sizes[1], acc);
  const coil_sym *ek = e->dvars[0];
  const lexpr *i = lz_at(L, rows, &ek), *one = lx_const(L, COIL_I64, 0, 1), *nn = lx_index(L, N);
  /* start(i) = i*N - i*(i+1)/2; j = k - start(i) + i + 1 */
  const lexpr *si = op2(L, COIL_KOP_SUB, COIL_I64, op2(L, COIL_KOP_MUL, COIL_I64, i, nn),
                        op2(L, COIL_KOP_TRUNCDIV, COIL_I64, op2(L, COIL_KOP_MUL, COIL_I64, i, op2(L, COIL_KOP_ADD, COIL_I64, i, one)),
                            lx_const(L, COIL_I64, 0, 2)));
  const lexpr *j = op2(L, COIL_KOP_ADD, COIL_I64, op2(L, COIL_KOP_SUB, COIL_I64, lx_index(L, ek), si),
                       op2(L, COIL_KOP_ADD, COIL_I64, i, one));
  int b = coil_lower_buffer_of(L, x);
  const lexpr *qi = lx_indirect(L, i, N), *qj = lx_indirect(L, j, N);
  const coil_sym *ai[2] = {qi->index, e->dvars[1]}, *aj[2] = {qj->index, e->dvars[1]};
  const lexpr *xi = lx_cast(L, lx_load_at(L, b, coil_lower_row_major(L, 2, x->sizes, ai), 1, &qi), acc);
  const lexpr *xj = lx_cast(L, lx_load_at(L, b, coil_lower_row_major(L, 2, x->sizes, aj), 1, &qj), acc);
  coil_reduction kind;
  e->expr = norm_term(L, xi, xj, p, acc, &kind);
  bool red2[COIL_MAX_RANK] = {false, true};
  lazy *s = lz_reduce(L, e, red2, false, kind, acc);
  out->expr = lx_cast(L, norm_finish(L, lz_at(L, s, out->dvars), p, acc), out->dtype);
  op_set_value(L, n, out);
  return 0;
}

int
coil_lower_pairwise(lowering *L, const coil_node *n)
{
  if (n->op->rule == COIL_RULE_SORT || n->op->rule == COIL_RULE_TOPK)
    return lower_sort(L, n);
  return n->op->sub == 1 ? lower_pdist(L, n) : lower_cdist(L, n);
}
