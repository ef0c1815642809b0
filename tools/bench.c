/* bench.c — the benchmarks of the `coil bench` command.
 *
 * `coil bench`: the cpu plugin on the benchmark graphs at 4096x4096 f32 (pointwise gelu(x*w+b),
 * softmax and layer_norm over the last dim, row sum, rmsnorm + residual): compile times (the
 * core, a cold compile with the C compiler and one through LLVM, a cache hit), then GB/s of the
 * minimal traffic and its ratio to a memcpy of the same bytes by as many threads, at 1 and 2
 * threads, for both code paths in alternating rounds.
 *
 * `coil bench --conv`: the cpu plugin on ResNet-style 3x3 convolutions, compiled two ways in one
 * run: as its library call (im2col + OpenBLAS gemm) and as the core's generated kernel
 * ([coil] convolution = library / generated), alternating for a few rounds; median times,
 * GFLOP/s and the ratio generated / library.
 *
 * `coil bench --core-only`: how the compiler core scales. It generates graphs of 1k to N
 * statements in four shapes (a deep MLP, a long pointwise chain, a wide fan-out, a deep residual
 * stack), times parsing and compiling each to a verified Wrapper IR program in a process of its
 * own, and reports time and peak memory per statement. */
#define _XOPEN_SOURCE 700 /* nftw */
#define _DEFAULT_SOURCE   /* wait4 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <unistd.h>

#include "coil/coil.h"
#include "graph.h"
#include "bench.h"
#include "cache.h"
#include "runtime.h"

static double
now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The graph families of --core-only, each about n statements long:
 *   mlp:   blocks of mm, bias add, relu, a row sum, a division, a residual add (a deep MLP);
 *   chain: one pointwise statement after another, each reading only the last (one kernel);
 *   fanout: one value read by n/2 statements, their results summed in a chain;
 *   resid: h = h + relu(h) * 0.5 repeated (every h read twice, so each is realized). */
typedef enum { FAMILY_MLP, FAMILY_CHAIN, FAMILY_FANOUT, FAMILY_RESID, NFAMILIES } family;
static const char *const family_names[NFAMILIES] = {"mlp", "chain", "fanout", "resid"};

static char *
generate(family f, int n)
{
  coil_strbuf b = {0};
  if (f == FAMILY_MLP) {
    coil_strbuf_puts(&b, "coil 1\ngraph bench(%x0: f32[s0, 64], %w: f32[64, 64] param, %b: f32[64] param) {\n");
    int blocks = n / 6 > 0 ? n / 6 : 1;
    for (int i = 0; i < blocks; i++) {
      coil_strbuf_printf(&b, "  %%h%d = aten.mm.default(%%x%d, %%w)\n", i, i);
      coil_strbuf_printf(&b, "  %%a%d = aten.add.Tensor(%%h%d, %%b)\n", i, i);
      coil_strbuf_printf(&b, "  %%r%d = aten.relu.default(%%a%d)\n", i, i);
      coil_strbuf_printf(&b, "  %%s%d = aten.sum.dim_IntList(%%r%d, [1], True)\n", i, i);
      coil_strbuf_printf(&b, "  %%d%d = aten.div.Tensor(%%r%d, %%s%d)\n", i, i, i);
      coil_strbuf_printf(&b, "  %%x%d = aten.add.Tensor(%%d%d, %%x%d)\n", i + 1, i, i);
    }
    coil_strbuf_printf(&b, "  return (%%x%d)\n}\n", blocks);
    return coil_strbuf_take(&b);
  }
  coil_strbuf_puts(&b, "coil 1\ngraph bench(%x: f32[s0, 128]) {\n");
  static const char *const unary[] = {"relu", "neg", "sigmoid", "abs"};
  const char *last = "x";
  char name[32];
  if (f == FAMILY_CHAIN) {
    for (int i = 0; i < n; i++) {
      if (i % 5 == 4)
        coil_strbuf_printf(&b, "  %%v%d = aten.add.Tensor(%%%s, %%x)\n", i, last);
      else
        coil_strbuf_printf(&b, "  %%v%d = aten.%s.default(%%%s)\n", i, unary[i % 5], last);
      snprintf(name, sizeof name, "v%d", i);
      last = name;
    }
  } else if (f == FAMILY_FANOUT) {
    coil_strbuf_puts(&b, "  %a = aten.sigmoid.default(%x)\n");
    for (int i = 0; i < n / 2; i++) {
      coil_strbuf_printf(&b, "  %%m%d = aten.mul.Scalar(%%a, %d.0)\n", i, i % 7 + 1);
      coil_strbuf_printf(&b, "  %%s%d = aten.add.Tensor(%%%s, %%m%d)\n", i, last, i);
      snprintf(name, sizeof name, "s%d", i);
      last = name;
    }
  } else {
    for (int i = 0; i < n / 3; i++) {
      coil_strbuf_printf(&b, "  %%r%d = aten.relu.default(%%%s)\n", i, last);
      coil_strbuf_printf(&b, "  %%c%d = aten.mul.Scalar(%%r%d, 0.5)\n", i, i);
      coil_strbuf_printf(&b, "  %%h%d = aten.add.Tensor(%%%s, %%c%d)\n", i, last, i);
      snprintf(name, sizeof name, "h%d", i);
      last = name;
    }
  }
  coil_strbuf_printf(&b, "  return (%%%s)\n}\n", last);
  return coil_strbuf_take(&b);
}

typedef struct {
  int ok, stmts, kernels, externs;
  double parse_s, compile_s;
} core_row;

/* Parses and compiles one generated graph (in a child process: its peak memory is its own). */
static core_row
core_measure(family f, int n)
{
  core_row r = {0};
  char *text = generate(f, n);
  coil_diag d = {0};
  double t0 = now();
  coil_graph *g = coil_graph_parse("bench.coil", text, strlen(text), &d);
  double t1 = now();
  coil_wir_program *p = g ? coil_compile_graph(g, NULL, &d) : NULL;
  double t2 = now();
  if (!p) {
    fprintf(stderr, "coil: bench %s %d: %s\n", family_names[f], n, d.msg);
  } else {
    r.ok = 1;
    r.stmts = g->nnodes;
    r.parse_s = t1 - t0;
    r.compile_s = t2 - t1;
    for (int i = 0; i < p->nlines; i++) {
      r.kernels += p->lines[i].kind == COIL_LINE_KERNEL_CALL;
      r.externs += p->lines[i].kind == COIL_LINE_EXTERN_CALL;
    }
  }
  coil_wir_free(p);
  coil_graph_free(g);
  free(text);
  return r;
}

/* Runs core_measure(f, n) in a child; *peak_kib gets the child's peak resident memory (n = 0:
 * a child that only starts, the baseline subtracted from the others). */
static core_row
core_child(family f, int n, long *peak_kib)
{
  core_row r = {0};
  int fd[2];
  if (pipe(fd) != 0)
    return r;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    core_row c = n ? core_measure(f, n) : (core_row){.ok = 1};
    ssize_t w = write(fd[1], &c, sizeof c);
    _exit(w == (ssize_t)sizeof c ? 0 : 1);
  }
  close(fd[1]);
  if (pid < 0) {
    close(fd[0]);
    return r;
  }
  ssize_t got = read(fd[0], &r, sizeof r);
  close(fd[0]);
  struct rusage u;
  int status = 0;
  if (wait4(pid, &status, 0, &u) < 0 || got != (ssize_t)sizeof r || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0)
    r.ok = 0;
  *peak_kib = u.ru_maxrss;
  return r;
}

int
coil_bench_core(int argc, char **argv)
{
  int max_nodes = 65536;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc)
      max_nodes = atoi(argv[++i]);
    else if (strcmp(argv[i], "--core-only") != 0) {
      fprintf(stderr, "coil: usage: coil bench --core-only [--nodes N]\n");
      return 2;
    }
  }
  if (max_nodes < 6 || max_nodes > 1000000) {
    fprintf(stderr, "coil: --nodes must be between 6 and 1000000\n");
    return 2;
  }
  long base_kib = 0;
  if (!core_child(FAMILY_MLP, 0, &base_kib).ok) {
    fprintf(stderr, "coil: bench --core-only: cannot start a child process\n");
    return 1;
  }
  printf("coil bench --core-only: parse + compile to verified Wrapper IR (no plugin), one process per\n"
         "graph; bytes/stmt = (peak resident memory - %.1f MiB of a process that only starts) / statements\n",
         (double)base_kib / 1024.0);
  printf("%-7s %10s %8s %8s %10s %11s %8s %9s %11s\n", "graph", "statements", "kernels", "externs",
         "parse_ms", "compile_ms", "us/stmt", "peak_MiB", "bytes/stmt");
  int start = max_nodes < 1024 ? max_nodes : 1024;
  for (int f = 0; f < NFAMILIES; f++) {
    for (int n = start; n <= max_nodes; n = n * 2 > max_nodes && n < max_nodes ? max_nodes : n * 2) {
      long kib = 0;
      core_row r = core_child((family)f, n, &kib);
      if (!r.ok) {
        fprintf(stderr, "coil: bench --core-only: %s with %d statements failed\n", family_names[f], n);
        return 1;
      }
      double bytes = kib > base_kib ? 1024.0 * (double)(kib - base_kib) / r.stmts : 0;
      printf("%-7s %10d %8d %8d %10.2f %11.2f %8.2f %9.1f %11.0f\n", family_names[f], r.stmts,
             r.kernels, r.externs, 1e3 * r.parse_s, 1e3 * r.compile_s,
             1e6 * (r.parse_s + r.compile_s) / r.stmts, (double)kib / 1024.0, bytes);
      fflush(stdout);
    }
  }
  return 0;
}

/* ---- coil bench: the CPU benchmark graphs against the machine's copy bandwidth ---- */

typedef struct {
  const char *name;
  const char *text;          /* the graph */
  double min_bytes;          /* inputs read once + outputs written once */
} bench_graph;

#define COLD_RUNS 5 /* cold compiles per graph and code path; the median counts (a shared VM is noisy) */
#define KERNEL_ROUNDS 3 /* paired timings (time_pair) per graph and thread count, each of fresh compiles */

#define N "4096"
static const bench_graph graphs[] = {
    {"pointwise_gelu_affine",
     "coil 1\ngraph g(%x: f32[" N ", " N "], %w: f32[" N "], %b: f32[" N "]) {\n"
     "  %m = aten.mul.Tensor(%x, %w)\n  %a = aten.add.Tensor(%m, %b)\n  %y = aten.gelu.default(%a)\n"
     "  return (%y)\n}\n",
     2.0 * 4096 * 4096 * 4},
    {"softmax_lastdim",
     "coil 1\ngraph g(%x: f32[" N ", " N "]) {\n  %y = aten._softmax.default(%x, -1, False)\n  return (%y)\n}\n",
     2.0 * 4096 * 4096 * 4},
    {"layernorm",
     "coil 1\ngraph g(%x: f32[" N ", " N "], %w: f32[" N "], %b: f32[" N "]) {\n"
     "  %l = aten.native_layer_norm.default(%x, [" N "], %w, %b, 1e-05)\n  %y = getitem(%l, 0)\n"
     "  return (%y)\n}\n",
     2.0 * 4096 * 4096 * 4},
    {"sum_dim1",
     "coil 1\ngraph g(%x: f32[" N ", " N "]) {\n  %y = aten.sum.dim_IntList(%x, [1])\n  return (%y)\n}\n",
     1.0 * 4096 * 4096 * 4},
    {"rmsnorm_residual_f32",
     "coil 1\ngraph g(%x: f32[" N ", " N "], %r: f32[" N ", " N "], %w: f32[" N "]) {\n"
     "  %h = aten.add.Tensor(%x, %r)\n  %p = aten.pow.Tensor_Scalar(%h, 2)\n"
     "  %m = aten.mean.dim(%p, [-1], True)\n  %e = aten.add.Tensor(%m, 1e-06)\n"
     "  %s = aten.rsqrt.default(%e)\n  %n = aten.mul.Tensor(%h, %s)\n  %y = aten.mul.Tensor(%n, %w)\n"
     "  return (%y)\n}\n",
     3.0 * 4096 * 4096 * 4},
};
#undef N

static int
remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static double
median(double *v, int n)
{
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return v[n / 2];
}

typedef struct {
  char *dst;
  const char *src;
  size_t n;
} copy_part;

static void *
copy_thread(void *arg)
{
  copy_part *c = arg;
  memcpy(c->dst, c->src, c->n);
  return NULL;
}

/* memcpy of `bytes` (read + written counted) split over `threads` threads, median of 9, GB/s:
 * the roofline each thread count is compared with. */
static double
copy_gbps(size_t bytes, int threads)
{
  size_t half = bytes / 2;
  char *a = malloc(half), *b = malloc(half);
  memset(a, 1, half);
  memset(b, 2, half);
  double t[9], start = now();
  while (now() - start < 0.3) /* warm up, as for the graphs */
    memcpy(b, a, half);
  for (int r = 0; r < 9; r++) { /* then 9 copies; the median counts */
    pthread_t tid[8];
    copy_part parts[8];
    double t0 = now();
    for (int k = 0; k < threads; k++) {
      size_t lo = half / (size_t)threads * (size_t)k, hi = k == threads - 1 ? half : half / (size_t)threads * (size_t)(k + 1);
      parts[k] = (copy_part){b + lo, a + lo, hi - lo};
      if (k)
        pthread_create(&tid[k], NULL, copy_thread, &parts[k]);
    }
    copy_thread(&parts[0]);
    for (int k = 1; k < threads; k++)
      pthread_join(tid[k], NULL);
    t[r] = now() - t0;
  }
  free(a);
  free(b);
  return (double)bytes / median(t, 9) / 1e9;
}

/* One side of a paired timing: a graph compiled for the cpu plugin with its code path and core
 * options, loaded, with outputs of its own. */
typedef struct {
  const char *codegen;              /* "cc" or "llvm" */
  const coil_compile_options *copts; /* NULL: the defaults */
  coil_wir_program *p;
  coil_loaded_plugin *lp;
  coil_plugin *inst;
  coil_artifact *art;
  char dir[32];
  coil_tensor out[8];
  coil_plugin_tensor pout[8];
  const coil_plugin_tensor *poutp[8];
  int64_t ostr[8][COIL_MAX_RANK];
  int nout;
} timed_side;

static int
side_open(timed_side *s, const coil_graph *g, const char *plugin_dir, const coil_plugin_options *o, coil_diag *d)
{
  snprintf(s->dir, sizeof s->dir, "/tmp/coil-bench-XXXXXX");
  if (!(s->p = coil_compile_graph(g, s->copts, d)))
    return -1;
  if (!mkdtemp(s->dir)) {
    s->dir[0] = 0;
    return coil_diag_set(d, "cannot create a temporary directory");
  }
  if (coil_plugin_open("cpu", &plugin_dir, 1, &s->lp, d) || coil_plugin_create(s->lp, o, &s->inst, d) ||
      coil_plugin_compile(s->lp, s->inst, s->p, s->dir, o, d) || coil_plugin_load(s->lp, s->inst, s->dir, o, &s->art, d))
    return -1;
  const coil_line *ol = &s->p->lines[s->p->nlines - 1];
  for (int i = 0; i < ol->nargs && i < 8; i++, s->nout++) {
    const coil_buffer *b = &s->p->buffers[ol->args[i]];
    int64_t shape[COIL_MAX_RANK];
    for (int k = 0; k < b->rank; k++)
      coil_sym_is_const(b->sizes[k], &shape[k]);
    if (coil_tensor_init(&s->out[i], b->dtype, b->rank, shape, d))
      return -1;
    coil_plugin_tensor_wrap(&s->out[i], s->ostr[i], &s->pout[i]);
    s->poutp[i] = &s->pout[i];
  }
  return 0;
}

static void
side_close(timed_side *s)
{
  for (int i = 0; i < s->nout; i++)
    coil_tensor_free(&s->out[i]);
  if (s->art)
    coil_plugin_artifact_free(s->lp, s->art);
  if (s->inst)
    coil_plugin_destroy(s->lp, s->inst);
  coil_plugin_close(s->lp);
  if (s->dir[0]) /* the artifact directory: its files, then itself */
    nftw(s->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  coil_wir_free(s->p);
}

#define PAIRED_RUNS 15 /* timed runs of each side, the two alternating run by run */

/* Times graph bg two ways (sides a[0], a[1]: code path and core options each) with `threads`
 * on the same inputs: both compiled and loaded first, warmed up for 0.3 s, then PAIRED_RUNS runs
 * of each, one of a[0] and one of a[1] in turn (which goes first alternating). The runs of a
 * pair are a few milliseconds apart, so the VM's slow swings of speed (up to 2x within a minute
 * here) move both alike; the median of the pairs' ratios t1/t0 is the comparison, and each
 * side's median time its speed. */
static int
time_pair(const bench_graph *bg, const char *plugin_dir, int threads, timed_side a[2], double seconds[2],
          double *ratio, coil_diag *d)
{
  coil_graph *g = coil_graph_parse(bg->name, bg->text, strlen(bg->text), d);
  if (!g)
    return -1;
  char threads_s[16];
  snprintf(threads_s, sizeof threads_s, "%d", threads);
  int rc = -1, nin = 0;
  coil_tensor in[8];
  coil_plugin_tensor pin[8];
  const coil_plugin_tensor *pinp[8];
  int64_t istr[8][COIL_MAX_RANK];
  for (int k = 0; k < 2; k++) {
    const char *keys[] = {"threads", "codegen"}, *vals[] = {threads_s, a[k].codegen};
    coil_plugin_options o = {.struct_size = sizeof o, .count = 2, .keys = keys, .values = vals};
    if (side_open(&a[k], g, plugin_dir, &o, d))
      goto done;
  }
  const coil_wir_program *p = a[0].p;
  uint64_t seed = 1;
  for (int i = 0; i < p->ninputs && i < 8; i++, nin++) {
    const coil_buffer *b = &p->buffers[p->inputs[i].buffer];
    int64_t shape[COIL_MAX_RANK];
    for (int k = 0; k < b->rank; k++)
      coil_sym_is_const(b->sizes[k], &shape[k]);
    if (coil_tensor_init(&in[i], b->dtype, b->rank, shape, d))
      goto done;
    float *x = in[i].data;
    for (int64_t e = 0; e < coil_tensor_numel(&in[i]); e++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      x[e] = (float)((double)(seed >> 40) / 16777216.0 * 4.0 - 2.0);
    }
    coil_plugin_tensor_wrap(&in[i], istr[i], &pin[i]);
    pinp[i] = &pin[i];
  }
  /* warm up for 0.3 s (at least 3 runs each): caches, the thread pool, and the clock speed a
   * loaded core settles at */
  double start = now();
  for (int r = 0; r < 3 || now() - start < 0.3; r++)
    for (int k = 0; k < 2; k++)
      if (coil_plugin_run(a[k].lp, a[k].art, nin, pinp, a[k].nout, a[k].poutp, d))
        goto done;
  double t[2][PAIRED_RUNS], q[PAIRED_RUNS];
  for (int r = 0; r < PAIRED_RUNS; r++) {
    for (int j = 0; j < 2; j++) {
      int k = (j + r) % 2;
      double t0 = now();
      if (coil_plugin_run(a[k].lp, a[k].art, nin, pinp, a[k].nout, a[k].poutp, d))
        goto done;
      t[k][r] = now() - t0;
    }
    q[r] = t[1][r] / t[0][r];
  }
  *ratio = median(q, PAIRED_RUNS);
  for (int k = 0; k < 2; k++)
    seconds[k] = median(t[k], PAIRED_RUNS);
  rc = 0;
done:
  for (int i = 0; i < nin; i++)
    coil_tensor_free(&in[i]);
  for (int k = 0; k < 2; k++)
    side_close(&a[k]);
  coil_graph_free(g);
  return rc;
}

/* The "times" the plugin recorded in an entry's manifest (the llvm path's phases), or "". */
static void
manifest_times(const char *entry, char *out, size_t size)
{
  char path[4096], text[8192];
  if (!size)
    return;
  out[0] = 0;
  snprintf(path, sizeof path, "%s/manifest.json", entry);
  FILE *f = fopen(path, "rb");
  if (!f)
    return;
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  cJSON *m = cJSON_Parse(text);
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(m, "times");
  if (cJSON_IsString(t))
    snprintf(out, size, "%s", t->valuestring);
  cJSON_Delete(m);
}

/* Compile times of one graph: the core (graph to verified Wrapper IR), a cold compile through
 * an empty cache (the plugin's code generation and the C compiler), and a warm cache hit (key,
 * lookup, hash check of the entry). */
static int
compile_times(const bench_graph *bg, const char *plugin_dir, const char *cache_dir, const char *codegen, double *core,
              double *cold, double *hit, char *times, size_t times_size, coil_diag *d)
{
  coil_graph *g = coil_graph_parse(bg->name, bg->text, strlen(bg->text), d);
  if (!g)
    return -1;
  double t0 = now();
  coil_wir_program *p = coil_compile_graph(g, NULL, d);
  *core = now() - t0;
  coil_loaded_plugin *lp = NULL;
  coil_plugin *inst = NULL;
  int rc = -1;
  char *entry = NULL;
  coil_cache_outcome oc;
  const char *keys[] = {"codegen"}, *vals[] = {codegen};
  coil_plugin_options o = {.struct_size = sizeof o, .count = 1, .keys = keys, .values = vals};
  if (!p || coil_plugin_open("cpu", &plugin_dir, 1, &lp, d) || coil_plugin_create(lp, &o, &inst, d))
    goto done;
  t0 = now();
  const char *id = lp->api.identity ? lp->api.identity(inst) : ""; /* as coil run keys it */
  if (coil_cache_get(cache_dir, id ? id : "", lp, inst, p, NULL, &entry, NULL, &oc, d))
    goto done;
  *cold = now() - t0;
  manifest_times(entry, times, times_size);
  free(entry);
  entry = NULL;
  t0 = now();
  if (coil_cache_get(cache_dir, id ? id : "", lp, inst, p, NULL, &entry, NULL, &oc, d))
    goto done;
  *hit = now() - t0;
  rc = oc == COIL_CACHE_HIT ? 0 : coil_diag_set(d, "%s: the second lookup missed the cache", bg->name);
done:
  free(entry);
  if (inst)
    coil_plugin_destroy(lp, inst);
  coil_plugin_close(lp);
  coil_wir_free(p);
  coil_graph_free(g);
  return rc;
}

/* Whether name is one of the comma-separated names of list (--only). */
static bool
name_in_list(const char *list, const char *name)
{
  size_t n = strlen(name);
  for (const char *c = list; *c;) {
    size_t k = strcspn(c, ",");
    if (k == n && strncmp(c, name, n) == 0)
      return true;
    c += k + (c[k] == ',');
  }
  return false;
}

int
coil_bench_cpu(int argc, char **argv, const char *plugin_dir)
{
  const char *only = NULL; /* --only NAME[,NAME...]: those graphs alone */
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
      only = argv[++i];
    else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc && strcmp(argv[i + 1], "cpu") == 0)
      i++;
    else {
      fprintf(stderr, "coil: bench: unknown argument '%s' (the cpu benchmark takes --only NAME[,NAME...]; "
                      "'coil help' lists the others)\n", argv[i]);
      return 2;
    }
  }
  bool pick[sizeof graphs / sizeof *graphs];
  for (size_t i = 0; i < sizeof graphs / sizeof *graphs; i++)
    pick[i] = !only || name_in_list(only, graphs[i].name);
  if (only) /* a name that matches no graph is a typo, not an empty benchmark */
    for (const char *s = only; *s;) {
      size_t n = strcspn(s, ",");
      bool found = false;
      for (size_t i = 0; i < sizeof graphs / sizeof *graphs; i++)
        found |= strlen(graphs[i].name) == n && strncmp(graphs[i].name, s, n) == 0;
      if (!found) {
        fprintf(stderr, "coil: bench: no cpu benchmark graph '%.*s' (", (int)n, s);
        for (size_t i = 0; i < sizeof graphs / sizeof *graphs; i++)
          fprintf(stderr, "%s%s", i ? ", " : "", graphs[i].name);
        fprintf(stderr, ")\n");
        return 2;
      }
      s += n + (s[n] == ',');
    }
  if (!plugin_dir) {
    fprintf(stderr, "coil: no plugin directory for the cpu plugin\n");
    return 1;
  }
  char cache[] = "/tmp/coil-bench-cache-XXXXXX";
  if (!mkdtemp(cache)) {
    fprintf(stderr, "coil: cannot create a temporary cache\n");
    return 1;
  }
  /* both code paths side by side, graph by graph, when LLVM's is built: cc (the C compiler)
   * and llvm (in process); the first llvm compile of the process also loads libLLVM and starts
   * its JIT, timed apart on its own line */
  bool llvm = true;
  {
    double core, cold, hit, t0 = now();
    coil_diag d = {0};
    char warm[] = "/tmp/coil-bench-cache-XXXXXX";
    if (!mkdtemp(warm) || compile_times(&graphs[0], plugin_dir, warm, "llvm", &core, &cold, &hit, NULL, 0, &d)) {
      printf("codegen = llvm: not available (%s); cc only\n", d.msg);
      llvm = false;
    } else {
      printf("codegen = llvm: the process's first compile (starts the compile worker, which loads libLLVM): %.1f ms\n",
             1e3 * (now() - t0));
    }
    nftw(warm, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  }
  printf("compile times (a fresh cache in %s); cold = the plugin's compile into an empty cache, median of %d;\n"
         "hit = a cache hit:\n",
         cache, COLD_RUNS);
  printf("%-24s %10s %10s %10s %8s %10s %10s\n", "graph", "core_ms", "cc_cold", "llvm_cold", "cc/llvm", "cc_hit",
         "llvm_hit");
  char split[sizeof graphs / sizeof *graphs][200] = {{0}};
  for (size_t i = 0; i < sizeof graphs / sizeof *graphs; i++) {
    if (!pick[i])
      continue;
    double core = 0, cold[2] = {0, 0}, hit[2] = {0, 0}, runs[2][COLD_RUNS] = {{0}};
    char times[COLD_RUNS][200];
    coil_diag d = {0};
    for (int r = 0; r < COLD_RUNS; r++) /* each into an empty cache, cc and llvm alternating */
      for (int c = 0; c < (llvm ? 2 : 1); c++) {
        if (compile_times(&graphs[i], plugin_dir, cache, c ? "llvm" : "cc", &core, &runs[c][r], &hit[c], times[r],
                          c ? sizeof times[r] : 0, &d)) {
          fprintf(stderr, "%s\n", d.msg);
          nftw(cache, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
          return 1;
        }
        nftw(cache, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        if (mkdir(cache, 0700) != 0) {
          fprintf(stderr, "coil: cannot create %s again\n", cache);
          return 1;
        }
      }
    double llvm_runs[COLD_RUNS];
    memcpy(llvm_runs, runs[1], sizeof llvm_runs);
    for (int c = 0; c < (llvm ? 2 : 1); c++)
      cold[c] = median(runs[c], COLD_RUNS);
    printf("%-24s %10.3f %10.1f %10.1f %8.1f %10.3f %10.3f\n", graphs[i].name, 1e3 * core, 1e3 * cold[0],
           1e3 * cold[1], llvm ? cold[0] / cold[1] : 0, 1e3 * hit[0], 1e3 * hit[1]);
    for (int r = 0; llvm && r < COLD_RUNS; r++)
      if (llvm_runs[r] == cold[1]) {
        snprintf(split[i], sizeof split[i], "%s", times[r]);
        break;
      }
  }
  if (llvm) { /* the plugin's own split of the median LLVM compile (the rest: the cache's files) */
    printf("llvm_cold, the median compile's phases:\n");
    for (size_t i = 0; i < sizeof graphs / sizeof *graphs; i++)
      if (pick[i])
        printf("  %-22s %s\n", graphs[i].name, split[i]);
  }
  printf("\n");
  double copy[3] = {0, copy_gbps((size_t)2 * 4096 * 4096 * 4, 1), copy_gbps((size_t)2 * 4096 * 4096 * 4, 2)};
  printf("coil bench: cpu plugin, 4096x4096 f32; each of %d rounds compiles both paths and runs them in turn\n"
         "on the same inputs, %d runs each: ms = the median run, llvm/cc = the median of the runs' ratios;\n"
         "the median of the rounds; memcpy %.1f GB/s on 1 thread, %.1f on 2\n",
         KERNEL_ROUNDS, PAIRED_RUNS, copy[1], copy[2]);
  printf("%-24s %8s %10s %8s %10s %10s %8s %10s\n", "graph", "threads", "cc_ms", "GB/s", "% memcpy", "llvm_ms",
         "GB/s", "llvm/cc");
  for (size_t i = 0; i < sizeof graphs / sizeof *graphs; i++)
    for (int threads = 1; pick[i] && threads <= 2; threads++) {
      double s[2] = {0, 0}, t[2][KERNEL_ROUNDS], ratio[KERNEL_ROUNDS];
      coil_diag d = {0};
      for (int r = 0; r < KERNEL_ROUNDS; r++) {
        timed_side side[2] = {{.codegen = "cc"}, {.codegen = llvm ? "llvm" : "cc"}};
        double sec[2];
        if (time_pair(&graphs[i], plugin_dir, threads, side, sec, &ratio[r], &d)) {
          fprintf(stderr, "%s: %s\n", graphs[i].name, d.msg);
          return 1;
        }
        t[0][r] = sec[0], t[1][r] = sec[1];
      }
      for (int c = 0; c < 2; c++)
        s[c] = median(t[c], KERNEL_ROUNDS);
      double gbps = graphs[i].min_bytes / s[0] / 1e9, lg = llvm ? graphs[i].min_bytes / s[1] / 1e9 : 0;
      printf("%-24s %8d %10.2f %8.1f %9.0f%% %10.2f %8.1f %10.2f\n", graphs[i].name, threads, 1e3 * s[0], gbps,
             100 * gbps / copy[threads], llvm ? 1e3 * s[1] : 0, lg, llvm ? median(ratio, KERNEL_ROUNDS) : 0);
      fflush(stdout);
    }
  nftw(cache, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}

/* ---- coil bench --conv: generated convolution against the cpu plugin's library call ---- */

typedef struct {
  const char *name;
  int c, hw;                 /* channels in and out, height and width (3x3, stride 1, pad 1) */
} conv_layer;

static const conv_layer conv_layers[] = {
    {"resnet_64x56x56", 64, 56},
    {"resnet_128x28x28", 128, 28},
    {"resnet_256x14x14", 256, 14},
};

int
coil_bench_conv(int argc, char **argv, const char *plugin_dir)
{
  int rounds = 3, threads = 2;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (strcmp(argv[i], "--conv") != 0) {
      fprintf(stderr, "coil: usage: coil bench --conv [--rounds N] [--threads T]\n");
      return 2;
    }
  }
  if (rounds < 1 || rounds > 100 || threads < 1 || threads > 4096) {
    fprintf(stderr, "coil: --rounds must be 1 to 100 and --threads 1 to 4096\n");
    return 2;
  }
  if (!plugin_dir) {
    fprintf(stderr, "coil: no plugin directory for the cpu plugin\n");
    return 1;
  }
  /* the claims each way, as coil_backend_compile_options makes them for [coil] convolution */
  coil_library_claim library = {"aten.convolution.default", ~0u};
  coil_compile_options lib = {.fuse = true, .verify = true, .library = &library, .nlibrary = 1};
  coil_compile_options gen = {.fuse = true, .verify = true};
  printf("coil bench --conv: cpu plugin, %d thread%s, f32, 3x3 stride 1 pad 1, no bias; per round the two\n"
         "run in turn on the same inputs, %d runs each: the median run and the median of the runs' ratios\n",
         threads, threads == 1 ? "" : "s", PAIRED_RUNS);
  printf("%-18s %6s %12s %10s %12s %10s %10s\n", "layer", "round", "library_ms", "GFLOP/s", "generated_ms",
         "GFLOP/s", "gen/lib");
  for (size_t l = 0; l < sizeof conv_layers / sizeof *conv_layers; l++) {
    const conv_layer *cl = &conv_layers[l];
    char text[512];
    snprintf(text, sizeof text,
             "coil 1\ngraph g(%%x: f32[1, %d, %d, %d], %%w: f32[%d, %d, 3, 3]) {\n"
             "  %%y = aten.convolution.default(%%x, %%w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
             "  return (%%y)\n}\n",
             cl->c, cl->hw, cl->hw, cl->c, cl->c);
    bench_graph bg = {cl->name, text, 0};
    double flops = 2.0 * cl->c * cl->c * 9 * cl->hw * cl->hw;
    for (int r = 0; r < rounds; r++) {
      timed_side side[2] = {{.codegen = "cc", .copts = &lib}, {.codegen = "cc", .copts = &gen}};
      double sec[2], q;
      coil_diag d = {0};
      if (time_pair(&bg, plugin_dir, threads, side, sec, &q, &d)) {
        fprintf(stderr, "%s: %s\n", cl->name, d.msg);
        return 1;
      }
      printf("%-18s %6d %12.3f %10.1f %12.3f %10.1f %9.2fx\n", cl->name, r + 1, 1e3 * sec[0], flops / sec[0] / 1e9,
             1e3 * sec[1], flops / sec[1] / 1e9, q);
      fflush(stdout);
    }
  }
  return 0;
}
