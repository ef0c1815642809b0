/* backend.h — run a graph on a named backend (core-internal; the CLI and the tests use it). */
#ifndef COIL_BACKEND_H
#define COIL_BACKEND_H

#include "coil/coil.h"
#include "runtime.h"

typedef struct coil_backend_env {
  coil_plugin_dirs dirs;           /* where plugins are looked for */
  int noptions;                    /* the plugin's options (its ini section, without library) */
  const char *const *option_keys;
  const char *const *option_values;
  const char *dump_dir;            /* compile dumps, or NULL */
} coil_backend_env;

/* Runs g on `backend` ("ref", or a plugin name or path) with inputs by graph input name; the
 * outputs are out0, out1, ... */
int coil_backend_run(const coil_graph *g, const char *backend, const coil_backend_env *env,
                     const coil_tensor_list *inputs, coil_tensor_list *outputs, coil_diag *d);

#endif
