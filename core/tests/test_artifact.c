/* Artifacts (artifact.h) on the interp plugin: an artifact written by coil_artifact_write runs
 * without the graph to the same outputs as running the graph; every file is checked, so a
 * changed, missing or added file is named; another plugin version, a missing plugin and a newer
 * format are refused with what to do; embedded weights are bound at load; a failed write leaves
 * nothing behind and an existing directory that is not an artifact is never replaced. Edited
 * with coil.json re-hashed, coil.wir is still cross-checked with the plugin's program.wir; an
 * artifact anyone may write to, or holding a symlink, is refused. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "artifact.h"
#include "backend.h"
#include "graph.h"
#include "rehash.h"

#define MLP COIL_SOURCE_DIR "/examples/mlp.coil"
#define MLP_WEIGHTS COIL_SOURCE_DIR "/examples/mlp.weights.safetensors"
#define MLP_INPUTS COIL_SOURCE_DIR "/examples/mlp.inputs.safetensors"

/* Each call starts with an empty diag: coil_diag keeps the first message written. */
static coil_diag *
fresh(coil_diag *d)
{
  d->msg[0] = 0;
  return d;
}

static char root[64]; /* a fresh directory per test, removed after it */

static void
setup(void)
{
  snprintf(root, sizeof root, "/tmp/coil-artifact-test-XXXXXX");
  cr_assert_not_null(mkdtemp(root));
}

static void
teardown(void)
{
  coil_artifact_remove(root);
}

TestSuite(artifact, .init = setup, .fini = teardown);

/* dir/name in one of 64 rotating buffers: enough for the paths one test holds at once. */
static char *
path_in(const char *dir, const char *name)
{
  static char buf[64][512];
  static int k;
  char joined[512];
  snprintf(joined, sizeof joined, "%s/%s", dir, name);
  char *p = buf[k++ % 64];
  memcpy(p, joined, sizeof joined);
  return p;
}

static char *
slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot open %s", path);
  char *buf = calloc(1, 1 << 20);
  size_t n = fread(buf, 1, (1 << 20) - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

static void
spit(const char *path, const char *text)
{
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
}

/* Replaces the first `from` in the file with `to`. */
static void
edit(const char *path, const char *from, const char *to)
{
  char *text = slurp(path);
  char *at = strstr(text, from);
  cr_assert_not_null(at, "%s has no '%s'", path, from);
  char *out = calloc(1, strlen(text) + strlen(to) + 1);
  memcpy(out, text, (size_t)(at - text));
  strcat(out, to);
  strcat(out, at + strlen(from));
  spit(path, out);
  free(out);
  free(text);
}

/* Entries of dir other than . and .. */
static int
count_entries(const char *dir)
{
  DIR *dp = opendir(dir);
  cr_assert_not_null(dp);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(dp)))
    n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  closedir(dp);
  return n;
}

typedef struct fixture {
  coil_graph *g;
  coil_wir_program *p;
  coil_plugin_dirs dirs;
  coil_loaded_plugin *lp;
  coil_plugin *inst;
} fixture;

static void
fixture_init(fixture *f)
{
  coil_diag d = {0};
  f->g = coil_graph_load(MLP, fresh(&d));
  cr_assert_not_null(f->g, "%s", d.msg);
  f->p = coil_compile_graph(f->g, NULL, fresh(&d));
  cr_assert_not_null(f->p, "%s", d.msg);
  coil_plugin_dirs_init(&f->dirs, NULL, COIL_TEST_PLUGIN_DIR_INTERP);
  cr_assert_eq(coil_plugin_open("interp", (const char *const *)f->dirs.dirs, f->dirs.n, &f->lp, fresh(&d)), 0, "%s", d.msg);
  cr_assert_eq(coil_plugin_create(f->lp, NULL, &f->inst, fresh(&d)), 0, "%s", d.msg);
}

static void
fixture_free(fixture *f)
{
  coil_plugin_destroy(f->lp, f->inst);
  coil_plugin_close(f->lp);
  coil_plugin_dirs_free(&f->dirs);
  coil_wir_free(f->p);
  coil_graph_free(f->g);
}

/* Writes the mlp artifact into root/name (embedding weights when asked). */
static const char *
write_mlp(fixture *f, const char *name, const char *embed)
{
  static const char *const outs[] = {"probs", "activity"};
  coil_artifact_write_opts o = {.graph_name = "mlp", .noutput_names = 2, .output_names = outs,
                                .embed_weights = embed, .replace = true};
  const char *dir = path_in(root, name);
  coil_diag d = {0};
  cr_assert_eq(coil_artifact_write(f->lp, f->inst, f->p, NULL, &o, dir, fresh(&d)), 0, "%s", d.msg);
  return dir;
}

static void
read_st(const char *path, coil_tensor_list *into)
{
  coil_diag d = {0};
  coil_tensor_list l = {0};
  cr_assert_eq(coil_safetensors_read(path, &l, fresh(&d)), 0, "%s", d.msg);
  for (int i = 0; i < l.n; i++)
    coil_tensor_list_add(into, l.names[i], &l.tensors[i]);
  coil_tensor_list_free(&l);
}

/* Runs the artifact at dir on `in`; returns rc, message in d. */
static int
run_dir(const char *dir, const coil_plugin_dirs *dirs, const coil_tensor_list *in,
        coil_tensor_list *out, coil_diag *d)
{
  coil_stored_artifact *a = NULL;
  if (coil_artifact_open(dir, &a, d))
    return -1;
  int rc = coil_artifact_run(a, (const char *const *)dirs->dirs, dirs->n, NULL, in, out, d);
  coil_artifact_close(a);
  return rc;
}

static void
expect_same_outputs(const coil_tensor_list *a, const coil_tensor_list *b)
{
  cr_assert_eq(a->n, b->n);
  for (int i = 0; i < a->n; i++) {
    cr_assert_str_eq(a->names[i], b->names[i]);
    cr_assert_eq(coil_tensor_nbytes(&a->tensors[i]), coil_tensor_nbytes(&b->tensors[i]));
    cr_expect_eq(memcmp(a->tensors[i].data, b->tensors[i].data, coil_tensor_nbytes(&a->tensors[i])), 0,
                 "out%d differs between the artifact and the graph", i);
  }
}

Test(artifact, runs_without_the_graph_to_the_graphs_outputs)
{
  fixture f;
  fixture_init(&f);
  const char *dir = write_mlp(&f, "mlp.coilart", NULL);
  coil_tensor_list in = {0}, want = {0}, got = {0};
  read_st(MLP_INPUTS, &in);
  read_st(MLP_WEIGHTS, &in);
  coil_diag d = {0};
  coil_backend_env env = {.dirs = f.dirs};
  cr_assert_eq(coil_backend_run(f.g, "interp", &env, &in, &want, fresh(&d)), 0, "%s", d.msg);
  cr_assert_eq(run_dir(dir, &f.dirs, &in, &got, fresh(&d)), 0, "%s", d.msg);
  expect_same_outputs(&got, &want);

  /* What coil.json records, and the files beside it. */
  coil_stored_artifact *a = NULL;
  cr_assert_eq(coil_artifact_open(dir, &a, fresh(&d)), 0, "%s", d.msg);
  cr_expect_str_eq(a->plugin, "interp");
  cr_expect_str_eq(a->plugin_version, f.lp->api.version);
  cr_expect_str_eq(a->graph, "mlp");
  cr_expect_str_eq(a->coil_version, COIL_VERSION_STRING);
  cr_assert_eq(a->noutputs, 2);
  cr_expect_str_eq(a->output_names[0], "probs");
  cr_expect_str_eq(a->output_names[1], "activity");
  cr_expect_eq(a->weights.n, 0);
  cr_expect_eq(a->program->ninputs, 5);
  coil_artifact_close(a);
  char *json = slurp(path_in(dir, "coil.json"));
  cr_expect_not_null(strstr(json, "\"label\":\t\"x\""), "%s", json);
  cr_expect_not_null(strstr(json, "\"s0\""), "the symbolic batch size is recorded: %s", json);
  cr_expect_not_null(strstr(json, "\"path\":\t\"manifest.json\""), "the plugin's files are hashed");
  cr_expect_not_null(strstr(json, "\"path\":\t\"coil.wir\""));
  cr_expect_not_null(strstr(json, "\"content_hash\""));
  free(json);
  cr_expect_eq(count_entries(root), 1, "no temporary directory is left beside the artifact");
  cr_expect_eq(coil_artifact_verify(dir, fresh(&d)), 0, "%s", d.msg);

  coil_tensor_list_free(&in), coil_tensor_list_free(&want), coil_tensor_list_free(&got);
  fixture_free(&f);
}

Test(artifact, a_changed_file_is_named)
{
  fixture f;
  fixture_init(&f);
  const char *dir = write_mlp(&f, "a", NULL);
  edit(path_in(dir, "program.wir"), "relu", "sigm"); /* same size, other bytes */
  coil_diag d = {0};
  coil_stored_artifact *a = NULL;
  cr_assert_eq(coil_artifact_open(dir, &a, fresh(&d)), -1);
  cr_expect_null(a);
  cr_expect_not_null(strstr(d.msg, "a/program.wir: changed or corrupted since the artifact was written"), "%s", d.msg);
  cr_expect_not_null(strstr(d.msg, "recompile"), "%s", d.msg);
  cr_expect_eq(coil_artifact_verify(dir, fresh(&d)), -1);

  /* Truncated: same message, other sizes. */
  dir = write_mlp(&f, "b", NULL);
  cr_assert_eq(truncate(path_in(dir, "coil.wir"), 10), 0);
  cr_assert_eq(coil_artifact_open(dir, &a, fresh(&d)), -1);
  cr_expect_not_null(strstr(d.msg, "b/coil.wir: changed or corrupted"), "%s", d.msg);
  cr_expect_not_null(strstr(d.msg, "(10 bytes"), "%s", d.msg);
  fixture_free(&f);
}

Test(artifact, a_missing_or_added_file_is_named)
{
  fixture f;
  fixture_init(&f);
  const char *dir = write_mlp(&f, "a", NULL);
  cr_assert_eq(unlink(path_in(dir, "manifest.json")), 0);
  coil_diag d = {0};
  cr_assert_eq(coil_artifact_verify(dir, fresh(&d)), -1);
  cr_expect_not_null(strstr(d.msg, "a/manifest.json: missing from the artifact"), "%s", d.msg);

  dir = write_mlp(&f, "b", NULL);
  spit(path_in(dir, "extra.so"), "not ours");
  cr_assert_eq(coil_artifact_verify(dir, fresh(&d)), -1);
  cr_expect_not_null(strstr(d.msg, "b/extra.so: not part of the artifact"), "%s", d.msg);

  dir = write_mlp(&f, "c", NULL);
  cr_assert_eq(unlink(path_in(dir, "coil.json")), 0);
  cr_assert_eq(coil_artifact_verify(dir, fresh(&d)), -1);
  cr_expect_not_null(strstr(d.msg, "not a coil artifact: cannot read coil.json"), "%s", d.msg);

  dir = write_mlp(&f, "e", NULL); /* the file list itself edited: the content hash says so */
  edit(path_in(dir, "coil.json"), "\"path\":\t\"program.wir\"", "\"path\":\t\"coil.wir\"");
  cr_assert_eq(coil_artifact_verify(dir, fresh(&d)), -1);
  cr_expect_not_null(strstr(d.msg, "content_hash does not match"), "%s", d.msg);
  fixture_free(&f);
}

Test(artifact, another_plugin_version_is_refused)
{
  fixture f;
  fixture_init(&f);
  const char *dir = write_mlp(&f, "a", NULL);
  char recorded[64], shown[64];
  snprintf(recorded, sizeof recorded, "\"plugin_version\":\t\"%s\"", f.lp->api.version);
  snprintf(shown, sizeof shown, "\"plugin_version\":\t\"%s\"", "9.9.9");
  edit(path_in(dir, "coil.json"), recorded, shown);
  coil_tensor_list in = {0}, out = {0};
  read_st(MLP_INPUTS, &in);
  read_st(MLP_WEIGHTS, &in);
  coil_diag d = {0};
  cr_assert_eq(run_dir(dir, &f.dirs, &in, &out, fresh(&d)), -1);
  char want[256];
  snprintf(want, sizeof want, "artifact was compiled by interp 9.9.9; the plugin found is interp %s",
           f.lp->api.version);
  cr_expect_not_null(strstr(d.msg, want), "%s", d.msg);
  cr_expect_not_null(strstr(d.msg, ": recompile"), "%s", d.msg);
  cr_expect_eq(out.n, 0);
  coil_tensor_list_free(&in);
  fixture_free(&f);
}

Test(artifact, a_missing_plugin_is_refused)
{
  fixture f;
  fixture_init(&f);
  const char *dir = write_mlp(&f, "a", NULL);
  coil_tensor_list in = {0}, out = {0};
  read_st(MLP_INPUTS, &in);
  read_st(MLP_WEIGHTS, &in);
  coil_plugin_dirs nowhere;
  coil_plugin_dirs_init(&nowhere, root, NULL); /* a directory without plugins */
  coil_diag d = {0};
  unsetenv("COIL_PLUGIN_PATH");
  cr_assert_eq(run_dir(dir, &nowhere, &in, &out, fresh(&d)), -1);
  cr_expect_not_null(strstr(d.msg, "artifact was compiled by interp"), "%s", d.msg);
  cr_expect_not_null(strstr(d.msg, "plugin 'interp' not found"), "%s", d.msg);
  coil_plugin_dirs_free(&nowhere);
  coil_tensor_list_free(&in);
  fixture_free(&f);
}

Test(artifact, a_newer_format_is_refused)
{
  fixture f;
  fixture_init(&f);
  const char *dir = write_mlp(&f, "a", NULL);
  edit(path_in(dir, "coil.json"), "\"format\":\t1", "\"format\":\t7");
  coil_diag d = {0};
  coil_stored_artifact *a = NULL;
  cr_assert_eq(coil_artifact_open(dir, &a, fresh(&d)), -1);
  cr_expect_not_null(strstr(d.msg, "artifact format 7 is newer than this coil"), "%s", d.msg);
  fixture_free(&f);
}

Test(artifact, embedded_weights_are_bound_at_load)
{
  fixture f;
  fixture_init(&f);
  const char *plain = write_mlp(&f, "plain", NULL);
  const char *dir = write_mlp(&f, "embedded", MLP_WEIGHTS);
  struct stat st;
  cr_assert_eq(stat(path_in(dir, "weights.safetensors"), &st), 0);
  cr_expect_neq(stat(path_in(plain, "weights.safetensors"), &st), 0);
  char *json = slurp(path_in(dir, "coil.json"));
  cr_expect_not_null(strstr(json, "\"embedded_weights\":\t[\"w1\", \"b1\", \"w2\", \"b2\"]"), "%s", json);
  free(json);

  coil_tensor_list x = {0}, all = {0}, want = {0}, got = {0};
  read_st(MLP_INPUTS, &x);
  read_st(MLP_INPUTS, &all);
  read_st(MLP_WEIGHTS, &all);
  coil_diag d = {0};
  cr_assert_eq(run_dir(plain, &f.dirs, &all, &want, fresh(&d)), 0, "%s", d.msg);
  cr_assert_eq(run_dir(dir, &f.dirs, &x, &got, fresh(&d)), 0, "only x given: %s", d.msg);
  expect_same_outputs(&got, &want);
  coil_tensor_list_free(&got);
  /* Without them the same run fails, naming the param. */
  cr_assert_eq(run_dir(plain, &f.dirs, &x, &got, fresh(&d)), -1);
  cr_expect_not_null(strstr(d.msg, "no tensor given for parameter %w1"), "%s", d.msg);
  /* Given weights win over embedded ones. */
  coil_tensor *w2 = coil_tensor_list_find(&all, "w2");
  coil_tensor_set_f64(w2, 0, coil_tensor_get_f64(w2, 0) + 1.0);
  coil_tensor_list other = {0};
  cr_assert_eq(run_dir(dir, &f.dirs, &all, &other, fresh(&d)), 0, "%s", d.msg);
  cr_expect_neq(memcmp(other.tensors[0].data, want.tensors[0].data, coil_tensor_nbytes(&want.tensors[0])), 0);
  coil_tensor_list_free(&other);
  coil_tensor_list_free(&x), coil_tensor_list_free(&all), coil_tensor_list_free(&want);
  fixture_free(&f);
}

Test(artifact, embedding_weights_of_the_wrong_type_fails_and_leaves_nothing)
{
  fixture f;
  fixture_init(&f);
  coil_tensor_list l = {0};
  coil_tensor t;
  int64_t shape[2] = {64, 32};
  cr_assert_eq(coil_tensor_init(&t, COIL_F64, 2, shape, NULL), 0);
  coil_tensor_list_add(&l, "w1", &t);
  coil_diag d = {0};
  const char *bad = path_in(root, "bad.safetensors");
  cr_assert_eq(coil_safetensors_write(bad, &l, fresh(&d)), 0, "%s", d.msg);
  coil_tensor_list_free(&l);
  coil_artifact_write_opts o = {.embed_weights = bad};
  const char *dir = path_in(root, "art");
  cr_assert_eq(coil_artifact_write(f.lp, f.inst, f.p, NULL, &o, dir, fresh(&d)), -1);
  cr_expect_not_null(strstr(d.msg, "tensor 'w1' does not have the type of param %w1"), "%s", d.msg);
  o.embed_weights = path_in(root, "no-such.safetensors");
  cr_assert_eq(coil_artifact_write(f.lp, f.inst, f.p, NULL, &o, dir, fresh(&d)), -1);
  cr_expect_eq(count_entries(root), 1, "only bad.safetensors: no artifact and no temporary directory");
  fixture_free(&f);
}

Test(artifact, only_an_artifact_or_an_empty_directory_is_replaced)
{
  fixture f;
  fixture_init(&f);
  const char *dir = path_in(root, "keep");
  cr_assert_eq(mkdir(dir, 0700), 0);
  spit(path_in(dir, "notes.txt"), "mine");
  coil_artifact_write_opts o = {.replace = true};
  coil_diag d = {0};
  cr_assert_eq(coil_artifact_write(f.lp, f.inst, f.p, NULL, &o, dir, fresh(&d)), -1);
  cr_expect_not_null(strstr(d.msg, "exists and is not a coil artifact"), "%s", d.msg);
  cr_expect_eq(count_entries(dir), 1, "the directory is left alone");

  const char *file = path_in(root, "file");
  spit(file, "x");
  cr_assert_eq(coil_artifact_write(f.lp, f.inst, f.p, NULL, &o, file, fresh(&d)), -1);
  cr_expect_not_null(strstr(d.msg, "exists and is not a directory"), "%s", d.msg);

  const char *empty = path_in(root, "empty/");
  cr_assert_eq(mkdir(empty, 0700), 0);
  cr_assert_eq(coil_artifact_write(f.lp, f.inst, f.p, NULL, &o, empty, fresh(&d)), 0, "%s", d.msg);
  cr_expect(coil_artifact_is(empty));

  /* An artifact is replaced with replace, kept (1) without. */
  const char *art = write_mlp(&f, "art", NULL);
  spit(path_in(art, "stale"), "from before"); /* would fail the check if kept */
  art = write_mlp(&f, "art", NULL);
  cr_expect_eq(coil_artifact_verify(art, fresh(&d)), 0, "replaced: %s", d.msg);
  o.replace = false;
  spit(path_in(art, "stale"), "from before");
  cr_assert_eq(coil_artifact_write(f.lp, f.inst, f.p, NULL, &o, art, fresh(&d)), 1);
  cr_expect_eq(access(path_in(art, "stale"), F_OK), 0, "kept as it was");
  cr_expect_eq(count_entries(root), 4, "keep, file, empty, art: nothing else");
  fixture_free(&f);
}

Test(artifact, inputs_are_checked_against_the_signature)
{
  fixture f;
  fixture_init(&f);
  const char *dir = write_mlp(&f, "a", MLP_WEIGHTS);
  coil_tensor_list in = {0}, out = {0};
  coil_tensor x;
  int64_t shape[2] = {3, 63};
  cr_assert_eq(coil_tensor_init(&x, COIL_F32, 2, shape, NULL), 0);
  coil_tensor_list_add(&in, "x", &x);
  coil_diag d = {0};
  cr_assert_eq(run_dir(dir, &f.dirs, &in, &out, fresh(&d)), -1);
  cr_expect_str_eq(d.msg, "input %x: expected f32[s0, 64], got f32[3, 63]");
  coil_tensor_list_free(&in);
  shape[1] = 64;
  cr_assert_eq(coil_tensor_init(&x, COIL_F64, 2, shape, NULL), 0);
  coil_tensor_list_add(&in, "x", &x);
  cr_assert_eq(run_dir(dir, &f.dirs, &in, &out, fresh(&d)), -1);
  cr_expect_str_eq(d.msg, "input %x: expected f32[s0, 64], got f64[3, 64]");
  coil_tensor_list_free(&in);
  fixture_free(&f);
}

Test(artifact, an_edited_coil_wir_with_coil_json_rehashed_is_refused)
{
  fixture f;
  fixture_init(&f);
  const char *dir = write_mlp(&f, "a", NULL);
  /* The host sizes the outputs from coil.wir: an edit there, re-hashed so that every unkeyed
   * check passes, would let the code write past what the host allocated. */
  edit(path_in(dir, "coil.wir"), "program mlp", "program mlq");
  rehash_artifact(dir);
  coil_diag d = {0};
  cr_assert_eq(coil_artifact_verify(dir, fresh(&d)), 0, "the hashes match again: %s", d.msg);
  coil_stored_artifact *a = NULL;
  cr_assert_eq(coil_artifact_open(dir, &a, fresh(&d)), -1);
  cr_expect_null(a);
  cr_expect_not_null(strstr(d.msg, "a/coil.wir: is not the program that plugin 'interp' compiled"), "%s", d.msg);
  fixture_free(&f);
}

Test(artifact, an_artifact_anyone_may_write_or_holding_a_symlink_is_refused)
{
  fixture f;
  fixture_init(&f);
  const char *dir = write_mlp(&f, "a", NULL);
  coil_diag d = {0};
  coil_stored_artifact *a = NULL;
  cr_assert_eq(chmod(dir, 0777), 0);
  cr_expect_eq(coil_artifact_open(dir, &a, fresh(&d)), -1);
  cr_expect_not_null(strstr(d.msg, "anyone may write to it (mode 777)"), "%s", d.msg);
  cr_assert_eq(chmod(dir, 0755), 0);
  cr_assert_eq(chmod(path_in(dir, "program.wir"), 0666), 0);
  cr_expect_eq(coil_artifact_open(dir, &a, fresh(&d)), -1);
  cr_expect_not_null(strstr(d.msg, "a/program.wir: anyone may write to it (mode 666)"), "%s", d.msg);
  cr_assert_eq(chmod(path_in(dir, "program.wir"), 0644), 0);
  cr_assert_eq(coil_artifact_open(dir, &a, fresh(&d)), 0, "%s", d.msg);
  coil_artifact_close(a);
  /* A recorded file replaced by a symlink to a copy of itself: not followed. */
  cr_assert_eq(rename(path_in(dir, "program.wir"), path_in(root, "elsewhere.wir")), 0);
  cr_assert_eq(symlink(path_in(root, "elsewhere.wir"), path_in(dir, "program.wir")), 0);
  cr_expect_eq(coil_artifact_open(dir, &a, fresh(&d)), -1);
  cr_expect_not_null(strstr(d.msg, "a/program.wir: not a regular file"), "%s", d.msg);
  fixture_free(&f);
}
