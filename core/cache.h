/* cache.h — the compile cache (core-internal): compiled artifacts (artifact.h) kept under the
 * cache_dir option (docs/config.md), one directory per key, so that running the same program on
 * the same plugin again loads what was compiled before instead of compiling.
 *
 * The key is the XXH3-128 hash of everything that decides what compile writes: the Wrapper IR
 * text, the plugin's name and version, its options (sorted by key), a toolchain identity the
 * caller passes (the cpu plugin's compiler and flags; "" for plugins without one), and coil's
 * version and artifact format. An entry is an artifact directory named by the key's 32 hex
 * digits, written under a temporary name (".KEY.tmp-PID-RANDOM") and renamed into place, so
 * concurrent writers of one key leave exactly one complete entry (the first rename wins; the
 * others drop their copy). A temporary left by a writer that died (its PID is gone) is removed
 * by a later miss.
 *
 * An entry holds code that the plugin loads and runs, so the cache is a trust boundary
 * (docs/reliability.md, "The compile cache and artifacts"): the cache directory is opened and must be this user's with
 * nobody else allowed to write it; every entry is opened relative to it without following a
 * symlink, and every directory and file of it must be this user's and private (artifact.h,
 * coil_artifact_trust); and every entry carries coil.mac, a keyed BLAKE2b of its files made
 * with the cache's secret key (COIL_CACHE_KEY_FILE: 32 random bytes, mode 0600, made on first
 * use). An entry that fails any check (a symlink, a file others may write, a file changed or
 * missing, a wrong or missing coil.mac, another plugin version) is removed and compiled again,
 * with a note on stderr; only a checked entry is handed out, as an open directory. */
#ifndef COIL_CACHE_H
#define COIL_CACHE_H

#include <stdint.h>
#include <time.h>

#include "cache_remote.h"
#include "coil/coil.h"
#include "runtime.h"

#define COIL_CACHE_KEY_FILE ".key" /* under the cache directory */

typedef struct coil_cache_key {
  char hex[33]; /* 32 lowercase hex digits: the entry's directory name */
} coil_cache_key;

/* opts and toolchain may be NULL (no options; ""). */
void coil_cache_key_make(const char *wir_text, const char *plugin_name, const char *plugin_version,
                         const coil_plugin_options *opts, const char *toolchain,
                         coil_cache_key *out);

/* Creates cache_dir and its missing parents with mode 0700, and checks that it is a directory
 * owned by this user that nobody else may write to. */
int coil_cache_prepare(const char *cache_dir, coil_diag *d);

typedef enum coil_cache_outcome {
  COIL_CACHE_HIT,     /* a valid entry was there: nothing was compiled */
  COIL_CACHE_MISS,    /* there was none: the program was compiled into the cache */
  COIL_CACHE_REBUILT, /* the entry failed its check: it was removed and compiled again */
  COIL_CACHE_REMOTE_HIT, /* none here: fetched from the remote cache, checked, installed */
} coil_cache_outcome;

/* The cache entry of program p on the plugin instance (key from coil_cache_key_make with the
 * plugin's name, version, opts and toolchain): found and checked, or compiled into the cache.
 * *entry: the entry's path (malloc'd, for messages); *entry_fd (when not NULL): the entry's
 * directory as it was checked, open (the caller closes it): hand the plugin coil_fd_path of it
 * (artifact.h), never the path, so that what is loaded is what was checked. *outcome may be
 * NULL. Safe to call from several threads or processes at once, also on one key. */
int coil_cache_get(const char *cache_dir, const char *toolchain, const coil_loaded_plugin *lp,
                   coil_plugin *inst, const coil_wir_program *p, const coil_plugin_options *opts,
                   char **entry, int *entry_fd, coil_cache_outcome *outcome, coil_diag *d);

/* coil_cache_get with a remote cache (cache_remote.h) behind the local one: a local miss asks
 * the remote before compiling, and what this call compiled is published there. */
typedef struct coil_cache_where {
  const char *dir;                  /* the local cache directory */
  const coil_cache_remote *remote;  /* NULL (or url ""): none */
  coil_cache_counts *counts;        /* counted into when not NULL */
} coil_cache_where;

int coil_cache_fetch(const coil_cache_where *w, const char *toolchain, const coil_loaded_plugin *lp,
                     coil_plugin *inst, const coil_wir_program *p, const coil_plugin_options *opts,
                     char **entry, int *entry_fd, coil_cache_outcome *outcome, coil_diag *d);

/* ---- upkeep: coil cache stats | clear | prune (the cache never evicts by itself) ----
 * An entry's last use is its directory's modification time, which every hit sets. Entries in
 * use are skipped: a process holds a shared flock on an entry from the moment it opens it until
 * it closes the entry's descriptor (after loading), and removing takes an exclusive one without
 * waiting, then renames the entry aside (a reader never sees half of it) and deletes it. */

typedef struct coil_cache_summary {
  long entries;          /* complete entries (directories named by a key) */
  uint64_t bytes;        /* their size on disk */
  time_t oldest, newest; /* the least and the most recent last use; 0 without entries */
  long temporaries;      /* hidden leftovers of writers (being written, or of a writer that died) */
  bool exists;           /* the directory exists */
  bool has_key;          /* its secret key file exists */
} coil_cache_summary;

/* What is in cache_dir (which need not exist: exists false). Creates nothing. */
int coil_cache_stats(const char *cache_dir, coil_cache_summary *out, coil_diag *d);

typedef struct coil_cache_prune_report {
  long removed, kept, busy;  /* busy: in use by a process, kept */
  uint64_t freed, left;      /* bytes */
} coil_cache_prune_report;

/* Removes the least recently used entries of cache_dir until its entries take at most
 * max_bytes (0: all of them; the key file stays). Entries in use are kept and counted. */
int coil_cache_prune(const char *cache_dir, uint64_t max_bytes, coil_cache_prune_report *out, coil_diag *d);

#endif
