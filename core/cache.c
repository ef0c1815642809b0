/* cache.c — the compile cache (cache.h): keys, the private cache directory, and finding,
 * checking, replacing and writing entries. Writing and checking an entry is artifact.c's work;
 * this file decides which directory and what to do when an entry is missing or damaged. */
#include "cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "artifact.h"

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
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits_digest(st));
  XXH3_freeState(st);
  for (int i = 0; i < 16; i++)
    snprintf(out->hex + 2 * i, 3, "%02x", c.digest[i]);
}

/* ---- the cache directory ---- */

int
coil_cache_prepare(const char *cache_dir, coil_diag *d)
{
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
  struct stat st;
  if (stat(cache_dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return coil_diag_set(d, "cache_dir %s: not a directory", cache_dir);
  if (st.st_uid != geteuid())
    return coil_diag_set(d, "cache_dir %s: owned by another user (uid %ld): coil loads compiled "
                            "code from its cache, so it uses only a directory of its own (set "
                            "cache_dir, or run with --no-cache)", cache_dir, (long)st.st_uid);
  if (st.st_mode & 022)
    return coil_diag_set(d, "cache_dir %s: others may write to it (mode %03o): coil loads "
                            "compiled code from its cache; chmod 700 it, or set another cache_dir",
                         cache_dir, (unsigned)(st.st_mode & 0777));
  return 0;
}

/* ---- entries ---- */

/* Whether the entry at dir is complete and is the one for this key and plugin; why if not. */
static bool
entry_valid(const char *dir, const coil_cache_key *key, const coil_loaded_plugin *lp,
            coil_diag *why)
{
  coil_stored_artifact *a = NULL;
  if (coil_artifact_open(dir, &a, why))
    return false;
  bool ok = a->cache_key && strcmp(a->cache_key, key->hex) == 0 &&
            strcmp(a->plugin, lp->api.name) == 0 && strcmp(a->plugin_version, lp->api.version) == 0;
  if (!ok)
    coil_diag_set(why, "%s: records another key or plugin (%s %s)", dir, a->plugin, a->plugin_version);
  coil_artifact_close(a);
  return ok;
}

/* Moves a damaged entry out of the way (atomically: a reader never sees half of it gone), then
 * deletes it. Another process may have moved or replaced it first; that is fine. */
static void
discard(const char *cache_dir, const char *entry, const coil_cache_key *key)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  size_t n = strlen(cache_dir) + 96;
  char *aside = malloc(n);
  if (!aside)
    abort();
  snprintf(aside, n, "%s/.%s.bad-%ld-%ld-%p", cache_dir, key->hex, (long)getpid(),
           (long)ts.tv_nsec, (void *)&ts);
  if (rename(entry, aside) == 0)
    coil_artifact_remove(aside);
  free(aside);
}

int
coil_cache_get(const char *cache_dir, const char *toolchain, const coil_loaded_plugin *lp,
               coil_plugin *inst, const coil_wir_program *p, const coil_plugin_options *opts,
               char **entry, coil_cache_outcome *outcome, coil_diag *d)
{
  *entry = NULL;
  coil_cache_outcome how = COIL_CACHE_MISS;
  if (coil_cache_prepare(cache_dir, d))
    return -1;
  char *text = coil_wir_print(p);
  coil_cache_key key;
  coil_cache_key_make(text, lp->api.name, lp->api.version, opts, toolchain, &key);
  free(text);
  size_t n = strlen(cache_dir) + sizeof key.hex + 2;
  char *dir = malloc(n);
  if (!dir)
    abort();
  snprintf(dir, n, "%s/%s", cache_dir, key.hex);

  coil_artifact_write_opts wo = {.cache_key = key.hex, .replace = false, .private_dir = true};
  int rc = -1;
  /* A damaged entry is discarded and written again; an entry that a concurrent writer put in
   * place first is checked like any other. Three turns cover both. */
  for (int attempt = 0; attempt < 3; attempt++) {
    struct stat st;
    if (lstat(dir, &st) == 0) {
      coil_diag why = {{0}};
      if (entry_valid(dir, &key, lp, &why)) {
        how = attempt == 0 ? COIL_CACHE_HIT : how;
        rc = 0;
        break;
      }
      discard(cache_dir, dir, &key);
      how = COIL_CACHE_REBUILT;
    }
    int w = coil_artifact_write(lp, inst, p, opts, &wo, dir, d);
    if (w < 0)
      break;
    if (w == 0) { /* ours is in place */
      rc = 0;
      break;
    }
    /* w == 1: another writer's entry is in place: check it on the next turn */
  }
  if (rc != 0 && !d->msg[0])
    coil_diag_set(d, "%s: the cache entry keeps failing its check", dir);
  if (rc == 0 && outcome)
    *outcome = how;
  if (rc == 0)
    *entry = dir;
  else
    free(dir);
  return rc;
}
