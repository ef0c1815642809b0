/* The plugin loader against the test plugins of tests/plugins/: the valid one by name and by
 * path, each broken one with the exact outcome and message, forward compatibility (a plugin
 * from a newer minor loads), load/unload cycles, the calls into a plugin with its errors turned
 * into diagnostics, and two threads compiling on one instance at once. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime.h"

#define PLUGINS COIL_TEST_PLUGIN_DIR

/* A missing directory first: the search goes on past it. */
static const char *const dirs[] = {"/nonexistent/coil-plugins", PLUGINS};
#define NDIRS 2

#define expect_has(msg, want) cr_expect(strstr((msg), (want)) != NULL, \
                                        "message lacks \"%s\":\n  %s", (want), (msg))

static coil_loaded_plugin *
open_ok(const char *name_or_path)
{
  coil_diag d = {{0}};
  coil_loaded_plugin *lp = NULL;
  int rc = coil_plugin_open(name_or_path, dirs, NDIRS, &lp, &d);
  cr_assert_eq(rc, 0, "opening %s: %s", name_or_path, d.msg);
  cr_assert_not_null(lp);
  cr_assert_eq(d.msg[0], 0);
  return lp;
}

/* Opening name_or_path fails; returns the message (static) for more checks. */
static const char *
open_fails(const char *name_or_path)
{
  static coil_diag d;
  memset(&d, 0, sizeof d);
  coil_loaded_plugin *lp = (coil_loaded_plugin *)&d; /* must be reset to NULL */
  cr_assert_eq(coil_plugin_open(name_or_path, dirs, NDIRS, &lp, &d), -1, "%s opened", name_or_path);
  cr_assert_null(lp);
  cr_assert_neq(d.msg[0], 0, "no message for %s", name_or_path);
  return d.msg;
}

static char *
temp_dir(void)
{
  char tmpl[] = "/tmp/coil-runtime-XXXXXX";
  cr_assert_not_null(mkdtemp(tmpl));
  return strdup(tmpl);
}

/* Removes a directory of plain files. */
static void
remove_dir(char *dir)
{
  DIR *dp = opendir(dir);
  cr_assert_not_null(dp);
  struct dirent *e;
  while ((e = readdir(dp))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    cr_expect_eq(unlink(p), 0, "%s", p);
  }
  closedir(dp);
  cr_expect_eq(rmdir(dir), 0, "%s", dir);
  free(dir);
}

static char *
read_text(const char *dir, const char *file)
{
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", dir, file);
  FILE *f = fopen(p, "r");
  if (!f)
    return NULL;
  static char buf[4096];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

/* out0 = in0 + in1 over f32[2, 3] (what the good plugin "runs"), as a verified program named
 * `name`; NULL with the parser's message in *d if it does not parse. */
static coil_wir_program *
parse_add(const char *name, coil_diag *d)
{
  char text[2048];
  snprintf(text, sizeof text,
           "wir 1.0\n"
           "program %s\n"
           "input arg0 'a': f32[2, 3] stride [3, 1]\n"
           "input arg1 'b': f32[2, 3] stride [3, 1]\n"
           "\n"
           "kernel coil_poi_fused_add_0 pointwise x[2, 3] {\n"
           "  source aten.add.Tensor\n"
           "  param in0: f32\n"
           "  param in1: f32\n"
           "  param out0: f32 out\n"
           "  %%0: f32 = load in0[3*x0 + x1]\n"
           "  %%1: f32 = load in1[3*x0 + x1]\n"
           "  %%2: f32 = add %%0, %%1\n"
           "  store out0[3*x0 + x1], %%2\n"
           "}\n"
           "\n"
           "alloc buf0: f32[2, 3] stride [3, 1]\n"
           "kernel_call coil_poi_fused_add_0(arg0, arg1, buf0)\n"
           "output buf0\n",
           name);
  return coil_wir_parse("add.wir", text, strlen(text), d);
}

static coil_wir_program *
add_program(const char *name)
{
  coil_diag d = {{0}};
  coil_wir_program *p = parse_add(name, &d);
  cr_assert_not_null(p, "%s", d.msg);
  cr_assert_eq(coil_wir_verify(p, &d), 0, "%s", d.msg);
  return p;
}

/* ---- finding and opening ---- */

Test(open, good_by_name)
{
  coil_loaded_plugin *lp = open_ok("good");
  cr_expect_str_eq(lp->api.name, "good");
  cr_expect_str_eq(lp->api.vendor, "The coil authors");
  cr_expect_str_eq(lp->api.version, "1.0.0");
  cr_expect(lp->api.features & COIL_FEATURE_EXECUTES);
  cr_expect_str_eq(lp->path, PLUGINS "/libcoil_good.so");
  cr_expect_eq(lp->api_struct_size, sizeof(coil_plugin_api));
  coil_plugin_close(lp);
}

Test(open, good_by_path)
{
  coil_loaded_plugin *lp = open_ok(PLUGINS "/libcoil_good.so");
  cr_expect_str_eq(lp->api.name, "good");
  coil_plugin_close(lp);
  lp = open_ok(PLUGINS "/../test-plugins/libcoil_good.so");
  coil_plugin_close(lp);
}

Test(open, first_directory_wins)
{
  const char *twice[] = {PLUGINS, PLUGINS "/"};
  coil_diag d = {{0}};
  coil_loaded_plugin *lp;
  cr_assert_eq(coil_plugin_open("good", twice, 2, &lp, &d), 0, "%s", d.msg);
  cr_expect_str_eq(lp->path, PLUGINS "/libcoil_good.so");
  coil_plugin_close(lp);
}

Test(open, not_found)
{
  const char *m = open_fails("nosuch");
  expect_has(m, "plugin 'nosuch' not found");
  expect_has(m, "libcoil_nosuch.so");
  expect_has(m, "/nonexistent/coil-plugins, " PLUGINS);
  coil_diag d = {{0}};
  coil_loaded_plugin *lp;
  cr_expect_eq(coil_plugin_open("good", NULL, 0, &lp, &d), -1);
  expect_has(d.msg, "empty search path");
}

Test(open, bad_names_and_paths)
{
  expect_has(open_fails("Bad Name"), "plugin name 'Bad Name' is not valid");
  expect_has(open_fails(""), "no plugin named");
  /* A bare file name ending in .so is a path relative to the working directory. */
  const char *m = open_fails("libcoil_good.so");
  expect_has(m, "libcoil_good.so: error: cannot open the plugin library");
  expect_has(open_fails("/nonexistent/libcoil_x.so"), "No such file");
}

Test(open, not_a_library)
{
  char *dir = temp_dir();
  char path[4096];
  snprintf(path, sizeof path, "%s/libcoil_text.so", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs("not an ELF file\n", f);
  fclose(f);
  const char *m = open_fails(path);
  expect_has(m, path);
  expect_has(m, "cannot load the plugin library");
  remove_dir(dir);
}

/* ---- the broken plugins, one check each ---- */

Test(broken, no_entry)
{
  const char *m = open_fails("no_entry");
  expect_has(m, PLUGINS "/libcoil_no_entry.so: error: ");
  expect_has(m, "not a coil plugin: it exports no symbol `coil_plugin_entry`");
}

Test(broken, null_table)
{
  const char *m = open_fails("null_table");
  expect_has(m, "libcoil_null_table.so: error: the plugin declined to serve this host");
  char want[128];
  snprintf(want, sizeof want, "plugin ABI 1.%d): needs a frobnicator device, and this machine has none",
           COIL_PLUGIN_ABI_MINOR);
  expect_has(m, want);
}

Test(broken, zero_size)
{
  const char *m = open_fails("zero_size");
  expect_has(m, "libcoil_zero_size.so: error: the plugin table's struct_size is 0; expected at "
                "least ");
  char want[64];
  snprintf(want, sizeof want, "at least %zu ", (size_t)COIL_PLUGIN_API_SIZE_1_0);
  expect_has(m, want);
}

Test(broken, wrong_major)
{
  const char *m = open_fails("wrong_major");
  char want[160];
  snprintf(want, sizeof want, "libcoil_wrong_major.so: error: the plugin was built for plugin ABI "
           "2.1, but this coil speaks 1.%d: the major versions must be equal", COIL_PLUGIN_ABI_MINOR);
  expect_has(m, want);
}

Test(broken, needs_newer_host)
{
  const char *m = open_fails("needs_newer_host");
  char want[128];
  snprintf(want, sizeof want, "the plugin needs a host with plugin ABI 1.90 or newer, but this coil "
           "speaks 1.%d", COIL_PLUGIN_ABI_MINOR);
  expect_has(m, want);
}

Test(broken, missing_required)
{
  const char *m = open_fails("missing_required");
  expect_has(m, "libcoil_missing_required.so: error: not a valid coil plugin: required "
                "function(s) missing: compile");
  cr_expect_null(strstr(m, "metadata"), "%s", m);
}

Test(broken, partial_device_groups)
{
  const char *m = open_fails("broken_groups");
  expect_has(m, "libcoil_broken_groups.so: error: not a valid coil plugin: ");
  expect_has(m, "the devices functions (ABI 1.4) are all present or all NULL; missing: mem_free");
  expect_has(m, "the events functions (ABI 1.4) are all present or all NULL; missing: "
                "event_record event_wait event_destroy");
}

Test(broken, garbage_meta)
{
  const char *m = open_fails("garbage_meta");
  expect_has(m, "libcoil_garbage_meta.so: error: not a valid coil plugin: ");
  expect_has(m, "metadata: name 'bad name' is not valid; expected 1-64 characters of [a-z0-9_-]");
  expect_has(m, "metadata: vendor is NULL; expected a non-empty string");
  expect_has(m, "metadata: version '1.0' is not a semver");
  expect_has(m, "features has both of COIL_FEATURE_EXECUTES and COIL_FEATURE_EMITS_ONLY");
  cr_expect_null(strstr(m, "required function"), "%s", m);
}

/* A plugin built against a newer minor that can do with ours loads, and works. */
Test(broken, newer_minor_loads)
{
  coil_loaded_plugin *lp = open_ok("newer_minor");
  cr_expect_gt(lp->api_struct_size, sizeof(coil_plugin_api));
  cr_expect_eq(lp->api.abi_minor, COIL_PLUGIN_ABI_MINOR + 3);
  cr_expect_str_eq(lp->api.name, "newer_minor");
  coil_diag d = {{0}};
  coil_plugin *inst;
  cr_assert_eq(coil_plugin_create(lp, NULL, &inst, &d), 0, "%s", d.msg);
  coil_wir_program *p = add_program("g");
  char *dir = temp_dir();
  cr_expect_eq(coil_plugin_compile(lp, inst, p, dir, NULL, &d), 0, "%s", d.msg);
  expect_has(read_text(dir, "manifest.json"), "\"plugin\": \"newer_minor\"");
  /* It only emits: loading says so, as "unsupported". */
  coil_artifact *art;
  cr_expect_eq(coil_plugin_load(lp, inst, dir, NULL, &art, &d), -COIL_ERR_UNSUPPORTED);
  expect_has(d.msg, "plugin 'newer_minor' only emits code");
  cr_expect_null(art);
  remove_dir(dir);
  coil_wir_free(p);
  coil_plugin_destroy(lp, inst);
  coil_plugin_close(lp);
}

/* ---- listing ---- */

typedef struct listing {
  int n, loaded, shadowed;
  char names[64][80];
} listing;

static void
collect(void *user, const coil_plugin_listing *e)
{
  listing *l = user;
  cr_assert_lt(l->n, 64);
  snprintf(l->names[l->n++], 80, "%s%s%s", e->name, e->plugin ? " ok" : " error",
           e->shadowed ? " shadowed" : "");
  cr_expect((e->plugin != NULL) != (e->error != NULL));
  if (e->plugin)
    cr_expect_str_eq(e->plugin->api.name, e->name);
  l->loaded += e->plugin != NULL;
  l->shadowed += e->shadowed;
}

Test(list, test_plugins)
{
  const char *twice[] = {"/nonexistent", PLUGINS, PLUGINS};
  listing l = {0};
  cr_assert_eq(coil_plugin_list(twice, 3, collect, &l), 22);
  cr_expect_eq(l.loaded, 6); /* error_no_message, good and newer_minor, twice */
  cr_expect_eq(l.shadowed, 11);
  cr_expect_str_eq(l.names[0], "broken_groups error"); /* by file name */
  cr_expect_str_eq(l.names[1], "error_no_message ok");
  cr_expect_str_eq(l.names[3], "good ok");
  cr_expect_str_eq(l.names[7], "no_entry error");
  cr_expect_str_eq(l.names[14], "good ok shadowed");
}

Test(list, search_path)
{
  setenv("COIL_PLUGIN_PATH", "/env/a::/env/b:", 1);
  coil_plugin_dirs pd;
  coil_plugin_dirs_init(&pd, "/cfg/x:/cfg/y", "/built:in");
  cr_assert_eq(pd.n, 5);
  const char *want[] = {"/cfg/x", "/cfg/y", "/env/a", "/env/b", "/built:in"};
  for (int i = 0; i < 5; i++)
    cr_expect_str_eq(pd.dirs[i], want[i]);
  coil_plugin_dirs_free(&pd);
  /* The config's plugin_path may be COIL_PLUGIN_PATH already: no directory twice. */
  coil_plugin_dirs_init(&pd, "/env/a:/env/b", "/env/b");
  cr_expect_eq(pd.n, 2);
  coil_plugin_dirs_free(&pd);
  unsetenv("COIL_PLUGIN_PATH");
  coil_plugin_dirs_init(&pd, NULL, NULL);
  cr_expect_eq(pd.n, 0);
  coil_plugin_dirs_free(&pd);
}

/* ---- lifecycle ---- */

Test(lifecycle, reload_100_times)
{
  for (int i = 0; i < 100; i++) {
    coil_loaded_plugin *lp = open_ok(i % 2 ? "good" : PLUGINS "/libcoil_good.so");
    coil_diag d = {{0}};
    coil_plugin *inst;
    cr_assert_eq(coil_plugin_create(lp, NULL, &inst, &d), 0, "%s", d.msg);
    coil_plugin_destroy(lp, inst);
    coil_plugin_close(lp);
  }
}

/* Two handles on one library (one mapping, two entry calls); closing one leaves the other. */
Test(lifecycle, open_twice)
{
  coil_loaded_plugin *a = open_ok("good"), *b = open_ok("good");
  coil_plugin_close(a);
  coil_diag d = {{0}};
  coil_plugin *inst;
  cr_assert_eq(coil_plugin_create(b, NULL, &inst, &d), 0, "%s", d.msg);
  cr_expect_eq(coil_plugin_supports(b, inst, "add", COIL_F32), COIL_SUPPORTED);
  coil_plugin_destroy(b, inst);
  coil_plugin_close(b);
}

typedef struct log_sink {
  int n;
  char plugin[64], message[256];
  coil_log_level level;
} log_sink;

static void
sink(void *user, const char *plugin, coil_log_level level, const char *message)
{
  log_sink *s = user;
  s->n++;
  snprintf(s->plugin, sizeof s->plugin, "%s", plugin);
  snprintf(s->message, sizeof s->message, "%s", message);
  s->level = level;
}

static coil_plugin_options
options(size_t n, const char *const *keys, const char *const *values)
{
  return (coil_plugin_options){sizeof(coil_plugin_options), n, keys, values};
}

Test(lifecycle, create_with_options_and_log)
{
  coil_loaded_plugin *lp = open_ok("good");
  log_sink s = {0};
  coil_plugin_set_log(lp, sink, &s);
  const char *keys[] = {"arch", "coil.mode"}, *values[] = {"sm_90", "max-autotune"};
  coil_plugin_options o = options(2, keys, values);
  coil_diag d = {{0}};
  coil_plugin *inst;
  cr_assert_eq(coil_plugin_create(lp, &o, &inst, &d), 0, "%s", d.msg);
  cr_expect_eq(s.n, 1);
  cr_expect_str_eq(s.plugin, "good");
  cr_expect_str_eq(s.message, "created for arch sm_90");
  cr_expect_eq(s.level, COIL_LOG_DEBUG);
  coil_plugin_destroy(lp, inst);
  coil_plugin_close(lp);
}

Test(lifecycle, unknown_option)
{
  coil_loaded_plugin *lp = open_ok("good");
  const char *keys[] = {"arch", "frobnicate"}, *values[] = {"sm_90", "1"};
  coil_plugin_options o = options(2, keys, values);
  coil_diag d = {{0}};
  coil_plugin *inst = (coil_plugin *)&d;
  cr_expect_eq(coil_plugin_create(lp, &o, &inst, &d), -COIL_ERR_INVALID_ARGUMENT);
  cr_expect_null(inst);
  expect_has(d.msg, "libcoil_good.so: error: plugin 'good': create failed [INVALID_ARGUMENT]: "
                    "unknown option 'frobnicate'");
  coil_plugin_close(lp);
}

Test(lifecycle, supports)
{
  coil_loaded_plugin *lp = open_ok("good");
  coil_diag d = {{0}};
  coil_plugin *inst;
  cr_assert_eq(coil_plugin_create(lp, NULL, &inst, &d), 0, "%s", d.msg);
  cr_expect_eq(coil_plugin_supports(lp, inst, "add", COIL_F32), COIL_SUPPORTED);
  cr_expect_eq(coil_plugin_supports(lp, inst, "add", COIL_I64), COIL_UNSUPPORTED);
  cr_expect_eq(coil_plugin_supports(lp, inst, "aten.mul.Tensor", COIL_F32), COIL_UNSUPPORTED);
  cr_expect_eq(coil_plugin_supports(lp, inst, NULL, COIL_F32), COIL_UNSUPPORTED);
  coil_plugin_destroy(lp, inst);
  coil_plugin_close(lp);
}

/* create → compile → load → run → artifact_free → destroy → close. */
Test(lifecycle, compile_load_run)
{
  coil_loaded_plugin *lp = open_ok("good");
  coil_diag d = {{0}};
  coil_plugin *inst;
  cr_assert_eq(coil_plugin_create(lp, NULL, &inst, &d), 0, "%s", d.msg);
  coil_wir_program *p = add_program("addition");
  char *dir = temp_dir();
  cr_assert_eq(coil_plugin_compile(lp, inst, p, dir, NULL, &d), 0, "%s", d.msg);
  const char *manifest = read_text(dir, "manifest.json");
  cr_assert_not_null(manifest);
  expect_has(manifest, "\"program\": \"addition\"");
  cr_expect_not_null(read_text(dir, "program.wir"));

  coil_artifact *art;
  cr_assert_eq(coil_plugin_load(lp, inst, dir, NULL, &art, &d), 0, "%s", d.msg);
  int64_t shape[2] = {2, 3};
  coil_tensor t[3];
  for (int i = 0; i < 3; i++)
    cr_assert_eq(coil_tensor_init(&t[i], COIL_F32, 2, shape, &d), 0, "%s", d.msg);
  for (int64_t i = 0; i < 6; i++) {
    coil_tensor_set_f64(&t[0], i, (double)i);
    coil_tensor_set_f64(&t[1], i, 0.5);
  }
  int64_t strides[3][COIL_MAX_RANK];
  coil_plugin_tensor pt[3];
  for (int i = 0; i < 3; i++)
    coil_plugin_tensor_wrap(&t[i], strides[i], &pt[i]);
  const coil_plugin_tensor *in[2] = {&pt[0], &pt[1]}, *out[1] = {&pt[2]};
  cr_assert_eq(coil_plugin_run(lp, art, 2, in, 1, out, &d), 0, "%s", d.msg);
  for (int64_t i = 0; i < 6; i++)
    cr_expect_eq(coil_tensor_get_f64(&t[2], i), (double)i + 0.5);
  /* A run the plugin rejects is an error value, not a crash. */
  cr_expect_eq(coil_plugin_run(lp, art, 1, in, 1, out, &d), -COIL_ERR_INVALID_ARGUMENT);
  expect_has(d.msg, "plugin 'good': run failed [INVALID_ARGUMENT]: run expects 2 inputs");
  for (int i = 0; i < 3; i++)
    coil_tensor_free(&t[i]);
  coil_plugin_artifact_free(lp, art);
  remove_dir(dir);
  coil_wir_free(p);
  coil_plugin_destroy(lp, inst);
  coil_plugin_close(lp);
}

Test(lifecycle, load_errors)
{
  coil_loaded_plugin *lp = open_ok("good");
  coil_diag d = {{0}};
  coil_plugin *inst;
  cr_assert_eq(coil_plugin_create(lp, NULL, &inst, &d), 0, "%s", d.msg);
  char *dir = temp_dir();
  coil_artifact *art;
  cr_expect_eq(coil_plugin_load(lp, inst, dir, NULL, &art, &d), -COIL_ERR_IO);
  expect_has(d.msg, "load failed [IO]: no artifact in ");
  cr_expect_null(art);
  remove_dir(dir);
  coil_plugin_destroy(lp, inst);
  coil_plugin_close(lp);
}

Test(lifecycle, compile_errors)
{
  coil_loaded_plugin *lp = open_ok("good");
  coil_diag d = {{0}};
  coil_plugin *inst;
  cr_assert_eq(coil_plugin_create(lp, NULL, &inst, &d), 0, "%s", d.msg);
  coil_wir_program *p = add_program("g");
  char *dir = temp_dir();

  const char *keys[] = {"fail_compile"}, *values[] = {"yes"};
  coil_plugin_options o = options(1, keys, values);
  cr_expect_eq(coil_plugin_compile(lp, inst, p, dir, &o, &d), -COIL_ERR_COMPILE_FAILED);
  expect_has(d.msg, "plugin 'good': compile failed [COMPILE_FAILED]: compile of 'g' failed");

  p->version_minor = COIL_WIR_VERSION_MINOR + 7; /* newer than the plugin reads */
  memset(&d, 0, sizeof d);
  cr_expect_eq(coil_plugin_compile(lp, inst, p, dir, NULL, &d), -COIL_ERR_VERSION);
  char want[128];
  snprintf(want, sizeof want, "plugin 'good' reads Wrapper IR 1.0 to 1.%d; the program is Wrapper IR 1.%d",
           COIL_WIR_VERSION_MINOR, COIL_WIR_VERSION_MINOR + 7);
  expect_has(d.msg, want);
  p->version_minor = COIL_WIR_VERSION_MINOR;

  memset(&d, 0, sizeof d);
  cr_expect_eq(coil_plugin_compile(lp, inst, p, NULL, NULL, &d), -COIL_ERR_INVALID_ARGUMENT);
  expect_has(d.msg, "needs a program and an artifact directory");

  /* A program that does not verify never reaches the plugin. */
  coil_wir_program *bad = coil_wir_new("no_output");
  memset(&d, 0, sizeof d);
  cr_expect_eq(coil_plugin_compile(lp, inst, bad, dir, NULL, &d), -COIL_ERR_INVALID_ARGUMENT);
  expect_has(d.msg, "program 'no_output' does not verify, so it is not handed to plugin 'good': ");
  expect_has(d.msg, "no output line");
  cr_expect_null(read_text(dir, "manifest.json"));
  coil_wir_free(bad);

  remove_dir(dir);
  coil_wir_free(p);
  coil_plugin_destroy(lp, inst);
  coil_plugin_close(lp);
}

Test(lifecycle, error_without_message)
{
  coil_loaded_plugin *lp = open_ok("error_no_message");
  coil_diag d = {{0}};
  coil_plugin *inst;
  cr_assert_eq(coil_plugin_create(lp, NULL, &inst, &d), 0, "%s", d.msg);
  coil_wir_program *p = add_program("g");
  char *dir = temp_dir();
  cr_expect_eq(coil_plugin_compile(lp, inst, p, dir, NULL, &d), -COIL_ERR_COMPILE_FAILED);
  expect_has(d.msg, "plugin 'error_no_message': compile failed [COMPILE_FAILED]: plugin returned "
                    "an error without a message");
  remove_dir(dir);
  coil_wir_free(p);
  coil_plugin_destroy(lp, inst);
  coil_plugin_close(lp);
}

/* ---- two threads compiling on one instance ---- */

typedef struct compile_job {
  const coil_loaded_plugin *lp;
  coil_plugin *inst;
  const char *name;
  int failures;
  char msg[2048];
} compile_job;

static void *
compile_many(void *arg)
{
  compile_job *job = arg;
  for (int i = 0; i < 50; i++) {
    coil_diag d = {{0}};
    coil_wir_program *p = parse_add(job->name, &d);
    char tmpl[] = "/tmp/coil-runtime-XXXXXX";
    char *dir = p ? mkdtemp(tmpl) : NULL;
    if (!dir || coil_plugin_compile(job->lp, job->inst, p, dir, NULL, &d) < 0) {
      job->failures++;
      snprintf(job->msg, sizeof job->msg, "%s", d.msg);
      if (dir)
        rmdir(dir);
    } else {
      char want[128];
      snprintf(want, sizeof want, "\"program\": \"%s\"", job->name);
      const char *files[] = {"manifest.json", "program.wir"};
      for (int f = 0; f < 2; f++) {
        char path[4096], text[1024] = "";
        snprintf(path, sizeof path, "%s/%s", dir, files[f]);
        FILE *fp = fopen(path, "r");
        if (fp) {
          text[fread(text, 1, sizeof text - 1, fp)] = 0;
          fclose(fp);
        }
        if (f == 0 && !strstr(text, want))
          job->failures++;
        unlink(path);
      }
      rmdir(dir);
    }
    coil_wir_free(p);
  }
  return NULL;
}

Test(threads, two_compiles_at_once)
{
  coil_loaded_plugin *lp = open_ok("good");
  coil_diag d = {{0}};
  coil_plugin *inst;
  cr_assert_eq(coil_plugin_create(lp, NULL, &inst, &d), 0, "%s", d.msg);
  compile_job jobs[2] = {{lp, inst, "first", 0, ""}, {lp, inst, "second", 0, ""}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    cr_assert_eq(pthread_create(&th[i], NULL, compile_many, &jobs[i]), 0);
  for (int i = 0; i < 2; i++) {
    pthread_join(th[i], NULL);
    cr_expect_eq(jobs[i].failures, 0, "thread %d: %s", i, jobs[i].msg);
  }
  coil_plugin_destroy(lp, inst);
  coil_plugin_close(lp);
}
