/* backend.h — run a graph on a named backend (core-internal; the CLI and the tests use it). */
#ifndef COIL_BACKEND_H
#define COIL_BACKEND_H

#include "coil/coil.h"
#include "runtime.h"

/* What a run did, for the caller to report or test (counts add up over runs). */
typedef struct coil_backend_stats {
  int compiles;      /* plugin compiles (cache misses and uncached runs) */
  int cache_hits;    /* runs that loaded an artifact from the compile cache */
} coil_backend_stats;

typedef struct coil_backend_env {
  coil_plugin_dirs dirs;           /* where plugins are looked for */
  int noptions;                    /* the plugin's options (its ini section, without library) */
  const char *const *option_keys;
  const char *const *option_values;
  const char *dump_dir;            /* compile dumps, or NULL */
  const char *cache_dir;           /* the compile cache (cache.h); NULL or "": compile into a
                                      temporary directory, removed after the run */
  coil_backend_stats *stats;       /* counted into when not NULL */
} coil_backend_env;

/* Runs g on `backend` ("ref", or a plugin name or path) with inputs by graph input name; the
 * outputs are out0, out1, ... */
int coil_backend_run(const coil_graph *g, const char *backend, const coil_backend_env *env,
                     const coil_tensor_list *inputs, coil_tensor_list *outputs, coil_diag *d);

#endif
