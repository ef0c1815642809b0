/* abi_check.c — the frozen header is ABI 1.3's and is the one this build sees. */
#include <stddef.h>

#include "coil/coil_plugin.h"

_Static_assert(COIL_PLUGIN_ABI_MAJOR == 1 && COIL_PLUGIN_ABI_MINOR == 3, "the compat header must be ABI 1.3's");
_Static_assert(sizeof(coil_plugin_api) == COIL_STRUCT_SIZE_TO(coil_plugin_api, get_extension),
               "1.3's plugin table ends at get_extension (1.4 appended devices, streams, events)");
