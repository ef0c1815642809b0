/* cache.c — the compile cache (cache.h): keys, the private cache directory, and finding,
 * checking, replacing and writing entries. Writing and checking an entry is artifact.c's work,
 * and reading (or making) the secret key file artifact_trust.c's; this file decides which
 * directory and what to do when an entry is missing or damaged. */
#include "cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "artifact.h"
#include "artifact_trust.h"
#include "cache_remote.h"

/* ---- keys ---- */

/* One field of the key: its length (8 bytes, little-endian), then its bytes, so that no two
 * different field lists hash the same stream. */
static void
field(XXH3_state_t *st, const char *s)
{
  size_t n = s ? strlen(s) : 0;
  unsigned char len[8];
  for (int k = 0; k < 8; k++)
    len[k] = (unsigned char)((uint64_t)n >> (8 * k));
  XXH3_128bits_update(st, len, sizeof len);
  if (n)
    XXH3_128bits_update(st, s, n);
}

typedef struct option_pair {
  const char *key, *value;
} option_pair;

static int
by_key(const void *a, const void *b)
{
  const option_pair *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  return c ? c : strcmp(x->value, y->value);
}

void
coil_cache_key_make(const char *wir_text, const char *plugin_name, const char *plugin_version,
                    const coil_plugin_options *opts, const char *toolchain, coil_cache_key *out)
{
  XXH3_state_t *st = XXH3_createState();
  if (!st)
    abort(); /* out of memory: the one exit coil.h allows */
  XXH3_128bits_reset(st);
  char format[16];
  snprintf(format, sizeof format, "%d", COIL_ARTIFACT_FORMAT);
  field(st, "coil compile cache 1");
  field(st, COIL_VERSION_STRING);
  field(st, format);
  field(st, wir_text);
  field(st, plugin_name);
  field(st, plugin_version);
  size_t n = opts ? opts->count : 0;
  option_pair *pairs = calloc(n + 1, sizeof *pairs);
  if (!pairs)
    abort();
  for (size_t i = 0; i < n; i++)
    pairs[i] = (option_pair){opts->keys[i], opts->values[i]};
  qsort(pairs, n, sizeof *pairs, by_key); /* the ini file's order does not change the code */
  char count[32];
  snprintf(count, sizeof count, "%zu", n);
  field(st, count);
  for (size_t i = 0; i < n; i++) {
    field(st, pairs[i].key);
    field(st, pairs[i].value);
  }
  free(pairs);
  field(st, toolchain ? toolchain : "");
  coil_hex128(XXH3_128bits_digest(st), out->hex);
  XXH3_freeState(st);
}

/* ---- the cache directory ---- */

/* Creates the missing components of cache_dir (mode 0700), opens it and checks what was opened:
 * a directory of this user's that nobody else may write to. Later names are opened relative
 * to *fd, so the checked directory is the one used even if its name is moved meanwhile. */
static int
open_root(const char *cache_dir, int *fd, coil_diag *d)
{
  *fd = -1;
  if (!cache_dir || !*cache_dir)
    return coil_diag_set(d, "no cache directory (cache_dir is empty)");
  char *path = strdup(cache_dir);
  if (!path)
    abort();
  /* Each missing component, parents first, private to the user. */
  for (char *s = path + 1; ; s++) {
    if (*s != '/' && *s != 0)
      continue;
    char c = *s;
    *s = 0;
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
      int e = errno;
      coil_diag_set(d, "cache_dir %s: cannot create %s: %s", cache_dir, path, strerror(e));
      free(path);
      return -1;
    }
    *s = c;
    if (!c)
      break;
  }
  free(path);
  int f = open(cache_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st;
  if (f < 0 || fstat(f, &st) != 0) {
    int e = errno;
    if (f >= 0)
      close(f);
    return coil_diag_set(d, "cache_dir %s: cannot open the directory: %s", cache_dir, strerror(e));
  }
  if (st.st_uid != geteuid()) {
    close(f);
    return coil_diag_set(d, "cache_dir %s: owned by another user (uid %ld): coil loads compiled "
                            "code from its cache, so it uses only a directory of its own (set "
                            "cache_dir, or run with --no-cache)", cache_dir, (long)st.st_uid);
  }
  if (st.st_mode & 022) {
    close(f);
    return coil_diag_set(d, "cache_dir %s: others may write to it (mode %03o): coil loads "
                            "compiled code from its cache; chmod 700 it, or set another cache_dir",
                         cache_dir, (unsigned)(st.st_mode & 0777));
  }
  *fd = f;
  return 0;
}

int
coil_cache_prepare(const char *cache_dir, coil_diag *d)
{
  int fd;
  if (open_root(cache_dir, &fd, d))
    return -1;
  close(fd);
  return 0;
}

/* ---- entries ---- */

/* Opens the entry `key` of the root without following a symlink and checks it as a cache
 * entry (artifact.h, coil_artifact_trust: owned, with the key) and as the one for this key
 * and plugin. Returns 0 with *fd the checked directory, 1 when there is none, -1 when there is
 * one that fails (why). */
static int
open_entry(int root, const char *dir, const coil_cache_key *key, const unsigned char *mac_key,
           const coil_loaded_plugin *lp, int *fd, coil_diag *why)
{
  *fd = openat(root, key->hex, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (*fd < 0) {
    if (errno == ENOENT)
      return 1;
    coil_diag_set(why, "%s: %s", dir, errno == ELOOP || errno == ENOTDIR
                      ? "a symlink or a file, not an entry directory (never followed)"
                      : strerror(errno));
    return -1;
  }
  /* in use from here until the descriptor closes: prune leaves it alone (a prune already
   * removing it holds the lock; then this entry is gone when we get it, and compiled again) */
  while (flock(*fd, LOCK_SH) != 0 && errno == EINTR)
    ;
  coil_artifact_trust trust = {.owned = true, .mac_key = mac_key};
  coil_stored_artifact *a = NULL;
  bool ok = coil_artifact_open_at(*fd, dir, &trust, &a, why) == 0;
  if (ok && !(a->cache_key && strcmp(a->cache_key, key->hex) == 0 &&
              strcmp(a->plugin, lp->api.name) == 0 &&
              strcmp(a->plugin_version, lp->api.version) == 0)) {
    coil_diag_set(why, "%s: records another key or plugin (%s %s)", dir, a->plugin, a->plugin_version);
    ok = false;
  }
  coil_artifact_close(a);
  if (!ok) {
    close(*fd);
    *fd = -1;
  }
  if (ok) /* its last use, for prune (errors ignored: a read-only cache still serves hits) */
    futimens(*fd, (struct timespec[]){{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_NOW}});
  return ok ? 0 : -1;
}

/* Moves a damaged entry out of the way (atomically: a reader never sees half of it gone), then
 * deletes it. Another process may have moved or replaced it first; that is fine. */
static void
discard(int root, const coil_cache_key *key)
{
  char aside[96];
  snprintf(aside, sizeof aside, ".%s.bad-%ld-%08x", key->hex, (long)getpid(), randombytes_random());
  if (renameat(root, key->hex, root, aside) == 0)
    coil_artifact_remove_at(root, aside);
}

/* Whether the hidden name is a temporary of a writer (".KEY.tmp-PID-...", ".KEY.bad-PID-...",
 * ".key.tmp-PID-...") that has died; *pid its process id. */
static bool
left_by_dead_writer(const char *name)
{
  const char *kinds[] = {".tmp-", ".bad-", ".old-"};
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
    const char *at = strstr(name, kinds[k]);
    if (!at)
      continue;
    char *end;
    long pid = strtol(at + 5, &end, 10);
    if (end == at + 5 || *end != '-' || pid <= 0)
      return false;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
  }
  return false;
}

/* Removes what writers killed mid-write left under the root: hidden temporaries whose process
 * is gone and that have not changed for STALE_SECONDS (a process id of another pid namespace
 * sharing the directory can look dead here; a writer still working changes its directory). */
#define STALE_SECONDS 60
static void
sweep(int root)
{
  int fd = dup(root);
  DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
  if (!dp) {
    if (fd >= 0)
      close(fd);
    return;
  }
  rewinddir(dp);
  time_t now = time(NULL);
  struct dirent *e;
  while ((e = readdir(dp))) {
    struct stat st;
    if (e->d_name[0] != '.' || !left_by_dead_writer(e->d_name) ||
        fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || now - st.st_mtime < STALE_SECONDS)
      continue;
    fprintf(stderr, "coil: note: removing %s from the compile cache (left by a writer that "
                    "died)\n", e->d_name);
    coil_artifact_remove_at(fd, e->d_name);
  }
  closedir(dp);
}

int
coil_cache_fetch(const coil_cache_where *w, const char *toolchain, const coil_loaded_plugin *lp,
                 coil_plugin *inst, const coil_wir_program *p, const coil_plugin_options *opts,
                 char **entry, int *entry_fd, coil_cache_outcome *outcome, coil_diag *d)
{
  const char *cache_dir = w->dir;
  const coil_cache_remote *remote = w->remote && w->remote->url && *w->remote->url ? w->remote : NULL;
  *entry = NULL;
  if (entry_fd)
    *entry_fd = -1;
  coil_cache_outcome how = COIL_CACHE_HIT;
  int root;
  if (open_root(cache_dir, &root, d))
    return -1;
  unsigned char mac_key[COIL_ARTIFACT_MAC_KEY_BYTES];
  if (coil_trust_secret_key(root, cache_dir, COIL_CACHE_KEY_FILE, mac_key, d)) {
    close(root);
    return -1;
  }
  char *text = coil_wir_print(p);
  coil_cache_key key;
  coil_cache_key_make(text, lp->api.name, lp->api.version, opts, toolchain, &key);
  free(text);
  size_t n = strlen(cache_dir) + sizeof key.hex + 2;
  char *dir = malloc(n);
  if (!dir)
    abort();
  snprintf(dir, n, "%s/%s", cache_dir, key.hex);

  coil_artifact_write_opts wo = {.cache_key = key.hex, .replace = false, .private_dir = true,
                                 .mac_key = mac_key, .no_fsync = true};
  int rc = -1, fd = -1;
  bool swept = false, asked_remote = remote == NULL, wrote = false;
  /* An entry is only ever used after it is opened and checked here: one that fails is
   * discarded and written again, and the one just written (ours, a concurrent writer's that
   * was in place first, or one fetched from the remote) is checked on the next turn like any
   * other. */
  for (int attempt = 0; attempt < 4; attempt++) {
    coil_diag why = {{0}};
    int found = open_entry(root, dir, &key, mac_key, lp, &fd, &why);
    if (found == 0) {
      rc = 0;
      break;
    }
    if (found < 0) {
      fprintf(stderr, "coil: note: compile cache: %s; compiling it again\n", why.msg);
      discard(root, &key);
      how = COIL_CACHE_REBUILT;
    } else if (how == COIL_CACHE_HIT) {
      how = COIL_CACHE_MISS;
    }
    if (!swept) {
      sweep(root);
      swept = true;
    }
    if (!asked_remote) { /* once: a fetched entry that then fails its local check is compiled */
      asked_remote = true;
      if (coil_remote_fetch(remote, root, cache_dir, key.hex, lp->api.name, lp->api.version, mac_key,
                            w->counts) == COIL_REMOTE_INSTALLED) {
        how = COIL_CACHE_REMOTE_HIT;
        continue;
      }
    }
    int wr = coil_artifact_write(lp, inst, p, opts, &wo, dir, d);
    if (wr < 0)
      break;
    wrote |= wr == 0;
    how = how == COIL_CACHE_REMOTE_HIT ? COIL_CACHE_REBUILT : how;
  }
  sodium_memzero(mac_key, sizeof mac_key);
  close(root);
  if (rc != 0 && !d->msg[0])
    coil_diag_set(d, "%s: the cache entry keeps failing its check", dir);
  if (rc == 0 && how == COIL_CACHE_HIT && w->counts)
    w->counts->local_hits++;
  if (rc == 0 && wrote && remote) /* after the entry is in place: a failed publish fails nothing */
    coil_remote_publish(remote, fd, dir, key.hex, lp->api.name, lp->api.version, w->counts);
  if (rc == 0 && outcome)
    *outcome = how;
  if (rc == 0 && entry_fd)
    *entry_fd = fd;
  else if (fd >= 0)
    close(fd);
  if (rc == 0)
    *entry = dir;
  else
    free(dir);
  return rc;
}

int
coil_cache_get(const char *cache_dir, const char *toolchain, const coil_loaded_plugin *lp,
               coil_plugin *inst, const coil_wir_program *p, const coil_plugin_options *opts,
               char **entry, int *entry_fd, coil_cache_outcome *outcome, coil_diag *d)
{
  coil_cache_where w = {.dir = cache_dir};
  return coil_cache_fetch(&w, toolchain, lp, inst, p, opts, entry, entry_fd, outcome, d);
}

/* ---- upkeep (cache.h) ---- */

static bool
is_key_name(const char *name)
{
  return strlen(name) == 32 && strspn(name, "0123456789abcdef") == 32;
}

/* The bytes on disk of what fd (a directory) holds, and of itself; never follows a symlink. */
static uint64_t
dir_bytes(int fd, int depth)
{
  struct stat st;
  uint64_t n = fstat(fd, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
  int dup_fd = depth < 8 ? dup(fd) : -1;
  DIR *dp = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
  if (!dp) {
    if (dup_fd >= 0)
      close(dup_fd);
    return n;
  }
  rewinddir(dp);
  for (struct dirent *e; (e = readdir(dp));) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
        fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    if (S_ISDIR(st.st_mode)) {
      int sub = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) {
        n += dir_bytes(sub, depth + 1);
        close(sub);
      }
    } else {
      n += (uint64_t)st.st_blocks * 512;
    }
  }
  closedir(dp);
  return n;
}

typedef struct listed_entry {
  char hex[33];
  uint64_t bytes;
  struct timespec used;
} listed_entry;

static int
by_use(const void *a, const void *b) /* least recently used first, then by name */
{
  const listed_entry *x = a, *y = b;
  if (x->used.tv_sec != y->used.tv_sec)
    return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
  if (x->used.tv_nsec != y->used.tv_nsec)
    return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
  return strcmp(x->hex, y->hex);
}

/* The entries under root (malloc'd, *n of them) and the count of hidden temporaries. */
static listed_entry *
list_entries(int root, long *n, long *temporaries, bool *has_key)
{
  *n = 0, *temporaries = 0, *has_key = false;
  int fd = dup(root);
  DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
  if (!dp) {
    if (fd >= 0)
      close(fd);
    return NULL;
  }
  rewinddir(dp);
  listed_entry *v = NULL;
  long cap = 0;
  for (struct dirent *e; (e = readdir(dp));) {
    if (strcmp(e->d_name, COIL_CACHE_KEY_FILE) == 0) {
      *has_key = true;
      continue;
    }
    if (e->d_name[0] == '.' && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      ++*temporaries;
      continue;
    }
    struct stat st;
    if (!is_key_name(e->d_name) || fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
      continue;
    int sub = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0)
      continue;
    if (*n == cap) {
      cap = cap ? 2 * cap : 64;
      listed_entry *grown = realloc(v, (size_t)cap * sizeof *v);
      if (!grown)
        abort();
      v = grown;
    }
    listed_entry *le = &v[(*n)++];
    snprintf(le->hex, sizeof le->hex, "%s", e->d_name);
    le->bytes = dir_bytes(sub, 0);
    le->used = st.st_mtim;
    close(sub);
  }
  closedir(dp);
  if (*n)
    qsort(v, (size_t)*n, sizeof *v, by_use);
  return v;
}

int
coil_cache_stats(const char *cache_dir, coil_cache_summary *out, coil_diag *d)
{
  *out = (coil_cache_summary){0};
  struct stat st;
  if (cache_dir && *cache_dir && stat(cache_dir, &st) != 0 && errno == ENOENT)
    return 0; /* no cache yet: nothing to report, and nothing made by looking */
  int root;
  if (open_root(cache_dir, &root, d))
    return -1;
  out->exists = true;
  listed_entry *v = list_entries(root, &out->entries, &out->temporaries, &out->has_key);
  for (long i = 0; i < out->entries; i++)
    out->bytes += v[i].bytes;
  if (out->entries) {
    out->oldest = v[0].used.tv_sec;
    out->newest = v[out->entries - 1].used.tv_sec;
  }
  free(v);
  close(root);
  return 0;
}

int
coil_cache_prune(const char *cache_dir, uint64_t max_bytes, coil_cache_prune_report *out, coil_diag *d)
{
  *out = (coil_cache_prune_report){0};
  struct stat st;
  if (cache_dir && *cache_dir && stat(cache_dir, &st) != 0 && errno == ENOENT)
    return 0;
  int root;
  if (open_root(cache_dir, &root, d))
    return -1;
  long n, temporaries;
  bool has_key;
  listed_entry *v = list_entries(root, &n, &temporaries, &has_key);
  uint64_t total = 0;
  for (long i = 0; i < n; i++)
    total += v[i].bytes;
  for (long i = 0; i < n; i++) {
    if (total <= max_bytes) {
      out->kept++;
      continue;
    }
    int fd = openat(root, v[i].hex, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) { /* gone meanwhile (another prune, a discard) */
      total -= v[i].bytes;
      continue;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) { /* a process has it open: leave it */
      close(fd);
      out->busy++;
      out->kept++;
      continue;
    }
    char aside[96];
    snprintf(aside, sizeof aside, ".%s.old-%ld-%08x", v[i].hex, (long)getpid(), randombytes_random());
    if (renameat(root, v[i].hex, root, aside) == 0) {
      coil_artifact_remove_at(root, aside);
      out->removed++;
      out->freed += v[i].bytes;
      total -= v[i].bytes;
    } else {
      out->kept++;
    }
    close(fd);
  }
  out->left = total;
  free(v);
  close(root);
  return 0;
}
