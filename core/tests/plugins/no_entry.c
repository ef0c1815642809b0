/* no_entry — a shared library that exports no coil_plugin_entry (only a look-alike). */
#include "coil/coil_plugin.h"

COIL_PLUGIN_EXPORT int coil_plugin_entry_v0(void);

int
coil_plugin_entry_v0(void)
{
  return 0;
}
