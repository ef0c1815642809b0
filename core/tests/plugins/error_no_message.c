/* error_no_message — compile fails with an error whose message is NULL. */
#include "stub.h"

static coil_error *
compile(coil_plugin *self, const coil_plugin_compile_args *args)
{
  return stub_error(COIL_ERR_COMPILE_FAILED, NULL);
}

static const coil_plugin_api api = {
  .struct_size = sizeof(coil_plugin_api),
  STUB_VERSION_1_0, .name = "error_no_message", .vendor = "coil tests", .version = "0.1.0",
  .features = COIL_FEATURE_EMITS_ONLY, STUB_WIR, STUB_ERRORS, STUB_LIFECYCLE,
  .compile = compile,
};

const coil_plugin_api *
coil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const coil_host_api *host,
                  const char **why_not)
{
  return &api;
}
