/* embed.c — coil as a library (coil/embed.h): sessions hold a configuration and the plugins
 * opened for it, models a loaded artifact with its program, bindings one call's sizes.
 *
 * A session opens each backend's plugin once and creates one instance with the options of its
 * ini section; models share it. The plugin ABI serializes every call on an instance but compile
 * (create, load, destroy: under the session's lock) and every call on one artifact (run: under
 * the model's lock). A model compiled without a cache keeps its temporary artifact directory
 * until it is freed. */
#define _GNU_SOURCE /* dladdr */
#include "coil/embed.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "artifact.h"
#include "artifact_trust.h"
#include "backend.h"
#include "cache.h"
#include "config.h"
#include "graph.h"
#include "ops.h"

/* ---- dtypes ---- */

int
coil_embed_api_version(void)
{
  return COIL_EMBED_API_VERSION;
}

coil_dldtype
coil_dtype_to_dl(coil_dtype t)
{
  uint8_t bits = (uint8_t)(8 * coil_dtype_size(t));
  switch (t) {
  case COIL_BOOL: return (coil_dldtype){6, 8, 1};
  case COIL_BF16: return (coil_dldtype){4, 16, 1};
  case COIL_U8: return (coil_dldtype){1, 8, 1};
  case COIL_F16: case COIL_F32: case COIL_F64: return (coil_dldtype){2, bits, 1};
  default: return (coil_dldtype){0, bits, 1};
  }
}

int
coil_dtype_from_dl(coil_dldtype t)
{
  if (t.lanes != 1)
    return -1;
  for (int d = 0; d < COIL_DTYPE_COUNT; d++) {
    coil_dldtype c = coil_dtype_to_dl((coil_dtype)d);
    if (c.code == t.code && c.bits == t.bits)
      return d;
  }
  return -1;
}

static int
fail(coil_diag *d, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int
fail(coil_diag *d, int code, const char *fmt, ...)
{
  if (d && !d->msg[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    va_end(ap);
  }
  return -code;
}

static void
clear(coil_diag *d)
{
  if (d)
    d->msg[0] = 0;
}

/* ---- sessions ---- */

typedef struct plugin_slot {
  char *name;
  coil_loaded_plugin *lp;
  coil_plugin *inst;
  const char **keys, **values; /* its options: [plugin.NAME] less library, then coil.* */
  int noptions;
  int models;                  /* models using it */
} plugin_slot;

struct coil_session {
  coil_config *config;
  coil_plugin_dirs dirs;
  const char *cache_dir;       /* NULL: none (unset, "", or not usable: noted on stderr) */
  coil_cache_remote remote;    /* [cache] remote behind it (url "": none) */
  pthread_mutex_t lock;        /* slots, and the plugin calls the ABI serializes */
  int nslots;
  plugin_slot slots[16];
};

/* Where the plugins of this library are: beside it in plugins/ (the Python package), in
 * coil/plugins beside it (<prefix>/lib/libcoil.so), else the build tree's. */
static const char *
builtin_dir(char *buf, size_t n)
{
  Dl_info info;
  if (dladdr((void *)&coil_session_new, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
    const char *slash = strrchr(info.dli_fname, '/');
    int len = (int)(slash - info.dli_fname);
    static const char *const subs[] = {"plugins", "coil/plugins"};
    for (size_t i = 0; i < sizeof subs / sizeof *subs; i++) {
      snprintf(buf, n, "%.*s/%s", len, info.dli_fname, subs[i]);
      if (access(buf, R_OK) == 0)
        return buf;
    }
  }
#ifdef COIL_BUILD_PLUGIN_DIR
  return COIL_BUILD_PLUGIN_DIR;
#else
  return NULL;
#endif
}

int
coil_session_new(const coil_session_options *o, coil_session **out, coil_diag *d)
{
  clear(d);
  *out = NULL;
  coil_session_options none = {.struct_size = sizeof none, .use_env = 1};
  if (!o)
    o = &none;
  if (o->struct_size < COIL_STRUCT_SIZE_TO(coil_session_options, values))
    return fail(d, COIL_ERR_INVALID_ARGUMENT, "coil_session_new: options struct_size %zu is too small", o->struct_size);
  coil_session *s = calloc(1, sizeof *s);
  if (!s)
    return fail(d, COIL_ERR_OUT_OF_MEMORY, "coil_session_new: out of memory");
  s->config = coil_config_new();
  pthread_mutex_init(&s->lock, NULL);
  const char *file = o->config_file ? (*o->config_file ? o->config_file : NULL) : coil_config_file_default(NULL);
  if ((file && coil_config_load_file(s->config, file, d)) || (o->use_env && coil_config_apply_env(s->config, d)))
    goto bad;
  for (size_t i = 0; i < o->noptions; i++) {
    const char *k = o->keys[i], *v = o->values[i];
    if (!k || !v) {
      fail(d, COIL_ERR_INVALID_ARGUMENT, "coil_session_new: option %zu has no key or value", i);
      goto bad;
    }
    if (strncmp(k, "plugin.", 7) == 0) {
      const char *dot = strchr(k + 7, '.');
      if (!dot || dot == k + 7 || !dot[1]) {
        fail(d, COIL_ERR_INVALID_ARGUMENT, "option '%s': expected plugin.NAME.KEY", k);
        goto bad;
      }
      /* a one-line ini section, named for messages like a file */
      size_t n = strlen(k) + strlen(v) + 32;
      char *text = malloc(n);
      if (!text)
        abort();
      snprintf(text, n, "[plugin.%.*s]\n%s = %s\n", (int)(dot - (k + 7)), k + 7, dot + 1, v);
      int rc = strchr(v, '\n') ? fail(d, COIL_ERR_INVALID_ARGUMENT, "option '%s': a value has no newline", k)
                               : coil_config_load_string(s->config, "options", text, d);
      free(text);
      if (rc)
        goto bad;
    } else if (coil_config_set(s->config, k, v, d)) {
      goto bad;
    }
  }
  char buf[4096];
  coil_plugin_dirs_init(&s->dirs, coil_config_get(s->config, "plugin_path"), builtin_dir(buf, sizeof buf));
  const char *cache = coil_config_get(s->config, "cache_dir");
  if (cache && *cache) {
    coil_diag why = {{0}};
    if (coil_cache_prepare(cache, &why) == 0)
      s->cache_dir = cache;
    else
      fprintf(stderr, "coil: note: compiling without the cache: %s\n", why.msg);
  }
  coil_cache_remote_from_config(s->config, &s->remote);
  *out = s;
  return 0;
bad:
  coil_config_free(s->config);
  pthread_mutex_destroy(&s->lock);
  free(s);
  return -COIL_ERR_INVALID_ARGUMENT;
}

void
coil_session_free(coil_session *s)
{
  if (!s)
    return;
  for (int i = 0; i < s->nslots; i++) {
    plugin_slot *p = &s->slots[i];
    if (p->inst)
      coil_plugin_destroy(p->lp, p->inst);
    coil_plugin_close(p->lp);
    free(p->name);
    free(p->keys);
    free(p->values);
  }
  coil_plugin_dirs_free(&s->dirs);
  coil_config_free(s->config);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

const char *
coil_session_get(const coil_session *s, const char *key)
{
  return s && key ? coil_config_get(s->config, key) : NULL;
}

int
coil_op_known(const char *op)
{
  return op && coil_op_lookup(op) != NULL;
}

/* A plugin's warnings and errors go to stderr, as the command line tool's do. */
static void
log_warnings(void *user, const char *plugin, coil_log_level level, const char *message)
{
  (void)user;
  if (level >= COIL_LOG_WARN)
    fprintf(stderr, "coil: plugin '%s': %s: %s\n", plugin, level == COIL_LOG_WARN ? "warning" : "error", message);
}

/* The slot of plugin `name`, opened and instantiated on first use (*out). Call with s->lock
 * held. Returns 0 or a negated coil_error_code. */
static int
slot_get(coil_session *s, const char *name, plugin_slot **out, coil_diag *d)
{
  *out = NULL;
  for (int i = 0; i < s->nslots; i++)
    if (strcmp(s->slots[i].name, name) == 0) {
      *out = &s->slots[i];
      return 0;
    }
  if (strcmp(name, "ref") == 0)
    return fail(d, COIL_ERR_UNSUPPORTED, "backend 'ref' (the reference interpreter) cannot be embedded: choose a "
                                         "plugin that executes (cpu, cuda, interp)");
  if (strchr(name, ','))
    return fail(d, COIL_ERR_UNSUPPORTED, "backend '%s' is a list (partial offload), which coil run and coil "
                "compile split across plugins; a model of the embedding API runs on one plugin: choose one", name);
  if (s->nslots == (int)(sizeof s->slots / sizeof *s->slots))
    return fail(d, COIL_ERR_INVALID_ARGUMENT, "a session opens at most %d plugins", s->nslots);
  plugin_slot *p = &s->slots[s->nslots];
  memset(p, 0, sizeof *p);
  if (coil_plugin_open(name, (const char *const *)s->dirs.dirs, s->dirs.n, &p->lp, d))
    return -COIL_ERR_INVALID_ARGUMENT;
  coil_plugin_set_log(p->lp, log_warnings, NULL);
  const char *const *keys = NULL, *const *values = NULL;
  int n = coil_config_plugin_options(s->config, p->lp->api.name, &keys, &values, NULL);
  p->keys = calloc((size_t)n + COIL_CONFIG_GENERAL + 1, sizeof *p->keys);
  p->values = calloc((size_t)n + COIL_CONFIG_GENERAL + 1, sizeof *p->values);
  if (!p->keys || !p->values)
    abort();
  for (int i = 0; i < n; i++)
    if (strcmp(keys[i], "library") != 0) { /* the host's key: where the plugin is */
      p->keys[p->noptions] = keys[i];
      p->values[p->noptions++] = values[i];
    }
  p->noptions += coil_config_general_options(s->config, p->keys + p->noptions, p->values + p->noptions);
  coil_plugin_options opts = {.struct_size = sizeof opts, .count = (size_t)p->noptions, .keys = p->keys, .values = p->values};
  int rc = coil_plugin_create(p->lp, &opts, &p->inst, d);
  if (rc) {
    coil_plugin_close(p->lp);
    free(p->keys);
    free(p->values);
    return rc < 0 ? rc : -COIL_ERR_INVALID_ARGUMENT;
  }
  p->name = coil_xstrdup(name);
  s->nslots++;
  *out = p;
  return 0;
}

static coil_plugin_options
slot_options(const plugin_slot *p)
{
  return (coil_plugin_options){.struct_size = sizeof(coil_plugin_options), .count = (size_t)p->noptions,
                               .keys = p->keys, .values = p->values};
}

/* ---- models ---- */

struct coil_model {
  coil_session *s;
  plugin_slot *slot;
  coil_artifact *art;
  coil_wir_program *own;       /* compiled here (NULL when loaded: stored->program) */
  const coil_wir_program *p;
  coil_stored_artifact *stored;/* loaded from a directory: its embedded weights */
  char *dir;                   /* a temporary artifact directory to remove at free, or NULL */
  int entry_fd;                /* a cache entry's directory as checked, or -1 */
  const coil_line *ol;         /* the output line */
  int ncaller;                 /* inputs the caller passes ... */
  int *caller_input;           /* ... as program input indices */
  const coil_tensor **embedded;/* per program input: the embedded weight, or NULL */
  pthread_mutex_t lock;        /* one run of the artifact at a time */
};

/* The parts every model has once its artifact is loaded. */
static int
model_finish(coil_model *m, coil_diag *d)
{
  m->ol = coil_program_output_line(m->p);
  if (!m->ol)
    return fail(d, COIL_ERR_INVALID_ARGUMENT, "program %s has no output line", m->p->name ? m->p->name : "?");
  int n = m->p->ninputs;
  m->caller_input = calloc((size_t)n + 1, sizeof *m->caller_input);
  m->embedded = calloc((size_t)n + 1, sizeof *m->embedded);
  if (!m->caller_input || !m->embedded)
    abort();
  for (int i = 0; i < n; i++) {
    const coil_tensor *w = m->stored && m->p->inputs[i].is_param
                               ? coil_tensor_list_find(&m->stored->weights, m->p->inputs[i].label)
                               : NULL;
    m->embedded[i] = w;
    if (!w)
      m->caller_input[m->ncaller++] = i;
  }
  pthread_mutex_init(&m->lock, NULL);
  return 0;
}

void
coil_model_free(coil_model *m)
{
  if (!m)
    return;
  if (m->art)
    coil_plugin_artifact_free(m->slot->lp, m->art);
  if (m->slot) {
    pthread_mutex_lock(&m->s->lock);
    m->slot->models--;
    pthread_mutex_unlock(&m->s->lock);
  }
  if (m->entry_fd >= 0)
    close(m->entry_fd);
  if (m->dir)
    coil_artifact_remove(m->dir);
  free(m->dir);
  coil_wir_free(m->own);
  coil_artifact_close(m->stored);
  free(m->caller_input);
  free(m->embedded);
  if (m->ol)
    pthread_mutex_destroy(&m->lock);
  free(m);
}

/* The plugin's error code from a runtime.c helper's return (-code), or fallback. */
static int
code_of(int rc, int fallback)
{
  return rc < 0 && rc >= -COIL_ERR_IO ? rc : -fallback;
}

/* The end of making a model: finished and handed out when rc is 0, else freed. */
static int
model_done(coil_model *m, int rc, coil_model **out, coil_diag *d)
{
  if (rc == 0)
    rc = model_finish(m, d);
  if (rc) {
    coil_model_free(m);
    return code_of(rc, COIL_ERR_INVALID_ARGUMENT);
  }
  *out = m;
  return 0;
}

/* Parses and compiles text for the session's backend: the plugin's slot and the program. */
static int
compile_program(coil_session *s, const char *file, const char *text, size_t len, plugin_slot **slot,
                coil_graph **graph, coil_wir_program **out, coil_diag *d)
{
  *out = NULL;
  *graph = NULL;
  if (!text)
    return fail(d, COIL_ERR_INVALID_ARGUMENT, "%s: no graph text", file ? file : "(graph)");
  coil_graph *g = coil_graph_parse(file ? file : "(graph)", text, len, d);
  if (!g)
    return -COIL_ERR_INVALID_ARGUMENT;
  pthread_mutex_lock(&s->lock);
  plugin_slot *p;
  int rc = slot_get(s, coil_config_get(s->config, "backend"), &p, d);
  coil_library_claim claims[COIL_BACKEND_MAX_CLAIMS];
  coil_compile_options copts = {.fuse = true, .verify = true};
  const char *dump = coil_config_get(s->config, "debug_dump");
  copts.dump_dir = dump && *dump ? dump : NULL;
  if (p) {
    coil_backend_compile_options(p->lp, p->inst, coil_config_get(s->config, "convolution"),
                                 coil_config_get(s->config, "attention"), coil_config_get(s->config, "matmul"),
                                 claims, &copts);
    copts.decompose_k = coil_backend_decompose_k(coil_config_get(s->config, "decompose_k"));
    p->models++; /* held from here: the caller releases it on error */
  }
  pthread_mutex_unlock(&s->lock);
  if (!p) {
    coil_graph_free(g);
    return rc;
  }
  *slot = p;
  if (!(*out = coil_compile_graph(g, &copts, d))) {
    coil_graph_free(g);
    return -COIL_ERR_UNSUPPORTED; /* it parsed and type-checked: coil cannot lower it */
  }
  *graph = g;
  return 0;
}

static void
slot_release(coil_session *s, plugin_slot *p)
{
  pthread_mutex_lock(&s->lock);
  p->models--;
  pthread_mutex_unlock(&s->lock);
}


int
coil_model_compile(coil_session *s, const char *file, const char *text, size_t len, coil_model **out,
                   coil_diag *d)
{
  clear(d);
  *out = NULL;
  coil_model *m = calloc(1, sizeof *m);
  if (!m)
    return fail(d, COIL_ERR_OUT_OF_MEMORY, "out of memory");
  m->s = s;
  m->entry_fd = -1;
  coil_graph *g = NULL;
  int rc = compile_program(s, file, text, len, &m->slot, &g, &m->own, d);
  coil_graph_free(g);
  if (rc) {
    if (m->slot)
      slot_release(s, m->slot);
    free(m);
    return rc;
  }
  m->p = m->own;
  plugin_slot *p = m->slot;
  coil_plugin_options opts = slot_options(p);
  char load_path[4096];
  if (s->cache_dir) {
    coil_cache_where w = {.dir = s->cache_dir, .remote = &s->remote};
    rc = coil_cache_fetch(&w, p->lp->api.identity ? p->lp->api.identity(p->inst) : "", p->lp, p->inst, m->p,
                        &opts, &m->dir, &m->entry_fd, NULL, d);
    if (rc == 0)
      coil_fd_path(m->entry_fd, m->dir, load_path, sizeof load_path);
    free(m->dir); /* the cache keeps it */
    m->dir = NULL;
  } else {
    const char *tmp = getenv("TMPDIR");
    size_t n = strlen(tmp && *tmp ? tmp : "/tmp") + strlen(p->lp->api.name) + 32;
    m->dir = coil_xmalloc(n);
    snprintf(m->dir, n, "%s/coil-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", p->lp->api.name);
    if (!mkdtemp(m->dir)) {
      fail(d, COIL_ERR_IO, "%s: cannot create an artifact directory: %s", m->dir, strerror(errno));
      free(m->dir);
      m->dir = NULL;
      rc = -COIL_ERR_IO;
    } else {
      rc = coil_plugin_compile(p->lp, p->inst, m->p, m->dir, &opts, d);
      snprintf(load_path, sizeof load_path, "%s", m->dir);
    }
  }
  if (rc == 0) {
    pthread_mutex_lock(&s->lock);
    rc = coil_plugin_load(p->lp, p->inst, load_path, &opts, &m->art, d);
    pthread_mutex_unlock(&s->lock);
  }
  return model_done(m, rc, out, d);
}

int
coil_artifact_compile(coil_session *s, const char *file, const char *text, size_t len, const char *weights,
                      const char *dir, coil_diag *d)
{
  clear(d);
  if (!dir)
    return fail(d, COIL_ERR_INVALID_ARGUMENT, "coil_artifact_compile: no directory");
  plugin_slot *p = NULL;
  coil_graph *g = NULL;
  coil_wir_program *prog = NULL;
  int rc = compile_program(s, file, text, len, &p, &g, &prog, d);
  if (rc) {
    if (p)
      slot_release(s, p);
    return rc;
  }
  const char **names = calloc((size_t)g->noutputs + 1, sizeof *names);
  if (!names)
    abort();
  for (int i = 0; i < g->noutputs; i++)
    names[i] = g->outputs[i]->name;
  coil_artifact_write_opts o = {.graph_name = g->name, .noutput_names = g->noutputs, .output_names = names,
                                .embed_weights = weights, .replace = true};
  coil_plugin_options opts = slot_options(p);
  rc = coil_artifact_write(p->lp, p->inst, prog, &opts, &o, dir, d) < 0 ? -COIL_ERR_IO : 0;
  free(names);
  coil_graph_free(g);
  coil_wir_free(prog);
  slot_release(s, p);
  return rc;
}

int
coil_model_load(coil_session *s, const char *dir, coil_model **out, coil_diag *d)
{
  clear(d);
  *out = NULL;
  coil_model *m = calloc(1, sizeof *m);
  if (!m)
    return fail(d, COIL_ERR_OUT_OF_MEMORY, "out of memory");
  m->s = s;
  m->entry_fd = -1;
  if (!dir || coil_artifact_open(dir, &m->stored, d)) {
    if (!dir)
      fail(d, COIL_ERR_INVALID_ARGUMENT, "coil_model_load: no directory");
    free(m);
    return -COIL_ERR_INVALID_ARGUMENT;
  }
  m->p = m->stored->program;
  int rc = -COIL_ERR_INVALID_ARGUMENT;
  pthread_mutex_lock(&s->lock);
  coil_diag why = {{0}};
  plugin_slot *p;
  slot_get(s, m->stored->plugin, &p, &why);
  if (!p) {
    fail(d, COIL_ERR_UNSUPPORTED, "%s: artifact was compiled by %s %s, which cannot be opened now: %s", dir,
         m->stored->plugin, m->stored->plugin_version, why.msg);
    rc = -COIL_ERR_UNSUPPORTED;
  } else if (strcmp(p->lp->api.version, m->stored->plugin_version) != 0) {
    fail(d, COIL_ERR_VERSION, "%s: artifact was compiled by %s %s; the plugin found is %s %s (%s): recompile", dir,
         m->stored->plugin, m->stored->plugin_version, p->lp->api.name, p->lp->api.version, p->lp->path);
    rc = -COIL_ERR_VERSION;
  } else {
    m->slot = p;
    p->models++;
    coil_plugin_options opts = slot_options(p);
    rc = coil_plugin_load(p->lp, p->inst, m->stored->load_path, &opts, &m->art, d);
  }
  pthread_mutex_unlock(&s->lock);
  return model_done(m, rc, out, d);
}

int
coil_model_ninputs(const coil_model *m)
{
  return m->ncaller;
}

int
coil_model_noutputs(const coil_model *m)
{
  return m->ol->nargs;
}

static const coil_buffer *
input_buffer(const coil_model *m, int i)
{
  return i >= 0 && i < m->ncaller ? &m->p->buffers[m->p->inputs[m->caller_input[i]].buffer] : NULL;
}

const char *
coil_model_input_name(const coil_model *m, int i)
{
  return input_buffer(m, i) ? m->p->inputs[m->caller_input[i]].label : NULL;
}

int
coil_model_input_dtype(const coil_model *m, int i)
{
  const coil_buffer *b = input_buffer(m, i);
  return b ? (int)b->dtype : -1;
}

int
coil_model_input_rank(const coil_model *m, int i)
{
  const coil_buffer *b = input_buffer(m, i);
  return b ? b->rank : -1;
}

const char *
coil_model_backend(const coil_model *m)
{
  return m->slot->lp->api.name;
}

/* Whether the plugin runs on a device of its own whose memory the host cannot touch (ABI 1.4
 * devices, device 0 not host-visible), with that device's description. */
static bool
model_device(const coil_model *m, coil_device_info *info)
{
  coil_diag d = {{0}};
  return coil_plugin_device_count(m->slot->lp, m->slot->inst) > 0 &&
         coil_plugin_device_info(m->slot->lp, m->slot->inst, 0, info, &d) == 0 &&
         !(info->flags & COIL_DEVICE_HOST_VISIBLE);
}

int
coil_model_device_type(const coil_model *m)
{
  coil_device_info info;
  if (coil_plugin_has_devices(m->slot->lp)) /* ABI 1.4: the plugin says */
    return model_device(m, &info) ? info.device_type : COIL_DEVICE_CPU;
  /* an older plugin that runs on a device: cuda's runs on CUDA memory */
  return strcmp(m->slot->lp->api.name, "cuda") == 0 ? COIL_DEVICE_CUDA : COIL_DEVICE_CPU;
}

/* ---- bindings ---- */

struct coil_binding {
  coil_model *m;
  int nin, nout;                /* the program's inputs (embedded ones included), outputs */
  coil_plugin_tensor *t;        /* nin inputs then nout outputs; data NULL but embedded */
  int64_t (*sizes)[COIL_MAX_RANK], (*strides)[COIL_MAX_RANK];
  int64_t *vals;                /* the size symbols' values */
  int nvars;
  coil_dldevice device;
};

void
coil_binding_free(coil_binding *b)
{
  if (!b)
    return;
  free(b->t);
  free(b->sizes);
  free(b->strides);
  free(b->vals);
  free(b);
}

static void
print_sizes(coil_strbuf *sb, int rank, const int64_t *v)
{
  for (int k = 0; k < rank; k++)
    coil_strbuf_printf(sb, "%s%lld", k ? ", " : "", (long long)v[k]);
}

/* Checks input i (program index) against its buffer under the bound symbols. */
static int
check_input(const coil_binding *b, int i, coil_diag *d)
{
  const coil_wir_program *p = b->m->p;
  const coil_buffer *buf = &p->buffers[p->inputs[i].buffer];
  const coil_plugin_tensor *t = &b->t[i];
  const char *what = p->inputs[i].is_param ? "parameter" : "input";
  int nv = coil_sym_nvars(p->sym);
  for (int k = 0; k < buf->rank; k++) {
    int64_t size, stride;
    if (coil_sym_eval(p->sym, buf->sizes[k], b->vals, nv, &size, d) ||
        coil_sym_eval(p->sym, buf->strides[k], b->vals, nv, &stride, d))
      return -COIL_ERR_INVALID_ARGUMENT;
    if (size != t->sizes[k]) {
      coil_strbuf want = {0}, got = {0};
      for (int j = 0; j < buf->rank; j++) {
        coil_strbuf_puts(&want, j ? ", " : "");
        coil_sym_print(p->sym, buf->sizes[j], COIL_SYM_PY_SYNTAX, &want);
      }
      print_sizes(&got, t->rank, t->sizes);
      fail(d, COIL_ERR_INVALID_ARGUMENT, "%s %%%s: expected sizes [%s], got [%s]", what, p->inputs[i].label,
           want.s ? want.s : "", got.s ? got.s : "");
      coil_strbuf_free(&want);
      coil_strbuf_free(&got);
      return -COIL_ERR_INVALID_ARGUMENT;
    }
    if (size > 1 && stride != t->strides[k]) {
      coil_strbuf got = {0};
      print_sizes(&got, t->rank, t->strides);
      fail(d, COIL_ERR_INVALID_ARGUMENT, "%s %%%s: strides [%s] are not the layout the program reads (dense "
           "row-major): make it contiguous", what, p->inputs[i].label, got.s ? got.s : "");
      coil_strbuf_free(&got);
      return -COIL_ERR_INVALID_ARGUMENT;
    }
  }
  return 0;
}

int
coil_model_bind(coil_model *m, int ninputs, const coil_dltensor *inputs, coil_binding **out, coil_diag *d)
{
  clear(d);
  *out = NULL;
  const coil_wir_program *p = m->p;
  if (ninputs != m->ncaller)
    return fail(d, COIL_ERR_INVALID_ARGUMENT, "%s: %d inputs given, the graph takes %d", p->name, ninputs, m->ncaller);
  if (ninputs > 0 && !inputs)
    return fail(d, COIL_ERR_INVALID_ARGUMENT, "%s: no input descriptors", p->name);
  coil_binding *b = calloc(1, sizeof *b);
  if (!b)
    return fail(d, COIL_ERR_OUT_OF_MEMORY, "out of memory");
  b->m = m;
  b->nin = p->ninputs;
  b->nout = m->ol->nargs;
  int n = b->nin + b->nout;
  b->nvars = coil_sym_nvars(p->sym);
  b->t = calloc((size_t)n + 1, sizeof *b->t);
  b->sizes = calloc((size_t)n + 1, sizeof *b->sizes);
  b->strides = calloc((size_t)n + 1, sizeof *b->strides);
  b->vals = calloc((size_t)b->nvars + 1, sizeof *b->vals);
  if (!b->t || !b->sizes || !b->strides || !b->vals)
    abort();
  int rc = 0;
  bool device_set = false;
  /* every input's descriptor, in program order */
  for (int i = 0, c = 0; i < b->nin && !rc; i++) {
    const coil_buffer *buf = &p->buffers[p->inputs[i].buffer];
    coil_plugin_tensor *t = &b->t[i];
    *t = (coil_plugin_tensor){.struct_size = sizeof *t, .dtype = (int32_t)buf->dtype, .rank = buf->rank,
                              .sizes = b->sizes[i], .strides = b->strides[i], .device_type = COIL_DEVICE_CPU};
    if (m->embedded[i]) {
      const coil_tensor *w = m->embedded[i];
      coil_plugin_tensor_wrap(w, b->strides[i], t);
      memcpy(b->sizes[i], w->shape, sizeof w->shape);
      t->sizes = b->sizes[i];
      continue;
    }
    const coil_dltensor *x = &inputs[c++];
    const char *what = p->inputs[i].is_param ? "parameter" : "input";
    int dt = coil_dtype_from_dl(x->dtype);
    if (dt != (int)buf->dtype || x->ndim != buf->rank) {
      rc = fail(d, COIL_ERR_INVALID_ARGUMENT, "%s %%%s (argument %d): expected %s with %d dimensions, got %s with %d",
                what, p->inputs[i].label, c - 1, coil_dtype_name(buf->dtype), buf->rank,
                dt < 0 ? "a dtype coil does not have" : coil_dtype_name((coil_dtype)dt), x->ndim);
      break;
    }
    if (x->device.device_type != COIL_DEVICE_CPU && x->device.device_type != coil_model_device_type(m)) {
      rc = fail(d, COIL_ERR_UNSUPPORTED, "%s %%%s: on device type %d; backend %s runs on the host%s", what,
                p->inputs[i].label, x->device.device_type, coil_model_backend(m),
                coil_model_device_type(m) == COIL_DEVICE_CPU ? " only" : " and its device (type shown by "
                "coil_model_device_type)");
      break;
    }
    if (x->device.device_type != COIL_DEVICE_CPU && x->device.device_id != 0) {
      /* a model runs on its plugin's device 0 */
      rc = fail(d, COIL_ERR_UNSUPPORTED, "%s %%%s: on device %d; backend %s runs on device 0 only", what,
                p->inputs[i].label, x->device.device_id, coil_model_backend(m));
      break;
    }
    if (!device_set || x->device.device_type != COIL_DEVICE_CPU)
      b->device = x->device;
    device_set = true;
    if (x->ndim > 0 && !x->shape) {
      rc = fail(d, COIL_ERR_INVALID_ARGUMENT, "%s %%%s: no shape", what, p->inputs[i].label);
      break;
    }
    int64_t dense = 1;
    for (int k = x->ndim - 1; k >= 0; k--) {
      if (x->shape[k] < 0 || (x->strides && x->strides[k] < 0)) {
        rc = fail(d, COIL_ERR_INVALID_ARGUMENT, "%s %%%s: a negative size or stride", what, p->inputs[i].label);
        break;
      }
      b->sizes[i][k] = x->shape[k];
      b->strides[i][k] = x->strides ? x->strides[k] : dense;
      dense *= x->shape[k];
    }
    t->device_type = x->device.device_type;
    t->device_index = x->device.device_id;
  }
  if (!device_set)
    b->device = (coil_dldevice){COIL_DEVICE_CPU, 0};
  /* the size symbols, from the symbol lines */
  for (int l = 0; l < p->nlines && !rc; l++) {
    const coil_line *ln = &p->lines[l];
    if (ln->kind != COIL_LINE_SYMBOL)
      continue;
    int k = 0;
    while (k < b->nin && p->inputs[k].buffer != ln->buffer)
      k++;
    if (k == b->nin || ln->dim >= b->t[k].rank)
      rc = fail(d, COIL_ERR_INVALID_ARGUMENT, "input %s does not have dimension %d", p->buffers[ln->buffer].name, ln->dim);
    else
      b->vals[ln->sym->var] = ln->is_stride ? b->t[k].strides[ln->dim] : b->t[k].sizes[ln->dim];
  }
  for (int i = 0; i < b->nin && !rc; i++)
    rc = check_input(b, i, d);
  /* the outputs: dense row-major at the sizes the program gives them */
  for (int o = 0; o < b->nout && !rc; o++) {
    const coil_buffer *buf = &p->buffers[m->ol->args[o]];
    int j = b->nin + o;
    for (int k = 0; k < buf->rank && !rc; k++)
      if (coil_sym_eval(p->sym, buf->sizes[k], b->vals, b->nvars, &b->sizes[j][k], d))
        rc = -COIL_ERR_INVALID_ARGUMENT;
    int64_t s = 1;
    for (int k = buf->rank - 1; k >= 0; k--) {
      b->strides[j][k] = s;
      s *= b->sizes[j][k];
    }
    b->t[j] = (coil_plugin_tensor){.struct_size = sizeof b->t[j], .dtype = (int32_t)buf->dtype, .rank = buf->rank,
                                   .sizes = b->sizes[j], .strides = b->strides[j],
                                   .device_type = b->device.device_type, .device_index = b->device.device_id};
  }
  if (rc) {
    coil_binding_free(b);
    return rc;
  }
  *out = b;
  return 0;
}

int
coil_binding_output(const coil_binding *b, int i, coil_dltensor *t)
{
  if (!b || i < 0 || i >= b->nout || !t)
    return -1;
  const coil_plugin_tensor *x = &b->t[b->nin + i];
  *t = (coil_dltensor){.data = NULL, .device = b->device, .ndim = x->rank,
                       .dtype = coil_dtype_to_dl((coil_dtype)x->dtype), .shape = (int64_t *)x->sizes,
                       .strides = (int64_t *)x->strides, .byte_offset = 0};
  return 0;
}

int64_t
coil_binding_symbol(const coil_binding *b, const char *name)
{
  if (!b || !name)
    return -1;
  const coil_wir_program *p = b->m->p;
  for (int v = 0; v < b->nvars; v++) {
    const char *vn = coil_sym_var_name(p->sym, v);
    if (vn && strcmp(vn, name) == 0)
      return b->vals[v];
  }
  return -1;
}

/* Bytes a tensor's layout reaches from its first element (0: no elements). */
static size_t
reach_bytes(const coil_plugin_tensor *t)
{
  size_t n = 1;
  for (int k = 0; k < t->rank; k++) {
    if (t->sizes[k] <= 0)
      return 0;
    n += (size_t)(t->sizes[k] - 1) * (size_t)t->strides[k];
  }
  return n * coil_dtype_size((coil_dtype)t->dtype);
}

/* A run on a device the host cannot touch (ABI 1.4) with tensors in host memory (the caller's
 * CPU tensors, embedded weights): each is copied into device memory of the plugin's (inputs
 * filled), and *staged[i] is that memory, freed by stage_out. The run is then synchronous. */
static int
stage_in(coil_model *m, const coil_device_info *info, coil_plugin_tensor *t, int n, int nin,
         const coil_run_options *ro, void ***staged, coil_diag *d)
{
  const coil_loaded_plugin *lp = m->slot->lp;
  bool any = false;
  for (int i = 0; i < n; i++)
    any |= t[i].device_type == COIL_DEVICE_CPU;
  if (!any)
    return 0;
  if (ro && ro->has_stream)
    return fail(d, COIL_ERR_INVALID_ARGUMENT, "%s: a run on a stream needs its tensors on the device of "
                "backend %s already; host tensors are copied, and such a run is synchronous", m->p->name,
                coil_model_backend(m));
  void **mem = calloc((size_t)n + 1, sizeof *mem);
  if (!mem)
    abort();
  *staged = mem;
  for (int i = 0; i < n; i++) {
    if (t[i].device_type != COIL_DEVICE_CPU)
      continue;
    size_t bytes = reach_bytes(&t[i]);
    if (bytes) {
      int rc = coil_plugin_mem_alloc(lp, m->slot->inst, 0, bytes, &mem[i], d);
      if (!rc && i < nin)
        rc = coil_plugin_mem_copy(lp, m->slot->inst, COIL_COPY_HOST_TO_DEVICE, 0, mem[i], t[i].data,
                                  bytes, NULL, d);
      if (rc)
        return rc;
    }
    t[i].data = mem[i];
    t[i].device_type = info->device_type;
    t[i].device_index = info->device_index;
  }
  return 0;
}

/* After a staged run (rc: its result): the outputs that were host memory get their values, and
 * the device memory is freed. data: the caller's pointers, as coil_binding_run takes them. */
static int
stage_out(coil_model *m, coil_plugin_tensor *t, int n, int nin, void *const *data, void **staged, int rc,
          coil_diag *d)
{
  for (int i = nin; i < n && !rc; i++) {
    int c = i; /* the caller's index: its inputs skip the embedded ones */
    for (int k = 0; k < nin; k++)
      c -= m->embedded[k] != NULL;
    if (staged[i] && data)
      rc = coil_plugin_mem_copy(m->slot->lp, m->slot->inst, COIL_COPY_DEVICE_TO_HOST, 0, data[c], staged[i],
                                reach_bytes(&t[i]), NULL, d);
  }
  for (int i = 0; i < n; i++)
    coil_plugin_mem_free(m->slot->lp, m->slot->inst, 0, staged[i]);
  free(staged);
  return rc;
}

/* Up to this many tensors a run's descriptors live on the stack. */
#define RUN_STACK 64

int
coil_binding_run(const coil_binding *b, void *const *data, const coil_run_options *ro, coil_diag *d)
{
  clear(d);
  if (!b)
    return fail(d, COIL_ERR_INVALID_ARGUMENT, "coil_binding_run: no binding");
  if (ro && ro->struct_size < COIL_STRUCT_SIZE_TO(coil_run_options, stream))
    return fail(d, COIL_ERR_INVALID_ARGUMENT, "coil_binding_run: run options struct_size %zu is too small", ro->struct_size);
  coil_model *m = b->m;
  int n = b->nin + b->nout;
  coil_plugin_tensor st[RUN_STACK];
  const coil_plugin_tensor *sp[RUN_STACK];
  coil_plugin_tensor *t = n <= RUN_STACK ? st : malloc((size_t)n * sizeof *t);
  const coil_plugin_tensor **tp = n <= RUN_STACK ? sp : malloc((size_t)n * sizeof *tp);
  if (!t || !tp)
    abort();
  memcpy(t, b->t, (size_t)n * sizeof *t);
  for (int i = 0, c = 0; i < n; i++) {
    if (i >= b->nin || !m->embedded[i])
      t[i].data = data ? data[c++] : NULL;
    tp[i] = &t[i];
  }
  coil_device_info info;
  void **staged = NULL; /* host tensors of a run on a device the host cannot touch */
  int rc = 0;
  if (model_device(m, &info))
    rc = stage_in(m, &info, t, n, b->nin, ro, &staged, d);
  pthread_mutex_lock(&m->lock);
  if (!rc)
    rc = coil_plugin_run_stream(m->slot->lp, m->art, b->nin, tp, b->nout, tp + b->nin,
                                ro && ro->has_stream, ro ? ro->stream : NULL, d);
  pthread_mutex_unlock(&m->lock);
  if (staged)
    rc = stage_out(m, t, n, b->nin, data, staged, rc, d);
  if (t != st)
    free(t);
  if (tp != sp)
    free(tp);
  return rc ? code_of(rc, COIL_ERR_RUNTIME) : 0;
}

int
coil_model_run(coil_model *m, int ninputs, const coil_dltensor *inputs, int noutputs,
               const coil_dltensor *outputs, const coil_run_options *ro, coil_diag *d)
{
  coil_binding *b;
  int rc = coil_model_bind(m, ninputs, inputs, &b, d);
  if (rc)
    return rc;
  if (noutputs != b->nout) {
    int want = b->nout;
    coil_binding_free(b);
    return fail(d, COIL_ERR_INVALID_ARGUMENT, "%s: %d outputs given, the graph has %d", m->p->name, noutputs, want);
  }
  void **data = calloc((size_t)(ninputs + noutputs) + 1, sizeof *data);
  if (!data)
    abort();
  for (int i = 0; i < ninputs; i++)
    data[i] = inputs[i].data ? (char *)inputs[i].data + inputs[i].byte_offset : NULL;
  for (int o = 0; o < noutputs && !rc; o++) {
    const coil_dltensor *y = &outputs[o];
    const coil_plugin_tensor *want = &b->t[b->nin + o];
    bool ok = y->ndim == want->rank && coil_dtype_from_dl(y->dtype) == want->dtype &&
              y->device.device_type == b->device.device_type && (y->ndim == 0 || y->shape);
    for (int k = 0; ok && k < y->ndim; k++)
      ok = y->shape[k] == want->sizes[k] && (!y->strides || want->sizes[k] <= 1 || y->strides[k] == want->strides[k]);
    if (!ok) {
      coil_strbuf sb = {0};
      print_sizes(&sb, want->rank, want->sizes);
      rc = fail(d, COIL_ERR_INVALID_ARGUMENT, "%s: output %d: expected a dense %s[%s] on device type %d", m->p->name,
                o, coil_dtype_name((coil_dtype)want->dtype), sb.s ? sb.s : "", b->device.device_type);
      coil_strbuf_free(&sb);
    }
    data[ninputs + o] = y->data ? (char *)y->data + y->byte_offset : NULL;
  }
  if (!rc)
    rc = coil_binding_run(b, data, ro, d);
  free(data);
  coil_binding_free(b);
  return rc;
}
