/* backend.h — run a graph on a named backend (core-internal; the CLI and the tests use it). */
#ifndef COIL_BACKEND_H
#define COIL_BACKEND_H

#include "cache_remote.h"
#include "coil/coil.h"
#include "runtime.h"

/* What a run did, for the caller to report or test (counts add up over runs). */
typedef struct coil_backend_stats {
  int compiles;      /* plugin compiles (cache misses and uncached runs) */
  int cache_hits;    /* runs that loaded an artifact from the compile cache (local or remote) */
  coil_cache_counts cache; /* the local and remote cache's counts (cache_remote.h) */
} coil_backend_stats;

/* One backend of a list (backend = a, b): its options (its ini section, without library). */
typedef struct coil_backend_opts {
  const char *name;
  int noptions;
  const char *const *option_keys;
  const char *const *option_values;
} coil_backend_opts;

#define COIL_BACKEND_MAX_LIST 8

typedef struct coil_backend_env {
  coil_plugin_dirs dirs;           /* where plugins are looked for */
  int noptions;                    /* the plugin's options (its ini section, without library) */
  const char *const *option_keys;
  const char *const *option_values;
  const char *dump_dir;            /* compile dumps, or NULL */
  const char *cache_dir;           /* the compile cache (cache.h); NULL or "": compile into a
                                      temporary directory, removed after the run */
  const coil_cache_remote *remote; /* [cache] remote behind cache_dir, or NULL */
  const char *convolution;         /* [coil] convolution: auto (also NULL), generated, library */
  const char *attention;           /* [coil] attention: the same choices, for coil.attention */
  const char *matmul;              /* [coil] matmul: the same choices, for mm, bmm and addmm */
  const char *decompose_k;         /* [coil] decompose_k: auto (also NULL), off, or a split count */
  coil_backend_stats *stats;       /* counted into when not NULL */
  int nbackends;                   /* for a list of backends: each one's options */
  const coil_backend_opts *backends;
} coil_backend_env;

/* Library ops the core can also generate (aten.convolution.default): at most this many claims. */
#define COIL_BACKEND_MAX_CLAIMS 8

/* Sets o->library and o->nlibrary (into claims, which o points at afterwards) for a program
 * that plugin lp will run, with [coil] convolution = `convolution`: "auto" or NULL claims the
 * dtypes for which the plugin's supports() says yes to aten.convolution.default (none when lp is
 * NULL: no plugin to ask), "library" every dtype, "generated" none. [coil] attention =
 * `attention` does the same for coil.attention, the fused attention the core matches in graphs
 * (core/attention.c), and [coil] matmul = `matmul` for aten.mm.default and aten.bmm.default
 * (o->matmul_generated: where they are not claimed, the core's loop nest; auto with lp NULL
 * keeps the library op). */
void coil_backend_compile_options(const coil_loaded_plugin *lp, const coil_plugin *inst,
                                  const char *convolution, const char *attention, const char *matmul,
                                  coil_library_claim *claims,
                                  coil_compile_options *o);
/* [coil] decompose_k as coil_compile_options.decompose_k: "auto" or NULL 0, "off" -1, "N" N. */
int coil_backend_decompose_k(const char *setting);

/* A plugin log (coil_plugin_set_log) that prints warnings and errors to stderr, "coil: plugin
 * 'NAME': warning: ..."; the lower levels are dropped. */
void coil_backend_log_stderr(void *user, const char *plugin, coil_log_level level, const char *message);

/* Runs g on `backend` ("ref", a plugin name or path, or a comma-separated list of plugin names:
 * coil_backend_run_split) with inputs by graph input name; the outputs are out0, out1, ... */
int coil_backend_run(const coil_graph *g, const char *backend, const coil_backend_env *env,
                     const coil_tensor_list *inputs, coil_tensor_list *outputs, coil_diag *d);

/* Partial offload (partition.h): compiles g once, splits the program across the backends of the
 * list "a, b" (each call to the first that claims it; env->backends gives each one's options),
 * and runs the parts in order, moving the storages between them through the host. *plan (when
 * plan is not NULL; malloc'd) gets the partition as text, also written to DUMP/partition.txt.
 * outputs NULL: plan only, nothing runs. */
int coil_backend_run_split(const coil_graph *g, const char *backends, const coil_backend_env *env,
                           const coil_tensor_list *inputs, coil_tensor_list *outputs, char **plan,
                           coil_diag *d);

/* The statement query (ABI 1.4 supports_stmt) on a kernel_call or extern_call line of p: the
 * plugin's answer, or true for a plugin without it. */
bool coil_claim_stmt(const coil_loaded_plugin *lp, const coil_plugin *inst, const coil_wir_program *p,
                     const coil_line *l);

/* Whether the plugin claims line l of p: a kernel_call when supports() says yes to every
 * instruction's op and dtype (and reduce.KIND, store.MODE, scan.KIND), an extern_call when it
 * says yes to the op on its first output's dtype; other lines are bookkeeping. why: the first
 * thing not claimed. */
bool coil_claim_line(const coil_loaded_plugin *lp, const coil_plugin *inst, const coil_wir_program *p,
                     const coil_line *l, char *why, size_t n);

#endif
