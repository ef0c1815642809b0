/* ref_shapes.c — the reference interpreter's shape, padding, resampling, normalisation and
 * pooling ops of the Core ATen opset (flip ... max_pool3d_with_indices; see the section of
 * ops.def), written from PyTorch's documented semantics, element by element, in f64 except
 * where PyTorch's own index arithmetic is in float (upsampling: the source index and weights
 * are computed in the kernel's opmath type, f32 for f32/f16/bf16, so the same source pixels
 * are picked). Values are copied bit for bit where an op only moves them. */
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
copy_elem(const coil_tensor *in, int64_t si, coil_tensor *out, int64_t di)
{
  size_t es = coil_dtype_size(in->dtype);
  memcpy((char *)out->data + (size_t)di * es, (const char *)in->data + (size_t)si * es, es);
}

static int64_t
flat_of(const coil_tensor *t, const int64_t *idx)
{
  int64_t o = 0;
  for (int d = 0; d < t->rank; d++)
    o = o * t->shape[d] + idx[d];
  return o;
}

static int
run_flip(rctx *r, coil_tensor *out)
{
  const coil_tensor *in = coil_ref_arg(r, 0);
  const coil_lit *dims = coil_ref_lit(r, "dims");
  bool flip[COIL_MAX_RANK] = {0};
  for (int i = 0; i < dims->n && in->rank > 0; i++)
    flip[wrap(dims->items[i].i, in->rank)] = true;
  int64_t n = coil_tensor_numel(out), idx[COIL_MAX_RANK];
  for (int64_t i = 0; i < n; i++) {
    coil_ref_unravel(i, out->rank, out->shape, idx);
    for (int d = 0; d < in->rank; d++)
      if (flip[d])
        idx[d] = in->shape[d] - 1 - idx[d];
    copy_elem(in, flat_of(in, idx), out, i);
  }
  return 0;
}

/* repeat: out[i] = in[i mod sizes], in's dims aligned to the trailing ones of out */
static int
run_repeat(rctx *r, coil_tensor *out)
{
  const coil_tensor *in = coil_ref_arg(r, 0);
  int64_t n = coil_tensor_numel(out), idx[COIL_MAX_RANK], src[COIL_MAX_RANK];
  int lead = out->rank - in->rank;
  for (int64_t i = 0; i < n; i++) {
    coil_ref_unravel(i, out->rank, out->shape, idx);
    for (int d = 0; d < in->rank; d++)
      src[d] = idx[lead + d] % in->shape[d];
    copy_elem(in, flat_of(in, src), out, i);
  }
  return 0;
}

static int
run_index_select(rctx *r, coil_tensor *out)
{
  const coil_tensor *in = coil_ref_arg(r, 0), *ix = coil_ref_param(r, "index");
  int d = wrap(coil_ref_lit(r, "dim")->i, in->rank);
  int64_t n = coil_tensor_numel(out), idx[COIL_MAX_RANK];
  for (int64_t i = 0; i < n; i++) {
    coil_ref_unravel(i, out->rank, out->shape, idx);
    int64_t v = coil_tensor_get_i64(ix, idx[d]);
    if (v < 0 || v >= in->shape[d])
      return coil_ref_err(r, "index %lld is out of range for dimension %d of size %lld", (long long)v, d,
                          (long long)in->shape[d]);
    idx[d] = v;
    copy_elem(in, flat_of(in, idx), out, i);
  }
  return 0;
}

/* diagonal: element k of the diagonal is in[.., k + max(-offset, 0) at dim1, k + max(offset, 0)
 * at dim2, ..], the other dims first in order, the diagonal last. */
static int
run_diagonal(rctx *r, coil_tensor *out)
{
  const coil_tensor *in = coil_ref_arg(r, 0);
  int a = wrap(coil_ref_lit(r, "dim1")->i, in->rank), b = wrap(coil_ref_lit(r, "dim2")->i, in->rank);
  int64_t off = coil_ref_lit(r, "offset")->i;
  int64_t n = coil_tensor_numel(out), idx[COIL_MAX_RANK], src[COIL_MAX_RANK];
  for (int64_t i = 0; i < n; i++) {
    coil_ref_unravel(i, out->rank, out->shape, idx);
    int64_t k = idx[out->rank - 1];
    for (int d = 0, j = 0; d < in->rank; d++)
      src[d] = d == a ? k + (off < 0 ? -off : 0) : d == b ? k + (off > 0 ? off : 0) : idx[j++];
    copy_elem(in, flat_of(in, src), out, i);
  }
  return 0;
}

/* as_strided: element idx reads storage[offset + sum idx[d]*stride[d]] of the input held
 * contiguously (the storage PyTorch gives a contiguous tensor). */
static int
run_as_strided(rctx *r, coil_tensor *out)
{
  const coil_tensor *in = coil_ref_arg(r, 0);
  const coil_lit *st = coil_ref_lit(r, "stride"), *lo = coil_ref_lit(r, "storage_offset");
  int64_t strides[COIL_MAX_RANK], off = lo->kind == COIL_LIT_INT ? lo->i : 0, last = off;
  for (int d = 0; d < out->rank; d++) {
    strides[d] = st->items[d].i;
    last += (out->shape[d] - 1) * strides[d];
  }
  if (coil_tensor_numel(out) > 0 && last >= coil_tensor_numel(in))
    return coil_ref_err(r, "reads element %lld of a storage of %lld elements", (long long)last,
                        (long long)coil_tensor_numel(in));
  coil_ref_strided_copy(in, out, strides, off);
  return 0;
}

/* reflection (sub 0) and replication (sub 1) padding: output position j of a padded dim reads
 * s = j - left reflected about the edges (s < 0: -s; s > n-1: 2(n-1) - s) or clamped. */
static int
run_mode_pad(rctx *r, coil_tensor *out)
{
  const coil_tensor *in = coil_ref_arg(r, 0);
  const coil_lit *pad = coil_ref_lit(r, "padding");
  bool reflect = r->n->op->sub == 0;
  int64_t n = coil_tensor_numel(out), idx[COIL_MAX_RANK];
  for (int64_t i = 0; i < n; i++) {
    coil_ref_unravel(i, out->rank, out->shape, idx);
    for (int p = 0; p < pad->n / 2; p++) {
      int d = in->rank - 1 - p;
      int64_t size = in->shape[d], s = idx[d] - pad->items[2 * p].i;
      if (reflect) {
        if (s < 0)
          s = -s;
        if (s > size - 1)
          s = 2 * (size - 1) - s;
      } else {
        s = s < 0 ? 0 : s > size - 1 ? size - 1 : s;
      }
      if (s < 0 || s >= size)
        return coil_ref_err(r, "padding reads outside dimension %d", d);
      idx[d] = s;
    }
    copy_elem(in, flat_of(in, idx), out, i);
  }
  return 0;
}

/* ---- upsampling: PyTorch's CPU index arithmetic (aten/src/ATen/native/UpSample.h) ---- */

/* A number in the kernel's opmath type: f64 for f64 inputs, else f32. */
static double
opm(bool wide, double v)
{
  return wide ? v : (double)(float)v;
}

/* 1/scale when a scale factor was given (and is positive), else in/out — in opmath */
static double
scale_value(bool wide, const coil_lit *sf, int i, int64_t in, int64_t out)
{
  if (sf->kind == COIL_LIT_LIST && sf->items[i].f > 0)
    return opm(wide, 1.0 / sf->items[i].f);
  return opm(wide, opm(wide, (double)in) / opm(wide, (double)out));
}

/* nearest: out == in copies, out == 2 in halves, else min(floor(dst * scale), in - 1) */
static int64_t
nearest_src(int64_t dst, int64_t in, int64_t out, double scale)
{
  if (out == in)
    return dst;
  if (out == 2 * in)
    return dst >> 1;
  int64_t s = (int64_t)floorf((float)((float)dst * (float)scale));
  return s < in - 1 ? s : in - 1;
}

/* bilinear: the two source indices and their weights along one dim */
static void
linear_src(bool wide, int64_t dst, int64_t in, int64_t out, bool align, const coil_lit *sf, int i,
           int64_t *i0, int64_t *i1, double *l0, double *l1)
{
  if (out == in) {
    *i0 = *i1 = dst;
    *l0 = 1, *l1 = 0;
    return;
  }
  double ratio = align ? (out > 1 ? opm(wide, opm(wide, (double)(in - 1)) / opm(wide, (double)(out - 1))) : 0.0)
                       : scale_value(wide, sf, i, in, out);
  double real;
  if (align) {
    real = opm(wide, ratio * opm(wide, (double)dst));
  } else {
    real = opm(wide, opm(wide, ratio * opm(wide, (double)dst + 0.5)) - 0.5);
    if (real < 0)
      real = 0;
  }
  int64_t f = (int64_t)floor(real);
  *i0 = f < in - 1 ? f : in - 1;
  double lam = opm(wide, real - (double)*i0);
  *l1 = lam < 0 ? 0 : lam > 1 ? 1 : lam;
  *l0 = opm(wide, 1.0 - *l1);
  *i1 = *i0 + (*i0 < in - 1 ? 1 : 0);
}

static int
run_upsample(rctx *r, coil_tensor *out)
{
  const coil_tensor *in = coil_ref_arg(r, 0);
  const coil_lit *sf = coil_ref_lit(r, "scale_factors");
  bool bilinear = r->n->op->sub == 1, wide = in->dtype == COIL_F64;
  bool align = bilinear && coil_ref_lit(r, "align_corners")->i;
  int64_t H = in->shape[2], W = in->shape[3], OH = out->shape[2], OW = out->shape[3];
  int64_t planes = out->shape[0] * out->shape[1];
  for (int64_t p = 0; p < planes; p++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        int64_t o = (p * OH + oh) * OW + ow;
        if (!bilinear) {
          int64_t h = nearest_src(oh, H, OH, scale_value(false, sf, 0, H, OH));
          int64_t w = nearest_src(ow, W, OW, scale_value(false, sf, 1, W, OW));
          copy_elem(in, (p * H + h) * W + w, out, o);
          continue;
        }
        int64_t h0, h1, w0, w1;
        double a0, a1, b0, b1;
        linear_src(wide, oh, H, OH, align, sf, 0, &h0, &h1, &a0, &a1);
        linear_src(wide, ow, W, OW, align, sf, 1, &w0, &w1, &b0, &b1);
        const coil_tensor *x = in;
#define X(h, w) coil_tensor_get_f64(x, (p * H + (h)) * W + (w))
        double v = a0 * (b0 * X(h0, w0) + b1 * X(h0, w1)) + a1 * (b0 * X(h1, w0) + b1 * X(h1, w1));
#undef X
        coil_tensor_set_f64(out, o, v);
      }
  return 0;
}

/* ---- normalisation ---- */

static double
opt_elem(const coil_tensor *t, int64_t i, double dflt)
{
  return t ? coil_tensor_get_f64(t, i) : dflt;
}

/* group_norm: per sample n and group g, the mean and biased variance of the C/group channels
 * of the group over all their positions; out = (x - mean) * rstd * w[c] + b[c]. */
static int
run_group_norm(rctx *r, coil_tensor *outs)
{
  const coil_tensor *in = coil_ref_param(r, "input");
  const coil_tensor *w = coil_ref_param(r, "weight"), *b = coil_ref_param(r, "bias");
  int64_t N = in->shape[0], C = in->shape[1], G = coil_ref_lit(r, "group")->i;
  int64_t hw = coil_ref_stride(in, 1), per = C / G * hw;
  double eps = coil_ref_lit(r, "eps")->f;
  for (int64_t n = 0; n < N; n++)
    for (int64_t g = 0; g < G; g++) {
      int64_t base = (n * C + g * (C / G)) * hw;
      double mean = 0, var = 0;
      for (int64_t k = 0; k < per; k++)
        mean += coil_tensor_get_f64(in, base + k);
      mean /= (double)per;
      for (int64_t k = 0; k < per; k++) {
        double dv = coil_tensor_get_f64(in, base + k) - mean;
        var += dv * dv;
      }
      var /= (double)per;
      double rstd = 1.0 / sqrt(var + eps);
      for (int64_t k = 0; k < per; k++) {
        int64_t ch = g * (C / G) + k / hw;
        double x = (coil_tensor_get_f64(in, base + k) - mean) * rstd;
        coil_tensor_set_f64(&outs[0], base + k, x * opt_elem(w, ch, 1.0) + opt_elem(b, ch, 0.0));
      }
      coil_tensor_set_f64(&outs[1], n * G + g, mean);
      coil_tensor_set_f64(&outs[2], n * G + g, rstd);
    }
  return 0;
}

/* _native_batch_norm_legit: training normalises with the batch's per-channel mean and biased
 * variance (save_invstd = 1/sqrt(var + eps)); evaluation with the running statistics. The
 * running statistics are not updated (coil's graphs are functional). */
static int
run_batch_norm_stats(rctx *r, coil_tensor *outs)
{
  const coil_tensor *in = coil_ref_param(r, "input");
  const coil_tensor *w = coil_ref_param(r, "weight"), *b = coil_ref_param(r, "bias");
  const coil_tensor *rm = coil_ref_param(r, "running_mean"), *rv = coil_ref_param(r, "running_var");
  bool training = coil_ref_lit(r, "training")->i;
  double eps = coil_ref_lit(r, "eps")->f;
  int64_t C = in->shape[1], inner = coil_ref_stride(in, 1), n = coil_tensor_numel(in);
  int64_t outer = C * inner != 0 ? n / (C * inner) : 0, cnt = outer * inner;
  for (int64_t c = 0; c < C; c++) {
    double mean = 0, var = 0;
    if (training) {
      for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++)
          mean += coil_tensor_get_f64(in, (o * C + c) * inner + k);
      mean /= (double)cnt;
      for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
          double dv = coil_tensor_get_f64(in, (o * C + c) * inner + k) - mean;
          var += dv * dv;
        }
      var /= (double)cnt;
    } else {
      mean = coil_tensor_get_f64(rm, c);
      var = coil_tensor_get_f64(rv, c);
    }
    double invstd = 1.0 / sqrt(var + eps);
    for (int64_t o = 0; o < outer; o++)
      for (int64_t k = 0; k < inner; k++) {
        int64_t i = (o * C + c) * inner + k;
        double x = (coil_tensor_get_f64(in, i) - mean) * invstd;
        coil_tensor_set_f64(&outs[0], i, x * opt_elem(w, c, 1.0) + opt_elem(b, c, 0.0));
      }
    if (training) {
      coil_tensor_set_f64(&outs[1], c, mean);
      coil_tensor_set_f64(&outs[2], c, invstd);
    }
  }
  return 0;
}

/* native_dropout without randomness: evaluation or p = 0 keeps every element (mask all true);
 * training with p = 1 keeps none: out = x * 0 * 0 (NaN for inf and NaN, as PyTorch's
 * input.mul(mask).mul_(scale) with scale 0), mask all false. */
static int
run_dropout(rctx *r, coil_tensor *outs)
{
  const coil_tensor *in = coil_ref_param(r, "input");
  const coil_lit *tr = coil_ref_lit(r, "train");
  bool drop_all = (tr->kind == COIL_LIT_NONE || tr->i) && coil_ref_lit(r, "p")->f == 1.0;
  int64_t n = coil_tensor_numel(in);
  for (int64_t i = 0; i < n; i++) {
    if (drop_all)
      coil_tensor_set_f64(&outs[0], i, coil_tensor_get_f64(in, i) * 0.0 * 0.0);
    else
      copy_elem(in, i, &outs[0], i);
    coil_tensor_set_i64(&outs[1], i, !drop_all);
  }
  return 0;
}

/* ---- pooling ---- */

/* adaptive average pooling: output position i of a dim of in -> out averages the input range
 * [floor(i*in/out), ceil((i+1)*in/out)). */
static int
run_adaptive_pool(rctx *r, coil_tensor *out)
{
  const coil_tensor *in = coil_ref_arg(r, 0);
  int nsp = r->n->op->sub, lead = in->rank - nsp;
  int64_t n = coil_tensor_numel(out), idx[COIL_MAX_RANK], src[COIL_MAX_RANK];
  for (int64_t i = 0; i < n; i++) {
    coil_ref_unravel(i, out->rank, out->shape, idx);
    int64_t lo[3], hi[3], cnt = 1;
    for (int k = 0; k < nsp; k++) {
      int64_t a = in->shape[lead + k], b = out->shape[lead + k], o = idx[lead + k];
      lo[k] = o * a / b;
      hi[k] = ((o + 1) * a + b - 1) / b;
      cnt *= hi[k] - lo[k];
    }
    memcpy(src, idx, sizeof src);
    double s = 0;
    int64_t pos[3] = {lo[0], lo[1], nsp > 2 ? lo[2] : 0};
    for (;;) {
      for (int k = 0; k < nsp; k++)
        src[lead + k] = pos[k];
      s += coil_tensor_get_f64(in, flat_of(in, src));
      int k = nsp - 1;
      while (k >= 0 && ++pos[k] == hi[k]) {
        pos[k] = lo[k];
        k--;
      }
      if (k < 0)
        break;
    }
    coil_tensor_set_f64(out, i, s / (double)cnt);
  }
  return 0;
}

/* max_pool3d_with_indices and avg_pool3d: as their 2-D forms (ref_ops.c) over three dims;
 * the index of a max is d*H*W + h*W + w, the last NaN's where there is one. */
static int
run_pool3d(rctx *r, coil_tensor *outs)
{
  const coil_tensor *x = coil_ref_arg(r, 0);
  const coil_lit *lk = coil_ref_lit(r, "kernel_size"), *ls = coil_ref_lit(r, "stride"),
                 *lp = coil_ref_lit(r, "padding"), *ld = coil_ref_lit(r, "dilation");
  int64_t k[3], s[3], p[3], dl[3], in[3], on[3];
  int lead = x->rank - 3;
  for (int i = 0; i < 3; i++) {
    k[i] = lk->items[lk->n > 1 ? i : 0].i;
    s[i] = ls->n ? ls->items[ls->n > 1 ? i : 0].i : k[i];
    p[i] = lp->items[lp->n > 1 ? i : 0].i;
    dl[i] = ld ? ld->items[ld->n > 1 ? i : 0].i : 1;
    in[i] = x->shape[lead + i];
    on[i] = outs[0].shape[lead + i];
  }
  bool is_max = r->n->op->sub == 2;
  int64_t vol = in[0] * in[1] * in[2], ovol = on[0] * on[1] * on[2];
  int64_t planes = vol ? coil_tensor_numel(x) / vol : 0;
  const coil_lit *dv = coil_ref_lit(r, "divisor_override");
  for (int64_t pl = 0; pl < planes; pl++)
    for (int64_t o = 0; o < ovol; o++) {
      int64_t op[3] = {o / (on[1] * on[2]), o / on[2] % on[1], o % on[2]};
      int64_t oi = pl * ovol + o;
      if (is_max) {
        double best = -INFINITY;
        int64_t arg = -1;
        for (int64_t a = 0; a < k[0]; a++)
          for (int64_t b = 0; b < k[1]; b++)
            for (int64_t c = 0; c < k[2]; c++) {
              int64_t z = op[0] * s[0] - p[0] + a * dl[0], h = op[1] * s[1] - p[1] + b * dl[1],
                      w = op[2] * s[2] - p[2] + c * dl[2];
              if (z < 0 || z >= in[0] || h < 0 || h >= in[1] || w < 0 || w >= in[2])
                continue;
              int64_t at = (z * in[1] + h) * in[2] + w;
              double v = coil_tensor_get_f64(x, pl * vol + at);
              if (arg < 0 || v > best || isnan(v)) {
                best = v;
                arg = at;
              }
            }
        coil_tensor_set_f64(&outs[0], oi, best);
        coil_tensor_set_i64(&outs[1], oi, arg);
        continue;
      }
      int64_t st[3], en[3], pool = 1, inside = 1;
      for (int i = 0; i < 3; i++) {
        st[i] = op[i] * s[i] - p[i];
        en[i] = st[i] + k[i] < in[i] + p[i] ? st[i] + k[i] : in[i] + p[i];
        pool *= en[i] - st[i];
        st[i] = st[i] < 0 ? 0 : st[i];
        en[i] = en[i] > in[i] ? in[i] : en[i];
        inside *= en[i] - st[i];
      }
      double sum = 0;
      for (int64_t z = st[0]; z < en[0]; z++)
        for (int64_t h = st[1]; h < en[1]; h++)
          for (int64_t w = st[2]; w < en[2]; w++)
            sum += coil_tensor_get_f64(x, pl * vol + (z * in[1] + h) * in[2] + w);
      int64_t div = dv->kind == COIL_LIT_INT ? dv->i : coil_ref_lit(r, "count_include_pad")->i ? pool : inside;
      if (coil_dtype_is_float(outs[0].dtype))
        coil_tensor_set_f64(&outs[0], oi, div ? sum / (double)div : NAN);
      else
        coil_tensor_set_i64(&outs[0], oi, div ? (int64_t)sum / div : 0);
    }
  return 0;
}

int
coil_ref_run_shapes(rctx *r, coil_tensor *outs)
{
  switch (r->n->op->rule) {
  case COIL_RULE_FLIP: return run_flip(r, outs);
  case COIL_RULE_REPEAT: return run_repeat(r, outs);
  case COIL_RULE_INDEX_SELECT: return run_index_select(r, outs);
  case COIL_RULE_DIAGONAL: return run_diagonal(r, outs);
  case COIL_RULE_AS_STRIDED: return run_as_strided(r, outs);
  case COIL_RULE_EMPTY: /* zeros: coil's choice for PyTorch's uninitialised memory */
    memset(outs[0].data, 0, coil_tensor_nbytes(&outs[0]));
    return 0;
  case COIL_RULE_MODE_PAD: return run_mode_pad(r, outs);
  case COIL_RULE_UPSAMPLE: return run_upsample(r, outs);
  case COIL_RULE_GROUP_NORM: return run_group_norm(r, outs);
  case COIL_RULE_BATCH_NORM_STATS: return run_batch_norm_stats(r, outs);
  case COIL_RULE_DROPOUT: return run_dropout(r, outs);
  case COIL_RULE_ADAPTIVE_POOL: return run_adaptive_pool(r, outs);
  case COIL_RULE_POOL: return run_pool3d(r, outs);
  case COIL_RULE_SYM_SIZE: {
    const coil_tensor *in = coil_ref_arg(r, 0);
    int64_t v = r->n->op->sub == 1 ? coil_tensor_numel(in) : in->shape[wrap(coil_ref_lit(r, "dim")->i, in->rank)];
    coil_tensor_set_i64(&outs[0], 0, v);
    return 0;
  }
  default: return coil_ref_err(r, "not an op of ref_shapes.c");
  }
}
