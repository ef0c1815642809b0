/* backend.c — running a graph on a backend: "ref" runs the reference interpreter; any other
 * name is a plugin, driven through its whole lifecycle: compile the graph to Wrapper IR, open
 * the plugin, create an instance, get an artifact directory, load it, run it on the inputs
 * (artifact.c binds them and sizes the outputs), and tear everything down again.
 *
 * The artifact comes from the compile cache (cache.h) when env->cache_dir is set: a hit loads
 * the cached entry without compiling, a miss compiles into the cache. Without a cache the
 * plugin compiles into a fresh temporary directory, removed after the run. */
#include "backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "artifact.h"
#include "cache.h"

/* The toolchain identity in the cache key: what the plugin says through identity (ABI 1.1),
 * or nothing for a plugin that does not have it. */
static const char *
toolchain_identity(const coil_loaded_plugin *lp, coil_plugin *inst)
{
  const char *id = lp->api.identity ? lp->api.identity(inst) : NULL;
  return id ? id : "";
}

void
coil_backend_compile_options(const coil_loaded_plugin *lp, const coil_plugin *inst,
                              const char *convolution, coil_library_claim *claims,
                              coil_compile_options *o)
{
  static const char *const op = "aten.convolution.default";
  const char *how = convolution ? convolution : "auto";
  uint32_t dtypes = 0;
  for (int t = 0; t < COIL_DTYPE_COUNT; t++)
    if (strcmp(how, "library") == 0 ||
        (strcmp(how, "auto") == 0 && lp && coil_plugin_supports(lp, inst, op, (coil_dtype)t) == COIL_SUPPORTED))
      dtypes |= 1u << t;
  claims[0] = (coil_library_claim){.op = op, .dtypes = dtypes};
  int n = dtypes ? 1 : 0;
  /* cumsum and topk: a library call where the plugin claims it (generated otherwise; topk up to
   * rows of 1024, longer ones stay library calls) */
  static const char *const claimable[] = {"aten.cumsum.default", "aten.topk.default"};
  for (size_t c = 0; c < sizeof claimable / sizeof *claimable; c++) {
    uint32_t sd = 0;
    for (int t = 0; t < COIL_DTYPE_COUNT && lp; t++)
      if (coil_plugin_supports(lp, inst, claimable[c], (coil_dtype)t) == COIL_SUPPORTED)
        sd |= 1u << t;
    if (sd)
      claims[n++] = (coil_library_claim){.op = claimable[c], .dtypes = sd};
  }
  o->library = claims;
  o->nlibrary = n;
}

/* A plugin's warnings and errors (a refused graph capture, say) go to stderr; its info and
 * debug lines are dropped. */
static void
log_to_stderr(void *user, const char *plugin, coil_log_level level, const char *message)
{
  (void)user;
  if (level >= COIL_LOG_WARN)
    fprintf(stderr, "coil: plugin '%s': %s: %s\n", plugin, level == COIL_LOG_WARN ? "warning" : "error", message);
}

int
coil_backend_run(const coil_graph *g, const char *backend, const coil_backend_env *env,
                 const coil_tensor_list *inputs, coil_tensor_list *outputs, coil_diag *d)
{
  memset(outputs, 0, sizeof *outputs);
  if (strcmp(backend, "ref") == 0)
    return coil_ref_run(g, inputs, outputs, d);

  int rc = -1;
  coil_wir_program *p = NULL;
  coil_loaded_plugin *lp = NULL;
  coil_plugin *inst = NULL;
  coil_artifact *art = NULL;
  char *dir = NULL;
  int entry_fd = -1;
  char load_path[4096]; /* what the plugin is handed: the checked entry's /proc/self/fd path */
  bool temporary = false;
  coil_plugin_options opts = {.struct_size = sizeof opts};
  if (env) {
    opts.count = (size_t)env->noptions;
    opts.keys = env->option_keys;
    opts.values = env->option_values;
  }
  coil_backend_stats none = {0}, *stats = env && env->stats ? env->stats : &none;
  const char *const *dirs = env ? (const char *const *)env->dirs.dirs : NULL;
  if (coil_plugin_open(backend, dirs, env ? env->dirs.n : 0, &lp, d))
    goto done;
  coil_plugin_set_log(lp, log_to_stderr, NULL);
  if (coil_plugin_create(lp, &opts, &inst, d))
    goto done;
  /* compiled for this plugin: what it claims as library calls decides what is generated */
  coil_library_claim claims[COIL_BACKEND_MAX_CLAIMS];
  coil_compile_options copts = {.fuse = true, .verify = true, .dump_dir = env ? env->dump_dir : NULL};
  coil_backend_compile_options(lp, inst, env ? env->convolution : NULL, claims, &copts);
  if (!(p = coil_compile_graph(g, &copts, d)))
    goto done;

  if (env && env->cache_dir && *env->cache_dir) {
    coil_cache_outcome how;
    if (coil_cache_get(env->cache_dir, toolchain_identity(lp, inst), lp, inst, p, &opts, &dir,
                       &entry_fd, &how, d))
      goto done;
    coil_fd_path(entry_fd, dir, load_path, sizeof load_path);
    if (how == COIL_CACHE_HIT)
      stats->cache_hits++;
    else
      stats->compiles++;
  } else {
    const char *tmp = getenv("TMPDIR");
    size_t n = strlen(tmp && *tmp ? tmp : "/tmp") + strlen(lp->api.name) + 32;
    dir = coil_xmalloc(n);
    snprintf(dir, n, "%s/coil-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", lp->api.name);
    if (!mkdtemp(dir)) {
      coil_diag_set(d, "%s: cannot create an artifact directory: %s", dir, strerror(errno));
      goto done;
    }
    temporary = true;
    if (coil_plugin_compile(lp, inst, p, dir, &opts, d))
      goto done;
    stats->compiles++;
    snprintf(load_path, sizeof load_path, "%s", dir);
  }
  if (coil_plugin_load(lp, inst, load_path, &opts, &art, d) ||
      coil_artifact_exec(lp, inst, art, p, inputs, NULL, outputs, d))
    goto done;
  rc = 0;
done:
  if (art)
    coil_plugin_artifact_free(lp, art);
  if (inst)
    coil_plugin_destroy(lp, inst);
  coil_plugin_close(lp);
  if (entry_fd >= 0)
    close(entry_fd);
  if (temporary)
    coil_artifact_remove(dir);
  free(dir);
  coil_wir_free(p);
  return rc;
}
