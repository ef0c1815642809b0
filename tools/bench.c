/* bench.c — `coil bench --core-only`: how the compiler core scales. It generates a graph of N
 * statements (blocks of mm, bias add, relu, a row sum, a division and a residual add, as in a
 * deep MLP), then times parsing and compiling it to a verified Wrapper IR program, and reports
 * time per statement and the process's peak memory, for several N to show the growth. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "coil/coil.h"
#include "graph.h"

static double
now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A graph of about n statements, 6 a block. */
static char *
generate(int n)
{
  coil_strbuf b = {0};
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

static long
peak_rss_kib(void)
{
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

int coil_bench_core(int argc, char **argv);
int
coil_bench_core(int argc, char **argv)
{
  int max_nodes = 10000;
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
  printf("coil bench --core-only: parse + compile to verified Wrapper IR (no plugin)\n");
  printf("%10s %10s %10s %12s %12s %10s %12s\n", "statements", "kernels", "externs", "parse_ms",
         "compile_ms", "us/stmt", "peak_rss_MiB");
  for (int n = max_nodes / 8; n <= max_nodes; n *= 2) {
    if (n < 6)
      continue;
    char *text = generate(n);
    coil_diag d = {0};
    double t0 = now();
    coil_graph *g = coil_graph_parse("bench.coil", text, strlen(text), &d);
    double t1 = now();
    if (!g) {
      fprintf(stderr, "%s\n", d.msg);
      free(text);
      return 1;
    }
    coil_wir_program *p = coil_compile_graph(g, NULL, &d);
    double t2 = now();
    if (!p) {
      fprintf(stderr, "%s\n", d.msg);
      return 1;
    }
    int kernels = 0, externs = 0;
    for (int i = 0; i < p->nlines; i++) {
      kernels += p->lines[i].kind == COIL_LINE_KERNEL_CALL;
      externs += p->lines[i].kind == COIL_LINE_EXTERN_CALL;
    }
    int stmts = g->nnodes;
    printf("%10d %10d %10d %12.2f %12.2f %10.2f %12.1f\n", stmts, kernels, externs, 1e3 * (t1 - t0),
           1e3 * (t2 - t1), 1e6 * (t2 - t0) / stmts, (double)peak_rss_kib() / 1024.0);
    fflush(stdout);
    coil_wir_free(p);
    coil_graph_free(g);
    free(text);
  }
  return 0;
}
