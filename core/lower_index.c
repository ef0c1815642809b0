/* lower_index.c — indexing as indirect loads (Inductor's indirect_indexing): embedding, gather
 * and index.Tensor read the source tensor at positions that are values of an index tensor.
 *
 * Each index value becomes an LX_INDIRECT node (a kernel `indirect` instruction): checked at run
 * time to lie in [0, size of the indexed dimension) — a bad index fails the run with an error,
 * never reads outside the source — and used as a variable in the load's index expression. The
 * index tensor's producer fuses into the gathering kernel (arange + add + indexing is one
 * kernel), and so does what follows (embedding + add + layer_norm); the source itself is read
 * from a buffer (realized first when it is an expression), since its elements are read anywhere.
 *
 * Negative indices: index.Tensor wraps them (x[-1] is the last row), as PyTorch does; embedding
 * and gather take none (a negative index is out of range). A bool index tensor (a mask, whose
 * result size depends on the data) or more than three index tensors stay a library call. */
#include "lower.h"

static lazy *
value_of(lowering *L, const coil_value *v)
{
  return L->values[v->kind == COIL_VAL_NODE ? L->g->ninputs + v->index : v->index];
}

const coil_sym *
coil_lower_row_major(lowering *L, int rank, const coil_sym *const *sizes, const coil_sym *const *idx)
{
  const coil_sym *off = coil_sym_const(L->sym, 0), *stride = coil_sym_const(L->sym, 1);
  for (int i = rank - 1; i >= 0; i--) {
    off = coil_sym_add(L->sym, off, coil_sym_mul(L->sym, idx[i], stride));
    stride = coil_sym_mul(L->sym, stride, sizes[i]);
  }
  return off;
}

/* Element idx of index tensor z as an i64 expression; with wrap, a negative value counts from
 * the end of a dimension of `size` elements (one below -size stays as it is, so the run's error
 * names the index as written). */
static const lexpr *
index_value(lowering *L, const lazy *z, const coil_sym *const *idx, bool wrap, const coil_sym *size)
{
  const lexpr *v = lx_cast(L, lz_at(L, z, idx), COIL_I64);
  if (!wrap)
    return v;
  const lexpr *zero = lx_const(L, COIL_I64, 0, 0);
  const lexpr *n = lx_index(L, size);
  const lexpr *neg = lx_op(L, COIL_KOP_AND, COIL_BOOL, lx_op(L, COIL_KOP_LT, COIL_BOOL, v, zero, NULL),
                           lx_op(L, COIL_KOP_GE, COIL_BOOL, v, lx_op(L, COIL_KOP_NEG, COIL_I64, n, NULL, NULL), NULL),
                           NULL);
  const lexpr *up = lx_op(L, COIL_KOP_ADD, COIL_I64, v, n, NULL);
  return lx_op(L, COIL_KOP_WHERE, COIL_I64, neg, up, v);
}

/* out[p..., j] = weight[indices[p...], j] */
static int
lower_embedding(lowering *L, const coil_node *n)
{
  lazy *w = op_arg(L, n, 0), *ix = op_arg(L, n, 1), *out = op_result(L, n, 0);
  int b = coil_lower_buffer_of(L, w);
  const lexpr *q = lx_indirect(L, index_value(L, ix, out->dvars, false, NULL), w->sizes[0]);
  const coil_sym *at[COIL_MAX_RANK] = {q->index};
  for (int i = 1; i < w->rank; i++)
    at[i] = out->dvars[out->rank - w->rank + i];
  out->expr = lx_load_at(L, b, coil_lower_row_major(L, w->rank, w->sizes, at), 1, &q);
  op_set_value(L, n, out);
  return 0;
}

/* out[p] = self[p with p[dim] = index[p]] */
static int
lower_gather(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *ix = op_arg(L, n, 2), *out = op_result(L, n, 0);
  int dim = (int)op_lit(n, "dim")->i;
  if (x->rank == 0) { /* a 0-d self: the index must be 0 and the result is self */
    const lexpr *q = lx_indirect(L, index_value(L, ix, out->dvars, false, NULL), coil_sym_const(L->sym, 1));
    out->expr = lx_load_at(L, coil_lower_buffer_of(L, x), coil_sym_const(L->sym, 0), 1, &q);
    op_set_value(L, n, out);
    return 0;
  }
  if (dim < 0)
    dim += x->rank;
  int b = coil_lower_buffer_of(L, x);
  const lexpr *q = lx_indirect(L, index_value(L, ix, out->dvars, false, NULL), x->sizes[dim]);
  const coil_sym *at[COIL_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    at[i] = i == dim ? q->index : out->dvars[i];
  out->expr = lx_load_at(L, b, coil_lower_row_major(L, x->rank, x->sizes, at), 1, &q);
  op_set_value(L, n, out);
  return 0;
}

/* Advanced indexing: the index tensors broadcast to B; their dims replace the indexed dims in
 * place when those are adjacent, and go first otherwise (NumPy's rule, as core/ref_ops.c). */
static int
lower_index_tensor(lowering *L, const coil_node *n, bool *done)
{
  lazy *x = op_arg(L, n, 0), *out = op_result(L, n, 0);
  const coil_lit *l = op_lit(n, "indices");
  lazy *ixs[COIL_MAX_RANK] = {0};
  int first = -1, last = -1, count = 0, brank = 0;
  *done = false;
  for (int k = 0; k < l->n && k < x->rank; k++) {
    if (l->items[k].kind != COIL_LIT_VALUE)
      continue;
    ixs[k] = value_of(L, l->items[k].v);
    if (ixs[k]->dtype == COIL_BOOL || ixs[k]->dtype == COIL_U8 || !coil_dtype_is_int(ixs[k]->dtype))
      return 0; /* a mask: a library call */
    first = first < 0 ? k : first;
    last = k;
    count++;
    brank = ixs[k]->rank > brank ? ixs[k]->rank : brank;
  }
  if (count == 0 || count > 3 || l->n > x->rank)
    return 0;
  bool adjacent = last - first + 1 == count;
  int bpos = adjacent ? first : 0; /* where B's dims start in out */
  const coil_sym *bvars[COIL_MAX_RANK];
  for (int j = 0; j < brank; j++)
    bvars[j] = out->dvars[bpos + j];
  const lexpr *qs[3];
  int nq = 0;
  const coil_sym *at[COIL_MAX_RANK];
  for (int k = 0, rest = 0; k < x->rank; k++) {
    if (!ixs[k]) { /* a dim of x kept: before B, after B, or (not adjacent) after B in order */
      at[k] = out->dvars[!adjacent ? brank + rest++ : k < first ? k : k - count + brank];
      continue;
    }
    const coil_sym *zi[COIL_MAX_RANK]; /* right-aligned broadcast of index tensor k over B */
    lazy *z = ixs[k];
    for (int j = 0; j < z->rank; j++) {
      int64_t one;
      bool bcast = coil_sym_is_const(z->sizes[j], &one) && one == 1;
      zi[j] = bcast ? coil_sym_const(L->sym, 0) : bvars[brank - z->rank + j];
    }
    qs[nq] = lx_indirect(L, index_value(L, z, zi, true, x->sizes[k]), x->sizes[k]);
    at[k] = qs[nq++]->index;
  }
  int b = coil_lower_buffer_of(L, x);
  out->expr = lx_load_at(L, b, coil_lower_row_major(L, x->rank, x->sizes, at), nq, qs);
  op_set_value(L, n, out);
  *done = true;
  return 0;
}

int
coil_lower_index(lowering *L, const coil_node *n)
{
  switch (n->op->rule) {
  case COIL_RULE_EMBEDDING: return lower_embedding(L, n);
  case COIL_RULE_GATHER: return lower_gather(L, n);
  case COIL_RULE_INDEX: {
    bool done;
    int rc = lower_index_tensor(L, n, &done);
    return rc || done ? rc : 1; /* 1: the caller makes it a library call */
  }
  default: return 1;
  }
}
