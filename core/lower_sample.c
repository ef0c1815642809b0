/* lower_sample.c — ops that read their input at positions computed from data, as indirect
 * loads (`%N: i64 = indirect %v, BOUND`, see lower_index.c): grid_sampler_2d.
 *
 * grid_sampler_2d: output (n, c, h, w) samples input plane (n, c) at the grid's point
 * (grid[n, h, w, 0], grid[n, h, w, 1]) = (x, y) in [-1, 1], mapped to pixels as PyTorch's
 * GridSampler.h does (align_corners; border clips, reflection folds then clips). Bilinear sums
 * the four neighbours with their weights, nearest takes the pixel at the rounded position (half
 * to even); a neighbour outside the input counts 0. Each load reads pixel y*W + x of the plane
 * through one indirect index clamped into the plane, with a mask for the neighbours outside, so
 * the run-time bound check never fires. The coordinates are computed in the dtype arithmetic
 * runs in (f32 for f16 and bf16), as PyTorch's kernels compute in the input's type.
 *
 * _embedding_bag (1-D indices with offsets): offset2bag[i] = #{b : offsets[b] <= i} - 1 (a
 * reduction over the bags, PyTorch's cumsum of ones at the offsets); output[b, d] reduces over
 * every index position i, masked to those of bag b that are not padding_idx, the weight row
 * indices[i] read by an indirect load: a sum (times per_sample_weights[i]), a mean (divided by
 * max(bag_size, 1)) or a max (0 for an empty bag; max_indices the index of the first largest,
 * found by a max reduction of I-1-i over the positions holding the max). That is O(B*I*D)
 * work, fine for the bag counts of a batch, not for a huge one. The auxiliary outputs are
 * PyTorch CPU's (see r_embedding_bag for their sizes): bag_size counts the indices of a bag
 * but padding ones (0 for sum), max_indices is bag_size for sum and mean. NaN in max: the
 * reduction propagates it, where PyTorch's kernel keeps the first element of a bag. */
#include <math.h>

#include "lower.h"

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

static const lexpr *
fconst(lowering *L, coil_dtype dt, double v)
{
  return lx_const(L, dt, v, 0);
}

static const lexpr *
floor_of(lowering *L, const lexpr *a)
{
  return lx_op(L, COIL_KOP_FLOOR, a->dtype, a, NULL, NULL);
}

/* c clipped into [0, size - 1] */
static const lexpr *
clip(lowering *L, const lexpr *c, const lexpr *size)
{
  coil_dtype dt = c->dtype;
  return op2(L, COIL_KOP_MIN, dt, op2(L, COIL_KOP_SUB, dt, size, fconst(L, dt, 1)), op2(L, COIL_KOP_MAX, dt, c, fconst(L, dt, 0)));
}

/* PyTorch's grid_sampler_compute_source_index: grid coordinate g to a pixel position along a
 * dim of `size` pixels */
static const lexpr *
source_index(lowering *L, const lexpr *g, const coil_sym *size_sym, int padding_mode, bool align)
{
  coil_dtype dt = g->dtype;
  const lexpr *size = lx_cast(L, lx_index(L, size_sym), dt), *one = fconst(L, dt, 1), *two = fconst(L, dt, 2);
  const lexpr *g1 = op2(L, COIL_KOP_ADD, dt, g, one);
  const lexpr *c = align ? op2(L, COIL_KOP_MUL, dt, op2(L, COIL_KOP_DIV, dt, g1, two), op2(L, COIL_KOP_SUB, dt, size, one))
                         : op2(L, COIL_KOP_DIV, dt, op2(L, COIL_KOP_SUB, dt, op2(L, COIL_KOP_MUL, dt, g1, size), one), two);
  if (padding_mode == 2) {
    /* reflect over [lo, hi]/2: lo = 0, hi = 2(size-1) (align_corners) or lo = -1, hi = 2size-1;
     * in = |c - lo/2|, flips = floor(in / span), extra = in - flips*span (fmod, in >= 0);
     * even flips: extra + lo/2, odd: span - extra + lo/2; size 1 with align_corners gives 0 */
    const lexpr *min = fconst(L, dt, align ? 0 : -0.5);
    const lexpr *span = align ? op2(L, COIL_KOP_SUB, dt, size, one) : size;
    const lexpr *in = lx_op(L, COIL_KOP_ABS, dt, op2(L, COIL_KOP_SUB, dt, c, min), NULL, NULL);
    const lexpr *flips = floor_of(L, op2(L, COIL_KOP_DIV, dt, in, span));
    const lexpr *extra = op2(L, COIL_KOP_SUB, dt, in, op2(L, COIL_KOP_MUL, dt, flips, span));
    const lexpr *half = floor_of(L, op2(L, COIL_KOP_DIV, dt, flips, two));
    const lexpr *even = op2(L, COIL_KOP_EQ, COIL_BOOL, flips, op2(L, COIL_KOP_MUL, dt, half, two));
    const lexpr *r = lx_op(L, COIL_KOP_WHERE, dt, even, op2(L, COIL_KOP_ADD, dt, extra, min),
                           op2(L, COIL_KOP_ADD, dt, op2(L, COIL_KOP_SUB, dt, span, extra), min));
    if (align) /* a single pixel: twice_low == twice_high */
      r = lx_op(L, COIL_KOP_WHERE, dt, op2(L, COIL_KOP_EQ, COIL_BOOL, span, fconst(L, dt, 0)), fconst(L, dt, 0), r);
    c = r;
  }
  return padding_mode >= 1 ? clip(L, c, size) : c;
}

typedef struct sampler {
  int buffer;                      /* the input, row-major */
  const coil_sym *plane;           /* offset of plane (n, c) */
  const coil_sym *h, *w;           /* the input's height and width */
  coil_dtype acc;
} sampler;

/* The input's pixel at float position (y, x) (integral values), or 0 outside it */
static const lexpr *
pixel(lowering *L, const sampler *s, const lexpr *y, const lexpr *x)
{
  coil_dtype dt = s->acc;
  const lexpr *hf = lx_cast(L, lx_index(L, s->h), dt), *wf = lx_cast(L, lx_index(L, s->w), dt), *zero = fconst(L, dt, 0);
  const lexpr *inside = op2(L, COIL_KOP_AND, COIL_BOOL,
                            op2(L, COIL_KOP_AND, COIL_BOOL, op2(L, COIL_KOP_GE, COIL_BOOL, x, zero), op2(L, COIL_KOP_LT, COIL_BOOL, x, wf)),
                            op2(L, COIL_KOP_AND, COIL_BOOL, op2(L, COIL_KOP_GE, COIL_BOOL, y, zero), op2(L, COIL_KOP_LT, COIL_BOOL, y, hf)));
  const lexpr *xi = lx_cast(L, clip(L, x, wf), COIL_I64), *yi = lx_cast(L, clip(L, y, hf), COIL_I64);
  const lexpr *flat = op2(L, COIL_KOP_ADD, COIL_I64, op2(L, COIL_KOP_MUL, COIL_I64, yi, lx_index(L, s->w)), xi);
  const lexpr *q = lx_indirect(L, flat, coil_sym_mul(L->sym, s->h, s->w));
  const lexpr *v = lx_cast(L, lx_load_at(L, s->buffer, coil_sym_add(L->sym, s->plane, q->index), 1, &q), dt);
  return lx_op(L, COIL_KOP_WHERE, dt, inside, v, zero);
}

static int
lower_grid_sample(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *grid = op_arg(L, n, 1), *out = op_result(L, n, 0);
  int mode = (int)op_lit(n, "interpolation_mode")->i, pad = (int)op_lit(n, "padding_mode")->i;
  bool align = op_lit(n, "align_corners")->i;
  coil_dtype dt = opmath_dtype(out->dtype);
  sampler s = {.buffer = coil_lower_buffer_of(L, x), .h = x->sizes[2], .w = x->sizes[3], .acc = dt};
  const coil_sym *const *d = out->dvars;
  s.plane = coil_sym_mul(L->sym, coil_sym_add(L->sym, coil_sym_mul(L->sym, d[0], x->sizes[1]), d[1]),
                         coil_sym_mul(L->sym, s.h, s.w));
  const coil_sym *gx[4] = {d[0], d[2], d[3], K(L, 0)}, *gy[4] = {d[0], d[2], d[3], K(L, 1)};
  const lexpr *ix = source_index(L, lx_cast(L, lz_at(L, grid, gx), dt), s.w, pad, align);
  const lexpr *iy = source_index(L, lx_cast(L, lz_at(L, grid, gy), dt), s.h, pad, align);
  const lexpr *v;
  if (mode == 1) {
    v = pixel(L, &s, lx_op(L, COIL_KOP_ROUND, dt, iy, NULL, NULL), lx_op(L, COIL_KOP_ROUND, dt, ix, NULL, NULL));
  } else {
    const lexpr *x0 = floor_of(L, ix), *y0 = floor_of(L, iy), *one = fconst(L, dt, 1);
    const lexpr *x1 = op2(L, COIL_KOP_ADD, dt, x0, one), *y1 = op2(L, COIL_KOP_ADD, dt, y0, one);
    const lexpr *wx[2] = {op2(L, COIL_KOP_SUB, dt, x1, ix), op2(L, COIL_KOP_SUB, dt, ix, x0)};
    const lexpr *wy[2] = {op2(L, COIL_KOP_SUB, dt, y1, iy), op2(L, COIL_KOP_SUB, dt, iy, y0)};
    const lexpr *xs[2] = {x0, x1}, *ys[2] = {y0, y1};
    v = NULL;
    for (int j = 0; j < 2; j++)
      for (int i = 0; i < 2; i++) {
        const lexpr *t = op2(L, COIL_KOP_MUL, dt, op2(L, COIL_KOP_MUL, dt, wx[i], wy[j]), pixel(L, &s, ys[j], xs[i]));
        v = v ? op2(L, COIL_KOP_ADD, dt, v, t) : t;
      }
  }
  out->expr = lx_cast(L, v, out->dtype);
  op_set_value(L, n, out);
  return 0;
}

/* ---- _embedding_bag ---- */

static const lexpr *
iconst(lowering *L, int64_t v)
{
  return lx_const(L, COIL_I64, 0, v);
}

/* A lazy over base's first `rank` dims and one more, the index position i in [0, I) */
static lazy *
over_indices(lowering *L, const lazy *base, int rank, const coil_sym *count, coil_dtype dt)
{
  const coil_sym *sizes[COIL_MAX_RANK];
  for (int j = 0; j < rank; j++)
    sizes[j] = base->sizes[j];
  sizes[rank] = count;
  return lz_new(L, dt, rank + 1, sizes);
}

/* Whether index i counts for bag b: offset2bag[i] (o2b holds it plus one) is b, and
 * indices[i] is not padding_idx */
static const lexpr *
in_bag(lowering *L, const lazy *o2b, const lazy *ix, int64_t pad, const coil_sym *b, const coil_sym *i)
{
  const lexpr *bag = op2(L, COIL_KOP_SUB, COIL_I64, lz_at(L, o2b, &i), iconst(L, 1));
  const lexpr *ok = op2(L, COIL_KOP_EQ, COIL_BOOL, bag, lx_index(L, b));
  if (pad < 0)
    return ok;
  return op2(L, COIL_KOP_AND, COIL_BOOL, ok, op2(L, COIL_KOP_NE, COIL_BOOL, lx_cast(L, lz_at(L, ix, &i), COIL_I64), iconst(L, pad)));
}

static int
lower_embedding_bag(lowering *L, const coil_node *n)
{
  lazy *w = op_arg(L, n, 0), *ix = op_arg(L, n, 1), *off = op_arg(L, n, 2), *psw = op_arg(L, n, 6);
  lazy *outs[4] = {op_result(L, n, 0), op_result(L, n, 1), op_result(L, n, 2), op_result(L, n, 3)};
  int64_t mode = op_lit(n, "mode")->i, pad = op_lit(n, "padding_idx")->i;
  const coil_sym *nidx = ix->sizes[0], *bags = outs[0]->sizes[0];
  coil_dtype acc = opmath_dtype(w->dtype);
  bool red[COIL_MAX_RANK] = {0};

  /* offset2bag[i] + 1 = #{b < B : offsets[b] <= i} */
  lazy *c = lz_new(L, COIL_I64, 2, (const coil_sym *[]){nidx, bags});
  const lexpr *covers = op2(L, COIL_KOP_LE, COIL_BOOL, lx_cast(L, lz_at(L, off, &c->dvars[1]), COIL_I64), lx_index(L, c->dvars[0]));
  c->expr = lx_op(L, COIL_KOP_WHERE, COIL_I64, covers, iconst(L, 1), iconst(L, 0));
  red[1] = true;
  lazy *o2b = lz_reduce(L, c, red, false, COIL_REDUCE_SUM, COIL_I64);
  red[1] = false;

  /* the indices that count per bag */
  lazy *cnt = over_indices(L, outs[2], 1, nidx, COIL_I64);
  cnt->expr = lx_op(L, COIL_KOP_WHERE, COIL_I64, in_bag(L, o2b, ix, pad, cnt->dvars[0], cnt->dvars[1]), iconst(L, 1), iconst(L, 0));
  red[1] = true;
  lazy *size = lz_reduce(L, cnt, red, false, COIL_REDUCE_SUM, COIL_I64); /* bag_size but for sum */
  red[1] = false;

  /* the weight rows: e[b, d, i] = weight[indices[i], d] where i counts for bag b */
  int wb = coil_lower_buffer_of(L, w);
  lazy *e = over_indices(L, outs[0], 2, nidx, acc);
  const coil_sym *b = e->dvars[0], *d = e->dvars[1], *i = e->dvars[2];
  const lexpr *q = lx_indirect(L, lx_cast(L, lz_at(L, ix, &i), COIL_I64), w->sizes[0]);
  const lexpr *row = lx_cast(L, lx_load_at(L, wb, coil_sym_add(L->sym, coil_sym_mul(L->sym, q->index, w->sizes[1]), d), 1, &q), acc);
  const lexpr *in = in_bag(L, o2b, ix, pad, b, i);
  red[2] = true;
  const lexpr *bs = lz_at(L, size, &outs[0]->dvars[0]);
  const lexpr *v;
  if (mode != 2) {
    if (psw)
      row = op2(L, COIL_KOP_MUL, acc, row, lx_cast(L, lz_at(L, psw, &i), acc));
    e->expr = lx_op(L, COIL_KOP_WHERE, acc, in, row, fconst(L, acc, 0));
    lazy *sum = lz_reduce(L, e, red, false, COIL_REDUCE_SUM, acc);
    v = lz_at(L, sum, outs[0]->dvars);
    if (mode == 1) /* mean: / max(bag_size, 1) */
      v = op2(L, COIL_KOP_DIV, acc, v, lx_cast(L, op2(L, COIL_KOP_MAX, COIL_I64, bs, iconst(L, 1)), acc));
  } else {
    /* max over the bag (0 for an empty one); max_indices: the index of the first largest, by a
     * max reduction of the key I-1-i over the largest (-1: none) */
    e->expr = lx_op(L, COIL_KOP_WHERE, acc, in, row, fconst(L, acc, -INFINITY));
    lazy *mx = lz_reduce(L, e, red, false, COIL_REDUCE_MAX, acc);
    lazy *key = over_indices(L, outs[0], 2, nidx, COIL_I64);
    const coil_sym *kb = key->dvars[0], *ki = key->dvars[2];
    const lexpr *kq = lx_indirect(L, lx_cast(L, lz_at(L, ix, &ki), COIL_I64), w->sizes[0]);
    const lexpr *krow = lx_cast(L, lx_load_at(L, wb, coil_sym_add(L->sym, coil_sym_mul(L->sym, kq->index, w->sizes[1]), key->dvars[1]), 1, &kq), acc);
    const lexpr *best = op2(L, COIL_KOP_AND, COIL_BOOL, in_bag(L, o2b, ix, pad, kb, ki), op2(L, COIL_KOP_EQ, COIL_BOOL, krow, lz_at(L, mx, key->dvars)));
    key->expr = lx_op(L, COIL_KOP_WHERE, COIL_I64, best,
                      lx_index(L, coil_sym_sub(L->sym, coil_sym_add(L->sym, nidx, coil_sym_const(L->sym, -1)), ki)), iconst(L, -1));
    lazy *first = lz_reduce(L, key, red, false, COIL_REDUCE_MAX, COIL_I64);
    const lexpr *empty = op2(L, COIL_KOP_EQ, COIL_BOOL, bs, iconst(L, 0));
    v = lx_op(L, COIL_KOP_WHERE, acc, empty, fconst(L, acc, 0), lz_at(L, mx, outs[0]->dvars));
    const lexpr *k = lz_at(L, first, outs[3]->dvars);
    const lexpr *pos = op2(L, COIL_KOP_SUB, COIL_I64, lx_index(L, coil_sym_add(L->sym, nidx, coil_sym_const(L->sym, -1))), k);
    const lexpr *pq = lx_indirect(L, op2(L, COIL_KOP_MIN, COIL_I64, pos, lx_index(L, coil_sym_add(L->sym, nidx, coil_sym_const(L->sym, -1)))), nidx);
    const lexpr *idv = lx_cast(L, lx_load_at(L, coil_lower_buffer_of(L, ix), pq->index, 1, &pq), outs[3]->dtype);
    outs[3]->expr = lx_op(L, COIL_KOP_WHERE, outs[3]->dtype, op2(L, COIL_KOP_LT, COIL_BOOL, k, iconst(L, 0)),
                          lx_const(L, outs[3]->dtype, 0, 0), idv);
  }
  outs[0]->expr = lx_cast(L, v, outs[0]->dtype);
  outs[1]->expr = lx_cast(L, op2(L, COIL_KOP_SUB, COIL_I64, lz_at(L, o2b, outs[1]->dvars), iconst(L, 1)), outs[1]->dtype);
  const lexpr *bag_size = mode == 0 ? lx_const(L, outs[2]->dtype, 0, 0) : lx_cast(L, lz_at(L, size, outs[2]->dvars), outs[2]->dtype);
  outs[2]->expr = bag_size;
  if (mode != 2)
    outs[3]->expr = mode == 0 ? lx_const(L, outs[3]->dtype, 0, 0) : lx_cast(L, lz_at(L, size, outs[3]->dvars), outs[3]->dtype);
  op_set_tuple(L, n, outs);
  return 0;
}

int
coil_lower_sample(lowering *L, const coil_node *n)
{
  return n->op->rule == COIL_RULE_EMBEDDING_BAG ? lower_embedding_bag(L, n) : lower_grid_sample(L, n);
}
