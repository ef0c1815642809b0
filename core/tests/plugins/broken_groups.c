/* broken_groups — a valid table except for ABI 1.4's groups: the device functions without
 * mem_free, and events without streams. */
#include "stub.h"

static int32_t count(coil_plugin *self) { (void)self; return 1; }
static coil_error *info(coil_plugin *s, int32_t d, coil_device_info *o) { (void)s, (void)d, (void)o; return NULL; }
static coil_error *alloc(coil_plugin *s, int32_t d, size_t n, void **o) { (void)s, (void)d, (void)n, (void)o; return NULL; }
static coil_error *copy(coil_plugin *s, const coil_mem_copy_args *a) { (void)s, (void)a; return NULL; }
static coil_error *sync_ev(coil_plugin *s, coil_event *e) { (void)s, (void)e; return NULL; }

static const coil_plugin_api api = {
  .struct_size = sizeof(coil_plugin_api),
  STUB_VERSION_1_0, .name = "broken_groups", .vendor = "coil tests", .version = "0.1.0",
  .features = COIL_FEATURE_EMITS_ONLY, STUB_WIR, STUB_ERRORS, STUB_LIFECYCLE,
  .device_count = count, .device_info = info, .mem_alloc = alloc, .mem_copy = copy,
  .event_sync = sync_ev,
};

const coil_plugin_api *
coil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const coil_host_api *host,
                  const char **why_not)
{
  (void)host_abi_major, (void)host_abi_minor, (void)host, (void)why_not;
  return &api;
}
