/* ref_math.c — reference semantics of the pointwise math section of ops.def (the libm
 * functions, sign, isnan/isinf, atan2, fmod, remainder, xor), written from PyTorch's
 * definitions in f64 and exact 64-bit integers, independently of their lowering. ref.c calls
 * these from its pointwise drivers, which read the operands and round the result; elu and
 * hardtanh, which take scalar arguments, live there with leaky_relu. */
#include <math.h>

#include "ref.h"

/* Unary functions of a floating operand (an integer one is converted first, except where
 * coil_ref_math_i says otherwise). */
double
coil_ref_math_f(int ew, double x)
{
  switch (ew) {
  case EW_TAN: return tan(x);
  case EW_SINH: return sinh(x);
  case EW_COSH: return cosh(x);
  case EW_ASIN: return asin(x);
  case EW_ACOS: return acos(x);
  case EW_ATAN: return atan(x);
  case EW_ASINH: return asinh(x);
  case EW_ACOSH: return acosh(x);
  case EW_ATANH: return atanh(x);
  case EW_EXPM1: return expm1(x);
  case EW_LOG2: return log2(x);
  case EW_LOG10: return log10(x);
  case EW_SIGN: return (double)(x > 0) - (double)(x < 0); /* torch.sign: 0 for NaN and -0 */
  case EW_ISNAN: return isnan(x);
  case EW_ISINF: return isinf(x);
  }
  return NAN;
}

/* sign, isnan and isinf of an integer or bool tensor (the only math ops defined on them). */
int64_t
coil_ref_math_i(int ew, int64_t x)
{
  switch (ew) {
  case EW_SIGN: return (x > 0) - (x < 0); /* a bool stays itself */
  default: return 0;                      /* isnan, isinf: integers are never NaN or inf */
  }
}

/* Binary ops of floating operands; false when ew is none of them. */
bool
coil_ref_math_binary_f(int ew, double a, double b, double *out)
{
  switch (ew) {
  case EW_ATAN2: *out = atan2(a, b); return true;
  case EW_FMOD: *out = fmod(a, b); return true; /* the sign of a; nan for b = 0 */
  case EW_REMAINDER: { /* Python's %: the sign of b (torch computes it from fmod the same way) */
    double m = fmod(a, b);
    *out = m != 0 && (m < 0) != (b < 0) ? m + b : m;
    return true;
  }
  case EW_BITXOR: *out = NAN; return true; /* not reached: type inference refuses floats */
  case EW_LOGICAL_XOR: *out = (a != 0) != (b != 0); return true;
  }
  return false;
}

/* Binary ops of integer (or bool) operands: 0, 1 when ew is none of them, -1 for a division
 * by zero (torch raises ZeroDivisionError on the CPU). INT64_MIN by -1 gives 0, as torch's
 * remainder does (C's % would trap). */
int
coil_ref_math_binary_i(int ew, int64_t a, int64_t b, int64_t *out)
{
  switch (ew) {
  case EW_FMOD:
  case EW_REMAINDER: {
    if (b == 0)
      return -1;
    int64_t m = b == -1 ? 0 : a % b;
    if (ew == EW_REMAINDER && m != 0 && (m < 0) != (b < 0))
      m += b;
    *out = m;
    return 0;
  }
  case EW_BITXOR: *out = a ^ b; return 0;
  case EW_LOGICAL_XOR: *out = (a != 0) != (b != 0); return 0;
  }
  return 1;
}
