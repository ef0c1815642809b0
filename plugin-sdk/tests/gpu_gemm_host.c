/* gpu_gemm_host.c — sdk_gpu_gemm_host: the generated GEMM (coil/coil_gpu.h) run on the CPU. A
 * "host" dialect spells the GPU with C++ and pthreads: a block's threads are pthreads, the thread
 * and block indices thread_local variables, the barrier a pthread barrier over the block, shared
 * memory function-local statics (so blocks run one at a time), and what the prelude declares but
 * the GEMM never calls (warp shuffles, CUDA's atomics) stubs that abort. Its prelude and the
 * kernels go into a .cpp that the system's C++ compiler (`c++` on PATH; none: skipped) builds as a
 * shared object, which this test loads and launches for f32, f64, f16 and bf16 on odd and tile-
 * sized shapes, K = 0, batches, transposed and broadcast operands and outputs that are
 * transposed or strided with gaps, comparing every element with a double reference (bounded by
 * the accumulation's and the output dtype's rounding of sum |a||b|) and checking that C's gaps
 * are untouched; the epilogues (a bias over the columns, a relu that keeps NaN) on every case
 * with the default and the small plan. Other plans and a grid smaller than the tile count run
 * too.
 * Usage: sdk-gpu-gemm-host (exit 77: no C++ compiler) */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coil/coil_gpu.h"

extern char **environ;

/* The host's "GPU": coil_host_start sets a launch's block size, grid and barrier; each worker
 * pthread calls coil_host_enter with its thread and block index before running the kernel for
 * that block, and coil_host_block_end after it (no thread starts the next block while another
 * still uses the static "shared" tiles). */
static const char host_head[] =
    "#include <math.h>\n#include <pthread.h>\n#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n"
    "static thread_local unsigned coil_host_tid, coil_host_bid;\n"
    "static unsigned coil_host_bdim, coil_host_gdim;\n"
    "static pthread_barrier_t coil_host_barrier;\n"
    "static inline void coil_host_sync() { pthread_barrier_wait(&coil_host_barrier); }\n"
    "/* declared by the prelude, never called by the GEMM */\n"
    "static inline bool coil_host_unused() { abort(); }\n"
    "template <typename T> static inline T coil_host_noshfl(T, int) { abort(); }\n"
    "template <typename T> static inline T atomicAdd(T *, T) { abort(); }\n"
    "template <typename T> static inline T atomicMax(T *, T) { abort(); }\n"
    "template <typename T> static inline T atomicMin(T *, T) { abort(); }\n"
    "template <typename T> static inline T atomicCAS(T *, T, T) { abort(); }\n"
    "static inline float __uint_as_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }\n"
    "static inline uint32_t __float_as_uint(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }\n"
    "static inline double __longlong_as_double(long long u) { double f; memcpy(&f, &u, 8); return f; }\n"
    "static inline long long __double_as_longlong(double f) { long long u; memcpy(&u, &f, 8); return u; }\n";

static const char host_glue[] =
    "extern \"C\" int coil_host_start(unsigned threads, unsigned grid) {\n"
    "  coil_host_bdim = threads; coil_host_gdim = grid;\n"
    "  return pthread_barrier_init(&coil_host_barrier, NULL, threads);\n"
    "}\n"
    "extern \"C\" void coil_host_enter(unsigned tid, unsigned bid) { coil_host_tid = tid; coil_host_bid = bid; }\n"
    "extern \"C\" void coil_host_block_end(void) { coil_host_sync(); }\n"
    "extern \"C\" void coil_host_stop(void) { pthread_barrier_destroy(&coil_host_barrier); }\n";

#define HOST_DIALECT(WARP)                                                                                         \
  {                                                                                                                \
    .name = "host", .compiler = "c++", .warp_size = WARP, .vector_bytes = 16, .kernel_decl = "extern \"C\"",       \
    .launch_bounds = NULL, .restrict_kw = "__restrict__", .thread_idx = "coil_host_tid",                           \
    .block_idx = "coil_host_bid", .block_dim = "coil_host_bdim", .grid_dim = "coil_host_gdim",                     \
    .barrier = "coil_host_sync()", .warp_barrier = "coil_host_unused()", .shared = "static", .align = "alignas",   \
    .device = "", .forceinline = "inline", .shfl_down = "coil_host_noshfl(", .shfl_up = "coil_host_noshfl(",       \
    .shfl_idx = "coil_host_noshfl(", .oob_first = "coil_host_unused()", .head = host_head, .half = NULL,           \
    .helpers = NULL, .c = {NULL},                                                                                  \
  }

/* the SDK's C conversions (round to nearest even), the prelude's lines that a dialect's `half`
 * replaces, as the host dialect's `half` */
static void
host_half(coil_strbuf *b)
{
  static const char *const fns[] = {"coil_h2f", "coil_f2h", "coil_b2f", "coil_f2b"};
  for (const char *s = coil_c_prelude(), *e; (e = strchr(s, '\n')); s = e + 1) {
    const char *paren = memchr(s, '(', (size_t)(e - s));
    for (size_t i = 0; paren && strncmp(s, "static inline ", 14) == 0 && i < sizeof fns / sizeof *fns; i++) {
      size_t n = strlen(fns[i]);
      if ((size_t)(paren - s) >= n && strncmp(paren - n, fns[i], n) == 0)
        coil_strbuf_putn(b, s, (size_t)(e - s) + 1);
    }
  }
}

typedef void gemm_fn(const void *, const void *, void *, long long, long long, long long, long long, long long,
                     long long, long long, long long, long long, long long, long long, long long, long long,
                     const void *, int);

typedef struct {
  int (*start)(unsigned, unsigned);
  void (*enter)(unsigned, unsigned);
  void (*block_end)(void);
  void (*stop)(void);
} host_rt;

typedef struct {
  const host_rt *rt;
  gemm_fn *fn;
  const void *A, *B;
  void *C;
  long long a[13]; /* M N K batch sab sam sak sbb sbk sbn scb scm scn */
  const void *bias; /* the epilogue: bias[n] (NULL: none), then relu */
  int relu;
  unsigned grid;
} launch;

typedef struct {
  const launch *l;
  unsigned tid;
} worker;

static void *
work(void *arg)
{
  const worker *w = arg;
  const launch *l = w->l;
  const long long *a = l->a;
  for (unsigned b = 0; b < l->grid; b++) {
    l->rt->enter(w->tid, b);
    l->fn(l->A, l->B, l->C, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], l->bias,
          l->relu);
    l->rt->block_end();
  }
  return NULL;
}

/* grid blocks of `threads` pthreads, one block at a time */
static void
run(const launch *l, unsigned threads)
{
  pthread_t *ts = calloc(threads, sizeof *ts);
  worker *ws = calloc(threads, sizeof *ws);
  pthread_attr_t attr;
  if (!ts || !ws || pthread_attr_init(&attr) != 0 || l->rt->start(threads, l->grid) != 0) {
    fprintf(stderr, "FAIL: cannot set up a launch of %u threads\n", threads);
    exit(1);
  }
  pthread_attr_setstacksize(&attr, (size_t)1 << 20);
  for (unsigned t = 0; t < threads; t++) {
    ws[t] = (worker){l, t};
    if (pthread_create(&ts[t], &attr, work, &ws[t]) != 0) { /* the barrier would wait forever */
      fprintf(stderr, "FAIL: cannot start %u threads\n", threads);
      exit(1);
    }
  }
  for (unsigned t = 0; t < threads; t++)
    pthread_join(ts[t], NULL);
  pthread_attr_destroy(&attr);
  l->rt->stop();
  free(ts);
  free(ws);
}

/* ---- operands ---- */
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double
uniform(void) /* in [-1, 1) */
{
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng >> 11) / 4503599627370496.0 - 1.0;
}

static void
put(coil_dtype t, void *buf, int64_t i, double v)
{
  switch (t) {
  case COIL_F64: ((double *)buf)[i] = v; break;
  case COIL_F32: ((float *)buf)[i] = (float)v; break;
  case COIL_F16: ((uint16_t *)buf)[i] = coil_f32_to_f16((float)v); break;
  default: ((uint16_t *)buf)[i] = coil_f32_to_bf16((float)v); break;
  }
}

static double
get(coil_dtype t, const void *buf, int64_t i)
{
  switch (t) {
  case COIL_F64: return ((const double *)buf)[i];
  case COIL_F32: return ((const float *)buf)[i];
  case COIL_F16: return coil_f16_to_f32(((const uint16_t *)buf)[i]);
  default: return coil_bf16_to_f32(((const uint16_t *)buf)[i]);
  }
}

/* the rounding unit of accumulating in t's compute type and of storing in t */
static double
acc_unit(coil_dtype t)
{
  return t == COIL_F64 ? 0x1p-53 : 0x1p-24;
}

static double
out_unit(coil_dtype t)
{
  return t == COIL_F64 ? 0x1p-53 : t == COIL_F32 ? 0x1p-24 : t == COIL_F16 ? 0x1p-11 : 0x1p-8;
}

enum { C_DENSE, C_TRANSPOSED, C_GAPS };
typedef struct {
  int64_t M, N, K, batch;
  bool ta, tb;  /* A stored K x M, B stored N x K */
  bool bcast_b; /* one B for every batch (stride 0) */
  int c;        /* C's layout */
} gcase;

/* elements spanned by a [batch][rows][cols] operand with these strides */
static int64_t
span(int64_t batch, int64_t rows, int64_t cols, int64_t sb, int64_t sr, int64_t sc)
{
  if (batch == 0 || rows == 0 || cols == 0)
    return 1;
  return (batch - 1) * sb + (rows - 1) * sr + (cols - 1) * sc + 1;
}

/* One product with kernel fn (plan pl) on a grid of `grid` blocks (0: coil_gpu_gemm_blocks'),
 * with the epilogue: a bias over the columns (epi & EPI_BIAS; its element 0 NaN with a relu, which
 * must keep it), a relu (epi & EPI_RELU). Returns the number of wrong elements (printing the
 * first few). */
enum { EPI_BIAS = 1, EPI_RELU = 2 };
static int
check(const host_rt *rt, gemm_fn *fn, coil_dtype t, const coil_gpu_gemm_plan *pl, const gcase *c, unsigned grid,
      int epi)
{
  const int64_t M = c->M, N = c->N, K = c->K, nb = c->batch;
  /* batch strides with a gap of a few elements, so a wrong batch offset reads or writes garbage */
  const int64_t sam = c->ta ? 1 : K, sak = c->ta ? M : 1, sab = M * K + 3;
  const int64_t sbk = c->tb ? 1 : N, sbn = c->tb ? K : 1, sbb = c->bcast_b ? 0 : K * N + 1;
  int64_t scm = N, scn = 1, scb = M * N;
  if (c->c == C_TRANSPOSED)
    scm = 1, scn = M, scb = M * N + 2;
  else if (c->c == C_GAPS)
    scn = 2, scm = 2 * N + 3, scb = M * scm + 5;
  const int64_t na = span(nb, M, K, sab, sam, sak), nbb = span(nb, K, N, sbb, sbk, sbn);
  const int64_t nc = span(nb, M, N, scb, scm, scn);
  const size_t es = coil_dtype_size(t);
  unsigned char *A = malloc((size_t)na * es), *B = malloc((size_t)nbb * es), *C = malloc((size_t)nc * es);
  unsigned char *bias = malloc((size_t)(N + 1) * es);
  bool *in_c = calloc((size_t)nc, 1);
  if (!A || !B || !C || !bias || !in_c) {
    fprintf(stderr, "FAIL: out of memory\n");
    exit(1);
  }
  for (int64_t i = 0; i < na; i++)
    put(t, A, i, uniform());
  for (int64_t i = 0; i < nbb; i++)
    put(t, B, i, uniform());
  for (int64_t i = 0; i < N; i++)
    put(t, bias, i, i == 0 && (epi & EPI_RELU) ? NAN : uniform());
  memset(C, 0xff, (size_t)nc * es); /* NaN in every dtype: an element not written fails */
  launch l = {rt, fn, A, B, C, {M, N, K, nb, sab, sam, sak, sbb, sbk, sbn, scb, scm, scn},
              epi & EPI_BIAS ? bias : NULL, (epi & EPI_RELU) != 0, grid};
  if (!grid)
    l.grid = coil_gpu_gemm_blocks(pl, M, N, nb);
  if (l.grid)
    run(&l, pl->threads);
  int bad = 0;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < K; k++) {
          double p = get(t, A, b * sab + m * sam + k * sak) * get(t, B, b * sbb + k * sbk + n * sbn);
          ref += p;
          mag += fabs(p);
        }
        if (epi & EPI_BIAS) {
          ref += get(t, bias, n);
          mag += fabs(get(t, bias, n));
        }
        if ((epi & EPI_RELU) && ref < 0) /* NaN stays NaN */
          ref = 0;
        const int64_t at = b * scb + m * scm + n * scn;
        in_c[at] = true;
        const double got = get(t, C, at), tol = 2 * ((double)K * acc_unit(t) + out_unit(t)) * mag;
        const bool ok = isnan(ref) ? isnan(got) : fabs(got - ref) <= tol;
        if (!ok && bad++ < 5)
          fprintf(stderr, "  C[%lld][%lld][%lld] = %.17g, want %.17g (tolerance %.3g)\n", (long long)b, (long long)m,
                  (long long)n, got, ref, tol);
      }
  for (int64_t i = 0; i < nc; i++) /* C's gaps keep their bytes */
    for (size_t j = 0; j < es && !in_c[i]; j++)
      if (C[(size_t)i * es + j] != 0xff && bad++ < 5) {
        fprintf(stderr, "  element %lld of C's buffer, outside C, was written\n", (long long)i);
        break;
      }
  free(A);
  free(B);
  free(C);
  free(bias);
  free(in_c);
  return bad;
}

/* ---- building the kernels ---- */
static bool
on_path(const char *exe)
{
  const char *path = getenv("PATH");
  if (!path)
    return false;
  char dir[4096];
  for (const char *s = path, *e; *s; s = *e ? e + 1 : e) {
    e = strchr(s, ':');
    if (!e)
      e = s + strlen(s);
    snprintf(dir, sizeof dir, "%.*s/%s", (int)(e - s), e == s ? "." : s, exe);
    if (access(dir, X_OK) == 0)
      return true;
  }
  return false;
}

/* c++ builds src into so; false (its messages on stderr) if it fails */
static bool
compile(const char *src, const char *so)
{
  char *argv[] = {"c++", "-std=c++17", "-O2", "-fPIC", "-shared", "-pthread", "-o", (char *)so, (char *)src, NULL};
  pid_t pid;
  int st;
  if (posix_spawnp(&pid, "c++", NULL, NULL, argv, environ) != 0 || waitpid(pid, &st, 0) != pid)
    return false;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static const coil_dtype dtypes[] = {COIL_F32, COIL_F64, COIL_F16, COIL_BF16};
#define NDT (sizeof dtypes / sizeof *dtypes)

static const gcase cases[] = {
    /*  M    N    K  batch ta     tb     bcast  C */
    {64, 64, 64, 1, false, false, false, C_DENSE},    /* whole tiles */
    {1, 1, 1, 1, false, false, false, C_DENSE},
    {65, 130, 7, 1, false, false, false, C_DENSE},    /* edges everywhere, K under a slice */
    {130, 65, 130, 1, true, false, false, C_DENSE},   /* transposed A */
    {7, 1, 65, 3, false, true, false, C_DENSE},       /* transposed B, batched */
    {1, 7, 130, 1, true, true, false, C_TRANSPOSED},  /* both transposed, C too */
    {64, 65, 0, 2, false, false, false, C_DENSE},     /* K = 0: zeros */
    {130, 130, 65, 3, true, true, false, C_GAPS},     /* C strided with gaps */
    {65, 7, 64, 3, false, false, true, C_GAPS},       /* one B for every batch */
};
#define NCASES (sizeof cases / sizeof *cases)

static void
describe(const gcase *c, coil_dtype t, const char *plan)
{
  static const char *const lay[] = {"dense", "transposed", "with gaps"};
  fprintf(stderr, "FAIL: %s %s: M %lld N %lld K %lld batch %lld, A%s, B%s%s, C %s\n", coil_dtype_name(t), plan,
          (long long)c->M, (long long)c->N, (long long)c->K, (long long)c->batch, c->ta ? " transposed" : "",
          c->tb ? " transposed" : "", c->bcast_b ? " broadcast" : "", lay[c->c]);
}

/* the API's answers that need no compiler */
static int
check_api(const coil_gpu_dialect *d32, const coil_gpu_dialect *d64)
{
  int failed = 0;
  coil_gpu_gemm_plan pl;
  coil_gpu_gemm_plan_for(d32, COIL_F32, &pl);
  /* the kernel never depends on the warp's width, and spells nothing of CUDA's */
  for (size_t i = 0; i < NDT; i++) {
    coil_strbuf s32 = {0}, s64 = {0};
    coil_gpu_gemm_plan_for(d32, dtypes[i], &pl);
    coil_gpu_gemm_source(d32, dtypes[i], &pl, "g", &s32);
    coil_gpu_gemm_plan_for(d64, dtypes[i], &pl);
    coil_gpu_gemm_source(d64, dtypes[i], &pl, "g", &s64);
    if (!s32.s || !s64.s || strcmp(s32.s, s64.s) != 0) {
      fprintf(stderr, "FAIL: %s: the GEMM differs between 32- and 64-lane warps\n", coil_dtype_name(dtypes[i]));
      failed++;
    }
    static const char *const never[] = {"threadIdx", "blockIdx", "blockDim", "gridDim", "__syncthreads", "__shared__",
                                        "__global__", "__launch_bounds__", "shfl", "__device__"};
    for (size_t n = 0; s32.s && n < sizeof never / sizeof *never; n++)
      if (strstr(s32.s, never[n])) {
        fprintf(stderr, "FAIL: %s: the GEMM spells '%s' itself\n", coil_dtype_name(dtypes[i]), never[n]);
        failed++;
      }
    coil_strbuf_free(&s32);
    coil_strbuf_free(&s64);
  }
  coil_gpu_gemm_plan_for(d32, COIL_F32, &pl);
  struct {
    int64_t M, N, batch;
    unsigned want;
  } blocks[] = {{0, 5, 1, 0}, {5, 0, 1, 0}, {5, 5, 0, 0}, {1, 1, 1, 1}, {64, 64, 1, 1}, {65, 64, 1, 2},
                {130, 130, 3, 27}, {(int64_t)1 << 40, (int64_t)1 << 40, 1, UINT32_MAX / 256}};
  for (size_t i = 0; i < sizeof blocks / sizeof *blocks; i++) {
    unsigned got = coil_gpu_gemm_blocks(&pl, blocks[i].M, blocks[i].N, blocks[i].batch);
    if (got != blocks[i].want) {
      fprintf(stderr, "FAIL: coil_gpu_gemm_blocks(%lld, %lld, %lld) = %u, want %u\n", (long long)blocks[i].M,
              (long long)blocks[i].N, (long long)blocks[i].batch, got, blocks[i].want);
      failed++;
    }
  }
  /* plans it cannot generate: no split of the threads, too much shared memory, too many
   * accumulators, a dtype it does not take */
  const coil_gpu_gemm_plan no[] = {{256, 64, 63, 16}, {256, 64, 64, 128}, {16, 64, 64, 8}, {0, 64, 64, 16}};
  for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
    coil_strbuf s = {0};
    if (coil_gpu_gemm_plan_valid(COIL_F32, &no[i]) || coil_gpu_gemm_source(d32, COIL_F32, &no[i], "g", &s) || s.s) {
      fprintf(stderr, "FAIL: plan %u %d %d %d taken\n", no[i].threads, no[i].bm, no[i].bn, no[i].bk);
      failed++;
    }
    coil_strbuf_free(&s);
  }
  if (coil_gpu_gemm_plan_valid(COIL_I32, &pl)) {
    fprintf(stderr, "FAIL: an i32 GEMM is taken\n");
    failed++;
  }
  for (size_t i = 0; i < NDT; i++)
    for (int small = 0; small < 2; small++) {
      (small ? coil_gpu_gemm_plan_small : coil_gpu_gemm_plan_for)(d64, dtypes[i], &pl);
      if (!coil_gpu_gemm_plan_valid(dtypes[i], &pl) || pl.threads % 64) {
        fprintf(stderr, "FAIL: %s's %s plan is not valid, or not whole wavefronts\n", coil_dtype_name(dtypes[i]),
                small ? "small" : "default");
        failed++;
      }
    }
  /* small: fewer than 8 tiles of the default plan */
  coil_gpu_gemm_plan_for(d32, COIL_F32, &pl);
  struct {
    int64_t M, N, batch;
    bool want;
  } small[] = {{0, 64, 1, false}, {64, 64, 1, true}, {128, 128, 1, true}, {64, 64, 7, true},
               {64, 64, 8, false}, {130, 130, 3, false}, {512, 512, 1, false}};
  for (size_t i = 0; i < sizeof small / sizeof *small; i++)
    if (coil_gpu_gemm_is_small(&pl, small[i].M, small[i].N, small[i].batch) != small[i].want) {
      fprintf(stderr, "FAIL: coil_gpu_gemm_is_small(%lld, %lld, %lld) is not %d\n", (long long)small[i].M,
              (long long)small[i].N, (long long)small[i].batch, small[i].want);
      failed++;
    }
  return failed;
}

int
main(void)
{
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  coil_strbuf half = {0};
  host_half(&half);
  coil_gpu_dialect host = HOST_DIALECT(32), host64 = HOST_DIALECT(64);
  host.half = host64.half = half.s;
  int failed = check_api(&host, &host64);

  if (!on_path("c++")) {
    printf("SKIP: no c++ on PATH to build the host kernels (%d API checks failed)\n", failed);
    coil_strbuf_free(&half);
    return failed ? 1 : 77;
  }
  /* the kernels: the default and the small plan per dtype, and two others (a non-square split;
   * threads that are no multiple of a warp and slices the threads do not divide) */
  const coil_gpu_gemm_plan alt[] = {{128, 32, 64, 8}, {96, 24, 32, 5}};
  const coil_dtype alt_t[] = {COIL_F32, COIL_F64};
  coil_gpu_gemm_plan plans[NDT], small[NDT];
  coil_strbuf src = {0};
  coil_strbuf_puts(&src, "/* sdk_gpu_gemm_host: the generated GEMM for the host dialect */\n");
  coil_gpu_prelude(&host, &src);
  for (size_t i = 0; i < NDT; i++) {
    char name[32];
    snprintf(name, sizeof name, "gemm_%s", coil_dtype_name(dtypes[i]));
    coil_gpu_gemm_plan_for(&host, dtypes[i], &plans[i]);
    if (!coil_gpu_gemm_source(&host, dtypes[i], &plans[i], name, &src)) {
      fprintf(stderr, "FAIL: no source for %s\n", name);
      return 1;
    }
    snprintf(name, sizeof name, "gemm_%s_small", coil_dtype_name(dtypes[i]));
    coil_gpu_gemm_plan_small(&host, dtypes[i], &small[i]);
    if (!coil_gpu_gemm_source(&host, dtypes[i], &small[i], name, &src)) {
      fprintf(stderr, "FAIL: no source for %s\n", name);
      return 1;
    }
  }
  for (size_t i = 0; i < 2; i++) {
    char name[32];
    snprintf(name, sizeof name, "gemm_alt%zu", i);
    if (!coil_gpu_gemm_source(&host, alt_t[i], &alt[i], name, &src)) {
      fprintf(stderr, "FAIL: no source for plan %u %d %d %d\n", alt[i].threads, alt[i].bm, alt[i].bn, alt[i].bk);
      return 1;
    }
  }
  coil_strbuf_puts(&src, host_glue);

  const char *tmp = getenv("TMPDIR");
  char dir[512], cpp[600], so[600];
  snprintf(dir, sizeof dir, "%s/coil-gemm-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    fprintf(stderr, "FAIL: mkdtemp %s: %s\n", dir, strerror(errno));
    return 1;
  }
  snprintf(cpp, sizeof cpp, "%s/gemm.cpp", dir);
  snprintf(so, sizeof so, "%s/gemm.so", dir);
  FILE *f = fopen(cpp, "w");
  if (!f || fputs(src.s, f) < 0 || fclose(f) != 0) {
    fprintf(stderr, "FAIL: cannot write %s\n", cpp);
    return 1;
  }
  coil_strbuf_free(&src);
  coil_strbuf_free(&half);
  if (!compile(cpp, so)) {
    fprintf(stderr, "FAIL: c++ cannot build %s\n", cpp);
    return 1;
  }
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "FAIL: dlopen: %s\n", dlerror());
    return 1;
  }
  host_rt rt;
  *(void **)&rt.start = dlsym(h, "coil_host_start");
  *(void **)&rt.enter = dlsym(h, "coil_host_enter");
  *(void **)&rt.block_end = dlsym(h, "coil_host_block_end");
  *(void **)&rt.stop = dlsym(h, "coil_host_stop");
  gemm_fn *fns[NDT], *small_fn[NDT], *alt_fn[2];
  for (size_t i = 0; i < 2 * NDT + 2; i++) {
    char name[32];
    gemm_fn **at = i < NDT ? &fns[i] : i < 2 * NDT ? &small_fn[i - NDT] : &alt_fn[i - 2 * NDT];
    if (i < NDT)
      snprintf(name, sizeof name, "gemm_%s", coil_dtype_name(dtypes[i]));
    else if (i < 2 * NDT)
      snprintf(name, sizeof name, "gemm_%s_small", coil_dtype_name(dtypes[i - NDT]));
    else
      snprintf(name, sizeof name, "gemm_alt%zu", i - 2 * NDT);
    *(void **)at = dlsym(h, name);
    if (!*at) {
      fprintf(stderr, "FAIL: %s is not in %s\n", name, so);
      return 1;
    }
  }
  if (!rt.start || !rt.enter || !rt.block_end || !rt.stop) {
    fprintf(stderr, "FAIL: the host runtime is not in %s\n", so);
    return 1;
  }

  int ran = 0;
  for (size_t i = 0; i < NDT; i++)
    for (size_t c = 0; c < NCASES; c++, ran++)
      if (check(&rt, fns[i], dtypes[i], &plans[i], &cases[c], 0, 0)) {
        describe(&cases[c], dtypes[i], "default plan");
        failed++;
      }
  /* the epilogues (bias, relu, both) on every case, with the small plan and the default */
  static const char *const epi_name[] = {"", "bias", "relu", "bias and relu"};
  for (size_t i = 0; i < NDT; i++)
    for (size_t c = 0; c < NCASES; c++)
      for (int small_plan = 0; small_plan < 2; small_plan++, ran++) {
        const int epi = 1 + (int)(c + (size_t)small_plan) % 3;
        char what[64];
        snprintf(what, sizeof what, "%s plan, epilogue %s", small_plan ? "small" : "default", epi_name[epi]);
        if (check(&rt, small_plan ? small_fn[i] : fns[i], dtypes[i], small_plan ? &small[i] : &plans[i], &cases[c],
                  0, epi)) {
          describe(&cases[c], dtypes[i], what);
          failed++;
        }
      }
  for (size_t i = 0; i < 2; i++) /* the other plans: edges, transposes, gaps */
    for (size_t c = 2; c < NCASES; c += 2, ran++)
      if (check(&rt, alt_fn[i], alt_t[i], &alt[i], &cases[c], 0, 0)) {
        describe(&cases[c], alt_t[i], i ? "plan 96 24 32 5" : "plan 128 32 64 8");
        failed++;
      }
  /* fewer blocks than tiles (27): the blocks stride over them */
  for (unsigned grid = 1; grid <= 5; grid += 4, ran++)
    if (check(&rt, fns[0], COIL_F32, &plans[0], &cases[7], grid, 0)) {
      describe(&cases[7], COIL_F32, grid == 1 ? "a grid of 1 block" : "a grid of 5 blocks");
      failed++;
    }
  dlclose(h);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  if (failed) {
    fprintf(stderr, "%d failed; the source is kept in %s\n", failed, cpp);
  } else {
    unlink(so);
    unlink(cpp);
    rmdir(dir);
  }
  printf("gemm on the host: %d products, %d failed (%.1f s)\n", ran, failed, s);
  return failed ? 1 : 0;
}
