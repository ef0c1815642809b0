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
#include "artifact_trust.h"
#include "cache.h"
#include "coil/strbuf.h"
#include "coil/sym.h"
#include "partition.h"

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
                              const char *convolution, const char *attention, const char *matmul,
                              coil_library_claim *claims, coil_compile_options *o)
{
  /* convolution, attention and the matmuls: claimed per setting (auto asks the plugin) */
  static const char *const chosen[] = {"aten.convolution.default", "coil.attention", "aten.mm.default",
                                       "aten.bmm.default"};
  const char *setting[] = {convolution, attention, matmul, matmul};
  int n = 0;
  for (size_t c = 0; c < sizeof chosen / sizeof *chosen; c++) {
    const char *how = setting[c] ? setting[c] : "auto";
    uint32_t dtypes = 0;
    for (int t = 0; t < COIL_DTYPE_COUNT; t++)
      if (strcmp(how, "library") == 0 ||
          (strcmp(how, "auto") == 0 && lp && coil_plugin_supports(lp, inst, chosen[c], (coil_dtype)t) == COIL_SUPPORTED))
        dtypes |= 1u << t;
    if (dtypes)
      claims[n++] = (coil_library_claim){.op = chosen[c], .dtypes = dtypes};
  }
  /* cumsum and topk: a library call where the plugin claims it (generated otherwise; topk up to
   * rows of 1024, longer ones stay library calls); bmm.dtype (claimed per operand dtype): what
   * decompose-K needs */
  static const char *const claimable[] = {"aten.cumsum.default", "aten.topk.default", "aten.bmm.dtype"};
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
  /* generated: never a library product; auto: where the plugin does not claim one (no plugin
   * to ask: the library op, as a dump without a backend has always shown it) */
  o->matmul_generated = matmul && strcmp(matmul, "generated") == 0 ? true
                        : matmul && strcmp(matmul, "library") == 0 ? false
                                                                   : lp != NULL;
  /* auto: the plugin's statement query may still refuse a fused call by its shapes */
  bool ask = !attention || strcmp(attention, "auto") == 0;
  o->plugin = ask ? lp : NULL;
  o->instance = ask ? inst : NULL;
}

int
coil_backend_decompose_k(const char *setting)
{
  if (!setting || strcmp(setting, "auto") == 0)
    return 0;
  if (strcmp(setting, "off") == 0)
    return -1;
  int n = atoi(setting);
  return n > 1 ? n : 0; /* the config accepts only listed counts */
}

/* A plugin's warnings and errors (a refused graph capture, say) go to stderr; its info and
 * debug lines are dropped. */
void
coil_backend_log_stderr(void *user, const char *plugin, coil_log_level level, const char *message)
{
  (void)user;
  if (level >= COIL_LOG_WARN)
    fprintf(stderr, "coil: plugin '%s': %s: %s\n", plugin, level == COIL_LOG_WARN ? "warning" : "error", message);
}

/* Compiles p for the plugin (or finds it in the compile cache), loads it and runs it on inputs
 * (by input label; outputs out0, out1, ...). */
static int
run_program(const coil_loaded_plugin *lp, coil_plugin *inst, const coil_wir_program *p,
            const coil_plugin_options *opts, const coil_backend_env *env, coil_backend_stats *stats,
            const coil_tensor_list *inputs, coil_tensor_list *outputs, coil_diag *d)
{
  int rc = -1;
  coil_artifact *art = NULL;
  char *dir = NULL;
  int entry_fd = -1;
  char load_path[4096]; /* what the plugin is handed: the checked entry's /proc/self/fd path */
  bool temporary = false;
  if (env && env->cache_dir && *env->cache_dir) {
    coil_cache_outcome how;
    coil_cache_where w = {.dir = env->cache_dir, .remote = env->remote, .counts = &stats->cache};
    if (coil_cache_fetch(&w, toolchain_identity(lp, inst), lp, inst, p, opts, &dir, &entry_fd, &how, d))
      goto done;
    coil_fd_path(entry_fd, dir, load_path, sizeof load_path);
    if (how == COIL_CACHE_HIT || how == COIL_CACHE_REMOTE_HIT)
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
    if (coil_plugin_compile(lp, inst, p, dir, opts, d))
      goto done;
    stats->compiles++;
    snprintf(load_path, sizeof load_path, "%s", dir);
  }
  if (coil_plugin_load(lp, inst, load_path, opts, &art, d) ||
      coil_artifact_exec(lp, inst, art, p, inputs, NULL, outputs, d))
    goto done;
  rc = 0;
done:
  if (art)
    coil_plugin_artifact_free(lp, art);
  if (entry_fd >= 0)
    close(entry_fd);
  if (temporary)
    coil_artifact_remove(dir);
  free(dir);
  return rc;
}

int
coil_backend_run(const coil_graph *g, const char *backend, const coil_backend_env *env,
                 const coil_tensor_list *inputs, coil_tensor_list *outputs, coil_diag *d)
{
  memset(outputs, 0, sizeof *outputs);
  if (strcmp(backend, "ref") == 0)
    return coil_ref_run(g, inputs, outputs, d);
  if (strchr(backend, ','))
    return coil_backend_run_split(g, backend, env, inputs, outputs, NULL, d);

  int rc = -1;
  coil_wir_program *p = NULL;
  coil_loaded_plugin *lp = NULL;
  coil_plugin *inst = NULL;
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
  coil_plugin_set_log(lp, coil_backend_log_stderr, NULL);
  if (coil_plugin_create(lp, &opts, &inst, d))
    goto done;
  /* compiled for this plugin: what it claims as library calls decides what is generated */
  coil_library_claim claims[COIL_BACKEND_MAX_CLAIMS];
  coil_compile_options copts = {.fuse = true, .verify = true, .dump_dir = env ? env->dump_dir : NULL};
  coil_backend_compile_options(lp, inst, env ? env->convolution : NULL, env ? env->attention : NULL,
                               env ? env->matmul : NULL, claims, &copts);
  copts.decompose_k = coil_backend_decompose_k(env ? env->decompose_k : NULL);
  if (!(p = coil_compile_graph(g, &copts, d)))
    goto done;
  rc = run_program(lp, inst, p, &opts, env, stats, inputs, outputs, d);
done:
  if (inst)
    coil_plugin_destroy(lp, inst);
  coil_plugin_close(lp);
  coil_wir_free(p);
  return rc;
}

/* ---- partial offload: a list of backends (partition.h) ---- */

bool
coil_claim_line(const coil_loaded_plugin *lp, const coil_plugin *inst, const coil_wir_program *p,
                const coil_line *l, char *why, size_t n)
{
  why[0] = 0;
  if (l->kind == COIL_LINE_EXTERN_CALL) {
    coil_dtype t = l->nouts > 0 ? p->buffers[l->outs[0]].dtype : COIL_F32;
    if (coil_plugin_supports(lp, inst, l->op, t) != COIL_SUPPORTED) {
      snprintf(why, n, "library op '%s' on %s", l->op, coil_dtype_name(t));
      return false;
    }
    if (!coil_claim_stmt(lp, inst, p, l)) {
      snprintf(why, n, "supports_stmt refused extern_call %s", l->op);
      return false;
    }
    return true;
  }
  if (l->kind != COIL_LINE_KERNEL_CALL)
    return true;
  const coil_kernel *k = &p->kernels[l->kernel];
  for (int i = 0; i < k->ninsts; i++) {
    const coil_kinst *in = &k->insts[i];
    const char *op = coil_kop_name(in->op);
    char name[64] = "";
    if (in->op == COIL_KOP_STORE && in->mode != COIL_STORE_PLAIN)
      snprintf(name, sizeof name, "store.%s", coil_store_mode_name(in->mode));
    if (in->op == COIL_KOP_REDUCE || in->op == COIL_KOP_SCAN)
      snprintf(name, sizeof name, "%s.%s", op, coil_reduction_name(in->red));
    if (coil_plugin_supports(lp, inst, op, in->dtype) != COIL_SUPPORTED ||
        (name[0] && coil_plugin_supports(lp, inst, name, in->dtype) != COIL_SUPPORTED)) {
      snprintf(why, n, "kernel %s: '%s' on %s", k->name, name[0] ? name : op, coil_dtype_name(in->dtype));
      return false;
    }
  }
  if (!coil_claim_stmt(lp, inst, p, l)) {
    snprintf(why, n, "supports_stmt refused kernel %s", k->name);
    return false;
  }
  return true;
}

typedef struct split_backend {
  char name[80];
  coil_loaded_plugin *lp;
  coil_plugin *inst;
  coil_plugin_options opts;
} split_backend;

static bool
claim_split(void *user, int which, const coil_wir_program *p, const coil_line *l, char *why, size_t n)
{
  const split_backend *b = (const split_backend *)user + which;
  return coil_claim_line(b->lp, b->inst, p, l, why, n);
}

/* The first compile's work lines and the lowered node each comes from. */
typedef struct placing {
  int nrec, cap, nnodes;
  int *line, *node;
  int *placement; /* per lowered node: the backend, -1 for none */
} placing;

static void
record_line(void *user, int line, int node)
{
  placing *pc = user;
  if (pc->nrec == pc->cap) { /* plain realloc: called inside the compile's out-of-memory scope,
                                which would free its coil_x* blocks on an unwind */
    int cap = pc->cap ? 2 * pc->cap : 32;
    int *l = realloc(pc->line, sizeof(int) * (size_t)cap);
    if (l)
      pc->line = l;
    int *n = l ? realloc(pc->node, sizeof(int) * (size_t)cap) : NULL;
    if (n)
      pc->node = n;
    if (!l || !n)
      return; /* unplaced: those lines go to the first backend that claims them after fusion */
    pc->cap = cap;
  }
  pc->line[pc->nrec] = line;
  pc->node[pc->nrec++] = node;
  if (node + 1 > pc->nnodes)
    pc->nnodes = node + 1;
}

/* Moves a copy of t into list l under name. */
static void
add_copy(coil_tensor_list *l, const char *name, const coil_tensor *t)
{
  coil_tensor c;
  if (coil_tensor_init(&c, t->dtype, t->rank, t->shape, NULL))
    abort();
  memcpy(c.data, t->data, coil_tensor_nbytes(t));
  coil_tensor_list_add(l, name, &c);
}

int
coil_backend_run_split(const coil_graph *g, const char *backends, const coil_backend_env *env,
                       const coil_tensor_list *inputs, coil_tensor_list *outputs, char **plan,
                       coil_diag *d)
{
  if (outputs)
    memset(outputs, 0, sizeof *outputs);
  if (plan)
    *plan = NULL;
  split_backend b[COIL_BACKEND_MAX_LIST];
  const char *names[COIL_BACKEND_MAX_LIST];
  int nb = 0, rc = -1;
  for (const char *s = backends; *s;) {
    size_t len = strcspn(s, ",");
    while (len && s[len - 1] == ' ')
      len--;
    if (nb == COIL_BACKEND_MAX_LIST || len == 0 || len >= sizeof b[0].name)
      return coil_diag_set(d, "backend list '%s': expected 1 to %d names separated by commas", backends,
                           COIL_BACKEND_MAX_LIST);
    memset(&b[nb], 0, sizeof b[nb]);
    memcpy(b[nb].name, s, len);
    b[nb].name[len] = 0;
    names[nb] = b[nb].name;
    if (strcmp(b[nb].name, "ref") == 0)
      return coil_diag_set(d, "backend list '%s': ref runs whole graphs only; name plugins", backends);
    nb++;
    s += strcspn(s, ",");
    s += *s == ',';
    while (*s == ' ')
      s++;
  }
  coil_backend_stats none = {0}, *stats = env && env->stats ? env->stats : &none;
  coil_wir_program *p = NULL;
  coil_partition pt = {0};
  coil_tensor_list values = {0}; /* what parts made, by buffer name */
  const char *const *dirs = env ? (const char *const *)env->dirs.dirs : NULL;
  coil_library_claim claims[COIL_BACKEND_MAX_CLAIMS], merged[COIL_BACKEND_MAX_CLAIMS];
  int nmerged = 0;
  bool matmul_generated = false;
  for (int k = 0; k < nb; k++) {
    b[k].opts = (coil_plugin_options){.struct_size = sizeof b[k].opts};
    for (int j = 0; env && j < env->nbackends; j++)
      if (strcmp(env->backends[j].name, b[k].name) == 0) {
        b[k].opts.count = (size_t)env->backends[j].noptions;
        b[k].opts.keys = env->backends[j].option_keys;
        b[k].opts.values = env->backends[j].option_values;
      }
    if (coil_plugin_open(b[k].name, dirs, env ? env->dirs.n : 0, &b[k].lp, d))
      goto done;
    coil_plugin_set_log(b[k].lp, coil_backend_log_stderr, NULL);
    if (coil_plugin_create(b[k].lp, &b[k].opts, &b[k].inst, d))
      goto done;
    /* a library op any backend claims stays a library call (that backend will run it) */
    coil_compile_options one = {0};
    coil_backend_compile_options(b[k].lp, b[k].inst, env ? env->convolution : NULL, env ? env->attention : NULL,
                                 env ? env->matmul : NULL, claims, &one);
    matmul_generated |= one.matmul_generated; /* products no backend claims: the loop nest */
    for (int c = 0; c < one.nlibrary; c++) {
      int m = 0;
      while (m < nmerged && strcmp(merged[m].op, claims[c].op) != 0)
        m++;
      if (m == nmerged)
        merged[nmerged++] = (coil_library_claim){.op = claims[c].op};
      merged[m].dtypes |= claims[c].dtypes;
    }
  }
  /* Placement: a first compile without fusion gives each lowered node its own kernel (or
   * library call); each goes to the first backend that claims it. The real compile then fuses
   * only nodes of one placement, so each backend gets the kernels it can run. */
  placing pc = {0};
  coil_compile_options first = {.fuse = false, .verify = true, .library = merged, .nlibrary = nmerged,
                                .work_line = record_line, .work_user = &pc,
                                .decompose_k = coil_backend_decompose_k(env ? env->decompose_k : NULL),
                                .matmul_generated = matmul_generated};
  coil_wir_program *p0 = coil_compile_graph(g, &first, d);
  if (!p0)
    goto done;
  pc.placement = coil_xmalloc(sizeof(int) * ((size_t)pc.nnodes + 1));
  for (int n = 0; n < pc.nnodes; n++)
    pc.placement[n] = -1;
  for (int i = 0; i < pc.nrec; i++) {
    char why[256];
    for (int k = 0; k < nb && pc.placement[pc.node[i]] < 0; k++)
      if (claim_split(b, k, p0, &p0->lines[pc.line[i]], why, sizeof why))
        pc.placement[pc.node[i]] = k;
  }
  coil_wir_free(p0);
  coil_compile_options copts = {.fuse = true, .verify = true, .dump_dir = env ? env->dump_dir : NULL,
                                .library = merged, .nlibrary = nmerged, .placement = pc.placement,
                                .nplacement = pc.nnodes, .decompose_k = first.decompose_k,
                                .matmul_generated = matmul_generated};
  p = coil_compile_graph(g, &copts, d);
  free(pc.line), free(pc.node), free(pc.placement);
  if (!p || coil_partition_plan(p, nb, names, claim_split, b, &pt, d))
    goto done;
  if (plan)
    *plan = coil_xstrdup(pt.plan);
  if (env && env->dump_dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/partition.txt", env->dump_dir);
    FILE *f = fopen(path, "w");
    if (f) {
      fputs(pt.plan, f);
      fclose(f);
    }
  }
  if (!outputs) { /* the plan only */
    rc = 0;
    goto done;
  }
  for (int s = 0; s < pt.nparts; s++) {
    const coil_part *x = &pt.parts[s];
    coil_tensor_list in = {0}, out = {0};
    for (int i = 0; i < x->ninputs; i++) {
      const char *v = x->input_values[i];
      const coil_tensor *t = strncmp(v, "input ", 6) == 0 ? coil_tensor_list_find(inputs, v + 6)
                                                            : coil_tensor_list_find(&values, v);
      if (!t) {
        coil_diag_set(d, "part %d on %s: no value for its input %s", s, names[x->backend], v);
        coil_tensor_list_free(&in);
        goto done;
      }
      add_copy(&in, x->program->inputs[i].label, t);
    }
    const split_backend *sb = &b[x->backend];
    coil_diag why = {{0}};
    int prc = run_program(sb->lp, sb->inst, x->program, &sb->opts, env, stats, &in, &out, &why);
    coil_tensor_list_free(&in);
    if (prc) {
      coil_diag_set(d, "part %d of %s on %s: %s", s, p->name, names[x->backend], why.msg);
      coil_tensor_list_free(&out);
      goto done;
    }
    for (int i = 0; i < x->noutputs && i < out.n; i++)
      add_copy(&values, x->output_values[i], &out.tensors[i]);
    coil_tensor_list_free(&out);
  }
  for (int i = 0; i < pt.noutputs; i++) {
    const char *v = pt.output_values[i];
    const coil_tensor *t = strncmp(v, "input ", 6) == 0 ? coil_tensor_list_find(inputs, v + 6)
                                                          : coil_tensor_list_find(&values, v);
    if (!t) {
      coil_diag_set(d, "%s: no part made output %d (%s)", p->name, i, v);
      goto done;
    }
    char name[32];
    snprintf(name, sizeof name, "out%d", i);
    add_copy(outputs, name, t);
  }
  rc = 0;
done:
  if (rc && outputs)
    coil_tensor_list_free(outputs);
  coil_tensor_list_free(&values);
  coil_partition_free(&pt);
  coil_wir_free(p);
  for (int k = 0; k < nb; k++) {
    if (b[k].inst)
      coil_plugin_destroy(b[k].lp, b[k].inst);
    coil_plugin_close(b[k].lp);
  }
  return rc;
}
