/* coil_cpu_math.h — float math for the CPU backend's generated kernels, written so that GCC
 * vectorizes it inside `#pragma omp simd` loops (AVX-512, AVX2 and plain SSE2 alike): every
 * function is branch-free (both sides of a choice are computed, then coil_m_select picks one),
 * uses no tables, calls nothing but fabsf and fmaf (the latter only where FP_FAST_FMAF says
 * it is one instruction), and reinterprets float bits through memcpy on scalars, which GCC
 * folds into register moves.
 *
 * Contract, checked by plugins/cpu/tests/test_cpu_math.c against libm in double precision
 * rounded to float: coil_expf, coil_logf, coil_log1pf, coil_erff, coil_tanhf, coil_sigmoidf
 * within 2 ulp over all floats, coil_rsqrtf within 1; coil_sinf, coil_cosf within 2 ulp for
 * |x| <= 1e4 (Cody-Waite reduction; coil_m_reduce says how far past that). Specials as in C99
 * Annex F: NaN in gives NaN out, exp overflows to inf and underflows through the subnormals
 * to 0, log(0) = -inf, log(x < 0) = NaN, tanh/erf/sigmoid saturate exactly, and -0 stays -0
 * where the function is odd. The f16/bf16 conversions round to nearest even and keep
 * subnormals, infinities and NaN payloads (NaNs come out quiet). Generated code computes f64
 * through libm; nothing here is double.
 *
 * This file is copied verbatim into every compiled artifact, so it includes only <math.h>,
 * <stdint.h> and <string.h>, and everything it defines starts with coil_ or COIL_ (internal
 * helpers: coil_m_*). Compile it without -ffast-math or -ffinite-math-only: the NaN selects
 * and the float-add rounding tricks need IEEE semantics (-ffp-contract=fast is fine). Without
 * FMA the same formulas run with separate multiplies and adds, within the same bounds (the
 * cpu_math_nofma test), except that sin/cos are trusted only to |x| <= 12800. */
#ifndef COIL_CPU_MATH_H
#define COIL_CPU_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__)
#define COIL_M_INLINE static inline __attribute__((always_inline))
#else
#define COIL_M_INLINE static inline
#endif

/* a * b + c, fused where the target has a fast fma (one rounding), plain otherwise. */
#if defined(FP_FAST_FMAF)
#define COIL_M_FMA(a, b, c) fmaf((a), (b), (c))
#else
#define COIL_M_FMA(a, b, c) ((a) * (b) + (c))
#endif

/* ---- bit access ---- */

COIL_M_INLINE uint32_t
coil_m_bits(float x)
{
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

COIL_M_INLINE float
coil_m_float(uint32_t u)
{
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* 2^n for an integer n in [-126, 127]. */
COIL_M_INLINE float
coil_m_pow2(int32_t n)
{
  return coil_m_float((uint32_t)(n + 127) << 23);
}

/* c ? a : b, for a condition c of 0 or 1, as bit operations. A ternary would do the same, but
 * GCC lowers it to a branch and then moves float operations feeding an arm into that branch
 * (x * k on the path where x was chosen, 89 * k on the other), where they cannot be
 * if-converted any more ("could trap") and the loop stays scalar; without AVX-512's masked
 * operations, always. So this header has no ternaries; GCC turns these into blends. */
COIL_M_INLINE uint32_t
coil_m_selectu(int c, uint32_t a, uint32_t b)
{
  uint32_t m = 0u - (uint32_t)c;
  return (a & m) | (b & ~m);
}

COIL_M_INLINE float
coil_m_select(int c, float a, float b)
{
  return coil_m_float(coil_m_selectu(c, coil_m_bits(a), coil_m_bits(b)));
}

/* rint(v) for |v| < 2^22, as a float and in *n: adding 1.5 * 2^23 leaves the integer in the
 * low mantissa bits (rounded to nearest even in the default rounding mode). rintf would be
 * one instruction from SSE4.1 on but a call below it, which stops the vectorizer; and with no
 * float-to-int conversion, NaN or a huge v give a meaningless integer, not undefined behaviour. */
COIL_M_INLINE float
coil_m_round(float v, int32_t *n)
{
  float t = v + 0x1.8p23f;
  *n = (int32_t)(coil_m_bits(t) - 0x4b400000u);
  return t - 0x1.8p23f;
}

/* t (>= 0 or NaN) with the sign of s. */
COIL_M_INLINE float
coil_m_with_sign(float t, float s)
{
  return coil_m_float(coil_m_bits(t) | (coil_m_bits(s) & 0x80000000u));
}

/* ---- exp ---- */

/* e^x = 2^n e^r, n = rint(x / ln2), |r| <= ln2/2; ln2 = LN2_HI + LN2_LO where LN2_HI has
 * 16 significant bits, so n * LN2_HI is exact for |n| < 2^8 and x - n * LN2_HI loses nothing.
 * e^r = 1 + r + r^2 P(r), P a degree-4 minimax fit (relative error 8.5e-9 on [-ln2/2, ln2/2]). */
#define COIL_M_LOG2E 0x1.715476p+0f
#define COIL_M_LN2_HI 0x1.62e4p-1f
#define COIL_M_LN2_LO 0x1.7f7d1cp-20f

COIL_M_INLINE float
coil_m_exp_poly(float x, int32_t *n_out)
{
  float n = coil_m_round(x * COIL_M_LOG2E, n_out);
  float r = COIL_M_FMA(-n, COIL_M_LN2_HI, x); /* exact, fused or not */
  r = COIL_M_FMA(-n, COIL_M_LN2_LO, r);
  float p = COIL_M_FMA(0x1.6daf68p-10f, r, 0x1.121aacp-7f);
  p = COIL_M_FMA(p, r, 0x1.555468p-5f);
  p = COIL_M_FMA(p, r, 0x1.5554cep-3f);
  p = COIL_M_FMA(p, r, 0x1p-1f);
  return 1.0f + COIL_M_FMA(r * r, p, r);
}

/* e^x for x in [-87, 88] (callers clamp; no NaN): the result is a normal float, one scaling. */
COIL_M_INLINE float
coil_m_exp_normal(float x)
{
  int32_t n;
  float e = coil_m_exp_poly(x, &n);
  return e * coil_m_pow2(n);
}

/* e^x for x in [-104, 89] (callers clamp; no NaN). n lies in [-150, 128], beyond one float's
 * exponent range, so 2^n is applied in two halves: e * 2^(n/2) is exact and normal, and the
 * second multiply rounds once, to a subnormal, a normal, or inf. */
COIL_M_INLINE float
coil_m_exp_full(float x)
{
  int32_t n;
  float e = coil_m_exp_poly(x, &n);
  int32_t n1 = n >> 1; /* GCC shifts signed integers arithmetically */
  return e * coil_m_pow2(n1) * coil_m_pow2(n - n1);
}

/* e^x. Below -104 the result rounds to 0 and above 89 to inf, so clamping there keeps n in
 * range without changing any result; the clamp turns NaN into 89, hence the last select. */
COIL_M_INLINE float
coil_expf(float x)
{
  float xc = coil_m_select(x < 89.0f, x, 89.0f);
  xc = coil_m_select(xc > -104.0f, xc, -104.0f);
  float y = coil_m_exp_full(xc);
  return coil_m_select(x == x, y, x + x);
}

/* ---- log ---- */

/* log(1 + f) - f + f^2/2 = f^3 P(f) for f in [sqrt(1/2) - 1, sqrt(2) - 1], P of degree 8
 * (relative error 4.7e-9 of log(1 + f)). */
COIL_M_INLINE float
coil_m_log_tail(float f)
{
  float p = COIL_M_FMA(0x1.3bd144p-4f, f, -0x1.e919p-4f);
  p = COIL_M_FMA(p, f, 0x1.db7b62p-4f);
  p = COIL_M_FMA(p, f, -0x1.f9c43ep-4f);
  p = COIL_M_FMA(p, f, 0x1.23d366p-3f);
  p = COIL_M_FMA(p, f, -0x1.557078p-3f);
  p = COIL_M_FMA(p, f, 0x1.999decp-3f);
  p = COIL_M_FMA(p, f, -0x1.ffffaap-3f);
  p = COIL_M_FMA(p, f, 0x1.555554p-2f);
  return f * f * f * p;
}

/* Splits a positive normal x into 2^k * m with m in [sqrt(1/2), sqrt(2)) (the bias trick:
 * subtracting the bits of sqrt(1/2) moves the binade boundary there); returns m - 1, exact. */
COIL_M_INLINE float
coil_m_log_split(float x, int32_t *k)
{
  uint32_t ix = coil_m_bits(x) - 0x3f3504f3u;
  *k = (int32_t)ix >> 23;
  return coil_m_float((ix & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
}

/* log x = k ln2 + log(1 + f); c is a correction added to log(1 + f) before the sum
 * (k LN2_LO and, for log1p, the rounding error of 1 + x). */
COIL_M_INLINE float
coil_m_log_join(float f, int32_t k, float c)
{
  float kf = (float)k;
  float hfsq = 0.5f * f * f;
  float t = coil_m_log_tail(f) + COIL_M_FMA(kf, COIL_M_LN2_LO, c);
  return COIL_M_FMA(kf, COIL_M_LN2_HI, f - (hfsq - t));
}

COIL_M_INLINE float
coil_logf(float x)
{
  float scale = coil_m_select(x < 0x1p-126f, 0x1p23f, 1.0f); /* subnormals; 0, x < 0: below */
  int32_t k;
  float f = coil_m_log_split(x * scale, &k);
  k -= (int32_t)(coil_m_bits(scale) >> 23) - 127;
  float y = coil_m_log_join(f, k, 0.0f);
  y = coil_m_select(x < INFINITY, y, x + x); /* inf, NaN */
  y = coil_m_select(x == 0.0f, -INFINITY, y);
  return coil_m_select(x < 0.0f, NAN, y);
}

/* log(1 + x). u = 1 + x rounds; log(1 + x) = log u + c/u with c = (1 + x) - u recovered
 * exactly (from u - 1 below 2, from u - x above). u >= 2^-24 for x > -1, so u is normal. */
COIL_M_INLINE float
coil_log1pf(float x)
{
  float u = 1.0f + x;
  float c_below2 = x - (u - 1.0f), c_above2 = 1.0f - (u - x);
  float c = coil_m_select(u < 2.0f, c_below2, c_above2);
  int32_t k;
  float f = coil_m_log_split(u, &k);
  float y = coil_m_log_join(f, k, c / u);
  y = coil_m_select(fabsf(x) < 0x1p-24f, x, y); /* log1p(x) rounds to x; keeps -0 */
  y = coil_m_select(x < INFINITY, y, x + x);    /* inf, NaN */
  y = coil_m_select(x == -1.0f, -INFINITY, y);
  return coil_m_select(x < -1.0f, NAN, y);
}

/* ---- tanh, sigmoid, erf ---- */

/* tanh x = sign(x) tanh |x|. |x| < 0.625: tanh a = a + a^3 P(a^2), P of degree 4 (relative
 * error 1.2e-8). Otherwise 1 - 2 / (e^2a + 1); a is clamped at 9.5, where tanh already
 * rounds to 1. NaN takes the polynomial side and stays NaN. */
COIL_M_INLINE float
coil_tanhf(float x)
{
  float a = fabsf(x);
  float z = a * a;
  float p = COIL_M_FMA(-0x1.835192p-8f, z, 0x1.5566b4p-6f);
  p = COIL_M_FMA(p, z, -0x1.b8c6p-5f);
  p = COIL_M_FMA(p, z, 0x1.110b96p-3f);
  p = COIL_M_FMA(p, z, -0x1.55554ap-2f);
  float small = COIL_M_FMA(a * z, p, a);
  float ac = coil_m_select(a < 9.5f, a, 9.5f);
  float e = coil_m_exp_normal(ac + ac);
  float big = 1.0f - 2.0f / (e + 1.0f);
  return coil_m_with_sign(coil_m_select(a >= 0.625f, big, small), x);
}

/* 1 / (1 + e^-x), computed from e = e^-|x| <= 1 so nothing overflows: 1 / (1 + e) for x >= 0,
 * e / (1 + e) for x < 0 (down through the subnormals). */
COIL_M_INLINE float
coil_sigmoidf(float x)
{
  float a = fabsf(x);
  float ac = coil_m_select(a < 104.0f, a, 104.0f);
  float e = coil_m_exp_full(-ac);
  float y = coil_m_select(x < 0.0f, e, 1.0f) / (1.0f + e);
  return coil_m_select(x == x, y, x + x);
}

/* erf x = sign(x) erf |x|. |x| < 0.921875: erf a = a + a P(a^2), P of degree 5 (relative
 * error 1.9e-8). Otherwise erf a = 1 - e^Q(a), Q a degree-8 fit of log erfc on [0.92, 4]
 * weighted by erfc/erf (the error it makes in erf, 1.6e-9); a is clamped at 4, where erf
 * rounds to 1. e^Q is at most 0.2, so the subtraction from 1 loses nothing. */
COIL_M_INLINE float
coil_erff(float x)
{
  float a = fabsf(x);
  float z = a * a;
  float p = COIL_M_FMA(-0x1.3a61dep-11f, z, 0x1.475dfcp-8f);
  p = COIL_M_FMA(p, z, -0x1.b69504p-6f);
  p = COIL_M_FMA(p, z, 0x1.ce1b8p-4f);
  p = COIL_M_FMA(p, z, -0x1.8126f0p-2f);
  p = COIL_M_FMA(p, z, 0x1.06eba6p-3f);
  float small = COIL_M_FMA(a, p, a);
  float ac = coil_m_select(a < 4.0f, a, 4.0f);
  float q = COIL_M_FMA(0x1.b7d866p-20f, ac, -0x1.824f4ep-15f);
  q = COIL_M_FMA(q, ac, 0x1.38b688p-11f);
  q = COIL_M_FMA(q, ac, -0x1.37b896p-8f);
  q = COIL_M_FMA(q, ac, 0x1.b0ab4cp-6f);
  q = COIL_M_FMA(q, ac, -0x1.c2c31p-4f);
  q = COIL_M_FMA(q, ac, -0x1.438414p-1f);
  q = COIL_M_FMA(q, ac, -0x1.215516p+0f);
  q = COIL_M_FMA(q, ac, 0x1.46efdap-12f);
  float big = 1.0f - coil_m_exp_normal(q);
  return coil_m_with_sign(coil_m_select(a >= 0.921875f, big, small), x);
}

/* ---- sin, cos ---- */

/* |x| = n pi/2 + r (Cody-Waite). n = rint(|x| 2/pi) is computed in float, so past |x| ~ 1e5
 * its rounding can put r a little outside [-pi/4, pi/4]; the polynomials below hold to
 * |r| <= 0.9, which covers |x| up to COIL_M_TRIG_MAX. With FMA, pi/2 = C1 + C2 + C3 in three
 * full floats: |x| - n C1 is exact and each later step rounds once relative to r, accurate
 * to 2 ulp up to COIL_M_TRIG_MAX = 2^21 (no float there is closer than 4e-9 to a multiple
 * of pi/2). Without FMA, four 11-bit parts keep n Ck exact for n < 2^13 (|x| < 12868) and a
 * full fifth part takes the rest. Past COIL_M_TRIG_MAX the reduction cannot be trusted
 * (that needs Payne-Hanek and a table of 2/pi): r is taken as 0, so the result is finite and
 * within [-1, 1] but not accurate. */
#if defined(FP_FAST_FMAF)
#define COIL_M_TRIG_MAX 0x1p21f
#else
#define COIL_M_TRIG_MAX 0x1.9p13f
#endif

typedef struct
{
  float r;   /* |x| - n pi/2, in [-0.9, 0.9] */
  int32_t q; /* n mod 4 */
} coil_m_reduced;

COIL_M_INLINE coil_m_reduced
coil_m_reduce(float a)
{
  coil_m_reduced red;
  int32_t ni;
  float n = coil_m_round(a * 0x1.45f306p-1f, &ni); /* |x| 2/pi < 2^22 up to COIL_M_TRIG_MAX */
#if defined(FP_FAST_FMAF)
  float r = fmaf(-n, 0x1.921fb6p+0f, a);
  r = fmaf(-n, -0x1.777a5cp-25f, r);
  r = fmaf(-n, -0x1.ee59dap-50f, r);
#else
  float r = a - n * 0x1.92p+0f;
  r = r - n * 0x1.fb4p-12f;
  r = r - n * 0x1.444p-24f;
  r = r - n * 0x1.68cp-39f;
  r = r - n * 0x1.1a6264p-54f;
#endif
  red.r = coil_m_select(a <= COIL_M_TRIG_MAX, r, 0.0f * r); /* 0, or NaN for NaN and inf */
  red.q = ni & 3;
  return red;
}

/* sin r = r + r^3 S(r^2) with S of degree 3, cos r = 1 - r^2/2 + r^4 C(r^2) with C of
 * degree 2, fitted on |r| <= 0.9 (relative errors 4.9e-11 and 2.2e-9). In cos, 1 - r^2/2
 * would round twice (r^2, then the difference, together up to 0.8 ulp), so w = 1 - h for
 * h = r^2/2 is corrected by its exact error (1 - w) - h and, with FMA, by h's own. */
COIL_M_INLINE float
coil_m_sin_poly(float r)
{
  float z = r * r;
  float s = COIL_M_FMA(0x1.6bf17p-19f, z, -0x1.a00c3cp-13f);
  s = COIL_M_FMA(s, z, 0x1.111106p-7f);
  s = COIL_M_FMA(s, z, -0x1.555556p-3f);
  return COIL_M_FMA(r * z, s, r);
}

COIL_M_INLINE float
coil_m_cos_poly(float r)
{
  float z = r * r;
  float c = COIL_M_FMA(0x1.99c8a8p-16f, z, -0x1.6c0d26p-10f);
  c = COIL_M_FMA(c, z, 0x1.55554ep-5f);
  float hr = 0.5f * r;
  float h = hr * r;
#if defined(FP_FAST_FMAF)
  float h_lo = fmaf(hr, r, -h);
#else
  float h_lo = 0.0f;
#endif
  float w = 1.0f - h;
  float w_err = ((1.0f - w) - h) - h_lo;
  return w + COIL_M_FMA(z * z, c, w_err);
}

/* sin x = sign(x) sin |x|; quadrants 1 and 3 take cos r, quadrants 2 and 3 flip the sign. */
COIL_M_INLINE float
coil_sinf(float x)
{
  coil_m_reduced red = coil_m_reduce(fabsf(x));
  float s = coil_m_sin_poly(red.r);
  float c = coil_m_cos_poly(red.r);
  float y = coil_m_select(red.q & 1, c, s);
  uint32_t flip = ((uint32_t)red.q & 2u) << 30;
  return coil_m_float(coil_m_bits(y) ^ flip ^ (coil_m_bits(x) & 0x80000000u));
}

/* cos x = cos |x|; quadrants 1 and 3 take sin r, quadrants 1 and 2 flip the sign. */
COIL_M_INLINE float
coil_cosf(float x)
{
  coil_m_reduced red = coil_m_reduce(fabsf(x));
  float s = coil_m_sin_poly(red.r);
  float c = coil_m_cos_poly(red.r);
  float y = coil_m_select(red.q & 1, s, c);
  uint32_t flip = ((uint32_t)(red.q + 1) & 2u) << 30;
  return coil_m_float(coil_m_bits(y) ^ flip);
}

/* ---- rsqrt ---- */

/* 1/sqrt(x) without sqrtf (which GCC vectorizes only under -fno-math-errno): the bit-trick
 * estimate (relative error 3.4e-2), two Newton steps (1.8e-3, then 4.6e-6), and a last step
 * whose residual 1 - x y^2 is computed with the rounding error of x y folded back in, so only
 * the final multiply-add rounds. Subnormals are scaled by 2^24 first (the result by 2^12). */
COIL_M_INLINE float
coil_rsqrtf(float x)
{
  int sub = x < 0x1p-126f;
  float xs = x * coil_m_select(sub, 0x1p24f, 1.0f);
  float y = coil_m_float(0x5f375a86u - (coil_m_bits(xs) >> 1));
  float hx = 0.5f * xs;
  y = y * (1.5f - hx * y * y);
  y = y * (1.5f - hx * y * y);
  float xy = xs * y;
#if defined(FP_FAST_FMAF)
  float xy_lo = fmaf(xs, y, -xy);
  float h = fmaf(-xy_lo, y, fmaf(-xy, y, 1.0f));
#else
  float h = 1.0f - xy * y;
#endif
  y = COIL_M_FMA(0.5f * y, h, y);
  y = y * coil_m_select(sub, 0x1p12f, 1.0f);
  y = coil_m_select(x > 0.0f, y, NAN);
  y = coil_m_select(x == 0.0f, coil_m_float(coil_m_bits(x) | 0x7f800000u), y); /* +-inf */
  return coil_m_select(x == INFINITY, 0.0f, y);
}

/* ---- f16 and bf16 (uint16_t storage) ---- */

/* The exponent and mantissa move up 13 bits and the exponent is rebased by 112. Inf/NaN
 * (exponent 31) rebase to 255 and NaNs get the quiet bit; zeros and subnormals are made
 * exact by an exact float subtraction: (2^-14 + m 2^-24) - 2^-14. */
COIL_M_INLINE float
coil_f16_to_f32(uint16_t h)
{
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t em = (uint32_t)(h & 0x7fffu) << 13;
  uint32_t e = em & 0x0f800000u;
  uint32_t normal = em + (112u << 23);
  uint32_t infnan = (em + (224u << 23)) | coil_m_selectu(em > 0x0f800000u, 0x00400000u, 0u);
  uint32_t sub = coil_m_bits(coil_m_float(em + (113u << 23)) - coil_m_float(113u << 23));
  uint32_t r = coil_m_selectu(e == 0x0f800000u, infnan, normal);
  r = coil_m_selectu(e == 0, sub, r);
  return coil_m_float(r | sign);
}

/* The result is assembled 13 bits up (at the float's exponent position) and shifted down at
 * the end; selecting among the shifted 16-bit values instead lets GCC narrow the selects to
 * 16-bit lanes, which costs it permutes (1.6 times slower on AVX-512).
 * Normal results: rebase the exponent and round the 13 dropped bits to nearest even with the
 * bias 0xfff + (lowest kept bit); a carry runs into the exponent, up to inf at 65520.
 * Subnormal results (|f| < 2^-14): adding 0.5 puts the f16 quantum 2^-24 at the float's last
 * bit, so the FPU rounds to nearest even. NaNs keep their top payload bits and turn quiet. */
COIL_M_INLINE uint16_t
coil_f32_to_f16(float f)
{
  uint32_t u = coil_m_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  int32_t a = (int32_t)(u & 0x7fffffffu);
  uint32_t odd = ((uint32_t)a >> 13) & 1u;
  uint32_t normal = (uint32_t)a - (112u << 23) + 0xfffu + odd;
  uint32_t sub = (coil_m_bits(coil_m_float((uint32_t)a) + 0.5f) - 0x3f000000u) << 13;
  uint32_t nan = 0x0fc00000u | ((uint32_t)a & 0x007fe000u);
  uint32_t infnan = coil_m_selectu(a > 0x7f800000, nan, 0x0f800000u);
  uint32_t r = coil_m_selectu(a < 0x38800000, sub, normal);
  r = coil_m_selectu(a >= 0x47800000, infnan, r);
  return (uint16_t)((r >> 13) | sign);
}

COIL_M_INLINE float
coil_bf16_to_f32(uint16_t h)
{
  return coil_m_float((uint32_t)h << 16);
}

/* Round the low 16 bits to nearest even (a carry reaches inf from above the largest bf16);
 * NaNs keep their top payload bits and turn quiet. Selected before the shift, as above. */
COIL_M_INLINE uint16_t
coil_f32_to_bf16(float f)
{
  uint32_t u = coil_m_bits(f);
  uint32_t r = u + 0x7fffu + ((u >> 16) & 1u);
  int nan = (u & 0x7fffffffu) > 0x7f800000u;
  return (uint16_t)(coil_m_selectu(nan, u | 0x00400000u, r) >> 16);
}

#endif /* COIL_CPU_MATH_H */
