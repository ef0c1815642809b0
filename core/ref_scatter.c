/* ref_scatter.c — the reference interpreter's scatters: scatter (src, value), scatter_add,
 * scatter_reduce, index_put, embedding_dense_backward, select_scatter and slice_scatter, written
 * from PyTorch's documentation, independently of the lowering (core/lower_scatter.c).
 *
 * The result starts as self; updates are applied one index element after another in row-major
 * order, in f64 for floating dtypes and in wrapping i64 for integers (the same modulo 2^bits as
 * PyTorch's arithmetic in the dtype), and rounded into the result once at the end. Where
 * several elements of a plain scatter hit one place PyTorch leaves the result undefined; here the
 * last one wins. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

typedef enum { COMB_SET, COMB_ADD, COMB_MUL, COMB_MAX, COMB_MIN } comb;

/* The running values of the result: f64 for floating dtypes, i64 otherwise. */
typedef struct {
  bool fl;
  double *f;
  int64_t *i;
  int64_t *count;            /* per element: updates applied (scatter_reduce mean, include_self) */
  bool *hit;                 /* per element: updated at least once */
} acc;

static int
acc_init(rctx *r, acc *a, const coil_tensor *self, coil_tensor *out)
{
  int64_t n = coil_tensor_numel(out);
  a->fl = coil_dtype_is_float(out->dtype);
  a->f = calloc((size_t)n + 1, sizeof(double));
  a->i = calloc((size_t)n + 1, sizeof(int64_t));
  a->count = calloc((size_t)n + 1, sizeof(int64_t));
  a->hit = calloc((size_t)n + 1, sizeof(bool));
  if (!a->f || !a->i || !a->count || !a->hit)
    return coil_ref_err(r, "out of memory");
  for (int64_t k = 0; self && k < n; k++) {
    if (a->fl)
      a->f[k] = coil_tensor_get_f64(self, k);
    else
      a->i[k] = coil_tensor_get_i64(self, k);
  }
  return 0;
}

static void
acc_free(acc *a)
{
  free(a->f);
  free(a->i);
  free(a->count);
  free(a->hit);
}

static double
fcomb(comb c, double x, double y)
{
  switch (c) {
  case COMB_ADD: return x + y;
  case COMB_MUL: return x * y;
  case COMB_MAX: return isnan(x) || isnan(y) ? NAN : x > y ? x : y;
  case COMB_MIN: return isnan(x) || isnan(y) ? NAN : x < y ? x : y;
  default: return y;
  }
}

static int64_t
icomb(comb c, int64_t x, int64_t y)
{
  switch (c) {
  case COMB_ADD: return (int64_t)((uint64_t)x + (uint64_t)y);
  case COMB_MUL: return (int64_t)((uint64_t)x * (uint64_t)y);
  case COMB_MAX: return x > y ? x : y;
  case COMB_MIN: return x < y ? x : y;
  default: return y;
  }
}

/* Element `at` of the result combined with element si of src (or the number v when src is
 * NULL). With first_sets, the first update of an element replaces it (include_self=False). */
static void
update(acc *a, int64_t at, comb c, const coil_tensor *src, int64_t si, double v, bool first_sets)
{
  comb how = first_sets && !a->hit[at] ? COMB_SET : c;
  if (a->fl) {
    double y = src ? coil_tensor_get_f64(src, si) : v;
    a->f[at] = fcomb(how, a->f[at], y);
  } else {
    int64_t y = src ? coil_tensor_get_i64(src, si) : (int64_t)v;
    a->i[at] = icomb(how, a->i[at], y);
  }
  a->hit[at] = true;
  a->count[at]++;
}

static void
acc_store(const acc *a, coil_tensor *out)
{
  int64_t n = coil_tensor_numel(out);
  for (int64_t k = 0; k < n; k++) {
    if (a->fl)
      coil_tensor_set_f64(out, k, a->f[k]);
    else
      coil_tensor_set_i64(out, k, a->i[k]);
  }
}

static int64_t
offset(int rank, const int64_t *shape, const int64_t *idx)
{
  int64_t o = 0;
  for (int q = 0; q < rank; q++)
    o = o * shape[q] + idx[q];
  return o;
}

/* self[... index[p] ... ] (op)= src[p] along dim, for every p of index */
static int
run_scatter(rctx *r, coil_tensor *out)
{
  const coil_tensor *x = coil_ref_param(r, "self"), *ix = coil_ref_param(r, "index");
  int sub = r->n->op->sub;
  const coil_tensor *src = sub == 1 ? NULL : coil_ref_param(r, "src");
  double value = 0;
  if (sub == 1) {
    const coil_lit *l = coil_ref_lit(r, "value");
    value = l->kind == COIL_LIT_FLOAT ? l->f : (double)l->i;
  }
  int64_t dim = coil_ref_lit(r, "dim")->i;
  int d = (int)(dim < 0 ? dim + x->rank : dim);
  comb c = sub == 2 ? COMB_ADD : COMB_SET;
  bool include_self = true, mean = false;
  if (sub == 3) {
    const char *red = coil_ref_lit(r, "reduce")->s;
    c = strcmp(red, "prod") == 0 ? COMB_MUL : strcmp(red, "amax") == 0 ? COMB_MAX
        : strcmp(red, "amin") == 0 ? COMB_MIN : COMB_ADD;
    mean = strcmp(red, "mean") == 0;
    include_self = coil_ref_lit(r, "include_self")->i != 0;
  }
  acc a;
  int rc = acc_init(r, &a, x, out);
  int64_t idx[COIL_MAX_RANK], n = coil_tensor_numel(ix);
  for (int64_t p = 0; p < n && !rc; p++) {
    coil_ref_unravel(p, ix->rank, ix->shape, idx);
    int64_t si = src ? offset(src->rank, src->shape, idx) : 0;
    int64_t v = coil_tensor_get_i64(ix, p);
    if (v < 0 || v >= x->shape[d]) {
      rc = coil_ref_err(r, "index %lld is out of bounds for dimension %d with size %lld", (long long)v, d,
                        (long long)x->shape[d]);
      break;
    }
    idx[d] = v;
    update(&a, offset(x->rank, x->shape, idx), c, src, si, value, !include_self);
  }
  if (!rc && mean) { /* the sum over the updates (and self) divided by their count */
    for (int64_t k = 0; k < coil_tensor_numel(out); k++) {
      int64_t cnt = a.count[k] + (include_self ? 1 : 0);
      if (cnt <= 1)
        continue;
      if (a.fl) {
        a.f[k] /= (double)cnt;
      } else { /* the sum wraps in the dtype, then divides with floor rounding */
        coil_tensor_set_i64(out, k, a.i[k]);
        int64_t s = coil_tensor_get_i64(out, k), q = s / cnt;
        a.i[k] = (s % cnt != 0 && s < 0) ? q - 1 : q;
      }
    }
  }
  if (!rc)
    acc_store(&a, out);
  acc_free(&a);
  return rc;
}

/* self[indices] (+)= values: the index tensors broadcast together over shape B; the indexed
 * dims are the first len(indices) of self (None keeps a dim whole), values broadcast to the
 * indexed shape (B's dims where the indexed dims are, in place when they are adjacent and first
 * otherwise, as index.Tensor). Negative indices count from the end. */
static int
run_index_put(rctx *r, coil_tensor *out)
{
  const coil_tensor *x = coil_ref_param(r, "self"), *vals = coil_ref_param(r, "values");
  const coil_lit *l = coil_ref_lit(r, "indices");
  bool accumulate = coil_ref_lit(r, "accumulate")->i != 0;
  const coil_tensor *ixs[COIL_MAX_RANK] = {0};
  int first = -1, last = -1, brank = 0, count = 0;
  for (int i = 0; i < l->n; i++) {
    if (l->items[i].kind == COIL_LIT_NONE)
      continue;
    const coil_value *v = l->items[i].v;
    ixs[i] = r->vals[v->kind == COIL_VAL_NODE ? r->g->ninputs + v->index : v->index];
    brank = ixs[i]->rank > brank ? ixs[i]->rank : brank;
    first = first < 0 ? i : first;
    last = i;
    count++;
  }
  int64_t bshape[COIL_MAX_RANK];
  for (int b = 0; b < brank; b++) { /* the broadcast shape of the index tensors */
    bshape[b] = 1;
    for (int i = 0; i < l->n; i++) {
      if (!ixs[i])
        continue;
      int j = b - (brank - ixs[i]->rank);
      if (j >= 0 && ixs[i]->shape[j] != 1)
        bshape[b] = ixs[i]->shape[j];
    }
  }
  bool adjacent = true;
  for (int i = first; i <= last; i++)
    adjacent = adjacent && ixs[i];
  int bstart = adjacent ? first : 0;
  /* the indexed shape */
  int64_t ishape[COIL_MAX_RANK];
  int irank = 0;
  if (!adjacent) {
    for (int b = 0; b < brank; b++)
      ishape[irank++] = bshape[b];
    for (int q = 0; q < x->rank; q++)
      if (q >= l->n || !ixs[q])
        ishape[irank++] = x->shape[q];
  } else {
    for (int q = 0; q < first; q++)
      ishape[irank++] = x->shape[q];
    for (int b = 0; b < brank; b++)
      ishape[irank++] = bshape[b];
    for (int q = last + 1; q < x->rank; q++)
      ishape[irank++] = x->shape[q];
  }
  int64_t bst[COIL_MAX_RANK][COIL_MAX_RANK], vst[COIL_MAX_RANK];
  for (int i = 0; i < l->n; i++)
    if (ixs[i])
      coil_ref_bstrides(ixs[i], brank, bshape, bst[i]);
  coil_ref_bstrides(vals, irank, ishape, vst);
  acc a;
  int rc = acc_init(r, &a, x, out);
  int64_t n = 1, idx[COIL_MAX_RANK];
  for (int q = 0; q < irank; q++)
    n *= ishape[q];
  for (int64_t e = 0; e < n && !rc; e++) {
    coil_ref_unravel(e, irank, ishape, idx);
    int64_t at[COIL_MAX_RANK], vo = 0;
    for (int q = 0; q < irank; q++)
      vo += idx[q] * vst[q];
    int rest = 0;
    for (int q = 0; q < x->rank && !rc; q++) {
      if (q < l->n && ixs[q]) {
        int64_t o = 0;
        for (int b = 0; b < brank; b++)
          o += idx[bstart + b] * bst[q][b];
        int64_t v = coil_tensor_get_i64(ixs[q], o);
        if (v < -x->shape[q] || v >= x->shape[q])
          rc = coil_ref_err(r, "index %lld is out of bounds for dimension %d with size %lld", (long long)v, q,
                            (long long)x->shape[q]);
        at[q] = v < 0 ? v + x->shape[q] : v;
      } else {
        at[q] = idx[adjacent ? (q < first ? q : q - count + brank) : brank + rest];
        rest++;
      }
    }
    if (!rc)
      update(&a, offset(x->rank, x->shape, at), accumulate ? COMB_ADD : COMB_SET, vals, vo, 0, false);
  }
  if (!rc)
    acc_store(&a, out);
  acc_free(&a);
  return rc;
}

/* grad_weight[indices[i]] += grad_output[i] (scaled by 1/count of indices[i] with
 * scale_grad_by_freq), skipping indices equal to padding_idx */
static int
run_embedding_bwd(rctx *r, coil_tensor *out)
{
  const coil_tensor *g = coil_ref_param(r, "grad_output"), *ix = coil_ref_param(r, "indices");
  int64_t pad = coil_ref_lit(r, "padding_idx")->i, rows = coil_tensor_numel(ix);
  bool by_freq = coil_ref_lit(r, "scale_grad_by_freq")->i != 0;
  int64_t nw = out->shape[0], width = out->shape[1];
  acc a;
  int rc = acc_init(r, &a, NULL, out);
  int64_t *counts = calloc((size_t)nw + 1, sizeof(int64_t));
  if (!counts)
    rc = rc ? rc : coil_ref_err(r, "out of memory");
  for (int64_t i = 0; i < rows && !rc; i++) {
    int64_t k = coil_tensor_get_i64(ix, i);
    if (k < 0 || k >= nw)
      rc = coil_ref_err(r, "index %lld is out of range for %lld embeddings", (long long)k, (long long)nw);
    else
      counts[k]++;
  }
  for (int64_t i = 0; i < rows && !rc; i++) {
    int64_t k = coil_tensor_get_i64(ix, i);
    if (k == pad)
      continue;
    double scale = by_freq ? 1.0 / (double)counts[k] : 1.0;
    for (int64_t j = 0; j < width; j++)
      a.f[k * width + j] += coil_tensor_get_f64(g, i * width + j) * scale;
  }
  if (!rc)
    acc_store(&a, out);
  free(counts);
  acc_free(&a);
  return rc;
}

/* out = self, with out.select(dim, index) (or out[start:end:step] along dim) = src */
static int
run_view_scatter(rctx *r, coil_tensor *out)
{
  const coil_tensor *x = coil_ref_param(r, "self"), *src = coil_ref_param(r, "src");
  int64_t dim = coil_ref_lit(r, "dim")->i;
  int d = (int)(dim < 0 ? dim + x->rank : dim);
  int64_t size = x->shape[d], start = 0, step = 1;
  if (r->n->op->rule == COIL_RULE_SELECT_SCATTER) {
    start = coil_ref_lit(r, "index")->i;
    start = start < 0 ? start + size : start;
  } else {
    const coil_lit *ls = coil_ref_lit(r, "start");
    step = coil_ref_lit(r, "step")->i;
    if (ls->kind != COIL_LIT_NONE) { /* as slice: negative from the end, clamped to [0, size] */
      start = ls->i < 0 ? ls->i + size : ls->i;
      start = start < 0 ? 0 : start > size ? size : start;
    }
  }
  int64_t n = coil_tensor_numel(out);
  for (int64_t k = 0; k < n; k++)
    coil_ref_convert(x, k, out, k);
  int64_t sidx[COIL_MAX_RANK], oidx[COIL_MAX_RANK], m = coil_tensor_numel(src);
  for (int64_t k = 0; k < m; k++) {
    coil_ref_unravel(k, src->rank, src->shape, sidx);
    if (r->n->op->rule == COIL_RULE_SELECT_SCATTER) {
      for (int q = 0, j = 0; q < x->rank; q++)
        oidx[q] = q == d ? start : sidx[j++];
    } else {
      memcpy(oidx, sidx, sizeof oidx);
      oidx[d] = start + sidx[d] * step;
    }
    coil_ref_convert(src, k, out, offset(x->rank, x->shape, oidx));
  }
  return 0;
}

/* out[i] = mask[i] ? source.flatten()[k] : self[i], k the number of true mask elements before i
 * (row-major over the broadcast shape) */
static int
run_masked_scatter(rctx *r, coil_tensor *out)
{
  const coil_tensor *x = coil_ref_param(r, "self"), *m = coil_ref_param(r, "mask"), *src = coil_ref_param(r, "source");
  int64_t xs[COIL_MAX_RANK], ms[COIL_MAX_RANK], idx[COIL_MAX_RANK], n = coil_tensor_numel(out), k = 0;
  coil_ref_bstrides(x, out->rank, out->shape, xs);
  coil_ref_bstrides(m, out->rank, out->shape, ms);
  for (int64_t e = 0; e < n; e++) {
    coil_ref_unravel(e, out->rank, out->shape, idx);
    int64_t xo = 0, mo = 0;
    for (int q = 0; q < out->rank; q++) {
      xo += idx[q] * xs[q];
      mo += idx[q] * ms[q];
    }
    if (!coil_tensor_get_i64(m, mo)) {
      coil_ref_convert(x, xo, out, e);
      continue;
    }
    if (k >= coil_tensor_numel(src))
      return coil_ref_err(r, "index %lld is out of range: source has %lld elements, fewer than the mask's true "
                          "elements", (long long)k, (long long)coil_tensor_numel(src));
    coil_ref_convert(src, k++, out, e);
  }
  return 0;
}

static int
vslot(const rctx *r, const coil_value *v)
{
  return v->kind == COIL_VAL_NODE ? r->g->ninputs + v->index : v->index;
}

/* Every name of the tensor rooted at root (up to statement n) reads t. */
static void
set_names(rctx *r, const coil_value *root, const coil_node *n, const coil_tensor *t)
{
  const coil_graph *g = r->g;
  for (int i = 0; i < g->ninputs; i++)
    if (coil_value_root(g->inputs[i]) == root) {
      r->vals[i] = t;
      r->nvals[i] = 1;
    }
  for (int i = 0; &g->nodes[i] <= n; i++)
    if (g->nodes[i].out && coil_value_root(g->nodes[i].out) == root) {
      r->vals[g->ninputs + i] = t;
      r->nvals[g->ninputs + i] = 1;
    }
}

int
coil_ref_mutate(rctx *r, const coil_node *n, const coil_tensor *now, coil_tensor_list *keep)
{
  for (const coil_value *v = n->bound[0].v;;) {
    const coil_value *root = coil_value_root(v);
    set_names(r, root, n, now);
    if (!root->view_of)
      return 0;
    const coil_node *vn = &r->g->nodes[root->index]; /* written through a view: its base too */
    bool select = vn->op->rule == COIL_RULE_SELECT;
    const coil_tensor *base = r->vals[vslot(r, vn->bound[0].v)];
    if (keep->n == 8) /* the list keeps its first 8 tensors in place: r->vals points at them */
      return coil_ref_err(r, "a tensor written through more than 8 nested views is not supported");
    coil_tensor t;
    if (coil_tensor_init(&t, base->dtype, base->rank, base->shape, r->d))
      return -1;
    /* as select_scatter / slice_scatter with the view's own arguments */
    int64_t dim = vn->bound[1].i, start = 0, step = 1;
    int d = (int)(dim < 0 ? dim + base->rank : dim);
    int64_t size = base->shape[d];
    if (select) {
      start = vn->bound[2].i < 0 ? vn->bound[2].i + size : vn->bound[2].i;
    } else {
      const coil_lit *ls = &vn->bound[2];
      step = vn->bound[4].i;
      if (ls->kind != COIL_LIT_NONE) {
        start = ls->i < 0 ? ls->i + size : ls->i;
        start = start < 0 ? 0 : start > size ? size : start;
      }
    }
    memcpy(t.data, base->data, coil_tensor_nbytes(base));
    int64_t sidx[COIL_MAX_RANK], oidx[COIL_MAX_RANK], m = coil_tensor_numel(now);
    for (int64_t k = 0; k < m; k++) {
      coil_ref_unravel(k, now->rank, now->shape, sidx);
      if (select) {
        for (int q = 0, j = 0; q < base->rank; q++)
          oidx[q] = q == d ? start : sidx[j++];
      } else {
        memcpy(oidx, sidx, sizeof oidx);
        oidx[d] = start + sidx[d] * step;
      }
      coil_ref_convert(now, k, &t, offset(base->rank, base->shape, oidx));
    }
    coil_tensor_list_add(keep, "base", &t);
    now = &keep->tensors[keep->n - 1];
    v = root->view_of;
  }
}

int
coil_ref_run_scatter(rctx *r, coil_tensor *outs)
{
  switch (r->n->op->rule) {
  case COIL_RULE_SCATTER: return run_scatter(r, outs);
  case COIL_RULE_INDEX_PUT: return run_index_put(r, outs);
  case COIL_RULE_EMBEDDING_BWD: return run_embedding_bwd(r, outs);
  case COIL_RULE_SELECT_SCATTER: case COIL_RULE_SLICE_SCATTER: return run_view_scatter(r, outs);
  case COIL_RULE_MASKED_SCATTER: return run_masked_scatter(r, outs);
  default: return coil_ref_err(r, "internal: no reference implementation");
  }
}
