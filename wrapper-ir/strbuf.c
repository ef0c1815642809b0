/* strbuf.c — growable strings. */
#include "coil/strbuf.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/arena.h"

static void
reserve(coil_strbuf *b, size_t extra)
{
  if (b->len + extra + 1 <= b->cap)
    return;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < b->len + extra + 1)
    cap *= 2;
  b->s = coil_xrealloc(b->s, cap);
  b->cap = cap;
}

void
coil_strbuf_putn(coil_strbuf *b, const char *s, size_t n)
{
  reserve(b, n);
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = 0;
}

void
coil_strbuf_puts(coil_strbuf *b, const char *s)
{
  coil_strbuf_putn(b, s, strlen(s));
}

void
coil_strbuf_printf(coil_strbuf *b, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char tmp[256];
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n < sizeof tmp) {
    coil_strbuf_putn(b, tmp, (size_t)n);
    return;
  }
  reserve(b, (size_t)n);
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

char *
coil_strbuf_take(coil_strbuf *b)
{
  char *s = b->s;
  if (!s) {
    s = coil_xmalloc(1);
    s[0] = 0;
  }
  b->s = NULL;
  b->len = b->cap = 0;
  return s;
}

void
coil_strbuf_free(coil_strbuf *b)
{
  coil_xfree(b->s);
  b->s = NULL;
  b->len = b->cap = 0;
}

/* Shortest decimal that reads back to the same double, always with a '.' or an exponent so it
 * stays a float when parsed. */
void
coil_strbuf_double(coil_strbuf *b, double f)
{
  if (isnan(f)) {
    coil_strbuf_puts(b, "nan");
    return;
  }
  if (isinf(f)) {
    coil_strbuf_puts(b, f < 0 ? "-inf" : "inf");
    return;
  }
  /* the fewest significant digits that read back exactly, laid out as Python's repr does:
   * fixed notation for exponents -4..15 (1500.0, 0.0001), scientific otherwise (1e-05) */
  char buf[64];
  int prec;
  for (prec = 1; prec < 17; prec++) {
    snprintf(buf, sizeof buf, "%.*e", prec - 1, f);
    if (strtod(buf, NULL) == f)
      break;
  }
  snprintf(buf, sizeof buf, "%.*e", prec - 1, f);
  int exp10 = atoi(strchr(buf, 'e') + 1);
  if (exp10 >= -4 && exp10 < 16) {
    int decimals = prec - 1 - exp10;
    snprintf(buf, sizeof buf, "%.*f", decimals > 0 ? decimals : 0, f);
  }
  coil_strbuf_puts(b, buf);
  if (!strpbrk(buf, ".e"))
    coil_strbuf_puts(b, ".0");
}
