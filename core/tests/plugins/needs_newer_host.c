/* needs_newer_host — built against ABI 1.90 and using its host features unguarded, so it states
 * min_host_minor 90: every host so far must refuse it. */
#include "stub.h"

static const coil_plugin_api api = {
  .struct_size = sizeof(coil_plugin_api),
  .abi_major = COIL_PLUGIN_ABI_MAJOR, .abi_minor = 90, .min_host_minor = 90,
  .name = "needs_newer_host", .vendor = "coil tests", .version = "0.1.0",
  .features = COIL_FEATURE_EMITS_ONLY, STUB_WIR, STUB_ERRORS, STUB_LIFECYCLE,
  .compile = stub_compile,
};

const coil_plugin_api *
coil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const coil_host_api *host,
                  const char **why_not)
{
  return &api;
}
