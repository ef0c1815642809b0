/* Backends agree: every example, golden and exported graph runs on the interp and cpu plugins
 * (through the whole pipeline: lowering, fusion, Wrapper IR, the plugin ABI, and for cpu the
 * generated C compiled by the system compiler) to the reference interpreter's outputs, and the
 * PyTorch exports to PyTorch's own outputs. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "graph.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

static coil_backend_env
interp_env(void)
{
  coil_backend_env env = {0};
  coil_plugin_dirs_init(&env.dirs, NULL, COIL_TEST_PLUGIN_DIR_INTERP);
  return env;
}

/* Deterministic inputs for every graph input: normal floats, small integers, fair bools; size
 * symbols take `size`. */
static void
random_inputs(const coil_graph *g, int64_t size, uint64_t seed, coil_tensor_list *out)
{
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int i = 0; i < g->ninputs; i++) {
    const coil_type *t = &g->inputs[i]->type;
    int64_t shape[COIL_MAX_RANK];
    int64_t *vals = calloc((size_t)coil_sym_nvars(g->sym) + 1, sizeof *vals);
    for (int v = 0; v < coil_sym_nvars(g->sym); v++)
      vals[v] = size;
    for (int k = 0; k < t->rank; k++)
      cr_assert_eq(coil_sym_eval(g->sym, t->dims[k], vals, coil_sym_nvars(g->sym), &shape[k], NULL), 0);
    free(vals);
    coil_tensor x;
    cr_assert_eq(coil_tensor_init(&x, t->dtype, t->rank, shape, NULL), 0);
    for (int64_t e = 0; e < coil_tensor_numel(&x); e++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      double u1 = ((double)(s >> 11) + 0.5) / 9007199254740992.0;
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      double u2 = ((double)(s >> 11) + 0.5) / 9007199254740992.0;
      if (coil_dtype_is_float(t->dtype))
        coil_tensor_set_f64(&x, e, sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
      else
        coil_tensor_set_i64(&x, e, t->dtype == COIL_BOOL ? (int64_t)(u1 < 0.5) : (int64_t)(u1 * 5));
    }
    coil_tensor_list_add(out, g->inputs[i]->name, &x);
  }
}

/* Runs g on ref and interp with the same inputs; every output must agree within the dtype's
 * tolerance (interp computes f32 in f32 where ref computes in f64). Returns mismatches. */
static const char *const plugins[] = {"interp", "cpu"};

static int
agree_on(const char *backend, const char *path, coil_graph *g, const coil_tensor_list *in)
{
  coil_backend_env env = interp_env();
  coil_diag d = {0};
  coil_tensor_list a = {0}, b = {0};
  cr_assert_eq(coil_backend_run(g, "ref", &env, in, &a, &d), 0, "%s on ref: %s", path, d.msg);
  cr_assert_eq(coil_backend_run(g, backend, &env, in, &b, &d), 0, "%s on %s: %s", path, backend, d.msg);
  cr_assert_eq(a.n, b.n);
  int bad = 0;
  for (int i = 0; i < a.n; i++) {
    double rtol, atol;
    coil_tolerance_default(a.tensors[i].dtype, &rtol, &atol);
    /* plugins compute f32 in f32 (BLAS included) where ref computes in f64: a chain of four
     * matmuls over normal inputs drifts by ~1e-4 relative where values cancel */
    rtol = rtol < 2e-4 ? 2e-4 : rtol;
    coil_compare c;
    bool ok = coil_tensor_allclose(&b.tensors[i], &a.tensors[i], rtol, atol, &c);
    cr_expect(ok, "%s out%d: %s differs from ref at %lld of %lld elements (worst: %.9g vs %.9g)", path, i, backend,
              (long long)c.mismatches, (long long)coil_tensor_numel(&a.tensors[i]), c.worst_got, c.worst_want);
    bad += !ok;
  }
  coil_tensor_list_free(&a);
  coil_tensor_list_free(&b);
  coil_plugin_dirs_free(&env.dirs);
  return bad;
}

static int
agree(const char *path, coil_graph *g, const coil_tensor_list *in)
{
  int bad = 0;
  for (size_t k = 0; k < sizeof plugins / sizeof *plugins; k++)
    bad += agree_on(plugins[k], path, g, in);
  return bad;
}

static int
agree_on_dir(const char *dir, int64_t size)
{
  DIR *dp = opendir(dir);
  if (!dp)
    return -1;
  struct dirent *e;
  int n = 0;
  while ((e = readdir(dp))) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".coil") != 0)
      continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    coil_diag d = {0};
    coil_graph *g = coil_graph_load(path, &d);
    cr_assert_not_null(g, "%s", d.msg);
    coil_tensor_list in = {0};
    random_inputs(g, size, (uint64_t)len, &in);
    cr_expect_eq(agree(path, g, &in), 0);
    coil_tensor_list_free(&in);
    coil_graph_free(g);
    n++;
  }
  closedir(dp);
  return n;
}

Test(backend, plugins_match_ref_on_examples_and_goldens, .timeout = 600)
{
  cr_expect_geq(agree_on_dir(COIL_SOURCE_DIR "/examples", 5), 4);
  cr_expect_geq(agree_on_dir(COIL_SOURCE_DIR "/core/tests/golden", 5), 7);
  cr_expect_geq(agree_on_dir(COIL_SOURCE_DIR "/core/tests/golden", 1), 7); /* size-1 symbols */
}

Test(backend, plugins_match_ref_on_exports_with_random_inputs, .timeout = 600)
{
  int n = agree_on_dir(COIL_SHARED_DIR "/torch-exports", 7);
  if (n < 0)
    cr_skip_test("../shared/torch-exports not found");
  cr_expect_geq(n, 12);
}

/* Through the whole pipeline on interp, the exports give PyTorch's outputs. */
Test(backend, plugins_match_pytorch, .timeout = 600)
{
  const char *dir = COIL_SHARED_DIR "/torch-exports";
  DIR *dp = opendir(dir);
  if (!dp)
    cr_skip_test("%s not found", dir);
  struct dirent *e;
  int cases = 0;
  while ((e = readdir(dp))) {
    size_t len = strlen(e->d_name);
    if (len < 20 || strcmp(e->d_name + len - 19, ".inputs.safetensors") != 0)
      continue;
    char stem[256], graph_stem[256], path[1024];
    snprintf(stem, sizeof stem, "%.*s", (int)(len - 19), e->d_name);
    snprintf(graph_stem, sizeof graph_stem, "%s", stem);
    char *us = strrchr(graph_stem, '_'); /* NAME_0: a second size of NAME */
    snprintf(path, sizeof path, "%s/%s.coil", dir, graph_stem);
    if (access(path, R_OK) != 0 && us) {
      *us = 0;
      snprintf(path, sizeof path, "%s/%s.coil", dir, graph_stem);
    }
    coil_diag d = {0};
    coil_graph *g = coil_graph_load(path, &d);
    cr_assert_not_null(g, "%s", d.msg);
    coil_tensor_list in = {0}, want = {0}, got = {0}, w = {0};
    snprintf(path, sizeof path, "%s/%s.inputs.safetensors", dir, stem);
    cr_assert_eq(coil_safetensors_read(path, &in, &d), 0, "%s", d.msg);
    snprintf(path, sizeof path, "%s/%s.weights.safetensors", dir, graph_stem);
    if (access(path, R_OK) == 0) {
      cr_assert_eq(coil_safetensors_read(path, &w, &d), 0, "%s", d.msg);
      for (int i = 0; i < w.n; i++)
        coil_tensor_list_add(&in, w.names[i], &w.tensors[i]);
    }
    snprintf(path, sizeof path, "%s/%s.expected.safetensors", dir, stem);
    cr_assert_eq(coil_safetensors_read(path, &want, &d), 0, "%s", d.msg);
    for (size_t k = 0; k < sizeof plugins / sizeof *plugins; k++) {
      coil_backend_env env = interp_env();
      cr_assert_eq(coil_backend_run(g, plugins[k], &env, &in, &got, &d), 0, "%s on %s: %s", stem, plugins[k], d.msg);
      for (int i = 0; i < got.n; i++) {
        const coil_tensor *x = coil_tensor_list_find(&want, got.names[i]);
        cr_assert_not_null(x);
        double rtol, atol;
        coil_tolerance_default(x->dtype, &rtol, &atol);
        coil_compare c;
        cr_expect(coil_tensor_allclose(&got.tensors[i], x, rtol, atol, &c), "%s %s on %s: %lld mismatches (%.9g vs %.9g)",
                  stem, got.names[i], plugins[k], (long long)c.mismatches, c.worst_got, c.worst_want);
      }
      coil_tensor_list_free(&got);
      coil_plugin_dirs_free(&env.dirs);
    }
    coil_tensor_list_free(&in), coil_tensor_list_free(&want), coil_tensor_list_free(&got), coil_tensor_list_free(&w);
    coil_graph_free(g);
    cases++;
  }
  closedir(dp);
  cr_expect_geq(cases, 13, "twelve exports and one second size");
}

/* Variance through the welford reductions, on values far from zero (a one-pass sum of squares
 * in f32 would lose every digit here): rows with a tail past the 16 lanes, a whole-tensor
 * reduction large enough to split across threads (no x loop), several r loops from a
 * permuted view, var_mean's mean, f64, and an empty row (NaN, as PyTorch). */
Test(backend, welford_variance_matches_ref, .timeout = 300)
{
  static const char text[] =
      "coil 1\n"
      "graph w(%x: f32[3, 1001], %y: f32[70003], %z: f32[6, 37, 190], %e: f32[4, 0], %h: f64[5, 77]) {\n"
      "  %xo = aten.add.Tensor(%x, 1000.0)\n"
      "  %vm = aten.var_mean.correction(%xo, [1], correction=1, keepdim=False)\n"
      "  %v0 = getitem(%vm, 0)\n"
      "  %m0 = getitem(%vm, 1)\n"
      "  %yo = aten.mul.Tensor(%y, 3.0)\n"
      "  %y2 = aten.add.Tensor(%yo, -500.0)\n"
      "  %v1 = aten.var.correction(%y2, None, correction=0, keepdim=False)\n"
      "  %zp = aten.permute.default(%z, [2, 0, 1])\n"
      "  %v2 = aten.var.correction(%zp, [0, 2], correction=1, keepdim=True)\n"
      "  %v3 = aten.var.correction(%e, [1], correction=1, keepdim=False)\n"
      "  %v4 = aten.var.correction(%h, [1], correction=1, keepdim=False)\n"
      "  %v5 = aten.var.correction(%zp, None, correction=1, keepdim=False)\n"
      "  return (%v0, %m0, %v1, %v2, %v3, %v4, %v5)\n"
      "}\n";
  coil_diag d = {0};
  coil_graph *g = coil_graph_parse("welford.coil", text, sizeof text - 1, &d);
  cr_assert_not_null(g, "%s", d.msg);
  coil_tensor_list in = {0};
  random_inputs(g, 1, 11, &in);
  cr_expect_eq(agree("welford.coil", g, &in), 0);
  coil_tensor_list out = {0};
  coil_backend_env env = interp_env();
  cr_assert_eq(coil_backend_run(g, "cpu", &env, &in, &out, &d), 0, "%s", d.msg);
  cr_expect(isnan(coil_tensor_get_f64(&out.tensors[4], 0)), "the variance of an empty row is NaN");
  coil_tensor_list_free(&out);
  coil_plugin_dirs_free(&env.dirs);
  coil_tensor_list_free(&in);
  coil_graph_free(g);
}

/* A program that fails between allocating an intermediate and releasing it (here a library
 * call rejecting an index) leaves nothing allocated: five failed runs of a graph with a 4 MiB
 * intermediate must not grow the heap by its size. (Under AddressSanitizer glibc's counters
 * stand still; LeakSanitizer checks instead.) */
/* A graph input written in place gets its final value copied back by the plugins (the caller's
 * tensor holds it after the run), equal to what the graph returns for it on ref. */
Test(backend, inplace_input_is_copied_back, .timeout = 120)
{
  static const char text[] =
      "coil 1\ngraph g(%x: f32[6, 4], %v: f32[3, 4], %y: f32[2, 4]) {\n"
      "  %i = aten.arange.start_step(0, 6, 2)\n"
      "  %a = aten.index_put_.default(%x, [%i], %v, True)\n"
      "  %s = aten.slice.Tensor(%x, 0, 1, 3)\n"
      "  %c = aten.copy_.default(%s, %y)\n"
      "  %r = aten.relu.default(%x)\n"
      "  return (%r, %x)\n}\n";
  coil_diag d = {0};
  coil_graph *g = coil_graph_parse("g.coil", text, sizeof text - 1, &d);
  cr_assert_not_null(g, "%s", d.msg);
  for (size_t k = 0; k < sizeof plugins / sizeof *plugins; k++) {
    coil_tensor_list in = {0}, want = {0}, got = {0};
    random_inputs(g, 1, 7, &in);
    coil_tensor before;
    cr_assert_eq(coil_tensor_init(&before, COIL_F32, 2, in.tensors[0].shape, NULL), 0);
    memcpy(before.data, in.tensors[0].data, coil_tensor_nbytes(&before));
    coil_backend_env env = interp_env();
    cr_assert_eq(coil_backend_run(g, "ref", &env, &in, &want, &d), 0, "ref: %s", d.msg);
    cr_assert_eq(coil_backend_run(g, plugins[k], &env, &in, &got, &d), 0, "%s: %s", plugins[k], d.msg);
    coil_compare c;
    cr_expect(coil_tensor_allclose(&got.tensors[1], &want.tensors[1], 1e-6, 1e-6, &c), "%s: returned %%x", plugins[k]);
    cr_expect(coil_tensor_allclose(&in.tensors[0], &want.tensors[1], 1e-6, 1e-6, &c),
              "%s: the caller's %%x does not hold its final value (copy_back)", plugins[k]);
    cr_expect(!coil_tensor_allclose(&before, &want.tensors[1], 1e-6, 1e-6, &c), "the graph changes %%x");
    coil_tensor_free(&before);
    coil_tensor_list_free(&in);
    coil_tensor_list_free(&want);
    coil_tensor_list_free(&got);
    coil_plugin_dirs_free(&env.dirs);
  }
  coil_graph_free(g);
}

Test(backend, a_failing_program_releases_its_buffers, .timeout = 120)
{
  static const char text[] = "coil 1\n"
                             "graph leak(%w: f32[1024, 1024], %i: i64[2]) {\n"
                             "  %t = aten.mul.Tensor(%w, %w)\n"
                             "  %e = aten.embedding.default(%t, %i)\n"
                             "  return (%e)\n"
                             "}\n";
  coil_diag d = {0};
  coil_graph *g = coil_graph_parse("leak.coil", text, sizeof text - 1, &d);
  cr_assert_not_null(g, "%s", d.msg);
  coil_tensor w, i;
  cr_assert_eq(coil_tensor_init(&w, COIL_F32, 2, (int64_t[]){1024, 1024}, NULL), 0);
  cr_assert_eq(coil_tensor_init(&i, COIL_I64, 1, (int64_t[]){2}, NULL), 0);
  coil_tensor_set_i64(&i, 1, 5000); /* out of range for 1024 embeddings */
  coil_tensor_list in = {0}, out = {0};
  coil_tensor_list_add(&in, "w", &w);
  coil_tensor_list_add(&in, "i", &i);
  coil_backend_env env = interp_env();
  for (size_t k = 0; k < sizeof plugins / sizeof *plugins; k++) {
    size_t before = 0;
    for (int run = 0; run < 6; run++) {
      cr_assert_neq(coil_backend_run(g, plugins[k], &env, &in, &out, &d), 0);
      cr_assert(strstr(d.msg, "out of range"), "%s", d.msg);
      struct mallinfo2 m = mallinfo2();
      if (run == 0)
        before = m.uordblks + m.hblkhd; /* after the first run: the plugin is loaded */
      else
        cr_expect_lt(m.uordblks + m.hblkhd, before + ((size_t)4 << 20), "%s: %zu bytes more after %d failed runs",
                     plugins[k], m.uordblks + m.hblkhd - before, run);
    }
  }
#ifdef __SANITIZE_ADDRESS__
  cr_expect_eq(__lsan_do_recoverable_leak_check(), 0, "LeakSanitizer found leaks (see its report above)");
#endif
  coil_tensor_list_free(&in);
  coil_plugin_dirs_free(&env.dirs);
  coil_graph_free(g);
}

/* The four scan kinds (Wrapper IR 1.4) from a hand-written program, on each plugin: max and min
 * propagate NaN, prod carries infinities, an i64 sum wraps, and rows of 700 cross block-sized
 * chunks. Expected values are computed here in double / uint64, element by element. */
Test(backend, scan_kinds_from_a_program, .timeout = 120)
{
  static const char text[] = "wir 1.4\n"
                             "program scans\n"
                             "input arg0 'x': f32[3, 700] stride [700, 1]\n"
                             "input arg1 'n': i64[3, 700] stride [700, 1]\n"
                             "\n"
                             "kernel k0 persistent x[3] r[700] {\n"
                             "  param in0: f32\n  param in1: i64\n"
                             "  param out0: f32 out\n  param out1: f32 out\n  param out2: f32 out\n  param out3: i64 out\n"
                             "  %0: f32 = load in0[r0 + 700*x0]\n"
                             "  %1: f32 = scan max %0\n"
                             "  store out0[r0 + 700*x0], %1\n"
                             "  %3: f32 = scan min %0\n"
                             "  store out1[r0 + 700*x0], %3\n"
                             "  %5: f32 = scan prod %0\n"
                             "  store out2[r0 + 700*x0], %5\n"
                             "  %7: i64 = load in1[r0 + 700*x0]\n"
                             "  %8: i64 = scan sum %7\n"
                             "  store out3[r0 + 700*x0], %8\n"
                             "}\n"
                             "\n"
                             "alloc buf0: f32[3, 700] stride [700, 1]\n"
                             "alloc buf1: f32[3, 700] stride [700, 1]\n"
                             "alloc buf2: f32[3, 700] stride [700, 1]\n"
                             "alloc buf3: i64[3, 700] stride [700, 1]\n"
                             "kernel_call k0(arg0, arg1, buf0, buf1, buf2, buf3)\n"
                             "output buf0, buf1, buf2, buf3\n";
  coil_diag d = {0};
  coil_wir_program *p = coil_wir_parse("scans.wir", text, sizeof text - 1, &d);
  cr_assert_not_null(p, "%s", d.msg);
  cr_assert_eq(coil_wir_verify(p, &d), 0, "%s", d.msg);
  int64_t shape[2] = {3, 700};
  coil_tensor t[6];
  for (int i = 0; i < 6; i++)
    cr_assert_eq(coil_tensor_init(&t[i], i == 1 || i == 5 ? COIL_I64 : COIL_F32, 2, shape, &d), 0, "%s", d.msg);
  for (int64_t e = 0; e < 3 * 700; e++) {
    int64_t row = e / 700, i = e % 700;
    double v = 1.02 * cos(0.37 * (double)i + (double)row); /* |v| near 1: products shrink slowly */
    if (row == 1 && i == 350)
      v = NAN;
    if (row == 2 && i == 5)
      v = INFINITY;
    coil_tensor_set_f64(&t[0], e, (double)(float)v);
    coil_tensor_set_i64(&t[1], e, (i % 3 ? 1 : -1) * (INT64_MAX / 3) + i);
  }
  static const char *const names[] = {"interp", "cpu"};
  for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
    const char *dirs[] = {COIL_TEST_PLUGIN_DIR_INTERP};
    coil_loaded_plugin *lp;
    coil_plugin *inst;
    coil_artifact *art;
    cr_assert_eq(coil_plugin_open(names[k], dirs, 1, &lp, &d), 0, "%s", d.msg);
    cr_assert_eq(coil_plugin_create(lp, NULL, &inst, &d), 0, "%s", d.msg);
    char dir[] = "/tmp/coil-scan-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(coil_plugin_compile(lp, inst, p, dir, NULL, &d), 0, "%s: %s", names[k], d.msg);
    cr_assert_eq(coil_plugin_load(lp, inst, dir, NULL, &art, &d), 0, "%s: %s", names[k], d.msg);
    int64_t strides[6][COIL_MAX_RANK];
    coil_plugin_tensor pt[6];
    for (int i = 0; i < 6; i++) {
      if (i >= 2)
        memset(t[i].data, 0xff, (size_t)coil_tensor_numel(&t[i]) * coil_dtype_size(t[i].dtype));
      coil_plugin_tensor_wrap(&t[i], strides[i], &pt[i]);
    }
    const coil_plugin_tensor *in[2] = {&pt[0], &pt[1]}, *out[4] = {&pt[2], &pt[3], &pt[4], &pt[5]};
    cr_assert_eq(coil_plugin_run(lp, art, 2, in, 4, out, &d), 0, "%s: %s", names[k], d.msg);
    for (int row = 0; row < 3; row++) {
      double mx = -INFINITY, mn = INFINITY, pr = 1;
      bool nan = false;
      uint64_t sum = 0;
      for (int64_t i = 0; i < 700; i++) {
        int64_t e = row * 700 + i;
        double v = coil_tensor_get_f64(&t[0], e);
        nan = nan || isnan(v);
        mx = v > mx ? v : mx;
        mn = v < mn ? v : mn;
        pr = (double)(float)(pr * v);
        sum += (uint64_t)coil_tensor_get_i64(&t[1], e);
        double got[3] = {coil_tensor_get_f64(&t[2], e), coil_tensor_get_f64(&t[3], e), coil_tensor_get_f64(&t[4], e)};
        double want[3] = {nan ? NAN : mx, nan ? NAN : mn, nan ? NAN : pr};
        for (int q = 0; q < 3; q++) {
          bool ok = isnan(want[q]) ? isnan(got[q])
                    : isinf(want[q]) ? got[q] == want[q]
                                     : fabs(got[q] - want[q]) <= 1e-4 * fabs(want[q]) + 1e-30;
          cr_assert(ok, "%s: scan %s, row %d, element %lld: %.9g, expected %.9g", names[k],
                    q == 0 ? "max" : q == 1 ? "min" : "prod", row, (long long)i, got[q], want[q]);
        }
        cr_assert_eq(coil_tensor_get_i64(&t[5], e), (int64_t)sum, "%s: scan sum (i64), row %d, element %lld",
                     names[k], row, (long long)i);
      }
    }
    coil_plugin_artifact_free(lp, art);
    coil_plugin_destroy(lp, inst);
    coil_plugin_close(lp);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
  }
  for (int i = 0; i < 6; i++)
    coil_tensor_free(&t[i]);
  coil_wir_free(p);
}

/* topk longer than a chunk of the generated sort, with NaN (the largest) in most places: the
 * padding of the last chunk must lose to every real element, NaN included, for both orders. */
Test(backend, long_topk_with_nans_matches_ref, .timeout = 300)
{
  static const char text[] = "coil 1\n"
                             "graph t(%x: f32[2, 2000]) {\n"
                             "  %s = aten.topk.default(%x, 60, -1, False)\n"
                             "  %l = aten.topk.default(%x, 60, -1, True)\n"
                             "  %sv = getitem(%s, 0)\n  %si = getitem(%s, 1)\n"
                             "  %lv = getitem(%l, 0)\n  %li = getitem(%l, 1)\n"
                             "  return (%sv, %si, %lv, %li)\n"
                             "}\n";
  coil_diag d = {0};
  coil_graph *g = coil_graph_parse("t.coil", text, sizeof text - 1, &d);
  cr_assert_not_null(g, "%s", d.msg);
  coil_tensor x;
  cr_assert_eq(coil_tensor_init(&x, COIL_F32, 2, (int64_t[]){2, 2000}, NULL), 0);
  for (int64_t e = 0; e < 4000; e++) /* 30 numbers (some -inf) a row, NaN elsewhere */
    coil_tensor_set_f64(&x, e, e % 67 == 3 ? (e % 5 == 0 ? -INFINITY : (double)(e % 13) - 6) : NAN);
  coil_tensor_list in = {0};
  coil_tensor_list_add(&in, "x", &x);
  cr_expect_eq(agree_on("interp", "long_topk_nans", g, &in), 0);
  coil_tensor_list_free(&in);
  coil_graph_free(g);
}
