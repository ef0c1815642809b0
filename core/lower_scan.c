/* lower_scan.c — cumsum for a target that does not claim it as a library call: each output
 * element is a sum reduction over its prefix, out[..., i, ...] = Σ_{j <= i} x[..., j, ...], a
 * lazy tensor with one more dimension (j) masked to 0 past i. That is O(n²) work along the
 * scanned dimension, so it is used only up to SCAN_MAX elements there (GPT-2's position ids and
 * masks); longer scans stay a library call until the Wrapper IR has a scan kernel kind.
 * Sums accumulate in f32 for f16/bf16 and in i64 for integers (wrapping, as PyTorch). */
#include "lower.h"

#define SCAN_MAX 1024

/* 1: not generated (a library call instead) */
int
coil_lower_cumsum(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *out = op_result(L, n, 0);
  if (x->rank == 0 || coil_lower_is_library(L, n->op->name, x->dtype))
    return 1;
  int dim = (int)op_lit(n, "dim")->i;
  if (dim < 0)
    dim += x->rank;
  int64_t len;
  if (dim < 0 || dim >= x->rank || !coil_sym_is_const(x->sizes[dim], &len) || len > SCAN_MAX ||
      out->rank + 1 > COIL_MAX_RANK)
    return 1;
  coil_dtype acc = opmath_dtype(out->dtype);
  const coil_sym *sizes[COIL_MAX_RANK];
  for (int i = 0; i < out->rank; i++)
    sizes[i] = out->sizes[i];
  sizes[out->rank] = x->sizes[dim]; /* j */
  lazy *e = lz_new(L, acc, out->rank + 1, sizes);
  const coil_sym *at[COIL_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    at[i] = i == dim ? e->dvars[out->rank] : e->dvars[i];
  const lexpr *v = lx_cast(L, lz_at(L, x, at), acc);
  const lexpr *upto = lx_op(L, COIL_KOP_LE, COIL_BOOL, lx_index(L, e->dvars[out->rank]), lx_index(L, e->dvars[dim]), NULL);
  e->expr = lx_op(L, COIL_KOP_WHERE, acc, upto, v, lx_const(L, acc, 0, 0));
  bool red[COIL_MAX_RANK] = {0};
  red[out->rank] = true;
  lazy *sum = lz_reduce(L, e, red, false, COIL_REDUCE_SUM, acc);
  out->expr = lx_cast(L, lz_at(L, sum, out->dvars), out->dtype);
  op_set_value(L, n, out);
  return 0;
}
