/* wrong_major — a table built for plugin ABI 2.1. A careful plugin would decline a 1.x host in
 * its entry; this one returns its table anyway, so the host's own major check is what stops it. */
#include "stub.h"

static const coil_plugin_api api = {
  .struct_size = sizeof(coil_plugin_api),
  .abi_major = COIL_PLUGIN_ABI_MAJOR + 1, .abi_minor = 1, .min_host_minor = 0,
  .name = "wrong_major", .vendor = "coil tests", .version = "2.1.0",
  .features = COIL_FEATURE_EMITS_ONLY, STUB_WIR, STUB_ERRORS, STUB_LIFECYCLE,
  .compile = stub_compile,
};

const coil_plugin_api *
coil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const coil_host_api *host,
                  const char **why_not)
{
  return &api;
}
