/* null_table — declines every host, with a reason. */
#include "stub.h"

const coil_plugin_api *
coil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const coil_host_api *host,
                  const char **why_not)
{
  *why_not = "needs a frobnicator device, and this machine has none";
  return NULL;
}
