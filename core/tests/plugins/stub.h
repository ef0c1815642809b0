/* stub.h — the parts the broken test plugins share: error objects and a working create,
 * destroy, supports and compile, so that each broken plugin differs from a valid one in exactly
 * the way its name says. Like every plugin, these include only plugin-sdk and wrapper-ir. */
#ifndef COIL_TEST_STUB_H
#define COIL_TEST_STUB_H

#include "coil/coil_plugin.h"

/* An error with this code and message (msg: static, may be NULL on purpose). */
coil_error *stub_error(coil_error_code code, const char *msg);
coil_error_code stub_error_code(const coil_error *err);
const char *stub_error_message(const coil_error *err);
void stub_error_free(coil_error *err);

coil_error *stub_create(const coil_plugin_create_args *args, coil_plugin **out);
void stub_destroy(coil_plugin *self);
coil_support stub_supports(const coil_plugin *self, const char *op, coil_dtype dtype);
/* Writes a manifest naming the plugin "stub" and returns OK. */
coil_error *stub_compile(coil_plugin *self, const coil_plugin_compile_args *args);
/* Writes COIL_ARTIFACT_MANIFEST into dir: 0, or -1. */
int stub_write_manifest(const char *dir, const char *plugin);

/* Field groups of a valid ABI 1.0 emit-only table, to be combined in an initializer. */
#define STUB_VERSION_1_0 \
  .abi_major = COIL_PLUGIN_ABI_MAJOR, .abi_minor = COIL_PLUGIN_ABI_MINOR, .min_host_minor = 0
#define STUB_WIR \
  .wir_major = COIL_WIR_VERSION_MAJOR, .wir_min_minor = 0, .wir_max_minor = COIL_WIR_VERSION_MINOR
#define STUB_ERRORS \
  .error_code = stub_error_code, .error_message = stub_error_message, \
  .error_free = stub_error_free
#define STUB_LIFECYCLE .create = stub_create, .destroy = stub_destroy, .supports = stub_supports

#endif
