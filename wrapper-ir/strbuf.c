/* strbuf.c — growable strings. */
#include "coil/strbuf.h"

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
  free(b->s);
  b->s = NULL;
  b->len = b->cap = 0;
}
