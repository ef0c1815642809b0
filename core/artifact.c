/* artifact.c — writing, checking, opening and running artifact directories (artifact.h).
 *
 * Integrity: coil.json lists every other file of the directory (subdirectories included) with
 * its size and XXH3-128 hash (xxHash, libxxhash), and a content hash over that list. Opening
 * rehashes every file, so a changed, truncated, missing or added file is reported by name
 * before any of it is read for real. coil.json itself is not hashed: it is the record, and its
 * fields are checked one by one as they are read.
 *
 * Crash safety: a writer builds the directory under a hidden temporary sibling name, fsyncs
 * each file as it hashes it, writes coil.json last, and renames the directory into place
 * (rename is atomic within a file system; the sibling is on the same one). */
#include "artifact.h"

#include <cjson/cJSON.h>
#include <dirent.h>
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

static char *
xstrdup(const char *s)
{
  char *p = strdup(s ? s : "");
  if (!p)
    abort(); /* out of memory: the one exit coil.h allows */
  return p;
}

static char *
join(const char *dir, const char *name)
{
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = coil_xmalloc(n);
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}

static void
hex128(XXH128_hash_t h, char out[33])
{
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  for (int i = 0; i < 16; i++)
    snprintf(out + 2 * i, 3, "%02x", c.digest[i]);
}

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
  char *m = join(path, COIL_ARTIFACT_HOST_MANIFEST);
  bool yes = is_dir(path) && lstat(m, &st) == 0;
  free(m);
  return yes;
}

static bool
dir_is_empty(const char *path)
{
  DIR *dp = opendir(path);
  if (!dp)
    return false;
  struct dirent *e;
  bool empty = true;
  while (empty && (e = readdir(dp)))
    empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
  closedir(dp);
  return empty;
}

void
coil_artifact_remove(const char *dir)
{
  struct stat st;
  if (lstat(dir, &st) != 0)
    return;
  if (!S_ISDIR(st.st_mode)) {
    unlink(dir);
    return;
  }
  DIR *dp = opendir(dir);
  if (dp) {
    struct dirent *e;
    while ((e = readdir(dp))) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      char *p = join(dir, e->d_name);
      coil_artifact_remove(p);
      free(p);
    }
    closedir(dp);
  }
  rmdir(dir);
}

/* Makes a new directory named `base` + a random suffix; mode as for mkdir. Returns the
 * malloc'd name, or NULL with errno set. */
static char *
make_unique_dir(const char *base, mode_t mode)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t seed[4] = {(uint64_t)ts.tv_sec, (uint64_t)ts.tv_nsec, (uint64_t)getpid(),
                      (uint64_t)(uintptr_t)&ts}; /* the stack address tells threads apart */
  size_t n = strlen(base) + 17;
  char *p = coil_xmalloc(n);
  for (int attempt = 0; attempt < 100; attempt++) {
    seed[0] += (uint64_t)attempt;
    snprintf(p, n, "%s%016llx", base, (unsigned long long)XXH3_64bits(seed, sizeof seed));
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
    *parent = xstrdup(".");
    *name = xstrdup(dir);
  } else {
    *parent = slash == dir ? xstrdup("/") : strndup(dir, (size_t)(slash - dir));
    *name = xstrdup(slash + 1);
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

/* Reads a whole (small) file; NULL with errno set when it cannot. */
static char *
read_text(const char *path, size_t limit, size_t *len)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  coil_strbuf b = {0};
  char chunk[65536];
  size_t got;
  while ((got = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len <= limit)
    coil_strbuf_putn(&b, chunk, got);
  int bad = ferror(f);
  fclose(f);
  if (bad || b.len > limit) {
    coil_strbuf_free(&b);
    errno = bad ? EIO : EFBIG;
    return NULL;
  }
  *len = b.len;
  return coil_strbuf_take(&b);
}

static int
write_text(const char *path, const char *text, coil_diag *d)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
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
  int e = fsync(fd) != 0 ? errno : 0; /* closed either way: a failed sync must not leak it */
  if (close(fd) != 0 && !e)
    e = errno;
  if (e)
    return coil_diag_set(d, "%s: cannot write: %s", path, strerror(e));
  return 0;
}

/* ---- the files of a directory, and their hashes ---- */

typedef struct file_entry {
  char *path;            /* relative to the artifact directory, '/'-separated */
  uint64_t bytes;
  char hash[33];         /* XXH3-128, hex */
} file_entry;

typedef struct file_list {
  int n, cap;
  file_entry *files;
} file_list;

static void
files_free(file_list *l)
{
  for (int i = 0; i < l->n; i++)
    free(l->files[i].path);
  free(l->files);
  memset(l, 0, sizeof *l);
}

static int
by_path(const void *a, const void *b)
{
  return strcmp(((const file_entry *)a)->path, ((const file_entry *)b)->path);
}

/* Adds every regular file under root/rel (rel "" for root itself) except the top-level
 * coil.json; anything neither a file nor a directory (a symlink, a socket) is an error. */
static int
list_files(const char *root, const char *rel, file_list *out, coil_diag *d)
{
  char *here = *rel ? join(root, rel) : xstrdup(root);
  DIR *dp = opendir(here);
  if (!dp) {
    int e = errno;
    free(here);
    return coil_diag_set(d, "%s/%s: cannot read the directory: %s", root, rel, strerror(e));
  }
  int rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(dp))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if (!*rel && strcmp(e->d_name, COIL_ARTIFACT_HOST_MANIFEST) == 0)
      continue;
    char *sub = *rel ? join(rel, e->d_name) : xstrdup(e->d_name);
    char *full = join(root, sub);
    struct stat st;
    if (lstat(full, &st) != 0) {
      rc = coil_diag_set(d, "%s: cannot stat: %s", full, strerror(errno));
    } else if (S_ISDIR(st.st_mode)) {
      rc = list_files(root, sub, out, d);
    } else if (!S_ISREG(st.st_mode)) {
      rc = coil_diag_set(d, "%s: not a regular file (an artifact holds only files and "
                            "directories)", full);
    } else {
      if (out->n == out->cap) {
        out->cap = out->cap ? 2 * out->cap : 16;
        out->files = realloc(out->files, (size_t)out->cap * sizeof *out->files);
        if (!out->files)
          abort();
      }
      out->files[out->n++] = (file_entry){.path = sub, .bytes = (uint64_t)st.st_size};
      sub = NULL;
    }
    free(sub);
    free(full);
  }
  closedir(dp);
  free(here);
  return rc;
}

/* Hashes one file (and fsyncs it when sync: the writer's durability step). */
static int
hash_file(const char *path, bool sync, file_entry *f, coil_diag *d)
{
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return coil_diag_set(d, "%s: cannot open: %s", path, strerror(errno));
  XXH3_state_t *st = XXH3_createState();
  unsigned char *buf = malloc(1 << 18);
  if (!st || !buf)
    abort();
  XXH3_128bits_reset(st);
  uint64_t total = 0;
  ssize_t n;
  for (;;) {
    n = read(fd, buf, 1 << 18);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    XXH3_128bits_update(st, buf, (size_t)n);
    total += (uint64_t)n;
  }
  int e = errno;
  if (n == 0 && sync && fsync(fd) != 0)
    n = -1, e = errno;
  close(fd);
  hex128(XXH3_128bits_digest(st), f->hash);
  XXH3_freeState(st);
  free(buf);
  f->bytes = total;
  if (n < 0)
    return coil_diag_set(d, "%s: cannot read: %s", path, strerror(e));
  return 0;
}

/* The content hash: XXH3-128 over each file's path, size and hash, in path order. */
static void
content_hash(const file_list *l, char out[33])
{
  XXH3_state_t *st = XXH3_createState();
  if (!st)
    abort();
  XXH3_128bits_reset(st);
  for (int i = 0; i < l->n; i++) {
    const file_entry *f = &l->files[i];
    unsigned char size[8];
    for (int k = 0; k < 8; k++)
      size[k] = (unsigned char)(f->bytes >> (8 * k));
    XXH3_128bits_update(st, f->path, strlen(f->path) + 1);
    XXH3_128bits_update(st, size, sizeof size);
    XXH3_128bits_update(st, f->hash, 32);
  }
  hex128(XXH3_128bits_digest(st), out);
  XXH3_freeState(st);
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

static const coil_line *
output_line(const coil_wir_program *p)
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
  const coil_line *ol = output_line(p);
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

/* Fills the temporary directory: the plugin's files, then ours, coil.json last. */
static int
fill(const coil_loaded_plugin *lp, coil_plugin *inst, const coil_wir_program *p,
     const coil_plugin_options *opts, const coil_artifact_write_opts *o, const char *tmp,
     coil_diag *d)
{
  if (coil_plugin_compile(lp, inst, p, tmp, opts, d))
    return -1;
  static const char *const reserved[] = {COIL_ARTIFACT_HOST_MANIFEST, COIL_ARTIFACT_PROGRAM,
                                         COIL_ARTIFACT_WEIGHTS};
  for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++) {
    char *f = join(tmp, reserved[i]);
    struct stat st;
    bool taken = lstat(f, &st) == 0;
    free(f);
    if (taken)
      return coil_diag_set(d, "plugin '%s' wrote %s into its artifact: that name is the host's "
                              "(coil.json, coil.wir and weights.safetensors are reserved)",
                           lp->api.name, reserved[i]);
  }
  char *text = coil_wir_print(p);
  char *f = join(tmp, COIL_ARTIFACT_PROGRAM);
  int rc = write_text(f, text, d);
  free(f);
  free(text);
  coil_tensor_list embedded = {0};
  if (rc == 0 && o->embed_weights) {
    f = join(tmp, COIL_ARTIFACT_WEIGHTS);
    rc = gather_weights(p, o->embed_weights, &embedded, d) || coil_safetensors_write(f, &embedded, d) ? -1 : 0;
    free(f);
  }
  file_list files = {0};
  if (rc == 0)
    rc = list_files(tmp, "", &files, d);
  if (rc == 0)
    qsort(files.files, (size_t)files.n, sizeof *files.files, by_path);
  for (int i = 0; rc == 0 && i < files.n; i++) {
    f = join(tmp, files.files[i].path);
    rc = hash_file(f, true, &files.files[i], d);
    free(f);
  }
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
    content_hash(&files, hash);
    cJSON_AddStringToObject(m, "content_hash", hash);
    char *json = cJSON_Print(m);
    cJSON_Delete(m);
    if (!json)
      abort();
    coil_strbuf b = {0};
    coil_strbuf_printf(&b, "%s\n", json);
    cJSON_free(json);
    f = join(tmp, COIL_ARTIFACT_HOST_MANIFEST);
    rc = write_text(f, b.s, d);
    free(f);
    coil_strbuf_free(&b);
  }
  files_free(&files);
  coil_tensor_list_free(&embedded);
  if (rc == 0)
    sync_dir(tmp);
  return rc;
}

/* Renames tmp to dir; an artifact at dir is replaced (moved aside, then removed) or kept. */
static int
install(const char *tmp, const char *dir, const char *parent, const char *name, bool replace,
        coil_diag *d)
{
  if (rename(tmp, dir) == 0) {
    sync_dir(parent);
    return 0;
  }
  int e = errno;
  if (e != EEXIST && e != ENOTEMPTY)
    return coil_diag_set(d, "%s: cannot rename %s to it: %s", dir, tmp, strerror(e));
  if (!coil_artifact_is(dir))
    return coil_diag_set(d, "%s: exists and is not a coil artifact (no %s): not replacing it",
                         dir, COIL_ARTIFACT_HOST_MANIFEST);
  if (!replace)
    return 1;
  char *base = coil_xmalloc(strlen(parent) + strlen(name) + 16);
  sprintf(base, "%s/.%s.old-", parent, name);
  char *old = make_unique_dir(base, 0700); /* an empty directory: rename may replace it */
  free(base);
  int rc = 0;
  if (!old)
    rc = coil_diag_set(d, "%s: cannot make room to replace it: %s", dir, strerror(errno));
  else if (rename(dir, old) != 0)
    rc = coil_diag_set(d, "%s: cannot move the old artifact aside: %s", dir, strerror(errno));
  else if (rename(tmp, dir) != 0) {
    rc = coil_diag_set(d, "%s: cannot rename %s to it: %s", dir, tmp, strerror(errno));
    rename(old, dir); /* put the old one back */
  } else {
    sync_dir(parent);
  }
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
  char *target = xstrdup(dir);
  for (size_t n = strlen(target); n > 1 && target[n - 1] == '/'; n--)
    target[n - 1] = 0;
  struct stat st;
  int rc = 0;
  if (lstat(target, &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      rc = coil_diag_set(d, "%s: exists and is not a directory: not replacing it", target);
    else if (coil_artifact_is(target))
      rc = o->replace ? 0 : 1;
    else if (!dir_is_empty(target))
      rc = coil_diag_set(d, "%s: exists and is not a coil artifact (no %s): not replacing it",
                         target, COIL_ARTIFACT_HOST_MANIFEST);
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
    rc = install(tmp, target, parent, name, o->replace, d);
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
  if (!*p || p[0] == '/' || strcmp(p, COIL_ARTIFACT_HOST_MANIFEST) == 0)
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

/* Reads and checks coil.json's envelope: *out is the parsed object (cJSON_Delete it). */
static int
read_manifest(const char *dir, cJSON **out, coil_diag *d)
{
  *out = NULL;
  char *path = join(dir, COIL_ARTIFACT_HOST_MANIFEST);
  size_t len = 0;
  char *text = read_text(path, MANIFEST_MAX_BYTES, &len);
  if (!text) {
    int e = errno;
    coil_diag_set(d, "%s: not a coil artifact: cannot read %s: %s", dir,
                  COIL_ARTIFACT_HOST_MANIFEST, strerror(e));
    free(path);
    return -1;
  }
  cJSON *m = cJSON_ParseWithLength(text, len);
  free(text);
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
  if (rc)
    cJSON_Delete(m);
  else
    *out = m;
  free(path);
  return rc;
}

/* Checks the files recorded in m against dir. */
static int
check_files(const char *dir, const cJSON *m, coil_diag *d)
{
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(m, "files");
  const char *want_hash = str_field(m, "content_hash");
  if (!cJSON_IsArray(arr) || !want_hash)
    return coil_diag_set(d, "%s/%s: no \"files\" list or \"content_hash\" (damaged)", dir,
                         COIL_ARTIFACT_HOST_MANIFEST);
  file_list rec = {0};
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
    file_entry *f = &rec.files[rec.n++];
    f->path = xstrdup(path);
    f->bytes = (uint64_t)bytes->valuedouble;
    memcpy(f->hash, hash, 33);
  }
  if (rc == 0) {
    char got[33];
    content_hash(&rec, got);
    if (strcmp(got, want_hash) != 0)
      rc = coil_diag_set(d, "%s/%s: its content_hash does not match its own file list "
                            "(edited or damaged): recompile", dir, COIL_ARTIFACT_HOST_MANIFEST);
  }
  for (int i = 0; rc == 0 && i < rec.n; i++) {
    const file_entry *f = &rec.files[i];
    char *full = join(dir, f->path);
    file_entry now = {0};
    struct stat st;
    if (lstat(full, &st) != 0 || !S_ISREG(st.st_mode))
      rc = coil_diag_set(d, "%s: missing from the artifact (coil.json records it): recompile", full);
    else if (hash_file(full, false, &now, d))
      rc = -1;
    else if (now.bytes != f->bytes || strcmp(now.hash, f->hash) != 0)
      rc = coil_diag_set(d, "%s: changed or corrupted since the artifact was written (%llu bytes, "
                            "XXH3-128 %s; coil.json records %llu bytes, %s): recompile", full,
                         (unsigned long long)now.bytes, now.hash, (unsigned long long)f->bytes,
                         f->hash);
    free(full);
  }
  file_list present = {0};
  if (rc == 0)
    rc = list_files(dir, "", &present, d);
  for (int i = 0; rc == 0 && i < present.n; i++) {
    bool known = false;
    for (int k = 0; k < rec.n && !known; k++)
      known = strcmp(rec.files[k].path, present.files[i].path) == 0;
    if (!known)
      rc = coil_diag_set(d, "%s/%s: not part of the artifact (coil.json does not record it)", dir,
                         present.files[i].path);
  }
  files_free(&present);
  files_free(&rec);
  return rc;
}

int
coil_artifact_verify(const char *dir, coil_diag *d)
{
  cJSON *m;
  if (read_manifest(dir, &m, d))
    return -1;
  int rc = check_files(dir, m, d);
  cJSON_Delete(m);
  return rc;
}

/* ---- opening ---- */

void
coil_artifact_close(coil_stored_artifact *a)
{
  if (!a)
    return;
  free(a->dir), free(a->coil_version), free(a->graph), free(a->plugin);
  free(a->plugin_version), free(a->cache_key);
  coil_wir_free(a->program);
  for (int i = 0; i < a->noutputs; i++)
    free(a->output_names[i]);
  free(a->output_names);
  coil_tensor_list_free(&a->weights);
  free(a);
}

static int
read_program(coil_stored_artifact *a, coil_diag *d)
{
  char *path = join(a->dir, COIL_ARTIFACT_PROGRAM);
  size_t len = 0;
  char *text = read_text(path, SIZE_MAX / 2, &len);
  int rc = 0;
  if (!text)
    rc = coil_diag_set(d, "%s: cannot read: %s", path, strerror(errno));
  if (rc == 0 && (!(a->program = coil_wir_parse(path, text, len, d)) ||
                  coil_wir_verify(a->program, d) != 0))
    rc = -1;
  free(text);
  free(path);
  return rc;
}

/* The output names and embedded weights that coil.json records, checked against the program
 * and the weights file. */
static int
read_signature(coil_stored_artifact *a, const cJSON *m, coil_diag *d)
{
  const coil_line *ol = output_line(a->program);
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
    a->output_names[i] = xstrdup(name ? name : fallback);
  }
  const cJSON *ew = cJSON_GetObjectItemCaseSensitive(m, "embedded_weights");
  int nw = cJSON_IsArray(ew) ? cJSON_GetArraySize(ew) : 0;
  if (nw == 0)
    return 0;
  char *path = join(a->dir, COIL_ARTIFACT_WEIGHTS);
  int rc = coil_safetensors_read(path, &a->weights, d);
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
coil_artifact_open(const char *dir, coil_stored_artifact **out, coil_diag *d)
{
  *out = NULL;
  cJSON *m;
  if (read_manifest(dir, &m, d))
    return -1;
  coil_stored_artifact *a = calloc(1, sizeof *a);
  if (!a)
    abort();
  a->dir = xstrdup(dir);
  int rc = check_files(dir, m, d);
  const char *fields[] = {"coil_version", "graph", "plugin", "plugin_version"};
  char **slots[] = {&a->coil_version, &a->graph, &a->plugin, &a->plugin_version};
  for (int i = 0; rc == 0 && i < 4; i++) {
    const char *v = str_field(m, fields[i]);
    if (!v)
      rc = coil_diag_set(d, "%s/%s: no \"%s\" (damaged)", dir, COIL_ARTIFACT_HOST_MANIFEST, fields[i]);
    else
      *slots[i] = xstrdup(v);
  }
  if (rc == 0 && str_field(m, "cache_key"))
    a->cache_key = xstrdup(str_field(m, "cache_key"));
  if (rc == 0)
    rc = read_program(a, d);
  if (rc == 0)
    rc = read_signature(a, m, d);
  cJSON_Delete(m);
  if (rc) {
    coil_artifact_close(a);
    return -1;
  }
  *out = a;
  return 0;
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
coil_artifact_exec(const coil_loaded_plugin *lp, coil_artifact *art, const coil_wir_program *p,
                   const coil_tensor_list *inputs, const coil_tensor_list *weights,
                   coil_tensor_list *outputs, coil_diag *d)
{
  int rc = coil_artifact_exec_checked(lp, art, p, inputs, weights, NULL, outputs, d);
  return rc < 0 ? -1 : rc;
}

#define GUARD_BYTE 0xa5

int
coil_artifact_exec_checked(const coil_loaded_plugin *lp, coil_artifact *art, const coil_wir_program *p,
                           const coil_tensor_list *inputs, const coil_tensor_list *weights,
                           const coil_exec_checks *chk, coil_tensor_list *outputs, coil_diag *d)
{
  memset(outputs, 0, sizeof *outputs);
  const coil_line *ol = output_line(p);
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
    if (offset && coil_tensor_numel(in[i]) > 0) {
      size_t es = coil_dtype_size(in[i]->dtype), bytes = (size_t)coil_tensor_numel(in[i]) * es;
      shifted[i] = aligned_alloc(64, (bytes + es * (size_t)offset + 63) / 64 * 64);
      if (!shifted[i]) {
        coil_diag_set(d, "out of memory copying input %s", p->inputs[i].label);
        goto done;
      }
      memcpy(shifted[i] + es * (size_t)offset, in[i]->data, bytes);
      pin[i].data = shifted[i] + es * (size_t)offset;
    }
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
    if (guard) {
      size_t bytes = (size_t)coil_tensor_numel(&outs[i]) * coil_dtype_size(b->dtype);
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
    poutp[i] = &pout[i];
  }
  int prc = coil_plugin_run(lp, art, nin, pinp, nout, poutp, d);
  if (prc) {
    rc = prc;
    goto done;
  }
  for (int i = 0; i < nout && guard; i++) {
    size_t bytes = (size_t)coil_tensor_numel(&outs[i]) * coil_dtype_size(outs[i].dtype);
    for (size_t k = 0; k < guard; k++)
      if (guarded[i][k] != GUARD_BYTE || guarded[i][guard + bytes + k] != GUARD_BYTE) {
        bool before = guarded[i][k] != GUARD_BYTE;
        coil_diag_set(d, "the plugin wrote outside output %d: guard byte %zu %s it changed", i,
                      before ? guard - k : k + 1, before ? "before" : "after");
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
  if (coil_plugin_create(lp, opts, &inst, d) || coil_plugin_load(lp, inst, a->dir, opts, &art, d) ||
      coil_artifact_exec(lp, art, a->program, inputs, &a->weights, outputs, d))
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
