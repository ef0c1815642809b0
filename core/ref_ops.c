/* ref_ops.c — the reference interpreter's views, data movement and library-class ops (matmul,
 * convolution, pooling, topk, indexing). Views are computed as strided copies of their input
 * (sizes, strides and an offset over the input's contiguous layout), the same description a
 * ReinterpretView has in later stages. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

static int
wrap(int64_t d, int rank)
{
  int r = rank > 0 ? rank : 1;
  return (int)(d < 0 ? d + r : d);
}

static void
contiguous_strides(const coil_tensor *t, int64_t *st)
{
  for (int d = 0; d < t->rank; d++)
    st[d] = coil_ref_stride(t, d);
}

static void
copy_all(const coil_tensor *in, coil_tensor *out)
{
  memcpy(out->data, in->data, coil_tensor_nbytes(out));
}

static int
run_view(rctx *r, coil_tensor *out)
{
  const coil_tensor *in = coil_ref_arg(r, 0);
  int64_t st[COIL_MAX_RANK], ist[COIL_MAX_RANK], off = 0;
  contiguous_strides(in, ist);
  switch (r->n->op->rule) {
  case COIL_RULE_PERMUTE: {
    const coil_lit *p = coil_ref_lit(r, "dims");
    for (int i = 0; i < out->rank; i++)
      st[i] = ist[wrap(p->items[i].i, in->rank)];
    break;
  }
  case COIL_RULE_TRANSPOSE: {
    memcpy(st, ist, sizeof st);
    if (in->rank >= 2) {
      int a = 0, b = 1;
      if (r->n->op->sub == 1) {
        a = wrap(coil_ref_lit(r, "dim0")->i, in->rank);
        b = wrap(coil_ref_lit(r, "dim1")->i, in->rank);
      }
      st[a] = ist[b];
      st[b] = ist[a];
    }
    break;
  }
  case COIL_RULE_EXPAND:
    coil_ref_bstrides(in, out->rank, out->shape, st);
    break;
  case COIL_RULE_SLICE: {
    int d = wrap(coil_ref_lit(r, "dim")->i, in->rank);
    const coil_lit *ls = coil_ref_lit(r, "start");
    int64_t size = in->shape[d], start = ls->kind == COIL_LIT_NONE ? 0 : ls->i;
    if (start < 0)
      start += size;
    start = start < 0 ? 0 : start > size ? size : start;
    memcpy(st, ist, sizeof st);
    st[d] *= coil_ref_lit(r, "step")->i;
    off = start * ist[d];
    break;
  }
  case COIL_RULE_SELECT: {
    int d = wrap(coil_ref_lit(r, "dim")->i, in->rank);
    int64_t idx = coil_ref_lit(r, "index")->i;
    if (idx < -in->shape[d] || idx >= in->shape[d])
      return coil_ref_err(r, "index %lld is out of range for size %lld", (long long)idx,
                          (long long)in->shape[d]);
    off = (idx < 0 ? idx + in->shape[d] : idx) * ist[d];
    for (int i = 0, j = 0; i < in->rank; i++)
      if (i != d)
        st[j++] = ist[i];
    break;
  }
  default: /* reshape, squeeze, unsqueeze, clone, alias: the same elements in the same order */
    copy_all(in, out);
    return 0;
  }
  coil_ref_strided_copy(in, out, st, off);
  return 0;
}

static int
run_copy(rctx *r, coil_tensor *out)
{
  const coil_tensor *src = coil_ref_param(r, "src");
  int64_t st[COIL_MAX_RANK], idx[COIL_MAX_RANK], n = coil_tensor_numel(out);
  coil_ref_bstrides(src, out->rank, out->shape, st);
  for (int64_t i = 0; i < n; i++) {
    coil_ref_unravel(i, out->rank, out->shape, idx);
    int64_t o = 0;
    for (int d = 0; d < out->rank; d++)
      o += idx[d] * st[d];
    coil_ref_convert(src, o, out, i);
  }
  return 0;
}

static int
run_cat(rctx *r, coil_tensor *out)
{
  const coil_lit *l = coil_ref_lit(r, "tensors");
  int d = wrap(coil_ref_lit(r, "dim")->i, out->rank);
  int64_t at = 0, idx[COIL_MAX_RANK], ost[COIL_MAX_RANK];
  contiguous_strides(out, ost);
  for (int k = 0; k < l->n; k++) {
    const coil_tensor *in = r->vals[l->items[k].v->kind == COIL_VAL_NODE
                                        ? r->g->ninputs + l->items[k].v->index
                                        : l->items[k].v->index];
    if (in->rank != out->rank) /* a legacy empty 1-D tensor */
      continue;
    int64_t n = coil_tensor_numel(in);
    for (int64_t i = 0; i < n; i++) {
      coil_ref_unravel(i, in->rank, in->shape, idx);
      idx[d] += at;
      int64_t o = 0;
      for (int q = 0; q < out->rank; q++)
        o += idx[q] * ost[q];
      coil_ref_convert(in, i, out, o);
    }
    at += in->shape[d];
  }
  return 0;
}

static int
run_split(rctx *r, coil_tensor *outs)
{
  const coil_tensor *in = coil_ref_arg(r, 0);
  int d = wrap(coil_ref_lit(r, "dim")->i, in->rank);
  int n = r->n->out->type.nelems;
  int64_t st[COIL_MAX_RANK], at = 0;
  contiguous_strides(in, st);
  for (int k = 0; k < n; k++) {
    coil_ref_strided_copy(in, &outs[k], st, at * st[d]);
    at += outs[k].shape[d];
  }
  return 0;
}

static int
run_pad(rctx *r, coil_tensor *out)
{
  const coil_tensor *in = coil_ref_arg(r, 0);
  const coil_lit *pad = coil_ref_lit(r, "pad"), *val = coil_ref_lit(r, "value");
  int64_t before[COIL_MAX_RANK] = {0}, idx[COIL_MAX_RANK], n = coil_tensor_numel(out);
  for (int i = 0; i < pad->n / 2; i++)
    before[in->rank - 1 - i] = pad->items[2 * i].i;
  for (int64_t i = 0; i < n; i++) {
    coil_ref_unravel(i, out->rank, out->shape, idx);
    int64_t o = 0;
    bool inside = true;
    for (int d = 0; d < out->rank; d++) {
      int64_t s = idx[d] - before[d];
      if (s < 0 || s >= in->shape[d])
        inside = false;
      o = o * in->shape[d] + s;
    }
    if (inside)
      coil_ref_convert(in, o, out, i);
    else if (val->kind == COIL_LIT_FLOAT)
      coil_tensor_set_f64(out, i, val->f);
    else
      coil_tensor_set_i64(out, i, val->i);
  }
  return 0;
}

int
coil_ref_run_move(rctx *r, coil_tensor *outs)
{
  switch (r->n->op->rule) {
  case COIL_RULE_COPY: return run_copy(r, outs);
  case COIL_RULE_CAT: return run_cat(r, outs);
  case COIL_RULE_SPLIT: return run_split(r, outs);
  case COIL_RULE_PAD: return run_pad(r, outs);
  default: return run_view(r, outs);
  }
}

/* ---- library-class ops ---- */

static double
at(const coil_tensor *t, int64_t i)
{
  return coil_tensor_get_f64(t, i);
}

/* mm, bmm, addmm: f64 accumulation, one rounding at the end. */
static int
run_matmul(rctx *r, coil_tensor *out)
{
  int sub = r->n->op->sub;
  const coil_tensor *a = coil_ref_param(r, sub == 2 ? "mat1" : "self");
  const coil_tensor *b = coil_ref_param(r, "mat2");
  int64_t batch = sub == 1 ? a->shape[0] : 1, o = sub == 1;
  int64_t M = a->shape[o], K = a->shape[o + 1], N = b->shape[o + 1];
  double alpha = 1, beta = 1;
  const coil_tensor *bias = NULL;
  int64_t bst[COIL_MAX_RANK] = {0};
  if (sub == 2) {
    const coil_lit *al = coil_ref_lit(r, "alpha"), *be = coil_ref_lit(r, "beta");
    alpha = al->kind == COIL_LIT_FLOAT ? al->f : (double)al->i;
    beta = be->kind == COIL_LIT_FLOAT ? be->f : (double)be->i;
    bias = coil_ref_param(r, "self");
    coil_ref_bstrides(bias, 2, out->shape, bst);
  }
  for (int64_t p = 0; p < batch; p++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double s = 0;
        for (int64_t k = 0; k < K; k++)
          s += at(a, (p * M + i) * K + k) * at(b, (p * K + k) * N + j);
        if (bias) {
          /* beta = 0 ignores the bias entirely, NaN included, as torch documents */
          double bv = beta == 0 ? 0 : beta * at(bias, i * bst[0] + j * bst[1]);
          s = alpha * s + bv;
        }
        coil_tensor_set_f64(out, (p * M + i) * N + j, s);
      }
  return 0;
}

/* Direct convolution over 1 to 3 spatial dims, grouped, dilated, and transposed. */
static int
run_conv(rctx *r, coil_tensor *out)
{
  const coil_tensor *x = coil_ref_param(r, "input"), *w = coil_ref_param(r, "weight");
  const coil_tensor *bias = coil_ref_param(r, "bias");
  const coil_lit *ls = coil_ref_lit(r, "stride"), *lp = coil_ref_lit(r, "padding"),
                 *ld = coil_ref_lit(r, "dilation");
  int64_t groups = coil_ref_lit(r, "groups")->i;
  bool tr = coil_ref_lit(r, "transposed")->i;
  int nsp = x->rank - 2;
  int64_t N = x->shape[0], C = x->shape[1], O = out->shape[1];
  int64_t cpg = C / groups, opg = O / groups; /* channels per group, in and out */
  int64_t ksz = 1, isp = 1, osp = 1;
  for (int i = 0; i < nsp; i++) {
    ksz *= w->shape[2 + i];
    isp *= x->shape[2 + i];
    osp *= out->shape[2 + i];
  }
  double *acc = calloc((size_t)(N * O * osp) + 1, sizeof(double));
  if (!acc)
    return coil_ref_err(r, "out of memory");
  int64_t ip[3], kp[3], op[3];
  for (int64_t n = 0; n < N; n++)
    for (int64_t g = 0; g < groups; g++)
      for (int64_t oc = 0; oc < opg; oc++)
        for (int64_t ic = 0; ic < cpg; ic++)
          for (int64_t k = 0; k < ksz; k++) {
            coil_ref_unravel(k, nsp, w->shape + 2, kp);
            int64_t widx = tr ? (((g * cpg + ic) * opg + oc) * ksz + k)
                              : (((g * opg + oc) * cpg + ic) * ksz + k);
            double wv = at(w, widx);
            int64_t iters = tr ? isp : osp;
            for (int64_t s = 0; s < iters; s++) {
              bool ok = true;
              int64_t flat_in = 0, flat_out = 0;
              if (!tr) { /* out position s reads in = o*stride - pad + k*dilation */
                coil_ref_unravel(s, nsp, out->shape + 2, op);
                for (int q = 0; q < nsp; q++) {
                  ip[q] = op[q] * ls->items[q].i - lp->items[q].i + kp[q] * ld->items[q].i;
                  ok = ok && ip[q] >= 0 && ip[q] < x->shape[2 + q];
                  flat_in = flat_in * x->shape[2 + q] + ip[q];
                }
                flat_out = s;
              } else { /* in position s writes out = i*stride - pad + k*dilation */
                coil_ref_unravel(s, nsp, x->shape + 2, ip);
                for (int q = 0; q < nsp; q++) {
                  op[q] = ip[q] * ls->items[q].i - lp->items[q].i + kp[q] * ld->items[q].i;
                  ok = ok && op[q] >= 0 && op[q] < out->shape[2 + q];
                  flat_out = flat_out * out->shape[2 + q] + op[q];
                }
                flat_in = s;
              }
              if (!ok)
                continue;
              acc[(n * O + g * opg + oc) * osp + flat_out] +=
                  wv * at(x, (n * C + g * cpg + ic) * isp + flat_in);
            }
          }
  for (int64_t i = 0; i < N * O * osp; i++) {
    double b = bias ? at(bias, (i / osp) % O) : 0.0;
    coil_tensor_set_f64(out, i, acc[i] + b);
  }
  free(acc);
  return 0;
}

/* max_pool2d_with_indices and avg_pool2d, with PyTorch's padding, ceil_mode and divisor rules. */
static int
run_pool(rctx *r, coil_tensor *outs)
{
  const coil_tensor *x = coil_ref_arg(r, 0);
  const coil_lit *lk = coil_ref_lit(r, "kernel_size"), *ls = coil_ref_lit(r, "stride"),
                 *lp = coil_ref_lit(r, "padding"), *ld = coil_ref_lit(r, "dilation");
  int64_t kh = lk->items[0].i, kw = lk->n > 1 ? lk->items[1].i : kh;
  int64_t sh = ls->n ? ls->items[0].i : kh, sw = ls->n > 1 ? ls->items[1].i : ls->n ? sh : kw;
  int64_t ph = lp->items[0].i, pw = lp->n > 1 ? lp->items[1].i : ph;
  int64_t dh = ld ? ld->items[0].i : 1, dw = ld ? (ld->n > 1 ? ld->items[1].i : dh) : 1;
  int rk = x->rank;
  int64_t H = x->shape[rk - 2], W = x->shape[rk - 1];
  int64_t OH = outs[0].shape[rk - 2], OW = outs[0].shape[rk - 1];
  int64_t planes = H * W != 0 ? coil_tensor_numel(x) / (H * W) : 0;
  bool is_max = r->n->op->sub == 0;
  for (int64_t p = 0; p < planes; p++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        int64_t o = (p * OH + oh) * OW + ow;
        if (is_max) {
          double best = -INFINITY;
          int64_t arg = -1;
          for (int64_t i = 0; i < kh; i++)
            for (int64_t j = 0; j < kw; j++) {
              int64_t h = oh * sh - ph + i * dh, w = ow * sw - pw + j * dw;
              if (h < 0 || h >= H || w < 0 || w >= W)
                continue;
              double v = at(x, (p * H + h) * W + w);
              /* as torch's kernels: a NaN always takes over, so the last NaN's index wins */
              if (arg < 0 || v > best || isnan(v)) {
                best = v;
                arg = h * W + w;
              }
            }
          coil_tensor_set_f64(&outs[0], o, best);
          coil_tensor_set_i64(&outs[1], o, arg);
        } else {
          int64_t hs = oh * sh - ph, ws = ow * sw - pw;
          int64_t he = hs + kh < H + ph ? hs + kh : H + ph, we = ws + kw < W + pw ? ws + kw : W + pw;
          int64_t pool = (he - hs) * (we - ws);
          hs = hs < 0 ? 0 : hs, ws = ws < 0 ? 0 : ws;
          he = he > H ? H : he, we = we > W ? W : we;
          double s = 0;
          for (int64_t h = hs; h < he; h++)
            for (int64_t w = ws; w < we; w++)
              s += at(x, (p * H + h) * W + w);
          const coil_lit *dv = coil_ref_lit(r, "divisor_override");
          int64_t div = dv->kind == COIL_LIT_INT ? dv->i
                        : coil_ref_lit(r, "count_include_pad")->i ? pool
                                                                  : (he - hs) * (we - ws);
          coil_tensor_set_f64(&outs[0], o, div ? s / (double)div : NAN);
        }
      }
  return 0;
}

typedef struct {
  double v;
  int64_t i;
  bool largest;
} kv;

/* Order for topk: larger (or smaller) first, NaN as the largest, ties by lower index. */
static int
kv_cmp(const void *pa, const void *pb)
{
  const kv *a = pa, *b = pb;
  bool an = isnan(a->v), bn = isnan(b->v);
  int c = 0;
  if (an || bn)
    c = an && bn ? 0 : an ? 1 : -1;
  else
    c = a->v > b->v ? 1 : a->v < b->v ? -1 : 0;
  if (!a->largest)
    c = -c;
  if (c)
    return -c;
  return a->i < b->i ? -1 : a->i > b->i;
}

static int
run_topk(rctx *r, coil_tensor *outs)
{
  const coil_tensor *x = coil_ref_arg(r, 0);
  int d = wrap(coil_ref_lit(r, "dim")->i, x->rank);
  int64_t k = coil_ref_lit(r, "k")->i;
  bool largest = coil_ref_lit(r, "largest")->i;
  int64_t size = x->rank ? x->shape[d] : 1, inner = x->rank ? coil_ref_stride(x, d) : 1;
  int64_t outer = size && inner ? coil_tensor_numel(x) / (size * inner) : 0;
  kv *row = calloc((size_t)size + 1, sizeof *row);
  if (!row)
    return coil_ref_err(r, "out of memory");
  for (int64_t o = 0; o < outer; o++)
    for (int64_t q = 0; q < inner; q++) {
      for (int64_t j = 0; j < size; j++)
        row[j] = (kv){at(x, (o * size + j) * inner + q), j, largest};
      qsort(row, (size_t)size, sizeof *row, kv_cmp);
      for (int64_t j = 0; j < k; j++) {
        int64_t dst = (o * k + j) * inner + q;
        coil_tensor_set_f64(&outs[0], dst, row[j].v);
        coil_tensor_set_i64(&outs[1], dst, row[j].i);
      }
    }
  free(row);
  return 0;
}

static int
check_index(rctx *r, int64_t *v, int64_t size)
{
  if (*v < -size || *v >= size)
    return coil_ref_err(r, "index %lld is out of bounds for size %lld", (long long)*v, (long long)size);
  if (*v < 0)
    *v += size;
  return 0;
}

static int
run_gather(rctx *r, coil_tensor *out)
{
  const coil_tensor *x = coil_ref_param(r, "self"), *ix = coil_ref_param(r, "index");
  int d = wrap(coil_ref_lit(r, "dim")->i, x->rank);
  int64_t idx[COIL_MAX_RANK], n = coil_tensor_numel(out);
  for (int64_t i = 0; i < n; i++) {
    coil_ref_unravel(i, out->rank, out->shape, idx);
    int64_t v = coil_tensor_get_i64(ix, i), size = x->rank ? x->shape[d] : 1;
    if (v < 0) /* unlike index.Tensor, gather takes no negative indices (as torch) */
      return coil_ref_err(r, "index %lld is out of bounds for size %lld", (long long)v,
                          (long long)size);
    if (check_index(r, &v, size))
      return -1;
    if (x->rank)
      idx[d] = v;
    int64_t o = 0;
    for (int q = 0; q < x->rank; q++) {
      if (idx[q] >= x->shape[q])
        return coil_ref_err(r, "index tensor is larger than self in dimension %d", q);
      o = o * x->shape[q] + idx[q];
    }
    coil_ref_convert(x, o, out, i);
  }
  return 0;
}

static int
run_embedding(rctx *r, coil_tensor *out)
{
  const coil_tensor *w = coil_ref_param(r, "weight"), *ix = coil_ref_param(r, "indices");
  int64_t rows = coil_tensor_numel(ix), dim = w->shape[1];
  for (int64_t i = 0; i < rows; i++) {
    int64_t v = coil_tensor_get_i64(ix, i);
    if (v < 0 || v >= w->shape[0])
      return coil_ref_err(r, "index %lld is out of range for %lld embeddings", (long long)v,
                          (long long)w->shape[0]);
    for (int64_t j = 0; j < dim; j++)
      coil_ref_convert(w, v * dim + j, out, i * dim + j);
  }
  return 0;
}

/* Advanced indexing: index tensors broadcast together; their result dims replace the indexed
 * dims in place when those are adjacent, and go first otherwise (NumPy's rule). */
static int
run_index(rctx *r, coil_tensor *out)
{
  const coil_tensor *x = coil_ref_param(r, "self");
  const coil_lit *l = coil_ref_lit(r, "indices");
  const coil_tensor *ixs[COIL_MAX_RANK] = {0};
  int first = -1, last = -1, brank = 0;
  for (int i = 0; i < l->n; i++) {
    if (l->items[i].kind == COIL_LIT_NONE)
      continue;
    const coil_value *v = l->items[i].v;
    ixs[i] = r->vals[v->kind == COIL_VAL_NODE ? r->g->ninputs + v->index : v->index];
    if (ixs[i]->rank > brank)
      brank = ixs[i]->rank;
    if (first < 0)
      first = i;
    last = i;
  }
  bool adjacent = true;
  for (int i = first; i <= last; i++)
    adjacent = adjacent && ixs[i];
  int bstart = adjacent ? first : 0;
  int64_t bshape[COIL_MAX_RANK], idx[COIL_MAX_RANK], n = coil_tensor_numel(out);
  memcpy(bshape, out->shape + bstart, sizeof(int64_t) * (size_t)brank);
  int64_t bst[COIL_MAX_RANK][COIL_MAX_RANK];
  for (int i = 0; i < l->n; i++)
    if (ixs[i])
      coil_ref_bstrides(ixs[i], brank, bshape, bst[i]);
  for (int64_t e = 0; e < n; e++) {
    coil_ref_unravel(e, out->rank, out->shape, idx);
    int64_t src[COIL_MAX_RANK];
    int rest = 0; /* position in out of the next non-indexed dim */
    for (int q = 0; q < x->rank; q++) {
      if (q < l->n && ixs[q]) {
        int64_t o = 0;
        for (int b = 0; b < brank; b++)
          o += idx[bstart + b] * bst[q][b];
        src[q] = coil_tensor_get_i64(ixs[q], o);
        if (check_index(r, &src[q], x->shape[q]))
          return -1;
      } else {
        int pos = adjacent ? (q < first ? q : q - (last - first + 1) + brank) : brank + rest;
        rest++;
        src[q] = idx[pos];
      }
    }
    int64_t o = 0;
    for (int q = 0; q < x->rank; q++)
      o = o * x->shape[q] + src[q];
    coil_ref_convert(x, o, out, e);
  }
  return 0;
}

/* cumsum (cumprod: sub 1) along dim, in f64 (floats) or i64, each prefix rounded to the output
 * dtype */
static int
run_cumsum(rctx *r, coil_tensor *out)
{
  const coil_tensor *x = coil_ref_param(r, "self");
  int d = wrap(coil_ref_lit(r, "dim")->i, x->rank);
  int64_t n = coil_tensor_numel(out), len = x->rank ? x->shape[d] : 1, inner = 1;
  for (int q = d + 1; q < x->rank; q++)
    inner *= x->shape[q];
  bool fl = coil_dtype_is_float(out->dtype), prod = r->n->op->sub == 1;
  for (int64_t line = 0; len && line < n / len; line++) {
    int64_t base = line / inner * len * inner + line % inner;
    double f = prod ? 1 : 0;
    int64_t i = prod ? 1 : 0;
    for (int64_t k = 0; k < len; k++) {
      int64_t at = base + k * inner;
      if (fl) {
        f = prod ? f * coil_tensor_get_f64(x, at) : f + coil_tensor_get_f64(x, at);
        coil_tensor_set_f64(out, at, f);
      } else { /* wraps as torch */
        uint64_t v = (uint64_t)coil_tensor_get_i64(x, at);
        i = (int64_t)(prod ? (uint64_t)i * v : (uint64_t)i + v);
        coil_tensor_set_i64(out, at, i);
      }
    }
  }
  return 0;
}

int
coil_ref_run_extern(rctx *r, coil_tensor *outs)
{
  switch (r->n->op->rule) {
  case COIL_RULE_MATMUL: return run_matmul(r, outs);
  case COIL_RULE_CONV: return run_conv(r, outs);
  case COIL_RULE_POOL: return run_pool(r, outs);
  case COIL_RULE_TOPK: return run_topk(r, outs);
  case COIL_RULE_CUMSUM: return run_cumsum(r, outs);
  case COIL_RULE_GATHER: return run_gather(r, outs);
  case COIL_RULE_EMBEDDING: return run_embedding(r, outs);
  case COIL_RULE_INDEX: return run_index(r, outs);
  default: return coil_ref_err(r, "internal: no reference implementation");
  }
}
