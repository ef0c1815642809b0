/* Partial offload (partition.h, coil_backend_run_split): graphs split across a list of
 * backends, each statement on the first that claims it. Results are checked against the
 * reference interpreter; the plan of the MLP example against a golden file. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "graph.h"

static coil_backend_env
env_with(const char *device)
{
  static const char *keys[] = {"device"};
  static const char *fake[] = {"fake"}, *host[] = {"host"};
  static coil_backend_opts opts[1];
  opts[0] = (coil_backend_opts){.name = "template", .noptions = 1, .option_keys = keys,
                                .option_values = strcmp(device, "fake") == 0 ? fake : host};
  coil_backend_env env = {.nbackends = 1, .backends = opts};
  coil_plugin_dirs_init(&env.dirs, COIL_TEST_TEMPLATE_DIR, COIL_TEST_PLUGIN_DIR);
  return env;
}

static char *
slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  cr_assert(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = calloc((size_t)n + 1, 1);
  cr_assert(fread(s, 1, (size_t)n, f) == (size_t)n);
  fclose(f);
  return s;
}

static coil_graph *
load(const char *text)
{
  coil_diag d = {{0}};
  coil_graph *g = coil_graph_parse("t.coil", text, strlen(text), &d);
  cr_assert(g, "%s", d.msg);
  return g;
}

/* Random inputs for g's inputs (symbolic sizes = rows), run on `backends` and on ref, compared
 * in shape, dtype and values. */
static void
run_and_compare(const coil_graph *g, const char *backends, const char *device, int64_t rows)
{
  coil_tensor_list in = {0}, got = {0}, want = {0};
  uint64_t seed = 12345;
  for (int i = 0; i < g->ninputs; i++) {
    int64_t shape[COIL_MAX_RANK];
    for (int k = 0; k < g->inputs[i]->type.rank; k++)
      if (!coil_sym_is_const(g->inputs[i]->type.dims[k], &shape[k]))
        shape[k] = rows;
    coil_tensor t;
    cr_assert_eq(coil_tensor_init(&t, g->inputs[i]->type.dtype, g->inputs[i]->type.rank, shape, NULL), 0);
    for (int64_t e = 0; e < coil_tensor_numel(&t); e++) {
      seed = seed * 6364136223846793005u + 1442695040888963407u;
      coil_tensor_set_f64(&t, e, (double)((seed >> 33) % 2001) / 1000.0 - 1.0);
    }
    coil_tensor_list_add(&in, g->inputs[i]->name, &t);
  }
  coil_backend_env env = env_with(device);
  coil_diag d = {{0}};
  cr_assert_eq(coil_backend_run(g, backends, &env, &in, &got, &d), 0, "%s", d.msg);
  cr_assert_eq(coil_ref_run(g, &in, &want, &d), 0, "%s", d.msg);
  cr_assert_eq(got.n, want.n);
  for (int i = 0; i < got.n; i++) {
    const coil_tensor *a = &got.tensors[i], *b = &want.tensors[i];
    cr_assert_eq(a->dtype, b->dtype, "output %d dtype", i);
    cr_assert_eq(a->rank, b->rank, "output %d rank", i);
    for (int k = 0; k < a->rank; k++)
      cr_assert_eq(a->shape[k], b->shape[k], "output %d dim %d", i, k);
    for (int64_t e = 0; e < coil_tensor_numel(a); e++) {
      double x = coil_tensor_get_f64(a, e), y = coil_tensor_get_f64(b, e);
      cr_assert(fabs(x - y) <= 1e-5 + 1e-5 * fabs(y), "%s: output %d element %lld: %g, want %g", backends, i,
                (long long)e, x, y);
    }
  }
  coil_tensor_list_free(&in), coil_tensor_list_free(&got), coil_tensor_list_free(&want);
  coil_plugin_dirs_free(&env.dirs);
}

Test(partition, mlp_plan_matches_golden)
{
  char *text = slurp(COIL_TEST_SOURCE_DIR "/examples/mlp.coil");
  coil_graph *g = load(text);
  coil_backend_env env = env_with("host");
  coil_diag d = {{0}};
  char *plan = NULL;
  cr_assert_eq(coil_backend_run_split(g, "template,cpu", &env, NULL, NULL, &plan, &d), 0, "%s", d.msg);
  char *want = slurp(COIL_TEST_SOURCE_DIR "/core/tests/golden/partition_mlp.txt");
  if (getenv("COIL_UPDATE_GOLDEN")) {
    FILE *f = fopen(COIL_TEST_SOURCE_DIR "/core/tests/golden/partition_mlp.txt", "w");
    fputs(plan, f);
    fclose(f);
  } else {
    cr_assert_str_eq(plan, want);
  }
  /* the library calls on cpu, the pointwise kernels on the template, transfers between */
  cr_assert(strstr(plan, "part 0 on cpu"), "%s", plan);
  cr_assert(strstr(plan, "on template:"), "%s", plan);
  cr_assert(strstr(plan, "transfer buf0: cpu -> template"), "%s", plan);
  free(plan), free(want), free(text);
  coil_graph_free(g);
  coil_plugin_dirs_free(&env.dirs);
}

Test(partition, mlp_and_softmax_run_split_on_host_memory_and_the_fake_device)
{
  const char *files[] = {"/examples/mlp.coil", "/examples/softmax_rows.coil", "/examples/layernorm_gelu.coil"};
  for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
    char path[4096];
    snprintf(path, sizeof path, "%s%s", COIL_TEST_SOURCE_DIR, files[f]);
    char *text = slurp(path);
    coil_graph *g = load(text);
    run_and_compare(g, "template,cpu", "host", 5);
    run_and_compare(g, "template,cpu", "fake", 1);
    run_and_compare(g, "template,interp", "fake", 3);
    run_and_compare(g, "cpu,template", "host", 2); /* all on cpu: one part */
    coil_graph_free(g);
    free(text);
  }
}

/* supports_stmt sees shapes: the template refuses a tensor of more than 2^26 elements, so that
 * kernel goes to the next backend; the same graph at a small size stays on the template. */
Test(partition, the_statement_query_decides_by_shape)
{
  static const char big[] = "coil 1\ngraph big(%x: f32[8192, 8193]) {\n"
                            "  %y = aten.relu.default(%x)\n  return (%y)\n}\n";
  static const char small[] = "coil 1\ngraph small(%x: f32[8, 8]) {\n"
                              "  %y = aten.relu.default(%x)\n  return (%y)\n}\n";
  coil_backend_env env = env_with("host");
  coil_diag d = {{0}};
  char *plan = NULL;
  coil_graph *g = load(big);
  cr_assert_eq(coil_backend_run_split(g, "template,cpu", &env, NULL, NULL, &plan, &d), 0, "%s", d.msg);
  cr_assert(strstr(plan, "1 part(s)") && strstr(plan, "part 0 on cpu"), "%s", plan);
  free(plan);
  coil_graph_free(g);
  g = load(small);
  cr_assert_eq(coil_backend_run_split(g, "template,cpu", &env, NULL, NULL, &plan, &d), 0, "%s", d.msg);
  cr_assert(strstr(plan, "part 0 on template"), "%s", plan);
  free(plan);
  coil_graph_free(g);
  coil_plugin_dirs_free(&env.dirs);
}

Test(partition, a_statement_no_backend_claims_is_an_error_naming_it)
{
  char *text = slurp(COIL_TEST_SOURCE_DIR "/examples/mlp.coil");
  coil_graph *g = load(text);
  coil_backend_env env = env_with("host");
  coil_diag d = {{0}};
  /* template claims no product: [coil] matmul = auto makes the mm the core's reduction kernel,
   * which template cannot run either */
  cr_assert_neq(coil_backend_run_split(g, "template,template", &env, NULL, NULL, NULL, &d), 0);
  cr_assert(strstr(d.msg, "no backend claims line") && strstr(d.msg, "coil_per_fused_mm_0") &&
                strstr(d.msg, "template: kernel coil_per_fused_mm_0: 'reduce.sum' on f32"),
            "%s", d.msg);
  env.matmul = "library"; /* the library op, which no backend claims */
  d = (coil_diag){{0}};
  cr_assert_neq(coil_backend_run_split(g, "template,template", &env, NULL, NULL, NULL, &d), 0);
  cr_assert(strstr(d.msg, "no backend claims line") && strstr(d.msg, "aten.mm.default") &&
                strstr(d.msg, "template: library op 'aten.mm.default' on f32"),
            "%s", d.msg);
  env.matmul = NULL;
  d = (coil_diag){{0}};
  cr_assert_neq(coil_backend_run_split(g, "template,,cpu", &env, NULL, NULL, NULL, &d), 0);
  cr_assert(strstr(d.msg, "names separated by commas"), "%s", d.msg);
  free(text);
  coil_graph_free(g);
  coil_plugin_dirs_free(&env.dirs);
}
