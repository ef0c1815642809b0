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
char *coil_strbuf_take(coil_strbuf *b); /* never NULL; resets b */
void coil_strbuf_free(coil_strbuf *b);

#endif
