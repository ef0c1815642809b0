/* lower_scan.c — cumsum and cumprod for a target that does not claim them as a library call: a
 * scan node (Wrapper IR 1.4 `scan sum` / `scan prod`) along the dimension, any length, the x
 * space being every other dimension. Sums and products accumulate in f32 for f16/bf16 (as
 * PyTorch's CUDA kernel and Inductor do) and in i64 for integers and bool (wrapping, as PyTorch),
 * rounded to the result dtype once per element. */
#include "lower.h"

/* 1: not generated (a library call instead) */
int
coil_lower_cumsum(lowering *L, const coil_node *n)
{
  lazy *x = op_arg(L, n, 0), *out = op_result(L, n, 0);
  if (coil_lower_is_library(L, n->op->name, x->dtype))
    return 1;
  coil_dtype acc = opmath_dtype(out->dtype);
  if (acc == COIL_BOOL) /* a scan has no bool kind */
    acc = COIL_I64;
  if (x->rank == 0) { /* a scalar is its own prefix */
    out->expr = lx_cast(L, lx_cast(L, lz_at(L, x, out->dvars), acc), out->dtype);
    op_set_value(L, n, out);
    return 0;
  }
  int dim = (int)op_lit(n, "dim")->i;
  if (dim < 0)
    dim += x->rank;
  if (dim < 0 || dim >= x->rank)
    return 1; /* inference has refused it already */
  lazy *e = lz_new(L, acc, x->rank, x->sizes);
  e->expr = lx_cast(L, lz_at(L, x, e->dvars), acc);
  lazy *sum = lz_scan(L, e, dim, n->op->sub == 1 ? COIL_REDUCE_PROD : COIL_REDUCE_SUM, acc);
  out->expr = lx_cast(L, lz_at(L, sum, out->dvars), out->dtype);
  op_set_value(L, n, out);
  return 0;
}
