/* infer_scatter.c — type inference for the scatters (scatter, scatter_add, scatter_reduce,
 * index_put, embedding_dense_backward, select_scatter, slice_scatter, masked_scatter): the
 * checks of PyTorch's scatter_gather_dtype_check and scatter_shape_check, and that the values
 * written have the shape select, slice or index gives where they go. The result has self's
 * type (masked_scatter: self broadcast with the mask; embedding_dense_backward: [num_weights,
 * D]). The rules table is in infer.c. */
#include <stdio.h>
#include <string.h>

#include "infer.h"

/* a <= b, provably: equal expressions, or both constants in order */
static bool
sym_le(const coil_sym *a, const coil_sym *b)
{
  int64_t x, y;
  return sym_eq(a, b) || (coil_sym_is_const(a, &x) && coil_sym_is_const(b, &y) && x <= y);
}

/* scatter.src, scatter.value, scatter_add, scatter_reduce.two: PyTorch's scatter_gather_dtype_check
 * and scatter_shape_check. index is i64 with the rank of self (and of src); along every dimension
 * index is no larger than src, and no larger than self except along dim. */
int
r_scatter(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self")), *ix = tensor_of(P(c, "index"));
  int sub = c->n->op->sub;
  const coil_type *src = sub == 1 ? NULL : tensor_of(P(c, "src"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  if (!ix || ix->dtype != COIL_I64)
    return ierr(c, P(c, "index"), "index must be an i64 tensor, got %s",
                ix ? coil_dtype_name(ix->dtype) : "a number");
  if (sub != 1 && !src)
    return ierr(c, P(c, "src"), "argument 'src' must be a tensor");
  if (t->rank == 0)
    return ierr(c, P(c, "self"), "a 0-d self is not supported");
  int d;
  if (wrap_dim(c, P(c, "dim"), P(c, "dim")->i, t->rank, &d))
    return -1;
  if (ix->rank != t->rank)
    return ierr(c, P(c, "index"), "index has rank %d, expected the rank of self (%d)", ix->rank, t->rank);
  if (src && src->rank != t->rank)
    return ierr(c, P(c, "src"), "src has rank %d, expected the rank of self (%d)", src->rank, t->rank);
  if (src && src->dtype != t->dtype)
    return ierr(c, P(c, "src"), "src is %s, expected the dtype of self (%s)", coil_dtype_name(src->dtype),
                coil_dtype_name(t->dtype));
  for (int i = 0; i < t->rank; i++) {
    if (src && !sym_le(ix->dims[i], src->dims[i]))
      return ierr(c, P(c, "index"), "index has size %s in dimension %d, larger than src's %s",
                  S(c, ix->dims[i]), i, S(c, src->dims[i]));
    if (i != d && !sym_le(ix->dims[i], t->dims[i]))
      return ierr(c, P(c, "index"), "index has size %s in dimension %d, larger than self's %s (only "
                  "dimension %d, the one scattered along, may be larger)", S(c, ix->dims[i]), i,
                  S(c, t->dims[i]), d);
  }
  if (sub == 3) {
    static const char *const reduces[] = {"sum", "prod", "mean", "amax", "amin", NULL};
    const coil_lit *r = P(c, "reduce");
    bool ok = false;
    for (int i = 0; reduces[i]; i++)
      ok = ok || strcmp(r->s, reduces[i]) == 0;
    if (!ok)
      return ierr(c, r, "reduce must be one of sum, prod, mean, amax, amin; got '%s'", r->s);
  }
  if (t->dtype == COIL_BOOL && (sub == 2 || sub == 3))
    return ierr(c, P(c, "self"), "bool tensors are not supported by a combining scatter");
  set_tensor(c, t->dtype, t->rank, t->dims);
  return 0;
}

/* index_put: i64/i32 index tensors (no masks) for the first dimensions of self that broadcast
 * together; values (self's dtype) broadcast to the shape self[indices] has. */
int
r_index_put(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self")), *v = tensor_of(P(c, "values"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  if (!v)
    return ierr(c, P(c, "values"), "argument 'values' must be a tensor");
  if (v->dtype != t->dtype)
    return ierr(c, P(c, "values"), "values are %s, expected the dtype of self (%s)", coil_dtype_name(v->dtype),
                coil_dtype_name(t->dtype));
  if (t->dtype == COIL_BOOL && P(c, "accumulate")->i)
    return ierr(c, P(c, "accumulate"), "accumulate=True is not supported for bool tensors");
  /* the indexed shape: what index.Tensor gives with these indices */
  if (r_index(c))
    return -1;
  coil_type want = c->n->out->type;
  int rank = want.rank;
  const coil_sym *dims[COIL_MAX_RANK];
  memcpy(dims, want.dims, sizeof dims);
  if (v->rank > rank)
    return ierr(c, P(c, "values"), "values of rank %d do not broadcast to the indexed shape (rank %d)", v->rank,
                rank);
  for (int i = 0; i < v->rank; i++) {
    const coil_sym *a = v->dims[i], *b = dims[rank - v->rank + i];
    if (!sym_is(a, 1) && !sym_eq(a, b))
      return ierr(c, P(c, "values"), "values have size %s in dimension %d, which does not broadcast to size %s "
                  "of the indexed shape", S(c, a), i, S(c, b));
  }
  set_tensor(c, t->dtype, t->rank, t->dims);
  return 0;
}

/* embedding_dense_backward: grad_output [*indices.shape, D] -> [num_weights, D] */
int
r_embedding_bwd(ictx *c)
{
  const coil_type *gt = tensor_of(P(c, "grad_output")), *ix = tensor_of(P(c, "indices"));
  if (!gt || !coil_dtype_is_float(gt->dtype) || gt->rank < 1)
    return ierr(c, P(c, "grad_output"), "grad_output must be a floating tensor of rank >= 1");
  if (!ix || (ix->dtype != COIL_I64 && ix->dtype != COIL_I32))
    return ierr(c, P(c, "indices"), "indices must be an i64 or i32 tensor");
  if (gt->rank != ix->rank + 1)
    return ierr(c, P(c, "grad_output"), "grad_output has rank %d, expected the rank of indices plus one (%d)",
                gt->rank, ix->rank + 1);
  for (int i = 0; i < ix->rank; i++)
    if (!sym_eq(gt->dims[i], ix->dims[i]))
      return ierr(c, P(c, "grad_output"), "grad_output has size %s in dimension %d, indices %s", S(c, gt->dims[i]),
                  i, S(c, ix->dims[i]));
  int64_t nw = P(c, "num_weights")->i;
  if (nw < 0)
    return ierr(c, P(c, "num_weights"), "num_weights must not be negative");
  const coil_sym *dims[2] = {K(c, nw), gt->dims[gt->rank - 1]};
  set_tensor(c, gt->dtype, 2, dims);
  return 0;
}

/* select_scatter and slice_scatter: src has the shape of self.select / self.slice with the same
 * arguments (any dtype: it is copied as copy_ would); the result is self's type */
int
r_view_scatter(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self")), *src = tensor_of(P(c, "src"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  if (!src)
    return ierr(c, P(c, "src"), "argument 'src' must be a tensor");
  if (c->n->op->rule == COIL_RULE_SELECT_SCATTER ? r_select(c) : r_slice(c))
    return -1;
  const coil_type *want = &c->n->out->type;
  bool ok = want->rank == src->rank;
  for (int i = 0; ok && i < src->rank; i++)
    ok = sym_eq(want->dims[i], src->dims[i]);
  if (!ok) {
    char w[256] = "", g[256] = "";
    for (int i = 0; i < want->rank; i++)
      snprintf(w + strlen(w), sizeof w - strlen(w), "%s%s", i ? ", " : "", S(c, want->dims[i]));
    for (int i = 0; i < src->rank; i++)
      snprintf(g + strlen(g), sizeof g - strlen(g), "%s%s", i ? ", " : "", S(c, src->dims[i]));
    return ierr(c, P(c, "src"), "src has shape [%s], expected the shape of the %s [%s]", g,
                c->n->op->rule == COIL_RULE_SELECT_SCATTER ? "selected slice" : "slice", w);
  }
  set_tensor(c, t->dtype, t->rank, t->dims);
  return 0;
}

/* masked_scatter: a bool mask broadcast with self; source of self's dtype (its size is checked
 * when the number of true elements is known, at run time) */
int
r_masked_scatter(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self")), *m = tensor_of(P(c, "mask")), *src = tensor_of(P(c, "source"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  if (!m || m->dtype != COIL_BOOL)
    return ierr(c, P(c, "mask"), "mask must be a bool tensor%s%s", m ? ", got " : "", m ? coil_dtype_name(m->dtype) : "");
  if (!src || src->dtype != t->dtype)
    return ierr(c, P(c, "source"), "source must be a tensor of self's dtype (%s)", coil_dtype_name(t->dtype));
  int rank = t->rank;
  const coil_sym *dims[COIL_MAX_RANK];
  memcpy(dims, t->dims, sizeof dims);
  if (broadcast(c, &rank, dims, m))
    return -1;
  set_tensor(c, t->dtype, rank, dims);
  return 0;
}
