/* fx_plugin.c — the fx plugin: the Wrapper IR handed back to PyTorch. It only emits (no load, no
 * run): compile writes a directory that coil's Python package loads (coil.fx.load):
 *
 *   kernels.py     one @triton.jit function per kernel (fx_triton.c), and KERNELS
 *   graph.py       build() -> torch.fx.GraphModule of the program's lines (fx_graph.c)
 *   program.wir    the program it was written from
 *   manifest.json  plugin, version, Wrapper IR version, files
 *
 * Nothing here needs Python, torch or Triton: they are the user's, where the module runs. The
 * plugin claims aten.convolution (a library call in the graph, as Inductor's extern kernels are);
 * mm and bmm are extern calls whatever it claims. It keeps no state: compile may run on several
 * threads at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/coil_sdk.h"
#include "fx.h"

struct coil_plugin {
  const coil_host_api *host;
};

static coil_error *
check_options(const coil_plugin_options *o)
{
  if (!o || !COIL_STRUCT_HAS(o, coil_plugin_options, values))
    return NULL;
  for (size_t i = 0; i < o->count; i++) {
    const char *key = o->keys && o->keys[i] ? o->keys[i] : "(null)";
    if (strncmp(key, "coil.", 5) != 0)
      return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "fx: unknown option '%s' (the fx plugin has no options of its own)",
                            key);
  }
  return NULL;
}

static coil_error *
create(const coil_plugin_create_args *args, coil_plugin **out)
{
  coil_error *e = check_options(COIL_STRUCT_HAS(args, coil_plugin_create_args, options) ? args->options : NULL);
  if (e)
    return e;
  coil_plugin *self = calloc(1, sizeof *self);
  if (!self)
    return coil_sdk_out_of_memory();
  self->host = COIL_STRUCT_HAS(args, coil_plugin_create_args, host) ? args->host : NULL;
  *out = self;
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
  (void)self;
  if (!op || (unsigned)dtype >= COIL_DTYPE_COUNT)
    return COIL_UNSUPPORTED;
  int k = coil_kop_from_name(op, strlen(op));
  if (k >= 0)
    return k == COIL_KOP_POW && !coil_dtype_is_float(dtype) ? COIL_UNSUPPORTED : COIL_SUPPORTED;
  if (strncmp(op, "reduce.", 7) == 0 && coil_reduction_from_name(op + 7, strlen(op + 7)) >= 0)
    return COIL_SUPPORTED;
  if (strncmp(op, "scan.", 5) == 0) {
    int r = coil_reduction_from_name(op + 5, strlen(op + 5));
    return (r == COIL_REDUCE_SUM || r == COIL_REDUCE_PROD || r == COIL_REDUCE_MAX || r == COIL_REDUCE_MIN) &&
                   dtype != COIL_BOOL ? COIL_SUPPORTED : COIL_UNSUPPORTED;
  }
  if (strncmp(op, "store.", 6) == 0) { /* Triton's atomics (fx_kernel_unsupported) */
    int m = coil_store_mode_from_name(op + 6, strlen(op + 6));
    if (m == COIL_STORE_ADD)
      return dtype == COIL_F32 || dtype == COIL_F64 || dtype == COIL_F16 || dtype == COIL_BF16 || dtype == COIL_I32 ||
                     dtype == COIL_I64 ? COIL_SUPPORTED : COIL_UNSUPPORTED;
    if (m == COIL_STORE_MAX || m == COIL_STORE_MIN)
      return dtype == COIL_F32 || dtype == COIL_F64 || dtype == COIL_I32 || dtype == COIL_I64 ? COIL_SUPPORTED
                                                                                              : COIL_UNSUPPORTED;
    return COIL_UNSUPPORTED;
  }
  bool fl = dtype == COIL_F32 || dtype == COIL_F16 || dtype == COIL_BF16 || dtype == COIL_F64;
  if ((strcmp(op, "aten.mm.default") == 0 || strcmp(op, "aten.bmm.default") == 0 ||
       strcmp(op, "aten.convolution.default") == 0) && fl)
    return COIL_SUPPORTED;
  return COIL_UNSUPPORTED;
}

coil_error *
fx_check_program(const coil_wir_program *p)
{
  char why[512];
  for (int k = 0; k < p->nkernels; k++) {
    const coil_kernel *kk = &p->kernels[k];
    if (!fx_name_ok(kk->name))
      return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "fx: kernel name '%s' cannot be a Python name here", kk->name);
    for (int i = 0; i < kk->nparams; i++)
      if (!fx_name_ok(kk->params[i].name))
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "fx: kernel %s: param name '%s' cannot be a Python name here",
                              kk->name, kk->params[i].name);
    if (fx_kernel_unsupported(p, kk, why, sizeof why))
      return coil_sdk_error(COIL_ERR_UNSUPPORTED, "fx: %s", why);
  }
  for (int v = 0; v < coil_sym_nvars(p->sym); v++) { /* size symbols, loop and indirect variables */
    const char *nm = coil_sym_var_name(p->sym, v);
    if (!fx_name_ok(nm))
      return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "fx: symbol '%s' cannot be a Python name here", nm);
    for (int k = 0; k < p->nkernels; k++) { /* kernels are module names, params arguments beside symbols */
      bool clash = strcmp(nm, p->kernels[k].name) == 0;
      for (int i = 0; i < p->kernels[k].nparams && !clash; i++)
        clash = strcmp(nm, p->kernels[k].params[i].name) == 0;
      if (clash)
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "fx: symbol '%s' has the name of kernel %s or one of its params",
                              nm, p->kernels[k].name);
    }
  }
  for (int b = 0; b < p->nbuffers; b++)
    if (!fx_name_ok(p->buffers[b].name))
      return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "fx: buffer name '%s' cannot be a Python name here",
                            p->buffers[b].name);
  return NULL;
}

static coil_error *
compile_program(coil_plugin *self, const coil_plugin_compile_args *args, const coil_wir_program *p)
{
  (void)self;
  if (!COIL_STRUCT_HAS(args, coil_plugin_compile_args, artifact_dir) || !args->artifact_dir)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "fx: compile without a program or an artifact directory");
  coil_error *e = check_options(COIL_STRUCT_HAS(args, coil_plugin_compile_args, options) ? args->options : NULL);
  if (!e)
    e = fx_check_program(p);
  return e ? e : fx_write(p, args->artifact_dir);
}

/* The program comes as text (ABI 1.3, COIL_FEATURE_PROGRAM_TEXT): parsed into a copy of our own,
 * which the emitter may change (loop ranges) without touching the host's. */
static coil_error *
compile(coil_plugin *self, const coil_plugin_compile_args *args)
{
  coil_wir_program *p = NULL;
  coil_error *e = coil_sdk_compile_program("fx", args, &p);
  if (!e)
    e = compile_program(self, args, p);
  coil_wir_free(p);
  return e;
}

coil_error *
fx_write(const coil_wir_program *p, const char *dir)
{
  coil_error *e = NULL;
  coil_strbuf kernels = {0}, graph = {0};
  char why[512] = "";
  fx_triton_module(p, &kernels);
  bool ok = fx_graph_module(p, &graph, why, sizeof why);
  char *wir = coil_wir_print(p);
  if (!ok)
    e = coil_sdk_error(COIL_ERR_UNSUPPORTED, "fx: %s", why);
  else if (!kernels.s || !graph.s || !wir)
    e = coil_sdk_out_of_memory();
  if (!e)
    e = coil_sdk_write_file(dir, "kernels.py", kernels.s);
  if (!e)
    e = coil_sdk_write_file(dir, "graph.py", graph.s);
  if (!e)
    e = coil_sdk_write_file(dir, "program.wir", wir);
  coil_strbuf_free(&kernels);
  coil_strbuf_free(&graph);
  free(wir);
  if (e)
    return e;
  char manifest[512];
  snprintf(manifest, sizeof manifest,
           "{\"plugin\": \"" FX_NAME "\", \"plugin_version\": \"" FX_VERSION "\", \"wir_version\": \"%d.%d\", "
           "\"files\": [\"kernels.py\", \"graph.py\", \"program.wir\"]}\n",
           p->version_major, p->version_minor);
  return coil_sdk_write_file(dir, COIL_ARTIFACT_MANIFEST, manifest); /* last: complete */
}

static const coil_plugin_api api = {
    .struct_size = sizeof(coil_plugin_api),
    .abi_major = COIL_PLUGIN_ABI_MAJOR,
    .abi_minor = COIL_PLUGIN_ABI_MINOR,
    .min_host_minor = 0,
    .name = FX_NAME,
    .vendor = "The coil authors",
    .version = FX_VERSION,
    .features = COIL_FEATURE_EMITS_ONLY | COIL_FEATURE_PROGRAM_TEXT, /* reads program_text only */
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
};

COIL_PLUGIN_EXPORT const coil_plugin_api *
coil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const coil_host_api *host, const char **why_not)
{
  (void)host_abi_minor, (void)host;
  if (host_abi_major != COIL_PLUGIN_ABI_MAJOR) {
    *why_not = "fx is built for plugin ABI 1.x";
    return NULL;
  }
  return &api;
}
