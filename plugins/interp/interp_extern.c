/* interp_extern.c — the extern calls interp runs itself: matmuls, convolution, pooling, topk
 * and indexing, with the numerics of core/ref_ops.c (accumulate in double, round once to the
 * output dtype; indexing copies elements exactly, converting dtype as torch's .to()).
 *
 * Every input is first gathered through its strides (views are fine) into a row-major array of
 * values, every result is computed into a row-major array and then written through the output
 * buffer's strides; both directions are bounds-checked against the buffers' storage. Shapes are
 * checked against each other before anything is computed. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp_int.h"

#define MAX_XARGS 16

/* An operand gathered into row-major order. */
typedef struct xarr {
  ival *v;
  coil_dtype dtype;
  int rank;
  int64_t sizes[COIL_MAX_RANK];
  int64_t n;
} xarr;

typedef struct xcall {
  ictx *c;
  const coil_line *l;
  int nin;
  xarr in[MAX_XARGS];
  rtbuf **outs;
  int nout;
} xcall;

/* ---- gathering and scattering ---- */

static void
advance(int64_t *idx, const int64_t *sizes, int rank)
{
  for (int d = rank - 1; d >= 0; d--) {
    if (++idx[d] < sizes[d])
      return;
    idx[d] = 0;
  }
}

static int
gather(ictx *c, const rtbuf *b, xarr *a)
{
  a->dtype = b->dtype;
  a->rank = b->rank;
  memcpy(a->sizes, b->sizes, sizeof a->sizes);
  a->n = interp_numel(b);
  a->v = malloc(sizeof(ival) * (size_t)(a->n + 1));
  if (!a->v)
    return interp_err(c, "out of memory");
  int64_t idx[COIL_MAX_RANK] = {0};
  for (int64_t i = 0; i < a->n; i++, advance(idx, b->sizes, b->rank)) {
    int64_t off = 0;
    for (int d = 0; d < b->rank; d++)
      off += idx[d] * b->strides[d];
    const char *p = interp_elem(c, b, off);
    if (!p)
      return interp_err(c, "element %" PRId64 " of an input lies outside its storage", i);
    a->v[i] = interp_load(p, b->dtype);
  }
  return 0;
}

/* Writes v (row-major, already in b's dtype) through b's strides. */
static int
scatter(ictx *c, const rtbuf *b, const ival *v)
{
  int64_t n = interp_numel(b), idx[COIL_MAX_RANK] = {0};
  for (int64_t i = 0; i < n; i++, advance(idx, b->sizes, b->rank)) {
    int64_t off = 0;
    for (int d = 0; d < b->rank; d++)
      off += idx[d] * b->strides[d];
    char *p = interp_elem(c, b, off);
    if (!p)
      return interp_err(c, "element %" PRId64 " of an output lies outside its storage", i);
    interp_store(p, b->dtype, v[i]);
  }
  return 0;
}

static double
F(const xarr *a, int64_t i)
{
  return interp_as_f64(a->v[i], a->dtype);
}

static ival *
results(xcall *x, int out)
{
  ival *r = calloc((size_t)interp_numel(x->outs[out]) + 1, sizeof(ival));
  if (!r)
    interp_err(x->c, "out of memory");
  return r;
}

/* Writes results r into output `out` and frees r. */
static int
finish(xcall *x, int out, ival *r)
{
  int rc = scatter(x->c, x->outs[out], r);
  free(r);
  return rc;
}

/* ---- shapes and scalar parameters ---- */

static void
fmt_sizes(char *s, size_t n, int rank, const int64_t *sizes)
{
  size_t at = (size_t)snprintf(s, n, "[");
  for (int d = 0; d < rank && at < n; d++)
    at += (size_t)snprintf(s + at, n - at, "%s%" PRId64, d ? ", " : "", sizes[d]);
  if (at < n)
    snprintf(s + at, n - at, "]");
}

static int
want_out(xcall *x, int out, int rank, const int64_t *sizes)
{
  const rtbuf *b = x->outs[out];
  bool same = b->rank == rank;
  for (int d = 0; same && d < rank; d++)
    same = b->sizes[d] == sizes[d];
  if (same)
    return 0;
  char want[160], have[160];
  fmt_sizes(want, sizeof want, rank, sizes);
  fmt_sizes(have, sizeof have, b->rank, b->sizes);
  return interp_err(x->c, "output %d should have sizes %s, it has %s", out, want, have);
}

static int
want_nin(xcall *x, int lo, int hi)
{
  if (x->nin < lo || x->nin > hi)
    return interp_err(x->c, "takes %d to %d tensor arguments, the line passes %d", lo, hi, x->nin);
  return 0;
}

static const coil_xparam *
xp(const xcall *x, const char *name)
{
  for (int i = 0; i < x->l->nxparams; i++)
    if (strcmp(x->l->xparams[i].name, name) == 0)
      return x->l->xparams[i].kind == COIL_XP_NONE ? NULL : &x->l->xparams[i];
  return NULL;
}

/* An integer (or bool) parameter; absent or None gives dflt, or an error when required. */
static int
get_int(xcall *x, const char *name, bool required, int64_t dflt, int64_t *out)
{
  const coil_xparam *p = xp(x, name);
  if (!p && required)
    return interp_err(x->c, "missing parameter %s", name);
  if (p && p->kind != COIL_XP_INT && p->kind != COIL_XP_BOOL)
    return interp_err(x->c, "parameter %s should be an integer", name);
  *out = p ? p->i : dflt;
  return 0;
}

static int
get_num(xcall *x, const char *name, double dflt, double *out)
{
  const coil_xparam *p = xp(x, name);
  if (p && p->kind != COIL_XP_INT && p->kind != COIL_XP_BOOL && p->kind != COIL_XP_FLOAT)
    return interp_err(x->c, "parameter %s should be a number", name);
  *out = !p ? dflt : p->kind == COIL_XP_FLOAT ? p->f : (double)p->i;
  return 0;
}

/* n integers: a list of n, or of 1 (or a single integer) repeated. *given is false when the
 * parameter is absent or an empty list, and then every entry is dflt. */
static int
get_ints(xcall *x, const char *name, int n, int64_t dflt, int64_t *out, bool *given)
{
  const coil_xparam *p = xp(x, name);
  *given = p && !(p->kind == COIL_XP_INTS && p->n == 0);
  for (int i = 0; i < n; i++)
    out[i] = dflt;
  if (!*given)
    return 0;
  if (p->kind == COIL_XP_INT)
    for (int i = 0; i < n; i++)
      out[i] = p->i;
  else if (p->kind == COIL_XP_INTS && (p->n == 1 || p->n == n))
    for (int i = 0; i < n; i++)
      out[i] = p->ints[p->n == 1 ? 0 : i];
  else
    return interp_err(x->c, "parameter %s should be %d integers", name, n);
  return 0;
}

static int
wrap_dim(xcall *x, int64_t d, int rank, int *out)
{
  int r = rank > 0 ? rank : 1;
  if (d < -r || d >= r)
    return interp_err(x->c, "dimension %" PRId64 " is out of range for rank %d", d, rank);
  *out = (int)(d < 0 ? d + r : d);
  return 0;
}

static int
want_index_dtype(xcall *x, const xarr *a)
{
  if (!coil_dtype_is_int(a->dtype))
    return interp_err(x->c, "indices must be an integer tensor, got %s%s", coil_dtype_name(a->dtype),
                      a->dtype == COIL_BOOL ? " (boolean masks are not supported)" : "");
  return 0;
}

/* ---- matmul: mm, bmm, addmm ---- */

enum { MM, BMM, ADDMM };

static int
run_matmul(xcall *x, int kind)
{
  if (want_nin(x, kind == ADDMM ? 3 : 2, kind == ADDMM ? 3 : 2))
    return -1;
  const xarr *a = &x->in[kind == ADDMM], *b = &x->in[kind == ADDMM ? 2 : 1];
  const xarr *bias = kind == ADDMM ? &x->in[0] : NULL;
  int rk = kind == BMM ? 3 : 2, o = kind == BMM;
  if (a->rank != rk || b->rank != rk || a->sizes[o + 1] != b->sizes[o] || (o && a->sizes[0] != b->sizes[0]))
    return interp_err(x->c, "operands of rank %d and %d do not multiply", a->rank, b->rank);
  int64_t batch = o ? a->sizes[0] : 1, M = a->sizes[o], K = a->sizes[o + 1], N = b->sizes[o + 1];
  int64_t osz[3] = {batch, M, N};
  if (want_out(x, 0, rk, osz + (o ? 0 : 1)))
    return -1;
  double alpha = 1, beta = 1;
  int64_t bst[2] = {0, 0};
  if (bias) {
    if (get_num(x, "alpha", 1, &alpha) || get_num(x, "beta", 1, &beta))
      return -1;
    if (bias->rank > 2)
      return interp_err(x->c, "the bias has rank %d", bias->rank);
    int64_t st = 1;
    for (int j = bias->rank - 1; j >= 0; j--) { /* broadcast strides against [M, N] */
      int d = j + 2 - bias->rank;
      if (bias->sizes[j] != 1 && bias->sizes[j] != osz[1 + d])
        return interp_err(x->c, "a bias of size %" PRId64 " does not broadcast to %" PRId64,
                          bias->sizes[j], osz[1 + d]);
      bst[d] = bias->sizes[j] == 1 ? 0 : st;
      st *= bias->sizes[j];
    }
  }
  ival *r = results(x, 0);
  if (!r)
    return -1;
  coil_dtype t = x->outs[0]->dtype;
  for (int64_t p = 0; p < batch; p++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double s = 0;
        for (int64_t k = 0; k < K; k++)
          s += F(a, (p * M + i) * K + k) * F(b, (p * K + k) * N + j);
        if (bias) /* beta = 0 ignores the bias entirely, NaN included, as torch documents */
          s = alpha * s + (beta == 0 ? 0 : beta * F(bias, i * bst[0] + j * bst[1]));
        r[(p * M + i) * N + j] = interp_from_f64(s, t);
      }
  return finish(x, 0, r);
}

/* ---- coil.attention: softmax(scale * q k^T + mask) v, in double ---- */

/* The offset in a (row-major, as gathered) of element (batch b of out's batch sizes, i, j):
 * a batch dim of size 1 broadcasts, and so do the last two when they are 1 (a mask's). */
static int64_t
bcast_at(const xarr *a, const int64_t *bidx, int nb, int64_t i, int64_t j)
{
  int64_t o = 0;
  for (int d = 0; d < nb; d++)
    o = o * a->sizes[d] + (a->sizes[d] == 1 ? 0 : bidx[d]);
  o = o * a->sizes[nb] + (a->sizes[nb] == 1 ? 0 : i);
  return o * a->sizes[nb + 1] + (a->sizes[nb + 1] == 1 ? 0 : j);
}

/* The fused attention the core matches in graphs (docs/wrapper-ir.md, "coil.attention"):
 * q [*B, L, E], k [*B, S, E], v [*B, S, Ev], an optional additive mask [*B, L, S], each batch
 * dim either out's or 1. masked_rows says what a row whose scores are all -inf gives: 'zero'
 * (0, as the guarded softmax of exports) or 'nan' (as a plain softmax). */
static int
run_attention(xcall *x)
{
  if (want_nin(x, 3, 4))
    return -1;
  const xarr *q = &x->in[0], *k = &x->in[1], *v = &x->in[2], *m = x->nin > 3 ? &x->in[3] : NULL;
  int r = q->rank, nb = r - 2;
  if (r < 3 || k->rank != r || v->rank != r || (m && m->rank != r))
    return interp_err(x->c, "coil.attention: q, k, v and the mask must have one rank of at least 3");
  int64_t L = q->sizes[nb], E = q->sizes[nb + 1], S = k->sizes[nb], Ev = v->sizes[nb + 1];
  if (k->sizes[nb + 1] != E || v->sizes[nb] != S)
    return interp_err(x->c, "coil.attention: k is [.., %" PRId64 ", %" PRId64 "] and v [.., %" PRId64 ", %" PRId64
                      "] for q [.., %" PRId64 ", %" PRId64 "]", S, k->sizes[nb + 1], v->sizes[nb], Ev, L, E);
  int64_t osz[COIL_MAX_RANK];
  for (int d = 0; d < nb; d++) {
    osz[d] = 1;
    for (int t = 0; t < 4; t++) {
      const xarr *a = t == 0 ? q : t == 1 ? k : t == 2 ? v : m;
      if (a && a->sizes[d] != 1) {
        if (osz[d] != 1 && osz[d] != a->sizes[d])
          return interp_err(x->c, "coil.attention: batch dim %d is %" PRId64 " and %" PRId64, d, osz[d], a->sizes[d]);
        osz[d] = a->sizes[d];
      }
    }
  }
  if (x->outs[0]->rank == r) /* a batch dim every input broadcasts is out's size */
    for (int d = 0; d < nb; d++)
      if (osz[d] == 1)
        osz[d] = x->outs[0]->sizes[d];
  osz[nb] = L;
  osz[nb + 1] = Ev;
  if (m && ((m->sizes[nb] != 1 && m->sizes[nb] != L) || (m->sizes[nb + 1] != 1 && m->sizes[nb + 1] != S)))
    return interp_err(x->c, "coil.attention: a mask of [.., %" PRId64 ", %" PRId64 "] for scores [.., %" PRId64 ", %" PRId64 "]",
                      m->sizes[nb], m->sizes[nb + 1], L, S);
  if (want_out(x, 0, r, osz))
    return -1;
  double scale = 1;
  if (get_num(x, "scale", 1, &scale))
    return -1;
  const coil_xparam *mr = xp(x, "masked_rows");
  bool zero_rows = mr && mr->kind == COIL_XP_STR && strcmp(mr->s, "zero") == 0;
  if (mr && !zero_rows && !(mr->kind == COIL_XP_STR && strcmp(mr->s, "nan") == 0))
    return interp_err(x->c, "coil.attention: masked_rows is 'zero' or 'nan'");
  ival *res = results(x, 0);
  double *p = malloc(sizeof(double) * (size_t)(S + 1)), *acc = malloc(sizeof(double) * (size_t)(Ev + 1));
  if (!res || !p || !acc) {
    free(p);
    free(acc);
    return res ? interp_err(x->c, "out of memory") : -1;
  }
  int64_t nbatch = 1, bidx[COIL_MAX_RANK] = {0};
  for (int d = 0; d < nb; d++)
    nbatch *= osz[d];
  coil_dtype t = x->outs[0]->dtype;
  for (int64_t b = 0; b < nbatch; b++, advance(bidx, osz, nb))
    for (int64_t i = 0; i < L; i++) {
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < S; j++) {
        double s = 0;
        for (int64_t e = 0; e < E; e++)
          s += F(q, bcast_at(q, bidx, nb, i, e)) * F(k, bcast_at(k, bidx, nb, j, e));
        s *= scale;
        if (m)
          s += F(m, bcast_at(m, bidx, nb, i, j));
        p[j] = s;
        mx = s > mx ? s : mx;
      }
      for (int64_t j = 0; j < S; j++)
        sum += p[j] = exp(p[j] - mx); /* all -inf: exp(nan), the plain softmax's NaN */
      bool masked = S > 0 && mx == -INFINITY;
      for (int64_t e = 0; e < Ev; e++)
        acc[e] = 0;
      for (int64_t j = 0; j < S; j++)
        for (int64_t e = 0; e < Ev; e++)
          acc[e] += p[j] / sum * F(v, bcast_at(v, bidx, nb, j, e));
      for (int64_t e = 0; e < Ev; e++)
        res[(b * L + i) * Ev + e] = interp_from_f64(masked && zero_rows ? 0 : acc[e], t);
    }
  free(p);
  free(acc);
  return finish(x, 0, res);
}

/* ---- convolution: direct, 1 to 3 spatial dims, grouped, dilated, transposed ---- */

static void
unravel(int64_t i, int rank, const int64_t *shape, int64_t *idx)
{
  for (int d = rank - 1; d >= 0; d--) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
}

static int
run_conv(xcall *x)
{
  if (want_nin(x, 2, 3))
    return -1;
  const xarr *in = &x->in[0], *w = &x->in[1], *bias = x->nin == 3 ? &x->in[2] : NULL;
  const rtbuf *out = x->outs[0];
  int nsp = in->rank - 2;
  if (nsp < 1 || nsp > 3 || w->rank != in->rank || out->rank != in->rank)
    return interp_err(x->c, "input, weight and output have ranks %d, %d, %d", in->rank, w->rank, out->rank);
  int64_t stride[3], pad[3], dil[3], groups, tr;
  bool given;
  if (get_ints(x, "stride", nsp, 1, stride, &given) || get_ints(x, "padding", nsp, 0, pad, &given) ||
      get_ints(x, "dilation", nsp, 1, dil, &given) || get_int(x, "groups", false, 1, &groups) ||
      get_int(x, "transposed", false, 0, &tr))
    return -1;
  int64_t N = in->sizes[0], C = in->sizes[1], O = out->sizes[1];
  if (groups < 1 || C % groups || O % groups)
    return interp_err(x->c, "%" PRId64 " groups do not divide %" PRId64 " input and %" PRId64
                      " output channels", groups, C, O);
  int64_t cpg = C / groups, opg = O / groups; /* channels per group, in and out */
  bool wok = tr ? w->sizes[0] == C && w->sizes[1] == opg : w->sizes[0] == O && w->sizes[1] == cpg;
  if (!wok || out->sizes[0] != N)
    return interp_err(x->c, "weight, input and output shapes disagree");
  if (bias && bias->n != O)
    return interp_err(x->c, "a bias of %" PRId64 " elements for %" PRId64 " channels", bias->n, O);
  int64_t ksz = 1, isp = 1, osp = 1;
  for (int i = 0; i < nsp; i++) {
    ksz *= w->sizes[2 + i];
    isp *= in->sizes[2 + i];
    osp *= out->sizes[2 + i];
  }
  double *acc = calloc((size_t)(N * O * osp) + 1, sizeof(double));
  if (!acc)
    return interp_err(x->c, "out of memory");
  int64_t ip[3], kp[3], op[3];
  for (int64_t n = 0; n < N; n++)
    for (int64_t g = 0; g < groups; g++)
      for (int64_t oc = 0; oc < opg; oc++)
        for (int64_t ic = 0; ic < cpg; ic++)
          for (int64_t k = 0; k < ksz; k++) {
            unravel(k, nsp, w->sizes + 2, kp);
            int64_t widx = tr ? (((g * cpg + ic) * opg + oc) * ksz + k)
                              : (((g * opg + oc) * cpg + ic) * ksz + k);
            double wv = F(w, widx);
            for (int64_t s = 0; s < (tr ? isp : osp); s++) {
              bool ok = true;
              int64_t flat_in = 0, flat_out = 0;
              if (!tr) { /* out position s reads in = o*stride - pad + k*dilation */
                unravel(s, nsp, out->sizes + 2, op);
                for (int q = 0; q < nsp; q++) {
                  ip[q] = op[q] * stride[q] - pad[q] + kp[q] * dil[q];
                  ok = ok && ip[q] >= 0 && ip[q] < in->sizes[2 + q];
                  flat_in = flat_in * in->sizes[2 + q] + ip[q];
                }
                flat_out = s;
              } else { /* in position s writes out = i*stride - pad + k*dilation */
                unravel(s, nsp, in->sizes + 2, ip);
                for (int q = 0; q < nsp; q++) {
                  op[q] = ip[q] * stride[q] - pad[q] + kp[q] * dil[q];
                  ok = ok && op[q] >= 0 && op[q] < out->sizes[2 + q];
                  flat_out = flat_out * out->sizes[2 + q] + op[q];
                }
                flat_in = s;
              }
              if (ok)
                acc[(n * O + g * opg + oc) * osp + flat_out] +=
                    wv * F(in, (n * C + g * cpg + ic) * isp + flat_in);
            }
          }
  ival *r = results(x, 0);
  if (!r) {
    free(acc);
    return -1;
  }
  for (int64_t i = 0; i < N * O * osp; i++)
    r[i] = interp_from_f64(acc[i] + (bias ? F(bias, (i / osp) % O) : 0.0), out->dtype);
  free(acc);
  return finish(x, 0, r);
}

/* ---- pooling: max_pool2d_with_indices, avg_pool2d ---- */

static int
run_pool(xcall *x, bool is_max)
{
  if (want_nin(x, 1, 1))
    return -1;
  const xarr *in = &x->in[0];
  const rtbuf *out = x->outs[0];
  int rk = in->rank;
  if ((rk != 3 && rk != 4) || out->rank != rk || out->sizes[0] != in->sizes[0] ||
      (rk == 4 && out->sizes[1] != in->sizes[1]))
    return interp_err(x->c, "input and output shapes disagree");
  if (is_max && want_out(x, 1, out->rank, out->sizes))
    return -1;
  int64_t ks[2], st[2], pad[2], dil[2], cip, divisor = 0;
  bool given, has_div = xp(x, "divisor_override") != NULL;
  if (get_ints(x, "kernel_size", 2, 0, ks, &given))
    return -1;
  if (!given)
    return interp_err(x->c, "missing parameter kernel_size");
  if (get_ints(x, "stride", 2, 0, st, &given))
    return -1;
  if (!given) /* stride defaults to the kernel size */
    memcpy(st, ks, sizeof st);
  if (get_ints(x, "padding", 2, 0, pad, &given) || get_ints(x, "dilation", 2, 1, dil, &given) ||
      get_int(x, "count_include_pad", false, 1, &cip) ||
      get_int(x, "divisor_override", false, 0, &divisor))
    return -1;
  int64_t H = in->sizes[rk - 2], W = in->sizes[rk - 1], OH = out->sizes[rk - 2], OW = out->sizes[rk - 1];
  int64_t planes = H * W != 0 ? in->n / (H * W) : 0;
  ival *vals = results(x, 0), *idxs = is_max ? results(x, 1) : NULL;
  if (!vals || (is_max && !idxs)) {
    free(vals);
    free(idxs);
    return -1;
  }
  for (int64_t p = 0; p < planes; p++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        int64_t o = (p * OH + oh) * OW + ow;
        if (is_max) {
          double best = -INFINITY;
          int64_t arg = -1;
          for (int64_t i = 0; i < ks[0]; i++)
            for (int64_t j = 0; j < ks[1]; j++) {
              int64_t h = oh * st[0] - pad[0] + i * dil[0], w = ow * st[1] - pad[1] + j * dil[1];
              if (h < 0 || h >= H || w < 0 || w >= W)
                continue;
              double v = F(in, (p * H + h) * W + w);
              /* as torch's kernels: a NaN always takes over, so the last NaN's index wins */
              if (arg < 0 || v > best || isnan(v)) {
                best = v;
                arg = h * W + w;
              }
            }
          vals[o] = interp_from_f64(best, out->dtype);
          idxs[o] = interp_convert((ival){.i = arg}, COIL_I64, x->outs[1]->dtype);
        } else {
          int64_t hs = oh * st[0] - pad[0], ws = ow * st[1] - pad[1];
          int64_t he = hs + ks[0] < H + pad[0] ? hs + ks[0] : H + pad[0];
          int64_t we = ws + ks[1] < W + pad[1] ? ws + ks[1] : W + pad[1];
          int64_t pool = (he - hs) * (we - ws);
          hs = hs < 0 ? 0 : hs, ws = ws < 0 ? 0 : ws;
          he = he > H ? H : he, we = we > W ? W : we;
          double s = 0;
          for (int64_t h = hs; h < he; h++)
            for (int64_t w = ws; w < we; w++)
              s += F(in, (p * H + h) * W + w);
          int64_t div = has_div ? divisor : cip ? pool : (he - hs) * (we - ws);
          vals[o] = interp_from_f64(div ? s / (double)div : NAN, out->dtype);
        }
      }
  if (is_max && finish(x, 1, idxs)) {
    free(vals);
    return -1;
  }
  return finish(x, 0, vals);
}

/* ---- topk ---- */

typedef struct kv {
  ival v;
  int64_t i;
  bool largest, fl;
} kv;

/* Larger (or smaller) first, NaN as the largest, ties by lower index (as core/ref_ops.c). */
static int
kv_cmp(const void *pa, const void *pb)
{
  const kv *a = pa, *b = pb;
  int c;
  if (a->fl) {
    bool an = isnan(a->v.f), bn = isnan(b->v.f);
    if (an || bn)
      c = an && bn ? 0 : an ? 1 : -1;
    else
      c = a->v.f > b->v.f ? 1 : a->v.f < b->v.f ? -1 : 0;
  } else {
    c = a->v.i > b->v.i ? 1 : a->v.i < b->v.i ? -1 : 0;
  }
  if (!a->largest)
    c = -c;
  if (c)
    return -c;
  return a->i < b->i ? -1 : a->i > b->i;
}

static int
run_topk(xcall *x)
{
  if (want_nin(x, 1, 1))
    return -1;
  const xarr *in = &x->in[0];
  int64_t k, dim, largest;
  int d = 0;
  if (get_int(x, "dim", false, -1, &dim) || wrap_dim(x, dim, in->rank, &d) ||
      get_int(x, "largest", false, 1, &largest))
    return -1;
  int64_t size = in->rank ? in->sizes[d] : 1;
  if (get_int(x, "k", false, x->outs[0]->rank ? x->outs[0]->sizes[d] : 1, &k))
    return -1;
  if (k < 0 || k > size)
    return interp_err(x->c, "k = %" PRId64 " is out of range for a dimension of size %" PRId64, k, size);
  int64_t osz[COIL_MAX_RANK];
  memcpy(osz, in->sizes, sizeof osz);
  if (in->rank)
    osz[d] = k;
  if (want_out(x, 0, in->rank, osz) || want_out(x, 1, in->rank, osz))
    return -1;
  int64_t inner = 1;
  for (int q = d + 1; q < in->rank; q++)
    inner *= in->sizes[q];
  int64_t outer = size && inner ? in->n / (size * inner) : 0;
  kv *row = calloc((size_t)size + 1, sizeof *row);
  ival *vals = results(x, 0), *idxs = results(x, 1);
  int rc = -1;
  if (!row || !vals || !idxs) {
    interp_err(x->c, "out of memory");
    goto done;
  }
  bool fl = coil_dtype_is_float(in->dtype);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t q = 0; q < inner; q++) {
      for (int64_t j = 0; j < size; j++)
        row[j] = (kv){in->v[(o * size + j) * inner + q], j, largest != 0, fl};
      qsort(row, (size_t)size, sizeof *row, kv_cmp);
      for (int64_t j = 0; j < k; j++) {
        int64_t dst = (o * k + j) * inner + q;
        vals[dst] = interp_convert(row[j].v, in->dtype, x->outs[0]->dtype);
        idxs[dst] = interp_convert((ival){.i = row[j].i}, COIL_I64, x->outs[1]->dtype);
      }
    }
  rc = finish(x, 1, idxs);
  idxs = NULL;
  rc = rc ? rc : finish(x, 0, vals);
  vals = NULL;
done:
  free(row);
  free(vals);
  free(idxs);
  return rc;
}

/* ---- gather, embedding, index ---- */

static int
check_index(xcall *x, int64_t *v, int64_t size, bool negative_ok)
{
  if (*v >= size || *v < (negative_ok ? -size : 0))
    return interp_err(x->c, "index %" PRId64 " is out of bounds for size %" PRId64, *v, size);
  if (*v < 0)
    *v += size;
  return 0;
}

static int
run_gather(xcall *x)
{
  int64_t dim;
  int d = 0;
  if (want_nin(x, 2, 2) || get_int(x, "dim", true, 0, &dim))
    return -1;
  const xarr *self = &x->in[0], *ix = &x->in[1];
  if (want_index_dtype(x, ix) || wrap_dim(x, dim, self->rank, &d) ||
      want_out(x, 0, ix->rank, ix->sizes))
    return -1;
  if (self->rank && ix->rank != self->rank)
    return interp_err(x->c, "index has rank %d, self has rank %d", ix->rank, self->rank);
  ival *r = results(x, 0);
  if (!r)
    return -1;
  int64_t idx[COIL_MAX_RANK];
  for (int64_t i = 0; i < ix->n; i++) {
    unravel(i, ix->rank, ix->sizes, idx);
    /* unlike index.Tensor, gather takes no negative indices (as torch) */
    int64_t v = ix->v[i].i, o = 0;
    if (check_index(x, &v, self->rank ? self->sizes[d] : 1, false))
      goto fail;
    if (self->rank)
      idx[d] = v;
    for (int q = 0; q < self->rank; q++) {
      if (idx[q] >= self->sizes[q]) {
        interp_err(x->c, "index tensor is larger than self in dimension %d", q);
        goto fail;
      }
      o = o * self->sizes[q] + idx[q];
    }
    r[i] = interp_convert(self->v[o], self->dtype, x->outs[0]->dtype);
  }
  return finish(x, 0, r);
fail:
  free(r);
  return -1;
}

/* cumsum along dim: f64 for floats, i64 (wrapping) otherwise */
static int
run_cumsum(xcall *x)
{
  int64_t dim;
  int d = 0;
  if (want_nin(x, 1, 1) || get_int(x, "dim", true, 0, &dim))
    return -1;
  const xarr *self = &x->in[0];
  if (wrap_dim(x, dim, self->rank, &d) || want_out(x, 0, self->rank, self->sizes))
    return -1;
  ival *r = results(x, 0);
  if (!r)
    return -1;
  coil_dtype ot = x->outs[0]->dtype;
  bool fl = coil_dtype_is_float(ot);
  int64_t len = self->rank ? self->sizes[d] : 1, inner = 1;
  for (int q = d + 1; q < self->rank; q++)
    inner *= self->sizes[q];
  for (int64_t line = 0; len && line < self->n / len; line++) {
    int64_t base = line / inner * len * inner + line % inner;
    double f = 0;
    uint64_t i = 0;
    for (int64_t k = 0; k < len; k++) {
      int64_t at = base + k * inner;
      ival v = interp_convert(self->v[at], self->dtype, fl ? COIL_F64 : COIL_I64);
      if (fl)
        f += v.f, r[at].f = f;
      else
        i += (uint64_t)v.i, r[at].i = (int64_t)i;
    }
    for (int64_t k = 0; k < len; k++) { /* each prefix rounded to the output dtype */
      int64_t at = base + k * inner;
      r[at] = interp_convert(r[at], fl ? COIL_F64 : COIL_I64, ot);
    }
  }
  return finish(x, 0, r);
}

static int
run_embedding(xcall *x)
{
  if (want_nin(x, 2, 2))
    return -1;
  const xarr *w = &x->in[0], *ix = &x->in[1];
  if (w->rank != 2 || ix->rank >= COIL_MAX_RANK)
    return interp_err(x->c, "weight of rank %d, indices of rank %d", w->rank, ix->rank);
  int64_t osz[COIL_MAX_RANK], dim = w->sizes[1];
  memcpy(osz, ix->sizes, sizeof(int64_t) * (size_t)ix->rank);
  osz[ix->rank] = dim;
  if (want_index_dtype(x, ix) || want_out(x, 0, ix->rank + 1, osz))
    return -1;
  ival *r = results(x, 0);
  if (!r)
    return -1;
  for (int64_t i = 0; i < ix->n; i++) {
    int64_t v = ix->v[i].i;
    if (v < 0 || v >= w->sizes[0]) {
      free(r);
      return interp_err(x->c, "index %" PRId64 " is out of range for %" PRId64 " embeddings", v,
                        w->sizes[0]);
    }
    for (int64_t j = 0; j < dim; j++)
      r[i * dim + j] = interp_convert(w->v[v * dim + j], w->dtype, x->outs[0]->dtype);
  }
  return finish(x, 0, r);
}

/* Advanced indexing: index tensors broadcast together; their result dims replace the indexed
 * dims in place when those are adjacent, and go first otherwise (NumPy's rule). */
static int
run_index(xcall *x)
{
  const xarr *self = &x->in[0];
  const coil_xparam *mask = xp(x, "none_mask");
  int nnone = mask && mask->kind == COIL_XP_INTS ? mask->n : 0;
  int L = x->nin - 1 + nnone, first = -1, last = -1, brank = 0, next = 1;
  if (x->nin < 2 || L > self->rank)
    return interp_err(x->c, "%d indices (%d None) for a tensor of rank %d", L, nnone, self->rank);
  const xarr *ixs[COIL_MAX_RANK] = {0};
  for (int i = 0; i < L; i++) {
    bool none = false;
    for (int j = 0; j < nnone; j++)
      none = none || mask->ints[j] == i;
    if (none)
      continue;
    if (next >= x->nin)
      return interp_err(x->c, "none_mask leaves more index positions than index tensors");
    ixs[i] = &x->in[next++];
    if (want_index_dtype(x, ixs[i]))
      return -1;
    brank = ixs[i]->rank > brank ? ixs[i]->rank : brank;
    first = first < 0 ? i : first;
    last = i;
  }
  if (next != x->nin)
    return interp_err(x->c, "none_mask and the index tensors do not add up");
  int64_t bshape[COIL_MAX_RANK];
  for (int b = 0; b < brank; b++)
    bshape[b] = 1;
  for (int i = 0; i < L; i++) /* the broadcast shape of the index tensors */
    for (int j = 0; ixs[i] && j < ixs[i]->rank; j++) {
      int b = j + brank - ixs[i]->rank;
      int64_t s = ixs[i]->sizes[j];
      if (s != 1 && bshape[b] != 1 && s != bshape[b])
        return interp_err(x->c, "index tensors of sizes %" PRId64 " and %" PRId64 " do not broadcast",
                          s, bshape[b]);
      bshape[b] = s != 1 ? s : bshape[b];
    }
  bool adjacent = true;
  for (int i = first; i <= last; i++)
    adjacent = adjacent && ixs[i];
  int bstart = adjacent ? first : 0, orank = 0;
  int64_t osz[COIL_MAX_RANK * 2];
  for (int q = 0; q < self->rank; q++) { /* the result's shape */
    if (q == (adjacent ? first : 0))
      for (int b = 0; b < brank; b++)
        osz[orank++] = bshape[b];
    if (q >= L || !ixs[q])
      osz[orank++] = self->sizes[q];
  }
  if (orank > COIL_MAX_RANK || want_out(x, 0, orank, osz))
    return orank > COIL_MAX_RANK ? interp_err(x->c, "the result has rank %d", orank) : -1;
  int64_t bst[COIL_MAX_RANK][COIL_MAX_RANK] = {{0}};
  for (int i = 0; i < L; i++) { /* broadcast strides of each index tensor over bshape */
    int64_t st = 1;
    for (int j = ixs[i] ? ixs[i]->rank - 1 : -1; j >= 0; j--) {
      int b = j + brank - ixs[i]->rank;
      bst[i][b] = ixs[i]->sizes[j] == 1 ? 0 : st;
      st *= ixs[i]->sizes[j];
    }
  }
  const rtbuf *out = x->outs[0];
  int64_t idx[COIL_MAX_RANK], n = interp_numel(out);
  ival *r = results(x, 0);
  if (!r)
    return -1;
  for (int64_t e = 0; e < n; e++) {
    unravel(e, out->rank, out->sizes, idx);
    int64_t src[COIL_MAX_RANK], o = 0;
    int rest = 0; /* position in out of the next non-indexed dim */
    for (int q = 0; q < self->rank; q++) {
      if (q < L && ixs[q]) {
        int64_t io = 0;
        for (int b = 0; b < brank; b++)
          io += idx[bstart + b] * bst[q][b];
        src[q] = ixs[q]->v[io].i;
        if (check_index(x, &src[q], self->sizes[q], true)) {
          free(r);
          return -1;
        }
      } else {
        int pos = adjacent ? (q < first ? q : q - (last - first + 1) + brank) : brank + rest;
        rest++;
        src[q] = idx[pos];
      }
    }
    for (int q = 0; q < self->rank; q++)
      o = o * self->sizes[q] + src[q];
    r[e] = interp_convert(self->v[o], self->dtype, out->dtype);
  }
  return finish(x, 0, r);
}

/* ---- the table ---- */

typedef enum xop {
  X_MM, X_BMM, X_ADDMM, X_ATTENTION, X_CONV, X_MAXPOOL, X_AVGPOOL, X_TOPK, X_GATHER, X_EMBEDDING, X_INDEX, X_CUMSUM,
} xop;

static const struct {
  const char *name;
  xop op;
  int nouts;
} ops[] = {
    {"aten.mm.default", X_MM, 1},
    {"aten.bmm.default", X_BMM, 1},
    {"aten.bmm.dtype", X_BMM, 1}, /* decompose-K's partial products: the output's dtype (f32) */
    {"aten.addmm.default", X_ADDMM, 1},
    {"coil.attention", X_ATTENTION, 1},
    {"aten.convolution.default", X_CONV, 1},
    {"aten.max_pool2d_with_indices.default", X_MAXPOOL, 2},
    {"aten.avg_pool2d.default", X_AVGPOOL, 1},
    {"aten.topk.default", X_TOPK, 2},
    {"aten.gather.default", X_GATHER, 1},
    {"aten.cumsum.default", X_CUMSUM, 1},
    {"aten.embedding.default", X_EMBEDDING, 1},
    {"aten.index.Tensor", X_INDEX, 1},
};

static int
find_op(const char *op)
{
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (strcmp(ops[i].name, op) == 0)
      return (int)i;
  return -1;
}

int
interp_extern_nouts(const char *op)
{
  int i = find_op(op);
  return i < 0 ? 0 : ops[i].nouts;
}

static int
dispatch(xcall *x, xop op)
{
  switch (op) {
  case X_MM: return run_matmul(x, MM);
  case X_BMM: return run_matmul(x, BMM);
  case X_ADDMM: return run_matmul(x, ADDMM);
  case X_ATTENTION: return run_attention(x);
  case X_CONV: return run_conv(x);
  case X_MAXPOOL: return run_pool(x, true);
  case X_AVGPOOL: return run_pool(x, false);
  case X_TOPK: return run_topk(x);
  case X_GATHER: return run_gather(x);
  case X_CUMSUM: return run_cumsum(x);
  case X_EMBEDDING: return run_embedding(x);
  case X_INDEX: return run_index(x);
  }
  return interp_err(x->c, "internal: no implementation");
}

int
interp_extern_call(ictx *c, const coil_line *l, rtbuf **outs, int nout)
{
  int op = find_op(l->op);
  if (op < 0)
    return interp_err(c, "extern op %s is not supported by interp", l->op);
  if (l->nargs > MAX_XARGS)
    return interp_err(c, "%d tensor arguments, at most %d", l->nargs, MAX_XARGS);
  xcall x = {.c = c, .l = l, .nin = l->nargs, .outs = outs, .nout = nout};
  int rc = 0;
  for (int i = 0; i < l->nargs && !rc; i++) {
    const rtbuf *b = interp_use(c, l->args[i]);
    rc = b ? gather(c, b, &x.in[i]) : -1;
  }
  if (!rc)
    rc = dispatch(&x, ops[op].op);
  for (int i = 0; i < l->nargs; i++)
    free(x.in[i].v);
  return rc;
}
