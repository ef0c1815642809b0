/* compare.c — tensor comparison with tolerances, shared by `coil run --expect`, the tests and
 * (later) the conformance suite, so every judge of "matches PyTorch" applies one rule. */
#include <math.h>
#include <string.h>

#include "coil/coil.h"

void
coil_tolerance_default(coil_dtype t, double *rtol, double *atol)
{
  switch (t) {
  case COIL_F64: *rtol = 1e-7, *atol = 1e-7; break;
  case COIL_F32: *rtol = 1.3e-6, *atol = 1e-5; break;
  case COIL_F16: *rtol = 1e-3, *atol = 1e-5; break;
  case COIL_BF16: *rtol = 1.6e-2, *atol = 1e-5; break;
  default: *rtol = 0, *atol = 0; break;
  }
}

bool
coil_tensor_allclose(const coil_tensor *got, const coil_tensor *want, double rtol, double atol,
                     coil_compare *out)
{
  memset(out, 0, sizeof *out);
  out->worst = -1;
  out->same_shape = got->dtype == want->dtype && got->rank == want->rank;
  for (int k = 0; out->same_shape && k < got->rank; k++)
    out->same_shape = got->shape[k] == want->shape[k];
  if (!out->same_shape)
    return false;
  bool exact = !coil_dtype_is_float(got->dtype);
  double worst_err = -1;
  int64_t n = coil_tensor_numel(got);
  for (int64_t k = 0; k < n; k++) {
    bool ok;
    double a, b;
    if (exact) {
      int64_t x = coil_tensor_get_i64(got, k), y = coil_tensor_get_i64(want, k);
      ok = x == y;
      a = (double)x, b = (double)y;
    } else {
      a = coil_tensor_get_f64(got, k), b = coil_tensor_get_f64(want, k);
      if (isnan(a) || isnan(b) || isinf(a) || isinf(b)) /* only equal specials match */
        ok = (isnan(a) && isnan(b)) || a == b;
      else
        ok = fabs(a - b) <= atol + rtol * fabs(b);
    }
    if (ok)
      continue;
    out->mismatches++;
    double e = isnan(a - b) ? INFINITY : fabs(a - b);
    if (e > worst_err) {
      worst_err = e;
      out->worst = k;
      out->worst_got = a;
      out->worst_want = b;
    }
  }
  return out->mismatches == 0;
}
