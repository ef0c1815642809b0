/* interp_plugin.c — the `interp` plugin: the Wrapper IR interpreter behind the plugin ABI. The
 * simplest plugin that executes, and the one a vendor reads first: compile writes the program's
 * text and a manifest into the artifact directory; load parses and verifies the text back; run
 * hands the tensors to the engine (interp.h) and copies its outputs into the host's.
 * No options of its own (keys starting with "coil." are accepted and ignored). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/coil_plugin.h"
#include "coil/coil_sdk.h"
#include "interp.h"

#define INTERP_VERSION "0.1.0"

/* ---- instances ---- */

struct coil_plugin {
  const coil_host_api *host; /* borrowed from create until destroy */
};

struct coil_artifact {
  coil_wir_program *program; /* owned */
};

static coil_error *
check_options(const coil_plugin_options *o)
{
  size_t n = o && COIL_STRUCT_HAS(o, coil_plugin_options, values) ? o->count : 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(o->keys[i], "coil.", 5) != 0)
      return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "interp: unknown option '%s' (interp has no "
                       "options of its own)", o->keys[i]);
  return NULL;
}

static coil_error *
create(const coil_plugin_create_args *args, coil_plugin **out)
{
  coil_error *e = check_options(args->options);
  if (e)
    return e;
  coil_plugin *p = calloc(1, sizeof *p);
  if (!p)
    return coil_sdk_out_of_memory();
  p->host = COIL_STRUCT_HAS(args, coil_plugin_create_args, host) ? args->host : NULL;
  *out = p;
  return NULL;
}

static void
destroy(coil_plugin *self)
{
  free(self);
}

/* Every kernel op and the library calls the engine implements, on every dtype, except
 * convolution, cumsum and topk: the core generates a kernel for what a plugin does not claim,
 * and interp runs that, as any new backend would (a topk longer than the core generates stays a
 * library call, which interp then reports as not supported). The engine still runs a
 * convolution extern_call when a program has one ([coil] convolution = library), which checks
 * the library path. coil.attention, the fused attention, it claims for the floating dtypes:
 * interp is the reference the fused kernels of other plugins are compared with; aten.bmm.dtype
 * (decompose-K's partial products) for f16, bf16 and f32 operands, for the same reason. */
static coil_support
supports(const coil_plugin *self, const char *op, coil_dtype dtype)
{
  static const char *const externs[] = {
      "aten.mm.default", "aten.bmm.default", "aten.addmm.default",
      "aten.max_pool2d_with_indices.default", "aten.avg_pool2d.default",
      "aten.gather.default", "aten.embedding.default", "aten.index.Tensor"};
  (void)self;
  if ((unsigned)dtype >= COIL_DTYPE_COUNT)
    return COIL_UNSUPPORTED;
  if (coil_kop_from_name(op, strlen(op)) >= 0)
    return COIL_SUPPORTED;
  if (strncmp(op, "reduce.", 7) == 0 && coil_reduction_from_name(op + 7, strlen(op + 7)) >= 0)
    return COIL_SUPPORTED;
  if (strncmp(op, "scan.", 5) == 0) { /* scans (Wrapper IR 1.4) */
    int r = coil_reduction_from_name(op + 5, strlen(op + 5));
    return (r == COIL_REDUCE_SUM || r == COIL_REDUCE_PROD || r == COIL_REDUCE_MAX || r == COIL_REDUCE_MIN) &&
                   dtype != COIL_BOOL ? COIL_SUPPORTED : COIL_UNSUPPORTED;
  }
  if (strncmp(op, "store.", 6) == 0) { /* combining stores (Wrapper IR 1.3) */
    int m = coil_store_mode_from_name(op + 6, strlen(op + 6));
    return m >= 0 && coil_store_mode_valid((coil_store_mode)m, dtype) ? COIL_SUPPORTED : COIL_UNSUPPORTED;
  }
  for (size_t i = 0; i < sizeof externs / sizeof *externs; i++)
    if (strcmp(op, externs[i]) == 0)
      return COIL_SUPPORTED;
  if (strcmp(op, "aten.bmm.dtype") == 0) /* f32 partial products of f16, bf16 or f32 operands */
    return dtype == COIL_F16 || dtype == COIL_BF16 || dtype == COIL_F32 ? COIL_SUPPORTED : COIL_UNSUPPORTED;
  if (strcmp(op, "coil.attention") == 0)
    return dtype == COIL_F16 || dtype == COIL_BF16 || dtype == COIL_F32 || dtype == COIL_F64 ? COIL_SUPPORTED : COIL_UNSUPPORTED;
  return COIL_UNSUPPORTED;
}

/* ---- compile and load ---- */


/* Thread-safe: reads only its arguments. The manifest is written last: it marks the artifact
 * complete. */
static coil_error *
compile(coil_plugin *self, const coil_plugin_compile_args *args)
{
  (void)self;
  coil_error *e = check_options(args->options);
  if (e)
    return e;
  /* the program as text (COIL_FEATURE_PROGRAM_TEXT): checked by a parse of our own, kept
   * verbatim as the artifact (load parses it again) */
  coil_wir_program *p = NULL;
  e = coil_sdk_compile_program("interp", args, &p);
  if (e)
    return e;
  int major = p->version_major, minor = p->version_minor;
#ifdef INTERP_BROKEN_F16CLAIM /* conformance/tests: supports() says f16, compile refuses it */
  for (int b = 0; b < p->nbuffers; b++)
    if (p->buffers[b].dtype == COIL_F16) {
      fprintf(stderr, "broken_f16claim: refusing buffer %s of dtype f16\n", p->buffers[b].name);
      coil_wir_free(p);
      return coil_sdk_error(COIL_ERR_UNSUPPORTED, "broken_f16claim: f16 buffers are not supported");
    }
#endif
  coil_wir_free(p);
  char *text = coil_sdk_compile_text(args);
  if (!text)
    return coil_sdk_error(COIL_ERR_OUT_OF_MEMORY, "interp: out of memory");
  e = coil_sdk_write_file(args->artifact_dir, "program.wir", text);
  free(text);
  if (e)
    return e;
  char manifest[1024];
  snprintf(manifest, sizeof manifest,
           "{\"plugin\": \"interp\", \"plugin_version\": \"" INTERP_VERSION "\", "
           "\"wir_version\": \"%d.%d\", \"files\": [\"program.wir\"]}\n",
           major, minor);
  return coil_sdk_write_file(args->artifact_dir, COIL_ARTIFACT_MANIFEST, manifest);
}


static coil_error *
load(coil_plugin *self, const coil_plugin_load_args *args, coil_artifact **out)
{
  (void)self;
  char path[4096];
  size_t len = 0;
  snprintf(path, sizeof path, "%s/%s", args->artifact_dir, COIL_ARTIFACT_MANIFEST);
  char *manifest = coil_sdk_read_file(path, 256u << 20, &len);
  if (!manifest)
    return coil_sdk_error(COIL_ERR_IO, "interp: no artifact in %s (manifest.json is missing)", args->artifact_dir);
  bool ours = strstr(manifest, "\"plugin\": \"interp\"") != NULL;
  free(manifest);
  if (!ours)
    return coil_sdk_error(COIL_ERR_VERSION, "interp: %s was not written by the interp plugin", path);
  coil_wir_program *p;
  coil_error *pe = coil_sdk_read_program("interp", args->artifact_dir, &p);
  if (pe)
    return pe;
  coil_artifact *a = calloc(1, sizeof *a);
  if (!a) {
    coil_wir_free(p);
    return coil_sdk_out_of_memory();
  }
  a->program = p;
  *out = a;
  return NULL;
}

/* ---- run ---- */

static coil_error *
run(coil_artifact *artifact, const coil_plugin_run_args *args)
{
  const coil_wir_program *p = artifact->program;
  if ((int)args->ninputs != p->ninputs)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "interp: %zu inputs given, the program takes %d",
                     args->ninputs, p->ninputs);
  interp_tensor *in = calloc(args->ninputs + 1, sizeof *in);
  if (!in)
    return coil_sdk_out_of_memory();
  for (size_t i = 0; i < args->ninputs; i++) {
    const coil_plugin_tensor *t = args->inputs[i];
    if (t->device_type != COIL_DEVICE_CPU || t->rank < 0 || t->rank > COIL_MAX_RANK ||
        t->dtype < 0 || t->dtype >= COIL_DTYPE_COUNT) {
      free(in);
      return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "interp: input %zu is not a CPU tensor it can read", i);
    }
    in[i].data = t->data;
    in[i].dtype = (coil_dtype)t->dtype;
    in[i].rank = t->rank;
    for (int k = 0; k < t->rank; k++) {
      in[i].sizes[k] = t->sizes[k];
      in[i].strides[k] = t->strides[k];
    }
  }
  interp_tensor *outs = NULL;
  int nouts = 0;
  coil_diag d = {0};
  int rc = interp_run(p, in, (int)args->ninputs, &outs, &nouts, &d);
  free(in);
  if (rc)
    return coil_sdk_error(COIL_ERR_RUNTIME, "%s", d.msg);
  coil_error *e = NULL;
  if ((size_t)nouts != args->noutputs)
    e = coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "interp: %zu outputs given, the program has %d", args->noutputs, nouts);
  for (int i = 0; !e && i < nouts; i++) { /* copy into the host's tensors, through its strides */
    const coil_plugin_tensor *t = args->outputs[i];
    const interp_tensor *o = &outs[i];
    bool same = t->rank == o->rank && t->dtype == (int32_t)o->dtype;
    for (int k = 0; same && k < o->rank; k++)
      same = t->sizes[k] == o->sizes[k];
    if (!same) {
      e = coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "interp: output %d does not have the program's dtype and sizes", i);
      break;
    }
    size_t es = coil_dtype_size(o->dtype);
    int64_t numel = 1, idx[COIL_MAX_RANK] = {0};
    for (int k = 0; k < o->rank; k++)
      numel *= o->sizes[k];
    for (int64_t n = 0; n < numel; n++) {
      int64_t off = 0;
      for (int k = 0; k < o->rank; k++)
        off += idx[k] * t->strides[k];
      memcpy((char *)t->data + (size_t)off * es, (const char *)o->data + (size_t)n * es, es);
      for (int k = o->rank - 1; k >= 0 && ++idx[k] == o->sizes[k]; k--)
        idx[k] = 0;
    }
  }
  interp_free_outputs(outs, nouts);
#ifdef INTERP_BROKEN_OOB /* conformance/tests: a kernel that writes one byte past its output */
  if (!e && args->noutputs > 0) {
    const coil_plugin_tensor *t = args->outputs[0];
    size_t bytes = coil_dtype_size((coil_dtype)t->dtype);
    for (int k = 0; k < t->rank; k++)
      bytes *= (size_t)t->sizes[k];
    if (t->data)
      ((unsigned char *)t->data)[bytes] ^= 0x5a;
  }
#endif
#ifdef INTERP_BROKEN_UNALIGNED_OOB /* conformance/tests: an f32 element past output 0, only when an
                                     input starts off a 64-byte boundary */
  bool odd = false;
  for (size_t k = 0; k < args->ninputs; k++)
    odd = odd || (args->inputs[k]->data && (uintptr_t)args->inputs[k]->data % 64 != 0);
  if (!e && odd && args->noutputs > 0 && args->outputs[0]->data) {
    const coil_plugin_tensor *t = args->outputs[0];
    size_t bytes = coil_dtype_size((coil_dtype)t->dtype);
    for (int k = 0; k < t->rank; k++)
      bytes *= (size_t)t->sizes[k];
    float v = 2.5f;
    memcpy((unsigned char *)t->data + bytes, &v, sizeof v);
    fprintf(stderr, "broken_unaligned_oob: wrote 2.5 one element past output 0\n");
  }
#endif
#ifdef INTERP_BROKEN_DROP /* conformance/tests: element 13 of output 0 never written, only when its
                             first size is 11 (the second run of a symbolic case) */
  if (!e && args->noutputs > 0 && args->outputs[0]->data && args->outputs[0]->rank > 0 &&
      args->outputs[0]->sizes[0] == 11) {
    const coil_plugin_tensor *t = args->outputs[0];
    int64_t numel = 1;
    for (int k = 0; k < t->rank; k++)
      numel *= t->sizes[k];
    size_t es = coil_dtype_size((coil_dtype)t->dtype);
    if (numel > 13 && coil_dtype_is_float((coil_dtype)t->dtype)) {
      memset((unsigned char *)t->data + 13 * es, 0xff, es); /* as the host left it: NaN */
      fprintf(stderr, "broken_drop: left element 13 of output 0 unwritten\n");
    }
  }
#endif
#ifdef INTERP_BROKEN_WRONG /* conformance/tests: right shapes, wrong numbers */
  if (!e && args->noutputs > 0 && args->outputs[0]->data) {
    const coil_plugin_tensor *t = args->outputs[0];
    int64_t numel = 1;
    for (int k = 0; k < t->rank; k++)
      numel *= t->sizes[k];
    if (t->dtype == COIL_F32)
      for (int64_t n = 0; n < numel; n++)
        ((float *)t->data)[n] = ((float *)t->data)[n] * 1.01f + 0.01f;
    else if (numel > 0)
      ((unsigned char *)t->data)[coil_dtype_size((coil_dtype)t->dtype) - 1] ^= 0x01;
  }
#endif
  return e;
}

static void
artifact_free(coil_artifact *artifact)
{
  if (artifact)
    coil_wir_free(artifact->program);
  free(artifact);
}

/* ---- the table and the entry ---- */

static const coil_plugin_api api = {
    .struct_size = sizeof(coil_plugin_api),
    .abi_major = COIL_PLUGIN_ABI_MAJOR,
    .abi_minor = COIL_PLUGIN_ABI_MINOR,
    .min_host_minor = 0,
    .name = "interp",
    .vendor = "The coil authors",
    .version = INTERP_VERSION,
    .features = COIL_FEATURE_EXECUTES | COIL_FEATURE_PROGRAM_TEXT, /* reads program_text only */
    .wir_major = COIL_WIR_VERSION_MAJOR,
    .wir_min_minor = 0,
    .wir_max_minor = COIL_WIR_VERSION_MINOR,
    .error_code = coil_sdk_error_code,
    .error_message = coil_sdk_error_message,
    .error_free = coil_sdk_error_free,
    .create = create,
    .destroy = destroy,
    .supports = supports,
    .compile = compile,
    .load = load,
    .run = run,
    .artifact_free = artifact_free,
};

COIL_PLUGIN_EXPORT const coil_plugin_api *
coil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const coil_host_api *host,
                  const char **why_not)
{
  (void)host_abi_minor;
  (void)host;
  if (host_abi_major != COIL_PLUGIN_ABI_MAJOR) {
    *why_not = "interp is built for plugin ABI 1.x";
    return NULL;
  }
  return &api;
}
