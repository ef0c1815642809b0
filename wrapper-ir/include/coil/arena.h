/* arena.h — region allocation for IR. Everything one graph or one compile allocates lives in
 * one arena and is released at once by coil_arena_free. Allocation never fails: on
 * out-of-memory the process aborts with a message (the only abort in the core). */
#ifndef COIL_ARENA_H
#define COIL_ARENA_H

#include <stddef.h>

typedef struct coil_arena coil_arena;

coil_arena *coil_arena_new(void);
void coil_arena_free(coil_arena *a);
void *coil_arena_alloc(coil_arena *a, size_t n);                    /* zeroed, 16-byte aligned */
char *coil_arena_strndup(coil_arena *a, const char *s, size_t n);    /* NUL-terminated copy */
char *coil_arena_strdup(coil_arena *a, const char *s);
void *coil_xmalloc(size_t n);            /* malloc that aborts on out-of-memory */
void *coil_xrealloc(void *p, size_t n);

/* An array of n zeroed T in the arena. */
#define COIL_ARENA_ARRAY(a, T, n) ((T *)coil_arena_alloc((a), sizeof(T) * (size_t)(n)))

#endif
