/* Allocation failure at every allocation of a compile (SQLite-style fault injection, arena.h):
 * for each n, the nth allocation fails — once (transient), or it and every later one
 * (persistent). Each time the compile must fail with "out of memory", free everything it had
 * allocated (the heap's bytes in use are what they were; under the sanitizer build LeakSanitizer
 * checks the same at exit), and leave the graph intact: the next compile prints the same program.
 * The graphs are the golden ones, which between them reach every lowering family of the core. */
#include <criterion/criterion.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "coil/arena.h"
#include "coil/coil.h"

#define GOLDEN COIL_SOURCE_DIR "/core/tests/golden"

/* Under the sanitizers (several times slower) the compile sweeps take every STRIDE-th allocation. */
#if defined(__SANITIZE_ADDRESS__)
#define STRIDE 4
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRIDE 4
#endif
#endif
#ifndef STRIDE
#define STRIDE 1
#endif

/* Bytes the heap has handed out and not had back. glibc counts blocks in its per-thread cache
 * (tcache) as in use, so the count is exact only with that cache off: ctest runs this test with
 * GLIBC_TUNABLES=glibc.malloc.tcache_count=0; without it the count is not checked. */
static size_t
heap_in_use(void)
{
  const char *t = getenv("GLIBC_TUNABLES");
  if (!t || !strstr(t, "glibc.malloc.tcache_count=0"))
    return 0;
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

/* Sweeps n over every allocation of one compile of path (every step-th one). */
static void
sweep(const char *path, bool persistent, long step)
{
  coil_diag d = {0};
  coil_graph *g = coil_graph_load(path, &d);
  cr_assert(g, "%s", d.msg);
  coil_fault_alloc(0, false);
  coil_wir_program *p = coil_compile_graph(g, NULL, &d);
  cr_assert(p, "%s: %s", path, d.msg);
  char *want = coil_wir_print(p);
  coil_wir_free(p);
  coil_fault_alloc(LONG_MAX, false); /* counts without failing */
  p = coil_compile_graph(g, NULL, &d);
  long total = coil_fault_alloc_count();
  coil_fault_alloc(0, false);
  cr_assert(p && total > 10, "%s: %ld allocations", path, total);
  cr_log_info("%s: %ld allocations in a compile", path, total);
  coil_wir_free(p);
  size_t before = heap_in_use();
  long failures = 0;
  for (long n = 1; n <= total; n += step) {
    coil_diag e = {0};
    coil_fault_alloc(n, persistent);
    coil_wir_program *q = coil_compile_graph(g, NULL, &e);
    coil_fault_alloc(0, false);
    cr_assert_null(q, "%s: allocation %ld of %ld failed, yet the compile succeeded", path, n, total);
    cr_assert(strstr(e.msg, "out of memory compiling graph"), "%s: allocation %ld: %s", path, n, e.msg);
    cr_assert_eq(heap_in_use(), before, "%s: allocation %ld failed and %zd bytes stayed allocated", path,
                 n, (ssize_t)(heap_in_use() - before));
    failures++;
    if (n % (7 * step) == 1 || n + step > total) { /* the graph is intact */
      q = coil_compile_graph(g, NULL, &d);
      cr_assert(q, "%s: after allocation %ld failed: %s", path, n, d.msg);
      char *got = coil_wir_print(q);
      cr_assert_str_eq(got, want, "%s: a different program after allocation %ld failed", path, n);
      free(got);
      coil_wir_free(q);
    }
  }
  cr_assert_gt(failures, 0);
  free(want);
  coil_graph_free(g);
}

static const char *const graphs[] = {
    "addmm_relu", "conv_backward", "cumsum_scan", "data_movement", "gelu_affine", "inplace",
    "layer_norm", "library_ops", "memory_reuse", "multi_output", "output_views", "pointwise_math",
    "pool_backward", "relu_pool", "reshape_fuse", "scatter_chain", "softmax_last",
};

Test(oom, every_allocation_transient, .timeout = 600)
{
  for (size_t i = 0; i < sizeof graphs / sizeof *graphs; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.coil", GOLDEN, graphs[i]);
    sweep(path, false, STRIDE);
  }
}

Test(oom, every_allocation_persistent, .timeout = 600)
{
  for (size_t i = 0; i < sizeof graphs / sizeof *graphs; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.coil", GOLDEN, graphs[i]);
    sweep(path, true, 3 * STRIDE);
  }
}

/* The parser: every allocation of parsing each golden graph fails in turn, with a message naming
 * the file, nothing left allocated, and a parse afterwards gives the same graph. */
Test(oom, parse_every_allocation, .timeout = 600)
{
  for (size_t i = 0; i < sizeof graphs / sizeof *graphs; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.coil", GOLDEN, graphs[i]);
    coil_diag d = {0};
    coil_graph *g = coil_graph_load(path, &d);
    cr_assert(g, "%s", d.msg);
    char *want = coil_graph_print(g);
    coil_graph_free(g);
    coil_fault_alloc(LONG_MAX, false);
    g = coil_graph_load(path, &d);
    long total = coil_fault_alloc_count();
    coil_fault_alloc(0, false);
    coil_graph_free(g);
    cr_log_info("%s: %ld allocations in a parse", path, total);
    size_t before = heap_in_use();
    for (long n = 1; n <= total; n++) {
      coil_diag e = {0};
      coil_fault_alloc(n, n % 2 == 0); /* transient and persistent in turn */
      g = coil_graph_load(path, &e);
      coil_fault_alloc(0, false);
      cr_assert_null(g, "%s: allocation %ld of %ld failed, yet the parse succeeded", path, n, total);
      cr_assert(strstr(e.msg, "out of memory parsing the graph") && strstr(e.msg, graphs[i]), "%s", e.msg);
      cr_assert_eq(heap_in_use(), before, "%s: parse allocation %ld failed and memory stayed allocated", path, n);
    }
    g = coil_graph_load(path, &d);
    cr_assert(g, "%s", d.msg);
    char *got = coil_graph_print(g);
    cr_assert_str_eq(got, want);
    free(got);
    free(want);
    coil_graph_free(g);
  }
}

/* Outside a scope, running out of memory still ends the process with a message (coil.h). */
Test(oom, outside_a_scope_aborts, .signal = SIGABRT)
{
  coil_fault_alloc(1, false);
  coil_arena *a = coil_arena_new();
  coil_arena_free(a);
}

/* A request too large to be rounded up fails like any other, inside a scope. */
Test(oom, huge_arena_request)
{
  coil_oom_scope s;
  volatile bool unwound = false;
  if (COIL_OOM_TRY(&s)) {
    coil_arena *a = coil_arena_new();
    coil_arena_alloc(a, (size_t)-1 - 8);
    coil_oom_end(&s);
  } else {
    unwound = true;
  }
  cr_assert(unwound);
  cr_assert_eq(s.failed_bytes, (size_t)-1 - 8);
}
