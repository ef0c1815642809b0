/* template_plugin.c — a complete, minimal coil backend plugin: copy this folder to start yours.
 *
 * It executes a small subset on the CPU by interpreting the Wrapper IR directly (no code
 * generation): pointwise kernels (no r ranges) over f32 tensors, with the kernel ops load,
 * store, const, index (i64), cast (to f32), add, sub, mul, div, neg, abs, relu, max, min, exp,
 * sqrt and tanh, plus i64 index tensors read through `indirect` (an embedding lookup); and the
 * wrapper lines symbol, assert, alloc, free, kernel_call and output.
 * supports() answers for exactly that, and compile refuses any other program with
 * COIL_ERR_UNSUPPORTED, so the host reports "not supported" rather than a wrong result.
 *
 * The parts, in the order the host calls them (docs/plugin-abi.md is the reference):
 *   coil_plugin_entry  returns the static table at the bottom of this file;
 *   create/destroy     an instance: here only the options check and the host table;
 *   supports           the capability query;
 *   compile            checks the program and writes its text and a manifest (the artifact);
 *   load               reads the artifact back: manifest, program text, verifier;
 *   run                binds the inputs, runs the lines and kernels, writes the outputs;
 *   devices (ABI 1.4)  fake_device.c: with the option device = fake, the tensors live in
 *                      memory only the plugin can touch, and runs queue on streams, as on an
 *                      accelerator (the part a vendor replaces with its driver's calls).
 * A real backend would generate and build code in compile and load the binary in load; the
 * shape of everything around that stays the same.
 *
 * It includes only SDK headers, keeps no mutable globals (compile may run on several threads at
 * once), never aborts, and returns every failure as an error object from coil_sdk_error. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/coil_plugin.h"
#include "coil/coil_sdk.h"
#include "coil/sym.h"
#include "coil/wir.h"
#include "fake_device.h"

#define TEMPLATE_NAME "template"
#define TEMPLATE_VERSION "0.1.0"
#define PROGRAM_FILE "program.wir"         /* the artifact: the program's text ... */
#define MAX_FILE_BYTES ((size_t)256 << 20) /* ... read back up to this size */

/* ---- instances and artifacts ---- */

struct coil_plugin {
  const coil_host_api *host; /* borrowed from create until destroy; may be NULL */
  fake_device *device;       /* the memory and streams runs use (fake_device.c), or NULL when
                                built against an ABI before 1.4 */
};

struct coil_artifact {
  const coil_host_api *host; /* the instance's (artifacts are freed before their instance) */
  coil_wir_program *program; /* owned: parsed and verified by load */
  int output_line;           /* index of the program's one output line */
  fake_device *device;       /* the instance's (see struct coil_plugin) */
};

/* Sends a line to the host's log. `log` is optional, and absent from an older, smaller host
 * table: COIL_STRUCT_HAS checks that the host's struct_size covers the field. */
static void
say(const coil_host_api *host, coil_log_level level, const char *message)
{
  if (COIL_STRUCT_HAS(host, coil_host_api, log) && host->log)
    host->log(host, level, message);
}

/* The template's one option, `device` (host or fake; see fake_device.h), goes to *fake when
 * fake is not NULL. "coil." keys (forwarded by the host) are accepted and ignored; any other
 * key, or another value, is an error naming it. */
static coil_error *
check_options(const coil_plugin_options *o, bool *fake)
{
  if (!o || !COIL_STRUCT_HAS(o, coil_plugin_options, values))
    return NULL;
  for (size_t i = 0; i < o->count; i++) {
    const char *key = o->keys && o->keys[i] ? o->keys[i] : "(null)";
    const char *value = o->values && o->values[i] ? o->values[i] : "";
    if (strcmp(key, "device") == 0) {
      bool f = strcmp(value, "fake") == 0;
      if (!f && strcmp(value, "host") != 0)
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, TEMPLATE_NAME ": option device = '%s'"
                              ": expected host or fake", value);
#if COIL_PLUGIN_ABI_MINOR < 4
      if (f)
        return coil_sdk_error(COIL_ERR_UNSUPPORTED, TEMPLATE_NAME ": device = fake needs a "
                              "build against plugin ABI 1.4 or newer");
#endif
      if (fake)
        *fake = f;
    } else if (strncmp(key, "coil.", 5) != 0) {
      return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, TEMPLATE_NAME ": unknown option '%s' "
                            "(the template's one option is device = host | fake; it also "
                            "accepts coil.*)", key);
    }
  }
  return NULL;
}

static coil_error *
create(const coil_plugin_create_args *args, coil_plugin **out)
{
  bool fake = false;
  coil_error *e = check_options(COIL_STRUCT_HAS(args, coil_plugin_create_args, options)
                                    ? args->options : NULL, &fake);
  if (e)
    return e;
  coil_plugin *self = calloc(1, sizeof *self);
  if (!self)
    return coil_sdk_out_of_memory();
  self->host = COIL_STRUCT_HAS(args, coil_plugin_create_args, host) ? args->host : NULL;
#if COIL_PLUGIN_ABI_MINOR >= 4
  if (!(self->device = fake_device_new(fake))) {
    free(self);
    return coil_sdk_out_of_memory();
  }
#endif
  *out = self;
  return NULL;
}

static void
destroy(coil_plugin *self)
{
#if COIL_PLUGIN_ABI_MINOR >= 4
  fake_device_free(self->device);
#endif
  free(self);
}

#if COIL_PLUGIN_ABI_MINOR >= 4
fake_device *
template_device(coil_plugin *self)
{
  return self->device;
}
#endif

/* ---- what the template supports ---- */

/* op is a kernel op name ("add"), "reduce.KIND" or an ATen overload of an extern call; dtype is
 * the result's. Only these kernel ops are supported, on f32 (index and indirect: on i64, their
 * only dtype; load: also of i64, the indices an indirect reads); reductions and extern calls
 * never are. */
static coil_support
supports(const coil_plugin *self, const char *op, coil_dtype dtype)
{
  (void)self;
  switch (op ? coil_kop_from_name(op, strlen(op)) : -1) {
  case COIL_KOP_INDEX: case COIL_KOP_INDIRECT:
    return dtype == COIL_I64 ? COIL_SUPPORTED : COIL_UNSUPPORTED;
  case COIL_KOP_LOAD:
    return dtype == COIL_F32 || dtype == COIL_I64 ? COIL_SUPPORTED : COIL_UNSUPPORTED;
  case COIL_KOP_STORE: case COIL_KOP_CONST: case COIL_KOP_CAST:
  case COIL_KOP_ADD: case COIL_KOP_SUB: case COIL_KOP_MUL: case COIL_KOP_DIV: case COIL_KOP_NEG:
  case COIL_KOP_ABS: case COIL_KOP_RELU: case COIL_KOP_MAX: case COIL_KOP_MIN: case COIL_KOP_EXP:
  case COIL_KOP_SQRT: case COIL_KOP_TANH:
    return dtype == COIL_F32 ? COIL_SUPPORTED : COIL_UNSUPPORTED;
  default:
    return COIL_UNSUPPORTED;
  }
}

#if COIL_PLUGIN_ABI_MINOR >= 4
/* The statement query (ABI 1.4): supports() answers per op and dtype; this sees the shapes. The
 * template refuses a statement that touches a tensor of more than 2^26 elements whose size is
 * known (the fake device holds 1 GiB; a tensor of symbolic size is checked when it runs). A real
 * device would refuse here what its hardware cannot do: a too-large reduction, an unaligned
 * stride, an attribute value it has no kernel for. */
#define MAX_ELEMENTS ((int64_t)1 << 26)

static coil_support
supports_stmt(const coil_plugin *self, const coil_plugin_stmt *st)
{
  (void)self;
  if (!COIL_STRUCT_HAS(st, coil_plugin_stmt, outputs) || st->kind != COIL_STMT_KERNEL)
    return COIL_UNSUPPORTED; /* no library ops */
  for (size_t side = 0; side < 2; side++) {
    size_t n = side ? st->noutputs : st->ninputs;
    const coil_plugin_value *const *v = side ? st->outputs : st->inputs;
    for (size_t i = 0; i < n; i++) {
      int64_t elems = 1;
      for (int d = 0; v[i] && d < v[i]->rank; d++)
        if (v[i]->sizes[d] >= 0 &&
            (__builtin_mul_overflow(elems, v[i]->sizes[d], &elems) || elems > MAX_ELEMENTS))
          return COIL_UNSUPPORTED;
    }
  }
  return COIL_SUPPORTED;
}
#endif

static const char *const line_names[] = {
    [COIL_LINE_COMMENT] = "comment", [COIL_LINE_SYMBOL] = "symbol",
    [COIL_LINE_ASSERT] = "assert", [COIL_LINE_ALLOC] = "alloc", [COIL_LINE_FREE] = "free",
    [COIL_LINE_REUSE] = "reuse", [COIL_LINE_VIEW] = "view",
    [COIL_LINE_KERNEL_CALL] = "kernel_call", [COIL_LINE_EXTERN_CALL] = "extern_call",
    [COIL_LINE_MULTI_OUTPUT] = "multi_output", [COIL_LINE_COPY_BACK] = "copy_back",
    [COIL_LINE_OUTPUT] = "output"};

static const char *
line_name(const coil_line *l)
{
  unsigned k = (unsigned)l->kind;
  return k < sizeof line_names / sizeof *line_names && line_names[k] ? line_names[k] : "?";
}

__attribute__((format(printf, 1, 2))) static coil_error *
unsupported(const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return coil_sdk_error(COIL_ERR_UNSUPPORTED, TEMPLATE_NAME ": %s is not supported (the "
                        "template runs f32 pointwise kernels only, with i64 indices)", msg);
}

static coil_error *
check_kernel(const coil_kernel *k)
{
  if (k->kind != COIL_KERNEL_POINTWISE || k->nr != 0)
    return unsupported("kernel %s, a reduction,", k->name);
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].dtype != COIL_F32 && k->params[i].dtype != COIL_I64)
      return unsupported("kernel %s: param %s of dtype %s", k->name, k->params[i].name,
                         coil_dtype_name(k->params[i].dtype));
  /* Every value is then f32 but index values (i64), so a cast reads one of those two; an i64
   * param is only loaded (a store is of f32). */
  for (int i = 0; i < k->ninsts; i++) {
    const coil_kinst *in = &k->insts[i];
    if (supports(NULL, coil_kop_name(in->op), in->dtype) != COIL_SUPPORTED)
      return unsupported("kernel %s, %%%d: %s on %s", k->name, i, coil_kop_name(in->op),
                         coil_dtype_name(in->dtype));
    if (in->op == COIL_KOP_STORE && in->mode != COIL_STORE_PLAIN)
      return unsupported("kernel %s, %%%d: a combining store (store.%s)", k->name, i, coil_store_mode_name(in->mode));
  }
  return NULL;
}

/* NULL if the template can run p; else a COIL_ERR_UNSUPPORTED error naming the first thing it
 * cannot. p has passed coil_wir_verify (the host's, or load's), so indices are valid. */
static coil_error *
check_program(const coil_wir_program *p)
{
  for (int b = 0; b < p->nbuffers; b++)
    if (p->buffers[b].dtype != COIL_F32 && p->buffers[b].dtype != COIL_I64)
      return unsupported("buffer %s of dtype %s", p->buffers[b].name,
                         coil_dtype_name(p->buffers[b].dtype));
  for (int k = 0; k < p->nkernels; k++) {
    coil_error *e = check_kernel(&p->kernels[k]);
    if (e)
      return e;
  }
  for (int i = 0; i < p->nlines; i++) {
    const coil_line *l = &p->lines[i];
    switch (l->kind) {
    case COIL_LINE_COMMENT: case COIL_LINE_SYMBOL: case COIL_LINE_ASSERT: case COIL_LINE_ALLOC:
    case COIL_LINE_FREE: case COIL_LINE_KERNEL_CALL: case COIL_LINE_OUTPUT:
      break;
    case COIL_LINE_EXTERN_CALL:
      return unsupported("line %d, extern_call %s,", i + 1, l->op ? l->op : "?");
    default:
      return unsupported("line %d, a %s line,", i + 1, line_name(l));
    }
  }
  return NULL;
}

/* ---- compile and load ---- */

/* The artifact is the program's own text: load parses it back. The program comes as text
 * (ABI 1.3's program_text, COIL_FEATURE_PROGRAM_TEXT below), parsed into a copy of our own by
 * the SDK: nothing here depends on the layout of the host's structs. Thread-safe: reads only
 * its arguments. The manifest goes last, as it marks the artifact complete. */
static coil_error *
compile(coil_plugin *self, const coil_plugin_compile_args *args)
{
  (void)self;
  if (!COIL_STRUCT_HAS(args, coil_plugin_compile_args, artifact_dir) || !args->artifact_dir)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, TEMPLATE_NAME ": compile without an "
                          "artifact directory");
  coil_error *e = check_options(COIL_STRUCT_HAS(args, coil_plugin_compile_args, options)
                                    ? args->options : NULL, NULL);
  coil_wir_program *p = NULL;
  if (!e)
    e = coil_sdk_compile_program(TEMPLATE_NAME, args, &p);
  if (!e)
    e = check_program(p);
  char *text = e ? NULL : coil_sdk_compile_text(args); /* kept verbatim: the host compares it */
  if (!e && !text)
    e = coil_sdk_error(COIL_ERR_OUT_OF_MEMORY, TEMPLATE_NAME ": out of memory");
  if (!e)
    e = coil_sdk_write_file(args->artifact_dir, PROGRAM_FILE, text);
  free(text);
  char manifest[512];
  if (!e) {
    snprintf(manifest, sizeof manifest,
             "{\"plugin\": \"" TEMPLATE_NAME "\", \"plugin_version\": \"" TEMPLATE_VERSION "\", "
             "\"wir_version\": \"%d.%d\", \"files\": [\"" PROGRAM_FILE "\"]}\n",
             p->version_major, p->version_minor);
    e = coil_sdk_write_file(args->artifact_dir, COIL_ARTIFACT_MANIFEST, manifest);
  }
  coil_wir_free(p);
  return e;
}

/* The string value of "key" in the manifest, copied into out; false if it is not there. It
 * reads what compile writes ("key": "value", no escapes); a plugin with a richer manifest would
 * use a JSON library. */
static bool
manifest_field(const char *json, const char *key, char *out, size_t n)
{
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\": \"", key);
  const char *at = strstr(json, pattern);
  if (!at)
    return false;
  at += strlen(pattern);
  size_t len = strcspn(at, "\"");
  if (at[len] != '"' || len >= n)
    return false;
  memcpy(out, at, len);
  out[len] = '\0';
  return true;
}

/* Reads DIR/NAME whole (malloc'd), or NULL with a COIL_ERR_IO error in *e. */
static char *
read_artifact_file(const char *dir, const char *name, size_t *len, coil_error **e)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  char *text = coil_sdk_read_file(path, MAX_FILE_BYTES, len);
  if (!text)
    *e = coil_sdk_error(COIL_ERR_IO, TEMPLATE_NAME ": cannot read %s (not an artifact of this "
                        "plugin, or an incomplete one)", path);
  return text;
}

static coil_error *
load(coil_plugin *self, const coil_plugin_load_args *args, coil_artifact **out)
{
  if (!COIL_STRUCT_HAS(args, coil_plugin_load_args, artifact_dir) || !args->artifact_dir)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, TEMPLATE_NAME ": load without a directory");
  coil_error *e = check_options(COIL_STRUCT_HAS(args, coil_plugin_load_args, options)
                                    ? args->options : NULL, NULL);
  if (e)
    return e;
  const char *dir = args->artifact_dir;
  size_t len = 0;
  char *manifest = read_artifact_file(dir, COIL_ARTIFACT_MANIFEST, &len, &e);
  if (!manifest)
    return e;
  char name[128] = "", version[128] = "(none)";
  bool ours = manifest_field(manifest, "plugin", name, sizeof name) &&
              strcmp(name, TEMPLATE_NAME) == 0;
  bool same = manifest_field(manifest, "plugin_version", version, sizeof version) &&
              strcmp(version, TEMPLATE_VERSION) == 0;
  free(manifest);
  if (!ours)
    return coil_sdk_error(COIL_ERR_VERSION, TEMPLATE_NAME ": the artifact in %s was not "
                          "written by the " TEMPLATE_NAME " plugin", dir);
  if (!same)
    return coil_sdk_error(COIL_ERR_VERSION, TEMPLATE_NAME ": the artifact in %s was written by "
                          "version %s; this is " TEMPLATE_VERSION ": compile it again", dir,
                          version);

  char *text = read_artifact_file(dir, PROGRAM_FILE, &len, &e);
  if (!text)
    return e;
  coil_diag d = {{0}};
  coil_wir_program *p = coil_wir_parse(PROGRAM_FILE, text, len, &d);
  free(text);
  if (!p || coil_wir_verify(p, &d) != 0) {
    coil_wir_free(p);
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, TEMPLATE_NAME ": %s in %s", d.msg, dir);
  }
  if (p->version_major != COIL_WIR_VERSION_MAJOR || p->version_minor > COIL_WIR_VERSION_MINOR)
    e = coil_sdk_error(COIL_ERR_VERSION, TEMPLATE_NAME ": the artifact holds Wrapper IR %d.%d; "
                       "this plugin reads %d.0 to %d.%d", p->version_major, p->version_minor,
                       COIL_WIR_VERSION_MAJOR, COIL_WIR_VERSION_MAJOR, COIL_WIR_VERSION_MINOR);
  else
    e = check_program(p); /* the directory may have been edited since compile */
  coil_artifact *a = e ? NULL : calloc(1, sizeof *a);
  if (!a) {
    coil_wir_free(p);
    return e ? e : coil_sdk_out_of_memory();
  }
  a->host = self->host;
  a->device = self->device;
  a->program = p;
  for (int i = 0; i < p->nlines; i++) /* the verifier checked that there is exactly one */
    if (p->lines[i].kind == COIL_LINE_OUTPUT)
      a->output_line = i;
  char msg[256];
  snprintf(msg, sizeof msg, "loaded program %s: %d kernel(s), %d line(s)", p->name, p->nkernels,
           p->nlines);
  say(a->host, COIL_LOG_DEBUG, msg);
  *out = a;
  return NULL;
}

static void
artifact_free(coil_artifact *a)
{
  if (a)
    coil_wir_free(a->program);
  free(a);
}

/* ---- run: the interpreter ---- */

/* A buffer at run time: an input (the host's data), an alloc (ours) or nothing yet. */
typedef struct rtbuf {
  char *data;                     /* the first element (f32 or i64: size in esize) */
  size_t esize;
  int64_t sizes[COIL_MAX_RANK];   /* evaluated layout, in elements */
  int64_t strides[COIL_MAX_RANK];
  int64_t span;                   /* elements the layout reaches from data: every load and store
                                     is checked against it */
  bool live, owned;               /* owned: data is ours to free */
} rtbuf;

typedef struct runner {
  const coil_wir_program *p;
  const coil_plugin_run_args *args;
  int64_t *vals;  /* per variable of p->sym: size symbols (bound by symbol lines) and loop
                     variables (set per point); what coil_sym_eval reads */
  rtbuf *bufs;    /* per program buffer */
  int line;       /* the line running, for messages (-1: checking the arguments) */
} runner;

/* A run-time error naming the line it happened on. */
__attribute__((format(printf, 3, 4))) static coil_error *
fail(const runner *r, coil_error_code code, const char *fmt, ...)
{
  char msg[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (r->line < 0)
    return coil_sdk_error(code, TEMPLATE_NAME ": %s", msg);
  const coil_line *l = &r->p->lines[r->line];
  if (l->kind == COIL_LINE_KERNEL_CALL) /* name the kernel: errors of queued runs say which */
    return coil_sdk_error(code, TEMPLATE_NAME ": line %d (kernel_call %s): %s", r->line + 1,
                          r->p->kernels[l->kernel].name, msg);
  return coil_sdk_error(code, TEMPLATE_NAME ": line %d (%s): %s", r->line + 1, line_name(l), msg);
}

/* Evaluates a size or index expression under the current binding. The verifier guarantees that
 * every variable it uses is bound (a symbol line above, or a loop variable being run). */
static coil_error *
eval(const runner *r, const coil_sym *s, const char *what, int64_t *out)
{
  coil_diag d = {{0}};
  if (coil_sym_eval(r->p->sym, s, r->vals, coil_sym_nvars(r->p->sym), out, &d) != 0)
    return fail(r, COIL_ERR_RUNTIME, "cannot evaluate %s: %s", what, d.msg);
  return NULL;
}

/* Elements a layout reaches from its first: 1 + sum (size-1)*stride, 0 when it has none; -1
 * for a negative size or stride, or on overflow. */
static int64_t
layout_span(int rank, const int64_t *sizes, const int64_t *strides)
{
  int64_t span = 1;
  for (int d = 0; d < rank; d++)
    if (sizes[d] < 0 || strides[d] < 0)
      return -1;
  for (int d = 0; d < rank; d++) {
    int64_t reach;
    if (sizes[d] == 0)
      return 0;
    if (__builtin_mul_overflow(sizes[d] - 1, strides[d], &reach) ||
        __builtin_add_overflow(span, reach, &span))
      return -1;
  }
  return span;
}

/* Checks a host tensor against program buffer b (dtype, rank, device, a usable layout). Reads
 * only fields within its struct_size. Sizes are compared once symbols are bound. */
static coil_error *
check_tensor(const runner *r, const coil_plugin_tensor *t, const char *what, size_t i, int b)
{
  const coil_buffer *cb = &r->p->buffers[b];
  if (!COIL_STRUCT_HAS(t, coil_plugin_tensor, device_type))
    return fail(r, COIL_ERR_INVALID_ARGUMENT, "%s %zu is missing or too old a descriptor", what, i);
  if (t->device_type != COIL_DEVICE_CPU)
    return fail(r, COIL_ERR_INVALID_ARGUMENT, "%s %zu is on device type %d, not the CPU (1)",
                what, i, (int)t->device_type);
  if (t->dtype != (int32_t)cb->dtype || t->rank != cb->rank)
    return fail(r, COIL_ERR_INVALID_ARGUMENT, "%s %zu (%s): expected %s of rank %d, got %s of "
                "rank %d", what, i, cb->name, coil_dtype_name(cb->dtype), cb->rank,
                t->dtype >= 0 && t->dtype < COIL_DTYPE_COUNT ? coil_dtype_name(t->dtype)
                                                             : "an unknown dtype", (int)t->rank);
  if (t->rank > 0 && (!t->sizes || !t->strides))
    return fail(r, COIL_ERR_INVALID_ARGUMENT, "%s %zu (%s) has no sizes or strides", what, i,
                cb->name);
  int64_t span = layout_span(t->rank, t->sizes, t->strides);
  if (span < 0)
    return fail(r, COIL_ERR_INVALID_ARGUMENT, "%s %zu (%s) has a negative size or stride, or "
                "one too large", what, i, cb->name);
  if (span > 0 && !t->data)
    return fail(r, COIL_ERR_INVALID_ARGUMENT, "%s %zu (%s) has no data", what, i, cb->name);
  return NULL;
}

/* Buffer b's sizes and strides as the program declares them, under the current binding. */
static coil_error *
eval_layout(const runner *r, int b, int64_t *sizes, int64_t *strides)
{
  const coil_buffer *cb = &r->p->buffers[b];
  coil_error *e = NULL;
  for (int d = 0; !e && d < cb->rank; d++)
    if (!(e = eval(r, cb->sizes[d], "a size", &sizes[d])))
      e = eval(r, cb->strides[d], "a stride", &strides[d]);
  return e;
}

/* Once the symbols are bound: an input has the sizes the program declares, and the strides
 * (where they matter: a dimension of size 1 is never stepped along). */
static coil_error *
check_input_layout(const runner *r, int b)
{
  const rtbuf *rb = &r->bufs[b];
  int64_t sizes[COIL_MAX_RANK], strides[COIL_MAX_RANK];
  coil_error *e = eval_layout(r, b, sizes, strides);
  for (int d = 0; !e && d < r->p->buffers[b].rank; d++)
    if (rb->sizes[d] != sizes[d] || (sizes[d] > 1 && rb->strides[d] != strides[d]))
      e = fail(r, COIL_ERR_INVALID_ARGUMENT, "input %s: dimension %d has size %lld and stride "
               "%lld, the program expects %lld and %lld", r->p->buffers[b].name, d,
               (long long)rb->sizes[d], (long long)rb->strides[d], (long long)sizes[d],
               (long long)strides[d]);
  return e;
}

static coil_error *
run_assert(runner *r, const coil_line *l)
{
  const rtbuf *b = &r->bufs[l->buffer];
  const char *name = r->p->buffers[l->buffer].name;
  if (l->assert_kind == COIL_ASSERT_ALIGNED) {
    if ((uintptr_t)b->data % (uintptr_t)l->align != 0)
      return fail(r, COIL_ERR_INVALID_ARGUMENT, "assert failed: %s aligned %lld (its data is at "
                  "%p)", name, (long long)l->align, (void *)b->data);
    return NULL;
  }
  bool stride = l->assert_kind == COIL_ASSERT_STRIDE;
  int64_t want, have = stride ? b->strides[l->dim] : b->sizes[l->dim];
  coil_error *e = eval(r, l->value, "the expected value", &want);
  if (e)
    return e;
  if (have != want)
    return fail(r, COIL_ERR_INVALID_ARGUMENT, "assert failed: %s.%s(%d) == %lld, but it is %lld",
                name, stride ? "stride" : "size", l->dim, (long long)want, (long long)have);
  return NULL;
}

static coil_error *
run_alloc(runner *r, const coil_line *l)
{
  const coil_buffer *cb = &r->p->buffers[l->buffer];
  rtbuf *b = &r->bufs[l->buffer];
  coil_error *e = eval_layout(r, l->buffer, b->sizes, b->strides);
  if (e)
    return e;
  b->span = layout_span(cb->rank, b->sizes, b->strides);
  if (b->span < 0)
    return fail(r, COIL_ERR_RUNTIME, "%s has a negative or too large layout", cb->name);
  b->esize = coil_dtype_size(cb->dtype);
  b->data = b->span > 0 ? calloc((size_t)b->span, b->esize) : NULL;
  if (b->span > 0 && !b->data)
    return fail(r, COIL_ERR_OUT_OF_MEMORY, "cannot allocate %lld elements for %s",
                (long long)b->span, cb->name);
  b->live = b->owned = true;
  return NULL;
}

/* One value of a kernel body: f32 values in f, index values (i64) in i. */
typedef union value {
  float f;
  int64_t i;
} value;

/* f32 arithmetic as PyTorch does it: computed in double, rounded once to float. max and min
 * propagate NaN (torch.maximum / torch.minimum). */
static float
arith(coil_kop op, float fa, float fb)
{
  double a = fa, b = fb;
  switch (op) {
  case COIL_KOP_ADD: return (float)(a + b);
  case COIL_KOP_SUB: return (float)(a - b);
  case COIL_KOP_MUL: return (float)(a * b);
  case COIL_KOP_DIV: return (float)(a / b);
  case COIL_KOP_MAX: return isnan(a) || isnan(b) ? NAN : (float)(a > b ? a : b);
  case COIL_KOP_MIN: return isnan(a) || isnan(b) ? NAN : (float)(a < b ? a : b);
  case COIL_KOP_NEG: return (float)-a;
  case COIL_KOP_ABS: return (float)fabs(a);
  case COIL_KOP_RELU: return isnan(a) ? fa : a > 0 ? fa : 0.0f;
  case COIL_KOP_EXP: return (float)exp(a);
  case COIL_KOP_SQRT: return (float)sqrt(a);
  case COIL_KOP_TANH: return (float)tanh(a);
  default: return NAN; /* check_program lets nothing else through */
  }
}

/* The element a load or store reaches at the current point, bounds-checked. */
static coil_error *
element(const runner *r, const coil_kernel *k, int i, rtbuf *const *params, char **at)
{
  const coil_kinst *in = &k->insts[i];
  const rtbuf *b = params[in->param];
  int64_t off;
  coil_error *e = eval(r, in->index, "an index", &off);
  if (e)
    return e;
  if (off < 0 || off >= b->span)
    return fail(r, COIL_ERR_RUNTIME, "kernel %s, %%%d: element %lld of %s is outside its %lld "
                "elements", k->name, i, (long long)off, k->params[in->param].name,
                (long long)b->span);
  *at = b->data + (size_t)off * b->esize;
  return NULL;
}

/* Runs the body once, at the point the loop variables in r->vals name. ivar[i]: the variable
 * iN of an indirect instruction i. */
static coil_error *
run_body(const runner *r, const coil_kernel *k, rtbuf *const *params, const int *ivar, value *v)
{
  for (int i = 0; i < k->ninsts; i++) {
    const coil_kinst *in = &k->insts[i];
    value a = coil_kop_arity(in->op) > 0 ? v[in->args[0]] : (value){0}; /* first operand */
    char *at;
    int64_t bound;
    coil_error *e = NULL;
    switch (in->op) {
    case COIL_KOP_LOAD:
      if (!(e = element(r, k, i, params, &at))) {
        if (in->dtype == COIL_I64)
          memcpy(&v[i].i, at, sizeof v[i].i);
        else
          memcpy(&v[i].f, at, sizeof v[i].f);
      }
      break;
    case COIL_KOP_STORE:
      if (!(e = element(r, k, i, params, &at)))
        memcpy(at, &a.f, sizeof a.f);
      break;
    case COIL_KOP_INDIRECT: /* an index from the data: in [0, bound), else the run fails */
      if (!(e = eval(r, in->index, "an indirect bound", &bound)) && (a.i < 0 || a.i >= bound))
        e = fail(r, COIL_ERR_RUNTIME, "kernel %s, %%%d: index %lld is out of range [0, %lld)",
                 k->name, i, (long long)a.i, (long long)bound);
      if (!e && ivar[i] >= 0)
        r->vals[ivar[i]] = v[i].i = a.i;
      break;
    case COIL_KOP_CONST: v[i].f = (float)in->f; break;
    case COIL_KOP_INDEX: e = eval(r, in->index, "an index value", &v[i].i); break;
    case COIL_KOP_CAST:
      v[i].f = k->insts[in->args[0]].dtype == COIL_I64 ? (float)a.i : a.f;
      break;
    default:
      v[i].f = arith(in->op, a.f, coil_kop_arity(in->op) > 1 ? v[in->args[1]].f : 0.0f);
      break;
    }
    if (e)
      return e;
  }
  return NULL;
}

/* kernel_call: binds the params to the argument buffers and runs the body at every point of
 * the x ranges, row-major (the last loop variable fastest). */
static coil_error *
run_kernel(runner *r, const coil_line *l)
{
  const coil_kernel *k = &r->p->kernels[l->kernel];
  int64_t extent[COIL_MAX_LOOP_DIMS], point[COIL_MAX_LOOP_DIMS] = {0};
  for (int d = 0; d < k->nx; d++) {
    coil_error *e = eval(r, k->xsize[d], "a loop size", &extent[d]);
    if (e)
      return e;
    if (extent[d] <= 0)
      return NULL; /* no points */
  }
  rtbuf **params = calloc((size_t)k->nparams + 1, sizeof *params);
  value *v = calloc((size_t)k->ninsts + 1, sizeof *v);
  int *ivar = calloc((size_t)k->ninsts + 1, sizeof *ivar);
  coil_error *e = params && v && ivar ? NULL : coil_sdk_out_of_memory();
  for (int i = 0; !e && i < k->ninsts; i++) { /* which variable iN each indirect sets */
    ivar[i] = -1;
    for (int var = 0; k->insts[i].op == COIL_KOP_INDIRECT && var < coil_sym_nvars(r->p->sym); var++)
      if (coil_wir_indirect_of(r->p->sym, var) == i)
        ivar[i] = var;
  }
  for (int i = 0; !e && i < k->nparams; i++) {
    params[i] = &r->bufs[l->args[i]];
    if (!params[i]->live)
      e = fail(r, COIL_ERR_INTERNAL, "argument %d of %s is not live", i, k->name);
  }
  for (bool more = true; !e && more;) {
    for (int d = 0; d < k->nx; d++)
      r->vals[k->xvars[d]->var] = point[d];
    e = run_body(r, k, params, ivar, v);
    more = false; /* next point: an odometer over the x ranges */
    for (int d = k->nx - 1; d >= 0 && !more; d--) {
      more = ++point[d] < extent[d];
      if (!more)
        point[d] = 0;
    }
  }
  free(params);
  free(v);
  free(ivar);
  return e;
}

/* output: copies each buffer into the host's preallocated output, through both layouts. */
static coil_error *
run_output(runner *r, const coil_line *l)
{
  for (int i = 0; i < l->nargs; i++) {
    const rtbuf *src = &r->bufs[l->args[i]];
    const coil_plugin_tensor *t = r->args->outputs[i];
    int rank = r->p->buffers[l->args[i]].rank;
    int64_t numel = 1, idx[COIL_MAX_RANK] = {0};
    for (int d = 0; d < rank; d++) {
      if (t->sizes[d] != src->sizes[d])
        return fail(r, COIL_ERR_INVALID_ARGUMENT, "output %d has size %lld in dimension %d, "
                    "the program's %s has %lld", i, (long long)t->sizes[d], d,
                    r->p->buffers[l->args[i]].name, (long long)src->sizes[d]);
      numel *= src->sizes[d];
    }
    for (int64_t n = 0; n < numel; n++) {
      int64_t from = 0, to = 0;
      for (int d = 0; d < rank; d++) {
        from += idx[d] * src->strides[d];
        to += idx[d] * t->strides[d];
      }
      memcpy((char *)t->data + (size_t)to * src->esize, src->data + (size_t)from * src->esize,
             src->esize);
      for (int d = rank - 1; d >= 0 && ++idx[d] == src->sizes[d]; d--)
        idx[d] = 0;
    }
  }
  return NULL;
}

/* Checks the argument counts and every descriptor, and binds the inputs to their buffers. */
static coil_error *
bind_arguments(runner *r, const coil_line *output)
{
  const coil_plugin_run_args *args = r->args;
  const coil_wir_program *p = r->p;
  if (!COIL_STRUCT_HAS(args, coil_plugin_run_args, outputs))
    return fail(r, COIL_ERR_INVALID_ARGUMENT, "run arguments are missing or too old");
  if (args->ninputs != (size_t)p->ninputs || args->noutputs != (size_t)output->nargs ||
      (args->ninputs && !args->inputs) || (args->noutputs && !args->outputs))
    return fail(r, COIL_ERR_INVALID_ARGUMENT, "%zu inputs and %zu outputs given, the program "
                "takes %d and gives %d", args->ninputs, args->noutputs, p->ninputs,
                output->nargs);
  for (size_t i = 0; i < args->noutputs; i++) {
    coil_error *e = check_tensor(r, args->outputs[i], "output", i, output->args[i]);
    if (e)
      return e;
  }
  for (size_t i = 0; i < args->ninputs; i++) {
    const coil_plugin_tensor *t = args->inputs[i];
    int b = p->inputs[i].buffer;
    coil_error *e = check_tensor(r, t, "input", i, b);
    if (e)
      return e;
    rtbuf *rb = &r->bufs[b];
    for (int d = 0; d < t->rank; d++) {
      rb->sizes[d] = t->sizes[d];
      rb->strides[d] = t->strides[d];
    }
    rb->data = t->data;
    rb->esize = coil_dtype_size(p->buffers[b].dtype);
    rb->span = layout_span(t->rank, t->sizes, t->strides);
    rb->live = true;
  }
  return NULL;
}

/* A run on host memory: what fake_device.c calls, now or when a stream gets to it. */
static coil_error *
run_host(coil_artifact *a, const coil_plugin_run_args *args)
{
  const coil_wir_program *p = a->program;
  runner r = {.p = p, .args = args, .line = -1};
  r.vals = calloc((size_t)coil_sym_nvars(p->sym) + 1, sizeof *r.vals);
  r.bufs = calloc((size_t)p->nbuffers + 1, sizeof *r.bufs);
  coil_error *e = r.vals && r.bufs ? NULL : coil_sdk_out_of_memory();
  if (!e)
    e = bind_arguments(&r, &p->lines[a->output_line]);
  bool inputs_checked = false;
  for (r.line = 0; !e && r.line < p->nlines; r.line++) {
    const coil_line *l = &p->lines[r.line];
    /* symbol and assert lines come first; the input layouts are checked right after them */
    if (!inputs_checked && l->kind != COIL_LINE_COMMENT && l->kind != COIL_LINE_SYMBOL &&
        l->kind != COIL_LINE_ASSERT) {
      inputs_checked = true;
      for (int i = 0; !e && i < p->ninputs; i++)
        e = check_input_layout(&r, p->inputs[i].buffer);
      if (e)
        break;
    }
    rtbuf *b = l->buffer >= 0 && l->buffer < p->nbuffers ? &r.bufs[l->buffer] : NULL;
    switch (l->kind) {
    case COIL_LINE_COMMENT: break;
    case COIL_LINE_SYMBOL: /* the verifier: a variable, defined once, from an input's dim */
      r.vals[l->sym->var] = l->is_stride ? b->strides[l->dim] : b->sizes[l->dim];
      break;
    case COIL_LINE_ASSERT: e = run_assert(&r, l); break;
    case COIL_LINE_ALLOC: e = run_alloc(&r, l); break;
    case COIL_LINE_FREE:
      if (b->owned)
        free(b->data);
      *b = (rtbuf){0};
      break;
    case COIL_LINE_KERNEL_CALL: e = run_kernel(&r, l); break;
    case COIL_LINE_OUTPUT: e = run_output(&r, l); break;
    default: e = fail(&r, COIL_ERR_UNSUPPORTED, "this line is not supported"); break;
    }
  }
  for (int b = 0; r.bufs && b < p->nbuffers; b++)
    if (r.bufs[b].owned)
      free(r.bufs[b].data);
  free(r.vals);
  free(r.bufs);
  return e;
}

/* run: through the device (fake_device.c checks and translates the tensors, and queues the run
 * when the host gave one of its streams); before ABI 1.4, straight on host memory. */
static coil_error *
run(coil_artifact *a, const coil_plugin_run_args *args)
{
#if COIL_PLUGIN_ABI_MINOR >= 4
  return fake_device_run(a->device, a, args, run_host);
#else
  return run_host(a, args);
#endif
}

/* ---- a vendor extension (ABI 1.3 get_extension) ---- */
#if COIL_PLUGIN_ABI_MINOR >= 3

/* "template.info.v1": what a vendor's own tool may ask the plugin beyond the ABI. A real
 * plugin would put its profiler hooks or device queries here. */
typedef struct template_info_v1 {
  size_t struct_size;
  const char *(*claims)(void); /* the ops supports() says yes to, for people */
} template_info_v1;

static const char *
info_claims(void)
{
  return "f32 pointwise kernels: load, store, const, cast, add, sub, mul, div, neg, abs, relu, "
         "max, min, exp, sqrt, tanh; index on i64";
}

static const template_info_v1 info_v1 = {sizeof(template_info_v1), info_claims};

static const void *
get_extension(coil_plugin *self, const char *name)
{
  (void)self;
  if (!name)
    return NULL;
#if COIL_PLUGIN_ABI_MINOR >= 4
  if (strcmp(name, FAKE_DEVICE_EXTENSION) == 0)
    return &fake_device_extension;
#endif
  return strcmp(name, TEMPLATE_NAME ".info.v1") == 0 ? &info_v1 : NULL;
}
#endif

/* ---- the table and the entry ---- */

static const coil_plugin_api api = {
    .struct_size = sizeof(coil_plugin_api),
    .abi_major = COIL_PLUGIN_ABI_MAJOR,
    .abi_minor = COIL_PLUGIN_ABI_MINOR,
    .min_host_minor = 0, /* uses nothing newer than ABI 1.0 */
    .name = TEMPLATE_NAME,
    .vendor = "Your company",
    .version = TEMPLATE_VERSION,
#if COIL_PLUGIN_ABI_MINOR >= 3 /* built against ABI 1.3 or newer: the program as text */
    .features = COIL_FEATURE_EXECUTES | COIL_FEATURE_PROGRAM_TEXT,
#else
    .features = COIL_FEATURE_EXECUTES,
#endif
    .wir_major = COIL_WIR_VERSION_MAJOR,
    .wir_min_minor = 0,
    .wir_max_minor = COIL_WIR_VERSION_MINOR,
    .error_code = coil_sdk_error_code, /* the SDK's error objects */
    .error_message = coil_sdk_error_message,
    .error_free = coil_sdk_error_free,
    .create = create,
    .destroy = destroy,
    .supports = supports,
    .compile = compile,
    .load = load,
    .run = run,
    .artifact_free = artifact_free,
#if COIL_PLUGIN_ABI_MINOR >= 3
    .identity = NULL,
    .get_extension = get_extension,
#endif
#if COIL_PLUGIN_ABI_MINOR >= 4 /* devices, memory, streams and events: fake_device.c */
    .device_count = fake_device_count,
    .device_info = fake_device_info,
    .mem_alloc = fake_mem_alloc,
    .mem_free = fake_mem_free,
    .mem_copy = fake_mem_copy,
    .stream_create = fake_stream_create,
    .stream_sync = fake_stream_sync,
    .stream_destroy = fake_stream_destroy,
    .event_record = fake_event_record,
    .event_wait = fake_event_wait,
    .event_sync = fake_event_sync,
    .event_destroy = fake_event_destroy,
    .supports_stmt = supports_stmt,
#endif
};

/* Keeps no state: it may run again after a dlclose, or for a second dlopen of this file. */
COIL_PLUGIN_EXPORT const coil_plugin_api *
coil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const coil_host_api *host,
                  const char **why_not)
{
  (void)host_abi_minor; /* any 1.x host: min_host_minor is 0 */
  (void)host;
  if (host_abi_major != COIL_PLUGIN_ABI_MAJOR) {
    *why_not = TEMPLATE_NAME " is built for plugin ABI 1.x";
    return NULL;
  }
  return &api;
}
