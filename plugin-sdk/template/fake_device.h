/* fake_device.h — the template's device (plugin ABI 1.4): memory, copies, streams and events,
 * as a vendor's accelerator has them, made of host memory so that the whole device path runs on
 * a CPU. fake_device.c is the part a vendor replaces with calls into its driver.
 *
 * Two modes, by the template's option `device`:
 *   host (default)  one device, COIL_DEVICE_CPU and COIL_DEVICE_HOST_VISIBLE: the host hands over
 *                   its own memory, as it does for a plugin without devices;
 *   fake            one device, COIL_DEVICE_EXT_DEV, not host-visible: tensors live in memory
 *                   from mem_alloc whose pointers the host cannot dereference (they are
 *                   scrambled, so a host that reads one crashes, and ASan says where), every
 *                   byte goes in and out through mem_copy, and a run on a stream is queued and
 *                   done only at the next synchronize (a host that reads too early sees stale
 *                   data). An error of queued work comes back from that synchronize, naming
 *                   the kernel.
 * Everything here is under COIL_PLUGIN_ABI_MINOR >= 4: built against an older coil_plugin.h
 * (plugin-sdk/compat), the template has no devices. */
#ifndef TEMPLATE_FAKE_DEVICE_H
#define TEMPLATE_FAKE_DEVICE_H

#include <stdbool.h>

#include "coil/coil_plugin.h"

typedef struct fake_device fake_device;

#if COIL_PLUGIN_ABI_MINOR >= 4

/* One per instance; NULL when out of memory. fake: the `fake` mode (else `host`). */
fake_device *fake_device_new(bool fake);
/* Frees its streams, events and any memory the host did not free. */
void fake_device_free(fake_device *fd);
/* The instance's device (template_plugin.c). */
fake_device *template_device(coil_plugin *self);

/* A run on host memory: the template's interpreter. */
typedef coil_error *fake_run_fn(coil_artifact *a, const coil_plugin_run_args *args);
/* Checks the run's tensors belong to this device (in fake mode: EXT_DEV, inside one live
 * allocation) and gives run_host copies of them that point at real memory: now, or when the
 * stream in args (one of ours) gets to it. */
coil_error *fake_device_run(fake_device *fd, coil_artifact *a, const coil_plugin_run_args *args,
                            fake_run_fn *run_host);

/* The table's functions (coil_plugin.h, ABI 1.4). */
int32_t fake_device_count(coil_plugin *self);
coil_error *fake_device_info(coil_plugin *self, int32_t device, coil_device_info *out);
coil_error *fake_mem_alloc(coil_plugin *self, int32_t device, size_t bytes, void **out);
void fake_mem_free(coil_plugin *self, int32_t device, void *ptr);
coil_error *fake_mem_copy(coil_plugin *self, const coil_mem_copy_args *args);
coil_error *fake_stream_create(coil_plugin *self, int32_t device, coil_stream **out);
coil_error *fake_stream_sync(coil_plugin *self, coil_stream *stream);
void fake_stream_destroy(coil_plugin *self, coil_stream *stream);
coil_error *fake_event_record(coil_plugin *self, coil_stream *stream, coil_event **out);
coil_error *fake_event_wait(coil_plugin *self, coil_stream *stream, coil_event *event);
coil_error *fake_event_sync(coil_plugin *self, coil_event *event);
void fake_event_destroy(coil_plugin *self, coil_event *event);

/* The extension "template.fake_device.v1" (get_extension): what a test asks the device. */
#define FAKE_DEVICE_EXTENSION "template.fake_device.v1"
typedef struct fake_device_v1 {
  size_t struct_size;
  size_t (*live_bytes)(coil_plugin *self);  /* bytes allocated and not freed */
  size_t (*live_blocks)(coil_plugin *self); /* allocations not freed */
} fake_device_v1;
extern const fake_device_v1 fake_device_extension;

#endif
#endif
