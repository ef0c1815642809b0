/* newer_minor — a plugin from the future: built against an ABI minor three above the host's,
 * whose plugin table has two more fields and whose compile args have one more, but able to work
 * with a 1.0 host (min_host_minor 0). It must load: the host reads the prefix of its table that
 * it knows, and the plugin reads only the fields of the host's structs that lie within their
 * struct_size. */
#include <string.h>

#include "stub.h"

/* The future plugin table: today's, grown at the end. */
typedef struct api_1_3 {
  coil_plugin_api v1_0;
  coil_error *(*autotune)(coil_plugin *self, int budget_ms); /* [optional] in the future minor */
  uint64_t flags;                                             /* in the future minor */
} api_1_3;

/* The future compile args: today's fields, then one more. */
typedef struct compile_args_1_3 {
  coil_plugin_compile_args today;
  int32_t autotune_budget_ms; /* in the future minor */
} compile_args_1_3;

static coil_error *
compile(coil_plugin *self, const coil_plugin_compile_args *args)
{
  /* Today's host's args end before autotune_budget_ms: reading it anyway would read past the
   * host's struct (ASan would see it). */
  const compile_args_1_3 *a = (const compile_args_1_3 *)(const void *)args;
  int32_t budget = args->struct_size >= COIL_STRUCT_SIZE_TO(compile_args_1_3, autotune_budget_ms)
                       ? a->autotune_budget_ms : 0;
  if (budget != 0)
    return stub_error(COIL_ERR_INTERNAL, "read a field the host does not have");
  if (stub_write_manifest(args->artifact_dir, "newer_minor") < 0)
    return stub_error(COIL_ERR_IO, "cannot write the manifest");
  return NULL;
}

static coil_error *
autotune(coil_plugin *self, int budget_ms)
{
  return NULL;
}

static const api_1_3 api = {
  .v1_0 = {
    .struct_size = sizeof(api_1_3),
    .abi_major = COIL_PLUGIN_ABI_MAJOR, .abi_minor = COIL_PLUGIN_ABI_MINOR + 3,
    .min_host_minor = 0,
    .name = "newer_minor", .vendor = "coil tests", .version = "1.3.0",
    .features = COIL_FEATURE_EMITS_ONLY | (UINT64_C(1) << 40), /* a feature bit from 1.3 */
    STUB_WIR, STUB_ERRORS, STUB_LIFECYCLE, .compile = compile,
  },
  .autotune = autotune,
  .flags = 42,
};

const coil_plugin_api *
coil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const coil_host_api *host,
                  const char **why_not)
{
  if (host_abi_major != COIL_PLUGIN_ABI_MAJOR) {
    *why_not = "built for plugin ABI 1.x";
    return NULL;
  }
  return &api.v1_0;
}
