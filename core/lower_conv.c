/* lower_conv.c — convolution as a generated kernel: a direct loop nest, written as a sum
 * reduction of the loop IR, for targets that do not claim aten.convolution.default as a library
 * call (lower_ops.c asks coil_lower_is_library first). The scheduler fuses what follows it (bias,
 * batch norm, relu) into the reduction's epilogue like any other reduction's.
 *
 * With input x [N, C, I1..Id], weight w [Co, C/G, K1..Kd] and G groups of C/G input and Co/G
 * output channels, the reduced tensor runs over [N, Co, O1..Od, C/G, K1..Kd]:
 *
 *   e[n, co, o, c, k] = x[n, g*C/G + c, o*stride - pad + k*dilation] * w[co, c, k],  g = co / (Co/G)
 *
 * summed over its last d+1 dims in the dtype arithmetic runs in (f32 for f16 and bf16), then
 * bias added and the result cast in a pointwise epilogue. x is read at an index clamped into
 * its size and masked to 0 outside, only along dims with padding (without padding every index
 * is inside, by the output-size formula). A transposed convolution (w [C, Co/G, K1..Kd]) gathers
 * instead of scattering: output o reads input i = (o + pad - k*dilation) / stride where that
 * division is exact and i lies inside.
 *
 * Which reduced dim is innermost decides how fast a backend runs it. With at least
 * CHANNELS_INNERMOST channels per group (not transposed) the sum runs over K1..Kd, C/G, reading
 * channels-last copies of x [N, I1..Id, C] and w [Co, K1..Kd, C/G], each made by a pointwise
 * kernel (x's producer fuses into its copy): the inner loop then reads both contiguously, a
 * vector loop on a CPU. With fewer (depthwise, the first layer) the window is innermost and x
 * and w are read in place, realized first unless they are plain loads (each element is read
 * Co*K times).
 *
 * The loop IR has at most COIL_MAX_RANK = 8 dims; a 3-D convolution needs 9, so there the first
 * two reduced dims share one (their product; index by division and modulo): the kept dims stay
 * the output's, so the epilogue still fuses. */
#include "lower.h"

/* Channels per group from which the sum runs over channels innermost. */
#define CHANNELS_INNERMOST 8

static const coil_sym *
K(lowering *L, int64_t v)
{
  return coil_sym_const(L->sym, v);
}

static const lexpr *
both(lowering *L, const lexpr *a, const lexpr *b)
{
  return a ? lx_op(L, COIL_KOP_AND, COIL_BOOL, a, b, NULL) : b;
}

/* z [A, B, S1..Sd] copied to [A, S1 + 2*P1, .., Sd + 2*Pd, B] (pad: P per spatial dim, or NULL
 * for none), zeros in the padding (realized: a kernel of its own, into which the pointwise work
 * that computes z fuses). The convolution then reads it with no mask and no clamp. */
static lazy *
channels_last(lowering *L, const lazy *z, const coil_lit *pad)
{
  const coil_sym *sizes[COIL_MAX_RANK], *idx[COIL_MAX_RANK];
  int r = z->rank;
  sizes[0] = z->sizes[0];
  for (int i = 2; i < r; i++)
    sizes[i - 1] = pad ? coil_sym_add(L->sym, z->sizes[i], K(L, 2 * pad->items[i - 2].i)) : z->sizes[i];
  sizes[r - 1] = z->sizes[1];
  lazy *t = lz_new(L, z->dtype, r, sizes);
  idx[0] = t->dvars[0];
  idx[1] = t->dvars[r - 1];
  const lexpr *inside = NULL;
  for (int i = 2; i < r; i++) {
    int64_t p = pad ? pad->items[i - 2].i : 0;
    idx[i] = t->dvars[i - 1];
    if (p) {
      const coil_sym *at = coil_sym_add(L->sym, t->dvars[i - 1], K(L, -p));
      inside = both(L, inside, lx_in_range(L, at, K(L, 0), z->sizes[i]));
      idx[i] = clamped_index(L, at, z->sizes[i]);
    }
  }
  t->expr = lz_at(L, z, idx);
  if (inside)
    t->expr = lx_op(L, COIL_KOP_WHERE, z->dtype, inside, t->expr, lx_const(L, z->dtype, 0, 0));
  lz_realize(L, t);
  return t;
}

/* Element idx (in z's own dim order) of z, or of its channels-last copy t. */
static const lexpr *
element(lowering *L, const lazy *z, const lazy *t, const coil_sym *const *idx, coil_dtype dt)
{
  if (!t)
    return lx_cast(L, lz_at(L, z, idx), dt);
  const coil_sym *ti[COIL_MAX_RANK];
  ti[0] = idx[0];
  for (int i = 2; i < z->rank; i++)
    ti[i - 1] = idx[i];
  ti[z->rank - 1] = idx[1];
  return lx_cast(L, lz_at(L, t, ti), dt);
}

int
coil_lower_conv(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *w = op_arg(L, n, 1), *bias = op_arg(L, n, 2), *out = op_result(L, n, 0);
  const coil_lit *stride = op_lit(n, "stride"), *pad = op_lit(n, "padding"), *dil = op_lit(n, "dilation");
  bool transposed = op_lit(n, "transposed")->i;
  int64_t groups = op_lit(n, "groups")->i, cin = 0, cout = 0;
  coil_sym_is_const(x->sizes[1], &cin); /* constant: inference checks channel counts */
  coil_sym_is_const(out->sizes[1], &cout);
  int64_t cpg = cin / groups, opg = cout / groups; /* channels per group, in and out */
  int nsp = x->rank - 2;
  coil_dtype acc = opmath_dtype(out->dtype);

  /* with enough channels per group the sum runs over them innermost, reading channels-last
   * copies of x and w where they are contiguous (a vector loop on a CPU, coalesced loads on a
   * GPU); otherwise over the kernel window innermost, from x and w as they are */
  bool cl = !transposed && cpg >= CHANNELS_INNERMOST;
  lazy *xt = NULL, *wt = NULL;
  if (cl) { /* x padded: its copy holds the zeros, the sum reads it unmasked */
    xt = channels_last(L, x, pad);
    wt = channels_last(L, w, NULL);
  } else {
    if (x->expr->kind != LX_LOAD)
      lz_realize(L, x);
    if (w->expr->kind != LX_LOAD)
      lz_realize(L, w);
  }

  /* the sum's dims after the output's: C/G, K1..Kd, or K1..Kd, C/G with channels innermost; a
   * 3-D convolution merges the first two of them (else 9 dims) */
  /* with one group and no dilation along the last spatial dim, its window and the channels are
   * one contiguous run of Kd*C elements in both copies (x's row at o*stride, w's row): one
   * reduced dim f = kd*C + c, a longer vector loop with one sum */
  bool merge = cl && groups == 1 && nsp >= 1 && dil->items[nsp - 1].i == 1;
  int64_t klast = 0;
  if (merge && !coil_sym_is_const(w->sizes[1 + nsp], &klast))
    merge = false;
  const coil_sym *rs[4];
  int nrs = 0;
  if (!cl)
    rs[nrs++] = K(L, cpg);
  for (int q = 0; q < nsp - merge; q++)
    rs[nrs++] = w->sizes[2 + q];
  if (cl)
    rs[nrs++] = K(L, merge ? klast * cpg : cpg);
  bool fold = out->rank + nrs > COIL_MAX_RANK;
  const coil_sym *sizes[COIL_MAX_RANK];
  int rank = 0;
  for (int i = 0; i < out->rank; i++)
    sizes[rank++] = out->sizes[i];
  int r0 = rank;
  sizes[rank++] = fold ? coil_sym_mul(L->sym, rs[0], rs[1]) : rs[0];
  for (int i = 1 + fold; i < nrs; i++)
    sizes[rank++] = rs[i];
  lazy *e = lz_new(L, acc, rank, sizes);
  const coil_sym *rv[4]; /* the index of each of rs[] */
  for (int i = 0; i < nrs; i++)
    rv[i] = i == 0 ? e->dvars[r0] : e->dvars[r0 + i - fold];
  if (fold) {
    rv[0] = coil_sym_floordiv(L->sym, e->dvars[r0], rs[1]);
    rv[1] = coil_sym_mod(L->sym, e->dvars[r0], rs[1]);
  }
  /* per spatial dim the output index o and the kernel index k; the input channel c */
  const coil_sym *o[3], *k[3], *c = rv[cl ? nsp - merge : 0];
  for (int q = 0; q < nsp; q++) {
    o[q] = e->dvars[2 + q];
    k[q] = q < nsp - merge ? rv[cl ? q : q + 1] : NULL;
  }
  const coil_sym *f = NULL; /* merged: f = k_last*C + c */
  if (merge) {
    f = c;
    k[nsp - 1] = coil_sym_floordiv(L->sym, f, K(L, cpg));
    c = coil_sym_mod(L->sym, f, K(L, cpg));
  }
  const coil_sym *batch = e->dvars[0], *co = e->dvars[1];
  const coil_sym *g = coil_sym_floordiv(L->sym, co, K(L, opg));
  const coil_sym *ci = coil_sym_add(L->sym, coil_sym_mul(L->sym, g, K(L, cpg)), c);

  const coil_sym *xi[COIL_MAX_RANK], *wi[COIL_MAX_RANK];
  const lexpr *inside = NULL;
  xi[0] = batch;
  xi[1] = ci;
  wi[0] = transposed ? ci : co;
  wi[1] = transposed ? coil_sym_mod(L->sym, co, K(L, opg)) : c;
  for (int q = 0; q < nsp; q++) {
    const coil_sym *size = x->sizes[2 + q];
    int64_t s = stride->items[q].i, p = pad->items[q].i, d = dil->items[q].i;
    const coil_sym *kd = coil_sym_mul(L->sym, k[q], K(L, d)), *i;
    bool masked = !cl && (transposed || p > 0);
    if (cl) { /* into the padded copy: i + p = o*s + k*d */
      i = coil_sym_add(L->sym, coil_sym_mul(L->sym, o[q], K(L, s)), kd);
    } else if (!transposed) { /* i = o*s - p + k*d */
      i = coil_sym_add(L->sym, coil_sym_sub(L->sym, coil_sym_mul(L->sym, o[q], K(L, s)), K(L, p)), kd);
    } else { /* t = o + p - k*d; i = t / s where s divides t (floor division and modulo) */
      const coil_sym *t = coil_sym_sub(L->sym, coil_sym_add(L->sym, o[q], K(L, p)), kd);
      i = s == 1 ? t : coil_sym_floordiv(L->sym, t, K(L, s));
      if (s != 1)
        inside = both(L, inside, lx_op(L, COIL_KOP_EQ, COIL_BOOL, lx_index(L, coil_sym_mod(L->sym, t, K(L, s))),
                                       lx_const(L, COIL_I64, 0, 0), NULL));
    }
    if (masked)
      inside = both(L, inside, lx_in_range(L, i, K(L, 0), size));
    xi[2 + q] = masked ? clamped_index(L, i, size) : i;
    wi[2 + q] = k[q];
  }
  const lexpr *xv = element(L, x, xt, xi, acc);
  if (inside)
    xv = lx_op(L, COIL_KOP_WHERE, acc, inside, xv, lx_const(L, acc, 0, 0));
  e->expr = lx_op(L, COIL_KOP_MUL, acc, xv, element(L, w, wt, wi, acc), NULL);

  bool red[COIL_MAX_RANK] = {0};
  for (int i = r0; i < rank; i++)
    red[i] = true;
  lazy *sum = lz_reduce(L, e, red, false, COIL_REDUCE_SUM, acc);

  /* the epilogue: + bias[co], cast to the result's dtype */
  const lexpr *v = lz_at(L, sum, out->dvars);
  if (bias)
    v = lx_op(L, COIL_KOP_ADD, acc, v, lx_cast(L, lz_at(L, bias, &out->dvars[1]), acc), NULL);
  out->expr = lx_cast(L, v, out->dtype);
  op_set_value(L, n, out);
  return 0;
}
