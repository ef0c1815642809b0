/* cache.h — the compile cache (core-internal): compiled artifacts (artifact.h) kept under the
 * cache_dir option (docs/config.md), one directory per key, so that running the same program on
 * the same plugin again loads what was compiled before instead of compiling.
 *
 * The key is the XXH3-128 hash of everything that decides what compile writes: the Wrapper IR
 * text, the plugin's name and version, its options (sorted by key), a toolchain identity the
 * caller passes (the cpu plugin's compiler and flags; "" for plugins without one), and coil's
 * version and artifact format. An entry is an artifact directory named by the key's 32 hex
 * digits, written under a temporary name and renamed into place, so concurrent writers of one
 * key leave exactly one complete entry (the first rename wins; the others drop their copy). An
 * entry that fails its check (a file changed or missing, no coil.json, another plugin version)
 * is removed and compiled again.
 *
 * The cache directory and its entries are private to the user (mode 0700): an entry may hold
 * code that the plugin loads and runs, so a cache directory that another user could write to
 * is refused. */
#ifndef COIL_CACHE_H
#define COIL_CACHE_H

#include "coil/coil.h"
#include "runtime.h"

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
} coil_cache_outcome;

/* The cache entry of program p on the plugin instance (key from coil_cache_key_make with the
 * plugin's name, version, opts and toolchain): found and checked, or compiled into the cache.
 * *entry: the entry's directory (malloc'd), to hand to coil_plugin_load; *outcome may be NULL.
 * Safe to call from several threads or processes at once, also on one key. */
int coil_cache_get(const char *cache_dir, const char *toolchain, const coil_loaded_plugin *lp,
                   coil_plugin *inst, const coil_wir_program *p, const coil_plugin_options *opts,
                   char **entry, coil_cache_outcome *outcome, coil_diag *d);

#endif
