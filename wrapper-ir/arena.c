/* arena.c — a chunked bump allocator. Chunks grow geometrically; large requests get their own
 * chunk. Freed all at once. */
#include "coil/arena.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct chunk {
  struct chunk *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
} chunk;

struct coil_arena {
  chunk *head;
  size_t next_size;
};

void *
coil_xmalloc(size_t n)
{
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "coil: out of memory (%zu bytes)\n", n);
    abort();
  }
  return p;
}

void *
coil_xrealloc(void *p, size_t n)
{
  void *q = realloc(p, n ? n : 1);
  if (!q) {
    fprintf(stderr, "coil: out of memory (%zu bytes)\n", n);
    abort();
  }
  return q;
}

coil_arena *
coil_arena_new(void)
{
  coil_arena *a = coil_xmalloc(sizeof *a);
  a->head = NULL;
  a->next_size = 16384;
  return a;
}

void
coil_arena_free(coil_arena *a)
{
  if (!a)
    return;
  for (chunk *c = a->head, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  free(a);
}

void *
coil_arena_alloc(coil_arena *a, size_t n)
{
  n = (n + 15) & ~(size_t)15;
  chunk *c = a->head;
  if (!c || c->size - c->used < n) {
    size_t size = a->next_size;
    if (size < n)
      size = n;
    else if (a->next_size < (1u << 24))
      a->next_size *= 2;
    c = coil_xmalloc(sizeof(chunk) + size);
    c->size = size;
    c->used = 0;
    c->next = a->head;
    a->head = c;
  }
  void *p = c->data + c->used;
  c->used += n;
  memset(p, 0, n);
  return p;
}

char *
coil_arena_strndup(coil_arena *a, const char *s, size_t n)
{
  char *p = coil_arena_alloc(a, n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *
coil_arena_strdup(coil_arena *a, const char *s)
{
  return coil_arena_strndup(a, s, strlen(s));
}
