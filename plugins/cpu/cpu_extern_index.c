/* cpu_extern_index.c — the library calls that move elements rather than multiply them:
 * max/avg pooling, topk, gather, embedding and advanced indexing (aten.index.Tensor), each an
 * OpenMP loop over output elements (or rows) reading its inputs through their strides, with the
 * rules of core/ref_ops.c: pooling's padding, ceil_mode and divisor rules; topk sorted with NaN as
 * the largest and ties by lower index; indices checked, the first bad one reported. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_extern_int.h"

/* ---- pooling: max_pool2d_with_indices, avg_pool2d ---- */

typedef struct pool {
  const cpu_tensor *in, *out, *idx; /* idx: max pooling's indices, else NULL */
  int64_t ks[2], st[2], pad[2], dil[2];
  int64_t H, W, OH, OW, sH, sW; /* input and output plane sizes, input strides */
  bool cip, has_div;            /* count_include_pad; divisor_override given */
  int64_t divisor;
} pool;

/* Output row r = (plane, oh) of a pooling, with the padding and divisor rules of
 * core/ref_ops.c. Inlined into callers that pass a constant dtype t. */
ALWAYS_INLINE static inline void
pool_row(const pool *P, int64_t r, coil_dtype t)
{
  const int64_t p = r / P->OH, oh = r % P->OH, *ks = P->ks, *st = P->st, *pad = P->pad;
  const int64_t H = P->H, W = P->W;
  const void *data = P->in->data;
  int64_t base = cpux_offset_of(P->in, P->in->rank - 2, p); /* the plane: (n, c) or (c) */
  for (int64_t ow = 0, o = r * P->OW; ow < P->OW; ow++, o++) {
    if (P->idx) {
      double best = -INFINITY;
      int64_t arg = -1, at = 0;
      for (int64_t i = 0; i < ks[0]; i++) {
        int64_t h = oh * st[0] - pad[0] + i * P->dil[0];
        for (int64_t j = 0; h >= 0 && h < H && j < ks[1]; j++) {
          int64_t w = ow * st[1] - pad[1] + j * P->dil[1], a = base + h * P->sH + w * P->sW;
          if (w < 0 || w >= W)
            continue;
          double v = load_f(data, t, a);
          /* as torch's kernels: a NaN always takes over, so the last NaN's index wins */
          if (arg < 0 || v > best || isnan(v))
            best = v, arg = h * W + w, at = a;
        }
      }
      if (arg < 0)
        store_f(P->out->data, P->out->dtype, o, best);
      else
        convert(P->out->data, P->out->dtype, o, data, t, at);
      store_i(P->idx->data, P->idx->dtype, o, arg);
    } else {
      int64_t hs = oh * st[0] - pad[0], ws = ow * st[1] - pad[1];
      int64_t he = hs + ks[0] < H + pad[0] ? hs + ks[0] : H + pad[0];
      int64_t we = ws + ks[1] < W + pad[1] ? ws + ks[1] : W + pad[1];
      int64_t size = (he - hs) * (we - ws);
      hs = hs < 0 ? 0 : hs, ws = ws < 0 ? 0 : ws;
      he = he > H ? H : he, we = we > W ? W : we;
      double s = 0;
      for (int64_t h = hs; h < he; h++)
        for (int64_t w = ws; w < we; w++)
          s += load_f(data, t, base + h * P->sH + w * P->sW);
      int64_t div = P->has_div ? P->divisor : P->cip ? size : (he - hs) * (we - ws);
      store_f(P->out->data, P->out->dtype, o, div ? s / (double)div : NAN);
    }
  }
}

int
cpux_pool(xcall *x, bool is_max)
{
  if (cpux_want_nin(x, 1, 1))
    return -1;
  const cpu_tensor *in = &x->in[0], *out = &x->out[0];
  int rk = in->rank;
  if ((rk != 3 && rk != 4) || out->rank != rk || out->sizes[0] != in->sizes[0] ||
      (rk == 4 && out->sizes[1] != in->sizes[1]))
    return cpux_err(x, "input and output shapes disagree");
  if (is_max && cpux_want_out(x, 1, out->rank, out->sizes))
    return -1;
  if (in->dtype == COIL_BOOL || (!is_max && !coil_dtype_is_float(in->dtype)))
    return cpux_err(x, "unsupported dtype %s", coil_dtype_name(in->dtype));
  pool P = {.in = in,
            .out = out,
            .idx = is_max ? &x->out[1] : NULL,
            .has_div = cpux_param(x, "divisor_override") != NULL};
  int64_t cip;
  bool given;
  if (cpux_get_ints(x, "kernel_size", 2, 0, P.ks, &given))
    return -1;
  if (!given)
    return cpux_err(x, "missing parameter kernel_size");
  if (cpux_get_ints(x, "stride", 2, 0, P.st, &given))
    return -1;
  if (!given) /* stride defaults to the kernel size */
    memcpy(P.st, P.ks, sizeof P.st);
  if (cpux_get_ints(x, "padding", 2, 0, P.pad, &given) ||
      cpux_get_ints(x, "dilation", 2, 1, P.dil, &given) ||
      cpux_get_int(x, "count_include_pad", false, 1, &cip) ||
      cpux_get_int(x, "divisor_override", false, 0, &P.divisor))
    return -1;
  for (int q = 0; q < 2; q++)
    if (P.ks[q] < 1 || P.st[q] < 1 || P.dil[q] < 1 || P.pad[q] < 0)
      return cpux_err(x,
                      "kernel_size, stride and dilation must be positive and padding non-negative");
  P.cip = cip != 0;
  P.H = in->sizes[rk - 2], P.W = in->sizes[rk - 1], P.OH = out->sizes[rk - 2],
  P.OW = out->sizes[rk - 1];
  P.sH = in->strides[rk - 2], P.sW = in->strides[rk - 1];
  int64_t rows = P.OW ? cpux_numel(out) / P.OW : 0;
#pragma omp parallel for if (cpux_numel(out) * P.ks[0] * P.ks[1] > PAR_MIN)
  for (int64_t r = 0; r < rows; r++) {
    switch (in->dtype) {
    case COIL_F32: pool_row(&P, r, COIL_F32); break;
    case COIL_F64: pool_row(&P, r, COIL_F64); break;
    case COIL_F16: pool_row(&P, r, COIL_F16); break;
    case COIL_BF16: pool_row(&P, r, COIL_BF16); break;
    default: pool_row(&P, r, in->dtype); break;
    }
  }
  return 0;
}

/* ---- topk ---- */

typedef struct kv {
  double v;   /* float dtypes */
  int64_t iv; /* integer dtypes, compared exactly */
  int64_t i;  /* position along the dimension */
  bool largest, fl;
} kv;

/* Larger (or smaller) first, NaN as the largest, ties by lower index (as core/ref_ops.c). */
static int
kv_cmp(const void *pa, const void *pb)
{
  const kv *a = pa, *b = pb;
  int c;
  if (a->fl) {
    bool an = isnan(a->v), bn = isnan(b->v);
    if (an || bn)
      c = an && bn ? 0 : an ? 1 : -1;
    else
      c = a->v > b->v ? 1 : a->v < b->v ? -1 : 0;
  } else {
    c = a->iv > b->iv ? 1 : a->iv < b->iv ? -1 : 0;
  }
  if (!a->largest)
    c = -c;
  if (c)
    return -c;
  return a->i < b->i ? -1 : a->i > b->i;
}

int
cpux_topk(xcall *x)
{
  if (cpux_want_nin(x, 1, 1))
    return -1;
  const cpu_tensor *in = &x->in[0];
  int64_t k, dim, largest;
  int d = 0;
  if (cpux_get_int(x, "dim", false, -1, &dim) || cpux_wrap_dim(x, dim, in->rank, &d) ||
      cpux_get_int(x, "largest", false, 1, &largest))
    return -1;
  int64_t size = in->rank ? in->sizes[d] : 1, sd = in->rank ? in->strides[d] : 0;
  if (cpux_get_int(x, "k", false, x->out[0].rank > d ? x->out[0].sizes[d] : 1, &k))
    return -1;
  if (k < 0 || k > size)
    return cpux_err(x, "k = %" PRId64 " is out of range for a dimension of size %" PRId64, k, size);
  int64_t osz[COIL_MAX_RANK] = {0};
  memcpy(osz, in->sizes, sizeof(int64_t) * (size_t)in->rank);
  if (in->rank)
    osz[d] = k;
  if (cpux_want_out(x, 0, in->rank, osz) || cpux_want_out(x, 1, in->rank, osz))
    return -1;
  if (in->dtype == COIL_BOOL)
    return cpux_err(x, "unsupported dtype bool");
  int64_t inner = 1;
  for (int q = d + 1; q < in->rank; q++)
    inner *= in->sizes[q];
  int64_t rows = size ? cpux_numel(in) / size : 0;
  /* the tensor without dimension d: row r = (outer o, inner q) starts at cpux_offset_of(rest, r) */
  cpu_tensor rest = {.rank = in->rank ? in->rank - 1 : 0};
  for (int q = 0, j = 0; q < in->rank; q++)
    if (q != d) {
      rest.sizes[j] = in->sizes[q];
      rest.strides[j++] = in->strides[q];
    }
  bool fl = coil_dtype_is_float(in->dtype), oom = false;
  const cpu_tensor *ov = &x->out[0], *oi = &x->out[1];
#pragma omp parallel if (rows * size > PAR_MIN)
  {
    kv *row = malloc(sizeof *row * (size_t)(size + 1));
    if (!row) {
#pragma omp atomic write
      oom = true;
    }
#pragma omp for
    for (int64_t r = 0; r < rows; r++) {
      if (!row)
        continue;
      int64_t base = cpux_offset_of(&rest, rest.rank, r), o = r / inner, q = r % inner;
      for (int64_t j = 0; j < size; j++) {
        int64_t off = base + j * sd;
        row[j] = (kv){.i = j, .largest = largest != 0, .fl = fl};
        if (fl)
          row[j].v = load_f(in->data, in->dtype, off);
        else
          row[j].iv = load_i(in->data, in->dtype, off);
      }
      qsort(row, (size_t)size, sizeof *row, kv_cmp);
      for (int64_t j = 0; j < k; j++) {
        int64_t dst = (o * k + j) * inner + q;
        convert(ov->data, ov->dtype, dst, in->data, in->dtype, base + row[j].i * sd);
        store_i(oi->data, oi->dtype, dst, row[j].i);
      }
    }
    free(row);
  }
  return oom ? cpux_err(x, "out of memory") : 0;
}

/* ---- gather, embedding, index ---- */

int
cpux_gather(xcall *x)
{
  int64_t dim;
  int d = 0;
  if (cpux_want_nin(x, 2, 2) || cpux_get_int(x, "dim", true, 0, &dim))
    return -1;
  const cpu_tensor *self = &x->in[0], *ix = &x->in[1], *out = &x->out[0];
  if (cpux_want_index_dtype(x, ix) || cpux_wrap_dim(x, dim, self->rank, &d) ||
      cpux_want_out(x, 0, ix->rank, ix->sizes))
    return -1;
  if (self->rank && ix->rank != self->rank)
    return cpux_err(x, "index has rank %d, self has rank %d", ix->rank, self->rank);
  int64_t n = cpux_numel(ix), size = self->rank ? self->sizes[d] : 1, bad = n;
  for (int q = 0; n && q < self->rank; q++)
    if (q != d && ix->sizes[q] > self->sizes[q])
      return cpux_err(x, "index tensor is larger than self in dimension %d", q);
#pragma omp parallel for reduction(min : bad) if (n > PAR_MIN)
  for (int64_t i = 0; i < n; i++) {
    int64_t idx[COIL_MAX_RANK], off = 0;
    cpux_unravel(i, ix->rank, ix->sizes, idx);
    int64_t v = load_i(ix->data, ix->dtype, cpux_offset_of(ix, ix->rank, i));
    if (v < 0 || v >= size) { /* unlike index.Tensor, gather takes no negative indices */
      bad = i < bad ? i : bad;
      continue;
    }
    if (self->rank)
      idx[d] = v;
    for (int q = 0; q < self->rank; q++)
      off += idx[q] * self->strides[q];
    convert(out->data, out->dtype, i, self->data, self->dtype, off);
  }
  if (bad < n)
    return cpux_err(x, "index %" PRId64 " is out of bounds for size %" PRId64,
                    load_i(ix->data, ix->dtype, cpux_offset_of(ix, ix->rank, bad)), size);
  return 0;
}

int
cpux_embedding(xcall *x)
{
  if (cpux_want_nin(x, 2, 2))
    return -1;
  const cpu_tensor *w = &x->in[0], *ix = &x->in[1], *out = &x->out[0];
  if (w->rank != 2 || ix->rank >= COIL_MAX_RANK)
    return cpux_err(x, "weight of rank %d, indices of rank %d", w->rank, ix->rank);
  int64_t osz[COIL_MAX_RANK], dim = w->sizes[1], rows = w->sizes[0];
  memcpy(osz, ix->sizes, sizeof(int64_t) * (size_t)ix->rank);
  osz[ix->rank] = dim;
  if (cpux_want_index_dtype(x, ix) || cpux_want_out(x, 0, ix->rank + 1, osz))
    return -1;
  int64_t n = cpux_numel(ix), bad = n;
  size_t es = coil_dtype_size(w->dtype);
  bool rowcopy = w->dtype == out->dtype && (w->strides[1] == 1 || dim <= 1);
#pragma omp parallel for reduction(min : bad) if (n * dim > PAR_MIN)
  for (int64_t i = 0; i < n; i++) {
    int64_t v = load_i(ix->data, ix->dtype, cpux_offset_of(ix, ix->rank, i));
    if (v < 0 || v >= rows) {
      bad = i < bad ? i : bad;
      continue;
    }
    if (rowcopy)
      memcpy((char *)out->data + (size_t)(i * dim) * es,
             (const char *)w->data + (size_t)(v * w->strides[0]) * es, (size_t)dim * es);
    else
      for (int64_t j = 0; j < dim; j++)
        convert(out->data, out->dtype, i * dim + j, w->data, w->dtype,
                v * w->strides[0] + j * w->strides[1]);
  }
  if (bad < n)
    return cpux_err(x, "index %" PRId64 " is out of range for %" PRId64 " embeddings",
                    load_i(ix->data, ix->dtype, cpux_offset_of(ix, ix->rank, bad)), rows);
  return 0;
}

/* What index.Tensor needs to map an output element to its source. */
typedef struct iplan {
  const cpu_tensor *self, *out;
  const cpu_tensor *ixs[COIL_MAX_RANK];      /* index tensor of each dim of self, or NULL */
  int L, first, last, brank, bstart;         /* indexed dims; rank and place of the index dims */
  bool adjacent;                             /* indexed dims adjacent: results replace them */
  int64_t bst[COIL_MAX_RANK][COIL_MAX_RANK]; /* strides of each index tensor over bshape */
} iplan;

/* The storage offset in self of output element e; -1 with *bad_v and *bad_size set when an
 * index is out of bounds. */
static int
index_source(const iplan *ip, int64_t e, int64_t *off, int64_t *bad_v, int64_t *bad_size)
{
  const cpu_tensor *self = ip->self;
  int64_t idx[COIL_MAX_RANK];
  cpux_unravel(e, ip->out->rank, ip->out->sizes, idx);
  int rest = 0; /* position in out of the next non-indexed dim */
  *off = 0;
  for (int q = 0; q < self->rank; q++) {
    int64_t src;
    if (q < ip->L && ip->ixs[q]) {
      int64_t io = 0;
      for (int b = 0; b < ip->brank; b++)
        io += idx[ip->bstart + b] * ip->bst[q][b];
      src = load_i(ip->ixs[q]->data, ip->ixs[q]->dtype, io);
      if (src < -self->sizes[q] || src >= self->sizes[q]) {
        *bad_v = src, *bad_size = self->sizes[q];
        return -1;
      }
      src += src < 0 ? self->sizes[q] : 0;
    } else {
      int pos = ip->adjacent ? (q < ip->first ? q : q - (ip->last - ip->first + 1) + ip->brank)
                             : ip->brank + rest;
      rest++;
      src = idx[pos];
    }
    *off += src * self->strides[q];
  }
  return 0;
}

/* Advanced indexing: index tensors broadcast together; their result dims replace the indexed
 * dims in place when those are adjacent, and go first otherwise (NumPy's rule). */
int
cpux_index(xcall *x)
{
  iplan ip = {.self = &x->in[0], .out = &x->out[0], .first = -1, .last = -1, .adjacent = true};
  const cpu_tensor *self = ip.self;
  const coil_xparam *mask = cpux_param(x, "none_mask");
  int nnone = mask && mask->kind == COIL_XP_INTS ? mask->n : 0, next = 1;
  ip.L = x->nin - 1 + nnone;
  if (x->nin < 2 || ip.L > self->rank)
    return cpux_err(x, "%d indices (%d None) for a tensor of rank %d", ip.L, nnone, self->rank);
  for (int i = 0; i < ip.L; i++) {
    bool none = false;
    for (int j = 0; j < nnone; j++)
      none = none || mask->ints[j] == i;
    if (none)
      continue;
    if (next >= x->nin)
      return cpux_err(x, "none_mask leaves more index positions than index tensors");
    ip.ixs[i] = &x->in[next++];
    if (cpux_want_index_dtype(x, ip.ixs[i]))
      return -1;
    ip.brank = ip.ixs[i]->rank > ip.brank ? ip.ixs[i]->rank : ip.brank;
    ip.first = ip.first < 0 ? i : ip.first;
    ip.last = i;
  }
  if (next != x->nin)
    return cpux_err(x, "none_mask and the index tensors do not add up");
  int64_t bshape[COIL_MAX_RANK];
  for (int b = 0; b < ip.brank; b++)
    bshape[b] = 1;
  for (int i = 0; i < ip.L; i++) /* the broadcast shape of the index tensors */
    for (int j = 0; ip.ixs[i] && j < ip.ixs[i]->rank; j++) {
      int b = j + ip.brank - ip.ixs[i]->rank;
      int64_t s = ip.ixs[i]->sizes[j];
      if (s != 1 && bshape[b] != 1 && s != bshape[b])
        return cpux_err(x, "index tensors of sizes %" PRId64 " and %" PRId64 " do not broadcast", s,
                        bshape[b]);
      bshape[b] = s != 1 ? s : bshape[b];
    }
  for (int i = ip.first; i <= ip.last; i++)
    ip.adjacent = ip.adjacent && ip.ixs[i];
  ip.bstart = ip.adjacent ? ip.first : 0;
  int orank = 0;
  int64_t osz[COIL_MAX_RANK * 2];
  for (int q = 0; q < self->rank; q++) { /* the result's shape */
    if (q == ip.bstart)
      for (int b = 0; b < ip.brank; b++)
        osz[orank++] = bshape[b];
    if (q >= ip.L || !ip.ixs[q])
      osz[orank++] = self->sizes[q];
  }
  if (orank > COIL_MAX_RANK)
    return cpux_err(x, "the result has rank %d", orank);
  if (cpux_want_out(x, 0, orank, osz))
    return -1;
  for (int i = 0; i < ip.L; i++) /* broadcast strides of each index tensor over bshape */
    for (int j = ip.ixs[i] ? ip.ixs[i]->rank - 1 : -1; j >= 0; j--)
      ip.bst[i][j + ip.brank - ip.ixs[i]->rank] =
          ip.ixs[i]->sizes[j] == 1 ? 0 : ip.ixs[i]->strides[j];
  const cpu_tensor *out = ip.out;
  int64_t n = cpux_numel(out), bad = n, off, bv, bs;
#pragma omp parallel for reduction(min : bad) private(off, bv, bs) if (n > PAR_MIN)
  for (int64_t e = 0; e < n; e++) {
    if (index_source(&ip, e, &off, &bv, &bs))
      bad = e < bad ? e : bad;
    else
      convert(out->data, out->dtype, e, self->data, self->dtype, off);
  }
  if (bad < n && index_source(&ip, bad, &off, &bv, &bs))
    return cpux_err(x, "index %" PRId64 " is out of bounds for size %" PRId64, bv, bs);
  return 0;
}
