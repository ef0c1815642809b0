/* artifact.c — writing, checking, opening and running artifact directories (artifact.h); the
 * trust boundary they all cross (opening beneath a directory descriptor without following
 * symlinks, owner and mode checks, hashing files, the keyed hash) is artifact_trust.c.
 *
 * Integrity: coil.json lists every other file of the directory (subdirectories included) with
 * its size and XXH3-128 hash (xxHash, libxxhash), and a content hash over that list. Opening
 * rehashes every file, so a changed, truncated, missing or added file is reported by name
 * before any of it is read for real. coil.json itself is not hashed: it is the record, and its
 * fields are checked one by one as they are read. XXH3 is not a cryptographic hash and needs
 * no key: it finds damage, not forgery. Cache entries add coil.mac, a keyed BLAKE2b (libsodium)
 * over every file and coil.json, which only the holder of the cache's key can compute.
 *
 * Trust (artifact.h, coil_artifact_trust; artifact_trust.c): every file and directory is opened
 * relative to the artifact's directory descriptor without following symlinks, and checked by
 * fstat on the descriptor that is then read.
 *
 * Crash safety: a writer builds the directory under a hidden temporary sibling name, fsyncs
 * each file as it hashes it, writes coil.json last, and renames the directory into place
 * (rename is atomic within a file system; the sibling is on the same one). Cache entries skip
 * the fsyncs (no_fsync): an entry a crash left with a torn file fails its hash when next opened
 * and is compiled again, so durability would buy nothing there but a compile after a power
 * loss, at 3-5 ms of every compile. */
#include "artifact.h"
#include "artifact_trust.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <sodium.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "coil/strbuf.h"
#include "coil/sym.h"

#define MANIFEST_MAX_BYTES (64u << 20) /* a coil.json larger than this is not one we wrote */

/* ---- small helpers ---- */

static bool
is_dir(const char *path)
{
  struct stat st;
  return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool
coil_artifact_is(const char *path)
{
  struct stat st;
  char *m = coil_path_join(path, COIL_ARTIFACT_HOST_MANIFEST);
  bool yes = is_dir(path) && lstat(m, &st) == 0;
  free(m);
  return yes;
}

/* What a path names, for a writer about to replace it. */
typedef enum { PATH_ABSENT, PATH_ARTIFACT, PATH_EMPTY_DIR, PATH_OTHER_DIR, PATH_NOT_DIR } path_kind;

/* One answer about one directory: the manifest and the emptiness are looked up beneath a
 * descriptor of the directory, and the answer stands only if the path still names that
 * directory afterwards. Writers racing on the path (one moving the old artifact aside while
 * another renames its own in) otherwise make two lookups by name see two directories: "no
 * manifest" from the first, "not empty" from the second, and a good artifact read as a stranger's
 * directory. */
static path_kind
classify(const char *path)
{
  for (int attempt = 0; attempt < 64; attempt++) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      struct stat st;
      if (errno == ENOENT)
        return PATH_ABSENT;
      if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return PATH_OTHER_DIR; /* a directory we may not read: not ours to replace */
      return PATH_NOT_DIR;
    }
    struct stat held, now, m;
    path_kind k = PATH_OTHER_DIR;
    if (fstat(fd, &held) != 0) {
      close(fd);
      return PATH_NOT_DIR;
    }
    if (fstatat(fd, COIL_ARTIFACT_HOST_MANIFEST, &m, AT_SYMLINK_NOFOLLOW) == 0) {
      close(fd);
      return PATH_ARTIFACT; /* it had its manifest while it sat at path: written complete */
    }
    int dfd = dup(fd);
    DIR *dp = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (dp) {
      struct dirent *e;
      k = PATH_EMPTY_DIR;
      while (k == PATH_EMPTY_DIR && (e = readdir(dp)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
          k = PATH_OTHER_DIR;
      closedir(dp);
    } else if (dfd >= 0) {
      close(dfd);
    }
    close(fd);
    if (lstat(path, &now) == 0 && now.st_dev == held.st_dev && now.st_ino == held.st_ino)
      return k;
    /* the path names another directory now (or none): look again */
  }
  return PATH_OTHER_DIR;
}

void
coil_artifact_remove_at(int dirfd, const char *name)
{
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
    return;
  if (!S_ISDIR(st.st_mode)) {
    unlinkat(dirfd, name, 0);
    return;
  }
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
  if (dp) {
    struct dirent *e;
    while ((e = readdir(dp))) {
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
        coil_artifact_remove_at(fd, e->d_name);
    }
    closedir(dp);
  } else if (fd >= 0) {
    close(fd);
  }
  unlinkat(dirfd, name, AT_REMOVEDIR);
}

void
coil_artifact_remove(const char *dir)
{
  coil_artifact_remove_at(AT_FDCWD, dir);
}

void
coil_fd_path(int fd, const char *fallback, char *out, size_t size)
{
  snprintf(out, size, "/proc/self/fd/%d", fd);
  struct stat a, b;
  if (stat(out, &a) != 0 || fstat(fd, &b) != 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev)
    snprintf(out, size, "%s", fallback); /* no /proc: the name, checked as a name */
}

/* Makes a new directory named `base` + this process's id + a random suffix (the id lets a
 * later run see that the writer died: cache.c removes such leftovers); mode as for mkdir.
 * Returns the malloc'd name, or NULL with errno set. */
static char *
make_unique_dir(const char *base, mode_t mode)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t seed[4] = {(uint64_t)ts.tv_sec, (uint64_t)ts.tv_nsec, (uint64_t)getpid(),
                      (uint64_t)(uintptr_t)&ts}; /* the stack address tells threads apart */
  size_t n = strlen(base) + 40;
  char *p = coil_xmalloc(n);
  for (int attempt = 0; attempt < 100; attempt++) {
    seed[0] += (uint64_t)attempt;
    snprintf(p, n, "%s%ld-%016llx", base, (long)getpid(),
             (unsigned long long)XXH3_64bits(seed, sizeof seed));
    if (mkdir(p, mode) == 0)
      return p;
    if (errno != EEXIST)
      break;
  }
  free(p);
  return NULL;
}

/* Splits dir (no trailing '/') into its parent ("." when none) and last name; malloc'd. */
static void
split_path(const char *dir, char **parent, char **name)
{
  const char *slash = strrchr(dir, '/');
  if (!slash) {
    *parent = coil_xstrdup(".");
    *name = coil_xstrdup(dir);
  } else {
    *parent = slash == dir ? coil_xstrdup("/") : strndup(dir, (size_t)(slash - dir));
    *name = coil_xstrdup(slash + 1);
    if (!*parent)
      abort();
  }
}

static void
sync_dir(const char *dir)
{
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

static int
write_text(const char *path, const char *text, mode_t mode, bool sync, coil_diag *d)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0)
    return coil_diag_set(d, "%s: cannot create: %s", path, strerror(errno));
  size_t n = strlen(text), off = 0;
  while (off < n) {
    ssize_t w = write(fd, text + off, n - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      int e = errno;
      close(fd);
      return coil_diag_set(d, "%s: cannot write: %s", path, strerror(e));
    }
    off += (size_t)w;
  }
  if (sync && fsync(fd) != 0) {
    int e = errno;
    close(fd);
    return coil_diag_set(d, "%s: cannot write: %s", path, strerror(e));
  }
  if (close(fd) != 0)
    return coil_diag_set(d, "%s: cannot write: %s", path, strerror(errno));
  return 0;
}

/* ---- writing ---- */

static cJSON *
sizes_json(const coil_wir_program *p, const coil_buffer *b)
{
  cJSON *a = cJSON_CreateArray();
  for (int k = 0; k < b->rank; k++) {
    coil_strbuf s = {0};
    coil_sym_print(p->sym, b->sizes[k], COIL_SYM_PY_SYNTAX, &s);
    cJSON_AddItemToArray(a, cJSON_CreateString(s.s ? s.s : ""));
    coil_strbuf_free(&s);
  }
  return a;
}

const coil_line *
coil_program_output_line(const coil_wir_program *p)
{
  for (int i = p->nlines - 1; i >= 0; i--)
    if (p->lines[i].kind == COIL_LINE_OUTPUT)
      return &p->lines[i];
  return NULL;
}

/* The host manifest's text, without the file list. */
static cJSON *
manifest_json(const coil_loaded_plugin *lp, const coil_wir_program *p,
              const coil_plugin_options *opts, const coil_artifact_write_opts *o,
              const coil_tensor_list *embedded)
{
  cJSON *m = cJSON_CreateObject();
  cJSON_AddNumberToObject(m, "format", COIL_ARTIFACT_FORMAT);
  cJSON_AddStringToObject(m, "coil_version", COIL_VERSION_STRING);
  cJSON_AddStringToObject(m, "graph", o->graph_name ? o->graph_name : p->name ? p->name : "");
  cJSON_AddStringToObject(m, "plugin", lp->api.name);
  cJSON_AddStringToObject(m, "plugin_version", lp->api.version);
  char wir[32];
  snprintf(wir, sizeof wir, "%d.%d", p->version_major, p->version_minor);
  cJSON_AddStringToObject(m, "wir_version", wir);
  cJSON *po = cJSON_AddObjectToObject(m, "plugin_options");
  for (size_t i = 0; opts && i < opts->count; i++)
    cJSON_AddStringToObject(po, opts->keys[i], opts->values[i]);
  if (o->cache_key)
    cJSON_AddStringToObject(m, "cache_key", o->cache_key);
  cJSON *ins = cJSON_AddArrayToObject(m, "inputs");
  for (int i = 0; i < p->ninputs; i++) {
    const coil_buffer *b = &p->buffers[p->inputs[i].buffer];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "label", p->inputs[i].label);
    cJSON_AddStringToObject(e, "dtype", coil_dtype_name(b->dtype));
    cJSON_AddItemToObject(e, "sizes", sizes_json(p, b));
    cJSON_AddBoolToObject(e, "param", p->inputs[i].is_param);
    cJSON_AddItemToArray(ins, e);
  }
  cJSON *outs = cJSON_AddArrayToObject(m, "outputs");
  const coil_line *ol = coil_program_output_line(p);
  for (int i = 0; ol && i < ol->nargs; i++) {
    const coil_buffer *b = &p->buffers[ol->args[i]];
    cJSON *e = cJSON_CreateObject();
    if (o->output_names && i < o->noutput_names)
      cJSON_AddStringToObject(e, "name", o->output_names[i]);
    cJSON_AddStringToObject(e, "dtype", coil_dtype_name(b->dtype));
    cJSON_AddItemToObject(e, "sizes", sizes_json(p, b));
    cJSON_AddItemToArray(outs, e);
  }
  cJSON *ew = cJSON_AddArrayToObject(m, "embedded_weights");
  for (int i = 0; embedded && i < embedded->n; i++)
    cJSON_AddItemToArray(ew, cJSON_CreateString(embedded->names[i]));
  return m;
}

/* Reads the weights file and keeps the tensors named like a param input of p, each checked
 * against the input's dtype, rank and constant sizes. */
static int
gather_weights(const coil_wir_program *p, const char *path, coil_tensor_list *out, coil_diag *d)
{
  coil_tensor_list all = {0};
  if (coil_safetensors_read(path, &all, d))
    return -1;
  int rc = 0;
  for (int i = 0; rc == 0 && i < p->ninputs; i++) {
    if (!p->inputs[i].is_param)
      continue;
    coil_tensor *t = coil_tensor_list_find(&all, p->inputs[i].label);
    if (!t)
      continue;
    const coil_buffer *b = &p->buffers[p->inputs[i].buffer];
    bool same = t->dtype == b->dtype && t->rank == b->rank;
    for (int k = 0; same && k < b->rank; k++) {
      int64_t v;
      same = !coil_sym_is_const(b->sizes[k], &v) || v == t->shape[k];
    }
    if (!same)
      rc = coil_diag_set(d, "%s: tensor '%s' does not have the type of param %%%s (%s of rank %d "
                            "with the program's sizes)", path, p->inputs[i].label,
                         p->inputs[i].label, coil_dtype_name(b->dtype), b->rank);
    else
      coil_tensor_list_add(out, p->inputs[i].label, t);
  }
  if (rc == 0 && out->n == 0)
    rc = coil_diag_set(d, "%s: holds none of the params of program %s, so there is nothing to "
                          "embed", path, p->name ? p->name : "?");
  coil_tensor_list_free(&all);
  return rc;
}

/* Keeps only the permission bits `keep` of rel beneath dfd and what it holds, whatever the
 * umask the plugin's files (the compiler's output) were made under: 0700 makes a cache entry
 * private (artifact.h, coil_artifact_trust.owned); 0775 takes other-write from an artifact
 * made under umask 0, which its reader would refuse. */
static int
restrict_modes(int dfd, const char *root, const char *rel, mode_t keep, coil_diag *d)
{
  int fd = *rel ? coil_trust_open_beneath(dfd, rel, O_RDONLY | O_DIRECTORY) : dup(dfd);
  DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
  if (!dp) {
    if (fd >= 0)
      close(fd);
    return coil_diag_set(d, "%s/%s: cannot read the directory: %s", root, rel, strerror(errno));
  }
  rewinddir(dp);
  int rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(dp))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    struct stat st;
    char *sub = *rel ? coil_path_join(rel, e->d_name) : coil_xstrdup(e->d_name);
    if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
      rc = restrict_modes(dfd, root, sub, keep, d);
    if (rc == 0 && fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(st.st_mode) &&
        (st.st_mode & 0777 & ~keep) && fchmodat(fd, e->d_name, st.st_mode & keep, 0) != 0)
      rc = coil_diag_set(d, "%s/%s: cannot set its mode: %s", root, sub, strerror(errno));
    free(sub);
  }
  closedir(dp);
  return rc;
}

/* Fills the temporary directory: the plugin's files, then ours, coil.json last (and coil.mac
 * after it when o->mac_key). */
static int
fill(const coil_loaded_plugin *lp, coil_plugin *inst, const coil_wir_program *p,
     const coil_plugin_options *opts, const coil_artifact_write_opts *o, const char *tmp,
     coil_diag *d)
{
  if (coil_plugin_compile(lp, inst, p, tmp, opts, d))
    return -1;
  static const char *const reserved[] = {COIL_ARTIFACT_HOST_MANIFEST, COIL_ARTIFACT_PROGRAM,
                                         COIL_ARTIFACT_WEIGHTS, COIL_ARTIFACT_MAC};
  for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++) {
    char *f = coil_path_join(tmp, reserved[i]);
    struct stat st;
    bool taken = lstat(f, &st) == 0;
    free(f);
    if (taken)
      return coil_diag_set(d, "plugin '%s' wrote %s into its artifact: that name is the host's "
                              "(coil.json, coil.wir, weights.safetensors and coil.mac are reserved)",
                           lp->api.name, reserved[i]);
  }
  mode_t fmode = o->private_dir ? 0600 : 0644;
  char *text = coil_wir_print(p);
  char *f = coil_path_join(tmp, COIL_ARTIFACT_PROGRAM);
  int rc = write_text(f, text, fmode, !o->no_fsync, d);
  free(f);
  free(text);
  coil_tensor_list embedded = {0};
  if (rc == 0 && o->embed_weights) {
    f = coil_path_join(tmp, COIL_ARTIFACT_WEIGHTS);
    rc = gather_weights(p, o->embed_weights, &embedded, d) || coil_safetensors_write(f, &embedded, d) ? -1 : 0;
    free(f);
  }
  int dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (rc == 0 && dfd < 0)
    rc = coil_diag_set(d, "%s: cannot open: %s", tmp, strerror(errno));
  struct stat top;
  if (rc == 0)
    rc = restrict_modes(dfd, tmp, "", o->private_dir ? 0700 : 0775, d);
  if (rc == 0 && !o->private_dir && fstat(dfd, &top) == 0 && (top.st_mode & 002) &&
      fchmod(dfd, top.st_mode & 0775) != 0)
    rc = coil_diag_set(d, "%s: cannot set its mode: %s", tmp, strerror(errno));
  coil_file_list files = {0};
  if (rc == 0)
    rc = coil_trust_list_files(dfd, tmp, "", NULL, &files, d);
  if (rc == 0)
    qsort(files.files, (size_t)files.n, sizeof *files.files, coil_trust_by_path);
  crypto_generichash_state mac;
  if (o->mac_key)
    coil_trust_mac_begin(&mac, o->mac_key);
  for (int i = 0; rc == 0 && i < files.n; i++)
    rc = coil_trust_hash_file(dfd, tmp, files.files[i].path, !o->no_fsync, NULL, o->mac_key ? &mac : NULL,
                   &files.files[i], d);
  if (dfd >= 0)
    close(dfd);
  if (rc == 0) {
    cJSON *m = manifest_json(lp, p, opts, o, &embedded);
    cJSON *arr = cJSON_AddArrayToObject(m, "files");
    for (int i = 0; i < files.n; i++) {
      cJSON *e = cJSON_CreateObject();
      cJSON_AddStringToObject(e, "path", files.files[i].path);
      cJSON_AddNumberToObject(e, "bytes", (double)files.files[i].bytes);
      cJSON_AddStringToObject(e, "xxh3_128", files.files[i].hash);
      cJSON_AddItemToArray(arr, e);
    }
    char hash[33];
    coil_trust_content_hash(&files, hash);
    cJSON_AddStringToObject(m, "content_hash", hash);
    char *json = cJSON_Print(m);
    cJSON_Delete(m);
    if (!json)
      abort();
    coil_strbuf b = {0};
    coil_strbuf_printf(&b, "%s\n", json);
    cJSON_free(json);
    f = coil_path_join(tmp, COIL_ARTIFACT_HOST_MANIFEST);
    rc = write_text(f, b.s, fmode, !o->no_fsync, d);
    free(f);
    if (rc == 0 && o->mac_key) {
      char hex[65], line[80];
      coil_trust_mac_end(&mac, b.s, b.len, hex);
      snprintf(line, sizeof line, "%s\n", hex);
      f = coil_path_join(tmp, COIL_ARTIFACT_MAC);
      rc = write_text(f, line, fmode, !o->no_fsync, d);
      free(f);
    }
    coil_strbuf_free(&b);
  }
  coil_trust_files_free(&files);
  coil_tensor_list_free(&embedded);
  if (rc == 0 && !o->no_fsync)
    sync_dir(tmp);
  return rc;
}

/* Renames tmp to dir; an artifact at dir is replaced (moved aside, then removed) or kept.
 * Writers racing to replace one directory each move aside whatever is there and try again
 * until theirs is in place: the last one wins, and none fails for finding the directory
 * refilled between its two renames. */
static int
install(const char *tmp, const char *dir, const char *parent, const char *name, bool replace,
        bool sync, coil_diag *d)
{
  char *old = NULL; /* the artifact this writer moved aside, until its own is in place */
  int rc = 1;
  for (int attempt = 0; rc == 1 && attempt < 64; attempt++) {
    if (rename(tmp, dir) == 0) {
      if (sync)
        sync_dir(parent);
      rc = 0;
      break;
    }
    int e = errno;
    path_kind k;
    if (e != EEXIST && e != ENOTEMPTY) {
      rc = coil_diag_set(d, "%s: cannot rename %s to it: %s", dir, tmp, strerror(e));
    } else if ((k = classify(dir)) != PATH_ARTIFACT) {
      if (k == PATH_OTHER_DIR || k == PATH_NOT_DIR)
        rc = coil_diag_set(d, "%s: exists and is not a coil artifact (no %s): not replacing it",
                           dir, COIL_ARTIFACT_HOST_MANIFEST);
      /* else another writer moved it aside just now (or left it empty): try again */
    } else if (!replace) {
      break; /* rc 1: keep the one there */
    } else {
      if (old) { /* a racing writer's artifact came in between: ours replaces it too */
        coil_artifact_remove(old);
        free(old);
      }
      char *base = coil_xmalloc(strlen(parent) + strlen(name) + 16);
      sprintf(base, "%s/.%s.old-", parent, name);
      old = make_unique_dir(base, 0700); /* an empty directory: rename may replace it */
      free(base);
      if (!old)
        rc = coil_diag_set(d, "%s: cannot make room to replace it: %s", dir, strerror(errno));
      else if (rename(dir, old) != 0 && errno != ENOENT) /* ENOENT: another writer was first */
        rc = coil_diag_set(d, "%s: cannot move the old artifact aside: %s", dir, strerror(errno));
    }
  }
  if (rc == 1 && replace)
    rc = coil_diag_set(d, "%s: other writers kept replacing it; gave up after 64 tries", dir);
  if (old && rc < 0 && coil_artifact_is(old))
    rename(old, dir); /* put the old one back where nothing took its place */
  if (old)
    coil_artifact_remove(old);
  free(old);
  return rc;
}

int
coil_artifact_write(const coil_loaded_plugin *lp, coil_plugin *inst, const coil_wir_program *p,
                    const coil_plugin_options *opts, const coil_artifact_write_opts *o,
                    const char *dir, coil_diag *d)
{
  coil_artifact_write_opts none = {0};
  o = o ? o : &none;
  if (!dir || !*dir)
    return coil_diag_set(d, "no artifact directory named");
  char *target = coil_xstrdup(dir);
  for (size_t n = strlen(target); n > 1 && target[n - 1] == '/'; n--)
    target[n - 1] = 0;
  int rc = 0;
  switch (classify(target)) {
  case PATH_ABSENT:
  case PATH_EMPTY_DIR:
    break;
  case PATH_ARTIFACT:
    rc = o->replace ? 0 : 1;
    break;
  case PATH_NOT_DIR:
    rc = coil_diag_set(d, "%s: exists and is not a directory: not replacing it", target);
    break;
  case PATH_OTHER_DIR:
    rc = coil_diag_set(d, "%s: exists and is not a coil artifact (no %s): not replacing it",
                       target, COIL_ARTIFACT_HOST_MANIFEST);
    break;
  }
  if (rc != 0) {
    free(target);
    return rc;
  }
  char *parent, *name;
  split_path(target, &parent, &name);
  char *base = coil_xmalloc(strlen(parent) + strlen(name) + 16);
  sprintf(base, "%s/.%s.tmp-", parent, name);
  char *tmp = make_unique_dir(base, o->private_dir ? 0700 : 0777);
  free(base);
  if (!tmp)
    rc = coil_diag_set(d, "%s: cannot create a temporary directory beside it in %s: %s", target,
                       parent, strerror(errno));
  if (rc == 0)
    rc = fill(lp, inst, p, opts, o, tmp, d);
  if (rc == 0)
    rc = install(tmp, target, parent, name, o->replace, !o->no_fsync, d);
  if (tmp && rc != 0)
    coil_artifact_remove(tmp);
  free(tmp);
  free(parent);
  free(name);
  free(target);
  return rc;
}

/* ---- checking ---- */

static const char *
str_field(const cJSON *m, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, key);
  return cJSON_IsString(v) && v->valuestring ? v->valuestring : NULL;
}

/* A recorded path must stay inside the directory. */
static bool
safe_path(const char *p)
{
  if (!*p || p[0] == '/' || strcmp(p, COIL_ARTIFACT_HOST_MANIFEST) == 0 ||
      strcmp(p, COIL_ARTIFACT_MAC) == 0)
    return false;
  for (const char *s = p; *s;) {
    const char *e = strchr(s, '/');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
      return false;
    s += n + (e != NULL);
  }
  return true;
}

/* Reads and checks coil.json's envelope: *out is the parsed object (cJSON_Delete it), *text
 * the bytes it was parsed from (free it; the keyed hash covers them). */
static int
read_manifest(int dfd, const char *dir, const coil_artifact_trust *t, cJSON **out, char **text,
              size_t *len, coil_diag *d)
{
  *out = NULL;
  *text = NULL;
  char *path = coil_path_join(dir, COIL_ARTIFACT_HOST_MANIFEST);
  coil_diag why = {{0}};
  char *body = coil_trust_read_text_at(dfd, dir, COIL_ARTIFACT_HOST_MANIFEST, t, MANIFEST_MAX_BYTES, len, &why);
  if (!body) {
    int e = errno;
    if (why.msg[0])
      coil_diag_set(d, "%s", why.msg);
    else
      coil_diag_set(d, "%s: not a coil artifact: cannot read %s: %s", dir,
                    COIL_ARTIFACT_HOST_MANIFEST, coil_trust_open_error(e));
    free(path);
    return -1;
  }
  cJSON *m = cJSON_ParseWithLength(body, *len);
  int rc = 0;
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(m, "format");
  if (!cJSON_IsObject(m))
    rc = coil_diag_set(d, "%s: not valid JSON (expected the host manifest of a coil artifact)", path);
  else if (!cJSON_IsNumber(fmt) || fmt->valuedouble < 1 || fmt->valuedouble != (int)fmt->valuedouble)
    rc = coil_diag_set(d, "%s: no valid \"format\" (expected the integer %d)", path, COIL_ARTIFACT_FORMAT);
  else if ((int)fmt->valuedouble > COIL_ARTIFACT_FORMAT)
    rc = coil_diag_set(d, "%s: artifact format %d is newer than this coil %s reads (%d): recompile "
                          "the graph with this coil", path, (int)fmt->valuedouble,
                       COIL_VERSION_STRING, COIL_ARTIFACT_FORMAT);
  if (rc) {
    cJSON_Delete(m);
    free(body);
  } else {
    *out = m;
    *text = body;
  }
  free(path);
  return rc;
}

/* Checks the artifact directory dfd (dir in messages) against coil.json (m, parsed from
 * manifest): the directory itself and every file under t, every file's size and XXH3 hash,
 * none missing or added, and under t->mac_key coil.mac. */
static int
check_files(int dfd, const char *dir, const cJSON *m, const char *manifest, size_t manifest_len,
            const coil_artifact_trust *t, const unsigned char *seal_key, char seal[65], coil_diag *d)
{
  struct stat top;
  if (fstat(dfd, &top) != 0 || !S_ISDIR(top.st_mode))
    return coil_diag_set(d, "%s: not a directory", dir);
  if (coil_trust_check_mode(&top, dir, t, d))
    return -1;
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(m, "files");
  const char *want_hash = str_field(m, "content_hash");
  if (!cJSON_IsArray(arr) || !want_hash)
    return coil_diag_set(d, "%s/%s: no \"files\" list or \"content_hash\" (damaged)", dir,
                         COIL_ARTIFACT_HOST_MANIFEST);
  coil_file_list rec = {0};
  int n = cJSON_GetArraySize(arr), rc = 0;
  rec.files = calloc((size_t)n + 1, sizeof *rec.files);
  if (!rec.files)
    abort();
  rec.cap = n;
  const cJSON *e;
  cJSON_ArrayForEach(e, arr) {
    const char *path = str_field(e, "path"), *hash = str_field(e, "xxh3_128");
    const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(e, "bytes");
    if (!path || !hash || strlen(hash) != 32 || !cJSON_IsNumber(bytes) || bytes->valuedouble < 0 ||
        !safe_path(path)) {
      rc = coil_diag_set(d, "%s/%s: entry %d of \"files\" is malformed (expected a relative "
                            "path inside the artifact, bytes and a 32-digit xxh3_128)",
                         dir, COIL_ARTIFACT_HOST_MANIFEST, rec.n);
      break;
    }
    coil_file_entry *f = &rec.files[rec.n++];
    f->path = coil_xstrdup(path);
    f->bytes = (uint64_t)bytes->valuedouble;
    memcpy(f->hash, hash, 33);
  }
  if (rc == 0) {
    char got[33];
    coil_trust_content_hash(&rec, got);
    if (strcmp(got, want_hash) != 0)
      rc = coil_diag_set(d, "%s/%s: its content_hash does not match its own file list "
                            "(edited or damaged): recompile", dir, COIL_ARTIFACT_HOST_MANIFEST);
  }
  /* The listing first: it checks every directory and file under t, and finds symlinks and
   * files coil.json does not record before any file is opened. */
  coil_file_list present = {0};
  if (rc == 0)
    rc = coil_trust_list_files(dfd, dir, "", t, &present, d);
  for (int i = 0; rc == 0 && i < present.n; i++) {
    bool known = false;
    for (int k = 0; k < rec.n && !known; k++)
      known = strcmp(rec.files[k].path, present.files[i].path) == 0;
    if (!known)
      rc = coil_diag_set(d, "%s/%s: not part of the artifact (coil.json does not record it)", dir,
                         present.files[i].path);
  }
  coil_trust_files_free(&present);
  const unsigned char *key = seal_key ? seal_key : t ? t->mac_key : NULL;
  crypto_generichash_state mac;
  if (key)
    coil_trust_mac_begin(&mac, key);
  for (int i = 0; rc == 0 && i < rec.n; i++) {
    const coil_file_entry *f = &rec.files[i];
    coil_file_entry now = {0};
    struct stat st;
    if (fstatat(dfd, f->path, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      rc = coil_diag_set(d, "%s/%s: missing from the artifact (coil.json records it): recompile",
                         dir, f->path);
    else if (coil_trust_hash_file(dfd, dir, f->path, false, t, key ? &mac : NULL, &now, d))
      rc = -1;
    else if (now.bytes != f->bytes || strcmp(now.hash, f->hash) != 0)
      rc = coil_diag_set(d, "%s/%s: changed or corrupted since the artifact was written (%llu bytes, "
                            "XXH3-128 %s; coil.json records %llu bytes, %s): recompile", dir,
                         f->path, (unsigned long long)now.bytes, now.hash,
                         (unsigned long long)f->bytes, f->hash);
  }
  if (rc == 0 && seal_key) {
    coil_trust_mac_end(&mac, manifest, manifest_len, seal);
  } else if (rc == 0 && key) {
    char want[65], got[65];
    size_t len = 0;
    coil_diag why = {{0}};
    char *stored = coil_trust_read_text_at(dfd, dir, COIL_ARTIFACT_MAC, t, 128, &len, &why);
    coil_trust_mac_end(&mac, manifest, manifest_len, got);
    snprintf(want, sizeof want, "%s", stored ? stored : "");
    if (!stored)
      rc = coil_diag_set(d, "%s/%s: missing (%s): an entry this user's coil wrote has one", dir,
                         COIL_ARTIFACT_MAC, why.msg[0] ? why.msg : coil_trust_open_error(errno));
    else if (len != 65 || stored[64] != '\n' || sodium_memcmp(want, got, 64) != 0)
      rc = coil_diag_set(d, "%s/%s: the keyed hash of the entry does not match: it was not "
                            "written by this user's coil as it is now (planted or edited)", dir,
                         COIL_ARTIFACT_MAC);
    free(stored);
  }
  coil_trust_files_free(&rec);
  return rc;
}

int
coil_artifact_verify(const char *dir, coil_diag *d)
{
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return coil_diag_set(d, "%s: not a coil artifact: cannot open the directory: %s", dir,
                         strerror(errno));
  coil_artifact_trust aot = {0};
  cJSON *m;
  char *text;
  size_t len;
  int rc = read_manifest(dfd, dir, &aot, &m, &text, &len, d);
  if (rc == 0)
    rc = check_files(dfd, dir, m, text, len, &aot, NULL, NULL, d);
  cJSON_Delete(m);
  free(text);
  close(dfd);
  return rc;
}

int
coil_artifact_seal_at(int dfd, const char *dir, const unsigned char *mac_key, coil_diag *d)
{
  coil_artifact_trust owned = {.owned = true};
  cJSON *m;
  char *text;
  size_t len;
  char hex[65], line[80];
  int rc = read_manifest(dfd, dir, &owned, &m, &text, &len, d);
  if (rc == 0)
    rc = check_files(dfd, dir, m, text, len, &owned, mac_key, hex, d);
  cJSON_Delete(m);
  free(text);
  if (rc)
    return -1;
  snprintf(line, sizeof line, "%s\n", hex);
  int fd = openat(dfd, COIL_ARTIFACT_MAC, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  size_t n = strlen(line);
  bool ok = fd >= 0 && fchmod(fd, 0600) == 0 && write(fd, line, n) == (ssize_t)n;
  int e = errno;
  if (fd >= 0)
    close(fd);
  if (!ok)
    return coil_diag_set(d, "%s/%s: cannot write: %s", dir, COIL_ARTIFACT_MAC, strerror(e));
  return 0;
}

/* ---- opening ---- */

void
coil_artifact_close(coil_stored_artifact *a)
{
  if (!a)
    return;
  if (a->fd >= 0)
    close(a->fd);
  free(a->dir), free(a->coil_version), free(a->graph), free(a->plugin);
  free(a->plugin_version), free(a->cache_key);
  coil_wir_free(a->program);
  for (int i = 0; i < a->noutputs; i++)
    free(a->output_names[i]);
  free(a->output_names);
  coil_tensor_list_free(&a->weights);
  free(a);
}

/* Reads and verifies a program file of the artifact (rel beneath it). */
static coil_wir_program *
read_wir(const coil_stored_artifact *a, const char *rel, coil_diag *d)
{
  char *path = coil_path_join(a->dir, rel);
  size_t len = 0;
  char *text = coil_trust_read_text_at(a->fd, a->dir, rel, NULL, SIZE_MAX / 2, &len, d);
  coil_wir_program *p = NULL;
  if (!text)
    coil_diag_set(d, "%s: cannot read: %s", path, coil_trust_open_error(errno));
  else if ((p = coil_wir_parse(path, text, len, d)) && coil_wir_verify(p, d) != 0) {
    coil_wir_free(p);
    p = NULL;
  }
  free(text);
  free(path);
  return p;
}

/* coil.wir, and the cross-check with the plugin's program.wir where there is one: the host
 * sizes inputs and outputs from coil.wir while the code was compiled from the plugin's copy,
 * so the two must be one program (an edited coil.wir re-hashed into coil.json is caught here). */
static int
read_program(coil_stored_artifact *a, coil_diag *d)
{
  if (!(a->program = read_wir(a, COIL_ARTIFACT_PROGRAM, d)))
    return -1;
  struct stat st;
  if (fstatat(a->fd, "program.wir", &st, AT_SYMLINK_NOFOLLOW) != 0)
    return 0;
  coil_wir_program *theirs = read_wir(a, "program.wir", d);
  if (!theirs)
    return -1;
  char *mine = coil_wir_print(a->program), *other = coil_wir_print(theirs);
  int rc = 0;
  if (strcmp(mine, other) != 0)
    rc = coil_diag_set(d, "%s/%s: is not the program that plugin '%s' compiled (its program.wir "
                          "differs): the artifact was edited after it was written; recompile",
                       a->dir, COIL_ARTIFACT_PROGRAM, a->plugin);
  free(mine);
  free(other);
  coil_wir_free(theirs);
  return rc;
}

/* The output names and embedded weights that coil.json records, checked against the program
 * and the weights file. */
static int
read_signature(coil_stored_artifact *a, const cJSON *m, coil_diag *d)
{
  const coil_line *ol = coil_program_output_line(a->program);
  a->noutputs = ol ? ol->nargs : 0;
  a->output_names = calloc((size_t)a->noutputs + 1, sizeof *a->output_names);
  if (!a->output_names)
    abort();
  const cJSON *outs = cJSON_GetObjectItemCaseSensitive(m, "outputs");
  if (!cJSON_IsArray(outs) || cJSON_GetArraySize(outs) != a->noutputs)
    return coil_diag_set(d, "%s/%s: \"outputs\" does not list the program's %d output(s)",
                         a->dir, COIL_ARTIFACT_HOST_MANIFEST, a->noutputs);
  for (int i = 0; i < a->noutputs; i++) {
    const char *name = str_field(cJSON_GetArrayItem(outs, i), "name");
    char fallback[32];
    snprintf(fallback, sizeof fallback, "out%d", i);
    a->output_names[i] = coil_xstrdup(name ? name : fallback);
  }
  const cJSON *ew = cJSON_GetObjectItemCaseSensitive(m, "embedded_weights");
  int nw = cJSON_IsArray(ew) ? cJSON_GetArraySize(ew) : 0;
  if (nw == 0)
    return 0;
  char *path = coil_path_join(a->dir, COIL_ARTIFACT_WEIGHTS);
  char *checked = coil_path_join(a->load_path, COIL_ARTIFACT_WEIGHTS); /* the file checked, by its fd */
  int rc = coil_safetensors_read(checked, &a->weights, d);
  free(checked);
  const cJSON *e;
  cJSON_ArrayForEach(e, ew) {
    if (rc == 0 && (!cJSON_IsString(e) || !coil_tensor_list_find(&a->weights, e->valuestring)))
      rc = coil_diag_set(d, "%s: does not hold the embedded weight '%s' that coil.json lists",
                         path, cJSON_IsString(e) ? e->valuestring : "?");
  }
  free(path);
  return rc;
}

int
coil_artifact_open_at(int dirfd, const char *dir, const coil_artifact_trust *t,
                      coil_stored_artifact **out, coil_diag *d)
{
  *out = NULL;
  coil_stored_artifact *a = calloc(1, sizeof *a);
  if (!a)
    abort();
  a->dir = coil_xstrdup(dir);
  a->fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
  if (a->fd < 0) {
    coil_diag_set(d, "%s: cannot open: %s", dir, strerror(errno));
    coil_artifact_close(a);
    return -1;
  }
  coil_fd_path(a->fd, dir, a->load_path, sizeof a->load_path);
  cJSON *m = NULL;
  char *text = NULL;
  size_t len = 0;
  int rc = read_manifest(a->fd, dir, t, &m, &text, &len, d);
  if (rc == 0)
    rc = check_files(a->fd, dir, m, text, len, t, NULL, NULL, d);
  const char *fields[] = {"coil_version", "graph", "plugin", "plugin_version"};
  char **slots[] = {&a->coil_version, &a->graph, &a->plugin, &a->plugin_version};
  for (int i = 0; rc == 0 && i < 4; i++) {
    const char *v = str_field(m, fields[i]);
    if (!v)
      rc = coil_diag_set(d, "%s/%s: no \"%s\" (damaged)", dir, COIL_ARTIFACT_HOST_MANIFEST, fields[i]);
    else
      *slots[i] = coil_xstrdup(v);
  }
  if (rc == 0 && str_field(m, "cache_key"))
    a->cache_key = coil_xstrdup(str_field(m, "cache_key"));
  if (rc == 0)
    rc = read_program(a, d);
  if (rc == 0)
    rc = read_signature(a, m, d);
  cJSON_Delete(m);
  free(text);
  if (rc) {
    coil_artifact_close(a);
    return -1;
  }
  *out = a;
  return 0;
}

int
coil_artifact_open(const char *dir, coil_stored_artifact **out, coil_diag *d)
{
  *out = NULL;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return coil_diag_set(d, "%s: not a coil artifact: cannot open the directory: %s", dir,
                         strerror(errno));
  coil_artifact_trust aot = {0};
  int rc = coil_artifact_open_at(fd, dir, &aot, out, d);
  close(fd);
  return rc;
}

/* ---- running ---- */

/* The value of every size symbol, from the symbol lines and the inputs' sizes and strides. */
static int
bind_symbols(const coil_wir_program *p, const coil_tensor *const *in, int64_t *vals, coil_diag *d)
{
  for (int i = 0; i < p->nlines; i++) {
    const coil_line *l = &p->lines[i];
    if (l->kind != COIL_LINE_SYMBOL)
      continue;
    const coil_tensor *t = NULL;
    for (int k = 0; k < p->ninputs; k++)
      if (p->inputs[k].buffer == l->buffer)
        t = in[k];
    if (!t || l->dim >= t->rank)
      return coil_diag_set(d, "input %s does not have dimension %d", p->buffers[l->buffer].name, l->dim);
    int64_t stride = 1;
    for (int k = l->dim + 1; k < t->rank; k++)
      stride *= t->shape[k];
    vals[l->sym->var] = l->is_stride ? stride : t->shape[l->dim];
  }
  return 0;
}

/* Each input's dtype, rank and sizes against the program's signature under the bound symbols. */
static int
check_inputs(const coil_wir_program *p, const coil_tensor *const *in, const int64_t *vals,
             coil_diag *d)
{
  for (int i = 0; i < p->ninputs; i++) {
    const coil_buffer *b = &p->buffers[p->inputs[i].buffer];
    const coil_tensor *t = in[i];
    bool ok = t->dtype == b->dtype && t->rank == b->rank;
    for (int k = 0; ok && k < b->rank; k++) {
      int64_t want;
      if (coil_sym_eval(p->sym, b->sizes[k], vals, coil_sym_nvars(p->sym), &want, d))
        return -1;
      ok = want == t->shape[k];
    }
    if (!ok) {
      coil_strbuf want = {0}, got = {0};
      for (int k = 0; k < b->rank; k++) {
        coil_strbuf_puts(&want, k ? ", " : "");
        coil_sym_print(p->sym, b->sizes[k], COIL_SYM_PY_SYNTAX, &want);
      }
      for (int k = 0; k < t->rank; k++)
        coil_strbuf_printf(&got, "%s%lld", k ? ", " : "", (long long)t->shape[k]);
      coil_diag_set(d, "%s %%%s: expected %s[%s], got %s[%s]",
                    p->inputs[i].is_param ? "parameter" : "input", p->inputs[i].label,
                    coil_dtype_name(b->dtype), want.s ? want.s : "", coil_dtype_name(t->dtype),
                    got.s ? got.s : "");
      coil_strbuf_free(&want);
      coil_strbuf_free(&got);
      return -1;
    }
  }
  return 0;
}

int
coil_artifact_exec(const coil_loaded_plugin *lp, coil_plugin *inst, coil_artifact *art,
                   const coil_wir_program *p, const coil_tensor_list *inputs,
                   const coil_tensor_list *weights, coil_tensor_list *outputs, coil_diag *d)
{
  int rc = coil_artifact_exec_checked(lp, inst, art, p, inputs, weights, NULL, outputs, d);
  return rc < 0 ? -1 : rc;
}

#define GUARD_BYTE 0xa5

/* Checks the guard bytes on either side of output i (bytes long, at g + guard); when some
 * changed, says which (the whole changed span on each side) and, where whole elements past
 * the end were written, their values; returns 1. */
static int
guard_report(const unsigned char *g, size_t guard, size_t bytes, const coil_tensor *t, int i, coil_diag *d)
{
  size_t lo_b = guard, hi_b = 0, lo_a = guard, hi_a = 0; /* changed spans: before, after (1-based) */
  for (size_t k = 1; k <= guard; k++) {
    if (g[guard - k] != GUARD_BYTE)
      lo_b = k < lo_b ? k : lo_b, hi_b = k;
    if (g[guard + bytes + k - 1] != GUARD_BYTE)
      lo_a = k < lo_a ? k : lo_a, hi_a = k;
  }
  if (!hi_b && !hi_a)
    return 0;
  coil_strbuf m = {0};
  coil_strbuf_printf(&m, "the plugin wrote outside output %d (%s, %zu bytes):", i, coil_dtype_name(t->dtype), bytes);
  if (hi_b)
    coil_strbuf_printf(&m, " bytes %zu to %zu before it changed", hi_b, lo_b);
  if (hi_a) {
    coil_strbuf_printf(&m, "%s bytes %zu to %zu after it changed", hi_b ? ";" : "", lo_a, hi_a);
    size_t es = coil_dtype_size(t->dtype);
    if (lo_a == 1 && es && bytes % es == 0 && hi_a >= es) { /* whole elements past the end */
      coil_tensor one = {.dtype = t->dtype, .rank = 1, .shape = {1}};
      for (size_t e = 0; e < hi_a / es && e < 4; e++) {
        one.data = (void *)(g + guard + bytes + e * es);
        double v = coil_tensor_get_f64(&one, 0);
        coil_strbuf_printf(&m, "%s element %zu past the end = %.9g", e ? "," : " (as elements:", e + 1, v);
      }
      coil_strbuf_printf(&m, ")");
    }
  }
  coil_diag_set(d, "%s", m.s);
  coil_strbuf_free(&m);
  return 1;
}

/* Where a run's tensors live: the host, or device 0 of a plugin with devices (ABI 1.4) whose
 * memory the host cannot touch. Each tensor is a host "image" (for an input: its data, maybe
 * shifted to an unaligned start; for an output: [guard | 0xff... | guard] or the bare output),
 * copied whole to a device allocation before the run and, for outputs, back after it, so the
 * unaligned starts and guard checks work the same on a device. */
typedef struct placement {
  const coil_loaded_plugin *lp;
  coil_plugin *inst;
  bool on_device;
  coil_device_info info;
  coil_stream *stream; /* the plugin's, when it has streams */
  void **mem;          /* per tensor (inputs, then outputs): the device allocation or NULL */
  int n;
} placement;

static int
place_init(placement *pl, const coil_loaded_plugin *lp, coil_plugin *inst, int ntensors,
           coil_diag *d)
{
  *pl = (placement){.lp = lp, .inst = inst, .n = ntensors};
  if (!inst || !coil_plugin_has_devices(lp))
    return 0;
  if (coil_plugin_device_count(lp, inst) < 1)
    return coil_diag_set(d, "plugin '%s' has device functions but lists no device", lp->label);
  int rc = coil_plugin_device_info(lp, inst, 0, &pl->info, d);
  if (rc)
    return rc;
  pl->on_device = !(pl->info.flags & COIL_DEVICE_HOST_VISIBLE);
  if (!pl->on_device)
    return 0;
  pl->mem = calloc((size_t)ntensors + 1, sizeof *pl->mem);
  if (!pl->mem)
    abort();
  if (coil_plugin_has_streams(lp))
    return coil_plugin_stream_create(lp, inst, 0, &pl->stream, d);
  return 0;
}

/* Copies image [base, base+bytes) to a new device allocation (tensor k) and points t at the
 * same offset in it. */
static int
place_in(placement *pl, int k, const void *base, size_t bytes, coil_plugin_tensor *t, coil_diag *d)
{
  if (!pl->on_device)
    return 0;
  t->device_type = pl->info.device_type;
  t->device_index = pl->info.device_index;
  if (!t->data || !bytes) {
    t->data = NULL;
    return 0;
  }
  size_t at = (size_t)((const char *)t->data - (const char *)base);
  int rc = coil_plugin_mem_alloc(pl->lp, pl->inst, 0, bytes, &pl->mem[k], d);
  if (!rc)
    rc = coil_plugin_mem_copy(pl->lp, pl->inst, COIL_COPY_HOST_TO_DEVICE, 0, pl->mem[k], base,
                              bytes, NULL, d);
  if (!rc)
    t->data = (char *)pl->mem[k] + at;
  return rc;
}

/* Copies tensor k's device allocation back over its host image. */
static int
place_out(placement *pl, int k, void *base, size_t bytes, coil_diag *d)
{
  if (!pl->on_device || !pl->mem[k] || !bytes)
    return 0;
  return coil_plugin_mem_copy(pl->lp, pl->inst, COIL_COPY_DEVICE_TO_HOST, 0, base, pl->mem[k],
                              bytes, NULL, d);
}

static void
place_free(placement *pl)
{
  for (int k = 0; pl->mem && k < pl->n; k++)
    coil_plugin_mem_free(pl->lp, pl->inst, 0, pl->mem[k]);
  coil_plugin_stream_destroy(pl->lp, pl->inst, pl->stream);
  free(pl->mem);
}

int
coil_artifact_exec_checked(const coil_loaded_plugin *lp, coil_plugin *inst, coil_artifact *art,
                           const coil_wir_program *p, const coil_tensor_list *inputs,
                           const coil_tensor_list *weights, const coil_exec_checks *chk,
                           coil_tensor_list *outputs, coil_diag *d)
{
  memset(outputs, 0, sizeof *outputs);
  const coil_line *ol = coil_program_output_line(p);
  if (!ol)
    return coil_diag_set(d, "program %s has no output line", p->name ? p->name : "?");
  int offset = chk && chk->input_offset > 0 ? chk->input_offset : 0;
  size_t guard = chk && chk->guard_bytes > 0 ? (size_t)chk->guard_bytes : 0;
  int nin = p->ninputs, nout = ol->nargs, rc = -1;
  const coil_tensor **in = calloc((size_t)nin + 1, sizeof *in);
  coil_plugin_tensor *pin = calloc((size_t)nin + 1, sizeof *pin);
  const coil_plugin_tensor **pinp = calloc((size_t)nin + 1, sizeof *pinp);
  int64_t(*istr)[COIL_MAX_RANK] = calloc((size_t)nin + 1, sizeof *istr);
  char **shifted = calloc((size_t)nin + 1, sizeof *shifted); /* unaligned copies of inputs */
  int64_t *vals = calloc((size_t)coil_sym_nvars(p->sym) + 1, sizeof *vals);
  coil_tensor *outs = calloc((size_t)nout + 1, sizeof *outs);
  unsigned char **guarded = calloc((size_t)nout + 1, sizeof *guarded); /* guard, output, guard */
  coil_plugin_tensor *pout = calloc((size_t)nout + 1, sizeof *pout);
  const coil_plugin_tensor **poutp = calloc((size_t)nout + 1, sizeof *poutp);
  int64_t(*ostr)[COIL_MAX_RANK] = calloc((size_t)nout + 1, sizeof *ostr);
  if (!in || !pin || !pinp || !istr || !shifted || !vals || !outs || !guarded || !pout || !poutp || !ostr)
    abort();
  placement pl;
  if (place_init(&pl, lp, inst, nin + nout, d))
    goto done;

  for (int i = 0; i < nin; i++) {
    in[i] = coil_tensor_list_find(inputs, p->inputs[i].label);
    if (!in[i] && p->inputs[i].is_param && weights)
      in[i] = coil_tensor_list_find(weights, p->inputs[i].label);
    if (!in[i]) {
      coil_diag_set(d, "no tensor given for %s %%%s", p->inputs[i].is_param ? "parameter" : "input",
                    p->inputs[i].label);
      goto done;
    }
    coil_plugin_tensor_wrap(in[i], istr[i], &pin[i]);
    size_t es = coil_dtype_size(in[i]->dtype), bytes = (size_t)coil_tensor_numel(in[i]) * es;
    if (offset && bytes) {
      shifted[i] = aligned_alloc(64, (bytes + es * (size_t)offset + 63) / 64 * 64);
      if (!shifted[i]) {
        coil_diag_set(d, "out of memory copying input %s", p->inputs[i].label);
        goto done;
      }
      memcpy(shifted[i] + es * (size_t)offset, in[i]->data, bytes);
      pin[i].data = shifted[i] + es * (size_t)offset;
    }
    if (shifted[i] ? place_in(&pl, i, shifted[i], bytes + es * (size_t)offset, &pin[i], d)
                   : place_in(&pl, i, in[i]->data, bytes, &pin[i], d))
      goto done;
    pinp[i] = &pin[i];
  }
  if (bind_symbols(p, in, vals, d) || check_inputs(p, in, vals, d))
    goto done;
  for (int i = 0; i < nout; i++) {
    const coil_buffer *b = &p->buffers[ol->args[i]];
    int64_t shape[COIL_MAX_RANK];
    for (int k = 0; k < b->rank; k++)
      if (coil_sym_eval(p->sym, b->sizes[k], vals, coil_sym_nvars(p->sym), &shape[k], d))
        goto done;
    if (coil_tensor_init(&outs[i], b->dtype, b->rank, shape, d))
      goto done;
    coil_plugin_tensor_wrap(&outs[i], ostr[i], &pout[i]);
    size_t bytes = (size_t)coil_tensor_numel(&outs[i]) * coil_dtype_size(b->dtype);
    if (guard) {
      guarded[i] = aligned_alloc(64, (2 * guard + bytes + 63) / 64 * 64);
      if (!guarded[i]) {
        coil_diag_set(d, "out of memory allocating output %d", i);
        goto done;
      }
      memset(guarded[i], GUARD_BYTE, guard);
      memset(guarded[i] + guard, 0xff, bytes); /* NaN for floats: an element never written shows */
      memset(guarded[i] + guard + bytes, GUARD_BYTE, guard);
      pout[i].data = bytes ? guarded[i] + guard : NULL;
    }
    if (guarded[i] ? place_in(&pl, nin + i, guarded[i], 2 * guard + bytes, &pout[i], d)
                   : place_in(&pl, nin + i, outs[i].data, bytes, &pout[i], d))
      goto done;
    poutp[i] = &pout[i];
  }
  int prc = coil_plugin_run_stream(lp, art, nin, pinp, nout, poutp, pl.stream != NULL, pl.stream, d);
  if (!prc && pl.stream)
    prc = coil_plugin_stream_sync(lp, inst, pl.stream, d);
  if (prc) {
    rc = prc;
    goto done;
  }
  for (int i = 0; i < nout; i++) {
    size_t bytes = (size_t)coil_tensor_numel(&outs[i]) * coil_dtype_size(outs[i].dtype);
    if (guarded[i] ? place_out(&pl, nin + i, guarded[i], 2 * guard + bytes, d)
                   : place_out(&pl, nin + i, outs[i].data, bytes, d))
      goto done;
  }
  for (int i = 0; i < nout && guard; i++) {
    size_t bytes = (size_t)coil_tensor_numel(&outs[i]) * coil_dtype_size(outs[i].dtype);
    if (guard_report(guarded[i], guard, bytes, &outs[i], i, d)) {
      rc = COIL_EXEC_GUARD;
      goto done;
    }
    memcpy(outs[i].data, guarded[i] + guard, bytes);
  }
  for (int i = 0; i < nout; i++) {
    char name[32];
    snprintf(name, sizeof name, "out%d", i);
    coil_tensor_list_add(outputs, name, &outs[i]);
  }
  rc = 0;
done:
  place_free(&pl);
  for (int i = 0; i < nout; i++) {
    coil_tensor_free(&outs[i]);
    free(guarded[i]);
  }
  for (int i = 0; i < nin; i++)
    free(shifted[i]);
  free(outs), free(guarded), free(pout), free(poutp), free(ostr);
  free(in), free(pin), free(pinp), free(istr), free(shifted), free(vals);
  return rc;
}

int
coil_artifact_run(const coil_stored_artifact *a, const char *const *dirs, int ndirs,
                  const coil_plugin_options *opts, const coil_tensor_list *inputs,
                  coil_tensor_list *outputs, coil_diag *d)
{
  memset(outputs, 0, sizeof *outputs);
  coil_loaded_plugin *lp = NULL;
  coil_plugin *inst = NULL;
  coil_artifact *art = NULL;
  coil_diag why = {{0}};
  int rc = -1;
  if (coil_plugin_open(a->plugin, dirs, ndirs, &lp, &why)) {
    coil_diag_set(d, "%s: artifact was compiled by %s %s, which cannot be opened now: %s", a->dir,
                  a->plugin, a->plugin_version, why.msg);
    return -1;
  }
  if (strcmp(lp->api.version, a->plugin_version) != 0) {
    coil_diag_set(d, "%s: artifact was compiled by %s %s; the plugin found is %s %s (%s): "
                     "recompile", a->dir, a->plugin, a->plugin_version, lp->api.name,
                  lp->api.version, lp->path);
    goto done;
  }
  if (coil_plugin_create(lp, opts, &inst, d) || coil_plugin_load(lp, inst, a->load_path, opts, &art, d) ||
      coil_artifact_exec(lp, inst, art, a->program, inputs, &a->weights, outputs, d))
    goto done;
  rc = 0;
done:
  if (art)
    coil_plugin_artifact_free(lp, art);
  if (inst)
    coil_plugin_destroy(lp, inst);
  coil_plugin_close(lp);
  return rc;
}
