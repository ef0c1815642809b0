/* The embedding API (coil/embed.h) through libcoil.so: compile from memory, bind, run on the
 * caller's memory, AOT artifacts, the stream argument on a host backend, errors as values, and
 * runs from two threads. Results are checked against the reference interpreter (f64). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coil/coil.h"
#include "coil/coil_plugin.h"
#include "coil/embed.h"

/* x @ w + b, then relu and a row sum: a library call, a fused kernel, a reduction; rows symbolic */
static const char MLP[] =
    "coil 1\n"
    "graph mlp(%x: f32[s0, 4], %w: f32[4, 3] param, %b: f32[3] param) {\n"
    "  %y: f32[s0, 3] = aten.mm.default(%x, %w)\n"
    "  %z: f32[s0, 3] = aten.add.Tensor(%y, %b)\n"
    "  %r: f32[s0, 3] = aten.relu.default(%z)\n"
    "  %s: f32[s0] = aten.sum.dim_IntList(%r, [1])\n"
    "  return (%r, %s)\n"
    "}\n";

static coil_session *
session(const char *backend, const char *cache_dir)
{
  const char *keys[] = {"backend", "cache_dir"}, *values[] = {backend, cache_dir ? cache_dir : ""};
  coil_session_options o = {.struct_size = sizeof o, .config_file = "", .use_env = 0, .noptions = 2,
                            .keys = keys, .values = values};
  coil_session *s = NULL;
  coil_diag d = {{0}};
  int rc = coil_session_new(&o, &s, &d);
  cr_assert_eq(rc, 0, "%s", d.msg);
  return s;
}

static coil_dltensor
dl(float *data, int ndim, int64_t *shape, int64_t *strides)
{
  return (coil_dltensor){.data = data, .device = {COIL_DEVICE_CPU, 0}, .ndim = ndim,
                         .dtype = {2, 32, 1}, .shape = shape, .strides = strides};
}

static void
fill(float *p, int n, int seed)
{
  for (int i = 0; i < n; i++)
    p[i] = (float)(((i * 37 + seed * 11) % 23) - 11) / 8.0f;
}

/* The reference interpreter's outputs of MLP for x (rows x 4), w, b. */
static void
reference(int64_t rows, const float *x, const float *w, const float *b, coil_tensor_list *out)
{
  coil_diag d = {{0}};
  coil_graph *g = coil_graph_parse("mlp.coil", MLP, sizeof MLP - 1, &d);
  cr_assert(g, "%s", d.msg);
  coil_tensor_list in = {0};
  const float *src[] = {x, w, b};
  const char *names[] = {"x", "w", "b"};
  int64_t shapes[3][2] = {{rows, 4}, {4, 3}, {3, 0}};
  for (int i = 0; i < 3; i++) {
    coil_tensor t;
    cr_assert_eq(coil_tensor_init(&t, COIL_F32, i == 2 ? 1 : 2, shapes[i], &d), 0);
    memcpy(t.data, src[i], coil_tensor_nbytes(&t));
    coil_tensor_list_add(&in, names[i], &t);
  }
  cr_assert_eq(coil_ref_run(g, &in, out, &d), 0, "%s", d.msg);
  coil_tensor_list_free(&in);
  coil_graph_free(g);
}

static void
expect_close(const float *got, const coil_tensor *want, int64_t n)
{
  cr_assert_eq(coil_tensor_numel(want), n);
  for (int64_t i = 0; i < n; i++)
    cr_assert(fabs(got[i] - coil_tensor_get_f64(want, i)) <= 1e-5 + 1e-5 * fabs(coil_tensor_get_f64(want, i)),
              "element %lld: %g, want %g", (long long)i, got[i], coil_tensor_get_f64(want, i));
}

/* Binds and runs MLP's model m (inputs x, w, b unless embedded) at `rows`, checking outputs. */
static void
run_and_check(coil_model *m, int64_t rows, bool embedded, const coil_run_options *ro)
{
  float x[64 * 4], w[12], b[3], r[64 * 3], s[64];
  cr_assert(rows <= 64);
  fill(x, (int)rows * 4, (int)rows), fill(w, 12, 2), fill(b, 3, 3);
  int64_t xs[] = {rows, 4}, ws[] = {4, 3}, bs[] = {3};
  coil_dltensor in[] = {dl(x, 2, xs, NULL), dl(w, 2, ws, NULL), dl(b, 1, bs, NULL)};
  coil_diag d = {{0}};
  coil_binding *bd = NULL;
  cr_assert_eq(coil_model_bind(m, embedded ? 1 : 3, in, &bd, &d), 0, "%s", d.msg);
  coil_dltensor o0, o1;
  cr_assert_eq(coil_binding_output(bd, 0, &o0), 0);
  cr_assert_eq(coil_binding_output(bd, 1, &o1), 0);
  cr_assert_eq(coil_binding_output(bd, 2, &o1), -1);
  cr_assert_eq(coil_binding_output(bd, 1, &o1), 0);
  cr_assert_eq(o0.ndim, 2);
  cr_assert(o0.shape[0] == rows && o0.shape[1] == 3 && o0.strides[0] == 3 && o0.strides[1] == 1);
  cr_assert(o1.ndim == 1 && o1.shape[0] == rows && o1.strides[0] == 1);
  cr_assert(o0.dtype.code == 2 && o0.dtype.bits == 32 && o0.device.device_type == COIL_DEVICE_CPU);
  cr_assert_eq(coil_binding_symbol(bd, "s0"), rows);
  cr_assert_eq(coil_binding_symbol(bd, "nope"), -1);
  void *data[] = {x, w, b, r, s};
  void *data_embedded[] = {x, r, s};
  cr_assert_eq(coil_binding_run(bd, embedded ? data_embedded : data, ro, &d), 0, "%s", d.msg);
  coil_binding_free(bd);
  coil_tensor_list want = {0};
  reference(rows, x, w, b, &want);
  expect_close(r, &want.tensors[0], rows * 3);
  expect_close(s, &want.tensors[1], rows);
  coil_tensor_list_free(&want);
}

Test(embed, compile_bind_run_on_cpu_at_two_sizes)
{
  coil_session *s = session("cpu", NULL);
  coil_model *m = NULL;
  coil_diag d = {{0}};
  cr_assert_eq(coil_model_compile(s, "mlp.coil", MLP, sizeof MLP - 1, &m, &d), 0, "%s", d.msg);
  cr_assert_str_eq(coil_model_backend(m), "cpu");
  cr_assert_eq(coil_model_device_type(m), COIL_DEVICE_CPU);
  cr_assert_eq(coil_model_ninputs(m), 3);
  cr_assert_eq(coil_model_noutputs(m), 2);
  cr_assert_str_eq(coil_model_input_name(m, 1), "w");
  cr_assert_eq(coil_model_input_dtype(m, 0), COIL_F32);
  cr_assert_eq(coil_model_input_rank(m, 2), 1);
  cr_assert_null(coil_model_input_name(m, 3));
  run_and_check(m, 5, false, NULL);
  run_and_check(m, 1, false, NULL);
  run_and_check(m, 64, false, NULL);
  coil_model_free(m);
  coil_session_free(s);
}

Test(embed, interp_backend_and_the_cache)
{
  char cache[] = "/tmp/coil-embed-cache-XXXXXX";
  cr_assert(mkdtemp(cache));
  coil_session *s = session("interp", cache);
  for (int round = 0; round < 2; round++) { /* a miss, then a hit */
    coil_model *m = NULL;
    coil_diag d = {{0}};
    cr_assert_eq(coil_model_compile(s, "mlp.coil", MLP, sizeof MLP - 1, &m, &d), 0, "%s", d.msg);
    run_and_check(m, 7, false, NULL);
    coil_model_free(m);
  }
  coil_session_free(s);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", cache);
  cr_assert_eq(system(cmd), 0);
}

Test(embed, a_stream_on_a_host_backend_runs_synchronously)
{
  coil_session *s = session("cpu", NULL);
  coil_model *m = NULL;
  coil_diag d = {{0}};
  cr_assert_eq(coil_model_compile(s, "mlp.coil", MLP, sizeof MLP - 1, &m, &d), 0, "%s", d.msg);
  coil_run_options ro = {.struct_size = sizeof ro, .has_stream = 1, .stream = (void *)(uintptr_t)0x1234};
  run_and_check(m, 9, false, &ro);
  ro.stream = NULL; /* "0 is the legacy default stream": still a stream, still a no-op here */
  run_and_check(m, 3, false, &ro);
  coil_run_options small = {.struct_size = 4};
  float x[4] = {0}, w[12] = {0}, b[3] = {0}, r[3], sm[1];
  int64_t xs[] = {1, 4}, ws[] = {4, 3}, bs[] = {3}, rs[] = {1, 3}, ss[] = {1};
  coil_dltensor in[] = {dl(x, 2, xs, NULL), dl(w, 2, ws, NULL), dl(b, 1, bs, NULL)};
  coil_dltensor out[] = {dl(r, 2, rs, NULL), dl(sm, 1, ss, NULL)};
  cr_assert_eq(coil_model_run(m, 3, in, 2, out, &small, &d), -COIL_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(d.msg, "struct_size"), "%s", d.msg);
  cr_assert_eq(coil_model_run(m, 3, in, 2, out, NULL, &d), 0, "%s", d.msg);
  coil_model_free(m);
  coil_session_free(s);
}

Test(embed, bad_inputs_are_errors_naming_the_input)
{
  coil_session *s = session("cpu", NULL);
  coil_model *m = NULL;
  coil_diag d = {{0}};
  cr_assert_eq(coil_model_compile(s, "mlp.coil", MLP, sizeof MLP - 1, &m, &d), 0, "%s", d.msg);
  float x[16] = {0}, w[32] = {0}, b[3] = {0};
  int64_t xs[] = {4, 4}, ws[] = {4, 3}, bs[] = {3}, bad[] = {5, 3}, wstr[] = {1, 4}, xs1[] = {1, 4}, odd[] = {99, 1};
  coil_binding *bd = NULL;
  coil_dltensor in[] = {dl(x, 2, xs, NULL), dl(w, 2, ws, NULL), dl(b, 1, bs, NULL)};
  cr_assert_eq(coil_model_bind(m, 2, in, &bd, &d), -COIL_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(d.msg, "2 inputs given, the graph takes 3"), "%s", d.msg);
  in[1] = dl(w, 2, bad, NULL);
  cr_assert_eq(coil_model_bind(m, 3, in, &bd, &d), -COIL_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(d.msg, "%w") && strstr(d.msg, "expected sizes [4, 3], got [5, 3]"), "%s", d.msg);
  in[1] = dl(w, 2, ws, wstr); /* a transposed view: not what the program reads */
  cr_assert_eq(coil_model_bind(m, 3, in, &bd, &d), -COIL_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(d.msg, "%w") && strstr(d.msg, "contiguous"), "%s", d.msg);
  in[1] = dl(w, 2, ws, NULL);
  in[2].dtype = (coil_dldtype){2, 64, 1};
  cr_assert_eq(coil_model_bind(m, 3, in, &bd, &d), -COIL_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(d.msg, "%b") && strstr(d.msg, "expected f32 with 1 dimensions, got f64"), "%s", d.msg);
  in[2].dtype = (coil_dldtype){2, 32, 4};
  cr_assert_eq(coil_model_bind(m, 3, in, &bd, &d), -COIL_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(d.msg, "a dtype coil does not have"), "%s", d.msg);
  in[2] = dl(b, 1, bs, NULL);
  in[0].device.device_type = COIL_DEVICE_CUDA;
  cr_assert_eq(coil_model_bind(m, 3, in, &bd, &d), -COIL_ERR_UNSUPPORTED);
  cr_assert(strstr(d.msg, "runs on the host only"), "%s", d.msg);
  /* a size-1 dim may have any stride */
  in[0] = dl(x, 2, xs1, odd);
  cr_assert_eq(coil_model_bind(m, 3, in, &bd, &d), 0, "%s", d.msg);
  coil_binding_free(bd);
  /* outputs described wrongly */
  in[0] = dl(x, 2, xs, NULL);
  float r[12], sm[4];
  int64_t rs[] = {4, 3}, ss[] = {3};
  coil_dltensor out[] = {dl(r, 2, rs, NULL), dl(sm, 1, ss, NULL)};
  cr_assert_eq(coil_model_run(m, 3, in, 2, out, NULL, &d), -COIL_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(d.msg, "output 1: expected a dense f32[4]"), "%s", d.msg);
  cr_assert_eq(coil_model_run(m, 3, in, 1, out, NULL, &d), -COIL_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(d.msg, "1 outputs given, the graph has 2"), "%s", d.msg);
  coil_model_free(m);
  coil_session_free(s);
}

Test(embed, bad_graphs_options_and_backends_are_errors)
{
  coil_diag d = {{0}};
  coil_session *s = session("cpu", NULL);
  coil_model *m = NULL;
  static const char broken[] = "coil 1\ngraph g(%x: f32[4]) {\n  %y = aten.relu.default(%q)\n  return (%y)\n}\n";
  cr_assert_eq(coil_model_compile(s, "broken.coil", broken, sizeof broken - 1, &m, &d), -COIL_ERR_INVALID_ARGUMENT);
  cr_assert_null(m);
  cr_assert(strstr(d.msg, "broken.coil:3:"), "%s", d.msg);
  static const char unknown[] = "coil 1\ngraph g(%x: f32[4]) {\n  %y: f32[4] = aten.frobnicate.default(%x)\n  return (%y)\n}\n";
  cr_assert_lt(coil_model_compile(s, "unknown.coil", unknown, sizeof unknown - 1, &m, &d), 0);
  cr_assert(strstr(d.msg, "aten.frobnicate.default"), "%s", d.msg);
  cr_assert_eq(coil_model_compile(s, "none.coil", NULL, 0, &m, &d), -COIL_ERR_INVALID_ARGUMENT);
  cr_assert(coil_op_known("aten.add.Tensor"));
  cr_assert(!coil_op_known("aten.frobnicate.default"));
  cr_assert(!coil_op_known(NULL));
  coil_session_free(s);

  s = session("ref", NULL);
  cr_assert_eq(coil_model_compile(s, "mlp.coil", MLP, sizeof MLP - 1, &m, &d), -COIL_ERR_UNSUPPORTED);
  cr_assert(strstr(d.msg, "cannot be embedded"), "%s", d.msg);
  coil_session_free(s);

  s = session("no-such-backend", NULL);
  cr_assert_lt(coil_model_compile(s, "mlp.coil", MLP, sizeof MLP - 1, &m, &d), 0);
  cr_assert(strstr(d.msg, "no-such-backend"), "%s", d.msg);
  coil_session_free(s);

  const char *keys[] = {"backend", "plugin.cpu.no_such_option"}, *values[] = {"cpu", "1"};
  coil_session_options o = {.struct_size = sizeof o, .config_file = "", .noptions = 2, .keys = keys, .values = values};
  cr_assert_eq(coil_session_new(&o, &s, &d), 0, "%s", d.msg);
  cr_assert_eq(coil_model_compile(s, "mlp.coil", MLP, sizeof MLP - 1, &m, &d), -COIL_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(d.msg, "no_such_option"), "%s", d.msg);
  coil_session_free(s);

  keys[1] = "no_such_key";
  cr_assert_eq(coil_session_new(&o, &s, &d), -COIL_ERR_INVALID_ARGUMENT);
  cr_assert_null(s);
  cr_assert(strstr(d.msg, "no_such_key"), "%s", d.msg);
  keys[1] = "plugin.cpu";
  cr_assert_eq(coil_session_new(&o, &s, &d), -COIL_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(d.msg, "plugin.NAME.KEY"), "%s", d.msg);
  keys[1] = "mode", values[1] = "fastest";
  cr_assert_eq(coil_session_new(&o, &s, &d), -COIL_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(d.msg, "fastest"), "%s", d.msg);
  o.config_file = "/nonexistent/coil.ini";
  o.noptions = 0;
  cr_assert_eq(coil_session_new(&o, &s, &d), -COIL_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(d.msg, "/nonexistent/coil.ini"), "%s", d.msg);
  coil_session_options tiny = {.struct_size = 8};
  cr_assert_eq(coil_session_new(&tiny, &s, &d), -COIL_ERR_INVALID_ARGUMENT);
}

Test(embed, plugin_options_reach_the_plugin)
{
  const char *keys[] = {"backend", "plugin.cpu.threads", "cache_dir"}, *values[] = {"cpu", "2", ""};
  coil_session_options o = {.struct_size = sizeof o, .config_file = "", .noptions = 3, .keys = keys, .values = values};
  coil_session *s = NULL;
  coil_diag d = {{0}};
  cr_assert_eq(coil_session_new(&o, &s, &d), 0, "%s", d.msg);
  cr_assert_str_eq(coil_session_get(s, "backend"), "cpu");
  cr_assert_null(coil_session_get(s, "no_such_key"));
  coil_model *m = NULL;
  cr_assert_eq(coil_model_compile(s, "mlp.coil", MLP, sizeof MLP - 1, &m, &d), 0, "%s", d.msg);
  run_and_check(m, 33, false, NULL);
  coil_model_free(m);
  coil_session_free(s);
  values[1] = "many";
  cr_assert_eq(coil_session_new(&o, &s, &d), 0, "%s", d.msg);
  cr_assert_eq(coil_model_compile(s, "mlp.coil", MLP, sizeof MLP - 1, &m, &d), -COIL_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(d.msg, "threads"), "%s", d.msg);
  coil_session_free(s);
}

Test(embed, aot_artifact_with_embedded_weights_loads_without_the_graph)
{
  char dir[] = "/tmp/coil-embed-aot-XXXXXX";
  cr_assert(mkdtemp(dir));
  char weights[128], art[128];
  snprintf(weights, sizeof weights, "%s/w.safetensors", dir);
  snprintf(art, sizeof art, "%s/mlp.art", dir);
  float w[12], b[3];
  fill(w, 12, 2), fill(b, 3, 3);
  coil_tensor_list l = {0};
  coil_diag d = {{0}};
  int64_t ws[] = {4, 3}, bs[] = {3};
  coil_tensor tw, tb;
  cr_assert_eq(coil_tensor_init(&tw, COIL_F32, 2, ws, &d), 0);
  cr_assert_eq(coil_tensor_init(&tb, COIL_F32, 1, bs, &d), 0);
  memcpy(tw.data, w, sizeof w), memcpy(tb.data, b, sizeof b);
  coil_tensor_list_add(&l, "w", &tw);
  coil_tensor_list_add(&l, "b", &tb);
  cr_assert_eq(coil_safetensors_write(weights, &l, &d), 0, "%s", d.msg);
  coil_tensor_list_free(&l);

  coil_session *s = session("cpu", NULL);
  cr_assert_eq(coil_artifact_compile(s, "mlp.coil", MLP, sizeof MLP - 1, weights, art, &d), 0, "%s", d.msg);
  coil_session_free(s);
  s = session("interp", NULL); /* the artifact names its plugin: the session's backend is not used */
  coil_model *m = NULL;
  cr_assert_eq(coil_model_load(s, art, &m, &d), 0, "%s", d.msg);
  cr_assert_str_eq(coil_model_backend(m), "cpu");
  cr_assert_eq(coil_model_ninputs(m), 1);
  cr_assert_str_eq(coil_model_input_name(m, 0), "x");
  run_and_check(m, 6, true, NULL);
  coil_model_free(m);
  /* a damaged artifact is refused, naming the file */
  char f[160];
  snprintf(f, sizeof f, "%s/weights.safetensors", art);
  FILE *fp = fopen(f, "r+b");
  cr_assert(fp);
  fseek(fp, -1, SEEK_END);
  fputc(0x55, fp);
  fclose(fp);
  cr_assert_lt(coil_model_load(s, art, &m, &d), 0);
  cr_assert(strstr(d.msg, "weights.safetensors"), "%s", d.msg);
  cr_assert_lt(coil_model_load(s, "/nonexistent/art", &m, &d), 0);
  cr_assert(strstr(d.msg, "/nonexistent/art"), "%s", d.msg);
  coil_session_free(s);
  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_assert_eq(system(cmd), 0);
}

typedef struct {
  coil_model *m;
  int64_t rows;
  int failures;
} worker_arg;

static void *
worker(void *p)
{
  worker_arg *a = p;
  float x[32 * 4], w[12], b[3], r[32 * 3], s[32];
  fill(x, (int)a->rows * 4, (int)a->rows), fill(w, 12, 2), fill(b, 3, 3);
  coil_tensor_list want = {0};
  reference(a->rows, x, w, b, &want);
  int64_t xs[] = {a->rows, 4}, ws[] = {4, 3}, bs[] = {3};
  coil_dltensor in[] = {dl(x, 2, xs, NULL), dl(w, 2, ws, NULL), dl(b, 1, bs, NULL)};
  coil_binding *bd = NULL;
  coil_diag d = {{0}};
  if (coil_model_bind(a->m, 3, in, &bd, &d))
    a->failures = 1000;
  void *data[] = {x, w, b, r, s};
  for (int it = 0; bd && it < 200; it++) {
    memset(r, 0xff, sizeof r), memset(s, 0xff, sizeof s);
    if (coil_binding_run(bd, data, NULL, &d)) {
      a->failures++;
      continue;
    }
    for (int64_t i = 0; i < a->rows; i++)
      if (fabs(s[i] - coil_tensor_get_f64(&want.tensors[1], i)) > 1e-4)
        a->failures++;
  }
  coil_binding_free(bd);
  coil_tensor_list_free(&want);
  return NULL;
}

Test(embed, runs_from_two_threads)
{
  coil_session *s = session("cpu", NULL);
  coil_model *m = NULL, *m2 = NULL;
  coil_diag d = {{0}};
  cr_assert_eq(coil_model_compile(s, "mlp.coil", MLP, sizeof MLP - 1, &m, &d), 0, "%s", d.msg);
  cr_assert_eq(coil_model_compile(s, "mlp.coil", MLP, sizeof MLP - 1, &m2, &d), 0, "%s", d.msg);
  /* one model from two threads (serialized inside it), and two models at once */
  worker_arg args[4] = {{m, 5, 0}, {m, 17, 0}, {m2, 32, 0}, {m2, 1, 0}};
  pthread_t th[4];
  for (int i = 0; i < 4; i++)
    cr_assert_eq(pthread_create(&th[i], NULL, worker, &args[i]), 0);
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    cr_assert_eq(args[i].failures, 0, "thread %d: %d failed runs or wrong elements", i, args[i].failures);
  }
  coil_model_free(m);
  coil_model_free(m2);
  coil_session_free(s);
}

Test(embed, dlpack_dtypes_round_trip)
{
  for (int t = 0; t < COIL_DTYPE_COUNT; t++)
    cr_assert_eq(coil_dtype_from_dl(coil_dtype_to_dl((coil_dtype)t)), t, "dtype %s", coil_dtype_name((coil_dtype)t));
  cr_assert_eq(coil_dtype_to_dl(COIL_BF16).code, 4);
  cr_assert_eq(coil_dtype_to_dl(COIL_BOOL).code, 6);
  cr_assert_eq(coil_dtype_to_dl(COIL_U8).code, 1);
  cr_assert_eq(coil_dtype_to_dl(COIL_I64).bits, 64);
  cr_assert_eq(coil_dtype_from_dl((coil_dldtype){5, 64, 1}), -1); /* complex */
  cr_assert_eq(coil_embed_api_version(), COIL_EMBED_API_VERSION);
}

/* Two different programs loaded at once on cpu: each runs its own code. (The cpu plugin loads a
 * library by a /proc/self/fd name, and a number freed by the first load was the second's: the
 * loader handed back the first library for it.) */
Test(embed, two_programs_loaded_at_once_each_run_their_own_code)
{
  static const char add1[] = "coil 1\ngraph a(%x: f32[16]) {\n  %y: f32[16] = aten.add.Tensor(%x, 1)\n  return (%y)\n}\n";
  static const char mul3[] = "coil 1\ngraph b(%x: f32[16]) {\n  %y: f32[16] = aten.mul.Tensor(%x, 3)\n  return (%y)\n}\n";
  for (int cached = 0; cached < 2; cached++) {
    char cache[] = "/tmp/coil-embed-two-XXXXXX";
    cr_assert(mkdtemp(cache));
    coil_session *s = session("cpu", cached ? cache : NULL);
    coil_model *ma = NULL, *mb = NULL, *mc = NULL;
    coil_diag d = {{0}};
    cr_assert_eq(coil_model_compile(s, "a.coil", add1, sizeof add1 - 1, &ma, &d), 0, "%s", d.msg);
    cr_assert_eq(coil_model_compile(s, "b.coil", mul3, sizeof mul3 - 1, &mb, &d), 0, "%s", d.msg);
    coil_model_free(ma); /* its descriptor numbers are free again; its library may stay loaded */
    cr_assert_eq(coil_model_compile(s, "a.coil", add1, sizeof add1 - 1, &ma, &d), 0, "%s", d.msg);
    cr_assert_eq(coil_model_compile(s, "b2.coil", mul3, sizeof mul3 - 1, &mc, &d), 0, "%s", d.msg);
    float x[16], y[16];
    int64_t xs[] = {16};
    for (int i = 0; i < 16; i++)
      x[i] = (float)i;
    coil_model *models[] = {mb, ma, mc};
    float scale[] = {3, 1, 3}, shift[] = {0, 1, 0};
    for (int k = 0; k < 3; k++) {
      coil_dltensor in = dl(x, 1, xs, NULL), out = dl(y, 1, xs, NULL);
      cr_assert_eq(coil_model_run(models[k], 1, &in, 1, &out, NULL, &d), 0, "%s", d.msg);
      for (int i = 0; i < 16; i++)
        cr_assert_float_eq(y[i], x[i] * scale[k] + shift[k], 1e-6, "cache %d, model %d, element %d: %g", cached, k, i, y[i]);
    }
    coil_model_free(ma);
    coil_model_free(mb);
    coil_model_free(mc);
    coil_session_free(s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", cache);
    cr_assert_eq(system(cmd), 0);
  }
}

/* A plugin whose device the host cannot touch (ABI 1.4): the template on its fake device. The
 * caller's CPU tensors are copied to device memory through the plugin and the outputs back. */
Test(embed, host_tensors_are_staged_on_a_device_plugin)
{
  static const char PW[] = "coil 1\n"
                           "graph pw(%x: f32[s0, 4], %w: f32[4] param) {\n"
                           "  %y = aten.mul.Tensor(%x, %w)\n"
                           "  %z = aten.relu.default(%y)\n"
                           "  return (%z)\n"
                           "}\n";
  const char *keys[] = {"backend", "plugin_path", "plugin.template.device", "cache_dir"};
  const char *values[] = {"template", COIL_TEST_TEMPLATE_DIR, "fake", ""};
  coil_session_options o = {.struct_size = sizeof o, .config_file = "", .noptions = 4, .keys = keys, .values = values};
  coil_session *s = NULL;
  coil_diag d = {{0}};
  cr_assert_eq(coil_session_new(&o, &s, &d), 0, "%s", d.msg);
  coil_model *m = NULL;
  cr_assert_eq(coil_model_compile(s, "pw.coil", PW, sizeof PW - 1, &m, &d), 0, "%s", d.msg);
  cr_assert_eq(coil_model_device_type(m), COIL_DEVICE_EXT_DEV);
  for (int64_t rows = 1; rows <= 7; rows += 6) {
    float x[7 * 4], w[4], z[7 * 4];
    fill(x, (int)rows * 4, (int)rows), fill(w, 4, 5);
    memset(z, 0xff, sizeof z);
    int64_t xs[] = {rows, 4}, ws[] = {4}, zs[] = {rows, 4};
    coil_dltensor in[] = {dl(x, 2, xs, NULL), dl(w, 1, ws, NULL)}, out[] = {dl(z, 2, zs, NULL)};
    cr_assert_eq(coil_model_run(m, 2, in, 1, out, NULL, &d), 0, "%s", d.msg);
    for (int i = 0; i < rows * 4; i++) {
      float want = x[i] * w[i % 4] > 0 ? x[i] * w[i % 4] : 0.0f;
      cr_assert_eq(z[i], want, "rows %lld, element %d: %g, want %g", (long long)rows, i, z[i], want);
    }
    cr_assert(rows == 7 || isnan(z[rows * 4]), "an element past the output was written");
  }
  /* a list of backends (partial offload) is for the CLI */
  {
    const char *lk[] = {"backend", "cache_dir"}, *lv[] = {"template,cpu", ""};
    coil_session_options lo = {.struct_size = sizeof lo, .config_file = "", .noptions = 2, .keys = lk, .values = lv};
    coil_session *ls = NULL;
    coil_model *lm = NULL;
    cr_assert_eq(coil_session_new(&lo, &ls, &d), 0, "%s", d.msg);
    cr_assert_eq(coil_model_compile(ls, "pw.coil", PW, sizeof PW - 1, &lm, &d), -COIL_ERR_UNSUPPORTED);
    cr_assert(strstr(d.msg, "is a list (partial offload)"), "%s", d.msg);
    coil_session_free(ls);
  }
  /* a run on a stream would need the tensors on the device already */
  float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 1, 1}, z[4];
  int64_t xs[] = {1, 4}, ws[] = {4};
  coil_dltensor in[] = {dl(x, 2, xs, NULL), dl(w, 1, ws, NULL)}, out[] = {dl(z, 2, xs, NULL)};
  coil_run_options ro = {.struct_size = sizeof ro, .has_stream = 1, .stream = NULL};
  cr_assert_eq(coil_model_run(m, 2, in, 1, out, &ro, &d), -COIL_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(d.msg, "on a stream"), "%s", d.msg);
  coil_model_free(m);
  coil_session_free(s);
}

/* Kills this process's children named coil-cpu-llvm (the cpu plugin's LLVM compile worker):
 * how many there were. */
static int
kill_llvm_worker(void)
{
  int n = 0;
  DIR *d = opendir("/proc");
  cr_assert(d);
  for (struct dirent *e; (e = readdir(d));) {
    char path[300], stat[512] = "";
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    size_t got = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[got] = 0;
    int pid = 0, ppid = 0;
    char comm[64] = "", state;
    if (sscanf(stat, "%d (%63[^)]) %c %d", &pid, comm, &state, &ppid) == 4 && ppid == getpid() &&
        strcmp(comm, "coil-cpu-llvm") == 0 && state != 'Z' && kill(pid, SIGKILL) == 0) {
      n++;
      for (int i = 0; i < 2000 && state != 'Z'; i++) { /* dead (a zombie the plugin reaps) before it goes on */
        nanosleep(&(struct timespec){0, 1000000}, NULL);
        f = fopen(path, "r");
        got = f ? fread(stat, 1, sizeof stat - 1, f) : 0;
        if (f)
          fclose(f);
        stat[got] = 0;
        if (sscanf(stat, "%d (%63[^)]) %c", &pid, comm, &state) != 3)
          break;
      }
    }
  }
  closedir(d);
  return n;
}

/* codegen = llvm compiles in a worker process: LLVM's fatal errors (a test hook makes one: a call
 * x86 cannot select) end the worker, and the compile fails with LLVM's reason; the host goes on,
 * and its next compile starts a new worker, as it does after the worker was killed between compiles. */
Test(embed, a_fatal_error_inside_llvm_fails_one_compile_not_the_process)
{
  const char *keys[] = {"backend", "plugin.cpu.codegen", "cache_dir"}, *values[] = {"cpu", "llvm", ""};
  coil_session_options o = {.struct_size = sizeof o, .config_file = "", .noptions = 3, .keys = keys, .values = values};
  coil_session *s = NULL;
  coil_diag d = {{0}};
  cr_assert_eq(coil_session_new(&o, &s, &d), 0, "%s", d.msg);
  coil_model *m = NULL;
  if (coil_model_compile(s, "mlp.coil", MLP, sizeof MLP - 1, &m, &d) != 0 && strstr(d.msg, "cpu-llvm")) {
    coil_session_free(s);
    cr_skip_test("no LLVM code path in this build: %s", d.msg);
  }
  cr_assert(m, "%s", d.msg);
  run_and_check(m, 9, false, NULL);
  coil_model_free(m);
  cr_assert_eq(kill_llvm_worker(), 1, "one compile worker, a child of this process");
  m = NULL;
  cr_assert_eq(coil_model_compile(s, "mlp.coil", MLP, sizeof MLP - 1, &m, &d), 0, "after a kill: %s", d.msg);
  run_and_check(m, 4, false, NULL);
  coil_model_free(m);

  cr_assert_eq(kill_llvm_worker(), 1);
  setenv("COIL_CPU_LLVM_TEST_FATAL", "1", 1); /* the next worker has the hook */
  m = NULL;
  cr_assert_eq(coil_model_compile(s, "mlp.coil", MLP, sizeof MLP - 1, &m, &d), -COIL_ERR_COMPILE_FAILED);
  cr_assert_null(m);
  cr_assert(strstr(d.msg, "internal error: LLVM's compile of program mlp"), "%s", d.msg);
  cr_assert(strstr(d.msg, "exited with status 70: LLVM ERROR: Cannot select"), "%s", d.msg);
  cr_assert(strstr(d.msg, "kept in "), "%s", d.msg);
  unsetenv("COIL_CPU_LLVM_TEST_FATAL");
  cr_assert_eq(kill_llvm_worker(), 0, "the worker LLVM ended is gone (reaped)");
  cr_assert_eq(coil_model_compile(s, "mlp.coil", MLP, sizeof MLP - 1, &m, &d), 0, "after LLVM's fatal error: %s", d.msg);
  run_and_check(m, 13, false, NULL);
  coil_model_free(m);
  coil_session_free(s);
}
