/* diag.c — error messages as values. A message is written once: the first error wins, so the
 * innermost, most specific cause is what the user reads. */
#include <stdarg.h>
#include <stdio.h>

#include "coil/base.h"

int
coil_diag_set(coil_diag *d, const char *fmt, ...)
{
  if (!d || d->msg[0])
    return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->msg, sizeof d->msg, fmt, ap);
  va_end(ap);
  return -1;
}

int
coil_diag_at(coil_diag *d, const char *file, int line, int col, const char *fmt, ...)
{
  if (!d || d->msg[0])
    return -1;
  int n;
  if (col > 0)
    n = snprintf(d->msg, sizeof d->msg, "%s:%d:%d: error: ", file, line, col);
  else if (line > 0)
    n = snprintf(d->msg, sizeof d->msg, "%s:%d: error: ", file, line);
  else
    n = snprintf(d->msg, sizeof d->msg, "%s: error: ", file);
  if (n < 0 || (size_t)n >= sizeof d->msg)
    return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->msg + n, sizeof d->msg - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}
