/* emit_plugin.c — test plugins for the emit tier: an emit-only plugin (COIL_FEATURE_EMITS_ONLY)
 * whose compile writes a small C file describing the program, which `cc -fsyntax-only` must
 * accept; built with -DEMIT_BROKEN it writes C with a syntax error, which the emit tier must
 * report as a failure. Includes only the SDK, like any plugin. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/coil_plugin.h"
#include "coil/coil_sdk.h"

struct coil_plugin {
  int unused;
};

static coil_error *
check_options(const coil_plugin_options *o)
{
  size_t n = o && COIL_STRUCT_HAS(o, coil_plugin_options, values) ? o->count : 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(o->keys[i], "coil.", 5) != 0)
      return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "emit_c: unknown option '%s'", o->keys[i]);
  return NULL;
}

static coil_error *
create(const coil_plugin_create_args *args, coil_plugin **out)
{
  coil_error *e = check_options(COIL_STRUCT_HAS(args, coil_plugin_create_args, options) ? args->options : NULL);
  if (e)
    return e;
  if (!(*out = calloc(1, sizeof **out)))
    return coil_sdk_out_of_memory();
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
  (void)self, (void)op, (void)dtype;
  return COIL_SUPPORTED; /* it only describes programs */
}

static coil_error *
compile(coil_plugin *self, const coil_plugin_compile_args *args)
{
  (void)self;
  coil_error *e = check_options(COIL_STRUCT_HAS(args, coil_plugin_compile_args, options) ? args->options : NULL);
  if (e)
    return e;
  const coil_wir_program *p = args->program;
  char text[512];
#ifdef EMIT_BROKEN
  snprintf(text, sizeof text, "/* program with %d kernels */\nint coil_emit_kernels(void) { return %d + ; }\n",
           p->nkernels, p->nkernels);
#else
  snprintf(text, sizeof text, "/* program with %d kernels */\nint coil_emit_kernels(void) { return %d; }\n",
           p->nkernels, p->nkernels);
#endif
  if ((e = coil_sdk_write_file(args->artifact_dir, "kernels.c", text)))
    return e;
  snprintf(text, sizeof text, "{\"plugin\": \"emit_c\", \"plugin_version\": \"0.1.0\", \"wir_version\": \"%d.%d\", "
                              "\"files\": [\"kernels.c\"]}\n", p->version_major, p->version_minor);
  return coil_sdk_write_file(args->artifact_dir, COIL_ARTIFACT_MANIFEST, text);
}

static const coil_plugin_api api = {
    .struct_size = sizeof(coil_plugin_api),
    .abi_major = COIL_PLUGIN_ABI_MAJOR, .abi_minor = COIL_PLUGIN_ABI_MINOR, .min_host_minor = 0,
    .name = "emit_c", .vendor = "The coil authors (a test plugin)", .version = "0.1.0",
    .features = COIL_FEATURE_EMITS_ONLY,
    .wir_major = COIL_WIR_VERSION_MAJOR, .wir_min_minor = 0, .wir_max_minor = COIL_WIR_VERSION_MINOR,
    .error_code = coil_sdk_error_code, .error_message = coil_sdk_error_message, .error_free = coil_sdk_error_free,
    .create = create, .destroy = destroy, .supports = supports, .compile = compile,
};

COIL_PLUGIN_EXPORT const coil_plugin_api *
coil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const coil_host_api *host, const char **why_not)
{
  (void)host_abi_minor, (void)host;
  if (host_abi_major != COIL_PLUGIN_ABI_MAJOR) {
    *why_not = "emit_c is built for plugin ABI 1.x";
    return NULL;
  }
  return &api;
}
