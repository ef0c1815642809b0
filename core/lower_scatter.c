/* lower_scatter.c — scatters as Inductor lowers them: the result starts as a copy of self and a
 * scatter kernel stores through index values into it (a store whose index uses indirect
 * variables, see lower_index.c), in place.
 *
 * The destination: when self is the buffer an earlier scatter produced and this statement is
 * its only reader (and it is no graph output), the scatter writes that buffer in place — so a
 * chain x1 = scatter_add(x0, ...), x2 = scatter_add(x1, ...), ... is one copy of x0 and one
 * scatter kernel per step over one buffer, not a copy per step. Otherwise self is realized into
 * a fresh buffer first (the "copy": where self is an expression, zeros or a + b, that kernel
 * computes it, so nothing is copied twice).
 *
 * A scatter node (LN_SCATTER) writes a new buffer that takes over the storage of the buffer it
 * starts from (its `init`, read by nobody after it), so every buffer still has one writer and
 * the scheduler orders the copy before the scatter through that read. Scatter nodes are never
 * fused (sched.c): a reader of the destination in the same kernel would see a partial result.
 * Duplicate indices: plain scatter and index_put without accumulate store one of the values
 * (PyTorch leaves it undefined); scatter_add, scatter_reduce, index_put with accumulate and
 * embedding_dense_backward combine every one, with the Wrapper IR's combining stores.
 *
 * select_scatter and slice_scatter need no indirection: they are pointwise selects between src
 * and self; masked_scatter is a prefix count of the mask and an indirect load of source. */
#include <math.h>
#include <string.h>

#include "lower.h"

static const coil_sym *
K(lowering *L, int64_t v)
{
  return coil_sym_const(L->sym, v);
}

static int
slot(const lowering *L, const coil_value *v)
{
  return v->kind == COIL_VAL_NODE ? L->g->ninputs + v->index : v->index;
}

/* z as a buffer of its own, computed by a new node (a copy of z's buffer when z is one). */
static int
fresh_copy(lowering *L, const lazy *z)
{
  lazy *c = lz_new(L, z->dtype, z->rank, z->sizes);
  c->expr = lz_at(L, z, c->dvars);
  return lz_realize(L, c);
}

/* The buffer the scatter of statement n starts from: self's own buffer when an earlier scatter
 * produced it as the version of the value n reads, nothing else reads that version and it is no
 * graph output; else a fresh copy. */
static int
destination(lowering *L, const coil_node *n, int arg)
{
  const coil_lit *l = &n->bound[arg];
  lazy *self = L->values[slot(L, l->v)];
  int b = lz_is_buffer(L, self), ver = L->version[slot(L, l->v)];
  bool mine = b >= 0 && ver >= 0 && L->bufs[b].kind == LB_COMPUTED && L->bufs[b].value == ver &&
              L->readers[ver] == 1;
  for (int i = 0; mine && i < L->g->noutputs; i++)
    mine = L->final_version[slot(L, L->g->outputs[i])] != ver;
  return mine ? b : fresh_copy(L, self);
}

/* The constant lazy tensor v of dtype dt, realized into a fresh buffer. */
static int
filled(lowering *L, coil_dtype dt, int rank, const coil_sym *const *sizes, double f, int64_t i)
{
  lazy *z = lz_new(L, dt, rank, sizes);
  z->expr = lx_const(L, dt, f, i);
  return lz_realize(L, z);
}

/* A scatter node over `space` (its dims are space->dvars): `body` stored with `mode` at `store`
 * (over those dims and the variables of the indirect values ind[]) into a new buffer that takes
 * over buffer init. Returns the new buffer. */
static int
scatter_node(lowering *L, int init, const lazy *space, const lexpr *body, const coil_sym *store, int nind,
             const lexpr *const *ind, coil_store_mode mode)
{
  const lbuf *ib = &L->bufs[init];
  int b = lbuf_new(L, ib->dtype, ib->rank, ib->sizes);
  int k = lnode_new(L, LN_SCATTER, b); /* may move L->nodes */
  lnode *nd = &L->nodes[k];
  nd->rank = space->rank;
  memcpy(nd->sizes, space->sizes, sizeof space->sizes);
  memcpy(nd->dvars, space->dvars, sizeof space->dvars);
  nd->body = lx_cast(L, body, L->bufs[b].dtype);
  nd->store = store;
  nd->init = init;
  nd->mode = mode;
  for (int i = 0; i < nind && i < 3; i++)
    nd->store_ind[nd->nstore_ind++] = ind[i];
  return b;
}

/* The statement's result: a contiguous load of buffer b, which a later scatter of this value may
 * write in place. */
static void
set_buffer_result(lowering *L, const coil_node *n, int b)
{
  lazy *out = op_result(L, n, 0);
  out->expr = lx_load(L, b, coil_lower_row_major(L, out->rank, out->sizes, out->dvars));
  out->realized = b;
  L->bufs[b].value = slot(L, n->out);
  op_set_value(L, n, out);
}

static int
unsupported(lowering *L, const coil_node *n, const char *what)
{
  return coil_diag_at(L->d, L->g->file, n->line, n->col, "%s: %s", n->op->name, what);
}

/* The identity of a combining store: where include_self=False starts a scattered element. */
static const lexpr *
identity(lowering *L, coil_store_mode m, coil_dtype dt)
{
  int64_t lo = 0, hi = 0;
  switch (dt) {
  case COIL_I64: lo = INT64_MIN, hi = INT64_MAX; break;
  case COIL_I32: lo = INT32_MIN, hi = INT32_MAX; break;
  case COIL_I16: lo = INT16_MIN, hi = INT16_MAX; break;
  case COIL_I8: lo = INT8_MIN, hi = INT8_MAX; break;
  case COIL_U8: lo = 0, hi = UINT8_MAX; break;
  default: break;
  }
  switch (m) {
  case COIL_STORE_MUL: return lx_const(L, dt, 1, 1);
  case COIL_STORE_MAX: return lx_const(L, dt, -INFINITY, lo);
  case COIL_STORE_MIN: return lx_const(L, dt, INFINITY, hi);
  default: return lx_const(L, dt, 0, 0);
  }
}

/* scatter.src / .value, scatter_add, scatter_reduce.two: over the index's points p,
 * out[p with p[dim] = index[p]] (op)= src[p] */
static int
lower_scatter_dim(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *ix = op_arg(L, n, 2);
  int sub = n->op->sub;
  lazy *src = sub == 1 ? NULL : op_arg(L, n, 3);
  int dim = (int)op_lit(n, "dim")->i;
  dim = dim < 0 ? dim + x->rank : dim;
  coil_store_mode mode = sub == 2 ? COIL_STORE_ADD : COIL_STORE_PLAIN;
  bool include_self = true, mean = false;
  if (sub == 3) {
    const char *red = op_lit(n, "reduce")->s;
    mode = strcmp(red, "prod") == 0 ? COIL_STORE_MUL : strcmp(red, "amax") == 0 ? COIL_STORE_MAX
           : strcmp(red, "amin") == 0 ? COIL_STORE_MIN : COIL_STORE_ADD;
    mean = strcmp(red, "mean") == 0;
    include_self = op_lit(n, "include_self")->i != 0;
  }
  lazy *sp = lz_new(L, ix->dtype, ix->rank, ix->sizes);
  const lexpr *q = lx_indirect(L, lx_cast(L, lz_at(L, ix, sp->dvars), COIL_I64), x->sizes[dim]);
  const coil_sym *at[COIL_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    at[i] = i == dim ? q->index : sp->dvars[i];
  const coil_sym *store = coil_lower_row_major(L, x->rank, x->sizes, at);
  const lexpr *body;
  if (src) {
    body = lz_at(L, src, sp->dvars);
  } else {
    const coil_lit *v = op_lit(n, "value");
    body = lx_const(L, x->dtype, v->kind == COIL_LIT_FLOAT ? v->f : (double)v->i,
                    v->kind == COIL_LIT_FLOAT ? coil_f64_to_i64(v->f) : v->i);
  }
  int dest = destination(L, n, 0);
  if (!include_self) /* the scattered elements start at the reduction's identity */
    dest = scatter_node(L, dest, sp, identity(L, mode, x->dtype), store, 1, &q, COIL_STORE_PLAIN);
  int b = scatter_node(L, dest, sp, body, store, 1, &q, mode);
  if (!mean) {
    set_buffer_result(L, n, b);
    return 0;
  }
  /* mean: the sum divided by how many values it adds (self counting as one with include_self),
   * at least 1; integers divide with floor rounding, as PyTorch's div_(count, 'floor') */
  coil_dtype cdt = coil_dtype_is_float(x->dtype) ? opmath_dtype(x->dtype) : COIL_I64;
  int cnt = filled(L, cdt, x->rank, x->sizes, include_self ? 1 : 0, include_self ? 1 : 0);
  cnt = scatter_node(L, cnt, sp, lx_const(L, cdt, 1, 1), store, 1, &q, COIL_STORE_ADD);
  lazy *out = op_result(L, n, 0);
  const coil_sym *here = coil_lower_row_major(L, out->rank, out->sizes, out->dvars);
  const lexpr *c = lx_op(L, COIL_KOP_MAX, cdt, lx_load(L, cnt, here), lx_const(L, cdt, 1, 1), NULL);
  const lexpr *s = lx_cast(L, lx_load(L, b, here), cdt);
  out->expr = lx_cast(L, lx_op(L, coil_dtype_is_float(cdt) ? COIL_KOP_DIV : COIL_KOP_FLOORDIV, cdt, s, c, NULL),
                      x->dtype);
  op_set_value(L, n, out);
  return 0;
}

/* index_put: over the indexed shape (as index.Tensor's result), self[indices at p] (+)= values
 * broadcast to p. Negative indices count from the end. */
static int
lower_index_put(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *vals = op_arg(L, n, 2);
  const coil_lit *l = op_lit(n, "indices");
  bool accumulate = op_lit(n, "accumulate")->i != 0;
  lazy *ixs[COIL_MAX_RANK] = {0};
  int first = -1, last = -1, count = 0, brank = 0;
  for (int k = 0; k < l->n; k++) {
    if (l->items[k].kind != COIL_LIT_VALUE)
      continue;
    ixs[k] = L->values[slot(L, l->items[k].v)];
    first = first < 0 ? k : first;
    last = k;
    count++;
    brank = ixs[k]->rank > brank ? ixs[k]->rank : brank;
  }
  if (count > 3)
    return unsupported(L, n, "more than 3 index tensors are not supported");
  /* the indexed shape: B (the index tensors' broadcast shape) in place of the indexed dims when
   * they are adjacent, first otherwise */
  const coil_sym *bsizes[COIL_MAX_RANK];
  for (int j = 0; j < brank; j++) {
    bsizes[j] = K(L, 1);
    for (int k = 0; k < l->n; k++) {
      int64_t one;
      int jj = j - (brank - (ixs[k] ? ixs[k]->rank : 0));
      if (ixs[k] && jj >= 0 && !(coil_sym_is_const(ixs[k]->sizes[jj], &one) && one == 1))
        bsizes[j] = ixs[k]->sizes[jj];
    }
  }
  bool adjacent = last - first + 1 == count;
  int bpos = adjacent ? first : 0, irank = 0;
  const coil_sym *isizes[COIL_MAX_RANK];
  if (!adjacent) {
    for (int j = 0; j < brank; j++)
      isizes[irank++] = bsizes[j];
    for (int k = 0; k < x->rank; k++)
      if (k >= l->n || !ixs[k])
        isizes[irank++] = x->sizes[k];
  } else {
    for (int k = 0; k < first; k++)
      isizes[irank++] = x->sizes[k];
    for (int j = 0; j < brank; j++)
      isizes[irank++] = bsizes[j];
    for (int k = last + 1; k < x->rank; k++)
      isizes[irank++] = x->sizes[k];
  }
  lazy *sp = lz_new(L, x->dtype, irank, isizes);
  const lexpr *qs[3];
  int nq = 0;
  const coil_sym *at[COIL_MAX_RANK];
  for (int k = 0, rest = 0; k < x->rank; k++) {
    if (k >= l->n || !ixs[k]) {
      at[k] = sp->dvars[!adjacent ? brank + rest++ : k < first ? k : k - count + brank];
      continue;
    }
    const coil_sym *zi[COIL_MAX_RANK]; /* index tensor k broadcast over B, right-aligned */
    lazy *z = ixs[k];
    for (int j = 0; j < z->rank; j++) {
      int64_t one;
      bool bcast = coil_sym_is_const(z->sizes[j], &one) && one == 1;
      zi[j] = bcast ? K(L, 0) : sp->dvars[bpos + brank - z->rank + j];
    }
    const lexpr *v = lx_cast(L, lz_at(L, z, zi), COIL_I64);
    const lexpr *zero = lx_const(L, COIL_I64, 0, 0), *size = lx_index(L, x->sizes[k]);
    const lexpr *neg = lx_op(L, COIL_KOP_AND, COIL_BOOL, lx_op(L, COIL_KOP_LT, COIL_BOOL, v, zero, NULL),
                             lx_op(L, COIL_KOP_GE, COIL_BOOL, v, lx_op(L, COIL_KOP_NEG, COIL_I64, size, NULL, NULL), NULL),
                             NULL);
    v = lx_op(L, COIL_KOP_WHERE, COIL_I64, neg, lx_op(L, COIL_KOP_ADD, COIL_I64, v, size, NULL), v);
    qs[nq] = lx_indirect(L, v, x->sizes[k]);
    at[k] = qs[nq++]->index;
  }
  const coil_sym *vi[COIL_MAX_RANK]; /* values broadcast over the indexed shape */
  for (int j = 0; j < vals->rank; j++) {
    int64_t one;
    bool bcast = coil_sym_is_const(vals->sizes[j], &one) && one == 1;
    vi[j] = bcast ? K(L, 0) : sp->dvars[irank - vals->rank + j];
  }
  int dest = destination(L, n, 0);
  int b = scatter_node(L, dest, sp, lz_at(L, vals, vi), coil_lower_row_major(L, x->rank, x->sizes, at), nq, qs,
                       accumulate ? COIL_STORE_ADD : COIL_STORE_PLAIN);
  set_buffer_result(L, n, b);
  return 0;
}

/* embedding_dense_backward: zeros [num_weights, D], then over grad_output's points p,
 * out[indices[p...], p[-1]] += grad_output[p] (times 1/count of the index with
 * scale_grad_by_freq); rows of padding_idx get only zeros added */
static int
lower_embedding_bwd(lowering *L, const coil_node *n)
{
  lazy *g = op_arg(L, n, 0), *ix = op_arg(L, n, 1), *out = op_result(L, n, 0);
  int64_t pad = op_lit(n, "padding_idx")->i;
  bool by_freq = op_lit(n, "scale_grad_by_freq")->i != 0;
  coil_dtype dt = out->dtype, cdt = opmath_dtype(dt);
  lazy *sp = lz_new(L, g->dtype, g->rank, g->sizes);
  const lexpr *k = lx_cast(L, lz_at(L, ix, sp->dvars), COIL_I64); /* the first rank - 1 dims */
  const lexpr *q = lx_indirect(L, k, out->sizes[0]);
  const coil_sym *at[2] = {q->index, sp->dvars[g->rank - 1]};
  const lexpr *v = lx_cast(L, lz_at(L, g, sp->dvars), cdt);
  if (by_freq) { /* counts per row: a scatter-add of ones over the indices */
    lazy *isp = lz_new(L, ix->dtype, ix->rank, ix->sizes);
    const lexpr *iq = lx_indirect(L, lx_cast(L, lz_at(L, ix, isp->dvars), COIL_I64), out->sizes[0]);
    int cnt = filled(L, COIL_I64, 1, out->sizes, 0, 0);
    cnt = scatter_node(L, cnt, isp, lx_const(L, COIL_I64, 1, 1), iq->index, 1, &iq, COIL_STORE_ADD);
    const lexpr *c = lx_cast(L, lx_load_at(L, cnt, q->index, 1, &q), cdt);
    v = lx_op(L, COIL_KOP_DIV, cdt, v, c, NULL);
  }
  const lexpr *skip = lx_op(L, COIL_KOP_EQ, COIL_BOOL, k, lx_const(L, COIL_I64, 0, pad), NULL);
  v = lx_op(L, COIL_KOP_WHERE, cdt, skip, lx_const(L, cdt, 0, 0), v);
  int dest = filled(L, dt, 2, out->sizes, 0, 0);
  int b = scatter_node(L, dest, sp, v, coil_lower_row_major(L, 2, out->sizes, at), 1, &q, COIL_STORE_ADD);
  set_buffer_result(L, n, b);
  return 0;
}

/* select_scatter: out[p] = p[dim] == index ? src[p without dim] : self[p];
 * slice_scatter: out[p] = p[dim] in start:end:step ? src[p with (p[dim] - start) / step] : self[p] */
static void
view_scatter(lowering *L, const coil_node *n, bool select, lazy *x, lazy *src, lazy *out)
{
  int d = (int)op_lit(n, "dim")->i;
  d = d < 0 ? d + x->rank : d;
  const coil_sym *j = out->dvars[d], *size = x->sizes[d];
  const coil_sym *at[COIL_MAX_RANK];
  const lexpr *inside;
  if (select) {
    int64_t v = op_lit(n, "index")->i;
    const coil_sym *i = v < 0 ? coil_sym_add(L->sym, size, K(L, v)) : K(L, v);
    inside = lx_op(L, COIL_KOP_EQ, COIL_BOOL, lx_index(L, j), lx_index(L, i), NULL);
    for (int k = 0, r = 0; k < x->rank; k++)
      if (k != d)
        at[r++] = out->dvars[k];
  } else {
    const coil_lit *ls = op_lit(n, "start");
    int64_t step = op_lit(n, "step")->i;
    const coil_sym *start = K(L, 0);
    if (ls->kind != COIL_LIT_NONE) { /* as slice: from the end when negative, clamped to [0, size] */
      start = ls->i < 0 ? coil_sym_add(L->sym, size, K(L, ls->i)) : K(L, ls->i);
      start = coil_sym_min(L->sym, coil_sym_max(L->sym, start, K(L, 0)), size);
    }
    const coil_sym *off = coil_sym_sub(L->sym, j, start);
    const coil_sym *end = coil_sym_add(L->sym, start, coil_sym_mul(L->sym, src->sizes[d], K(L, step)));
    inside = lx_in_range(L, j, start, end);
    if (step != 1)
      inside = lx_op(L, COIL_KOP_AND, COIL_BOOL, inside,
                     lx_op(L, COIL_KOP_EQ, COIL_BOOL, lx_index(L, coil_sym_mod(L->sym, off, K(L, step))),
                           lx_const(L, COIL_I64, 0, 0), NULL),
                     NULL);
    memcpy(at, out->dvars, sizeof at);
    at[d] = clamped_index(L, coil_sym_floordiv(L->sym, off, K(L, step)), src->sizes[d]);
  }
  const lexpr *a = lx_cast(L, lz_at(L, src, at), x->dtype), *b = lz_at(L, x, out->dvars);
  out->expr = lx_op(L, COIL_KOP_WHERE, x->dtype, inside, a, b);
}

static int
lower_view_scatter(lowering *L, const coil_node *n)
{
  lazy *out = op_result(L, n, 0);
  view_scatter(L, n, n->op->rule == COIL_RULE_SELECT_SCATTER, op_arg(L, n, 0), op_arg(L, n, 1), out);
  op_set_value(L, n, out);
  return 0;
}

/* Every name of the tensor rooted at root (up to statement n) stands for z, version ver. */
static void
set_names(lowering *L, const coil_value *root, const coil_node *n, lazy *z, int ver)
{
  const coil_graph *g = L->g;
  for (int i = 0; i < g->ninputs; i++)
    if (coil_value_root(g->inputs[i]) == root) {
      L->values[i] = z;
      L->version[i] = ver;
    }
  for (int i = 0; &g->nodes[i] <= n; i++)
    if (g->nodes[i].out && coil_value_root(g->nodes[i].out) == root) {
      L->values[g->ninputs + i] = z;
      L->version[g->ninputs + i] = ver;
    }
}

void
coil_lower_mutation(lowering *L, const coil_node *n)
{
  lazy *now = L->values[slot(L, n->out)];
  int ver = slot(L, n->out);
  for (const coil_value *w = n->bound[0].v;;) {
    const coil_value *root = coil_value_root(w);
    set_names(L, root, n, now, ver);
    if (root->kind == COIL_VAL_INPUT || root->kind == COIL_VAL_PARAM || root->kind == COIL_VAL_BUFFER)
      L->mutated[root->index] = true;
    if (!root->view_of)
      return;
    const coil_node *vn = &L->g->nodes[root->index]; /* written through a view: its base too */
    bool select = vn->op->rule == COIL_RULE_SELECT;
    w = root->view_of;
    lazy *base = L->values[slot(L, w)], *fresh = lz_new(L, base->dtype, base->rank, base->sizes);
    view_scatter(L, vn, select, base, now, fresh);
    now = fresh;
    ver = -1; /* a version of no statement: never written in place */
  }
}

/* Element idx of z broadcast over a tensor of rank `rank` (right-aligned; size-1 dims read 0). */
static const lexpr *
broadcast_at(lowering *L, const lazy *z, int rank, const coil_sym *const *idx)
{
  const coil_sym *at[COIL_MAX_RANK];
  for (int j = 0; j < z->rank; j++) {
    int64_t one;
    at[j] = coil_sym_is_const(z->sizes[j], &one) && one == 1 ? K(L, 0) : idx[rank - z->rank + j];
  }
  return lz_at(L, z, at);
}

/* masked_scatter: out[p] = mask[p] ? source.flatten()[k(p)] : self[p], k(p) the number of true
 * mask elements before p in row-major order: an exclusive prefix count of the flattened mask, as
 * a sum reduction over [N, N] (O(N²), so at most MASKED_MAX elements), then an indirect load of
 * source (its bound is source's size: too few elements fail the run). */
#define MASKED_MAX 4096
static int
lower_masked_scatter(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *m = op_arg(L, n, 1), *src = op_arg(L, n, 2), *out = op_result(L, n, 0);
  const coil_sym *total = K(L, 1), *numel_src = K(L, 1);
  for (int i = 0; i < out->rank; i++)
    total = coil_sym_mul(L->sym, total, out->sizes[i]);
  for (int i = 0; i < src->rank; i++)
    numel_src = coil_sym_mul(L->sym, numel_src, src->sizes[i]);
  int64_t nt;
  if (!coil_sym_is_const(total, &nt) || nt > MASKED_MAX || nt == 0)
    return unsupported(L, n, "only masks of a known size from 1 to 4096 elements are supported (the prefix count is "
                             "a quadratic reduction)");
  /* before[i] = sum over j < i of mask_flat[j] */
  const coil_sym *sq[2] = {total, total};
  lazy *e = lz_new(L, COIL_I64, 2, sq);
  const coil_sym *jdx[COIL_MAX_RANK], *stride = K(L, 1);
  for (int i = out->rank - 1; i >= 0; i--) {
    jdx[i] = coil_sym_mod(L->sym, coil_sym_floordiv(L->sym, e->dvars[1], stride), out->sizes[i]);
    stride = coil_sym_mul(L->sym, stride, out->sizes[i]);
  }
  const lexpr *mj = lx_cast(L, broadcast_at(L, m, out->rank, jdx), COIL_I64);
  const lexpr *earlier = lx_op(L, COIL_KOP_LT, COIL_BOOL, lx_index(L, e->dvars[1]), lx_index(L, e->dvars[0]), NULL);
  e->expr = lx_op(L, COIL_KOP_WHERE, COIL_I64, earlier, mj, lx_const(L, COIL_I64, 0, 0));
  bool red[COIL_MAX_RANK] = {false, true};
  lazy *before = lz_reduce(L, e, red, false, COIL_REDUCE_SUM, COIL_I64);
  const coil_sym *flat = coil_lower_row_major(L, out->rank, out->sizes, out->dvars);
  const lexpr *mp = broadcast_at(L, m, out->rank, out->dvars);
  const lexpr *k = lx_op(L, COIL_KOP_WHERE, COIL_I64, mp, lz_at(L, before, &flat), lx_const(L, COIL_I64, 0, 0));
  const lexpr *q = lx_indirect(L, k, numel_src);
  int sb = lz_is_buffer(L, src);
  sb = sb >= 0 ? sb : lz_realize(L, src);
  out->expr = lx_op(L, COIL_KOP_WHERE, out->dtype, mp, lx_load_at(L, sb, q->index, 1, &q),
                    broadcast_at(L, x, out->rank, out->dvars));
  op_set_value(L, n, out);
  return 0;
}

int
coil_lower_scatter(lowering *L, const coil_node *n)
{
  switch (n->op->rule) {
  case COIL_RULE_SCATTER: return lower_scatter_dim(L, n);
  case COIL_RULE_INDEX_PUT: return lower_index_put(L, n);
  case COIL_RULE_EMBEDDING_BWD: return lower_embedding_bwd(L, n);
  case COIL_RULE_SELECT_SCATTER: case COIL_RULE_SLICE_SCATTER: return lower_view_scatter(L, n);
  case COIL_RULE_MASKED_SCATTER: return lower_masked_scatter(L, n);
  default: return 1;
  }
}
