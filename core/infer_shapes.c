/* infer_shapes.c — type inference for the shape, padding, resampling, normalisation and
 * pooling ops of their section of ops.def (flip ... sym_numel; var.dim and the 3-D pools take
 * the reduction and pooling rules of infer.c): output sizes as sym expressions where PyTorch's
 * formula allows it, constants where coil needs them (padded, resampled and adaptively pooled
 * dimensions). The rules table is in infer.c. */
#include <math.h>
#include <string.h>

#include "infer.h"

int
r_flip(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  coil_lit *l = P(c, "dims");
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  bool seen[COIL_MAX_RANK] = {0};
  for (int i = 0; i < l->n; i++) {
    int d;
    if (wrap_dim(c, &l->items[i], l->items[i].i, t->rank, &d))
      return -1;
    if (seen[d])
      return ierr(c, &l->items[i], "dimension %lld appears twice in dims", (long long)l->items[i].i);
    seen[d] = true;
  }
  set_tensor(c, t->dtype, t->rank, t->dims);
  return 0;
}

int
r_repeat(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  coil_lit *l = P(c, "repeats");
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  int64_t rep[COIL_MAX_RANK];
  int n;
  if (int_list(c, l, rep, &n, COIL_MAX_RANK))
    return -1;
  if (n < t->rank)
    return ierr(c, l, "%d repeats for a tensor of rank %d: there must be at least one per dimension", n, t->rank);
  const coil_sym *dims[COIL_MAX_RANK];
  for (int i = 0; i < n; i++) {
    int j = i - (n - t->rank);
    if (rep[i] < 0)
      return ierr(c, l, "repeat count %lld is negative", (long long)rep[i]);
    dims[i] = j < 0 ? K(c, rep[i]) : coil_sym_mul(c->sc, t->dims[j], K(c, rep[i]));
  }
  set_tensor(c, t->dtype, n, dims);
  return 0;
}

int
r_index_select(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self")), *ix = tensor_of(P(c, "index"));
  if (!t || !ix)
    return ierr(c, NULL, "self and index must be tensors");
  if (t->rank == 0)
    return ierr(c, P(c, "self"), "a 0-d self is not supported (index_select needs a dimension to index)");
  if (ix->dtype != COIL_I64 && ix->dtype != COIL_I32)
    return ierr(c, P(c, "index"), "index must be an i64 or i32 tensor, not %s", coil_dtype_name(ix->dtype));
  if (ix->rank > 1)
    return ierr(c, P(c, "index"), "index must be a 1-D (or 0-d) tensor, not %d-D", ix->rank);
  int d;
  if (wrap_dim(c, P(c, "dim"), P(c, "dim")->i, t->rank, &d))
    return -1;
  const coil_sym *dims[COIL_MAX_RANK];
  memcpy(dims, t->dims, sizeof dims);
  dims[d] = ix->rank ? ix->dims[0] : K(c, 1);
  set_tensor(c, t->dtype, t->rank, dims);
  return 0;
}

int
r_diagonal(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  if (t->rank < 2)
    return ierr(c, P(c, "self"), "needs a tensor of at least 2 dimensions, not %d", t->rank);
  int a, b;
  if (wrap_dim(c, P(c, "dim1"), P(c, "dim1")->i, t->rank, &a) ||
      wrap_dim(c, P(c, "dim2"), P(c, "dim2")->i, t->rank, &b))
    return -1;
  if (a == b)
    return ierr(c, P(c, "dim2"), "dim1 and dim2 name the same dimension (%d)", a);
  int64_t off = P(c, "offset")->i;
  if (off > INT32_MAX || off < -INT32_MAX)
    return ierr(c, P(c, "offset"), "offset %lld is out of range", (long long)off);
  /* length: min(size1, size2 - offset) for offset >= 0, min(size1 + offset, size2) below, >= 0 */
  const coil_sym *len = off >= 0 ? coil_sym_min(c->sc, t->dims[a], coil_sym_add(c->sc, t->dims[b], K(c, -off)))
                                 : coil_sym_min(c->sc, coil_sym_add(c->sc, t->dims[a], K(c, off)), t->dims[b]);
  len = coil_sym_max(c->sc, len, K(c, 0));
  const coil_sym *dims[COIL_MAX_RANK];
  int r = 0;
  for (int i = 0; i < t->rank; i++)
    if (i != a && i != b)
      dims[r++] = t->dims[i];
  dims[r++] = len;
  set_tensor(c, t->dtype, r, dims);
  return 0;
}

/* as_strided reads self's storage as PyTorch holds a contiguous tensor: its elements in
 * row-major order. The largest element read must lie inside it, as PyTorch checks. */
int
r_as_strided(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  coil_lit *ls = P(c, "size"), *lst = P(c, "stride"), *lo = P(c, "storage_offset");
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  int64_t sz[COIL_MAX_RANK], st[COIL_MAX_RANK];
  int n, ns;
  if (int_list(c, ls, sz, &n, COIL_MAX_RANK) || int_list(c, lst, st, &ns, COIL_MAX_RANK))
    return -1;
  if (n != ns)
    return ierr(c, lst, "%d strides for %d sizes: the lengths must match", ns, n);
  int64_t off = lo->kind == COIL_LIT_INT ? lo->i : 0, last = off;
  if (off < 0)
    return ierr(c, lo, "storage_offset %lld is negative", (long long)off);
  bool empty = false;
  const coil_sym *dims[COIL_MAX_RANK];
  for (int i = 0; i < n; i++) {
    if (sz[i] < 0)
      return ierr(c, ls, "size %lld is negative", (long long)sz[i]);
    if (st[i] < 0)
      return ierr(c, lst, "stride %lld is negative (PyTorch does not support negative strides)", (long long)st[i]);
    if (sz[i] > INT32_MAX || st[i] > INT32_MAX)
      return ierr(c, ls, "sizes and strides must be below 2^31");
    empty |= sz[i] == 0;
    last += (sz[i] - 1) * st[i];
    dims[i] = K(c, sz[i]);
  }
  int64_t have;
  if (!coil_sym_is_const(numel(c, t), &have))
    return ierr(c, P(c, "self"), "self has a symbolic number of elements: coil cannot check that the strides stay inside its storage");
  if (!empty && last >= have)
    return ierr(c, ls, "sizes, strides and storage_offset read element %lld of a storage of %lld elements",
                (long long)last, (long long)have);
  set_tensor(c, t->dtype, n, dims);
  return 0;
}

/* empty and empty_strided: coil fills the result with zeros (PyTorch leaves it uninitialised).
 * empty_strided's strides only say how PyTorch lays the tensor out; coil's buffers are dense
 * row-major whatever they say, so they are checked (one per size, none negative) and dropped. */
int
r_empty(ictx *c)
{
  coil_lit *ls = P(c, "size"), *dt = P(c, "dtype");
  int64_t sz[COIL_MAX_RANK], st[COIL_MAX_RANK];
  int n, ns;
  if (int_list(c, ls, sz, &n, COIL_MAX_RANK))
    return -1;
  if (c->n->op->sub == 1) {
    if (int_list(c, P(c, "stride"), st, &ns, COIL_MAX_RANK))
      return -1;
    if (ns != n)
      return ierr(c, P(c, "stride"), "%d strides for %d sizes: the lengths must match", ns, n);
    for (int i = 0; i < n; i++)
      if (st[i] < 0)
        return ierr(c, P(c, "stride"), "stride %lld is negative", (long long)st[i]);
  }
  const coil_sym *dims[COIL_MAX_RANK];
  for (int i = 0; i < n; i++) {
    if (sz[i] < 0)
      return ierr(c, ls, "size %lld is negative", (long long)sz[i]);
    dims[i] = K(c, sz[i]);
  }
  set_tensor(c, dt->kind == COIL_LIT_DTYPE ? dt->dtype : COIL_F32, n, dims);
  return 0;
}

/* reflection_pad{1,2,3}d and replication_pad{2,3}d: padding names (left, right) of the last
 * dimension, then of the one before, ...; negative padding crops. */
int
r_mode_pad(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  coil_lit *l = P(c, "padding");
  int nsp = c->s.params[1].fixed_len / 2;
  bool reflect = c->n->op->sub == 0;
  if (!t || (t->rank != nsp + 1 && t->rank != nsp + 2))
    return ierr(c, P(c, "self"), "self must be a %d-D or %d-D tensor", nsp + 1, nsp + 2);
  if (l->n != 2 * nsp)
    return ierr(c, l, "padding needs %d entries, not %d", 2 * nsp, l->n);
  const coil_sym *dims[COIL_MAX_RANK];
  memcpy(dims, t->dims, sizeof dims);
  for (int p = 0; p < nsp; p++) {
    int d = t->rank - 1 - p;
    int64_t lo = l->items[2 * p].i, hi = l->items[2 * p + 1].i, size;
    if (!coil_sym_is_const(t->dims[d], &size))
      return ierr(c, P(c, "self"), "dimension %d is padded and has the symbolic size %s: coil needs constant sizes there",
                  d, S(c, t->dims[d]));
    if (size == 0)
      return ierr(c, P(c, "self"), "dimension %d is padded and is empty", d);
    if (lo > INT32_MAX || hi > INT32_MAX || lo < -INT32_MAX || hi < -INT32_MAX)
      return ierr(c, l, "padding must lie within +-2^31");
    if (reflect && (lo >= size || hi >= size))
      return ierr(c, l, "reflection padding (%lld, %lld) of dimension %d must be less than its size %lld",
                  (long long)lo, (long long)hi, d, (long long)size);
    if (size + lo + hi < 1)
      return ierr(c, l, "dimension %d of size %lld padded by (%lld, %lld) would have size %lld: it must be at least 1",
                  d, (long long)size, (long long)lo, (long long)hi, (long long)(size + lo + hi));
    dims[d] = K(c, size + lo + hi);
  }
  set_tensor(c, t->dtype, t->rank, dims);
  return 0;
}

/* upsample_nearest2d.vec and upsample_bilinear2d.vec: exactly one of output_size and
 * scale_factors; from a scale, the output size is floor(in * scale), as PyTorch computes it. */
int
r_upsample(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "input"));
  coil_lit *os = P(c, "output_size"), *sf = P(c, "scale_factors");
  bool bilinear = c->n->op->sub == 1;
  if (!t || t->rank != 4)
    return ierr(c, P(c, "input"), "input must be a 4-D tensor (N, C, H, W)");
  if (bilinear ? !coil_dtype_is_float(t->dtype) : !coil_dtype_is_float(t->dtype) && t->dtype != COIL_U8)
    return ierr(c, P(c, "input"), "not implemented for %s tensors (%s)", coil_dtype_name(t->dtype),
                bilinear ? "floating point only" : "floating point and u8 only");
  if ((os->kind == COIL_LIT_NONE) == (sf->kind == COIL_LIT_NONE))
    return ierr(c, NULL, "exactly one of output_size and scale_factors must be given");
  const coil_lit *l = os->kind == COIL_LIT_NONE ? sf : os;
  if (l->n != 2)
    return ierr(c, l, "%s needs 2 entries (H, W), not %d", l == os ? "output_size" : "scale_factors", l->n);
  const coil_sym *dims[4] = {t->dims[0], t->dims[1]};
  for (int i = 0; i < 2; i++) {
    int64_t in, out;
    if (!coil_sym_is_const(t->dims[2 + i], &in))
      return ierr(c, P(c, "input"), "dimension %d has the symbolic size %s: coil needs constant spatial sizes", 2 + i,
                  S(c, t->dims[2 + i]));
    if (l == os) {
      out = os->items[i].i;
    } else {
      double s = sf->items[i].f;
      if (!(s > 0) || isinf(s))
        return ierr(c, sf, "scale factors must be positive and finite");
      double o = floor((double)in * s);
      if (o > (double)INT32_MAX)
        return ierr(c, sf, "the output would have more than 2^31 rows or columns");
      out = (int64_t)o;
    }
    if (in <= 0 || out <= 0)
      return ierr(c, l, "input and output sizes should be greater than 0, but got input (H: %s, W: %s) and output %s %lld",
                  S(c, t->dims[2]), S(c, t->dims[3]), i ? "W:" : "H:", (long long)out);
    if (out > INT32_MAX)
      return ierr(c, l, "output sizes must be below 2^31");
    dims[2 + i] = K(c, out);
  }
  set_tensor(c, t->dtype, 4, dims);
  return 0;
}

int
r_group_norm(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "input"));
  if (!t || t->rank < 2)
    return ierr(c, P(c, "input"), "input must be a tensor of rank >= 2 (N, C, ...)");
  if (!coil_dtype_is_float(t->dtype))
    return ierr(c, NULL, "needs a floating-point tensor, not %s", coil_dtype_name(t->dtype));
  const coil_sym *hw = K(c, 1);
  for (int i = 2; i < t->rank; i++)
    hw = coil_sym_mul(c->sc, hw, t->dims[i]);
  const char *names[3] = {"N", "C", "HxW"};
  const coil_sym *want[3] = {t->dims[0], t->dims[1], hw};
  for (int k = 0; k < 3; k++)
    if (!sym_is(want[k], P(c, names[k])->i))
      return ierr(c, P(c, names[k]), "%s = %lld does not match the input, whose %s is %s", names[k],
                  (long long)P(c, names[k])->i, names[k], S(c, want[k]));
  int64_t g = P(c, "group")->i, ch = P(c, "C")->i;
  if (g <= 0 || ch % g != 0)
    return ierr(c, P(c, "group"), "the %lld channels must divide into group = %lld groups", (long long)ch, (long long)g);
  if (check_vec(c, "weight", t->dims[1]) || check_vec(c, "bias", t->dims[1]))
    return -1;
  coil_type *e = set_tuple(c, 3);
  e[0].dtype = t->dtype;
  e[0].rank = t->rank;
  memcpy(e[0].dims, t->dims, sizeof(t->dims));
  for (int k = 1; k < 3; k++) { /* mean, rstd: [N, group] in the input's dtype (CPU kernels) */
    e[k].dtype = t->dtype;
    e[k].rank = 2;
    e[k].dims[0] = t->dims[0];
    e[k].dims[1] = K(c, g);
  }
  return 0;
}

/* _native_batch_norm_legit (.default and .no_stats). Training: statistics of the batch, and
 * save_mean, save_invstd of size C (the input's dtype, as the CPU kernels). Evaluation (only
 * .default, which has running statistics): as _native_batch_norm_legit_no_training. */
int
r_batch_norm_stats(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "input"));
  if (!t || t->rank < 2)
    return ierr(c, P(c, "input"), "input must be a tensor of rank >= 2 (N, C, ...)");
  if (!coil_dtype_is_float(t->dtype))
    return ierr(c, NULL, "needs a floating-point tensor, not %s", coil_dtype_name(t->dtype));
  const coil_sym *ch = t->dims[1];
  bool stats = c->n->op->sub == 0, training = P(c, "training")->i;
  if (check_vec(c, "weight", ch) || check_vec(c, "bias", ch) ||
      (stats && (check_vec(c, "running_mean", ch) || check_vec(c, "running_var", ch))))
    return -1;
  if (!stats && !training)
    return ierr(c, P(c, "training"), "training=False needs running statistics (running_mean must be defined in evaluation mode)");
  coil_type *e = set_tuple(c, 3);
  e[0].dtype = t->dtype;
  e[0].rank = t->rank;
  memcpy(e[0].dims, t->dims, sizeof(t->dims));
  for (int k = 1; k < 3; k++) {
    e[k].dtype = training ? t->dtype : t->dtype == COIL_F64 ? COIL_F64 : COIL_F32;
    e[k].rank = 1;
    e[k].dims[0] = training ? ch : K(c, 0);
  }
  return 0;
}

int
r_dropout(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "input"));
  if (!t)
    return ierr(c, P(c, "input"), "argument 'input' must be a tensor");
  coil_lit *tr = P(c, "train");
  double p = P(c, "p")->f;
  if (tr->kind == COIL_LIT_NONE || tr->i) { /* train=None means training, as in PyTorch */
    if (!coil_dtype_is_float(t->dtype))
      return ierr(c, P(c, "input"), "training dropout needs a floating-point tensor, not %s", coil_dtype_name(t->dtype));
    if (!(p >= 0 && p <= 1))
      return ierr(c, P(c, "p"), "dropout probability has to be between 0 and 1, but got %g", p);
    if (p != 0 && p != 1)
      return ierr(c, P(c, "p"), "training dropout with 0 < p < 1 (p = %g) draws random numbers, which coil does not "
                                "support (its graphs are deterministic); export the model in eval mode", p);
  }
  coil_type *e = set_tuple(c, 2);
  for (int k = 0; k < 2; k++) {
    e[k].dtype = k ? COIL_BOOL : t->dtype;
    e[k].rank = t->rank;
    memcpy(e[k].dims, t->dims, sizeof(t->dims));
  }
  return 0;
}

int
r_adaptive_pool(ictx *c)
{
  const coil_type *x = tensor_of(P(c, "self"));
  coil_lit *l = P(c, "output_size");
  int nsp = c->n->op->sub;
  if (!x || (x->rank != nsp + 1 && x->rank != nsp + 2))
    return ierr(c, P(c, "self"), "self must be a %d-D or %d-D tensor", nsp + 1, nsp + 2);
  if (!coil_dtype_is_float(x->dtype))
    return ierr(c, P(c, "self"), "needs a floating-point tensor, not %s", coil_dtype_name(x->dtype));
  if (l->n != nsp)
    return ierr(c, l, "output_size needs %d entries, not %d", nsp, l->n);
  const coil_sym *dims[COIL_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  for (int i = 0; i < nsp; i++) {
    int d = x->rank - nsp + i;
    int64_t in, out = l->items[i].i;
    if (!coil_sym_is_const(x->dims[d], &in))
      return ierr(c, P(c, "self"), "dimension %d has the symbolic size %s: coil needs constant spatial sizes", d,
                  S(c, x->dims[d]));
    if (in <= 0)
      return ierr(c, P(c, "self"), "dimension %d is empty: pooling needs non-empty spatial dimensions", d);
    if (out < 0 || out > INT32_MAX)
      return ierr(c, l, "elements of output_size must be non-negative (and below 2^31), got %lld", (long long)out);
    dims[d] = K(c, out);
  }
  set_tensor(c, x->dtype, x->rank, dims);
  return 0;
}

/* sym_size.int and sym_numel: the size as a 0-d i64 tensor */
int
r_sym_size(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  if (c->n->op->sub == 0) {
    int d;
    if (t->rank == 0)
      return ierr(c, P(c, "dim"), "a 0-d tensor has no dimension %lld", (long long)P(c, "dim")->i);
    if (wrap_dim(c, P(c, "dim"), P(c, "dim")->i, t->rank, &d))
      return -1;
  }
  set_tensor(c, COIL_I64, 0, NULL);
  return 0;
}
