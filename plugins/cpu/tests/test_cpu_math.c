/* test_cpu_math.c — accuracy of coil_cpu_math.h against libm. Each function runs vectorized,
 * the way generated kernels call it (a `#pragma omp simd` loop over a chunk, built with the
 * generated code's flags: gnu11, -O3 -march=native -fno-math-errno), over every 97th float bit
 * pattern, denser sweeps where the function changes method or the result goes subnormal, and
 * the floats nearest the multiples of pi/2 for sin/cos. The reference is the double-precision
 * libm result rounded to float; errors are counted in float spacings (0.0 and -0.0 one value),
 * and the maximum is logged (run with --verbose to see it) and checked against the header's
 * contract. Special values are checked exactly. The f16/bf16 conversions are checked against
 * a scalar reference written here in doubles: all 65536 patterns decoded, the round trip,
 * every midpoint between neighbours and the floats beside it (ties to even), and a strided
 * sweep over all float patterns. Where the compiler has _Float16 (GCC 12 on x86-64) its
 * conversions are a second reference. The same file, built without FMA, is cpu_math_nofma. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil_cpu_math.h"

enum { CHUNK = 1 << 16 };

static float
fbits(uint32_t u)
{
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint32_t
ubits(float f)
{
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* ---- the functions under test, vectorized over a chunk ---- */

typedef void (*vec_fn)(float *restrict y, const float *restrict x, int n);

#define VEC_KERNEL(name, expr)                                                                \
  static void name(float *restrict y, const float *restrict x, int n)                         \
  {                                                                                           \
    _Pragma("omp simd") for (int i = 0; i < n; i++) y[i] = expr(x[i]);                        \
  }

VEC_KERNEL(vec_exp, coil_expf)
VEC_KERNEL(vec_log, coil_logf)
VEC_KERNEL(vec_log1p, coil_log1pf)
VEC_KERNEL(vec_erf, coil_erff)
VEC_KERNEL(vec_tanh, coil_tanhf)
VEC_KERNEL(vec_sigmoid, coil_sigmoidf)
VEC_KERNEL(vec_sin, coil_sinf)
VEC_KERNEL(vec_cos, coil_cosf)
VEC_KERNEL(vec_rsqrt, coil_rsqrtf)

static double
ref_sigmoid(double x)
{
  return 1.0 / (1.0 + exp(-x));
}

static double
ref_rsqrt(double x)
{
  return 1.0 / sqrt(x);
}

/* ---- error accounting ---- */

/* Float bit patterns as integers that increase with the value; +0 and -0 both map to 0. */
static int64_t
ordered(float f)
{
  uint32_t u = ubits(f);
  return (u & 0x80000000u) ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u;
}

/* The spacing of floats at |v| (the subnormal spacing below 2^-126). */
static double
float_ulp(double v)
{
  int e;
  frexp(v, &e);
  return ldexp(1.0, (e - 1 < -126 ? -126 : e - 1) - 23);
}

#define ULP_FAIL INT64_MAX

typedef struct
{
  const char *name;
  vec_fn fn;
  double (*ref)(double);
  int64_t n;        /* samples checked */
  int64_t max_ulp;  /* largest distance in floats from the rounded reference */
  double max_frac;  /* largest |y - ref| / ulp(ref), from the unrounded reference */
  float worst_x;    /* an input with the largest distance */
  float worst_y;
} stats;

static void
check_chunk(stats *s, const float *x, int n)
{
  static float y[CHUNK];
  s->fn(y, x, n);
  for (int i = 0; i < n; i++) {
    double rd = s->ref((double)x[i]);
    float rf = (float)rd;
    int64_t d;
    if (isnan(rf) || isnan(y[i]))
      d = isnan(rf) && isnan(y[i]) ? 0 : ULP_FAIL;
    else if (isinf(rf) || isinf(y[i]))
      d = rf == y[i] ? 0 : ULP_FAIL;
    else {
      d = llabs(ordered(y[i]) - ordered(rf));
      double frac = fabs((double)y[i] - rd) / float_ulp(rd);
      if (frac > s->max_frac)
        s->max_frac = frac;
    }
    if (d > s->max_ulp) {
      s->max_ulp = d;
      s->worst_x = x[i];
      s->worst_y = y[i];
    }
  }
  s->n += n;
}

/* Every stride-th bit pattern between two patterns (inclusive; for negative floats the
 * pattern grows with the magnitude, so the ends may come in either order). */
static void
sweep(stats *s, uint32_t lo, uint32_t hi, uint32_t stride)
{
  static float x[CHUNK];
  int n = 0;
  if (lo > hi) {
    uint32_t t = lo;
    lo = hi;
    hi = t;
  }
  for (uint64_t u = lo; u <= hi; u += stride) {
    x[n++] = fbits((uint32_t)u);
    if (n == CHUNK) {
      check_chunk(s, x, n);
      n = 0;
    }
  }
  if (n)
    check_chunk(s, x, n);
}

/* Every pattern within `width` floats of v, both signs. */
static void
around(stats *s, float v, uint32_t width)
{
  uint32_t u = ubits(fabsf(v));
  uint32_t lo = u > width ? u - width : 0;
  sweep(s, lo, u + width, 1);
  sweep(s, lo | 0x80000000u, (u + width) | 0x80000000u, 1);
}

static void
report(const stats *s, int64_t limit)
{
  if (s->max_ulp == ULP_FAIL)
    cr_log_info("%-8s %10lld samples: WRONG SPECIAL at x=%a (got %a)", s->name,
                (long long)s->n, (double)s->worst_x, (double)s->worst_y);
  else
    cr_log_info("%-8s %10lld samples: max %lld ulp (%.3f from the exact value), worst x=%a",
                s->name, (long long)s->n, (long long)s->max_ulp, s->max_frac,
                (double)s->worst_x);
  cr_expect(s->max_ulp <= limit, "%s: %lld ulp at x=%a (got %a, want %a)", s->name,
            (long long)s->max_ulp, (double)s->worst_x, (double)s->worst_y,
            (double)(float)s->ref((double)s->worst_x));
}

/* The step of the sweeps over all floats, and a factor on the steps of the denser ones. The
 * build without FMA (cpu_math_nofma) and sanitized builds (which check the code, not the
 * numbers, at a fraction of the speed) take bigger steps to keep their runs short. */
#if defined(__SANITIZE_ADDRESS__) && !defined(STRIDE)
#define STRIDE 997
#define DENSE 7
#endif
#ifndef STRIDE
#define STRIDE 97
#endif
#ifndef DENSE
#define DENSE 1
#endif

static const double HALF_PI = 1.57079632679489661923;

static void
sweep_all(stats *s)
{
  sweep(s, 0, 0xffffffffu, STRIDE);
}

/* ---- accuracy over the whole float range ---- */

Test(cpu_math, expf)
{
  stats s = { .name = "expf", .fn = vec_exp, .ref = exp };
  sweep_all(&s);
  /* results in the subnormals (every pattern), the overflow edge, the reduction at 0 */
  sweep(&s, ubits(-104.0f), ubits(-87.0f), DENSE);
  around(&s, 88.72283935546875f, 4096);
  around(&s, 0.0f, 1 << 20);
  report(&s, 2);
}

Test(cpu_math, logf)
{
  stats s = { .name = "logf", .fn = vec_log, .ref = log };
  sweep_all(&s);
  sweep(&s, ubits(0.5f), ubits(2.0f), 3 * DENSE); /* near 1, where log cancels */
  sweep(&s, 0, 0x00800000u, 7 * DENSE);          /* subnormals */
  report(&s, 2);
}

Test(cpu_math, log1pf)
{
  stats s = { .name = "log1pf", .fn = vec_log1p, .ref = log1p };
  sweep_all(&s);
  sweep(&s, ubits(-1.0f), ubits(-0.25f), 3 * DENSE);
  sweep(&s, ubits(0x1p-26f), ubits(4.0f), 29 * DENSE);
  around(&s, 1.0f, 1 << 16);
  report(&s, 2);
}

Test(cpu_math, erff)
{
  stats s = { .name = "erff", .fn = vec_erf, .ref = erf };
  sweep_all(&s);
  sweep(&s, ubits(0.5f), ubits(4.5f), 3 * DENSE);
  around(&s, 0.921875f, 1 << 16);
  report(&s, 2);
}

Test(cpu_math, tanhf)
{
  stats s = { .name = "tanhf", .fn = vec_tanh, .ref = tanh };
  sweep_all(&s);
  sweep(&s, ubits(0.25f), ubits(10.0f), 5 * DENSE);
  report(&s, 2);
}

Test(cpu_math, sigmoidf)
{
  stats s = { .name = "sigmoidf", .fn = vec_sigmoid, .ref = ref_sigmoid };
  sweep_all(&s);
  sweep(&s, ubits(-110.0f), ubits(-80.0f), DENSE); /* subnormal results */
  sweep(&s, ubits(0.25f), ubits(20.0f), 5 * DENSE);
  sweep(&s, ubits(-0.25f), ubits(-20.0f), 5 * DENSE);
  report(&s, 2);
}

Test(cpu_math, rsqrtf)
{
  stats s = { .name = "rsqrtf", .fn = vec_rsqrt, .ref = ref_rsqrt };
  sweep_all(&s);
  sweep(&s, ubits(1.0f), ubits(4.0f), DENSE); /* one period of the estimate, every pattern */
  sweep(&s, 0, 0x00800000u, 7 * DENSE);
  report(&s, 1);
}

/* sin/cos: |x| <= 1e4, and every float within 64 of each multiple of pi/2 there (where the
 * reduction cancels most). From 1e4 to COIL_M_TRIG_MAX, outside the contract but still
 * reduced accurately, the same bound is checked separately. */
static void
trig(stats *s, stats *far)
{
  uint32_t top = ubits(1e4f);
  sweep(s, 0, top, STRIDE);
  sweep(s, 0x80000000u, top | 0x80000000u, STRIDE);
  sweep(s, ubits(0.5f), ubits(8.0f), 3 * DENSE);
  for (int k = 1; k * HALF_PI <= 1e4; k += DENSE)
    around(s, (float)(k * HALF_PI), 64);
  sweep(far, top, ubits(COIL_M_TRIG_MAX), STRIDE);
  for (int k = 6400; k * HALF_PI <= COIL_M_TRIG_MAX; k += 97)
    around(far, (float)(k * HALF_PI), 8);
}

Test(cpu_math, sinf)
{
  stats s = { .name = "sinf", .fn = vec_sin, .ref = sin };
  stats far = { .name = "sinf>1e4", .fn = vec_sin, .ref = sin };
  trig(&s, &far);
  report(&s, 2);
  report(&far, 2);
}

Test(cpu_math, cosf)
{
  stats s = { .name = "cosf", .fn = vec_cos, .ref = cos };
  stats far = { .name = "cosf>1e4", .fn = vec_cos, .ref = cos };
  trig(&s, &far);
  report(&s, 2);
  report(&far, 2);
}

/* ---- special values, exactly ---- */

static int
same(float a, float b)
{
  return (isnan(a) && isnan(b)) || ubits(a) == ubits(b);
}

#define EXPECT_SAME(call, want)                                                               \
  do {                                                                                        \
    float got_ = (call), want_ = (want);                                                      \
    cr_expect(same(got_, want_), "%s = %a, want %a", #call, (double)got_, (double)want_);     \
  } while (0)

Test(cpu_math, specials)
{
  const float inf = INFINITY, nan = NAN, tiny = 0x1p-149f;
  EXPECT_SAME(coil_expf(-inf), 0.0f);
  EXPECT_SAME(coil_expf(inf), inf);
  EXPECT_SAME(coil_expf(nan), nan);
  EXPECT_SAME(coil_expf(-nan), nan);
  EXPECT_SAME(coil_expf(0.0f), 1.0f);
  EXPECT_SAME(coil_expf(-0.0f), 1.0f);
  EXPECT_SAME(coil_expf(0x1.62e42ep+6f), (float)exp(0x1.62e42ep+6)); /* the largest finite */
  EXPECT_SAME(coil_expf(0x1.62e430p+6f), inf);
  EXPECT_SAME(coil_expf(1000.0f), inf);
  EXPECT_SAME(coil_expf(FLT_MAX), inf);
  EXPECT_SAME(coil_expf(-103.0f), (float)exp(-103.0));
  EXPECT_SAME(coil_expf(-103.97f), tiny); /* rounds up to the smallest subnormal */
  EXPECT_SAME(coil_expf(-104.0f), 0.0f);
  EXPECT_SAME(coil_expf(-FLT_MAX), 0.0f);

  EXPECT_SAME(coil_logf(0.0f), -inf);
  EXPECT_SAME(coil_logf(-0.0f), -inf);
  EXPECT_SAME(coil_logf(-1.0f), nan);
  EXPECT_SAME(coil_logf(-tiny), nan);
  EXPECT_SAME(coil_logf(-inf), nan);
  EXPECT_SAME(coil_logf(inf), inf);
  EXPECT_SAME(coil_logf(nan), nan);
  EXPECT_SAME(coil_logf(1.0f), 0.0f);
  EXPECT_SAME(coil_logf(tiny), (float)log(0x1p-149));
  EXPECT_SAME(coil_logf(FLT_MAX), (float)log(FLT_MAX));

  EXPECT_SAME(coil_log1pf(-1.0f), -inf);
  EXPECT_SAME(coil_log1pf(-1.5f), nan);
  EXPECT_SAME(coil_log1pf(-inf), nan);
  EXPECT_SAME(coil_log1pf(inf), inf);
  EXPECT_SAME(coil_log1pf(nan), nan);
  EXPECT_SAME(coil_log1pf(0.0f), 0.0f);
  EXPECT_SAME(coil_log1pf(-0.0f), -0.0f);
  EXPECT_SAME(coil_log1pf(tiny), tiny);
  EXPECT_SAME(coil_log1pf(-tiny), -tiny);
  EXPECT_SAME(coil_log1pf(FLT_MAX), (float)log1p(FLT_MAX));

  EXPECT_SAME(coil_tanhf(inf), 1.0f);
  EXPECT_SAME(coil_tanhf(-inf), -1.0f);
  EXPECT_SAME(coil_tanhf(10.0f), 1.0f);
  EXPECT_SAME(coil_tanhf(-1e30f), -1.0f);
  EXPECT_SAME(coil_tanhf(nan), nan);
  EXPECT_SAME(coil_tanhf(0.0f), 0.0f);
  EXPECT_SAME(coil_tanhf(-0.0f), -0.0f);
  EXPECT_SAME(coil_tanhf(-tiny), -tiny);

  EXPECT_SAME(coil_erff(inf), 1.0f);
  EXPECT_SAME(coil_erff(-inf), -1.0f);
  EXPECT_SAME(coil_erff(5.0f), 1.0f);
  EXPECT_SAME(coil_erff(-3.95f), -1.0f);
  EXPECT_SAME(coil_erff(nan), nan);
  EXPECT_SAME(coil_erff(0.0f), 0.0f);
  EXPECT_SAME(coil_erff(-0.0f), -0.0f);

  EXPECT_SAME(coil_sigmoidf(-inf), 0.0f);
  EXPECT_SAME(coil_sigmoidf(inf), 1.0f);
  EXPECT_SAME(coil_sigmoidf(nan), nan);
  EXPECT_SAME(coil_sigmoidf(0.0f), 0.5f);
  EXPECT_SAME(coil_sigmoidf(-0.0f), 0.5f);
  EXPECT_SAME(coil_sigmoidf(20.0f), (float)(1 / (1 + exp(-20.0))));
  EXPECT_SAME(coil_sigmoidf(-100.0f), (float)exp(-100.0)); /* subnormal, not flushed */
  EXPECT_SAME(coil_sigmoidf(-200.0f), 0.0f);

  EXPECT_SAME(coil_sinf(0.0f), 0.0f);
  EXPECT_SAME(coil_sinf(-0.0f), -0.0f);
  EXPECT_SAME(coil_sinf(-tiny), -tiny);
  EXPECT_SAME(coil_sinf(inf), nan);
  EXPECT_SAME(coil_sinf(-inf), nan);
  EXPECT_SAME(coil_sinf(nan), nan);
  EXPECT_SAME(coil_cosf(0.0f), 1.0f);
  EXPECT_SAME(coil_cosf(-0.0f), 1.0f);
  EXPECT_SAME(coil_cosf(inf), nan);
  EXPECT_SAME(coil_cosf(nan), nan);
  /* past the trusted range: finite and in [-1, 1] */
  for (float x = 0x1p22f; x < 1e38f; x *= 3.7f) {
    cr_expect(fabsf(coil_sinf(x)) <= 1.0f && fabsf(coil_sinf(-x)) <= 1.0f, "sin %a", x);
    cr_expect(fabsf(coil_cosf(x)) <= 1.0f && fabsf(coil_cosf(-x)) <= 1.0f, "cos %a", x);
  }

  EXPECT_SAME(coil_rsqrtf(0.0f), inf);
  EXPECT_SAME(coil_rsqrtf(-0.0f), -inf);
  EXPECT_SAME(coil_rsqrtf(inf), 0.0f);
  EXPECT_SAME(coil_rsqrtf(-1.0f), nan);
  EXPECT_SAME(coil_rsqrtf(-inf), nan);
  EXPECT_SAME(coil_rsqrtf(nan), nan);
  EXPECT_SAME(coil_rsqrtf(4.0f), 0.5f);
  EXPECT_SAME(coil_rsqrtf(tiny), 0x1p74f * 0x1.6a09e6p0f);
}

/* ---- f16 and bf16 ---- */

/* Round |f| to a binary format with `mbits` stored mantissa bits, smallest normal exponent
 * emin and `ebits` exponent bits, to nearest even, in doubles (exact for every float). */
static uint16_t
ref_encode(float f, int mbits, int emin, int ebits)
{
  uint32_t u = ubits(f);
  uint16_t sign = (uint16_t)((u >> 31) << 15);
  uint32_t inf = ((1u << ebits) - 1) << mbits;
  if (isnan(f))
    return (uint16_t)(sign | inf | (1u << (mbits - 1)) | ((u & 0x7fffffu) >> (23 - mbits)));
  if (isinf(f))
    return (uint16_t)(sign | inf);
  double a = fabs((double)f);
  if (a == 0)
    return sign;
  int e;
  frexp(a, &e);
  int ex = e - 1 < emin ? emin : e - 1; /* a < 2^(ex+1); the quantum is 2^(ex-mbits) */
  double m = nearbyint(ldexp(a, mbits - ex));
  uint32_t bits = (uint32_t)m; /* subnormal */
  if (m >= (1u << mbits))
    bits = ((uint32_t)(ex - emin + 1) << mbits) + (uint32_t)m - (1u << mbits);
  return (uint16_t)(sign | (bits >= inf ? inf : bits));
}

static uint16_t
ref_f32_to_f16(float f)
{
  return ref_encode(f, 10, -14, 5);
}

static uint16_t
ref_f32_to_bf16(float f)
{
  return ref_encode(f, 7, -126, 8);
}

static double
ref_f16_value(uint16_t h)
{
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

static void
vec_f16_to_f32(float *restrict y, const uint16_t *restrict h, int n)
{
#pragma omp simd
  for (int i = 0; i < n; i++)
    y[i] = coil_f16_to_f32(h[i]);
}

static void
vec_f32_to_f16(uint16_t *restrict h, const float *restrict x, int n)
{
#pragma omp simd
  for (int i = 0; i < n; i++)
    h[i] = coil_f32_to_f16(x[i]);
}

static void
vec_bf16_to_f32(float *restrict y, const uint16_t *restrict h, int n)
{
#pragma omp simd
  for (int i = 0; i < n; i++)
    y[i] = coil_bf16_to_f32(h[i]);
}

static void
vec_f32_to_bf16(uint16_t *restrict h, const float *restrict x, int n)
{
#pragma omp simd
  for (int i = 0; i < n; i++)
    h[i] = coil_f32_to_bf16(x[i]);
}

static uint16_t all16[65536];

Test(cpu_math, f16_to_f32_exhaustive)
{
  static float y[65536];
  for (int i = 0; i < 65536; i++)
    all16[i] = (uint16_t)i;
  vec_f16_to_f32(y, all16, 65536);
  for (int i = 0; i < 65536; i++) {
    double want = ref_f16_value((uint16_t)i);
    if (isnan(want)) {
      uint32_t u = ubits(y[i]);
      uint32_t want_bits =
        ((uint32_t)(i & 0x8000) << 16) | 0x7fc00000u | ((uint32_t)(i & 0x3ff) << 13);
      cr_expect(u == want_bits, "f16 %04x -> %08x, want quiet NaN %08x", i, u, want_bits);
    } else {
      cr_expect(ubits(y[i]) == ubits((float)want), "f16 %04x -> %a, want %a", i, (double)y[i],
                want);
    }
  }
}

Test(cpu_math, bf16_to_f32_exhaustive)
{
  static float y[65536];
  for (int i = 0; i < 65536; i++)
    all16[i] = (uint16_t)i;
  vec_bf16_to_f32(y, all16, 65536);
  for (int i = 0; i < 65536; i++)
    cr_expect(ubits(y[i]) == (uint32_t)i << 16, "bf16 %04x -> %08x", i, ubits(y[i]));
}

/* Converts x[0..n) with `conv` and compares with `ref`, bit for bit. Returns mismatches. */
static int64_t
check_encode(void (*conv)(uint16_t *restrict, const float *restrict, int),
             uint16_t (*ref)(float), const char *name, const float *x, int n)
{
  static uint16_t h[CHUNK];
  int64_t bad = 0;
  for (int off = 0; off < n; off += CHUNK) {
    int m = n - off < CHUNK ? n - off : CHUNK;
    conv(h, x + off, m);
    for (int i = 0; i < m; i++) {
      uint16_t want = ref(x[off + i]);
      if (h[i] != want && bad++ < 10)
        cr_log_error("%s(%a [%08x]) = %04x, want %04x", name, (double)x[off + i],
                     ubits(x[off + i]), h[i], want);
    }
  }
  return bad;
}

/* The round trip of every pattern, every midpoint between neighbouring values (both signs;
 * the last one between the largest finite value and 2^(emax+1), where rounding turns to inf)
 * and the floats on either side of it, then every 61st float pattern. */
static void
check_format(void (*to16)(uint16_t *restrict, const float *restrict, int),
             void (*from16)(float *restrict, const uint16_t *restrict, int),
             uint16_t (*ref)(float), uint16_t inf, uint16_t quiet_bit, const char *name)
{
  static float v[65536], x[3 * 2 * 32768];
  static uint16_t back[65536];
  for (int i = 0; i < 65536; i++)
    all16[i] = (uint16_t)i;
  from16(v, all16, 65536);
  to16(back, v, 65536);
  for (int i = 0; i < 65536; i++) {
    uint16_t want = isnan(v[i]) ? (uint16_t)(i | quiet_bit) : (uint16_t)i;
    cr_expect(back[i] == want, "%s round trip %04x -> %a -> %04x", name, i, (double)v[i], back[i]);
  }
  int n = 0;
  for (int sign = 0; sign < 2; sign++)
    for (uint32_t i = 0; i < inf; i++) {
      double lo = v[i];
      /* the value after the largest finite one: its binade's power of two, doubled */
      double hi = i + 1 < inf ? (double)v[i + 1] : 2.0 * ldexp(1.0, ilogb(v[i]));
      float mid = (float)((lo + hi) / 2); /* exact: the formats are narrower than float */
      mid = sign ? -mid : mid;
      x[n++] = mid;
      x[n++] = nextafterf(mid, 0.0f);
      x[n++] = nextafterf(mid, 2.0f * mid);
    }
  cr_expect(check_encode(to16, ref, name, x, n) == 0, "%s: midpoints", name);
  int64_t bad = 0;
  static float xs[CHUNK];
  int m = 0;
  for (uint64_t u = 0; u <= 0xffffffffu; u += 61 * DENSE) {
    xs[m++] = fbits((uint32_t)u);
    if (m == CHUNK) {
      bad += check_encode(to16, ref, name, xs, m);
      m = 0;
    }
  }
  bad += check_encode(to16, ref, name, xs, m);
  cr_expect(bad == 0, "%s: %lld mismatches in the sweep", name, (long long)bad);
}

Test(cpu_math, f32_to_f16)
{
  check_format(vec_f32_to_f16, vec_f16_to_f32, ref_f32_to_f16, 0x7c00, 0x0200, "f32_to_f16");
  EXPECT_SAME(coil_f16_to_f32(coil_f32_to_f16(65519.996f)), 65504.0f);
  cr_expect(coil_f32_to_f16(65520.0f) == 0x7c00);
  cr_expect(coil_f32_to_f16(-1e10f) == 0xfc00);
  cr_expect(coil_f32_to_f16(0x1p-25f) == 0x0000);            /* tie to even: 0 */
  cr_expect(coil_f32_to_f16(0x1.000002p-25f) == 0x0001);     /* above the tie */
  cr_expect(coil_f32_to_f16(0x1.8p-24f) == 0x0002);          /* tie to even: 2 */
  cr_expect(coil_f32_to_f16(0x1.ffcp-15f) == 0x0400);        /* rounds up to the smallest normal */
  cr_expect(coil_f32_to_f16(1.0f + 0x1p-11f) == 0x3c00);     /* tie to even: 1 */
  cr_expect(coil_f32_to_f16(1.0f + 0x3p-11f) == 0x3c02);     /* tie to even: 1 + 2^-9 */
}

Test(cpu_math, f32_to_bf16)
{
  check_format(vec_f32_to_bf16, vec_bf16_to_f32, ref_f32_to_bf16, 0x7f80, 0x0040, "f32_to_bf16");
  cr_expect(coil_f32_to_bf16(FLT_MAX) == 0x7f80);
  cr_expect(coil_f32_to_bf16(0x1.fep127f) == 0x7f7f);
  cr_expect(coil_f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80);     /* tie to even */
  cr_expect(coil_f32_to_bf16(1.0f + 0x3p-8f) == 0x3f82);
  cr_expect(coil_f32_to_bf16(0x1p-149f) == 0x0000);          /* f32 subnormals round too */
  cr_expect(coil_f32_to_bf16(0x1p-133f) == 0x0001);
}

#if defined(__FLT16_MAX__)
/* The compiler's own conversions (F16C or libgcc) as a second reference, NaNs aside. */
static uint16_t
hw_f32_to_f16(float f)
{
  _Float16 h = (_Float16)f;
  uint16_t u;
  memcpy(&u, &h, sizeof u);
  return u;
}

Test(cpu_math, f16_matches_compiler)
{
  static float x[CHUNK];
  int64_t bad = 0;
  int n = 0;
  for (uint64_t u = 0; u <= 0xffffffffu; u += 1021) {
    float f = fbits((uint32_t)u);
    if (isnan(f))
      continue;
    x[n++] = f;
    if (n == CHUNK) {
      bad += check_encode(vec_f32_to_f16, hw_f32_to_f16, "vs _Float16", x, n);
      n = 0;
    }
  }
  bad += check_encode(vec_f32_to_f16, hw_f32_to_f16, "vs _Float16", x, n);
  cr_expect(bad == 0);
  for (int i = 0; i < 65536; i++) {
    _Float16 h;
    uint16_t b = (uint16_t)i;
    memcpy(&h, &b, sizeof h);
    if (!isnan((float)h))
      cr_expect(ubits(coil_f16_to_f32(b)) == ubits((float)h), "%04x", i);
  }
}
#endif
