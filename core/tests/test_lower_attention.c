/* Fused attention (core/attention.c, [coil] attention): the chains the matcher finds in the real
 * exports and why it refuses the near misses; what a claim of coil.attention makes of the
 * program; and the fused call's results on interp against the reference interpreter, rows with
 * every key masked included (0 with torch's guard, NaN without). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "backend.h"
#include "runtime.h"
#include "coil/sym.h"

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

/* The benchmark's graph (tools/bench_cuda.c, attention_fp16) at a small size: the scale after
 * the first bmm, no mask, no guard. */
static const char bench[] =
    "coil 1\n"
    "graph g(%q: f32[2, 3, 20, 8], %k: f32[2, 3, 17, 8], %v: f32[2, 3, 17, 8]) {\n"
    "  %kt = aten.transpose.int(%k, -1, -2)\n"
    "  %q3 = aten.view.default(%q, [6, 20, 8])\n"
    "  %k3 = aten.view.default(%kt, [6, 8, 17])\n"
    "  %s3 = aten.bmm.default(%q3, %k3)\n"
    "  %s = aten.view.default(%s3, [2, 3, 20, 17])\n"
    "  %m = aten.mul.Tensor(%s, 0.125)\n"
    "  %p = aten._softmax.default(%m, -1, False)\n"
    "  %p3 = aten.view.default(%p, [6, 20, 17])\n"
    "  %v3 = aten.view.default(%v, [6, 17, 8])\n"
    "  %o3 = aten.bmm.default(%p3, %v3)\n"
    "  %o = aten.view.default(%o3, [2, 3, 20, 8])\n"
    "  return (%o)\n"
    "}\n";

/* GQA's broadcast k, the scale on q, a bool mask turned into -inf (some rows lose every key:
 * 3 keys, each kept with probability 1/4 by run_on_interp's inputs) and, with GUARD, torch's guard for such rows. */
#define MASKED(GUARD, RESULT)                                                                          \
  "coil 1\n"                                                                                          \
  "graph g(%a: f32[2, 3, 5, 7], %b: f32[2, 1, 3, 7], %c: f32[2, 3, 3, 4], %m: bool[2, 1, 5, 3]) {\n"  \
  "  %be = aten.expand.default(%b, [2, 3, 3, 7])\n"                                                   \
  "  %kt = aten.transpose.int(%be, -1, -2)\n"                                                        \
  "  %qs = aten.mul.Scalar(%a, 0.5)\n"                                                               \
  "  %q3 = aten.reshape.default(%qs, [6, 5, 7])\n"                                                   \
  "  %k3 = aten.reshape.default(%kt, [6, 7, 3])\n"                                                   \
  "  %s3 = aten.bmm.default(%q3, %k3)\n"                                                             \
  "  %s = aten.view.default(%s3, [2, 3, 5, 3])\n"                                                    \
  "  %zero = aten.scalar_tensor.default(0.0, dtype=f32)\n"                                           \
  "  %ninf = aten.scalar_tensor.default(-inf, dtype=f32)\n"                                          \
  "  %mask = aten.where.self(%m, %zero, %ninf)\n"                                                    \
  "  %x = aten.add.Tensor(%s, %mask)\n"                                                              \
  "  %p = aten._softmax.default(%x, -1, False)\n" GUARD                                              \
  "  %p3 = aten.view.default(" RESULT ", [6, 5, 3])\n"                                               \
  "  %v3 = aten.reshape.default(%c, [6, 3, 4])\n"                                                    \
  "  %o3 = aten.bmm.default(%p3, %v3)\n"                                                             \
  "  %o = aten.view.default(%o3, [2, 3, 5, 4])\n"                                                    \
  "  return (%o)\n"                                                                                   \
  "}\n"
#define GUARD_BLOCK                                                                                  \
  "  %eq = aten.eq.Scalar(%x, -inf)\n"                                                               \
  "  %ne = aten.logical_not.default(%eq)\n"                                                          \
  "  %any = aten.any.dim(%ne, -1, True)\n"                                                           \
  "  %none = aten.logical_not.default(%any)\n"                                                       \
  "  %z = aten.full_like.default(%p, 0)\n"                                                           \
  "  %ps = aten.where.self(%none, %z, %p)\n"
static const char guarded[] = MASKED(GUARD_BLOCK, "%ps");
static const char unguarded[] = MASKED("", "%p");

static int
find(const coil_graph *g, coil_attention_match *m, int cap, char **why)
{
  coil_strbuf b = {0};
  int n = coil_attention_find(g, m, cap, &b);
  *why = coil_strbuf_take(&b);
  return n;
}

Test(attention, every_site_of_the_real_exports_matches)
{
  static const struct {
    const char *model;
    int sites;
    double scale;
    bool mask, zero_rows;
  } cases[] = {
      {"m05_gpt2_tiny", 2, 0.25, true, true},      /* head dim 16, causal mask from iota */
      {"m06_bert_tiny", 2, 0.25, true, true},      /* padding mask */
      {"m07_transformer_encoder_layer", 1, 0.25, false, true}, /* symbolic batch */
      {"m08_vit_tiny", 2, 0.25, false, true},
      {"e10_encoder_layer", 1, 0.35355339, false, true},        /* head dim 8 */
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    char path[512];
    snprintf(path, sizeof path, "%s/conformance/models/%s/graph.coil", COIL_TEST_SOURCE_DIR, cases[c].model);
    char *text = slurp(path);
    coil_graph *g = load(text);
    coil_attention_match m[8];
    char *why;
    int n = find(g, m, 8, &why);
    cr_expect_eq(n, cases[c].sites, "%s: %d matches, want %d; %s", cases[c].model, n, cases[c].sites, why);
    cr_expect_str_empty(why, "%s: %s", cases[c].model, why);
    for (int i = 0; i < n; i++) {
      cr_expect(fabs(m[i].scale - cases[c].scale) < 1e-6, "%s: scale %g", cases[c].model, m[i].scale);
      cr_expect_eq(m[i].mask != NULL, cases[c].mask, "%s: mask", cases[c].model);
      cr_expect_eq(m[i].zero_rows, cases[c].zero_rows, "%s: guard", cases[c].model);
      cr_expect_eq(m[i].scores->type.rank, 4, "%s", cases[c].model);
    }
    free(why);
    coil_graph_free(g);
    free(text);
  }
}

Test(attention, the_benchmark_graph_and_the_masked_graphs_match)
{
  coil_attention_match m[2];
  char *why;
  coil_graph *g = load(bench);
  cr_assert_eq(find(g, m, 2, &why), 1, "%s", why);
  cr_expect_float_eq(m[0].scale, 0.125, 1e-12);
  cr_expect_null(m[0].mask);
  cr_expect_not(m[0].zero_rows);
  cr_expect_str_eq(m[0].q->name, "q");
  cr_expect_str_eq(m[0].kt->name, "kt");
  cr_expect_str_eq(m[0].v->name, "v");
  coil_graph_free(g);
  free(why);
  g = load(guarded);
  cr_assert_eq(find(g, m, 2, &why), 1, "%s", why);
  cr_expect_float_eq(m[0].scale, 0.5, 1e-12);   /* the scale on q folds in */
  cr_expect_str_eq(m[0].q->name, "a");
  cr_expect_str_eq(m[0].kt->name, "kt");       /* k broadcast over heads, through the expand */
  cr_expect_str_eq(m[0].mask->name, "mask");
  cr_expect(m[0].zero_rows);
  coil_graph_free(g);
  free(why);
  g = load(unguarded);
  cr_assert_eq(find(g, m, 2, &why), 1, "%s", why);
  cr_expect_not(m[0].zero_rows);
  coil_graph_free(g);
  free(why);
}

/* bench with one statement replaced, whose reason must name what failed */
static void
expect_miss(const char *from, const char *to, const char *reason)
{
  char text[sizeof bench + 256];
  const char *at = strstr(bench, from);
  cr_assert(at, "%s", from);
  snprintf(text, sizeof text, "%.*s%s%s", (int)(at - bench), bench, to, at + strlen(from));
  coil_graph *g = load(text);
  coil_attention_match m[2];
  char *why;
  cr_expect_eq(find(g, m, 2, &why), 0, "%s: matched", to);
  cr_expect(strstr(why, reason), "%s: why is '%s', want '%s'", to, why, reason);
  cr_expect(strstr(why, "o3 (line "), "%s", why);
  free(why);
  coil_graph_free(g);
}

Test(attention, near_misses_say_why)
{
  /* the weights are returned too */
  expect_miss("  return (%o)", "  return (%o, %p)", "the softmax has other readers");
  /* a softmax over another dim */
  expect_miss("%p = aten._softmax.default(%m, -1, False)", "%p = aten._softmax.default(%m, 2, False)",
              "not over the last dim");
  /* a scale that is a tensor */
  expect_miss("%m = aten.mul.Tensor(%s, 0.125)", "%m = aten.mul.Tensor(%s, %s)",
              "not bmm(q, kᵀ) scaled and masked");
  /* a mask added before the scale: softmax((s + k) * c) is not what the call computes */
  expect_miss("%m = aten.mul.Tensor(%s, 0.125)",
              "%mk = aten.full.default([20, 17], 1.0)\n  %sk = aten.add.Tensor(%s, %mk)\n  %m = aten.mul.Tensor(%sk, 0.125)",
              "the mask is added before the scale");
  /* the scores are read elsewhere */
  expect_miss("  return (%o)", "  %t = aten.sum.default(%m)\n  return (%o, %t)", "the scores have other readers");
}

static coil_wir_program *
compile(const coil_graph *g, const coil_library_claim *claims, int nclaims)
{
  coil_diag d = {{0}};
  coil_compile_options o = {.fuse = true, .verify = true, .library = claims, .nlibrary = nclaims};
  coil_wir_program *p = coil_compile_graph(g, &o, &d);
  cr_assert_not_null(p, "%s", d.msg);
  return p;
}

static int
externs(const coil_wir_program *p, const char *op)
{
  int n = 0;
  for (int i = 0; i < p->nlines; i++)
    n += p->lines[i].kind == COIL_LINE_EXTERN_CALL && strcmp(p->lines[i].op, op) == 0;
  return n;
}

Test(attention, a_claim_makes_one_call_and_no_claim_changes_nothing)
{
  coil_graph *g = load(bench);
  coil_library_claim f32 = {"coil.attention", 1u << COIL_F32}, f16 = {"coil.attention", 1u << COIL_F16};
  coil_wir_program *p = compile(g, &f32, 1);
  cr_expect_eq(externs(p, "coil.attention"), 1);
  cr_expect_eq(externs(p, "aten.bmm.default"), 0);
  cr_expect_eq(p->nkernels, 0, "the softmax is gone: %d kernels", p->nkernels);
  for (int i = 0; i < p->nlines; i++)
    if (p->lines[i].kind == COIL_LINE_EXTERN_CALL) {
      const coil_line *l = &p->lines[i];
      cr_expect_eq(l->nargs, 3);
      cr_assert_eq(l->nxparams, 2);
      cr_expect_str_eq(l->xparams[0].name, "scale");
      cr_expect_float_eq(l->xparams[0].f, 0.125, 1e-12);
      cr_expect_str_eq(l->xparams[1].s, "nan");
      const coil_buffer *k = &p->buffers[l->args[1]], *o = &p->buffers[l->outs[0]];
      int64_t v;
      cr_expect(coil_sym_is_const(k->sizes[2], &v) && v == 17, "k is [.., S, E]");
      cr_expect(coil_sym_is_const(k->sizes[3], &v) && v == 8);
      cr_expect_eq(o->rank, 4);
    }
  coil_wir_free(p);
  /* claimed for another dtype only, and not claimed: the chain as written */
  for (int c = 0; c < 2; c++) {
    p = compile(g, c ? NULL : &f16, c ? 0 : 1);
    cr_expect_eq(externs(p, "coil.attention"), 0);
    cr_expect_eq(externs(p, "aten.bmm.default"), 2);
    coil_wir_free(p);
  }
  coil_graph_free(g);
}

Test(attention, the_setting_decides_the_claims)
{
  coil_library_claim claims[COIL_BACKEND_MAX_CLAIMS];
  coil_compile_options o = {0};
  coil_backend_compile_options(NULL, NULL, "generated", "library", NULL, claims, &o);
  cr_assert_eq(o.nlibrary, 1);
  cr_expect_str_eq(o.library[0].op, "coil.attention");
  coil_backend_compile_options(NULL, NULL, "library", "library", NULL, claims, &o);
  cr_expect_eq(o.nlibrary, 2);
  coil_backend_compile_options(NULL, NULL, NULL, "generated", NULL, claims, &o);
  cr_expect_eq(o.nlibrary, 0);
  coil_backend_compile_options(NULL, NULL, NULL, "auto", NULL, claims, &o);
  cr_expect_eq(o.nlibrary, 0, "auto without a plugin to ask");
}

/* g on interp (which claims coil.attention: the fused call) against ref, and its program has
 * the call; NaN must be where ref has NaN. */
static void
run_on_interp(const char *text, int *nan_rows)
{
  coil_graph *g = load(text);
  coil_tensor_list in = {0}, got = {0}, want = {0};
  uint64_t seed = 99;
  for (int i = 0; i < g->ninputs; i++) {
    int64_t shape[COIL_MAX_RANK];
    for (int k = 0; k < g->inputs[i]->type.rank; k++)
      cr_assert(coil_sym_is_const(g->inputs[i]->type.dims[k], &shape[k]));
    coil_tensor t;
    cr_assert_eq(coil_tensor_init(&t, g->inputs[i]->type.dtype, g->inputs[i]->type.rank, shape, NULL), 0);
    for (int64_t e = 0; e < coil_tensor_numel(&t); e++) {
      seed = seed * 6364136223846793005u + 1442695040888963407u;
      coil_tensor_set_f64(&t, e, t.dtype == COIL_BOOL ? (double)(seed >> 62 == 3) : (double)((seed >> 33) % 2001) / 500.0 - 2.0);
    }
    coil_tensor_list_add(&in, g->inputs[i]->name, &t);
  }
  coil_backend_env env = {.attention = "library"};
  coil_plugin_dirs_init(&env.dirs, NULL, COIL_TEST_PLUGIN_DIR_INTERP);
  coil_diag d = {{0}};
  cr_assert_eq(coil_backend_run(g, "interp", &env, &in, &got, &d), 0, "%s", d.msg);
  cr_assert_eq(coil_ref_run(g, &in, &want, &d), 0, "%s", d.msg);
  cr_assert_eq(got.n, 1);
  const coil_tensor *a = &got.tensors[0], *b = &want.tensors[0];
  cr_assert_eq(a->dtype, b->dtype);
  cr_assert_eq(a->rank, b->rank);
  for (int k = 0; k < a->rank; k++)
    cr_assert_eq(a->shape[k], b->shape[k]);
  int nans = 0;
  for (int64_t e = 0; e < coil_tensor_numel(a); e++) {
    double x = coil_tensor_get_f64(a, e), y = coil_tensor_get_f64(b, e);
    if (isnan(y)) {
      cr_assert(isnan(x), "element %lld: %g, want NaN", (long long)e, x);
      nans++;
    } else {
      cr_assert(fabs(x - y) <= 1e-5 + 1e-5 * fabs(y), "element %lld: %g, want %g", (long long)e, x, y);
    }
  }
  *nan_rows = nans / 4;
  /* the program that ran had the call: compile it as the run did */
  coil_library_claim claim = {"coil.attention", 1u << COIL_F32};
  coil_wir_program *p = compile(g, &claim, 1);
  cr_expect_eq(externs(p, "coil.attention"), 1);
  coil_wir_free(p);
  coil_tensor_list_free(&in), coil_tensor_list_free(&got), coil_tensor_list_free(&want);
  coil_plugin_dirs_free(&env.dirs);
  coil_graph_free(g);
}

Test(attention, fused_results_equal_ref_with_masked_rows)
{
  int nan_rows;
  run_on_interp(bench, &nan_rows);
  cr_expect_eq(nan_rows, 0);
  run_on_interp(guarded, &nan_rows);
  cr_expect_eq(nan_rows, 0, "the guard makes a masked row 0");
  run_on_interp(unguarded, &nan_rows);
  cr_expect_gt(nan_rows, 0, "these inputs have rows with every key masked (NaN without the guard)");
}

/* A plugin's statement query (ABI 1.4 supports_stmt) on a coil.attention call: yes only for
 * head dim `head_dim` (a fused kernel's constraint, as cuda's tensor-core kernel has). */
static int64_t head_dim;
static int asked;

static coil_support
stmt_by_head_dim(const coil_plugin *self, const coil_plugin_stmt *st)
{
  (void)self;
  if (st->kind != COIL_STMT_EXTERN || strcmp(st->op, "coil.attention") != 0)
    return COIL_SUPPORTED;
  asked++;
  const coil_plugin_value *o = st->outputs[0];
  cr_assert_eq(st->ninputs, 3);
  cr_assert_eq(o->rank, 4);
  cr_assert(strstr(st->text, "extern_call coil.attention("), "%s", st->text);
  return o->sizes[3] == head_dim ? COIL_SUPPORTED : COIL_UNSUPPORTED;
}

Test(attention, the_statement_query_can_refuse_a_call_by_its_shapes)
{
  coil_graph *g = load(bench); /* head dim 8 */
  coil_loaded_plugin lp = {0};
  lp.api.supports_stmt = stmt_by_head_dim;
  coil_library_claim claim = {"coil.attention", 1u << COIL_F32};
  coil_diag d = {{0}};
  for (int yes = 0; yes < 2; yes++) {
    head_dim = yes ? 8 : 64;
    asked = 0;
    coil_compile_options o = {.fuse = true, .verify = true, .library = &claim, .nlibrary = 1, .plugin = &lp};
    coil_wir_program *p = coil_compile_graph(g, &o, &d);
    cr_assert_not_null(p, "%s", d.msg);
    cr_expect_eq(asked, 1);
    cr_expect_eq(externs(p, "coil.attention"), yes, "head dim %lld", (long long)head_dim);
    cr_expect_eq(externs(p, "aten.bmm.default"), yes ? 0 : 2);
    coil_wir_free(p);
  }
  coil_graph_free(g);
}
