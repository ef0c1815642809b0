/* The compile cache (cache.h) on the interp plugin: keys change with every input of the key and
 * nothing else; a second run loads the entry without compiling; a damaged entry is removed and
 * compiled again; concurrent writers of one key (threads and processes) leave exactly one valid
 * entry and no temporary directory; the cache directory is private and a shared one refused.
 * The cache as a trust boundary (docs/reliability.md, "The compile cache and artifacts"): an entry replaced by a symlink is
 * not followed, an entry or file others may write is not used, a planted file with coil.json
 * re-hashed fails the keyed hash, the key is private, and what dead writers left is removed. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "artifact.h"
#include "backend.h"
#include "cache.h"
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

static char root[64];
static char cache[128];

static void
setup(void)
{
  snprintf(root, sizeof root, "/tmp/coil-cache-test-XXXXXX");
  cr_assert_not_null(mkdtemp(root));
  snprintf(cache, sizeof cache, "%s/user/cache", root); /* parents missing on purpose */
}

static void
teardown(void)
{
  coil_artifact_remove(root);
}

TestSuite(cache, .init = setup, .fini = teardown);

/* The entries of the cache: names of non-hidden directories; hidden ones counted apart. */
static int
entries(char names[][40], int cap, int *hidden)
{
  DIR *dp = opendir(cache);
  cr_assert_not_null(dp);
  int n = 0;
  *hidden = 0;
  struct dirent *e;
  while ((e = readdir(dp))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
        strcmp(e->d_name, COIL_CACHE_KEY_FILE) == 0)
      continue;
    if (e->d_name[0] == '.') {
      (*hidden)++;
    } else if (n < cap) {
      snprintf(names[n++], 40, "%.39s", e->d_name);
    }
  }
  closedir(dp);
  return n;
}

static void
read_inputs(coil_tensor_list *in)
{
  coil_diag d = {0};
  coil_tensor_list l = {0};
  const char *files[] = {MLP_INPUTS, MLP_WEIGHTS};
  for (int k = 0; k < 2; k++) {
    cr_assert_eq(coil_safetensors_read(files[k], &l, fresh(&d)), 0, "%s", d.msg);
    for (int i = 0; i < l.n; i++)
      coil_tensor_list_add(in, l.names[i], &l.tensors[i]);
    coil_tensor_list_free(&l);
  }
}

static coil_graph *
load_mlp(void)
{
  coil_diag d = {0};
  coil_graph *g = coil_graph_load(MLP, fresh(&d));
  cr_assert_not_null(g, "%s", d.msg);
  return g;
}

Test(cache, keys_change_with_each_part_and_only_with_them)
{
  const char *k1[] = {"coil.mode", "arch"}, *v1[] = {"default", "x"};
  const char *k2[] = {"arch", "coil.mode"}, *v2[] = {"x", "default"};
  coil_plugin_options o1 = {.struct_size = sizeof o1, .count = 2, .keys = k1, .values = v1};
  coil_plugin_options o2 = {.struct_size = sizeof o2, .count = 2, .keys = k2, .values = v2};
  coil_plugin_options o3 = {.struct_size = sizeof o3, .count = 1, .keys = k1, .values = v1};
  coil_cache_key base, same, k;
  coil_cache_key_make("wir 1.0\n", "cpu", "0.1.0", &o1, "cc 12", &base);
  coil_cache_key_make("wir 1.0\n", "cpu", "0.1.0", &o1, "cc 12", &same);
  cr_expect_str_eq(base.hex, same.hex);
  cr_expect_eq(strlen(base.hex), 32);
  cr_expect_eq(strspn(base.hex, "0123456789abcdef"), 32);
  coil_cache_key_make("wir 1.0\n", "cpu", "0.1.0", &o2, "cc 12", &k);
  cr_expect_str_eq(base.hex, k.hex, "the options' order does not matter");
  coil_cache_key_make("wir 1.0\n\n", "cpu", "0.1.0", &o1, "cc 12", &k);
  cr_expect_str_neq(base.hex, k.hex, "program text");
  coil_cache_key_make("wir 1.0\n", "cuda", "0.1.0", &o1, "cc 12", &k);
  cr_expect_str_neq(base.hex, k.hex, "plugin name");
  coil_cache_key_make("wir 1.0\n", "cpu", "0.1.1", &o1, "cc 12", &k);
  cr_expect_str_neq(base.hex, k.hex, "plugin version");
  coil_cache_key_make("wir 1.0\n", "cpu", "0.1.0", &o3, "cc 12", &k);
  cr_expect_str_neq(base.hex, k.hex, "options");
  coil_cache_key_make("wir 1.0\n", "cpu", "0.1.0", &o1, "cc 13", &k);
  cr_expect_str_neq(base.hex, k.hex, "toolchain");
  coil_cache_key_make("wir 1.0\n", "cpu", "0.1.0", &o1, "", &k);
  cr_expect_str_neq(base.hex, k.hex, "empty toolchain");
  /* Fields are length-prefixed: moving a byte from one field to the next changes the key. */
  coil_cache_key a, b;
  coil_cache_key_make("ab", "c", "1.0.0", NULL, NULL, &a);
  coil_cache_key_make("a", "bc", "1.0.0", NULL, NULL, &b);
  cr_expect_str_neq(a.hex, b.hex);
}

Test(cache, a_second_run_loads_the_entry_without_compiling)
{
  coil_graph *g = load_mlp();
  coil_tensor_list in = {0}, first = {0}, second = {0};
  read_inputs(&in);
  coil_backend_stats stats = {0};
  coil_backend_env env = {.cache_dir = cache, .stats = &stats};
  coil_plugin_dirs_init(&env.dirs, NULL, COIL_TEST_PLUGIN_DIR_INTERP);
  coil_diag d = {0};
  cr_assert_eq(coil_backend_run(g, "interp", &env, &in, &first, fresh(&d)), 0, "%s", d.msg);
  cr_expect_eq(stats.compiles, 1);
  cr_expect_eq(stats.cache_hits, 0);
  char names[4][40];
  int hidden;
  cr_assert_eq(entries(names, 4, &hidden), 1);
  cr_expect_eq(hidden, 0);
  char manifest[256];
  snprintf(manifest, sizeof manifest, "%s/%s/coil.json", cache, names[0]);
  struct stat before, after;
  cr_assert_eq(stat(manifest, &before), 0);

  cr_assert_eq(coil_backend_run(g, "interp", &env, &in, &second, fresh(&d)), 0, "%s", d.msg);
  cr_expect_eq(stats.compiles, 1, "the second run did not compile");
  cr_expect_eq(stats.cache_hits, 1);
  cr_assert_eq(stat(manifest, &after), 0);
  cr_expect_eq(before.st_ino, after.st_ino, "the entry is the one written first");
  cr_expect_eq(before.st_mtime, after.st_mtime);
  cr_assert_eq(first.n, second.n);
  for (int i = 0; i < first.n; i++)
    cr_expect_eq(memcmp(first.tensors[i].data, second.tensors[i].data, coil_tensor_nbytes(&first.tensors[i])), 0);

  /* The directories are private, parents included. */
  struct stat st;
  cr_assert_eq(stat(cache, &st), 0);
  cr_expect_eq(st.st_mode & 0777, 0700);
  char parent[300];
  snprintf(parent, sizeof parent, "%s/user", root);
  cr_assert_eq(stat(parent, &st), 0);
  cr_expect_eq(st.st_mode & 0777, 0700);
  snprintf(parent, sizeof parent, "%s/%s", cache, names[0]);
  cr_assert_eq(stat(parent, &st), 0);
  cr_expect_eq(st.st_mode & 0777, 0700);

  /* Other options are another entry. */
  const char *k[] = {"coil.mode"}, *v[] = {"max-autotune"};
  env.noptions = 1, env.option_keys = k, env.option_values = v;
  coil_tensor_list third = {0};
  cr_assert_eq(coil_backend_run(g, "interp", &env, &in, &third, fresh(&d)), 0, "%s", d.msg);
  cr_expect_eq(stats.compiles, 2);
  cr_expect_eq(entries(names, 4, &hidden), 2);

  coil_plugin_dirs_free(&env.dirs);
  coil_tensor_list_free(&in), coil_tensor_list_free(&first), coil_tensor_list_free(&second);
  coil_tensor_list_free(&third);
  coil_graph_free(g);
}

/* Damages the only entry with `how`, runs again, and expects a rebuild into a valid entry;
 * visible: whether coil_artifact_verify (the checks of an AOT artifact) sees the damage too. */
static void
damage_and_rerun_if(void (*how)(const char *entry), bool visible)
{
  coil_graph *g = load_mlp();
  coil_tensor_list in = {0}, out = {0};
  read_inputs(&in);
  coil_backend_stats stats = {0};
  coil_backend_env env = {.cache_dir = cache, .stats = &stats};
  coil_plugin_dirs_init(&env.dirs, NULL, COIL_TEST_PLUGIN_DIR_INTERP);
  coil_diag d = {0};
  cr_assert_eq(coil_backend_run(g, "interp", &env, &in, &out, fresh(&d)), 0, "%s", d.msg);
  coil_tensor_list_free(&out);
  char names[4][40], entry[300];
  int hidden;
  cr_assert_eq(entries(names, 4, &hidden), 1);
  snprintf(entry, sizeof entry, "%s/%s", cache, names[0]);
  how(entry);
  if (visible)
    cr_assert_neq(coil_artifact_verify(entry, fresh(&d)), 0, "the damage is visible");
  else
    cr_assert_eq(coil_artifact_verify(entry, fresh(&d)), 0, "only the cache's checks see it: %s", d.msg);

  cr_assert_eq(coil_backend_run(g, "interp", &env, &in, &out, fresh(&d)), 0, "%s", d.msg);
  cr_expect_eq(stats.compiles, 2, "the damaged entry was compiled again");
  cr_expect_eq(stats.cache_hits, 0);
  cr_expect_eq(coil_artifact_verify(entry, fresh(&d)), 0, "the new entry is whole: %s", d.msg);
  cr_expect_eq(entries(names, 4, &hidden), 1);
  cr_expect_eq(hidden, 0, "the damaged entry was removed");
  coil_tensor_list_free(&out);
  cr_assert_eq(coil_backend_run(g, "interp", &env, &in, &out, fresh(&d)), 0, "%s", d.msg);
  cr_expect_eq(stats.cache_hits, 1, "and is used from then on");

  coil_plugin_dirs_free(&env.dirs);
  coil_tensor_list_free(&in), coil_tensor_list_free(&out);
  coil_graph_free(g);
}

static void
damage_and_rerun(void (*how)(const char *entry))
{
  damage_and_rerun_if(how, true);
}

static void
corrupt_program(const char *entry)
{
  char path[300];
  snprintf(path, sizeof path, "%s/program.wir", entry);
  FILE *f = fopen(path, "r+b");
  cr_assert_not_null(f);
  fseek(f, 20, SEEK_SET);
  fputc('#', f);
  fclose(f);
}

static void
drop_manifest(const char *entry)
{
  char path[300];
  snprintf(path, sizeof path, "%s/coil.json", entry);
  cr_assert_eq(unlink(path), 0);
}

static void
empty_entry(const char *entry)
{
  coil_artifact_remove(entry);
  cr_assert_eq(mkdir(entry, 0700), 0); /* a crash of some other tool: a bare directory */
}

Test(cache, a_corrupted_entry_is_rebuilt) { damage_and_rerun(corrupt_program); }
Test(cache, an_entry_without_manifest_is_rebuilt) { damage_and_rerun(drop_manifest); }
Test(cache, an_empty_entry_is_rebuilt) { damage_and_rerun(empty_entry); }

/* ---- concurrent writers ---- */

typedef struct racer {
  const coil_loaded_plugin *lp;
  coil_plugin *inst;
  const coil_wir_program *p;
  pthread_barrier_t *start;
  int rc;
  char *entry;
  coil_diag d;
} racer;

static void *
race(void *arg)
{
  racer *r = arg;
  pthread_barrier_wait(r->start);
  r->rc = coil_cache_get(cache, "", r->lp, r->inst, r->p, NULL, &r->entry, NULL, NULL, fresh(&r->d));
  return NULL;
}

typedef struct mlp_plugin {
  coil_graph *g;
  coil_wir_program *p;
  coil_plugin_dirs dirs;
  coil_loaded_plugin *lp;
  coil_plugin *inst;
} mlp_plugin;

static void
mlp_plugin_init(mlp_plugin *m)
{
  coil_diag d = {0};
  m->g = load_mlp();
  m->p = coil_compile_graph(m->g, NULL, fresh(&d));
  cr_assert_not_null(m->p, "%s", d.msg);
  coil_plugin_dirs_init(&m->dirs, NULL, COIL_TEST_PLUGIN_DIR_INTERP);
  cr_assert_eq(coil_plugin_open("interp", (const char *const *)m->dirs.dirs, m->dirs.n, &m->lp, fresh(&d)), 0, "%s", d.msg);
  cr_assert_eq(coil_plugin_create(m->lp, NULL, &m->inst, fresh(&d)), 0, "%s", d.msg);
}

static void
mlp_plugin_free(mlp_plugin *m)
{
  coil_plugin_destroy(m->lp, m->inst);
  coil_plugin_close(m->lp);
  coil_plugin_dirs_free(&m->dirs);
  coil_wir_free(m->p);
  coil_graph_free(m->g);
}

static void
expect_one_valid_entry(void)
{
  char names[4][40], entry[300];
  int hidden;
  cr_expect_eq(entries(names, 4, &hidden), 1, "one entry");
  cr_expect_eq(hidden, 0, "no temporary directory left behind");
  snprintf(entry, sizeof entry, "%s/%s", cache, names[0]);
  coil_diag d = {0};
  cr_expect_eq(coil_artifact_verify(entry, fresh(&d)), 0, "%s", d.msg);
}

Test(cache, concurrent_threads_leave_one_valid_entry)
{
  enum { THREADS = 8, ROUNDS = 5 };
  mlp_plugin m;
  mlp_plugin_init(&m);
  for (int round = 0; round < ROUNDS; round++) {
    coil_artifact_remove(cache);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    racer r[THREADS];
    pthread_t t[THREADS];
    coil_wir_program *own[THREADS]; /* the ABI allows concurrent compiles of different programs */
    for (int i = 0; i < THREADS; i++) {
      coil_diag d = {0};
      own[i] = coil_compile_graph(m.g, NULL, &d);
      cr_assert_not_null(own[i], "%s", d.msg);
      r[i] = (racer){.lp = m.lp, .inst = m.inst, .p = own[i], .start = &start};
    }
    for (int i = 0; i < THREADS; i++)
      cr_assert_eq(pthread_create(&t[i], NULL, race, &r[i]), 0);
    for (int i = 0; i < THREADS; i++)
      pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++)
      coil_wir_free(own[i]);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; i++) {
      cr_expect_eq(r[i].rc, 0, "thread %d: %s", i, r[i].d.msg);
      if (r[i].rc == 0 && r[0].rc == 0)
        cr_expect_str_eq(r[i].entry, r[0].entry, "every writer gets the same entry");
    }
    for (int i = 0; i < THREADS; i++)
      free(r[i].entry);
    expect_one_valid_entry();
  }
  mlp_plugin_free(&m);
}

Test(cache, concurrent_processes_leave_one_valid_entry)
{
  enum { PROCS = 4 };
  mlp_plugin m;
  mlp_plugin_init(&m);
  int ready[2], go[2];
  cr_assert_eq(pipe(ready), 0);
  cr_assert_eq(pipe(go), 0);
  pid_t kids[PROCS];
  for (int i = 0; i < PROCS; i++) {
    kids[i] = fork();
    cr_assert_geq(kids[i], 0);
    if (kids[i] == 0) { /* a writer: start with the others, exit 0 on success */
      char c = 0;
      if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
        _exit(3);
      char *entry = NULL;
      coil_diag d = {0};
      int rc = coil_cache_get(cache, "", m.lp, m.inst, m.p, NULL, &entry, NULL, NULL, fresh(&d));
      if (rc)
        fprintf(stderr, "writer %d: %s\n", i, d.msg);
      _exit(rc == 0 && coil_artifact_verify(entry, fresh(&d)) == 0 ? 0 : 1);
    }
  }
  char c;
  for (int i = 0; i < PROCS; i++)
    cr_assert_eq(read(ready[0], &c, 1), 1);
  char all[PROCS] = {0};
  cr_assert_eq(write(go[1], all, PROCS), PROCS);
  for (int i = 0; i < PROCS; i++) {
    int status = 0;
    cr_assert_eq(waitpid(kids[i], &status, 0), kids[i]);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d failed", i);
  }
  expect_one_valid_entry();
  mlp_plugin_free(&m);
}

Test(cache, a_cache_directory_others_can_write_is_refused)
{
  coil_diag d = {0};
  cr_assert_eq(coil_cache_prepare(cache, fresh(&d)), 0, "%s", d.msg);
  cr_assert_eq(chmod(cache, 0777), 0);
  cr_assert_eq(coil_cache_prepare(cache, fresh(&d)), -1);
  cr_expect_not_null(strstr(d.msg, "others may write to it (mode 777)"), "%s", d.msg);
  mlp_plugin m;
  mlp_plugin_init(&m);
  char *entry = NULL;
  cr_expect_eq(coil_cache_get(cache, "", m.lp, m.inst, m.p, NULL, &entry, NULL, NULL, fresh(&d)), -1);
  cr_expect_null(entry);
  cr_assert_eq(chmod(cache, 0700), 0);
  coil_cache_outcome how = COIL_CACHE_HIT;
  cr_expect_eq(coil_cache_get(cache, "", m.lp, m.inst, m.p, NULL, &entry, NULL, &how, fresh(&d)), 0, "%s", d.msg);
  cr_expect_eq(how, COIL_CACHE_MISS);
  free(entry);
  cr_expect_eq(coil_cache_get(cache, "", m.lp, m.inst, m.p, NULL, &entry, NULL, &how, fresh(&d)), 0, "%s", d.msg);
  cr_expect_eq(how, COIL_CACHE_HIT);
  free(entry);
  cr_expect_eq(coil_cache_prepare("", fresh(&d)), -1);
  mlp_plugin_free(&m);
}

/* ---- the cache as a trust boundary ---- */

static void
chmod_in(const char *entry, const char *name, mode_t mode)
{
  char path[300];
  snprintf(path, sizeof path, "%s%s%s", entry, *name ? "/" : "", name);
  cr_assert_eq(chmod(path, mode), 0, "%s", path);
}

static void world_writable_entry(const char *e) { chmod_in(e, "", 0777); }
static void world_writable_file(const char *e) { chmod_in(e, "program.wir", 0666); }
static void group_writable_file(const char *e) { chmod_in(e, "program.wir", 0620); }

Test(cache, an_entry_others_may_write_to_is_rebuilt) { damage_and_rerun(world_writable_entry); }
Test(cache, a_file_others_may_write_to_is_rebuilt) { damage_and_rerun(world_writable_file); }
Test(cache, a_group_writable_file_is_rebuilt) { damage_and_rerun_if(group_writable_file, false); }

/* The old attack on unkeyed hashes: edit a file and re-hash coil.json to match. */
static void
planted_and_rehashed(const char *entry)
{
  char path[300];
  snprintf(path, sizeof path, "%s/program.wir", entry);
  FILE *f = fopen(path, "ab");
  cr_assert_not_null(f);
  fputs("# planted\n", f);
  fclose(f);
  rehash_artifact(entry);
}

Test(cache, a_planted_file_with_coil_json_rehashed_fails_the_keyed_hash)
{
  damage_and_rerun_if(planted_and_rehashed, false);
}

static void
drop_mac(const char *entry)
{
  char path[300];
  snprintf(path, sizeof path, "%s/coil.mac", entry);
  cr_assert_eq(unlink(path), 0);
}

Test(cache, an_entry_without_its_keyed_hash_is_rebuilt) { damage_and_rerun_if(drop_mac, false); }

Test(cache, an_entry_replaced_by_a_symlink_is_not_followed)
{
  coil_graph *g = load_mlp();
  coil_tensor_list in = {0}, out = {0};
  read_inputs(&in);
  coil_backend_stats stats = {0};
  coil_backend_env env = {.cache_dir = cache, .stats = &stats};
  coil_plugin_dirs_init(&env.dirs, NULL, COIL_TEST_PLUGIN_DIR_INTERP);
  coil_diag d = {0};
  cr_assert_eq(coil_backend_run(g, "interp", &env, &in, &out, fresh(&d)), 0, "%s", d.msg);
  coil_tensor_list_free(&out);
  char names[4][40], entry[300], planted[300];
  int hidden;
  cr_assert_eq(entries(names, 4, &hidden), 1);
  snprintf(entry, sizeof entry, "%s/%s", cache, names[0]);
  /* Another directory holding a complete, valid entry (here the real one, moved): a symlink
   * in the cache pointing at it must not be followed, whatever it points to. */
  snprintf(planted, sizeof planted, "%s/planted", root);
  cr_assert_eq(rename(entry, planted), 0);
  cr_assert_eq(symlink(planted, entry), 0);

  cr_assert_eq(coil_backend_run(g, "interp", &env, &in, &out, fresh(&d)), 0, "%s", d.msg);
  cr_expect_eq(stats.cache_hits, 0, "the symlinked entry was not used");
  cr_expect_eq(stats.compiles, 2);
  struct stat st;
  cr_assert_eq(lstat(entry, &st), 0);
  cr_expect(S_ISDIR(st.st_mode), "a real entry replaced the symlink");
  cr_expect_eq(coil_artifact_verify(planted, fresh(&d)), 0, "the target was left alone: %s", d.msg);
  coil_plugin_dirs_free(&env.dirs);
  coil_tensor_list_free(&in), coil_tensor_list_free(&out);
  coil_graph_free(g);
}

Test(cache, the_key_is_made_private_and_a_readable_key_is_refused)
{
  mlp_plugin m;
  mlp_plugin_init(&m);
  char *entry = NULL, key[300];
  coil_diag d = {0};
  cr_assert_eq(coil_cache_get(cache, "", m.lp, m.inst, m.p, NULL, &entry, NULL, NULL, fresh(&d)), 0, "%s", d.msg);
  free(entry);
  snprintf(key, sizeof key, "%s/%s", cache, COIL_CACHE_KEY_FILE);
  struct stat st;
  cr_assert_eq(lstat(key, &st), 0);
  cr_expect(S_ISREG(st.st_mode));
  cr_expect_eq(st.st_mode & 0777, 0600);
  cr_expect_eq(st.st_size, 32);
  cr_assert_eq(chmod(key, 0644), 0);
  cr_expect_eq(coil_cache_get(cache, "", m.lp, m.inst, m.p, NULL, &entry, NULL, NULL, fresh(&d)), -1);
  cr_expect_null(entry);
  cr_expect_not_null(strstr(d.msg, "not a key only this user can read"), "%s", d.msg);
  /* A new key: the entries of the old one fail their keyed hash and are compiled again. */
  cr_assert_eq(unlink(key), 0);
  coil_cache_outcome how = COIL_CACHE_HIT;
  cr_expect_eq(coil_cache_get(cache, "", m.lp, m.inst, m.p, NULL, &entry, NULL, &how, fresh(&d)), 0, "%s", d.msg);
  cr_expect_eq(how, COIL_CACHE_REBUILT);
  free(entry);
  mlp_plugin_free(&m);
}

Test(cache, the_entry_is_handed_out_as_the_directory_checked)
{
  mlp_plugin m;
  mlp_plugin_init(&m);
  char *entry = NULL;
  int fd = -1;
  coil_diag d = {0};
  cr_assert_eq(coil_cache_get(cache, "", m.lp, m.inst, m.p, NULL, &entry, &fd, NULL, fresh(&d)), 0, "%s", d.msg);
  cr_assert_geq(fd, 0);
  struct stat by_fd, by_name;
  cr_assert_eq(fstat(fd, &by_fd), 0);
  cr_assert_eq(stat(entry, &by_name), 0);
  cr_expect_eq(by_fd.st_ino, by_name.st_ino);
  /* Swapped after the check: the plugin is still handed the directory that was checked. */
  char moved[300], load[64];
  snprintf(moved, sizeof moved, "%s/moved", root);
  cr_assert_eq(rename(entry, moved), 0);
  cr_assert_eq(mkdir(entry, 0700), 0);
  coil_fd_path(fd, entry, load, sizeof load);
  cr_expect_eq(strncmp(load, "/proc/self/fd/", 14), 0, "%s", load);
  coil_artifact *art = NULL;
  cr_expect_eq(coil_plugin_load(m.lp, m.inst, load, NULL, &art, fresh(&d)), 0, "%s", d.msg);
  if (art)
    coil_plugin_artifact_free(m.lp, art);
  close(fd);
  free(entry);
  mlp_plugin_free(&m);
}

/* A temporary directory of the kind coil_artifact_write makes, for process pid, last changed
 * `age` seconds ago. */
static void
temporary(const char *name_fmt, long pid, int age, char *path, size_t size)
{
  char name[128];
  snprintf(name, sizeof name, name_fmt, pid);
  snprintf(path, size, "%s/%s", cache, name);
  cr_assert_eq(mkdir(path, 0700), 0, "%s", path);
  char file[400];
  snprintf(file, sizeof file, "%s/kernels.c", path);
  FILE *f = fopen(file, "w");
  cr_assert_not_null(f);
  fclose(f);
  struct timespec t[2] = {{.tv_sec = time(NULL) - age}, {.tv_sec = time(NULL) - age}};
  cr_assert_eq(utimensat(AT_FDCWD, path, t, 0), 0);
}

Test(cache, temporaries_of_dead_writers_are_removed)
{
  coil_diag d = {0};
  cr_assert_eq(coil_cache_prepare(cache, fresh(&d)), 0, "%s", d.msg);
  pid_t kid = fork(); /* a process id that is surely dead: a child reaped */
  cr_assert_geq(kid, 0);
  if (kid == 0)
    _exit(0);
  cr_assert_eq(waitpid(kid, NULL, 0), kid);
  char dead_old[300], dead_new[300], alive[300], bad_old[300];
  temporary(".0123456789abcdef0123456789abcdef.tmp-%ld-00ff00ff00ff00ff", kid, 600, dead_old, sizeof dead_old);
  temporary(".fedcba9876543210fedcba9876543210.tmp-%ld-00ff00ff00ff00ff", kid, 0, dead_new, sizeof dead_new);
  temporary(".00000000000000000000000000000000.bad-%ld-00ff00ff", kid, 600, bad_old, sizeof bad_old);
  temporary(".11111111111111111111111111111111.tmp-%ld-00ff00ff00ff00ff", getpid(), 600, alive, sizeof alive);
  mlp_plugin m;
  mlp_plugin_init(&m);
  char *entry = NULL;
  coil_cache_outcome how = COIL_CACHE_HIT;
  cr_assert_eq(coil_cache_get(cache, "", m.lp, m.inst, m.p, NULL, &entry, NULL, &how, fresh(&d)), 0, "%s", d.msg);
  cr_expect_eq(how, COIL_CACHE_MISS);
  free(entry);
  struct stat st;
  cr_expect_neq(lstat(dead_old, &st), 0, "a dead writer's old temporary was removed");
  cr_expect_neq(lstat(bad_old, &st), 0, "a dead discarder's old directory was removed");
  cr_expect_eq(lstat(dead_new, &st), 0, "a recent one is kept (its writer may be elsewhere)");
  cr_expect_eq(lstat(alive, &st), 0, "a living writer's is kept");
  mlp_plugin_free(&m);
}
