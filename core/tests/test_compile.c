/* The compiler core: fusion decisions and memory plans as counts (the decisions the design
 * promises, checked in a table), golden Wrapper IR text for each graph in core/tests/golden/
 * (reviewed snapshots: COIL_UPDATE_GOLDEN=1 rewrites them after an intended change), and every
 * compiled program verifies and survives a print/parse round trip. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coil/coil.h"

#define GOLDEN COIL_SOURCE_DIR "/core/tests/golden"

static coil_wir_program *
compile_file(const char *path, bool fuse)
{
  coil_diag d = {0};
  coil_graph *g = coil_graph_load(path, &d);
  cr_assert_not_null(g, "%s", d.msg);
  coil_compile_options o = {.fuse = fuse, .verify = true};
  coil_wir_program *p = coil_compile_graph(g, &o, &d);
  cr_assert_not_null(p, "%s: %s", path, d.msg);
  coil_graph_free(g);
  return p;
}

static int
count_lines(const coil_wir_program *p, coil_line_kind k)
{
  int n = 0;
  for (int i = 0; i < p->nlines; i++)
    n += p->lines[i].kind == k;
  return n;
}

/* The fusion decisions of DESIGN §5 and issue F2, and a few more. */
Test(compile, fusion_decisions)
{
  static const struct {
    const char *file;
    int kernels, externs;
  } cases[] = {
      {"gelu_affine.coil", 1, 0},   /* gelu(x*w + b): one kernel */
      {"softmax_last.coil", 1, 0},  /* softmax: both reductions and the division */
      {"layer_norm.coil", 1, 0},    /* layer_norm: mean, variance and the affine epilogue */
      {"addmm_relu.coil", 1, 1},    /* relu(addmm): mm + one kernel with bias and relu */
      {"reshape_fuse.coil", 1, 0},  /* an epilogue over a reshape of the reduced tensor */
      {"memory_reuse.coil", 1, 4},
      {"multi_output.coil", 0, 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", GOLDEN, cases[i].file);
    coil_wir_program *p = compile_file(path, true);
    cr_expect_eq(count_lines(p, COIL_LINE_KERNEL_CALL), cases[i].kernels, "%s: kernels", cases[i].file);
    cr_expect_eq(count_lines(p, COIL_LINE_EXTERN_CALL), cases[i].externs, "%s: extern calls", cases[i].file);
    coil_wir_free(p);
  }
}

Test(compile, without_fusion_every_node_is_a_kernel)
{
  coil_wir_program *p = compile_file(GOLDEN "/gelu_affine.coil", false);
  cr_expect_eq(count_lines(p, COIL_LINE_KERNEL_CALL), 1, "mul, add and gelu are inlined, not fused");
  coil_wir_free(p);
  p = compile_file(GOLDEN "/softmax_last.coil", false);
  cr_expect_eq(count_lines(p, COIL_LINE_KERNEL_CALL), 3, "max, sum and the division apart");
  coil_wir_free(p);
}

/* Intermediates are freed after their last use and their storage reused; a pointwise kernel
 * that is the last reader of a buffer it reads at the index it writes works in place. */
Test(compile, memory_plan)
{
  coil_wir_program *p = compile_file(GOLDEN "/memory_reuse.coil", true);
  cr_expect_eq(count_lines(p, COIL_LINE_ALLOC), 2, "two live 16x16 buffers at most");
  cr_expect_eq(count_lines(p, COIL_LINE_REUSE), 2);
  cr_expect_eq(count_lines(p, COIL_LINE_FREE), 3);
  const coil_line *relu = NULL;
  for (int i = 0; i < p->nlines; i++)
    if (p->lines[i].kind == COIL_LINE_KERNEL_CALL)
      relu = &p->lines[i];
  cr_assert_not_null(relu);
  cr_expect_eq(relu->nargs, 2);
  cr_expect_eq(relu->args[0], relu->args[1], "relu writes over the last mm's output in place");
  cr_expect_eq(p->peak_bytes, 2 * 16 * 16 * 4);
  for (int i = 0; i < p->nlines; i++) /* graph inputs are never freed or reused */
    if (p->lines[i].kind == COIL_LINE_FREE || p->lines[i].kind == COIL_LINE_REUSE) {
      int b = p->lines[i].kind == COIL_LINE_FREE ? p->lines[i].buffer : p->buffers[p->lines[i].buffer].base;
      cr_expect_neq(p->buffers[b].kind, COIL_BUF_INPUT, "line %d frees or reuses an input", i);
    }
  coil_wir_free(p);
  p = compile_file(GOLDEN "/softmax_last.coil", true);
  cr_expect_eq(p->peak_bytes, -1, "symbolic sizes: the peak is not a number");
  coil_wir_free(p);
}

static char *
slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  size_t got = fread(s, 1, (size_t)n, f);
  s[got] = 0;
  fclose(f);
  return s;
}

/* Each golden graph's Wrapper IR text equals its reviewed snapshot, verifies, and round-trips. */
Test(compile, golden_wrapper_ir)
{
  DIR *dir = opendir(GOLDEN);
  cr_assert_not_null(dir);
  int n = 0;
  bool update = getenv("COIL_UPDATE_GOLDEN") != NULL;
  struct dirent *e;
  while ((e = readdir(dir))) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".coil") != 0)
      continue;
    char path[512], want_path[512];
    snprintf(path, sizeof path, "%s/%s", GOLDEN, e->d_name);
    snprintf(want_path, sizeof want_path, "%s/%.*s.wir", GOLDEN, (int)(len - 5), e->d_name);
    coil_wir_program *p = compile_file(path, true);
    char *text = coil_wir_print(p);
    if (update) {
      FILE *f = fopen(want_path, "w");
      fputs(text, f);
      fclose(f);
    }
    char *want = slurp(want_path);
    cr_expect_not_null(want, "%s missing (run with COIL_UPDATE_GOLDEN=1 once)", want_path);
    if (want)
      cr_expect_str_eq(text, want, "%s differs from its snapshot", e->d_name);
    coil_diag d = {0};
    coil_wir_program *q = coil_wir_parse(want_path, text, strlen(text), &d);
    cr_expect_not_null(q, "%s: printed program does not parse: %s", e->d_name, d.msg);
    if (q) {
      char *again = coil_wir_print(q);
      cr_expect_str_eq(again, text, "%s: print(parse(print(p))) differs", e->d_name);
      cr_expect_eq(coil_wir_verify(q, &d), 0, "%s: parsed program does not verify: %s", e->d_name, d.msg);
      free(again);
      coil_wir_free(q);
    }
    free(want);
    free(text);
    coil_wir_free(p);
    n++;
  }
  closedir(dir);
  cr_expect_geq(n, 7);
}

/* The loop IR before fusion (the lowering's output) of each golden graph equals its snapshot
 * NAME.lower.txt, and the groups after fusion NAME.fused.txt. */
Test(compile, golden_lowering_and_fusion_dumps)
{
  DIR *dir = opendir(GOLDEN);
  cr_assert_not_null(dir);
  bool update = getenv("COIL_UPDATE_GOLDEN") != NULL;
  char tmp[] = "/tmp/coil-golden-XXXXXX";
  cr_assert_not_null(mkdtemp(tmp));
  struct dirent *e;
  int n = 0;
  while ((e = readdir(dir))) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".coil") != 0)
      continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", GOLDEN, e->d_name);
    coil_diag d = {0};
    coil_graph *g = coil_graph_load(path, &d);
    cr_assert_not_null(g, "%s", d.msg);
    coil_compile_options o = {.fuse = true, .verify = true, .dump_dir = tmp};
    coil_wir_program *p = coil_compile_graph(g, &o, &d);
    cr_assert_not_null(p, "%s", d.msg);
    const char *dumps[2][2] = {{"ir_pre_fusion.txt", "lower.txt"}, {"ir_post_fusion.txt", "fused.txt"}};
    for (int k = 0; k < 2; k++) {
      char got_path[600], want_path[600];
      snprintf(got_path, sizeof got_path, "%s/%s", tmp, dumps[k][0]);
      snprintf(want_path, sizeof want_path, "%s/%.*s.%s", GOLDEN, (int)(len - 5), e->d_name, dumps[k][1]);
      char *got = slurp(got_path);
      cr_assert_not_null(got);
      if (update) {
        FILE *f = fopen(want_path, "w");
        fputs(got, f);
        fclose(f);
      }
      char *want = slurp(want_path);
      cr_expect_not_null(want, "%s missing (run with COIL_UPDATE_GOLDEN=1 once)", want_path);
      if (want)
        cr_expect_str_eq(got, want, "%s differs from its snapshot", want_path);
      free(got);
      free(want);
      remove(got_path);
    }
    char other[600];
    for (int k = 0; k < 2; k++) {
      snprintf(other, sizeof other, "%s/%s", tmp, k ? "graph.txt" : "program.wir");
      remove(other);
    }
    coil_wir_free(p);
    coil_graph_free(g);
    n++;
  }
  closedir(dir);
  rmdir(tmp);
  cr_expect_geq(n, 9);
}

/* Every real export compiles to a program that verifies and round-trips. */
Test(compile, torch_exports_compile)
{
  DIR *dir = opendir(COIL_SHARED_DIR "/torch-exports");
  if (!dir)
    cr_skip_test("../shared/torch-exports not found");
  struct dirent *e;
  int n = 0;
  while ((e = readdir(dir))) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".coil") != 0)
      continue;
    char path[512];
    snprintf(path, sizeof path, "%s/torch-exports/%s", COIL_SHARED_DIR, e->d_name);
    coil_wir_program *p = compile_file(path, true);
    char *text = coil_wir_print(p);
    coil_diag d = {0};
    coil_wir_program *q = coil_wir_parse("printed.wir", text, strlen(text), &d);
    cr_expect_not_null(q, "%s: %s", e->d_name, d.msg);
    coil_wir_free(q);
    free(text);
    coil_wir_free(p);
    n++;
  }
  closedir(dir);
  cr_expect_geq(n, 12);
}

/* Outputs are handed back in buffers with the graph's sizes, dense: a reshape of a library op's
 * result is a view of it (no kernel copies it, and none copies a buffer onto itself), a reshape
 * of a fused value is stored with the output's sizes, a transpose or a strided slice is copied
 * into a buffer of its own, an input is named as it is. */
Test(compile, outputs_are_views_with_the_graphs_sizes)
{
  char path[512];
  snprintf(path, sizeof path, "%s/output_views.coil", GOLDEN);
  coil_wir_program *p = compile_file(path, true);
  const coil_line *ol = &p->lines[p->nlines - 1];
  cr_assert_eq(ol->kind, COIL_LINE_OUTPUT);
  cr_assert_eq(ol->nargs, 6);
  static const int64_t want[][4] = {{2, 36}, {640}, {2, 32, 10}, {2, 5, 32}, {2, 10, 32}, {2, 36}};
  static const int rank[] = {2, 1, 3, 3, 3, 2};
  static const coil_buf_kind kind[] = {COIL_BUF_VIEW, COIL_BUF_ALLOC, COIL_BUF_ALLOC, COIL_BUF_ALLOC,
                                       COIL_BUF_INPUT, COIL_BUF_VIEW};
  for (int i = 0; i < ol->nargs; i++) {
    const coil_buffer *b = &p->buffers[ol->args[i]];
    cr_expect_eq(b->kind, kind[i], "output %d is %s", i, b->name);
    cr_assert_eq(b->rank, rank[i], "output %d: rank %d", i, b->rank);
    int64_t stride = 1;
    for (int k = b->rank - 1; k >= 0; k--) {
      int64_t n, s;
      cr_assert(coil_sym_is_const(b->sizes[k], &n) && coil_sym_is_const(b->strides[k], &s));
      cr_expect_eq(n, want[i][k], "output %d size %d", i, k);
      cr_expect_eq(s, stride, "output %d stride %d", i, k);
      stride *= n;
    }
  }
  for (int i = 0; i < p->nlines; i++) { /* no kernel reads and writes one buffer as a copy */
    const coil_line *l = &p->lines[i];
    if (l->kind != COIL_LINE_KERNEL_CALL)
      continue;
    const coil_kernel *k = &p->kernels[l->kernel];
    for (int a = 0; a < l->nargs; a++)
      for (int b = a + 1; b < l->nargs; b++)
        cr_expect(l->args[a] != l->args[b] || k->ninsts > 2, "%s copies %s onto itself", k->name,
                  p->buffers[l->args[a]].name);
  }
  cr_expect_eq(count_lines(p, COIL_LINE_KERNEL_CALL), 2, "the residual with the transpose; the slice");
  coil_wir_free(p);
}
