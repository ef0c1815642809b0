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
  const char *convolution;         /* [coil] convolution: auto (also NULL), generated, library */
  coil_backend_stats *stats;       /* counted into when not NULL */
} coil_backend_env;

/* Library ops the core can also generate (aten.convolution.default): at most this many claims. */
#define COIL_BACKEND_MAX_CLAIMS 3

/* Sets o->library and o->nlibrary (into claims, which o points at afterwards) for a program
 * that plugin lp will run, with [coil] convolution = `convolution`: "auto" or NULL claims the
 * dtypes for which the plugin's supports() says yes to aten.convolution.default (none when lp is
 * NULL: no plugin to ask), "library" every dtype, "generated" none. */
void coil_backend_compile_options(const coil_loaded_plugin *lp, const coil_plugin *inst,
                                  const char *convolution, coil_library_claim *claims,
                                  coil_compile_options *o);

/* Runs g on `backend` ("ref", or a plugin name or path) with inputs by graph input name; the
 * outputs are out0, out1, ... */
int coil_backend_run(const coil_graph *g, const char *backend, const coil_backend_env *env,
                     const coil_tensor_list *inputs, coil_tensor_list *outputs, coil_diag *d);

#endif
