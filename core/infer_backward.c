/* infer_backward.c — type inference for the backward ops (pooling, normalisation and
 * convolution backward, col2im), grid_sampler_2d, _embedding_bag, sort and the pairwise
 * distances (_cdist_forward, _pdist_forward): grad_output is checked against the shape the
 * forward op gives, and the results (tuples for the ops with several outputs) take the shapes
 * of the forward's inputs. The rules table is in infer.c. */
#include <math.h>
#include <string.h>

#include "infer.h"

/* A tensor argument `name` that must have these sizes and (unless dt < 0) this dtype. */
static int
check_shaped(ictx *c, const char *name, int rank, const coil_sym *const *dims, int dt)
{
  const coil_type *t = tensor_of(P(c, name));
  if (!has_dims(t, rank, dims))
    return ierr(c, P(c, name), "'%s' must be a tensor of size %s", name, dims_str(c, rank, dims));
  if (dt >= 0 && t->dtype != (coil_dtype)dt)
    return ierr(c, P(c, name), "'%s' must have dtype %s, not %s", name, coil_dtype_name((coil_dtype)dt),
                coil_dtype_name(t->dtype));
  return 0;
}

static int
float_input(ictx *c, const char *name, const coil_type **t)
{
  *t = tensor_of(P(c, name));
  if (!*t)
    return ierr(c, P(c, name), "argument '%s' must be a tensor", name);
  if (!coil_dtype_is_float((*t)->dtype))
    return ierr(c, P(c, name), "'%s' must be a floating-point tensor, not %s", name, coil_dtype_name((*t)->dtype));
  return 0;
}

/* bool[3] output_mask */
static int
output_mask(ictx *c)
{
  coil_lit *m = P(c, "output_mask");
  if (m->kind != COIL_LIT_LIST || m->n != 3)
    return ierr(c, m, "output_mask must be a list of 3 bools");
  return 0;
}

/* pooling backward: grad_output shaped as the forward's output, the result as self */
int
r_pool_bwd(ictx *c)
{
  const coil_type *x;
  if (float_input(c, "self", &x))
    return -1;
  const coil_sym *dims[4];
  int sub = c->n->op->sub;
  if (sub == 2) { /* adaptive: any output size, self's leading dims */
    const coil_type *g = tensor_of(P(c, "grad_output"));
    if (x->rank != 3 && x->rank != 4)
      return ierr(c, P(c, "self"), "input must be a 3-D or 4-D tensor");
    if (!g || g->rank != x->rank)
      return ierr(c, P(c, "grad_output"), "'grad_output' must be a tensor of rank %d", x->rank);
    memcpy(dims, g->dims, sizeof(*dims) * (size_t)x->rank);
    for (int i = 0; i < x->rank - 2; i++)
      dims[i] = x->dims[i];
    for (int i = x->rank - 2; i < x->rank; i++) {
      int64_t v;
      if (coil_sym_is_const(dims[i], &v) && v <= 0)
        return ierr(c, P(c, "grad_output"), "'grad_output' has an empty output size");
    }
  } else if (pool_dims(c, x, 2, dims)) {
    return -1;
  }
  if (check_shaped(c, "grad_output", x->rank, dims, x->dtype))
    return -1;
  if (sub == 0 && check_shaped(c, "indices", x->rank, dims, COIL_I64))
    return -1;
  set_tensor(c, x->dtype, x->rank, x->dims);
  return 0;
}

/* native_layer_norm_backward and native_group_norm_backward: (grad_input, grad_weight,
 * grad_bias), all three tensors whatever output_mask says (see ops.def) */
int
r_norm_bwd(ictx *c)
{
  const coil_type *x, *w = tensor_of(P(c, "weight"));
  if (float_input(c, "input", &x) || output_mask(c))
    return -1;
  if (check_shaped(c, "grad_out", x->rank, x->dims, x->dtype))
    return -1;
  const coil_sym *sdims[COIL_MAX_RANK], *pdims[COIL_MAX_RANK]; /* mean/rstd's, weight's sizes */
  int srank, prank;
  if (c->n->op->sub == 0) {
    int64_t ns[COIL_MAX_RANK];
    int nn;
    if (int_list(c, P(c, "normalized_shape"), ns, &nn, COIL_MAX_RANK))
      return -1;
    if (nn < 1 || nn > x->rank)
      return ierr(c, P(c, "normalized_shape"), "normalized_shape must name 1 to %d trailing sizes", x->rank);
    for (int i = 0; i < nn; i++)
      if (!sym_is(x->dims[x->rank - nn + i], ns[i]))
        return ierr(c, P(c, "normalized_shape"), "normalized_shape does not match the input's trailing sizes");
    srank = x->rank;
    for (int i = 0; i < x->rank; i++)
      sdims[i] = i < x->rank - nn ? x->dims[i] : K(c, 1);
    prank = nn;
    memcpy(pdims, &x->dims[x->rank - nn], sizeof(*pdims) * (size_t)nn);
    const coil_type *b = tensor_of(P(c, "bias"));
    if (b && (!has_dims(b, prank, pdims) || !coil_dtype_is_float(b->dtype)))
      return ierr(c, P(c, "bias"), "'bias' must be a floating-point tensor of size %s", dims_str(c, prank, pdims));
  } else {
    int64_t n = P(c, "N")->i, ch = P(c, "C")->i, hw = P(c, "HxW")->i, g = P(c, "group")->i, v;
    if (x->rank < 2)
      return ierr(c, P(c, "input"), "input must be a tensor of rank >= 2 (N, C, ...)");
    if (!sym_is(x->dims[0], n) || !sym_is(x->dims[1], ch))
      return ierr(c, NULL, "N and C must be the input's first two sizes");
    int64_t prod = 1;
    for (int i = 2; i < x->rank; i++) {
      if (!coil_sym_is_const(x->dims[i], &v))
        return ierr(c, P(c, "input"), "the input's spatial sizes must be constant");
      prod *= v;
    }
    if (prod != hw)
      return ierr(c, P(c, "HxW"), "HxW must be the product of the input's spatial sizes (%lld)", (long long)prod);
    if (g <= 0 || ch % g)
      return ierr(c, P(c, "group"), "group must be positive and divide C = %lld", (long long)ch);
    srank = 2;
    sdims[0] = x->dims[0];
    sdims[1] = K(c, g);
    prank = 1;
    pdims[0] = x->dims[1];
  }
  if (check_shaped(c, "mean", srank, sdims, -1) || check_shaped(c, "rstd", srank, sdims, -1))
    return -1;
  if (!coil_dtype_is_float(tensor_of(P(c, "mean"))->dtype) || !coil_dtype_is_float(tensor_of(P(c, "rstd"))->dtype))
    return ierr(c, NULL, "mean and rstd must be floating-point tensors");
  if (w && (!has_dims(w, prank, pdims) || !coil_dtype_is_float(w->dtype)))
    return ierr(c, P(c, "weight"), "'weight' must be a floating-point tensor of size %s", dims_str(c, prank, pdims));
  coil_type *e = set_tuple(c, 3);
  e[0].dtype = x->dtype;
  e[0].rank = x->rank;
  memcpy(e[0].dims, x->dims, sizeof(x->dims));
  for (int k = 1; k < 3; k++) {
    const coil_type *b = k == 2 && c->n->op->sub == 0 ? tensor_of(P(c, "bias")) : NULL;
    e[k].dtype = b ? b->dtype : w ? w->dtype : x->dtype;
    e[k].rank = prank;
    memcpy(e[k].dims, pdims, sizeof(*pdims) * (size_t)prank);
  }
  return 0;
}

/* convolution_backward: (grad_input, grad_weight, grad_bias) shaped as input, weight and the
 * output's channels, with grad_output shaped as the forward's output */
int
r_conv_bwd(ictx *c)
{
  const coil_type *x, *w = tensor_of(P(c, "weight"));
  const coil_sym *dims[COIL_MAX_RANK];
  int64_t cout;
  if (float_input(c, "input", &x) || output_mask(c) || conv_dims(c, dims, &cout))
    return -1;
  if (check_shaped(c, "grad_output", x->rank, dims, x->dtype))
    return -1;
  coil_lit *bs = P(c, "bias_sizes");
  if (bs->kind == COIL_LIT_LIST && (bs->n != 1 || bs->items[0].i != cout))
    return ierr(c, bs, "bias_sizes must be None or [%lld]", (long long)cout);
  coil_type *e = set_tuple(c, 3);
  const coil_type *like[2] = {x, w};
  for (int k = 0; k < 2; k++) {
    e[k].dtype = x->dtype;
    e[k].rank = like[k]->rank;
    memcpy(e[k].dims, like[k]->dims, sizeof(x->dims));
  }
  e[2].dtype = x->dtype;
  e[2].rank = 1;
  e[2].dims[0] = K(c, cout);
  return 0;
}

/* col2im: self [N, C*KH*KW, L] (or without N) -> [N, C, output_size], L the number of sliding
 * blocks over the output */
int
r_col2im(ictx *c)
{
  const coil_type *t;
  if (float_input(c, "self", &t))
    return -1;
  if (t->rank != 2 && t->rank != 3)
    return ierr(c, P(c, "self"), "input must be a 2-D or 3-D tensor ([N,] C*KH*KW, L), not of rank %d", t->rank);
  int64_t os[2], ks[2], dl[2], pd[2], st[2], cols, len;
  int n[5];
  if (int_list(c, P(c, "output_size"), os, &n[0], 2) || int_list(c, P(c, "kernel_size"), ks, &n[1], 2) ||
      int_list(c, P(c, "dilation"), dl, &n[2], 2) || int_list(c, P(c, "padding"), pd, &n[3], 2) ||
      int_list(c, P(c, "stride"), st, &n[4], 2))
    return -1;
  for (int i = 0; i < 5; i++)
    if (n[i] != 2)
      return ierr(c, NULL, "output_size, kernel_size, dilation, padding and stride need 2 entries each");
  if (os[0] <= 0 || os[1] <= 0)
    return ierr(c, P(c, "output_size"), "output_size must be positive");
  const coil_sym *blocks = K(c, 1), *nb;
  for (int i = 0; i < 2; i++) {
    if (window_out(c, K(c, os[i]), ks[i], st[i], pd[i], dl[i], false, &nb))
      return -1;
    blocks = coil_sym_mul(c->sc, blocks, nb);
  }
  int r = t->rank;
  if (!coil_sym_is_const(t->dims[r - 2], &cols) || cols % (ks[0] * ks[1]))
    return ierr(c, P(c, "self"), "the input's size %d must be a constant multiple of kernel_size's product (%lld)",
                r - 2, (long long)(ks[0] * ks[1]));
  if (!coil_sym_is_const(t->dims[r - 1], &len) || !sym_eq(t->dims[r - 1], blocks))
    return ierr(c, P(c, "self"), "the input's last size (%s) must be the number of sliding blocks (%s)",
                S(c, t->dims[r - 1]), S(c, blocks));
  const coil_sym *dims[4];
  if (r == 3)
    dims[0] = t->dims[0];
  dims[r - 2] = K(c, cols / (ks[0] * ks[1]));
  dims[r - 1] = K(c, os[0]);
  dims[r] = K(c, os[1]);
  set_tensor(c, t->dtype, r + 1, dims);
  return 0;
}

/* grid_sampler_2d: input [N, C, H, W], grid [N, Ho, Wo, 2] -> [N, C, Ho, Wo] */
int
r_grid_sample(ictx *c)
{
  const coil_type *x, *g;
  if (float_input(c, "input", &x) || float_input(c, "grid", &g))
    return -1;
  if (x->rank != 4)
    return ierr(c, P(c, "input"), "input must be a 4-D tensor (N, C, H, W), not of rank %d", x->rank);
  if (g->rank != 4 || !sym_is(g->dims[3], 2) || !sym_eq(g->dims[0], x->dims[0]))
    return ierr(c, P(c, "grid"), "grid must be a tensor of size [%s, Ho, Wo, 2]", S(c, x->dims[0]));
  if (g->dtype != x->dtype)
    return ierr(c, P(c, "grid"), "grid must have the input's dtype (%s), not %s", coil_dtype_name(x->dtype),
                coil_dtype_name(g->dtype));
  coil_lit *im = P(c, "interpolation_mode"), *pm = P(c, "padding_mode");
  if (im->i == 2)
    return ierr(c, im, "bicubic interpolation (mode 2) is not supported; bilinear (0) and nearest (1) are");
  if (im->i < 0 || im->i > 1)
    return ierr(c, im, "interpolation_mode must be 0 (bilinear) or 1 (nearest)");
  if (pm->i < 0 || pm->i > 2)
    return ierr(c, pm, "padding_mode must be 0 (zeros), 1 (border) or 2 (reflection)");
  const coil_sym *dims[4] = {x->dims[0], x->dims[1], g->dims[1], g->dims[2]};
  set_tensor(c, x->dtype, 4, dims);
  return 0;
}

/* _embedding_bag: (output [B, D], offset2bag, bag_size, max_indices) with B the bags; the
 * auxiliary outputs' sizes as PyTorch's CPU kernels give them: offset2bag is [0] for mode sum
 * in f32 or f16 without padding_idx (the fast path skips it), else [I]; max_indices is [B, D]
 * for mode max, else [B] */
int
r_embedding_bag(ictx *c)
{
  const coil_type *w, *ix = tensor_of(P(c, "indices")), *off = tensor_of(P(c, "offsets"));
  const coil_type *psw = tensor_of(P(c, "per_sample_weights"));
  if (float_input(c, "weight", &w))
    return -1;
  if (w->rank != 2)
    return ierr(c, P(c, "weight"), "weight must be a 2-D tensor (num_embeddings, dim), not of rank %d", w->rank);
  if (!ix || ix->rank != 1 || (ix->dtype != COIL_I64 && ix->dtype != COIL_I32))
    return ierr(c, P(c, "indices"), "indices must be a 1-D tensor of i64 or i32");
  if (!off || off->rank != 1 || (off->dtype != COIL_I64 && off->dtype != COIL_I32))
    return ierr(c, P(c, "offsets"), "offsets must be a 1-D tensor of i64 or i32");
  int64_t mode = P(c, "mode")->i, nb;
  if (mode < 0 || mode > 2)
    return ierr(c, P(c, "mode"), "mode must be 0 (sum), 1 (mean) or 2 (max)");
  if (psw && mode != 0)
    return ierr(c, P(c, "per_sample_weights"), "per_sample_weights is only supported for mode 0 (sum)");
  if (psw && (psw->rank != 1 || !sym_eq(psw->dims[0], ix->dims[0]) || psw->dtype != w->dtype))
    return ierr(c, P(c, "per_sample_weights"), "per_sample_weights must be a 1-D tensor like indices, of weight's dtype");
  bool last = P(c, "include_last_offset")->i;
  const coil_sym *bags = last ? coil_sym_add(c->sc, off->dims[0], K(c, -1)) : off->dims[0];
  if (coil_sym_is_const(bags, &nb) && nb < 0)
    return ierr(c, P(c, "offsets"), "include_last_offset: offsets needs at least one element");
  coil_dtype aux = ix->dtype == COIL_I64 || off->dtype == COIL_I64 ? COIL_I64 : COIL_I32;
  bool fast_sum = mode == 0 && P(c, "padding_idx")->i < 0 && (w->dtype == COIL_F32 || w->dtype == COIL_F16);
  coil_type *e = set_tuple(c, 4);
  e[0].dtype = w->dtype;
  e[0].rank = 2;
  e[0].dims[0] = bags;
  e[0].dims[1] = w->dims[1];
  e[1].dtype = e[2].dtype = e[3].dtype = aux;
  e[1].rank = e[2].rank = 1;
  e[1].dims[0] = fast_sum ? K(c, 0) : ix->dims[0];
  e[2].dims[0] = bags;
  e[3].rank = mode == 2 ? 2 : 1;
  e[3].dims[0] = bags;
  e[3].dims[1] = w->dims[1];
  return 0;
}

/* sort: (values, indices) shaped as self */
int
r_sort(ictx *c)
{
  const coil_type *t = tensor_of(P(c, "self"));
  if (!t)
    return ierr(c, P(c, "self"), "argument 'self' must be a tensor");
  int d;
  if (wrap_dim(c, P(c, "dim"), P(c, "dim")->i, t->rank, &d))
    return -1;
  coil_type *e = set_tuple(c, 2);
  for (int i = 0; i < 2; i++) {
    e[i].dtype = i ? COIL_I64 : t->dtype;
    e[i].rank = t->rank;
    memcpy(e[i].dims, t->dims, sizeof t->dims);
  }
  return 0;
}

/* _cdist_forward: x1 [B.., P, M], x2 [B.., R, M] -> [B.., P, R]; _pdist_forward: [N, M] ->
 * [N*(N-1)/2] */
int
r_cdist(ictx *c)
{
  coil_lit *pl = P(c, "p");
  if (pl->f < 0 || isnan(pl->f))
    return ierr(c, pl, "p must be non-negative, not %g", pl->f);
  const coil_type *a;
  if (c->n->op->sub == 1) {
    if (float_input(c, "self", &a))
      return -1;
    if (a->rank != 2)
      return ierr(c, P(c, "self"), "input must be a 2-D tensor (N, M), not of rank %d", a->rank);
    const coil_sym *n = a->dims[0];
    const coil_sym *pairs = coil_sym_floordiv(c->sc, coil_sym_mul(c->sc, n, coil_sym_add(c->sc, n, K(c, -1))), K(c, 2));
    set_tensor(c, a->dtype, 1, &pairs);
    return 0;
  }
  const coil_type *b;
  if (float_input(c, "x1", &a) || float_input(c, "x2", &b))
    return -1;
  if (a->rank < 2 || b->rank < 2)
    return ierr(c, NULL, "x1 and x2 must have rank 2 or more (.., rows, features)");
  if (a->dtype != b->dtype)
    return ierr(c, P(c, "x2"), "x1 and x2 must have the same dtype (%s and %s)", coil_dtype_name(a->dtype),
                coil_dtype_name(b->dtype));
  if (!sym_eq(a->dims[a->rank - 1], b->dims[b->rank - 1]))
    return ierr(c, P(c, "x2"), "x1 and x2 must have the same number of features (last size: %s and %s)",
                S(c, a->dims[a->rank - 1]), S(c, b->dims[b->rank - 1]));
  coil_lit *cm = P(c, "compute_mode");
  if (cm->kind == COIL_LIT_INT && (cm->i < 0 || cm->i > 2))
    return ierr(c, cm, "compute_mode must be None, 0, 1 or 2");
  int rank = a->rank - 2;
  const coil_sym *dims[COIL_MAX_RANK];
  memcpy(dims, a->dims, sizeof(*dims) * (size_t)rank);
  coil_type bb = *b;
  bb.rank = b->rank - 2;
  if (broadcast(c, &rank, dims, &bb))
    return -1;
  if (rank + 2 > COIL_MAX_RANK - 1)
    return ierr(c, NULL, "too many batch dimensions");
  dims[rank] = a->dims[a->rank - 2];
  dims[rank + 1] = b->dims[b->rank - 2];
  set_tensor(c, a->dtype, rank + 2, dims);
  return 0;
}
