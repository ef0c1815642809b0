/* good — a complete, minimal plugin that executes: the reference for what a valid plugin does
 * at every step of the lifecycle, used by the loader's tests.
 *
 * It is not a compiler. compile writes the program's text (program.wir) and a manifest; load
 * checks the manifest; run treats every artifact as out0 = in0 + in1 over f32 tensors of one
 * shape (any strides) on the CPU, which is all the tests need to see data go through. Options:
 * arch (any non-empty value; default "generic"), fail_compile ("yes" makes compile fail with
 * COIL_ERR_COMPILE_FAILED), and any "coil." key. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/coil_plugin.h"

/* ---- errors ---- */

struct coil_error {
  coil_error_code code;
  char msg[256];
};

static coil_error out_of_memory = {COIL_ERR_OUT_OF_MEMORY, "good: out of memory"};

static coil_error *error_new(coil_error_code code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static coil_error *
error_new(coil_error_code code, const char *fmt, ...)
{
  coil_error *e = malloc(sizeof *e);
  if (!e)
    return &out_of_memory;
  e->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  return e;
}

static coil_error_code
error_code(const coil_error *err)
{
  return err->code;
}

static const char *
error_message(const coil_error *err)
{
  return err->msg;
}

static void
error_free(coil_error *err)
{
  if (err != &out_of_memory)
    free(err);
}

/* ---- instances and options ---- */

struct coil_plugin {
  const coil_host_api *host; /* borrowed from create until destroy */
  char arch[32];
  int fail_compile;
};

struct coil_artifact {
  int unused;
};

static void
log_line(const coil_host_api *host, coil_log_level level, const char *msg)
{
  if (COIL_STRUCT_HAS(host, coil_host_api, log) && host->log)
    host->log(host, level, msg);
}

/* Reads options into arch/fail (either may be NULL to validate only). */
static coil_error *
read_options(const coil_plugin_options *o, char *arch, size_t arch_cap, int *fail)
{
  size_t n = COIL_STRUCT_HAS(o, coil_plugin_options, values) ? o->count : 0;
  for (size_t i = 0; i < n; i++) {
    const char *k = o->keys[i], *v = o->values[i];
    if (strncmp(k, "coil.", 5) == 0)
      continue;
    if (strcmp(k, "arch") == 0) {
      if (!*v || strlen(v) >= arch_cap)
        return error_new(COIL_ERR_INVALID_ARGUMENT, "option arch: '%s' is not a valid arch", v);
      snprintf(arch, arch_cap, "%s", v);
    } else if (strcmp(k, "fail_compile") == 0) {
      if (strcmp(v, "yes") != 0 && strcmp(v, "no") != 0)
        return error_new(COIL_ERR_INVALID_ARGUMENT, "option fail_compile: expected yes or no, "
                         "not '%s'", v);
      *fail = strcmp(v, "yes") == 0;
    } else {
      return error_new(COIL_ERR_INVALID_ARGUMENT, "unknown option '%s' (good accepts arch, "
                       "fail_compile and coil.*)", k);
    }
  }
  return NULL;
}

static coil_error *
create(const coil_plugin_create_args *args, coil_plugin **out)
{
  coil_plugin *p = calloc(1, sizeof *p);
  if (!p)
    return &out_of_memory;
  snprintf(p->arch, sizeof p->arch, "generic");
  coil_error *e = read_options(args->options, p->arch, sizeof p->arch, &p->fail_compile);
  if (e) {
    free(p);
    return e;
  }
  p->host = COIL_STRUCT_HAS(args, coil_plugin_create_args, host) ? args->host : NULL;
  char msg[64];
  snprintf(msg, sizeof msg, "created for arch %s", p->arch);
  log_line(p->host, COIL_LOG_DEBUG, msg);
  *out = p;
  return NULL;
}

static void
destroy(coil_plugin *self)
{
  free(self);
}

static coil_support
supports(const coil_plugin *self, const char *op, coil_dtype dtype)
{
  return strcmp(op, "add") == 0 && dtype == COIL_F32 ? COIL_SUPPORTED : COIL_UNSUPPORTED;
}

/* ---- compile and load ---- */

static coil_error *
write_file(const char *dir, const char *name, const char *text)
{
  char path[4096];
  if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
    return error_new(COIL_ERR_INVALID_ARGUMENT, "artifact directory name too long: %s", dir);
  FILE *f = fopen(path, "w");
  if (!f)
    return error_new(COIL_ERR_IO, "cannot write %s", path);
  int bad = fputs(text, f) < 0;
  bad |= fclose(f) != 0;
  return bad ? error_new(COIL_ERR_IO, "cannot write %s", path) : NULL;
}

/* Thread-safe: touches only its arguments and the (read-only) instance. */
static coil_error *
compile(coil_plugin *self, const coil_plugin_compile_args *args)
{
  char arch[32];
  int fail = self->fail_compile;
  coil_error *e = read_options(args->options, arch, sizeof arch, &fail);
  if (e)
    return e;
  if (fail)
    return error_new(COIL_ERR_COMPILE_FAILED, "compile of '%s' failed as asked by "
                     "fail_compile", args->program->name);
  char *text = coil_wir_print(args->program);
  e = write_file(args->artifact_dir, "program.wir", text);
  free(text);
  if (e)
    return e;
  char manifest[512];
  snprintf(manifest, sizeof manifest,
           "{\"plugin\": \"good\", \"plugin_version\": \"1.0.0\", \"wir_version\": \"%d.%d\", "
           "\"program\": \"%s\", \"arch\": \"%s\", \"files\": [\"program.wir\"]}\n",
           args->program->version_major, args->program->version_minor, args->program->name,
           self->arch);
  return write_file(args->artifact_dir, COIL_ARTIFACT_MANIFEST, manifest);
}

static coil_error *
load(coil_plugin *self, const coil_plugin_load_args *args, coil_artifact **out)
{
  char path[4096], text[1024] = "";
  snprintf(path, sizeof path, "%s/%s", args->artifact_dir, COIL_ARTIFACT_MANIFEST);
  FILE *f = fopen(path, "r");
  if (!f)
    return error_new(COIL_ERR_IO, "no artifact in %s: its manifest.json is missing",
                     args->artifact_dir);
  size_t n = fread(text, 1, sizeof text - 1, f);
  text[n] = 0;
  fclose(f);
  if (!strstr(text, "\"plugin\": \"good\""))
    return error_new(COIL_ERR_VERSION, "%s was not written by the good plugin", path);
  coil_artifact *a = calloc(1, sizeof *a);
  if (!a)
    return &out_of_memory;
  *out = a;
  return NULL;
}

/* ---- run: out0 = in0 + in1 ---- */

static int
same_shape(const coil_plugin_tensor *a, const coil_plugin_tensor *b)
{
  if (a->rank != b->rank)
    return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->sizes[i] != b->sizes[i])
      return 0;
  return 1;
}

static coil_error *
run(coil_artifact *artifact, const coil_plugin_run_args *args)
{
  if (args->ninputs != 2 || args->noutputs != 1)
    return error_new(COIL_ERR_INVALID_ARGUMENT, "run expects 2 inputs and 1 output");
  const coil_plugin_tensor *t[3] = {args->inputs[0], args->inputs[1], args->outputs[0]};
  for (int i = 0; i < 3; i++)
    if (t[i]->dtype != COIL_F32 || t[i]->device_type != COIL_DEVICE_CPU || t[i]->rank < 0 ||
        t[i]->rank > COIL_MAX_RANK || !same_shape(t[i], t[0]))
      return error_new(COIL_ERR_INVALID_ARGUMENT,
                       "run expects f32 CPU tensors of one shape");
  int rank = t[0]->rank;
  int64_t numel = 1, idx[COIL_MAX_RANK] = {0};
  for (int d = 0; d < rank; d++)
    numel *= t[0]->sizes[d];
  for (int64_t n = 0; n < numel; n++) {
    int64_t off[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++)
      for (int d = 0; d < rank; d++)
        off[i] += idx[d] * t[i]->strides[d];
    ((float *)t[2]->data)[off[2]] =
        ((const float *)t[0]->data)[off[0]] + ((const float *)t[1]->data)[off[1]];
    for (int d = rank - 1; d >= 0 && ++idx[d] == t[0]->sizes[d]; d--)
      idx[d] = 0;
  }
  return NULL;
}

static void
artifact_free(coil_artifact *artifact)
{
  free(artifact);
}

/* ---- the table and the entry ---- */

static const coil_plugin_api api = {
  .struct_size = sizeof(coil_plugin_api),
  .abi_major = COIL_PLUGIN_ABI_MAJOR,
  .abi_minor = COIL_PLUGIN_ABI_MINOR,
  .min_host_minor = 0,
  .name = "good",
  .vendor = "The coil authors",
  .version = "1.0.0",
  .features = COIL_FEATURE_EXECUTES,
  .wir_major = COIL_WIR_VERSION_MAJOR,
  .wir_min_minor = 0,
  .wir_max_minor = COIL_WIR_VERSION_MINOR,
  .error_code = error_code,
  .error_message = error_message,
  .error_free = error_free,
  .create = create,
  .destroy = destroy,
  .supports = supports,
  .compile = compile,
  .load = load,
  .run = run,
  .artifact_free = artifact_free,
};

const coil_plugin_api *
coil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const coil_host_api *host,
                  const char **why_not)
{
  if (host_abi_major != COIL_PLUGIN_ABI_MAJOR) {
    *why_not = "good is built for plugin ABI 1.x";
    return NULL;
  }
  return &api;
}
