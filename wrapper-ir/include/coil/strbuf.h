/* strbuf.h — a growable string for printers. Owned by the caller; coil_strbuf_take hands the
 * malloc'd text over. */
#ifndef COIL_STRBUF_H
#define COIL_STRBUF_H

#include <stddef.h>

typedef struct coil_strbuf {
  char *s;     /* NUL-terminated, malloc'd (NULL while empty) */
  size_t len, cap;
} coil_strbuf;

void coil_strbuf_printf(coil_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void coil_strbuf_puts(coil_strbuf *b, const char *s);
void coil_strbuf_putn(coil_strbuf *b, const char *s, size_t n);
/* A double in the fewest digits that read back to it, laid out as Python's repr (1500.0, 1e-05,
 * inf, -inf, nan); always with a '.' or an exponent, so it reads back as a float. */
void coil_strbuf_double(coil_strbuf *b, double f);
char *coil_strbuf_take(coil_strbuf *b); /* never NULL; resets b */
void coil_strbuf_free(coil_strbuf *b);

#endif
