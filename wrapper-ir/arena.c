/* arena.c — a chunked bump allocator. Chunks grow geometrically; large requests get their own
 * chunk. Freed all at once. */
#include "coil/arena.h"

#include <stdint.h>
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

/* ---- out of memory: recovery scopes and fault injection ---- */

static _Thread_local coil_oom_scope *scope;
static _Thread_local long fault_at, fault_count;
static _Thread_local bool fault_persistent;
static char tombstone;

/* Whether this allocation is made to fail (coil_fault_alloc). */
static bool
fault_now(void)
{
  if (!fault_at)
    return false;
  fault_count++;
  return fault_count == fault_at || (fault_persistent && fault_count > fault_at);
}

void
coil_fault_alloc(long n, bool persistent)
{
  fault_at = n > 0 ? n : 0;
  fault_persistent = persistent;
  fault_count = 0;
}

long
coil_fault_alloc_count(void)
{
  return fault_count;
}

static size_t
slot_of(const coil_oom_scope *s, const void *p)
{
  uintptr_t h = (uintptr_t)p >> 4;
  h ^= h >> 17;
  return (size_t)(h * 0x9e3779b97f4a7c15ull) & (s->cap - 1);
}

/* Out of memory: unwind to the scope (freeing what it recorded), or abort. */
static _Noreturn void
out_of_memory(size_t n)
{
  coil_oom_scope *s = scope;
  if (!s) {
    fprintf(stderr, "coil: out of memory (%zu bytes)\n", n);
    abort();
  }
  scope = NULL;
  for (size_t i = 0; i < s->cap; i++)
    if (s->set[i] && s->set[i] != &tombstone)
      free(s->set[i]);
  free(s->set);
  s->set = NULL;
  s->failed_bytes = n;
  longjmp(s->jb, 1);
}

static void
record(void *p)
{
  coil_oom_scope *s = scope;
  if (!s)
    return;
  if (2 * (s->used + 1) > s->cap) { /* grow (or clear tombstones) at half full */
    size_t ncap = s->cap ? (2 * (s->n + 1) > s->cap / 2 ? 2 * s->cap : s->cap) : 256;
    void **fresh = calloc(ncap, sizeof *fresh);
    if (!fresh) {
      free(p); /* not recorded yet */
      out_of_memory(ncap * sizeof *fresh);
    }
    void **old = s->set;
    size_t oldcap = s->cap;
    s->set = fresh;
    s->cap = ncap;
    s->used = s->n;
    for (size_t i = 0; i < oldcap; i++)
      if (old[i] && old[i] != &tombstone) {
        size_t j = slot_of(s, old[i]);
        while (s->set[j])
          j = (j + 1) & (s->cap - 1);
        s->set[j] = old[i];
      }
    free(old);
  }
  size_t j = slot_of(s, p);
  while (s->set[j] && s->set[j] != &tombstone)
    j = (j + 1) & (s->cap - 1);
  if (!s->set[j])
    s->used++;
  s->set[j] = p;
  s->n++;
}

static void
forget(void *p)
{
  coil_oom_scope *s = scope;
  if (!s || !p || !s->cap)
    return;
  for (size_t j = slot_of(s, p); s->set[j]; j = (j + 1) & (s->cap - 1))
    if (s->set[j] == p) {
      s->set[j] = &tombstone;
      s->n--;
      return;
    }
}

void
coil_oom_begin(coil_oom_scope *s)
{
  if (scope) {
    fprintf(stderr, "coil: internal error: an out-of-memory scope inside another\n");
    abort();
  }
  s->set = NULL;
  s->cap = s->n = s->used = 0;
  s->failed_bytes = 0;
  scope = s;
}

void
coil_oom_end(coil_oom_scope *s)
{
  if (scope == s)
    scope = NULL;
  free(s->set);
  s->set = NULL;
}

void *
coil_xmalloc(size_t n)
{
  void *p = fault_now() ? NULL : malloc(n ? n : 1);
  if (!p)
    out_of_memory(n);
  record(p);
  return p;
}

void *
coil_xcalloc(size_t n, size_t size)
{
  void *p = fault_now() ? NULL : calloc(n ? n : 1, size ? size : 1);
  if (!p)
    out_of_memory(n * size);
  record(p);
  return p;
}

void *
coil_xrealloc(void *p, size_t n)
{
  if (fault_now())
    out_of_memory(n); /* p is still recorded: the unwind frees it */
  forget(p);
  void *q = realloc(p, n ? n : 1);
  if (!q) {
    if (p)
      record(p); /* still ours, and the unwind's to free */
    out_of_memory(n);
  }
  record(q);
  return q;
}

void
coil_xfree(void *p)
{
  forget(p);
  free(p);
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
    coil_xfree(c);
  }
  coil_xfree(a);
}

void *
coil_arena_alloc(coil_arena *a, size_t n)
{
  if (fault_now() || n > ((size_t)-1 >> 2)) /* a size this large would wrap below */
    out_of_memory(n);
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
