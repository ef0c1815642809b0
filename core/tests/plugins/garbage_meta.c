/* garbage_meta — working functions, but metadata the host must refuse: a name with a space, no
 * vendor, a version that is not semver, and both EXECUTES and EMITS_ONLY. */
#include "stub.h"

static const coil_plugin_api api = {
  .struct_size = sizeof(coil_plugin_api),
  STUB_VERSION_1_0, .name = "bad name", .vendor = NULL, .version = "1.0",
  .features = COIL_FEATURE_EMITS_ONLY | COIL_FEATURE_EXECUTES, STUB_WIR, STUB_ERRORS,
  STUB_LIFECYCLE, .compile = stub_compile,
};

const coil_plugin_api *
coil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const coil_host_api *host,
                  const char **why_not)
{
  return &api;
}
