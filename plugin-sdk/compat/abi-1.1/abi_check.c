/* abi_check.c — the frozen header is ABI 1.1's and is the one this build sees. */
#include <stddef.h>

#include "coil/coil_plugin.h"

_Static_assert(COIL_PLUGIN_ABI_MAJOR == 1 && COIL_PLUGIN_ABI_MINOR == 1, "the compat header must be ABI 1.1's");
_Static_assert(sizeof(coil_plugin_run_args) == offsetof(coil_plugin_run_args, outputs) + sizeof(void *),
               "1.1's run args end at outputs (1.2 appended the stream)");
