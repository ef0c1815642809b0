/* bench_cpu_math.c — time of coil_cpu_math.h against libm, one thread: each function over 16M
 * elements in a `#pragma omp simd` loop, as generated kernels call it, then over a 4096-element
 * block (in L1) repeated to the same count, which shows the compute cost where the 16M loop
 * is bound by memory (libm's "hot" times flatter it: its branches learn the 4096 inputs).
 * Prints ns per element and the speedup over libm (expf etc., which GCC cannot vectorize
 * without -ffast-math; 1/sqrtf does vectorize here, with -fno-math-errno) and, for the f16
 * conversions, over the compiler's _Float16 casts (F16C on x86).
 * Built like generated code (gnu11, -O3 -march=native -fno-math-errno, simd pragmas). GCC
 * must report the loop on each line marked VEC as vectorized: plugins/cpu/math.cmake builds
 * this file with -fopt-info-vec-optimized, and the cpu_math_vectorized_* tests check the
 * marks for this machine, AVX2 and SSE2. By hand:
 *   gcc -std=gnu11 -O3 -march=native -fopenmp-simd -fno-math-errno -fopt-info-vec-optimized \
 *       -Iplugins/cpu -c plugins/cpu/tests/bench_cpu_math.c -o /dev/null
 * Usage: bench_cpu_math [repetitions (default 5, the best is kept)] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coil_cpu_math.h"

enum { N = 1 << 24, BLOCK = 4096 };

/* One timed loop: n elements from `in` to `out`, element types as the loop says. */
typedef void (*loop_fn)(void *restrict out, const void *restrict in, int n);

#define LOOP(name, in_type, out_type, expr)                                                   \
  static void name(void *restrict out, const void *restrict in, int n)                        \
  {                                                                                           \
    out_type *restrict y = out;                                                               \
    const in_type *restrict x = in;                                                           \
    _Pragma("omp simd") for (int i = 0; i < n; i++) y[i] = expr;                              \
  }

LOOP(coil_exp, float, float, coil_expf(x[i]))           /* VEC */
LOOP(coil_log, float, float, coil_logf(x[i]))           /* VEC */
LOOP(coil_log1p, float, float, coil_log1pf(x[i]))       /* VEC */
LOOP(coil_erf, float, float, coil_erff(x[i]))           /* VEC */
LOOP(coil_tanh, float, float, coil_tanhf(x[i]))         /* VEC */
LOOP(coil_sigmoid, float, float, coil_sigmoidf(x[i]))   /* VEC */
LOOP(coil_sin, float, float, coil_sinf(x[i]))           /* VEC */
LOOP(coil_cos, float, float, coil_cosf(x[i]))           /* VEC */
LOOP(coil_rsqrt, float, float, coil_rsqrtf(x[i]))       /* VEC */
LOOP(coil_to_f16, float, uint16_t, coil_f32_to_f16(x[i]))   /* VEC */
LOOP(coil_from_f16, uint16_t, float, coil_f16_to_f32(x[i])) /* VEC */
LOOP(coil_to_bf16, float, uint16_t, coil_f32_to_bf16(x[i])) /* VEC */
LOOP(coil_from_bf16, uint16_t, float, coil_bf16_to_f32(x[i])) /* VEC */
LOOP(copy, float, float, x[i])

LOOP(libm_exp, float, float, expf(x[i]))
LOOP(libm_log, float, float, logf(x[i]))
LOOP(libm_log1p, float, float, log1pf(x[i]))
LOOP(libm_erf, float, float, erff(x[i]))
LOOP(libm_tanh, float, float, tanhf(x[i]))
LOOP(libm_sigmoid, float, float, 1.0f / (1.0f + expf(-x[i])))
LOOP(libm_sin, float, float, sinf(x[i]))
LOOP(libm_cos, float, float, cosf(x[i]))
LOOP(libm_rsqrt, float, float, 1.0f / sqrtf(x[i]))

/* The compiler's own f16 conversions (F16C instructions where the target has them). */
#if defined(__FLT16_MAX__)
static inline uint16_t
float16_bits(float f)
{
  _Float16 h = (_Float16)f;
  uint16_t u;
  memcpy(&u, &h, sizeof u);
  return u;
}

static inline float
float16_value(uint16_t u)
{
  _Float16 h;
  memcpy(&h, &u, sizeof h);
  return (float)h;
}

LOOP(cc_to_f16, float, uint16_t, float16_bits(x[i]))
LOOP(cc_from_f16, uint16_t, float, float16_value(x[i]))
#define CC_TO_F16 cc_to_f16
#define CC_FROM_F16 cc_from_f16
#else
#define CC_TO_F16 NULL
#define CC_FROM_F16 NULL
#endif

static double
now(void)
{
  struct timespec t;
  timespec_get(&t, TIME_UTC);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int reps = 5;

/* Best time per element, in ns: once over all N, or over the first BLOCK N/BLOCK times. */
static double
ns_per_elem(loop_fn f, void *out, const void *in, int hot)
{
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    if (hot)
      for (int b = 0; b < N / BLOCK; b++)
        f(out, in, BLOCK);
    else
      f(out, in, N);
    double t = now() - t0;
    best = t < best ? t : best;
  }
  return best * 1e9 / N;
}

/* Uniform floats in [lo, hi] from a fixed linear congruential sequence. */
static void
fill(float *x, float lo, float hi)
{
  uint64_t s = 0x9e3779b97f4a7c15u;
  for (int i = 0; i < N; i++) {
    s = s * 6364136223846793005u + 1442695040888963407u;
    x[i] = lo + (hi - lo) * (float)(s >> 40) * 0x1p-24f;
  }
}

enum { F32_F32, F32_U16, U16_F32 }; /* element types in -> out */

typedef struct
{
  const char *name;
  loop_fn coil, ref; /* ref: libm, the compiler's _Float16, or none */
  int types;
  float lo, hi;      /* input range (for 16-bit inputs: before conversion with `encode`) */
  loop_fn encode;
} bench;

int
main(int argc, char **argv)
{
  if (argc > 1)
    reps = atoi(argv[1]) > 0 ? atoi(argv[1]) : reps;
  float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
  uint16_t *h = malloc(sizeof(uint16_t) * N);
  if (!x || !y || !h) {
    fprintf(stderr, "bench_cpu_math: out of memory\n");
    return 1;
  }
  const bench benches[] = {
    { "expf", coil_exp, libm_exp, F32_F32, -80.0f, 80.0f, NULL },
    { "logf", coil_log, libm_log, F32_F32, 1e-3f, 1e3f, NULL },
    { "log1pf", coil_log1p, libm_log1p, F32_F32, -0.9f, 100.0f, NULL },
    { "erff", coil_erf, libm_erf, F32_F32, -4.0f, 4.0f, NULL },
    { "tanhf", coil_tanh, libm_tanh, F32_F32, -5.0f, 5.0f, NULL },
    { "sigmoidf", coil_sigmoid, libm_sigmoid, F32_F32, -10.0f, 10.0f, NULL },
    { "sinf", coil_sin, libm_sin, F32_F32, -100.0f, 100.0f, NULL },
    { "cosf", coil_cos, libm_cos, F32_F32, -100.0f, 100.0f, NULL },
    { "rsqrtf", coil_rsqrt, libm_rsqrt, F32_F32, 1e-3f, 1e3f, NULL },
    { "f32_to_f16", coil_to_f16, CC_TO_F16, F32_U16, -7e4f, 7e4f, NULL },
    { "f16_to_f32", coil_from_f16, CC_FROM_F16, U16_F32, -7e4f, 7e4f, coil_to_f16 },
    { "f32_to_bf16", coil_to_bf16, NULL, F32_U16, -1e30f, 1e30f, NULL },
    { "bf16_to_f32", coil_from_bf16, NULL, U16_F32, -1e30f, 1e30f, coil_to_bf16 },
    { "copy", copy, NULL, F32_F32, -1.0f, 1.0f, NULL },
  };
  printf("coil_cpu_math.h vs libm (f16: vs _Float16 casts), 1 thread, %d elements (16M: from "
         "memory; hot: a %d-element block repeated), best of %d, ns/element\n",
         N, BLOCK, reps);
  printf("%-12s %10s %10s %8s %10s %10s %8s\n", "function", "coil 16M", "ref 16M", "speedup",
         "coil hot", "ref hot", "speedup");
  for (size_t b = 0; b < sizeof benches / sizeof benches[0]; b++) {
    const bench *B = &benches[b];
    fill(x, B->lo, B->hi);
    const void *in = x;
    void *out = B->types == F32_U16 ? (void *)h : (void *)y;
    if (B->types == U16_F32) {
      B->encode(h, x, N);
      in = h;
    }
    double c = ns_per_elem(B->coil, out, in, 0), ch = ns_per_elem(B->coil, out, in, 1);
    if (B->ref) {
      double r = ns_per_elem(B->ref, out, in, 0), rh = ns_per_elem(B->ref, out, in, 1);
      printf("%-12s %10.3f %10.3f %7.1fx %10.3f %10.3f %7.1fx\n", B->name, c, r, r / c, ch, rh,
             rh / ch);
    } else {
      printf("%-12s %10.3f %10s %8s %10.3f %10s %8s\n", B->name, c, "-", "-", ch, "-", "-");
    }
  }
  free(x);
  free(y);
  free(h);
  return 0;
}
