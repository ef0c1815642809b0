/* zero_size — a complete table whose struct_size was left 0. */
#include "stub.h"

static const coil_plugin_api api = {
  .struct_size = 0,
  STUB_VERSION_1_0, .name = "zero_size", .vendor = "coil tests", .version = "0.1.0",
  .features = COIL_FEATURE_EMITS_ONLY, STUB_WIR, STUB_ERRORS, STUB_LIFECYCLE,
  .compile = stub_compile,
};

const coil_plugin_api *
coil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const coil_host_api *host,
                  const char **why_not)
{
  return &api;
}
