/* ref_backward.c — the reference interpreter's backward ops (pooling, layer and group norm,
 * convolution), col2im, grid_sampler_2d, _embedding_bag, sort and pairwise distances, written
 * from PyTorch's definitions in f64: the backward ops and col2im scatter each gradient element
 * onto the inputs it came from, as PyTorch's CPU kernels do (the lowering gathers instead; the
 * two meet only in the tests). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

static double
at(const coil_tensor *t, int64_t i)
{
  return coil_tensor_get_f64(t, i);
}

static int
wrap(int64_t d, int rank)
{
  int r = rank > 0 ? rank : 1;
  return (int)(d < 0 ? d + r : d);
}

/* Writes acc (numel of out doubles) to out and frees it. */
static void
store(coil_tensor *out, double *acc)
{
  for (int64_t i = 0; i < coil_tensor_numel(out); i++)
    coil_tensor_set_f64(out, i, acc[i]);
  free(acc);
}

static double *
zeros(rctx *r, const coil_tensor *t)
{
  double *a = calloc((size_t)coil_tensor_numel(t) + 1, sizeof(double));
  if (!a)
    coil_ref_err(r, "out of memory");
  return a;
}

static int64_t
item(const coil_lit *l, int i, int64_t dflt)
{
  return l && l->n ? l->items[l->n > i ? i : 0].i : dflt;
}

/* ---- pooling backward ---- */

/* max_pool2d_with_indices_backward: grad_input[plane, indices[q]] += grad_output[q] */
static int
run_max_pool_bwd(rctx *r, coil_tensor *out, double *acc)
{
  const coil_tensor *g = coil_ref_param(r, "grad_output"), *ix = coil_ref_param(r, "indices");
  int rk = out->rank;
  int64_t area = out->shape[rk - 2] * out->shape[rk - 1], oarea = g->shape[rk - 2] * g->shape[rk - 1];
  for (int64_t q = 0; q < coil_tensor_numel(g); q++) {
    int64_t p = coil_tensor_get_i64(ix, q);
    if (p < 0 || p >= area) {
      free(acc);
      return coil_ref_err(r, "index %lld is out of range for a %lld-element plane", (long long)p, (long long)area);
    }
    acc[q / oarea * area + p] += at(g, q);
  }
  store(out, acc);
  return 0;
}

/* avg_pool2d_backward: each output's gradient divided as the forward divides, added to the
 * input elements its window covers */
static int
run_avg_pool_bwd(rctx *r, coil_tensor *out, double *acc)
{
  const coil_tensor *g = coil_ref_param(r, "grad_output");
  const coil_lit *lk = coil_ref_lit(r, "kernel_size"), *ls = coil_ref_lit(r, "stride"), *lp = coil_ref_lit(r, "padding");
  const coil_lit *dv = coil_ref_lit(r, "divisor_override");
  bool include_pad = coil_ref_lit(r, "count_include_pad")->i;
  int64_t kh = item(lk, 0, 1), kw = item(lk, 1, 1);
  int64_t sh = item(ls, 0, kh), sw = item(ls, 1, kw), ph = item(lp, 0, 0), pw = item(lp, 1, 0);
  int rk = out->rank;
  int64_t H = out->shape[rk - 2], W = out->shape[rk - 1], OH = g->shape[rk - 2], OW = g->shape[rk - 1];
  int64_t planes = H * W != 0 ? coil_tensor_numel(out) / (H * W) : 0;
  for (int64_t p = 0; p < planes; p++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        int64_t hs = oh * sh - ph, ws = ow * sw - pw;
        int64_t he = hs + kh < H + ph ? hs + kh : H + ph, we = ws + kw < W + pw ? ws + kw : W + pw;
        int64_t pool = (he - hs) * (we - ws);
        hs = hs < 0 ? 0 : hs, ws = ws < 0 ? 0 : ws;
        he = he > H ? H : he, we = we > W ? W : we;
        int64_t div = dv->kind == COIL_LIT_INT ? dv->i : include_pad ? pool : (he - hs) * (we - ws);
        double v = at(g, (p * OH + oh) * OW + ow) / (double)div;
        for (int64_t h = hs; h < he; h++)
          for (int64_t w = ws; w < we; w++)
            acc[(p * H + h) * W + w] += v;
      }
  store(out, acc);
  return 0;
}

/* _adaptive_avg_pool2d_backward: output (oh, ow) averaged rows [floor(oh*H/OH),
 * ceil((oh+1)*H/OH)) and the columns alike */
static int
run_adaptive_bwd(coil_tensor *out, const coil_tensor *g, double *acc)
{
  int rk = out->rank;
  int64_t H = out->shape[rk - 2], W = out->shape[rk - 1], OH = g->shape[rk - 2], OW = g->shape[rk - 1];
  int64_t planes = H * W != 0 ? coil_tensor_numel(out) / (H * W) : 0;
  for (int64_t p = 0; p < planes; p++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        int64_t hs = oh * H / OH, he = ((oh + 1) * H + OH - 1) / OH;
        int64_t ws = ow * W / OW, we = ((ow + 1) * W + OW - 1) / OW;
        double v = at(g, (p * OH + oh) * OW + ow) / (double)((he - hs) * (we - ws));
        for (int64_t h = hs; h < he; h++)
          for (int64_t w = ws; w < we; w++)
            acc[(p * H + h) * W + w] += v;
      }
  store(out, acc);
  return 0;
}

/* ---- normalisation backward ---- */

/* native_layer_norm_backward over rows of N = prod(normalized_shape) elements, with the given
 * mean and rstd: xhat = (x - mean) * rstd, dy = grad * weight,
 *   grad_input = rstd / N * (N * dy - sum(dy) - xhat * sum(dy * xhat))
 *   grad_weight = sum over rows of grad * xhat,  grad_bias = sum over rows of grad */
static int
run_layer_norm_bwd(rctx *r, coil_tensor *outs, double **acc)
{
  const coil_tensor *g = coil_ref_param(r, "grad_out"), *x = coil_ref_param(r, "input");
  const coil_tensor *mean = coil_ref_param(r, "mean"), *rstd = coil_ref_param(r, "rstd");
  const coil_tensor *w = coil_ref_param(r, "weight");
  int64_t inner = coil_tensor_numel(&outs[1]);
  int64_t rows = inner ? coil_tensor_numel(x) / inner : 0;
  for (int64_t o = 0; o < rows; o++) {
    double mu = at(mean, o), rs = at(rstd, o), a = 0, b = 0;
    for (int64_t j = 0; j < inner; j++) {
      double xh = (at(x, o * inner + j) - mu) * rs, gj = at(g, o * inner + j);
      double dy = gj * (w ? at(w, j) : 1.0);
      a += dy;
      b += dy * xh;
      acc[1][j] += gj * xh;
      acc[2][j] += gj;
    }
    for (int64_t j = 0; j < inner; j++) {
      double xh = (at(x, o * inner + j) - mu) * rs;
      double dy = at(g, o * inner + j) * (w ? at(w, j) : 1.0);
      acc[0][o * inner + j] = rs / (double)inner * ((double)inner * dy - a - xh * b);
    }
  }
  return 0;
}

/* native_group_norm_backward: the same over each (sample, group) of C/G channels by HxW, with
 * weight per channel; grad_weight and grad_bias per channel, summed over samples and HxW */
static int
run_group_norm_bwd(rctx *r, coil_tensor *outs, double **acc)
{
  const coil_tensor *g = coil_ref_param(r, "grad_out"), *x = coil_ref_param(r, "input");
  const coil_tensor *mean = coil_ref_param(r, "mean"), *rstd = coil_ref_param(r, "rstd");
  const coil_tensor *w = coil_ref_param(r, "weight");
  int64_t N = coil_ref_lit(r, "N")->i, C = coil_ref_lit(r, "C")->i, HW = coil_ref_lit(r, "HxW")->i;
  int64_t G = coil_ref_lit(r, "group")->i, D = C / G;
  (void)outs;
  for (int64_t n = 0; n < N; n++)
    for (int64_t gr = 0; gr < G; gr++) {
      double mu = at(mean, n * G + gr), rs = at(rstd, n * G + gr), a = 0, b = 0;
      int64_t base = (n * C + gr * D) * HW, cnt = D * HW;
      for (int64_t e = 0; e < cnt; e++) {
        int64_t ch = gr * D + e / HW;
        double xh = (at(x, base + e) - mu) * rs, ge = at(g, base + e);
        double dy = ge * (w ? at(w, ch) : 1.0);
        a += dy;
        b += dy * xh;
        acc[1][ch] += ge * xh;
        acc[2][ch] += ge;
      }
      for (int64_t e = 0; e < cnt; e++) {
        int64_t ch = gr * D + e / HW;
        double xh = (at(x, base + e) - mu) * rs;
        double dy = at(g, base + e) * (w ? at(w, ch) : 1.0);
        acc[0][base + e] = rs * (dy - a / (double)cnt - xh * b / (double)cnt);
      }
    }
  return 0;
}

/* ---- convolution backward ---- */

/* convolution_backward: the forward's terms y[n, co, o] += x[n, ci, i] * w[..] (o*s - p + k*d
 * = i, or i*s - p + k*d = o transposed) each send grad_output[n, co, o] back: times w to
 * grad_input[n, ci, i], times x to the weight's element; grad_bias sums grad_output per
 * channel */
static int
run_conv_bwd(rctx *r, coil_tensor *outs, double **acc)
{
  const coil_tensor *gy = coil_ref_param(r, "grad_output"), *x = coil_ref_param(r, "input"),
                    *w = coil_ref_param(r, "weight");
  const coil_lit *ls = coil_ref_lit(r, "stride"), *lp = coil_ref_lit(r, "padding"), *ld = coil_ref_lit(r, "dilation");
  int64_t groups = coil_ref_lit(r, "groups")->i;
  bool tr = coil_ref_lit(r, "transposed")->i;
  int nsp = x->rank - 2;
  int64_t N = x->shape[0], C = x->shape[1], O = gy->shape[1];
  int64_t cpg = C / groups, opg = O / groups, ksz = 1, isp = 1, osp = 1;
  for (int i = 0; i < nsp; i++) {
    ksz *= w->shape[2 + i];
    isp *= x->shape[2 + i];
    osp *= gy->shape[2 + i];
  }
  int64_t ip[3], kp[3], op[3];
  (void)outs;
  for (int64_t n = 0; n < N; n++)
    for (int64_t g = 0; g < groups; g++)
      for (int64_t oc = 0; oc < opg; oc++)
        for (int64_t ic = 0; ic < cpg; ic++)
          for (int64_t k = 0; k < ksz; k++) {
            coil_ref_unravel(k, nsp, w->shape + 2, kp);
            int64_t widx = tr ? (((g * cpg + ic) * opg + oc) * ksz + k) : (((g * opg + oc) * cpg + ic) * ksz + k);
            for (int64_t s = 0; s < (tr ? isp : osp); s++) {
              bool ok = true;
              int64_t fi = 0, fo = 0;
              coil_ref_unravel(s, nsp, (tr ? x->shape : gy->shape) + 2, tr ? ip : op);
              for (int q = 0; q < nsp; q++) {
                int64_t v = (tr ? ip[q] : op[q]) * ls->items[q].i - lp->items[q].i + kp[q] * ld->items[q].i;
                int64_t lim = tr ? gy->shape[2 + q] : x->shape[2 + q];
                ok = ok && v >= 0 && v < lim;
                *(tr ? &op[q] : &ip[q]) = v;
                fi = fi * x->shape[2 + q] + ip[q];
                fo = fo * gy->shape[2 + q] + op[q];
              }
              if (!ok)
                continue;
              int64_t xi = (n * C + g * cpg + ic) * isp + fi, yi = (n * O + g * opg + oc) * osp + fo;
              double gv = at(gy, yi);
              acc[0][xi] += gv * at(w, widx);
              acc[1][widx] += gv * at(x, xi);
            }
          }
  for (int64_t i = 0; i < coil_tensor_numel(gy); i++)
    acc[2][i / osp % O] += at(gy, i);
  return 0;
}

/* col2im: column (c*KH + kh)*KW + kw, block (bh, bw) adds to pixel (bh*s - p + kh*d, ...) */
static int
run_col2im(rctx *r, coil_tensor *out, double *acc)
{
  const coil_tensor *x = coil_ref_param(r, "self");
  const coil_lit *lk = coil_ref_lit(r, "kernel_size"), *ld = coil_ref_lit(r, "dilation"),
                 *lp = coil_ref_lit(r, "padding"), *ls = coil_ref_lit(r, "stride");
  int rk = out->rank;
  int64_t C = out->shape[rk - 3], H = out->shape[rk - 2], W = out->shape[rk - 1];
  int64_t KH = item(lk, 0, 1), KW = item(lk, 1, 1), L = x->shape[x->rank - 1];
  int64_t nbw = (W + 2 * item(lp, 1, 0) - item(ld, 1, 1) * (KW - 1) - 1) / item(ls, 1, 1) + 1;
  int64_t batches = rk == 4 ? out->shape[0] : 1;
  for (int64_t n = 0; n < batches; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t kh = 0; kh < KH; kh++)
        for (int64_t kw = 0; kw < KW; kw++)
          for (int64_t b = 0; b < L; b++) {
            int64_t h = b / nbw * item(ls, 0, 1) - item(lp, 0, 0) + kh * item(ld, 0, 1);
            int64_t w = b % nbw * item(ls, 1, 1) - item(lp, 1, 0) + kw * item(ld, 1, 1);
            if (h < 0 || h >= H || w < 0 || w >= W)
              continue;
            acc[((n * C + c) * H + h) * W + w] += at(x, ((n * C + c) * KH * KW + kh * KW + kw) * L + b);
          }
  store(out, acc);
  return 0;
}

/* ---- grid_sampler_2d ---- */

/* PyTorch's GridSampler.h, in f64: a grid coordinate in [-1, 1] to a pixel position, then the
 * padding mode's rule */
static double
grid_source(double g, int64_t size, int padding_mode, bool align_corners)
{
  double c = align_corners ? (g + 1) / 2 * (double)(size - 1) : ((g + 1) * (double)size - 1) / 2;
  if (padding_mode == 2) { /* reflection */
    double lo = align_corners ? 0 : -1, hi = align_corners ? 2.0 * (double)(size - 1) : 2.0 * (double)size - 1;
    if (lo == hi) {
      c = 0;
    } else {
      double min = lo / 2, span = (hi - lo) / 2, in = fabs(c - min);
      double extra = fmod(in, span), flips = floor(in / span);
      c = fmod(flips, 2) == 0 ? extra + min : span - extra + min;
    }
  }
  if (padding_mode >= 1) /* border, and reflection's result clipped */
    c = fmin((double)(size - 1), fmax(c, 0));
  return c;
}

static int
run_grid_sample(rctx *r, coil_tensor *out)
{
  const coil_tensor *x = coil_ref_param(r, "input"), *grid = coil_ref_param(r, "grid");
  int mode = (int)coil_ref_lit(r, "interpolation_mode")->i, pad = (int)coil_ref_lit(r, "padding_mode")->i;
  bool align = coil_ref_lit(r, "align_corners")->i;
  int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3], Ho = out->shape[2], Wo = out->shape[3];
  for (int64_t n = 0; n < N; n++)
    for (int64_t h = 0; h < Ho; h++)
      for (int64_t w = 0; w < Wo; w++) {
        int64_t gi = ((n * Ho + h) * Wo + w) * 2;
        double ix = grid_source(at(grid, gi), W, pad, align), iy = grid_source(at(grid, gi + 1), H, pad, align);
        for (int64_t c = 0; c < C; c++) {
          const int64_t plane = (n * C + c) * H * W;
          double v = 0;
          if (mode == 1) { /* nearest: round half to even, as nearbyint */
            double xr = nearbyint(ix), yr = nearbyint(iy);
            if (xr >= 0 && xr < (double)W && yr >= 0 && yr < (double)H)
              v = at(x, plane + (int64_t)yr * W + (int64_t)xr);
          } else { /* bilinear over the four neighbours inside the input */
            double x0 = floor(ix), y0 = floor(iy);
            for (int dy = 0; dy < 2; dy++)
              for (int dx = 0; dx < 2; dx++) {
                double xx = x0 + dx, yy = y0 + dy;
                double wt = (dx ? ix - x0 : x0 + 1 - ix) * (dy ? iy - y0 : y0 + 1 - iy);
                if (xx >= 0 && xx < (double)W && yy >= 0 && yy < (double)H)
                  v += wt * at(x, plane + (int64_t)yy * W + (int64_t)xx);
              }
          }
          coil_tensor_set_f64(out, ((n * C + c) * Ho + h) * Wo + w, v);
        }
      }
  return 0;
}

/* ---- _embedding_bag ---- */

/* As PyTorch's _embedding_bag_cpu: offset2bag[i] = (offsets up to i) - 1, by its cumsum of
 * ones put at the offsets; index i adds its weight row (times per_sample_weights[i]) to bag
 * offset2bag[i] unless it is padding_idx; mean divides by max(bag_size, 1); max keeps the first
 * largest (and its index, 0 for an empty bag); bag_size counts a bag's indices but padding ones
 * (zeroed for sum); max_indices is bag_size for sum and mean */
static int
run_embedding_bag(rctx *r, coil_tensor *outs)
{
  const coil_tensor *w = coil_ref_param(r, "weight"), *ix = coil_ref_param(r, "indices"),
                    *off = coil_ref_param(r, "offsets"), *psw = coil_ref_param(r, "per_sample_weights");
  int64_t mode = coil_ref_lit(r, "mode")->i, pad = coil_ref_lit(r, "padding_idx")->i;
  int64_t V = w->shape[0], D = w->shape[1], I = ix->shape[0], B = outs[0].shape[0];
  int64_t *o2b = calloc((size_t)I + 2, sizeof(int64_t)), *size = calloc((size_t)B + 1, sizeof(int64_t));
  int64_t *arg = calloc((size_t)(B * D) + 1, sizeof(int64_t));
  double *acc = calloc((size_t)(B * D) + 1, sizeof(double));
  bool *seen = calloc((size_t)B + 1, sizeof(bool));
  int rc = 0;
  if (!o2b || !size || !arg || !acc || !seen) {
    rc = coil_ref_err(r, "out of memory");
    goto done;
  }
  for (int64_t b = 0; b < B; b++) {
    int64_t o = coil_tensor_get_i64(off, b);
    if (o < 0 || o > I) {
      rc = coil_ref_err(r, "offsets[%lld] = %lld is out of range [0, %lld]", (long long)b, (long long)o, (long long)I);
      goto done;
    }
    o2b[o]++;
    size[b] = (b + 1 < B ? coil_tensor_get_i64(off, b + 1) : I) - o;
  }
  o2b[0]--;
  for (int64_t i = 1; i <= I; i++)
    o2b[i] += o2b[i - 1];
  for (int64_t i = 0; i < I; i++) {
    int64_t id = coil_tensor_get_i64(ix, i), bag = o2b[i];
    if (id < 0 || id >= V) {
      rc = coil_ref_err(r, "index %lld is out of range for %lld embeddings", (long long)id, (long long)V);
      goto done;
    }
    if (bag < 0 || bag >= B)
      continue;
    if (id == pad) {
      size[bag]--;
      continue;
    }
    for (int64_t d = 0; d < D; d++) {
      double v = at(w, id * D + d);
      if (mode != 2) {
        acc[bag * D + d] += v * (psw ? at(psw, i) : 1.0);
      } else if (!seen[bag] || v > acc[bag * D + d]) {
        acc[bag * D + d] = v;
        arg[bag * D + d] = id;
      }
    }
    seen[bag] = true;
  }
  for (int64_t b = 0; b < B; b++)
    for (int64_t d = 0; d < D; d++) {
      double div = mode == 1 && size[b] > 1 ? (double)size[b] : 1.0;
      coil_tensor_set_f64(&outs[0], b * D + d, acc[b * D + d] / div);
    }
  for (int64_t i = 0; i < coil_tensor_numel(&outs[1]); i++)
    coil_tensor_set_i64(&outs[1], i, o2b[i]);
  for (int64_t b = 0; b < B; b++)
    coil_tensor_set_i64(&outs[2], b, mode == 0 ? 0 : size[b]);
  for (int64_t e = 0; e < coil_tensor_numel(&outs[3]); e++)
    coil_tensor_set_i64(&outs[3], e, mode == 2 ? arg[e] : mode == 0 ? 0 : size[e]);
done:
  free(o2b);
  free(size);
  free(arg);
  free(acc);
  free(seen);
  return rc;
}

/* ---- sort ---- */

typedef struct {
  const coil_tensor *t;
  int64_t base, step;
  bool descending, is_float;
} sort_line;

/* -1 when element i of the line goes before element j: ascending (descending) value, NaN the
 * largest, equal values in their original order (the stable sort) */
static int
sort_cmp(const sort_line *s, int64_t i, int64_t j)
{
  int c;
  if (s->is_float) {
    double a = at(s->t, s->base + i * s->step), b = at(s->t, s->base + j * s->step);
    bool an = isnan(a), bn = isnan(b);
    c = an || bn ? (an && bn ? 0 : an ? 1 : -1) : (a > b) - (a < b);
  } else {
    int64_t a = coil_tensor_get_i64(s->t, s->base + i * s->step), b = coil_tensor_get_i64(s->t, s->base + j * s->step);
    c = (a > b) - (a < b);
  }
  if (s->descending)
    c = -c;
  return c ? c : (i > j) - (i < j);
}

static int
run_sort(rctx *r, coil_tensor *outs)
{
  const coil_tensor *x = coil_ref_param(r, "self");
  int d = wrap(coil_ref_lit(r, "dim")->i, x->rank);
  int64_t len = x->rank ? x->shape[d] : 1, inner = 1, n = coil_tensor_numel(x);
  for (int q = d + 1; q < x->rank; q++)
    inner *= x->shape[q];
  sort_line s = {.t = x, .step = inner, .descending = coil_ref_lit(r, "descending")->i,
                 .is_float = coil_dtype_is_float(x->dtype)};
  int64_t *perm = malloc(sizeof(int64_t) * (size_t)(len + 1));
  if (!perm)
    return coil_ref_err(r, "out of memory");
  for (int64_t line = 0; len && line < n / len; line++) {
    s.base = line / inner * len * inner + line % inner;
    for (int64_t k = 0; k < len; k++) /* insertion sort: stable, and lines are short */
      perm[k] = k;
    for (int64_t k = 1; k < len; k++)
      for (int64_t m = k; m > 0 && sort_cmp(&s, perm[m - 1], perm[m]) > 0; m--) {
        int64_t t = perm[m];
        perm[m] = perm[m - 1];
        perm[m - 1] = t;
      }
    for (int64_t k = 0; k < len; k++) {
      coil_ref_convert(x, s.base + perm[k] * inner, &outs[0], s.base + k * inner);
      coil_tensor_set_i64(&outs[1], s.base + k * inner, perm[k]);
    }
  }
  free(perm);
  return 0;
}

/* ---- pairwise distances ---- */

/* The p-norm distance of rows a and b (m features each): p = 0 counts the differing features,
 * p = inf takes the largest difference. */
static double
dist(const coil_tensor *ta, int64_t a, const coil_tensor *tb, int64_t b, int64_t m, double p)
{
  double s = 0;
  for (int64_t k = 0; k < m; k++) {
    double dd = fabs(at(ta, a + k) - at(tb, b + k));
    if (p == 0)
      s += dd != 0;
    else if (isinf(p))
      s = dd > s || isnan(dd) ? dd : s;
    else if (p == 1)
      s += dd;
    else if (p == 2)
      s += dd * dd;
    else
      s += pow(dd, p);
  }
  if (p == 2)
    return sqrt(s);
  if (p == 0 || p == 1 || isinf(p))
    return s;
  return pow(s, 1.0 / p);
}

static int
run_cdist(rctx *r, coil_tensor *out)
{
  double p = coil_ref_lit(r, "p")->f;
  if (r->n->op->sub == 1) { /* pdist: pairs i < j in row-major order */
    const coil_tensor *x = coil_ref_param(r, "self");
    int64_t n = x->shape[0], m = x->shape[1], k = 0;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = i + 1; j < n; j++)
        coil_tensor_set_f64(out, k++, dist(x, i * m, x, j * m, m, p));
    return 0;
  }
  const coil_tensor *x1 = coil_ref_param(r, "x1"), *x2 = coil_ref_param(r, "x2");
  int br = out->rank - 2;
  int64_t P = out->shape[br], R = out->shape[br + 1], m = x1->shape[x1->rank - 1];
  int64_t batches = P * R != 0 ? coil_tensor_numel(out) / (P * R) : 0, idx[COIL_MAX_RANK];
  for (int64_t bt = 0; bt < batches; bt++) {
    coil_ref_unravel(bt, br, out->shape, idx);
    int64_t o1 = 0, o2 = 0; /* the batch's row block in x1 and x2, broadcasting size-1 dims */
    for (int q = 0; q < br; q++) {
      int q1 = q - (br - (x1->rank - 2)), q2 = q - (br - (x2->rank - 2));
      if (q1 >= 0)
        o1 = o1 * x1->shape[q1] + (x1->shape[q1] == 1 ? 0 : idx[q]);
      if (q2 >= 0)
        o2 = o2 * x2->shape[q2] + (x2->shape[q2] == 1 ? 0 : idx[q]);
    }
    for (int64_t i = 0; i < P; i++)
      for (int64_t j = 0; j < R; j++)
        coil_tensor_set_f64(out, (bt * P + i) * R + j, dist(x1, (o1 * P + i) * m, x2, (o2 * R + j) * m, m, p));
  }
  return 0;
}

int
coil_ref_run_backward(rctx *r, coil_tensor *outs)
{
  switch (r->n->op->rule) {
  case COIL_RULE_POOL_BWD: {
    double *acc = zeros(r, &outs[0]);
    if (!acc)
      return -1;
    if (r->n->op->sub == 0)
      return run_max_pool_bwd(r, &outs[0], acc);
    if (r->n->op->sub == 1)
      return run_avg_pool_bwd(r, &outs[0], acc);
    return run_adaptive_bwd(&outs[0], coil_ref_param(r, "grad_output"), acc);
  }
  case COIL_RULE_COL2IM: {
    double *acc = zeros(r, &outs[0]);
    return acc ? run_col2im(r, &outs[0], acc) : -1;
  }
  case COIL_RULE_NORM_BWD: case COIL_RULE_CONV_BWD: {
    double *acc[3] = {0};
    int rc = 0;
    for (int k = 0; k < 3 && !rc; k++)
      rc = (acc[k] = zeros(r, &outs[k])) ? 0 : -1;
    if (!rc && r->n->op->rule == COIL_RULE_CONV_BWD)
      rc = run_conv_bwd(r, outs, acc);
    else if (!rc)
      rc = r->n->op->sub == 0 ? run_layer_norm_bwd(r, outs, acc) : run_group_norm_bwd(r, outs, acc);
    for (int k = 0; k < 3; k++)
      if (acc[k] && !rc)
        store(&outs[k], acc[k]);
      else
        free(acc[k]);
    return rc;
  }
  case COIL_RULE_SORT: return run_sort(r, outs);
  case COIL_RULE_GRID_SAMPLE: return run_grid_sample(r, outs);
  case COIL_RULE_EMBEDDING_BAG: return run_embedding_bag(r, outs);
  case COIL_RULE_CDIST: return run_cdist(r, outs);
  default: return coil_ref_err(r, "internal: no reference implementation");
  }
}
